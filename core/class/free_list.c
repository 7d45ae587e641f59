/*
 * free_list.c: px_free_list_t, a pool of preconstructed items grown in chunks.
 *
 * A chunk is one allocation of `n` items (stride = item size rounded up to the
 * item alignment) and, when a payload size is set, one allocation of `n`
 * payloads (stride = payload size rounded up to the payload alignment), both
 * from the allocator hooks. Chunks are recorded on fl->chunks and only given
 * back when the free list is destructed, so item memory stays valid for the
 * lock-free LIFO.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "core/class/free_list.h"
#include "core/class/tcache.h"
#include "core/util/error.h"
#include "core/util/output.h"

typedef struct px_free_list_chunk {
    px_list_item_t super;
    void *items;
    size_t items_bytes;
    void *items_cookie;
    void *payloads;
    size_t payloads_bytes;
    void *payloads_cookie;
    size_t count; /* items constructed in this chunk */
} px_free_list_chunk_t;
static PX_CLASS_INSTANCE(px_free_list_chunk_t, px_list_item_t, NULL, NULL);

static void item_construct(px_free_list_item_t *item)
{
    item->payload = NULL;
    item->owner = NULL;
    item->registration = NULL;
}

PX_CLASS_INSTANCE(px_free_list_item_t, px_list_item_t, item_construct, NULL);

/* ---- default (heap) allocator ---- */
static void *heap_alloc(void *ctx, size_t size, size_t align, void **cookie)
{
    (void)ctx;
    void *p = NULL;
    *cookie = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (posix_memalign(&p, align, size ? size : align))
        return NULL;
    return p;
}

static void heap_free(void *ctx, void *ptr, size_t size, void *cookie)
{
    (void)ctx;
    (void)size;
    (void)cookie;
    free(ptr);
}

static const px_free_list_allocator_t heap_allocator = {heap_alloc, heap_free, NULL};

static size_t round_up(size_t n, size_t align)
{
    return (n + align - 1) & ~(align - 1);
}
static bool is_pow2(size_t n)
{
    return n && 0 == (n & (n - 1));
}

static int grow_locked(px_free_list_t *fl, size_t count);
static int grow_if_empty(px_free_list_t *fl);

/* ---- get/put paths, chosen once in px_free_list_init ---- */
px_free_list_item_t *px_free_list_get_st_slow(px_free_list_t *fl)
{
    if (PX_SUCCESS != px_free_list_grow(fl, fl->params.num_per_grow))
        return NULL;
    return (px_free_list_item_t *)px_lifo_pop_st_inline(&fl->super);
}

static px_free_list_item_t *get_st(px_free_list_t *fl)
{
    return px_free_list_get_st(fl);
}

static void put_st(px_free_list_t *fl, px_free_list_item_t *item)
{
    px_free_list_return_st(fl, item);
}

/* Thread-safe get from the shared LIFO, growing when it is empty. */
static px_free_list_item_t *get_shared(px_free_list_t *fl)
{
    px_list_item_t *it = px_lifo_pop_atomic_inline(&fl->super);
    while (PX_UNLIKELY(NULL == it)) {
        /* grow_if_empty serialises growers and returns success without
         * allocating when another thread's grow already refilled the LIFO. */
        if (PX_SUCCESS != grow_if_empty(fl)) {
            /* At the maximum: an item may have come back meanwhile. */
            return (px_free_list_item_t *)px_lifo_pop_atomic_inline(&fl->super);
        }
        it = px_lifo_pop_atomic_inline(&fl->super);
    }
    return (px_free_list_item_t *)it;
}

px_free_list_item_t *px_free_list_get_mt_slow(px_free_list_t *fl)
{
    px_tcache_t *c = px_tcache_bind(&fl->tc);
    if (NULL == c)
        return get_shared(fl); /* no cache for this list */
    /* Refill half the cache from the shared LIFO (this thread's cache is
     * empty here), then hand out one item. */
    while (c->count < PX_TCACHE_CAP / 2) {
        px_list_item_t *it = px_lifo_pop_atomic_inline(&fl->super);
        if (NULL == it)
            break;
        c->items[c->count++] = it;
    }
    if (c->count > 0)
        return (px_free_list_item_t *)c->items[--c->count];
    return get_shared(fl);
}

