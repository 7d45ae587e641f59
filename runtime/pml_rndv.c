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
 *    btl_put and sends PUT-FIN.
 *  - Pipelined fragments (no RDMA, runtime_rndv_protocol pipeline, or RDMA
 *    refused before any byte moved): the receiver answers ACK; the sender
 *    sends fragments of btl_max_send_size over the peer's send modules.
 * A truncating receive reads (or keeps) only what fits and still completes
 * the protocol, so the sender finishes and no other message is lost.
 */
#include <stdio.h>
#include "runtime/pml.h"
#include "core/util/error.h"
#include "core/util/output.h"

void px_rt_recv_send_fin(px_request_t *r)
{
    int rc = px_rt_send_ctl(r->status.source, PX_RT_AM_FIN, r->remote, 0);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_rt_pending_add(r, PX_RT_PEND_FIN);
        return;
    }
    px_rt_pending_remove(r);
    px_rt_active_remove(r);
    if (rc != PX_SUCCESS && PX_SUCCESS == r->status.error)
        r->status.error = rc;
    req_complete(r);
}

static void recv_get_check(px_request_t *r)
{
    size_t want = r->status.length;
    if (r->finishing || r->complete || r->outstanding || r->done < want || r->scheduled < want)
        return;
    r->finishing = true;
    px_rt_req_release_regs(r);
    px_rt_recv_send_fin(r);
}

static void recv_get_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                          px_btl_registration_handle_t *lh, void *context, void *cbdata, int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    px_request_t *r = context;
    r->outstanding--;
    if (PX_UNLIKELY(r->released)) { /* its wait gave up: only the hold goes */
        px_rt_req_unhold(r);
        return;
    }
    if (status != PX_SUCCESS &&
        (PX_SUCCESS == r->status.error || PX_ERR_TRUNCATE == r->status.error))
        r->status.error = PX_ERR_COMM;
    r->done += (size_t)(uintptr_t)cbdata;
    recv_get_check(r);
}

void px_rt_recv_send_ack(px_request_t *r)
{
    int rc = px_rt_send_ctl(r->status.source, PX_RT_AM_ACK, r->remote, (uint64_t)(uintptr_t)r);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_rt_pending_add(r, PX_RT_PEND_ACK);
        return;
    }
    px_rt_pending_remove(r);
    if (rc != PX_SUCCESS)
        px_rt_req_fail(r, rc);
}

void px_rt_recv_schedule_gets(px_request_t *r)
{
    size_t want = r->status.length;
    for (int k = 0; k < r->nrails; ++k) {
        px_rt_rail_t *rl = &r->rails[k];
        px_btl_module_t *m = rl->pm->module;
        while (rl->cursor < rl->end) {
            size_t chunk = rl->end - rl->cursor;
            if (m->btl_get_limit && chunk > m->btl_get_limit)
                chunk = m->btl_get_limit;
            size_t off = rl->cursor;
            rl->cursor += chunk;
            r->scheduled += chunk;
            r->outstanding++;
            int rc = m->btl_get(m, rl->pm->endpoint, (char *)r->buf + off, r->raddr + off, rl->reg,
                                (px_btl_registration_handle_t *)rl->rhandle, chunk, 0,
                                PX_BTL_NO_ORDER, recv_get_done, r, (void *)(uintptr_t)chunk);
            if (PX_SUCCESS == rc)
                continue;
            rl->cursor -= chunk;
            r->scheduled -= chunk;
            r->outstanding--;
            if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
                px_rt_pending_add(r, PX_RT_PEND_GET);
                return;
            }
            if (0 == r->scheduled && 0 == r->outstanding) {
                /* RDMA refused before anything moved: fall back to fragments. */
                PX_OUTPUT_VERBOSE(10, 0, "runtime: btl %s get failed (%s); using fragments",
                                  m->btl_component->base.component_name, px_strerror(rc));
                px_rt_req_release_regs(r);
                r->rdma_mode = PX_RT_RDMA_NONE;
                r->done = 0;
                px_rt_pending_remove(r);
                px_rt_recv_send_ack(r);
                return;
            }
            /* Give up on the rest: count it as done so the FIN still goes
             * once the reads in flight finish. */
            r->status.error = PX_ERR_COMM;
            r->done += want - r->scheduled;
            r->scheduled = want;
            for (int j = 0; j < r->nrails; ++j)
                r->rails[j].cursor = r->rails[j].end;
            break;
        }
    }
    if (PX_RT_PEND_GET == r->pending)
        px_rt_pending_remove(r);
    recv_get_check(r);
}

