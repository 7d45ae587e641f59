/*
 * verbs_setup.c: btl/verbs module setup on one port (context, PD, CQ and its
 * completion channel for event mode, registered fragment lists, one QP per
 * rank with its receives posted) and teardown.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "components/btl/verbs/verbs.h"
#include <fcntl.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

#define PX_BTL_VERBS_HDR sizeof(px_btl_verbs_hdr_t)

/* ---- event mode: the progress engine's waiter ---- */

/* Arm the CQ for one completion event, then poll once: what completed
 * between the last poll and the arming would raise no event. */
static int px_btl_verbs_arm(void *ctx)
{
    px_btl_verbs_module_t *m = ctx;
    int rc = ibv_req_notify_cq(m->cq, 0);
    if (PX_UNLIKELY(0 != rc)) {
        char detail[200];
        snprintf(detail, sizeof(detail), "failed (%s): polling instead", strerror(rc));
        px_btl_verbs_report(m, NULL, PX_ERR_COMM, "ibv_req_notify_cq", detail);
        return 1; /* do not sleep on a channel that will not wake us */
    }
    return px_btl_verbs_progress(&m->super);
}

/* The channel's descriptor was readable: take and acknowledge the events. */
static void px_btl_verbs_drain(void *ctx)
{
    px_btl_verbs_module_t *m = ctx;
    struct ibv_cq *cq;
    void *cq_ctx;
    while (0 == ibv_get_cq_event(m->channel, &cq, &cq_ctx))
        m->cq_events++;
    if (m->cq_events) {
        ibv_ack_cq_events(m->cq, (unsigned)m->cq_events);
        m->cq_events = 0;
    }
}

static void px_btl_verbs_teardown(px_btl_verbs_module_t *m);

static int px_btl_verbs_fail(px_btl_verbs_module_t *m, const char *call, int err)
{
    px_show_error("btl/verbs: %s failed on %s port %u: %s", call, m->port.dev_name, m->port.port,
                  strerror(err));
    px_btl_verbs_teardown(m);
    return PX_ERR_NOT_AVAILABLE;
}

