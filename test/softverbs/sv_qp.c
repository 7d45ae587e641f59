/* softverbs: RC queue pairs: creation, the RESET->INIT->RTR->RTS state machine with
 * attribute checks, posting, completion and the error state (flush). */
#include "sv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
    struct ibv_qp_init_attr_ex ex;
    memset(&ex, 0, sizeof(ex));
    memcpy(&ex, init, sizeof(*init));
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    struct ibv_qp *qp = sv_create_qp_ex(pd->context, &ex);
    if (qp)
        init->cap = ex.cap;
    return qp;
}

struct ibv_qp *sv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
    struct sv_context *c = (struct sv_context *)verbs_get_ctx(ctx);
    if (a->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD) {
        errno = EOPNOTSUPP; /* no extended send ops, XRC, RSS, TSO... */
        return NULL;
    }
    if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->qp_type != IBV_QPT_RC) {
        errno = a->qp_type != IBV_QPT_RC ? EOPNOTSUPP : EINVAL; /* RC only */
        return NULL;
    }
    if (a->srq || !a->send_cq || !a->recv_cq || a->cap.max_send_wr > SV_MAX_WR ||
        a->cap.max_recv_wr > SV_MAX_WR || a->cap.max_send_sge > SV_MAX_SGE ||
        a->cap.max_recv_sge > SV_MAX_SGE || a->cap.max_inline_data > SV_MAX_INLINE) {
        errno = EINVAL;
        return NULL;
    }
    int bad = 0;
    long fail_wr = sv_env_long("PX_SOFTVERBS_FAIL_WR", 0, 0, 1L << 40, &bad);
    long err_after = sv_env_long("PX_SOFTVERBS_QP_ERROR_AFTER", 0, 0, 1L << 40, &bad);
    long fail_status =
        sv_env_long("PX_SOFTVERBS_FAIL_STATUS", IBV_WC_LOC_QP_OP_ERR, 1, IBV_WC_GENERAL_ERR, &bad);
    if (bad) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_qp *q = calloc(1, sizeof(*q));
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    q->ctx = c;
    q->cap = a->cap;
    if (q->cap.max_send_wr < 1)
        q->cap.max_send_wr = 1;
    if (q->cap.max_recv_wr < 1)
        q->cap.max_recv_wr = 1;
    if (q->cap.max_send_sge < 1)
        q->cap.max_send_sge = 1;
    if (q->cap.max_recv_sge < 1)
        q->cap.max_recv_sge = 1;
    q->sq_cap = q->cap.max_send_wr;
    q->rq_cap = q->cap.max_recv_wr;
    q->sq = calloc(q->sq_cap, sizeof(*q->sq));
    q->rq = calloc(q->rq_cap, sizeof(*q->rq));
    q->inline_buf = q->cap.max_inline_data ? calloc(q->sq_cap, q->cap.max_inline_data) : NULL;
    if (!q->sq || !q->rq || (q->cap.max_inline_data && !q->inline_buf)) {
        free(q->sq);
        free(q->rq);
        free(q->inline_buf);
        free(q);
        errno = ENOMEM;
        return NULL;
    }
    q->sq_sig_all = a->sq_sig_all;
    q->fail_wr = fail_wr;
    q->error_after = err_after;
    q->fail_status = (int)fail_status;
    q->dest_dev = -1;
    q->qp.context = ctx;
    q->qp.qp_context = a->qp_context;
    q->qp.pd = a->pd;
    q->qp.send_cq = a->send_cq;
    q->qp.recv_cq = a->recv_cq;
    q->qp.qp_type = IBV_QPT_RC;
    q->qp.state = IBV_QPS_RESET;
    pthread_mutex_init(&q->qp.mutex, NULL);
    pthread_cond_init(&q->qp.cond, NULL);
    pthread_mutex_lock(&sv_g.lock);
    uint32_t qpn;
    if (sv_registry_add(q, &qpn) != 0) {
        int e = errno;
        pthread_mutex_unlock(&sv_g.lock);
        free(q->sq);
        free(q->rq);
        free(q->inline_buf);
        free(q);
        errno = e;
        return NULL;
    }
    q->qp.qp_num = qpn;
    q->qp.handle = qpn;
    q->next = sv_g.qps;
    sv_g.qps = q;
    pthread_mutex_unlock(&sv_g.lock);
    a->cap = q->cap;
    return &q->qp;
}

