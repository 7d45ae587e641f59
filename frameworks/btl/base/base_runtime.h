/*
 * base_runtime.h: the BTL base as the runtime (and the in-tree tools and
 * tests) uses it; not installed: components need only base.h. The runtime
 * calls it to open the btl framework, initialise every allowed component
 * (px_btl_base_select), publish addresses (px_btl_base_modex_send), reach
 * peers and choose per-peer modules (px_btl_base_add_procs), register its
 * active-message callbacks, move data through the modules (vector put/get,
 * shareable memory) and tear it all down (px_btl_base_finalize). The functions
 * stay exported (docs/abi.md: an export is never removed).
 *
 * Per-peer selection (px_btl_base_select_peer, a pure function):
 *  - modules are sorted by exclusivity, highest first;
 *  - the peer's send modules are the modules with PX_BTL_FLAGS_SEND of the
 *    highest exclusivity that reaches it;
 *  - its eager modules are the send modules of the lowest latency;
 *  - its RDMA modules are the send modules with PUT or GET, each with a
 *    weight proportional to its bandwidth (weights sum to 1);
 *  - no module reaching the peer is PX_ERR_UNREACH with a message naming both
 *    processes, their hosts, every module tried and why each declined.
 */
#ifndef PX_BTL_BASE_RUNTIME_H
#define PX_BTL_BASE_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include "core/util/compiler.h"
#include "core/class/bitmap.h"
#include "frameworks/btl/btl.h"
#include "frameworks/btl/base/base.h"

/* Modules kept by px_btl_base_select, highest exclusivity first. */
PX_EXPORT extern px_btl_module_t **px_btl_base_modules;
PX_EXPORT extern int px_btl_base_num_modules;

/* Call btl_init of every open component; components returning no module are
 * closed. Registers each module's progress function. The framework must be
 * open (px_mca_framework_open(&px_btl_base_framework)). */
PX_EXPORT int px_btl_base_select(bool enable_progress_threads);
/* Components px_btl_base_select closed because their init returned no module. */
PX_EXPORT int px_btl_base_declined_count(void);
PX_EXPORT const char *px_btl_base_declined_name(int i);
/* Call btl_modex_send of every component that returned modules. */
PX_EXPORT int px_btl_base_modex_send(void);
/* Install the runtime's error callback on every module. */
PX_EXPORT int px_btl_base_register_error(px_btl_error_fn cbfunc);
/* Finalize every module (reverse order), unregister progress, close the
 * framework. */
PX_EXPORT int px_btl_base_finalize(void);

/* ---- threads (BTL API 3.4, btl.h) ---- */

/* Put every module of `modules` whose component is not thread-safe
 * (px_btl_base_thread_support) behind a lock of its own: each of its methods
 * then runs under that lock (recursive; btl_progress only tries it and
 * polls nothing when another thread is inside the module). The runtime calls
 * it once the process runs at PX_THREAD_MULTIPLE, with no other thread in
 * Plexus; never called, no module is wrapped and no lock is taken (SINGLE,
 * FUNNELED, SERIALIZED). A module already serialized is left as it is.
 * PX_ERR_OUT_OF_RESOURCE when memory runs out (the modules wrapped so far
 * stay wrapped). */
PX_EXPORT int px_btl_base_serialize(px_btl_module_t **modules, int nmodules);
/* Give every serialized module its component's methods back and drop the
 * locks (px_btl_base_finalize does, before it finalizes the modules). */
PX_EXPORT void px_btl_base_unserialize(void);
/* Whether the base serializes `btl`, and how many times it took its lock
 * (0 when it does not): for px_perf, tests and debugging; the count is
 * exact once no other thread is calling the module. */
PX_EXPORT bool px_btl_base_serialized(const px_btl_module_t *btl);
PX_EXPORT uint64_t px_btl_base_serial_locks(const px_btl_module_t *btl);

/* Fine mode's progress without the API lock (runtime/pml, docs/threads.md):
 * run btl_progress of every module that has one, once, in the order the
 * modules were selected; a serialized module's progress only tries its lock,
 * so a module another thread is inside is skipped. The number of events. The
 * modules' table is fixed from px_btl_base_select to px_btl_base_finalize, so
 * any thread may call it in between. */