int px_btl_verbs_module_init(px_btl_verbs_module_t *m, int nranks)
{
    px_btl_module_t *b = &m->super;
    m->ctx = NULL;
    m->pd = NULL;
    m->ka_buf = NULL;
    m->ka_mr = NULL;
    m->idle_polls = 0;
    m->idle_since = 0;
    m->cq = NULL;
    m->channel = NULL;
    m->waiter = false;
    m->cq_events = 0;
    m->lists_ready = false;
    m->payload_allocator = NULL;
    m->rcache = NULL;
    m->error_cb = NULL;
    m->blocked = NULL;
    m->reposts = NULL;
    m->draining = false;
    m->outstanding = 0;
    m->peers = NULL;
    m->num_peers = 0;
    m->dyn = NULL;
    m->num_dyn = 0;
    m->dyn_zombies = NULL;
    m->reasons = (px_btl_base_reasons_t){0};
    m->my_rank = px_boot ? px_boot->rank : 0;
    /* A starting PSN of our own (no global random state touched). */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)m->index;
    m->psn = (uint32_t)((seed * 0x9e3779b97f4a7c15ull) >> 40) & 0xffffffu;

    b->btl_add_procs = px_btl_verbs_add_procs;
    b->btl_del_procs = px_btl_verbs_del_procs;
    b->btl_finalize = px_btl_verbs_module_finalize;
    b->btl_alloc = px_btl_verbs_alloc;
    b->btl_free = px_btl_verbs_free;
    b->btl_prepare_src = px_btl_verbs_prepare_src;
    b->btl_send = px_btl_verbs_send;
    b->btl_sendi = px_btl_verbs_sendi;
    px_btl_verbs_rdma_install(b);
    b->btl_flush = px_btl_verbs_flush;
    b->btl_progress = px_btl_verbs_progress;
    b->btl_register_error = px_btl_verbs_register_error;
    b->btl_dyn_offer = px_btl_verbs_dyn_offer;
    b->btl_dyn_accept = px_btl_verbs_dyn_accept;
    b->btl_dyn_complete = px_btl_verbs_dyn_complete;
    b->btl_dyn_remove = px_btl_verbs_dyn_remove;

    /* The device's limits are the module's figures. */
    size_t max_msg = m->port.pattr.max_msg_sz ? m->port.pattr.max_msg_sz : (size_t)1 << 31;
    if (b->btl_max_send_size + PX_BTL_VERBS_HDR > max_msg)
        b->btl_max_send_size = max_msg - PX_BTL_VERBS_HDR;
    if (b->btl_eager_limit > b->btl_max_send_size)
        b->btl_eager_limit = b->btl_max_send_size;
    if (b->btl_put_limit > max_msg)
        b->btl_put_limit = max_msg;
    if (b->btl_get_limit > max_msg)
        b->btl_get_limit = max_msg;
    m->frag_size = PX_BTL_VERBS_HDR + b->btl_max_send_size;
    int max_wr = m->port.dattr.max_qp_wr > 0 ? m->port.dattr.max_qp_wr : 1024;
    m->sq_size = px_btl_verbs_sq_size < max_wr ? px_btl_verbs_sq_size : max_wr;
    m->rq_size = px_btl_verbs_num_recvs + px_btl_verbs_ctl_recvs;
    if (m->rq_size > max_wr)
        return px_btl_verbs_fail(m,
                                 "sizing the receive queue (btl_verbs_num_recvs + "
                                 "btl_verbs_ctl_recvs exceeds the device's max_qp_wr)",
                                 EINVAL);
    m->max_inline = px_btl_verbs_max_inline;

    int ndev = 0;
    struct ibv_device **list = ibv_get_device_list(&ndev);
    if (NULL == list || m->port.dev_index >= ndev)
        return px_btl_verbs_fail(m, "ibv_get_device_list", ENODEV);
    m->ctx = ibv_open_device(list[m->port.dev_index]);
    ibv_free_device_list(list);
    if (NULL == m->ctx)
        return px_btl_verbs_fail(m, "ibv_open_device", errno ? errno : ENODEV);
    m->pd = ibv_alloc_pd(m->ctx);
    if (NULL == m->pd)
        return px_btl_verbs_fail(m, "ibv_alloc_pd", errno ? errno : ENOMEM);
    m->ka_buf = aligned_alloc(64, 64);
    if (NULL == m->ka_buf)
        return px_btl_verbs_fail(m, "malloc", ENOMEM);
    memset(m->ka_buf, 0, 64);
    m->ka_mr = ibv_reg_mr(m->pd, m->ka_buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    if (NULL == m->ka_mr)
        return px_btl_verbs_fail(m, "ibv_reg_mr (keepalive word)", errno ? errno : ENOMEM);
    long cqe = (long)nranks * (m->sq_size + m->rq_size);
    if (m->port.dattr.max_cqe > 0 && cqe > m->port.dattr.max_cqe)
        cqe = m->port.dattr.max_cqe; /* SQs are not filled at once in practice; see docs */
    if (PX_BTL_VERBS_PROGRESS_EVENT == px_btl_verbs_progress_mode) {
        /* Event mode: completions also raise an event on a channel whose
         * descriptor the progress engine sleeps on (non-blocking, so that
         * draining it never waits). */
        m->channel = ibv_create_comp_channel(m->ctx);
        if (NULL == m->channel)
            return px_btl_verbs_fail(m, "ibv_create_comp_channel (btl_verbs_progress_mode=event)",
                                     errno ? errno : ENOMEM);
        int fl = fcntl(m->channel->fd, F_GETFL);
        if (fl < 0 || 0 != fcntl(m->channel->fd, F_SETFL, fl | O_NONBLOCK))
            return px_btl_verbs_fail(m, "fcntl(O_NONBLOCK) on the completion channel", errno);
    }
    m->cq = ibv_create_cq(m->ctx, (int)cqe, m, m->channel, 0);
    if (NULL == m->cq)
        return px_btl_verbs_fail(m, "ibv_create_cq", errno ? errno : ENOMEM);
    if (m->channel) {
        px_progress_waiter_t w = {.fd = m->channel->fd,
                                  .arm = px_btl_verbs_arm,
                                  .drain = px_btl_verbs_drain,
                                  .ctx = &m->super};
        int wrc = px_progress_waiter_register(&w);
        if (PX_SUCCESS != wrc)
            return px_btl_verbs_fail(m,
                                     "registering the completion channel with the progress "
                                     "engine",
                                     ENOMEM);
        m->waiter = true;
    }
    memset(&m->gid, 0, sizeof(m->gid));
    if (0 != ibv_query_gid(m->ctx, m->port.port, px_btl_verbs_gid_index, &m->gid) &&
        IBV_LINK_LAYER_ETHERNET == m->port.pattr.link_layer)
        return px_btl_verbs_fail(m, "ibv_query_gid (btl_verbs_gid_index)", EINVAL);

    px_free_list_allocator_t *alloc = malloc(sizeof(*alloc));
    if (NULL == alloc)
        return px_btl_verbs_fail(m, "malloc", ENOMEM);
    alloc->alloc = px_btl_verbs_payload_alloc;
    alloc->free = px_btl_verbs_payload_free;
    alloc->ctx = m;
    PX_OBJ_CONSTRUCT(&m->send_frags, px_free_list_t);
    PX_OBJ_CONSTRUCT(&m->recv_frags, px_free_list_t);
    PX_OBJ_CONSTRUCT(&m->rdma_ops, px_free_list_t);
    m->lists_ready = true;
    m->payload_allocator = alloc;
    px_free_list_params_t fp = {
        .item_class = PX_CLASS(px_btl_verbs_frag_t),
        .payload_size = m->frag_size,
        .num_initial = 16,
        .num_per_grow = 16,
        .payload_allocator = alloc,
    };
    int rc = px_free_list_init(&m->send_frags, &fp);
    if (PX_SUCCESS == rc) {
        fp.num_initial = (size_t)m->rq_size;
        fp.num_per_grow = (size_t)m->rq_size;
        rc = px_free_list_init(&m->recv_frags, &fp);
    }
    if (PX_SUCCESS == rc) {
        px_free_list_params_t rp = {
            .item_class = PX_CLASS(px_btl_verbs_rdma_op_t), .num_initial = 16, .num_per_grow = 32};
        rc = px_free_list_init(&m->rdma_ops, &rp);
    }
    if (PX_SUCCESS != rc)
        return px_btl_verbs_fail(m, "allocating registered fragments", ENOMEM);
    px_rcache_params_t cp = {.name = "btl/verbs",
                             .entry_size = sizeof(px_btl_verbs_reg_t),
                             .register_fn = px_btl_verbs_rcache_reg,
                             .deregister_fn = px_btl_verbs_rcache_dereg,
                             .ctx = m,
                             .max_entries = px_btl_verbs_net.rcache_max_entries,
                             .max_bytes = px_btl_verbs_net.rcache_max_bytes};
    if (PX_SUCCESS != px_rcache_create(&cp, &m->rcache))
        return px_btl_verbs_fail(m, "creating the registration cache", ENOMEM);

    /* One QP per rank, in INIT with its receives posted, so its number can
     * go through the modex; add_procs connects them. */
    m->peers = calloc((size_t)nranks, sizeof(*m->peers));
    if (NULL == m->peers)
        return px_btl_verbs_fail(m, "malloc", ENOMEM);
    m->num_peers = (size_t)nranks;
    for (int r = 0; r < nranks; ++r) {
        px_btl_endpoint_t *ep = calloc(1, sizeof(*ep));
        if (NULL == ep)
            return px_btl_verbs_fail(m, "malloc", ENOMEM);
        m->peers[r] = ep;
        ep->module = m;
        ep->rank = r;
        ep->inline_ctx.type = PX_BTL_VERBS_OP_INLINE;
        ep->inline_ctx.endpoint = ep;
        ep->ka_ctx.type = PX_BTL_VERBS_OP_KEEPALIVE;
        ep->ka_ctx.endpoint = ep;
        rc = px_btl_verbs_create_qp(m, ep);
        if (PX_SUCCESS != rc) {
            px_btl_verbs_teardown(m);
            return rc;
        }
        rc = px_btl_verbs_post_recvs(m, ep);
        if (PX_SUCCESS != rc)
            return px_btl_verbs_fail(m, "posting receives", ENOMEM);
    }
    return PX_SUCCESS;
}

