/*
 * progress.h: the progress engine. Transports that need polling (shm FIFOs,
 * ofi completion queues) register a callback here through the BTL base; the
 * runtime's px_progress() and every blocking wait call px_progress_engine(),
 * which runs each callback once. Single-threaded, like the messaging API.
 *
 * Cost: one indirect call per registered callback; with none registered
 * (only btl/self) a call is a load and a compare.
 *
 * Idle policy (one for every component): when px_progress_idle_limit is not
 * 0, a call whose callbacks handled nothing counts as idle, and after that
 * many idle calls in a row the engine gives the core away once
 * (px_progress_idle: sched_yield, or a short nanosleep). The runtime sets
 * the policy at px_init from the variables progress_yield_when_idle
 * (auto|always|never) and progress_idle_spins; auto yields when more ranks
 * of the job run on this node than it has online cores. A component's own
 * wait loop that does not go through px_progress_engine calls
 * px_progress_idle_tick() with what it found instead of yielding on its own.
 *
 * Blocking when idle (event mode): a component whose progress can be woken
 * by a file descriptor (btl/verbs with btl_verbs_progress_mode=event: a
 * completion channel) registers a waiter for its progress callback. When
 * every registered callback has one, an idle engine (same count of idle
 * calls, same policy; never with progress_yield_when_idle=never) arms each
 * waiter and blocks in poll() on their descriptors, at most
 * progress_idle_wait_ms, instead of yielding. Otherwise it yields as above.
 */
#ifndef PX_UTIL_PROGRESS_H
#define PX_UTIL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include "core/util/compiler.h"

/* Poll once; returns the number of events handled (>= 0). */
typedef int (*px_progress_fn)(void *ctx);

/* Add a callback (the same fn+ctx twice is PX_ERR_EXISTS). */
PX_EXPORT int px_progress_register(px_progress_fn fn, void *ctx);
/* Remove it; PX_ERR_NOT_FOUND when it was not registered. */
PX_EXPORT int px_progress_unregister(px_progress_fn fn, void *ctx);
/* Number of callbacks registered. */
PX_EXPORT int px_progress_count(void);

typedef struct px_progress_entry {
    px_progress_fn fn;
    void *ctx;
} px_progress_entry_t;
/* Exported on purpose: the inline px_progress_engine below reads them from
 * the caller's code (plugins included); register through the functions.
 * Frozen (docs/abi.md): a pointer and an int, and the entry's layout. */
PX_EXPORT extern px_progress_entry_t *px_progress_entries;
PX_EXPORT extern int px_progress_nentries;

/* ---- idle policy ---- */
enum {
    PX_PROGRESS_YIELD_AUTO = 0, /* yield when ranks on this node > online cores */
    PX_PROGRESS_YIELD_ALWAYS = 1,
    PX_PROGRESS_YIELD_NEVER = 2,
};
typedef struct px_progress_idle_policy {
    int yield_when_idle; /* PX_PROGRESS_YIELD_* */
    int idle_spins;      /* idle calls in a row before giving the core away (>= 1) */
    int idle_sleep_us;   /* 0: sched_yield; > 0: nanosleep this many microseconds */
    int idle_wait_ms;    /* longest block in poll() on the waiters' descriptors */
} px_progress_idle_policy_t;
/* The policy in force: copied into `*out`, at most `size` bytes (pass
 * sizeof(*out)), so a program built when the struct was smaller keeps
 * working when fields are added at its end. Defaults auto, 32, 0, 100; the
 * runtime sets it at px_init from the variables progress_yield_when_idle,
 * progress_idle_spins, progress_idle_sleep_us and progress_idle_wait_ms.
 * Returns PX_SUCCESS, or PX_ERR_BAD_PARAM for a NULL `out`. (Until 0.1 the
 * policy was the exported variable px_progress_policy; docs/abi.md.) */
PX_EXPORT int px_progress_policy_get(px_progress_idle_policy_t *out, size_t size);
/* Replace the policy with the first `size` bytes of `*p` (fields beyond
 * `size` keep their value); it takes effect at the next
 * px_progress_idle_setup. PX_ERR_BAD_PARAM for NULL, PX_SUCCESS otherwise. */
PX_EXPORT int px_progress_policy_set(const px_progress_idle_policy_t *p, size_t size);
/* Apply the policy for a job with `local_ranks` ranks on this node
 * and `cores` online cores (<= 0: ask sysconf). Returns whether the engine
 * now yields when idle. */
PX_EXPORT bool px_progress_idle_setup(int local_ranks, long cores);
/* Stop yielding (finalize). */
PX_EXPORT void px_progress_idle_reset(void);
/* Give the core away once (sched_yield or nanosleep, per the policy). */
PX_EXPORT void px_progress_idle(void);
/* Times the engine gave the core away since px_progress_idle_setup. */
PX_EXPORT unsigned long px_progress_idle_count(void);

/* ---- blocking when idle ---- */
typedef struct px_progress_waiter {
    int fd; /* becomes readable when the component has work */
    /* Arm the source for one wake-up, then look once more for work that
     * came meanwhile (handling it); returns the events found: > 0 and the
     * engine does not block. */
    int (*arm)(void *ctx);
    /* The descriptor was readable: consume the notification. */
    void (*drain)(void *ctx);
    /* The ctx of the progress callback this waiter wakes for (a BTL
     * module's progress is registered with the module as ctx). */
    void *ctx;
} px_progress_waiter_t;
/* Add a waiter (copied); PX_ERR_EXISTS when one has that ctx already. */
PX_EXPORT int px_progress_waiter_register(const px_progress_waiter_t *w);
/* Remove the waiter of `ctx`; PX_ERR_NOT_FOUND when there is none. */
PX_EXPORT int px_progress_waiter_unregister(void *ctx);
/* Would an idle engine block now (every callback has a waiter, the policy
 * allows it)? */
PX_EXPORT bool px_progress_can_block(void);
/* Times the engine blocked in poll() since px_progress_idle_setup. */
PX_EXPORT unsigned long px_progress_block_count(void);

/* Idle calls in a row before yielding; 0: never yield (the default until
 * px_progress_idle_setup). Read by the inline code below; frozen as two
 * unsigned ints (docs/abi.md). */
PX_EXPORT extern unsigned px_progress_idle_limit;
PX_EXPORT extern unsigned px_progress_idle_calls;

/* Count one poll that handled `events` (0: idle) and yield when the policy
 * says so. For wait loops outside px_progress_engine. */
static inline void px_progress_idle_tick(int events)
{
    if (PX_LIKELY(0 == px_progress_idle_limit))
        return;
    if (events)
        px_progress_idle_calls = 0;
    else if (++px_progress_idle_calls >= px_progress_idle_limit) {
        px_progress_idle_calls = 0;
        px_progress_idle();
    }
}

/* Run every callback once; returns the sum of their events. */
static inline int px_progress_engine(void)
{
    int events = 0;
    for (int i = 0; i < px_progress_nentries; ++i)
        events += px_progress_entries[i].fn(px_progress_entries[i].ctx);
    px_progress_idle_tick(events);
    return events;
}

/* Free the table (at finalize, once everything has unregistered). */
PX_EXPORT void px_progress_finalize(void);

#endif
