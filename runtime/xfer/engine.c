/*
 * xfer.c: the transfer engine's setup and its slow paths: variables,
 * px_init/px_finalize hooks, the progress lock, regions (registered or
 * allocated through a transport's shareable memory), keys, imports (with the
 * mappings of peers' memory cached per peer and region), and peer failures.
 * Submission and progress are in xfer_batch.c, the staged path in
 * xfer_stage.c; docs/transfer.md describes the whole.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "core/util/progress.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/rcache.h"
#include "runtime/xfer/xfer.h"

px_xfer_engine_t px_xfer = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .inbox_lock = PTHREAD_MUTEX_INITIALIZER,
    .chunk_size = 1 << 20,
    .stage_size = 64 * 1024,
    .stage_count = 32,
};
bool px_rt_api_shared;

static _Thread_local int tl_held;        /* this thread holds px_xfer.lock */
static _Thread_local char tl_error[512]; /* px_xfer_last_error */

/* ------------------------------------------------------------ variables */

#define PX_XFER_AT(field) .offset = PX_MCA_VAR_AT(px_xfer_engine_t, field)
static const px_mca_var_field_t px_xfer_vars[] = {
    {.name = "priority",
     .help = "Order in which one-sided transfers choose transports, best first: names of BTL "
             "components separated by commas, '+' joining names of equal priority, whose "
             "requests are striped over both (e.g. \"ofi\", \"shm+ofi,verbs\"); transports not "
             "named come after, by exclusivity. Empty: by exclusivity (self, shm, verbs, ofi)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "",
     PX_XFER_AT(priority)},
    {.name = "chunk_size",
     .help = "Bytes a one-sided request moves per transport operation; a request larger than "
             "this is striped over every rail of the best priority, weighted by their bandwidth",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "1M",
     .min = "4k",
     .max = "1G",
     PX_XFER_AT(chunk_size)},
    {.name = "stage_size",
     .help = "Bytes of each bounce buffer of the staged path (one-sided transfers over active "
             "messages when no transport has a direct path); capped by the transport's "
             "fragment size",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "64k",
     .min = "256",
     .max = "16M",
     PX_XFER_AT(stage_size)},
    {.name = "stage_count",
     .help = "Bounce buffers of the staged path in this process: how many staged chunks may "
             "be in flight at once",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "32",
     .min = "1",
     .max = "4096",
     PX_XFER_AT(stage_count)},
    {.name = "stage_below",
     .help = "Requests smaller than this (bytes) that have no mapped path go by the staged path "
             "(the target's CPU copies, when it next progresses) rather than a transport's "
             "put/get: a round trip of messages beats a system call (CMA) for small requests, "
             "but only while the target calls into Plexus. 0: never",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "16M",
     PX_XFER_AT(stage_below)},
    {.name = "verbose",
     .help = "Verbosity of the transfer engine: 1 setup (transports and priorities), 10 every "
             "request with the path, transports and bytes per rail it took",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "100",
     PX_XFER_AT(verbose)},
    {.name = NULL},
};
#undef PX_XFER_AT

int px_xfer_register_params(void)
{
    return px_mca_var_register_table("xfer", NULL, px_xfer_vars, -1, &px_xfer);
}

/* ------------------------------------------------------------ lock, errors */

bool px_xfer_lock_try(bool *took)
{
    *took = false;
    if (tl_held)
        return true;
    if (pthread_mutex_trylock(&px_xfer.lock) != 0)
        return false;
    tl_held = 1;
    *took = true;
    return true;
}

void px_xfer_lock_take(bool *took)
{
    *took = false;
    if (tl_held)
        return;
    pthread_mutex_lock(&px_xfer.lock);
    tl_held = 1;
    *took = true;
}

void px_xfer_lock_drop(bool took)
{
    if (!took)
        return;
    tl_held = 0;
    pthread_mutex_unlock(&px_xfer.lock);
}

bool px_xfer_lock_held(void)
{
    return tl_held != 0;
}

bool px_rt_api_lock(void)
{
    bool took;
    px_xfer_lock_take(&took);
    return took;
}

void px_rt_api_unlock(bool took)
{
    px_xfer_lock_drop(took);
}

void px_rt_api_pause(void)
{
    /* A messaging wait that holds the lock lets the other threads in now
     * and then (registration, import, their own progress). */
    if (px_rt_api_shared && tl_held) {
        pthread_mutex_unlock(&px_xfer.lock);
        sched_yield();
        pthread_mutex_lock(&px_xfer.lock);
    }
}

