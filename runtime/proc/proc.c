/*
 * proc.c: the process table (proc.h): px_rt, the table built from boot at
 * px_init, the progress hooks of the layers above messaging, and a peer's
 * failure as a notice: px_rt_fail_peer (this process decides) and
 * px_rt_btl_error (a transport reports) mark the peer failed and tell every
 * subscriber (messaging, the transfer engine), so the floor names none of
 * the layers above it (docs/api.md, "When a peer fails").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"
#include "frameworks/boot/boot.h"
#include "runtime/proc/proc.h"

px_runtime_t px_rt;

/* ------------------------------------------------------------------ the table */

int px_rt_procs_build(void)
{
    int n = px_rt.size;
    px_rt.procs = calloc(n, sizeof(*px_rt.procs));
    px_rt.proc_ptrs = calloc(n, sizeof(*px_rt.proc_ptrs));
    px_rt.btl_peers = calloc(n, sizeof(*px_rt.btl_peers));
    px_rt.peers = calloc(n, sizeof(*px_rt.peers));
    if (!px_rt.procs || !px_rt.proc_ptrs || !px_rt.btl_peers || !px_rt.peers)
        return PX_ERR_OUT_OF_RESOURCE;
    for (int r = 0; r < n; ++r) {
        px_proc_t *p = &px_rt.procs[r];
        p->rank = r;
        p->hostname = px_boot->hostname ? px_boot->hostname(r) : NULL;
        if (NULL == p->hostname)
            p->hostname = "?";
        p->locality = px_boot->locality ? px_boot->locality(r) : 0;
        if (r == px_rt.rank)
            p->locality |= PX_PROC_LOCAL_SELF | PX_PROC_LOCAL_HOST;
        px_rt.proc_ptrs[r] = p;
        PX_OBJ_CONSTRUCT(&px_rt.peers[r].ooo, px_list_t);
        px_rt.peers[r].wire_src = px_rt.rank;
    }
    /* The progress engine's idle policy: auto yields when this node runs
     * more ranks of the job than it has cores. */
    int nlocal = 0;
    for (int r = 0; r < n; ++r)
        nlocal += (px_rt.procs[r].locality & PX_PROC_LOCAL_HOST) ? 1 : 0;
    px_rt.nlocal = nlocal;
    px_progress_idle_setup(nlocal, 0);
    /* local_rank: index among the processes of the same host. */
    for (int r = 0; r < n; ++r) {
        uint32_t lr = 0;
        for (int q = 0; q < r; ++q)
            if (0 == strcmp(px_rt.procs[q].hostname, px_rt.procs[r].hostname))
                lr++;
        px_rt.procs[r].local_rank = lr;
    }
    return PX_SUCCESS;
}

void px_rt_procs_free(void)
{
    while (px_rt.ndyn > 0)
        px_rt_dyn_free(px_rt.dyn[px_rt.ndyn - 1]);
    free(px_rt.dyn);
    px_rt.dyn = NULL;
    px_rt.dyn_cap = 0;
    if (px_rt.peers)
        for (int r = 0; r < px_rt.size; ++r)
            PX_OBJ_DESTRUCT(&px_rt.peers[r].ooo);
    free(px_rt.peers);
    free(px_rt.btl_peers);
    free(px_rt.proc_ptrs);
    free(px_rt.procs);
    px_rt.peers = NULL;
    px_rt.btl_peers = NULL;
    px_rt.proc_ptrs = NULL;
    px_rt.procs = NULL;
}

/* ------------------------------------------------------------------ dynamic peers */

px_rt_dyn_t *px_rt_dyn_add(void)
{
    if (px_rt.dyn_next < PX_RT_DYN_BASE)
        px_rt.dyn_next = PX_RT_DYN_BASE;
    if (px_rt.dyn_next >= PX_RT_DYN_MAX)
        return NULL;
    if (px_rt.ndyn == px_rt.dyn_cap) {
        int cap = px_rt.dyn_cap ? 2 * px_rt.dyn_cap : 8;
        px_rt_dyn_t **n = realloc(px_rt.dyn, (size_t)cap * sizeof *n);
        if (NULL == n)
            return NULL;
        px_rt.dyn = n;
        px_rt.dyn_cap = cap;
    }
    px_rt_dyn_t *d = calloc(1, sizeof *d);
    if (NULL == d)
        return NULL;
    d->id = px_rt.dyn_next++;
    PX_OBJ_CONSTRUCT(&d->peer.ooo, px_list_t);
    d->peer.wire_src = PX_BTL_RANK_DYNAMIC;
    snprintf(d->name, sizeof d->name, "peer %d", d->id);
    px_rt.dyn[px_rt.ndyn++] = d;
    return d;
}

