/*
 * mpsc_test.c: px_mpsc_t: empty queue, one producer's order, a take that
 * leaves the queue empty for the next pushes, and 4 producer threads against
 * one consumer: every node is taken exactly once and each producer's nodes
 * come out in the order it pushed them.
 */
#include "test/lib/px_check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include "core/class/mpsc.h"

/* Fewer items under the sanitizers (each push is instrumented; 4 producers
 * and a spinning consumer share this machine's 2 cores): ASan took 81 s for
 * 200,000 under load. Ordering races show within the first few thousand. */
#if PX_CHECK_TSAN
#define PER_THREAD 20000
#elif defined(__SANITIZE_ADDRESS__)
#define PER_THREAD 50000
#else
#define PER_THREAD 200000
#endif
#define NPROD 4

typedef struct {
    px_mpsc_node_t node; /* first: a node pointer is the item's */
    int producer;
    int seq;
} item_t;

START_TEST(empty_and_order)
{
    px_mpsc_t q = PX_MPSC_INIT;
    ck_assert(px_mpsc_empty(&q));
    ck_assert_ptr_null(px_mpsc_take_all(&q));
    item_t it[5];
    for (int i = 0; i < 5; i++) {
        it[i].seq = i;
        px_mpsc_push(&q, &it[i].node);
    }
    ck_assert(!px_mpsc_empty(&q));
    int expect = 0;
    for (px_mpsc_node_t *n = px_mpsc_take_all(&q); n; n = n->next)
        ck_assert_int_eq(((item_t *)n)->seq, expect++);
    ck_assert_int_eq(expect, 5);
    ck_assert(px_mpsc_empty(&q));
    /* Pushed again after a take: a fresh list. */
    px_mpsc_push(&q, &it[3].node);
    px_mpsc_node_t *n = px_mpsc_take_all(&q);
    ck_assert_ptr_eq(n, &it[3].node);
    ck_assert_ptr_null(n->next);
}
END_TEST

static px_mpsc_t shared_q = PX_MPSC_INIT;
static atomic_int producers_done;

static void *producer(void *arg)
{
    int p = (int)(intptr_t)arg;
    item_t *items = malloc(sizeof(item_t) * PER_THREAD);
    for (int i = 0; i < PER_THREAD; i++) {
        items[i].producer = p;
        items[i].seq = i;
        px_mpsc_push(&shared_q, &items[i].node);
    }
    atomic_fetch_add(&producers_done, 1);
    return items;
}

START_TEST(producers_one_consumer)
{
    pthread_t t[NPROD];
    for (int i = 0; i < NPROD; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, producer, (void *)(intptr_t)i), 0);
    int next[NPROD] = {0};
    long taken = 0;
    for (;;) {
        int done = atomic_load(&producers_done);
        for (px_mpsc_node_t *n = px_mpsc_take_all(&shared_q); n; n = n->next) {
            item_t *it = (item_t *)n;
            ck_assert_int_eq(it->seq, next[it->producer]);
            next[it->producer]++;
            taken++;
        }
        if (done == NPROD && px_mpsc_empty(&shared_q))
            break;
    }
    for (int i = 0; i < NPROD; i++) {
        void *items;
        pthread_join(t[i], &items);
        free(items);
        ck_assert_int_eq(next[i], PER_THREAD);
    }
    ck_assert_int_eq(taken, (long)NPROD * PER_THREAD);
}
END_TEST

PX_CHECK_MAIN("mpsc", NULL, NULL, 120, empty_and_order, producers_one_consumer)
