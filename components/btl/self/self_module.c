/*
 * self_module.c: btl/self's operations. A send hands the fragment's segments
 * straight to the active-message callback of its tag, then completes the
 * descriptor as its flags say; sendi does the same with segments on the
 * stack; put/get are memcpy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include "components/btl/self/self.h"
#include "core/util/error.h"
#include "frameworks/btl/base/base.h"

static void px_btl_self_frag_construct(px_btl_self_frag_t *f)
{
    f->base.des_segments = f->segments;
    f->base.des_segment_count = 1;
    f->data = NULL;
    f->capacity = 0;
    f->list = NULL;
}
PX_CLASS_INSTANCE(px_btl_self_frag_t, px_btl_descriptor_t, px_btl_self_frag_construct, NULL);

static int px_btl_self_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                                 px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                                 const char **reasons)
{
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    for (size_t i = 0; i < nprocs; ++i) {
        if (procs[i]->locality & PX_PROC_LOCAL_SELF) {
            int rc = px_bitmap_set_bit(reachable, (int)i);
            if (rc != PX_SUCCESS)
                return rc;
            /* The endpoint is only a non-NULL token: there is one peer. */
            endpoints[i] = (px_btl_endpoint_t *)m;
            m->rank = procs[i]->rank;
        } else if (reasons) {
            reasons[i] = "self reaches only the calling process";
        }
    }
    return PX_SUCCESS;
}

static int px_btl_self_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                                 px_btl_endpoint_t **endpoints)
{
    (void)btl;
    (void)nprocs;
    (void)procs;
    (void)endpoints;
    return PX_SUCCESS;
}

static int px_btl_self_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *endpoint);

static int px_btl_self_finalize(px_btl_module_t *btl)
{
    /* The lists go away in the component's close; dynamic peers here. */
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    while (m->dyn_head)
        px_btl_self_dyn_remove(btl, (px_btl_endpoint_t *)m->dyn_head);
    return PX_SUCCESS;
}

/* A fragment from the list that fits `size`, or NULL. */
static inline px_btl_self_frag_t *px_btl_self_frag_get(size_t size)
{
    px_btl_self_state_t *s = &px_btl_self_state;
    px_free_list_t *fl;
    if (size <= PX_BTL_SELF_MAX_INLINE_SIZE)
        fl = &s->frags_inline;
    else if (size <= px_btl_self_module.super.btl_eager_limit)
        fl = &s->frags_eager;
    else if (size <= px_btl_self_module.super.btl_max_send_size)
        fl = &s->frags_send;
    else
        return NULL;
    return (px_btl_self_frag_t *)px_free_list_get(fl);
}

/* Hand a fragment to the caller as a descriptor of `count` segments, no callback. */
static inline px_btl_descriptor_t *px_btl_self_frag_ready(px_btl_self_frag_t *f, size_t count,
                                                          uint32_t flags, uint8_t order)
{
    f->base.des_segments = f->segments;
    f->base.des_segment_count = count;
    f->base.des_flags = flags;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.order = order;
    return &f->base;
}

static px_btl_descriptor_t *px_btl_self_alloc(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                              uint8_t order, size_t size, uint32_t flags)
{
    (void)btl;
    (void)endpoint;
    px_btl_self_frag_t *f = px_btl_self_frag_get(size);
    if (PX_UNLIKELY(NULL == f))
        return NULL;
    f->segments[0].seg_addr = f->data;
    f->segments[0].seg_len = size;
    return px_btl_self_frag_ready(f, 1, flags, order);
}

static int px_btl_self_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    (void)btl;
    px_btl_self_frag_t *f = (px_btl_self_frag_t *)des;
    px_free_list_return(f->list, &des->super);
    return PX_SUCCESS;
}

