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
 * owner once the owner holds the lock. A thread that holds the lock through
 * the bias (below) is ordered with the others by the release store that
 * ends its hold and the acquire load of the revoker waiting for it.
 *
 * It lived in the transfer engine (runtime/xfer.c, now runtime/xfer/) until the runtime was
 * split into sub-layers; the engine still calls it as px_xfer_lock_* (the
 * thin names at the bottom).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/util/bias_lock.h"
#include "core/util/output.h"
#include "runtime/proc/proc.h"

/* Initial-exec TLS: one %fs-relative access, not a __tls_get_addr call per
 * use (the library is linked, not dlopen'ed; glibc keeps room for a few
 * bytes of initial-exec TLS in libraries loaded later anyway). */
#define TLS_IE __attribute__((tls_model("initial-exec")))

static pthread_mutex_t px_rt_lock = PTHREAD_MUTEX_INITIALIZER;
/* How this thread holds the lock: not (0), through the mutex, or through
 * the bias (below). */
enum { HELD_NOT = PX_RT_HELD_NOT, HELD_MUTEX = PX_RT_HELD_MUTEX, HELD_BIAS = PX_RT_HELD_BIAS };
_Thread_local int px_rt_tl_held TLS_IE;
#define tl_held px_rt_tl_held
bool px_rt_api_shared;
/* Threads blocked in px_rt_lock_take (try-lockers do not count). */
static atomic_uint px_rt_lock_waiters;
/* Times the lock was taken after blocking: a pause waits for it to move. */
static atomic_uint px_rt_lock_handoffs;

/*
 * The bias. An uncontended mutex costs two atomic read-modify-writes per call
 * (lock and unlock), which at MULTIPLE was most of the difference from
 * SERIALIZED on an 8-byte shm ping-pong. A lock that one thread takes again
 * and again is given to that thread (bias_owner = its record,
 * core/util/bias_lock.h's px_bias_thread_t): the owner then enters with plain
 * stores and loads (the lock's id in a slot of its own record, check
 * bias_owner again) and leaves with a release store that clears the slot, no
 * atomic read-modify-write and no fence. Any other thread takes the mutex,
 * clears bias_owner and calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
 * which puts a full barrier into every running thread of the process: after
 * it, either the owner sees bias_owner cleared (and queues on the mutex), or
 * the revoker sees the lock in the owner's record and waits until the owner
 * leaves (the owner's waits, px_rt_api_pause, notice the revocation each pass
 * and move to the mutex, so a revoker never waits for a whole blocking call).
 * The bias is given again, under the mutex, to a thread that took the mutex
 * BIAS_STREAK times in a row with nobody else taking it between: a revocation
 * (one membarrier, microseconds) is then paid at most once per BIAS_STREAK
 * acquisitions. Without membarrier (old kernel, seccomp) there is no bias; nor
 * while px_rt_api_shared is off (the transfer engine's own uses of the lock at
 * SERIALIZED keep the mutex).
 */
#define BIAS_STREAK PX_BIAS_STREAK
_Atomic uintptr_t px_rt_bias_owner; /* 0: nobody (proc.h enters inline too) */
#define bias_owner px_rt_bias_owner
/* Under the mutex: an owner whose bias was revoked and that was not seen out
 * yet (a try does not wait for it; the next taker does). */
static px_bias_thread_t *bias_revoked;
static uintptr_t streak_thread; /* under the mutex: who took it last, how often */
static unsigned streak;
static void (*second_thread)(void); /* px_rt_lock_on_second_thread's hook */

static uintptr_t self_id(void)
{
    return (uintptr_t)&tl_held;
}

/* The mutex is held: is membarrier there (asked once, registered)? The
 * membarrier half is shared with the biased locks of core/util/bias_lock.h. */
static bool bias_usable(void)
{
    return px_bias_usable();
}

/* The mutex is held and the bias belongs to another thread: take it away.
 * After the membarrier, the owner either saw the bias gone or shows in its
 * record (after_mutex waits for it to leave). */
static void bias_revoke(uintptr_t owner)
{
    atomic_store_explicit(&bias_owner, 0, memory_order_relaxed);
    px_bias_revoke_barrier();
    bias_revoked = (px_bias_thread_t *)owner;
}

