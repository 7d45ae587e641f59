/*
 * btl.h: the byte transfer layer interface. A BTL component (self, shm, verbs,
 * ofi) returns one or more modules from its init; each module moves bytes to
 * the peers it reaches: active-message sends with an 8-bit tag, and RDMA
 * put/get on registered memory. The runtime reaches transports only through
 * this interface and the per-peer table of frameworks/btl/base/base_runtime.h.
 *
 * Ownership: a descriptor from btl_alloc/btl_prepare_src belongs to the caller
 * until passed to btl_send; after the send, PX_BTL_DES_FLAGS_BTL_OWNERSHIP says
 * the BTL frees it on completion, otherwise the completion callback gets it
 * back and the caller frees it with btl_free. A received segment is valid
 * only during the active-message callback.
 */
#ifndef PX_BTL_H
#define PX_BTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "core/util/compiler.h"
#include "core/class/bitmap.h"
#include "core/class/free_list.h"
#include "core/mca/component.h"
#include "core/util/proc.h"

/* The interface's version (docs/writing-a-component.md, "Compatibility"):
 * a component built for 3.m loads into a library with 3.n for n >= m; methods
 * added in a minor go at the end of px_btl_module_t and the base calls one
 * only when the module's btl_size covers it (PX_BTL_MODULE_HAS).
 * 3.5.1: the put/get flag PX_BTL_RDMA_FLAG_ASYNC (set by the caller; a module
 *      that does not know it ignores it, so the minor stays).
 * 3.5: PX_BTL_FLAGS_DYN_EXT (dynamic-peer part extensions).
 * 3.4: thread support (btl_thread_support in px_btl_component_t, read only from
 *      components built for 3.4 or later): PX_BTL_THREADS_MULTIPLE says the
 *      component's modules take calls from several threads at once; any
 *      other component (every older plugin) is serialized by the base when
 *      the process runs at PX_THREAD_MULTIPLE (px_btl_base_serialize).
 * 3.3: dynamic peers (btl_dyn_offer, btl_dyn_accept, btl_dyn_complete,
 *      btl_dyn_remove): a peer that is not a rank of the job, added from an
 *      address blob exchanged by another channel; the base's px_btl_base_dyn_*
 *      skip a module without them (it does not serve dynamic peers).
 * 3.2: shareable memory for the transfer engine (btl_mem_alloc, btl_mem_free,
 *      btl_mem_map, btl_mem_unmap; flag PX_BTL_FLAGS_MEM_MAP) and
 *      PX_BTL_FLAGS_XFER_RDMA (put/get offered to one-sided transfers only);
 *      the base's px_btl_base_mem_* refuse a module without them.
 * 3.1: btl_put_v and btl_get_v (vector RDMA); the base loops btl_put/btl_get
 *      for a module without them (px_btl_base_put_v/get_v).
 * 3.0: px_btl_module_t starts with btl_size; component headers carry a build
 *      fingerprint (PX_BTL_COMPONENT_HEADER).
 * 2.0: btl_init lost its enable_mpi_threads argument. */
#define PX_BTL_API_MAJOR   3
#define PX_BTL_API_MINOR   5
#define PX_BTL_API_RELEASE 1

/* Exclusivity: the highest exclusivity that reaches a peer wins it. */
#define PX_BTL_EXCLUSIVITY_HIGH    0x10000 /* self */
#define PX_BTL_EXCLUSIVITY_DEFAULT 0x400   /* network transports */
#define PX_BTL_EXCLUSIVITY_LOW     0x100

