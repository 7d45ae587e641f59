/*
 * ofi_rdma.c: btl/ofi memory registration and RDMA. Registration of the
 * free lists' chunks (under FI_MR_LOCAL) and of user memory through the BTL
 * registration cache; put/get as fi_writemsg (delivery complete) / fi_read,
 * and their completions, which ofi_module.c's progress hands back here.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/ofi/ofi.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/base.h"

PX_CLASS_INSTANCE(px_btl_ofi_rdma_op_t, px_free_list_item_t, NULL, NULL);

#define PX_BTL_OFI_MR_ACCESS                                                                       \
    (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* ---- memory registration (free-list chunks and the rcache) ---- */

static int px_btl_ofi_mr_reg(px_btl_ofi_module_t *m, void *base, size_t len, struct fid_mr **mr)
{
    uint64_t key = m->mr_prov_key ? 0 : m->next_key++;
    int rc = fi_mr_reg(m->domain, base, len, PX_BTL_OFI_MR_ACCESS, 0, key, 0, mr, NULL);
    if (0 == rc && m->mr_endpoint) {
        rc = fi_mr_bind(*mr, &m->ep->fid, 0);
        if (0 == rc)
            rc = fi_mr_enable(*mr);
        if (0 != rc) {
            fi_close(&(*mr)->fid);
            *mr = NULL;
        }
    }
    if (0 != rc)
        PX_OUTPUT_VERBOSE(1, px_btl_ofi_output, "btl/ofi (%s): fi_mr_reg of %zu bytes at %p: %s",
                          px_btl_ofi_prov(m), len, base, px_btl_ofi_strerror(rc));
    return rc;
}

void *px_btl_ofi_payload_alloc(void *ctx, size_t size, size_t align, void **cookie)
{
    px_btl_ofi_module_t *m = ctx;
    void *p = aligned_alloc(align, (size + align - 1) / align * align);
    *cookie = NULL;
    if (p && m->mr_local) {
        struct fid_mr *mr = NULL;
        if (0 != px_btl_ofi_mr_reg(m, p, size, &mr)) {
            free(p);
            return NULL;
        }
        *cookie = mr;
    }
    return p;
}

void px_btl_ofi_payload_free(void *ctx, void *ptr, size_t size, void *cookie)
{
    (void)ctx;
    (void)size;
    if (cookie)
        fi_close(&((struct fid_mr *)cookie)->fid);
    free(ptr);
}

int px_btl_ofi_rcache_reg(void *ctx, px_rcache_entry_t *e)
{
    px_btl_ofi_module_t *m = ctx;
    px_btl_ofi_reg_t *r = (px_btl_ofi_reg_t *)e;
    int rc = px_btl_ofi_mr_reg(m, (void *)e->base, e->bound - e->base, &r->mr);
    if (0 != rc)
        return (-FI_ENOMEM == rc || -FI_ENOSPC == rc || -FI_EAGAIN == rc) ? PX_ERR_OUT_OF_RESOURCE
                                                                          : PX_ERR_COMM;
    r->handle.key = fi_mr_key(r->mr);
    r->handle.base = e->base;
    r->handle.desc = fi_mr_desc(r->mr);
    return PX_SUCCESS;
}

int px_btl_ofi_rcache_dereg(void *ctx, px_rcache_entry_t *e)
{
    (void)ctx;
    px_btl_ofi_reg_t *r = (px_btl_ofi_reg_t *)e;
    if (r->mr)
        fi_close(&r->mr->fid);
    r->mr = NULL;
    return PX_SUCCESS;
}

PX_BTL_BASE_RCACHE_REGISTER_MEM(px_btl_ofi, px_btl_ofi_module_t, px_btl_ofi_reg_t)

/* ---- RDMA ---- */

/* put and get: fi_writemsg / fi_read of `size` bytes from / to local_address,
 * registered (or registered now under FI_MR_LOCAL), completed from progress. */