void px_rt_dyn_free(px_rt_dyn_t *d)
{
    for (int i = 0; i < px_rt.ndyn; ++i)
        if (px_rt.dyn[i] == d) {
            px_rt.dyn[i] = px_rt.dyn[--px_rt.ndyn];
            break;
        }
    PX_OBJ_DESTRUCT(&d->peer.ooo);
    free(d);
}

px_rt_dyn_t *px_rt_dyn_find(int id)
{
    for (int i = 0; i < px_rt.ndyn; ++i)
        if (px_rt.dyn[i]->id == id)
            return px_rt.dyn[i];
    return NULL;
}

px_rt_dyn_t *px_rt_dyn_by_endpoint(const px_btl_endpoint_t *ep)
{
    for (int i = 0; i < px_rt.ndyn; ++i) {
        px_btl_base_dyn_peer_t *dp = px_rt.dyn[i]->dp;
        if (NULL == dp || NULL == dp->endpoints)
            continue;
        for (int m = 0; m < dp->nmodules; ++m)
            if (dp->endpoints[m] == ep)
                return px_rt.dyn[i];
    }
    return NULL;
}

px_rt_peer_t *px_rt_peer_find_slow(int id)
{
    if (id < PX_RT_DYN_BASE)
        return NULL;
    px_rt_dyn_t *d = px_rt_dyn_find(id);
    return d && d->peer.btl ? &d->peer : NULL;
}

const char *px_rt_peer_name(int id, char *buf, size_t len)
{
    if (id >= 0 && id < px_rt.size) {
        snprintf(buf, len, "rank %d (host %s)", id,
                 px_rt.procs && px_rt.procs[id].hostname ? px_rt.procs[id].hostname : "?");
        return buf;
    }
    px_rt_dyn_t *d = px_rt_dyn_find(id);
    if (d)
        snprintf(buf, len, "%s", d->name);
    else
        snprintf(buf, len, "peer %d (not connected)", id);
    return buf;
}

/* ------------------------------------------------------------------ progress hooks */

int px_rt_progress_register(px_rt_progress_fn_t fn)
{
    for (int i = 0; i < px_rt.nprogress; ++i)
        if (px_rt.progress[i] == fn)
            return PX_SUCCESS;
    if (px_rt.nprogress == PX_RT_MAX_PROGRESS)
        return PX_ERR_OUT_OF_RESOURCE;
    px_rt.progress[px_rt.nprogress++] = fn;
    return PX_SUCCESS;
}

void px_rt_progress_unregister(px_rt_progress_fn_t fn)
{
    for (int i = 0; i < px_rt.nprogress; ++i)
        if (px_rt.progress[i] == fn) {
            for (int j = i + 1; j < px_rt.nprogress; ++j)
                px_rt.progress[j - 1] = px_rt.progress[j];
            px_rt.nprogress--;
            return;
        }
}

int px_rt_progress_hooks(void)
{
    int done = 0;
    for (int i = 0; i < px_rt.nprogress;) {
        px_rt_progress_fn_t fn = px_rt.progress[i];
        done += fn();
        if (i < px_rt.nprogress && px_rt.progress[i] == fn)
            i++; /* else it removed itself: the next one moved into slot i */
    }
    return done;
}

/* ------------------------------------------------------------------ failure notices */

static px_rt_fail_fn_t fail_subs[PX_RT_MAX_FAIL_SUBSCRIBERS];
static int nfail_subs;

int px_rt_fail_subscribe(px_rt_fail_fn_t fn)
{
    for (int i = 0; i < nfail_subs; ++i)
        if (fail_subs[i] == fn)
            return PX_SUCCESS;
    if (nfail_subs == PX_RT_MAX_FAIL_SUBSCRIBERS)
        return PX_ERR_OUT_OF_RESOURCE;
    fail_subs[nfail_subs++] = fn;
    return PX_SUCCESS;
}

