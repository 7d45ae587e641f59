/*
 * ofi_setup.c: btl/ofi module setup and teardown: fabric, domain, address
 * vector, completion queue and endpoint, the module's operations, the
 * fragment free lists and registration cache, the receives posted ahead;
 * and the reverse.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/ofi/ofi.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

#define PX_BTL_OFI_HDR sizeof(px_btl_ofi_hdr_t)

static void px_btl_ofi_teardown(px_btl_ofi_module_t *m);

/* Setup failed in `call`: say so, release what was made. */
static int px_btl_ofi_fail(px_btl_ofi_module_t *m, const char *call, int rc)
{
    px_show_error("btl/ofi: %s failed on provider %s (domain %s): %s", call, px_btl_ofi_prov(m),
                  m->info && m->info->domain_attr ? m->info->domain_attr->name : "?",
                  px_btl_ofi_strerror(rc));
    px_btl_ofi_teardown(m);
    return PX_ERR_NOT_AVAILABLE;
}

/* Open RDMA lanes 1..btl_ofi_rdma_lanes-1: each an endpoint on the
 * module's domain and address vector, with its own completion queue. A lane
 * that cannot be opened ends the list there (said with btl_ofi_verbose). */
static void px_btl_ofi_open_lanes(px_btl_ofi_module_t *m)
{
    m->nlanes = 1;
    m->lane_ep[0] = m->ep;
    m->lane_cq[0] = m->cq;
    memcpy(m->lane_name[0], m->addr, m->addrlen);
    m->lane_namelen[0] = m->addrlen;
    unsigned want = px_btl_ofi_rdma_lanes < 1 ? 1 : (unsigned)px_btl_ofi_rdma_lanes;
    if (want > PX_BTL_OFI_LANES_MAX)
        want = PX_BTL_OFI_LANES_MAX;
    if (want > 1 && (m->mr_endpoint || !(m->info->caps & FI_RMA))) {
        PX_OUTPUT_VERBOSE(1, px_btl_ofi_output,
                          "btl/ofi (%s): one RDMA lane, not %u (btl_ofi_rdma_lanes): the provider "
                          "%s",
                          px_btl_ofi_prov(m), want,
                          m->mr_endpoint ? "binds registrations to one endpoint (FI_MR_ENDPOINT)"
                                         : "offers no RMA");
        return;
    }
    for (unsigned l = 1; l < want; ++l) {
        struct fi_cq_attr cq_attr = {
            .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE, .size = 0};
        const char *call = "fi_cq_open";
        struct fid_ep *ep = NULL;
        struct fid_cq *cq = NULL;
        int rc = fi_cq_open(m->domain, &cq_attr, &cq, NULL);
        if (0 == rc) {
            call = "fi_endpoint";
            rc = fi_endpoint(m->domain, m->info, &ep, NULL);
        }
        if (0 == rc) {
            call = "fi_ep_bind";
            rc = fi_ep_bind(ep, &m->av->fid, 0);
            if (0 == rc)
                rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
        }
        if (0 == rc) {
            call = "fi_enable";
            rc = fi_enable(ep);
        }
        if (0 == rc) {
            call = "fi_getname";
            m->lane_namelen[l] = sizeof(m->lane_name[l]);
            rc = fi_getname(&ep->fid, m->lane_name[l], &m->lane_namelen[l]);
        }
        if (0 != rc) {
            PX_OUTPUT_VERBOSE(1, px_btl_ofi_output,
                              "btl/ofi (%s): RDMA lane %u of %u (btl_ofi_rdma_lanes): %s failed: "
                              "%s; using %u lane(s)",
                              px_btl_ofi_prov(m), l, want, call, px_btl_ofi_strerror(rc), l);
            if (ep)
                fi_close(&ep->fid);
            if (cq)
                fi_close(&cq->fid);
            return;
        }
        m->lane_ep[l] = ep;
        m->lane_cq[l] = cq;
        m->nlanes = l + 1;
    }
}