/* caller holds sv_g.lock */
struct sv_qp *sv_qp_find(int dev, uint32_t qpn)
{
    for (struct sv_qp *q = sv_g.qps; q; q = q->next)
        if (q->qp.qp_num == qpn && q->ctx->dev->index == dev)
            return q;
    return NULL;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    struct sv_qp *q = (struct sv_qp *)ibqp;
    pthread_mutex_lock(&sv_g.lock);
    for (struct sv_qp **p = &sv_g.qps; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    sv_registry_remove(q->ctx->dev->index, ibqp->qp_num);
    if (q->conn)
        sv_conn_release(q->conn);
    pthread_mutex_unlock(&sv_g.lock);
    free(q->sq);
    free(q->rq);
    free(q->inline_buf);
    free(q);
    return 0;
}

/* ---- state machine ---- */

#define M(x) IBV_QP_##x
static const struct sv_trans {
    enum ibv_qp_state from, to;
    int req, opt;
} sv_trans[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS), 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS)},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
     M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX)},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) | M(MAX_QP_RD_ATOMIC),
     M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) | M(PATH_MIG_STATE)},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0,
     M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) | M(PATH_MIG_STATE) | M(MIN_RNR_TIMER)},
};
#undef M

static void sv_qp_reset(struct sv_qp *q)
{
    q->sq_head = q->sq_next_tx = q->sq_tail = 0;
    q->rq_head = q->rq_count = 0;
    q->retry_at_ns = 0;
    q->conn_failed = 0;
    q->posted = q->completed = 0;
    q->dest_dev = -1;
    if (q->conn) {
        sv_conn_release(q->conn);
        q->conn = NULL;
    }
    memset(&q->attr, 0, sizeof(q->attr));
}

/* The device a destination address names: by LID on InfiniBand, by GID on Ethernet. */
static int sv_resolve_dest(struct sv_qp *q, const struct ibv_ah_attr *ah)
{
    for (int d = 0; d < sv_g.ndev; d++) {
        struct sv_device *dev = &sv_g.devs[d];
        for (int p = 1; p <= dev->nports; p++) {
            if (!dev->eth) {
                uint16_t lid;
                sv_port_lid_gid(dev, p, &lid, NULL, 0);
                if (lid == ah->dlid)
                    return d;
                continue;
            }
            for (int i = 0; i < SV_GID_TABLE_ETH; i++) {
                union ibv_gid g;
                sv_port_lid_gid(dev, p, NULL, &g, i);
                if (!memcmp(&g, &ah->grh.dgid, sizeof(g)))
                    return d;
            }
        }
    }
    (void)q;
    return -1;
}

