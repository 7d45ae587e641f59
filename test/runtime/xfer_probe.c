/*
 * xfer_probe.c: every rank sends every other rank messages of sizes across
 * the protocol switch points (0 B .. 8 MiB), three rounds, with checked
 * contents; then a barrier. Prints "rank R: N errors". Run under pxrun by
 * test/runtime/t_protocols.sh with each runtime_rndv_protocol.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"

static unsigned char pattern(size_t k, int src, int i, int rep)
{
    return (unsigned char)(k * 31 + (size_t)src * 7 + (size_t)i * 3 + (size_t)rep);
}

/* The pattern repeats every 256 bytes (31 is odd): its first period byte by
 * byte, the rest copied from it (the same bytes as pattern() for each k, at
 * a fraction of the cost under the sanitizers, which check each byte store
 * of a loop but a memcpy's range at once). */
enum { PERIOD = 256 };
static void fill(unsigned char *b, size_t len, int src, int i, int rep)
{
    size_t n = len < PERIOD ? len : PERIOD;
    for (size_t k = 0; k < n; ++k)
        b[k] = pattern(k, src, i, rep);
    for (size_t done = n; done < len;) { /* done is a multiple of the period */
        size_t c = done < len - done ? done : len - done;
        memcpy(b + done, b, c);
        done += c;
    }
}

/* The first byte of b[0..len) that differs from the pattern, or len. */
static size_t first_bad(const unsigned char *b, size_t len, int src, int i, int rep)
{
    unsigned char one[PERIOD];
    fill(one, PERIOD, src, i, rep);
    for (size_t off = 0; off < len; off += PERIOD) {
        size_t c = len - off < PERIOD ? len - off : PERIOD;
        if (memcmp(b + off, one, c) != 0)
            for (size_t k = 0; k < c; ++k)
                if (b[off + k] != one[k])
                    return off + k;
    }
    return len;
}

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    int me = px_rank(), n = px_size(), errors = 0;
    const size_t sizes[] = {
        0,    1,    8,     255,   256,   257,   1000,     4080,           4081,    8192,
        8241, 8242, 16384, 65535, 65536, 65537, 1u << 20, (1u << 20) + 3, 8u << 20};
    const int ns = sizeof(sizes) / sizeof(sizes[0]);
    unsigned char *s = malloc(8u << 20), *r = malloc(8u << 20);
    px_request_t **rq = malloc(sizeof(*rq) * (size_t)n);
    for (int rep = 0; rep < 3; ++rep) {
        for (int i = 0; i < ns; ++i) {
            size_t len = sizes[i];
            fill(s, len, me, i, rep);
            int nr = 0;
            for (int p = 0; p < n; ++p)
                if (p != me && px_isend(s, len, p, i, &rq[nr++]) != PX_SUCCESS)
                    errors++;
            for (int p = 0; p < n; ++p) {
                if (p == me)
                    continue;
                px_status_t st;
                int rc = px_recv(r, len, p, i, &st);
                if (rc != PX_SUCCESS || st.length != len || st.source != p || st.tag != i) {
                    printf("rank %d: %zu bytes from %d: %s, %zu bytes\n", me, len, p,
                           px_strerror(rc), st.length);
                    errors++;
                    continue;
                }
                size_t k = first_bad(r, len, p, i, rep);
                if (k < len) {
                    printf("rank %d: %zu bytes from %d: byte %zu differs\n", me, len, p, k);
                    errors++;
                }
            }
            if (px_waitall((size_t)nr, rq, NULL) != PX_SUCCESS)
                errors++;
        }
    }
    if (px_barrier() != PX_SUCCESS)
        errors++;
    printf("rank %d: %d errors (transport to %d: %s)\n", me, errors, (me + 1) % n,
           px_transport_name((me + 1) % n));
    free(s);
    free(r);
    free(rq);
    if (px_finalize() != PX_SUCCESS)
        errors++;
    return errors ? 1 : 0;
}