/* The mutex was just taken by this thread: revoke another thread's bias,
 * wait until a (revoked) owner left (a try does not wait: false, the caller
 * unlocks; the bias stays revoked), count the streak, give the bias to this
 * thread after BIAS_STREAK acquisitions in a row. */
static bool after_mutex(bool wait)
{
    uintptr_t me = self_id(), mine = (uintptr_t)px_bias_tl_rec;
    uintptr_t owner = atomic_load_explicit(&bias_owner, memory_order_relaxed);
    if (owner != 0 && owner != mine)
        bias_revoke(owner);
    /* A revoked owner may still be inside (revoked just now, or by a try
     * that did not wait for it): the mutex alone is not the lock until it
     * left. */
    if (bias_revoked != NULL) {
        while (px_bias_thread_inside(bias_revoked, 0, &bias_owner)) {
            if (!wait)
                return false;
            sched_yield();
        }
        bias_revoked = NULL;
    }
    if (streak_thread != me) {
        if (PX_UNLIKELY(second_thread != NULL) && streak_thread != 0) {
            /* A second thread (runtime_thread_locks=auto, proc.h): nobody else
             * is inside the lock now; the hook runs as its holder. */
            void (*hook)(void) = second_thread;
            second_thread = NULL;
            int held = tl_held;
            tl_held = HELD_MUTEX;
            hook();
            tl_held = held;
        }
        streak_thread = me;
        streak = 0;
    }
    /* Only when threads share the library (MULTIPLE, px_xfer_enable_threads):
     * a serialized program keeps the plain mutex and never asks for
     * membarrier (its registration costs the kernel an RCU grace period). */
    if (++streak >= BIAS_STREAK && owner != mine && px_rt_api_shared && bias_usable()) {
        px_bias_thread_t *t = px_bias_thread();
        if (t != NULL)
            atomic_store_explicit(&bias_owner, (uintptr_t)t, memory_order_relaxed);
    }
    return true;
}

void px_rt_lock_on_second_thread(void (*hook)(void))
{
    second_thread = hook;
    if (hook) /* the caller is the first thread */
        streak_thread = self_id();
}

static inline void bias_leave(void)
{
    px_bias_leave(0);
}

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
    if (px_rt_bias_enter()) { /* proc.h */
        *took = true;
        return true;
    }
    if (pthread_mutex_trylock(&px_rt_lock) != 0)
        return false;
    if (!after_mutex(false)) {
        pthread_mutex_unlock(&px_rt_lock);
        return false;
    }
    tl_held = HELD_MUTEX;
    *took = true;
    return true;
}

void px_rt_lock_take(bool *took)
{
    *took = false;
    if (tl_held)
        return;
    *took = true;
    if (px_rt_bias_enter()) /* proc.h */
        return;
    lock_counted();
    after_mutex(true);
    tl_held = HELD_MUTEX;
}

void px_rt_lock_drop(bool took)
{
    if (!took)
        return;
    if (HELD_BIAS == tl_held) {
        tl_held = HELD_NOT;
        bias_leave();
        return;
    }
    tl_held = HELD_NOT;
    pthread_mutex_unlock(&px_rt_lock);
}

