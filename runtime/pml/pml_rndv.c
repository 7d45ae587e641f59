/*
 * pml_rndv.c: the rendezvous protocols of the messaging layer, for messages
 * above the peer's eager limit.
 *
 *  - RDMA get (runtime_rndv_protocol auto or get): the sender's RNDV header
 *    offers one rail per GET-capable RDMA module of the peer (its buffer
 *    registered with each); the receiver splits the read across the rails it
 *    shares by bandwidth weight, reads with btl_get, then sends FIN.
 *  - RDMA put (no GET, or runtime_rndv_protocol put): the receiver answers
 *    PUT-ACK with its buffer and the length it takes; the sender writes with
 *    btl_put over one rail and sends PUT-FIN.
 *  - Pipelined fragments (no RDMA, runtime_rndv_protocol pipeline, or RDMA
 *    refused before any byte moved): the receiver answers ACK; the sender
 *    sends fragments of btl_max_send_size over the peer's send modules.
 * Get and put are one chunk scheduler (rdma_schedule): the side that moves
 * the data walks its rails (r->rails, each a byte range of the message, a
 * local registration and the peer's handle) in chunks of the module's
 * get/put limit, and the direction (r->rdma_mode) only picks btl_get or
 * btl_put, and FIN or PUT-FIN at the end. Their fallback to fragments is one
 * function too (rndv_use_frags).
 * A truncating receive reads (or keeps) only what fits and still completes
 * the protocol, so the sender finishes and no other message is lost.
 * First fragment (runtime_rndv_first_frag, off by default; auto: over a
 * network transport) the RNDV also carries the message's first bytes, as many as fit in the eager
 * limit (PX_RT_RNDV_FLAG_DATA, px_rt_rndv_data_t). The receiver starts the
 * get of the rest (or sends its ACK, whose px_rt_ack_data_t tail tells the
 * sender where fragments start) and copies those bytes while the request
 * travels. The sender still offers its whole buffer, so a receiver of an
 * older release, which ignores the flag and the bytes after the rail
 * entries, reads (or asks for) all of it as before.
 */
#include <inttypes.h>
#include <stdio.h>
#include "runtime/pml/pml_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"

/* ---- rails ---- */

/* Can module `m` carry a rendezvous in direction `mode` (PX_PML_RDMA_GET/PUT)? */
static bool rdma_can(const px_btl_module_t *m, int mode)
{
    if (m->btl_registration_handle_size > PX_RT_MAX_HANDLE)
        return false;
    if (PX_PML_RDMA_GET == mode)
        return (m->btl_flags & PX_BTL_FLAGS_GET) && m->btl_get;
    return (m->btl_flags & PX_BTL_FLAGS_PUT) && m->btl_put;
}

/* Most rails a rendezvous in direction `mode` uses: get stripes, put does not
 * (PUT-ACK carries one handle). */
static int rails_max(int mode)
{
    return PX_PML_RDMA_GET == mode ? PX_RT_MAX_RAILS : 1;
}

/* Split [from, end) of the message over the request's rails by bandwidth
 * weight (the last rail takes the remainder) and register each rail's range
 * of the local buffer. false when a range cannot be registered (the caller
 * falls back). */
static bool rails_split(px_request_t *r, size_t from, size_t end)
{
    double wsum = 0;
    for (int k = 0; k < r->nrails; ++k)
        wsum += r->rails[k].pm->weight;
    const size_t len = end - from;
    size_t start = from;
    for (int k = 0; k < r->nrails; ++k) {
        px_rt_rail_t *rl = &r->rails[k];
        size_t n = end - start;
        if (k + 1 < r->nrails) {
            double share = wsum > 0 ? rl->pm->weight / wsum : 1.0 / r->nrails;
            n = (size_t)((double)len * share);
            if (n > end - start)
                n = end - start;
        }
        rl->cursor = start;
        rl->end = start + n;
        start += n;
        px_btl_module_t *m = rl->pm->module;
        if (n && m->btl_register_mem) {
            rl->reg = m->btl_register_mem(m, rl->pm->endpoint, (char *)r->buf + rl->cursor, n, 0);
            if (NULL == rl->reg)
                return false;
        }
    }
    return true;
}

/* RDMA cannot carry this rendezvous (a module refused before any byte moved,
 * or memory could not be registered): move it by pipelined fragments. The
 * receiver asks for them with ACK; the sender, already told where to put,
 * sends them unasked (the receiver takes them as after an ACK). */
