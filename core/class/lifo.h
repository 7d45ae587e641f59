/*
 * lifo.h: a LIFO stack of px_list_item_t. The atomic path is lock-free and
 * ABA-safe (a counted head swapped with a 16-byte compare-and-swap); the _st
 * path is for a single thread. Used by the free list.
 */
#ifndef PX_CLASS_LIFO_H
#define PX_CLASS_LIFO_H

#include <stdbool.h>
#include <stdint.h>
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
PX_CLASS_DECLARATION(px_lifo_t);

bool px_lifo_is_empty(px_lifo_t *lifo);
/* Thread-safe push/pop. pop returns NULL when empty. */
void px_lifo_push_atomic(px_lifo_t *lifo, px_list_item_t *item);
px_list_item_t *px_lifo_pop_atomic(px_lifo_t *lifo);
/* Single-thread push/pop. */
void px_lifo_push_st(px_lifo_t *lifo, px_list_item_t *item);
px_list_item_t *px_lifo_pop_st(px_lifo_t *lifo);

#endif
