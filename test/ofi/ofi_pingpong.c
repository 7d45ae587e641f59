/*
 * ofi_pingpong.c: ping-pong latency and windowed streaming bandwidth between
 * ranks 0 and 1 through the public API, the same method as the Open MPI peer
 * (shared/bench/mpi_pingpong.c) so test/bench/compare-ofi.sh can set them
 * side by side. Prints "bytes lat_us bw_MBps" rows from rank 0.
 * Usage: ofi_pingpong [--sizes B,B,...] [--scale X]   (X scales the iteration
 * counts; default sizes 0 B..4 MiB as in mpi_pingpong.c, X = 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"

int main(int argc, char **argv)
{
    if (PX_SUCCESS != px_init(&argc, &argv))
        return 2;
    int rank = px_rank();
    size_t sizes[64] = {0, 8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20};
    size_t nsizes = 9, maxs = 0;
    double scale = 1.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--scale")) {
            scale = atof(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "--sizes")) {
            nsizes = 0;
            for (char *p = argv[i + 1]; *p && nsizes < 64;) {
                sizes[nsizes++] = strtoull(p, &p, 0);
                if (',' == *p)
                    ++p;
                else
                    break;
            }
        } else {
            if (0 == rank)
                fprintf(stderr, "usage: ofi_pingpong [--sizes B,B,...] [--scale X]\n");
            px_finalize();
            return 2;
        }
    }
    for (size_t i = 0; i < nsizes; ++i)
        maxs = sizes[i] > maxs ? sizes[i] : maxs;
    char *buf = aligned_alloc(4096, maxs + 4096), *rbuf = aligned_alloc(4096, maxs + 4096);
    memset(buf, 1, maxs);
    memset(rbuf, 0, maxs);
    if (0 == rank)
        printf("%10s %12s %12s\n", "bytes", "lat_us", "bw_MBps");
    for (size_t si = 0; si < nsizes; ++si) {
        size_t s = sizes[si];
        int iters = (int)((s <= 4096 ? 20000 : s <= 262144 ? 2000 : 200) * scale);
        if (iters < 10)
            iters = 10;
        int warm = iters / 10;
        double t0 = 0;
        if (rank < 2) {
            for (int i = 0; i < iters + warm; ++i) {
                if (i == warm)
                    t0 = px_wtime();
                if (0 == rank) {
                    px_send(buf, s, 1, 1);
                    px_recv(rbuf, s, 1, 1, NULL);
                } else {
                    px_recv(rbuf, s, 0, 1, NULL);
                    px_send(buf, s, 0, 1);
                }
            }
        }
        double lat = (px_wtime() - t0) / iters / 2 * 1e6;
        enum { WIN = 64 };
        int bit = (int)((s <= 32768 ? 200 : 20) * scale);
        if (bit < 2)
            bit = 2;
        px_request_t *req[WIN];
        px_barrier();
        double t1 = px_wtime();
        for (int k = 0; k < bit && rank < 2; ++k) {
            for (int w = 0; w < WIN; ++w) {
                if (0 == rank)
                    px_isend(buf, s, 1, 2, &req[w]);
                else
                    px_irecv(rbuf, s, 0, 2, &req[w]);
            }
            px_waitall(WIN, req, NULL);
            if (0 == rank)
                px_recv(rbuf, 0, 1, 3, NULL);
            else
                px_send(buf, 0, 0, 3);
        }
        double bw = (double)s * WIN * bit / (px_wtime() - t1) / 1e6;
        if (0 == rank)
            printf("%10zu %12.2f %12.1f\n", s, lat, bw);
        fflush(stdout);
        px_barrier();
    }
    free(buf);
    free(rbuf);
    px_finalize();
    return 0;
}
