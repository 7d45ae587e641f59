/*
 * frag.h: send fragments from a free list, and the queue of sends waiting for
 * the transport, shared by BTL components whose sends go from buffers of
 * their own (btl/verbs, btl/ofi). Components include it; nothing here is
 * exported (static inline), so a plugin built on the installed headers can
 * use it too.
 *
 * A component's fragment starts with a px_btl_base_frag_t; its module keeps
 * the free list (each item's payload: the component's wire header, then up
 * to btl_max_send_size bytes of data). The helpers are the bodies of
 * btl_alloc, btl_free and btl_prepare_src and of a send's completion (the
 * descriptor's callback, then the fragment back to the list when the BTL
 * owns it). A px_btl_base_pending_t is an endpoint's FIFO of sends the
 * transport cannot take now (no credit, a full queue, EAGAIN): later sends to
 * that endpoint queue behind them, so a pair's order is kept.
 */
#ifndef PX_BTL_BASE_FRAG_H
#define PX_BTL_BASE_FRAG_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "core/class/free_list.h"
#include "core/util/compiler.h"
#include "core/util/error.h"
#include "frameworks/btl/btl.h"

typedef struct px_btl_base_frag {
    px_btl_descriptor_t base; /* base.super.payload: header, then the data */
    px_btl_segment_t segment; /* the data, after the component's header */
    size_t size;              /* bytes on the wire, header included (the component's) */
    struct px_btl_base_frag *next_pending;
} px_btl_base_frag_t;

/* A fragment from `list`, made an empty one-segment descriptor whose data
 * starts `hdr` bytes into its payload; NULL when the list is exhausted. */
static inline px_btl_base_frag_t *px_btl_base_frag_get(px_free_list_t *list, size_t hdr)
{
    px_btl_base_frag_t *f = (px_btl_base_frag_t *)px_free_list_get(list);
    if (PX_UNLIKELY(NULL == f))
        return NULL;
    f->base.des_segments = &f->segment;
    f->base.des_segment_count = 1;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.des_flags = 0;
    f->segment.seg_addr = (char *)f->base.super.payload + hdr;
    f->segment.seg_len = 0;
    f->size = 0;
    f->next_pending = NULL;
    return f;
}

/* btl_alloc: `size` bytes of data (at most the module's btl_max_send_size). */
static inline px_btl_base_frag_t *px_btl_base_frag_alloc(const px_btl_module_t *btl,
                                                         px_free_list_t *list, size_t hdr,
                                                         size_t size, uint32_t flags)
{
    if (PX_UNLIKELY(size > btl->btl_max_send_size))
        return NULL;
    px_btl_base_frag_t *f = px_btl_base_frag_get(list, hdr);
    if (PX_UNLIKELY(NULL == f))
        return NULL;
    f->segment.seg_len = size;
    f->base.des_flags = flags;
    return f;
}

/* btl_prepare_src: `reserve` bytes for the caller's header, then as much of
 * the convertor as fits in btl_max_send_size (*size: asked, then packed). */
static inline px_btl_base_frag_t *
px_btl_base_frag_prepare_src(const px_btl_module_t *btl, px_free_list_t *list, size_t hdr,
                             px_btl_convertor_t *conv, size_t reserve, size_t *size, uint32_t flags)
{
    if (PX_UNLIKELY(reserve > btl->btl_max_send_size))
        return NULL;
    px_btl_base_frag_t *f = px_btl_base_frag_get(list, hdr);
    if (PX_UNLIKELY(NULL == f))
        return NULL;
    px_btl_convertor_pack_segment(conv, &f->segment, reserve, btl->btl_max_send_size, size);
    f->base.des_flags = flags;
    return f;
}

/* A send is over (PX_SUCCESS or an error): the descriptor's callback, then
 * the fragment goes back to `list` when the BTL owns it. */
static inline void px_btl_base_frag_done(px_btl_module_t *btl, px_free_list_t *list,
                                         px_btl_endpoint_t *ep, px_btl_base_frag_t *f, int status)
{
    uint32_t flags = f->base.des_flags;
    if (f->base.des_cbfunc)
        f->base.des_cbfunc(btl, ep, &f->base, status);
    if (flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
        px_free_list_return(list, &f->base.super);
}

/* A btl_sendi's copying path: the message (header then payload) into a
 * fragment from `list` owned by the BTL, sent with btl_send (which sets the
 * component's header). PX_ERR_TEMP_OUT_OF_RESOURCE when it is larger than
 * btl_max_send_size or the list is exhausted (nothing sent); otherwise
 * PX_SUCCESS or btl_send's error (the fragment back to the list). */
static inline int px_btl_base_frag_sendi(px_btl_module_t *btl, px_free_list_t *list, size_t hdr,
                                         px_btl_endpoint_t *ep, const void *header,
                                         size_t header_size, const void *payload,
                                         size_t payload_size, uint32_t flags, px_btl_tag_t tag)
{
    if (header_size + payload_size > btl->btl_max_send_size)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    px_btl_base_frag_t *f = px_btl_base_frag_get(list, hdr);
    if (NULL == f)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    memcpy(f->segment.seg_addr, header, header_size);
    if (payload_size)
        memcpy((char *)f->segment.seg_addr + header_size, payload, payload_size);
    f->segment.seg_len = header_size + payload_size;
    f->base.des_flags = flags | PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
    int rc = btl->btl_send(btl, ep, &f->base, tag);
    if (rc < 0)
        px_free_list_return(list, &f->base.super);
    return rc < 0 ? rc : PX_SUCCESS;
}

/* ---- an endpoint's queue of sends waiting for the transport ---- */

typedef struct px_btl_base_pending {
    px_btl_base_frag_t *head, *tail;
} px_btl_base_pending_t;

static inline bool px_btl_base_pending_empty(const px_btl_base_pending_t *q)
{
    return NULL == q->head;
}

/* Append `f`; returns true when the queue was empty (the endpoint then goes
 * on the module's list of endpoints to retry). */
static inline bool px_btl_base_pending_push(px_btl_base_pending_t *q, px_btl_base_frag_t *f)
{
    bool was_empty = NULL == q->head;
    f->next_pending = NULL;
    if (q->tail)
        q->tail->next_pending = f;
    else
        q->head = f;
    q->tail = f;
    return was_empty;
}

/* Take the oldest (the caller has checked the queue is not empty). */
static inline px_btl_base_frag_t *px_btl_base_pending_pop(px_btl_base_pending_t *q)
{
    px_btl_base_frag_t *f = q->head;
    q->head = f->next_pending;
    if (NULL == q->head)
        q->tail = NULL;
    f->next_pending = NULL;
    return f;
}

/* Complete every queued send with `status` (the peer is lost, or the
 * module tears down), in order. */
static inline void px_btl_base_pending_fail(px_btl_module_t *btl, px_free_list_t *list,
                                            px_btl_endpoint_t *ep, px_btl_base_pending_t *q,
                                            int status)
{
    while (q->head)
        px_btl_base_frag_done(btl, list, ep, px_btl_base_pending_pop(q), status);
}

#endif