void px_rt_fail_unsubscribe_all(void)
{
    nfail_subs = 0;
}

static void fail_publish(int rank, int error, const char *why, bool transport_gone)
{
    for (int i = 0; i < nfail_subs; ++i)
        fail_subs[i](rank, error, why, transport_gone);
}

void px_rt_fail_peer(int rank, int error, const char *why)
{
    px_rt_peer_t *p = px_rt_peer_find(rank);
    if (NULL == p || p->failed)
        return;
    char name[300];
    px_show_error("runtime: %s is treated as failed by this process: %s; its pending sends and "
                  "receives fail with \"%s\", later ones fail at once, and its messages are "
                  "discarded",
                  px_rt_peer_name(rank, name, sizeof name), why, px_strerror(error));
    __atomic_store_n(&p->failed, error, __ATOMIC_RELAXED); /* fine mode's senders read it */
    __atomic_store_n(&p->failed_said, true, __ATOMIC_RELAXED);
    p->failed_here = true;
    fail_publish(rank, error, why, false);
}

/* A dynamic peer whose transport went (it left or died): failed quietly
 * when it is already failed, else with a message naming it. */
void px_rt_fail_peer_gone(int id, int error, const char *why, bool quiet)
{
    px_rt_peer_t *p = px_rt_peer_find(id);
    if (NULL == p || (p->failed && !p->failed_here))
        return;
    char name[300];
    if (!p->failed && !quiet) {
        px_show_error("runtime: %s is gone: %s; its pending sends and receives fail with \"%s\"",
                      px_rt_peer_name(id, name, sizeof name), why, px_strerror(error));
        __atomic_store_n(&p->failed_said, true, __ATOMIC_RELAXED);
    } else if (p->failed)
        error = p->failed; /* quiet and not failed yet: it fails with `error` all the same */
    __atomic_store_n(&p->failed, error, __ATOMIC_RELAXED);
    p->failed_here = false;
    fail_publish(id, error, why, true);
}

int px_rt_peer_refused(px_rt_peer_t *p, int id)
{
    int error = __atomic_load_n(&p->failed, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&p->failed_said, true, __ATOMIC_RELAXED)) {
        char name[300];
        px_show_error("runtime: an operation with %s fails with \"%s\": it is gone (it left or "
                      "failed earlier, with no operation pending then)",
                      px_rt_peer_name(id, name, sizeof name), px_strerror(error));
    }
    return error;
}

/* Does the transport error (btl, endpoint, rank) hit peer `p` (index or id `r`)? */
static bool btl_error_hits(const px_rt_peer_t *p, int r, px_btl_module_t *btl,
                           px_btl_endpoint_t *endpoint, int rank)
{
    if (rank >= 0)
        return r == rank;
    for (int i = 0; i < p->btl->num_send; ++i)
        if (p->btl->send[i].module == btl &&
            (NULL == endpoint || p->btl->send[i].endpoint == endpoint))
            return true;
    return false;
}

static void btl_error_one(px_rt_peer_t *p, int r, const char *name, int code, int error,
                          const char *description)
{
    char who[300];
    if (!p->failed)
        px_show_error("btl %s: transport error with %s: %s (%s); its pending sends and receives "
                      "fail with \"%s\"",
                      name, px_rt_peer_name(r, who, sizeof who),
                      description ? description : "no description", px_strerror(error),
                      px_strerror(code));
    if (!p->failed)
        __atomic_store_n(&p->failed_said, true, __ATOMIC_RELAXED);
    else
        code = p->failed;
    __atomic_store_n(&p->failed, code, __ATOMIC_RELAXED);
    p->failed_here = false;
    char text[512];
    snprintf(text, sizeof text, "transport %s: %s", name,
             description ? description : px_strerror(error));
    fail_publish(r, code, text, true);
}