/* Match the rails the sender offered with this process's RDMA modules for
 * the peer, split the receive by their weights, register each range.
 * Returns the number of rails (0: use fragments). */
static int recv_setup_get_rails(px_request_t *r, px_rt_peer_t *peer, const px_rt_rndv_hdr_t *h,
                                const unsigned char *blob)
{
    r->nrails = 0;
    size_t pos = 0;
    double wsum = 0;
    for (uint32_t e = 0; e < h->nrails && r->nrails < PX_RT_MAX_RAILS; ++e) {
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
            if (used || !(m->btl_flags & PX_BTL_FLAGS_GET) || NULL == m->btl_get ||
                px_rt_rdma_id(m) != w.rdma_id || hs != w.hsize)
                continue;
            px_rt_rail_t *rl = &r->rails[r->nrails++];
            rl->pm = pm;
            rl->reg = NULL;
            rl->hsize = w.hsize;
            memcpy(rl->rhandle, blob + pos, w.hsize);
            wsum += pm->weight;
            break;
        }
        pos += w.hsize;
    }
    /* Split [0, want) by weight; the last rail takes the remainder. */
    size_t want = r->status.length, start = 0;
    for (int k = 0; k < r->nrails; ++k) {
        px_rt_rail_t *rl = &r->rails[k];
        size_t n = want - start;
        if (k + 1 < r->nrails) {
            double share = wsum > 0 ? rl->pm->weight / wsum : 1.0 / r->nrails;
            n = (size_t)((double)want * share);
            if (n > want - start)
                n = want - start;
        }
        rl->cursor = start;
        rl->end = start + n;
        start += n;
        px_btl_module_t *m = rl->pm->module;
        if (n && m->btl_register_mem) {
            rl->reg = m->btl_register_mem(m, rl->pm->endpoint, (char *)r->buf + rl->cursor, n, 0);
            if (NULL == rl->reg) {
                px_rt_req_release_regs(r);
                return 0;
            }
        }
    }
    return r->nrails;
}

/* Tell the sender where to put the data (RDMA put). */
void px_rt_recv_send_putack(px_request_t *r)
{
    px_btl_module_t *m = r->rdma->module;
    struct {
        px_rt_putack_hdr_t h;
        unsigned char handle[PX_RT_MAX_HANDLE];
    } msg;
    size_t hs = r->reg ? m->btl_registration_handle_size : 0;
    msg.h =
        (px_rt_putack_hdr_t){r->remote,        (uint64_t)(uintptr_t)r, (uint64_t)(uintptr_t)r->buf,
                             r->status.length, px_rt_rdma_id(m),       (uint32_t)hs};
    if (hs)
        memcpy(msg.handle, r->reg, hs);
    int rc = px_rt_send_ctl_buf(r->status.source, PX_RT_AM_PUTACK, &msg, sizeof(msg.h) + hs);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_rt_pending_add(r, PX_RT_PEND_PUTACK);
        return;
    }
    px_rt_pending_remove(r);
    if (rc != PX_SUCCESS)
        px_rt_req_fail(r, rc);
}

/* The request a control message (ACK, FIN, PUT-FIN) names: copies its
 * header into *h and finds the request of `type` in flight by the id the
 * header carries for that side. NULL, after saying why, when the message is
 * shorter than the header or names no request in flight. */