bool px_rt_lock_held(void)
{
    return tl_held != HELD_NOT;
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
     * moves or the waiter is gone. A wait holding the bias checks whether
     * another thread revoked it, and then moves to the mutex. */
    if (!px_rt_api_shared)
        return;
    if (tl_held) {
        px_rt_btl_errors_drain(); /* fine mode's deferred reports (proc.c): one load */
        px_rt_defer_run();        /* and the work its progress queued (one load) */
    }
    if (HELD_BIAS == tl_held) {
        if (atomic_load_explicit(&bias_owner, memory_order_relaxed) == (uintptr_t)px_bias_tl_rec)
            return; /* nobody else asked for the lock */
        tl_held = HELD_NOT;
        bias_leave(); /* the revoker waits for this */
        lock_counted();
        after_mutex(true);
        tl_held = HELD_MUTEX;
        return;
    }
    if (!tl_held || 0 == atomic_load_explicit(&px_rt_lock_waiters, memory_order_relaxed))
        return;
    unsigned seen = atomic_load_explicit(&px_rt_lock_handoffs, memory_order_relaxed);
    tl_held = HELD_NOT;
    pthread_mutex_unlock(&px_rt_lock);
    for (int i = 0; i < 1000; ++i) {
        if (atomic_load_explicit(&px_rt_lock_handoffs, memory_order_relaxed) != seen ||
            0 == atomic_load_explicit(&px_rt_lock_waiters, memory_order_relaxed))
            break;
        sched_yield();
    }
    lock_counted(); /* counted, so the thread that got it hands it back in turn */
    after_mutex(true);
    tl_held = HELD_MUTEX;
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

/* ------------------------------------------------------------------ work for the API lock's holder
 * (proc.h). The queue is multi-producer (any thread polling a transport
 * without the API lock), single-consumer (the holder of the API lock). */

px_mpsc_t px_rt_defer_q = PX_MPSC_INIT;
#define defer_q px_rt_defer_q
static atomic_ulong defer_queued, defer_ran;
/* This thread runs queued items or a callback under px_rt_defer_enter: a
 * callback nested in it (btl/self delivering inside a send it makes) does not
 * run the queue again in the middle. */
static _Thread_local unsigned tl_defer_depth TLS_IE;

void px_rt_defer_push(px_rt_defer_t *d)
{
    atomic_fetch_add_explicit(&defer_queued, 1, memory_order_relaxed);
    px_mpsc_push(&defer_q, &d->node);
}

int px_rt_defer_drain(void)
{
    if (PX_LIKELY(px_mpsc_empty(&defer_q)) || tl_defer_depth)
        return 0;
    int n = 0;
    tl_defer_depth++;
    px_mpsc_node_t *it;
    while ((it = px_mpsc_take_all(&defer_q)) != NULL) { /* what was queued meanwhile comes after */
        while (it) {
            px_mpsc_node_t *next = it->next;
            ((px_rt_defer_t *)it)->run((px_rt_defer_t *)it);
            it = next;
            n++;
        }
    }
    tl_defer_depth--;
    atomic_fetch_add_explicit(&defer_ran, (unsigned long)n, memory_order_relaxed);
    return n;
}

void px_rt_defer_discard(void)
{
    px_mpsc_node_t *it = px_mpsc_take_all(&defer_q);
    while (it) {
        px_mpsc_node_t *next = it->next;
        ((px_rt_defer_t *)it)->drop((px_rt_defer_t *)it);
        it = next;
    }
}

void px_rt_defer_counts(unsigned long *queued, unsigned long *ran)
{
    *queued = atomic_load_explicit(&defer_queued, memory_order_relaxed);
    *ran = atomic_load_explicit(&defer_ran, memory_order_relaxed);
}

/* Tokens of px_rt_defer_enter. */
enum { DEFER_LATER = 0, DEFER_NOLOCK = 1, DEFER_HELD = 2, DEFER_TOOK = 3 };

int px_rt_defer_enter(void)
{
    if (PX_LIKELY(!px_rt_api_shared))
        return DEFER_NOLOCK; /* one thread at a time: nothing is ever queued */
    bool took;
    if (!px_rt_lock_try(&took))
        return DEFER_LATER;
    if (0 == tl_defer_depth)
        px_rt_defer_drain(); /* what was queued before this callback runs first */
    tl_defer_depth++;
    return took ? DEFER_TOOK : DEFER_HELD;
}

void px_rt_defer_leave(int token)
{
    if (DEFER_NOLOCK == token)
        return;
    tl_defer_depth--;
    px_rt_lock_drop(DEFER_TOOK == token);
}

/* A queued active message: the callback, a copy of the descriptor and of
 * its bytes (one segment). */
typedef struct am_item {
    px_rt_defer_t d;
    px_btl_active_message_fn fn;
    px_btl_module_t *btl;
    px_btl_receive_descriptor_t rd;
    px_btl_segment_t seg;
    unsigned char data[];
} am_item_t;

static void am_item_run(px_rt_defer_t *d)
{
    am_item_t *a = (am_item_t *)d;
    a->rd.des_segments = &a->seg;
    a->fn(a->btl, &a->rd);
    free(a);
}

static void item_drop(px_rt_defer_t *d)
{
    free(d);
}

void px_rt_am_locked(px_btl_active_message_fn fn, px_btl_module_t *btl,
                     const px_btl_receive_descriptor_t *d)
{
    int token = px_rt_defer_enter();
    if (token != DEFER_LATER) {
        fn(btl, d);
        px_rt_defer_leave(token);
        return;
    }
    size_t len = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i)
        len += d->des_segments[i].seg_len;
    am_item_t *a = malloc(sizeof(*a) + len);
    if (PX_UNLIKELY(NULL == a)) {
        px_rt_btl_error_threads(btl, d->endpoint, d->src_rank, PX_ERR_OUT_OF_RESOURCE,
                                "a message that arrived while another thread held the API lock "
                                "could not be kept for it (no memory): it is lost");
        return;
    }
    size_t at = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i) {
        memcpy(a->data + at, d->des_segments[i].seg_addr, d->des_segments[i].seg_len);
        at += d->des_segments[i].seg_len;
    }
    a->d.run = am_item_run;
    a->d.drop = item_drop;
    a->fn = fn;
    a->btl = btl;
    a->rd = *d;
    a->rd.des_segments = NULL; /* &a->seg once it runs */
    a->rd.des_segment_count = 1;
    a->seg.seg_addr = a->data;
    a->seg.seg_len = len;
    px_rt_defer_push(&a->d);
}

