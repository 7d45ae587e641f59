/*
 * bias_lock.h: a recursive lock biased to the thread that takes it alone
 * (internal: the runtime's matching lock, the BTL base's lock per module;
 * docs/threads.md, "The bias").
 *
 * The scheme is the API lock's (runtime/proc/proc_lock.c), which shares the
 * membarrier half below with it: a thread that took the mutex
 * PX_BIAS_LOCK_STREAK times in a row with no other thread taking it in between
 * is given the lock (owner = its id) and then enters and leaves with plain
 * loads and stores: inside = 1, a compiler barrier, a re-check of owner; and
 * a release store of inside = 0 to leave. No atomic read-modify-write, no
 * fence, no call. Any other thread takes the mutex, clears owner and calls
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (px_bias_revoke_barrier):
 * after it either the owner saw owner cleared (and queues on the mutex) or
 * the revoker sees inside set and waits until the owner leaves. Holds of
 * these locks are short (a queue operation, one transport call), so a
 * revoker only yields until then. Without membarrier (px_bias_usable:
 * a kernel before 4.14, a seccomp filter) the lock is the mutex.
 *
 * Recursive: the holder (either way) is `holder`, its nesting `depth`.
 */
#ifndef PX_UTIL_BIAS_LOCK_H
#define PX_UTIL_BIAS_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/util/compiler.h"

/* ThreadSanitizer builds (gcc says so with __SANITIZE_THREAD__, clang with
 * __has_feature). TSan models no membarrier: what the revoker's barrier
 * orders it is told with its annotation interface (px_bias_tsan_*, below). */
#if defined(__SANITIZE_THREAD__)
#define PX_BIAS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PX_BIAS_TSAN 1
#endif
#endif
#ifdef PX_BIAS_TSAN
#include <sanitizer/tsan_interface.h>
/* An exit through the bias: everything the owner did inside is released to
 * the lock's annotation address `a` (joined with the earlier exits' releases,
 * not replacing them as a release store of `inside` does in TSan's model). */
#define px_bias_tsan_release(a) __tsan_release((void *)(a))
/* A revoker that saw `inside` clear after the barrier: every exit through the
 * bias before that is ordered before what it does next. */
#define px_bias_tsan_acquire(a) __tsan_acquire((void *)(a))
#else
#define px_bias_tsan_release(a) ((void)0)
#define px_bias_tsan_acquire(a) ((void)0)
#endif

#define PX_BIAS_STREAK 256
/* The streak that gives a px_bias_lock_t's bias. Shorter than the API
 * lock's: fine mode's locks (the matching lock, a module's lock) are held
 * for one short step each, several per message, and with two threads taking
 * turns on a core each turn moves every one of them; after a move the new
 * thread pays a mutex for each acquisition until the bias is given, which at
 * 256 made 6.7 mutex acquisitions per message against the API lock's 0.27
 * (docs/measurements/threads.md, session 34). 16 bounds a turn's mutex calls
 * per lock at 16 and a revocation (one membarrier) to one per 16
 * acquisitions of threads that really alternate. */
#define PX_BIAS_LOCK_STREAK 16

typedef struct px_bias_lock {
    _Atomic uintptr_t owner;  /* the bias's thread (px_bias_self), or 0 */
    _Atomic int inside;       /* the owner holds the lock through the bias */
    _Atomic uintptr_t holder; /* the thread that holds it now, either way, or 0 */
    unsigned depth;           /* the holder's nesting */
    bool via_bias;            /* the holder entered through the bias */
    bool bias_ok;             /* the bias may be given (px_bias_lock_init) */
    pthread_mutex_t mutex;    /* plain */
    uintptr_t streak_thread;  /* under the mutex: who took it last, how often */
    unsigned streak;
    uint64_t mutex_takes; /* times the mutex was taken (tests), under it */
} px_bias_lock_t;

