/*
 * tcache_fast.h: the part of the per-thread caches (core/class/tcache.h) that
 * the inline fast paths of installed headers read: PX_OBJ_NEW/PX_OBJ_RELEASE
 * (object.h) and px_free_list_get/return (free_list.h) look up this thread's
 * cache in px_tcache_tls and check its generation with px_tcache_current.
 * Installed for those inline functions only; px_tcache_tls is exported from
 * libplexus on purpose for them (docs/writing-a-component.md, "What
 * libplexus exports"). A component does not call anything here itself; the
 * rest of the caches (slot registration, binding) is internal to core/class.
 */
#ifndef PX_CLASS_TCACHE_FAST_H
#define PX_CLASS_TCACHE_FAST_H

#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"

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
PX_EXPORT extern __thread px_tcache_t *px_tcache_tls[PX_TCACHE_SLOTS]
    __attribute__((tls_model("initial-exec")));

/* The cache for the owner when it is bound and current, else NULL. */
static inline px_tcache_t *px_tcache_current(uint32_t slot, uint64_t gen)
{
    px_tcache_t *c = px_tcache_tls[slot];
    return (c != NULL && c->gen == gen) ? c : NULL;
}

#endif
