/*
 * pml.c: tagged point-to-point messaging over the BTL: the queues, matching,
 * the eager send and receive paths, progress, and the calls messaging
 * exports to the layers above (runtime/pml/pml.h). The application's calls
 * (px_send, px_recv, their non-blocking forms, px_wait) are in pml_api.c.
 *
 * Matching: one queue of posted receives (post order) and one of unexpected
 * messages (arrival order). Every matched message carries a per-pair sequence
 * number; one that arrives ahead of its turn waits on its peer's out-of-order
 * list, so messages between a pair are never reordered even over several rails.
 *
 * Protocols (thresholds are variables, see px_rt_pml_register_params):
 *  - tiny (<= runtime_tiny_limit): btl_sendi, nothing allocated;
 *  - eager (header + data <= the peer's eager limit): btl_prepare_src + send;
 *  - rendezvous (RDMA get, RDMA put, pipelined fragments): pml_rndv.c.
 * A receive buffer too small takes what fits, flags PX_ERR_TRUNCATE, and
 * consumes the whole message, so the next one is unaffected.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/mca/var.h"
#include "runtime/pml/pml_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"

static void px_request_construct(px_request_t *r)
{
    PX_OBJ_CONSTRUCT(&r->pend_link, px_list_item_t);
    r->complete = true;
}
static void px_request_destruct(px_request_t *r)
{
    PX_OBJ_DESTRUCT(&r->pend_link);
}
PX_CLASS_INSTANCE(px_request_t, px_free_list_item_t, px_request_construct, px_request_destruct);
PX_CLASS_INSTANCE(px_rt_ux_t, px_free_list_item_t, NULL, NULL);

/* Threads (pml_internal.h): fine-grained locks at PX_THREAD_MULTIPLE with
 * runtime_thread_locks=fine; the matching lock. */
bool px_pml_fine;
px_bias_lock_t px_pml_match_lock; /* recursive: made by px_pml_threads_fine */

void px_pml_active_add(px_request_t *r)
{
    if (!r->on_active) {
        px_list_append(&px_rt.active, &r->super.super);
        r->on_active = true;
    }
}

void px_pml_active_remove(px_request_t *r)
{
    if (r->on_active) {
        px_list_remove_item(&px_rt.active, &r->super.super);
        r->on_active = false;
    }
}

/* A request id from the wire, checked against the requests in a rendezvous. */
px_request_t *px_pml_active_find(uint64_t id, int type)
{
    px_request_t *r;
    PX_LIST_FOREACH(r, &px_rt.active, px_request_t)
    {
        if ((uint64_t)(uintptr_t)r == id && r->type == type)
            return r;
    }
    return NULL;
}

void px_pml_pending_add(px_request_t *r, int what)
{
    if (PX_PML_PEND_NONE == r->pending)
        px_list_append(&px_rt.pending, &r->pend_link);
    r->pending = (uint8_t)what;
}

void px_pml_pending_remove(px_request_t *r)
{
    if (r->pending != PX_PML_PEND_NONE) {
        px_list_remove_item(&px_rt.pending, &r->pend_link);
        r->pending = PX_PML_PEND_NONE;
    }
}

/* Drop every memory registration the request holds (one per RDMA rail). */
void px_pml_req_release_regs(px_request_t *r)
{
    for (int k = 0; k < r->nrails; ++k) {
        px_btl_module_t *m = r->rails[k].pm->module;
        if (r->rails[k].reg && m->btl_deregister_mem)
            m->btl_deregister_mem(m, r->rails[k].reg);
        r->rails[k].reg = NULL;
    }
    r->nrails = 0;
}

void px_pml_req_fail(px_request_t *r, int error)
{
    px_pml_pending_remove(r);
    px_pml_active_remove(r);
    ml_lock(px_pml_fine);
    if (r->on_posted) {
        px_list_remove_item(&px_rt.posted, &r->super.super);
        r->on_posted = false;
    }
    ml_unlock(px_pml_fine);
    px_pml_req_release_regs(r);
    if (PX_SUCCESS == r->status.error || PX_ERR_TRUNCATE == r->status.error)
        r->status.error = error;
    req_complete(r);
}

void px_pml_req_unhold(px_request_t *r)
{
    /* In fine mode an eager send's hold is dropped by send_eager_done under
     * the matching lock, which px_wait's release takes too; a rendezvous
     * request's callers hold the API lock (its registrations go here). */
    const bool mt = px_pml_fine;
    ml_lock(mt);
    bool now = r->released && !req_held(r);
    if (now)
        r->released = false;
    ml_unlock(mt);
    if (now) {
        px_pml_req_release_regs(r);
        req_free(r);
    }
}

uint32_t px_pml_rdma_id(const px_btl_module_t *m)
{
    const char *s = m->btl_component ? m->btl_component->base.component_name : "?";
    uint32_t h = 2166136261u;
    for (; *s; ++s)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h ? h : 1;
}

