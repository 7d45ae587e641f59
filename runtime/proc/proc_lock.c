/*
 * proc_lock.c: the API lock (proc.h). One mutex for the whole runtime:
 * once px_xfer_enable_threads sets px_rt_api_shared, every messaging,
 * collective and transfer-engine entry point runs under it, so the
 * transports are driven by one thread at a time. A thread may hold it
 * across nested calls (tl_held); a long messaging wait lets the other
 * threads in (px_rt_api_pause).
 *
 * px_init_thread(PX_THREAD_MULTIPLE) turns it on as px_xfer_enable_threads
 * does. Several threads may then wait in messaging calls at once, so a
 * waiter must not keep the lock to itself: every thread that blocks on the
 * lock counts itself in px_rt_lock_waiters, and a wait's pass hands the lock
 * over when that count is not zero (each pass, docs/threads.md), then takes
 * it back once another thread got it. The mutex is what orders memory: a
 * request another thread completed under the lock is seen complete by its
 * owner once the owner holds the lock.
 *
 * It lived in the transfer engine (runtime/xfer.c, now runtime/xfer/) until the runtime was
 * split into sub-layers; the engine still calls it as px_xfer_lock_* (the
 * thin names at the bottom).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include "runtime/proc/proc.h"

static pthread_mutex_t px_rt_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int tl_held; /* this thread holds px_rt_lock */
bool px_rt_api_shared;
/* Threads blocked in px_rt_lock_take (try-lockers do not count). */
static atomic_uint px_rt_lock_waiters;
/* Times the lock was taken after blocking: a pause waits for it to move. */
static atomic_uint px_rt_lock_handoffs;

/* Take the mutex; a thread that has to block counts itself a waiter. */
static void lock_counted(void)
{
    if (0 == pthread_mutex_trylock(&px_rt_lock))
        return;
    atomic_fetch_add_explicit(&px_rt_lock_waiters, 1, memory_order_relaxed);
    pthread_mutex_lock(&px_rt_lock);
    atomic_fetch_sub_explicit(&px_rt_lock_waiters, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&px_rt_lock_handoffs, 1, memory_order_relaxed);
}

bool px_rt_lock_try(bool *took)
{
    *took = false;
    if (tl_held)
        return true;
    if (pthread_mutex_trylock(&px_rt_lock) != 0)
        return false;
    tl_held = 1;
    *took = true;
    return true;
}

void px_rt_lock_take(bool *took)
{
    *took = false;
    if (tl_held)
        return;
    lock_counted();
    tl_held = 1;
    *took = true;
}

void px_rt_lock_drop(bool took)
{
    if (!took)
        return;
    tl_held = 0;
    pthread_mutex_unlock(&px_rt_lock);
}

bool px_rt_lock_held(void)
{
    return tl_held != 0;
}

bool px_rt_api_lock(void)
{
    bool took;
    px_rt_lock_take(&took);
    return took;
}

void px_rt_api_unlock(bool took)
{
    px_rt_lock_drop(took);
}

void px_rt_api_pause(void)
{
    /* A messaging wait that holds the lock hands it to a thread blocked on
     * it (another wait, a send, registration, import), if any, and takes it
     * back after that thread got it; with nobody waiting it costs one
     * relaxed load. The mutex is not fair, so the unlock alone could let
     * this thread take it right back: it yields until the handoff count
     * moves or the waiter is gone. */
    if (!px_rt_api_shared || !tl_held)
        return;
    if (0 == atomic_load_explicit(&px_rt_lock_waiters, memory_order_relaxed))
        return;
    unsigned seen = atomic_load_explicit(&px_rt_lock_handoffs, memory_order_relaxed);
    tl_held = 0;
    pthread_mutex_unlock(&px_rt_lock);
    for (int i = 0; i < 1000; ++i) {
        if (atomic_load_explicit(&px_rt_lock_handoffs, memory_order_relaxed) != seen ||
            0 == atomic_load_explicit(&px_rt_lock_waiters, memory_order_relaxed))
            break;
        sched_yield();
    }
    lock_counted(); /* counted, so the thread that got it hands it back in turn */
    tl_held = 1;
}

/* The names the transfer engine calls (declared in runtime/xfer/xfer.h). */
bool px_xfer_lock_try(bool *took);
void px_xfer_lock_take(bool *took);
void px_xfer_lock_drop(bool took);
bool px_xfer_lock_held(void);

bool px_xfer_lock_try(bool *took)
{
    return px_rt_lock_try(took);
}

void px_xfer_lock_take(bool *took)
{
    px_rt_lock_take(took);
}

void px_xfer_lock_drop(bool took)
{
    px_rt_lock_drop(took);
}

bool px_xfer_lock_held(void)
{
    return px_rt_lock_held();
}
