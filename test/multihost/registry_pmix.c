/*
 * registry_pmix.c: registry/pmix under mpirun, through the framework's
 * module (px_registry_base_select), for test/multihost/t_registry_pmix.sh.
 * Each check prints "ok <rank> <what>" or "FAIL <rank> <what>: ..." and the
 * program exits 1 after any failure.
 *
 *   registry_pmix ranks      2-4 ranks of one mpirun: rank 0 puts, the others
 *                            get; a duplicate by another rank is EXISTS (put
 *                            CREATE and ANY, del), rank 0's renewal succeeds;
 *                            a missing key is NOT_FOUND within the timeout;
 *                            del, list, an over-long key
 *   registry_pmix lease      2 ranks, registry_lease short: rank 1's entry, never
 *                            renewed, reads as absent once its lease is over,
 *                            and rank 0 may take the key over
 *   registry_pmix names      2-4 ranks, through the names API (plexus_name.h):
 *                            rank 0 publishes a 1 MiB region, keeps it past
 *                            several leases (the heartbeat renews it), the
 *                            others open the name and read it whole with the
 *                            transfer engine and check the pattern; list is
 *                            NOT_SUPPORTED; after unpublish, a refresh of the
 *                            opened name is NOT_FOUND
 *   registry_pmix crash NAME FLAG   publish this process's contact under NAME
 *                            (the heartbeat renews it), print "published",
 *                            and once FLAG exists die of SIGKILL (a crash:
 *                            nothing unpublished)
 *   registry_pmix select     only select: prints "selected <name>" (exit 0)
 *                            or "select failed <code>" (exit 3)
 *   registry_pmix put KEY VALUE FLAG   put, print "put ok", wait until FLAG
 *                            exists (another job's test), then exit without del
 *   registry_pmix get KEY    print "got <value>" or "get <code name>"
 */
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "frameworks/registry/registry.h"
#include "runtime/plexus.h"
#include "runtime/plexus_name.h"
#include "runtime/plexus_xfer.h"

static int failures;
static int me;

