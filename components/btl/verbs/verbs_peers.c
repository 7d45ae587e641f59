/*
 * verbs_peers.c: btl/verbs queue pairs. Every module creates one RC QP per
 * rank at init (the modex carries their numbers) and connects the QP of each
 * peer at add_procs (INIT -> RTR -> RTS) from the peer's modex record: LID or
 * GID, the QP number the peer made for this rank, PSN and MTU. Connecting
 * eagerly is simple and the messaging layer talks to most peers anyway; the
 * cost is a QP and its receive buffers per rank (see docs/verbs.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "components/btl/verbs/verbs.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "frameworks/boot/boot.h"

/* A reason add_procs hands out, kept until the module goes. */
#define px_btl_verbs_reason(m, ...) px_btl_base_reason(&(m)->reasons, __VA_ARGS__)

int px_btl_verbs_create_qp(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep)
{
    int max_sge = m->port.dattr.max_sge > 0 ? m->port.dattr.max_sge : 1;
    struct ibv_qp_init_attr ia = {
        .send_cq = m->cq,
        .recv_cq = m->cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = (uint32_t)m->sq_size,
                .max_recv_wr = (uint32_t)m->rq_size,
                .max_send_sge = (uint32_t)(max_sge < 3 ? max_sge : 3),
                .max_recv_sge = 1,
                .max_inline_data = (uint32_t)m->max_inline},
    };
    ep->qp = ibv_create_qp(m->pd, &ia);
    if (NULL == ep->qp && m->max_inline > 0) {
        /* Some devices refuse inline data of that size: go without. */
        ia.cap.max_inline_data = 0;
        m->max_inline = 0;
        ep->qp = ibv_create_qp(m->pd, &ia);
    }
    if (NULL == ep->qp) {
        int e = errno ? errno : ENOMEM;
        px_show_error("btl/verbs: ibv_create_qp failed on %s port %u (send queue %d, receive "
                      "queue %d: btl_verbs_sq_size, btl_verbs_num_recvs + btl_verbs_ctl_recvs): %s",
                      m->port.dev_name, m->port.port, m->sq_size, m->rq_size, strerror(e));
        return PX_ERR_NOT_AVAILABLE;
    }
    if ((int)ia.cap.max_inline_data < m->max_inline)
        m->max_inline = (int)ia.cap.max_inline_data;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .pkey_index = 0,
                            .port_num = m->port.port,
                            .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                                               IBV_ACCESS_REMOTE_WRITE};
    int rc = ibv_modify_qp(ep->qp, &a,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (0 != rc) {
        px_show_error("btl/verbs: ibv_modify_qp to INIT failed on %s port %u: %s", m->port.dev_name,
                      m->port.port, strerror(rc));
        return PX_ERR_NOT_AVAILABLE;
    }
    ep->sq_free = m->sq_size;
    ep->credits = ep->max_credits = px_btl_verbs_num_recvs;
    ep->ctl_credits = ep->max_ctl = px_btl_verbs_ctl_recvs;
    return PX_SUCCESS;
}

const char *px_btl_verbs_who(const px_btl_endpoint_t *ep, char *buf, size_t len)
{
    if (ep->dyn)
        snprintf(buf, len, "dynamic peer (local QP %u)", ep->qp ? ep->qp->qp_num : 0);
    else
        snprintf(buf, len, "rank %d", ep->rank);
    return buf;
}

