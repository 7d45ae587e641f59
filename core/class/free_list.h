/*
 * free_list.h: a pool of preconstructed objects of one class, grown in chunks
 * up to a maximum. BTL components keep their fragments here; shm carves them
 * from its shared segment and verbs from registered memory through the
 * allocator hook.
 *
 * Each item is an object whose class derives from px_free_list_item_t. It is
 * constructed exactly once, when its chunk is allocated, and destructed when
 * the free list is destructed; get/return never run constructors.
 *
 * The thread-safe or single-thread path is chosen once at px_free_list_init
 * and stored as function pointers; px_free_list_get/return do not test it.
 * A caller that knows which kind of list it made may call the inline
 * px_free_list_get_st/return_st (single-thread lists only: a plain pointer
 * pop/push) or px_free_list_get_mt/return_mt (thread-safe lists only)
 * directly and skip the indirect call.
 *
 * Thread-safe path: a lock-free ABA-safe LIFO shared by all threads. When the
 * list has no maximum (num_max 0) each thread also keeps a small cache of up
 * to PX_TCACHE_CAP items (core/class/tcache.h), so a get/return pair on one
 * thread usually touches no atomic at all; caches exchange items with the
 * shared LIFO in batches of half their size. A list with a maximum uses no
 * caches, so a free item is always visible to every thread and get returns
 * NULL only when all num_max items are out.
 */
#ifndef PX_CLASS_FREE_LIST_H
#define PX_CLASS_FREE_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include "core/util/compiler.h"
#include "core/class/lifo.h"
#include "core/class/list.h"
#include "core/class/tcache_fast.h"

typedef struct px_free_list px_free_list_t;

typedef struct px_free_list_item {
    px_list_item_t super;
    void *payload;         /* the item's payload buffer, or NULL */
    px_free_list_t *owner; /* the free list the item belongs to */
    void *registration;    /* allocator cookie for the payload (e.g. an MR) */
} px_free_list_item_t;
PX_EXPORT PX_CLASS_DECLARATION(px_free_list_item_t);

/* Allocator hook: where chunks of items and payloads come from.
 * alloc(ctx, size, align, &cookie) returns memory or NULL; free(ctx, ptr, size,
 * cookie) gives it back. NULL hook: aligned_alloc/free. */
typedef struct px_free_list_allocator {
    void *(*alloc)(void *ctx, size_t size, size_t align, void **cookie);
    void (*free)(void *ctx, void *ptr, size_t size, void *cookie);
    void *ctx;
} px_free_list_allocator_t;

/* Called once per item after construction, with the item and the init context;
 * a non-zero return stops the grow with that error. */
typedef int (*px_free_list_item_init_fn)(px_free_list_item_t *item, void *ctx);

typedef struct px_free_list_params {
    px_class_t *item_class;                            /* derives from px_free_list_item_t */
    size_t item_size;                                  /* 0: item_class->cls_sizeof */
    size_t item_alignment;                             /* 0: 64 */
    size_t payload_size;                               /* 0: no payload */
    size_t payload_alignment;                          /* 0: 64 */
    size_t num_initial;                                /* allocated by init */
    size_t num_max;                                    /* 0: unlimited */
    size_t num_per_grow;                               /* 0: 32 */
    const px_free_list_allocator_t *item_allocator;    /* NULL: heap */
    const px_free_list_allocator_t *payload_allocator; /* NULL: heap */
    px_free_list_item_init_fn item_init;
    void *item_init_ctx;
    bool thread_safe; /* lock-free path; false: single-thread path */
} px_free_list_params_t;

struct px_free_list {
    px_lifo_t super;
    px_free_list_item_t *(*get)(px_free_list_t *fl);
    void (*put)(px_free_list_t *fl, px_free_list_item_t *item);
    px_free_list_params_t params;
    size_t num_allocated;
    px_list_t chunks;
    void *grow_lock;      /* pthread_mutex_t, opaque here */
    px_tcache_owner_t tc; /* per-thread caches (thread-safe, unlimited lists) */
};
PX_EXPORT PX_CLASS_DECLARATION(px_free_list_t);

/* Initialise a constructed free list; allocates params->num_initial items. */
PX_EXPORT int px_free_list_init(px_free_list_t *fl, const px_free_list_params_t *params);
/* Allocate `count` more items (respecting the maximum). */
PX_EXPORT int px_free_list_grow(px_free_list_t *fl, size_t count);

/* An item, growing when empty; NULL at the maximum or out of memory. */
static inline px_free_list_item_t *px_free_list_get(px_free_list_t *fl)
{
    return fl->get(fl);
}
/* Give an item back. */
static inline void px_free_list_return(px_free_list_t *fl, px_free_list_item_t *item)
{
    fl->put(fl, item);
}

/* Slow paths of the inline functions below (exported for them: they compile
 * into the caller, plugins included). */
PX_EXPORT px_free_list_item_t *px_free_list_get_st_slow(px_free_list_t *fl);
PX_EXPORT px_free_list_item_t *px_free_list_get_mt_slow(px_free_list_t *fl);
PX_EXPORT void px_free_list_return_mt_slow(px_free_list_t *fl, px_free_list_item_t *item);

/* Single-thread list (thread_safe false) only. */
static inline px_free_list_item_t *px_free_list_get_st(px_free_list_t *fl)
{
    px_list_item_t *it = px_lifo_pop_st_inline(&fl->super);
    return PX_LIKELY(NULL != it) ? (px_free_list_item_t *)it : px_free_list_get_st_slow(fl);
}

static inline void px_free_list_return_st(px_free_list_t *fl, px_free_list_item_t *item)
{
    px_lifo_push_st_inline(&fl->super, &item->super);
}

/* Thread-safe list (thread_safe true) only. */
static inline px_free_list_item_t *px_free_list_get_mt(px_free_list_t *fl)
{
    px_tcache_t *c = px_tcache_current(fl->tc.slot, fl->tc.gen);
    if (PX_LIKELY(c != NULL && c->count > 0))
        return (px_free_list_item_t *)c->items[--c->count];
    return px_free_list_get_mt_slow(fl);
}

static inline void px_free_list_return_mt(px_free_list_t *fl, px_free_list_item_t *item)
{
    px_tcache_t *c = px_tcache_current(fl->tc.slot, fl->tc.gen);
    if (PX_LIKELY(c != NULL && c->count < PX_TCACHE_CAP)) {
        c->items[c->count++] = item;
        return;
    }
    px_free_list_return_mt_slow(fl, item);
}

#endif