/* A small control message (ACK, FIN, PUT-ACK, PUT-FIN) to `rank`. */
int px_pml_send_ctl_buf(int rank, px_btl_tag_t am, const void *buf, size_t len)
{
    px_rt_peer_t *peer = px_rt_peer_find(rank);
    if (PX_UNLIKELY(NULL == peer))
        return PX_ERR_PEER_FAILED; /* a dynamic peer that was disconnected */
    if (peer->failed)
        return peer->failed;
    px_btl_base_peer_module_t *pm = px_btl_base_peer_eager(peer->btl);
    px_btl_module_t *m = pm->module;
    if (m->btl_sendi) {
        int rc = m->btl_sendi(m, pm->endpoint, buf, len, NULL, 0, PX_BTL_NO_ORDER, 0, am, NULL);
        if (PX_SUCCESS == rc)
            return rc;
        if (rc != PX_ERR_TEMP_OUT_OF_RESOURCE)
            return rc;
    }
    px_btl_descriptor_t *des =
        m->btl_alloc(m, pm->endpoint, PX_BTL_NO_ORDER, len, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    memcpy(des->des_segments[0].seg_addr, buf, len);
    des->des_segments[0].seg_len = len;
    des->des_cbfunc = NULL;
    int rc = m->btl_send(m, pm->endpoint, des, am);
    if (rc < 0) {
        m->btl_free(m, des);
        return rc;
    }
    return PX_SUCCESS;
}

int px_pml_send_ctl(int rank, px_btl_tag_t am, uint64_t sreq, uint64_t rreq)
{
    px_rt_ctl_hdr_t h = {sreq, rreq};
    return px_pml_send_ctl_buf(rank, am, &h, sizeof(h));
}

/* Deliver an eager message to the first matching posted receive, or queue it. */
static inline px_request_t *posted_match(int src, int tag)
{
    px_request_t *r;
    PX_LIST_FOREACH(r, &px_rt.posted, px_request_t)
    {
        if (tag_matches(r->peer, r->tag, src, tag)) {
            px_list_remove_item(&px_rt.posted, &r->super.super);
            r->on_posted = false;
            return r;
        }
    }
    return NULL;
}

static inline void recv_eager_into(px_request_t *r, int src, int tag, const px_btl_segment_t *segs,
                                   size_t nseg, size_t skip, size_t len)
{
    size_t n = len <= r->len ? len : r->len;
    seg_copy(r->buf, n, segs, nseg, skip);
    r->status.source = src;
    r->status.tag = tag;
    r->status.length = n;
    r->status.error = len <= r->len ? PX_SUCCESS : PX_ERR_TRUNCATE;
    req_complete(r);
}

/* Copy a message into a new unexpected/out-of-order item. */
static px_rt_ux_t *ux_make(int src, int tag, uint32_t seq, int kind, const px_btl_segment_t *segs,
                           size_t nseg, size_t skip, size_t len)
{
    px_rt_ux_t *u = ux_alloc();
    if (PX_UNLIKELY(NULL == u))
        return NULL;
    u->src = src;
    u->tag = tag;
    u->seq = seq;
    u->kind = kind;
    u->len = len;
    u->data = u->inline_buf;
    if (PX_UNLIKELY(len > PX_RT_UX_INLINE)) {
        u->data = malloc(len);
        if (NULL == u->data) {
            u->data = u->inline_buf;
            ux_free(u);
            return NULL;
        }
    }
    seg_copy(u->data, len, segs, nseg, skip);
    return u;
}

static px_request_t *deliver_rndv(const px_rt_rndv_hdr_t *h, const px_btl_receive_descriptor_t *d,
                                  const unsigned char *blob, size_t carried, bool *lost);

/* A queued rendezvous header's record: its rail entries, then (with
 * PX_RT_RNDV_FLAG_DATA) the px_rt_rndv_data_t and the bytes it carried, all
 * checked when it arrived (px_pml_am_rndv). *c describes those bytes; NULL
 * when it carried none. */
static const px_pml_carried_t *ux_carried(const px_rt_ux_t *u, px_pml_carried_t *c,
                                          px_btl_segment_t *seg)
{
    if (!(u->rndv.m.flags & PX_RT_RNDV_FLAG_DATA))
        return NULL;
    size_t at = u->rndv.blob + sizeof(px_rt_rndv_data_t);
    seg->seg_addr = u->data;
    seg->seg_len = u->rndv.blob + sizeof(px_rt_rndv_data_t) + u->carried;
    *c = (px_pml_carried_t){seg, 1, at, u->carried};
    return c;
}

static void hdr_drop(const char *what, int from, int src, uint32_t seq, uint32_t expected);

/* Deliver what waited on `peer`'s out-of-order list and is now in turn. A
 * rendezvous header that matches a posted receive is started at once, or,
 * with `starts` (fine mode: the matching lock is held, and starting calls a
 * transport), chained on *starts for the caller to start after letting the
 * lock go (starts_run). */
static void ooo_drain(px_rt_peer_t *peer, px_rt_ux_t **starts)
{
    for (;;) {
        px_rt_ux_t *u, *n, *found = NULL;
        PX_LIST_FOREACH_SAFE(u, n, &peer->ooo, px_rt_ux_t)
        {
            if (u->seq == peer->recv_seq) {
                found = u;
                break;
            }
            if ((int32_t)(u->seq - peer->recv_seq) < 0) {
                /* A second header with a number now delivered. */
                px_list_remove_item(&peer->ooo, &u->super.super);
                hdr_drop(PX_PML_KIND_EAGER == u->kind ? "a message" : "a rendezvous request",
                         u->src, u->src, u->seq, peer->recv_seq);
                ux_free(u);
            }
        }
        if (NULL == found)
            return;
        if (peer->failed)
            return;
        px_list_remove_item(&peer->ooo, &found->super.super);
        peer->recv_seq++;
        px_request_t *r = posted_match(found->src, found->tag);
        if (PX_PML_KIND_EAGER == found->kind) {
            if (r) {
                px_btl_segment_t s = {found->data, found->len};
                recv_eager_into(r, found->src, found->tag, &s, 1, 0, found->len);
                ux_free(found);
            } else {
                px_list_append(&px_rt.unexpected, &found->super.super);
            }
        } else {
            if (r && starts) {
                found->match = r;
                found->next_start = *starts;
                *starts = found;
            } else if (r) {
                px_pml_carried_t c;
                px_btl_segment_t seg;
                px_pml_recv_start_rndv(r, &found->rndv, found->data, ux_carried(found, &c, &seg));
                ux_free(found);
            } else {
                px_list_append(&px_rt.unexpected, &found->super.super);
            }
        }
    }
}

/* A message from `src` could not be queued: it is lost, and with it the
 * ordering of everything after it from that rank, so the peer is failed. */
static PX_COLD void ux_lost(const char *what, int src)
{
    char why[256];
    snprintf(why, sizeof(why),
             "could not queue a message from rank %d (%s: no memory for its record), so it is "
             "lost",
             src, what);
    px_rt_fail_peer(src, PX_ERR_PEER_FAILED, why);
}

/* A message from a peer that has failed: counted, then discarded. */
static PX_COLD void drop_from_failed(px_rt_peer_t *peer)
{
    peer->dropped++;
}

/* A header that lies (see hdr_bad): counted, reported with a rate limit (the
 * first 4, then each time the count reaches a power of two), discarded. */
static PX_COLD void hdr_drop(const char *what, int from, int src, uint32_t seq, uint32_t expected)
{
    size_t n = ++px_rt.bad_headers;
    if (n > 4 && (n & (n - 1)) != 0)
        return;
    if (src != from)
        px_show_error("runtime: dropped %s from rank %d whose header names rank %d as its sender "
                      "(%zu such header%s dropped so far)",
                      what, from, src, n, n > 1 ? "s" : "");
    else
        px_show_error("runtime: dropped %s from rank %d with sequence number %" PRIu32
                      ", behind the %" PRIu32 " expected next: already delivered (a replayed or "
                      "forged header; %zu such header%s dropped so far)",
                      what, from, seq, expected, n, n > 1 ? "s" : "");
}

/* The sender as the transport knows it (an endpoint and a rank of the job),
 * else the header's `src`. */
static inline int hdr_from(const px_btl_receive_descriptor_t *d, int src)
{
    return d->endpoint && d->src_rank >= 0 && d->src_rank < px_rt.size ? d->src_rank : src;
}

/* Does the header of a matched message lie? Where the transport knows the
 * sender, the header's source must be that rank; and its sequence number must
 * not lie behind the one expected next from that source (a message already
 * delivered: kept, it would wait among the out-of-order ones until the
 * counter wrapped). */
static inline bool hdr_bad(const px_btl_receive_descriptor_t *d, int src, uint32_t seq,
                           const px_rt_peer_t *peer)
{
    return hdr_from(d, src) != src || (int32_t)(seq - peer->recv_seq) < 0;
}

/* The sender of a matched message that is not a rank's: the dynamic peer
 * whose endpoint the transport delivered it through (the header's source
 * must be PX_BTL_RANK_DYNAMIC then: a dynamic peer knows no rank of ours);
 * anything else is dropped with a message. *id is the peer's id. */
static PX_COLD px_rt_peer_t *dyn_source(const px_btl_receive_descriptor_t *d, int hsrc,
                                        const char *what, int *id)
{
    if (PX_BTL_RANK_DYNAMIC != d->src_rank) {
        px_rt.bad_headers++;
        px_show_error("runtime: dropped %s from rank %d with source %d in its header (valid: "
                      "0..%d)",
                      what, d->src_rank, hsrc, px_rt.size - 1);
        return NULL;
    }
    px_rt_dyn_t *dy = d->endpoint ? px_rt_dyn_by_endpoint(d->endpoint) : NULL;
    if (NULL == dy || NULL == dy->peer.btl) {
        /* A peer already disconnected (its late messages), or a transport
         * endpoint no connection made: counted, not trusted. */
        px_rt.bad_headers++;
        PX_OUTPUT_VERBOSE(1, px_rt.output,
                          "runtime: dropped %s from a dynamic peer this process does not know "
                          "(disconnected, or never connected)",
                          what);
        return NULL;
    }
    if (hsrc != PX_BTL_RANK_DYNAMIC) {
        size_t n = ++px_rt.bad_headers;
        if (n <= 4 || 0 == (n & (n - 1)))
            px_show_error("runtime: dropped %s from %s whose header names rank %d as its sender "
                          "(a dynamic peer's names %d; %zu such header%s dropped so far)",
                          what, dy->name, hsrc, PX_BTL_RANK_DYNAMIC, n, n > 1 ? "s" : "");
        return NULL;
    }
    *id = dy->id;
    return &dy->peer;
}

/* AM callback: tiny and eager messages. */
void px_pml_am_match(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    const px_rt_match_hdr_t *h = d->des_segments[0].seg_addr;
    /* The length first: a shorter segment has no header to read. */
    if (PX_UNLIKELY(d->des_segments[0].seg_len < sizeof(*h))) {
        px_show_error("runtime: dropped a malformed message from rank %d (%zu bytes, less than "
                      "its %zu-byte header)",
                      d->src_rank, d->des_segments[0].seg_len, sizeof(*h));
        return;
    }
    int src = h->src;
    const int tag = h->tag;
    px_rt_peer_t *peer;
    if (PX_LIKELY(src >= 0 && src < px_rt.size && d->src_rank != PX_BTL_RANK_DYNAMIC)) {
        peer = &px_rt.peers[src];
    } else {
        peer = dyn_source(d, src, "a message", &src);
        if (NULL == peer)
            return;
    }
    size_t len = seg_data_len(d->des_segments, d->des_segment_count, sizeof(*h));
    if (PX_UNLIKELY(h->seq != peer->recv_seq || peer->failed ||
                    (d->endpoint && d->src_rank != src && d->src_rank != PX_BTL_RANK_DYNAMIC))) {
        if (hdr_bad(d, src, h->seq, peer)) {
            hdr_drop("a message", hdr_from(d, src), src, h->seq, peer->recv_seq);
            return;
        }
        if (peer->failed) {
            drop_from_failed(peer);
            return;
        }
        if (h->seq != peer->recv_seq) {
            px_rt_ux_t *u = ux_make(src, tag, h->seq, PX_PML_KIND_EAGER, d->des_segments,
                                    d->des_segment_count, sizeof(*h), len);
            px_rt.ooo_arrivals++;
            if (u)
                px_list_append(&peer->ooo, &u->super.super);
            else
                ux_lost("an out-of-order message", src);
            return;
        }
    }
    peer->recv_seq++;
    px_request_t *r = px_list_is_empty(&px_rt.posted) ? NULL : posted_match(src, tag);
    if (r) {
        recv_eager_into(r, src, tag, d->des_segments, d->des_segment_count, sizeof(*h), len);
    } else {
        px_rt_ux_t *u = ux_make(src, tag, h->seq, PX_PML_KIND_EAGER, d->des_segments,
                                d->des_segment_count, sizeof(*h), len);
        if (PX_LIKELY(u != NULL))
            px_list_append(&px_rt.unexpected, &u->super.super);
        else
            ux_lost("an unexpected message", src);
    }
    if (PX_UNLIKELY(!px_list_is_empty(&peer->ooo)) && !peer->failed)
        ooo_drain(peer, NULL);
}

/* Fine mode: start the rendezvous ooo_drain chained (the matching lock is let
 * go; the API lock is held: the active-message callbacks run in progress,
 * under it), oldest first. */
static void starts_run(px_rt_ux_t *u)
{
    px_rt_ux_t *rev = NULL;
    while (u) { /* chained newest first */
        px_rt_ux_t *next = u->next_start;
        u->next_start = rev;
        rev = u;
        u = next;
    }
    for (u = rev; u; u = rev) {
        rev = u->next_start;
        px_pml_carried_t c;
        px_btl_segment_t seg;
        px_pml_recv_start_rndv(u->match, &u->rndv, u->data, ux_carried(u, &c, &seg));
        ml_lock(true);
        ux_free(u);
        ml_unlock(true);
    }
}

/* The chain of rendezvous starts ooo_drain released, queued for the API
 * lock's holder (px_rt_defer_push) by a progress that ran without it. */
static void starts_deferred(px_rt_defer_t *d)
{
    px_rt_ux_t *u = (px_rt_ux_t *)((char *)d - offsetof(px_rt_ux_t, defer));
    starts_run(u);
}

static void starts_dropped(px_rt_defer_t *d)
{
    px_rt_ux_t *u = (px_rt_ux_t *)((char *)d - offsetof(px_rt_ux_t, defer));
    ml_lock(true);
    while (u) {
        px_rt_ux_t *next = u->next_start;
        ux_free(u);
        u = next;
    }
    ml_unlock(true);
}

/* A message lost for want of memory (ux_lost), reported by the API lock's
 * holder: the peer fails. */
typedef struct lost_item {
    px_rt_defer_t d;
    int src;
    const char *what;
} lost_item_t;

static void lost_run(px_rt_defer_t *d)
{
    lost_item_t *l = (lost_item_t *)d;
    ux_lost(l->what, l->src);
    free(l);
}

static void lost_drop(px_rt_defer_t *d)
{
    free(d);
}

/* What a fine-mode match left for the API lock: run now (the lock held, or
 * taken by a try), or queued for its holder. */
static PX_COLD void match_fine_locked(px_rt_ux_t *starts, const char *lost, int src)
{
    int token = px_rt_defer_enter();
    if (token) {
        if (starts)
            starts_run(starts);
        if (lost)
            ux_lost(lost, src);
        px_rt_defer_leave(token);
        return;
    }
    if (starts) {
        starts->defer.run = starts_deferred;
        starts->defer.drop = starts_dropped;
        px_rt_defer_push(&starts->defer);
    }
    if (lost) {
        lost_item_t *l = malloc(sizeof(*l));
        if (NULL == l) { /* reported as the transport's error instead */
            px_rt_btl_error_threads(NULL, NULL, src, PX_ERR_PEER_FAILED,
                                    "a message was lost (no memory for its record)");
            return;
        }
        *l = (lost_item_t){{{NULL}, lost_run, lost_drop}, src, lost};
        px_rt_defer_push(&l->d);
    }
}

/* AM callback of tiny and eager messages in fine mode (registered by
 * px_pml_threads_fine instead of px_pml_am_match): the same steps, under the
 * matching lock. It runs in progress, with or without the API lock (fine
 * mode polls each transport under the transport module's own lock, a send to
 * this process itself runs it inside the send under the API lock); a dynamic
 * peer's table, a lost message's failure and a rendezvous the out-of-order
 * list releases are the API lock's: they run after the matching lock is let
 * go, with the API lock taken by a try, or are queued for its holder
 * (px_rt_defer_push). A rank's message needs nothing but the matching lock. */
void px_pml_am_match_fine(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    const px_rt_match_hdr_t *h = d->des_segments[0].seg_addr;
    if (PX_UNLIKELY(d->des_segments[0].seg_len < sizeof(*h))) {
        px_show_error("runtime: dropped a malformed message from rank %d (%zu bytes, less than "
                      "its %zu-byte header)",
                      d->src_rank, d->des_segments[0].seg_len, sizeof(*h));
        return;
    }
    int src = h->src;
    const int tag = h->tag;
    px_rt_peer_t *peer;
    if (PX_LIKELY(src >= 0 && src < px_rt.size && d->src_rank != PX_BTL_RANK_DYNAMIC)) {
        peer = &px_rt.peers[src];
    } else {
        if (!px_rt_lock_held()) { /* the dynamic peers' table is the API lock's */
            px_rt_am_locked(px_pml_am_match_fine, btl, d);
            return;
        }
        peer = dyn_source(d, src, "a message", &src);
        if (NULL == peer)
            return;
    }
    size_t len = seg_data_len(d->des_segments, d->des_segment_count, sizeof(*h));
    const char *lost = NULL;
    px_rt_ux_t *starts = NULL;
    ml_lock(true);
    if (PX_UNLIKELY(h->seq != peer->recv_seq || peer->failed ||
                    (d->endpoint && d->src_rank != src && d->src_rank != PX_BTL_RANK_DYNAMIC))) {
        if (hdr_bad(d, src, h->seq, peer)) {
            hdr_drop("a message", hdr_from(d, src), src, h->seq, peer->recv_seq);
            goto out;
        }
        if (peer->failed) {
            drop_from_failed(peer);
            goto out;
        }
        if (h->seq != peer->recv_seq) {
            px_rt_ux_t *u = ux_make(src, tag, h->seq, PX_PML_KIND_EAGER, d->des_segments,
                                    d->des_segment_count, sizeof(*h), len);
            px_rt.ooo_arrivals++;
            if (u)
                px_list_append(&peer->ooo, &u->super.super);
            else
                lost = "an out-of-order message";
            goto out;
        }
    }
    peer->recv_seq++;
    px_request_t *r = px_list_is_empty(&px_rt.posted) ? NULL : posted_match(src, tag);
    if (r) {
        recv_eager_into(r, src, tag, d->des_segments, d->des_segment_count, sizeof(*h), len);
    } else {
        px_rt_ux_t *u = ux_make(src, tag, h->seq, PX_PML_KIND_EAGER, d->des_segments,
                                d->des_segment_count, sizeof(*h), len);
        if (PX_LIKELY(u != NULL))
            px_list_append(&px_rt.unexpected, &u->super.super);
        else
            lost = "an unexpected message";
    }
    if (PX_UNLIKELY(!px_list_is_empty(&peer->ooo)) && !peer->failed)
        ooo_drain(peer, &starts);
out:
    ml_unlock(true);
    if (PX_UNLIKELY(starts != NULL || lost != NULL))
        match_fine_locked(starts, lost, src);
}

/* Queue a rendezvous header `h` (checked) that arrived in `d`: the rail
 * entries go in the item's data, followed by the bytes it carried if any
 * (kept, as Open MPI's ob1 keeps an unexpected RNDV's first fragment, so the
 * receive that matches it later still reads only the rest). NULL when there
 * is no memory for it. */
static px_rt_ux_t *rndv_record(const px_rt_rndv_hdr_t *h, const px_btl_receive_descriptor_t *d,
                               const unsigned char *blob, size_t carried)
{
    px_rt_ux_t *u;
    if (h->m.flags & PX_RT_RNDV_FLAG_DATA) {
        u = ux_make(h->m.src, h->m.tag, h->m.seq, PX_PML_KIND_RNDV, d->des_segments,
                    d->des_segment_count, sizeof(*h),
                    h->blob + sizeof(px_rt_rndv_data_t) + carried);
    } else {
        px_btl_segment_t s = {(void *)blob, h->blob};
        u = ux_make(h->m.src, h->m.tag, h->m.seq, PX_PML_KIND_RNDV, &s, 1, 0, h->blob);
    }
    if (NULL == u)
        return NULL;
    u->len = h->len;
    u->rndv = *h;
    u->carried = carried;
    return u;
}

/* Match a rendezvous header (the matching lock held in fine mode): the
 * receive it matched, to start (after the lock is let go), or NULL (queued;
 * *lost when it could not be). */
static px_request_t *deliver_rndv(const px_rt_rndv_hdr_t *h, const px_btl_receive_descriptor_t *d,
                                  const unsigned char *blob, size_t carried, bool *lost)
{
    px_request_t *r = posted_match(h->m.src, h->m.tag);
    if (r)
        return r;
    px_rt_ux_t *u = rndv_record(h, d, blob, carried);
    if (NULL == u) {
        *lost = true;
        return NULL;
    }
    px_list_append(&px_rt.unexpected, &u->super.super);
    return NULL;
}

/* AM callback: rendezvous request. */
void px_pml_am_rndv(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_rndv_hdr_t h;
    unsigned char blob[PX_RT_MAX_BLOB];
    size_t total = seg_data_len(d->des_segments, d->des_segment_count, 0);
    if (total < sizeof(h)) {
        px_show_error("runtime: dropped a malformed rendezvous header (%zu bytes)", total);
        return;
    }
    seg_copy(&h, sizeof(h), d->des_segments, d->des_segment_count, 0);
    px_rt_peer_t *peer = NULL;
    if (h.m.src >= 0 && h.m.src < px_rt.size && d->src_rank != PX_BTL_RANK_DYNAMIC) {
        peer = &px_rt.peers[h.m.src];
    } else {
        int id = -1;
        peer = dyn_source(d, h.m.src, "a rendezvous request", &id);
        if (NULL == peer)
            return;
        h.m.src = id; /* from here on the header names the peer by its id */
    }
    if (h.blob > PX_RT_MAX_BLOB || h.nrails > PX_RT_MAX_RAILS || total < sizeof(h) + h.blob) {
        px_show_error("runtime: dropped a malformed rendezvous header (source %d, %u rails in "
                      "%u bytes, %zu bytes received)",
                      h.m.src, h.nrails, h.blob, total);
        return;
    }
    if (h.blob)
        seg_copy(blob, h.blob, d->des_segments, d->des_segment_count, sizeof(h));
    /* The message's first bytes (PX_RT_RNDV_FLAG_DATA): a length, then
     * exactly that many bytes to the end of the message, fewer than the
     * message has (the sender moves at least one byte after them). */
    px_pml_carried_t carried = {d->des_segments, d->des_segment_count, 0, 0};
    if (h.m.flags & PX_RT_RNDV_FLAG_DATA) {
        px_rt_rndv_data_t dh = {0};
        size_t at = sizeof(h) + h.blob;
        size_t left = total - at;
        if (left >= sizeof(dh))
            seg_copy(&dh, sizeof(dh), d->des_segments, d->des_segment_count, at);
        if (left < sizeof(dh) || dh.len != left - sizeof(dh) || dh.len >= h.len) {
            px_show_error("runtime: dropped a malformed rendezvous request from rank %d: it says "
                          "it carries %" PRIu64 " bytes of a %" PRIu64 "-byte message, but %zu "
                          "bytes follow its header (a carried length must match them and be "
                          "less than the message)",
                          h.m.src, left >= sizeof(dh) ? dh.len : (uint64_t)0, h.len,
                          left >= sizeof(dh) ? left - sizeof(dh) : left);
            return;
        }
        carried.skip = at + sizeof(dh);
        carried.len = (size_t)dh.len;
    }
    /* Fine mode: the queues under the matching lock, the rendezvous started
     * after it is let go (this runs in progress, under the API lock). */
    const bool mt = px_pml_fine;
    const char *lost = NULL;
    px_request_t *r = NULL;
    px_rt_ux_t *starts = NULL;
    ml_lock(mt);
    if (hdr_bad(d, h.m.src, h.m.seq, peer)) {
        hdr_drop("a rendezvous request", hdr_from(d, h.m.src), h.m.src, h.m.seq, peer->recv_seq);
        goto out;
    }
    if (peer->failed) {
        drop_from_failed(peer);
        goto out;
    }
    if (h.m.seq != peer->recv_seq) {
        px_rt_ux_t *u = rndv_record(&h, d, blob, carried.len);
        px_rt.ooo_arrivals++;
        if (NULL == u) {
            lost = "an out-of-order rendezvous request";
            goto out;
        }
        px_list_append(&peer->ooo, &u->super.super);
        goto out;
    }
    peer->recv_seq++;
    bool qlost = false;
    r = deliver_rndv(&h, d, blob, carried.len, &qlost);
    if (qlost)
        lost = "an unexpected rendezvous request";
    if (!px_list_is_empty(&peer->ooo) && !peer->failed)
        ooo_drain(peer, mt ? &starts : NULL);
out:
    ml_unlock(mt);
    if (r)
        px_pml_recv_start_rndv(r, &h, blob, (h.m.flags & PX_RT_RNDV_FLAG_DATA) ? &carried : NULL);
    if (starts)
        starts_run(starts);
    if (lost)
        ux_lost(lost, h.m.src);
}

/* ------------------------------------------------------------------ send side */

static void send_eager_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                            int status)
{
    (void)btl;
    (void)ep;
    px_request_t *r = des->des_cbdata;
    /* Fine mode: it may run inside another thread's transport call (its
     * progress) while the owner releases the request: both under the
     * matching lock. */
    const bool mt = px_pml_fine;
    ml_lock(mt);
    r->des_held = false;
    if (PX_UNLIKELY(r->released)) { /* its wait gave up: only the hold goes */
        ml_unlock(mt);
        px_pml_req_unhold(r);
        return;
    }
    if (status != PX_SUCCESS)
        r->status.error = status;
    req_complete(r);
    ml_unlock(mt);
}

