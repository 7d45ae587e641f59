/*
 * bias_lock.c: the mutex half of the biased lock (bias_lock.h) and the
 * membarrier half it shares with the API lock (runtime/proc/proc_lock.c).
 */
#define _GNU_SOURCE
#include "core/util/bias_lock.h"
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"

_Thread_local char px_bias_tl_id __attribute__((tls_model("initial-exec")));
px_bias_thread_t px_bias_no_record;
_Thread_local px_bias_thread_t *px_bias_tl_rec __attribute__((tls_model("initial-exec"))) =
    &px_bias_no_record;

/* The records of exited threads, for new ones (bias_lock.h: never freed). */
static pthread_mutex_t records_mutex = PTHREAD_MUTEX_INITIALIZER;
static px_bias_thread_t *records_free;
static pthread_key_t records_key;
static bool records_key_ok;
static pthread_once_t records_once = PTHREAD_ONCE_INIT;

/* A thread exits: its record goes to the list (it is inside no lock). */
static void record_release(void *p)
{
    px_bias_thread_t *t = p;
    px_bias_tl_rec = &px_bias_no_record;
    pthread_mutex_lock(&records_mutex);
    t->next_free = records_free;
    records_free = t;
    pthread_mutex_unlock(&records_mutex);
}

static void records_init(void)
{
    records_key_ok = 0 == pthread_key_create(&records_key, record_release);
}

px_bias_thread_t *px_bias_thread(void)
{
    if (px_bias_tl_rec != &px_bias_no_record)
        return px_bias_tl_rec;
    pthread_once(&records_once, records_init);
    if (!records_key_ok)
        return NULL;
    pthread_mutex_lock(&records_mutex);
    px_bias_thread_t *t = records_free;
    if (t != NULL)
        records_free = t->next_free;
    pthread_mutex_unlock(&records_mutex);
    if (NULL == t && NULL == (t = calloc(1, sizeof *t)))
        return NULL;
    if (pthread_setspecific(records_key, t) != 0) {
        record_release(t);
        return NULL;
    }
    px_bias_tl_rec = t;
    return t;
}

static int membarrier(int cmd)
{
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* 0 not asked yet, 1 usable, -1 not. */
static _Atomic int usable;

bool px_bias_usable(void)
{
    int u = atomic_load_explicit(&usable, memory_order_acquire);
    if (0 == u) {
        /* Registering twice (two threads racing here) is harmless. */
        int mask = membarrier(MEMBARRIER_CMD_QUERY);
        u = mask >= 0 && (mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                    0 == membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
                ? 1
                : -1;
        atomic_store_explicit(&usable, u, memory_order_release);
    }
    return 1 == u;
}

void px_bias_revoke_barrier(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
        membarrier(MEMBARRIER_CMD_GLOBAL) != 0) {
        /* Both were there when the bias was given; a process has no way to
         * lose them short of a seccomp filter installed since. */
        px_show_error("biased lock: membarrier failed, cannot take the lock from its biased "
                      "owner safely; aborting");
        abort();
    }
    atomic_thread_fence(memory_order_seq_cst);
}

int px_bias_lock_init(px_bias_lock_t *l, bool bias)
{
    atomic_init(&l->owner, 0);
    atomic_init(&l->holder, 0);
    l->depth = 0;
    l->via_bias = false;
    l->bias_ok = bias;
    l->streak_thread = 0;
    l->streak = 0;
    l->mutex_takes = 0;
    l->revoked = NULL;
    static atomic_uint next_slot;
    l->slot = 1 + (int)(atomic_fetch_add_explicit(&next_slot, 1, memory_order_relaxed) %
                        (PX_BIAS_NEST - 1));
    return pthread_mutex_init(&l->mutex, NULL) ? PX_ERR_OUT_OF_RESOURCE : PX_SUCCESS;
}

void px_bias_lock_destroy(px_bias_lock_t *l)
{
    pthread_mutex_destroy(&l->mutex);
}

/* The mutex was just taken: revoke another thread's bias, wait until a
 * revoked owner left (a try does not wait: false, the caller unlocks; the
 * bias stays revoked and the next taker waits for it), count the streak,
 * give the bias to this thread after PX_BIAS_LOCK_STREAK acquisitions in a
 * row, and hold. */
static bool after_mutex(px_bias_lock_t *l, uintptr_t me, bool wait)
{
    uintptr_t mine = (uintptr_t)px_bias_tl_rec;
    uintptr_t owner = atomic_load_explicit(&l->owner, memory_order_relaxed);
    if (owner != 0 && owner != mine) {
        atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
        px_bias_revoke_barrier();
        l->revoked = (px_bias_thread_t *)owner;
    }
    if (l->revoked != NULL) {
        while (px_bias_thread_inside(l->revoked, l->slot, l)) {
            if (!wait)
                return false;
            sched_yield(); /* the owner holds it for one short step */
        }
        l->revoked = NULL;
    }
    l->mutex_takes++;
    if (l->streak_thread != me) {
        l->streak_thread = me;
        l->streak = 0;
    }
    if (++l->streak >= PX_BIAS_LOCK_STREAK && owner != mine && l->bias_ok && px_bias_usable()) {
        px_bias_thread_t *t = px_bias_thread();
        if (t != NULL)
            atomic_store_explicit(&l->owner, (uintptr_t)t, memory_order_relaxed);
    }
    atomic_store_explicit(&l->holder, me, memory_order_relaxed);
    l->depth = 1;
    l->via_bias = false;
    return true;
}

void px_bias_lock_slow(px_bias_lock_t *l)
{
    pthread_mutex_lock(&l->mutex);
    after_mutex(l, px_bias_self(), true);
}

bool px_bias_trylock_slow(px_bias_lock_t *l)
{
    if (pthread_mutex_trylock(&l->mutex) != 0)
        return false;
    if (!after_mutex(l, px_bias_self(), false)) {
        pthread_mutex_unlock(&l->mutex);
        return false;
    }
    return true;
}

void px_bias_unlock_slow(px_bias_lock_t *l)
{
    atomic_store_explicit(&l->holder, 0, memory_order_relaxed);
    pthread_mutex_unlock(&l->mutex);
}