/* Tests only (test/threads/bias_lock_test.c defines it before including this
 * header): runs in the owner's entry between its first load of `owner` and
 * its store that says it is inside, where a thread that is preempted goes on
 * later with what it loaded. Nothing elsewhere. */
#ifndef PX_BIAS_TEST_STALL
#define PX_BIAS_TEST_STALL(l) ((void)0)
#endif

/* This thread's id: the address of a thread-local byte (initial-exec TLS:
 * one %fs-relative lea). */
extern _Thread_local char px_bias_tl_id __attribute__((tls_model("initial-exec")));
static inline uintptr_t px_bias_self(void)
{
    return (uintptr_t)&px_bias_tl_id;
}

/* `bias`: the lock may be biased (false: a plain recursive mutex). */
int px_bias_lock_init(px_bias_lock_t *l, bool bias);
void px_bias_lock_destroy(px_bias_lock_t *l);
/* The paths through the mutex. */
void px_bias_lock_slow(px_bias_lock_t *l);
bool px_bias_trylock_slow(px_bias_lock_t *l);
void px_bias_unlock_slow(px_bias_lock_t *l);

/* The membarrier half, shared with the API lock. px_bias_usable: is
 * membarrier(PRIVATE_EXPEDITED) there (asked and registered once; thread
 * safe)? px_bias_revoke_barrier: after a revoker's store of owner = 0, make
 * every running thread of the process pass a full barrier (aborts if
 * membarrier fails, which only a seccomp filter installed since could do). */
bool px_bias_usable(void);
void px_bias_revoke_barrier(void);

/* Enter through the bias, if this thread owns it. */
static inline bool px_bias_lock_fast(px_bias_lock_t *l, uintptr_t me)
{
    if (atomic_load_explicit(&l->owner, memory_order_relaxed) != me)
        return false;
    PX_BIAS_TEST_STALL(l);
    atomic_store_explicit(&l->inside, 1, memory_order_relaxed);
    /* A compiler barrier only: a revoker's membarrier is the CPU fence. */
    atomic_signal_fence(memory_order_seq_cst);
    if (PX_UNLIKELY(atomic_load_explicit(&l->owner, memory_order_relaxed) != me)) {
        atomic_store_explicit(&l->inside, 0, memory_order_release);
        return false;
    }
    atomic_store_explicit(&l->holder, me, memory_order_relaxed);
    l->depth = 1;
    l->via_bias = true;
    return true;
}

static inline void px_bias_lock(px_bias_lock_t *l)
{
    uintptr_t me = px_bias_self();
    if (atomic_load_explicit(&l->holder, memory_order_relaxed) == me) {
        l->depth++;
        return;
    }
    if (PX_LIKELY(px_bias_lock_fast(l, me)))
        return;
    px_bias_lock_slow(l);
}

/* Take it if nobody else holds it (a revoked owner still inside counts as
 * holding it): true when taken. */
static inline bool px_bias_trylock(px_bias_lock_t *l)
{
    uintptr_t me = px_bias_self();
    if (atomic_load_explicit(&l->holder, memory_order_relaxed) == me) {
        l->depth++;
        return true;
    }
    if (PX_LIKELY(px_bias_lock_fast(l, me)))
        return true;
    return px_bias_trylock_slow(l);
}

static inline void px_bias_unlock(px_bias_lock_t *l)
{
    if (--l->depth)
        return;
    if (PX_LIKELY(l->via_bias)) {
        atomic_store_explicit(&l->holder, 0, memory_order_relaxed);
        px_bias_tsan_release(l);
        atomic_store_explicit(&l->inside, 0, memory_order_release);
        return;
    }
    px_bias_unlock_slow(l);
}

/* Does this thread hold it? */
static inline bool px_bias_lock_held(px_bias_lock_t *l)
{
    return atomic_load_explicit(&l->holder, memory_order_relaxed) == px_bias_self();
}

#endif