/* Push n cached items to the shared LIFO with one CAS. */
static void push_items(px_free_list_t *fl, void **items, uint32_t n)
{
    if (0 == n)
        return;
    for (uint32_t i = 0; i + 1 < n; i++)
        ((px_list_item_t *)items[i])->px_list_next = (px_list_item_t *)items[i + 1];
    px_lifo_push_chain_atomic_inline(&fl->super, items[0], items[n - 1]);
}

void px_free_list_return_mt_slow(px_free_list_t *fl, px_free_list_item_t *item)
{
    px_tcache_t *c = px_tcache_bind(&fl->tc);
    if (NULL == c) {
        px_lifo_push_atomic_inline(&fl->super, &item->super);
        return;
    }
    if (c->count == PX_TCACHE_CAP) {
        /* Full: give the older half back to the shared LIFO. */
        uint32_t half = PX_TCACHE_CAP / 2;
        push_items(fl, c->items, half);
        memmove(c->items, c->items + half, sizeof(void *) * (PX_TCACHE_CAP - half));
        c->count -= half;
    }
    c->items[c->count++] = item;
}

static px_free_list_item_t *get_mt(px_free_list_t *fl)
{
    return px_free_list_get_mt(fl);
}

static void put_mt(px_free_list_t *fl, px_free_list_item_t *item)
{
    px_free_list_return_mt(fl, item);
}

/* tcache flush callback: a thread's cache comes back (thread exit, destruct). */
static void tcache_flush(px_tcache_owner_t *owner, void **items, uint32_t n)
{
    push_items(px_container_of(owner, px_free_list_t, tc), items, n);
}

/* ---- class ---- */
static void free_list_construct(px_free_list_t *fl)
{
    PX_OBJ_CONSTRUCT(&fl->chunks, px_list_t);
    memset(&fl->params, 0, sizeof(fl->params));
    fl->get = get_st;
    fl->put = put_st;
    fl->num_allocated = 0;
    fl->grow_lock = NULL;
    fl->tc.slot = 0; /* no per-thread cache until init asks for one */
    fl->tc.gen = 0;
    fl->tc.kind = PX_TCACHE_KIND_ITEMS;
    fl->tc.flush = tcache_flush;
}

static void chunk_release(px_free_list_t *fl, px_free_list_chunk_t *chunk)
{
    const px_free_list_params_t *p = &fl->params;
    size_t stride = round_up(p->item_size, p->item_alignment);
    for (size_t i = 0; i < chunk->count; i++)
        PX_OBJ_DESTRUCT((px_object_t *)((char *)chunk->items + i * stride));
    if (chunk->payloads)
        p->payload_allocator->free(p->payload_allocator->ctx, chunk->payloads,
                                   chunk->payloads_bytes, chunk->payloads_cookie);
    p->item_allocator->free(p->item_allocator->ctx, chunk->items, chunk->items_bytes,
                            chunk->items_cookie);
    PX_OBJ_RELEASE(chunk);
}

static void free_list_destruct(px_free_list_t *fl)
{
    /* First, so no exiting thread flushes its cache into a dying list. */
    px_tcache_owner_unregister(&fl->tc);
    px_list_item_t *it;
    while (NULL != (it = px_list_remove_first(&fl->chunks)))
        chunk_release(fl, (px_free_list_chunk_t *)it);
    PX_OBJ_DESTRUCT(&fl->chunks);
    if (fl->grow_lock) {
        pthread_mutex_destroy((pthread_mutex_t *)fl->grow_lock);
        free(fl->grow_lock);
        fl->grow_lock = NULL;
    }
    fl->num_allocated = 0;
}

PX_CLASS_INSTANCE(px_free_list_t, px_lifo_t, free_list_construct, free_list_destruct);