/* Module flags */
#define PX_BTL_FLAGS_SEND         0x0001u /* active-message send */
#define PX_BTL_FLAGS_PUT          0x0002u /* RDMA write */
#define PX_BTL_FLAGS_GET          0x0004u /* RDMA read */
#define PX_BTL_FLAGS_SEND_INPLACE 0x0008u /* prepare_src can reference user memory */
#define PX_BTL_FLAGS_SINGLE_COPY  0x0010u /* put/get copy directly between processes */
#define PX_BTL_FLAGS_NEEDS_REG    0x0020u /* put/get need register_mem handles */
/* 3.2: btl_mem_alloc/free/map/unmap work: memory a peer the module reaches
 * maps into its own address space (a same-host transport). */
#define PX_BTL_FLAGS_MEM_MAP 0x0040u
/* 3.2: btl_put/btl_get work for one-sided transfers between registered
 * regions (runtime/plexus_xfer.h) even when PUT/GET are not set, i.e. the
 * module keeps them from the messaging layer's rendezvous (btl/shm's
 * process_vm_readv/writev under btl_shm_single_copy=none). */
#define PX_BTL_FLAGS_XFER_RDMA 0x0080u
/* The module's dynamic peer parts (btl_dyn_offer, _accept, _complete) have
 * an extension: data that a peer built before it must not see (its parser
 * refuses bytes it does not know). The part the module writes, and the one
 * it is handed, is then laid out as
 *   u16 n (little endian) | n bytes: the part proper | the extension
 * (the extension may be empty). The base sends the part proper as the
 * module's part and a non-empty extension as a part of its own (module
 * index + PX_BTL_DYN_EXT_INDEX, base_runtime.h), which a base that does not
 * know it skips; it hands the module the peer's part proper and extension
 * (empty when the peer sent none: an older peer) the same way. So an older
 * peer reads exactly the part it knows, and a newer one learns more. A
 * module without the flag writes and reads its part as it is. */
#define PX_BTL_FLAGS_DYN_EXT 0x0100u
#define PX_BTL_FLAGS_RDMA    (PX_BTL_FLAGS_PUT | PX_BTL_FLAGS_GET)

/* btl_put/btl_get flags. PX_BTL_RDMA_FLAG_RNDV: the first call (first
 * chunk) of a messaging rendezvous, which can still move the data by
 * fragments; later chunks pass 0 and must be taken. A module may
 * decline a transfer it moves worse than fragments (PX_ERR_NOT_SUPPORTED,
 * before any byte moved; btl/shm by size, btl_shm_single_copy=auto). A
 * module that does not know the flag ignores it. */
#define PX_BTL_RDMA_FLAG_RNDV 0x1
/* 3.5.1: PX_BTL_RDMA_FLAG_ASYNC: the caller takes the completion from the
 * callback whenever it runs, from btl_progress as well (the transfer
 * engine). Without it a module whose put/get complete before they return
 * (btl/shm's single copy) keeps doing so, which a caller may rely on
 * (coll/sm); with it, such a module may return before the transfer is done
 * and finish it in progress (btl/shm splits a large get with the peer). A
 * module that does not know the flag ignores it. */
#define PX_BTL_RDMA_FLAG_ASYNC 0x2

/* Descriptor flags */
#define PX_BTL_DES_FLAGS_BTL_OWNERSHIP  0x0001u /* the BTL frees it after the send */
#define PX_BTL_DES_FLAGS_PRIORITY       0x0002u
#define PX_BTL_DES_SEND_ALWAYS_CALLBACK 0x0004u /* run des_cbfunc even on immediate completion */

/* Active-message tags: 0..127 for the runtime, 128..255 for users. */
typedef uint8_t px_btl_tag_t;
#define PX_BTL_TAG_RUNTIME_MIN 0
#define PX_BTL_TAG_RUNTIME_MAX 127
#define PX_BTL_TAG_USER_MIN    128
#define PX_BTL_TAG_USER_MAX    255

#define PX_BTL_NO_ORDER 0xff

struct px_btl_module;
/* Component-defined per-peer state. */
typedef struct px_btl_endpoint px_btl_endpoint_t;
/* Module-defined memory registration; its size is btl_registration_handle_size
 * so the runtime can ship a handle to the peer as bytes. */