static void expect(int ok, const char *what, int rc)
{
    if (ok)
        printf("ok %d %s\n", me, what);
    else {
        printf("FAIL %d %s: got %d (%s)\n", me, what, rc, px_strerror(rc));
        failures++;
    }
    fflush(stdout);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int ranks(px_registry_module_t *m)
{
    char key[256], other[256];
    snprintf(key, sizeof key, "%s/test/block", px_registry_base_namespace());
    snprintf(other, sizeof other, "%s/test/missing", px_registry_base_namespace());
    const char value[] = "bytes\0with a NUL";
    const size_t vlen = sizeof value; /* the NUL inside counts */
    int rc;
    if (0 == me) {
        rc = m->put(m, key, value, vlen, PX_REGISTRY_PUT_CREATE);
        expect(PX_SUCCESS == rc, "rank 0 put CREATE of a new key", rc);
    }
    px_barrier();
    void *got = NULL;
    size_t len = 0;
    rc = m->get(m, key, &got, &len);
    expect(PX_SUCCESS == rc && vlen == len && 0 == memcmp(got, value, vlen) &&
               '\0' == ((char *)got)[len],
           "get returns rank 0's bytes (NUL inside and after)", rc);
    free(got);
    px_barrier();
    if (1 == me) {
        rc = m->put(m, key, "other", 5, PX_REGISTRY_PUT_CREATE);
        expect(PX_ERR_EXISTS == rc, "put CREATE by another rank is EXISTS", rc);
        rc = m->put(m, key, "other", 5, PX_REGISTRY_PUT_ANY);
        expect(PX_ERR_EXISTS == rc, "put ANY over another rank's entry is EXISTS", rc);
        rc = m->del(m, key, NULL, 0);
        expect(PX_ERR_EXISTS == rc, "del of another rank's entry is EXISTS", rc);
        rc = m->del(m, key, "other", 5);
        expect(PX_ERR_EXISTS == rc, "del with other bytes is EXISTS", rc);
        /* The same bytes: counts as present, not ours to remove, but put
         * CREATE of exactly those bytes is success (the contract). */
        rc = m->put(m, key, value, vlen, PX_REGISTRY_PUT_CREATE);
        expect(PX_SUCCESS == rc, "put CREATE of the same bytes by another rank succeeds", rc);
    }
    px_barrier();
    if (0 == me) {
        for (int i = 0; i < 3; ++i) {
            rc = m->put(m, key, value, vlen, PX_REGISTRY_PUT_CREATE);
            expect(PX_SUCCESS == rc, "rank 0 renews its entry (put CREATE, same bytes)", rc);
        }
    }
    px_barrier();
    got = NULL;
    rc = m->get(m, key, &got, &len);
    expect(PX_SUCCESS == rc && vlen == len && 0 == memcmp(got, value, vlen),
           "the duplicate attempts left rank 0's bytes", rc);
    free(got);
    double t0 = now();
    got = (void *)1;
    rc = m->get(m, other, &got, &len);
    double took = now() - t0;
    expect(PX_ERR_NOT_FOUND == rc && NULL == got, "get of a missing key is NOT_FOUND", rc);
    expect(took < px_registry_base_timeout(), "... within registry_timeout", rc);
    px_barrier();
    if (0 == me) {
        rc = m->put(m, key, "moved", 5, PX_REGISTRY_PUT_ANY);
        expect(PX_SUCCESS == rc, "rank 0 put ANY replaces its own entry", rc);
    }
    px_barrier();
    got = NULL;
    rc = m->get(m, key, &got, &len);
    expect(PX_SUCCESS == rc && 5 == len && 0 == memcmp(got, "moved", 5),
           "everyone sees the replaced bytes", rc);
    free(got);
    px_barrier();
    if (0 == me) {
        rc = m->del(m, key, value, vlen);
        expect(PX_ERR_EXISTS == rc, "rank 0 del with its old bytes is EXISTS", rc);
        rc = m->del(m, key, "moved", 5);
        expect(PX_SUCCESS == rc, "rank 0 del of its entry", rc);
        rc = m->del(m, key, NULL, 0);
        expect(PX_ERR_NOT_FOUND == rc, "del again is NOT_FOUND", rc);
    }
    px_barrier();
    rc = m->get(m, key, &got, &len);
    expect(PX_ERR_NOT_FOUND == rc, "after del, get is NOT_FOUND everywhere", rc);
    /* Every rank has looked before rank 1 takes the key again. */
    px_barrier();
    if (1 == me) {
        rc = m->put(m, key, "second", 6, PX_REGISTRY_PUT_CREATE);
        expect(PX_SUCCESS == rc, "after del another rank may take the key", rc);
        rc = m->del(m, key, NULL, 0);
        expect(PX_SUCCESS == rc, "... and remove it (value NULL)", rc);
    }
    rc = m->list(m, px_registry_base_namespace(), NULL, NULL);
    expect(PX_ERR_NOT_SUPPORTED == rc, "list is NOT_SUPPORTED", rc);
    char *longkey = malloc(PX_REGISTRY_KEY_MAX + 1);
    memset(longkey, 'k', PX_REGISTRY_KEY_MAX);
    longkey[PX_REGISTRY_KEY_MAX] = '\0';
    rc = m->get(m, longkey, &got, &len);
    expect(PX_ERR_BAD_PARAM == rc, "a 512-byte key (PMIx takes 511) is BAD_PARAM", rc);
    free(longkey);
    px_barrier();
    return failures ? 1 : 0;
}

static int lease(px_registry_module_t *m)
{
    char key[256];
    snprintf(key, sizeof key, "%s/test/leased", px_registry_base_namespace());
    int rc;
    if (1 == me) {
        rc = m->put(m, key, "short", 5, PX_REGISTRY_PUT_CREATE);
        expect(PX_SUCCESS == rc, "rank 1 put CREATE (not renewed afterwards)", rc);
    }
    px_barrier();
    void *got = NULL;
    size_t len = 0;
    if (0 == me) {
        rc = m->get(m, key, &got, &len);
        expect(PX_SUCCESS == rc && 5 == len, "rank 0 reads it within the lease", rc);
        free(got);
        rc = m->put(m, key, "mine", 4, PX_REGISTRY_PUT_CREATE);
        expect(PX_ERR_EXISTS == rc, "put CREATE over it within the lease is EXISTS", rc);
        /* Wait past the lease (the test sets it short). */
        double end = now() + px_registry_base_lease() + 0.5;
        while (now() < end)
            usleep(50000);
        got = (void *)1;
        rc = m->get(m, key, &got, &len);
        expect(PX_ERR_NOT_FOUND == rc && NULL == got, "after the lease it is NOT_FOUND", rc);
        rc = m->put(m, key, "mine", 4, PX_REGISTRY_PUT_CREATE);
        expect(PX_SUCCESS == rc, "put CREATE takes the expired key over", rc);
    }
    px_barrier();
    if (1 == me) {
        got = NULL;
        rc = m->get(m, key, &got, &len);
        expect(PX_SUCCESS == rc && 4 == len && 0 == memcmp(got, "mine", 4),
               "rank 1 reads rank 0's entry", rc);
        free(got);
        rc = m->del(m, key, NULL, 0);
        expect(PX_ERR_EXISTS == rc, "rank 1 cannot remove rank 0's entry", rc);
    }
    px_barrier();
    if (0 == me) {
        rc = m->del(m, key, NULL, 0);
        expect(PX_SUCCESS == rc, "rank 0 removes it", rc);
    }
    px_barrier();
    return failures ? 1 : 0;
}

static unsigned char pat(size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u;
    return (unsigned char)(x >> 13 ^ x >> 24);
}

static int no_list(const px_name_info_t *info, void *arg)
{
    (void)info;
    (void)arg;
    return 0;
}

static int names(void)
{
    const size_t size = 1 << 20;
    const char *name = "pmix-test/block";
    int rc;
    px_xfer_region_t *region = NULL;
    const char *reg = px_name_registry();
    expect(reg && 0 == strcmp(reg, "pmix"), "px_name_registry() is pmix", 0);
    if (0 == me) {
        rc = px_xfer_alloc(size, &region);
        expect(PX_SUCCESS == rc, "rank 0 allocates 1 MiB", rc);
        unsigned char *b = px_xfer_region_base(region);
        for (size_t i = 0; i < size; ++i)
            b[i] = pat(i);
        rc = px_name_publish(name, region);
        expect(PX_SUCCESS == rc, "rank 0 publishes it under a name", rc);
        /* Several leases long (the test sets a short one): only the
         * heartbeat's renewals keep the name alive meanwhile. */
        double end = now() + 3 * px_registry_base_lease();
        while (now() < end)
            usleep(20000);
    }
    px_barrier();
    px_name_t *h = NULL;
    if (0 != me) {
        rc = px_name_open(name, &h);
        expect(PX_SUCCESS == rc, "open the name (after three leases: renewed)", rc);
        if (PX_SUCCESS == rc) {
            expect(PX_NAME_REGION == px_name_kind(h), "it is a region", 0);
            px_xfer_remote_t *rm = px_name_remote(h);
            expect(rm && size == px_xfer_remote_length(rm), "of 1 MiB", 0);
            px_xfer_region_t *mine = NULL;
            rc = px_xfer_alloc(size, &mine);
            if (PX_SUCCESS == rc && rm)
                rc = px_xfer_read(mine, 0, rm, 0, size);
            expect(PX_SUCCESS == rc, "read it whole with the transfer engine", rc);
            if (PX_SUCCESS == rc) {
                const unsigned char *b = px_xfer_region_base(mine);
                size_t bad = 0;
                for (size_t i = 0; i < size; ++i)
                    bad += b[i] != pat(i);
                expect(0 == bad, "the bytes are rank 0's pattern", (int)bad);
            }
            px_xfer_free(&mine);
        }
        rc = px_name_list("pmix-test", no_list, NULL);
        expect(PX_ERR_NOT_SUPPORTED == rc, "px_name_list is NOT_SUPPORTED under pmix", rc);
    }
    px_barrier();
    if (0 == me) {
        rc = px_name_unpublish(name);
        expect(PX_SUCCESS == rc, "rank 0 unpublishes", rc);
    }
    px_barrier();
    if (h) {
        rc = px_name_refresh(h);
        expect(PX_ERR_NOT_FOUND == rc, "after unpublish, px_name_refresh is NOT_FOUND", rc);
        px_name_close(&h);
    }
    px_barrier();
    if (region)
        px_xfer_free(&region);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (PX_SUCCESS != rc) {
        fprintf(stderr, "px_init failed: %s\n", px_strerror(rc));
        return 2;
    }
    me = px_rank();
    const char *mode = argc > 1 ? argv[1] : "ranks";
    if (0 == strcmp(mode, "crash") && argc > 3) {
        rc = px_name_publish_contact(argv[2]);
        printf("%s\n", PX_SUCCESS == rc ? "published" : px_strerror(rc));
        fflush(stdout);
        for (int i = 0; i < 1200 && access(argv[3], F_OK) != 0; ++i)
            usleep(50000);
        kill(getpid(), SIGKILL);
    }
    if (0 == strcmp(mode, "names")) {
        int ret = names();
        px_finalize();
        return ret;
    }
    px_registry_module_t *m = NULL;
    rc = px_registry_base_select(&m);
    if (PX_SUCCESS != rc || NULL == m) {
        printf("select failed %d\n", rc);
        px_finalize();
        return 3;
    }
    printf("selected %s\n", m->name);
    fflush(stdout);
    int ret = 0;
    if (0 == strcmp(mode, "ranks")) {
        ret = ranks(m);
    } else if (0 == strcmp(mode, "lease")) {
        ret = lease(m);
    } else if (0 == strcmp(mode, "put") && argc > 4) {
        rc = m->put(m, argv[2], argv[3], strlen(argv[3]), PX_REGISTRY_PUT_CREATE);
        printf("put %s\n", PX_SUCCESS == rc ? "ok" : px_strerror(rc));
        fflush(stdout);
        for (int i = 0; i < 600 && access(argv[4], F_OK) != 0; ++i)
            usleep(100000);
    } else if (0 == strcmp(mode, "get") && argc > 2) {
        void *v = NULL;
        size_t len = 0;
        rc = m->get(m, argv[2], &v, &len);
        if (PX_SUCCESS == rc)
            printf("got %.*s\n", (int)len, (char *)v);
        else
            printf("get %s\n", PX_ERR_NOT_FOUND == rc ? "NOT_FOUND" : px_strerror(rc));
        free(v);
    }
    px_registry_base_close();
    px_finalize();
    return ret;
}