int px_free_list_init(px_free_list_t *fl, const px_free_list_params_t *params)
{
    if (NULL == params || NULL == params->item_class) {
        px_show_error("px_free_list_init: no item class given (params->item_class is NULL); "
                      "pass a class derived from px_free_list_item_t");
        return PX_ERR_BAD_PARAM;
    }
    px_free_list_params_t p = *params;
    if (px_class_ensure(p.item_class) != PX_SUCCESS)
        return PX_ERR_OUT_OF_RESOURCE;
    bool derived = false;
    for (px_class_t *c = p.item_class; c; c = c->cls_parent)
        derived |= (c == PX_CLASS(px_free_list_item_t));
    if (!derived) {
        px_show_error("px_free_list_init: item class %s does not derive from "
                      "px_free_list_item_t",
                      p.item_class->cls_name);
        return PX_ERR_BAD_PARAM;
    }
    if (0 == p.item_size)
        p.item_size = p.item_class->cls_sizeof;
    if (0 == p.item_alignment)
        p.item_alignment = 64;
    if (0 == p.payload_alignment)
        p.payload_alignment = 64;
    if (0 == p.num_per_grow)
        p.num_per_grow = 32;
    if (p.item_size < p.item_class->cls_sizeof) {
        px_show_error("px_free_list_init: item_size %zu is smaller than class %s (%zu bytes)",
                      p.item_size, p.item_class->cls_name, p.item_class->cls_sizeof);
        return PX_ERR_BAD_PARAM;
    }
    if (!is_pow2(p.item_alignment) || !is_pow2(p.payload_alignment)) {
        px_show_error("px_free_list_init: item_alignment %zu / payload_alignment %zu: "
                      "each must be a power of two (or 0 for the default 64)",
                      p.item_alignment, p.payload_alignment);
        return PX_ERR_BAD_PARAM;
    }
    if (p.item_alignment < _Alignof(px_free_list_item_t))
        p.item_alignment = _Alignof(px_free_list_item_t);
    if (p.num_max && p.num_initial > p.num_max) {
        px_show_error("px_free_list_init: num_initial %zu exceeds num_max %zu", p.num_initial,
                      p.num_max);
        return PX_ERR_BAD_PARAM;
    }
    if (NULL == p.item_allocator)
        p.item_allocator = &heap_allocator;
    if (NULL == p.payload_allocator)
        p.payload_allocator = &heap_allocator;
    if (NULL == p.item_allocator->alloc || NULL == p.item_allocator->free ||
        NULL == p.payload_allocator->alloc || NULL == p.payload_allocator->free) {
        px_show_error("px_free_list_init: an allocator hook lacks its alloc or free function");
        return PX_ERR_BAD_PARAM;
    }
    fl->params = p;
    if (p.thread_safe) {
        pthread_mutex_t *m = malloc(sizeof(*m));
        if (NULL == m)
            return PX_ERR_OUT_OF_RESOURCE;
        pthread_mutex_init(m, NULL);
        fl->grow_lock = m;
        fl->get = get_mt;
        fl->put = put_mt;
        if (0 == p.num_max) /* caches only where stranded items cannot starve a get */
            px_tcache_owner_register(&fl->tc);
    } else {
        fl->get = get_st;
        fl->put = put_st;
    }
    if (p.num_initial)
        return px_free_list_grow(fl, p.num_initial);
    return PX_SUCCESS;
}

/* Allocate and construct one chunk of `count` items and push them. Caller
 * holds the grow lock in thread-safe mode. */
