/*
 * range_xfer.c: a short checked exchange for t_var_ranges.sh. Every pair of
 * ranks swaps messages of 0, 10, 4 KiB, 64 KiB and 1 MiB with a pattern that
 * depends on the size, the sender and the round, then rank 0 sends one
 * 64 KiB message into a 1 KiB buffer at rank 1, which must see
 * PX_ERR_TRUNCATE. Prints "rank R: N errors"; exits 0 only without errors
 * (2 when px_init fails: its error says why).
 *
 * `range_xfer names` (2 ranks; t_registry_ranges.sh) uses the registry
 * instead: rank 1 publishes a 64 KiB region under "range_xfer/PID/r" and
 * sends its qualified name to rank 0, which opens it (px_name_open: the
 * registry, a connection to the owner, the region imported), reads it whole
 * and checks the pattern, lists the name's prefix (one entry, a region of
 * 64 KiB), watches it for 20 ms (unchanged: PX_ERR_TIMEOUT); rank 1 then
 * unpublishes it and rank 0's next watch must see it gone
 * (PX_ERR_NOT_FOUND). A failed call prints what failed and why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "runtime/plexus_name.h"
#include "runtime/plexus_xfer.h"

static unsigned char pattern(size_t k, int src, int i)
{
    return (unsigned char)(k * 131 + (k >> 8) + (size_t)src * 17 + (size_t)i * 5);
}

enum { NAMED = 65536, TAG_NAME = 200, TAG_CLOSED = 201, TAG_GONE = 202 };

static int failed(int me, const char *what, int rc)
{
    printf("rank %d: %s: %s\n", me, what, px_strerror(rc));
    return 1;
}

static int count_listed(const px_name_info_t *info, void *arg)
{
    int *n = arg;
    if (info->kind == PX_NAME_REGION && info->length == NAMED && !info->error)
        n[0]++;
    else
        n[1]++;
    return 0;
}

/* The names part (`range_xfer names`): returns the number of errors. */
static int names(int me)
{
    int errors = 0, rc;
    char name[64], q[PX_NAME_MAX + 128];
    px_xfer_region_t *reg = NULL;
    if ((rc = px_xfer_alloc(NAMED, &reg)) != PX_SUCCESS)
        return failed(me, "px_xfer_alloc", rc);
    unsigned char *b = px_xfer_region_base(reg);
    if (me == 1) {
        snprintf(name, sizeof name, "range_xfer/%ld/r", (long)getpid());
        for (size_t k = 0; k < NAMED; ++k)
            b[k] = pattern(k, me, 7);
        if ((rc = px_name_publish(name, reg)) != PX_SUCCESS)
            errors += failed(me, "px_name_publish", rc);
        else if ((rc = px_name_qualify(name, q, sizeof q)) != PX_SUCCESS)
            errors += failed(me, "px_name_qualify", rc);
        if (errors)
            q[0] = '\0'; /* rank 0 is told: nothing to open */
        if (px_send(q, strlen(q) + 1, 0, TAG_NAME) != PX_SUCCESS)
            errors++;
        /* rank 0 read it and keeps its handle: unpublish, then say so */
        if (px_recv(&rc, sizeof rc, 0, TAG_CLOSED, NULL) != PX_SUCCESS)
            errors++;
        if (!errors && (rc = px_name_unpublish(name)) != PX_SUCCESS)
            errors += failed(me, "px_name_unpublish", rc);
        if (px_send(&errors, sizeof errors, 0, TAG_GONE) != PX_SUCCESS)
            errors++;
    } else if (me == 0) {
        px_status_t st;
        int owner_errors = 0;
        px_name_t *h = NULL;
        if ((rc = px_recv(q, sizeof q, 1, TAG_NAME, &st)) != PX_SUCCESS || st.length < 1 ||
            q[st.length - 1] != '\0')
            errors += failed(me, "the qualified name from rank 1", rc);
        else if (!q[0])
            errors += failed(me, "rank 1 published nothing", PX_ERROR);
        else if ((rc = px_name_open(q, &h)) != PX_SUCCESS)
            errors += failed(me, "px_name_open", rc);
        else if ((rc = px_xfer_read(reg, 0, px_name_remote(h), 0, NAMED)) != PX_SUCCESS) {
            printf("rank 0: px_xfer_read of %s: %s (%s)\n", q, px_strerror(rc),
                   px_xfer_last_error());
            errors++;
        } else {
            size_t bad = 0;
            for (size_t k = 0; k < NAMED; ++k)
                bad += b[k] != pattern(k, 1, 7);
            if (bad) {
                printf("rank 0: %s: %zu of %d bytes read differ\n", q, bad, NAMED);
                errors++;
            }
            /* its prefix ("a.b.c.d:port/range_xfer/PID/" under p2p) */
            char prefix[sizeof q];
            snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(q) - 1), q);
            int n[2] = {0, 0};
            if ((rc = px_name_list(prefix, count_listed, n)) != PX_SUCCESS)
                errors += failed(me, "px_name_list", rc);
            else if (n[0] != 1 || n[1] != 0) {
                printf("rank 0: px_name_list(%s): %d region(s) of %d B, %d other(s); expected "
                       "1 region\n",
                       prefix, n[0], NAMED, n[1]);
                errors++;
            }
            if ((rc = px_name_watch(h, 0.02)) != PX_ERR_TIMEOUT)
                errors += failed(me, "px_name_watch of a name unchanged (expected a timeout)", rc);
        }
        if (px_send(&errors, sizeof errors, 1, TAG_CLOSED) != PX_SUCCESS)
            errors++;
        if (px_recv(&owner_errors, sizeof owner_errors, 1, TAG_GONE, NULL) != PX_SUCCESS)
            errors++;
        if (h && !owner_errors && !errors && (rc = px_name_watch(h, 10)) != PX_ERR_NOT_FOUND)
            errors += failed(me, "px_name_watch of a name unpublished (expected not found)", rc);
        if (h)
            px_name_close(&h);
    }
    px_xfer_free(&reg);
    return errors;
}

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    int me = px_rank(), n = px_size(), errors = 0;
    if (argc > 1 && strcmp(argv[1], "names") == 0) {
        if (n != 2) {
            printf("rank %d: range_xfer names needs 2 ranks, not %d\n", me, n);
            errors++;
        } else {
            errors = names(me);
        }
        if (px_barrier() != PX_SUCCESS)
            errors++;
        printf("rank %d: %d errors\n", me, errors);
        px_finalize();
        return errors ? 1 : 0;
    }
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
