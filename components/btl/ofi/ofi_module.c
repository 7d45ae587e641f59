/*
 * ofi_module.c: btl/ofi module: eager sends (fi_inject for the smallest, fi_send from
 * fragments otherwise), receives posted ahead from a free list, and progress
 * that turns completion-queue errors into errors on the requests concerned
 * (through the runtime's error callback). Registration and RDMA are in
 * ofi_rdma.c, the module's setup and teardown in ofi_setup.c.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "components/btl/ofi/ofi.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

PX_CLASS_INSTANCE(px_btl_ofi_frag_t, px_btl_descriptor_t, NULL, NULL);

#define PX_BTL_OFI_HDR sizeof(px_btl_ofi_hdr_t)

/* ---- receives ---- */

/* Print at most this many errors for messages of unknown senders. */
#define PX_BTL_OFI_BAD_RECV_SHOWN 10

/* A received message with a bad header (code from px_btl_ofi_hdr_decode):
 * dropped; when the header names a peer of this module, that peer's
 * endpoint fails with an error naming it, else the error names what the
 * header said. */
static PX_COLD void px_btl_ofi_bad_recv(px_btl_ofi_module_t *m, int code, const px_btl_ofi_rx_t *rx,
                                        size_t len)
{
    char why[300];
    px_btl_ofi_hdr_why(code, rx, len, m->frag_size, m->job_size, why, sizeof(why));
    px_btl_endpoint_t *ep = NULL;
    if (PX_BTL_OFI_RX_SHORT != code && PX_BTL_OFI_RX_RANK != code &&
        (size_t)rx->src_rank < m->num_peers)
        ep = m->peers[rx->src_rank];
    if (ep) {
        if (ep->failed)
            return; /* said already */
        char detail[400];
        snprintf(detail, sizeof(detail),
                 "it sent %s; the message was dropped and the peer is treated as failed", why);
        ep->failed = true;
        px_btl_ofi_report(m, ep, PX_ERR_COMM, "receiving from", detail);
        return;
    }
    if (++m->bad_recvs > PX_BTL_OFI_BAD_RECV_SHOWN)
        return;
    px_show_error(
        "btl/ofi (%s): dropped %s; its sender is unknown (a receive does not say who sent it)%s",
        px_btl_ofi_prov(m), why,
        PX_BTL_OFI_BAD_RECV_SHOWN == m->bad_recvs ? " (further ones are not shown)" : "");
}

static void px_btl_ofi_handle_recv(px_btl_ofi_module_t *m, px_btl_ofi_frag_t *f, size_t len)
{
    px_btl_ofi_rx_t rx;
    int code =
        px_btl_ofi_hdr_decode(f->super.base.super.payload, len, m->frag_size, m->job_size, &rx);
    if (PX_LIKELY(PX_BTL_OFI_RX_DELIVER == code || PX_BTL_OFI_RX_DYN == code)) {
        px_btl_segment_t seg = {(char *)rx.payload, rx.payload_len};
        int src = rx.src_rank;
        px_btl_endpoint_t *ep = (size_t)src < m->num_peers ? m->peers[src] : NULL;
        if (PX_UNLIKELY(PX_BTL_OFI_RX_DYN == code)) {
            ep = px_btl_ofi_dyn_lookup(m, PX_BTL_OFI_DYN_ID(src));
            src = PX_BTL_RANK_DYNAMIC;
            if (NULL == ep) { /* a number this process does not hold (now) */
                if (++m->bad_recvs <= PX_BTL_OFI_BAD_RECV_SHOWN)
                    px_show_error("btl/ofi (%s): dropped a message (tag %u, %zu bytes) naming "
                                  "dynamic peer %u, which this process does not hold (removed, "
                                  "or never connected)",
                                  px_btl_ofi_prov(m), rx.tag, rx.payload_len,
                                  PX_BTL_OFI_DYN_ID(rx.src_rank));
                px_btl_ofi_post_recv(m, f);
                return;
            }
        }
        px_btl_receive_descriptor_t rd = {
            .endpoint = ep,
            .src_rank = src,
            .des_segments = &seg,
            .des_segment_count = 1,
            .tag = rx.tag,
            .cbdata = px_btl_base_active_message_trigger[rx.tag].cbdata,
        };
        px_btl_base_active_message_trigger[rx.tag].cbfunc(&m->super, &rd);
    } else if (PX_UNLIKELY(code < 0)) {
        px_btl_ofi_bad_recv(m, code, &rx, len);
    } /* else a drain message: nothing to deliver */
    px_btl_ofi_post_recv(m, f);
}

