/*
 * px_perf_coll.c: px_perf --coll OP: the latency of one collective over the
 * world group, per size, with every rank of the job.
 *
 * Method (test/bench/coll_mpi.c does the same with MPI): per size, a tenth
 * of the iterations (at least 2) as warm-up, a barrier, then `iters` calls
 * back to back; each rank's time is the average per call, and the figure is
 * the largest over the ranks. Iterations: 2000 up to 4 KiB, 200 up to
 * 256 KiB, 50 up to 4 MiB, 10 above (5 from 32 MiB).
 *
 * Sizes: allreduce, bcast: the vector (doubles, sum); allgather, alltoall:
 * one rank's block (bytes); barrier: one row. A second column gives the
 * memory-copy bound: the least a rank must receive (allreduce 2(p-1)/p of the
 * vector, bcast the vector, allgather and alltoall p-1 blocks), timed as a
 * memcpy of that many bytes on every rank at once (the largest over the
 * ranks), and the ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#include "tools/px_perf/px_perf.h"

static const size_t coll_sizes[] = {8,      64,      512,     4096,     32768,
                                    262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20};

static long iters_for(size_t bytes)
{
    if (bytes <= 4096)
        return 2000;
    if (bytes <= 262144)
        return 200;
    if (bytes <= (4u << 20))
        return 50;
    return bytes < (32u << 20) ? 10 : 5;
}

static int call(int which, void *s, void *r, size_t bytes, px_group_t *w)
{
    switch (which) {
    case 0:
        return px_allreduce(s, r, bytes / 8 ? bytes / 8 : 1, PX_DOUBLE, PX_SUM, w);
    case 1:
        return px_bcast(s, bytes, PX_UINT8, 0, w);
    case 2:
        return px_allgather(s, r, bytes, PX_UINT8, w);
    case 3:
        return px_alltoall(s, r, bytes, PX_UINT8, w);
    default:
        return px_group_barrier(w);
    }
}

/* Seconds for a memcpy of `bytes` (best of a few). */
static double memcpy_time(size_t bytes, char *a, char *b)
{
    double best = 1e30;
    for (int k = 0; k < 5; ++k) {
        double t0 = px_wtime();
        memcpy(b, a, bytes);
        __asm__ volatile("" ::"r"(b) : "memory");
        double t = px_wtime() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

int px_perf_coll(const char *op, const size_t *sizes, int nsizes, long iters_override, int csv)
{
    static const char *const names[] = {"allreduce", "bcast", "allgather", "alltoall", "barrier"};
    int which = -1;
    for (int k = 0; k < 5; ++k)
        if (0 == strcmp(op, names[k]))
            which = k;
    if (which < 0) {
        fprintf(stderr,
                "px_perf: error: --coll '%s': expected allreduce, bcast, allgather, "
                "alltoall or barrier\n",
                op);
        return 2;
    }
    if (px_init(NULL, NULL) != PX_SUCCESS)
        return 3;
    int me = px_rank(), p = px_size();
    px_group_t *w = px_group_world();
    if (0 == nsizes) {
        sizes = coll_sizes;
        nsizes = (int)(sizeof(coll_sizes) / sizeof(coll_sizes[0]));
    }
    if (4 == which)
        nsizes = 1;
    size_t maxb = 8;
    for (int i = 0; i < nsizes; ++i)
        maxb = sizes[i] > maxb ? sizes[i] : maxb;
    size_t sbytes = maxb, rbytes = maxb;
    if (2 == which)
        rbytes = maxb * (size_t)p;
    if (3 == which)
        sbytes = rbytes = maxb * (size_t)p;
    char *s = malloc(sbytes), *r = malloc(rbytes);
    if (!s || !r) {
        fprintf(stderr, "px_perf: out of memory for %zu + %zu bytes\n", sbytes, rbytes);
        px_abort(3, "px_perf: out of memory");
    }
    memset(s, 0, sbytes);
    memset(r, 0, rbytes);
    if (0 == me) {
        if (csv)
            printf("op,ranks,bytes,usec%s\n", 4 != which ? ",bound_usec" : "");
        else
            printf("# px_perf --coll %s: %d ranks, time per call (largest over the ranks)%s\n",
                   names[which], p,
                   4 != which ? "; bound: memcpy of what a rank must receive, on every rank" : "");
        if (!csv)
            printf("%-10s %12s%s\n", "bytes", "usec", 4 != which ? "     bound_us  x_bound" : "");
    }
    for (int i = 0; i < nsizes; ++i) {
        size_t bytes = 4 == which ? 0 : sizes[i];
        long iters = iters_override ? iters_override : iters_for(bytes);
        long warm = iters / 10 > 2 ? iters / 10 : 2;
        int rc = PX_SUCCESS;
        for (long k = 0; k < warm && PX_SUCCESS == rc; ++k)
            rc = call(which, s, r, bytes, w);
        px_group_barrier(w);
        double t0 = px_wtime();
        for (long k = 0; k < iters && PX_SUCCESS == rc; ++k)
            rc = call(which, s, r, bytes, w);
        double t = (px_wtime() - t0) / (double)iters, tmax = 0;
        if (rc != PX_SUCCESS) {
            fprintf(stderr, "px_perf: %s of %zu bytes failed: %s\n", names[which], bytes,
                    px_strerror(rc));
            px_abort(3, "px_perf: a collective failed");
        }
        px_allreduce(&t, &tmax, 1, PX_DOUBLE, PX_MAX, w);
        double bound = 0;
        if (4 != which && p > 1) {
            size_t move = 0 == which   ? (size_t)(2.0 * (p - 1) / p * (double)bytes)
                          : 1 == which ? bytes
                                       : bytes * (size_t)(p - 1);
            char *a = malloc(move ? move : 1), *b = malloc(move ? move : 1);
            if (a && b) {
                memset(a, 1, move);
                memset(b, 0, move);
                bound = memcpy_time(move, a, b);
            }
            free(a);
            free(b);
            double bmax = 0;
            px_allreduce(&bound, &bmax, 1, PX_DOUBLE, PX_MAX, w);
            bound = bmax;
        }
        if (0 == me) {
            if (csv) {
                printf("%s,%d,%zu,%.3f", names[which], p, bytes, tmax * 1e6);
                if (4 != which)
                    printf(",%.3f", bound * 1e6);
                printf("\n");
            } else {
                printf("%-10zu %12.3f", bytes, tmax * 1e6);
                if (4 != which)
                    printf(" %12.3f %8.2f", bound * 1e6, bound > 0 ? tmax / bound : 0.0);
                printf("\n");
            }
            fflush(stdout);
        }
    }
    free(s);
    free(r);
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}
