/*
 * pmix_module.c: registry/pmix module, on PMIx_Publish / PMIx_Lookup /
 * PMIx_Unpublish (the launcher's data server: mpirun's own, or the
 * ompi-server given to mpirun --ompi-server).
 *  - Every call is the non-blocking PMIx call and a wait bounded by
 *    px_registry_base_timeout(): PMIx's own PMIX_TIMEOUT is passed too, but
 *    Open MPI 4.1's server does not apply it. A request that times out stays
 *    allocated until its late answer arrives (two references: the caller's
 *    and the callback's).
 *  - Lookups never pass PMIX_WAIT: its value is how many keys to wait for,
 *    0 meaning all of them, and Open MPI 4.1 waits for a missing key forever
 *    whatever the value; without it a missing key is PMIX_ERR_NOT_FOUND at once.
 *  - Entries are byte objects published with PMIX_PERSIST_PROC in the range of
 *    registry_pmix_range. Open MPI 4.1 keeps a process's entries after it
 *    ends (until its mpirun ends; in an ompi-server until that server ends),
 *    so each entry carries its own lease: a 16-byte header (magic "pxpm",
 *    version, the wall-clock time in ms at which it expires: the writer's
 *    now + registry_lease) before the value. The base's renewal publishes it
 *    again with a new time; an expired entry reads as absent and may be
 *    taken over. Hosts' clocks must agree well within the lease.
 *  - PMIx servers differ on a key that is already published: the standard
 *    (and PRRTE) refuse it with PMIX_ERR_DUPLICATE_KEY, Open MPI 4.1 replaces
 *    the value silently. So PUT_CREATE looks the key up first and looks again
 *    after publishing; the same bytes count as success (the base's renewal).
 *  - PMIx_Unpublish removes only the caller's own keys (Open MPI 4.1 ignores
 *    any other silently), so del looks the key up first and refuses to
 *    remove another process's entry with a message naming it.
 *  - PMIx cannot list keys: list is PX_ERR_NOT_SUPPORTED with a message.
 */
#include <pmix.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "components/registry/pmix/pmix.h"
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"

/* The header before every value: magic, version, 3 zero bytes, expiry
 * (ms since the epoch, big-endian). */
#define PX_RPMIX_HDR     16
#define PX_RPMIX_VERSION 1
static const char px_rpmix_magic[4] = {'p', 'x', 'p', 'm'};

static pmix_proc_t px_rpmix_me;
static bool px_rpmix_inited; /* our own reference on PMIx (PMIx_Init is counted) */

/* One request to the server: shared by the caller, who waits for `done`
 * up to the timeout, and the PMIx callback; freed by the last of the two. */
typedef struct px_rpmix_req {
    int refs;
    int done;
    pmix_status_t status;
    /* lookup's answer (copied in the callback) */
    bool found;
    pmix_proc_t holder;
    int type;    /* PMIx type of the value */
    size_t size; /* its size (byte objects and strings) */
    char *bytes; /* a copy when it is a byte object not over the limit */
    /* the parsed header (px_rpmix_parse) */
    bool plexus;        /* a registry/pmix entry of a version we read */
    int version;        /* its version (0: no header) */
    uint64_t expiry_ms; /* when its lease ends */
    bool expired;
    pmix_info_t info[4];
    size_t ninfo;
    char *keys[2];
    char key[PMIX_MAX_KEYLEN + 1];
} px_rpmix_req_t;

static void px_rpmix_parse(px_rpmix_req_t *r);

static double px_rpmix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t px_rpmix_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static px_rpmix_req_t *px_rpmix_req_new(const char *key)
{
    px_rpmix_req_t *r = calloc(1, sizeof(*r));
    if (NULL == r)
        return NULL;
    r->refs = 2;
    size_t n = strnlen(key, PMIX_MAX_KEYLEN); /* callers checked the length */
    memcpy(r->key, key, n);
    r->key[n] = '\0';
    r->keys[0] = r->key;
    r->keys[1] = NULL;
    return r;
}

static void px_rpmix_req_release(px_rpmix_req_t *r)
{
    if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    for (size_t i = 0; i < r->ninfo; ++i)
        PMIX_INFO_DESTRUCT(&r->info[i]);
    free(r->bytes);
    free(r);
}

