/*
 * shm_component.c: btl/shm's variables, init (local indices from boot,
 * the segment, the fragment free lists carved from it), modex publication
 * and close.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

px_btl_shm_state_t px_btl_shm_state = {
    .backing_dir = NULL,
    .fbox_size_var = 0, /* auto: px_btl_shm_auto_fbox_size */
    .fbox_max_send = 16384 + 64,
    .fbox_stream_max = 2048 + 64,
    .single_copy = PX_BTL_SHM_SC_AUTO,
    .single_copy_min = 0,
    .cma_split = 64u << 10,
    .free_list_eager_max = 128,
    .free_list_send_max = 64,
    .frag_cool_bytes = 2u << 20,
    .poll_batch = 1,
    .seg_fd = -1,
};

static const px_mca_var_enum_value_t px_btl_shm_fault_values[] = {
    {PX_BTL_SHM_FAULT_LAZY, "lazy"},
    {PX_BTL_SHM_FAULT_SETUP, "setup"},
    {PX_BTL_SHM_FAULT_NONE, "none"},
    {0, NULL},
};

static const px_mca_var_enum_value_t px_btl_shm_sc_values[] = {
    {PX_BTL_SHM_SC_NONE, "none"},
    {PX_BTL_SHM_SC_CMA, "cma"},
    {PX_BTL_SHM_SC_AUTO, "auto"},
    {0, NULL},
};