typedef struct px_btl_registration_handle px_btl_registration_handle_t;

typedef struct px_btl_segment {
    void *seg_addr;
    size_t seg_len;
} px_btl_segment_t;

struct px_btl_descriptor;
typedef void (*px_btl_completion_fn)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint,
                                     struct px_btl_descriptor *des, int status);

/* A send descriptor: the first segment starts with `reserve` bytes for the
 * caller's header. */
typedef struct px_btl_descriptor {
    px_free_list_item_t super;
    px_btl_segment_t *des_segments;
    size_t des_segment_count;
    px_btl_completion_fn des_cbfunc;
    void *des_cbdata;
    void *des_context;
    uint32_t des_flags;
    uint8_t order;
} px_btl_descriptor_t;
PX_EXPORT PX_CLASS_DECLARATION(px_btl_descriptor_t);

/* What an active-message callback receives. */
typedef struct px_btl_receive_descriptor {
    px_btl_endpoint_t *endpoint; /* the sender, as this module knows it */
    int src_rank;                /* the sender's rank */
    const px_btl_segment_t *des_segments;
    size_t des_segment_count;
    px_btl_tag_t tag;
    void *cbdata; /* as registered */
} px_btl_receive_descriptor_t;

typedef void (*px_btl_active_message_fn)(struct px_btl_module *btl,
                                         const px_btl_receive_descriptor_t *desc);
typedef struct px_btl_active_message_callback {
    px_btl_active_message_fn cbfunc;
    void *cbdata;
} px_btl_active_message_callback_t;
/* Indexed by tag; components dispatch through it on receive. Exported on
 * purpose: plugins read it directly (docs/writing-a-component.md). */
PX_EXPORT extern px_btl_active_message_callback_t px_btl_base_active_message_trigger[256];

/* RDMA completion. */
typedef void (*px_btl_rdma_completion_fn)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint,
                                          void *local_address,
                                          px_btl_registration_handle_t *local_handle, void *context,
                                          void *cbdata, int status);

/* Transport error reported from progress: the runtime fails the requests of
 * the peer (endpoint may be NULL for a module-wide failure). */
typedef void (*px_btl_error_fn)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint, int rank,
                                int error, const char *description);

/* A contiguous or iovec source for prepare_src and pipelined sends. */
typedef struct px_btl_convertor {
    const struct iovec *iov;
    size_t iovcnt;
    size_t total;        /* bytes in all of iov */
    size_t position;     /* bytes already packed */
    struct iovec single; /* storage for the contiguous case */
} px_btl_convertor_t;

static inline void px_btl_convertor_init_contig(px_btl_convertor_t *c, const void *buf, size_t len)
{
    c->single.iov_base = (void *)buf;
    c->single.iov_len = len;
    c->iov = &c->single;
    c->iovcnt = 1;
    c->total = len;
    c->position = 0;
}
static inline bool px_btl_convertor_is_contiguous(const px_btl_convertor_t *c)
{
    return c->iovcnt <= 1;
}
/* Address of the next byte when contiguous. */
static inline void *px_btl_convertor_current(const px_btl_convertor_t *c)
{
    return (char *)c->single.iov_base + c->position;
}
/* Copy up to `max` bytes from the current position into dst; returns bytes packed. */
PX_EXPORT size_t px_btl_convertor_pack(px_btl_convertor_t *c, void *dst, size_t max);
/* The body of a btl_prepare_src that copies into a fragment: pack as much of
 * `c` as fits in `limit` bytes after `reserve` header bytes into seg->seg_addr
 * (room for `limit` bytes); seg->seg_len becomes reserve + the bytes packed,
 * and *size the bytes packed. The caller has checked reserve <= limit. */