static px_btl_descriptor_t *px_btl_self_prepare_src(px_btl_module_t *btl,
                                                    px_btl_endpoint_t *endpoint,
                                                    px_btl_convertor_t *conv, uint8_t order,
                                                    size_t reserve, size_t *size, uint32_t flags)
{
    size_t data = *size;
    size_t left = conv->total - conv->position;
    if (data > left)
        data = left;
    if (px_btl_convertor_is_contiguous(conv) && reserve <= PX_BTL_SELF_MAX_INLINE_SIZE &&
        (btl->btl_flags & PX_BTL_FLAGS_SEND_INPLACE)) {
        /* Zero copy: header in the inline fragment, payload referenced. */
        px_btl_self_frag_t *f =
            (px_btl_self_frag_t *)px_free_list_get(&px_btl_self_state.frags_inline);
        if (PX_UNLIKELY(NULL == f))
            return NULL;
        f->segments[0].seg_addr = f->data;
        f->segments[0].seg_len = reserve;
        f->segments[1].seg_addr = px_btl_convertor_current(conv);
        f->segments[1].seg_len = data;
        conv->position += data;
        *size = data;
        return px_btl_self_frag_ready(f, data ? 2 : 1, flags, order);
    }
    /* Packing: header and data in one fragment of the right list. */
    if (reserve + data > btl->btl_max_send_size)
        data = btl->btl_max_send_size > reserve ? btl->btl_max_send_size - reserve : 0;
    px_btl_descriptor_t *des = px_btl_self_alloc(btl, endpoint, order, reserve + data, flags);
    if (PX_UNLIKELY(NULL == des))
        return NULL;
    px_btl_self_frag_t *f = (px_btl_self_frag_t *)des;
    size_t packed = px_btl_convertor_pack(conv, f->data + reserve, data);
    f->segments[0].seg_len = reserve + packed;
    *size = packed;
    return des;
}

static int px_btl_self_dyn_route(px_btl_self_module_t *m, px_btl_endpoint_t *ep,
                                 px_btl_endpoint_t **to, int *src);

static int px_btl_self_send(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                            px_btl_descriptor_t *des, px_btl_tag_t tag)
{
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    px_btl_endpoint_t *to = endpoint;
    int src = m->rank;
    if (PX_UNLIKELY(endpoint != (px_btl_endpoint_t *)m)) {
        int rc = px_btl_self_dyn_route(m, endpoint, &to, &src);
        if (rc != PX_SUCCESS)
            return rc;
    }
    const px_btl_active_message_callback_t *reg = &px_btl_base_active_message_trigger[tag];
    px_btl_receive_descriptor_t recv = {
        .endpoint = to,
        .src_rank = src,
        .des_segments = des->des_segments,
        .des_segment_count = des->des_segment_count,
        .tag = tag,
        .cbdata = reg->cbdata,
    };
    reg->cbfunc(btl, &recv);
    /* Completion follows the descriptor's flags and ownership. */
    const uint32_t flags = des->des_flags;
    if ((flags & PX_BTL_DES_SEND_ALWAYS_CALLBACK) && des->des_cbfunc)
        des->des_cbfunc(btl, endpoint, des, PX_SUCCESS);
    if (flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
        px_btl_self_free(btl, des);
    return 1;
}

static int px_btl_self_sendi(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *header,
                             size_t header_size, const void *payload, size_t payload_size,
                             uint8_t order, uint32_t flags, px_btl_tag_t tag,
                             px_btl_descriptor_t **descriptor)
{
    (void)order;
    (void)flags;
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    px_btl_endpoint_t *to = endpoint;
    int src = m->rank;
    if (descriptor)
        *descriptor = NULL;
    if (PX_UNLIKELY(endpoint != (px_btl_endpoint_t *)m)) {
        int rc = px_btl_self_dyn_route(m, endpoint, &to, &src);
        if (rc != PX_SUCCESS)
            return rc;
    }
    const px_btl_active_message_callback_t *reg = &px_btl_base_active_message_trigger[tag];
    px_btl_segment_t segs[2] = {{(void *)header, header_size}, {(void *)payload, payload_size}};
    px_btl_receive_descriptor_t recv = {
        .endpoint = to,
        .src_rank = src,
        .des_segments = segs,
        .des_segment_count = payload_size ? 2 : 1,
        .tag = tag,
        .cbdata = reg->cbdata,
    };
    reg->cbfunc(btl, &recv);
    if (descriptor)
        *descriptor = NULL;
    return PX_SUCCESS;
}

/* put and get: a memcpy in the direction asked. */
static inline int px_btl_self_rdma(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                   const px_btl_rdma_args_t *a)
{
    void *remote = (void *)(uintptr_t)a->remote_address;
    if (PX_BTL_RDMA_PUT == a->dir)
        memcpy(remote, a->local_address, a->size);
    else
        memcpy(a->local_address, remote, a->size);
    if (a->cbfunc)
        a->cbfunc(btl, endpoint, a->local_address, a->local_handle, a->cbcontext, a->cbdata,
                  PX_SUCCESS);
    return PX_SUCCESS;
}
PX_BTL_BASE_RDMA_PUT_GET(px_btl_self, px_btl_self_rdma)

/* BTL API 3.1: every segment copied, then one completion. */
static inline int px_btl_self_rdma_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                     const px_btl_rdma_segment_t *segs, size_t count,
                                     px_btl_registration_handle_t *local_handle,
                                     px_btl_rdma_completion_fn cbfunc, void *cbcontext,
                                     void *cbdata, px_btl_rdma_dir_t dir)
{
    if (0 == count || NULL == segs)
        return PX_ERR_BAD_PARAM;
    for (size_t i = 0; i < count; ++i) {
        void *remote = (void *)(uintptr_t)segs[i].remote_address;
        if (PX_BTL_RDMA_PUT == dir)
            memcpy(remote, segs[i].local_address, segs[i].size);
        else
            memcpy(segs[i].local_address, remote, segs[i].size);
    }
    if (cbfunc)
        cbfunc(btl, endpoint, segs[0].local_address, local_handle, cbcontext, cbdata, PX_SUCCESS);
    return PX_SUCCESS;
}