#define PX_BTL_SHM_AT(field) .offset = PX_MCA_VAR_AT(px_btl_shm_state_t, field)
static const px_mca_var_field_t px_btl_shm_vars[] = {
    {.name = "backing_dir",
     .help = "Folder holding the per-job folder plexus-<uid>-<jobid> of segment files (a tmpfs "
             "such as /dev/shm)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "/dev/shm",
     PX_BTL_SHM_AT(backing_dir)},
    {.name = "fbox_size",
     .help = "Bytes of each per-pair fast box ring (a power of two, 4k..16M; 0: auto, 4M per "
             "peer, halved down to 64k until the rings of a process's peers take at most 4M: "
             "4M for 2 local processes, 1M for 4 or 5, 64k from 34 on)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .min = "0",
     .max = "16M",
     PX_BTL_SHM_AT(fbox_size_var)},
    {.name = "fbox_max_send",
     .help = "Largest message (bytes, the caller's headers and the entry's 8-byte header "
             "included; not the padding that aligns the data) sent through a fast box; larger "
             "ones go as fragments on the receiver's queue (at most a quarter of "
             "btl_shm_fbox_size is used; 0: no fast box)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "4M",
     PX_BTL_SHM_AT(fbox_max_send)},
    {.name = "fbox_stream_max",
     .help = "Largest message (bytes, counted as btl_shm_fbox_max_send counts them) sent "
             "through a fast box while the sender streams to that peer (two or more sends to it "
             "in a row with no message from it in between); larger ones then go as eager "
             "fragments, which a stream of 3-16 KiB messages moves faster; a ping-pong keeps "
             "the fast box up to btl_shm_fbox_max_send (0: btl_shm_fbox_max_send for streams "
             "too)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "4M",
     PX_BTL_SHM_AT(fbox_stream_max)},
    {.name = "single_copy",
     .help = "How messages above the eager limit move: none (pipelined fragments through the "
             "segment, two copies), cma (the receiver reads the sender's buffer with "
             "process_vm_readv, one copy), auto (per message, whichever of the two the "
             "receiver measured faster for its size, from btl_shm_single_copy_min bytes on; "
             "fragments below); cma and auto fall back to fragments when the kernel refuses",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = px_btl_shm_sc_values,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     PX_BTL_SHM_AT(single_copy)},
    {.name = "single_copy_min",
     .help = "With btl_shm_single_copy=auto: the smallest message (bytes) the receiver may read "
             "by CMA; smaller ones above the eager limit always go as pipelined fragments",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .min = "0",
     .max = "64G",
     PX_BTL_SHM_AT(single_copy_min)},
    {.name = "cma_split",
     .help = "Smallest message above the eager limit, or transfer engine get (a rank's or a "
             "connected peer's region, named segments), whose single copy (CMA) the reader "
             "splits with the sender or the region's owner: both copy chunks of it at once, the "
             "reader reading, the other writing while it runs progress (one busy elsewhere "
             "leaves every chunk to the reader); 0: the reader reads alone, and this process "
             "takes no offers from connected peers",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .min = "0",
     .max = "64G",
     PX_BTL_SHM_AT(cma_split)},
    {.name = "free_list_eager_max",
     .help = "Eager fragments (btl_shm_eager_limit bytes) carved from the segment",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "8",
     .max = "65536",
     PX_BTL_SHM_AT(free_list_eager_max)},
    {.name = "free_list_send_max",
     .help = "Pipeline fragments (btl_shm_max_send_size bytes) carved from the segment",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "2",
     .max = "65536",
     PX_BTL_SHM_AT(free_list_send_max)},
    {.name = "frag_cool_bytes",
     .help = "Data bytes of pipeline fragments sent after a fragment before it is reused (while "
             "btl_shm_free_list_send_max allows): the receiver has just read a fragment, and "
             "writing it again while its lines sit in the receiver's cache costs a transfer per "
             "line; about twice a core's L2 cache (0: reuse at once)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 7,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "1G",
     PX_BTL_SHM_AT(frag_cool_bytes)},
    {.name = "poll_batch",
     .help = "Most messages taken from one peer's fast box per progress call (1: the receiver "
             "does not read the next slot right after a message, which keeps a cache miss off "
             "the ping-pong path)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 7,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "1",
     PX_BTL_SHM_AT(poll_batch)},
    {.name = "fault_in",
     .help = "When the pages of rings larger than 64k are faulted in: lazy (a 64k chunk at a "
             "time, ahead of the sender's and the receiver's position, during the ring's first "
             "pass), setup (every ring at px_init: startup pays for all of them), none (the "
             "kernel, a page at a time, as messages arrive)",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = px_btl_shm_fault_values,
     .info_level = 7,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     PX_BTL_SHM_AT(fault_in)},
    {.name = "dynamic",
     .help = "Serve dynamic peers (processes on this host that are not ranks of the job, added "
             "through the dynamic peer exchange) with a connection segment each; a process with "
             "no other local rank of its job then still gets a btl/shm module, for them only",
     .type = PX_MCA_VAR_TYPE_BOOL,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "true",
     PX_BTL_SHM_AT(dynamic)},
    {.name = "dyn_split",
     .help = "Take split offers from connected peers (processes that connected at run time, "
             "e.g. readers of named segments): copy part of their large reads of our regions "
             "while we progress (btl_shm_cma_split); false: connected readers read alone "
             "(ranks of the job split either way)",
     .type = PX_MCA_VAR_TYPE_BOOL,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "true",
     PX_BTL_SHM_AT(dyn_split)},
    {.name = NULL},
};
#undef PX_BTL_SHM_AT

static int px_btl_shm_register(void)
{
    int rc, first = PX_SUCCESS;
    /* A value that is refused (reported, default kept) does not stop the
     * registration of the others. */
#define SHM_KEEP(expr)                                                                             \
    do {                                                                                           \
        rc = (expr);                                                                               \
        if (rc < 0 && first == PX_SUCCESS)                                                         \
            first = rc;                                                                            \
        if (rc < 0 && rc != PX_ERR_BAD_PARAM)                                                      \
            return rc;                                                                             \
    } while (0)
    SHM_KEEP(px_mca_var_register_table("btl", "shm", px_btl_shm_vars, -1, &px_btl_shm_state));
    /* A fragment's length is 32 bits in its header, and the segment holds
     * btl_shm_free_list_send_max of them: 16M keeps both sane. */
    SHM_KEEP(px_btl_base_module_param_range(&px_btl_shm_component, "eager_limit", "256", "16M"));
    SHM_KEEP(px_btl_base_module_param_range(&px_btl_shm_component, "max_send_size", "1k", "16M"));
    SHM_KEEP(px_btl_base_register_module_params(&px_btl_shm_component, &px_btl_shm_module.super));
#undef SHM_KEEP
    return first;
}

