/*
 * chain.c: a tiny out-of-tree coll component, plexus_coll_chain.so, built
 * against the installed headers only (docs/coll.md, "Writing a coll
 * component"). It provides one operation, bcast, along a chain: the root
 * sends to the next rank, which passes it on, and so on. Everything else is
 * left to the in-tree components (NULL in the module's table).
 *
 *   PKG_CONFIG_PATH=<prefix>/lib/pkgconfig make
 *   PX_MCA_mca_component_path_prepend=$PWD pxrun -n 4 ./app   # listed by px_info
 *   px_coll_check --mca mca_component_path_prepend $PWD chain # every operation checked
 *   echo 'bcast * * chain' > rules; PX_MCA_coll_base_rules_file=rules ...   # chosen
 *
 * Its priority is 1 (below basic's 10), so it serves only where a rule names it.
 */
#include <frameworks/coll/coll.h>
#include <core/mca/var.h>
#include <core/util/error.h>

static int px_coll_chain_priority = 1;

static int chain_bcast(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    int p = g->size, v = (g->rank - a->root + p) % p; /* position in the chain */
    int rc = PX_SUCCESS;
    if (v > 0) { /* receive from the one before, first */
        rc = px_coll_sched_recv(s, (g->rank - 1 + p) % p, a->rbuf, bytes);
        if (PX_SUCCESS == rc)
            rc = px_coll_sched_round(s);
    }
    if (PX_SUCCESS == rc && v < p - 1) { /* then pass it on */
        rc = px_coll_sched_send(s, (g->rank + 1) % p, a->rbuf, bytes);
        if (PX_SUCCESS == rc)
            rc = px_coll_sched_round(s);
    }
    return rc;
}

static px_coll_module_t chain_module = {
    .name = "chain",
    .op = {[PX_COLL_BCAST] = chain_bcast},
};

static int chain_query(px_coll_group_t *g, int *priority, px_coll_module_t **module)
{
    (void)g;
    *priority = px_coll_chain_priority;
    *module = &chain_module;
    return PX_SUCCESS;
}

static const px_mca_var_field_t chain_vars[] = {
    {.name = "priority",
     .help = "Priority of coll/chain (an out-of-tree example: a bcast along a chain)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 9,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "0",
     .max = "100",
     .storage = &px_coll_chain_priority},
    {.name = NULL},
};

static int chain_register(void)
{
    return px_mca_var_register_table("coll", "chain", chain_vars, -1, NULL);
}

const px_coll_component_t px_coll_chain_component = {
    .base = PX_COLL_COMPONENT_HEADER("chain", 1, 0, 0, chain_register, NULL, NULL),
    .query = chain_query,
};