static px_request_t *ctl_request(const px_btl_receive_descriptor_t *d, px_rt_ctl_hdr_t *h, int type,
                                 px_btl_tag_t am, const char *what)
{
    const char *side = PX_RT_REQ_SEND == type ? "send" : "receive";
    if (d->des_segments[0].seg_len < sizeof(*h)) {
        px_show_error("runtime: a %s from rank %d has %zu bytes, less than its %zu-byte header; "
                      "dropped",
                      what, d->src_rank, d->des_segments[0].seg_len, sizeof(*h));
        return NULL;
    }
    memcpy(h, d->des_segments[0].seg_addr, sizeof(*h));
    px_request_t *r = px_rt_active_find(PX_RT_REQ_SEND == type ? h->sreq : h->rreq, type);
    if (r && !px_rt_req_of_rank(r, d->src_rank))
        r = NULL; /* an id of ours, but not for that rank */
    if (r && r->released && !(PX_RT_REQ_SEND == type && PX_RT_AM_FIN == am)) {
        px_rt_active_remove(r); /* its wait gave up: nothing more to do for it */
        px_rt_req_unhold(r);
        return NULL;
    }
    if (NULL == r && !px_rt_rank_failed(d->src_rank))
        px_show_error("runtime: a %s from rank %d arrived for an unknown %s; dropped", what,
                      d->src_rank, side);
    return r;
}

/* AM callback (receiver): the sender has put everything. */
void px_rt_am_putfin(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_ctl_hdr_t h;
    px_request_t *r = ctl_request(d, &h, PX_RT_REQ_RECV, PX_RT_AM_PUTFIN, "PUT-FIN");
    if (NULL == r)
        return;
    px_rt_req_release_regs(r);
    if (h.sreq != 0 && PX_SUCCESS == r->status.error)
        r->status.error = PX_ERR_COMM; /* the sender's puts failed */
    px_rt_active_remove(r);
    req_complete(r);
}

/* A rendezvous matched by receive `r`. */
void px_rt_recv_start_rndv(px_request_t *r, const px_rt_rndv_hdr_t *h, const unsigned char *blob)
{
    r->status.source = h->m.src;
    r->status.tag = h->m.tag;
    r->total = h->len;
    r->remote = h->sreq;
    r->done = 0;
    r->scheduled = 0;
    r->outstanding = 0;
    if (h->len > r->len) {
        r->status.length = r->len;
        r->status.error = PX_ERR_TRUNCATE;
    } else {
        r->status.length = h->len;
    }
    px_rt_active_add(r);
    px_rt_peer_t *peer = &px_rt.peers[h->m.src];
    const bool rdma_ok = h->nrails && px_rt.rndv_protocol != PX_RT_RNDV_PIPELINE && peer->btl;
    if (rdma_ok && (h->m.flags & PX_RT_RNDV_FLAG_GET)) {
        if (recv_setup_get_rails(r, peer, h, blob) > 0) {
            r->rdma_mode = PX_RT_RDMA_GET;
            r->raddr = h->addr;
            px_rt_recv_schedule_gets(r);
            return;
        }
    } else if (rdma_ok && (h->m.flags & PX_RT_RNDV_FLAG_PUT) &&
               h->blob >= sizeof(px_rt_rail_wire_t)) {
        px_rt_rail_wire_t w;
        memcpy(&w, blob, sizeof(w));
        for (int i = 0; i < peer->btl->num_rdma; ++i) {
            px_btl_base_peer_module_t *pm = &peer->btl->rdma[i];
            px_btl_module_t *m = pm->module;
            if (!(m->btl_flags & PX_BTL_FLAGS_PUT) || NULL == m->btl_put ||
                px_rt_rdma_id(m) != w.rdma_id)
                continue;
            if (r->status.length && m->btl_register_mem) {
                r->reg = m->btl_register_mem(m, pm->endpoint, r->buf, r->status.length, 0);
                if (NULL == r->reg)
                    break; /* cannot register: fragments instead */
            }
            r->rdma = pm;
            r->rdma_mode = PX_RT_RDMA_PUT;
            px_rt_recv_send_putack(r);
            return;
        }
    }
    px_rt_req_release_regs(r);
    r->rdma = NULL;
    r->rdma_mode = PX_RT_RDMA_NONE;
    px_rt_recv_send_ack(r);
}

