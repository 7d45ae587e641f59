/*
 * verbs_rdma.c: btl/verbs memory registration and RDMA. Free-list chunks are
 * registered as they are allocated (the fragments' lkey); user memory goes
 * through the BTL base's registration cache; put/get are IBV_WR_RDMA_WRITE /
 * IBV_WR_RDMA_READ, signaled, completed by verbs_module.c's progress.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/verbs/verbs.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/base.h"

PX_CLASS_INSTANCE(px_btl_verbs_rdma_op_t, px_free_list_item_t, NULL, NULL);

#define PX_BTL_VERBS_ACCESS                                                                        \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)

static struct ibv_mr *px_btl_verbs_mr_reg(px_btl_verbs_module_t *m, void *base, size_t len)
{
    struct ibv_mr *mr = ibv_reg_mr(m->pd, base, len, PX_BTL_VERBS_ACCESS);
    if (NULL == mr)
        PX_OUTPUT_VERBOSE(1, px_btl_verbs_output,
                          "btl/verbs (%s:%u): ibv_reg_mr of %zu bytes at "
                          "%p: %s",
                          m->port.dev_name, m->port.port, len, base, strerror(errno));
    return mr;
}

void *px_btl_verbs_payload_alloc(void *ctx, size_t size, size_t align, void **cookie)
{
    px_btl_verbs_module_t *m = ctx;
    size_t rounded = (size + align - 1) / align * align;
    void *p = aligned_alloc(align, rounded);
    *cookie = NULL;
    if (NULL == p)
        return NULL;
    struct ibv_mr *mr = px_btl_verbs_mr_reg(m, p, rounded);
    if (NULL == mr) {
        free(p);
        return NULL;
    }
    *cookie = mr;
    return p;
}

void px_btl_verbs_payload_free(void *ctx, void *ptr, size_t size, void *cookie)
{
    (void)ctx;
    (void)size;
    if (cookie)
        ibv_dereg_mr(cookie);
    free(ptr);
}

int px_btl_verbs_rcache_reg(void *ctx, px_rcache_entry_t *e)
{
    px_btl_verbs_module_t *m = ctx;
    px_btl_verbs_reg_t *r = (px_btl_verbs_reg_t *)e;
    r->mr = px_btl_verbs_mr_reg(m, (void *)e->base, e->bound - e->base);
    if (NULL == r->mr)
        return (ENOMEM == errno || EAGAIN == errno) ? PX_ERR_OUT_OF_RESOURCE : PX_ERR_COMM;
    r->handle.rkey = r->mr->rkey;
    r->handle.lkey = r->mr->lkey;
    r->handle.base = e->base;
    return PX_SUCCESS;
}

int px_btl_verbs_rcache_dereg(void *ctx, px_rcache_entry_t *e)
{
    (void)ctx;
    px_btl_verbs_reg_t *r = (px_btl_verbs_reg_t *)e;
    if (r->mr)
        ibv_dereg_mr(r->mr);
    r->mr = NULL;
    return PX_SUCCESS;
}

PX_BTL_BASE_RCACHE_REGISTER_MEM(px_btl_verbs, px_btl_verbs_module_t, px_btl_verbs_reg_t)

static inline int px_btl_verbs_rdma(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                    const px_btl_rdma_args_t *a)
{
    px_btl_verbs_module_t *m = (px_btl_verbs_module_t *)btl;
    const bool write = PX_BTL_RDMA_PUT == a->dir;
    if (PX_UNLIKELY(endpoint->failed || !endpoint->connected))
        return PX_ERR_UNREACH;
    if (PX_UNLIKELY(NULL == a->remote_handle ||
                    a->size > (write ? m->super.btl_put_limit : m->super.btl_get_limit)))
        return PX_ERR_BAD_PARAM;
    if (PX_UNLIKELY(endpoint->sq_free <= 0))
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    px_btl_verbs_rdma_op_t *op = (px_btl_verbs_rdma_op_t *)px_free_list_get(&m->rdma_ops);
    if (NULL == op)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    op->ctx.type = PX_BTL_VERBS_OP_RDMA;
    op->ctx.endpoint = endpoint;
    px_btl_base_rdma_req_start(&op->req, a);
    uint32_t lkey;
    if (a->local_handle) {
        lkey = a->local_handle->lkey;
    } else {
        px_rcache_entry_t *e = px_btl_base_rdma_req_register(&op->req, m->rcache, a);
        if (NULL == e) {
            px_free_list_return(&m->rdma_ops, &op->super);
            return PX_ERR_TEMP_OUT_OF_RESOURCE;
        }
        lkey = ((px_btl_verbs_reg_t *)e)->handle.lkey;
    }
    /* The remote handle arrived in a message: it may be unaligned. */
    uint32_t rkey;
    memcpy(&rkey, (const char *)a->remote_handle + offsetof(px_btl_registration_handle_t, rkey),
           sizeof(rkey));
    struct ibv_sge sge = {
        .addr = (uintptr_t)a->local_address, .length = (uint32_t)a->size, .lkey = lkey};
    struct ibv_send_wr wr = {.wr_id = (uintptr_t)&op->ctx,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    wr.wr.rdma.remote_addr = a->remote_address;
    wr.wr.rdma.rkey = rkey;
    int rc = ibv_post_send(endpoint->qp, &wr, &bad);
    if (PX_LIKELY(0 == rc)) {
        endpoint->sq_free--;
        endpoint->outstanding++;
        m->outstanding++;
        return PX_SUCCESS;
    }
    px_btl_base_rdma_req_abort(&op->req, &m->rdma_ops, &op->super);
    if (ENOMEM == rc)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    char detail[200];
    snprintf(detail, sizeof(detail), "ibv_post_send: %s", strerror(rc));
    px_btl_verbs_report(m, endpoint, PX_ERR_COMM, write ? "RDMA write to" : "RDMA read from",
                        detail);
    return PX_ERR_COMM;
}

PX_BTL_BASE_RDMA_PUT_GET(px_btl_verbs, px_btl_verbs_rdma)

void px_btl_verbs_rdma_install(px_btl_module_t *btl)
{
    btl->btl_put = px_btl_verbs_put;
    btl->btl_get = px_btl_verbs_get;
    btl->btl_register_mem = px_btl_verbs_register_mem;
    btl->btl_deregister_mem = px_btl_verbs_deregister_mem;
}

void px_btl_verbs_rdma_done(px_btl_verbs_module_t *m, px_btl_verbs_rdma_op_t *op, int status)
{
    px_btl_base_rdma_req_done(&op->req, &m->rdma_ops, &op->super, &m->super, op->ctx.endpoint,
                              status);
}
