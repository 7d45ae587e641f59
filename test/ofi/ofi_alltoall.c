/*
 * ofi_alltoall.c: end-to-end check for btl/ofi (and the per-peer transport
 * mix) through the public API. Used by test/ofi/t_ofi.sh and
 * test/multihost/t_multihost.sh under pxrun or mpirun.
 *
 * Prints one line per peer: "transport <me> <peer> <host-of-me> <name>",
 * whether libfabric is mapped in the process ("libfabric <me> yes|no"),
 * then runs rounds of all-to-all exchanges over sizes from 0 B to 4 MiB
 * (or up to argv[1] bytes), every buffer filled with a pattern of
 * (source, destination, round, size) and checked on arrival, and ends with
 * "alltoall ok <rounds>" (exit 0) or the first mismatches (exit 1).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"

static uint8_t pattern(int src, int dst, int round, size_t size, size_t i)
{
    uint64_t x = (uint64_t)src * 1000003u + (uint64_t)dst * 7919u + (uint64_t)round * 131u + size +
                 i * 2654435761u;
    return (uint8_t)(x ^ (x >> 13) ^ (x >> 29));
}

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (PX_SUCCESS != rc) {
        fprintf(stderr, "px_init failed: %s\n", px_strerror(rc));
        return 2;
    }
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)4 << 20;
    int me = px_rank(), n = px_size();
    char host[256];
    gethostname(host, sizeof(host));
    for (int p = 0; p < n; ++p)
        printf("transport %d %d %s %s\n", me, p, host, px_transport_name(p));
    bool fabric = false;
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof(line), maps))
        fabric = fabric || strstr(line, "libfabric.so");
    if (maps)
        fclose(maps);
    printf("libfabric %d %s\n", me, fabric ? "yes" : "no");
    fflush(stdout);

    const size_t sizes[] = {0, 1, 8, 100, 1000, 4096, 20000, 65536, 100000, 1 << 20, 4 << 20};
    size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    uint8_t **sbuf = calloc((size_t)n, sizeof(*sbuf)), **rbuf = calloc((size_t)n, sizeof(*rbuf));
    px_request_t **req = calloc(2 * (size_t)n, sizeof(*req));
    px_status_t *st = calloc(2 * (size_t)n, sizeof(*st));
    int errors = 0, rounds = 0;
    for (size_t si = 0; si < nsizes && sizes[si] <= max; ++si) {
        size_t size = sizes[si];
        for (int round = 0; round < 2; ++round, ++rounds) {
            for (int p = 0; p < n; ++p) {
                sbuf[p] = malloc(size + 1);
                rbuf[p] = malloc(size + 1);
                for (size_t i = 0; i < size; ++i)
                    sbuf[p][i] = pattern(me, p, round, size, i);
                memset(rbuf[p], 0xee, size + 1);
            }
            int nreq = 0;
            for (int k = 0; k < n; ++k) { /* receives first, from a shifted order */
                int p = (me + k) % n;
                rc = px_irecv(rbuf[p], size + 1, p, 1000 + round, &req[nreq++]);
                if (rc != PX_SUCCESS) {
                    fprintf(stderr, "rank %d: px_irecv from %d: %s\n", me, p, px_strerror(rc));
                    return 1;
                }
            }
            for (int k = 0; k < n; ++k) {
                int p = (me + n - k) % n;
                rc = px_isend(sbuf[p], size, p, 1000 + round, &req[nreq++]);
                if (rc != PX_SUCCESS) {
                    fprintf(stderr, "rank %d: px_isend to %d: %s\n", me, p, px_strerror(rc));
                    return 1;
                }
            }
            rc = px_waitall((size_t)nreq, req, st);
            if (rc != PX_SUCCESS) {
                fprintf(stderr, "rank %d: px_waitall (size %zu): %s\n", me, size, px_strerror(rc));
                for (int i = 0; i < nreq; ++i)
                    if (st[i].error)
                        fprintf(stderr, "rank %d:   request %d: %s\n", me, i,
                                px_strerror(st[i].error));
                return 1;
            }
            for (int k = 0; k < n; ++k) {
                int p = (me + k) % n;
                if (st[k].source != p || st[k].length != size) {
                    if (errors++ < 10)
                        fprintf(stderr, "rank %d: from %d size %zu: status source %d length %zu\n",
                                me, p, size, st[k].source, st[k].length);
                }
                for (size_t i = 0; i < size; ++i) {
                    if (rbuf[p][i] != pattern(p, me, round, size, i)) {
                        if (errors++ < 10)
                            fprintf(stderr,
                                    "rank %d: from %d size %zu: byte %zu is %#x, want %#x\n", me, p,
                                    size, i, rbuf[p][i], pattern(p, me, round, size, i));
                        break;
                    }
                }
                if (rbuf[p][size] != 0xee && errors++ < 10)
                    fprintf(stderr, "rank %d: from %d size %zu: wrote past the message\n", me, p,
                            size);
            }
            for (int p = 0; p < n; ++p) {
                free(sbuf[p]);
                free(rbuf[p]);
            }
        }
    }
    px_barrier();
    if (0 == errors)
        printf("alltoall ok %d rank %d\n", rounds, me);
    free(sbuf);
    free(rbuf);
    free(req);
    free(st);
    px_finalize();
    return errors ? 1 : 0;
}