static void rndv_use_frags(px_request_t *r)
{
    px_pml_req_release_regs(r);
    r->rdma_mode = PX_PML_RDMA_NONE;
    r->done = 0;
    px_pml_pending_remove(r);
    if (PX_PML_REQ_RECV == r->type) {
        r->done = r->carried; /* the ACK says so: fragments start after them */
        px_pml_recv_send_ack(r);
        return;
    }
    r->scheduled = 0;
    px_btl_convertor_init_contig(&r->conv, r->buf, r->total);
    px_pml_send_schedule_frags(r);
}

/* ---- the chunk scheduler (get: receiver, put: sender) ---- */

/* The data has moved: tell the peer (FIN to the sender after get, PUT-FIN to
 * the receiver after put, with whether the puts failed) and complete. */
void px_pml_rdma_send_fin(px_request_t *r)
{
    int rc;
    if (PX_PML_RDMA_GET == r->rdma_mode)
        rc = px_pml_send_ctl(r->status.source, PX_RT_AM_FIN, r->remote, 0);
    else
        rc = px_pml_send_ctl(r->peer, PX_RT_AM_PUTFIN, PX_SUCCESS != r->status.error ? 1 : 0,
                             r->remote);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_pml_pending_add(r, PX_PML_PEND_FIN);
        return;
    }
    px_pml_pending_remove(r);
    px_pml_active_remove(r);
    if (rc != PX_SUCCESS && PX_SUCCESS == r->status.error)
        r->status.error = rc;
    req_complete(r);
}

static void rdma_check(px_request_t *r)
{
    if (r->finishing || r->complete || r->outstanding || r->done < r->rlen ||
        r->scheduled < r->rlen)
        return;
    r->finishing = true;
    px_pml_req_release_regs(r);
    px_pml_rdma_send_fin(r);
}

static void rdma_done_locked(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                             px_btl_registration_handle_t *lh, void *context, void *cbdata,
                             int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    px_request_t *r = context;
    r->outstanding--;
    if (PX_UNLIKELY(r->released)) { /* its wait gave up: only the hold goes */
        px_pml_req_unhold(r);
        return;
    }
    if (status != PX_SUCCESS &&
        (PX_SUCCESS == r->status.error || PX_ERR_TRUNCATE == r->status.error))
        r->status.error = PX_ERR_COMM;
    r->done += (size_t)(uintptr_t)cbdata;
    rdma_check(r);
}

/* The RDMA completion the modules call: the rendezvous's state is the API
 * lock's, and fine mode may find the completion in a progress that runs
 * without it (px_rt_rdma_locked: run with it taken by a try, or queued for
 * its holder). */
static void rdma_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                      px_btl_registration_handle_t *lh, void *context, void *cbdata, int status)
{
    const px_request_t *r = context;
    px_rt_rdma_locked(rdma_done_locked, PX_PML_REQ_SEND == r->type ? r->peer : r->status.source,
                      btl, ep, local, lh, context, cbdata, status);
}

/* Hand the rest of every rail's range to its module, in chunks of its get or
 * put limit (r->rdma_mode says which); r->rlen bytes move in all. */
