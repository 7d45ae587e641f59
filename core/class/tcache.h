/*
 * tcache.h: per-thread caches ("magazines") of free pointers, keyed by a
 * small slot number. Internal to core/class and not installed (the part
 * the installed inline fast paths read is core/class/tcache_fast.h): the
 * object system caches freed objects of a class here and the thread-safe free list caches items, so
 * the common get/put is a few plain loads and stores with no atomic instruction.
 *
 * An owner (a class or a free list) registers and receives a slot and a
 * generation number. Each thread lazily gets its own px_tcache_t for that slot;
 * the inline fast paths check that the cache's generation matches the owner's
 * (a mismatch means the slot now belongs to someone else: slow path). Slot 0
 * is never given out: an owner that got slot 0 (all slots taken, or caching
 * not wanted) always takes its slow path.
 *
 * When a thread exits, its caches are handed back through the owner's flush
 * callback (free lists push the items back, classes free the memory); a
 * stale cache found later is drained the same way its kind says.
 */
#ifndef PX_CLASS_TCACHE_H
#define PX_CLASS_TCACHE_H

#include "core/class/tcache_fast.h"

/* Assign a slot and generation (slot 0 when none is free). */
void px_tcache_owner_register(px_tcache_owner_t *owner);
/* Release the slot; the calling thread's cache is flushed now, other
 * threads' caches become stale. */
void px_tcache_owner_unregister(px_tcache_owner_t *owner);
/* This thread's cache bound to `owner`, created or rebound (stale entries
 * disposed of) as needed; NULL for slot 0 or out of memory. */
px_tcache_t *px_tcache_bind(px_tcache_owner_t *owner);

#endif
