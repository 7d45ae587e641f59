/*
 * lock.c: the transfer engine's progress lock, which the messaging API takes
 * too (px_rt_api_lock/unlock/pause), and the thread's last error. Kept
 * apart so that it can move down to the process-table layer whole.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include "runtime/xfer/xfer.h"

bool px_rt_api_shared;

static _Thread_local int tl_held;        /* this thread holds px_xfer.lock */
static _Thread_local char tl_error[512]; /* px_xfer_last_error */

/* ------------------------------------------------------------ lock, errors */

bool px_xfer_lock_try(bool *took)
{
    *took = false;
    if (tl_held)
        return true;
    if (pthread_mutex_trylock(&px_xfer.lock) != 0)
        return false;
    tl_held = 1;
    *took = true;
    return true;
}

void px_xfer_lock_take(bool *took)
{
    *took = false;
    if (tl_held)
        return;
    pthread_mutex_lock(&px_xfer.lock);
    tl_held = 1;
    *took = true;
}

void px_xfer_lock_drop(bool took)
{
    if (!took)
        return;
    tl_held = 0;
    pthread_mutex_unlock(&px_xfer.lock);
}

bool px_xfer_lock_held(void)
{
    return tl_held != 0;
}

bool px_rt_api_lock(void)
{
    bool took;
    px_xfer_lock_take(&took);
    return took;
}

void px_rt_api_unlock(bool took)
{
    px_xfer_lock_drop(took);
}

void px_rt_api_pause(void)
{
    /* A messaging wait that holds the lock lets the other threads in now
     * and then (registration, import, their own progress). */
    if (px_rt_api_shared && tl_held) {
        pthread_mutex_unlock(&px_xfer.lock);
        sched_yield();
        pthread_mutex_lock(&px_xfer.lock);
    }
}

int px_xfer_fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_error, sizeof tl_error, fmt, ap);
    va_end(ap);
    return rc;
}

const char *px_xfer_last_error(void)
{
    return tl_error;
}

const char *px_xfer_host(int rank)
{
    if (rank < 0 || rank >= px_rt.size || !px_rt.procs || !px_rt.procs[rank].hostname)
        return "?";
    return px_rt.procs[rank].hostname;
}