static inline int px_btl_base_progress_modules(void)
{
    int events = 0;
    for (int i = 0; i < px_btl_base_num_modules; ++i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        if (m->btl_progress)
            events += m->btl_progress(m);
    }
    return events;
}
/* The progress callback px_btl_base_select registers for each module
 * (px_progress_register, ctx the module): fine mode's pass under the API lock
 * skips those entries, which px_btl_base_progress_modules polled just before.
 * Not exported (libplexus's own). */
int px_btl_base_progress_module(void *ctx);

/* Set the callback for an active-message tag (NULL cbfunc: unset). */
PX_EXPORT int px_btl_base_register_am(px_btl_tag_t tag, px_btl_active_message_fn cbfunc,
                                      void *cbdata);

/* Sort modules by exclusivity, highest first (stable). */
PX_EXPORT void px_btl_base_sort_modules(px_btl_module_t **modules, int nmodules);

/* ---- vector put/get (BTL API 3.1) ---- */

/* Put/get `count` segments (the contract of btl_put_v/btl_get_v in btl.h):
 * through the module's own btl_put_v/btl_get_v when it has them
 * (PX_BTL_MODULE_HAS), else one btl_put/btl_get per segment with cbfunc run
 * once, after the last. PX_ERR_NOT_SUPPORTED when the module has neither;
 * PX_ERR_BAD_PARAM for no segment. When a segment after the first cannot be
 * started, the ones before it complete and cbfunc reports the error. */
PX_EXPORT int px_btl_base_put_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                const px_btl_rdma_segment_t *segs, size_t count,
                                px_btl_registration_handle_t *local_handle,
                                px_btl_registration_handle_t *remote_handle, int flags, int order,
                                px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata);
PX_EXPORT int px_btl_base_get_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                const px_btl_rdma_segment_t *segs, size_t count,
                                px_btl_registration_handle_t *local_handle,
                                px_btl_registration_handle_t *remote_handle, int flags, int order,
                                px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata);
/* How many vector calls the base ran as single put/get (a module without
 * btl_put_v/btl_get_v); also said at btl_base_verbose 10. */
PX_EXPORT uint64_t px_btl_base_vector_fallbacks(void);

/* ---- one-sided use (BTL API 3.2); shareable memory is in base.h ---- */

/* Whether btl_put (write) / btl_get (read) of `btl` may serve one-sided
 * transfers between registered regions: the method is set and the module
 * offers PUT (GET) or PX_BTL_FLAGS_XFER_RDMA (3.2). */
PX_EXPORT bool px_btl_base_xfer_can_put(const px_btl_module_t *btl);
PX_EXPORT bool px_btl_base_xfer_can_get(const px_btl_module_t *btl);

/* ---- per-peer selection ---- */

typedef struct px_btl_base_peer_module {
    px_btl_module_t *module;
    px_btl_endpoint_t *endpoint;
    double weight; /* RDMA list: share of the bandwidth, summing to 1 */
} px_btl_base_peer_module_t;

/* The modules chosen for one peer: px_btl_base_add_procs returns one per
 * process in its `peers` array, which the caller keeps (the runtime beside its
 * process table) and hands back to px_btl_base_del_procs. */
typedef struct px_btl_base_peer {
    int rank;
    int num_send, num_eager, num_rdma;
    px_btl_base_peer_module_t *send;  /* highest exclusivity reaching the peer */
    px_btl_base_peer_module_t *eager; /* lowest latency among send */
    px_btl_base_peer_module_t *rdma;  /* send modules offering PUT or GET */
    size_t eager_limit;               /* smallest btl_eager_limit among eager modules */
    size_t max_send_size;             /* smallest btl_max_send_size among send modules */
    unsigned next_eager, next_send;   /* round-robin cursors */
} px_btl_base_peer_t;

/* What the modules said about each process. */
typedef struct px_btl_base_reach {
    px_btl_module_t *module;
    px_bitmap_t reachable;         /* bit i: procs[i] reached */
    px_btl_endpoint_t **endpoints; /* [nprocs] */
    const char **reasons;          /* [nprocs], the module's reason when not reached */
} px_btl_base_reach_t;

/* The table px_btl_base_add_procs builds and px_btl_base_del_procs releases. */
typedef struct px_btl_base_table {
    int nmodules;
    px_btl_module_t **modules; /* sorted, not owned */
    size_t nprocs;
    px_proc_t **procs;          /* not owned */
    px_btl_base_reach_t *reach; /* [nmodules] */
} px_btl_base_table_t;