int px_xfer_fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_error, sizeof tl_error, fmt, ap);
    va_end(ap);
    return rc;
}

const char *px_xfer_last_error(void)
{
    return tl_error;
}

const char *px_xfer_host(int rank)
{
    if (rank < 0 || rank >= px_rt.size || !px_rt.procs || !px_rt.procs[rank].hostname)
        return "?";
    return px_rt.procs[rank].hostname;
}

/* ------------------------------------------------------------ init */

/* Rank modules by xfer_priority: each group (comma-separated) gets one
 * priority above every exclusivity, in order; names not listed keep their
 * exclusivity. */
static void px_xfer_apply_priority(void)
{
    for (int i = 0; i < px_xfer.nmods; ++i)
        px_xfer.mods[i].priority = (long)px_xfer.mods[i].btl->btl_exclusivity;
    const char *spec = px_xfer.priority;
    if (NULL == spec || '\0' == *spec)
        return;
    char *copy = strdup(spec), *save = NULL;
    if (!copy)
        return;
    long group = 0;
    for (char *g = strtok_r(copy, ",", &save); g; g = strtok_r(NULL, ",", &save), ++group) {
        char *save2 = NULL;
        for (char *name = strtok_r(g, "+", &save2); name; name = strtok_r(NULL, "+", &save2)) {
            while (*name == ' ')
                name++;
            size_t n = strlen(name);
            while (n && name[n - 1] == ' ')
                name[--n] = '\0';
            bool found = false;
            for (int i = 0; i < px_xfer.nmods; ++i) {
                if (0 == strcmp(px_xfer.mods[i].name, name)) {
                    px_xfer.mods[i].priority = (1L << 40) - group;
                    found = true;
                }
            }
            if (!found)
                PX_OUTPUT_VERBOSE(1, px_xfer.output,
                                  "xfer_priority names \"%s\", which is not a transport of this "
                                  "process (transports: see btl_base_verbose)",
                                  name);
        }
    }
    free(copy);
}