static inline void px_btl_convertor_pack_segment(px_btl_convertor_t *c, px_btl_segment_t *seg,
                                                 size_t reserve, size_t limit, size_t *size)
{
    size_t room = limit - reserve, want = *size < room ? *size : room;
    *size = want ? px_btl_convertor_pack(c, (char *)seg->seg_addr + reserve, want) : 0;
    seg->seg_len = reserve + *size;
}

/* One piece of a vector put/get: `size` bytes between local_address and
 * remote_address (3.1). */
typedef struct px_btl_rdma_segment {
    void *local_address;
    uint64_t remote_address;
    size_t size;
} px_btl_rdma_segment_t;

/* A vector put/get (3.1): `count` segments to one endpoint under one pair of
 * registration handles, each within btl_put_limit/btl_get_limit and its
 * alignment. cbfunc (may be NULL) runs once, when every segment is complete,
 * with segs[0].local_address and the first error (PX_SUCCESS when none); the
 * array must stay valid until then. An error return means that nothing was
 * started and cbfunc will not run. */
typedef int (*px_btl_rdma_v_fn)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint,
                                const px_btl_rdma_segment_t *segs, size_t count,
                                px_btl_registration_handle_t *local_handle,
                                px_btl_registration_handle_t *remote_handle, int flags, int order,
                                px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata);

/* Shareable memory (3.2): a block that this process allocates with
 * btl_mem_alloc and a peer maps with btl_mem_map, after the allocator sent
 * it `desc` (desc_len bytes) by any means. Both then reach the same bytes with
 * loads and stores. */
#define PX_BTL_MEM_DESC_MAX 128
typedef struct px_btl_mem {
    void *base;  /* where this process reaches the memory (page-aligned) */
    size_t size; /* usable bytes from base */
    void *priv;  /* the module's */
    uint32_t desc_len;
    unsigned char desc[PX_BTL_MEM_DESC_MAX]; /* alloc: what a peer's btl_mem_map needs */
} px_btl_mem_t;

/* Dynamic peers (3.3). A dynamic peer is a process that is not a rank of
 * this job (started separately); it is added in two phases through an
 * opaque blob that some other channel carries each way:
 *   connector: btl_dyn_offer      -> its part of the offer
 *   acceptor:  btl_dyn_accept     <- the connector's part, -> its reply part
 *   connector: btl_dyn_complete   <- the acceptor's reply part
 *   both:      btl_dyn_remove     (at any point after offer/accept)
 * The base (px_btl_base_dyn_*, base.h) frames the parts of every module into
 * one payload and parses it as untrusted input; a module sees only its own
 * part, at most PX_BTL_DYN_PART_MAX bytes, which it must still check (the
 * peer may be anyone who reached the channel). An active message from a
 * dynamic peer has src_rank PX_BTL_RANK_DYNAMIC and, as endpoint, the
 * endpoint this module returned for that peer. */
#define PX_BTL_DYN_PART_MAX   2048 /* bytes of one module's part */
#define PX_BTL_DYN_REASON_MAX 256  /* bytes of a reason buffer, with the NUL */
#define PX_BTL_RANK_DYNAMIC   (-1) /* src_rank of a message from a dynamic peer */

