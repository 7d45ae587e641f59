/*
 * list_test.c: px_list_t (append, prepend, remove, splice, iteration) and
 * px_lifo_t (single-thread order, and the atomic path under 4 threads with
 * an owner mark on every item).
 */
#include "test/lib/px_check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "core/class/lifo.h"
#include "core/class/list.h"

#if PX_CHECK_TSAN /* ThreadSanitizer is ~10x slower */
#define ITERS 200000
#else
#define ITERS 1000000
#endif

typedef struct {
    px_list_item_t super;
    int id;
    atomic_int owner;
} node_t;
static void node_construct(node_t *n)
{
    n->id = -1;
    atomic_init(&n->owner, 0);
}
PX_CLASS_DECLARATION(node_t);
PX_CLASS_INSTANCE(node_t, px_list_item_t, node_construct, NULL);

/* The ids of the list in order, as a string "1,2,3". */
static const char *ids(px_list_t *l)
{
    static char buf[256];
    buf[0] = '\0';
    node_t *n;
    PX_LIST_FOREACH(n, l, node_t)
    {
        char tmp[16];
        snprintf(tmp, sizeof(tmp), "%s%d", buf[0] ? "," : "", n->id);
        strncat(buf, tmp, sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

static node_t nodes[8];
static void setup_nodes(void)
{
    for (int i = 0; i < 8; i++) {
        PX_OBJ_CONSTRUCT(&nodes[i], node_t);
        nodes[i].id = i;
    }
}
static void teardown_nodes(void)
{
    for (int i = 0; i < 8; i++)
        PX_OBJ_DESTRUCT(&nodes[i]);
}

START_TEST(list_append_prepend_order)
{
    px_list_t l;
    PX_OBJ_CONSTRUCT(&l, px_list_t);
    ck_assert(px_list_is_empty(&l));
    ck_assert_ptr_null(px_list_remove_first(&l));
    ck_assert_ptr_null(px_list_remove_last(&l));
    px_list_append(&l, &nodes[1].super);
    px_list_append(&l, &nodes[2].super);
    px_list_prepend(&l, &nodes[0].super);
    px_list_append(&l, &nodes[3].super);
    ck_assert_str_eq(ids(&l), "0,1,2,3");
    ck_assert_uint_eq(px_list_get_size(&l), 4);
    ck_assert_ptr_eq(px_list_get_first(&l), &nodes[0].super);
    ck_assert_ptr_eq(px_list_get_last(&l), &nodes[3].super);
    ck_assert_ptr_eq(px_list_get_next(px_list_get_first(&l)), &nodes[1].super);
    ck_assert_ptr_eq(px_list_get_prev(px_list_get_last(&l)), &nodes[2].super);
    /* insert_after the sentinel == prepend */
    px_list_insert_after(&l, px_list_get_begin(&l), &nodes[4].super);
    ck_assert_str_eq(ids(&l), "4,0,1,2,3");
    PX_OBJ_DESTRUCT(&l);
}
END_TEST

START_TEST(list_remove)
{
    px_list_t l;
    PX_OBJ_CONSTRUCT(&l, px_list_t);
    for (int i = 0; i < 5; i++)
        px_list_append(&l, &nodes[i].super);
    px_list_item_t *next = px_list_remove_item(&l, &nodes[2].super);
    ck_assert_ptr_eq(next, &nodes[3].super);
    ck_assert_ptr_null(nodes[2].super.px_list_next);
    ck_assert_str_eq(ids(&l), "0,1,3,4");
    ck_assert_ptr_eq(px_list_remove_first(&l), &nodes[0].super);
    ck_assert_ptr_eq(px_list_remove_last(&l), &nodes[4].super);
    ck_assert_str_eq(ids(&l), "1,3");
    ck_assert_uint_eq(px_list_get_size(&l), 2);
    /* Removing the last item returns the end marker. */
    ck_assert_ptr_eq(px_list_remove_item(&l, &nodes[3].super), px_list_get_end(&l));
    ck_assert_ptr_eq(px_list_remove_first(&l), &nodes[1].super);
    ck_assert(px_list_is_empty(&l));
    ck_assert_str_eq(ids(&l), "");
    PX_OBJ_DESTRUCT(&l);
}
END_TEST

START_TEST(list_splice)
{
    px_list_t a, b;
    PX_OBJ_CONSTRUCT(&a, px_list_t);
    PX_OBJ_CONSTRUCT(&b, px_list_t);
    px_list_splice(&a, &b); /* empty into empty */
    ck_assert(px_list_is_empty(&a));
    px_list_append(&a, &nodes[0].super);
    px_list_append(&a, &nodes[1].super);
    px_list_append(&b, &nodes[5].super);
    px_list_append(&b, &nodes[6].super);
    px_list_append(&b, &nodes[7].super);
    px_list_splice(&a, &b);
    ck_assert_str_eq(ids(&a), "0,1,5,6,7");
    ck_assert_uint_eq(px_list_get_size(&a), 5);
    ck_assert(px_list_is_empty(&b));
    ck_assert_str_eq(ids(&b), "");
    /* both lists still work after the splice */
    px_list_append(&b, &nodes[2].super);
    px_list_prepend(&a, &nodes[3].super);
    ck_assert_str_eq(ids(&a), "3,0,1,5,6,7");
    ck_assert_ptr_eq(px_list_get_prev(px_list_get_end(&a)), &nodes[7].super);
    px_list_splice(&b, &a); /* into a non-empty list */
    ck_assert_str_eq(ids(&b), "2,3,0,1,5,6,7");
    ck_assert_ptr_eq(px_list_get_last(&b), &nodes[7].super);
    PX_OBJ_DESTRUCT(&a);
    PX_OBJ_DESTRUCT(&b);
}
END_TEST

START_TEST(list_foreach_safe_removal)
{
    px_list_t l;
    PX_OBJ_CONSTRUCT(&l, px_list_t);
    for (int i = 0; i < 8; i++)
        px_list_append(&l, &nodes[i].super);
    node_t *n, *next;
    PX_LIST_FOREACH_SAFE(n, next, &l, node_t)
    {
        if (n->id % 2)
            px_list_remove_item(&l, &n->super);
    }
    ck_assert_str_eq(ids(&l), "0,2,4,6");
    /* reverse walk through prev links */
    int expect = 6;
    for (px_list_item_t *it = px_list_get_last(&l); it != px_list_get_begin(&l);
         it = px_list_get_prev(it), expect -= 2)
        ck_assert_int_eq(((node_t *)it)->id, expect);
    ck_assert_int_eq(expect, -2);
    PX_OBJ_DESTRUCT(&l);
}
END_TEST

START_TEST(lifo_st_order)
{
    px_lifo_t s;
    PX_OBJ_CONSTRUCT(&s, px_lifo_t);
    ck_assert(px_lifo_is_empty(&s));
    ck_assert_ptr_null(px_lifo_pop_st(&s));
    for (int i = 0; i < 4; i++)
        px_lifo_push_st(&s, &nodes[i].super);
    ck_assert(!px_lifo_is_empty(&s));
    for (int i = 3; i >= 0; i--)
        ck_assert_ptr_eq(px_lifo_pop_st(&s), &nodes[i].super);
    ck_assert_ptr_null(px_lifo_pop_st(&s));
    ck_assert(px_lifo_is_empty(&s));
    /* The atomic path on one thread gives the same order. */
    for (int i = 0; i < 4; i++)
        px_lifo_push_atomic(&s, &nodes[i].super);
    for (int i = 3; i >= 0; i--)
        ck_assert_ptr_eq(px_lifo_pop_atomic(&s), &nodes[i].super);
    ck_assert_ptr_null(px_lifo_pop_atomic(&s));
    PX_OBJ_DESTRUCT(&s);
}
END_TEST

/* The ABA case, interleaved by hand: a pop reads head X and next Y, then
 * "another thread" pops X and Y and pushes X back. The first pop's
 * compare-and-swap must now fail (the counter moved), or Y, which is taken,
 * would become the head. */
START_TEST(lifo_aba_detected)
{
    px_lifo_t s;
    PX_OBJ_CONSTRUCT(&s, px_lifo_t);
    px_list_item_t *x = &nodes[0].super, *y = &nodes[1].super, *z = &nodes[2].super;
    px_lifo_push_atomic(&s, z);
    px_lifo_push_atomic(&s, y);
    px_lifo_push_atomic(&s, x); /* stack: x y z */
    px_counted_pointer_t seen = s.px_lifo_head;
    ck_assert_ptr_eq(seen.data.item, x);
    px_list_item_t *seen_next = x->px_list_next;
    ck_assert_ptr_eq(seen_next, y);
    ck_assert_ptr_eq(px_lifo_pop_atomic(&s), x); /* the other thread */
    ck_assert_ptr_eq(px_lifo_pop_atomic(&s), y);
    px_lifo_push_atomic(&s, x); /* stack: x z; head pointer is x again */
    ck_assert_ptr_eq(s.px_lifo_head.data.item, seen.data.item);
    ck_assert(!px_lifo_cas_head(&s.px_lifo_head, &seen, seen_next, seen.data.counter + 1));
    ck_assert_ptr_eq(seen.data.item, x); /* failure reloads the current head */
    ck_assert_uint_eq(seen.data.counter, s.px_lifo_head.data.counter);
    /* and the stack is intact: x then z */
    ck_assert_ptr_eq(px_lifo_pop_atomic(&s), x);
    ck_assert_ptr_eq(px_lifo_pop_atomic(&s), z);
    ck_assert_ptr_null(px_lifo_pop_atomic(&s));
    PX_OBJ_DESTRUCT(&s);
}
END_TEST

/* 4 threads pop/push a small set of items 1M times each; an item popped by
 * two threads at once would be caught by its owner mark. */
#define NITEMS 6
static px_lifo_t shared_lifo;
static node_t pool[NITEMS];
static atomic_int violations, go, done;
/* At least ITERS pops each, continuing until all threads are done so they
 * overlap (bounded at 20x ITERS). */
static void *lifo_worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < 20 * ITERS; i++) {
        if (i == ITERS)
            atomic_fetch_add(&done, 1);
        if (i >= ITERS && atomic_load_explicit(&done, memory_order_relaxed) == 4)
            break;
        node_t *n = (node_t *)px_lifo_pop_atomic(&shared_lifo);
        if (NULL == n)
            continue; /* all items held by the others at this instant */
        if (0 != atomic_exchange(&n->owner, me))
            atomic_fetch_add(&violations, 1);
        if (me != atomic_exchange(&n->owner, 0))
            atomic_fetch_add(&violations, 1);
        px_lifo_push_atomic(&shared_lifo, &n->super);
    }
    return NULL;
}

START_TEST(lifo_atomic_threads_no_double_pop)
{
    PX_OBJ_CONSTRUCT(&shared_lifo, px_lifo_t);
    for (int i = 0; i < NITEMS; i++) {
        PX_OBJ_CONSTRUCT(&pool[i], node_t);
        px_lifo_push_atomic(&shared_lifo, &pool[i].super);
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, lifo_worker, (void *)(intptr_t)(i + 1));
    atomic_store(&go, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int v = atomic_load(&violations);
    ck_assert_msg(v == 0, "%d times an item was popped by two threads at once", v);
    /* Every item is back exactly once. */
    int seen[NITEMS] = {0}, count = 0;
    px_list_item_t *it;
    while (NULL != (it = px_lifo_pop_st(&shared_lifo))) {
        ck_assert(it >= &pool[0].super && it <= &pool[NITEMS - 1].super);
        seen[(node_t *)it - pool]++;
        count++;
    }
    ck_assert_int_eq(count, NITEMS);
    for (int i = 0; i < NITEMS; i++)
        ck_assert_int_eq(seen[i], 1);
    for (int i = 0; i < NITEMS; i++)
        PX_OBJ_DESTRUCT(&pool[i]);
    PX_OBJ_DESTRUCT(&shared_lifo);
}
END_TEST

int main(void)
{
    const TTest *st[] = {list_append_prepend_order, list_remove,   list_splice,
                         list_foreach_safe_removal, lifo_st_order, lifo_aba_detected};
    const TTest *mt[] = {lifo_atomic_threads_no_double_pop};
    Suite *s = suite_create("list");
    suite_add_tcase(s,
                    px_check_tcase("list", setup_nodes, teardown_nodes, 0, st, PX_CHECK_COUNT(st)));
    suite_add_tcase(s, px_check_tcase("lifo_threads", NULL, NULL, 60, mt, PX_CHECK_COUNT(mt)));
    return px_check_run(s);
}