/* Fine mode: a step of send_start that needs the API lock (a rendezvous, a
 * retry from progress, a failure), taken unless this thread holds it. */
static PX_NOINLINE void send_step_locked(px_request_t *r, int what, int error)
{
    bool took = api_enter(true);
    if (what)
        px_pml_pending_add(r, what);
    else if (error)
        px_pml_req_fail(r, error);
    else
        px_pml_send_start_rndv(r);
    api_leave(took);
}

/* Start a send request's first message: eager data or the RNDV header. With
 * `mt` (fine mode) the caller may not hold the API lock: the eager send goes
 * straight to the transport (its lock per module), the other steps take the
 * API lock (send_step_locked). */
static void send_start(px_request_t *r, const bool mt)
{
    px_rt_peer_t *peer = px_rt_peer_find(r->peer);
    if (PX_UNLIKELY(NULL == peer)) { /* a dynamic peer disconnected meanwhile */
        if (mt)
            send_step_locked(r, 0, PX_ERR_PEER_FAILED);
        else
            px_pml_req_fail(r, PX_ERR_PEER_FAILED);
        return;
    }
    px_btl_base_peer_module_t *pm;
    if (mt && PX_UNLIKELY(peer->btl->num_eager > 1)) { /* the rotation is the API lock's */
        bool took = api_enter(true);
        pm = px_btl_base_peer_eager(peer->btl);
        api_leave(took);
    } else {
        pm = px_btl_base_peer_eager(peer->btl);
    }
    px_btl_module_t *m = pm->module;
    px_rt_match_hdr_t mh = {peer->wire_src, r->tag, r->seq, 0};
    int rc;
    if (r->len > peer->eager_data) {
        if (mt)
            send_step_locked(r, 0, 0);
        else
            px_pml_send_start_rndv(r);
        return;
    }
    px_btl_convertor_t conv;
    px_btl_convertor_init_contig(&conv, r->buf, r->len);
    size_t size = r->len;
    px_btl_descriptor_t *des = m->btl_prepare_src(
        m, pm->endpoint, &conv, PX_BTL_NO_ORDER, sizeof(mh), &size, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des) {
        if (mt)
            send_step_locked(r, PX_PML_PEND_START, 0);
        else
            px_pml_pending_add(r, PX_PML_PEND_START);
        return;
    }
    if (size != r->len) {
        m->btl_free(m, des);
        if (mt)
            send_step_locked(r, 0, PX_ERR_FATAL);
        else
            px_pml_req_fail(r, PX_ERR_FATAL);
        px_show_error("runtime: btl %s took %zu of a %zu-byte eager message",
                      m->btl_component->base.component_name, size, r->len);
        return;
    }
    memcpy(des->des_segments[0].seg_addr, &mh, sizeof(mh));
    des->des_cbfunc = send_eager_done;
    des->des_cbdata = r;
    px_pml_pending_remove(r);
    r->des_held = true; /* until send_eager_done, which may run inside btl_send */
    rc = m->btl_send(m, pm->endpoint, des, PX_RT_AM_MATCH);
    if (1 == rc) {
        r->des_held = false;
        req_complete(r);
        return;
    }
    if (0 == rc)
        return;
    r->des_held = false;
    m->btl_free(m, des);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        if (mt)
            send_step_locked(r, PX_PML_PEND_START, 0);
        else
            px_pml_pending_add(r, PX_PML_PEND_START);
        return;
    }
    if (mt)
        send_step_locked(r, 0, rc);
    else
        px_pml_req_fail(r, rc);
}

