/*
 * verbs_module.c: btl/verbs module: eager sends with credits (inline sends
 * for sendi up to the device's max inline), receives, credit updates, progress, and work-completion
 * errors, which fail the peer through the runtime's error callback. Registration and RDMA are in
 * verbs_rdma.c, QP connection in verbs_peers.c, setup, teardown and the event mode's waiter in
 * verbs_setup.c, dynamic peers in verbs_dyn.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "components/btl/verbs/verbs.h"
#include <fcntl.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

PX_CLASS_INSTANCE(px_btl_verbs_frag_t, px_btl_descriptor_t, NULL, NULL);

#define PX_BTL_VERBS_HDR sizeof(px_btl_verbs_hdr_t)

static inline uint32_t px_btl_verbs_lkey(const px_btl_verbs_frag_t *f)
{
    return ((struct ibv_mr *)f->super.base.super.registration)->lkey;
}

/* ---- errors ---- */

void px_btl_verbs_report(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep, int error,
                         const char *what, const char *detail)
{
    char text[700], who[64];
    if (ep)
        snprintf(text, sizeof(text), "btl/verbs (%s:%u): %s %s%s%s failed: %s", m->port.dev_name,
                 m->port.port, what, px_btl_verbs_who(ep, who, sizeof(who)),
                 ep->hostname ? " on host " : "", ep->hostname ? ep->hostname : "", detail);
    else
        snprintf(text, sizeof(text), "btl/verbs (%s:%u): %s: %s", m->port.dev_name, m->port.port,
                 what, detail);
    PX_OUTPUT_VERBOSE(1, px_btl_verbs_output, "%s", text);
    if (m->draining || (ep && ep->removing))
        return; /* tearing down: a peer that is already gone is no news */
    if (m->error_cb)
        m->error_cb(&m->super, ep, ep ? ep->rank : -1, error, text);
    else
        px_show_error("%s", text);
}

/* ---- receives ---- */

static int px_btl_verbs_post_recv(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep,
                                  px_btl_verbs_frag_t *f)
{
    struct ibv_sge sge = {.addr = (uintptr_t)f->super.base.super.payload,
                          .length = (uint32_t)m->frag_size,
                          .lkey = px_btl_verbs_lkey(f)};
    struct ibv_recv_wr wr = {.wr_id = (uintptr_t)&f->ctx, .sg_list = &sge, .num_sge = 1}, *bad;
    f->ctx.type = PX_BTL_VERBS_OP_RECV;
    f->ctx.endpoint = ep;
    int rc = ibv_post_recv(ep->qp, &wr, &bad);
    if (0 != rc) {
        char detail[200];
        snprintf(detail, sizeof(detail), "ibv_post_recv: %s", strerror(rc));
        px_btl_verbs_report(m, ep, PX_ERR_COMM, "posting a receive for", detail);
        return PX_ERR_COMM;
    }
    ep->posted_recvs++;
    return PX_SUCCESS;
}

int px_btl_verbs_post_recvs(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep)
{
    int n = m->rq_size;
    ep->recvs = calloc((size_t)n, sizeof(*ep->recvs));
    if (NULL == ep->recvs)
        return PX_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < n; ++i) {
        px_btl_verbs_frag_t *f = (px_btl_verbs_frag_t *)px_free_list_get(&m->recv_frags);
        if (NULL == f)
            return PX_ERR_OUT_OF_RESOURCE;
        ep->recvs[ep->num_recvs++] = f;
        int rc = px_btl_verbs_post_recv(m, ep, f);
        if (PX_SUCCESS != rc)
            return rc;
    }
    return PX_SUCCESS;
}

/* ---- sends ---- */

static px_btl_verbs_frag_t *px_btl_verbs_frag_get(px_btl_verbs_module_t *m)
{
    px_btl_verbs_frag_t *f =
        (px_btl_verbs_frag_t *)px_btl_base_frag_get(&m->send_frags, PX_BTL_VERBS_HDR);
    if (PX_LIKELY(NULL != f)) {
        f->hdr_flags = 0;
        f->ctx.type = PX_BTL_VERBS_OP_SEND;
    }
    return f;
}

