/*
 * lifo.c: the px_lifo_t class and its thread-safe and single-thread push/pop.
 *
 * ABA safety: the head is a {pointer, counter} pair. Every successful atomic
 * pop swaps the pair with one 16-byte compare-and-swap and bumps the counter,
 * so a pop that read the head before any other pop completed cannot succeed
 * with a stale `next`. Pushes only need to change the pointer (a pop between
 * our read and our CAS changes the pointer we compare against, or the counter
 * a concurrent pop compares against), so they use an 8-byte CAS.
 *
 * Items popped from an atomic LIFO must stay readable memory while other
 * threads may still be popping (a pop may read item->next of an item another
 * thread just took); the free list guarantees this by never freeing items
 * before it is destructed.
 */
#include "core/class/lifo.h"

static void lifo_construct(px_lifo_t *lifo)
{
    PX_OBJ_CONSTRUCT(&lifo->px_lifo_ghost, px_list_item_t);
    lifo->px_lifo_ghost.px_list_next = &lifo->px_lifo_ghost;
    lifo->px_lifo_head.data.item = &lifo->px_lifo_ghost;
    lifo->px_lifo_head.data.counter = 0;
}

static void lifo_destruct(px_lifo_t *lifo)
{
    PX_OBJ_DESTRUCT(&lifo->px_lifo_ghost);
}

PX_CLASS_INSTANCE(px_lifo_t, px_object_t, lifo_construct, lifo_destruct);

bool px_lifo_is_empty(px_lifo_t *lifo)
{
    return __atomic_load_n(&lifo->px_lifo_head.data.item, __ATOMIC_RELAXED) == &lifo->px_lifo_ghost;
}

void px_lifo_push_atomic(px_lifo_t *lifo, px_list_item_t *item)
{
    px_lifo_push_atomic_inline(lifo, item);
}

px_list_item_t *px_lifo_pop_atomic(px_lifo_t *lifo)
{
    return px_lifo_pop_atomic_inline(lifo);
}

void px_lifo_push_st(px_lifo_t *lifo, px_list_item_t *item)
{
    px_lifo_push_st_inline(lifo, item);
}

px_list_item_t *px_lifo_pop_st(px_lifo_t *lifo)
{
    return px_lifo_pop_st_inline(lifo);
}