static int sv_check_attr(struct sv_qp *q, const struct ibv_qp_attr *a, int mask)
{
    struct sv_device *d = q->ctx->dev;
    if ((mask & IBV_QP_PORT) && (a->port_num < 1 || a->port_num > d->nports))
        return EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
        return EINVAL;
    if ((mask & IBV_QP_ACCESS_FLAGS) &&
        (a->qp_access_flags & ~(unsigned)(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                          IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE)))
        return EINVAL;
    if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
        return EINVAL;
    if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > SV_PSN_MASK)
        return EINVAL;
    if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > SV_PSN_MASK)
        return EINVAL;
    if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > SV_PSN_MASK)
        return EINVAL;
    if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
        return EINVAL;
    if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
        return EINVAL;
    if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
        return EINVAL;
    if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
        return EINVAL;
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > 16)
        return EINVAL;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > 16)
        return EINVAL;
    if (mask & IBV_QP_AV) {
        const struct ibv_ah_attr *ah = &a->ah_attr;
        if (ah->port_num < 1 || ah->port_num > d->nports)
            return EINVAL;
        if (d->eth && (!ah->is_global || ah->grh.sgid_index >= SV_GID_TABLE_ETH))
            return EINVAL; /* RoCE needs a GRH */
        if (!d->eth && !ah->is_global && ah->dlid == 0)
            return EINVAL;
        if (ah->is_global && ah->grh.sgid_index >= (d->eth ? SV_GID_TABLE_ETH : SV_GID_TABLE_IB))
            return EINVAL;
    }
    return 0;
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
    struct sv_qp *q = (struct sv_qp *)ibqp;
    pthread_mutex_lock(&sv_g.lock);
    enum ibv_qp_state cur = ibqp->state;
    if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != cur) {
        pthread_mutex_unlock(&sv_g.lock);
        return EINVAL;
    }
    enum ibv_qp_state to = (mask & IBV_QP_STATE) ? a->qp_state : cur;
    int rest = mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE);
    int rc = 0;
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
        if (rest)
            rc = EINVAL; /* to RESET or ERR takes no other attribute */
    } else {
        const struct sv_trans *t = NULL;
        for (size_t i = 0; i < sizeof(sv_trans) / sizeof(sv_trans[0]); i++)
            if (sv_trans[i].from == cur && sv_trans[i].to == to)
                t = &sv_trans[i];
        if (!t || (rest & t->req) != t->req || (rest & ~(t->req | t->opt | IBV_QP_CUR_STATE)))
            rc = EINVAL;
        else
            rc = sv_check_attr(q, a, rest);
    }
    if (rc) {
        pthread_mutex_unlock(&sv_g.lock);
        return rc;
    }
    if (to == IBV_QPS_RESET) {
        sv_qp_reset(q);
        ibqp->state = IBV_QPS_RESET;
        pthread_mutex_unlock(&sv_g.lock);
        return 0;
    }
    if (to == IBV_QPS_ERR) {
        sv_qp_to_error(q);
        pthread_mutex_unlock(&sv_g.lock);
        return 0;
    }
    struct ibv_qp_attr *s = &q->attr;
    if (rest & IBV_QP_PKEY_INDEX)
        s->pkey_index = a->pkey_index;
    if (rest & IBV_QP_PORT)
        s->port_num = a->port_num;
    if (rest & IBV_QP_ACCESS_FLAGS)
        s->qp_access_flags = a->qp_access_flags;
    if (rest & IBV_QP_AV) {
        s->ah_attr = a->ah_attr;
        q->dest_dev = sv_resolve_dest(q, &a->ah_attr);
    }
    if (rest & IBV_QP_PATH_MTU)
        s->path_mtu = a->path_mtu;
    if (rest & IBV_QP_DEST_QPN)
        s->dest_qp_num = a->dest_qp_num;
    if (rest & IBV_QP_RQ_PSN) {
        s->rq_psn = a->rq_psn;
        q->expected_psn = a->rq_psn;
    }
    if (rest & IBV_QP_MAX_DEST_RD_ATOMIC)
        s->max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (rest & IBV_QP_MIN_RNR_TIMER)
        s->min_rnr_timer = a->min_rnr_timer;
    if (rest & IBV_QP_TIMEOUT)
        s->timeout = a->timeout;
    if (rest & IBV_QP_RETRY_CNT)
        s->retry_cnt = a->retry_cnt;
    if (rest & IBV_QP_RNR_RETRY)
        s->rnr_retry = a->rnr_retry;
    if (rest & IBV_QP_SQ_PSN) {
        s->sq_psn = a->sq_psn;
        q->next_psn = a->sq_psn;
    }
    if (rest & IBV_QP_MAX_QP_RD_ATOMIC)
        s->max_rd_atomic = a->max_rd_atomic;
    if (rest & IBV_QP_ALT_PATH) {
        s->alt_ah_attr = a->alt_ah_attr;
        s->alt_pkey_index = a->alt_pkey_index;
        s->alt_port_num = a->alt_port_num;
        s->alt_timeout = a->alt_timeout;
    }
    if (rest & IBV_QP_PATH_MIG_STATE)
        s->path_mig_state = a->path_mig_state;
    q->attr_mask_set |= rest;
    ibqp->state = to;
    if (to == IBV_QPS_RTS)
        sv_kick(q);
    pthread_mutex_unlock(&sv_g.lock);
    return 0;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask,
                           struct ibv_qp_init_attr *init)
{
    struct sv_qp *q = (struct sv_qp *)ibqp;
    (void)mask;
    pthread_mutex_lock(&sv_g.lock);
    *a = q->attr;
    a->qp_state = ibqp->state;
    a->cur_qp_state = ibqp->state;
    a->cap = q->cap;
    memset(init, 0, sizeof(*init));
    init->qp_context = ibqp->qp_context;
    init->send_cq = ibqp->send_cq;
    init->recv_cq = ibqp->recv_cq;
    init->cap = q->cap;
    init->qp_type = IBV_QPT_RC;
    init->sq_sig_all = q->sq_sig_all;
    pthread_mutex_unlock(&sv_g.lock);
    return 0;
}