/* ---- sends ---- */

static px_btl_ofi_frag_t *px_btl_ofi_frag_get(px_btl_ofi_module_t *m)
{
    px_btl_ofi_frag_t *f =
        (px_btl_ofi_frag_t *)px_btl_base_frag_get(&m->send_frags, PX_BTL_OFI_HDR);
    if (PX_LIKELY(NULL != f))
        f->ctx.type = PX_BTL_OFI_OP_SEND;
    return f;
}

px_btl_descriptor_t *px_btl_ofi_alloc(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                      uint8_t order, size_t size, uint32_t flags)
{
    (void)endpoint;
    (void)order;
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    px_btl_base_frag_t *f =
        px_btl_base_frag_alloc(btl, &m->send_frags, PX_BTL_OFI_HDR, size, flags);
    if (PX_UNLIKELY(NULL == f))
        return NULL;
    ((px_btl_ofi_frag_t *)f)->ctx.type = PX_BTL_OFI_OP_SEND;
    return &f->base;
}

int px_btl_ofi_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    px_free_list_return(&m->send_frags, &des->super);
    return PX_SUCCESS;
}

px_btl_descriptor_t *px_btl_ofi_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                            px_btl_convertor_t *conv, uint8_t order, size_t reserve,
                                            size_t *size, uint32_t flags)
{
    (void)endpoint;
    (void)order;
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    px_btl_base_frag_t *f = px_btl_base_frag_prepare_src(btl, &m->send_frags, PX_BTL_OFI_HDR, conv,
                                                         reserve, size, flags);
    if (PX_UNLIKELY(NULL == f))
        return NULL;
    ((px_btl_ofi_frag_t *)f)->ctx.type = PX_BTL_OFI_OP_SEND;
    return &f->base;
}

/* Complete a send fragment (status PX_SUCCESS or an error). */
static void px_btl_ofi_send_done(px_btl_ofi_module_t *m, px_btl_ofi_frag_t *f, int status)
{
    px_btl_base_frag_done(&m->super, &m->send_frags, f->endpoint, &f->super, status);
}

static ssize_t px_btl_ofi_post_send(px_btl_ofi_module_t *m, px_btl_ofi_frag_t *f)
{
    void *desc =
        f->super.base.super.registration ? fi_mr_desc(f->super.base.super.registration) : NULL;
    ssize_t rc = fi_send(m->ep, f->super.base.super.payload, f->super.size, desc, f->endpoint->addr,
                         &f->ctx.fi);
    if (PX_LIKELY(0 == rc)) {
        f->endpoint->outstanding++;
        f->endpoint->sent = true;
        f->endpoint->stuck_since = 0;
        m->outstanding++;
    }
    return rc;
}

/* A transport error: to the runtime's callback (which fails the requests of
 * the peer), or printed when none is installed. */
