/*
 * name.c: named segments and contacts (runtime/plexus_name.h,
 * docs/registry.md) over the registry framework: publishing this process's
 * regions and contact as entries (entry.c), renewing them from a heartbeat
 * thread, opening other processes' names (registry get, decode, connect on
 * demand, import the key), refreshing, watching, listing, and unpublishing
 * at px_xfer_free and px_finalize.
 *
 * Threads: the application calls the px_name_* functions one thread at a
 * time (the messaging API's rule). The heartbeat thread touches only the
 * list of this process's entries and the registry module, both under the
 * registry base's lock (px_registry_base_lock), which the application's
 * calls take too for the same things.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/registry/base/base.h"
#include "frameworks/registry/registry.h"
#include "runtime/name/name.h"
#include "runtime/plexus.h"
#include "runtime/proc/proc.h"
#include "runtime/xfer/xfer.h"

/* A name this process published. */
typedef struct own {
    struct own *next;
    char name[PX_NAME_MAX + 1];
    char key[PX_REGISTRY_KEY_MAX + 1];
    char *value; /* the entry's bytes: renewed as they are, byte for byte */
    size_t len;
    px_xfer_region_t *region; /* NULL for a contact */
} own_t;

/* A connection this layer made (reused for every name of the same owner).
 * Its lifetime (docs/registry.md, "Connections to owners"): kept while it is
 * live, for the next open of a name of the same owner; once it is not (its
 * owner left or died, or this process failed the peer: a timeout), it is no
 * longer reused, and it is released (px_disconnect) as soon as no open
 * handle resolved through it remains: at that handle's px_name_close or
 * refresh, or at the next open that looks for a connection. */
typedef struct conn {
    struct conn *next;
    char contact[PX_NAME_CONTACT_MAX];
    uint64_t owner;
    int peer;
    int users;                    /* open handles resolved through it (px_name_t.conn) */
    bool dead;                    /* not live any more: never reused, released at users == 0 */
    char name[PX_NAME_MAX + 128]; /* the first name opened through it (for messages) */
} conn_t;

/* A description read from the registry, kept registry_cache_ttl seconds. */
typedef struct cached {
    struct cached *next;
    char key[PX_REGISTRY_KEY_MAX + 1];
    void *value;
    size_t len;
    double at;
} cached_t;

struct px_name {
    char name[PX_NAME_MAX + 128];
    char key[PX_REGISTRY_KEY_MAX + 1];
    void *value; /* the entry's bytes when last read */
    size_t len;
    px_name_entry_t e;
    int peer;
    conn_t *conn; /* the connection it was resolved through (NULL: this process) */
    px_xfer_remote_t *remote;
    double read_at;
};

/* A qualified name (p2p's "host:port/name") may be longer than a name. */
#define OPEN_NAME_MAX (PX_NAME_MAX + 127)

static own_t *owns;          /* under the base lock */
static conn_t *conns;        /* application thread only */
static cached_t *cache;      /* application thread only */
static uint64_t instance_id; /* this process's owner id in its entries */
static pthread_t hb_thread;
static bool hb_running;
static bool hb_stop;
static pthread_mutex_t hb_mx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hb_cv;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *store_name(void)
{
    px_registry_module_t *m = px_registry_base_module();
    return m && m->name ? m->name : "?";
}

/* A store call's failure as text: a timeout names the variable that bounds
 * it (registry_timeout, at its minimum 0.01 s a store may well not answer
 * in time). Valid until this thread's next call. */
static const char *store_error(int rc)
{
    static _Thread_local char buf[96];
    if (PX_ERR_TIMEOUT != rc)
        return px_strerror(rc);
    snprintf(buf, sizeof buf, "%s (no answer within registry_timeout = %g s)", px_strerror(rc),
             px_registry_base_timeout());
    return buf;
}

/* Selected registry and entry support, or an error saying why not. */
static int ready(const char *fn)
{
    if (!px_rt.initialized) {
        px_show_error("%s: called before px_init (or after px_finalize)", fn);
        return PX_ERR_NOT_INITIALIZED;
    }
    if (!px_name_entry_supported()) {
        px_show_error("%s: this Plexus was built without json-c, which names need for their "
                      "entries (install libjson-c-dev, scripts/deps.sh, and build again)",
                      fn);
        return PX_ERR_NOT_SUPPORTED;
    }
    if (px_registry_base_module())
        return PX_SUCCESS;
    int rc = px_registry_base_select(NULL);
    if (rc != PX_SUCCESS)
        px_show_error("%s: no registry is usable (the reason is above)", fn);
    return rc;
}