/* ------------------------------------------------------------------ progress, isend, irecv */

int px_pml_pending_progress(void)
{
    /* Each request is taken off the list, then its step re-adds it when it
     * still cannot proceed; at most the current length is visited. */
    size_t n = px_list_get_size(&px_rt.pending);
    int done = 0;
    for (size_t i = 0; i < n; ++i) {
        px_list_item_t *it = px_list_remove_first(&px_rt.pending);
        if (NULL == it)
            break;
        px_request_t *r = px_container_of(it, px_request_t, pend_link);
        int what = r->pending;
        r->pending = PX_PML_PEND_NONE;
        switch (what) {
        case PX_PML_PEND_START:
            send_start(r, false); /* the API lock is held */
            break;
        case PX_PML_PEND_FRAGS:
            px_pml_send_schedule_frags(r);
            break;
        case PX_PML_PEND_ACK:
            px_pml_recv_send_ack(r);
            break;
        case PX_PML_PEND_RDMA:
            px_pml_rdma_schedule(r);
            break;
        case PX_PML_PEND_FIN:
            px_pml_rdma_send_fin(r);
            break;
        case PX_PML_PEND_PUTACK:
            px_pml_recv_send_putack(r);
            break;
        default:
            break;
        }
        if (PX_PML_PEND_NONE == r->pending)
            done++;
    }
    return done;
}