void px_rt_btl_error(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, int rank, int error,
                     const char *description)
{
    const char *name = btl && btl->btl_component ? btl->btl_component->base.component_name : "?";
    int code = (PX_ERR_PEER_FAILED == error) ? PX_ERR_PEER_FAILED : PX_ERR_COMM;
    for (int r = 0; r < px_rt.size; ++r) {
        px_rt_peer_t *p = &px_rt.peers[r];
        /* A peer this process failed itself may still lose its transport:
         * then what waited on that transport is let go too. */
        if (NULL == p->btl || (p->failed && !p->failed_here))
            continue;
        if (btl_error_hits(p, r, btl, endpoint, rank))
            btl_error_one(p, r, name, code, error, description);
    }
    /* Dynamic peers: a transport reports them with rank PX_BTL_RANK_DYNAMIC
     * and their endpoint (or none: every peer of the module). */
    if (rank >= 0)
        return;
    for (int i = 0; i < px_rt.ndyn; ++i) {
        px_rt_dyn_t *d = px_rt.dyn[i];
        px_rt_peer_t *p = &d->peer;
        if (NULL == p->btl || (p->failed && !p->failed_here))
            continue;
        if (btl_error_hits(p, d->id, btl, endpoint, -1))
            btl_error_one(p, d->id, name, code, error, description);
    }
}

/* Fine mode (docs/threads.md): a transport reports an error inside a send
 * that a thread made without the API lock, holding the module's lock. The
 * failure notice takes the API lock's state (and its subscribers may call
 * other transports), so it is not run there: the report is kept here and
 * made by the next thread that holds the API lock (its progress, or a wait's
 * pass: px_rt_api_pause). A report made with the API lock held runs at once. */
typedef struct px_rt_btl_report {
    px_btl_module_t *btl;
    px_btl_endpoint_t *endpoint; /* compared, never followed */
    int rank, error;
    bool has_text;
    char text[256];
} px_rt_btl_report_t;
static pthread_mutex_t reports_lock = PTHREAD_MUTEX_INITIALIZER;
static px_rt_btl_report_t *reports;
static int nreports, reports_cap;
static int reports_pending; /* atomic: nreports > 0 */

void px_rt_btl_error_threads(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, int rank, int error,
                             const char *description)
{
    if (px_rt_lock_held()) {
        px_rt_btl_error(btl, endpoint, rank, error, description);
        return;
    }
    pthread_mutex_lock(&reports_lock);
    if (nreports == reports_cap) {
        int cap = reports_cap ? 2 * reports_cap : 8;
        px_rt_btl_report_t *n = realloc(reports, (size_t)cap * sizeof(*n));
        if (NULL == n) {
            pthread_mutex_unlock(&reports_lock);
            px_show_error("runtime: a transport error (%s) could not be kept for its report (no "
                          "memory); its peer is not failed by it",
                          description ? description : "no description");
            return;
        }
        reports = n;
        reports_cap = cap;
    }
    px_rt_btl_report_t *e = &reports[nreports++];
    e->btl = btl;
    e->endpoint = endpoint;
    e->rank = rank;
    e->error = error;
    e->has_text = description != NULL;
    if (description)
        snprintf(e->text, sizeof(e->text), "%s", description);
    __atomic_store_n(&reports_pending, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&reports_lock);
}

void px_rt_btl_errors_drain(void)
{
    if (PX_LIKELY(!__atomic_load_n(&reports_pending, __ATOMIC_ACQUIRE)))
        return;
    for (;;) {
        pthread_mutex_lock(&reports_lock);
        if (0 == nreports) {
            __atomic_store_n(&reports_pending, 0, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&reports_lock);
            return;
        }
        px_rt_btl_report_t e = reports[0];
        memmove(reports, reports + 1, (size_t)(nreports - 1) * sizeof(*reports));
        nreports--;
        pthread_mutex_unlock(&reports_lock);
        px_rt_btl_error(e.btl, e.endpoint, e.rank, e.error, e.has_text ? e.text : NULL);
    }
}

void px_rt_btl_errors_free(void)
{
    pthread_mutex_lock(&reports_lock);
    free(reports);
    reports = NULL;
    nreports = reports_cap = 0;
    __atomic_store_n(&reports_pending, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reports_lock);
}

/* The clock of the API (plexus.h), here at the floor because messaging and
 * the transfer engine time their waits with it. */
double px_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