/* The name's rules, checked before any store call. */
static int check_name(const char *fn, const char *name, size_t max)
{
    const char *why = px_name_problem(name, max);
    if (NULL == why)
        return PX_SUCCESS;
    px_show_error("%s: the name \"%.*s\" is not valid: %s (accepted: 1-%zu bytes from "
                  "[A-Za-z0-9._:/-], not starting or ending with '/', without \"//\")",
                  fn, name ? 240 : 4, name ? name : "NULL", why, max);
    return PX_ERR_BAD_PARAM;
}

static void ensure_instance_id(void)
{
    while (0 == instance_id) {
        uint64_t x = 0;
        if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
            x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(now() * 1e9);
        instance_id = x;
    }
}

static void fill_identity(px_name_entry_t *e)
{
    ensure_instance_id();
    e->version = PX_NAME_ENTRY_VERSION;
    e->owner = instance_id;
    e->pid = (long)getpid();
    if (gethostname(e->host, sizeof e->host - 1) != 0 || !e->host[0])
        snprintf(e->host, sizeof e->host, "unknown");
    e->host[sizeof e->host - 1] = 0;
    for (char *p = e->host; *p; ++p)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            *p = '_';
}

/* Who holds `key` now, for an error message ("host H, pid P", or why it is
 * not known). */
static void describe_holder(const char *key, char *buf, size_t cap)
{
    void *v = NULL;
    size_t n = 0;
    if (px_registry_base_get(key, &v, &n) != PX_SUCCESS) {
        snprintf(buf, cap, "a process that let it go meanwhile");
        return;
    }
    px_name_entry_t e;
    char why[200];
    if (px_name_entry_decode(v, n, &e, why, sizeof why) == PX_SUCCESS)
        snprintf(buf, cap, "host %s, pid %ld", e.host, e.pid);
    else
        snprintf(buf, cap, "an entry that is not Plexus's (%s)", why);
    free(v);
}

/* ---- the heartbeat ---- */

static own_t *own_find(const char *name)
{
    for (own_t *o = owns; o; o = o->next)
        if (0 == strcmp(o->name, name))
            return o;
    return NULL;
}

static void own_free(own_t *o)
{
    free(o->value);
    free(o);
}

/* One renewal round: the module's heartbeat, then every entry put again
 * (which refills a store that restarted empty). An entry refused as taken
 * was lost to another process (its lease ran out meanwhile): dropped. */
static void beat(void)
{
    px_registry_base_lock();
    int rc = px_registry_base_beat();
    if (rc != PX_SUCCESS)
        PX_OUTPUT_VERBOSE(1, px_registry_base_framework.output,
                          "registry %s: heartbeat failed: %s (renewing the entries anyway)",
                          store_name(), px_strerror(rc));
    for (own_t **pp = &owns; *pp;) {
        own_t *o = *pp;
        rc = px_registry_base_put(o->key, o->value, o->len, PX_REGISTRY_PUT_CREATE);
        if (PX_ERR_EXISTS == rc) {
            char holder[300];
            describe_holder(o->key, holder, sizeof holder);
            px_show_warning("registry %s: the name \"%s\" (key \"%s\") of this process was taken "
                            "by another process (%s) after its lease ran out: it is no longer "
                            "published by this process",
                            store_name(), o->name, o->key, holder);
            *pp = o->next;
            own_free(o);
            continue;
        }
        if (rc != PX_SUCCESS)
            PX_OUTPUT_VERBOSE(1, px_registry_base_framework.output,
                              "registry %s: renewing \"%s\" failed: %s (tried again next "
                              "heartbeat)",
                              store_name(), o->name, px_strerror(rc));
        pp = &o->next;
    }
    px_registry_base_unlock();
}

static void *hb_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hb_mx);
    while (!hb_stop) {
        double period = px_registry_base_heartbeat();
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double t = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + period;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        while (!hb_stop && pthread_cond_timedwait(&hb_cv, &hb_mx, &ts) != ETIMEDOUT) {
        }
        if (hb_stop)
            break;
        pthread_mutex_unlock(&hb_mx);
        beat();
        pthread_mutex_lock(&hb_mx);
    }
    pthread_mutex_unlock(&hb_mx);
    return NULL;
}

static void hb_start(void)
{
    if (hb_running)
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&hb_cv, &ca);
    pthread_condattr_destroy(&ca);
    hb_stop = false;
    if (pthread_create(&hb_thread, NULL, hb_main, NULL) == 0)
        hb_running = true;
    else
        px_show_warning("registry: could not start the heartbeat thread (%s): this process's "
                        "names will expire after registry_lease = %g s",
                        strerror(errno), px_registry_base_lease());
}

