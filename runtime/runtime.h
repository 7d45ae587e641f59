/*
 * runtime.h: px_init's view of the runtime, and the header the in-tree
 * tools and the tests include to reach the runtime behind the API (they
 * link libplexus statically, see test/runtime/Makefile.inc). It gathers the
 * sub-layers' headers (docs/architecture.md, "The runtime's sub-layers"):
 *   runtime/proc/proc.h      the process table, the API lock, progress hooks,
 *                            failure notices
 *   runtime/pml/pml_wire.h   messaging's active-message tags and headers
 *   runtime/pml/pml_request.h the request and the unexpected-message record
 *   runtime/pml/pml.h        what messaging exports to the layers above
 *   runtime/coll/coll_rt.h   what px_init calls of groups and collectives
 * Only the top (runtime.c, job_vars.c), tools and tests include it: a file of
 * a sub-layer includes the headers of its own layer and the ones below
 * (test/build/check_layers.sh). Not installed. px_rt_tool_peer_btl and
 * px_rt_pml_register_params are exported (PX_EXPORT) only because the
 * in-tree tools px_perf (--btl) and px_info use them; they are not API.
 */
#ifndef PX_RUNTIME_RUNTIME_H
#define PX_RUNTIME_RUNTIME_H

#include "runtime/coll/coll_rt.h"
#include "runtime/job_vars.h"
#include "runtime/pml/pml.h"
#include "runtime/proc/proc.h"

/* For the in-tree tools only (px_perf --btl drives a BTL module directly): the
 * eager BTL module and endpoint the runtime chose for `peer`. PX_SUCCESS, or
 * PX_ERR_BAD_PARAM before px_init or for a rank out of range, or
 * PX_ERR_UNREACH when no BTL reaches it. Exported, not API. */
PX_EXPORT int px_rt_tool_peer_btl(int peer, px_btl_module_t **btl, px_btl_endpoint_t **ep);
/* For px_btl_check: the BTL reachability table px_init built (every module,
 * its endpoints and its reasons per process), NULL before px_init; and the
 * largest eager data size to `peer` (0 before px_init or out of range). */
PX_EXPORT const px_btl_base_table_t *px_rt_tool_btl_table(void);
PX_EXPORT size_t px_rt_tool_eager_data(int peer);

/* The runtime's variables (messaging's, the progress engine's, the transfer
 * engine's), registered by px_init and by px_info. Exported, not API. */
PX_EXPORT int px_rt_pml_register_params(void);

/* Counts for tests: unexpected messages queued, receives posted. */
static inline size_t px_rt_unexpected_count(void)
{
    return px_pml_unexpected_count();
}
static inline size_t px_rt_posted_count(void)
{
    return px_pml_posted_count();
}

#endif
