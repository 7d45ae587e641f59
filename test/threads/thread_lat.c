/*
 * thread_lat: single-thread ping-pong latency at a thread level (docs/threads.md,
 * "What MULTIPLE costs"): pxrun -n 2 thread_lat LEVEL [BYTES] [ITERS], LEVEL
 * one of serialized (px_init) or multiple (px_init_thread). Rank 0 prints
 * "lat LEVEL BYTES USEC" (half the round trip, median of 9 blocks). With
 * one rank (no pxrun) it sends to itself and receives: the library's own
 * cost per call, no other process to wait for.
 *
 * thread_lat LEVEL BYTES ITERS window (2 ranks): rank 1 posts 50 receives,
 * rank 0 sends 50 messages, rank 1 sleeps 200 ms (the messages arrive) and
 * waits for its receives, then acknowledges: a count of instructions under
 * callgrind --toggle-collect=px_send on rank 0 and px_irecv/px_waitall on
 * rank 1 is then the library's own cost per message with no polling for a
 * message not there yet (prints "window LEVEL BYTES done").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "plexus.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *level = argc > 1 ? argv[1] : "serialized";
    size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 10) : 8;
    int iters = argc > 3 ? atoi(argv[3]) : 20000;
    int provided = -1, rc;
    if (0 == strcmp(level, "multiple"))
        rc = px_init_thread(PX_THREAD_MULTIPLE, &provided);
    else
        rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS || px_size() > 2) {
        fprintf(stderr, "thread_lat: px_init failed or more than 2 ranks\n");
        return 1;
    }
    char *buf = calloc(1, bytes ? bytes : 1);
    if (argc > 4 && 0 == strcmp(argv[4], "window") && 2 == px_size()) {
        enum { W = 50 };
        px_request_t *rq[W];
        int ack = 0;
        for (int i = 0; i < iters; i += W) {
            if (1 == px_rank()) {
                for (int k = 0; k < W; ++k)
                    px_irecv(buf, bytes, 0, 1, &rq[k]);
                px_send(&ack, sizeof ack, 0, 3); /* posted */
                usleep(200000);
                px_waitall(W, rq, NULL);
                px_send(&ack, sizeof ack, 0, 2);
            } else {
                px_recv(&ack, sizeof ack, 1, 3, NULL);
                for (int k = 0; k < W; ++k)
                    px_send(buf, bytes, 1, 1);
                px_recv(&ack, sizeof ack, 1, 2, NULL);
            }
        }
        if (0 == px_rank())
            printf("window %s %zu done\n", level, bytes);
        free(buf);
        px_finalize();
        return 0;
    }
    /* One rank: a send to itself and its receive (the library's own cost,
     * no other process to wait for). */
    int me = px_rank(), other = 1 == px_size() ? 0 : 1 - me;
    double blocks[9];
    for (int b = -1; b < 9; ++b) { /* block -1: warm-up */
        px_barrier();
        double t0 = px_wtime();
        for (int i = 0; i < iters; ++i) {
            if (0 == me && 0 == other) {
                px_send(buf, bytes, 0, 1);
                px_recv(buf, bytes, 0, 1, NULL);
            } else if (0 == me) {
                px_send(buf, bytes, other, 1);
                px_recv(buf, bytes, other, 1, NULL);
            } else {
                px_recv(buf, bytes, other, 1, NULL);
                px_send(buf, bytes, other, 1);
            }
        }
        if (b >= 0)
            blocks[b] = (px_wtime() - t0) / iters / 2 * 1e6;
    }
    qsort(blocks, 9, sizeof(double), cmp);
    if (0 == me)
        printf("lat %s %zu %.3f\n", level, bytes, blocks[4]);
    free(buf);
    px_finalize();
    return 0;
}