int px_pml_progress_once(void)
{
    return pml_progress();
}

static int rt_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request);

int px_pml_isend_st(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    px_rt_peer_t *peer = px_rt_peer_find(dest);
    if (PX_UNLIKELY(NULL == peer))
        return PX_ERR_PEER_FAILED;
    if (PX_UNLIKELY(peer->failed))
        return px_rt_peer_refused(peer, dest);
    return rt_isend(buf, len, dest, tag, request);
}

int px_pml_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    if (PX_UNLIKELY(px_pml_fine))
        return px_pml_isend_fine(buf, len, dest, tag, request);
    return px_pml_isend_st(buf, len, dest, tag, request);
}

/* Fine mode: a send whose sequence number `seq` is spent (tried_sendi: the
 * immediate path already refused it). The request is allocated after the
 * number was taken, so running out of memory here leaves a hole in the
 * peer's stream: the peer is failed, as for a message that cannot be queued. */
int px_pml_isend_fine_seq(const void *buf, size_t len, int dest, int tag, uint32_t seq,
                          bool tried_sendi, px_request_t **request)
{
    px_rt_peer_t *peer = px_rt_peer_find(dest);
    px_request_t *r = req_alloc_mt(PX_PML_REQ_SEND, true);
    if (PX_UNLIKELY(NULL == r)) {
        bool took = api_enter(true);
        px_rt_fail_peer(dest, PX_ERR_PEER_FAILED,
                        "no memory for a send request after its sequence number was spent");
        api_leave(took);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    r->peer = dest;
    r->tag = tag;
    r->buf = (void *)buf;
    r->len = len;
    r->status.source = dest;
    r->status.tag = tag;
    r->status.length = len;
    r->seq = seq;
    *request = r;
    if (!tried_sendi && len < __atomic_load_n(&peer->tiny_below, __ATOMIC_RELAXED) &&
        PX_LIKELY(PX_SUCCESS == pml_sendi_match(peer, tag, seq, buf, len))) {
        req_complete(r);
        return PX_SUCCESS;
    }
    send_start(r, true);
    return PX_SUCCESS;
}

int px_pml_isend_fine(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    px_rt_peer_t *peer = px_rt_peer_find(dest);
    if (PX_UNLIKELY(NULL == peer))
        return PX_ERR_PEER_FAILED;
    if (PX_UNLIKELY(__atomic_load_n(&peer->failed, __ATOMIC_RELAXED)))
        return px_rt_peer_refused(peer, dest);
    uint32_t seq = __atomic_fetch_add(&peer->send_seq, 1, __ATOMIC_RELAXED);
    return px_pml_isend_fine_seq(buf, len, dest, tag, seq, false, request);
}

int px_pml_isend_failed_ok(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    px_rt_peer_t *peer = px_rt_peer_find(dest);
    if (NULL == peer)
        return PX_ERR_PEER_FAILED;
    if (peer->failed && !peer->failed_here)
        return peer->failed; /* its transport is gone */
    if (px_pml_fine)
        return px_pml_isend_fine_seq(buf, len, dest, tag,
                                     __atomic_fetch_add(&peer->send_seq, 1, __ATOMIC_RELAXED),
                                     false, request);
    return rt_isend(buf, len, dest, tag, request);
}

static inline int rt_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    px_rt_peer_t *peer = px_rt_peer_find(dest); /* the callers checked it */
    px_request_t *r = req_alloc(PX_PML_REQ_SEND);
    if (PX_UNLIKELY(NULL == r))
        return PX_ERR_OUT_OF_RESOURCE;
    r->peer = dest;
    r->tag = tag;
    r->buf = (void *)buf;
    r->len = len;
    r->status.source = dest;
    r->status.tag = tag;
    r->status.length = len;
    r->seq = peer->send_seq++;
    *request = r;
    if (len < peer->tiny_below &&
        PX_LIKELY(PX_SUCCESS == pml_sendi_match(peer, tag, r->seq, buf, len))) {
        req_complete(r);
        return PX_SUCCESS;
    }
    send_start(r, false);
    return PX_SUCCESS;
}

