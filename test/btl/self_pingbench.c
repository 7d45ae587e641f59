/*
 * self_pingbench.c: ns per message for a process sending to itself through
 * the messaging API (btl/self). Not a test: it prints figures.
 *
 *   build-dir$ ./test/btl/self_pingbench [iterations] [size]
 *
 * Rows: px_send + px_recv (blocking, the receive finds the message in the
 * unexpected queue), px_irecv + px_send + px_wait (the receive is posted
 * first), and px_isend + px_irecv + 2 px_wait. Each row is the best of 5 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"

static void check(int rc, const char *what)
{
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "self_pingbench: %s failed: %s\n", what, px_strerror(rc));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 2000000;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 8;
    check(px_init(&argc, &argv), "px_init");
    char *sbuf = calloc(1, size ? size : 1), *rbuf = calloc(1, size ? size : 1);
    double best[3] = {1e30, 1e30, 1e30};
    /* A blocking send to self completes only when buffered (tiny/eager); a
     * rendezvous one would wait for a receive nobody can post. */
    px_request_t *probe;
    int eager = 0;
    check(px_isend(sbuf, size, 0, 2, &probe), "px_isend");
    check(px_test(&probe, &eager, NULL), "px_test");
    check(px_recv(rbuf, size, 0, 2, NULL), "px_recv");
    if (!eager)
        check(px_wait(&probe, NULL), "px_wait");
    for (int rep = 0; rep < 5; ++rep) {
        double t0 = px_wtime();
        for (long i = 0; eager && i < iters; ++i) {
            check(px_send(sbuf, size, 0, 1), "px_send");
            check(px_recv(rbuf, size, 0, 1, NULL), "px_recv");
        }
        double t1 = px_wtime();
        for (long i = 0; i < iters; ++i) {
            px_request_t *r;
            check(px_irecv(rbuf, size, 0, 1, &r), "px_irecv");
            check(px_send(sbuf, size, 0, 1), "px_send");
            check(px_wait(&r, NULL), "px_wait");
        }
        double t2 = px_wtime();
        for (long i = 0; i < iters; ++i) {
            px_request_t *r[2];
            check(px_isend(sbuf, size, 0, 1, &r[0]), "px_isend");
            check(px_irecv(rbuf, size, 0, 1, &r[1]), "px_irecv");
            check(px_waitall(2, r, NULL), "px_waitall");
        }
        double t3 = px_wtime();
        double d[3] = {t1 - t0, t2 - t1, t3 - t2};
        for (int k = 0; k < 3; ++k)
            if (d[k] < best[k])
                best[k] = d[k];
    }
    printf("# self_pingbench: %zu-byte messages to self via %s, %ld per run, best of 5\n", size,
           px_transport_name(0), iters);
    if (eager)
        printf("px_send + px_recv (unexpected):   %7.1f ns/message\n", best[0] * 1e9 / iters);
    else
        printf("px_send + px_recv (unexpected):   n/a (rendezvous size: a blocking send waits "
               "for a posted receive)\n");
    printf("px_irecv + px_send + px_wait:     %7.1f ns/message\n", best[1] * 1e9 / iters);
    printf("px_isend + px_irecv + px_waitall: %7.1f ns/message\n", best[2] * 1e9 / iters);
    free(sbuf);
    free(rbuf);
    check(px_finalize(), "px_finalize");
    return 0;
}