void px_pml_rdma_schedule(px_request_t *r)
{
    const bool get = PX_PML_RDMA_GET == r->rdma_mode;
    if (PX_UNLIKELY(r->released)) {
        /* The application let go of it (a failed collective): start nothing
         * more in its buffer; the operations in flight drop their holds. */
        for (int k = 0; k < r->nrails; ++k)
            r->rails[k].cursor = r->rails[k].end;
        r->scheduled = r->rlen;
        px_pml_pending_remove(r);
        if (0 == r->outstanding) {
            px_pml_active_remove(r);
            px_pml_req_unhold(r);
        }
        return;
    }
    for (int k = 0; k < r->nrails; ++k) {
        px_rt_rail_t *rl = &r->rails[k];
        px_btl_module_t *m = rl->pm->module;
        const size_t limit = get ? m->btl_get_limit : m->btl_put_limit;
        while (rl->cursor < rl->end) {
            size_t off = rl->cursor, chunk = rl->end - off;
            if (limit && chunk > limit)
                chunk = limit;
            /* Only the transfer's first call may be declined (nothing moved
             * yet); a module must take the chunks after it. */
            const int fl = 0 == r->scheduled ? PX_BTL_RDMA_FLAG_RNDV : 0;
            rl->cursor += chunk;
            r->scheduled += chunk;
            r->outstanding++;
            int rc = (get ? m->btl_get : m->btl_put)(
                m, rl->pm->endpoint, (char *)r->buf + off, r->raddr + off, rl->reg,
                (px_btl_registration_handle_t *)rl->rhandle, chunk, fl, PX_BTL_NO_ORDER, rdma_done,
                r, (void *)(uintptr_t)chunk);
            if (PX_SUCCESS == rc)
                continue;
            rl->cursor -= chunk;
            r->scheduled -= chunk;
            r->outstanding--;
            if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
                px_pml_pending_add(r, PX_PML_PEND_RDMA);
                return;
            }
            if (0 == r->scheduled && 0 == r->outstanding) { /* refused or declined */
                PX_OUTPUT_VERBOSE(10, 0, "runtime: btl %s %s failed (%s); using fragments",
                                  m->btl_component->base.component_name, get ? "get" : "put",
                                  px_strerror(rc));
                rndv_use_frags(r);
                return;
            }
            /* Give up on the rest: count it as done so the FIN (PUT-FIN)
             * still goes once the operations in flight finish. */
            r->status.error = PX_ERR_COMM;
            r->done += r->rlen - r->scheduled;
            r->scheduled = r->rlen;
            for (int j = 0; j < r->nrails; ++j)
                r->rails[j].cursor = r->rails[j].end;
            break;
        }
    }
    if (PX_PML_PEND_RDMA == r->pending)
        px_pml_pending_remove(r);
    rdma_check(r);
}

/* ---- receiver ---- */

void px_pml_recv_send_ack(px_request_t *r)
{
    int rc;
    if (r->carried) { /* fragments from where the RNDV's bytes end */
        struct {
            px_rt_ctl_hdr_t h;
            px_rt_ack_data_t a;
        } msg = {{r->remote, (uint64_t)(uintptr_t)r}, {r->carried}};
        rc = px_pml_send_ctl_buf(r->status.source, PX_RT_AM_ACK, &msg, sizeof(msg));
    } else {
        rc = px_pml_send_ctl(r->status.source, PX_RT_AM_ACK, r->remote, (uint64_t)(uintptr_t)r);
    }
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_pml_pending_add(r, PX_PML_PEND_ACK);
        return;
    }
    px_pml_pending_remove(r);
    if (rc != PX_SUCCESS)
        px_pml_req_fail(r, rc);
}

/* Match the rails the sender offered with this process's modules for the
 * peer that can move data in direction `mode` (get: the sender's handle must
 * fit the module). Returns the number of rails (0: use fragments). */
static int recv_match_rails(px_request_t *r, px_rt_peer_t *peer, const px_rt_rndv_hdr_t *h,
                            const unsigned char *blob, int mode)
{
    r->nrails = 0;
    size_t pos = 0;
    for (uint32_t e = 0; e < h->nrails && r->nrails < rails_max(mode); ++e) {
        px_rt_rail_wire_t w;
        if (pos + sizeof(w) > h->blob)
            break;
        memcpy(&w, blob + pos, sizeof(w));
        pos += sizeof(w);
        if (w.hsize > PX_RT_MAX_HANDLE || pos + w.hsize > h->blob)
            break;
        for (int i = 0; i < peer->btl->num_rdma; ++i) {
            px_btl_base_peer_module_t *pm = &peer->btl->rdma[i];
            px_btl_module_t *m = pm->module;
            size_t hs = m->btl_register_mem ? m->btl_registration_handle_size : 0;
            bool used = false;
            for (int k = 0; k < r->nrails; ++k)
                used |= r->rails[k].pm == pm;
            if (used || !rdma_can(m, mode) || px_pml_rdma_id(m) != w.rdma_id ||
                (PX_PML_RDMA_GET == mode && hs != w.hsize))
                continue;
            px_rt_rail_t *rl = &r->rails[r->nrails++];
            rl->pm = pm;
            rl->reg = NULL;
            rl->hsize = w.hsize;
            memcpy(rl->rhandle, blob + pos, w.hsize);
            break;
        }
        pos += w.hsize;
    }
    return r->nrails;
}