/* AM callback: a pipelined fragment. */
void px_rt_am_frag(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_frag_hdr_t h;
    if (d->des_segments[0].seg_len < sizeof(h))
        return;
    memcpy(&h, d->des_segments[0].seg_addr, sizeof(h));
    px_request_t *r = px_rt_active_find(h.rreq, PX_RT_REQ_RECV);
    if (r && !px_rt_req_of_rank(r, d->src_rank))
        r = NULL;
    if (NULL == r) {
        if (!px_rt_rank_failed(d->src_rank))
            px_show_error("runtime: a fragment from rank %d arrived for an unknown receive; "
                          "dropped",
                          d->src_rank);
        return;
    }
    size_t len = seg_data_len(d->des_segments, d->des_segment_count, sizeof(h));
    if (h.offset < r->len) {
        size_t n = r->len - h.offset;
        if (n > len)
            n = len;
        seg_copy((char *)r->buf + h.offset, n, d->des_segments, d->des_segment_count, sizeof(h));
    }
    r->done += len;
    if (r->done >= r->total) {
        px_rt_req_release_regs(r);
        px_rt_active_remove(r);
        req_complete(r);
    }
}

static void send_frag_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                           int status)
{
    (void)btl;
    (void)ep;
    px_request_t *r = des->des_cbdata;
    r->outstanding--;
    if (PX_UNLIKELY(r->released)) {
        px_rt_req_unhold(r);
        return;
    }
    if (status != PX_SUCCESS && PX_SUCCESS == r->status.error)
        r->status.error = status;
    r->done += (size_t)(uintptr_t)des->des_context;
    if (r->done >= r->total && 0 == r->outstanding && r->on_active) {
        px_rt_active_remove(r);
        req_complete(r);
    }
}

void px_rt_send_schedule_frags(px_request_t *r)
{
    px_rt_peer_t *peer = &px_rt.peers[r->peer];
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
            px_rt_pending_add(r, PX_RT_PEND_FRAGS);
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
            px_rt_pending_add(r, PX_RT_PEND_FRAGS);
            return;
        }
        px_rt_req_fail(r, rc);
        return;
    }
    if (PX_RT_PEND_FRAGS == r->pending)
        px_rt_pending_remove(r);
}

/* AM callback: the receiver wants fragments. */
void px_rt_am_ack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_ctl_hdr_t h;
    px_request_t *r = ctl_request(d, &h, PX_RT_REQ_SEND, PX_RT_AM_ACK, "ACK");
    if (NULL == r)
        return;
    px_rt_req_release_regs(r);
    r->remote = h.rreq;
    r->scheduled = 0;
    r->done = 0;
    r->outstanding = 0;
    px_btl_convertor_init_contig(&r->conv, r->buf, r->total);
    px_rt_send_schedule_frags(r);
}

/* AM callback: the receiver has read the data. */
void px_rt_am_fin(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_ctl_hdr_t h;
    px_request_t *r = ctl_request(d, &h, PX_RT_REQ_SEND, PX_RT_AM_FIN, "FIN");
    if (NULL == r)
        return;
    px_rt_req_release_regs(r);
    px_rt_active_remove(r);
    if (PX_UNLIKELY(r->released)) { /* the receiver has let go of the buffer */
        px_rt_req_unhold(r);
        return;
    }
    req_complete(r);
}

void px_rt_send_put_finish(px_request_t *r)
{
    uint64_t failed = PX_SUCCESS != r->status.error ? 1 : 0;
    int rc = px_rt_send_ctl(r->peer, PX_RT_AM_PUTFIN, failed, r->remote);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_rt_pending_add(r, PX_RT_PEND_PUTFIN);
        return;
    }
    px_rt_pending_remove(r);
    px_rt_active_remove(r);
    if (rc != PX_SUCCESS && PX_SUCCESS == r->status.error)
        r->status.error = rc;
    req_complete(r);
}

static void send_put_check(px_request_t *r)
{
    if (r->finishing || r->complete || r->outstanding || r->done < r->rlen ||
        r->scheduled < r->rlen)
        return;
    r->finishing = true;
    px_rt_req_release_regs(r);
    px_rt_send_put_finish(r);
}

static void send_put_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                          px_btl_registration_handle_t *lh, void *context, void *cbdata, int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    px_request_t *r = context;
    r->outstanding--;
    if (PX_UNLIKELY(r->released)) {
        px_rt_req_unhold(r);
        return;
    }
    if (status != PX_SUCCESS && PX_SUCCESS == r->status.error)
        r->status.error = PX_ERR_COMM;
    r->done += (size_t)(uintptr_t)cbdata;
    send_put_check(r);
}

