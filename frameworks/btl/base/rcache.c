/*
 * rcache.c: the BTL registration cache (see rcache.h).
 *
 * Invalidation choice: libplexus interposes munmap() and mremap(). The
 * wrappers mark overlapping entries invalid (a walk over each cache under its
 * mutex, skipped at once while no entry exists) and then call the C
 * library's function found with dlsym(RTLD_NEXT). They never deregister:
 * that runs later, from px_rcache_register/release on the owner's thread,
 * because the hook may fire in any thread and inside the provider itself.
 * We chose this over patching glibc's code (what Open MPI's patcher and
 * libfabric's memhooks do) because it is portable and small; its limit is
 * that unmaps glibc does internally (free() of an mmap'ed chunk) are not
 * seen, which docs/ofi.md states, with px_rcache_invalidate for allocators.
 */
#define _GNU_SOURCE
#include "frameworks/btl/base/rcache.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"

struct px_rcache {
    px_rcache_params_t params;
    pthread_mutex_t lock;
    px_rcache_entry_t *valid;               /* lookup list, MRU first */
    px_rcache_entry_t *lru_head, *lru_tail; /* unused, LRU at head */
    px_rcache_entry_t *dead;                /* invalid and unused: to deregister */
    px_rcache_stats_t stats;
    px_rcache_t *next_cache;
};

static pthread_mutex_t px_rcache_list_lock = PTHREAD_MUTEX_INITIALIZER;
static px_rcache_t *px_rcache_all;
static atomic_size_t px_rcache_total_entries; /* fast exit for the hooks */
static atomic_int px_rcache_hook_calls;

static uintptr_t px_rcache_page_mask(void)
{
    static uintptr_t mask;
    if (0 == mask)
        mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
    return mask;
}

/* ---- list helpers (cache lock held) ---- */
static void px_rcache_valid_remove(px_rcache_t *c, px_rcache_entry_t *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->valid = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->next = e->prev = NULL;
}

static void px_rcache_valid_push(px_rcache_t *c, px_rcache_entry_t *e)
{
    e->prev = NULL;
    e->next = c->valid;
    if (c->valid)
        c->valid->prev = e;
    c->valid = e;
}

static void px_rcache_lru_remove(px_rcache_t *c, px_rcache_entry_t *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_next = e->lru_prev = NULL;
    c->stats.unused--;
}

static void px_rcache_lru_append(px_rcache_t *c, px_rcache_entry_t *e)
{
    e->lru_next = NULL;
    e->lru_prev = c->lru_tail;
    if (c->lru_tail)
        c->lru_tail->lru_next = e;
    else
        c->lru_head = e;
    c->lru_tail = e;
    c->stats.unused++;
}

/* Put an entry nobody uses on the dead list (it will be deregistered);
 * from here it no longer counts against the limits. */
static void px_rcache_bury(px_rcache_t *c, px_rcache_entry_t *e)
{
    e->next = c->dead;
    c->dead = e;
    c->stats.entries--;
    c->stats.bytes -= e->bound - e->base;
}

/* Retire an unused entry from the lookup and LRU lists. */
static void px_rcache_kill(px_rcache_t *c, px_rcache_entry_t *e)
{
    if (!e->invalid)
        px_rcache_valid_remove(c, e);
    px_rcache_lru_remove(c, e);
    px_rcache_bury(c, e);
}

/* Deregister what is on the dead list; called without the lock. */
static void px_rcache_reap(px_rcache_t *c)
{
    pthread_mutex_lock(&c->lock);
    px_rcache_entry_t *e = c->dead;
    c->dead = NULL;
    pthread_mutex_unlock(&c->lock);
    while (e) {
        px_rcache_entry_t *next = e->next;
        c->params.deregister_fn(c->params.ctx, e);
        atomic_fetch_sub(&px_rcache_total_entries, 1);
        free(e);
        e = next;
    }
}

/* Evict unused entries while over the limits (all of them when `all`). */
static void px_rcache_evict(px_rcache_t *c, bool all)
{
    pthread_mutex_lock(&c->lock);
    while (c->lru_head &&
           (all || (c->params.max_entries && c->stats.entries > c->params.max_entries) ||
            (c->params.max_bytes && c->stats.bytes > c->params.max_bytes))) {
        px_rcache_kill(c, c->lru_head);
        c->stats.evictions++;
    }
    pthread_mutex_unlock(&c->lock);
    px_rcache_reap(c);
}