void px_btl_ofi_report(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, int error, const char *what,
                       const char *detail)
{
    char text[600];
    if (ep)
        snprintf(text, sizeof(text), "btl/ofi (%s): %s rank %d%s%s failed: %s", px_btl_ofi_prov(m),
                 what, ep->rank, ep->hostname ? " on host " : "", ep->hostname ? ep->hostname : "",
                 detail);
    else
        snprintf(text, sizeof(text), "btl/ofi (%s): %s: %s", px_btl_ofi_prov(m), what, detail);
    PX_OUTPUT_VERBOSE(1, px_btl_ofi_output, "%s", text);
    if (m->draining)
        return; /* tearing down: a peer that is already gone is no news */
    if (m->error_cb)
        m->error_cb(&m->super, ep, ep ? ep->rank : -1, error, text);
    else
        px_show_error("%s", text);
}

static double px_btl_ofi_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void px_btl_ofi_probe_close(px_btl_endpoint_t *ep)
{
    if (ep->probe_fd >= 0) {
        /* Reset rather than close politely: the peer's provider sees a
         * connection that never spoke and drops it. */
        struct linger l = {.l_onoff = 1, .l_linger = 0};
        (void)setsockopt(ep->probe_fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close(ep->probe_fd);
    }
    ep->probe_fd = -1;
}

/* One step of the probe of `ep`'s published TCP port (at time t): start a
 * non-blocking connect, or look whether the one started has an answer. A
 * refusal sets ep->refused; an accepted connection (the peer's kernel still
 * listens for it: it is alive, only slow to answer libfabric) is reset and
 * the next probe waits btl_ofi_connect_probe seconds; no answer yet (a host
 * that is down drops the packets) leaves the decision to
 * btl_ofi_connect_timeout. */
static void px_btl_ofi_probe(px_btl_endpoint_t *ep, double t)
{
    int err = 0;
    if (ep->probe_fd < 0) {
        if (t < ep->probe_at)
            return;
        ep->probe_at = t + px_btl_ofi_connect_probe;
        ep->probe_fd =
            socket(ep->probe_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (ep->probe_fd < 0)
            return;
        if (0 == connect(ep->probe_fd, (struct sockaddr *)&ep->probe_addr, ep->probe_len)) {
            px_btl_ofi_probe_close(ep);
            return;
        }
        if (EINPROGRESS != errno) {
            err = errno;
            px_btl_ofi_probe_close(ep);
        }
    } else {
        struct pollfd pfd = {.fd = ep->probe_fd, .events = POLLOUT};
        if (poll(&pfd, 1, 0) <= 0)
            return; /* no answer yet */
        socklen_t len = sizeof(err);
        if (0 != getsockopt(ep->probe_fd, SOL_SOCKET, SO_ERROR, &err, &len))
            err = errno;
        px_btl_ofi_probe_close(ep);
        ep->probe_at = t + px_btl_ofi_connect_probe;
    }
    if (ECONNREFUSED == err)
        ep->refused = true;
}

/* libfabric refused an operation to `ep` with EAGAIN: start or check the
 * clock (and probe the peer's port once it has refused for
 * btl_ofi_connect_probe seconds); true when it has refused for longer than
 * btl_ofi_connect_timeout or the probe was refused. */
bool px_btl_ofi_stuck_too_long(px_btl_endpoint_t *ep)
{
    double t = px_btl_ofi_now();
    if (0 == ep->stuck_since)
        ep->stuck_since = t;
    if (px_btl_ofi_connect_probe > 0 && ep->probe_len && !ep->refused &&
        t - ep->stuck_since >= px_btl_ofi_connect_probe)
        px_btl_ofi_probe(ep, t);
    if (ep->refused)
        return true;
    return px_btl_ofi_connect_timeout > 0 && t - ep->stuck_since > px_btl_ofi_connect_timeout;
}

static void px_btl_ofi_queue(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, px_btl_ofi_frag_t *f)
{
    if (px_btl_base_pending_push(&ep->pending, &f->super)) {
        ep->next_blocked = m->blocked;
        m->blocked = ep;
    }
}

static int px_btl_ofi_send_flags(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                 px_btl_descriptor_t *des, px_btl_tag_t tag, uint8_t flags);

int px_btl_ofi_send(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, px_btl_descriptor_t *des,
                    px_btl_tag_t tag)
{
    return px_btl_ofi_send_flags(btl, endpoint, des, tag, 0);
}

static int px_btl_ofi_send_flags(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                 px_btl_descriptor_t *des, px_btl_tag_t tag, uint8_t flags)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    px_btl_ofi_frag_t *f = (px_btl_ofi_frag_t *)des;
    if (PX_UNLIKELY(endpoint->failed))
        return PX_ERR_UNREACH;
    px_btl_ofi_hdr_t *hdr = f->super.base.super.payload;
    hdr->tag = tag;
    hdr->flags = flags;
    hdr->src_rank = endpoint->send_as;
    f->endpoint = endpoint;
    f->super.size = PX_BTL_OFI_HDR + f->super.segment.seg_len;
    f->ctx.type = PX_BTL_OFI_OP_SEND;
    if (PX_LIKELY(NULL == endpoint->pending.head)) {
        ssize_t rc = px_btl_ofi_post_send(m, f);
        if (PX_LIKELY(0 == rc))
            return 0;
        if (-FI_EAGAIN != rc) {
            px_btl_ofi_report(m, endpoint, PX_ERR_COMM, "fi_send to", px_btl_ofi_strerror((int)rc));
            return PX_ERR_COMM;
        }
        px_btl_ofi_stuck_too_long(endpoint); /* starts the clock */
    }
    /* Queue behind earlier refused sends, keeping the pair's order. */
    px_btl_ofi_queue(m, endpoint, f);
    return 0;
}

int px_btl_ofi_sendi(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *header,
                     size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                     uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor)
{
    (void)order;
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    if (descriptor)
        *descriptor = NULL;
    if (PX_UNLIKELY(endpoint->failed))
        return PX_ERR_UNREACH;
    if (PX_UNLIKELY(NULL != endpoint->pending.head))
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    size_t total = PX_BTL_OFI_HDR + header_size + payload_size;
    if (total <= m->inject_size) {
        char buf[m->inject_size];
        px_btl_ofi_hdr_t *hdr = (px_btl_ofi_hdr_t *)buf;
        hdr->tag = tag;
        hdr->flags = 0;
        hdr->src_rank = endpoint->send_as;
        memcpy(buf + PX_BTL_OFI_HDR, header, header_size);
        if (payload_size)
            memcpy(buf + PX_BTL_OFI_HDR + header_size, payload, payload_size);
        ssize_t rc = fi_inject(m->ep, buf, total, endpoint->addr);
        if (PX_LIKELY(0 == rc)) {
            endpoint->stuck_since = 0;
            endpoint->sent = true;
            return PX_SUCCESS;
        }
        if (-FI_EAGAIN == rc) {
            if (px_btl_ofi_stuck_too_long(endpoint))
                return px_btl_ofi_give_up(m, endpoint);
            return PX_ERR_TEMP_OUT_OF_RESOURCE;
        }
        px_btl_ofi_report(m, endpoint, PX_ERR_COMM, "fi_inject to", px_btl_ofi_strerror((int)rc));
        return PX_ERR_COMM;
    }
    return px_btl_base_frag_sendi(btl, &m->send_frags, PX_BTL_OFI_HDR, endpoint, header,
                                  header_size, payload, payload_size, flags, tag);
}

/* Fail every pending send of an endpoint (its peer is lost). */
void px_btl_ofi_fail_pending(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, int status)
{
    px_btl_base_pending_fail(&m->super, &m->send_frags, ep, &ep->pending, status);
}

/* libfabric refused everything to `ep` for btl_ofi_connect_timeout seconds:
 * declare the peer unreachable (pending sends are failed by the caller's
 * progress pass). */
int px_btl_ofi_give_up(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep)
{
    if (!ep->failed) {
        char detail[400];
        if (ep->refused) {
            char host[INET6_ADDRSTRLEN] = "?", port[16] = "?";
            (void)getnameinfo((struct sockaddr *)&ep->probe_addr, ep->probe_len, host, sizeof(host),
                              port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
            snprintf(detail, sizeof(detail),
                     "its address %s port %s refused a TCP connection: nothing listens there any "
                     "more, so its process has exited or closed its endpoint (libfabric would "
                     "retry until btl_ofi_connect_timeout, %d s)",
                     host, port, px_btl_ofi_connect_timeout);
        } else {
            snprintf(detail, sizeof(detail),
                     "libfabric refused every operation for %d s (btl_ofi_connect_timeout) with "
                     "%s; the peer is not reachable at the address it published or does not "
                     "respond",
                     px_btl_ofi_connect_timeout, px_btl_ofi_strerror(-FI_EAGAIN));
        }
        ep->failed = true;
        px_btl_ofi_report(m, ep, PX_ERR_UNREACH, "connecting to", detail);
    }
    return PX_ERR_UNREACH;
}

/* Retry sends refused with EAGAIN, in order per endpoint. */
static int px_btl_ofi_retry_pending(px_btl_ofi_module_t *m)
{
    int n = 0;
    px_btl_endpoint_t **link = &m->blocked;
    while (*link) {
        px_btl_endpoint_t *ep = *link;
        while (!px_btl_base_pending_empty(&ep->pending) && !ep->failed) {
            px_btl_ofi_frag_t *f = (px_btl_ofi_frag_t *)ep->pending.head;
            ssize_t rc = px_btl_ofi_post_send(m, f);
            if (-FI_EAGAIN == rc) {
                if (px_btl_ofi_stuck_too_long(ep))
                    px_btl_ofi_give_up(m, ep);
                break;
            }
            px_btl_base_pending_pop(&ep->pending);
            ++n;
            if (0 != rc) {
                px_btl_ofi_report(m, ep, PX_ERR_COMM, "fi_send to", px_btl_ofi_strerror((int)rc));
                px_btl_ofi_send_done(m, f, PX_ERR_COMM);
            }
        }
        if (ep->failed)
            px_btl_ofi_fail_pending(m, ep, PX_ERR_UNREACH);
        if (NULL == ep->pending.head)
            *link = ep->next_blocked; /* off the list */
        else
            link = &ep->next_blocked;
    }
    return n;
}

/* ---- progress ---- */

static bool px_btl_ofi_is_peer_loss(int err)
{
    switch (err) {
    case FI_EHOSTUNREACH:
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_ESHUTDOWN:
    case FI_EADDRNOTAVAIL:
    case FI_ETIMEDOUT:
        return true;
    default:
        return false;
    }
}

static void px_btl_ofi_handle_error(px_btl_ofi_module_t *m, struct fid_cq *cq)
{
    struct fi_cq_err_entry err;
    memset(&err, 0, sizeof(err));
    ssize_t rc = fi_cq_readerr(cq, &err, 0);
    if (rc < 0)
        return;
    char prov_text[256];
    const char *ptext =
        fi_cq_strerror(cq, err.prov_errno, err.err_data, prov_text, sizeof(prov_text));
    char detail[400];
    snprintf(detail, sizeof(detail), "%s%s%s", fi_strerror(err.err), ptext && ptext[0] ? "; " : "",
             ptext ? ptext : "");
    if (NULL == err.op_context) {
        px_btl_ofi_report(m, NULL, PX_ERR_COMM, "completion queue error", detail);
        return;
    }
    px_btl_ofi_context_t *ctx = px_container_of(err.op_context, px_btl_ofi_context_t, fi);
    int status = px_btl_ofi_is_peer_loss(err.err) ? PX_ERR_UNREACH : PX_ERR_COMM;
    switch (ctx->type) {
    case PX_BTL_OFI_OP_RECV: {
        px_btl_ofi_frag_t *f = px_container_of(ctx, px_btl_ofi_frag_t, ctx);
        if (FI_ECANCELED == err.err)
            return; /* shutting down */
        px_btl_ofi_report(m, NULL, PX_ERR_COMM, "a posted receive failed", detail);
        px_btl_ofi_post_recv(m, f);
        return;
    }
    case PX_BTL_OFI_OP_SEND: {
        px_btl_ofi_frag_t *f = px_container_of(ctx, px_btl_ofi_frag_t, ctx);
        px_btl_endpoint_t *ep = f->endpoint;
        ep->outstanding--;
        m->outstanding--;
        if (PX_ERR_UNREACH == status)
            ep->failed = true;
        px_btl_ofi_report(m, ep, status, "send to", detail);
        px_btl_ofi_send_done(m, f, status);
        return;
    }
    case PX_BTL_OFI_OP_RDMA: {
        px_btl_ofi_rdma_op_t *op = px_container_of(ctx, px_btl_ofi_rdma_op_t, ctx);
        px_btl_endpoint_t *ep = op->endpoint;
        ep->outstanding--;
        m->outstanding--;
        if (PX_ERR_UNREACH == status)
            ep->failed = true;
        const px_btl_ofi_rdma_op_t *whole = op->parent ? op->parent : op; /* a piece's */
        px_btl_ofi_report(m, ep, status, whole->req.write ? "RDMA write to" : "RDMA read from",
                          detail);
        px_btl_ofi_rdma_done(m, op, status);
        return;
    }
    default:
        px_btl_ofi_report(m, NULL, PX_ERR_COMM, "completion with an unknown context", detail);
    }
}

/* Lanes 1..: only RDMA operations complete there; polling them also makes
 * the provider serve the peers' reads and writes arriving on them, and
 * their connection requests. Polled while some peer has several lanes. */
static PX_NOINLINE int px_btl_ofi_progress_lanes(px_btl_ofi_module_t *m)
{
    struct fi_cq_msg_entry ev[16];
    int handled = 0;
    for (unsigned l = 1; l < m->nlanes; ++l) {
        ssize_t n = fi_cq_read(m->lane_cq[l], ev, 16);
        if (n > 0) {
            for (ssize_t i = 0; i < n; ++i) {
                px_btl_ofi_context_t *ctx =
                    px_container_of(ev[i].op_context, px_btl_ofi_context_t, fi);
                if (PX_BTL_OFI_OP_RDMA != ctx->type)
                    continue; /* nothing else is posted on a lane */
                px_btl_ofi_rdma_op_t *op = px_container_of(ctx, px_btl_ofi_rdma_op_t, ctx);
                op->endpoint->outstanding--;
                m->outstanding--;
                px_btl_ofi_rdma_done(m, op, PX_SUCCESS);
            }
            handled += (int)n;
        } else if (-FI_EAVAIL == n) {
            px_btl_ofi_handle_error(m, m->lane_cq[l]);
            ++handled;
        }
    }
    if (m->rdma_blocked)
        handled += px_btl_ofi_rdma_retry(m);
    return handled;
}

int px_btl_ofi_progress(px_btl_module_t *btl)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    struct fi_cq_msg_entry ev[16];
    int handled = 0;
    ssize_t n = fi_cq_read(m->cq, ev, 16);
    if (n > 0) {
        for (ssize_t i = 0; i < n; ++i) {
            px_btl_ofi_context_t *ctx = px_container_of(ev[i].op_context, px_btl_ofi_context_t, fi);
            switch (ctx->type) {
            case PX_BTL_OFI_OP_RECV:
                px_btl_ofi_handle_recv(m, px_container_of(ctx, px_btl_ofi_frag_t, ctx), ev[i].len);
                break;
            case PX_BTL_OFI_OP_SEND: {
                px_btl_ofi_frag_t *f = px_container_of(ctx, px_btl_ofi_frag_t, ctx);
                f->endpoint->outstanding--;
                m->outstanding--;
                px_btl_ofi_send_done(m, f, PX_SUCCESS);
                break;
            }
            case PX_BTL_OFI_OP_RDMA: {
                px_btl_ofi_rdma_op_t *op = px_container_of(ctx, px_btl_ofi_rdma_op_t, ctx);
                op->endpoint->outstanding--;
                m->outstanding--;
                px_btl_ofi_rdma_done(m, op, PX_SUCCESS);
                break;
            }
            }
        }
        handled += (int)n;
    } else if (-FI_EAVAIL == n) {
        px_btl_ofi_handle_error(m, m->cq);
        ++handled;
    }
    if (PX_UNLIKELY(m->lane_peers || m->rdma_blocked))
        handled += px_btl_ofi_progress_lanes(m);
    if (PX_UNLIKELY(NULL != m->blocked))
        handled += px_btl_ofi_retry_pending(m);
    return handled;
}

int px_btl_ofi_flush(px_btl_module_t *btl, px_btl_endpoint_t *endpoint)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        size_t left = endpoint ? endpoint->outstanding : m->outstanding;
        if (0 == left && (endpoint ? NULL == endpoint->pending.head : NULL == m->blocked) &&
            NULL == m->rdma_blocked)
            return PX_SUCCESS;
        px_btl_ofi_progress(btl);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (px_btl_ofi_net.flush_timeout > 0 &&
            t.tv_sec - t0.tv_sec > px_btl_ofi_net.flush_timeout) {
            char who[160] = "";
            if (endpoint)
                snprintf(who, sizeof(who), " of rank %d (host %s)", endpoint->rank,
                         endpoint->hostname ? endpoint->hostname : "?");
            px_show_error("btl/ofi (%s): flush%s gave up after %d s (btl_ofi_flush_timeout) "
                          "with %zu operation(s) outstanding",
                          px_btl_ofi_prov(m), who, px_btl_ofi_net.flush_timeout, left);
            return PX_ERR_TIMEOUT;
        }
    }
}