px_btl_descriptor_t *px_btl_verbs_alloc(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                        uint8_t order, size_t size, uint32_t flags)
{
    (void)endpoint;
    (void)order;
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    px_btl_base_frag_t *f =
        px_btl_base_frag_alloc(btl, &m->send_frags, PX_BTL_VERBS_HDR, size, flags);
    return f ? &f->base : NULL;
}

int px_btl_verbs_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    px_free_list_return(&((px_btl_verbs_module_t *)btl)->send_frags, &des->super);
    return PX_SUCCESS;
}

px_btl_descriptor_t *px_btl_verbs_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                              px_btl_convertor_t *conv, uint8_t order,
                                              size_t reserve, size_t *size, uint32_t flags)
{
    (void)endpoint;
    (void)order;
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    px_btl_base_frag_t *f = px_btl_base_frag_prepare_src(btl, &m->send_frags, PX_BTL_VERBS_HDR,
                                                         conv, reserve, size, flags);
    return f ? &f->base : NULL;
}

static void px_btl_verbs_send_done(px_btl_verbs_module_t *m, px_btl_verbs_frag_t *f, int status)
{
    px_btl_base_frag_done(&m->super, &m->send_frags, f->ctx.endpoint, &f->super, status);
}

/* Fill the header's credit fields with what we owe the peer. */
static inline void px_btl_verbs_give_credits(px_btl_endpoint_t *ep, px_btl_verbs_hdr_t *hdr)
{
    int c = ep->return_credits > 0xffff ? 0xffff : ep->return_credits;
    int k = ep->return_ctl > 0xff ? 0xff : ep->return_ctl;
    hdr->credits = (uint16_t)c;
    hdr->ctl_credits = (uint8_t)k;
    ep->return_credits -= c;
    ep->return_ctl -= k;
}

/* Can `f` go now: SQ room and a credit of its kind? */
static inline bool px_btl_verbs_can_post(const px_btl_endpoint_t *ep, const px_btl_verbs_frag_t *f)
{
    if (ep->sq_free <= 0)
        return false;
    return (f->hdr_flags & PX_BTL_VERBS_HDR_CREDIT) ? ep->ctl_credits > 0 : ep->credits > 0;
}