int px_xfer_init(void)
{
    px_xfer.output = px_output_open("xfer", px_xfer.verbose);
    px_mpsc_init(&px_xfer.queue);
    atomic_store(&px_xfer.work, 0);
    atomic_store(&px_xfer.inbox_count, 0);
    px_xfer.shared = false;
    px_rt_api_shared = false;
    px_xfer.pending = px_xfer.pending_tail = NULL;
    px_xfer.region_list = NULL;
    px_xfer.remote_list = NULL;
    px_xfer.inbox = px_xfer.inbox_tail = NULL;
    px_xfer.in_work = false;
    px_xfer.npeers = px_rt.size;
    px_xfer.peers = calloc((size_t)px_rt.size, sizeof *px_xfer.peers);
    if (!px_xfer.peers)
        return PX_ERR_OUT_OF_RESOURCE;
    const char *jobid = px_boot && px_boot->jobid ? px_boot->jobid : "";
    px_xfer.job_hash = px_xfer_hash64(jobid, strlen(jobid), 1469598103934665603ULL);
    if (getrandom(&px_xfer.next_id, sizeof px_xfer.next_id, 0) != sizeof px_xfer.next_id)
        px_xfer.next_id = (uint64_t)getpid() << 24;
    px_xfer.next_id = (px_xfer.next_id & ~0xffffffffULL) | 1;
    PX_OBJ_CONSTRUCT(&px_xfer.regions, px_hash_table_t);
    px_hash_table_init(&px_xfer.regions, 64);
    /* The engine's view of each module, in the runtime's table order. */
    const px_btl_base_table_t *t = &px_rt.table;
    px_xfer.nmods = t->nmodules < PX_XFER_MAX_MODULES ? t->nmodules : PX_XFER_MAX_MODULES;
    for (int i = 0; i < px_xfer.nmods; ++i) {
        px_xfer_mod_t *m = &px_xfer.mods[i];
        memset(m, 0, sizeof *m);
        m->btl = t->modules[i];
        const char *name = m->btl->btl_component ? m->btl->btl_component->base.component_name : "?";
        snprintf(m->name, sizeof m->name, "%s", name);
        snprintf(m->label_map, sizeof m->label_map, "%s:map", name);
        snprintf(m->label_put, sizeof m->label_put, "%s:put", name);
        snprintf(m->label_get, sizeof m->label_get, "%s:get", name);
        snprintf(m->label_stage, sizeof m->label_stage, "stage:%s", name);
        m->comp_id = px_xfer_name_id(m->name);
        for (int j = 0; j < i; ++j)
            m->comp_index += px_xfer.mods[j].comp_id == m->comp_id;
        m->put = px_btl_base_xfer_can_put(m->btl);
        m->get = px_btl_base_xfer_can_get(m->btl);
        m->reg = m->btl->btl_register_mem != NULL;
        m->hsize = m->reg ? (uint32_t)m->btl->btl_registration_handle_size : 0;
        if (m->hsize > PX_XFER_MAX_HANDLE)
            m->put = m->get = false;
        m->map = px_btl_base_has_mem_map(m->btl);
        for (size_t r = 0; r < t->nprocs; ++r)
            if ((int)r != px_rt.rank && px_bitmap_is_set_bit(&t->reach[i].reachable, (int)r))
                m->reaches_other = true;
    }
    px_xfer_apply_priority();
    px_xfer.vtab_mod = -1;
    px_xfer.vtab_tried = false;
    for (int r = 0; r < px_rt.size; ++r) {
        px_xfer.peers[r].vtab_mod = -1;
        px_xfer.peers[r].stage_mod = -1;
        for (int i = 0; i < px_xfer.nmods; ++i)
            if (px_xfer.mods[i].btl == px_rt.peers[r].eager_btl)
                px_xfer.peers[r].stage_mod = i;
    }
    for (int i = 0; i < px_xfer.nmods; ++i) {
        const px_xfer_mod_t *m = &px_xfer.mods[i];
        PX_OUTPUT_VERBOSE(1, px_xfer.output, "transport %s#%u priority %ld:%s%s%s%s%s", m->name,
                          m->comp_index, m->priority, m->map ? " map" : "", m->put ? " put" : "",
                          m->get ? " get" : "", m->reg ? " (registers memory)" : "",
                          m->reaches_other ? "" : " (reaches only this process)");
    }
    int rc = px_xfer_stage_init();
    if (rc != PX_SUCCESS)
        return rc;
    px_btl_base_register_am(PX_XFER_AM_NOTIFY, px_xfer_am_notify, NULL);
    px_btl_base_register_am(PX_XFER_AM_WRITE, px_xfer_am_write, NULL);
    px_btl_base_register_am(PX_XFER_AM_WACK, px_xfer_am_wack, NULL);
    px_btl_base_register_am(PX_XFER_AM_READ, px_xfer_am_read, NULL);
    px_btl_base_register_am(PX_XFER_AM_RDATA, px_xfer_am_rdata, NULL);
    px_btl_base_register_am(PX_XFER_AM_REVOKE, px_xfer_am_revoke, NULL);
    px_btl_base_register_am(PX_XFER_AM_RVACK, px_xfer_am_rvack, NULL);
    atomic_store(&px_xfer.cb_registered, false); /* px_xfer_need_progress */
    px_xfer.ready = true;
    return PX_SUCCESS;
}

static void region_release_memory(px_xfer_region_t *r);
static void remote_unmap(px_xfer_remote_t *rm);
static void px_xfer_forget_tl_batch(void);
static void vtab_finalize(void);