int px_pml_irecv(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    if (PX_UNLIKELY(px_pml_fine))
        return px_pml_irecv_fine(buf, len, source, tag, request);
    return px_pml_irecv_st(buf, len, source, tag, request);
}

/* Fine mode: post a receive under the matching lock; a rendezvous header it
 * takes from the unexpected queue is started after the lock is let go, under
 * the API lock. A dynamic peer's id is looked up under the API lock (the
 * caller's: px_irecv takes it for such a source). */
/* A receive request's fields from the call (both modes). */
static inline void recv_setup(px_request_t *r, void *buf, size_t len, int source, int tag)
{
    r->peer = source;
    r->tag = tag;
    r->buf = buf;
    r->len = len;
    r->status.source = source;
    r->status.tag = tag;
    r->status.length = 0;
}

/* Fine mode, the matching lock held: queue `r` on the posted receives (or
 * complete it at once when its source failed), then let the lock go. */
static int irecv_fine_post(px_request_t *r, int source)
{
    px_rt_peer_t *from = source != PX_ANY_SOURCE ? px_rt_peer_find(source) : NULL;
    int failed = from ? __atomic_load_n(&from->failed, __ATOMIC_RELAXED) : 0;
    if (source != PX_ANY_SOURCE && (NULL == from || failed)) {
        r->status.error = from ? px_rt_peer_refused(from, source) : PX_ERR_PEER_FAILED;
        req_complete(r);
        ml_unlock(true);
        return PX_SUCCESS;
    }
    px_list_append(&px_rt.posted, &r->super.super);
    r->on_posted = true;
    ml_unlock(true);
    return PX_SUCCESS;
}

