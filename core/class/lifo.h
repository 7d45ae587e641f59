/*
 * lifo.h: a LIFO stack of px_list_item_t. The atomic path is lock-free and
 * ABA-safe (a counted head swapped with a 16-byte compare-and-swap); the _st
 * path is for a single thread. Used by the free list; usable on its own.
 *
 *   px_lifo_t s; PX_OBJ_CONSTRUCT(&s, px_lifo_t);
 *   px_lifo_push_atomic(&s, &item->super);
 *   px_list_item_t *it = px_lifo_pop_atomic(&s);   // NULL when empty
 *
 * Items pushed on an atomic LIFO must stay readable (not freed) while any
 * thread may still pop from it: a pop may read item->next of an item another
 * thread has just taken. A LIFO does not own references to its items.
 * The *_inline variants are the same operations for hot paths.
 */
#ifndef PX_CLASS_LIFO_H
#define PX_CLASS_LIFO_H

#include <stdbool.h>
#include <stdint.h>
#include "core/util/compiler.h"
#include "core/class/list.h"

typedef union px_counted_pointer {
    struct {
        px_list_item_t *item;
        uintptr_t counter;
    } data;
    __int128 value;
} __attribute__((aligned(16))) px_counted_pointer_t;

typedef struct px_lifo {
    px_object_t super;
    px_counted_pointer_t px_lifo_head;
    px_list_item_t px_lifo_ghost; /* end marker */
} px_lifo_t;
PX_EXPORT PX_CLASS_DECLARATION(px_lifo_t);

PX_EXPORT bool px_lifo_is_empty(px_lifo_t *lifo);
/* Thread-safe push/pop. pop returns NULL when empty. */
PX_EXPORT void px_lifo_push_atomic(px_lifo_t *lifo, px_list_item_t *item);
PX_EXPORT px_list_item_t *px_lifo_pop_atomic(px_lifo_t *lifo);
/* Single-thread push/pop. */
PX_EXPORT void px_lifo_push_st(px_lifo_t *lifo, px_list_item_t *item);
PX_EXPORT px_list_item_t *px_lifo_pop_st(px_lifo_t *lifo);

/* ---- inline implementations ---- */

/* ThreadSanitizer cannot see inside inline assembly, so its builds take the
 * builtin (gcc says so with __SANITIZE_THREAD__, clang with __has_feature). */
#if defined(__SANITIZE_THREAD__)
#define PX_LIFO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PX_LIFO_TSAN 1
#endif
#endif
#ifndef PX_LIFO_TSAN
#define PX_LIFO_TSAN 0
#endif

/* 16-byte CAS of the counted head. On failure *expected holds the current
 * value. x86_64: cmpxchg16b inline (no -mcx16 or libatomic needed); other
 * targets and ThreadSanitizer builds: the __atomic builtin (may need
 * -latomic). */
static inline bool px_lifo_cas_head(px_counted_pointer_t *addr, px_counted_pointer_t *expected,
                                    px_list_item_t *item, uintptr_t counter)
{
#if defined(__x86_64__) && !PX_LIFO_TSAN
    bool ok;
    __asm__ __volatile__("lock cmpxchg16b %1"
                         : "=@ccz"(ok), "+m"(addr->value), "+a"(expected->data.item),
                           "+d"(expected->data.counter)
                         : "b"(item), "c"(counter)
                         : "memory");
    return ok;
#else
    px_counted_pointer_t desired;
    desired.data.item = item;
    desired.data.counter = counter;
    return __atomic_compare_exchange_n(&addr->value, &expected->value, desired.value, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
#endif
}

static inline void px_lifo_push_atomic_inline(px_lifo_t *lifo, px_list_item_t *item)
{
    px_list_item_t *next = __atomic_load_n(&lifo->px_lifo_head.data.item, __ATOMIC_RELAXED);
    do {
        /* atomic: a pop holding a stale head may read this concurrently (its
         * CAS then fails) */
        __atomic_store_n(&item->px_list_next, next, __ATOMIC_RELAXED);
    } while (!__atomic_compare_exchange_n(&lifo->px_lifo_head.data.item, &next, item, true,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Push a chain first..last (already linked through px_list_next) at once. */
static inline void px_lifo_push_chain_atomic_inline(px_lifo_t *lifo, px_list_item_t *first,
                                                    px_list_item_t *last)
{
    px_list_item_t *next = __atomic_load_n(&lifo->px_lifo_head.data.item, __ATOMIC_RELAXED);
    do {
        __atomic_store_n(&last->px_list_next, next, __ATOMIC_RELAXED);
    } while (!__atomic_compare_exchange_n(&lifo->px_lifo_head.data.item, &next, first, true,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

static inline px_list_item_t *px_lifo_pop_atomic_inline(px_lifo_t *lifo)
{
    px_counted_pointer_t old;
    /* A torn read only makes the first CAS fail and reload both halves. */
    old.data.counter = __atomic_load_n(&lifo->px_lifo_head.data.counter, __ATOMIC_ACQUIRE);
    old.data.item = __atomic_load_n(&lifo->px_lifo_head.data.item, __ATOMIC_ACQUIRE);
    for (;;) {
        px_list_item_t *item = old.data.item;
        if (item == &lifo->px_lifo_ghost)
            return NULL;
        px_list_item_t *next = __atomic_load_n(&item->px_list_next, __ATOMIC_RELAXED);
        if (px_lifo_cas_head(&lifo->px_lifo_head, &old, next, old.data.counter + 1))
            return item;
    }
}

static inline void px_lifo_push_st_inline(px_lifo_t *lifo, px_list_item_t *item)
{
    item->px_list_next = lifo->px_lifo_head.data.item;
    lifo->px_lifo_head.data.item = item;
}

static inline px_list_item_t *px_lifo_pop_st_inline(px_lifo_t *lifo)
{
    px_list_item_t *item = lifo->px_lifo_head.data.item;
    if (item == &lifo->px_lifo_ghost)
        return NULL;
    lifo->px_lifo_head.data.item = item->px_list_next;
    return item;
}

#endif