int px_btl_ofi_module_init(px_btl_ofi_module_t *m, struct fi_info *info)
{
    px_btl_module_t *b = &m->super;
    m->info = info;
    m->fabric = NULL;
    m->domain = NULL;
    m->av = NULL;
    m->cq = NULL;
    m->ep = NULL;
    m->nlanes = 0;
    memset(m->lane_ep, 0, sizeof(m->lane_ep));
    memset(m->lane_cq, 0, sizeof(m->lane_cq));
    m->lane_peers = 0;
    memset(m->lane_ops, 0, sizeof(m->lane_ops));
    m->rdma_lane_min = px_btl_ofi_rdma_lane_min < 4096 ? 4096 : px_btl_ofi_rdma_lane_min;
    m->rdma_blocked = NULL;
    m->lists_ready = false;
    m->posted = NULL;
    m->num_posted = 0;
    m->rcache = NULL;
    m->error_cb = NULL;
    m->blocked = NULL;
    m->draining = false;
    m->outstanding = 0;
    m->peers = NULL;
    m->num_peers = 0;
    m->reasons = (px_btl_base_reasons_t){0};
    m->next_key = 1;
    m->my_rank = px_boot ? px_boot->rank : 0;
    m->job_size = px_boot && px_boot->size > 0 ? (size_t)px_boot->size : 1;
    m->bad_recvs = 0;
    uint64_t mr_mode = info->domain_attr->mr_mode;
    m->mr_local = 0 != (mr_mode & FI_MR_LOCAL);
    m->mr_virt_addr = 0 != (mr_mode & FI_MR_VIRT_ADDR);
    m->mr_prov_key = 0 != (mr_mode & FI_MR_PROV_KEY);
    m->mr_endpoint = 0 != (mr_mode & FI_MR_ENDPOINT);
    m->inject_size = info->tx_attr->inject_size;
    if (m->inject_size > 1024)
        m->inject_size = 1024; /* it is built on the stack */

    b->btl_add_procs = px_btl_ofi_add_procs;
    b->btl_del_procs = px_btl_ofi_del_procs;
    b->btl_finalize = px_btl_ofi_module_finalize;
    b->btl_alloc = px_btl_ofi_alloc;
    b->btl_free = px_btl_ofi_free;
    b->btl_prepare_src = px_btl_ofi_prepare_src;
    b->btl_send = px_btl_ofi_send;
    b->btl_sendi = px_btl_ofi_sendi;
    px_btl_ofi_rdma_install(b);
    b->btl_flush = px_btl_ofi_flush;
    b->btl_progress = px_btl_ofi_progress;
    b->btl_register_error = px_btl_ofi_register_error;
    b->btl_dyn_offer = px_btl_ofi_dyn_offer;
    b->btl_dyn_accept = px_btl_ofi_dyn_accept;
    b->btl_dyn_complete = px_btl_ofi_dyn_complete;
    b->btl_dyn_remove = px_btl_ofi_dyn_remove;
    size_t max_msg = info->ep_attr->max_msg_size;
    if (b->btl_max_send_size + PX_BTL_OFI_HDR > max_msg)
        b->btl_max_send_size = max_msg - PX_BTL_OFI_HDR;
    if (b->btl_eager_limit > b->btl_max_send_size)
        b->btl_eager_limit = b->btl_max_send_size;
    if (b->btl_put_limit > max_msg)
        b->btl_put_limit = max_msg;
    if (b->btl_get_limit > max_msg)
        b->btl_get_limit = max_msg;
    if (!(info->caps & FI_RMA))
        b->btl_flags &= ~(uint32_t)PX_BTL_FLAGS_RDMA;
    m->frag_size = PX_BTL_OFI_HDR + b->btl_max_send_size;

    int rc = fi_fabric(info->fabric_attr, &m->fabric, NULL);
    if (rc)
        return px_btl_ofi_fail(m, "fi_fabric", rc);
    rc = fi_domain(m->fabric, info, &m->domain, NULL);
    if (rc)
        return px_btl_ofi_fail(m, "fi_domain", rc);
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE, .size = 0};
    rc = fi_cq_open(m->domain, &cq_attr, &m->cq, NULL);
    if (rc)
        return px_btl_ofi_fail(m, "fi_cq_open", rc);
    struct fi_av_attr av_attr = {.type = info->domain_attr->av_type};
    rc = fi_av_open(m->domain, &av_attr, &m->av, NULL);
    if (rc)
        return px_btl_ofi_fail(m, "fi_av_open", rc);
    rc = fi_endpoint(m->domain, info, &m->ep, NULL);
    if (rc)
        return px_btl_ofi_fail(m, "fi_endpoint", rc);
    rc = fi_ep_bind(m->ep, &m->av->fid, 0);
    if (0 == rc)
        rc = fi_ep_bind(m->ep, &m->cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc)
        return px_btl_ofi_fail(m, "fi_ep_bind", rc);
    rc = fi_enable(m->ep);
    if (rc)
        return px_btl_ofi_fail(m, "fi_enable", rc);
    m->addrlen = sizeof(m->addr);
    rc = fi_getname(&m->ep->fid, m->addr, &m->addrlen);
    if (rc)
        return px_btl_ofi_fail(m, "fi_getname", rc);
    px_btl_ofi_open_lanes(m);

    px_free_list_allocator_t *alloc = malloc(sizeof(*alloc));
    if (NULL == alloc)
        return px_btl_ofi_fail(m, "malloc", -FI_ENOMEM);
    alloc->alloc = px_btl_ofi_payload_alloc;
    alloc->free = px_btl_ofi_payload_free;
    alloc->ctx = m;
    PX_OBJ_CONSTRUCT(&m->send_frags, px_free_list_t);
    PX_OBJ_CONSTRUCT(&m->recv_frags, px_free_list_t);
    PX_OBJ_CONSTRUCT(&m->rdma_ops, px_free_list_t);
    m->lists_ready = true;
    m->payload_allocator = alloc;
    int nrecv = px_btl_ofi_num_recvs > 0 ? px_btl_ofi_num_recvs : 1;
    px_free_list_params_t fp = {
        .item_class = PX_CLASS(px_btl_ofi_frag_t),
        .payload_size = m->frag_size,
        .num_initial = 16,
        .num_per_grow = 16,
        .num_max = 0,
        .payload_allocator = alloc,
    };
    rc = px_free_list_init(&m->send_frags, &fp);
    if (PX_SUCCESS == rc) {
        fp.num_initial = (size_t)nrecv;
        fp.num_per_grow = (size_t)nrecv;
        rc = px_free_list_init(&m->recv_frags, &fp);
    }
    if (PX_SUCCESS == rc) {
        px_free_list_params_t rp = {
            .item_class = PX_CLASS(px_btl_ofi_rdma_op_t), .num_initial = 16, .num_per_grow = 32};
        rc = px_free_list_init(&m->rdma_ops, &rp);
    }
    if (PX_SUCCESS != rc) {
        px_show_error("btl/ofi (%s): could not allocate %sfragments: %s", px_btl_ofi_prov(m),
                      m->mr_local ? "registered " : "", px_strerror(rc));
        px_btl_ofi_teardown(m);
        return rc;
    }
    px_rcache_params_t cp = {.name = "btl/ofi",
                             .entry_size = sizeof(px_btl_ofi_reg_t),
                             .register_fn = px_btl_ofi_rcache_reg,
                             .deregister_fn = px_btl_ofi_rcache_dereg,
                             .ctx = m,
                             .max_entries = px_btl_ofi_net.rcache_max_entries,
                             .max_bytes = px_btl_ofi_net.rcache_max_bytes};
    rc = px_rcache_create(&cp, &m->rcache);
    if (PX_SUCCESS != rc)
        return px_btl_ofi_fail(m, "creating the registration cache", -FI_ENOMEM);
    m->posted = calloc((size_t)nrecv, sizeof(*m->posted));
    if (NULL == m->posted)
        return px_btl_ofi_fail(m, "malloc", -FI_ENOMEM);
    for (int i = 0; i < nrecv; ++i) {
        px_btl_ofi_frag_t *f = (px_btl_ofi_frag_t *)px_free_list_get(&m->recv_frags);
        if (NULL == f)
            return px_btl_ofi_fail(m, "allocating receive buffers", -FI_ENOMEM);
        f->ctx.type = PX_BTL_OFI_OP_RECV;
        f->endpoint = NULL;
        m->posted[m->num_posted++] = f;
        if (PX_SUCCESS != px_btl_ofi_post_recv(m, f)) {
            px_btl_ofi_teardown(m);
            return PX_ERR_COMM;
        }
    }
    return PX_SUCCESS;
}

