/*
 * proc_lock.c: the API lock (proc.h). One mutex for the whole runtime:
 * once px_xfer_enable_threads sets px_rt_api_shared, every messaging,
 * collective and transfer-engine entry point runs under it, so the
 * transports are driven by one thread at a time. A thread may hold it
 * across nested calls (tl_held); a long messaging wait lets the other
 * threads in now and then (px_rt_api_pause).
 *
 * It lived in the transfer engine (runtime/xfer.c, now runtime/xfer/) until the runtime was
 * split into sub-layers; the engine still calls it as px_xfer_lock_* (the
 * thin names at the bottom).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include "runtime/proc/proc.h"

static pthread_mutex_t px_rt_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int tl_held; /* this thread holds px_rt_lock */
bool px_rt_api_shared;

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
    pthread_mutex_lock(&px_rt_lock);
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
    /* A messaging wait that holds the lock lets the other threads in now
     * and then (registration, import, their own progress). */
    if (px_rt_api_shared && tl_held) {
        pthread_mutex_unlock(&px_rt_lock);
        sched_yield();
        pthread_mutex_lock(&px_rt_lock);
    }
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
