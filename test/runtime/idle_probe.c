/*
 * idle_probe.c: a token ring for the progress engine's idle policy
 * (test/runtime/t_progress_idle.sh, and the measurement in docs/shm.md).
 *   idle_probe [LAPS]   (default 1000)
 * Rank 0 sends a token to rank 1, each rank passes it on, LAPS times round
 * the ring. Each rank prints "rank R yields N" (times its progress engine
 * gave the core away); rank 0 prints "ring N ranks L laps T s (U us/hop)".
 */
#include <stdio.h>
#include <stdlib.h>
#include "core/util/progress.h"
#include "runtime/plexus.h"

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
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