/* Tell the sender where to put the data (RDMA put). */
void px_pml_recv_send_putack(px_request_t *r)
{
    px_rt_rail_t *rl = &r->rails[0];
    px_btl_module_t *m = rl->pm->module;
    struct {
        px_rt_putack_hdr_t h;
        unsigned char handle[PX_RT_MAX_HANDLE];
    } msg;
    size_t hs = rl->reg ? m->btl_registration_handle_size : 0;
    msg.h =
        (px_rt_putack_hdr_t){r->remote,        (uint64_t)(uintptr_t)r, (uint64_t)(uintptr_t)r->buf,
                             r->status.length, px_pml_rdma_id(m),      (uint32_t)hs};
    if (hs)
        memcpy(msg.handle, rl->reg, hs);
    int rc = px_pml_send_ctl_buf(r->status.source, PX_RT_AM_PUTACK, &msg, sizeof(msg.h) + hs);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_pml_pending_add(r, PX_PML_PEND_PUTACK);
        return;
    }
    px_pml_pending_remove(r);
    if (rc != PX_SUCCESS)
        px_pml_req_fail(r, rc);
}

/* The request a control message (ACK, FIN, PUT-FIN) names: copies its
 * header into *h and finds the request of `type` in flight by the id the
 * header carries for that side. NULL, after saying why, when the message is
 * shorter than the header or names no request in flight. */
static px_request_t *ctl_request(const px_btl_receive_descriptor_t *d, px_rt_ctl_hdr_t *h, int type,
                                 px_btl_tag_t am, const char *what)
{
    const char *side = PX_PML_REQ_SEND == type ? "send" : "receive";
    if (d->des_segments[0].seg_len < sizeof(*h)) {
        px_show_error("runtime: a %s from rank %d has %zu bytes, less than its %zu-byte header; "
                      "dropped",
                      what, d->src_rank, d->des_segments[0].seg_len, sizeof(*h));
        return NULL;
    }
    memcpy(h, d->des_segments[0].seg_addr, sizeof(*h));
    px_request_t *r = px_pml_active_find(PX_PML_REQ_SEND == type ? h->sreq : h->rreq, type);
    if (r && !px_pml_req_of_rank(r, px_rt_am_source(d)))
        r = NULL; /* an id of ours, but not for that rank */
    if (r && r->released && !(PX_PML_REQ_SEND == type && PX_RT_AM_FIN == am)) {
        px_pml_active_remove(r); /* its wait gave up: nothing more to do for it */
        px_pml_req_unhold(r);
        return NULL;
    }
    if (NULL == r && !px_rt_rank_failed(px_rt_am_source(d)))
        px_show_error("runtime: a %s from rank %d arrived for an unknown %s; dropped", what,
                      d->src_rank, side);
    return r;
}

/* AM callback (receiver): the sender has put everything. */
void px_pml_am_putfin(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_ctl_hdr_t h;
    px_request_t *r = ctl_request(d, &h, PX_PML_REQ_RECV, PX_RT_AM_PUTFIN, "PUT-FIN");
    if (NULL == r)
        return;
    px_pml_req_release_regs(r);
    if (h.sreq != 0 && PX_SUCCESS == r->status.error)
        r->status.error = PX_ERR_COMM; /* the sender's puts failed */
    px_pml_active_remove(r);
    req_complete(r);
}

/* Copy the first bytes the RNDV carried into the receive's buffer (what fits),
 * unless the request already completed (failed while starting). */
static void recv_copy_carried(px_request_t *r, const px_pml_carried_t *c)
{
    if (NULL == c || r->complete || r->released)
        return;
    size_t n = c->len < r->status.length ? c->len : r->status.length;
    if (n)
        seg_copy(r->buf, n, c->segs, c->nseg, c->skip);
}

/* A rendezvous matched by receive `r`; `c`: the first bytes its RNDV carried
 * (NULL: none), at most the message's length (pml.c checked). */
