/*
 * net.h: what the network BTLs (those that register memory with a device and
 * complete RDMA from their progress function) have in common, so that each
 * keeps only what differs:
 *  - the variables every such component has, btl_<name>_rcache_max_entries,
 *    btl_<name>_rcache_max_bytes and btl_<name>_flush_timeout, and the order
 *    of registration (its own rows, these, the module's figures, its
 *    informational rows) with the first refused value's error kept;
 *  - the texts add_procs hands out as reasons (px_btl_base_reasons_t), kept
 *    until the module goes;
 *  - whether a job is all on this host, so that a shared-memory transport
 *    serves it and the network component may decline;
 *  - the bookkeeping of one RDMA operation (px_btl_base_rdma_req_t): what the
 *    caller gave, a registration made for this operation only, and the
 *    completion that releases it and calls back.
 * The request helpers are inline: they sit on the RDMA fast path.
 */
#ifndef PX_BTL_BASE_NET_H
#define PX_BTL_BASE_NET_H

#include <stdbool.h>
#include <stddef.h>
#include "core/class/free_list.h"
#include "core/mca/var.h"
#include "core/util/compiler.h"
#include "core/util/error.h"
#include "frameworks/btl/base/base.h"
#include "frameworks/btl/base/rcache.h"
#include "frameworks/btl/btl.h"

/* Storage of the shared variables; a component keeps one, with
 * PX_BTL_BASE_NET_VARS_DEFAULTS as its initial value. */
typedef struct px_btl_base_net_vars {
    size_t rcache_max_entries; /* registrations the cache keeps; 0: no limit */
    size_t rcache_max_bytes;   /* registered bytes the cache keeps; 0: no limit */
    int flush_timeout;         /* seconds btl_flush waits; 0: no limit */
} px_btl_base_net_vars_t;

#define PX_BTL_BASE_NET_VARS_DEFAULTS                                                              \
    {                                                                                              \
        .rcache_max_entries = 1024, .rcache_max_bytes = 0, .flush_timeout = 60                     \
    }

/* Register, as btl_<component>_<name>: the rows of `own` (NULL-name
 * terminated), the shared rows into `net`, the rows of `own_tail`, the
 * module figures of `module` (px_btl_base_register_module_params), and the
 * rows of `late` (informational ones, probed when read); `own_tail` and
 * `late` may be NULL. A refused value was reported and its default kept: the
 * others are still registered and the first error is returned at the end;
 * any other error stops at once. */
PX_EXPORT int px_btl_base_net_register(const px_btl_component_t *component, px_btl_module_t *module,
                                       const px_mca_var_field_t *own, px_btl_base_net_vars_t *net,
                                       const px_mca_var_field_t *own_tail,
                                       const px_mca_var_field_t *late);

/* True when the job is known to be all on this host (every rank local, as
 * px_boot reports) and the btl framework allows the component `local_btl`
 * (the one that would serve such a job instead). */
PX_EXPORT bool px_btl_base_job_is_local(const char *local_btl);

/* Texts a module handed out (add_procs' reasons for peers it cannot reach):
 * they stay valid until px_btl_base_reasons_free, called when the module
 * goes. Zero-initialised it is empty. */
typedef struct px_btl_base_reasons {
    char **texts;
    size_t count;
} px_btl_base_reasons_t;

/* Format a reason and keep it in `r`; "out of memory" (static) when that
 * fails. */
PX_EXPORT const char *px_btl_base_reason(px_btl_base_reasons_t *r, const char *fmt, ...)
    PX_PRINTF(2, 3);
/* Free every text kept in `r` and empty it. */
PX_EXPORT void px_btl_base_reasons_free(px_btl_base_reasons_t *r);

/* One RDMA operation: modules embed it in their operation type. */
typedef struct px_btl_base_rdma_req {
    void *local_address;
    px_btl_registration_handle_t *local_handle;
    px_rcache_entry_t *temp_reg; /* registered for this operation only */
    px_btl_rdma_completion_fn cbfunc;
    void *cbcontext, *cbdata;
    bool write;
} px_btl_base_rdma_req_t;

/* Take what the caller gave. */
static inline void px_btl_base_rdma_req_start(px_btl_base_rdma_req_t *r,
                                              const px_btl_rdma_args_t *a)
{
    r->local_address = a->local_address;
    r->local_handle = a->local_handle;
    r->temp_reg = NULL;
    r->cbfunc = a->cbfunc;
    r->cbcontext = a->cbcontext;
    r->cbdata = a->cbdata;
    r->write = PX_BTL_RDMA_PUT == a->dir;
}

/* Register the local buffer for this operation only (no local handle was
 * given); the entry, or NULL when registration failed. */
static inline px_rcache_entry_t *px_btl_base_rdma_req_register(px_btl_base_rdma_req_t *r,
                                                               px_rcache_t *rcache,
                                                               const px_btl_rdma_args_t *a)
{
    if (PX_SUCCESS != px_rcache_register(rcache, a->local_address, a->size, 0, &r->temp_reg))
        r->temp_reg = NULL;
    return r->temp_reg;
}

/* The operation was not started: release what it held and give its item
 * back to `list`. */
static inline void px_btl_base_rdma_req_abort(px_btl_base_rdma_req_t *r, px_free_list_t *list,
                                              px_free_list_item_t *item)
{
    if (r->temp_reg)
        px_rcache_release(r->temp_reg);
    px_free_list_return(list, item);
}

/* The operation completed with `status`: release its registration, give its
 * item back to `list` (so the callback may start another), then call back. */
static inline void px_btl_base_rdma_req_done(px_btl_base_rdma_req_t *r, px_free_list_t *list,
                                             px_free_list_item_t *item, px_btl_module_t *btl,
                                             px_btl_endpoint_t *endpoint, int status)
{
    if (r->temp_reg)
        px_rcache_release(r->temp_reg);
    px_btl_rdma_completion_fn cb = r->cbfunc;
    void *la = r->local_address, *cc = r->cbcontext, *cd = r->cbdata;
    px_btl_registration_handle_t *lh = r->local_handle;
    px_free_list_return(list, item);
    if (cb)
        cb(btl, endpoint, la, lh, cc, cd, status);
}

#endif /* PX_BTL_BASE_NET_H */