/* Connect ep's QP to the peer's record; on failure returns the reason. */
const char *px_btl_verbs_connect(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep,
                                 const px_btl_verbs_peer_addr_t *p)
{
    char who[64];
    px_btl_verbs_who(ep, who, sizeof(who));
    if (p->link_layer != m->port.pattr.link_layer)
        return px_btl_verbs_reason(
            m,
            "%s's port %u is %s and this process's port %s:%u is %s: "
            "set btl_verbs_device_include so that both use the same fabric",
            who, p->port, IBV_LINK_LAYER_ETHERNET == p->link_layer ? "RoCE" : "InfiniBand",
            m->port.dev_name, m->port.port,
            IBV_LINK_LAYER_ETHERNET == m->port.pattr.link_layer ? "RoCE" : "InfiniBand");
    enum ibv_mtu mtu = m->port.pattr.active_mtu;
    if (p->mtu && p->mtu < mtu)
        mtu = (enum ibv_mtu)p->mtu;
    int rd_atom = m->port.dattr.max_qp_rd_atom > 0 ? m->port.dattr.max_qp_rd_atom : 1;
    int init_atom = m->port.dattr.max_qp_init_rd_atom > 0 ? m->port.dattr.max_qp_init_rd_atom : 1;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                            .path_mtu = mtu,
                            .dest_qp_num = p->qpn,
                            .rq_psn = p->psn & 0xffffffu,
                            .max_dest_rd_atomic = (uint8_t)(rd_atom < 16 ? rd_atom : 16),
                            .min_rnr_timer = (uint8_t)px_btl_verbs_min_rnr_timer};
    a.ah_attr.port_num = m->port.port;
    a.ah_attr.dlid = p->lid;
    if (IBV_LINK_LAYER_ETHERNET == p->link_layer || 0 == p->lid) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, p->gid, sizeof(p->gid));
        a.ah_attr.grh.sgid_index = (uint8_t)px_btl_verbs_gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    int rc = ibv_modify_qp(ep->qp, &a,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (0 != rc)
        return px_btl_verbs_reason(m, "ibv_modify_qp to RTR for %s (its QP %u, LID %u) failed: %s",
                                   who, p->qpn, p->lid, strerror(rc));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = m->psn;
    a.timeout = (uint8_t)px_btl_verbs_timeout;
    a.retry_cnt = (uint8_t)px_btl_verbs_retry_count;
    a.rnr_retry = (uint8_t)px_btl_verbs_rnr_retry;
    a.max_rd_atomic = (uint8_t)(init_atom < 16 ? init_atom : 16);
    rc = ibv_modify_qp(ep->qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
    if (0 != rc)
        return px_btl_verbs_reason(m, "ibv_modify_qp to RTS for %s failed: %s", who, strerror(rc));
    ep->connected = true;
    ep->ka_addr = p->ka_addr;
    ep->ka_rkey = p->ka_rkey;
    PX_OUTPUT_VERBOSE(
        20, px_btl_verbs_output, "btl/verbs (%s:%u): %s connected: local QP %u -> QP %u, MTU %s",
        m->port.dev_name, m->port.port, who, ep->qp->qp_num, p->qpn, px_btl_verbs_mtu_str(mtu));
    return NULL;
}

int px_btl_verbs_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                           px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                           const char **reasons)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    int idx = m->index;
    for (size_t i = 0; i < nprocs; ++i) {
        px_proc_t *p = procs[i];
        endpoints[i] = NULL;
        if (p->rank < 0 || (size_t)p->rank >= m->num_peers || NULL == m->peers[p->rank]) {
            reasons[i] = px_btl_verbs_reason(m,
                                             "rank %d is outside the job btl/verbs was set up "
                                             "for",
                                             p->rank);
            continue;
        }
        px_btl_endpoint_t *ep = m->peers[p->rank];
        ep->hostname = p->hostname;
        if (ep->connected && !ep->failed) {
            endpoints[i] = ep;
            px_bitmap_set_bit(reachable, (int)i);
            continue;
        }
        if (ep->failed) {
            reasons[i] =
                px_btl_verbs_reason(m, "the queue pair to rank %d failed earlier", p->rank);
            continue;
        }
        void *blob = NULL;
        size_t len = 0;
        int rc = px_boot_modex_recv(&px_btl_verbs_component.base, p->rank, &blob, &len);
        if (PX_SUCCESS != rc) {
            reasons[i] = px_btl_verbs_reason(m,
                                             "rank %d published no btl/verbs address (its "
                                             "btl/verbs declined or is not in its btl list)",
                                             p->rank);
            free(blob);
            continue;
        }
        px_btl_verbs_peer_addr_t pa;
        char text[400];
        rc = px_btl_verbs_modex_parse(blob, len, idx, m->my_rank, m->num_peers, &pa, text,
                                      sizeof(text));
        free(blob);
        if (PX_SUCCESS != rc) {
            if (PX_ERR_BAD_PARAM == rc)
                px_show_error("btl/verbs (%s:%u): rank %d%s%s %s; it is not reachable over "
                              "btl/verbs",
                              m->port.dev_name, m->port.port, p->rank,
                              p->hostname ? " on host " : "", p->hostname ? p->hostname : "", text);
            reasons[i] = px_btl_verbs_reason(m, "rank %d %s", p->rank, text);
            continue;
        }
        const char *why = px_btl_verbs_connect(m, ep, &pa);
        if (why) {
            reasons[i] = why;
            continue;
        }
        endpoints[i] = ep;
        px_bitmap_set_bit(reachable, (int)i);
    }
    return PX_SUCCESS;
}

static double px_btl_verbs_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wait at most this long in del_procs for operations in flight to the peers. */
#define PX_BTL_VERBS_DRAIN_SECONDS 2.0

int px_btl_verbs_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                           px_btl_endpoint_t **endpoints)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    m->draining = true;
    double deadline = px_btl_verbs_now() + PX_BTL_VERBS_DRAIN_SECONDS;
    for (;;) {
        bool busy = false;
        for (size_t i = 0; i < nprocs && !busy; ++i) {
            px_btl_endpoint_t *ep = endpoints ? endpoints[i] : NULL;
            if (NULL == ep && procs[i]->rank >= 0 && (size_t)procs[i]->rank < m->num_peers)
                ep = m->peers[procs[i]->rank];
            busy = ep && !ep->failed && ep->connected &&
                   (ep->outstanding || !px_btl_base_pending_empty(&ep->pending));
        }
        if (!busy || px_btl_verbs_now() > deadline)
            break;
        px_btl_verbs_progress(btl);
    }
    for (size_t i = 0; i < nprocs; ++i) {
        px_btl_endpoint_t *ep = endpoints ? endpoints[i] : NULL;
        if (NULL == ep && procs[i]->rank >= 0 && (size_t)procs[i]->rank < m->num_peers)
            ep = m->peers[procs[i]->rank];
        if (NULL == ep)
            continue;
        px_btl_verbs_fail_pending(m, ep, PX_ERR_COMM);
        for (px_btl_endpoint_t **l = &m->blocked; *l; l = &(*l)->next_blocked)
            if (*l == ep) {
                *l = ep->next_blocked;
                ep->blocked = false;
                break;
            }
        /* The QP stays until finalize: the peer may still read our memory. */
        if (endpoints)
            endpoints[i] = NULL;
    }
    m->draining = false;
    return PX_SUCCESS;
}