static int px_btl_shm_open(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    PX_OBJ_CONSTRUCT(&s->frags_eager, px_free_list_t);
    PX_OBJ_CONSTRUCT(&s->frags_send, px_free_list_t);
    PX_OBJ_CONSTRUCT(&s->frags_fbox, px_free_list_t);
    s->lists_constructed = true;
    return PX_SUCCESS;
}

static int px_btl_shm_close(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_shm_module_cleanup();
    if (s->lists_constructed) {
        PX_OBJ_DESTRUCT(&s->frags_fbox);
        PX_OBJ_DESTRUCT(&s->frags_send);
        PX_OBJ_DESTRUCT(&s->frags_eager);
        s->lists_constructed = false;
    }
    s->lists_initialized = false;
    return PX_SUCCESS;
}

/* The heap is reserved in steps of this many bytes as the free lists grow. */
#define PX_BTL_SHM_RESERVE_STEP ((size_t)1 << 20)

/* Payload allocator: bump allocation from the segment's heap, whose pages
 * are reserved (posix_fallocate) before the first fragment in them is
 * handed out: px_init reserved the rings and the lists' first growth only
 * (px_btl_shm_heap_first). With no room left the list does not grow (its
 * fragments are reused as they come back, as at btl_shm_free_list_*_max),
 * said once. */
static void *px_btl_shm_heap_alloc(void *ctx, size_t size, size_t align, void **cookie)
{
    (void)ctx;
    px_btl_shm_state_t *s = &px_btl_shm_state;
    size_t off = (s->heap_off + s->heap_used + align - 1) & ~(align - 1);
    if (off + size > s->seg_size)
        return NULL;
    if (off + size > s->reserved) {
        size_t end = (off + size + PX_BTL_SHM_RESERVE_STEP - 1) & ~(PX_BTL_SHM_RESERVE_STEP - 1);
        if (end > s->seg_size)
            end = s->seg_size;
        int e = s->seg_fd >= 0
                    ? px_btl_shm_segment_reserve(s->seg_fd, s->reserved, end - s->reserved)
                    : ENOSPC;
        if (e != 0) {
            if (!s->reserve_warned)
                px_show_warning("btl shm: cannot reserve %zu more bytes of segment %s for "
                                "fragments: %s; this process keeps the fragments it has (%zu "
                                "bytes of its heap), so large messages go with fewer in flight "
                                "(btl_shm_backing_dir names a folder with more room)",
                                end - s->reserved, s->path, strerror(e), s->heap_used);
            s->reserve_warned = true;
            return NULL;
        }
        s->reserved = end;
    }
    s->heap_used = off + size - s->heap_off;
    *cookie = NULL;
    return s->seg + off;
}
static void px_btl_shm_heap_free(void *ctx, void *ptr, size_t size, void *cookie)
{
    (void)ctx;
    (void)ptr;
    (void)size;
    (void)cookie; /* the segment goes away as a whole */
}
static const px_free_list_allocator_t px_btl_shm_heap = {px_btl_shm_heap_alloc,
                                                         px_btl_shm_heap_free, NULL};