void px_btl_verbs_ep_free(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep)
{
    if (ep->qp)
        ibv_destroy_qp(ep->qp);
    ep->qp = NULL;
    for (int i = 0; i < ep->num_recvs; ++i)
        px_free_list_return(&m->recv_frags, &ep->recvs[i]->super.base.super);
    free(ep->recvs);
    free(ep);
}

static void px_btl_verbs_teardown(px_btl_verbs_module_t *m)
{
    for (px_btl_endpoint_t *ep = m->blocked; ep; ep = ep->next_blocked)
        px_btl_verbs_fail_pending(m, ep, PX_ERR_COMM);
    m->blocked = NULL;
    m->reposts = NULL; /* their buffers are in ep->recvs */
    px_btl_verbs_dyn_cleanup(m);
    for (size_t r = 0; r < m->num_peers; ++r) {
        px_btl_endpoint_t *ep = m->peers[r];
        if (NULL != ep)
            px_btl_verbs_ep_free(m, ep);
    }
    free(m->peers);
    m->peers = NULL;
    m->num_peers = 0;
    if (m->lists_ready) {
        PX_OBJ_DESTRUCT(&m->send_frags);
        PX_OBJ_DESTRUCT(&m->recv_frags);
        PX_OBJ_DESTRUCT(&m->rdma_ops);
        m->lists_ready = false;
    }
    free(m->payload_allocator);
    m->payload_allocator = NULL;
    if (m->rcache)
        px_rcache_destroy(m->rcache);
    m->rcache = NULL;
    if (m->waiter)
        px_progress_waiter_unregister(&m->super);
    m->waiter = false;
    if (m->channel)
        px_btl_verbs_drain(m); /* every event acknowledged, or destroy_cq waits */
    if (m->cq)
        ibv_destroy_cq(m->cq);
    m->cq = NULL;
    if (m->channel)
        ibv_destroy_comp_channel(m->channel);
    m->channel = NULL;
    if (m->ka_mr)
        ibv_dereg_mr(m->ka_mr);
    m->ka_mr = NULL;
    free(m->ka_buf);
    m->ka_buf = NULL;
    if (m->pd)
        ibv_dealloc_pd(m->pd);
    m->pd = NULL;
    if (m->ctx)
        ibv_close_device(m->ctx);
    m->ctx = NULL;
    px_btl_base_reasons_free(&m->reasons);
}

int px_btl_verbs_module_finalize(px_btl_module_t *btl)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    px_btl_verbs_teardown(m);
    for (int i = 0; i < px_btl_verbs_num_modules; ++i)
        if (px_btl_verbs_modules[i] == m)
            px_btl_verbs_modules[i] = NULL;
    free(btl);
    return PX_SUCCESS;
}
