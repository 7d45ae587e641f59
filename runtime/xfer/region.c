/*
 * region.c: regions of this process, registered (px_xfer_register) or
 * allocated through a transport's shareable memory with a control page
 * (px_xfer_alloc), their registrations with the transports that move
 * registered memory, and the validity table peers read to see a region
 * freed. Freeing a region a peer may hold a network key of first revokes it
 * (revoke.c).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/rcache.h"
#include "runtime/xfer/xfer.h"

/* Register [r->base, +len) with every module that moves registered memory
 * one-sided and reaches another process. */
static void region_register(px_xfer_region_t *r)
{
    for (int i = 0; i < px_xfer.nmods; ++i) {
        px_xfer_mod_t *m = &px_xfer.mods[i];
        if (!m->reg || !(m->put || m->get) || !m->reaches_other)
            continue;
        r->reg[i] = m->btl->btl_register_mem(m->btl, NULL, r->base, r->len, 0);
        if (NULL == r->reg[i])
            PX_OUTPUT_VERBOSE(1, px_xfer.output,
                              "%s#%u could not register %zu bytes at %p: requests on this "
                              "region take other paths",
                              m->name, m->comp_index, r->len, (void *)r->base);
    }
}

static void region_release_memory(px_xfer_region_t *r)
{
    if (r->ctl)
        atomic_store_explicit(&r->ctl->freed, 1, memory_order_release);
    if (r->vslot >= 0 && px_xfer.vwords) {
        atomic_store_explicit(&px_xfer.vwords[r->vslot], 0, memory_order_release);
        px_xfer.vfree[px_xfer.vnfree++] = r->vslot;
        r->vslot = -1;
    }
    /* The registration caches keep unused registrations: invalidate them
     * while this region still holds its own, so that releasing it below
     * deregisters at once and a peer's put or get into this memory fails
     * from now on (before the memory is unmapped or reused). */
    bool registered = false;
    for (int i = 0; i < px_xfer.nmods; ++i)
        registered |= r->reg[i] != NULL;
    if (registered)
        px_rcache_invalidate(r->base, r->len);
    for (int i = 0; i < px_xfer.nmods; ++i) {
        if (r->reg[i]) {
            px_xfer.mods[i].btl->btl_deregister_mem(px_xfer.mods[i].btl, r->reg[i]);
            r->reg[i] = NULL;
        }
    }
    if (r->mem_mod >= 0) {
        px_btl_base_mem_free(px_xfer.mods[r->mem_mod].btl, &r->mem);
        r->mem_mod = -1;
    } else if (r->raw) {
        munmap(r->raw, r->raw_len);
        r->raw = NULL;
    }
}

/* The validity table: made on first use from the best transport that
 * shares memory (lock held). */
static void vtab_ready(void)
{
    if (px_xfer.vtab_tried)
        return;
    px_xfer.vtab_tried = true;
    int best = -1;
    for (int i = 0; i < px_xfer.nmods; ++i)
        if (px_xfer.mods[i].map && px_xfer.mods[i].reaches_other &&
            (best < 0 || px_xfer.mods[i].priority > px_xfer.mods[best].priority))
            best = i;
    px_xfer.vfree = malloc(PX_XFER_VTAB_SLOTS * sizeof(int));
    if (!px_xfer.vfree)
        return;
    if (best >= 0 && PX_SUCCESS == px_btl_base_mem_alloc(px_xfer.mods[best].btl,
                                                         PX_XFER_VTAB_SLOTS * 8, &px_xfer.vtab)) {
        px_xfer.vtab_mod = best;
        px_xfer.vwords = px_xfer.vtab.base;
    } else {
        /* No transport shares memory: the table guards this process's own
         * imports only (a region freed under a request to itself). */
        px_xfer.vwords = calloc(PX_XFER_VTAB_SLOTS, sizeof(uint64_t));
        if (!px_xfer.vwords) {
            free(px_xfer.vfree);
            px_xfer.vfree = NULL;
            return;
        }
    }
    for (int i = 0; i < PX_XFER_VTAB_SLOTS; ++i) {
        atomic_store_explicit(&px_xfer.vwords[i], 0, memory_order_relaxed);
        px_xfer.vfree[i] = PX_XFER_VTAB_SLOTS - 1 - i;
    }
    px_xfer.vnfree = PX_XFER_VTAB_SLOTS;
}

