/*
 * progress_test.c: the progress engine's callback table and its idle policy
 * (progress_yield_when_idle auto|always|never, progress_idle_spins): when the
 * engine yields, after how many idle calls, and that a call with events
 * starts the count again.
 */
#include "test/lib/px_check.h"
#include <stdlib.h>
#include "core/util/error.h"
#include "core/util/progress.h"

static int events_to_return;
static int cb_calls;

static int cb(void *ctx)
{
    (void)ctx;
    cb_calls++;
    return events_to_return;
}

static void policy(int mode, int spins, int sleep_us)
{
    px_progress_policy.yield_when_idle = mode;
    px_progress_policy.idle_spins = spins;
    px_progress_policy.idle_sleep_us = sleep_us;
}

static void setup(void)
{
    cb_calls = 0;
    events_to_return = 0;
    ck_assert_int_eq(px_progress_register(cb, NULL), PX_SUCCESS);
}

static void teardown(void)
{
    px_progress_finalize();
    policy(PX_PROGRESS_YIELD_AUTO, 32, 0);
}

START_TEST(register_twice_and_unregister)
{
    ck_assert_int_eq(px_progress_register(cb, NULL), PX_ERR_EXISTS);
    ck_assert_int_eq(px_progress_count(), 1);
    ck_assert_int_eq(px_progress_engine(), 0);
    ck_assert_int_eq(cb_calls, 1);
    ck_assert_int_eq(px_progress_unregister(cb, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_progress_unregister(cb, NULL), PX_ERR_NOT_FOUND);
}
END_TEST

START_TEST(no_policy_never_yields)
{
    /* Before px_progress_idle_setup the engine only polls. */
    for (int i = 0; i < 1000; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_idle_count(), 0);
}
END_TEST

START_TEST(always_yields_after_spins)
{
    policy(PX_PROGRESS_YIELD_ALWAYS, 4, 0);
    ck_assert(px_progress_idle_setup(1, 64));
    for (int i = 0; i < 20; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_idle_count(), 5);
    /* Three idle calls, then one with events: the count starts again. */
    for (int i = 0; i < 3; i++)
        px_progress_engine();
    events_to_return = 1;
    ck_assert_int_eq(px_progress_engine(), 1);
    events_to_return = 0;
    for (int i = 0; i < 3; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_idle_count(), 5);
    px_progress_engine();
    ck_assert_uint_eq(px_progress_idle_count(), 6);
}
END_TEST

START_TEST(never_does_not_yield)
{
    policy(PX_PROGRESS_YIELD_NEVER, 1, 0);
    ck_assert(!px_progress_idle_setup(1000, 1));
    for (int i = 0; i < 100; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_idle_count(), 0);
}
END_TEST

START_TEST(auto_yields_when_oversubscribed)
{
    policy(PX_PROGRESS_YIELD_AUTO, 2, 0);
    ck_assert(!px_progress_idle_setup(2, 2)); /* as many ranks as cores */
    for (int i = 0; i < 10; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_idle_count(), 0);
    ck_assert(px_progress_idle_setup(3, 2)); /* one more rank than cores */
    for (int i = 0; i < 10; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_idle_count(), 5);
    /* Cores from sysconf: no machine has 1<<30 online. */
    ck_assert(!px_progress_idle_setup(1, 0));
    ck_assert(px_progress_idle_setup(1 << 30, 0));
}
END_TEST

START_TEST(sleep_and_tick)
{
    /* A wait loop outside the engine counts through px_progress_idle_tick;
     * with idle_sleep_us the yield is a nanosleep. */
    policy(PX_PROGRESS_YIELD_ALWAYS, 3, 50);
    ck_assert(px_progress_idle_setup(1, 1));
    for (int i = 0; i < 9; i++)
        px_progress_idle_tick(0);
    ck_assert_uint_eq(px_progress_idle_count(), 3);
    px_progress_idle_reset();
    for (int i = 0; i < 9; i++)
        px_progress_idle_tick(0);
    ck_assert_uint_eq(px_progress_idle_count(), 3);
}
END_TEST

PX_CHECK_MAIN("progress", setup, teardown, 0, register_twice_and_unregister, no_policy_never_yields,
              always_yields_after_spins, never_does_not_yield, auto_yields_when_oversubscribed,
              sleep_and_tick)