typedef struct px_btl_module {
    /* sizeof(px_btl_module_t) where the module was built: PX_BTL_MODULE_SIZE.
     * 0 is taken as the size for the API minor its component was built for. */
    size_t btl_size;
    const struct px_btl_component *btl_component;
    /* Figures, each also a variable btl_<name>_<field>: */
    uint32_t btl_exclusivity;
    uint32_t btl_latency;     /* ns, lower wins the eager role */
    uint32_t btl_bandwidth;   /* MB/s, the weight for striping */
    size_t btl_eager_limit;   /* largest eager message including headers */
    size_t btl_max_send_size; /* largest fragment for pipelined sends */
    size_t btl_put_limit, btl_put_alignment;
    size_t btl_get_limit, btl_get_alignment;
    uint32_t btl_flags;
    size_t btl_registration_handle_size;

    /* Fill endpoints[i] and set bit i (index into procs) in `reachable` for
     * every peer this module reaches; for a peer it does not reach, it may
     * set reasons[i] to a string it owns explaining why. */
    int (*btl_add_procs)(struct px_btl_module *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                         const char **reasons);
    int (*btl_del_procs)(struct px_btl_module *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints);
    /* Release the module (after del_procs). */
    int (*btl_finalize)(struct px_btl_module *btl);

    /* A descriptor with room for `size` bytes; NULL when out of resources. */
    px_btl_descriptor_t *(*btl_alloc)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint,
                                      uint8_t order, size_t size, uint32_t flags);
    int (*btl_free)(struct px_btl_module *btl, px_btl_descriptor_t *des);
    /* A descriptor of `reserve` header bytes followed by up to *size bytes of
     * data from `conv` (referenced when contiguous and the module can, packed
     * otherwise); *size is set to the data bytes taken. */
    px_btl_descriptor_t *(*btl_prepare_src)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint,
                                            px_btl_convertor_t *conv, uint8_t order, size_t reserve,
                                            size_t *size, uint32_t flags);
    /* Send; returns 1 when completed in place (no callback unless
     * PX_BTL_DES_SEND_ALWAYS_CALLBACK), 0 when started, or an error. */
    int (*btl_send)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint,
                    px_btl_descriptor_t *des, px_btl_tag_t tag);
    /* Send header+payload now without allocating; PX_ERR_TEMP_OUT_OF_RESOURCE
     * when it cannot (then *descriptor may hold one to use instead). May be NULL. */
    int (*btl_sendi)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint, const void *header,
                     size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                     uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor);

    /* RDMA: write local -> remote / read remote -> local. NULL when unsupported.
     * `flags`: 0, PX_BTL_RDMA_FLAG_RNDV and/or PX_BTL_RDMA_FLAG_ASYNC. */
    int (*btl_put)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint, void *local_address,
                   uint64_t remote_address, px_btl_registration_handle_t *local_handle,
                   px_btl_registration_handle_t *remote_handle, size_t size, int flags, int order,
                   px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata);
    int (*btl_get)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint, void *local_address,
                   uint64_t remote_address, px_btl_registration_handle_t *local_handle,
                   px_btl_registration_handle_t *remote_handle, size_t size, int flags, int order,
                   px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata);
    /* NULL when the module needs no registration. */
    px_btl_registration_handle_t *(*btl_register_mem)(struct px_btl_module *btl,
                                                      px_btl_endpoint_t *endpoint, void *base,
                                                      size_t size, uint32_t flags);
    int (*btl_deregister_mem)(struct px_btl_module *btl, px_btl_registration_handle_t *handle);
    /* Wait until every operation to `endpoint` (NULL: all) is complete. */
    int (*btl_flush)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint);
    /* Poll; returns the number of events handled. May be NULL. */
    int (*btl_progress)(struct px_btl_module *btl);
    /* Install the runtime's error callback. */
    int (*btl_register_error)(struct px_btl_module *btl, px_btl_error_fn cbfunc);

    /* ---- 3.1: called only when btl_size covers them (PX_BTL_MODULE_HAS);
     * callers go through px_btl_base_put_v/get_v. ---- */
    /* Vector RDMA write / read; NULL: the base loops btl_put/btl_get. */
    px_btl_rdma_v_fn btl_put_v;
    px_btl_rdma_v_fn btl_get_v;

    /* ---- 3.2: called only when btl_size covers them (PX_BTL_MODULE_HAS);
     * callers go through px_btl_base_mem_* (base_runtime.h). ---- */
    /* Allocate `size` bytes (rounded up to whole pages) of memory that a peer
     * this module reaches on the same host can map: fills mem (base, size,
     * desc, priv). PX_ERR_OUT_OF_RESOURCE (with a message saying why) when
     * it cannot. Any thread may use the memory; the call itself follows the
     * module's threading (one caller at a time). */
    int (*btl_mem_alloc)(struct px_btl_module *btl, size_t size, px_btl_mem_t *mem);
    /* Free what btl_mem_alloc gave; peers' mappings stay valid until they
     * unmap, but a new btl_mem_map of its desc fails. */
    int (*btl_mem_free)(struct px_btl_module *btl, px_btl_mem_t *mem);
    /* Map the memory `desc` describes, allocated by the peer at `endpoint`:
     * fills map (base, size, priv). PX_ERR_BAD_PARAM with a message when the
     * description is not one of this job's (wrong key, size, owner). */
    int (*btl_mem_map)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint, const void *desc,
                       size_t desc_len, px_btl_mem_t *map);
    int (*btl_mem_unmap)(struct px_btl_module *btl, px_btl_mem_t *map);

    /* ---- 3.3: dynamic peers; called only when btl_size covers them
     * (PX_BTL_MODULE_HAS); callers go through px_btl_base_dyn_* (base.h).
     * Each method that does not reach or serve the peer returns an error
     * (PX_ERR_UNREACH: not this peer; PX_ERR_NOT_SUPPORTED: no dynamic peers
     * at all; PX_ERR_BAD_PARAM: a malformed part) and writes why into
     * `reason` (PX_BTL_DYN_REASON_MAX bytes). ---- */
    /* Connecting side: create an endpoint for a peer not yet known (it may
     * reserve per-connection resources, e.g. a queue pair) and write this
     * module's part of the offer into `part` (*part_len: room on entry,
     * at most PX_BTL_DYN_PART_MAX; bytes written on return). The endpoint
     * carries no traffic until btl_dyn_complete. */
    int (*btl_dyn_offer)(struct px_btl_module *btl, px_btl_endpoint_t **endpoint, void *part,
                         size_t *part_len, char *reason);
    /* Accepting side: from the connector's part (`offer`, untrusted), add
     * the peer (*endpoint, usable at once) and write the reply part as
     * btl_dyn_offer does. */
    int (*btl_dyn_accept)(struct px_btl_module *btl, const void *offer, size_t offer_len,
                          px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                          char *reason);
    /* Connecting side: finish the endpoint of btl_dyn_offer with the
     * acceptor's reply part (untrusted); the endpoint is usable after. On an
     * error the endpoint stays to be removed. */
    int (*btl_dyn_complete)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint,
                            const void *reply, size_t reply_len, char *reason);
    /* Release everything of the peer (mappings, queue pairs, address vector
     * entries, segments), in any state after offer or accept; operations
     * still queued to it fail. The endpoint is gone after. */
    int (*btl_dyn_remove)(struct px_btl_module *btl, px_btl_endpoint_t *endpoint);
    /* Later methods go here, each with the minor that added it. */
} px_btl_module_t;