static void px_btl_ofi_teardown(px_btl_ofi_module_t *m)
{
    if (m->nlanes > 1)
        PX_OUTPUT_VERBOSE(10, px_btl_ofi_output,
                          "btl/ofi (%s): RDMA operations posted per lane: %llu %llu %llu %llu "
                          "%llu %llu %llu %llu",
                          px_btl_ofi_prov(m), (unsigned long long)m->lane_ops[0],
                          (unsigned long long)m->lane_ops[1], (unsigned long long)m->lane_ops[2],
                          (unsigned long long)m->lane_ops[3], (unsigned long long)m->lane_ops[4],
                          (unsigned long long)m->lane_ops[5], (unsigned long long)m->lane_ops[6],
                          (unsigned long long)m->lane_ops[7]);
    /* Fail what is still queued, so no request waits for it forever. */
    for (px_btl_endpoint_t *ep = m->blocked; ep; ep = ep->next_blocked)
        px_btl_ofi_fail_pending(m, ep, PX_ERR_COMM);
    m->blocked = NULL;
    if (m->lists_ready)
        px_btl_ofi_rdma_fail_blocked(m, NULL, PX_ERR_COMM);
    if (m->ep)
        fi_close(&m->ep->fid);
    m->ep = NULL;
    for (unsigned l = 1; l < PX_BTL_OFI_LANES_MAX; ++l) {
        if (m->lane_ep[l])
            fi_close(&m->lane_ep[l]->fid);
        m->lane_ep[l] = NULL;
    }
    if (m->lists_ready) {
        for (int i = 0; i < m->num_posted; ++i)
            px_free_list_return(&m->recv_frags, &m->posted[i]->super.base.super);
        PX_OBJ_DESTRUCT(&m->send_frags);
        PX_OBJ_DESTRUCT(&m->recv_frags);
        PX_OBJ_DESTRUCT(&m->rdma_ops);
        free(m->payload_allocator);
        m->lists_ready = false;
    }
    free(m->posted);
    m->posted = NULL;
    m->num_posted = 0;
    if (m->rcache)
        px_rcache_destroy(m->rcache);
    m->rcache = NULL;
    if (m->av)
        px_btl_ofi_dyn_cleanup(m);
    for (size_t i = 0; i < m->num_peers; ++i) {
        if (m->peers[i])
            px_btl_ofi_probe_close(m->peers[i]);
        free(m->peers[i]);
    }
    free(m->peers);
    m->peers = NULL;
    m->num_peers = 0;
    if (m->av)
        fi_close(&m->av->fid);
    if (m->cq)
        fi_close(&m->cq->fid);
    for (unsigned l = 1; l < PX_BTL_OFI_LANES_MAX; ++l) {
        if (m->lane_cq[l])
            fi_close(&m->lane_cq[l]->fid);
        m->lane_cq[l] = NULL;
    }
    m->lane_ep[0] = NULL;
    m->lane_cq[0] = NULL;
    m->nlanes = 0;
    if (m->domain)
        fi_close(&m->domain->fid);
    if (m->fabric)
        fi_close(&m->fabric->fid);
    m->av = NULL;
    m->cq = NULL;
    m->domain = NULL;
    m->fabric = NULL;
    px_btl_base_reasons_free(&m->reasons);
    if (m->info)
        fi_freeinfo(m->info);
    m->info = NULL;
}

int px_btl_ofi_module_finalize(px_btl_module_t *btl)
{
    px_btl_ofi_teardown((px_btl_ofi_module_t *)btl);
    free(btl);
    return PX_SUCCESS;
}