static int px_btl_shm_frag_init(px_free_list_item_t *item, void *ctx)
{
    px_btl_shm_frag_t *f = (px_btl_shm_frag_t *)item;
    px_btl_shm_state_t *s = &px_btl_shm_state;
    f->list = ctx;
    f->fb_esz = 0;
    if (ctx == &s->frags_fbox) { /* data lives in a fast box entry */
        f->hdr = NULL;
        f->capacity = 0;
        f->base.des_segments = &f->segment;
        f->base.des_segment_count = 1;
        return PX_SUCCESS;
    }
    f->capacity = (ctx == &s->frags_eager) ? px_btl_shm_module.super.btl_eager_limit
                                           : px_btl_shm_module.super.btl_max_send_size;
    f->hdr = item->payload;
    if (NULL == f->hdr)
        return PX_ERR_OUT_OF_RESOURCE;
    f->rel = ((uint64_t)s->my_idx << 48) | (uint64_t)((char *)f->hdr - s->seg);
    /* A peer hands a fragment back by its header: des is the fragment's
     * index in frag_table, looked up (and checked) instead of followed. */
    if (s->frag_count >= s->frag_cap)
        return PX_ERR_OUT_OF_RESOURCE;
    f->queued = false;
    s->frag_table[s->frag_count] = f;
    f->index = (uint32_t)s->frag_count++;
    f->hdr->des = f->index;
    f->hdr->src = (uint16_t)s->my_idx;
    f->segment.seg_addr = (char *)f->hdr + PX_BTL_SHM_FRAG_HDR;
    f->segment.seg_len = 0;
    f->base.des_segments = &f->segment;
    f->base.des_segment_count = 1;
    return PX_SUCCESS;
}

static int px_btl_shm_lists_init(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_module_t *m = &px_btl_shm_module.super;
    struct {
        px_free_list_t *list;
        size_t cap;
        int max;
    } l[2] = {{&s->frags_eager, m->btl_eager_limit, s->free_list_eager_max},
              {&s->frags_send, m->btl_max_send_size, s->free_list_send_max}};
    s->frag_cap = s->free_list_eager_max + s->free_list_send_max;
    s->frag_count = 0;
    s->frag_table = calloc((size_t)s->frag_cap, sizeof *s->frag_table);
    if (!s->frag_table)
        return PX_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < 2; i++) {
        size_t grow = i == 0 ? 16 : 4;
        px_free_list_params_t p = {
            .item_class = PX_CLASS(px_btl_shm_frag_t),
            .payload_size = PX_BTL_SHM_FRAG_HDR + 64 + l[i].cap, /* + room to align */
            .payload_alignment = 64,
            /* one growth now, inside what px_init reserved (seg_size's
             * comment): each list has fragments even when the folder has no
             * room for more later; none without a job segment (dynamic
             * peers only: no heap) */
            .num_initial = s->seg ? ((size_t)l[i].max < grow ? (size_t)l[i].max : grow) : 0,
            .num_max = (size_t)l[i].max,
            .num_per_grow = grow,
            .payload_allocator = &px_btl_shm_heap,
            .item_init = px_btl_shm_frag_init,
            .item_init_ctx = l[i].list,
            .thread_safe = false,
        };
        int rc = px_free_list_init(l[i].list, &p);
        if (rc != PX_SUCCESS)
            return rc;
    }
    px_free_list_params_t p = {
        .item_class = PX_CLASS(px_btl_shm_frag_t),
        .num_initial = 4,
        .num_max = 0,
        .num_per_grow = 16,
        .item_init = px_btl_shm_frag_init,
        .item_init_ctx = &s->frags_fbox,
        .thread_safe = false,
    };
    int rc = px_free_list_init(&s->frags_fbox, &p);
    if (rc != PX_SUCCESS)
        return rc;
    s->cool_cap = s->free_list_send_max;
    s->cool_count = s->cool_head = 0;
    s->cool_bytes = 0;
    s->cool = calloc((size_t)s->cool_cap, sizeof(*s->cool));
    if (!s->cool)
        return PX_ERR_OUT_OF_RESOURCE;
    s->lists_initialized = true;
    return PX_SUCCESS;
}

static bool is_pow2(size_t x)
{
    return x && !(x & (x - 1));
}