void px_rt_send_schedule_puts(px_request_t *r)
{
    px_btl_module_t *m = r->rdma->module;
    while (r->scheduled < r->rlen) {
        size_t chunk = r->rlen - r->scheduled;
        if (m->btl_put_limit && chunk > m->btl_put_limit)
            chunk = m->btl_put_limit;
        size_t off = r->scheduled;
        r->scheduled += chunk;
        r->outstanding++;
        int rc = m->btl_put(m, r->rdma->endpoint, (char *)r->buf + off, r->raddr + off, r->reg,
                            (px_btl_registration_handle_t *)r->rhandle, chunk, 0, PX_BTL_NO_ORDER,
                            send_put_done, r, (void *)(uintptr_t)chunk);
        if (PX_SUCCESS == rc)
            continue;
        r->scheduled -= chunk;
        r->outstanding--;
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
            px_rt_pending_add(r, PX_RT_PEND_PUT);
            return;
        }
        if (0 == r->scheduled && 0 == r->outstanding) {
            /* RDMA refused before anything moved: send fragments instead;
             * the receiver takes them as for an ACK. */
            if (r->reg && m->btl_deregister_mem)
                m->btl_deregister_mem(m, r->reg);
            r->reg = NULL;
            r->rdma_mode = PX_RT_RDMA_NONE;
            r->done = 0;
            px_rt_pending_remove(r);
            px_btl_convertor_init_contig(&r->conv, r->buf, r->total);
            px_rt_send_schedule_frags(r);
            return;
        }
        r->status.error = PX_ERR_COMM;
        r->scheduled = r->rlen;
        break;
    }
    if (PX_RT_PEND_PUT == r->pending)
        px_rt_pending_remove(r);
    send_put_check(r);
}

/* AM callback (sender): where to put the data. */
void px_rt_am_putack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_putack_hdr_t h;
    size_t total = seg_data_len(d->des_segments, d->des_segment_count, 0);
    if (total < sizeof(h))
        return;
    seg_copy(&h, sizeof(h), d->des_segments, d->des_segment_count, 0);
    px_request_t *r = px_rt_active_find(h.sreq, PX_RT_REQ_SEND);
    if (r && !px_rt_req_of_rank(r, d->src_rank))
        r = NULL;
    if (NULL == r && px_rt_rank_failed(d->src_rank))
        return;
    if (NULL == r || PX_RT_RDMA_PUT != r->rdma_mode || h.hsize > PX_RT_MAX_HANDLE ||
        total < sizeof(h) + h.hsize || h.len > r->total) {
        px_show_error("runtime: a malformed PUT-ACK or one for an unknown send; dropped");
        return;
    }
    px_btl_module_t *m = r->rdma->module;
    r->remote = h.rreq;
    r->raddr = h.addr;
    r->rlen = h.len;
    r->hsize = h.hsize;
    if (h.hsize)
        seg_copy(r->rhandle, h.hsize, d->des_segments, d->des_segment_count, sizeof(h));
    r->scheduled = 0;
    r->done = 0;
    r->outstanding = 0;
    r->finishing = false;
    if (r->rlen && m->btl_register_mem) {
        r->reg = m->btl_register_mem(m, r->rdma->endpoint, r->buf, r->rlen, 0);
        if (NULL == r->reg) { /* fragments instead */
            r->rdma_mode = PX_RT_RDMA_NONE;
            px_btl_convertor_init_contig(&r->conv, r->buf, r->total);
            px_rt_send_schedule_frags(r);
            return;
        }
    }
    px_rt_send_schedule_puts(r);
}

/* How a rendezvous moves its data: by get over every RDMA module of the peer
 * that offers GET (up to PX_RT_MAX_RAILS, the sender's buffer registered with
 * each; the receiver splits the read by bandwidth weight), else by put over
 * the heaviest module offering PUT, else by pipelined fragments. */