SV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
    (void)qp;
    (void)op;
    (void)flags;
    return 1; /* the whole message arrives in order */
}

/* ---- completion and errors (caller holds sv_g.lock) ---- */

static enum ibv_wc_opcode sv_wc_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return IBV_WC_FETCH_ADD;
    default:
        return IBV_WC_SEND;
    }
}

/* Complete the oldest send WQE with status st; an error moves the QP to error. */
void sv_qp_complete(struct sv_qp *q, struct sv_wqe *w, enum ibv_wc_status st)
{
    if (st != IBV_WC_SUCCESS || w->signaled) {
        struct ibv_wc wc;
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = w->wr_id;
        wc.status = st;
        wc.opcode = sv_wc_opcode(w->opcode);
        wc.byte_len = w->len;
        wc.qp_num = q->qp.qp_num;
        wc.vendor_err = st == IBV_WC_SUCCESS || st == IBV_WC_WR_FLUSH_ERR ? 0 : 0x5300u + st;
        sv_cq_push((struct sv_cq *)q->qp.send_cq, &wc, 0);
    }
    q->sq_head++;
    if (q->sq_next_tx < q->sq_head)
        q->sq_next_tx = q->sq_head;
    if (st != IBV_WC_SUCCESS && st != IBV_WC_WR_FLUSH_ERR) {
        sv_qp_to_error(q);
        return;
    }
    if (st == IBV_WC_SUCCESS && q->error_after && ++q->completed == q->error_after) {
        sv_qp_to_error(q);
        sv_async_event(q->ctx, IBV_EVENT_QP_FATAL, &q->qp);
    }
}

static void sv_flush_recv(struct sv_qp *q)
{
    while (q->rq_count) {
        struct sv_rwqe *r = &q->rq[q->rq_head];
        struct ibv_wc wc;
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = r->wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        wc.qp_num = q->qp.qp_num;
        q->rq_head = (q->rq_head + 1) % q->rq_cap;
        q->rq_count--;
        sv_cq_push((struct sv_cq *)q->qp.recv_cq, &wc, 0);
    }
}

void sv_qp_to_error(struct sv_qp *q)
{
    q->qp.state = IBV_QPS_ERR;
    q->retry_at_ns = 0;
    while (q->sq_head != q->sq_tail)
        sv_qp_complete(q, &q->sq[q->sq_head % q->sq_cap], IBV_WC_WR_FLUSH_ERR);
    sv_flush_recv(q);
}

/* ---- posting ---- */