static int px_btl_self_put_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                             const px_btl_rdma_segment_t *segs, size_t count,
                             px_btl_registration_handle_t *local_handle,
                             px_btl_registration_handle_t *remote_handle, int flags, int order,
                             px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    (void)remote_handle;
    (void)flags;
    (void)order;
    return px_btl_self_rdma_v(btl, endpoint, segs, count, local_handle, cbfunc, cbcontext, cbdata,
                              PX_BTL_RDMA_PUT);
}

static int px_btl_self_get_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                             const px_btl_rdma_segment_t *segs, size_t count,
                             px_btl_registration_handle_t *local_handle,
                             px_btl_registration_handle_t *remote_handle, int flags, int order,
                             px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    (void)remote_handle;
    (void)flags;
    (void)order;
    return px_btl_self_rdma_v(btl, endpoint, segs, count, local_handle, cbfunc, cbcontext, cbdata,
                              PX_BTL_RDMA_GET);
}

/* ------------------------------------------------------------ dynamic peers (3.3) */

/* Where a send on the dynamic endpoint `ep` arrives: the other side of the
 * connection, as a dynamic peer. PX_ERR_UNREACH when that side was removed
 * or the connection is not complete. */
static int px_btl_self_dyn_route(px_btl_self_module_t *m, px_btl_endpoint_t *ep,
                                 px_btl_endpoint_t **to, int *src)
{
    (void)m;
    px_btl_self_dyn_t *d = (px_btl_self_dyn_t *)ep;
    if (NULL == d || d->magic != PX_BTL_SELF_DYN_MAGIC || NULL == d->peer)
        return PX_ERR_UNREACH;
    *to = (px_btl_endpoint_t *)d->peer;
    *src = PX_BTL_RANK_DYNAMIC;
    return PX_SUCCESS;
}