/* A module for dynamic peers only (btl_shm_dynamic): no job segment, no
 * fragment heap, no shareable memory; add_procs reaches no rank. */
static px_btl_module_t **px_btl_shm_init_dyn_only(int *num_modules)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_module_t *m = &px_btl_shm_module.super;
    s->dyn_only = true;
    s->nlocal = 0;
    s->my_idx = -1;
    s->my_rank = px_boot ? px_boot->rank : 0;
    s->seg = NULL;
    s->seg_size = 0;
    s->my_fifo = NULL;
    s->nactive = 0;
    m->btl_flags &= ~PX_BTL_FLAGS_MEM_MAP;
    if (!s->lists_constructed)
        px_btl_shm_open();
    if (px_btl_shm_lists_init() != PX_SUCCESS || px_btl_shm_module_setup() != PX_SUCCESS) {
        px_btl_shm_module_cleanup();
        return NULL;
    }
    /* Polled only while it has a dynamic peer (shm_dyn.c registers it). */
    m->btl_progress = NULL;
    px_btl_module_t **mods = malloc(sizeof *mods);
    if (!mods)
        return NULL;
    mods[0] = m;
    *num_modules = 1;
    PX_OUTPUT_VERBOSE(10, px_btl_base_framework.output,
                      "btl shm: no other local rank of this job: serving dynamic peers only "
                      "(btl_shm_dynamic)");
    return mods;
}