void px_xfer_finalize(void)
{
    if (!px_xfer.peers)
        return;
    bool took;
    px_xfer_lock_take(&took);
    px_xfer_batch_finalize();
    px_xfer_stage_finalize();
    while (px_xfer.remote_list) {
        px_xfer_remote_t *rm = px_xfer.remote_list;
        px_xfer.remote_list = rm->next;
        remote_unmap(rm);
        rm->magic = 0;
        free(rm);
    }
    while (px_xfer.region_list) {
        px_xfer_region_t *r = px_xfer.region_list;
        px_xfer.region_list = r->next;
        PX_OUTPUT_VERBOSE(1, px_xfer.output,
                          "px_finalize frees region %llx (%zu bytes) that was never freed",
                          (unsigned long long)r->id, r->len);
        region_release_memory(r);
        r->magic = 0;
        free(r);
    }
    vtab_finalize();
    pthread_mutex_lock(&px_xfer.inbox_lock);
    while (px_xfer.inbox) {
        px_xfer_inbox_item_t *it = px_xfer.inbox;
        px_xfer.inbox = it->next;
        free(it);
    }
    px_xfer.inbox_tail = NULL;
    atomic_store(&px_xfer.inbox_count, 0);
    pthread_mutex_unlock(&px_xfer.inbox_lock);
    for (int t = PX_XFER_AM_NOTIFY; t <= PX_XFER_AM_RVACK; ++t)
        px_btl_base_register_am((px_btl_tag_t)t, NULL, NULL);
    if (atomic_load(&px_xfer.cb_registered))
        px_progress_unregister(px_xfer_progress_cb, NULL);
    atomic_store(&px_xfer.cb_registered, false);
    for (int p = 0; p < px_xfer.npeers; ++p) {
        free(px_xfer.peers[p].why);
        free(px_xfer.peers[p].revoked);
    }
    free(px_xfer.peers);
    px_xfer.peers = NULL;
    px_xfer.npeers = 0;
    PX_OBJ_DESTRUCT(&px_xfer.regions);
    px_xfer.ready = false;
    px_xfer.shared = false;
    px_rt_api_shared = false;
    px_xfer_forget_tl_batch();
    if (px_xfer.output > 0)
        px_output_close(px_xfer.output);
    px_xfer.output = -1;
    px_xfer_lock_drop(took);
}

void px_xfer_need_progress(void)
{
    /* Any progress (a messaging wait too) drives the queue from now on. Not
     * in a process alone: its messaging waits tell a wait that can never end
     * by an empty progress engine, and its engine runs the work itself. */
    if (PX_LIKELY(atomic_load_explicit(&px_xfer.cb_registered, memory_order_acquire)) ||
        px_rt.size < 2)
        return;
    bool took;
    px_xfer_lock_take(&took);
    if (!atomic_load(&px_xfer.cb_registered) &&
        PX_SUCCESS == px_progress_register(px_xfer_progress_cb, NULL))
        atomic_store_explicit(&px_xfer.cb_registered, true, memory_order_release);
    px_xfer_lock_drop(took);
}

int px_xfer_enable_threads(void)
{
    if (!px_xfer.ready)
        return px_xfer_fail(PX_ERR_NOT_INITIALIZED, "px_xfer_enable_threads: px_init first");
    px_xfer.shared = true;
    px_rt_api_shared = true;
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ regions */

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
    r->next = px_xfer.region_list;
    if (r->next)
        r->next->prev = r;
    px_xfer.region_list = r;
}

static PX_COLD int api_error(int rc, const char *fn, const char *fmt, ...) PX_PRINTF(3, 4);
static int api_error(int rc, const char *fn, const char *fmt, ...)
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
            return api_error(PX_ERR_NOT_INITIALIZED, fn, "Plexus is not initialised (px_init)");   \
    } while (0)

int px_xfer_register(void *base, size_t length, px_xfer_region_t **region)
{
    XFER_READY("px_xfer_register");
    if (!region || !base || 0 == length || (uintptr_t)base + length < (uintptr_t)base)
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_register",
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
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_alloc",
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
            free(r);
            return api_error(PX_ERR_OUT_OF_RESOURCE, "px_xfer_alloc", "cannot allocate %zu bytes",
                             len);
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

static bool region_ok(const px_xfer_region_t *r)
{
    return r && PX_XFER_REGION_MAGIC == r->magic;
}

void *px_xfer_region_base(const px_xfer_region_t *region)
{
    return region_ok(region) ? region->base : NULL;
}

size_t px_xfer_region_length(const px_xfer_region_t *region)
{
    return region_ok(region) ? region->len : 0;
}

px_xfer_region_t *px_xfer_region_find(uint64_t id)
{
    void *v = NULL;
    if (PX_SUCCESS != px_hash_table_get_value_uint64(&px_xfer.regions, id, &v))
        return NULL;
    return v;
}

int px_xfer_free(px_xfer_region_t **region)
{
    XFER_READY("px_xfer_free");
    if (!region || !region_ok(*region))
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_free",
                         "%p is not a region (freed already, or never one)",
                         region ? (void *)*region : NULL);
    px_xfer_region_t *r = *region;
    bool took;
    px_xfer_lock_take(&took);
    long n = atomic_load(&r->inflight);
    if (n > 0) {
        px_xfer_lock_drop(took);
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_free",
                         "region %llx still has %ld request(s) in flight: wait for them first",
                         (unsigned long long)r->id, n);
    }
    px_hash_table_remove_value_uint64(&px_xfer.regions, r->id);
    if (r->prev)
        r->prev->next = r->next;
    else
        px_xfer.region_list = r->next;
    if (r->next)
        r->next->prev = r->prev;
    /* Staged requests to it fail from here on (no such region). A peer may
     * hold a network key of it: withdraw it before deregistering. */
    bool net = false;
    for (int i = 0; i < px_xfer.nmods; ++i)
        net |= px_xfer.mods[i].reg && r->reg[i] && px_xfer.mods[i].reaches_other;
    if (net && took && atomic_load(&r->exported) && px_xfer.npeers > 1) {
        r->magic = 0;
        px_xfer_lock_drop(took);
        px_xfer_revoke(r->id);
        px_xfer_lock_take(&took);
    }
    region_release_memory(r);
    r->magic = 0;
    px_xfer_lock_drop(took);
    free(r);
    *region = NULL;
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ keys */