static void rndv_choose_rdma(px_request_t *r, px_rt_peer_t *peer)
{
    r->rdma_mode = PX_RT_RDMA_NONE;
    r->rdma = NULL;
    r->nrails = 0;
    if (PX_RT_RNDV_PIPELINE == px_rt.rndv_protocol)
        return;
    if (px_rt.rndv_protocol != PX_RT_RNDV_PUT) {
        for (int i = 0; i < peer->btl->num_rdma && r->nrails < PX_RT_MAX_RAILS; ++i) {
            px_btl_base_peer_module_t *rp = &peer->btl->rdma[i];
            px_btl_module_t *rm = rp->module;
            if (!(rm->btl_flags & PX_BTL_FLAGS_GET) || NULL == rm->btl_get ||
                rm->btl_registration_handle_size > PX_RT_MAX_HANDLE)
                continue;
            px_btl_registration_handle_t *reg = NULL;
            if (rm->btl_register_mem) {
                reg = rm->btl_register_mem(rm, rp->endpoint, r->buf, r->len, 0);
                if (NULL == reg)
                    continue;
            }
            px_rt_rail_t *rl = &r->rails[r->nrails++];
            rl->pm = rp;
            rl->reg = reg;
            rl->hsize = reg ? (uint32_t)rm->btl_registration_handle_size : 0;
        }
        if (r->nrails) {
            r->rdma_mode = PX_RT_RDMA_GET;
            return;
        }
    }
    if (px_rt.rndv_protocol == PX_RT_RNDV_GET)
        return;
    for (int i = 0; i < peer->btl->num_rdma; ++i) {
        px_btl_module_t *rm = peer->btl->rdma[i].module;
        if ((rm->btl_flags & PX_BTL_FLAGS_PUT) && rm->btl_put &&
            rm->btl_registration_handle_size <= PX_RT_MAX_HANDLE) {
            r->rdma = &peer->btl->rdma[i]; /* registered when the receiver answers */
            r->rdma_mode = PX_RT_RDMA_PUT;
            return;
        }
    }
}

/* Start a rendezvous: the RNDV header with the RDMA rails offered. */
void px_rt_send_start_rndv(px_request_t *r)
{
    px_rt_peer_t *peer = &px_rt.peers[r->peer];
    px_btl_base_peer_module_t *pm = px_btl_base_peer_eager(peer->btl);
    px_btl_module_t *m = pm->module;
    px_rt_match_hdr_t mh = {px_rt.rank, r->tag, r->seq, 0};
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
    if (PX_RT_RDMA_GET == r->rdma_mode) {
        msg.h.m.flags |= PX_RT_RNDV_FLAG_GET;
        for (int k = 0; k < r->nrails; ++k) {
            px_rt_rail_wire_t w = {px_rt_rdma_id(r->rails[k].pm->module), r->rails[k].hsize};
            memcpy(msg.blob + pos, &w, sizeof(w));
            pos += sizeof(w);
            if (w.hsize)
                memcpy(msg.blob + pos, r->rails[k].reg, w.hsize);
            pos += w.hsize;
        }
        msg.h.nrails = (uint32_t)r->nrails;
    } else if (PX_RT_RDMA_PUT == r->rdma_mode) {
        msg.h.m.flags |= PX_RT_RNDV_FLAG_PUT;
        px_rt_rail_wire_t w = {px_rt_rdma_id(r->rdma->module), 0};
        memcpy(msg.blob, &w, sizeof(w));
        pos = sizeof(w);
        msg.h.nrails = 1;
    }
    msg.h.blob = (uint32_t)pos;
    size_t bytes = sizeof(msg.h) + msg.h.blob;
    px_btl_descriptor_t *des =
        m->btl_alloc(m, pm->endpoint, PX_BTL_NO_ORDER, bytes, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des) {
        px_rt_pending_add(r, PX_RT_PEND_START);
        return;
    }
    memcpy(des->des_segments[0].seg_addr, &msg, bytes);
    des->des_segments[0].seg_len = bytes;
    des->des_cbfunc = NULL;
    px_rt_pending_remove(r);
    r->total = r->len;
    r->done = 0;
    px_rt_active_add(r); /* before the send: ACK or FIN may come back inside it */
    rc = m->btl_send(m, pm->endpoint, des, PX_RT_AM_RNDV);
    if (rc >= 0)
        return;
    px_rt_active_remove(r);
    m->btl_free(m, des);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_rt_pending_add(r, PX_RT_PEND_START);
        return;
    }
    px_rt_req_fail(r, rc);
}