int px_btl_ofi_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc)
{
    ((px_btl_ofi_module_t *)btl)->error_cb = cbfunc;
    return PX_SUCCESS;
}

/* ---- teardown of endpoints ---- */

/* Before endpoints go away: a message sent just before (the last one of a
 * barrier, say; injected, so without a completion, or completed when the
 * provider buffered it) may still sit in the provider's queue, and closing
 * the endpoint would drop it. To every peer we sent to, send a drain message
 * with a completion (ordered after the others, FI_ORDER_SAS) and wait, at most
 * PX_BTL_OFI_DRAIN_SECONDS, for every operation to these peers to complete. */
#define PX_BTL_OFI_DRAIN_SECONDS 2.0
void px_btl_ofi_drain(px_btl_ofi_module_t *m, px_btl_endpoint_t **eps, size_t n)
{
    m->draining = true;
    for (size_t i = 0; i < n; ++i) {
        px_btl_endpoint_t *ep = eps[i];
        if (NULL == ep || ep->failed || !ep->sent)
            continue;
        px_btl_ofi_frag_t *f = px_btl_ofi_frag_get(m);
        if (NULL == f)
            break;
        f->super.base.des_flags = PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
        if (px_btl_ofi_send_flags(&m->super, ep, &f->super.base, 0, PX_BTL_OFI_HDR_DRAIN) < 0) {
            px_free_list_return(&m->send_frags, &f->super.base.super);
            continue;
        }
        ep->sent = false;
    }
    double deadline = px_btl_ofi_now() + PX_BTL_OFI_DRAIN_SECONDS;
    for (;;) {
        bool busy = false;
        for (size_t i = 0; i < n && !busy; ++i)
            busy = eps[i] && !eps[i]->failed &&
                   (eps[i]->outstanding || !px_btl_base_pending_empty(&eps[i]->pending));
        if (!busy || px_btl_ofi_now() > deadline)
            break;
        px_btl_ofi_progress(&m->super);
    }
    m->draining = false;
}
