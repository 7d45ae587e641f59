/*
 * verbs_dyn.c: btl/verbs's dynamic peers (BTL API 3.3): a process that is not
 * a rank of the job gets an RC queue pair of its own, brought up through the
 * connection exchange instead of the modex:
 *   offer    (connector): a QP in INIT with its receives posted; the part
 *            names it (QP number, PSN, LID/GID, port, MTU, the keepalive
 *            word's address and rkey, the receives posted and their size);
 *   accept   (acceptor): the connector's part is checked, a QP made and
 *            connected to it at once (INIT -> RTR -> RTS); the reply names it;
 *   complete (connector): the acceptor's part is checked, the offered QP
 *            connected to it;
 *   remove:  what was sent completes (2 s at most), the QP goes to the error
 *            state, every posted work request is flushed and counted back,
 *            then the QP, its receive buffers (back to the module's
 *            registered free list) and the endpoint go.
 * Reaching the peer is decided as for a rank (px_btl_verbs_connect): the
 * same fabric (link layer), module i to the peer's module i, plus what a
 * dynamic peer may set differently from this process: its receive buffers
 * must hold this process's largest send, and the credits are the receives
 * it says it posted. The part is the peer's writing: every field is checked
 * (px_btl_verbs_dyn_parse, verbs_wire.c) before anything is made for it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "components/btl/verbs/verbs.h"
#include "core/util/error.h"
#include "core/util/output.h"

#define REASON(...) snprintf(reason, PX_BTL_DYN_REASON_MAX, __VA_ARGS__)

/* At most this many dynamic peers per module (a QP and its receive buffers each). */
#define PX_BTL_VERBS_DYN_MAX 65536
/* How long remove waits for sends in flight, then for the flushes. */
#define PX_BTL_VERBS_DYN_DRAIN_SECONDS 2.0