static px_btl_self_dyn_t *px_btl_self_dyn_new(px_btl_self_module_t *m)
{
    px_btl_self_dyn_t *d = calloc(1, sizeof(*d));
    if (NULL == d)
        return NULL;
    if (0 == m->dyn_nonce) {
        if (getrandom(&m->dyn_nonce, sizeof m->dyn_nonce, 0) != (ssize_t)sizeof m->dyn_nonce)
            m->dyn_nonce = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)d;
        if (0 == m->dyn_nonce)
            m->dyn_nonce = 1;
    }
    d->magic = PX_BTL_SELF_DYN_MAGIC;
    d->id = ++m->dyn_next_id;
    d->next = m->dyn_head;
    if (d->next)
        d->next->prev = d;
    m->dyn_head = d;
    m->dyn_count++;
    return d;
}

static px_btl_self_dyn_t *px_btl_self_dyn_find(px_btl_self_module_t *m, uint64_t id)
{
    for (px_btl_self_dyn_t *d = m->dyn_head; d; d = d->next)
        if (d->id == id)
            return d;
    return NULL;
}

static void px_btl_self_dyn_part(px_btl_self_module_t *m, const px_btl_self_dyn_t *d, void *part,
                                 size_t *len)
{
    px_btl_self_dyn_part_t p = {.magic = PX_BTL_SELF_PART_MAGIC,
                                .pid = (uint32_t)getpid(),
                                .nonce = m->dyn_nonce,
                                .id = d->id};
    memcpy(part, &p, sizeof p);
    *len = sizeof p;
}

/* Check the peer's part: NULL when it names a living endpoint of this
 * process (*d, which may still be unpaired), else why not. */
static const char *px_btl_self_dyn_check(px_btl_self_module_t *m, const void *buf, size_t len,
                                         px_btl_self_dyn_t **d, char *reason)
{
    px_btl_self_dyn_part_t p;
    if (len != sizeof p) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX,
                 "its btl/self part is %zu bytes, not the %zu of this version", len, sizeof p);
        return reason;
    }
    memcpy(&p, buf, sizeof p);
    if (p.magic != PX_BTL_SELF_PART_MAGIC) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX, "its btl/self part has a bad magic number");
        return reason;
    }
    if (p.pid != (uint32_t)getpid() || p.nonce != m->dyn_nonce || 0 == m->dyn_nonce) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX,
                 "self reaches only the calling process (the peer is process %u, this is %d)",
                 p.pid, (int)getpid());
        return reason;
    }
    *d = px_btl_self_dyn_find(m, p.id);
    if (NULL == *d) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX,
                 "its btl/self part names connection %llu, which this process does not hold "
                 "(removed, or never offered)",
                 (unsigned long long)p.id);
        return reason;
    }
    return NULL;
}

static int px_btl_self_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                                 size_t *part_len, char *reason)
{
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    if (*part_len < sizeof(px_btl_self_dyn_part_t)) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX, "no room for its part");
        return PX_ERR_BAD_PARAM;
    }
    px_btl_self_dyn_t *d = px_btl_self_dyn_new(m);
    if (NULL == d) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX, "out of memory");
        return PX_ERR_OUT_OF_RESOURCE;
    }
    px_btl_self_dyn_part(m, d, part, part_len);
    *endpoint = (px_btl_endpoint_t *)d;
    return PX_SUCCESS;
}

static int px_btl_self_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                                  px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                                  char *reason)
{
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    px_btl_self_dyn_t *c = NULL;
    if (px_btl_self_dyn_check(m, offer, offer_len, &c, reason))
        return PX_ERR_UNREACH;
    bool taken = c->peer != NULL;
    for (px_btl_self_dyn_t *o = m->dyn_head; o && !taken; o = o->next)
        taken = o->peer == c;
    if (taken || *reply_len < sizeof(px_btl_self_dyn_part_t)) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX, "its btl/self connection %llu was accepted already",
                 (unsigned long long)c->id);
        return PX_ERR_BAD_PARAM;
    }
    px_btl_self_dyn_t *d = px_btl_self_dyn_new(m);
    if (NULL == d) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX, "out of memory");
        return PX_ERR_OUT_OF_RESOURCE;
    }
    d->peer = c; /* sends from here arrive at once; c's go after complete */
    px_btl_self_dyn_part(m, d, reply, reply_len);
    *endpoint = (px_btl_endpoint_t *)d;
    return PX_SUCCESS;
}

