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

/* Post one fi_writemsg (delivery complete) or fi_read on lane `lane`. A put
 * completes when the data is at the target (delivery complete), so a
 * message sent after the completion cannot overtake it; the runtime relies
 * on that for its FIN. A striped put completes when all its pieces have. */
static inline ssize_t px_btl_ofi_post_rma(px_btl_ofi_module_t *m, unsigned lane, bool write,
                                          void *local, size_t size, void *desc, fi_addr_t dest,
                                          uint64_t raddr, uint64_t rkey, void *context)
{
    ssize_t rc;
    if (write) {
        struct iovec iov = {.iov_base = local, .iov_len = size};
        struct fi_rma_iov riov = {.addr = raddr, .len = size, .key = rkey};
        struct fi_msg_rma msg = {.msg_iov = &iov,
                                 .desc = &desc,
                                 .iov_count = 1,
                                 .addr = dest,
                                 .rma_iov = &riov,
                                 .rma_iov_count = 1,
                                 .context = context};
        rc = fi_writemsg(m->lane_ep[lane], &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
    } else {
        rc = fi_read(m->lane_ep[lane], local, size, desc, dest, raddr, rkey, context);
    }
    if (PX_LIKELY(0 == rc))
        m->lane_ops[lane]++; /* for tests and verbose output */
    return rc;
}

/* Post the pieces of striped operation `p` from p->next_piece on, piece i
 * on lane (lane0 + i) % nlanes; 0 when all are posted, else libfabric's
 * refusal (-FI_EAGAIN also when no operation is free). */
static ssize_t px_btl_ofi_post_pieces(px_btl_ofi_module_t *m, px_btl_ofi_rdma_op_t *p)
{
    px_btl_endpoint_t *ep = p->endpoint;
    while (p->next_piece < p->npieces) {
        unsigned i = p->next_piece;
        size_t off = i * p->piece;
        size_t len = i + 1 == p->npieces ? p->size - off : p->piece;
        px_btl_ofi_rdma_op_t *op =
            0 == i ? p : (px_btl_ofi_rdma_op_t *)px_free_list_get(&m->rdma_ops);
        if (NULL == op)
            return -FI_EAGAIN;
        op->ctx.type = PX_BTL_OFI_OP_RDMA;
        op->endpoint = ep;
        op->parent = p;
        unsigned lane = (p->lane0 + i) % ep->nlanes;
        ssize_t rc = px_btl_ofi_post_rma(m, lane, p->req.write, p->local + off, len, p->desc,
                                         ep->lane_addr[lane], p->raddr + off, p->rkey, &op->ctx.fi);
        if (0 != rc) {
            if (op != p)
                px_free_list_return(&m->rdma_ops, &op->super);
            return rc;
        }
        ep->outstanding++;
        ep->stuck_since = 0;
        m->outstanding++;
        p->next_piece++;
    }
    return 0;
}

/* The pieces of `p` not yet posted will not be: count them as done with
 * `status`; the operation completes when the posted ones have. */
static void px_btl_ofi_fail_rest(px_btl_ofi_module_t *m, px_btl_ofi_rdma_op_t *p, int status)
{
    int unposted = p->npieces - p->next_piece;
    p->next_piece = p->npieces;
    if (PX_SUCCESS == p->status)
        p->status = status;
    p->left -= unposted;
    if (0 == p->left)
        px_btl_base_rdma_req_done(&p->req, &m->rdma_ops, &p->super, &m->super, p->endpoint,
                                  p->status);
}

/* put and get: fi_writemsg / fi_read of `size` bytes from / to local_address,
 * registered (or registered now under FI_MR_LOCAL), completed from progress.
 * With a peer of several lanes, an operation of at least two
 * btl_ofi_rdma_lane_min goes out in as many pieces as there are lanes (at
 * most one per btl_ofi_rdma_lane_min bytes), a smaller one whole; each
 * starts on the lane after the previous operation's last. */
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
    op->parent = NULL;
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
    const unsigned nl = endpoint->nlanes;
    unsigned lane = 0, k = 1;
    if (PX_UNLIKELY(nl > 1)) {
        lane = endpoint->next_lane % nl;
        if (a->size >= 2 * m->rdma_lane_min) {
            size_t most = a->size / m->rdma_lane_min;
            k = most < nl ? (unsigned)most : nl;
        }
    }
    if (PX_LIKELY(1 == k)) {
        rc = px_btl_ofi_post_rma(m, lane, write, a->local_address, a->size, desc,
                                 endpoint->lane_addr[lane], raddr, rkey, &op->ctx.fi);
        if (PX_LIKELY(0 == rc)) {
            endpoint->next_lane = lane + 1;
            endpoint->outstanding++;
            endpoint->stuck_since = 0;
            m->outstanding++;
            return PX_SUCCESS;
        }
    } else {
        op->parent = op;
        op->left = (int)k;
        op->status = PX_SUCCESS;
        op->npieces = (uint8_t)k;
        op->next_piece = 0;
        op->lane0 = (uint8_t)lane;
        op->local = a->local_address;
        op->desc = desc;
        op->raddr = raddr;
        op->rkey = rkey;
        op->size = a->size;
        op->piece = a->size / k;
        rc = px_btl_ofi_post_pieces(m, op);
        if (op->next_piece > 0) { /* started: it completes from progress */
            endpoint->next_lane = lane + k;
            if (-FI_EAGAIN == rc) {
                op->next_blocked = m->rdma_blocked;
                m->rdma_blocked = op;
            } else if (0 != rc) {
                px_btl_ofi_report(m, endpoint, PX_ERR_COMM, write ? "fi_write to" : "fi_read from",
                                  px_btl_ofi_strerror((int)rc));
                px_btl_ofi_fail_rest(m, op, PX_ERR_COMM);
            }
            return PX_SUCCESS;
        }
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
    px_btl_ofi_rdma_op_t *p = op->parent;
    if (PX_LIKELY(NULL == p)) {
        px_btl_base_rdma_req_done(&op->req, &m->rdma_ops, &op->super, &m->super, op->endpoint,
                                  status);
        return;
    }
    /* A piece: the operation completes with its last piece, with the first
     * error any piece had. */
    if (PX_SUCCESS != status && PX_SUCCESS == p->status)
        p->status = status;
    if (op != p)
        px_free_list_return(&m->rdma_ops, &op->super);
    if (0 == --p->left)
        px_btl_base_rdma_req_done(&p->req, &m->rdma_ops, &p->super, &m->super, p->endpoint,
                                  p->status);
}

int px_btl_ofi_rdma_retry(px_btl_ofi_module_t *m)
{
    int n = 0;
    px_btl_ofi_rdma_op_t **link = &m->rdma_blocked;
    while (*link) {
        px_btl_ofi_rdma_op_t *p = *link;
        px_btl_endpoint_t *ep = p->endpoint;
        ssize_t rc = -FI_ECANCELED;
        if (!ep->failed) {
            unsigned before = p->next_piece;
            rc = px_btl_ofi_post_pieces(m, p);
            n += p->next_piece - before;
            if (-FI_EAGAIN == rc) {
                if (!px_btl_ofi_stuck_too_long(ep)) {
                    link = &p->next_blocked;
                    continue;
                }
                px_btl_ofi_give_up(m, ep);
            }
        }
        *link = p->next_blocked; /* off the list: posted, or failed */
        if (0 != rc) {
            if (!ep->failed)
                px_btl_ofi_report(m, ep, PX_ERR_COMM, p->req.write ? "fi_write to" : "fi_read from",
                                  px_btl_ofi_strerror((int)rc));
            px_btl_ofi_fail_rest(m, p, ep->failed ? PX_ERR_UNREACH : PX_ERR_COMM);
        }
    }
    return n;
}

void px_btl_ofi_rdma_fail_blocked(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, int status)
{
    px_btl_ofi_rdma_op_t **link = &m->rdma_blocked;
    while (*link) {
        px_btl_ofi_rdma_op_t *p = *link;
        if (ep && p->endpoint != ep) {
            link = &p->next_blocked;
            continue;
        }
        *link = p->next_blocked;
        px_btl_ofi_fail_rest(m, p, status);
    }
}