static double px_btl_verbs_dyn_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The CQ holds the completions of every QP: grow it for one more (within
 * the device's max_cqe, as at init). */
static int px_btl_verbs_dyn_grow_cq(px_btl_verbs_module_t *m, char *reason)
{
    long want = (long)(m->num_peers + m->num_dyn + 1) * (m->sq_size + m->rq_size);
    if (m->port.dattr.max_cqe > 0 && want > m->port.dattr.max_cqe)
        want = m->port.dattr.max_cqe;
    if (want <= m->cq->cqe)
        return PX_SUCCESS;
    int rc = ibv_resize_cq(m->cq, (int)want);
    if (0 != rc) {
        REASON("btl/verbs (%s:%u): ibv_resize_cq to %ld entries for one more queue pair failed: "
               "%s",
               m->port.dev_name, m->port.port, want, strerror(rc));
        return PX_ERR_OUT_OF_RESOURCE;
    }
    return PX_SUCCESS;
}

/* A new endpoint with its QP in INIT and its receives posted, on m->dyn. */
static int px_btl_verbs_dyn_new(px_btl_verbs_module_t *m, px_btl_endpoint_t **out, char *reason)
{
    *out = NULL;
    if (m->num_dyn >= PX_BTL_VERBS_DYN_MAX) {
        REASON("btl/verbs (%s:%u) has %d dynamic peers already, its limit", m->port.dev_name,
               m->port.port, PX_BTL_VERBS_DYN_MAX);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = px_btl_verbs_dyn_grow_cq(m, reason);
    if (PX_SUCCESS != rc)
        return rc;
    px_btl_endpoint_t *ep = calloc(1, sizeof(*ep));
    if (NULL == ep) {
        REASON("out of memory");
        return PX_ERR_OUT_OF_RESOURCE;
    }
    ep->module = m;
    ep->rank = PX_BTL_RANK_DYNAMIC;
    ep->hostname = NULL; /* the runtime knows it; messages say "dynamic peer" */
    ep->dyn = true;
    ep->inline_ctx.type = PX_BTL_VERBS_OP_INLINE;
    ep->inline_ctx.endpoint = ep;
    ep->ka_ctx.type = PX_BTL_VERBS_OP_KEEPALIVE;
    ep->ka_ctx.endpoint = ep;
    rc = px_btl_verbs_create_qp(m, ep);
    if (PX_SUCCESS == rc) {
        rc = px_btl_verbs_post_recvs(m, ep);
        if (PX_SUCCESS != rc)
            REASON("btl/verbs (%s:%u): posting %d receives on a new queue pair failed",
                   m->port.dev_name, m->port.port, m->rq_size);
    } else {
        REASON("btl/verbs (%s:%u): creating a queue pair failed (see the error above)",
               m->port.dev_name, m->port.port);
    }
    if (PX_SUCCESS != rc) {
        /* A QP in INIT that never connected: nothing of it is in the CQ. */
        px_btl_verbs_ep_free(m, ep);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    ep->next_dyn = m->dyn;
    m->dyn = ep;
    m->num_dyn++;
    *out = ep;
    return PX_SUCCESS;
}

static void px_btl_verbs_dyn_unlink(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep)
{
    for (px_btl_endpoint_t **l = &m->dyn; *l; l = &(*l)->next_dyn)
        if (*l == ep) {
            *l = ep->next_dyn;
            m->num_dyn--;
            break;
        }
    ep->next_dyn = NULL;
}

static void px_btl_verbs_dyn_write_part(px_btl_verbs_module_t *m, const px_btl_endpoint_t *ep,
                                        void *part, size_t *part_len)
{
    px_btl_verbs_dyn_addr_t a;
    memset(&a, 0, sizeof(a));
    memcpy(a.gid, m->gid.raw, sizeof(a.gid));
    a.lid = m->port.pattr.lid;
    a.port = m->port.port;
    a.link_layer = m->port.pattr.link_layer;
    a.mtu = (uint8_t)m->port.pattr.active_mtu;
    a.qpn = ep->qp->qp_num;
    a.psn = m->psn;
    a.num_recvs = (uint16_t)px_btl_verbs_num_recvs;
    a.ctl_recvs = (uint16_t)px_btl_verbs_ctl_recvs;
    a.recv_size = (uint32_t)m->frag_size;
    a.ka_rkey = m->ka_mr->rkey;
    a.ka_addr = (uint64_t)(uintptr_t)m->ka_buf;
    px_btl_verbs_dyn_write(&a, part);
    *part_len = PX_BTL_VERBS_DYN_LEN;
}

/* Check the peer's part (untrusted) against this module, before anything is
 * made for it. ep: the offered endpoint (complete), NULL at accept. */
static int px_btl_verbs_dyn_check(px_btl_verbs_module_t *m, const px_btl_endpoint_t *ep,
                                  const void *part, size_t len, px_btl_verbs_dyn_addr_t *a,
                                  char *reason)
{
    char why[PX_BTL_DYN_REASON_MAX];
    if (PX_SUCCESS != px_btl_verbs_dyn_parse(part, len, a, why, sizeof(why))) {
        REASON("%s", why);
        return PX_ERR_BAD_PARAM;
    }
    if (a->link_layer != m->port.pattr.link_layer) {
        REASON("the peer's port %u is %s and this process's port %s:%u is %s: set "
               "btl_verbs_device_include so that both use the same fabric",
               a->port, IBV_LINK_LAYER_ETHERNET == a->link_layer ? "RoCE" : "InfiniBand",
               m->port.dev_name, m->port.port,
               IBV_LINK_LAYER_ETHERNET == m->port.pattr.link_layer ? "RoCE" : "InfiniBand");
        return PX_ERR_UNREACH;
    }
    if ((size_t)a->recv_size < m->frag_size) {
        REASON("the peer's btl/verbs receive buffers are %u bytes and this process sends up to "
               "%zu (header + btl_verbs_max_send_size): set btl_verbs_max_send_size the same on "
               "both sides",
               a->recv_size, m->frag_size);
        return PX_ERR_UNREACH;
    }
    if (ep && ep->qp && a->qpn == ep->qp->qp_num && a->lid == m->port.pattr.lid &&
        0 == memcmp(a->gid, m->gid.raw, sizeof(a->gid))) {
        REASON("its btl/verbs part names this very connection's queue pair %u (a reflected "
               "offer)",
               a->qpn);
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

/* Connect ep's QP to the checked part; credits from what the peer posted. */
static int px_btl_verbs_dyn_connect(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep,
                                    const px_btl_verbs_dyn_addr_t *a, char *reason)
{
    px_btl_verbs_peer_addr_t pa;
    memset(&pa, 0, sizeof(pa));
    memcpy(pa.gid, a->gid, sizeof(pa.gid));
    pa.lid = a->lid;
    pa.port = a->port;
    pa.link_layer = a->link_layer;
    pa.mtu = a->mtu;
    pa.psn = a->psn;
    pa.ka_rkey = a->ka_rkey;
    pa.ka_addr = a->ka_addr;
    pa.qpn = a->qpn;
    pa.nmodules = 1;
    ep->credits = ep->max_credits = a->num_recvs;
    ep->ctl_credits = ep->max_ctl = a->ctl_recvs;
    const char *why = px_btl_verbs_connect(m, ep, &pa);
    if (why) {
        REASON("%s", why);
        return PX_ERR_UNREACH;
    }
    return PX_SUCCESS;
}

/* Free an endpoint whose QP holds nothing posted any more, or park it when
 * the device did not flush it in time (a late completion may name it). */
static void px_btl_verbs_dyn_release(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep)
{
    if (0 == ep->outstanding && 0 == ep->posted_recvs) {
        px_btl_verbs_ep_free(m, ep);
        return;
    }
    PX_OUTPUT_VERBOSE(1, px_btl_verbs_output,
                      "btl/verbs (%s:%u): a removed dynamic peer's queue pair %u still had %zu "
                      "send(s) and %d receive(s) posted after %.0f s in the error state; its "
                      "memory is kept until finalize",
                      m->port.dev_name, m->port.port, ep->qp ? ep->qp->qp_num : 0, ep->outstanding,
                      ep->posted_recvs, PX_BTL_VERBS_DYN_DRAIN_SECONDS);
    if (ep->qp)
        ibv_destroy_qp(ep->qp);
    ep->qp = NULL;
    ep->next_dyn = m->dyn_zombies;
    m->dyn_zombies = ep;
}

int px_btl_verbs_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                           size_t *part_len, char *reason)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    if (*part_len < PX_BTL_VERBS_DYN_LEN) {
        REASON("its %d-byte part does not fit the %zu bytes given", PX_BTL_VERBS_DYN_LEN,
               *part_len);
        return PX_ERR_NOT_SUPPORTED;
    }
    px_btl_endpoint_t *ep = NULL;
    int rc = px_btl_verbs_dyn_new(m, &ep, reason);
    if (PX_SUCCESS != rc)
        return rc;
    px_btl_verbs_dyn_write_part(m, ep, part, part_len);
    *endpoint = ep;
    return PX_SUCCESS;
}

int px_btl_verbs_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                            px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                            char *reason)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    px_btl_verbs_dyn_addr_t a;
    if (*reply_len < PX_BTL_VERBS_DYN_LEN) {
        REASON("its %d-byte part does not fit the %zu bytes given", PX_BTL_VERBS_DYN_LEN,
               *reply_len);
        return PX_ERR_NOT_SUPPORTED;
    }
    int rc = px_btl_verbs_dyn_check(m, NULL, offer, offer_len, &a, reason);
    if (PX_SUCCESS != rc)
        return rc;
    px_btl_endpoint_t *ep = NULL;
    rc = px_btl_verbs_dyn_new(m, &ep, reason);
    if (PX_SUCCESS != rc)
        return rc;
    rc = px_btl_verbs_dyn_connect(m, ep, &a, reason);
    if (PX_SUCCESS != rc) {
        px_btl_verbs_dyn_remove(btl, ep);
        return rc;
    }
    px_btl_verbs_dyn_write_part(m, ep, reply, reply_len);
    *endpoint = ep;
    return PX_SUCCESS;
}

int px_btl_verbs_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *reply,
                              size_t reply_len, char *reason)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    if (NULL == ep || !ep->dyn || ep->module != m || ep->connected || ep->removing) {
        REASON("not an offered btl/verbs connection of this module");
        return PX_ERR_BAD_PARAM;
    }
    px_btl_verbs_dyn_addr_t a;
    int rc = px_btl_verbs_dyn_check(m, ep, reply, reply_len, &a, reason);
    if (PX_SUCCESS != rc)
        return rc;
    return px_btl_verbs_dyn_connect(m, ep, &a, reason);
}

