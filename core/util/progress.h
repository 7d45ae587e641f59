/*
 * progress.h: the progress engine. Transports that need polling (shm FIFOs,
 * ofi completion queues) register a callback here through the BTL base; the
 * runtime's px_progress() and every blocking wait call px_progress_engine(),
 * which runs each callback once. Single-threaded, like the messaging API.
 *
 * Cost: one indirect call per registered callback; with none registered
 * (only btl/self) a call is a load and a compare.
 */
#ifndef PX_UTIL_PROGRESS_H
#define PX_UTIL_PROGRESS_H

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
 * the caller's code (plugins included); register through the functions. */
PX_EXPORT extern px_progress_entry_t *px_progress_entries;
PX_EXPORT extern int px_progress_nentries;

/* Run every callback once; returns the sum of their events. */
static inline int px_progress_engine(void)
{
    int events = 0;
    for (int i = 0; i < px_progress_nentries; ++i)
        events += px_progress_entries[i].fn(px_progress_entries[i].ctx);
    return events;
}

/* Free the table (at finalize, once everything has unregistered). */
PX_EXPORT void px_progress_finalize(void);

#endif
