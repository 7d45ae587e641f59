/*
 * progress_internal.h: what the runtime inside libplexus needs of the
 * progress engine and nothing outside may use (not installed, not exported).
 */
#ifndef PX_UTIL_PROGRESS_INTERNAL_H
#define PX_UTIL_PROGRESS_INTERNAL_H

#include "core/util/progress.h"

/* The policy's storage, which the runtime registers as the storage of the
 * progress_* variables. Programs and components use px_progress_policy_get
 * and px_progress_policy_set. */
px_progress_idle_policy_t *px_progress_policy_storage(void);

/* Give the core away once as the policy says (a nanosleep of idle_sleep_us,
 * or sched_yield), whatever px_progress_idle_setup decided: for a wait that
 * knows a thread of this process may be what it waits for
 * (runtime/pml/pml_wait.c). */
void px_progress_give_core(void);

/* px_progress_idle_setup for a changed count of processes on this node (the
 * runtime's dynamic peers from this host come and go), keeping the counts
 * px_progress_idle_count and px_progress_block_count give. */
bool px_progress_idle_local(int local_ranks, long cores);

#endif
