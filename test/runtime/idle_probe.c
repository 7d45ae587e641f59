/*
 * idle_probe.c: a token ring for the progress engine's idle policy
 * (test/runtime/t_progress_idle.sh, and the measurement in docs/shm.md).
 *   idle_probe [LAPS]   (default 1000)
 * Rank 0 sends a token to rank 1, each rank passes it on, LAPS times round
 * the ring. Each rank prints "rank R yields N" (times its progress engine
 * gave the core away); rank 0 prints "ring N ranks L laps T s (U us/hop)".
 *   idle_probe --wait MS
 * Rank 0 sleeps MS milliseconds, then sends one message to every other rank;
 * each of them, waiting in px_recv meanwhile, prints "rank R waited W s, cpu
 * C s, blocks B": the wall time of the wait, the CPU time its thread used
 * during it (RUSAGE_THREAD: user + system) and how many times its progress
 * engine slept in poll() (event mode, px_progress_block_count).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include "core/util/progress.h"
#include "runtime/plexus.h"

static double thread_cpu(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return -1;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int wait_mode(int ms)
{
    int rank = px_rank(), size = px_size(), v = 0;
    if (px_barrier() != PX_SUCCESS)
        return 1;
    if (0 == rank) {
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        v = 42;
        for (int r = 1; r < size; r++)
            if (px_send(&v, sizeof v, r, 6) != PX_SUCCESS)
                return 1;
    } else {
        double t0 = px_wtime(), c0 = thread_cpu();
        if (px_recv(&v, sizeof v, 0, 6, NULL) != PX_SUCCESS || v != 42)
            return 1;
        double t = px_wtime() - t0, c = thread_cpu() - c0;
        printf("rank %d waited %.3f s, cpu %.3f s, blocks %lu\n", rank, t, c,
               px_progress_block_count());
    }
    if (px_barrier() != PX_SUCCESS)
        return 1;
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    if (argc > 2 && 0 == strcmp(argv[1], "--wait"))
        return wait_mode(atoi(argv[2]));
    int laps = argc > 1 ? atoi(argv[1]) : 1000;
    int rank = px_rank(), size = px_size();
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (px_barrier() != PX_SUCCESS)
        return 1;
    double t0 = px_wtime();
    int token = 0;
    for (int lap = 0; lap < laps && size > 1; lap++) {
        if (0 == rank) {
            token = lap;
            if (px_send(&token, sizeof token, next, 5) != PX_SUCCESS ||
                px_recv(&token, sizeof token, prev, 5, NULL) != PX_SUCCESS || token != lap)
                return 1;
        } else {
            if (px_recv(&token, sizeof token, prev, 5, NULL) != PX_SUCCESS ||
                px_send(&token, sizeof token, next, 5) != PX_SUCCESS)
                return 1;
        }
    }
    double t = px_wtime() - t0;
    unsigned long yields = px_progress_idle_count();
    if (px_barrier() != PX_SUCCESS)
        return 1;
    printf("rank %d yields %lu\n", rank, yields);
    if (0 == rank)
        printf("ring %d ranks %d laps %.3f s (%.2f us/hop)\n", size, laps, t,
               laps > 0 ? t * 1e6 / ((double)laps * size) : 0.0);
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}