static void hb_end(void)
{
    if (!hb_running)
        return;
    pthread_mutex_lock(&hb_mx);
    hb_stop = true;
    pthread_cond_signal(&hb_cv);
    pthread_mutex_unlock(&hb_mx);
    pthread_join(hb_thread, NULL);
    pthread_cond_destroy(&hb_cv);
    hb_running = false;
}

/* ---- publishing ---- */

static int publish_entry(const char *fn, const char *name, px_name_entry_t *e,
                         px_xfer_region_t *region)
{
    char key[PX_REGISTRY_KEY_MAX + 1];
    int rc = px_registry_base_key(name, key, sizeof key);
    if (rc != PX_SUCCESS)
        return rc;
    char *value;
    size_t len;
    rc = px_name_entry_encode(e, &value, &len);
    if (rc != PX_SUCCESS)
        return rc;
    if (len > PX_REGISTRY_VALUE_MAX) {
        px_show_error("%s: the entry of \"%s\" would be %zu bytes, more than the %d a store "
                      "accepts",
                      fn, name, len, PX_REGISTRY_VALUE_MAX);
        free(value);
        return PX_ERR_BAD_PARAM;
    }
    px_registry_base_lock();
    own_t *o = own_find(name);
    if (o && (o->len != len || memcmp(o->value, value, len) != 0)) {
        /* Republished (a moved segment): take this process's old entry
         * away first, so the create below never overwrites another's. */
        rc = px_registry_base_del(o->key, o->value, o->len);
        if (rc != PX_SUCCESS && rc != PX_ERR_NOT_FOUND && rc != PX_ERR_EXISTS) {
            px_registry_base_unlock();
            px_show_error("%s: could not replace this process's entry \"%s\" in registry %s: %s",
                          fn, name, store_name(), store_error(rc));
            free(value);
            return rc;
        }
    }
    rc = px_registry_base_put(key, value, len, PX_REGISTRY_PUT_CREATE);
    if (PX_ERR_EXISTS == rc) {
        char holder[300];
        describe_holder(key, holder, sizeof holder);
        px_registry_base_unlock();
        px_show_error("%s: the name \"%s\" is held by another live process (%s) in registry %s "
                      "(namespace \"%s\", key \"%s\"): choose another name, or wait until its "
                      "owner unpublishes it or ends (its lease, registry_lease = %g s); "
                      "`px_names del %s` removes it by force",
                      fn, name, holder, store_name(), px_registry_base_namespace(), key,
                      px_registry_base_lease(), name);
        if (o) { /* ours was replaced by theirs meanwhile */
            own_t **pp = &owns;
            while (*pp != o)
                pp = &(*pp)->next;
            *pp = o->next;
            own_free(o);
        }
        free(value);
        return rc;
    }
    if (rc != PX_SUCCESS) {
        px_registry_base_unlock();
        px_show_error("%s: could not publish \"%s\" in registry %s (key \"%s\"): %s", fn, name,
                      store_name(), key, store_error(rc));
        free(value);
        return rc;
    }
    if (NULL == o) {
        o = calloc(1, sizeof *o);
        if (NULL == o) {
            px_registry_base_del(key, value, len);
            px_registry_base_unlock();
            free(value);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        snprintf(o->name, sizeof o->name, "%s", name);
        snprintf(o->key, sizeof o->key, "%s", key);
        o->next = owns;
        owns = o;
    } else {
        free(o->value);
    }
    o->value = value;
    o->len = len;
    o->region = region;
    px_registry_base_unlock();
    hb_start();
    return PX_SUCCESS;
}

int px_name_publish(const char *name, px_xfer_region_t *region)
{
    int rc = check_name("px_name_publish", name, PX_NAME_MAX);
    if (rc != PX_SUCCESS)
        return rc;
    if (NULL == region) {
        px_show_error("px_name_publish(\"%s\"): the region is NULL (expected one from "
                      "px_xfer_alloc or px_xfer_register)",
                      name);
        return PX_ERR_BAD_PARAM;
    }
    if ((rc = ready("px_name_publish")) != PX_SUCCESS)
        return rc;
    px_name_entry_t *e = calloc(1, sizeof *e);
    if (NULL == e)
        return PX_ERR_OUT_OF_RESOURCE;
    e->kind = PX_NAME_REGION;
    rc = px_xfer_key_export(region, e->key, sizeof e->key, &e->keylen);
    if (rc != PX_SUCCESS) {
        px_show_error("px_name_publish(\"%s\"): the region's key could not be exported: %s (%s)",
                      name, px_strerror(rc), px_xfer_last_error());
        free(e);
        return rc;
    }
    e->length = px_xfer_region_length(region);
    const char *contact = NULL;
    rc = px_contact(&contact);
    if (rc != PX_SUCCESS || NULL == contact || strlen(contact) >= sizeof e->contact) {
        px_show_error("px_name_publish(\"%s\"): this process has no contact others can connect "
                      "to (px_contact: %s)",
                      name, px_strerror(rc));
        free(e);
        return rc != PX_SUCCESS ? rc : PX_ERR_NOT_AVAILABLE;
    }
    snprintf(e->contact, sizeof e->contact, "%s", contact);
    fill_identity(e);
    rc = publish_entry("px_name_publish", name, e, region);
    free(e);
    return rc;
}

int px_name_publish_contact(const char *name)
{
    int rc = check_name("px_name_publish_contact", name, PX_NAME_MAX);
    if (rc != PX_SUCCESS)
        return rc;
    if ((rc = ready("px_name_publish_contact")) != PX_SUCCESS)
        return rc;
    px_name_entry_t *e = calloc(1, sizeof *e);
    if (NULL == e)
        return PX_ERR_OUT_OF_RESOURCE;
    e->kind = PX_NAME_CONTACT;
    const char *contact = NULL;
    rc = px_contact(&contact);
    if (rc != PX_SUCCESS || NULL == contact || strlen(contact) >= sizeof e->contact) {
        px_show_error("px_name_publish_contact(\"%s\"): this process has no contact others can "
                      "connect to (px_contact: %s)",
                      name, px_strerror(rc));
        free(e);
        return rc != PX_SUCCESS ? rc : PX_ERR_NOT_AVAILABLE;
    }
    snprintf(e->contact, sizeof e->contact, "%s", contact);
    fill_identity(e);
    rc = publish_entry("px_name_publish_contact", name, e, NULL);
    free(e);
    return rc;
}

/* Remove entry o (under the base lock); the store's answer. */
static int unpublish_own(own_t *o)
{
    int rc = px_registry_base_del(o->key, o->value, o->len);
    own_t **pp = &owns;
    while (*pp && *pp != o)
        pp = &(*pp)->next;
    if (*pp)
        *pp = o->next;
    own_free(o);
    return rc;
}

int px_name_unpublish(const char *name)
{
    int rc = check_name("px_name_unpublish", name, PX_NAME_MAX);
    if (rc != PX_SUCCESS)
        return rc;
    if (!px_rt.initialized) {
        px_show_error("px_name_unpublish: called before px_init (or after px_finalize)");
        return PX_ERR_NOT_INITIALIZED;
    }
    px_registry_base_lock();
    own_t *o = own_find(name);
    if (NULL == o) {
        px_registry_base_unlock();
        px_show_error("px_name_unpublish: this process published no name \"%s\" (or it was "
                      "unpublished already, or taken by another process after its lease ran "
                      "out)",
                      name);
        return PX_ERR_NOT_FOUND;
    }
    char key[PX_REGISTRY_KEY_MAX + 1];
    snprintf(key, sizeof key, "%s", o->key);
    rc = unpublish_own(o);
    px_registry_base_unlock();
    if (PX_ERR_NOT_FOUND == rc || PX_ERR_EXISTS == rc) {
        /* Gone already (expired, or the store restarted empty), or someone
         * else's now: not ours to remove; this process no longer holds it. */
        return PX_SUCCESS;
    }
    if (rc != PX_SUCCESS)
        px_show_error("px_name_unpublish: removing \"%s\" (key \"%s\") from registry %s failed: "
                      "%s; it vanishes when its lease runs out (registry_lease = %g s)",
                      name, key, store_name(), store_error(rc), px_registry_base_lease());
    return rc;
}

int px_name_qualify(const char *name, char *buf, size_t cap)
{
    int rc = check_name("px_name_qualify", name, PX_NAME_MAX);
    if (rc != PX_SUCCESS)
        return rc;
    if (NULL == buf || 0 == cap) {
        px_show_error("px_name_qualify(\"%s\"): no buffer", name);
        return PX_ERR_BAD_PARAM;
    }
    if ((rc = ready("px_name_qualify")) != PX_SUCCESS)
        return rc;
    rc = px_registry_base_qualify(name, buf, cap);
    if (rc != PX_SUCCESS)
        px_show_error("px_name_qualify(\"%s\"): registry %s: %s (a buffer of %zu bytes)", name,
                      store_name(), px_strerror(rc), cap);
    return rc;
}

/* px_xfer_free's hook: the region's names go with it. */
static void region_freed(px_xfer_region_t *region)
{
    px_registry_base_lock();
    for (own_t *o = owns, *next; o; o = next) {
        next = o->next;
        if (o->region == region) {
            PX_OUTPUT_VERBOSE(10, px_registry_base_framework.output,
                              "registry: unpublishing \"%s\": its region is being freed", o->name);
            unpublish_own(o);
        }
    }
    px_registry_base_unlock();
}

/* ---- opening ---- */

/* Read `key`'s value, from the cache when it is fresh enough (fresh: never
 * from the cache); *hit says whether it came from the cache. */
static int read_entry(const char *key, bool fresh, void **value, size_t *len, bool *hit)
{
    *hit = false;
    double t = now(), ttl = px_registry_base_cache_ttl();
    cached_t **pp = &cache;
    for (; *pp; pp = &(*pp)->next)
        if (0 == strcmp((*pp)->key, key))
            break;
    if (!fresh && *pp && ttl > 0 && t - (*pp)->at < ttl) {
        *value = malloc((*pp)->len + 1);
        if (NULL == *value)
            return PX_ERR_OUT_OF_RESOURCE;
        memcpy(*value, (*pp)->value, (*pp)->len + 1);
        *len = (*pp)->len;
        *hit = true;
        return PX_SUCCESS;
    }
    int rc = px_registry_base_get(key, value, len);
    cached_t *c = *pp;
    if (rc != PX_SUCCESS) {
        if (c) { /* forget it */
            *pp = c->next;
            free(c->value);
            free(c);
        }
        return rc;
    }
    if (NULL == c && (c = calloc(1, sizeof *c)) != NULL) {
        snprintf(c->key, sizeof c->key, "%s", key);
        c->next = cache;
        cache = c;
    }
    if (c) {
        free(c->value);
        c->value = malloc(*len + 1);
        if (c->value) {
            memcpy(c->value, *value, *len);
            ((char *)c->value)[*len] = 0;
        }
        c->len = c->value ? *len : 0;
        c->at = c->value ? t : 0;
    }
    return PX_SUCCESS;
}

/* A connection that may still be used: not closed, and no transport of
 * it has reported the peer failed (a copy that found its process exiting
 * says so before the connection closes). */
static bool conn_live(const px_rt_dyn_t *d)
{
    return d && !d->gone && !__atomic_load_n(&d->peer.failed, __ATOMIC_RELAXED);
}

/* Whether c may carry a new handle: not marked dead, and live. */
static bool conn_usable(conn_t *c)
{
    if (!c->dead && !conn_live(px_rt_dyn_find(c->peer)))
        c->dead = true;
    return !c->dead;
}

static int conns_held(void)
{
    int n = 0;
    for (conn_t *c = conns; c; c = c->next)
        n++;
    return n;
}

/* Release connection c (no handle uses it any more): its peer is
 * disconnected unless the application did so already, and forgotten. */
static void conn_release(conn_t *c)
{
    conn_t **pp = &conns;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    px_rt_dyn_t *d = px_rt_dyn_find(c->peer);
    const char *why = NULL == d ? "the application disconnected it"
                      : d->gone ? "its owner is gone"
                                : "this process failed it";
    if (d && d->connected)
        px_disconnect(c->peer);
    PX_OUTPUT_VERBOSE(10, px_registry_base_framework.output,
                      "released the connection to the owner of \"%s\" (peer %d, "
                      "contact %s): %s; %d connection(s) to owners held",
                      c->name, c->peer, c->contact, why, conns_held());
    free(c);
}

/* A handle stops using c: c goes when it is dead and this was its last. */
static void conn_drop(conn_t *c)
{
    if (NULL == c)
        return;
    if (c->users > 0)
        c->users--;
    if (0 == c->users && !conn_usable(c))
        conn_release(c);
}

/* Mark the connections that are not live any more, and release those of
 * them no open handle uses. */
static void conns_sweep(void)
{
    for (conn_t *c = conns, *next; c; c = next) {
        next = c->next;
        if (!conn_usable(c) && 0 == c->users)
            conn_release(c);
    }
}

/* Whether a live connection to the entry's owner exists (its id in *peer). */
static bool reachable(const px_name_entry_t *e, int *peer)
{
    for (conn_t *c = conns; c; c = c->next)
        if (0 == strcmp(c->contact, e->contact) && c->owner == e->owner && conn_usable(c)) {
            *peer = c->peer;
            return true;
        }
    return false;
}

/* The peer id of the entry's owner: this process (*conn NULL), a
 * connection made before to the same owner, or a new one (*conn, with one
 * more user: the caller's handle). Connections that are not live any more
 * and that no handle uses are released first. */
static int owner_peer(const char *fn, const char *name, const px_name_entry_t *e, int *peer,
                      conn_t **conn)
{
    *conn = NULL;
    if (e->owner == instance_id && instance_id != 0) {
        *peer = px_rt.rank;
        return PX_SUCCESS;
    }
    conns_sweep();
    for (conn_t *c = conns; c; c = c->next)
        if (0 == strcmp(c->contact, e->contact) && c->owner == e->owner && conn_usable(c)) {
            *peer = c->peer;
            c->users++;
            *conn = c;
            return PX_SUCCESS;
        }
    int rc = px_connect(e->contact, peer);
    if (rc != PX_SUCCESS) {
        px_show_error("%s(\"%s\"): its owner (host %s, pid %ld, contact %s) cannot be reached: %s "
                      "(it may have ended; its entry vanishes within registry_lease = %g s)",
                      fn, name, e->host, e->pid, e->contact, px_strerror(rc),
                      px_registry_base_lease());
        return rc;
    }
    conn_t *c = calloc(1, sizeof *c);
    if (NULL == c) {
        px_disconnect(*peer);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    snprintf(c->contact, sizeof c->contact, "%s", e->contact);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->owner = e->owner;
    c->peer = *peer;
    c->users = 1;
    c->next = conns;
    conns = c;
    *conn = c;
    PX_OUTPUT_VERBOSE(10, px_registry_base_framework.output,
                      "connected to the owner of \"%s\" (peer %d, contact %s): %d "
                      "connection(s) to owners held",
                      name, *peer, e->contact, conns_held());
    return PX_SUCCESS;
}

/* Read, decode and reach the entry of h->key into h (the previous remote
 * and connection, if any, are the caller's). An entry from the cache that
 * cannot be reached (its owner moved or ended since) is read again from the
 * store, once. */
static int resolve(const char *fn, px_name_t *h, bool fresh)
{
    void *value = NULL;
    size_t len = 0;
    bool hit = false;
    int rc = read_entry(h->key, fresh, &value, &len, &hit);
    if (hit) {
        px_name_entry_t *e = malloc(sizeof *e);
        char why[300];
        int peer;
        bool usable = e && px_name_entry_decode(value, len, e, why, sizeof why) == PX_SUCCESS &&
                      (e->owner == instance_id || reachable(e, &peer));
        free(e);
        if (!usable) {
            free(value);
            value = NULL;
            rc = read_entry(h->key, true, &value, &len, &hit);
        }
    }
    if (PX_ERR_NOT_FOUND == rc) {
        px_show_error("%s: no name \"%s\" in registry %s (namespace \"%s\", key \"%s\"): it was "
                      "never published, its owner unpublished it or ended (entries expire "
                      "registry_lease = %g s after their owner's last heartbeat), or it lives in "
                      "another namespace (registry_namespace); `px_names list` shows the names",
                      fn, h->name, store_name(), px_registry_base_namespace(), h->key,
                      px_registry_base_lease());
        return rc;
    }
    if (rc != PX_SUCCESS) {
        px_show_error("%s: reading \"%s\" (key \"%s\") from registry %s failed: %s", fn, h->name,
                      h->key, store_name(), store_error(rc));
        return rc;
    }
    px_name_entry_t e;
    char why[300];
    rc = px_name_entry_decode(value, len, &e, why, sizeof why);
    if (rc != PX_SUCCESS) {
        px_show_error("%s: the entry of \"%s\" (key \"%s\" in registry %s, %zu bytes) is not one "
                      "Plexus can use: %s",
                      fn, h->name, h->key, store_name(), len, why);
        free(value);
        return rc;
    }
    int peer = -1;
    conn_t *conn = NULL;
    rc = owner_peer(fn, h->name, &e, &peer, &conn);
    if (rc != PX_SUCCESS) {
        free(value);
        return rc;
    }
    px_xfer_remote_t *remote = NULL;
    if (PX_NAME_REGION == e.kind) {
        rc = px_xfer_key_import(peer, e.key, e.keylen, &remote);
        if (rc != PX_SUCCESS) {
            px_show_error("%s: the region of \"%s\" (owner host %s, pid %ld) could not be "
                          "imported: %s (%s)",
                          fn, h->name, e.host, e.pid, px_strerror(rc), px_xfer_last_error());
            free(value);
            conn_drop(conn);
            return rc;
        }
    }
    free(h->value);
    h->value = value;
    h->len = len;
    h->e = e;
    h->peer = peer;
    h->conn = conn;
    h->remote = remote;
    h->read_at = now();
    return PX_SUCCESS;
}

int px_name_open(const char *name, px_name_t **name_handle)
{
    if (name_handle)
        *name_handle = NULL;
    int rc = check_name("px_name_open", name, OPEN_NAME_MAX);
    if (rc != PX_SUCCESS)
        return rc;
    if (NULL == name_handle) {
        px_show_error("px_name_open(\"%s\"): name_handle is NULL", name);
        return PX_ERR_BAD_PARAM;
    }
    if ((rc = ready("px_name_open")) != PX_SUCCESS)
        return rc;
    px_name_t *h = calloc(1, sizeof *h);
    if (NULL == h)
        return PX_ERR_OUT_OF_RESOURCE;
    snprintf(h->name, sizeof h->name, "%s", name);
    if ((rc = px_registry_base_key(name, h->key, sizeof h->key)) != PX_SUCCESS ||
        (rc = resolve("px_name_open", h, false)) != PX_SUCCESS) {
        free(h->value);
        free(h);
        return rc;
    }
    *name_handle = h;
    return PX_SUCCESS;
}

int px_name_kind(const px_name_t *h)
{
    return h ? h->e.kind : PX_ERR_BAD_PARAM;
}

px_xfer_remote_t *px_name_remote(const px_name_t *h)
{
    return h ? h->remote : NULL;
}

int px_name_peer(const px_name_t *h)
{
    return h ? h->peer : PX_ERR_BAD_PARAM;
}

int px_name_refresh(px_name_t *h)
{
    if (NULL == h) {
        px_show_error("px_name_refresh: the handle is NULL");
        return PX_ERR_BAD_PARAM;
    }
    int rc = ready("px_name_refresh");
    if (rc != PX_SUCCESS)
        return rc;
    void *value = NULL;
    size_t len = 0;
    bool hit;
    rc = read_entry(h->key, true, &value, &len, &hit);
    if (PX_ERR_NOT_FOUND == rc) {
        px_show_error("px_name_refresh: the name \"%s\" is gone from registry %s (key \"%s\"): "
                      "its owner (host %s, pid %ld) unpublished it, ended, or its lease ran out",
                      h->name, store_name(), h->key, h->e.host, h->e.pid);
        return rc;
    }
    if (rc != PX_SUCCESS) {
        px_show_error("px_name_refresh: reading \"%s\" (key \"%s\") from registry %s failed: %s",
                      h->name, h->key, store_name(), store_error(rc));
        return rc;
    }
    bool same = len == h->len && 0 == memcmp(value, h->value, len);
    free(value);
    h->read_at = now();
    if (same)
        return PX_SUCCESS;
    /* It moved: reach the new entry, then let the old remote and
     * connection go. */
    px_xfer_remote_t *old = h->remote;
    conn_t *old_conn = h->conn;
    h->remote = NULL;
    h->conn = NULL;
    rc = resolve("px_name_refresh", h, true);
    if (rc != PX_SUCCESS) {
        h->remote = old;
        h->conn = old_conn;
        return rc;
    }
    if (old)
        px_xfer_remote_release(&old);
    conn_drop(old_conn);
    return 1;
}

int px_name_watch(px_name_t *h, double timeout)
{
    if (NULL == h || timeout != timeout) {
        px_show_error("px_name_watch: %s",
                      h ? "the timeout is not a number" : "the handle is NULL");
        return PX_ERR_BAD_PARAM;
    }
    double start = now(), interval = px_registry_base_watch_interval();
    for (;;) {
        int rc = px_name_refresh(h);
        if (rc != PX_SUCCESS)
            return rc; /* 1: moved; an error: gone or unreadable */
        double t = now();
        if (timeout >= 0 && t - start >= timeout)
            return PX_ERR_TIMEOUT;
        double until = t + interval;
        if (timeout >= 0 && until > start + timeout)
            until = start + timeout;
        /* Progress meanwhile: peers connect and transfers go on. */
        while (now() < until) {
            px_progress();
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

int px_name_close(px_name_t **name_handle)
{
    if (NULL == name_handle || NULL == *name_handle)
        return PX_ERR_BAD_PARAM;
    px_name_t *h = *name_handle;
    int rc = PX_SUCCESS;
    if (h->remote)
        rc = px_xfer_remote_release(&h->remote);
    /* Its connection goes with its last handle when it is not live any more
     * (px_finalize releases the live ones). */
    if (px_rt.initialized)
        conn_drop(h->conn);
    free(h->value);
    free(h);
    *name_handle = NULL;
    return rc;
}

int px_name_connect(const char *name, int *peer)
{
    if (NULL == peer) {
        px_show_error("px_name_connect: peer is NULL");
        return PX_ERR_BAD_PARAM;
    }
    px_name_t *h;
    int rc = px_name_open(name, &h);
    if (rc != PX_SUCCESS)
        return rc;
    *peer = h->peer;
    return px_name_close(&h);
}

/* ---- listing ---- */

typedef struct {
    px_name_list_fn_t fn;
    void *arg;
    size_t skip; /* strlen("<namespace>/") */
} list_ctx_t;

static int list_one(const char *key, const void *value, size_t len, void *arg)
{
    list_ctx_t *c = arg;
    if (strlen(key) < c->skip)
        return PX_SUCCESS;
    px_name_entry_t *e = malloc(sizeof *e);
    if (NULL == e)
        return PX_ERR_OUT_OF_RESOURCE;
    char why[300];
    px_name_info_t info = {.name = key + c->skip};
    if (px_name_entry_decode(value, len, e, why, sizeof why) == PX_SUCCESS) {
        info.kind = e->kind;
        info.length = PX_NAME_REGION == e->kind ? (size_t)e->length : 0;
        info.host = e->host;
        info.pid = e->pid;
        info.version = e->version;
    } else {
        info.version = e->version;
        info.error = why;
    }
    int rc = c->fn(&info, c->arg);
    free(e);
    return rc;
}

int px_name_list(const char *prefix, px_name_list_fn_t fn, void *arg)
{
    if (NULL == prefix)
        prefix = "";
    if (NULL == fn) {
        px_show_error("px_name_list: the callback is NULL");
        return PX_ERR_BAD_PARAM;
    }
    /* A prefix may end with '/' ("kv/"); else it follows a name's rules. */
    if (*prefix) {
        char tmp[OPEN_NAME_MAX + 2];
        snprintf(tmp, sizeof tmp, "%s", prefix);
        size_t n = strlen(tmp);
        if (n > 1 && '/' == tmp[n - 1] && strlen(prefix) < sizeof tmp)
            tmp[n - 1] = 0;
        int rc = check_name("px_name_list", tmp, OPEN_NAME_MAX);
        if (rc != PX_SUCCESS)
            return rc;
    }
    int rc = ready("px_name_list");
    if (rc != PX_SUCCESS)
        return rc;
    char full[PX_REGISTRY_KEY_MAX + 2];
    int n = snprintf(full, sizeof full, "%s/%s", px_registry_base_namespace(), prefix);
    if (n < 0 || n > PX_REGISTRY_KEY_MAX) {
        px_show_error("px_name_list: the prefix \"%s\" is too long", prefix);
        return PX_ERR_BAD_PARAM;
    }
    list_ctx_t c = {fn, arg, strlen(px_registry_base_namespace()) + 1};
    rc = px_registry_base_list(full, list_one, &c);
    if (rc < 0 && rc != PX_ERR_NOT_FOUND)
        px_show_error("px_name_list: listing \"%s\" in registry %s failed: %s", full, store_name(),
                      store_error(rc));
    return PX_ERR_NOT_FOUND == rc ? PX_SUCCESS : rc;
}

const char *px_name_registry(void)
{
    if (NULL == px_registry_base_module() && px_registry_base_select(NULL) != PX_SUCCESS)
        return NULL;
    return store_name();
}

/* ---- px_init / px_finalize ---- */

void px_name_init(void)
{
    px_xfer_set_free_hook(region_freed);
}

void px_name_finalize(void)
{
    px_xfer_set_free_hook(NULL);
    hb_end();
    px_registry_base_lock();
    double start = now(), bound = px_registry_base_timeout();
    int left = 0;
    while (owns) {
        if (now() - start > bound) {
            left++;
            own_t *o = owns;
            owns = o->next;
            own_free(o);
            continue;
        }
        unpublish_own(owns);
    }
    px_registry_base_unlock();
    if (left)
        px_show_warning("px_finalize: %d name(s) could not be unpublished within registry_timeout "
                        "= %g s: they vanish when their lease runs out (registry_lease = %g s)",
                        left, bound, px_registry_base_lease());
    while (conns) {
        conn_t *c = conns;
        conns = c->next;
        free(c);
    }
    while (cache) {
        cached_t *c = cache;
        cache = c->next;
        free(c->value);
        free(c);
    }
    px_registry_base_close();
}
