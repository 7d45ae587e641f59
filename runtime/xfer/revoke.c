/*
 * revoke.c: withdrawing a region peers may hold a network key of.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/xfer/xfer.h"

/* A region of this process that peers may reach with a network key is being
 * freed: a deregistered key makes a connected transport drop the connection
 * (tcp;ofi_rxm shuts it, an RC queue pair goes to error), which loses the
 * pair. So the owner first tells every live peer (REVOKE) and waits for each
 * answer (RVACK): a peer marks its imports of the region revoked (requests
 * then fail with PX_ERR_NOT_FOUND before a byte moves, also for keys it
 * imports later) and answers once no request of its uses the region. */
typedef struct px_xfer_revoke_wait {
    struct px_xfer_revoke_wait *next;
    uint64_t id;
    int n;                       /* peers asked: the ranks, then the connected peers */
    int *ids;                    /* [n]: their ranks or ids */
    _Atomic unsigned char got[]; /* [n]: answered (or need not) */
} px_xfer_revoke_wait_t;

static px_xfer_revoke_wait_t *revoke_waits; /* lock held */

bool px_xfer_is_revoked(int peer, uint64_t id)
{
    const px_xfer_peer_t *p = px_xfer_peer_get(peer);
    if (!p)
        return false;
    for (size_t i = 0; i < p->nrevoked; ++i)
        if (p->revoked[i] == id)
            return true;
    return false;
}

static bool revoke_hdr(const px_btl_receive_descriptor_t *d, px_xfer_stage_hdr_t *h,
                       const char *what)
{
    size_t dl;
    if (!px_xfer.ready || !px_xfer_stage_hdr(d, h, &dl, what))
        return false;
    if (d->src_rank < 0 || (d->src_rank >= px_xfer.npeers && d->src_rank < PX_RT_DYN_BASE) ||
        d->src_rank == px_rt.rank) {
        px_show_error("a %s names rank %d as its sender (the job has %d); dropped", what,
                      d->src_rank, px_xfer.npeers);
        return false;
    }
    return true;
}

void px_xfer_am_revoke(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    if (!revoke_hdr(d, &h, "region revocation"))
        return;
    int src = d->src_rank;
    px_xfer_remote_t *rm;
    PX_LIST_FOREACH(rm, &px_xfer.remotes, px_xfer_remote_t)
    {
        if (rm->peer == src && rm->id == h.region)
            atomic_store_explicit(&rm->revoked, true, memory_order_release);
    }
    px_xfer_peer_t *p = src < PX_RT_DYN_BASE ? &px_xfer.peers[src] : px_xfer_peer_dyn(src, true);
    if (p && !px_xfer_is_revoked(src, h.region)) {
        if (p->nrevoked == p->revoked_cap) {
            size_t cap = p->revoked_cap ? 2 * p->revoked_cap : 16;
            uint64_t *n = realloc(p->revoked, cap * sizeof *n);
            if (n) {
                p->revoked = n;
                p->revoked_cap = cap;
            }
        }
        if (p->nrevoked < p->revoked_cap)
            p->revoked[p->nrevoked++] = h.region;
    }
    px_xfer_target_answer(src, PX_XFER_AM_RVACK, &h);
}

void px_xfer_am_rvack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    if (!revoke_hdr(d, &h, "revocation answer"))
        return;
    for (px_xfer_revoke_wait_t *w = revoke_waits; w; w = w->next)
        if ((uint64_t)(uintptr_t)w == h.token && w->id == h.region)
            for (int i = 0; i < w->n; ++i)
                if (w->ids[i] == d->src_rank)
                    atomic_store(&w->got[i], 1);
}

static double revoke_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void px_xfer_revoke(uint64_t region_id)
{
    bool took;
    px_xfer_lock_take(&took);
    /* The ranks, and the peers connected now (one that connects later never
     * had the key). */
    int n = px_xfer.npeers + px_rt.ndyn;
    px_xfer_revoke_wait_t *w = calloc(1, sizeof *w + (size_t)n);
    unsigned char *sent = calloc(1, (size_t)n ? (size_t)n : 1);
    int *ids = calloc((size_t)n ? (size_t)n : 1, sizeof *ids);
    if (!w || !sent || !ids) {
        px_xfer_lock_drop(took);
        free(w);
        free(sent);
        free(ids);
        return;
    }
    w->id = region_id;
    w->n = n;
    w->ids = ids;
    for (int p = 0; p < px_xfer.npeers; ++p)
        ids[p] = p;
    for (int i = 0; i < px_rt.ndyn; ++i)
        ids[px_xfer.npeers + i] = px_rt.dyn[i]->id;
    w->next = revoke_waits;
    revoke_waits = w;
    px_xfer_lock_drop(took);
    px_xfer_stage_hdr_t h = {.token = (uint64_t)(uintptr_t)w, .region = region_id};
    const double limit = px_rt.wait_timeout > 0 ? px_rt.wait_timeout : 60;
    const double start = revoke_now();
    for (;;) {
        int left = 0;
        px_xfer_lock_take(&took);
        for (int p = 0; p < n; ++p) {
            if (atomic_load(&w->got[p]))
                continue;
            if (ids[p] == px_rt.rank || px_xfer_peer_error(ids[p])) {
                atomic_store(&w->got[p], 1);
                continue;
            }
            if (!sent[p]) {
                int rc = px_xfer_send(ids[p], PX_XFER_AM_REVOKE, &h, sizeof h, NULL, 0);
                if (PX_SUCCESS == rc)
                    sent[p] = 1;
                else if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc) {
                    atomic_store(&w->got[p], 1); /* it cannot be reached: nothing to wait for */
                    continue;
                }
            }
            left++;
        }
        px_xfer_lock_drop(took);
        if (0 == left)
            break;
        if (revoke_now() - start > limit) {
            px_show_error("px_xfer_free: %d peer(s) did not answer within %g s that they no "
                          "longer use region %llx; it is deregistered anyway (a request of "
                          "theirs on it may break the connection)",
                          left, limit, (unsigned long long)region_id);
            break;
        }
        px_xfer_progress();
    }
    px_xfer_lock_take(&took);
    for (px_xfer_revoke_wait_t **pp = &revoke_waits; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    px_xfer_lock_drop(took);
    free(w);
    free(sent);
    free(ids);
}

long px_xfer_revoked_inflight(int peer, uint64_t id)
{
    long n = 0;
    px_xfer_remote_t *rm;
    PX_LIST_FOREACH(rm, &px_xfer.remotes, px_xfer_remote_t)
    {
        if (rm->peer == peer && rm->id == id)
            n += atomic_load(&rm->inflight);
    }
    return n;
}