static void px_rpmix_add_range(px_rpmix_req_t *r)
{
    pmix_data_range_t range = (pmix_data_range_t)px_registry_pmix_range;
    PMIX_INFO_LOAD(&r->info[r->ninfo], PMIX_RANGE, &range, PMIX_DATA_RANGE);
    r->ninfo++;
}

static int px_rpmix_timeout_s(void)
{
    double t = px_registry_base_timeout();
    return t < 1 ? 1 : (int)(t + 0.999);
}

static void px_rpmix_op_cb(pmix_status_t status, void *cbdata)
{
    px_rpmix_req_t *r = cbdata;
    r->status = status;
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    px_rpmix_req_release(r);
}

static void px_rpmix_lookup_cb(pmix_status_t status, pmix_pdata_t data[], size_t ndata,
                               void *cbdata)
{
    px_rpmix_req_t *r = cbdata;
    r->status = status;
    for (size_t i = 0; PMIX_SUCCESS == status && i < ndata; ++i) {
        if (0 != strncmp(data[i].key, r->key, PMIX_MAX_KEYLEN))
            continue;
        r->found = true;
        r->holder = data[i].proc;
        r->type = data[i].value.type;
        if (PMIX_BYTE_OBJECT == data[i].value.type) {
            r->size = data[i].value.data.bo.size;
            if (r->size <= PX_REGISTRY_VALUE_MAX + PX_RPMIX_HDR) {
                r->bytes = malloc(r->size + 1);
                if (r->bytes) {
                    if (r->size)
                        memcpy(r->bytes, data[i].value.data.bo.bytes, r->size);
                    r->bytes[r->size] = '\0';
                }
            }
        } else if (PMIX_STRING == data[i].value.type && data[i].value.data.string) {
            r->size = strlen(data[i].value.data.string);
        }
        break;
    }
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    px_rpmix_req_release(r);
}

/* Wait for the answer up to the timeout. PX_SUCCESS when it came (its
 * status in r->status); else PX_ERR_TIMEOUT, printed, and the request is
 * left to the callback. Either way the caller's reference is kept on
 * success only. */
static int px_rpmix_wait(px_rpmix_req_t *r, const char *call)
{
    double limit = px_registry_base_timeout();
    double end = px_rpmix_now() + limit;
    long ns = 20000;
    while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
        if (px_rpmix_now() >= end) {
            px_show_error("registry/pmix: %s of key \"%s\" got no answer from the PMIx server "
                          "(the launcher's data server, range %s) within %.3g s "
                          "(registry_timeout)",
                          call, r->key, px_registry_pmix_range_name(), limit);
            px_rpmix_req_release(r);
            return PX_ERR_TIMEOUT;
        }
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        if (ns < 1000000)
            ns *= 2;
    }
    return PX_SUCCESS;
}

static int px_rpmix_status(pmix_status_t rc)
{
    switch (rc) {
    case PMIX_SUCCESS:
        return PX_SUCCESS;
    case PMIX_ERR_NOT_FOUND:
        return PX_ERR_NOT_FOUND;
    case PMIX_ERR_TIMEOUT:
        return PX_ERR_TIMEOUT;
    case PMIX_ERR_DUPLICATE_KEY:
        return PX_ERR_EXISTS;
    case PMIX_ERR_NOT_SUPPORTED:
        return PX_ERR_NOT_SUPPORTED;
    case PMIX_ERR_UNREACH:
    case PMIX_ERR_LOST_CONNECTION:
        return PX_ERR_NOT_AVAILABLE;
    case PMIX_ERR_NOMEM:
        return PX_ERR_OUT_OF_RESOURCE;
    default:
        return PX_ERROR;
    }
}

static int px_rpmix_fail(const char *call, const char *key, pmix_status_t rc)
{
    px_show_error("registry/pmix: %s of key \"%s\" (range %s) failed: %s (PMIx status %d)", call,
                  key, px_registry_pmix_range_name(), PMIx_Error_string(rc), (int)rc);
    return px_rpmix_status(rc);
}

