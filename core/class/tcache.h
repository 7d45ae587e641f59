/*
 * tcache.h: per-thread caches ("magazines") of free pointers, keyed by a
 * small slot number. Internal to core/class: the object system caches freed
 * objects of a class here and the thread-safe free list caches items, so the
 * common get/put is a few plain loads and stores with no atomic instruction.
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

#include <stddef.h>
#include <stdint.h>

#define PX_TCACHE_SLOTS 64 /* 512 bytes of static TLS per thread */
#define PX_TCACHE_CAP   32

enum { PX_TCACHE_KIND_ITEMS = 0, PX_TCACHE_KIND_MALLOC = 1 };

typedef struct px_tcache {
    uint64_t gen;   /* the owner's generation when this cache was bound */
    uint32_t count; /* entries in items[] */
    uint32_t kind;  /* PX_TCACHE_KIND_*: what to do with stale entries */
    void *items[PX_TCACHE_CAP];
} px_tcache_t;

typedef struct px_tcache_owner {
    /* Give `n` cached pointers back (thread exit, owner unregistering);
     * only called for PX_TCACHE_KIND_ITEMS (heap blocks are just freed). */
    void (*flush)(struct px_tcache_owner *owner, void **items, uint32_t n);
    uint32_t slot; /* 0: no cache */
    uint32_t kind;
    uint64_t gen;
} px_tcache_owner_t;

/* This thread's cache per slot (NULL until first used). */
extern __thread px_tcache_t *px_tcache_tls[PX_TCACHE_SLOTS]
    __attribute__((tls_model("initial-exec")));

/* Assign a slot and generation (slot 0 when none is free). */
void px_tcache_owner_register(px_tcache_owner_t *owner);
/* Release the slot; the calling thread's cache is flushed now, other
 * threads' caches become stale. */
void px_tcache_owner_unregister(px_tcache_owner_t *owner);
/* This thread's cache bound to `owner`, created or rebound (stale entries
 * disposed of) as needed; NULL for slot 0 or out of memory. */
px_tcache_t *px_tcache_bind(px_tcache_owner_t *owner);

/* The cache for the owner when it is bound and current, else NULL. */
static inline px_tcache_t *px_tcache_current(uint32_t slot, uint64_t gen)
{
    px_tcache_t *c = px_tcache_tls[slot];
    return (c != NULL && c->gen == gen) ? c : NULL;
}

#endif