void px_pml_recv_start_rndv(px_request_t *r, const px_rt_rndv_hdr_t *h, const unsigned char *blob,
                            const px_pml_carried_t *c)
{
    r->rndv = true; /* fine mode: its release takes the API lock (req_release_mt) */
    r->status.source = h->m.src;
    r->status.tag = h->m.tag;
    r->total = h->len;
    r->remote = h->sreq;
    r->done = 0;
    r->scheduled = 0;
    r->outstanding = 0;
    r->finishing = false;
    r->carried = c ? c->len : 0;
    if (c)
        PX_OUTPUT_VERBOSE(20, px_rt.output,
                          "a rendezvous from rank %d carried its first %zu of %" PRIu64 " bytes",
                          h->m.src, c->len, h->len);
    if (h->len > r->len) {
        r->status.length = r->len;
        r->status.error = PX_ERR_TRUNCATE;
    } else {
        r->status.length = h->len;
    }
    px_pml_active_add(r);
    px_rt_peer_t *peer = px_rt_peer_find(h->m.src);
    if (PX_UNLIKELY(NULL == peer)) { /* a dynamic peer disconnected meanwhile */
        px_pml_req_fail(r, PX_ERR_PEER_FAILED);
        return;
    }
    int mode = PX_PML_RDMA_NONE;
    if (h->nrails && px_rt.rndv_protocol != PX_RT_RNDV_PIPELINE && peer->btl) {
        if (h->m.flags & PX_RT_RNDV_FLAG_GET)
            mode = PX_PML_RDMA_GET;
        else if (h->m.flags & PX_RT_RNDV_FLAG_PUT)
            mode = PX_PML_RDMA_PUT;
    }
    /* Get: the receiver reads its rails' ranges (after what the RNDV
     * carried). Put: its buffer is registered whole with the one rail, for
     * the sender to write (all of it: PUT-ACK has no offset). */
    size_t from = 0;
    if (PX_PML_RDMA_GET == mode)
        from = r->carried < r->status.length ? r->carried : r->status.length;
    if (mode != PX_PML_RDMA_NONE && recv_match_rails(r, peer, h, blob, mode) > 0 &&
        rails_split(r, from, r->status.length)) {
        r->rdma_mode = (uint8_t)mode;
        if (PX_PML_RDMA_PUT == mode) {
            /* The sender writes the whole message (it never carries bytes
             * with put; if one did, they are not taken: a fallback to
             * fragments then asks for all of them). */
            r->carried = 0;
            px_pml_recv_send_putack(r);
            return;
        }
        r->raddr = h->addr;
        r->rlen = r->status.length - from;
        /* The reads go out first; the carried bytes are copied while they
         * travel, and no FIN goes before that copy is done (finishing holds
         * rdma_check, in case a module completes a read at once). */
        r->finishing = true;
        px_pml_rdma_schedule(r);
        recv_copy_carried(r, c);
        r->finishing = false;
        if (PX_PML_RDMA_GET == r->rdma_mode)
            rdma_check(r);
        return;
    }
    rndv_use_frags(r); /* the ACK goes first; the copy while it travels */
    recv_copy_carried(r, c);
}

/* AM callback: a pipelined fragment. */
void px_pml_am_frag(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_frag_hdr_t h;
    if (d->des_segments[0].seg_len < sizeof(h))
        return;
    memcpy(&h, d->des_segments[0].seg_addr, sizeof(h));
    px_request_t *r = px_pml_active_find(h.rreq, PX_PML_REQ_RECV);
    if (r && !px_pml_req_of_rank(r, px_rt_am_source(d)))
        r = NULL;
    if (NULL == r) {
        if (!px_rt_rank_failed(px_rt_am_source(d)))
            px_show_error("runtime: a fragment from rank %d arrived for an unknown receive; "
                          "dropped",
                          d->src_rank);
        return;
    }
    size_t len = seg_data_len(d->des_segments, d->des_segment_count, sizeof(h));
    /* A released receive (its wait gave up, e.g. a failed collective): the
     * buffer is the application's again, so the rest of the stream is
     * counted and dropped. */
    if (h.offset < r->len && PX_LIKELY(!r->released)) {
        size_t n = r->len - h.offset;
        if (n > len)
            n = len;
        seg_copy((char *)r->buf + h.offset, n, d->des_segments, d->des_segment_count, sizeof(h));
    }
    r->done += len;
    if (r->done >= r->total) {
        px_pml_req_release_regs(r);
        px_pml_active_remove(r);
        if (PX_UNLIKELY(r->released))
            px_pml_req_unhold(r);
        else
            req_complete(r);
    }
}

/* A fragment's send completed (`bytes` of request `context`): under the API
 * lock, as the rendezvous's state is (send_frag_done). */
static void frag_done_locked(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                             px_btl_registration_handle_t *lh, void *context, void *bytes,
                             int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    px_request_t *r = context;
    r->outstanding--;
    if (PX_UNLIKELY(r->released)) {
        px_pml_req_unhold(r);
        return;
    }
    if (status != PX_SUCCESS && PX_SUCCESS == r->status.error)
        r->status.error = status;
    r->done += (size_t)(uintptr_t)bytes;
    if (r->done >= r->total && 0 == r->outstanding && r->on_active) {
        px_pml_active_remove(r);
        req_complete(r);
    }
}