static px_btl_module_t **px_btl_shm_init(int *num_modules, bool enable_progress_threads)
{
    (void)enable_progress_threads;
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_module_t *m = &px_btl_shm_module.super;
    *num_modules = 0;
    s->dyn_only = false;
    if (NULL == px_boot || px_boot->size < 2)
        return s->dynamic ? px_btl_shm_init_dyn_only(num_modules) : NULL; /* no job peer */
    if (s->fbox_size_var != 0 &&
        (!is_pow2(s->fbox_size_var) || s->fbox_size_var < 4096 || s->fbox_size_var > (16u << 20))) {
        px_show_error("btl shm: btl_shm_fbox_size %zu is not a power of two from 4096 to 16M "
                      "(or 0: auto)",
                      s->fbox_size_var);
        return NULL;
    }
    if (m->btl_eager_limit < 256)
        m->btl_eager_limit = 256;
    if (m->btl_max_send_size < m->btl_eager_limit)
        m->btl_max_send_size = m->btl_eager_limit;
    if (s->free_list_eager_max < 8)
        s->free_list_eager_max = 8;
    if (s->free_list_send_max < 2)
        s->free_list_send_max = 2;

    /* Local indices: the ranks boot says share this host, in rank order. */
    int size = px_boot->size;
    s->local_index = malloc((size_t)size * sizeof(int));
    if (!s->local_index)
        return NULL;
    s->nlocal = 0;
    s->my_rank = px_boot->rank;
    for (int r = 0; r < size; r++) {
        uint32_t loc = px_boot->locality(r);
        s->local_index[r] = (loc & (PX_PROC_LOCAL_HOST | PX_PROC_LOCAL_SELF)) ? s->nlocal++ : -1;
    }
    s->my_idx = s->local_index[s->my_rank];
    if (s->nlocal < 2 || s->my_idx < 0 || s->nlocal > 65535) {
        free(s->local_index);
        s->local_index = NULL;
        s->nlocal = 0;
        /* no local peer of the job */
        return s->dynamic ? px_btl_shm_init_dyn_only(num_modules) : NULL;
    }
    /* auto: every local process computes the same from nlocal */
    s->fbox_size = s->fbox_size_var ? s->fbox_size_var : px_btl_shm_auto_fbox_size(s->nlocal);
    if (s->fbox_max_send > s->fbox_size / 4)
        s->fbox_max_send = s->fbox_size / 4;
    /* An entry's size / 64 travels in 16 bits; an entry is the message, its
     * 8-byte header, up to 127 bytes of lead and the rounding to a line. */
    if (s->fbox_max_send > PX_BTL_SHM_FBOX_MAX_ENTRY - 192)
        s->fbox_max_send = PX_BTL_SHM_FBOX_MAX_ENTRY - 192;
    if (s->fbox_stream_max == 0 || s->fbox_stream_max > s->fbox_max_send)
        s->fbox_stream_max = s->fbox_max_send;

    /* Segment: header/fifo/acks, rings, heap. */
    s->heap_off = px_btl_shm_off_fbox(s->nlocal, s->fbox_size, s->nlocal);
    size_t heap =
        (size_t)s->free_list_eager_max * (PX_BTL_SHM_FRAG_HDR + m->btl_eager_limit + 128) +
        (size_t)s->free_list_send_max * (PX_BTL_SHM_FRAG_HDR + m->btl_max_send_size + 128) + 65536;
    s->seg_size = (s->heap_off + heap + 4095) & ~(size_t)4095;
    s->heap_used = 0;
    /* Reserved at px_init: the header, the rings, and the heap's first
     * growth of both lists (16 eager, 4 pipeline fragments, which
     * px_btl_shm_lists_init makes at once, with room to align), so every
     * list has fragments whatever the folder's room later. The rest
     * is reserved as the lists grow (px_btl_shm_heap_alloc): a job whose
     * messages fit the fast boxes never reserves it (6-10 MB per process,
     * and pxrun -n 8's startup spent 35 ms in these reservations). */
    size_t first = 16 * (PX_BTL_SHM_FRAG_HDR + 128 + m->btl_eager_limit + 64) +
                   4 * (PX_BTL_SHM_FRAG_HDR + 128 + m->btl_max_send_size + 64) + 65536;
    s->reserved =
        (s->heap_off + first + PX_BTL_SHM_RESERVE_STEP - 1) & ~(PX_BTL_SHM_RESERVE_STEP - 1);
    if (s->reserved > s->seg_size)
        s->reserved = s->seg_size;
    s->reserve_warned = false;
    const char *bdir = s->backing_dir && *s->backing_dir ? s->backing_dir : "/dev/shm";
    struct statvfs fs;
    if (statvfs(bdir, &fs) == 0 && fs.f_frsize > 0 &&
        s->seg_size / fs.f_frsize > (size_t)fs.f_bavail) {
        /* The segment file is sparse, but touching pages beyond what the
         * file system holds would kill the process with SIGBUS. */
        px_show_error("btl shm: the segment would need %zu bytes, more than the %llu free in %s "
                      "(btl_shm_backing_dir): %d rings of btl_shm_fbox_size %zu + "
                      "btl_shm_free_list_eager_max %d x btl_shm_eager_limit %zu + "
                      "btl_shm_free_list_send_max %d x btl_shm_max_send_size %zu; lower them",
                      s->seg_size, (unsigned long long)fs.f_bavail * fs.f_frsize, bdir, s->nlocal,
                      s->fbox_size, s->free_list_eager_max, m->btl_eager_limit,
                      s->free_list_send_max, m->btl_max_send_size);
        free(s->local_index);
        s->local_index = NULL;
        return NULL;
    }
    if (getrandom(&s->key, sizeof s->key, 0) != sizeof s->key)
        s->key = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&s->key ^ 0x9e3779b97f4a7c15ULL;
    const char *bd = s->backing_dir && *s->backing_dir ? s->backing_dir : "/dev/shm";
    /* The folder is named after the job id; one too long for a file name's
     * share of the path (a PMIx namespace may have 255 characters) or holding
     * a '/' is named after its hash instead. */
    const char *jid = px_boot->jobid;
    char jname[24];
    if (strlen(jid) > 64 || strchr(jid, '/') || !*jid || *jid == '.') {
        snprintf(jname, sizeof jname, "h%016llx", (unsigned long long)px_btl_shm_job_hash(jid));
        jid = jname;
    }
    if (snprintf(s->dir, sizeof s->dir, "%s/plexus-%u-%s", bd, (unsigned)getuid(), jid) >=
            (int)sizeof s->dir ||
        snprintf(s->path, sizeof s->path, "%s/seg-%d", s->dir, s->my_rank) >= (int)sizeof s->path) {
        px_show_error("btl shm: segment path too long (btl_shm_backing_dir %s)", bd);
        return NULL;
    }
    /* create reserves the header; here the rings of the other local
     * processes (this process's own slot is never written) and the heap's
     * first part. */
    size_t ring0 = px_btl_shm_off_fbox(s->nlocal, s->fbox_size, 0);
    int rc = px_btl_shm_segment_create(s->dir, s->path, s->seg_size, ring0, px_boot->jobid, s->key,
                                       s->my_rank, s->nlocal, s->fbox_size, &s->seg, &s->seg_fd);
    if (rc != PX_SUCCESS)
        return NULL;
    if (s->seg_fd < 0) {
        s->reserved = s->seg_size; /* create reserved it all */
    } else {
        size_t mine = px_btl_shm_off_fbox(s->nlocal, s->fbox_size, s->my_idx);
        size_t after = mine + s->fbox_size;
        int e = px_btl_shm_segment_reserve(s->seg_fd, ring0, mine - ring0);
        if (e == 0)
            e = px_btl_shm_segment_reserve(s->seg_fd, after, s->reserved - after);
        if (e != 0) {
            px_btl_shm_segment_no_room(s->dir, s->path, s->reserved - s->fbox_size, e, s->nlocal);
            px_btl_shm_module_cleanup();
            return NULL;
        }
    }
    if (s->fbox_size > PX_BTL_SHM_FBOX_AUTO_MIN && s->fault_in == PX_BTL_SHM_FAULT_SETUP) {
        /* the incoming rings, not our own slot (lazy: shm_module.c) */
        char *r0 = s->seg + px_btl_shm_off_fbox(s->nlocal, s->fbox_size, 0);
        px_btl_shm_populate(r0, (size_t)s->my_idx * s->fbox_size);
        px_btl_shm_populate(r0 + (size_t)(s->my_idx + 1) * s->fbox_size,
                            (size_t)(s->nlocal - 1 - s->my_idx) * s->fbox_size);
    }
    s->unlinked = false;
    s->queue_broken = false;
    s->quiet_polls = 0;
    s->next_check_ns = 0;
    s->my_fifo = (px_btl_shm_fifo_t *)(s->seg + px_btl_shm_off_fifo());
    s->bases = calloc((size_t)s->nlocal, sizeof(char *));
    s->sizes = calloc((size_t)s->nlocal, sizeof(size_t));
    s->by_idx = calloc((size_t)s->nlocal, sizeof(*s->by_idx));
    s->active = calloc((size_t)s->nlocal, sizeof(*s->active));
    if (!s->bases || !s->sizes || !s->by_idx || !s->active)
        return NULL;
    s->bases[s->my_idx] = s->seg;
    s->sizes[s->my_idx] = s->seg_size;
    s->nactive = 0;
    if (!s->lists_constructed)
        px_btl_shm_open();
    if (px_btl_shm_lists_init() != PX_SUCCESS) {
        px_show_warning("btl shm: cannot carve fragments from the segment (%zu bytes)",
                        s->seg_size);
        px_btl_shm_module_cleanup();
        return NULL;
    }
    if (px_btl_shm_module_setup() != PX_SUCCESS) {
        px_btl_shm_module_cleanup();
        return NULL;
    }
    px_btl_module_t **mods = malloc(sizeof *mods);
    if (!mods)
        return NULL;
    mods[0] = m;
    *num_modules = 1;
    return mods;
}