static int grow_locked(px_free_list_t *fl, size_t count)
{
    const px_free_list_params_t *p = &fl->params;
    if (p->num_max) {
        if (fl->num_allocated >= p->num_max)
            return PX_ERR_TEMP_OUT_OF_RESOURCE;
        if (count > p->num_max - fl->num_allocated)
            count = p->num_max - fl->num_allocated;
    }
    if (0 == count)
        return PX_SUCCESS;
    size_t stride = round_up(p->item_size, p->item_alignment);
    size_t pstride = round_up(p->payload_size, p->payload_alignment);
    px_free_list_chunk_t *chunk = PX_OBJ_NEW(px_free_list_chunk_t);
    if (NULL == chunk)
        return PX_ERR_OUT_OF_RESOURCE;
    chunk->items_bytes = stride * count;
    chunk->items = p->item_allocator->alloc(p->item_allocator->ctx, chunk->items_bytes,
                                            p->item_alignment, &chunk->items_cookie);
    if (NULL == chunk->items) {
        PX_OBJ_RELEASE(chunk);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    chunk->payloads = NULL;
    chunk->payloads_cookie = NULL;
    chunk->payloads_bytes = 0;
    if (p->payload_size) {
        chunk->payloads_bytes = pstride * count;
        chunk->payloads =
            p->payload_allocator->alloc(p->payload_allocator->ctx, chunk->payloads_bytes,
                                        p->payload_alignment, &chunk->payloads_cookie);
        if (NULL == chunk->payloads) {
            p->item_allocator->free(p->item_allocator->ctx, chunk->items, chunk->items_bytes,
                                    chunk->items_cookie);
            PX_OBJ_RELEASE(chunk);
            return PX_ERR_OUT_OF_RESOURCE;
        }
    }
    chunk->count = 0;
    for (size_t i = 0; i < count; i++) {
        px_free_list_item_t *item = (px_free_list_item_t *)((char *)chunk->items + i * stride);
        px_obj_construct_(&item->super.super, p->item_class, __FILE__, __LINE__);
        chunk->count++;
        item->owner = fl;
        item->payload = chunk->payloads ? (char *)chunk->payloads + i * pstride : NULL;
        item->registration = chunk->payloads_cookie;
        if (p->item_init) {
            int rc = p->item_init(item, p->item_init_ctx);
            if (PX_SUCCESS != rc) {
                chunk_release(fl, chunk);
                return rc;
            }
        }
    }
    px_list_append(&fl->chunks, &chunk->super);
    fl->num_allocated += count;
    /* Publish the items only when the whole chunk is ready, straight onto the
     * shared LIFO (not this thread's cache), first item on top. */
    px_list_item_t *first = NULL;
    for (size_t i = count; i-- > 0;) {
        px_list_item_t *item = (px_list_item_t *)((char *)chunk->items + i * stride);
        /* atomic (a plain store on x86): poppers read px_list_next with
         * atomic loads, and ThreadSanitizer cannot see the 16-byte CAS that
         * orders this store before them (libatomic is not instrumented) */
        __atomic_store_n(&item->px_list_next, first, __ATOMIC_RELAXED);
        first = item;
    }
    px_list_item_t *last = (px_list_item_t *)((char *)chunk->items + (count - 1) * stride);
    if (fl->grow_lock) {
        px_lifo_push_chain_atomic_inline(&fl->super, first, last);
    } else {
        last->px_list_next = fl->super.px_lifo_head.data.item;
        fl->super.px_lifo_head.data.item = first;
    }
    return PX_SUCCESS;
}

int px_free_list_grow(px_free_list_t *fl, size_t count)
{
    if (NULL == fl->grow_lock)
        return grow_locked(fl, count);
    pthread_mutex_lock((pthread_mutex_t *)fl->grow_lock);
    int rc = grow_locked(fl, count);
    pthread_mutex_unlock((pthread_mutex_t *)fl->grow_lock);
    return rc;
}

/* Thread-safe get found the LIFO empty: grow by num_per_grow unless another
 * thread's grow (or a return) refilled it while we waited for the lock. */
static int grow_if_empty(px_free_list_t *fl)
{
    pthread_mutex_lock((pthread_mutex_t *)fl->grow_lock);
    int rc = px_lifo_is_empty(&fl->super) ? grow_locked(fl, fl->params.num_per_grow) : PX_SUCCESS;
    pthread_mutex_unlock((pthread_mutex_t *)fl->grow_lock);
    return rc;
}
