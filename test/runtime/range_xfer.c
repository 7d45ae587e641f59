/*
 * range_xfer.c: a short checked exchange for t_var_ranges.sh. Every pair of
 * ranks swaps messages of 0, 10, 4 KiB, 64 KiB and 1 MiB with a pattern that
 * depends on the size, the sender and the round, then rank 0 sends one
 * 64 KiB message into a 1 KiB buffer at rank 1, which must see
 * PX_ERR_TRUNCATE. Prints "rank R: N errors"; exits 0 only without errors
 * (2 when px_init fails: its error says why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"

static unsigned char pattern(size_t k, int src, int i)
{
    return (unsigned char)(k * 131 + (k >> 8) + (size_t)src * 17 + (size_t)i * 5);
}

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    int me = px_rank(), n = px_size(), errors = 0;
    const size_t sizes[] = {0, 10, 4096, 65536, 1u << 20};
    const int ns = (int)(sizeof(sizes) / sizeof(sizes[0]));
    unsigned char *s = malloc(1u << 20), *r = malloc(1u << 20);
    px_request_t **rq = malloc(sizeof(*rq) * (size_t)n);
    if (!s || !r || !rq)
        return 3;
    for (int i = 0; i < ns; ++i) {
        size_t len = sizes[i];
        for (size_t k = 0; k < len; ++k)
            s[k] = pattern(k, me, i);
        int nr = 0;
        for (int p = 0; p < n; ++p)
            if (p != me && px_isend(s, len, p, i, &rq[nr++]) != PX_SUCCESS)
                errors++;
        for (int p = 0; p < n; ++p) {
            if (p == me)
                continue;
            px_status_t st;
            memset(r, 0xee, len);
            int rc = px_recv(r, len, p, i, &st);
            if (rc != PX_SUCCESS || st.length != len) {
                printf("rank %d: %zu bytes from %d: %s, %zu bytes\n", me, len, p, px_strerror(rc),
                       st.length);
                errors++;
                continue;
            }
            size_t bad = 0;
            for (size_t k = 0; k < len; ++k)
                bad += r[k] != pattern(k, p, i);
            if (bad) {
                printf("rank %d: %zu bytes from %d: %zu bytes differ\n", me, len, p, bad);
                errors++;
            }
        }
        for (int q = 0; q < nr; ++q)
            if (px_wait(&rq[q], NULL) != PX_SUCCESS)
                errors++;
    }
    /* Truncation: the receiver must be told, and nothing may hang. */
    if (n >= 2 && me == 0) {
        for (size_t k = 0; k < 65536; ++k)
            s[k] = pattern(k, me, 99);
        px_request_t *q;
        if (px_isend(s, 65536, 1, 99, &q) != PX_SUCCESS)
            errors++;
        else
            px_wait(&q, NULL); /* the sender may or may not see the truncation */
    } else if (me == 1) {
        px_status_t st;
        int rc = px_recv(r, 1024, 0, 99, &st);
        if (rc != PX_ERR_TRUNCATE) {
            printf("rank 1: 64 KiB into 1 KiB: %s, expected a truncation error\n", px_strerror(rc));
            errors++;
        }
    }
    if (px_barrier() != PX_SUCCESS)
        errors++;
    printf("rank %d: %d errors\n", me, errors);
    free(s);
    free(r);
    free(rq);
    px_finalize();
    return errors ? 1 : 0;
}