static int px_btl_shm_modex_send(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_shm_modex_t mx;
    memset(&mx, 0, sizeof mx);
    mx.key = s->key;
    mx.size = s->seg_size;
    mx.vaddr = (uint64_t)(uintptr_t)s->seg;
    mx.pid = (int32_t)getpid();
    mx.local_index = s->my_idx;
    if (strlen(s->path) >= sizeof mx.path)
        return PX_ERR_BAD_PARAM;
    memcpy(mx.path, s->path, strlen(s->path) + 1);
    return px_boot_modex_send(&px_btl_shm_component.base, &mx, sizeof mx);
}

const px_btl_component_t px_btl_shm_component = {
    .base = PX_BTL_COMPONENT_HEADER("shm", 1, 0, 0, px_btl_shm_register, px_btl_shm_open,
                                    px_btl_shm_close),
    .btl_init = px_btl_shm_init,
    .btl_modex_send = px_btl_shm_modex_send,
    /* Not thread-safe: one consumer drains its receive FIFO, and its
     * fragment free lists, fast boxes and pending queues have no locks; the
     * base serializes it at PX_THREAD_MULTIPLE (docs/threads.md). */
    .btl_thread_support = PX_BTL_THREADS_SERIALIZED,
};

/* The module's teardown: dynamic peers, shareable memory, the peers' mappings, the
 * fragment lists and the segment. */