int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct sv_qp *q = (struct sv_qp *)ibqp;
    int rc = 0;
    if (sv_stats.on)
        sv_stats_send();
    pthread_mutex_lock(&sv_g.lock);
    for (; wr; wr = wr->next) {
        if (ibqp->state != IBV_QPS_RTS && ibqp->state != IBV_QPS_ERR) {
            rc = EINVAL;
            break;
        }
        switch (wr->opcode) {
        case IBV_WR_SEND:
        case IBV_WR_SEND_WITH_IMM:
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
        case IBV_WR_RDMA_READ:
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            break;
        default:
            rc = EINVAL;
        }
        if (rc)
            break;
        if (wr->num_sge < 0 || (unsigned)wr->num_sge > q->cap.max_send_sge) {
            rc = EINVAL;
            break;
        }
        int atomic =
            wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
        if (atomic && (wr->num_sge != 1 || wr->sg_list[0].length != 8)) {
            rc = EINVAL;
            break;
        }
        uint64_t total = 0;
        for (int i = 0; i < wr->num_sge; i++)
            total += wr->sg_list[i].length;
        int inl = (wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ && !atomic;
        if ((inl && total > q->cap.max_inline_data) || total > (1ull << 31)) {
            rc = EINVAL;
            break;
        }
        if (q->sq_tail - q->sq_head >= q->sq_cap) {
            rc = ENOMEM;
            break;
        }
        struct sv_wqe *w = &q->sq[q->sq_tail % q->sq_cap];
        memset(w, 0, sizeof(*w));
        w->wr_id = wr->wr_id;
        w->opcode = wr->opcode;
        w->send_flags = wr->send_flags;
        w->imm = wr->imm_data;
        w->num_sge = wr->num_sge;
        memcpy(w->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
        w->len = (uint32_t)total;
        if (atomic) {
            w->raddr = wr->wr.atomic.remote_addr;
            w->rkey = wr->wr.atomic.rkey;
            w->compare_add = wr->wr.atomic.compare_add;
            w->swap = wr->wr.atomic.swap;
        } else {
            w->raddr = wr->wr.rdma.remote_addr;
            w->rkey = wr->wr.rdma.rkey;
        }
        if (inl) {
            w->inline_data =
                q->inline_buf + (size_t)(q->sq_tail % q->sq_cap) * q->cap.max_inline_data;
            size_t off = 0;
            for (int i = 0; i < wr->num_sge; i++) {
                memcpy(w->inline_data + off, (void *)(uintptr_t)wr->sg_list[i].addr,
                       wr->sg_list[i].length);
                off += wr->sg_list[i].length;
            }
        }
        w->signaled = q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
        w->psn = q->next_psn;
        q->next_psn = (q->next_psn + 1) & SV_PSN_MASK;
        w->fail = q->fail_wr && ++q->posted == q->fail_wr;
        if (!q->fail_wr)
            q->posted++;
        q->sq_tail++;
        if (ibqp->state == IBV_QPS_ERR)
            sv_qp_complete(q, w, IBV_WC_WR_FLUSH_ERR);
    }
    if (ibqp->state == IBV_QPS_RTS)
        sv_kick(q);
    pthread_mutex_unlock(&sv_g.lock);
    if (rc)
        *bad = wr;
    return rc;
}

int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct sv_qp *q = (struct sv_qp *)ibqp;
    int rc = 0;
    pthread_mutex_lock(&sv_g.lock);
    for (; wr; wr = wr->next) {
        if (ibqp->state == IBV_QPS_RESET || wr->num_sge < 0 ||
            (unsigned)wr->num_sge > q->cap.max_recv_sge) {
            rc = EINVAL;
            break;
        }
        if (q->rq_count >= q->rq_cap) {
            rc = ENOMEM;
            break;
        }
        struct sv_rwqe *r = &q->rq[(q->rq_head + q->rq_count) % q->rq_cap];
        r->wr_id = wr->wr_id;
        r->num_sge = wr->num_sge;
        memcpy(r->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
        q->rq_count++;
        if (ibqp->state == IBV_QPS_ERR)
            sv_flush_recv(q);
    }
    pthread_mutex_unlock(&sv_g.lock);
    if (rc)
        *bad = wr;
    return rc;
}
