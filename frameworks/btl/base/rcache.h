/*
 * rcache.h: the registration cache shared by the BTLs that need registered
 * memory for RDMA (ofi now, verbs later). A module creates one cache with its
 * register/deregister callbacks; put/get paths call px_rcache_register to get
 * a reference-counted entry covering a buffer and px_rcache_release when the
 * operation completes.
 *
 *  - Entries cover whole pages and are found again by any request that lies
 *    inside them with a subset of their access flags (a cache hit costs a
 *    scan of the valid entries, most recently used first).
 *  - An entry whose count drops to zero stays registered on an LRU list;
 *    the least recently used ones are deregistered when the cache holds more
 *    than max_entries entries or max_bytes bytes, or when registering fails
 *    for lack of resources (then everything unused goes, and it retries).
 *  - Invalidation: munmap() and mremap() of a range (interposed by
 *    libplexus, see rcache.c) and px_rcache_invalidate() mark every entry of
 *    every cache overlapping it invalid: it is never returned again and is
 *    deregistered when its last user releases it. Heap memory given back by
 *    free() stays mapped (brk heap) or goes through glibc's internal munmap,
 *    which no interposer sees: allocators that return big blocks to the
 *    kernel must call px_rcache_invalidate (docs/ofi.md says more).
 *
 * Thread-safe: one mutex per cache; callbacks run without it held.
 */
#ifndef PX_BTL_BASE_RCACHE_H
#define PX_BTL_BASE_RCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"

typedef struct px_rcache px_rcache_t;

/* One registration. Modules embed it first in a larger struct (entry_size)
 * holding their own handle (an MR, its key). */
typedef struct px_rcache_entry {
    struct px_rcache_entry *next, *prev;         /* valid entries, MRU first */
    struct px_rcache_entry *lru_next, *lru_prev; /* unused entries, LRU first */
    uintptr_t base, bound;                       /* registered [base, bound), page-aligned */
    uint32_t flags;                              /* access flags it was registered with */
    int refcount;                                /* users; 0: on the LRU list */
    bool invalid;                                /* memory went away: never reused */
    px_rcache_t *cache;
} px_rcache_entry_t;

typedef struct px_rcache_params {
    const char *name;  /* for messages: "btl/ofi" */
    size_t entry_size; /* >= sizeof(px_rcache_entry_t) */
    /* Register [entry->base, entry->bound) with entry->flags and fill the
     * module's part of the entry. Return PX_SUCCESS, PX_ERR_OUT_OF_RESOURCE
     * (the cache evicts unused entries and retries once) or another error. */
    int (*register_fn)(void *ctx, px_rcache_entry_t *entry);
    int (*deregister_fn)(void *ctx, px_rcache_entry_t *entry);
    void *ctx;
    size_t max_entries; /* 0: unlimited */
    size_t max_bytes;   /* 0: unlimited */
} px_rcache_params_t;

/* Create / destroy a cache. Destroy deregisters every entry (entries still
 * in use are reported and deregistered anyway). */
PX_EXPORT int px_rcache_create(const px_rcache_params_t *params, px_rcache_t **cache);
PX_EXPORT void px_rcache_destroy(px_rcache_t *cache);

/* A referenced entry covering [addr, addr+len) with at least `flags`. */
PX_EXPORT int px_rcache_register(px_rcache_t *cache, void *addr, size_t len, uint32_t flags,
                                 px_rcache_entry_t **entry);
/* Drop a reference from px_rcache_register. */
PX_EXPORT int px_rcache_release(px_rcache_entry_t *entry);

/* Memory [addr, addr+len) is going away or changing: invalidate every
 * overlapping entry of every cache. Safe from any thread. */
PX_EXPORT void px_rcache_invalidate(const void *addr, size_t len);

/* Figures, for tests and verbose output. */
typedef struct px_rcache_stats {
    size_t entries; /* registered, valid or not */
    size_t unused;  /* on the LRU list */
    size_t bytes;   /* registered bytes */
    size_t hits, misses, evictions, invalidations;
} px_rcache_stats_t;
PX_EXPORT void px_rcache_get_stats(px_rcache_t *cache, px_rcache_stats_t *stats);

/* Whether the munmap/mremap interposer is the one the process calls
 * (false when another library, e.g. a sanitizer, took the symbols and does
 * not chain to ours). */
PX_EXPORT bool px_rcache_hooks_active(void);

#endif
