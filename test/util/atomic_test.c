/*
 * atomic_test.c: the C11 atomic wrappers: return values (old vs new), cas
 * success/failure semantics, swap, and 4 threads adding concurrently.
 */
#include "test/lib/px_check.h"
#include <pthread.h>
#include "core/util/atomic.h"

START_TEST(return_values)
{
    px_atomic_int32_t a;
    px_atomic_init_32(&a, 10);
    ck_assert_int_eq(px_atomic_add_fetch_32(&a, 5), 15);
    ck_assert_int_eq(px_atomic_fetch_add_32(&a, 5), 15);
    ck_assert_int_eq(px_atomic_sub_fetch_32(&a, 1), 19);
    ck_assert_int_eq(px_atomic_fetch_sub_32(&a, 9), 19);
    ck_assert_int_eq(px_atomic_load_32(&a), 10);
    ck_assert_int_eq(px_atomic_fetch_or_32(&a, 5), 10);
    ck_assert_int_eq(px_atomic_fetch_and_32(&a, 4), 15);
    ck_assert_int_eq(px_atomic_swap_32(&a, 99), 4);
    px_atomic_store_relaxed_32(&a, 7);
    ck_assert_int_eq(px_atomic_load_relaxed_32(&a), 7);
    int32_t e = 6;
    ck_assert(!px_atomic_cas_32(&a, &e, 1));
    ck_assert_int_eq(e, 7); /* failure: current value returned */
    ck_assert(px_atomic_cas_32(&a, &e, 1));
    ck_assert_int_eq(e, 7); /* success: unchanged */
    ck_assert_int_eq(px_atomic_load_32(&a), 1);

    px_atomic_int64_t b;
    px_atomic_init_64(&b, INT64_C(1) << 40);
    ck_assert(px_atomic_add_fetch_64(&b, 1) == (INT64_C(1) << 40) + 1);
    int64_t e64 = 0;
    ck_assert(!px_atomic_cas_64(&b, &e64, 0));
    ck_assert(e64 == (INT64_C(1) << 40) + 1);
    px_atomic_store_64(&b, -5);
    ck_assert(px_atomic_fetch_add_relaxed_64(&b, 5) == -5);
    ck_assert(px_atomic_load_64(&b) == 0);

    int x, y;
    px_atomic_ptr_t p = NULL;
    void *ep = &y;
    ck_assert(!px_atomic_cas_ptr(&p, &ep, &x));
    ck_assert_ptr_null(ep);
    ck_assert(px_atomic_cas_ptr(&p, &ep, &x));
    ck_assert_ptr_eq(px_atomic_swap_ptr(&p, &y), &x);
    ck_assert_ptr_eq(px_atomic_load_ptr(&p), &y);
    px_atomic_store_ptr(&p, NULL);
    ck_assert_ptr_null(px_atomic_load_ptr(&p));
    px_atomic_mb();
    px_atomic_rmb();
    px_atomic_wmb();
    px_atomic_pause();
}
END_TEST

static px_atomic_int64_t counter;
static px_atomic_int32_t cas_counter;
static void *adder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200000; i++) {
        px_atomic_fetch_add_64(&counter, 1);
        int32_t cur = px_atomic_load_relaxed_32(&cas_counter);
        while (!px_atomic_cas_32(&cas_counter, &cur, cur + 1))
            px_atomic_pause();
    }
    return NULL;
}

START_TEST(threads_lose_no_update)
{
    px_atomic_init_64(&counter, 0);
    px_atomic_init_32(&cas_counter, 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, adder, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ck_assert(px_atomic_load_64(&counter) == 800000);
    ck_assert_int_eq(px_atomic_load_32(&cas_counter), 800000);
}
END_TEST

PX_CHECK_MAIN("atomic", NULL, NULL, 0, return_values, threads_lose_no_update)
