/*
 * pml_internal.h: what the files of messaging share (runtime/pml/ only):
 * pml.c (matching, eager messages, the API), pml_peer.c (variables, setup,
 * a peer's failure), pml_wait.c (the slow path of a wait) and pml_rndv.c
 * (the rendezvous protocols: RDMA get striped over rails and RDMA put, one
 * chunk scheduler; pipelined fragments). The hot-path helpers are static
 * inline here. What the layers above may call is in pml.h.
 */
#ifndef PX_RUNTIME_PML_PML_INTERNAL_H
#define PX_RUNTIME_PML_PML_INTERNAL_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/bias_lock.h"
#include "core/util/progress.h"
#include "runtime/pml/pml.h"

/* ---- threads: the matching lock (docs/threads.md) ----
 *
 * px_pml_fine: the process runs at PX_THREAD_MULTIPLE with
 * runtime_thread_locks=fine. Then the point-to-point calls (px_send, px_recv,
 * their non-blocking forms, px_wait, px_test, px_progress) run without the
 * API lock: the matching lock below guards the matching queues (posted,
 * unexpected, each peer's out-of-order list and receive sequence number), the
 * request and unexpected-item free lists and the eager requests' flags; a
 * peer's send sequence number is taken with an atomic add; the transports are
 * serialized by the BTL base's lock per module. The matching lock is the
 * innermost lock: nothing that takes another lock (a transport call, the API
 * lock, a failure notice) runs while it is held. It is recursive, so helpers
 * that take it may be called with it held. Off (every other level, or
 * runtime_thread_locks=api), the code below takes it nowhere: the `mt`
 * parameters are constants where it matters (the serialized entry points). */
extern bool px_pml_fine;
/* Biased (core/util/bias_lock.h): a thread that matches alone takes it with
 * plain loads and stores, no atomic read-modify-write. */
extern px_bias_lock_t px_pml_match_lock;

static inline void ml_lock(bool mt)
{
    if (mt)
        px_bias_lock(&px_pml_match_lock);
}

static inline void ml_unlock(bool mt)
{
    if (mt)
        px_bias_unlock(&px_pml_match_lock);
}

/* Has `r` completed? The completer's writes (data, status) are visible once
 * this says so (release store in req_complete, acquire load here: plain moves
 * on x86). */
static inline bool req_done(const px_request_t *r)
{
    return __atomic_load_n(&r->complete, __ATOMIC_ACQUIRE);
}

/* The API lock for a slow step of a fine-mode call (a rendezvous, a retry
 * queued for progress, a failure): taken unless this thread holds it (or mt
 * is off: the caller's lock, if any, covers it). Never taken with the
 * matching lock held. */
static inline bool api_enter(bool mt)
{
    bool took = false;
    if (mt)
        px_rt_lock_take(&took);
    return took;
}

static inline void api_leave(bool took)
{
    px_rt_lock_drop(took);
}

/* ---- hot-path helpers ---- */

/* Requests and unexpected items come from free lists without locks of their
 * own: in fine mode under the matching lock. Both lists are made with
 * thread_safe = false (pml_peer.c), so the inline single-thread forms are
 * used (no indirect call per get and return). */
static inline px_request_t *req_alloc_mt(int type, bool mt)
{
    ml_lock(mt);
    px_request_t *r = (px_request_t *)px_free_list_get_st(&px_rt.requests);
    ml_unlock(mt);
    if (PX_UNLIKELY(NULL == r))
        return NULL;
    r->type = (uint8_t)type;
    r->pending = PX_PML_PEND_NONE;
    r->complete = false;
    r->on_active = false;
    r->on_posted = false;
    r->finishing = false;
    r->des_held = false;
    r->released = false;
    r->rndv = false;
    r->outstanding = 0;
    r->nrails = 0;
    r->rdma_mode = PX_PML_RDMA_NONE;
    r->rndv_prepared = false;
    r->status.error = PX_SUCCESS;
    return r;
}

static inline px_request_t *req_alloc(int type)
{
    return req_alloc_mt(type, px_pml_fine);
}

static inline void req_free_mt(px_request_t *r, bool mt)
{
    ml_lock(mt);
    px_free_list_return_st(&px_rt.requests, &r->super);
    ml_unlock(mt);
}

static inline void req_free(px_request_t *r)
{
    req_free_mt(r, px_pml_fine);
}

/* Lifetime rule: a request goes back to the free list only when the
 * application has let go of it (px_wait/px_test returned it, or a wait gave
 * up on it) AND nothing in a transport can still name it: no eager
 * descriptor whose des_cbdata points at it, no RDMA or fragment operation
 * outstanding, not on px_rt.active (where control messages from the peer
 * find it by address). Until then it is "released": callbacks that find it
 * so only drop their hold, and the last one frees it (px_pml_req_unhold). */
static inline bool req_held(const px_request_t *r)
{
    return r->des_held || r->outstanding > 0 || r->on_active;
}