int px_xfer_key_export(const px_xfer_region_t *region, void *key, size_t capacity, size_t *length)
{
    XFER_READY("px_xfer_key_export");
    if (!region_ok(region) || !length)
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_key_export",
                         "region %p, length %p: expected a region and a place for the length",
                         (const void *)region, (void *)length);
    atomic_store(&((px_xfer_region_t *)region)->exported, true); /* px_xfer_free revokes it */
    px_xfer_key_t k;
    memset(&k, 0, sizeof k);
    k.job_hash = px_xfer.job_hash;
    k.owner = px_rt.rank;
    k.flags = region->allocated ? 1 : 0;
    k.region_id = region->id;
    k.addr = (uint64_t)(uintptr_t)region->base;
    k.length = region->len;
    if (region->mem_mod >= 0) {
        const px_xfer_mod_t *m = &px_xfer.mods[region->mem_mod];
        k.entries[k.nentries++] = (px_xfer_key_entry_t){
            m->comp_id, m->comp_index, PX_XFER_ENTRY_MAP, region->mem.desc_len, region->mem.desc};
    }
    unsigned char valid[4 + PX_BTL_MEM_DESC_MAX];
    if (region->vslot >= 0) {
        /* Shared table: the transport and its description; private: none
         * (component id 0), for this process's own imports. */
        const px_xfer_mod_t *m = px_xfer.vtab_mod >= 0 ? &px_xfer.mods[px_xfer.vtab_mod] : NULL;
        uint32_t slot = (uint32_t)region->vslot, dlen = m ? px_xfer.vtab.desc_len : 0;
        memcpy(valid, &slot, 4);
        if (dlen)
            memcpy(valid + 4, px_xfer.vtab.desc, dlen);
        k.entries[k.nentries++] = (px_xfer_key_entry_t){m ? m->comp_id : 0, m ? m->comp_index : 0,
                                                        PX_XFER_ENTRY_VALID, 4 + dlen, valid};
    }
    for (int i = 0; i < px_xfer.nmods && k.nentries < PX_XFER_KEY_ENTRIES; ++i) {
        const px_xfer_mod_t *m = &px_xfer.mods[i];
        if (!(m->put || m->get) || (m->reg && !region->reg[i]))
            continue;
        k.entries[k.nentries++] = (px_xfer_key_entry_t){
            m->comp_id, m->comp_index, PX_XFER_ENTRY_RDMA, m->reg ? m->hsize : 0,
            m->reg ? (const unsigned char *)region->reg[i] : NULL};
    }
    size_t need = px_xfer_key_write(&k, NULL, 0);
    *length = need;
    if (need > capacity || !key)
        return px_xfer_fail(PX_ERR_TRUNCATE,
                            "px_xfer_key_export: the key has %zu bytes, the buffer %zu", need,
                            capacity);
    px_xfer_key_write(&k, key, capacity);
    return PX_SUCCESS;
}

static int rail_cmp(const void *a, const void *b)
{
    const px_xfer_rail_t *x = a, *y = b;
    long px = px_xfer.mods[x->mod].priority, py = px_xfer.mods[y->mod].priority;
    if (px != py)
        return px > py ? -1 : 1;
    if (x->mod != y->mod)
        return x->mod - y->mod;
    return x->kind - y->kind; /* the mapping before put/get */
}

