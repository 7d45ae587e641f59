/*
 * base.h: the BTL framework's base. The runtime calls it to open the btl
 * framework, initialise every allowed component (px_btl_base_select), publish
 * addresses (px_btl_base_modex_send), reach peers and choose per-peer modules
 * (px_btl_base_add_procs), and tear it all down (px_btl_base_finalize).
 * Components call px_btl_base_register_module_params from register_params,
 * and dispatch received fragments through px_btl_base_active_message_trigger.
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
#ifndef PX_BTL_BASE_H
#define PX_BTL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include "core/util/compiler.h"
#include "core/class/bitmap.h"
#include "core/mca/framework.h"
#include "frameworks/btl/btl.h"
#include "frameworks/btl/base/rcache.h"

PX_EXPORT extern px_mca_framework_t px_btl_base_framework;

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

/* Register the figures of `module` as variables btl_<component>_<field>
 * (exclusivity, latency, bandwidth, eager_limit, max_send_size, put_limit,
 * put_alignment, get_limit, get_alignment, flags),
 * with the module's current values as defaults. Flags a user sets are masked
 * by the defaults (a module cannot gain a capability). Call it from the
 * component's register_params on the module template its init copies. */
PX_EXPORT int px_btl_base_register_module_params(const px_btl_component_t *component,
                                                 px_btl_module_t *module);
/* The base gives every module variable a range that any transport can work
 * with (eager_limit 64..64M; max_send_size 600..64M, room for the runtime's
 * largest control message; put/get_limit at least 4k; alignments 0..4k;
 * flags within the defined bits). A component gives its own range for one
 * of them (`param` "eager_limit", "max_send_size", ...; bounds as for
 * px_mca_var_set_range): best before px_btl_base_register_module_params,
 * which then registers with it, so the first report of a bad value names it;
 * after, it is px_mca_var_set_range on the registered variable (and returns
 * as that does). */
PX_EXPORT int px_btl_base_module_param_range(const px_btl_component_t *component, const char *param,
                                             const char *min, const char *max);

/* Set the callback for an active-message tag (NULL cbfunc: unset). */
PX_EXPORT int px_btl_base_register_am(px_btl_tag_t tag, px_btl_active_message_fn cbfunc,
                                      void *cbdata);

/* Sort modules by exclusivity, highest first (stable). */
PX_EXPORT void px_btl_base_sort_modules(px_btl_module_t **modules, int nmodules);

/* ---- put and get as one function ---- */

/* The direction of an RDMA transfer. */
typedef enum px_btl_rdma_dir {
    PX_BTL_RDMA_GET, /* remote -> local: btl_get */
    PX_BTL_RDMA_PUT  /* local -> remote: btl_put */
} px_btl_rdma_dir_t;

/* The arguments btl_put and btl_get take after the module and the endpoint,
 * and which of the two was called. */
typedef struct px_btl_rdma_args {
    void *local_address;
    uint64_t remote_address;
    px_btl_registration_handle_t *local_handle;
    px_btl_registration_handle_t *remote_handle;
    size_t size;
    int flags, order;
    px_btl_rdma_completion_fn cbfunc;
    void *cbcontext, *cbdata;
    px_btl_rdma_dir_t dir;
} px_btl_rdma_args_t;

/* A module's btl_put and btl_get differ only in the direction, so it may
 * write one function
 *     static inline int foo_rdma(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
 *                                const px_btl_rdma_args_t *a);
 * and have
 *     PX_BTL_BASE_RDMA_PUT_GET(foo, foo_rdma)
 * define static foo_put and foo_get, the module's btl_put and btl_get. Each
 * gathers its arguments with the direction and calls
 * foo_rdma; inlined there, the arguments stay in registers and the direction
 * is a constant. */