static int px_rpmix_check_key(const char *key)
{
    size_t n = strlen(key);
    if (0 == n || n > PMIX_MAX_KEYLEN) {
        px_show_error("registry/pmix: key \"%.64s%s\" has %zu bytes; PMIx keys have 1 to %d "
                      "(a shorter registry_namespace or name would fit)",
                      key, n > 64 ? "..." : "", n, PMIX_MAX_KEYLEN);
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

/* What the server holds under `key`: PX_SUCCESS with *out (the caller
 * releases it) when found, PX_ERR_NOT_FOUND, or an error (printed). */
static int px_rpmix_lookup(const char *key, px_rpmix_req_t **out)
{
    *out = NULL;
    px_rpmix_req_t *r = px_rpmix_req_new(key);
    if (NULL == r)
        return PX_ERR_OUT_OF_RESOURCE;
    px_rpmix_add_range(r);
    int t = px_rpmix_timeout_s();
    PMIX_INFO_LOAD(&r->info[r->ninfo], PMIX_TIMEOUT, &t, PMIX_INT);
    r->ninfo++;
    pmix_status_t rc = PMIx_Lookup_nb(r->keys, r->info, r->ninfo, px_rpmix_lookup_cb, r);
    if (PMIX_SUCCESS != rc) {
        r->refs = 1; /* the callback will not run */
        px_rpmix_req_release(r);
        if (PMIX_ERR_NOT_FOUND == rc)
            return PX_ERR_NOT_FOUND;
        return px_rpmix_fail("PMIx_Lookup", key, rc);
    }
    int ret = px_rpmix_wait(r, "PMIx_Lookup");
    if (PX_SUCCESS != ret)
        return ret;
    if (PMIX_ERR_NOT_FOUND == r->status || (PMIX_SUCCESS == r->status && !r->found)) {
        px_rpmix_req_release(r);
        return PX_ERR_NOT_FOUND;
    }
    if (PMIX_SUCCESS != r->status) {
        ret = px_rpmix_fail("PMIx_Lookup", key, r->status);
        px_rpmix_req_release(r);
        return ret;
    }
    px_rpmix_parse(r);
    *out = r;
    return PX_SUCCESS;
}

/* Read the header of a looked-up entry (someone else's bytes: untrusted). */
static void px_rpmix_parse(px_rpmix_req_t *r)
{
    r->plexus = false;
    r->expired = false;
    r->version = 0;
    if (PMIX_BYTE_OBJECT != r->type || NULL == r->bytes || r->size < PX_RPMIX_HDR ||
        0 != memcmp(r->bytes, px_rpmix_magic, sizeof px_rpmix_magic))
        return;
    const unsigned char *h = (const unsigned char *)r->bytes;
    r->version = h[4];
    if (r->version < 1 || r->version > PX_RPMIX_VERSION)
        return;
    uint64_t e = 0;
    for (int i = 8; i < 16; ++i)
        e = (e << 8) | h[i];
    r->expiry_ms = e;
    r->expired = e <= px_rpmix_wall_ms();
    r->plexus = true;
}

/* A looked-up entry that is not ours to read: not a byte object (another
 * program's PMIx_Publish, e.g. MPI_Publish_name's strings), no header of
 * ours, a newer version, or oversized. */
static int px_rpmix_check_entry(const px_rpmix_req_t *r)
{
    if (PMIX_BYTE_OBJECT != r->type) {
        px_show_error("registry/pmix: key \"%s\" published by %s:%u holds PMIx type %s, not a "
                      "byte object: not a Plexus entry (another program's PMIx_Publish?)",
                      r->key, r->holder.nspace, (unsigned)r->holder.rank,
                      PMIx_Data_type_string((pmix_data_type_t)r->type));
        return PX_ERR_BAD_PARAM;
    }
    if (r->size > PX_REGISTRY_VALUE_MAX + PX_RPMIX_HDR) {
        px_show_error("registry/pmix: key \"%s\" published by %s:%u holds %zu bytes, more than "
                      "the %d a registry entry may have (with its %d-byte header)",
                      r->key, r->holder.nspace, (unsigned)r->holder.rank, r->size,
                      PX_REGISTRY_VALUE_MAX, PX_RPMIX_HDR);
        return PX_ERR_BAD_PARAM;
    }
    if (NULL == r->bytes)
        return PX_ERR_OUT_OF_RESOURCE;
    if (!r->plexus) {
        if (r->version > PX_RPMIX_VERSION)
            px_show_error("registry/pmix: key \"%s\" published by %s:%u is a registry/pmix "
                          "entry of version %d; this Plexus reads versions 1 to %d",
                          r->key, r->holder.nspace, (unsigned)r->holder.rank, r->version,
                          PX_RPMIX_VERSION);
        else
            px_show_error("registry/pmix: key \"%s\" published by %s:%u holds %zu bytes without "
                          "registry/pmix's header (magic \"pxpm\"): not a Plexus entry",
                          r->key, r->holder.nspace, (unsigned)r->holder.rank, r->size);
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

/* Whether the entry is one of ours holding exactly these bytes. */
static bool px_rpmix_same(const px_rpmix_req_t *r, const void *value, size_t len)
{
    return r->plexus && r->size - PX_RPMIX_HDR == len &&
           (0 == len || 0 == memcmp(r->bytes + PX_RPMIX_HDR, value, len));
}

static bool px_rpmix_mine(const px_rpmix_req_t *r)
{
    return PMIX_CHECK_PROCID(&r->holder, &px_rpmix_me);
}

static int px_rpmix_publish(const char *key, const void *value, size_t len)
{
    px_rpmix_req_t *r = px_rpmix_req_new(key);
    if (NULL == r)
        return PX_ERR_OUT_OF_RESOURCE;
    char *buf = malloc(PX_RPMIX_HDR + len);
    if (NULL == buf) {
        r->refs = 1;
        px_rpmix_req_release(r);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    unsigned char *h = (unsigned char *)buf;
    memcpy(h, px_rpmix_magic, sizeof px_rpmix_magic);
    h[4] = PX_RPMIX_VERSION;
    h[5] = h[6] = h[7] = 0;
    uint64_t e = px_rpmix_wall_ms() + (uint64_t)(px_registry_base_lease() * 1000.0);
    for (int i = 15; i >= 8; --i, e >>= 8)
        h[i] = (unsigned char)(e & 0xff);
    if (len)
        memcpy(buf + PX_RPMIX_HDR, value, len);
    pmix_byte_object_t bo = {.bytes = buf, .size = PX_RPMIX_HDR + len};
    PMIX_INFO_LOAD(&r->info[r->ninfo], key, &bo, PMIX_BYTE_OBJECT); /* copies */
    r->ninfo++;
    free(buf);
    px_rpmix_add_range(r);
    pmix_persistence_t persist = PMIX_PERSIST_PROC;
    PMIX_INFO_LOAD(&r->info[r->ninfo], PMIX_PERSISTENCE, &persist, PMIX_PERSIST);
    r->ninfo++;
    int t = px_rpmix_timeout_s();
    PMIX_INFO_LOAD(&r->info[r->ninfo], PMIX_TIMEOUT, &t, PMIX_INT);
    r->ninfo++;
    pmix_status_t rc = PMIx_Publish_nb(r->info, r->ninfo, px_rpmix_op_cb, r);
    if (PMIX_SUCCESS != rc) {
        r->refs = 1; /* the callback will not run */
        px_rpmix_req_release(r);
        if (PMIX_OPERATION_SUCCEEDED == rc)
            return PX_SUCCESS; /* done at once, no callback */
        if (PMIX_ERR_DUPLICATE_KEY == rc)
            return PX_ERR_EXISTS; /* the caller looks and says */
        return px_rpmix_fail("PMIx_Publish", key, rc);
    }
    int ret = px_rpmix_wait(r, "PMIx_Publish");
    if (PX_SUCCESS != ret)
        return ret;
    rc = r->status;
    px_rpmix_req_release(r);
    if (PMIX_ERR_DUPLICATE_KEY == rc)
        return PX_ERR_EXISTS;
    if (PMIX_SUCCESS != rc)
        return px_rpmix_fail("PMIx_Publish", key, rc);
    return PX_SUCCESS;
}

static int px_rpmix_unpublish(const char *key)
{
    px_rpmix_req_t *r = px_rpmix_req_new(key);
    if (NULL == r)
        return PX_ERR_OUT_OF_RESOURCE;
    px_rpmix_add_range(r);
    pmix_status_t rc = PMIx_Unpublish_nb(r->keys, r->info, r->ninfo, px_rpmix_op_cb, r);
    if (PMIX_SUCCESS != rc) {
        r->refs = 1; /* the callback will not run */
        px_rpmix_req_release(r);
        if (PMIX_OPERATION_SUCCEEDED == rc)
            return PX_SUCCESS;
        return PMIX_ERR_NOT_FOUND == rc ? PX_ERR_NOT_FOUND
                                        : px_rpmix_fail("PMIx_Unpublish", key, rc);
    }
    int ret = px_rpmix_wait(r, "PMIx_Unpublish");
    if (PX_SUCCESS != ret)
        return ret;
    rc = r->status;
    px_rpmix_req_release(r);
    if (PMIX_ERR_NOT_FOUND == rc)
        return PX_ERR_NOT_FOUND;
    return PMIX_SUCCESS == rc ? PX_SUCCESS : px_rpmix_fail("PMIx_Unpublish", key, rc);
}

static int px_rpmix_exists(const px_rpmix_req_t *r)
{
    px_show_error("registry/pmix: key \"%s\" is held by %s:%u (a process of %s); PMIx lets "
                  "only its publisher replace or remove it",
                  r->key, r->holder.nspace, (unsigned)r->holder.rank,
                  0 == strcmp(r->holder.nspace, px_rpmix_me.nspace) ? "this job" : "another job");
    return PX_ERR_EXISTS;
}

/* Publish over an entry of ours (a renewal, a new value) or an expired one:
 * Open MPI's server replaces it; a server that refuses duplicates needs it
 * removed first, which works for our own entries only. */
static int px_rpmix_republish(const char *key, const void *value, size_t len, bool mine)
{
    int ret = px_rpmix_publish(key, value, len);
    if (PX_ERR_EXISTS == ret && mine) {
        ret = px_rpmix_unpublish(key);
        if (PX_SUCCESS != ret && PX_ERR_NOT_FOUND != ret)
            return ret;
        ret = px_rpmix_publish(key, value, len);
    }
    return ret;
}

static int px_rpmix_put(px_registry_module_t *m, const char *key, const void *value, size_t len,
                        int how)
{
    (void)m;
    int ret = px_rpmix_check_key(key);
    if (PX_SUCCESS != ret)
        return ret;
    if (len > PX_REGISTRY_VALUE_MAX) {
        px_show_error("registry/pmix: value of key \"%s\" has %zu bytes, more than %d", key, len,
                      PX_REGISTRY_VALUE_MAX);
        return PX_ERR_BAD_PARAM;
    }
    if (PX_REGISTRY_PUT_CREATE != how && PX_REGISTRY_PUT_ANY != how) {
        px_show_error("registry/pmix: put of key \"%s\" with how=%d (PX_REGISTRY_PUT_ANY or "
                      "PX_REGISTRY_PUT_CREATE expected)",
                      key, how);
        return PX_ERR_BAD_PARAM;
    }
    px_rpmix_req_t *old = NULL;
    bool mine = false;
    ret = px_rpmix_lookup(key, &old);
    if (PX_SUCCESS == ret) {
        mine = px_rpmix_mine(old);
        bool live = old->plexus && !old->expired;
        if (live && px_rpmix_same(old, value, len) && !mine) {
            /* Another process holds exactly these bytes: present, as the
             * contract asks; its owner renews it. */
            px_rpmix_req_release(old);
            return PX_SUCCESS;
        }
        /* Live and someone else's with other bytes (or not Plexus's at all):
         * not ours to replace. */
        if (!mine && (live || !old->plexus)) {
            ret = old->plexus ? px_rpmix_exists(old) : px_rpmix_check_entry(old);
            px_rpmix_req_release(old);
            return PX_ERR_EXISTS == ret ? ret : PX_ERR_EXISTS;
        }
        if (mine && live && !px_rpmix_same(old, value, len) && PX_REGISTRY_PUT_CREATE == how) {
            ret = px_rpmix_exists(old);
            px_rpmix_req_release(old);
            return ret;
        }
        if (!live)
            PX_OUTPUT_VERBOSE(10, px_registry_base_framework_get()->output,
                              "registry/pmix: key \"%s\" of %s:%u expired; taking it over", key,
                              old->holder.nspace, (unsigned)old->holder.rank);
        px_rpmix_req_release(old);
        /* Ours (a renewal: the same bytes with a new expiry; or a new value
         * with PUT_ANY), or expired. */
        ret = px_rpmix_republish(key, value, len, mine);
    } else if (PX_ERR_NOT_FOUND == ret) {
        ret = px_rpmix_publish(key, value, len);
    } else {
        return ret;
    }
    if (PX_SUCCESS != ret && PX_ERR_EXISTS != ret)
        return ret;
    /* Look again: another process may have published the key between our
     * lookup and our publish (a server refusing duplicates said EXISTS; Open
     * MPI's replaced one of the two values). */
    ret = px_rpmix_lookup(key, &old);
    if (PX_ERR_NOT_FOUND == ret) {
        px_show_error("registry/pmix: key \"%s\" was published (range %s) but a lookup right "
                      "after does not find it: the server did not keep it",
                      key, px_registry_pmix_range_name());
        return PX_ERROR;
    }
    if (PX_SUCCESS != ret)
        return ret;
    ret = px_rpmix_same(old, value, len) && !old->expired ? PX_SUCCESS : px_rpmix_exists(old);
    px_rpmix_req_release(old);
    return ret;
}

static int px_rpmix_get(px_registry_module_t *m, const char *key, void **value, size_t *len)
{
    (void)m;
    *value = NULL;
    *len = 0;
    int ret = px_rpmix_check_key(key);
    if (PX_SUCCESS != ret)
        return ret;
    px_rpmix_req_t *r = NULL;
    ret = px_rpmix_lookup(key, &r);
    if (PX_SUCCESS != ret)
        return ret;
    ret = px_rpmix_check_entry(r);
    if (PX_SUCCESS == ret && r->expired) {
        PX_OUTPUT_VERBOSE(10, px_registry_base_framework_get()->output,
                          "registry/pmix: key \"%s\" of %s:%u expired %.3f s ago (its owner "
                          "stopped renewing it): not found",
                          key, r->holder.nspace, (unsigned)r->holder.rank,
                          1e-3 * (double)(px_rpmix_wall_ms() - r->expiry_ms));
        ret = PX_ERR_NOT_FOUND;
    }
    if (PX_SUCCESS == ret) {
        size_t n = r->size - PX_RPMIX_HDR;
        char *out = malloc(n + 1);
        if (NULL == out) {
            ret = PX_ERR_OUT_OF_RESOURCE;
        } else {
            if (n)
                memcpy(out, r->bytes + PX_RPMIX_HDR, n);
            out[n] = '\0';
            *value = out;
            *len = n;
        }
    }
    px_rpmix_req_release(r);
    return ret;
}

static int px_rpmix_del(px_registry_module_t *m, const char *key, const void *value, size_t len)
{
    (void)m;
    int ret = px_rpmix_check_key(key);
    if (PX_SUCCESS != ret)
        return ret;
    px_rpmix_req_t *r = NULL;
    ret = px_rpmix_lookup(key, &r);
    if (PX_SUCCESS != ret)
        return ret;
    bool mine = px_rpmix_mine(r);
    if (r->plexus && r->expired) {
        /* Absent for everyone; clean our own stale entry up anyway. */
        px_rpmix_req_release(r);
        if (mine)
            (void)px_rpmix_unpublish(key);
        return PX_ERR_NOT_FOUND;
    }
    if (value && !px_rpmix_same(r, value, len)) {
        px_rpmix_req_release(r);
        return PX_ERR_EXISTS; /* not the entry the caller means: its business */
    }
    if (!mine) {
        ret = px_rpmix_exists(r);
        px_rpmix_req_release(r);
        return ret;
    }
    px_rpmix_req_release(r);
    ret = px_rpmix_unpublish(key);
    if (PX_SUCCESS != ret)
        return ret;
    /* Open MPI's server may answer the unpublish before its data server
     * applied it: another process's lookup right after (even after a
     * barrier) could still find the entry. Every lookup goes to that one data
     * server, so once this process's own lookup misses, everyone's does: wait
     * for that, within registry_timeout, so a del that returned is seen. */
    uint64_t end = px_rpmix_wall_ms() + (uint64_t)(px_registry_base_timeout() * 1000.0);
    for (;;) {
        px_rpmix_req_t *q = NULL;
        int lr = px_rpmix_lookup(key, &q);
        bool gone = PX_ERR_NOT_FOUND == lr || (PX_SUCCESS == lr && !px_rpmix_mine(q));
        if (q)
            px_rpmix_req_release(q);
        if (gone || (PX_SUCCESS != lr && PX_ERR_NOT_FOUND != lr))
            return PX_SUCCESS;
        if (px_rpmix_wall_ms() >= end) {
            PX_OUTPUT_VERBOSE(1, px_registry_base_framework_get()->output,
                              "registry/pmix: key \"%s\" is still found %.1f s after its "
                              "unpublish was acknowledged",
                              key, px_registry_base_timeout());
            return PX_SUCCESS;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static int px_rpmix_list(px_registry_module_t *m, const char *prefix, px_registry_list_fn_t fn,
                         void *arg)
{
    (void)m;
    (void)fn;
    (void)arg;
    px_show_error("registry/pmix: cannot list the keys under \"%s\": PMIx's lookup takes exact "
                  "keys and has no listing. Open names by their full name, or use registry "
                  "redis or etcd to list them",
                  prefix ? prefix : "");
    return PX_ERR_NOT_SUPPORTED;
}

static void px_rpmix_close(px_registry_module_t *m)
{
    (void)m;
    if (px_rpmix_inited) {
        PMIx_Finalize(NULL, 0); /* drops our reference only */
        px_rpmix_inited = false;
    }
}

static px_registry_module_t px_registry_pmix_module = {
    .name = "pmix",
    .put = px_rpmix_put,
    .get = px_rpmix_get,
    .del = px_rpmix_del,
    .list = px_rpmix_list,
    .heartbeat = NULL,
    .qualify = NULL,
    .close = px_rpmix_close,
};

const char *px_registry_pmix_probe(px_registry_module_t **module)
{
    static char why[400];
    *module = NULL;
    if (!PMIx_Initialized()) {
        const char *ns = getenv("PMIX_NAMESPACE");
        if (NULL == ns || '\0' == ns[0])
            return "this process was not started by a PMIx launcher (no PMIX_NAMESPACE: run it "
                   "under mpirun, or choose registry p2p, redis or etcd)";
        snprintf(why, sizeof why,
                 "PMIx is not initialized in this process although PMIX_NAMESPACE=%.64s says a "
                 "PMIx launcher started it: boot/pmix was not selected (PX_MCA_boot)",
                 ns);
        return why;
    }
    if (!px_rpmix_inited) {
        pmix_status_t rc = PMIx_Init(&px_rpmix_me, NULL, 0); /* counted: a new reference */
        if (PMIX_SUCCESS != rc) {
            snprintf(why, sizeof why, "PMIx_Init failed: %s (PMIx status %d)",
                     PMIx_Error_string(rc), (int)rc);
            return why;
        }
        px_rpmix_inited = true;
    }
    /* Probe: a lookup of a key nobody publishes; a server without
     * publish/lookup (Slurm's) says PMIX_ERR_NOT_SUPPORTED. */
    char key[PMIX_MAX_KEYLEN + 1];
    snprintf(key, sizeof key, "%.200s/.px-registry-pmix-probe", px_registry_base_namespace());
    px_rpmix_req_t *r = px_rpmix_req_new(key);
    if (NULL == r)
        return "out of memory";
    px_rpmix_add_range(r);
    pmix_status_t rc = PMIx_Lookup_nb(r->keys, r->info, r->ninfo, px_rpmix_lookup_cb, r);
    if (PMIX_SUCCESS != rc) {
        r->refs = 1;
        px_rpmix_req_release(r);
    } else {
        double limit = px_registry_base_timeout(), end = px_rpmix_now() + limit;
        while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE) && px_rpmix_now() < end) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        if (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
            px_rpmix_req_release(r);
            snprintf(why, sizeof why,
                     "the PMIx server did not answer a probe lookup within %.3g s "
                     "(registry_timeout)",
                     limit);
            px_rpmix_close(NULL);
            return why;
        }
        rc = r->status;
        px_rpmix_req_release(r);
    }
    if (PMIX_SUCCESS != rc && PMIX_ERR_NOT_FOUND != rc) {
        snprintf(why, sizeof why,
                 "the PMIx server of this launcher does not serve publish/lookup: a probe "
                 "lookup (range %s) gave %s (PMIx status %d)%s",
                 px_registry_pmix_range_name(), PMIx_Error_string(rc), (int)rc,
                 PMIX_ERR_NOT_SUPPORTED == rc ? " (Slurm's srun --mpi=pmix has none)" : "");
        px_rpmix_close(NULL);
        return why;
    }
    PX_OUTPUT_VERBOSE(10, px_registry_base_framework_get()->output,
                      "registry/pmix: %s:%u, the server answers lookups (range %s)",
                      px_rpmix_me.nspace, (unsigned)px_rpmix_me.rank,
                      px_registry_pmix_range_name());
    *module = &px_registry_pmix_module;
    return NULL;
}