/* Map (or find mapped) the peer's allocation described by `e`. */
static px_xfer_map_t *map_get(int peer, int mod, const px_xfer_key_t *k,
                              const px_xfer_key_entry_t *e, px_btl_endpoint_t *ep)
{
    px_xfer_peer_t *p = &px_xfer.peers[peer];
    for (px_xfer_map_t *m = p->maps; m; m = m->next)
        if (m->mod == mod && m->region_id == k->region_id) {
            m->refs++;
            return m;
        }
    px_xfer_map_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (PX_SUCCESS != px_btl_base_mem_map(px_xfer.mods[mod].btl, ep, e->data, e->len, &m->mem)) {
        free(m);
        return NULL;
    }
    const px_xfer_ctl_t *ctl = m->mem.base;
    if (m->mem.size < PX_XFER_CTL_PAGE + k->length || ctl->magic != PX_XFER_CTL_MAGIC ||
        ctl->region_id != k->region_id) {
        px_show_error("px_xfer_key_import: rank %d's memory mapped through %s is not the region "
                      "the key names (%zu bytes mapped, control id %llx, key id %llx): not "
                      "using the mapping",
                      peer, px_xfer.mods[mod].name, m->mem.size, (unsigned long long)ctl->region_id,
                      (unsigned long long)k->region_id);
        px_btl_base_mem_unmap(px_xfer.mods[mod].btl, &m->mem);
        free(m);
        return NULL;
    }
    m->mod = mod;
    m->region_id = k->region_id;
    m->refs = 1;
    m->next = p->maps;
    p->maps = m;
    return m;
}