/* Pure: choose the modules for procs[proc_index] (with `rank`) from the reach
 * tables of modules sorted by exclusivity. Returns PX_SUCCESS with *peer
 * (free with px_btl_base_peer_free), or PX_ERR_UNREACH with *peer NULL. */
PX_EXPORT int px_btl_base_select_peer(const px_btl_base_reach_t *reach, int nmodules,
                                      size_t proc_index, int rank, px_btl_base_peer_t **peer);
PX_EXPORT void px_btl_base_peer_free(px_btl_base_peer_t *peer);
/* The error text for an unreachable peer (caller frees). */
PX_EXPORT char *px_btl_base_unreachable_message(const px_btl_base_reach_t *reach, int nmodules,
                                                const px_proc_t *local, const px_proc_t *peer,
                                                size_t proc_index);

/* Append the components that declined in init and the value of the "btl"
 * selection variable to an unreachable message (takes msg, returns the new one). */
PX_EXPORT char *px_btl_base_unreachable_add_context(char *msg);

/* Call every module's add_procs over procs, then select per peer and store
 * the choice for procs[i] in peers[i] (`peers` has nprocs entries, owned by
 * the caller; the peers in it belong to the table until px_btl_base_del_procs).
 * modules must be sorted (px_btl_base_sort_modules). On an unreachable peer
 * returns PX_ERR_UNREACH and *error (caller frees) holds the message; the
 * table is released then and every peers[i] is NULL. `local` is the calling
 * process. */
PX_EXPORT int px_btl_base_add_procs(px_btl_base_table_t *table, px_btl_module_t **modules,
                                    int nmodules, px_proc_t **procs, size_t nprocs,
                                    const px_proc_t *local, px_btl_base_peer_t **peers,
                                    char **error);
/* Call every module's del_procs, free the peers px_btl_base_add_procs put in
 * `peers` (setting each to NULL) and the table's arrays. */
PX_EXPORT int px_btl_base_del_procs(px_btl_base_table_t *table, px_btl_base_peer_t **peers);

/* Pick the next eager / send module of a peer (round robin when several). */
static inline px_btl_base_peer_module_t *px_btl_base_peer_eager(px_btl_base_peer_t *p)
{
    if (PX_LIKELY(1 == p->num_eager))
        return p->eager;
    return &p->eager[p->next_eager++ % (unsigned)p->num_eager];
}
static inline px_btl_base_peer_module_t *px_btl_base_peer_send(px_btl_base_peer_t *p)
{
    if (PX_LIKELY(1 == p->num_send))
        return p->send;
    return &p->send[p->next_send++ % (unsigned)p->num_send];
}

/* ---- dynamic peers (BTL API 3.3) ---- */

/* The payload px_btl_base_dyn_offer / _accept produce: one blob, all little
 * endian, that another channel carries to the peer:
 *   "PXDY" | version u8 (1) | kind u8 (1 offer, 2 reply) | nparts u16 |
 *   connection id u64 | total length u32 (the whole blob) |
 *   nparts x { name length u8 (1..63) | component name ([a-z0-9_]) |
 *              component version major, minor, release u16 each |
 *              module index u8 (among that component's modules) |
 *              status u8 (0: the module's part; 1: it declined, the part is
 *              the reason text) | part length u16 (<= PX_BTL_DYN_PART_MAX) |
 *              part bytes }
 * A reader checks every length against the bytes it holds and the limits
 * below before it reads through it; a part of a component it has not loaded
 * is skipped, as is one of another major version (with a reason). */
#define PX_BTL_DYN_MAGIC       "PXDY"
#define PX_BTL_DYN_VERSION     1
#define PX_BTL_DYN_OFFER       1
#define PX_BTL_DYN_REPLY       2
#define PX_BTL_DYN_HEADER_SIZE 20
#define PX_BTL_DYN_MAX_PARTS   32
#define PX_BTL_DYN_NAME_MAX    63
#define PX_BTL_DYN_PAYLOAD_MAX                                                                     \
    (PX_BTL_DYN_HEADER_SIZE +                                                                      \
     PX_BTL_DYN_MAX_PARTS * (PX_BTL_DYN_NAME_MAX + 12 + PX_BTL_DYN_PART_MAX))