void px_btl_shm_module_cleanup(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_shm_dyn_cleanup();
    px_btl_shm_xfer_cleanup();
    if (s->by_idx) {
        for (int i = 0; i < s->nlocal; i++)
            if (s->by_idx[i]) {
                munmap(s->by_idx[i]->seg, s->by_idx[i]->seg_size);
                if (s->by_idx[i]->lockfd >= 0)
                    close(s->by_idx[i]->lockfd);
                free(s->by_idx[i]);
            }
    }
    free(s->by_idx);
    free(s->active);
    s->by_idx = s->active = NULL;
    s->nactive = 0;
    /* The lists and the cooling queue exist with or without a job segment
     * (a module for dynamic peers only has none). */
    while (s->cool && s->cool_count) {
        px_btl_shm_frag_t *f = px_btl_shm_cool_pop(s);
        px_free_list_return(f->list, &f->base.super);
    }
    free(s->cool);
    s->cool = NULL;
    s->cool_cap = s->cool_count = s->cool_head = 0;
    if (s->lists_constructed && s->lists_initialized) {
        /* Items point into the segment: destroy the lists before unmapping. */
        PX_OBJ_DESTRUCT(&s->frags_fbox);
        PX_OBJ_DESTRUCT(&s->frags_send);
        PX_OBJ_DESTRUCT(&s->frags_eager);
        PX_OBJ_CONSTRUCT(&s->frags_eager, px_free_list_t);
        PX_OBJ_CONSTRUCT(&s->frags_send, px_free_list_t);
        PX_OBJ_CONSTRUCT(&s->frags_fbox, px_free_list_t);
        s->lists_initialized = false;
    }
    if (s->seg) {
        /* Leaving in order: peers that see the lock go will not report us. */
        atomic_store_explicit(&((px_btl_shm_seg_hdr_t *)s->seg)->departed, 1, memory_order_release);
        munmap(s->seg, s->seg_size);
        s->seg = NULL;
        s->my_fifo = NULL;
        if (s->seg_fd >= 0)
            close(s->seg_fd);
        s->seg_fd = -1;
        char *slash = strrchr(s->path, '/');
        if (slash && px_btl_shm_dir_fd() >= 0) /* when some peer never attached */
            unlinkat(px_btl_shm_dir_fd(), slash + 1, 0);
        px_btl_shm_dir_release(); /* the last user of the folder removes it */
    }
    free(s->bases);
    s->bases = NULL;
    free(s->sizes);
    s->sizes = NULL;
    free(s->frag_table);
    s->frag_table = NULL;
    s->frag_count = s->frag_cap = 0;
    free(s->local_index);
    s->local_index = NULL;
}