static void remote_unmap(px_xfer_remote_t *rm)
{
    px_xfer_map_t *m = rm->map;
    rm->map = NULL;
    rm->mapped = rm->fast = NULL;
    rm->ctl = NULL;
    if (!m || --m->refs > 0)
        return;
    px_xfer_peer_t *p = &px_xfer.peers[rm->peer];
    for (px_xfer_map_t **pp = &p->maps; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    px_btl_base_mem_unmap(px_xfer.mods[m->mod].btl, &m->mem);
    free(m);
}

int px_xfer_key_import(int peer, const void *key, size_t length, px_xfer_remote_t **remote)
{
    XFER_READY("px_xfer_key_import");
    if (!remote || peer < 0 || peer >= px_rt.size)
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                         "peer %d, remote %p: expected a rank from 0 to %d and a place for the "
                         "remote",
                         peer, (void *)remote, px_rt.size - 1);
    px_xfer_key_t k;
    char why[200];
    if (PX_SUCCESS != px_xfer_key_parse(key, length, &k, why, sizeof why))
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                         "the key from rank %d is refused: %s", peer, why);
    if (k.job_hash != px_xfer.job_hash)
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                         "the key from rank %d is refused: it was exported by another job (job "
                         "hash %016llx, this job's %016llx)",
                         peer, (unsigned long long)k.job_hash,
                         (unsigned long long)px_xfer.job_hash);
    if (k.owner != peer)
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                         "the key is refused: it was exported by rank %d, not by rank %d",
                         (int)k.owner, peer);
    int failed = atomic_load(&px_xfer.peers[peer].failed);
    if (failed)
        return api_error(failed, "px_xfer_key_import", "rank %d (host %s) failed: %s", peer,
                         px_xfer_host(peer),
                         px_xfer.peers[peer].why ? px_xfer.peers[peer].why : "?");
    if (peer == px_rt.rank) {
        /* Our own region: it must exist, as the key says. */
        bool took0;
        px_xfer_lock_take(&took0);
        px_xfer_region_t *own = px_xfer_region_find(k.region_id);
        bool ok = own && (uint64_t)(uintptr_t)own->base == k.addr && own->len == k.length;
        px_xfer_lock_drop(took0);
        if (!ok)
            return api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                             "the key names region %llx of this process (%llu bytes at 0x%llx), "
                             "which %s",
                             (unsigned long long)k.region_id, (unsigned long long)k.length,
                             (unsigned long long)k.addr,
                             own ? "has another address or length" : "does not exist (freed?)");
    }
    px_xfer_remote_t *rm = calloc(1, sizeof *rm);
    if (!rm)
        return px_xfer_fail(PX_ERR_OUT_OF_RESOURCE, "out of memory");
    rm->magic = PX_XFER_REMOTE_MAGIC;
    rm->peer = peer;
    rm->id = k.region_id;
    rm->addr = k.addr;
    rm->len = (size_t)k.length;
    atomic_init(&rm->inflight, 0);
    bool took;
    px_xfer_lock_take(&took);
    /* Its owner withdrew it already: requests fail as for a freed region. */
    atomic_init(&rm->revoked, peer != px_rt.rank && px_xfer_is_revoked(peer, k.region_id));
    const px_btl_base_table_t *t = &px_rt.table;
    for (int e = 0; e < k.nentries && rm->nrails < PX_XFER_MAX_RAILS; ++e) {
        const px_xfer_key_entry_t *en = &k.entries[e];
        if (PX_XFER_ENTRY_VALID == en->kind && peer == px_rt.rank && en->len >= 4) {
            uint32_t slot; /* our own table */
            memcpy(&slot, en->data, 4);
            if (px_xfer.vwords && slot < PX_XFER_VTAB_SLOTS)
                rm->valid = &px_xfer.vwords[slot];
            continue;
        }
        int mi = -1;
        for (int i = 0; i < px_xfer.nmods; ++i)
            if (px_xfer.mods[i].comp_id == en->comp_id &&
                px_xfer.mods[i].comp_index == en->comp_index)
                mi = i;
        if (mi < 0 || !px_bitmap_is_set_bit(&t->reach[mi].reachable, peer))
            continue; /* a transport this process lacks, or one that does not reach the peer */
        px_xfer_mod_t *m = &px_xfer.mods[mi];
        px_btl_endpoint_t *ep = t->reach[mi].endpoints[peer];
        px_xfer_rail_t *rl = &rm->rails[rm->nrails];
        memset(rl, 0, sizeof *rl);
        rl->mod = mi;
        rl->ep = ep;
        if (PX_XFER_ENTRY_VALID == en->kind) {
            px_xfer_peer_t *p = &px_xfer.peers[peer];
            uint32_t slot;
            if (!m->map || en->len < 4)
                continue;
            memcpy(&slot, en->data, 4);
            if (p->vtab_mod < 0 &&
                PX_SUCCESS == px_btl_base_mem_map(m->btl, ep, en->data + 4, en->len - 4, &p->vtab))
                p->vtab_mod = mi;
            if (p->vtab_mod == mi && (size_t)slot < p->vtab.size / 8)
                rm->valid = (const _Atomic uint64_t *)p->vtab.base + slot;
            continue;
        }
        if (PX_XFER_ENTRY_MAP == en->kind) {
            if (!m->map || rm->map)
                continue;
            px_xfer_map_t *map = map_get(peer, mi, &k, en, ep);
            if (!map) {
                PX_OUTPUT_VERBOSE(1, px_xfer.output,
                                  "rank %d's region %llx could not be mapped through %s: "
                                  "using its other paths",
                                  peer, (unsigned long long)k.region_id, m->name);
                continue;
            }
            rm->map = map;
            rm->ctl = map->mem.base;
            rm->mapped = (char *)map->mem.base + PX_XFER_CTL_PAGE;
            rl->kind = PX_XFER_RAIL_MAP;
        } else {
            if (!(m->put || m->get))
                continue;
            if (en->len != m->hsize) {
                PX_OUTPUT_VERBOSE(1, px_xfer.output,
                                  "rank %d's key holds %u handle bytes for %s, which uses "
                                  "%u: that transport is not used for it",
                                  peer, en->len, m->name, m->hsize);
                continue;
            }
            rl->kind = PX_XFER_RAIL_RDMA;
            rl->hsize = en->len;
            if (en->len)
                memcpy(rl->handle, en->data, en->len);
        }
        rm->nrails++;
    }
    qsort(rm->rails, (size_t)rm->nrails, sizeof rm->rails[0], rail_cmp);
    /* The inline path: the best priority is one module, and its best rail is
     * the mapping. */
    if (rm->nrails && PX_XFER_RAIL_MAP == rm->rails[0].kind) {
        bool alone = true;
        for (int i = 1; i < rm->nrails; ++i)
            if (rm->rails[i].mod != rm->rails[0].mod &&
                px_xfer.mods[rm->rails[i].mod].priority == px_xfer.mods[rm->rails[0].mod].priority)
                alone = false;
        if (alone)
            rm->fast = rm->mapped;
    }
    rm->next = px_xfer.remote_list;
    if (rm->next)
        rm->next->prev = rm;
    px_xfer.remote_list = rm;
    if (px_output_check(px_xfer.output, 1)) {
        char list[256] = "";
        size_t pos = 0;
        for (int i = 0; i < rm->nrails && pos < sizeof list; ++i)
            pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s#%u(%s)", i ? " " : "",
                                    px_xfer.mods[rm->rails[i].mod].name,
                                    px_xfer.mods[rm->rails[i].mod].comp_index,
                                    PX_XFER_RAIL_MAP == rm->rails[i].kind ? "mapped" : "put/get");
        px_output(px_xfer.output,
                  "imported rank %d's region %llx (%zu bytes): direct paths, best first: "
                  "%s%s",
                  peer, (unsigned long long)rm->id, rm->len, rm->nrails ? list : "none",
                  rm->fast ? "; copied by the submitting thread" : "");
    }
    px_xfer_lock_drop(took);
    *remote = rm;
    return PX_SUCCESS;
}