static int px_btl_self_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                    const void *reply, size_t reply_len, char *reason)
{
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    px_btl_self_dyn_t *c = (px_btl_self_dyn_t *)endpoint, *a = NULL;
    if (px_btl_self_dyn_check(m, reply, reply_len, &a, reason))
        return PX_ERR_BAD_PARAM;
    if (a->peer != c || c->peer) {
        snprintf(reason, PX_BTL_DYN_REASON_MAX,
                 "its btl/self reply names connection %llu, which is not the one accepting "
                 "this offer",
                 (unsigned long long)a->id);
        return PX_ERR_BAD_PARAM;
    }
    c->peer = a;
    return PX_SUCCESS;
}

static int px_btl_self_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *endpoint)
{
    px_btl_self_module_t *m = (px_btl_self_module_t *)btl;
    px_btl_self_dyn_t *d = (px_btl_self_dyn_t *)endpoint;
    if (NULL == d || d->magic != PX_BTL_SELF_DYN_MAGIC)
        return PX_ERR_BAD_PARAM;
    /* The other side's sends to it fail from now on. */
    for (px_btl_self_dyn_t *o = m->dyn_head; o; o = o->next)
        if (o->peer == d)
            o->peer = NULL;
    if (d->prev)
        d->prev->next = d->next;
    else
        m->dyn_head = d->next;
    if (d->next)
        d->next->prev = d->prev;
    m->dyn_count--;
    d->magic = 0;
    free(d);
    return PX_SUCCESS;
}

static int px_btl_self_flush(px_btl_module_t *btl, px_btl_endpoint_t *endpoint)
{
    (void)btl;
    (void)endpoint;
    return PX_SUCCESS; /* every operation completes before it returns */
}

static int px_btl_self_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc)
{
    ((px_btl_self_module_t *)btl)->error_cb = cbfunc;
    return PX_SUCCESS;
}

px_btl_self_module_t px_btl_self_module = {
    .super =
        {
            .btl_size = PX_BTL_MODULE_SIZE,
            .btl_component = &px_btl_self_component,
            .btl_exclusivity = PX_BTL_EXCLUSIVITY_HIGH,
            .btl_latency = 0,
            .btl_bandwidth = 100000,
            .btl_eager_limit = 4096,
            .btl_max_send_size = 65536,
            .btl_put_limit = SIZE_MAX,
            .btl_put_alignment = 0,
            .btl_get_limit = SIZE_MAX,
            .btl_get_alignment = 0,
            .btl_flags = PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT | PX_BTL_FLAGS_GET |
                         PX_BTL_FLAGS_SEND_INPLACE | PX_BTL_FLAGS_SINGLE_COPY,
            .btl_registration_handle_size = 0,
            .btl_add_procs = px_btl_self_add_procs,
            .btl_del_procs = px_btl_self_del_procs,
            .btl_finalize = px_btl_self_finalize,
            .btl_alloc = px_btl_self_alloc,
            .btl_free = px_btl_self_free,
            .btl_prepare_src = px_btl_self_prepare_src,
            .btl_send = px_btl_self_send,
            .btl_sendi = px_btl_self_sendi,
            .btl_put = px_btl_self_put,
            .btl_get = px_btl_self_get,
            .btl_register_mem = NULL,
            .btl_deregister_mem = NULL,
            .btl_flush = px_btl_self_flush,
            .btl_progress = NULL,
            .btl_register_error = px_btl_self_register_error,
            .btl_put_v = px_btl_self_put_v,
            .btl_get_v = px_btl_self_get_v,
            .btl_dyn_offer = px_btl_self_dyn_offer,
            .btl_dyn_accept = px_btl_self_dyn_accept,
            .btl_dyn_complete = px_btl_self_dyn_complete,
            .btl_dyn_remove = px_btl_self_dyn_remove,
        },
    .rank = -1,
    .error_cb = NULL,
};