static void vtab_finalize(void)
{
    for (int p = 0; p < px_xfer.npeers; ++p)
        if (px_xfer.peers[p].vtab_mod >= 0) {
            px_btl_base_mem_unmap(px_xfer.mods[px_xfer.peers[p].vtab_mod].btl,
                                  &px_xfer.peers[p].vtab);
            px_xfer.peers[p].vtab_mod = -1;
        }
    if (px_xfer.vtab_mod >= 0)
        px_btl_base_mem_free(px_xfer.mods[px_xfer.vtab_mod].btl, &px_xfer.vtab);
    else
        free(px_xfer.vwords);
    px_xfer.vtab_mod = -1;
    px_xfer.vtab_tried = false;
    px_xfer.vwords = NULL;
    free(px_xfer.vfree);
    px_xfer.vfree = NULL;
    px_xfer.vnfree = 0;
}

static int region_new(px_xfer_region_t **out)
{
    px_xfer_region_t *r = calloc(1, sizeof *r);
    if (!r)
        return px_xfer_fail(PX_ERR_OUT_OF_RESOURCE, "out of memory");
    PX_OBJ_CONSTRUCT(&r->link, px_list_item_t);
    r->magic = PX_XFER_REGION_MAGIC;
    r->mem_mod = -1;
    r->vslot = -1;
    atomic_init(&r->inflight, 0);
    atomic_init(&r->exported, false);
    *out = r;
    return PX_SUCCESS;
}

static void region_publish(px_xfer_region_t *r)
{
    r->id = px_xfer.next_id++;
    vtab_ready();
    if (px_xfer.vnfree > 0) {
        r->vslot = px_xfer.vfree[--px_xfer.vnfree];
        atomic_store_explicit(&px_xfer.vwords[r->vslot], r->id, memory_order_release);
    }
    px_hash_table_set_value_uint64(&px_xfer.regions, r->id, r);
    px_list_append(&px_xfer.regions_list, &r->link);
}

int px_xfer_api_error(int rc, const char *fn, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    px_xfer_fail(rc, "%s: %s", fn, msg);
    px_show_error("%s: %s", fn, msg);
    return rc;
}

#define XFER_READY(fn)                                                                             \
    do {                                                                                           \
        if (PX_UNLIKELY(!px_xfer.ready))                                                           \
            return px_xfer_api_error(PX_ERR_NOT_INITIALIZED, fn,                                   \
                                     "Plexus is not initialised (px_init)");                       \
    } while (0)

int px_xfer_register(void *base, size_t length, px_xfer_region_t **region)
{
    XFER_READY("px_xfer_register");
    if (!region || !base || 0 == length || (uintptr_t)base + length < (uintptr_t)base)
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_register",
            "base %p, length %zu, region %p: expected memory of at least one byte "
            "and a place for the region",
            base, length, (void *)region);
    px_xfer_region_t *r = NULL;
    int rc = region_new(&r);
    if (rc != PX_SUCCESS)
        return rc;
    r->base = base;
    r->len = length;
    bool took;
    px_xfer_lock_take(&took);
    region_register(r);
    region_publish(r);
    px_xfer_lock_drop(took);
    *region = r;
    return PX_SUCCESS;
}