static bool remote_ok(const px_xfer_remote_t *rm)
{
    return rm && PX_XFER_REMOTE_MAGIC == rm->magic;
}

size_t px_xfer_remote_length(const px_xfer_remote_t *remote)
{
    return remote_ok(remote) ? remote->len : 0;
}

int px_xfer_remote_peer(const px_xfer_remote_t *remote)
{
    return remote_ok(remote) ? remote->peer : PX_ERR_BAD_PARAM;
}

int px_xfer_remote_release(px_xfer_remote_t **remote)
{
    XFER_READY("px_xfer_remote_release");
    if (!remote || !remote_ok(*remote))
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_remote_release",
                         "%p is not an imported region (released already, or never one)",
                         remote ? (void *)*remote : NULL);
    px_xfer_remote_t *rm = *remote;
    bool took;
    px_xfer_lock_take(&took);
    long n = atomic_load(&rm->inflight);
    if (n > 0) {
        px_xfer_lock_drop(took);
        return api_error(PX_ERR_BAD_PARAM, "px_xfer_remote_release",
                         "rank %d's region %llx still has %ld request(s) in flight: wait for "
                         "them first",
                         rm->peer, (unsigned long long)rm->id, n);
    }
    if (rm->prev)
        rm->prev->next = rm->next;
    else
        px_xfer.remote_list = rm->next;
    if (rm->next)
        rm->next->prev = rm->prev;
    remote_unmap(rm);
    rm->magic = 0;
    px_xfer_lock_drop(took);
    free(rm);
    *remote = NULL;
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ failures */

void px_xfer_peer_failed(int rank, int error, const char *why)
{
    if (!px_xfer.ready || rank < 0 || rank >= px_xfer.npeers)
        return;
    px_xfer_peer_t *p = &px_xfer.peers[rank];
    if (atomic_load(&p->failed))
        return;
    bool took;
    px_xfer_lock_take(&took);
    p->why = strdup(why ? why : "the peer failed");
    atomic_store_explicit(&p->failed, error ? error : PX_ERR_PEER_FAILED, memory_order_release);
    px_xfer_batch_peer_failed(rank);
    px_xfer_lock_drop(took);
}

/* ------------------------------------------------------------ thread batch */

/* px_xfer_write/read use a batch of one per thread, freed when the thread
 * ends (or, for the thread that calls px_finalize, there). */
static _Thread_local px_xfer_batch_t *tl_one;
static pthread_key_t tl_key;
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;

static void tl_batch_destroy(void *b)
{
    px_xfer_batch_t *batch = b;
    if (batch && 0 == px_xfer_batch_pending(batch))
        px_xfer_batch_free(&batch);
}

static void tl_key_make(void)
{
    pthread_key_create(&tl_key, tl_batch_destroy);
}

px_xfer_batch_t *px_xfer_tl_batch(void)
{
    if (tl_one)
        return tl_one;
    pthread_once(&tl_once, tl_key_make);
    if (PX_SUCCESS != px_xfer_batch_alloc(1, &tl_one))
        return NULL;
    pthread_setspecific(tl_key, tl_one);
    return tl_one;
}

static void px_xfer_forget_tl_batch(void)
{
    if (tl_one && 0 == px_xfer_batch_pending(tl_one)) {
        pthread_setspecific(tl_key, NULL);
        px_xfer_batch_free(&tl_one);
    }
    tl_one = NULL;
}
