/*
 * registry_p2p_names: the names API (runtime/plexus_name.h) over registry/p2p
 * between processes started separately, for t_registry_p2p_names.sh and
 * test/registry/p2p/time-open-p2p.sh (open by name to first byte).
 *
 *   owner FILE SIZE NAME       publish a region of SIZE bytes (a known
 *                              pattern) as NAME, write its qualified name
 *                              ("a.b.c.d:port/NAME") to FILE, then progress
 *                              until killed (peers connect through it)
 *   reader QUALIFIED SIZE      open the qualified name, time px_name_open and
 *                              a first 8-byte px_xfer_read from before the
 *                              open to the read's end, read the whole region
 *                              and compare its checksum with the pattern's;
 *                              prints "open_us=", "first_byte_us=",
 *                              "checksum=ok|BAD"; then a warm open (the
 *                              cached description and the connection kept)
 *   missing QUALIFIED          px_name_open must fail: prints its code
 * Exit 0 when all went as expected.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"
#include "runtime/plexus_name.h"
#include "test/peer/dyn_util.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int fail(const char *what, int rc)
{
    printf("error=%d %s: %s\n", rc, what, px_strerror(rc));
    fflush(stdout);
    px_finalize();
    return 1;
}

static int owner(const char *file, size_t size, const char *name)
{
    px_xfer_region_t *r;
    int rc = px_xfer_alloc(size, &r);
    if (rc != PX_SUCCESS)
        return fail("px_xfer_alloc", rc);
    dyn_fill(px_xfer_region_base(r), size, 7);
    if ((rc = px_name_publish(name, r)) != PX_SUCCESS)
        return fail("px_name_publish", rc);
    char q[512];
    if ((rc = px_name_qualify(name, q, sizeof q)) != PX_SUCCESS)
        return fail("px_name_qualify", rc);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", q) < 0 || fclose(f) != 0 || rename(tmp, file) != 0)
        return fail("writing the qualified name", PX_ERR_IN_ERRNO);
    printf("qualified=%s\n", q);
    fflush(stdout);
    struct timespec pause = {0, 20000};
    for (;;) {
        px_progress();
        nanosleep(&pause, NULL);
    }
}

static int reader(const char *q, size_t size)
{
    px_xfer_region_t *loc;
    int rc = px_xfer_alloc(size, &loc);
    if (rc != PX_SUCCESS)
        return fail("px_xfer_alloc", rc);
    px_name_t *h = NULL;
    double t0 = now_us();
    if ((rc = px_name_open(q, &h)) != PX_SUCCESS)
        return fail("px_name_open", rc);
    double t1 = now_us();
    if ((rc = px_xfer_read(loc, 0, px_name_remote(h), 0, 8)) != PX_SUCCESS)
        return fail("px_xfer_read (first bytes)", rc);
    double t2 = now_us();
    printf("open_us=%.1f\nfirst_byte_us=%.1f\n", t1 - t0, t2 - t0);
    if (px_name_kind(h) != PX_NAME_REGION)
        return fail("px_name_kind is not PX_NAME_REGION", PX_ERR_BAD_PARAM);
    if (px_xfer_remote_length(px_name_remote(h)) != size) {
        printf("length=%zu, expected %zu\n", px_xfer_remote_length(px_name_remote(h)), size);
        return fail("the opened region's length", PX_ERR_BAD_PARAM);
    }
    if ((rc = px_xfer_read(loc, 0, px_name_remote(h), 0, size)) != PX_SUCCESS)
        return fail("px_xfer_read", rc);
    unsigned char *want = malloc(size);
    dyn_fill(want, size, 7);
    bool same = dyn_sum(px_xfer_region_base(loc), size) == dyn_sum(want, size) &&
                memcmp(px_xfer_region_base(loc), want, size) == 0;
    printf("checksum=%s\n", same ? "ok" : "BAD");
    free(want);
    px_name_close(&h);
    /* warm: the description cached, the connection to the owner kept */
    double t3 = now_us();
    if ((rc = px_name_open(q, &h)) != PX_SUCCESS)
        return fail("px_name_open (again)", rc);
    if ((rc = px_xfer_read(loc, 0, px_name_remote(h), 0, 8)) != PX_SUCCESS)
        return fail("px_xfer_read (again)", rc);
    printf("warm_first_byte_us=%.1f\n", now_us() - t3);
    px_name_close(&h);
    px_xfer_free(&loc);
    fflush(stdout);
    px_finalize();
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    setenv("PX_MCA_registry", "p2p", 1);
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    if (argc == 5 && !strcmp(argv[1], "owner"))
        return owner(argv[2], strtoull(argv[3], NULL, 0), argv[4]);
    if (argc == 4 && !strcmp(argv[1], "reader"))
        return reader(argv[2], strtoull(argv[3], NULL, 0));
    if (argc == 3 && !strcmp(argv[1], "missing")) {
        px_name_t *h = NULL;
        int rc = px_name_open(argv[2], &h);
        printf("open=%d %s\n", rc, px_strerror(rc));
        fflush(stdout);
        px_finalize();
        return rc == PX_SUCCESS ? 1 : 0;
    }
    fprintf(stderr, "usage: see the top of registry_p2p_names.c\n");
    px_finalize();
    return 2;
}