/* Thread support (3.4): what a component's modules allow of calls from
 * several threads, in px_btl_component_t.btl_thread_support.
 *
 * PX_BTL_THREADS_SERIALIZED (0, and what every component built before 3.4
 * is taken to say): the module's methods are never called by two threads at
 * the same time. Calls still come from different threads one after the
 * other, and memory is ordered between them (a lock is released and taken
 * in between): a module keeps no per-thread state. When the process runs at
 * PX_THREAD_MULTIPLE the base makes it so: every method of the module runs
 * under a lock of that module (px_btl_base_serialize, base_runtime.h),
 * recursive, so a callback the module runs (an active message, a completion)
 * may call back into the same module. At SINGLE, FUNNELED and SERIALIZED
 * no lock is taken.
 *
 * PX_BTL_THREADS_MULTIPLE (1): any method of any of the component's modules
 * may be called from several threads at once (send and sendi beside
 * progress, put/get beside send, register_mem beside all of them); the
 * module locks its own state (per peer, per queue, as it pays). Its
 * callbacks may then run on several threads at once, each on the thread in
 * the call that completed it, and must not be run with a lock of the module
 * held that a call back into the module would take again (or the lock must
 * be recursive). Only btl_add_procs, btl_del_procs, btl_register_error and
 * btl_finalize are still called by one thread with no other call running,
 * at either level.
 *
 * Either way a component whose modules share mutable state (component
 * globals) locks that state itself: the base's lock is per module. */