static int px_btl_verbs_post_send(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep,
                                  px_btl_verbs_frag_t *f)
{
    px_btl_verbs_hdr_t *hdr = f->super.base.super.payload;
    hdr->flags = f->hdr_flags;
    px_btl_verbs_give_credits(ep, hdr);
    struct ibv_sge sge = {.addr = (uintptr_t)f->super.base.super.payload,
                          .length = (uint32_t)f->super.size,
                          .lkey = px_btl_verbs_lkey(f)};
    struct ibv_send_wr wr = {.wr_id = (uintptr_t)&f->ctx,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    if ((int)f->super.size <= m->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    int rc = ibv_post_send(ep->qp, &wr, &bad);
    if (PX_UNLIKELY(0 != rc)) {
        /* give the credits back to what we owe */
        ep->return_credits += hdr->credits;
        ep->return_ctl += hdr->ctl_credits;
        return rc;
    }
    if (f->hdr_flags & PX_BTL_VERBS_HDR_CREDIT)
        ep->ctl_credits--;
    else
        ep->credits--;
    ep->sq_free--;
    ep->outstanding++;
    m->outstanding++;
    return 0;
}

static void px_btl_verbs_queue(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep,
                               px_btl_verbs_frag_t *f)
{
    px_btl_base_pending_push(&ep->pending, &f->super);
    if (!ep->blocked) {
        ep->blocked = true;
        ep->next_blocked = m->blocked;
        m->blocked = ep;
    }
}

/* Post queued sends of `ep` while credits and SQ room last; returns the
 * number posted. */
static int px_btl_verbs_drain_pending(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep)
{
    int n = 0;
    while (!px_btl_base_pending_empty(&ep->pending) && !ep->failed &&
           px_btl_verbs_can_post(ep, (px_btl_verbs_frag_t *)ep->pending.head)) {
        px_btl_verbs_frag_t *f = (px_btl_verbs_frag_t *)px_btl_base_pending_pop(&ep->pending);
        int rc = px_btl_verbs_post_send(m, ep, f);
        ++n;
        if (0 != rc) {
            char detail[200];
            snprintf(detail, sizeof(detail), "ibv_post_send: %s", strerror(rc));
            ep->failed = true;
            px_btl_verbs_report(m, ep, PX_ERR_COMM, "send to", detail);
            px_btl_verbs_send_done(m, f, PX_ERR_COMM);
        }
    }
    if (ep->failed)
        px_btl_verbs_fail_pending(m, ep, PX_ERR_UNREACH);
    return n;
}

static int px_btl_verbs_send_frag(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep,
                                  px_btl_verbs_frag_t *f, px_btl_tag_t tag)
{
    if (PX_UNLIKELY(ep->failed || !ep->connected))
        return PX_ERR_UNREACH;
    px_btl_verbs_hdr_t *hdr = f->super.base.super.payload;
    hdr->tag = tag;
    hdr->pad = 0;
    hdr->pad2 = 0;
    f->ctx.endpoint = ep;
    f->ctx.type = PX_BTL_VERBS_OP_SEND;
    f->super.size = PX_BTL_VERBS_HDR + f->super.segment.seg_len;
    if (PX_LIKELY(NULL == ep->pending.head && px_btl_verbs_can_post(ep, f))) {
        int rc = px_btl_verbs_post_send(m, ep, f);
        if (PX_LIKELY(0 == rc))
            return 0;
        char detail[200];
        snprintf(detail, sizeof(detail), "ibv_post_send: %s", strerror(rc));
        px_btl_verbs_report(m, ep, PX_ERR_COMM, "send to", detail);
        return PX_ERR_COMM;
    }
    /* No credit or SQ room: queue behind earlier sends, keeping the order. */
    px_btl_verbs_queue(m, ep, f);
    return 0;
}

int px_btl_verbs_send(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, px_btl_descriptor_t *des,
                      px_btl_tag_t tag)
{
    px_btl_verbs_frag_t *f = (px_btl_verbs_frag_t *)des;
    f->hdr_flags = 0;
    return px_btl_verbs_send_frag((px_btl_verbs_module_t *)btl, endpoint, f, tag);
}

int px_btl_verbs_sendi(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *header,
                       size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                       uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor)
{
    (void)order;
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    if (descriptor)
        *descriptor = NULL;
    if (PX_UNLIKELY(endpoint->failed || !endpoint->connected))
        return PX_ERR_UNREACH;
    if (PX_UNLIKELY(NULL != endpoint->pending.head || endpoint->credits <= 0 ||
                    endpoint->sq_free <= 0))
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    size_t total = PX_BTL_VERBS_HDR + header_size + payload_size;
    if (total <= (size_t)m->max_inline) {
        /* Inline: the device copies the bytes at post time. */
        px_btl_verbs_hdr_t hdr = {.tag = tag};
        px_btl_verbs_give_credits(endpoint, &hdr);
        struct ibv_sge sge[3] = {
            {.addr = (uintptr_t)&hdr, .length = PX_BTL_VERBS_HDR},
            {.addr = (uintptr_t)header, .length = (uint32_t)header_size},
            {.addr = (uintptr_t)payload, .length = (uint32_t)payload_size},
        };
        int nsge = payload_size ? 3 : 2;
        char flat[4096];
        if (nsge > m->port.dattr.max_sge) { /* flatten for devices with one SGE */
            memcpy(flat, &hdr, PX_BTL_VERBS_HDR);
            memcpy(flat + PX_BTL_VERBS_HDR, header, header_size);
            if (payload_size)
                memcpy(flat + PX_BTL_VERBS_HDR + header_size, payload, payload_size);
            sge[0].addr = (uintptr_t)flat;
            sge[0].length = (uint32_t)total;
            nsge = 1;
        }
        struct ibv_send_wr wr = {.wr_id = (uintptr_t)&endpoint->inline_ctx,
                                 .sg_list = sge,
                                 .num_sge = nsge,
                                 .opcode = IBV_WR_SEND,
                                 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
                           *bad;
        int rc = ibv_post_send(endpoint->qp, &wr, &bad);
        if (PX_UNLIKELY(0 != rc)) {
            endpoint->return_credits += hdr.credits;
            endpoint->return_ctl += hdr.ctl_credits;
            char detail[200];
            snprintf(detail, sizeof(detail), "ibv_post_send (inline): %s", strerror(rc));
            px_btl_verbs_report(m, endpoint, PX_ERR_COMM, "send to", detail);
            return PX_ERR_COMM;
        }
        endpoint->credits--;
        endpoint->sq_free--;
        endpoint->outstanding++;
        m->outstanding++;
        return PX_SUCCESS;
    }
    return px_btl_base_frag_sendi(btl, &m->send_frags, PX_BTL_VERBS_HDR, endpoint, header,
                                  header_size, payload, payload_size, flags, tag);
}

void px_btl_verbs_fail_pending(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep, int status)
{
    px_btl_base_pending_fail(&m->super, &m->send_frags, ep, &ep->pending, status);
}

/* Send a credit update when half the data receives are owed to the peer
 * (it may be waiting for them) and no queued send can carry them now. The
 * update is not delivered, so it may pass the queued sends. */
static void px_btl_verbs_maybe_update(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep)
{
    if (ep->failed || !ep->connected || ep->return_credits < (px_btl_verbs_num_recvs + 1) / 2)
        return;
    if (!px_btl_base_pending_empty(&ep->pending) &&
        px_btl_verbs_can_post(ep, (px_btl_verbs_frag_t *)ep->pending.head))
        return; /* a queued send goes first and carries them */
    if (ep->sq_free <= 0 || ep->ctl_credits <= 0)
        return; /* again when a completion or the peer's control credit comes */
    px_btl_verbs_frag_t *f = px_btl_verbs_frag_get(m);
    if (NULL == f)
        return;
    f->hdr_flags = PX_BTL_VERBS_HDR_CREDIT;
    f->super.base.des_flags = PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
    f->ctx.endpoint = ep;
    f->super.size = PX_BTL_VERBS_HDR;
    px_btl_verbs_hdr_t *hdr = f->super.base.super.payload;
    memset(hdr, 0, sizeof(*hdr));
    int rc = px_btl_verbs_post_send(m, ep, f);
    if (0 != rc) {
        px_free_list_return(&m->send_frags, &f->super.base.super);
        char detail[200];
        snprintf(detail, sizeof(detail), "ibv_post_send: %s", strerror(rc));
        px_btl_verbs_report(m, ep, PX_ERR_COMM, "credit update to", detail);
    }
}

/* Retry queued sends and owed credit updates. */
static int px_btl_verbs_retry_pending(px_btl_verbs_module_t *m)
{
    int n = 0;
    px_btl_endpoint_t **link = &m->blocked;
    while (*link) {
        px_btl_endpoint_t *ep = *link;
        n += px_btl_verbs_drain_pending(m, ep);
        if (NULL == ep->pending.head) {
            *link = ep->next_blocked; /* off the list */
            ep->blocked = false;
        } else {
            link = &ep->next_blocked;
        }
    }
    return n;
}

/* ---- progress ---- */

/* A received message with a bad header (code from px_btl_verbs_hdr_decode):
 * dropped, and the peer's QP fails with an error naming it (the completion
 * handler then fails its pending sends and moves the QP to the error state). */
static PX_COLD void px_btl_verbs_bad_recv(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep, int code,
                                          const px_btl_verbs_rx_t *rx, size_t len, int room,
                                          int ctl_room)
{
    if (ep->failed)
        return;
    char why[300], detail[400];
    px_btl_verbs_hdr_why(code, rx, len, m->frag_size, room, ctl_room, why, sizeof(why));
    snprintf(detail, sizeof(detail),
             "it sent %s; the message was dropped and the peer is treated as failed", why);
    ep->failed = true;
    px_btl_verbs_report(m, ep, PX_ERR_COMM, "receiving from", detail);
}

static void px_btl_verbs_handle_recv(px_btl_verbs_module_t *m, px_btl_verbs_frag_t *f, size_t len)
{
    px_btl_endpoint_t *ep = f->ctx.endpoint;
    px_btl_verbs_rx_t rx;
    int room = ep->max_credits - ep->credits;
    int ctl_room = ep->max_ctl - ep->ctl_credits;
    int code = px_btl_verbs_hdr_decode(f->super.base.super.payload, len, m->frag_size, room,
                                       ctl_room, &rx);
    bool ctl = PX_BTL_VERBS_RX_CREDIT == code;
    if (PX_LIKELY(code >= 0)) {
        ep->credits += rx.credits;
        ep->ctl_credits += rx.ctl_credits;
        if (PX_LIKELY(!ctl)) {
            px_btl_segment_t seg = {(char *)rx.payload, rx.payload_len};
            px_btl_receive_descriptor_t rd = {
                .endpoint = ep,
                .src_rank = ep->rank,
                .des_segments = &seg,
                .des_segment_count = 1,
                .tag = rx.tag,
                .cbdata = px_btl_base_active_message_trigger[rx.tag].cbdata,
            };
            px_btl_active_message_fn fn = px_btl_base_active_message_trigger[rx.tag].cbfunc;
            if (fn)
                fn(&m->super, &rd);
        }
    } else {
        px_btl_verbs_bad_recv(m, ep, code, &rx, len, room, ctl_room);
    }
    if (ep->failed)
        return;
    /* Post it again at the next progress call (px_btl_verbs_repost). */
    f->super.next_pending = ep->repost_head ? &ep->repost_head->super : NULL;
    ep->repost_head = f;
    if (ctl)
        ep->repost_ctl++;
    else
        ep->repost_data++;
    if (!ep->repost_listed) {
        ep->repost_listed = true;
        ep->next_repost = m->reposts;
        m->reposts = ep;
    }
    if (ep->pending.head)
        px_btl_verbs_drain_pending(m, ep); /* the header may have brought credits */
}

/* Post again the receives delivered since the last progress call, one chained
 * ibv_post_recv per endpoint (per PX_BTL_VERBS_REPOST_BATCH), and owe their
 * credits to the peers (sent piggybacked, or in an update when half are owed). */
#define PX_BTL_VERBS_REPOST_BATCH 32
static void px_btl_verbs_repost(px_btl_verbs_module_t *m)
{
    px_btl_endpoint_t *ep = m->reposts;
    m->reposts = NULL;
    while (ep) {
        px_btl_endpoint_t *next = ep->next_repost;
        ep->repost_listed = false;
        ep->next_repost = NULL;
        while (ep->repost_head && !ep->failed) {
            struct ibv_sge sge[PX_BTL_VERBS_REPOST_BATCH];
            struct ibv_recv_wr wr[PX_BTL_VERBS_REPOST_BATCH], *bad = NULL;
            int n = 0;
            for (px_btl_verbs_frag_t *f = ep->repost_head; f && n < PX_BTL_VERBS_REPOST_BATCH;
                 f = (px_btl_verbs_frag_t *)f->super.next_pending, ++n) {
                f->ctx.type = PX_BTL_VERBS_OP_RECV;
                f->ctx.endpoint = ep;
                sge[n] = (struct ibv_sge){.addr = (uintptr_t)f->super.base.super.payload,
                                          .length = (uint32_t)m->frag_size,
                                          .lkey = px_btl_verbs_lkey(f)};
                wr[n] = (struct ibv_recv_wr){
                    .wr_id = (uintptr_t)&f->ctx, .sg_list = &sge[n], .num_sge = 1};
                if (n > 0)
                    wr[n - 1].next = &wr[n];
            }
            int rc = ibv_post_recv(ep->qp, wr, &bad);
            /* Those before `bad` are posted (all of them on success). */
            int posted = 0 == rc ? n : (int)(bad - wr);
            ep->posted_recvs += posted;
            for (int i = 0; i < posted; ++i) {
                px_btl_verbs_frag_t *f = ep->repost_head;
                ep->repost_head = (px_btl_verbs_frag_t *)f->super.next_pending;
                f->super.next_pending = NULL;
                if (ep->repost_data > 0) {
                    ep->repost_data--;
                    ep->return_credits++;
                } else {
                    ep->repost_ctl--;
                    ep->return_ctl++;
                }
            }
            if (0 != rc) {
                char detail[200];
                snprintf(detail, sizeof(detail), "ibv_post_recv: %s", strerror(rc));
                ep->failed = true;
                px_btl_verbs_report(m, ep, PX_ERR_COMM, "posting a receive for", detail);
            }
        }
        /* A failed peer's buffers stay in ep->recvs and go at teardown. */
        ep->repost_head = NULL;
        ep->repost_data = ep->repost_ctl = 0;
        if (ep->pending.head)
            px_btl_verbs_drain_pending(m, ep);
        px_btl_verbs_maybe_update(m, ep);
        ep = next;
    }
}

static int px_btl_verbs_wc_error(enum ibv_wc_status st)
{
    switch (st) {
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_REM_ABORT_ERR:
        return PX_ERR_UNREACH;
    default:
        return PX_ERR_COMM;
    }
}

static const char *px_btl_verbs_op_name(const px_btl_verbs_ctx_t *ctx)
{
    switch (ctx->type) {
    case PX_BTL_VERBS_OP_RECV:
        return "receive from";
    case PX_BTL_VERBS_OP_KEEPALIVE:
        return "keepalive read from";
    case PX_BTL_VERBS_OP_RDMA:
        return ((const px_btl_verbs_rdma_op_t *)((const char *)ctx -
                                                 offsetof(px_btl_verbs_rdma_op_t, ctx)))
                       ->req.write
                   ? "RDMA write to"
                   : "RDMA read from";
    default:
        return "send to";
    }
}

/* A completion of a dynamic peer being removed (its QP is in the error
 * state, or gone): counted, its operation failed (a send or RDMA that
 * completed still succeeded), nothing delivered, no report. */
static PX_COLD void px_btl_verbs_complete_removed(px_btl_verbs_module_t *m, px_btl_verbs_ctx_t *ctx,
                                                  const struct ibv_wc *wc)
{
    px_btl_endpoint_t *ep = ctx->endpoint;
    int status = IBV_WC_SUCCESS == wc->status ? PX_SUCCESS : PX_ERR_UNREACH;
    if (PX_BTL_VERBS_OP_RECV == ctx->type) {
        ep->posted_recvs--; /* the buffer stays in ep->recvs until the endpoint goes */
        return;
    }
    ep->sq_free++;
    ep->outstanding--;
    m->outstanding--;
    if (PX_BTL_VERBS_OP_SEND == ctx->type)
        px_btl_verbs_send_done(m, px_container_of(ctx, px_btl_verbs_frag_t, ctx), status);
    else if (PX_BTL_VERBS_OP_KEEPALIVE == ctx->type)
        ep->ka_outstanding = false;
    else if (PX_BTL_VERBS_OP_RDMA == ctx->type)
        px_btl_verbs_rdma_done(m, px_container_of(ctx, px_btl_verbs_rdma_op_t, ctx), status);
}

static void px_btl_verbs_complete(px_btl_verbs_module_t *m, const struct ibv_wc *wc)
{
    px_btl_verbs_ctx_t *ctx = (px_btl_verbs_ctx_t *)(uintptr_t)wc->wr_id;
    px_btl_endpoint_t *ep = ctx->endpoint;
    int status = PX_SUCCESS;
    if (PX_UNLIKELY(ep->flushing)) {
        px_btl_verbs_complete_removed(m, ctx, wc);
        return;
    }
    if (PX_UNLIKELY(IBV_WC_SUCCESS != wc->status)) {
        status = px_btl_verbs_wc_error(wc->status);
        /* The first error on a QP says what happened; the flushes after it
         * only fail what was in flight. */
        if (!ep->failed && IBV_WC_WR_FLUSH_ERR != wc->status) {
            char detail[300];
            snprintf(detail, sizeof(detail), "work completion %s (status %d, vendor error 0x%x)",
                     ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err);
            ep->failed = true;
            px_btl_verbs_report(m, ep, status, px_btl_verbs_op_name(ctx), detail);
        } else if (!ep->failed) {
            ep->failed = true;
            px_btl_verbs_report(m, ep, status, px_btl_verbs_op_name(ctx),
                                "work request flushed (the queue pair went to the error state)");
        }
    }
    switch (ctx->type) {
    case PX_BTL_VERBS_OP_RECV: {
        px_btl_verbs_frag_t *f = px_container_of(ctx, px_btl_verbs_frag_t, ctx);
        ep->posted_recvs--;
        if (PX_SUCCESS == status)
            px_btl_verbs_handle_recv(m, f, wc->byte_len);
        break; /* a failed receive stays in ep->recvs and goes at teardown */
    }
    case PX_BTL_VERBS_OP_SEND:
    case PX_BTL_VERBS_OP_INLINE:
        ep->sq_free++;
        ep->outstanding--;
        m->outstanding--;
        if (PX_BTL_VERBS_OP_SEND == ctx->type)
            px_btl_verbs_send_done(m, px_container_of(ctx, px_btl_verbs_frag_t, ctx), status);
        if (ep->pending.head && PX_SUCCESS == status)
            px_btl_verbs_drain_pending(m, ep);
        break;
    case PX_BTL_VERBS_OP_KEEPALIVE:
        ep->sq_free++;
        ep->outstanding--;
        m->outstanding--;
        ep->ka_outstanding = false;
        break;
    case PX_BTL_VERBS_OP_RDMA:
        ep->sq_free++;
        ep->outstanding--;
        m->outstanding--;
        px_btl_verbs_rdma_done(m, px_container_of(ctx, px_btl_verbs_rdma_op_t, ctx), status);
        break;
    }
    if (PX_UNLIKELY(ep->failed)) {
        px_btl_verbs_fail_pending(m, ep, PX_ERR_UNREACH);
        if (!ep->flushed) {
            /* Move the QP to the error state (hardware usually has): every
             * work request still posted completes, flushed, so nothing waits
             * for a completion that will not come. */
            struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
            ep->flushed = true;
            (void)ibv_modify_qp(ep->qp, &a, IBV_QP_STATE);
        }
    }
}

static double px_btl_verbs_now(void);

/* Nothing completed for btl_verbs_keepalive seconds: read 8 bytes from every
 * connected peer with nothing in flight. A dead peer, or one whose QP failed
 * (it may have failed us and stopped sending), turns the read into an error
 * here, so a process that only waits to receive is not left waiting. */
static void px_btl_verbs_keepalive_probe(px_btl_verbs_module_t *m)
{
    px_btl_endpoint_t *dyn = m->dyn;
    for (size_t r = 0; r < m->num_peers || dyn; ++r) {
        px_btl_endpoint_t *ep;
        if (r < m->num_peers) {
            ep = m->peers[r];
            if ((int)r == m->my_rank)
                continue;
        } else {
            ep = dyn; /* then the dynamic peers */
            dyn = dyn->next_dyn;
        }
        if (NULL == ep || !ep->connected || ep->failed || ep->ka_outstanding || ep->outstanding ||
            ep->sq_free <= 0)
            continue;
        struct ibv_sge sge = {
            .addr = (uintptr_t)&m->ka_buf[1], .length = sizeof(uint64_t), .lkey = m->ka_mr->lkey};
        struct ibv_send_wr wr = {.wr_id = (uintptr_t)&ep->ka_ctx,
                                 .sg_list = &sge,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_RDMA_READ,
                                 .send_flags = IBV_SEND_SIGNALED},
                           *bad;
        wr.wr.rdma.remote_addr = ep->ka_addr;
        wr.wr.rdma.rkey = ep->ka_rkey;
        if (0 == ibv_post_send(ep->qp, &wr, &bad)) {
            ep->ka_outstanding = true;
            ep->sq_free--;
            ep->outstanding++;
            m->outstanding++;
        }
    }
}

static void px_btl_verbs_idle(px_btl_verbs_module_t *m)
{
    if (px_btl_verbs_keepalive <= 0 || m->draining)
        return;
    if (1 == ++m->idle_polls) {
        m->idle_since = px_btl_verbs_now();
        return;
    }
    /* Polling: look at the clock every 1024 idle polls. In event mode an
     * idle poll comes after a sleep of up to progress_idle_wait_ms: every one. */
    if (0 != (m->idle_polls & 1023) && NULL == m->channel)
        return;
    double t = px_btl_verbs_now();
    if (t - m->idle_since >= px_btl_verbs_keepalive) {
        px_btl_verbs_keepalive_probe(m);
        m->idle_since = t;
    }
}

int px_btl_verbs_progress(px_btl_module_t *btl)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    struct ibv_wc wc[16];
    int handled = 0;
    if (m->reposts)
        px_btl_verbs_repost(m);
    int n = ibv_poll_cq(m->cq, 16, wc);
    if (PX_LIKELY(0 == n))
        px_btl_verbs_idle(m);
    else
        m->idle_polls = 0;
    if (n > 0) {
        for (int i = 0; i < n; ++i)
            px_btl_verbs_complete(m, &wc[i]);
        handled += n;
    } else if (PX_UNLIKELY(n < 0)) {
        px_btl_verbs_report(m, NULL, PX_ERR_COMM, "ibv_poll_cq", "failed (the CQ overran?)");
    }
    if (PX_UNLIKELY(NULL != m->blocked))
        handled += px_btl_verbs_retry_pending(m);
    if (PX_UNLIKELY(n > 0)) {
        /* Credits owed whose update found no control credit: try again. */
        for (size_t r = 0; r < m->num_peers; ++r) {
            px_btl_endpoint_t *ep = m->peers[r];
            if (ep && ep->return_credits >= (px_btl_verbs_num_recvs + 1) / 2)
                px_btl_verbs_maybe_update(m, ep);
        }
        for (px_btl_endpoint_t *ep = m->dyn; ep; ep = ep->next_dyn)
            if (ep->return_credits >= (px_btl_verbs_num_recvs + 1) / 2)
                px_btl_verbs_maybe_update(m, ep);
    }
    return handled;
}

static double px_btl_verbs_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int px_btl_verbs_flush(px_btl_module_t *btl, px_btl_endpoint_t *endpoint)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    double t0 = px_btl_verbs_now();
    for (;;) {
        size_t left = endpoint ? endpoint->outstanding : m->outstanding;
        if (0 == left && (endpoint ? NULL == endpoint->pending.head : NULL == m->blocked))
            return PX_SUCCESS;
        px_btl_verbs_progress(btl);
        if (px_btl_verbs_net.flush_timeout > 0 &&
            px_btl_verbs_now() - t0 > (double)px_btl_verbs_net.flush_timeout) {
            char who[160] = "", name[64];
            if (endpoint)
                snprintf(who, sizeof(who), " of %s (host %s)",
                         px_btl_verbs_who(endpoint, name, sizeof(name)),
                         endpoint->hostname ? endpoint->hostname : "?");
            px_show_error("btl/verbs (%s:%u): flush%s gave up after %d s "
                          "(btl_verbs_flush_timeout) with %zu operation(s) outstanding",
                          m->port.dev_name, m->port.port, who, px_btl_verbs_net.flush_timeout,
                          left);
            return PX_ERR_TIMEOUT;
        }
    }
}

int px_btl_verbs_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc)
{
    ((px_btl_verbs_module_t *)btl)->error_cb = cbfunc;
    return PX_SUCCESS;
}