int px_xfer_alloc(size_t length, px_xfer_region_t **region)
{
    XFER_READY("px_xfer_alloc");
    if (!region || 0 == length || length > ((size_t)1 << 46))
        return px_xfer_api_error(PX_ERR_BAD_PARAM, "px_xfer_alloc",
                                 "length %zu, region %p: expected 1 byte to 64 TiB and a place for "
                                 "the region",
                                 length, (void *)region);
    size_t len = (length + 4095) & ~(size_t)4095;
    px_xfer_region_t *r = NULL;
    int rc = region_new(&r);
    if (rc != PX_SUCCESS)
        return rc;
    r->allocated = true;
    bool took;
    px_xfer_lock_take(&took);
    /* Shareable memory from the best module that offers it. */
    int best = -1;
    for (int i = 0; i < px_xfer.nmods; ++i)
        if (px_xfer.mods[i].map && px_xfer.mods[i].reaches_other &&
            (best < 0 || px_xfer.mods[i].priority > px_xfer.mods[best].priority))
            best = i;
    char *start = NULL;
    if (best >= 0 && PX_SUCCESS == px_btl_base_mem_alloc(px_xfer.mods[best].btl,
                                                         PX_XFER_CTL_PAGE + len, &r->mem)) {
        r->mem_mod = best;
        start = r->mem.base;
    } else {
        if (best >= 0)
            PX_OUTPUT_VERBOSE(1, px_xfer.output,
                              "%s could not allocate %zu bytes of shareable memory: "
                              "using private memory (same-host peers reach it by put/get)",
                              px_xfer.mods[best].name, len);
        r->raw_len = PX_XFER_CTL_PAGE + len;
        r->raw = mmap(NULL, r->raw_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (MAP_FAILED == r->raw) {
            r->raw = NULL;
            px_xfer_lock_drop(took);
            PX_OBJ_DESTRUCT(&r->link);
            free(r);
            return px_xfer_api_error(PX_ERR_OUT_OF_RESOURCE, "px_xfer_alloc",
                                     "cannot allocate %zu bytes", len);
        }
        start = r->raw;
    }
    r->ctl = (px_xfer_ctl_t *)start;
    r->base = start + PX_XFER_CTL_PAGE;
    r->len = length;
    region_register(r);
    region_publish(r);
    r->ctl->region_id = r->id;
    atomic_store_explicit(&r->ctl->freed, 0, memory_order_relaxed);
    r->ctl->magic = PX_XFER_CTL_MAGIC;
    px_xfer_lock_drop(took);
    *region = r;
    return PX_SUCCESS;
}

void *px_xfer_region_base(const px_xfer_region_t *region)
{
    return px_xfer_region_ok(region) ? region->base : NULL;
}

size_t px_xfer_region_length(const px_xfer_region_t *region)
{
    return px_xfer_region_ok(region) ? region->len : 0;
}

px_xfer_region_t *px_xfer_region_find(uint64_t id)
{
    void *v = NULL;
    if (PX_SUCCESS != px_hash_table_get_value_uint64(&px_xfer.regions, id, &v))
        return NULL;
    return v;
}

static _Atomic(px_xfer_free_hook_t) free_hook;

void px_xfer_set_free_hook(px_xfer_free_hook_t hook)
{
    atomic_store(&free_hook, hook);
}

int px_xfer_free(px_xfer_region_t **region)
{
    XFER_READY("px_xfer_free");
    if (!region || !px_xfer_region_ok(*region))
        return px_xfer_api_error(PX_ERR_BAD_PARAM, "px_xfer_free",
                                 "%p is not a region (freed already, or never one)",
                                 region ? (void *)*region : NULL);
    px_xfer_region_t *r = *region;
    px_xfer_free_hook_t hook = atomic_load(&free_hook);
    if (hook && 0 == atomic_load(&r->inflight))
        hook(r);
    bool took;
    px_xfer_lock_take(&took);
    long n = atomic_load(&r->inflight);
    if (n > 0) {
        px_xfer_lock_drop(took);
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_free",
            "region %llx still has %ld request(s) in flight: wait for them first",
            (unsigned long long)r->id, n);
    }
    px_hash_table_remove_value_uint64(&px_xfer.regions, r->id);
    px_list_remove_item(&px_xfer.regions_list, &r->link);
    /* Staged requests to it fail from here on (no such region). A peer may
     * hold a network key of it: withdraw it before deregistering. */
    bool net = false;
    for (int i = 0; i < px_xfer.nmods; ++i)
        net |= px_xfer.mods[i].reg && r->reg[i] && px_xfer.mods[i].reaches_other;
    /* Connected peers map no validity word of ours (btl/shm maps shareable
     * memory for ranks only): they are told too, whatever the transport. */
    if (took && atomic_load(&r->exported) && ((net && px_xfer.npeers > 1) || px_rt.ndyn > 0)) {
        r->magic = 0;
        px_xfer_lock_drop(took);
        px_xfer_revoke(r->id);
        px_xfer_lock_take(&took);
    }
    region_release_memory(r);
    r->magic = 0;
    px_xfer_lock_drop(took);
    PX_OBJ_DESTRUCT(&r->link);
    free(r);
    *region = NULL;
    return PX_SUCCESS;
}

/* px_finalize: the regions never freed, then the validity table. */
void px_xfer_regions_finalize(void)
{
    px_list_item_t *it;
    while ((it = px_list_remove_first(&px_xfer.regions_list)) != NULL) {
        px_xfer_region_t *r = px_container_of(it, px_xfer_region_t, link);
        PX_OUTPUT_VERBOSE(1, px_xfer.output,
                          "px_finalize frees region %llx (%zu bytes) that was never freed",
                          (unsigned long long)r->id, r->len);
        region_release_memory(r);
        r->magic = 0;
        PX_OBJ_DESTRUCT(&r->link);
        free(r);
    }
    vtab_finalize();
}
