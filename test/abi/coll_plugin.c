/*
 * coll_plugin.c: a coll component built against the frozen coll API 1.0
 * headers (test/abi/coll-1.0/, -iquote puts them first), loaded as the plugin
 * plexus_coll_abicoll10 into a library whose coll API has grown since (1.1
 * added px_coll_module_t.run[] after the 1.0 members). Its module is a 1.0
 * module: the library must build schedules with it and never read past its
 * end (under AddressSanitizer a read of run[] is a global-buffer-overflow).
 *
 * It provides barrier (everyone to rank 0, rank 0 to everyone) and bcast
 * (the root sends to everyone), at a priority above the built-in
 * components; t_abi_plugins.sh sees it serve through coll_base_verbose.
 */
#include "core/util/error.h"
#include "frameworks/coll/coll.h"

#if PX_COLL_API_MINOR != 0
#error "coll_plugin.c must be built against the frozen coll API 1.0 headers (test/abi/coll-1.0)"
#endif

static int abi_barrier(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    (void)a;
    int rc;
    if (g->size < 2)
        return PX_SUCCESS;
    if (0 == g->rank) {
        for (int i = 1; i < g->size; ++i)
            if ((rc = px_coll_sched_recv(s, i, NULL, 0)) != PX_SUCCESS)
                return rc;
        if ((rc = px_coll_sched_round(s)) != PX_SUCCESS)
            return rc;
        for (int i = 1; i < g->size; ++i)
            if ((rc = px_coll_sched_send(s, i, NULL, 0)) != PX_SUCCESS)
                return rc;
        return px_coll_sched_round(s);
    }
    if ((rc = px_coll_sched_send(s, 0, NULL, 0)) != PX_SUCCESS ||
        (rc = px_coll_sched_round(s)) != PX_SUCCESS ||
        (rc = px_coll_sched_recv(s, 0, NULL, 0)) != PX_SUCCESS)
        return rc;
    return px_coll_sched_round(s);
}

static int abi_bcast(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    int rc;
    if (g->rank != a->root) {
        if ((rc = px_coll_sched_recv(s, a->root, a->rbuf, bytes)) != PX_SUCCESS)
            return rc;
        return px_coll_sched_round(s);
    }
    for (int i = 0; i < g->size; ++i)
        if (i != a->root && (rc = px_coll_sched_send(s, i, a->rbuf, bytes)) != PX_SUCCESS)
            return rc;
    return px_coll_sched_round(s);
}

/* A 1.0 module: exactly the members API 1.0 has. */
static px_coll_module_t abi_module = {
    .name = "abicoll10",
    .op = {[PX_COLL_BARRIER] = abi_barrier, [PX_COLL_BCAST] = abi_bcast},
};

static int abi_query(px_coll_group_t *g, int *priority, px_coll_module_t **module)
{
    (void)g;
    *priority = 90;
    *module = &abi_module;
    return PX_SUCCESS;
}

const px_coll_component_t px_coll_abicoll10_component = {
    .base = PX_COLL_COMPONENT_HEADER("abicoll10", 1, 0, 0, NULL, NULL, NULL),
    .query = abi_query,
};