#define PX_BTL_DYN_PART_OK       0
#define PX_BTL_DYN_PART_DECLINED 1
/* The extension of a module's part (PX_BTL_FLAGS_DYN_EXT) travels as a part
 * of the same component whose module index is the module's plus this; a
 * reader looks parts up by component and index, so one that does not know
 * extensions never reads it. Modules of index 128 and up send none. */
#define PX_BTL_DYN_EXT_INDEX 0x80

typedef struct px_btl_dyn_part {
    char component[PX_BTL_DYN_NAME_MAX + 1];
    uint16_t version[3];
    uint8_t index, status;
    const unsigned char *data; /* into the parsed blob */
    size_t len;
} px_btl_dyn_part_t;

typedef struct px_btl_dyn_payload {
    uint8_t kind;
    uint64_t conn_id;
    int nparts;
    px_btl_dyn_part_t parts[PX_BTL_DYN_MAX_PARTS];
} px_btl_dyn_payload_t;

/* Parse `len` bytes of a payload from anywhere (pure, no state): PX_SUCCESS
 * with *out (its parts point into buf), or PX_ERR_BAD_PARAM with `why`
 * (why_len bytes) saying what is wrong, at which byte, and what would be
 * accepted. */
PX_EXPORT int px_btl_base_dyn_parse(const void *buf, size_t len, px_btl_dyn_payload_t *out,
                                    char *why, size_t why_len);

/* One dynamic peer, from px_btl_base_dyn_offer (connecting side) or
 * px_btl_base_dyn_accept (accepting side) to px_btl_base_dyn_remove. */
typedef struct px_btl_base_dyn_peer {
    /* The modules chosen for it, as px_btl_base_add_procs chooses for a rank
     * (rank PX_BTL_RANK_DYNAMIC); NULL until accept / complete succeeded. */
    px_btl_base_peer_t *peer;
    int nmodules;
    px_btl_module_t **modules;     /* as passed, not owned */
    px_btl_endpoint_t **endpoints; /* [nmodules]: NULL where that module did not add it */
    uint64_t conn_id;
    bool connector, completed;
} px_btl_base_dyn_peer_t;

/* Whether `btl` serves dynamic peers: it was built for BTL API 3.3 or later
 * and has the four btl_dyn_* methods (PX_BTL_MODULE_HAS). */
PX_EXPORT bool px_btl_base_dyn_capable(const px_btl_module_t *btl);
/* Connecting side: ask every module of `modules` (sorted, as for add_procs;
 * the runtime passes px_btl_base_modules) for its part; *payload (malloc'ed,
 * *len bytes) goes to the peer by any channel. A module that does not serve
 * dynamic peers (an older minor) is skipped. PX_ERR_UNREACH with *error
 * (caller frees) when no module offers anything. */
PX_EXPORT int px_btl_base_dyn_offer(px_btl_module_t **modules, int nmodules,
                                    px_btl_base_dyn_peer_t **dp, void **payload, size_t *len,
                                    char **error);
/* Accepting side: add the peer whose offer is `offer` (untrusted) through
 * every module that can, choose its modules (*dp)->peer, and produce the
 * reply (*reply, malloc'ed). On PX_ERR_UNREACH (no module reaches it) *dp is
 * NULL, *error says every module's reason, and *reply still holds the
 * declining reply to send back so the connector learns why;
 * PX_ERR_BAD_PARAM for a malformed offer (no reply). */
PX_EXPORT int px_btl_base_dyn_accept(px_btl_module_t **modules, int nmodules, const void *offer,
                                     size_t offer_len, px_btl_base_dyn_peer_t **dp, void **reply,
                                     size_t *reply_len, char **error);
/* Connecting side: finish with the acceptor's reply (untrusted); dp->peer
 * is then set. On an error dp stays to be removed. A module the acceptor
 * declined is removed from the peer at once; a module that accepted but
 * cannot complete fails the whole connection (both sides must agree). */
PX_EXPORT int px_btl_base_dyn_complete(px_btl_base_dyn_peer_t *dp, const void *reply,
                                       size_t reply_len, char **error);
/* Release the peer in every module that added it (any state) and free dp. */
PX_EXPORT int px_btl_base_dyn_remove(px_btl_base_dyn_peer_t *dp);

#endif