/* The application lets go of `r`. In fine mode an eager request's hold
 * (des_held) is the matching lock's; a rendezvous request's state is the API
 * lock's (its callbacks run under it), so its release takes that too. */
static inline void req_release_mt(px_request_t *r, bool mt)
{
    bool took = false;
    if (mt && PX_UNLIKELY(r->rndv))
        took = api_enter(true);
    ml_lock(mt);
    if (PX_LIKELY(!req_held(r)))
        px_free_list_return_st(&px_rt.requests, &r->super); /* under the lock, if any */
    else
        r->released = true;
    ml_unlock(mt);
    api_leave(took);
}

static inline void req_release(px_request_t *r)
{
    req_release_mt(r, false);
}

/* A callback dropped its hold on a released request: free it once nothing
 * holds it any more (its memory registrations go with it). */
void px_pml_req_unhold(px_request_t *r);

/* Unexpected items: in fine mode the caller holds the matching lock. */
static inline px_rt_ux_t *ux_alloc(void)
{
    if (PX_UNLIKELY(px_rt.ux_fail_countdown) && 0 == --px_rt.ux_fail_countdown)
        return NULL; /* test hook: PX_RT_TEST_UX_FAIL */
    return (px_rt_ux_t *)px_free_list_get_st(&px_rt.ux_items);
}

static inline void ux_free(px_rt_ux_t *u)
{
    if (PX_UNLIKELY(u->data != u->inline_buf))
        free(u->data);
    px_free_list_return_st(&px_rt.ux_items, &u->super);
}

static inline bool tag_matches(int want_src, int want_tag, int src, int tag)
{
    return (want_src == src || want_src == PX_ANY_SOURCE) &&
           (want_tag == tag || (want_tag == PX_ANY_TAG && tag >= 0));
}

/* Bytes of data in segments after `skip` header bytes. */
static inline size_t seg_data_len(const px_btl_segment_t *s, size_t n, size_t skip)
{
    size_t t = 0;
    for (size_t i = 0; i < n; ++i)
        t += s[i].seg_len;
    return t > skip ? t - skip : 0;
}

/* Copy up to `max` data bytes (after `skip`) from segments to dst. */
static inline void seg_copy(void *dst, size_t max, const px_btl_segment_t *s, size_t n, size_t skip)
{
    char *d = dst;
    for (size_t i = 0; i < n && max; ++i) {
        size_t len = s[i].seg_len;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        size_t c = len - skip;
        if (c > max)
            c = max;
        memcpy(d, (const char *)s[i].seg_addr + skip, c);
        d += c;
        max -= c;
        skip = 0;
    }
}

static inline void req_complete(px_request_t *r)
{
    __atomic_store_n(&r->complete, true, __ATOMIC_RELEASE);
}

/* Is `r` an operation with `rank` (control messages name requests by address:
 * one from another rank must not act on it)? */
static inline bool px_pml_req_of_rank(const px_request_t *r, int rank)
{
    return (PX_PML_REQ_SEND == r->type ? r->peer : r->status.source) == rank;
}

/* The one place a match header is written for the transport's immediate
 * path (px_send, px_isend, px_pml_send_inline): `seq` is the sequence number
 * the message carries. The transport's return. */
static inline int pml_sendi_match(px_rt_peer_t *peer, int tag, uint32_t seq, const void *buf,
                                  size_t len)
{
    px_rt_match_hdr_t h = {peer->wire_src, tag, seq, 0};
    return peer->eager_btl->btl_sendi(peer->eager_btl, peer->eager_ep, &h, sizeof(h), buf, len,
                                      PX_BTL_NO_ORDER, 0, PX_RT_AM_MATCH, NULL);
}

/* The immediate path when the message is small enough (a failed peer's
 * tiny_below is 0): PX_SUCCESS with the peer's next sequence number spent,
 * else PX_ERR_NOT_SUPPORTED and nothing sent. */
static inline int pml_send_now(px_rt_peer_t *peer, int tag, const void *buf, size_t len)
{
    if (len >= peer->tiny_below)
        return PX_ERR_NOT_SUPPORTED;
    if (PX_LIKELY(PX_SUCCESS == pml_sendi_match(peer, tag, peer->send_seq, buf, len))) {
        peer->send_seq++;
        return PX_SUCCESS;
    }
    return PX_ERR_NOT_SUPPORTED;
}

/* ---- pml.c: queues and control messages ---- */

/* Requests in a rendezvous (px_rt.active): add, remove, and check an id from
 * the wire against them (NULL when it is not one of ours). */