/* The descriptor's completion: what it needs of the descriptor is copied
 * (the transport reuses it once this returns). */
static void send_frag_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                           int status)
{
    px_request_t *r = des->des_cbdata;
    px_rt_rdma_locked(frag_done_locked, r->peer, btl, ep, NULL, NULL, r, des->des_context, status);
}

void px_pml_send_schedule_frags(px_request_t *r)
{
    px_rt_peer_t *peer = px_rt_peer_find(r->peer);
    if (PX_UNLIKELY(NULL == peer)) {
        px_pml_req_fail(r, PX_ERR_PEER_FAILED);
        return;
    }
    while (r->scheduled < r->total) {
        px_btl_base_peer_module_t *pm = px_btl_base_peer_send(peer->btl);
        px_btl_module_t *m = pm->module;
        size_t max = m->btl_max_send_size > sizeof(px_rt_frag_hdr_t)
                         ? m->btl_max_send_size - sizeof(px_rt_frag_hdr_t)
                         : 1;
        size_t size = r->total - r->scheduled;
        if (size > max)
            size = max;
        r->conv.position = r->scheduled;
        px_btl_descriptor_t *des = m->btl_prepare_src(
            m, pm->endpoint, &r->conv, PX_BTL_NO_ORDER, sizeof(px_rt_frag_hdr_t), &size,
            PX_BTL_DES_FLAGS_BTL_OWNERSHIP | PX_BTL_DES_SEND_ALWAYS_CALLBACK);
        if (NULL == des || 0 == size) {
            if (des)
                m->btl_free(m, des);
            px_pml_pending_add(r, PX_PML_PEND_FRAGS);
            return;
        }
        px_rt_frag_hdr_t h = {r->remote, r->scheduled};
        memcpy(des->des_segments[0].seg_addr, &h, sizeof(h));
        des->des_cbfunc = send_frag_done;
        des->des_cbdata = r;
        des->des_context = (void *)(uintptr_t)size;
        r->scheduled += size;
        r->outstanding++;
        int rc = m->btl_send(m, pm->endpoint, des, PX_RT_AM_FRAG);
        if (rc >= 0)
            continue;
        r->scheduled -= size;
        r->outstanding--;
        m->btl_free(m, des);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
            px_pml_pending_add(r, PX_PML_PEND_FRAGS);
            return;
        }
        px_pml_req_fail(r, rc);
        return;
    }
    if (PX_PML_PEND_FRAGS == r->pending)
        px_pml_pending_remove(r);
}

/* AM callback: the receiver wants fragments. */
void px_pml_am_ack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_ctl_hdr_t h;
    px_request_t *r = ctl_request(d, &h, PX_PML_REQ_SEND, PX_RT_AM_ACK, "ACK");
    if (NULL == r)
        return;
    /* A receiver that took the bytes the RNDV carried says where the
     * fragments start (px_rt_ack_data_t); an older one sends no tail. */
    size_t from = 0;
    if (seg_data_len(d->des_segments, d->des_segment_count, 0) >=
        sizeof(h) + sizeof(px_rt_ack_data_t)) {
        px_rt_ack_data_t a;
        seg_copy(&a, sizeof(a), d->des_segments, d->des_segment_count, sizeof(h));
        if (a.offset >= r->total) { /* an RNDV carries less than the message */
            px_show_error("runtime: an ACK from rank %d asks for fragments from byte %" PRIu64
                          " of a %zu-byte message; the send fails",
                          d->src_rank, a.offset, r->total);
            px_pml_req_release_regs(r);
            px_pml_req_fail(r, PX_ERR_COMM);
            return;
        }
        from = (size_t)a.offset;
    }
    px_pml_req_release_regs(r);
    r->remote = h.rreq;
    r->scheduled = from;
    r->done = from;
    r->outstanding = 0;
    px_btl_convertor_init_contig(&r->conv, r->buf, r->total);
    px_pml_send_schedule_frags(r);
}

/* AM callback: the receiver has read the data. */
void px_pml_am_fin(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_ctl_hdr_t h;
    px_request_t *r = ctl_request(d, &h, PX_PML_REQ_SEND, PX_RT_AM_FIN, "FIN");
    if (NULL == r)
        return;
    px_pml_req_release_regs(r);
    px_pml_active_remove(r);
    if (PX_UNLIKELY(r->released)) { /* the receiver has let go of the buffer */
        px_pml_req_unhold(r);
        return;
    }
    req_complete(r);
}