static inline int px_btl_ofi_rdma(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                  const px_btl_rdma_args_t *a)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    const bool write = PX_BTL_RDMA_PUT == a->dir;
    if (PX_UNLIKELY(endpoint->failed))
        return PX_ERR_UNREACH;
    if (PX_UNLIKELY(NULL == a->remote_handle))
        return PX_ERR_BAD_PARAM;
    px_btl_ofi_rdma_op_t *op = (px_btl_ofi_rdma_op_t *)px_free_list_get(&m->rdma_ops);
    if (NULL == op)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    op->ctx.type = PX_BTL_OFI_OP_RDMA;
    op->endpoint = endpoint;
    px_btl_base_rdma_req_start(&op->req, a);
    void *desc = NULL;
    if (a->local_handle) {
        desc = a->local_handle->desc;
    } else if (m->mr_local) {
        px_rcache_entry_t *e = px_btl_base_rdma_req_register(&op->req, m->rcache, a);
        if (NULL == e) {
            px_free_list_return(&m->rdma_ops, &op->super);
            return PX_ERR_TEMP_OUT_OF_RESOURCE;
        }
        desc = ((px_btl_ofi_reg_t *)e)->handle.desc;
    }
    /* The remote handle arrived in a message: it may be unaligned. */
    uint64_t rkey, rbase;
    memcpy(&rkey, (const char *)a->remote_handle + offsetof(px_btl_registration_handle_t, key),
           sizeof(rkey));
    memcpy(&rbase, (const char *)a->remote_handle + offsetof(px_btl_registration_handle_t, base),
           sizeof(rbase));
    uint64_t raddr = m->mr_virt_addr ? a->remote_address : a->remote_address - rbase;
    ssize_t rc;
    if (write) {
        /* A put completes when the data is at the target (delivery
         * complete), so a message sent after the completion cannot
         * overtake it; the runtime relies on that for its FIN. */
        struct iovec iov = {.iov_base = a->local_address, .iov_len = a->size};
        struct fi_rma_iov riov = {.addr = raddr, .len = a->size, .key = rkey};
        struct fi_msg_rma msg = {.msg_iov = &iov,
                                 .desc = &desc,
                                 .iov_count = 1,
                                 .addr = endpoint->addr,
                                 .rma_iov = &riov,
                                 .rma_iov_count = 1,
                                 .context = &op->ctx.fi};
        rc = fi_writemsg(m->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
    } else {
        rc = fi_read(m->ep, a->local_address, a->size, desc, endpoint->addr, raddr, rkey,
                     &op->ctx.fi);
    }
    if (PX_LIKELY(0 == rc)) {
        endpoint->outstanding++;
        endpoint->stuck_since = 0;
        m->outstanding++;
        return PX_SUCCESS;
    }
    px_btl_base_rdma_req_abort(&op->req, &m->rdma_ops, &op->super);
    if (-FI_EAGAIN == rc)
        return px_btl_ofi_stuck_too_long(endpoint) ? px_btl_ofi_give_up(m, endpoint)
                                                   : PX_ERR_TEMP_OUT_OF_RESOURCE;
    px_btl_ofi_report(m, endpoint, PX_ERR_COMM, write ? "fi_write to" : "fi_read from",
                      px_btl_ofi_strerror((int)rc));
    return PX_ERR_COMM;
}

PX_BTL_BASE_RDMA_PUT_GET(px_btl_ofi, px_btl_ofi_rdma)

void px_btl_ofi_rdma_install(px_btl_module_t *btl)
{
    btl->btl_put = px_btl_ofi_put;
    btl->btl_get = px_btl_ofi_get;
    btl->btl_register_mem = px_btl_ofi_register_mem;
    btl->btl_deregister_mem = px_btl_ofi_deregister_mem;
}

void px_btl_ofi_rdma_done(px_btl_ofi_module_t *m, px_btl_ofi_rdma_op_t *op, int status)
{
    px_btl_base_rdma_req_done(&op->req, &m->rdma_ops, &op->super, &m->super, op->endpoint, status);
}
