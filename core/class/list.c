/*
 * list.c: px_list_t and px_list_item_t classes.
 */
#include "core/class/list.h"

static void item_construct(px_list_item_t *item)
{
    item->px_list_next = item->px_list_prev = NULL;
    item->item_free = 1;
}

static void list_construct(px_list_t *l)
{
    PX_OBJ_CONSTRUCT(&l->px_list_sentinel, px_list_item_t);
    l->px_list_sentinel.px_list_next = &l->px_list_sentinel;
    l->px_list_sentinel.px_list_prev = &l->px_list_sentinel;
    l->px_list_length = 0;
}

/* The list does not own its items: destructing it leaves them untouched. */
static void list_destruct(px_list_t *l)
{
    PX_OBJ_DESTRUCT(&l->px_list_sentinel);
    l->px_list_length = 0;
}

PX_CLASS_INSTANCE(px_list_item_t, px_object_t, item_construct, NULL);
PX_CLASS_INSTANCE(px_list_t, px_object_t, list_construct, list_destruct);

void px_list_splice(px_list_t *dst, px_list_t *src)
{
    if (0 == src->px_list_length)
        return;
    px_list_item_t *first = src->px_list_sentinel.px_list_next;
    px_list_item_t *last = src->px_list_sentinel.px_list_prev;
    px_list_item_t *tail = dst->px_list_sentinel.px_list_prev;
    tail->px_list_next = first;
    first->px_list_prev = tail;
    last->px_list_next = &dst->px_list_sentinel;
    dst->px_list_sentinel.px_list_prev = last;
    dst->px_list_length += src->px_list_length;
    src->px_list_sentinel.px_list_next = src->px_list_sentinel.px_list_prev =
        &src->px_list_sentinel;
    src->px_list_length = 0;
}
