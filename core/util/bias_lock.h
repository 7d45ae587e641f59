/*
 * bias_lock.h: a recursive lock biased to the thread that takes it alone
 * (internal: the runtime's matching lock, the BTL base's lock per module;
 * docs/threads.md, "The bias").
 *
 * The scheme is the API lock's (runtime/proc/proc_lock.c), which shares the
 * membarrier half and the thread records below with it: a thread that took
 * the mutex PX_BIAS_LOCK_STREAK times in a row with no other thread taking it
 * in between is given the lock (owner = its record, px_bias_thread_t) and
 * then enters and leaves with plain loads and stores: the lock's address in
 * the lock's slot of its own record, a compiler barrier, a re-check of owner;
 * and a release store that clears the slot to leave. No atomic read-modify-write,
 * no fence, no call. Any other thread takes the mutex, clears owner and calls
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (px_bias_revoke_barrier):
 * after it either the owner saw owner cleared (and queues on the mutex) or
 * the revoker sees the lock in the owner's record and waits until the owner
 * leaves. Holds of these locks are short (a queue operation, one transport
 * call), so a revoker only yields until then. Without membarrier
 * (px_bias_usable: a kernel before 4.14, a seccomp filter) the lock is the
 * mutex.
 *
 * Why a slot in the owner's own record and not one flag in the lock (as
 * before session 37): a thread that loaded owner (its record) and was
 * preempted before it said it is inside goes on later, after its bias was
 * revoked and perhaps given to another thread that is inside now. Its re-check
 * fails and it takes back what it wrote; with one shared flag that cleared
 * the new owner's "inside", and a revoker then took the lock beside it
 * (test/threads/bias_lock_test.c, stale_owner). In its own record a stale
 * thread only ever hides or shows itself.
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
 * __has_feature): the tests run fewer rounds there. */
#if defined(__SANITIZE_THREAD__)
#define PX_BIAS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PX_BIAS_TSAN 1
#endif
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

/* The slots of a thread's record. A lock always uses the same one: slot 0
 * is left to a lock that names it (the API lock, runtime/proc/proc.h);
 * px_bias_lock_init hands out 1 to PX_BIAS_NEST - 1 in turn. A thread inside
 * one lock through its bias that takes another of the same slot takes that
 * one through its mutex. */
#define PX_BIAS_NEST 8

/* A thread's record: which biased lock it is inside (or entering) through
 * its bias in each slot, written only by that thread, read by a revoker.
 * Records are never freed: a revoker may read the record of a thread that
 * has exited; a new thread reuses an exited one's record (and with it the
 * biases that still name it, ordered after the old thread by the list's
 * mutex). */
typedef struct px_bias_thread {
    _Atomic(const void *) in[PX_BIAS_NEST];
    struct px_bias_thread *next_free; /* under the records' mutex */
} px_bias_thread_t;

typedef struct px_bias_lock {
    _Atomic uintptr_t owner;  /* the bias's thread (its px_bias_thread_t), or 0 */
    _Atomic uintptr_t holder; /* the thread that holds it now, either way (px_bias_self), or 0 */
    unsigned depth;           /* the holder's nesting */
    bool via_bias;            /* the holder entered through the bias */
    bool bias_ok;             /* the bias may be given (px_bias_lock_init) */
    pthread_mutex_t mutex;    /* plain */
    uintptr_t streak_thread;  /* under the mutex: who took it last, how often */
    unsigned streak;
    int slot;                  /* its slot in a thread's record (px_bias_lock_init) */
    uint64_t mutex_takes;      /* times the mutex was taken (tests), under it */
    px_bias_thread_t *revoked; /* under the mutex: an owner revoked and not yet seen out */
} px_bias_lock_t;

/* Tests only (test/threads/bias_lock_test.c defines it before including this
 * header): runs in the owner's entry between its first load of `owner` and
 * its store that says it is inside, where a thread that is preempted goes on
 * later with what it loaded. Nothing elsewhere. */
#ifndef PX_BIAS_TEST_STALL
#define PX_BIAS_TEST_STALL(l) ((void)0)
#endif

/* This thread's record; px_bias_no_record (no lock is ever biased to it)
 * until it is first given a bias (initial-exec TLS: one %fs-relative load). */
extern px_bias_thread_t px_bias_no_record;
extern _Thread_local px_bias_thread_t *px_bias_tl_rec __attribute__((tls_model("initial-exec")));
/* This thread's record, made (or an exited thread's reused) if it has none:
 * NULL only when out of memory. */
px_bias_thread_t *px_bias_thread(void);
/* Is the thread of record `t` inside (or entering) lock `id`, of slot
 * `slot`, through its bias? Acquire: once it says no, what that thread did
 * inside is ordered before the caller's next steps. */
static inline bool px_bias_thread_inside(px_bias_thread_t *t, int slot, const void *id)
{
    return atomic_load_explicit(&t->in[slot], memory_order_acquire) == id;
}

/* Enter lock `id` (of slot `slot`) through its bias word `owner` if this
 * thread owns it: true when in. */
static inline bool px_bias_enter(_Atomic uintptr_t *owner, int slot, const void *id)
{
    px_bias_thread_t *t = px_bias_tl_rec;
    uintptr_t o = atomic_load_explicit(owner, memory_order_relaxed);
    if (o != (uintptr_t)t)
        return false;
    PX_BIAS_TEST_STALL(id);
    if (PX_UNLIKELY(atomic_load_explicit(&t->in[slot], memory_order_relaxed) != NULL))
        return false; /* inside another lock of this slot */
    /* Release, so a revoker that reads this (another lock than its own) is
     * ordered after this thread's earlier exit through this slot (a plain
     * store on x86). */
    atomic_store_explicit(&t->in[slot], id, memory_order_release);
    /* A compiler barrier only: a revoker's membarrier is the CPU fence. */
    atomic_signal_fence(memory_order_seq_cst);
    if (PX_UNLIKELY(atomic_load_explicit(owner, memory_order_relaxed) != o)) {
        atomic_store_explicit(&t->in[slot], NULL, memory_order_release);
        return false;
    }
    return true;
}

/* Leave what px_bias_enter entered through `slot`: the release that orders
 * what this thread did inside before a revoker that sees it out. */
static inline void px_bias_leave(int slot)
{
    atomic_store_explicit(&px_bias_tl_rec->in[slot], NULL, memory_order_release);
}

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
    if (!px_bias_enter(&l->owner, l->slot, l))
        return false;
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
        px_bias_leave(l->slot);
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
