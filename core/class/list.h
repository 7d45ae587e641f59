/*
 * list.h: an intrusive doubly linked list of px_list_item_t (objects).
 * Used for every queue in Plexus that is touched by one thread at a time:
 * component lists, pending fragments, unexpected messages. Not thread-safe.
 *
 *   px_list_t q; PX_OBJ_CONSTRUCT(&q, px_list_t);
 *   px_list_append(&q, &frag->super);
 *   PX_LIST_FOREACH(item, &q, my_frag_t) { ... }
 *
 * The list does not own references: removing an item does not release it.
 * All operations are O(1) except px_list_get_size (O(1), kept) and iteration.
 */
#ifndef PX_CLASS_LIST_H
#define PX_CLASS_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include "core/util/compiler.h"
#include "core/class/object.h"

typedef struct px_list_item {
    px_object_t super;
    struct px_list_item *volatile px_list_next;
    struct px_list_item *volatile px_list_prev;
    int32_t item_free; /* used by the atomic LIFO: 0 while on a LIFO */
} px_list_item_t;
PX_EXPORT PX_CLASS_DECLARATION(px_list_item_t);

typedef struct px_list {
    px_object_t super;
    px_list_item_t px_list_sentinel; /* head and tail link through it */
    size_t px_list_length;
} px_list_t;
PX_EXPORT PX_CLASS_DECLARATION(px_list_t);

#define px_list_get_next(item) (((px_list_item_t *)(item))->px_list_next)
#define px_list_get_prev(item) (((px_list_item_t *)(item))->px_list_prev)

static inline px_list_item_t *px_list_get_first(px_list_t *l)
{
    return l->px_list_sentinel.px_list_next;
}
static inline px_list_item_t *px_list_get_last(px_list_t *l)
{
    return l->px_list_sentinel.px_list_prev;
}
static inline px_list_item_t *px_list_get_end(px_list_t *l)
{
    return &l->px_list_sentinel;
}
static inline px_list_item_t *px_list_get_begin(px_list_t *l)
{
    return &l->px_list_sentinel;
}
static inline bool px_list_is_empty(const px_list_t *l)
{
    return 0 == l->px_list_length;
}
static inline size_t px_list_get_size(const px_list_t *l)
{
    return l->px_list_length;
}

/* Insert `item` after `pos` (which may be the sentinel). */
static inline void px_list_insert_after(px_list_t *l, px_list_item_t *pos, px_list_item_t *item)
{
    item->px_list_prev = pos;
    item->px_list_next = pos->px_list_next;
    pos->px_list_next->px_list_prev = item;
    pos->px_list_next = item;
    l->px_list_length++;
}

static inline void px_list_append(px_list_t *l, px_list_item_t *item)
{
    px_list_insert_after(l, l->px_list_sentinel.px_list_prev, item);
}

static inline void px_list_prepend(px_list_t *l, px_list_item_t *item)
{
    px_list_insert_after(l, &l->px_list_sentinel, item);
}

/* Unlink `item` (which must be on `l`) and return the item that followed it. */
static inline px_list_item_t *px_list_remove_item(px_list_t *l, px_list_item_t *item)
{
    px_list_item_t *next = item->px_list_next;
    item->px_list_prev->px_list_next = next;
    next->px_list_prev = item->px_list_prev;
    item->px_list_next = item->px_list_prev = NULL;
    l->px_list_length--;
    return next;
}

/* Remove and return the first / last item, or NULL when empty. */
static inline px_list_item_t *px_list_remove_first(px_list_t *l)
{
    if (0 == l->px_list_length)
        return NULL;
    px_list_item_t *item = l->px_list_sentinel.px_list_next;
    px_list_remove_item(l, item);
    return item;
}

static inline px_list_item_t *px_list_remove_last(px_list_t *l)
{
    if (0 == l->px_list_length)
        return NULL;
    px_list_item_t *item = l->px_list_sentinel.px_list_prev;
    px_list_remove_item(l, item);
    return item;
}

/* Move every item of `src` to the end of `dst`; `src` becomes empty. */
PX_EXPORT void px_list_splice(px_list_t *dst, px_list_t *src);

/* Iterate: `item` is a `type *` cursor; do not remove it inside the loop
 * (use PX_LIST_FOREACH_SAFE for that). */
#define PX_LIST_FOREACH(item, list, type)                                                          \
    for (item = (type *)(list)->px_list_sentinel.px_list_next;                                     \
         ((px_list_item_t *)(item)) != &(list)->px_list_sentinel;                                  \
         item = (type *)((px_list_item_t *)(item))->px_list_next)

#define PX_LIST_FOREACH_SAFE(item, next, list, type)                                               \
    for (item = (type *)(list)->px_list_sentinel.px_list_next,                                     \
        next = (type *)((px_list_item_t *)(item))->px_list_next;                                   \
         ((px_list_item_t *)(item)) != &(list)->px_list_sentinel;                                  \
         item = next, next = (type *)((px_list_item_t *)(item))->px_list_next)

#endif
