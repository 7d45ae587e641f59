/*
 * base.h: the BTL framework's base, the part BTL components use (installed
 * for component authors): the framework (its output stream), the module
 * variables (px_btl_base_register_module_params and their ranges), and the
 * helpers that write a module's put/get and register_mem
 * (PX_BTL_BASE_RDMA_PUT_GET, PX_BTL_BASE_RCACHE_REGISTER_MEM). Components
 * dispatch received fragments through px_btl_base_active_message_trigger
 * (btl.h).
 *
 * What the runtime calls to open, select, reach peers, choose per-peer
 * modules and tear it all down is in base_runtime.h, which is not installed
 * (docs/abi.md, "Two tiers of headers").
 */
#ifndef PX_BTL_BASE_H
#define PX_BTL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include "core/util/compiler.h"
#include "core/mca/framework.h"
#include "frameworks/btl/btl.h"
#include "frameworks/btl/base/rcache.h"

PX_EXPORT extern px_mca_framework_t px_btl_base_framework;

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

/* ---- thread support (BTL API 3.4) ---- */

/* What `component` declared in btl_thread_support (btl.h): PX_BTL_THREADS_
 * MULTIPLE only from a component built for BTL API 3.4 or later that says
 * so; PX_BTL_THREADS_SERIALIZED for every other (an older plugin never
 * promised it, an unknown value is not a promise). */
PX_EXPORT uint32_t px_btl_base_thread_support(const px_btl_component_t *component);
/* The same as a word for people and scripts: "multiple" or "serialized". */
PX_EXPORT const char *px_btl_base_thread_support_name(const px_btl_component_t *component);
/* For a component that polls a module from a progress callback of its own
 * (px_progress_register) rather than through btl_progress: run
 * progress(btl) as the base runs btl_progress, i.e. under the module's lock
 * when the base serializes it (tried: 0 when another thread is inside the
 * module), directly otherwise. A module's methods must never be entered
 * around the base's lock. */
PX_EXPORT int px_btl_base_progress_locked(px_btl_module_t *btl,
                                          int (*progress)(px_btl_module_t *btl));

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

/* ---- shareable memory (BTL API 3.2): what a component (coll/sm) maps a
 * same-host peer's memory with ---- */

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
 * runtime built when it added the job's processes: what a component outside the BTL
 * (coll/sm) maps a same-host peer's memory with. PX_ERR_NOT_FOUND when no
 * such module reaches it (or before add_procs / after del_procs). */
PX_EXPORT int px_btl_base_mem_peer(int rank, px_btl_module_t **btl, px_btl_endpoint_t **ep);

#endif