#define PX_BTL_THREADS_SERIALIZED 0
#define PX_BTL_THREADS_MULTIPLE   1

/* A BTL component. init returns an array (malloc'ed, the base frees it) of
 * modules, or NULL with *num_modules 0 to decline. */
typedef struct px_btl_component {
    px_mca_component_t base;
    px_btl_module_t **(*btl_init)(int *num_modules, bool enable_progress_threads);
    /* Data the component publishes through the modex before add_procs; may be NULL. */
    int (*btl_modex_send)(void);
    /* ---- 3.4: read only from a component built for 3.4 or later
     * (px_btl_base_thread_support). ---- */
    /* PX_BTL_THREADS_SERIALIZED or PX_BTL_THREADS_MULTIPLE (above); any
     * other value is taken as SERIALIZED. */
    uint32_t btl_thread_support;
    /* Later members go here, each with the minor that added it. */
} px_btl_component_t;

/* sizeof(px_btl_component_t) of a component built for 3.0 to 3.3 (up to
 * btl_modex_send). */
#define PX_BTL_COMPONENT_SIZE_3_3                                                                  \
    (offsetof(px_btl_component_t, btl_modex_send) + sizeof(int (*)(void)))

/* The value of a module's btl_size. */
#define PX_BTL_MODULE_SIZE sizeof(px_btl_module_t)
/* btl_size of a module built for 3.0 (everything up to btl_register_error). */
#define PX_BTL_MODULE_SIZE_3_0                                                                     \
    (offsetof(px_btl_module_t, btl_register_error) + sizeof(void (*)(void)))

/* btl_size of a module built for 3.1 (everything up to btl_get_v). */
#define PX_BTL_MODULE_SIZE_3_1 (offsetof(px_btl_module_t, btl_get_v) + sizeof(px_btl_rdma_v_fn))

/* btl_size of a module built for 3.2 (everything up to btl_mem_unmap). */
#define PX_BTL_MODULE_SIZE_3_2 (offsetof(px_btl_module_t, btl_mem_unmap) + sizeof(int (*)(void)))

/* btl_size of a module built for 3.3 (everything up to btl_dyn_remove; 3.4
 * added nothing to the module). */
#define PX_BTL_MODULE_SIZE_3_3 (offsetof(px_btl_module_t, btl_dyn_remove) + sizeof(int (*)(void)))

/* Whether `module` has `method` (a px_btl_module_t member) set: a method
 * added after 3.0 is read only when the module's btl_size covers it. */
#define PX_BTL_MODULE_HAS(module, method)                                                          \
    ((module)->btl_size >= offsetof(px_btl_module_t, method) + sizeof((module)->method) &&         \
     (module)->method != NULL)

/* Fill the px_mca_component_t header of a BTL component (name, its version,
 * register_params, open, close): the API version this header is and the
 * build fingerprint with the BTL structs a component lays out itself. */
#define PX_BTL_COMPONENT_HEADER(name, maj, min, rel, reg, opn, cls)                                \
    PX_MCA_COMPONENT_HEADER_FP(                                                                    \
        "btl", PX_BTL_API_MAJOR, PX_BTL_API_MINOR, PX_BTL_API_RELEASE, (name), (maj), (min),       \
        (rel), (reg), (opn), (cls), sizeof(px_btl_component_t), sizeof(px_btl_module_t),           \
        sizeof(px_btl_descriptor_t), sizeof(px_btl_active_message_callback_t))

#endif