int px_rcache_create(const px_rcache_params_t *params, px_rcache_t **cache)
{
    *cache = NULL;
    if (NULL == params || NULL == params->register_fn || NULL == params->deregister_fn ||
        params->entry_size < sizeof(px_rcache_entry_t))
        return PX_ERR_BAD_PARAM;
    px_rcache_t *c = calloc(1, sizeof(*c));
    if (NULL == c)
        return PX_ERR_OUT_OF_RESOURCE;
    c->params = *params;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&px_rcache_list_lock);
    c->next_cache = px_rcache_all;
    px_rcache_all = c;
    pthread_mutex_unlock(&px_rcache_list_lock);
    *cache = c;
    return PX_SUCCESS;
}

void px_rcache_destroy(px_rcache_t *c)
{
    if (NULL == c)
        return;
    pthread_mutex_lock(&px_rcache_list_lock);
    for (px_rcache_t **p = &px_rcache_all; *p; p = &(*p)->next_cache) {
        if (*p == c) {
            *p = c->next_cache;
            break;
        }
    }
    pthread_mutex_unlock(&px_rcache_list_lock);
    /* Every entry: unused ones through the LRU, the rest forcibly. */
    px_rcache_evict(c, true);
    size_t in_use = 0;
    pthread_mutex_lock(&c->lock);
    while (c->valid) {
        px_rcache_entry_t *e = c->valid;
        px_rcache_valid_remove(c, e);
        e->invalid = true;
        e->refcount = 0;
        px_rcache_bury(c, e);
        ++in_use;
    }
    pthread_mutex_unlock(&c->lock);
    if (in_use)
        px_show_warning("%s: registration cache destroyed with %zu registration(s) still in "
                        "use; deregistering them",
                        c->params.name ? c->params.name : "rcache", in_use);
    px_rcache_reap(c);
    /* Invalidated entries still referenced cannot be released through a
     * cache that is gone: report them (they stay registered until exit). */
    if (c->stats.entries)
        px_show_warning("%s: %zu invalidated registration(s) were still referenced at destroy",
                        c->params.name ? c->params.name : "rcache", c->stats.entries);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int px_rcache_register(px_rcache_t *c, void *addr, size_t len, uint32_t flags,
                       px_rcache_entry_t **entry)
{
    uintptr_t mask = px_rcache_page_mask();
    uintptr_t base = (uintptr_t)addr & ~mask;
    uintptr_t bound = ((uintptr_t)addr + (len ? len : 1) + mask) & ~mask;

    if (c->dead)
        px_rcache_reap(c);
    pthread_mutex_lock(&c->lock);
    for (px_rcache_entry_t *e = c->valid; e; e = e->next) {
        if (e->base <= base && e->bound >= bound && (e->flags & flags) == flags) {
            if (0 == e->refcount++)
                px_rcache_lru_remove(c, e);
            if (e != c->valid) { /* most recently used first */
                px_rcache_valid_remove(c, e);
                px_rcache_valid_push(c, e);
            }
            c->stats.hits++;
            pthread_mutex_unlock(&c->lock);
            *entry = e;
            return PX_SUCCESS;
        }
    }
    c->stats.misses++;
    pthread_mutex_unlock(&c->lock);

    px_rcache_entry_t *e = calloc(1, c->params.entry_size);
    if (NULL == e)
        return PX_ERR_OUT_OF_RESOURCE;
    e->base = base;
    e->bound = bound;
    e->flags = flags;
    e->refcount = 1;
    e->cache = c;
    int rc = c->params.register_fn(c->params.ctx, e);
    if (PX_ERR_OUT_OF_RESOURCE == rc) {
        px_rcache_evict(c, true);
        rc = c->params.register_fn(c->params.ctx, e);
    }
    if (PX_SUCCESS != rc) {
        free(e);
        return rc;
    }
    atomic_fetch_add(&px_rcache_total_entries, 1);
    pthread_mutex_lock(&c->lock);
    px_rcache_valid_push(c, e);
    c->stats.entries++;
    c->stats.bytes += bound - base;
    bool over = (c->params.max_entries && c->stats.entries > c->params.max_entries) ||
                (c->params.max_bytes && c->stats.bytes > c->params.max_bytes);
    pthread_mutex_unlock(&c->lock);
    if (over)
        px_rcache_evict(c, false);
    *entry = e;
    return PX_SUCCESS;
}

int px_rcache_release(px_rcache_entry_t *e)
{
    px_rcache_t *c = e->cache;
    pthread_mutex_lock(&c->lock);
    if (e->refcount <= 0) {
        pthread_mutex_unlock(&c->lock);
        px_show_error("%s: registration [%#lx, %#lx) released more often than registered",
                      c->params.name ? c->params.name : "rcache", (unsigned long)e->base,
                      (unsigned long)e->bound);
        return PX_ERR_BAD_PARAM;
    }
    bool reap = false, over = false;
    if (0 == --e->refcount) {
        if (e->invalid) {
            px_rcache_bury(c, e);
            reap = true;
        } else {
            px_rcache_lru_append(c, e);
            over = (c->params.max_entries && c->stats.entries > c->params.max_entries) ||
                   (c->params.max_bytes && c->stats.bytes > c->params.max_bytes);
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (reap)
        px_rcache_reap(c);
    if (over)
        px_rcache_evict(c, false);
    return PX_SUCCESS;
}

void px_rcache_invalidate(const void *addr, size_t len)
{
    if (0 == atomic_load_explicit(&px_rcache_total_entries, memory_order_relaxed) || 0 == len)
        return;
    uintptr_t lo = (uintptr_t)addr, hi = lo + len;
    pthread_mutex_lock(&px_rcache_list_lock);
    for (px_rcache_t *c = px_rcache_all; c; c = c->next_cache) {
        pthread_mutex_lock(&c->lock);
        px_rcache_entry_t *e = c->valid;
        while (e) {
            px_rcache_entry_t *next = e->next;
            if (e->base < hi && lo < e->bound) {
                c->stats.invalidations++;
                if (0 == e->refcount) {
                    px_rcache_kill(c, e);
                } else {
                    px_rcache_valid_remove(c, e);
                }
                e->invalid = true;
            }
            e = next;
        }
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&px_rcache_list_lock);
}

void px_rcache_get_stats(px_rcache_t *c, px_rcache_stats_t *stats)
{
    pthread_mutex_lock(&c->lock);
    *stats = c->stats;
    pthread_mutex_unlock(&c->lock);
}

/* ---- munmap / mremap interposition ---- */
/* Exported (PX_EXPORT): the interposition only works if the dynamic linker
 * sees these definitions in libplexus.so. */
typedef int (*px_munmap_fn)(void *, size_t);
typedef void *(*px_mremap_fn)(void *, size_t, size_t, int, ...);

static px_munmap_fn px_real_munmap(void)
{
    static _Atomic(px_munmap_fn) fn;
    px_munmap_fn f = atomic_load_explicit(&fn, memory_order_acquire);
    if (NULL == f) {
        f = (px_munmap_fn)dlsym(RTLD_NEXT, "munmap");
        atomic_store_explicit(&fn, f, memory_order_release);
    }
    return f;
}

PX_EXPORT int munmap(void *addr, size_t len)
{
    atomic_fetch_add_explicit(&px_rcache_hook_calls, 1, memory_order_relaxed);
    px_rcache_invalidate(addr, len);
    px_munmap_fn f = px_real_munmap();
    if (PX_UNLIKELY(NULL == f))
        return (int)syscall(SYS_munmap, addr, len);
    return f(addr, len);
}

PX_EXPORT void *mremap(void *old_addr, size_t old_size, size_t new_size, int flags, ...)
{
    static _Atomic(px_mremap_fn) fn;
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    atomic_fetch_add_explicit(&px_rcache_hook_calls, 1, memory_order_relaxed);
    px_rcache_invalidate(old_addr, old_size);
    px_mremap_fn f = atomic_load_explicit(&fn, memory_order_acquire);
    if (NULL == f) {
        f = (px_mremap_fn)dlsym(RTLD_NEXT, "mremap");
        atomic_store_explicit(&fn, f, memory_order_release);
    }
    if (PX_UNLIKELY(NULL == f))
        return (void *)syscall(SYS_mremap, old_addr, old_size, new_size, flags, new_addr);
    if (flags & MREMAP_FIXED)
        return f(old_addr, old_size, new_size, flags, new_addr);
    return f(old_addr, old_size, new_size, flags);
}

bool px_rcache_hooks_active(void)
{
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == p)
        return false;
    int before = atomic_load(&px_rcache_hook_calls);
    munmap(p, (size_t)page);
    return atomic_load(&px_rcache_hook_calls) != before;
}