/* AM callback (sender): where to put the data. */
void px_pml_am_putack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_putack_hdr_t h;
    size_t total = seg_data_len(d->des_segments, d->des_segment_count, 0);
    if (total < sizeof(h))
        return;
    seg_copy(&h, sizeof(h), d->des_segments, d->des_segment_count, 0);
    px_request_t *r = px_pml_active_find(h.sreq, PX_PML_REQ_SEND);
    if (r && !px_pml_req_of_rank(r, px_rt_am_source(d)))
        r = NULL;
    if (NULL == r && px_rt_rank_failed(px_rt_am_source(d)))
        return;
    if (NULL == r || PX_PML_RDMA_PUT != r->rdma_mode || r->nrails < 1 ||
        h.hsize > PX_RT_MAX_HANDLE || total < sizeof(h) + h.hsize || h.len > r->total) {
        px_show_error("runtime: a malformed PUT-ACK or one for an unknown send; dropped");
        return;
    }
    px_rt_rail_t *rl = &r->rails[0];
    r->remote = h.rreq;
    r->raddr = h.addr;
    r->rlen = h.len;
    rl->hsize = h.hsize;
    if (h.hsize)
        seg_copy(rl->rhandle, h.hsize, d->des_segments, d->des_segment_count, sizeof(h));
    r->scheduled = 0;
    r->done = 0;
    r->outstanding = 0;
    r->finishing = false;
    if (!rails_split(r, 0, r->rlen)) {
        rndv_use_frags(r); /* cannot register: fragments instead */
        return;
    }
    px_pml_rdma_schedule(r);
}

/* Offer rails of direction `mode` for the whole buffer: get, every
 * GET-capable module (up to PX_RT_MAX_RAILS), the buffer registered with
 * each (a module that cannot register it is left out); put, the first
 * PUT-capable module, registered when the receiver answers. */
static int send_offer_rails(px_request_t *r, px_rt_peer_t *peer, int mode)
{
    r->nrails = 0;
    for (int i = 0; i < peer->btl->num_rdma && r->nrails < rails_max(mode); ++i) {
        px_btl_base_peer_module_t *rp = &peer->btl->rdma[i];
        px_btl_module_t *rm = rp->module;
        if (!rdma_can(rm, mode))
            continue;
        px_btl_registration_handle_t *reg = NULL;
        if (PX_PML_RDMA_GET == mode && rm->btl_register_mem) {
            reg = rm->btl_register_mem(rm, rp->endpoint, r->buf, r->len, 0);
            if (NULL == reg)
                continue;
        }
        px_rt_rail_t *rl = &r->rails[r->nrails++];
        rl->pm = rp;
        rl->reg = reg;
        rl->hsize = reg ? (uint32_t)rm->btl_registration_handle_size : 0;
    }
    return r->nrails;
}

/* How a rendezvous moves its data: by get over every RDMA module of the peer
 * that offers GET (the receiver splits the read by bandwidth weight), else by
 * put over the heaviest module offering PUT, else by pipelined fragments. */
static void rndv_choose_rdma(px_request_t *r, px_rt_peer_t *peer)
{
    r->rdma_mode = PX_PML_RDMA_NONE;
    r->nrails = 0;
    if (PX_RT_RNDV_PIPELINE == px_rt.rndv_protocol || 0 == peer->btl->num_rdma)
        return;
    if (px_rt.rndv_protocol != PX_RT_RNDV_PUT && send_offer_rails(r, peer, PX_PML_RDMA_GET))
        r->rdma_mode = PX_PML_RDMA_GET;
    else if (px_rt.rndv_protocol != PX_RT_RNDV_GET && send_offer_rails(r, peer, PX_PML_RDMA_PUT))
        r->rdma_mode = PX_PML_RDMA_PUT;
}

/* How many of the message's first bytes the RNDV carries over module `m`
 * when its header and rail entries take `head` bytes (0: none): per
 * runtime_rndv_first_frag (auto: over a transport whose RDMA needs
 * registered memory and is not single-copy, i.e. a network's), never with
 * put (the sender writes the whole message), at most what the module's eager
 * limit leaves. */