#define PX_BTL_BASE_RDMA_PUT_GET(prefix, rdma)                                                     \
    PX_BTL_BASE_RDMA_ENTRY_(prefix##_put, rdma, PX_BTL_RDMA_PUT)                                   \
    PX_BTL_BASE_RDMA_ENTRY_(prefix##_get, rdma, PX_BTL_RDMA_GET)
#define PX_BTL_BASE_RDMA_ENTRY_(name, rdma, direction)                                             \
    static int name(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, void *local_address,        \
                    uint64_t remote_address, px_btl_registration_handle_t *local_handle,           \
                    px_btl_registration_handle_t *remote_handle, size_t size, int flags,           \
                    int order, px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)    \
    {                                                                                              \
        const px_btl_rdma_args_t args = {.local_address = local_address,                           \
                                         .remote_address = remote_address,                         \
                                         .local_handle = local_handle,                             \
                                         .remote_handle = remote_handle,                           \
                                         .size = size,                                             \
                                         .flags = flags,                                           \
                                         .order = order,                                           \
                                         .cbfunc = cbfunc,                                         \
                                         .cbcontext = cbcontext,                                   \
                                         .cbdata = cbdata,                                         \
                                         .dir = (direction)};                                      \
        return rdma(btl, endpoint, &args);                                                         \
    }

/* A module that registers memory through its own registration cache (rcache.h)
 * has the same btl_register_mem and btl_deregister_mem as any other: when its
 * registration type `reg_t` starts with `px_rcache_entry_t super` and holds
 * its `px_btl_registration_handle_t handle`, and its module type `module_t`
 * has `px_rcache_t *rcache`,
 *     PX_BTL_BASE_RCACHE_REGISTER_MEM(foo, foo_module_t, foo_reg_t)
 * defines static foo_register_mem and foo_deregister_mem over that cache. */
#define PX_BTL_BASE_RCACHE_REGISTER_MEM(prefix, module_t, reg_t)                                   \
    static px_btl_registration_handle_t *prefix##_register_mem(                                    \
        px_btl_module_t *btl, px_btl_endpoint_t *endpoint, void *base, size_t size,                \
        uint32_t flags)                                                                            \
    {                                                                                              \
        (void)endpoint;                                                                            \
        (void)flags;                                                                               \
        px_rcache_entry_t *e = NULL;                                                               \
        if (PX_SUCCESS != px_rcache_register(((module_t *)btl)->rcache, base, size, 0, &e))        \
            return NULL;                                                                           \
        return &((reg_t *)e)->handle;                                                              \
    }                                                                                              \
    static int prefix##_deregister_mem(px_btl_module_t *btl, px_btl_registration_handle_t *handle) \
    {                                                                                              \
        (void)btl;                                                                                 \
        return px_rcache_release(&px_container_of(handle, reg_t, handle)->super);                  \
    }

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

/* ---- shareable memory and one-sided use (BTL API 3.2) ---- */

/* Whether `btl` offers shareable memory: it has btl_mem_alloc, btl_mem_free,
 * btl_mem_map and btl_mem_unmap (PX_BTL_MODULE_HAS: a module built for an
 * older minor has none) and PX_BTL_FLAGS_MEM_MAP is set (a user may clear it
 * with btl_<name>_flags). */
PX_EXPORT bool px_btl_base_has_mem_map(const px_btl_module_t *btl);
/* The module's method when px_btl_base_has_mem_map, else PX_ERR_NOT_SUPPORTED
 * (the caller falls back to memory of its own, registered with btl_register_mem). */
PX_EXPORT int px_btl_base_mem_alloc(px_btl_module_t *btl, size_t size, px_btl_mem_t *mem);
PX_EXPORT int px_btl_base_mem_free(px_btl_module_t *btl, px_btl_mem_t *mem);
PX_EXPORT int px_btl_base_mem_map(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                  const void *desc, size_t desc_len, px_btl_mem_t *map);
PX_EXPORT int px_btl_base_mem_unmap(px_btl_module_t *btl, px_btl_mem_t *map);
/* The module (highest exclusivity first) offering shareable memory that
 * reaches job rank `rank`, and its endpoint for it, from the table the
 * runtime's px_btl_base_add_procs built: what a caller outside the runtime
 * (coll/sm) maps a same-host peer's memory with. PX_ERR_NOT_FOUND when no
 * such module reaches it (or before add_procs / after del_procs). Inside
 * libplexus only (not exported). */
int px_btl_base_mem_peer(int rank, px_btl_module_t **btl, px_btl_endpoint_t **ep);
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

#endif