/* A queued RDMA-shaped completion: its arguments. */
typedef struct rdma_item {
    px_rt_defer_t d;
    px_btl_rdma_completion_fn fn;
    px_btl_module_t *btl;
    px_btl_endpoint_t *endpoint;
    void *local_address;
    px_btl_registration_handle_t *local_handle;
    void *context, *cbdata;
    int status;
} rdma_item_t;

static void rdma_item_run(px_rt_defer_t *d)
{
    rdma_item_t *a = (rdma_item_t *)d;
    a->fn(a->btl, a->endpoint, a->local_address, a->local_handle, a->context, a->cbdata, a->status);
    free(a);
}

void px_rt_rdma_locked(px_btl_rdma_completion_fn fn, int rank, px_btl_module_t *btl,
                       px_btl_endpoint_t *endpoint, void *local_address,
                       px_btl_registration_handle_t *local_handle, void *context, void *cbdata,
                       int status)
{
    int token = px_rt_defer_enter();
    if (token != DEFER_LATER) {
        fn(btl, endpoint, local_address, local_handle, context, cbdata, status);
        px_rt_defer_leave(token);
        return;
    }
    rdma_item_t *a = malloc(sizeof(*a));
    if (PX_UNLIKELY(NULL == a)) {
        px_rt_btl_error_threads(btl, endpoint, rank, PX_ERR_OUT_OF_RESOURCE,
                                "a completion that came while another thread held the API lock "
                                "could not be kept for it (no memory): it is lost");
        return;
    }
    *a = (rdma_item_t){{{NULL}, rdma_item_run, item_drop},
                       fn,
                       btl,
                       endpoint,
                       local_address,
                       local_handle,
                       context,
                       cbdata,
                       status};
    px_rt_defer_push(&a->d);
}

/* The callbacks px_rt_defer_guard_ams put behind the API lock, by tag. */
static px_btl_active_message_fn am_guarded[256];

static void am_guard(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    px_btl_active_message_fn fn = am_guarded[d->tag];
    if (PX_LIKELY(px_rt_tl_held != PX_RT_HELD_NOT) && px_mpsc_empty(&defer_q)) {
        fn(btl, d); /* the holder, nothing queued: as before */
        return;
    }
    px_rt_am_locked(fn, btl, d);
}

void px_rt_defer_guard_ams(px_btl_active_message_fn keep)
{
    for (int t = 0; t < 256; ++t) {
        px_btl_active_message_fn f = px_btl_base_active_message_trigger[t].cbfunc;
        if (f == keep || f == am_guard || NULL == f)
            continue;
        am_guarded[t] = f;
        px_btl_base_active_message_trigger[t].cbfunc = am_guard;
    }
}
