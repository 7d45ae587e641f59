/*
 * broken.c: a coll plugin with planted defects, for test/collcheck/t_coll_check.sh:
 * px_coll_check must report each of them on the right operation.
 *   barrier    returns at once, sending nothing (nobody waits for the others)
 *   bcast      correct: the root sends to every rank (must stay "ok")
 *   allreduce  everything to rank 0, which reduces and sends back, but leaves
 *              the last element unreduced when there are several
 * Everything else is left to the in-tree components.
 */
#include "core/mca/var.h"
#include "core/util/error.h"
#include "frameworks/coll/coll.h"

static int broken_priority = 1;

static int broken_barrier(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    (void)g;
    (void)a;
    (void)s;
    return PX_SUCCESS; /* no messages: the defect */
}

static int broken_bcast(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    if (g->rank != a->root) {
        int rc = px_coll_sched_recv(s, a->root, a->rbuf, bytes);
        return PX_SUCCESS == rc ? px_coll_sched_round(s) : rc;
    }
    for (int i = 0; i < g->size; i++) {
        int rc = i == a->root ? PX_SUCCESS : px_coll_sched_send(s, i, a->rbuf, bytes);
        if (rc != PX_SUCCESS)
            return rc;
    }
    return px_coll_sched_round(s);
}

static int broken_allreduce(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    size_t n = a->count > 1 ? a->count - 1 : a->count; /* the defect */
    int rc = PX_SUCCESS;
    if (g->rank != 0) {
        rc = px_coll_sched_send(s, 0, a->sbuf, bytes);
        if (PX_SUCCESS == rc)
            rc = px_coll_sched_round(s);
        if (PX_SUCCESS == rc)
            rc = px_coll_sched_recv(s, 0, a->rbuf, bytes);
        return PX_SUCCESS == rc ? px_coll_sched_round(s) : rc;
    }
    char *tmp = g->size > 1 ? px_coll_sched_tmp(s, (size_t)(g->size - 1) * bytes) : NULL;
    if (g->size > 1 && NULL == tmp)
        return PX_ERR_OUT_OF_RESOURCE;
    for (int j = 1; j < g->size && PX_SUCCESS == rc; j++)
        rc = px_coll_sched_recv(s, j, tmp + (size_t)(j - 1) * bytes, bytes);
    if (PX_SUCCESS == rc && a->sbuf != a->rbuf)
        rc = px_coll_sched_copy(s, a->rbuf, a->sbuf, bytes);
    for (int j = 1; j < g->size && PX_SUCCESS == rc; j++)
        rc = px_coll_sched_reduce(s, a->rbuf, a->rbuf, tmp + (size_t)(j - 1) * bytes, n, a->dtype,
                                  a->rop);
    if (PX_SUCCESS == rc)
        rc = px_coll_sched_round(s);
    for (int j = 1; j < g->size && PX_SUCCESS == rc; j++)
        rc = px_coll_sched_send(s, j, a->rbuf, bytes);
    return PX_SUCCESS == rc ? px_coll_sched_round(s) : rc;
}

static px_coll_module_t broken_module = {
    .name = "broken",
    .op = {[PX_COLL_BARRIER] = broken_barrier,
           [PX_COLL_BCAST] = broken_bcast,
           [PX_COLL_ALLREDUCE] = broken_allreduce},
};

static int broken_query(px_coll_group_t *g, int *priority, px_coll_module_t **module)
{
    (void)g;
    *priority = broken_priority;
    *module = &broken_module;
    return PX_SUCCESS;
}

static const px_mca_var_field_t broken_vars[] = {
    PX_COLL_PRIORITY_VAR("broken", broken_priority),
    {.name = NULL},
};

static int broken_register(void)
{
    return px_mca_var_register_table("coll", "broken", broken_vars, -1, NULL);
}

const px_coll_component_t px_coll_broken_component = {
    .base = PX_COLL_COMPONENT_HEADER("broken", 1, 0, 0, broken_register, NULL, NULL),
    .query = broken_query,
};
