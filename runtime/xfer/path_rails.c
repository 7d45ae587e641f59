/*
 * path_rails.c: the rails path. One or more transports with put/get (or a
 * mapping) of the best priority move the request; path.c gave each rail a
 * contiguous range (striped by bandwidth when the request is larger than
 * xfer_chunk_size). Each rail's range goes to its transport in chunks, with
 * a count of operations per rail; a mapping is copied in place. The
 * transports' callbacks (rdma_done) report to batch.c, which completes the
 * request or, when a transport had no room, resumes it from the run queue.
 * Every put and get carries PX_BTL_RDMA_FLAG_ASYNC: the callback may run
 * later, from progress (btl/shm then splits a large get with the region's
 * owner, who copies part of it while it progresses).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core/util/error.h"
#include "runtime/xfer/xfer.h"

/* Where the request stands once nothing more goes out now. */
static px_xfer_pstatus_t rails_status(const px_xfer_slot_t *s)
{
    if (s->outstanding) /* a failed peer's request is final now; the callbacks release it */
        return s->error && atomic_load(&s->remote->pp->failed) ? PX_XFER_P_ERROR
                                                               : PX_XFER_P_IN_PROGRESS;
    if (s->error)
        return PX_XFER_P_ERROR;
    return s->done >= s->len ? PX_XFER_P_DONE : PX_XFER_P_IN_PROGRESS;
}

static void rdma_done_locked(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                             px_btl_registration_handle_t *lh, void *context, void *cbdata,
                             int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    px_xfer_slot_t *s = context;
    uintptr_t cd = (uintptr_t)cbdata;
    int k = (int)(cd >> 56);
    size_t c = cd & ((1ULL << 56) - 1);
    s->outstanding--;
    s->rops[k]--;
    if (PX_LIKELY(!px_xfer_slot_final(s))) {
        if (PX_UNLIKELY(status != PX_SUCCESS)) {
            char what[300];
            snprintf(what, sizeof what,
                     "the %s of %zu bytes failed (%s); the remote region may have been freed "
                     "by its owner, or the peer failed",
                     PX_XFER_WRITE == s->op ? "put" : "get", c, px_strerror(status));
            px_xfer_slot_error(s, status, false, what);
        } else {
            s->rbytes[k] += c;
            s->done += c;
        }
    }
    px_xfer_slot_event(s, rails_status(s));
}

/* The completion the transports call: the engine's state is the API lock's,
 * which fine mode's progress may run without (px_rt_rdma_locked: run with it
 * taken by a try, or queued for its holder). */
static void rdma_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                      px_btl_registration_handle_t *lh, void *context, void *cbdata, int status)
{
    px_rt_rdma_locked(rdma_done_locked, -1, btl, ep, local, lh, context, cbdata, status);
}

/* Hand the rest of every rail's range to its transport, in chunks. */
static px_xfer_pstatus_t rails_schedule(px_xfer_slot_t *s)
{
    const bool write = PX_XFER_WRITE == s->op;
    px_xfer_remote_t *rm = s->remote;
    for (int k = 0; k < s->nrails && !s->error; ++k) {
        const px_xfer_rail_t *rl = &rm->rails[s->rail[k]];
        px_btl_module_t *btl = px_xfer.mods[rl->mod].btl;
        size_t limit = write ? btl->btl_put_limit : btl->btl_get_limit;
        /* Striped: chunks of xfer_chunk_size; one rail: as large as the
         * module takes (one system call for CMA, one work request for RDMA). */
        size_t chunk = s->nrails > 1 ? px_xfer.chunk_size : SIZE_MAX;
        if (limit && chunk > limit)
            chunk = limit;
        while (s->rcur[k] < s->rend[k] && !s->error) {
            size_t off = s->rcur[k], c = s->rend[k] - off;
            if (c > chunk)
                c = chunk;
            char *lp = s->local->base + s->loff + off;
            if (PX_XFER_RAIL_MAP == rl->kind) {
                if (px_xfer_remote_freed(rm)) {
                    px_xfer_slot_error(s, PX_ERR_NOT_FOUND, false,
                                       "the region was deregistered by its owner (px_xfer_free)");
                    break;
                }
                char *rp = rm->mapped + s->roff + off;
                memcpy(write ? rp : lp, write ? lp : rp, c);
                s->rcur[k] += c;
                s->rbytes[k] += c;
                s->done += c;
                continue;
            }
            if (PX_UNLIKELY(px_xfer_remote_freed(rm))) {
                px_xfer_slot_error(s, PX_ERR_NOT_FOUND, false,
                                   "the region was deregistered by its owner (px_xfer_free)");
                break;
            }
            s->rcur[k] += c;
            s->outstanding++;
            s->rops[k]++;
            int rc = (write ? btl->btl_put : btl->btl_get)(
                btl, rl->ep, lp, rm->addr + s->roff + off, s->local->reg[rl->mod],
                rl->hsize ? (px_btl_registration_handle_t *)rl->handle : NULL, c,
                PX_BTL_RDMA_FLAG_ASYNC, PX_BTL_NO_ORDER, rdma_done, s,
                (void *)(((uintptr_t)k << 56) | c));
            if (PX_LIKELY(PX_SUCCESS == rc))
                continue;
            s->rcur[k] -= c;
            s->outstanding--;
            s->rops[k]--;
            if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc)
                return PX_XFER_P_NO_RESOURCES; /* resumed from progress */
            int failed = px_xfer_peer_check(s->remote->pp);
            char what[400];
            snprintf(what, sizeof what, "the transport refused the %s of %zu bytes: %s",
                     write ? "put" : "get", c, failed ? s->remote->pp->why : px_strerror(rc));
            px_xfer_slot_error(s, failed ? failed : rc, failed != 0, what);
        }
    }
    return rails_status(s);
}

static px_xfer_pstatus_t rails_start(px_xfer_slot_t *s)
{
    for (int k = 0; k < s->nrails; ++k)
        s->rops[k] = 0, s->rbytes[k] = 0;
    return rails_schedule(s);
}

/* Its peer failed: the transports' operations stay theirs until their
 * callbacks (which release the request). */
static px_xfer_pstatus_t rails_release(px_xfer_slot_t *s)
{
    return s->outstanding ? PX_XFER_P_IN_PROGRESS : PX_XFER_P_DONE;
}

const px_xfer_path_t px_xfer_path_rails = {
    .name = "rails",
    .at_submit = false,
    .transport_ops = true,
    .start = rails_start,
    .resume = rails_schedule,
    .release = rails_release,
};