static size_t rndv_first_frag(const px_request_t *r, const px_btl_module_t *m, size_t head)
{
    if (PX_RT_FIRST_FRAG_OFF == px_rt.rndv_first_frag || PX_PML_RDMA_PUT == r->rdma_mode)
        return 0;
    if (PX_RT_FIRST_FRAG_AUTO == px_rt.rndv_first_frag &&
        (!(m->btl_flags & PX_BTL_FLAGS_NEEDS_REG) || (m->btl_flags & PX_BTL_FLAGS_SINGLE_COPY)))
        return 0;
    head += sizeof(px_rt_rndv_data_t);
    if (m->btl_eager_limit <= head)
        return 0;
    size_t n = m->btl_eager_limit - head;
    return n < r->len ? n : r->len - 1; /* at least a byte moves after it */
}

/* Start a rendezvous: the RNDV header with the RDMA rails offered, and the
 * message's first bytes where rndv_first_frag says so. */
void px_pml_send_start_rndv(px_request_t *r)
{
    r->rndv = true;
    px_rt_peer_t *peer = px_rt_peer_find(r->peer);
    if (PX_UNLIKELY(NULL == peer)) {
        px_pml_req_fail(r, PX_ERR_PEER_FAILED);
        return;
    }
    px_btl_base_peer_module_t *pm = px_btl_base_peer_eager(peer->btl);
    px_btl_module_t *m = pm->module;
    px_rt_match_hdr_t mh = {peer->wire_src, r->tag, r->seq, 0};
    int rc;
    /* Rendezvous: the header, then the RDMA rails offered. */
    struct {
        px_rt_rndv_hdr_t h;
        unsigned char blob[PX_RT_MAX_BLOB];
    } msg;
    memset(&msg.h, 0, sizeof(msg.h));
    msg.h.m = mh;
    msg.h.len = r->len;
    msg.h.sreq = (uint64_t)(uintptr_t)r;
    msg.h.addr = (uint64_t)(uintptr_t)r->buf;
    if (!r->rndv_prepared) {
        rndv_choose_rdma(r, peer);
        r->rndv_prepared = true;
    }
    size_t pos = 0;
    if (r->rdma_mode != PX_PML_RDMA_NONE) {
        msg.h.m.flags |=
            PX_PML_RDMA_GET == r->rdma_mode ? PX_RT_RNDV_FLAG_GET : PX_RT_RNDV_FLAG_PUT;
        for (int k = 0; k < r->nrails; ++k) {
            px_rt_rail_wire_t w = {px_pml_rdma_id(r->rails[k].pm->module), r->rails[k].hsize};
            memcpy(msg.blob + pos, &w, sizeof(w));
            pos += sizeof(w);
            if (w.hsize)
                memcpy(msg.blob + pos, r->rails[k].reg, w.hsize);
            pos += w.hsize;
        }
        msg.h.nrails = (uint32_t)r->nrails;
    }
    msg.h.blob = (uint32_t)pos;
    size_t bytes = sizeof(msg.h) + msg.h.blob;
    const size_t carry = rndv_first_frag(r, m, bytes);
    if (carry) {
        msg.h.m.flags |= PX_RT_RNDV_FLAG_DATA;
        PX_OUTPUT_VERBOSE(20, px_rt.output,
                          "a rendezvous to rank %d carries its first %zu of %zu bytes", r->peer,
                          carry, r->len);
    }
    const size_t head = bytes;
    if (carry)
        bytes += sizeof(px_rt_rndv_data_t) + carry;
    px_btl_descriptor_t *des =
        m->btl_alloc(m, pm->endpoint, PX_BTL_NO_ORDER, bytes, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des) {
        px_pml_pending_add(r, PX_PML_PEND_START);
        return;
    }
    char *out = des->des_segments[0].seg_addr;
    memcpy(out, &msg, head);
    if (carry) {
        px_rt_rndv_data_t dh = {carry};
        memcpy(out + head, &dh, sizeof(dh));
        memcpy(out + head + sizeof(dh), r->buf, carry);
    }
    des->des_segments[0].seg_len = bytes;
    des->des_cbfunc = NULL;
    px_pml_pending_remove(r);
    r->total = r->len;
    r->done = 0;
    px_pml_active_add(r); /* before the send: ACK or FIN may come back inside it */
    rc = m->btl_send(m, pm->endpoint, des, PX_RT_AM_RNDV);
    if (rc >= 0)
        return;
    px_pml_active_remove(r);
    m->btl_free(m, des);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_pml_pending_add(r, PX_PML_PEND_START);
        return;
    }
    px_pml_req_fail(r, rc);
}