int px_btl_verbs_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *ep)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    if (NULL == ep || !ep->dyn || ep->module != m || ep->removing)
        return PX_ERR_BAD_PARAM;
    ep->removing = true; /* no more reports: the peer is leaving */
    /* What was sent to it completes first (its completion may not have been
     * polled yet), within a bound. */
    double deadline = px_btl_verbs_dyn_now() + PX_BTL_VERBS_DYN_DRAIN_SECONDS;
    while (ep->connected && !ep->failed &&
           (ep->outstanding || !px_btl_base_pending_empty(&ep->pending)) &&
           px_btl_verbs_dyn_now() < deadline)
        px_btl_verbs_progress(btl);
    px_btl_verbs_fail_pending(m, ep, PX_ERR_UNREACH);
    for (px_btl_endpoint_t **l = &m->blocked; *l; l = &(*l)->next_blocked)
        if (*l == ep) {
            *l = ep->next_blocked;
            ep->blocked = false;
            break;
        }
    for (px_btl_endpoint_t **l = &m->reposts; *l; l = &(*l)->next_repost)
        if (*l == ep) {
            *l = ep->next_repost;
            ep->repost_listed = false;
            break;
        }
    ep->repost_head = NULL; /* the buffers are in ep->recvs */
    px_btl_verbs_dyn_unlink(m, ep);
    /* The error state flushes every work request still posted; each one's
     * completion is counted back (px_btl_verbs_complete_removed), so none
     * can name the endpoint after it is freed. */
    ep->flushing = true;
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    if (ep->qp && (ep->outstanding || ep->posted_recvs) &&
        0 == ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE)) {
        deadline = px_btl_verbs_dyn_now() + PX_BTL_VERBS_DYN_DRAIN_SECONDS;
        while ((ep->outstanding || ep->posted_recvs) && px_btl_verbs_dyn_now() < deadline)
            px_btl_verbs_progress(btl);
    }
    px_btl_verbs_dyn_release(m, ep);
    return PX_SUCCESS;
}

void px_btl_verbs_dyn_cleanup(px_btl_verbs_module_t *m)
{
    /* Finalize: the QPs go with their CQ, nothing is polled any more. */
    while (m->dyn) {
        px_btl_endpoint_t *ep = m->dyn;
        m->dyn = ep->next_dyn;
        px_btl_verbs_fail_pending(m, ep, PX_ERR_COMM);
        px_btl_verbs_ep_free(m, ep);
    }
    m->num_dyn = 0;
    while (m->dyn_zombies) {
        px_btl_endpoint_t *ep = m->dyn_zombies;
        m->dyn_zombies = ep->next_dyn;
        px_btl_verbs_ep_free(m, ep);
    }
}