void px_pml_active_add(px_request_t *r);
void px_pml_active_remove(px_request_t *r);
px_request_t *px_pml_active_find(uint64_t id, int type);
/* Requests with a step to retry from progress (PX_PML_PEND_*). */
void px_pml_pending_add(px_request_t *r, int what);
void px_pml_pending_remove(px_request_t *r);
/* Drop every memory registration the request holds. */
void px_pml_req_release_regs(px_request_t *r);
/* Complete the request with `error`, off every queue. */
void px_pml_req_fail(px_request_t *r, int error);
/* The id of an RDMA module on the wire: a hash of its component's name. */
uint32_t px_pml_rdma_id(const px_btl_module_t *m);
/* A control message to `rank` over its eager module (sendi, else alloc+send). */
int px_pml_send_ctl_buf(int rank, px_btl_tag_t am, const void *buf, size_t len);
int px_pml_send_ctl(int rank, px_btl_tag_t am, uint64_t sreq, uint64_t rreq);

/* ---- pml_rndv.c: the rendezvous ---- */

/* Sender: the RNDV header (chooses get rails or put first). */
void px_pml_send_start_rndv(px_request_t *r);
/* The first bytes of a message its RNDV carried (PX_RT_RNDV_FLAG_DATA): `len`
 * bytes at `skip` bytes into the segments (checked against the message by
 * pml.c before). */
typedef struct px_pml_carried {
    const px_btl_segment_t *segs;
    size_t nseg;
    size_t skip;
    size_t len;
} px_pml_carried_t;
/* Receiver: a receive matched an RNDV header (`blob`: the rails offered;
 * `c`: the data it carried, or NULL). */
void px_pml_recv_start_rndv(px_request_t *r, const px_rt_rndv_hdr_t *h, const unsigned char *blob,
                            const px_pml_carried_t *c);
/* Steps retried from progress. */
void px_pml_send_schedule_frags(px_request_t *r);
void px_pml_recv_send_ack(px_request_t *r);
void px_pml_recv_send_putack(px_request_t *r);
/* RDMA (get on the receiver, put on the sender, per r->rdma_mode): more
 * chunks over the rails; then FIN (get) or PUT-FIN (put). */
void px_pml_rdma_schedule(px_request_t *r);
void px_pml_rdma_send_fin(px_request_t *r);
/* Active-message callbacks of the rendezvous tags. */
void px_pml_am_ack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_pml_am_frag(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_pml_am_fin(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_pml_am_putack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_pml_am_putfin(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);

/* Receive callbacks of the matched-message and rendezvous-header tags
 * (pml.c), registered by px_pml_init (pml_peer.c). */
void px_pml_am_match(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_pml_am_rndv(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* The two forms of the calls the API path uses (pml.c): _st (no lock; the
 * caller's API lock, if any, covers everything), _fine (fine mode, with or
 * without the API lock held). The unsuffixed px_pml_isend / px_pml_irecv
 * (pml.h) choose by px_pml_fine. */
int px_pml_isend_st(const void *buf, size_t len, int dest, int tag, px_request_t **request);
int px_pml_irecv_st(void *buf, size_t len, int source, int tag, px_request_t **request);
int px_pml_isend_fine(const void *buf, size_t len, int dest, int tag, px_request_t **request);
int px_pml_isend_fine_seq(const void *buf, size_t len, int dest, int tag, uint32_t seq,
                          bool tried_sendi, px_request_t **request);
int px_pml_irecv_fine(void *buf, size_t len, int source, int tag, px_request_t **request);
/* The same, called with the matching lock held (once, not nested) by a
 * caller that found nothing for (source, tag) on the unexpected queue under
 * this hold: posts the receive, lets the lock go. */
int px_pml_irecv_fine_nomatch(void *buf, size_t len, int source, int tag, px_request_t **request);
void px_pml_am_match_fine(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* Fine mode: one round of progress if the API lock is free (tried, never
 * waited for: *ran says whether it ran; NULL: not asked), with the transport
 * errors reported meanwhile; and a wait built on it, which checks its own
 * request and yields while another thread progresses. A thread that holds
 * the API lock waits as px_pml_wait_slow does. */
int px_pml_progress_fine(bool *ran);
int px_pml_wait_slow_fine(px_request_t *r, const char *who);

/* The slow path of a wait (pml_wait.c): progress until `r` completes, the
 * peer fails or runtime_wait_timeout passes (then the request is given up:
 * freed, or handed to the transport that still holds it). */
PX_NOINLINE int px_pml_wait_slow(px_request_t *r, const char *who);
/* Retry the steps on px_rt.pending (pml.c); how many finished. */
int px_pml_pending_progress(void);

/* One round of progress: the transports, messaging's pending steps, then the
 * steps the layers above registered (proc.h: non-blocking collectives). */
static inline int pml_progress(void)
{
    int n = px_progress_engine();
    if (PX_UNLIKELY(!px_list_is_empty(&px_rt.pending)))
        n += px_pml_pending_progress();
    if (PX_UNLIKELY(px_rt.nprogress > 0))
        n += px_rt_progress_hooks();
    return n;
}

/* pml_peer.c: a peer failed (the process table's notice): its pending
 * operations complete with `error`. */
void px_pml_peer_failed(int rank, int error, const char *why, bool transport_gone);

#endif
