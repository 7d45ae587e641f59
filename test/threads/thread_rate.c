/*
 * thread_rate: message rate with T threads per process at PX_THREAD_MULTIPLE
 * (docs/threads.md): pxrun -n 2 thread_rate T [WINDOWS]. Thread t of rank 0
 * sends windows of 64 8-byte px_isend to thread t of rank 1 (tag t), which
 * receives them with px_irecv and answers each window with one message.
 * Rank 0 prints "rate T MSGS_PER_S" (all threads, median of 5 blocks).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "plexus.h"

#define WIN 64

static int nthreads, windows, me;
static pthread_barrier_t bar;
static double block_time[5];

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, other = 1 - me;
    char buf[WIN][8], ack = 0;
    px_request_t *r[WIN];
    for (int b = -1; b < 5; ++b) {
        pthread_barrier_wait(&bar);
        double t0 = px_wtime();
        for (int w = 0; w < windows; ++w) {
            for (int i = 0; i < WIN; ++i) {
                if (0 == me)
                    px_isend(buf[i], 8, other, t, &r[i]);
                else
                    px_irecv(buf[i], 8, other, t, &r[i]);
            }
            px_waitall(WIN, r, NULL);
            if (0 == me)
                px_recv(&ack, 1, other, 1000 + t, NULL);
            else
                px_send(&ack, 1, other, 1000 + t);
        }
        pthread_barrier_wait(&bar);
        if (0 == t && b >= 0)
            block_time[b] = px_wtime() - t0;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = argc > 1 ? atoi(argv[1]) : 1;
    windows = argc > 2 ? atoi(argv[2]) : 200;
    int provided;
    if (nthreads < 1 || nthreads > 64 ||
        px_init_thread(PX_THREAD_MULTIPLE, &provided) != PX_SUCCESS || px_size() != 2) {
        fprintf(stderr, "usage: pxrun -n 2 thread_rate THREADS(1..64) [WINDOWS]\n");
        return 1;
    }
    me = px_rank();
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    pthread_t th[64];
    px_barrier();
    for (int t = 0; t < nthreads; ++t)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < nthreads; ++t)
        pthread_join(th[t], NULL);
    qsort(block_time, 5, sizeof(double), cmp);
    if (0 == me)
        printf("rate %d %.0f\n", nthreads, (double)nthreads * windows * WIN / block_time[2]);
    px_finalize();
    return 0;
}