int px_pml_irecv_fine_nomatch(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    px_request_t *r = req_alloc_mt(PX_PML_REQ_RECV, false); /* the lock is held */
    if (PX_UNLIKELY(NULL == r)) {
        ml_unlock(true);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    recv_setup(r, buf, len, source, tag);
    *request = r;
    return irecv_fine_post(r, source);
}

int px_pml_irecv_fine(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    ml_lock(true);
    px_request_t *r = req_alloc_mt(PX_PML_REQ_RECV, false); /* the lock is held */
    if (PX_UNLIKELY(NULL == r)) {
        ml_unlock(true);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    recv_setup(r, buf, len, source, tag);
    *request = r;
    px_rt_ux_t *u;
    PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
    {
        if (!tag_matches(source, tag, u->src, u->tag))
            continue;
        px_list_remove_item(&px_rt.unexpected, &u->super.super);
        if (PX_PML_KIND_EAGER == u->kind) {
            px_btl_segment_t s = {u->data, u->len};
            recv_eager_into(r, u->src, u->tag, &s, 1, 0, u->len);
            ux_free(u);
            ml_unlock(true);
            return PX_SUCCESS;
        }
        ml_unlock(true);
        bool took = api_enter(true);
        px_pml_carried_t c;
        px_btl_segment_t seg;
        px_pml_recv_start_rndv(r, &u->rndv, u->data, ux_carried(u, &c, &seg));
        api_leave(took);
        ml_lock(true);
        ux_free(u);
        ml_unlock(true);
        return PX_SUCCESS;
    }
    return irecv_fine_post(r, source);
}

int px_pml_irecv_st(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    px_request_t *r = req_alloc(PX_PML_REQ_RECV);
    if (PX_UNLIKELY(NULL == r))
        return PX_ERR_OUT_OF_RESOURCE;
    recv_setup(r, buf, len, source, tag);
    *request = r;
    px_rt_ux_t *u;
    PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
    {
        if (!tag_matches(source, tag, u->src, u->tag))
            continue;
        px_list_remove_item(&px_rt.unexpected, &u->super.super);
        if (PX_PML_KIND_EAGER == u->kind) {
            px_btl_segment_t s = {u->data, u->len};
            recv_eager_into(r, u->src, u->tag, &s, 1, 0, u->len);
        } else {
            px_pml_carried_t c;
            px_btl_segment_t seg;
            px_pml_recv_start_rndv(r, &u->rndv, u->data, ux_carried(u, &c, &seg));
        }
        ux_free(u);
        return PX_SUCCESS;
    }
    px_rt_peer_t *from = source != PX_ANY_SOURCE ? px_rt_peer_find(source) : NULL;
    if (source != PX_ANY_SOURCE && (NULL == from || from->failed)) {
        /* a failed peer, or a dynamic peer disconnected (its messages that
         * arrived before were matched above) */
        r->status.error = from ? px_rt_peer_refused(from, source) : PX_ERR_PEER_FAILED;
        req_complete(r);
        return PX_SUCCESS;
    }
    px_list_append(&px_rt.posted, &r->super.super);
    r->on_posted = true;
    return PX_SUCCESS;
}

int px_pml_send_inline(const void *buf, size_t len, int dest, int tag)
{
    /* Fine mode: a sequence number is taken before the transport is tried,
     * so a refusal would leave a hole; the caller's px_pml_isend does it. */
    if (PX_UNLIKELY(px_pml_fine))
        return PX_ERR_NOT_SUPPORTED;
    px_rt_peer_t *peer = px_rt_peer_find(dest);
    if (PX_UNLIKELY(NULL == peer || peer->failed))
        return PX_ERR_NOT_SUPPORTED;
    return pml_send_now(peer, tag, buf, len);
}

void px_pml_release(px_request_t **request)
{
    px_request_t *r = *request;
    *request = NULL;
    if (NULL == r)
        return;
    if (PX_UNLIKELY(px_pml_fine)) {
        /* The callers hold the API lock (groups, collectives); the matching
         * lock decides between a message matching it and the cancel. */
        ml_lock(true);
        if (!req_done(r) && r->on_posted) {
            px_list_remove_item(&px_rt.posted, &r->super.super);
            r->on_posted = false;
            req_free_mt(r, true);
            ml_unlock(true);
            return;
        }
        ml_unlock(true);
    }
    if (req_done(r)) {
        req_release_mt(r, px_pml_fine);
    } else if (r->on_posted) { /* no message matched it: cancel */
        px_list_remove_item(&px_rt.posted, &r->super.super);
        r->on_posted = false;
        req_free(r);
    } else {
        /* A transport or the peer still has it: whoever finishes it last
         * frees it (px_pml_req_unhold), else px_finalize does. */
        r->released = true;
        if (PX_PML_PEND_NONE == r->pending) /* a send still to start keeps its place */
            px_pml_req_unhold(r);
    }
}

/* ------------------------------------------------------------------ requests of the layers above
 */

px_request_t *px_pml_request_alloc(const px_request_ops_t *ops, void *owner)
{
    px_request_t *r = req_alloc(PX_PML_REQ_GENERIC);
    if (NULL == r)
        return NULL;
    r->peer = PX_ANY_SOURCE;
    r->tag = PX_ANY_TAG;
    r->buf = NULL;
    r->len = 0;
    r->status = (px_status_t){PX_ANY_SOURCE, PX_ANY_TAG, 0, PX_SUCCESS};
    r->ops = ops;
    r->owner = owner;
    return r;
}

void px_pml_request_complete(px_request_t *r, int error)
{
    r->status.error = error;
    req_complete(r);
}

void px_pml_request_free(px_request_t *r)
{
    r->ops = NULL;
    r->owner = NULL;
    req_free(r);
}
