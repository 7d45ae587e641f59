/*
 * progress_test.c: the progress engine's callback table and its idle policy
 * (progress_yield_when_idle auto|always|never, progress_idle_spins): when the
 * engine yields, after how many idle calls, and that a call with events
 * starts the count again; blocking when idle on waiters' descriptors (event
 * mode): only when every callback has a waiter and the policy is not never,
 * not when an arm found work, and the descriptor's notification drained.
 */
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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
    px_progress_idle_policy_t p;
    ck_assert_int_eq(px_progress_policy_get(&p, sizeof(p)), PX_SUCCESS);
    p.yield_when_idle = mode;
    p.idle_spins = spins;
    p.idle_sleep_us = sleep_us;
    ck_assert_int_eq(px_progress_policy_set(&p, sizeof(p)), PX_SUCCESS);
}

static void wait_ms(int ms)
{
    px_progress_idle_policy_t p;
    ck_assert_int_eq(px_progress_policy_get(&p, sizeof(p)), PX_SUCCESS);
    p.idle_wait_ms = ms;
    ck_assert_int_eq(px_progress_policy_set(&p, sizeof(p)), PX_SUCCESS);
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
    wait_ms(100);
}

/* A waiter on a pipe: arm returns arm_found, drain reads the pipe. */
static int pipe_fd[2];
static int arm_found, arm_calls, drain_calls;
static int w_arm(void *ctx)
{
    (void)ctx;
    arm_calls++;
    return arm_found;
}
static void w_drain(void *ctx)
{
    (void)ctx;
    char c;
    drain_calls++;
    ck_assert_int_eq(read(pipe_fd[0], &c, 1), 1);
}
static void waiter_on(void *ctx)
{
    ck_assert_int_eq(pipe(pipe_fd), 0);
    arm_found = arm_calls = drain_calls = 0;
    px_progress_waiter_t w = {.fd = pipe_fd[0], .arm = w_arm, .drain = w_drain, .ctx = ctx};
    ck_assert_int_eq(px_progress_waiter_register(&w), PX_SUCCESS);
    ck_assert_int_eq(px_progress_waiter_register(&w), PX_ERR_EXISTS);
}
static void waiter_off(void *ctx)
{
    ck_assert_int_eq(px_progress_waiter_unregister(ctx), PX_SUCCESS);
    ck_assert_int_eq(px_progress_waiter_unregister(ctx), PX_ERR_NOT_FOUND);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
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

START_TEST(waiter_blocks_when_idle)
{
    /* Auto, as many ranks as cores (no yielding): the waiter alone makes
     * the idle engine block, after idle_spins idle calls. */
    policy(PX_PROGRESS_YIELD_AUTO, 4, 0);
    wait_ms(1);
    ck_assert(!px_progress_idle_setup(1, 64));
    ck_assert_uint_eq(px_progress_idle_limit, 0);
    waiter_on(NULL); /* the ctx the callback was registered with */
    ck_assert(px_progress_can_block());
    ck_assert_uint_eq(px_progress_idle_limit, 4);
    for (int i = 0; i < 8; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_block_count(), 2);
    ck_assert_int_eq(arm_calls, 2);
    ck_assert_int_eq(drain_calls, 0); /* timed out, nothing to read */
    /* A notification: the block returns at once and drains it. */
    ck_assert_int_eq(write(pipe_fd[1], "x", 1), 1);
    for (int i = 0; i < 4; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_block_count(), 3);
    ck_assert_int_eq(drain_calls, 1);
    /* An arm that found work: no sleep. */
    arm_found = 1;
    for (int i = 0; i < 4; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_block_count(), 3);
    ck_assert_int_eq(arm_calls, 4);
    waiter_off(NULL);
    ck_assert_uint_eq(px_progress_idle_limit, 0);
}
END_TEST

START_TEST(waiter_needs_every_callback)
{
    /* A second callback without a waiter (say shm's rings): never block,
     * and without a yielding policy not even yield. */
    policy(PX_PROGRESS_YIELD_AUTO, 2, 0);
    wait_ms(1);
    ck_assert(!px_progress_idle_setup(1, 64));
    ck_assert_int_eq(px_progress_register(cb, &cb_calls), PX_SUCCESS);
    waiter_on(NULL);
    ck_assert(!px_progress_can_block());
    for (int i = 0; i < 10; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_block_count(), 0);
    ck_assert_uint_eq(px_progress_idle_count(), 0);
    ck_assert_int_eq(arm_calls, 0);
    /* The second callback gets its own waiter: now it may block. */
    px_progress_waiter_t w = {.fd = pipe_fd[0], .arm = w_arm, .drain = w_drain, .ctx = &cb_calls};
    ck_assert_int_eq(px_progress_waiter_register(&w), PX_SUCCESS);
    ck_assert(px_progress_can_block());
    ck_assert_int_eq(px_progress_waiter_unregister(&cb_calls), PX_SUCCESS);
    waiter_off(NULL);
    ck_assert_int_eq(px_progress_unregister(cb, &cb_calls), PX_SUCCESS);
}
END_TEST

START_TEST(waiter_never_policy)
{
    /* progress_yield_when_idle=never: a waiter does not make it block. */
    policy(PX_PROGRESS_YIELD_NEVER, 1, 0);
    ck_assert(!px_progress_idle_setup(1, 64));
    waiter_on(NULL);
    ck_assert(!px_progress_can_block());
    ck_assert_uint_eq(px_progress_idle_limit, 0);
    for (int i = 0; i < 10; i++)
        px_progress_engine();
    ck_assert_uint_eq(px_progress_block_count(), 0);
    ck_assert_int_eq(arm_calls, 0);
    waiter_off(NULL);
    /* A waiter without a descriptor or callbacks is refused. */
    px_progress_waiter_t bad = {.fd = -1, .arm = w_arm, .drain = w_drain};
    ck_assert_int_eq(px_progress_waiter_register(&bad), PX_ERR_BAD_PARAM);
    bad.fd = 0;
    bad.arm = NULL;
    ck_assert_int_eq(px_progress_waiter_register(&bad), PX_ERR_BAD_PARAM);
}
END_TEST

/* The policy through functions (docs/abi.md): a caller built when the struct
 * was smaller passes its size and never gets more bytes, nor sets more. */
START_TEST(policy_get_set_by_size)
{
    policy(PX_PROGRESS_YIELD_ALWAYS, 7, 3);
    wait_ms(9);
    px_progress_idle_policy_t p;
    memset(&p, 0x5a, sizeof(p));
    ck_assert_int_eq(px_progress_policy_get(&p, 2 * sizeof(int)), PX_SUCCESS);
    ck_assert_int_eq(p.yield_when_idle, PX_PROGRESS_YIELD_ALWAYS);
    ck_assert_int_eq(p.idle_spins, 7);
    ck_assert_int_eq(p.idle_sleep_us, 0x5a5a5a5a); /* beyond the caller's size: untouched */
    ck_assert_int_eq(px_progress_policy_get(&p, sizeof(p) + 64), PX_SUCCESS); /* a newer caller */
    ck_assert_int_eq(p.idle_sleep_us, 3);
    ck_assert_int_eq(p.idle_wait_ms, 9);
    px_progress_idle_policy_t q = {.yield_when_idle = PX_PROGRESS_YIELD_NEVER, .idle_spins = 99};
    ck_assert_int_eq(px_progress_policy_set(&q, sizeof(int)), PX_SUCCESS);
    ck_assert_int_eq(px_progress_policy_get(&p, sizeof(p)), PX_SUCCESS);
    ck_assert_int_eq(p.yield_when_idle, PX_PROGRESS_YIELD_NEVER);
    ck_assert_int_eq(p.idle_spins, 7); /* beyond the size given: kept */
    ck_assert_int_eq(px_progress_policy_get(NULL, sizeof(p)), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_progress_policy_set(NULL, sizeof(p)), PX_ERR_BAD_PARAM);
}
END_TEST

PX_CHECK_MAIN("progress", setup, teardown, 0, register_twice_and_unregister, no_policy_never_yields,
              always_yields_after_spins, never_does_not_yield, auto_yields_when_oversubscribed,
              sleep_and_tick, waiter_blocks_when_idle, waiter_needs_every_callback,
              waiter_never_policy, policy_get_set_by_size)
