/*
 * ring_component.c: registration and query of coll/ring.
 */
#include "components/coll/ring/ring.h"
#include "core/mca/var.h"
#include "core/util/error.h"

int px_coll_ring_priority = 20;
size_t px_coll_ring_chunk = 256 * 1024;
int px_coll_ring_window = 4;

static const px_mca_var_field_t px_coll_ring_vars[] = {
    PX_COLL_PRIORITY_VAR("ring", px_coll_ring_priority),
    {.name = "chunk",
     .help = "Bytes a ring allreduce / reduce_scatter step moves per message: a block larger "
             "than this is cut into chunks, so reducing one overlaps receiving the next",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "256k",
     .min = "64",
     .max = "1G",
     .storage = &px_coll_ring_chunk},
    {.name = "window",
     .help = "Chunks a ring allreduce / reduce_scatter receives ahead (posted receives; each "
             "takes a chunk of scratch memory)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "1",
     .max = "64",
     .storage = &px_coll_ring_window},
    {.name = NULL},
};

static int px_coll_ring_register(void)
{
    return px_mca_var_register_table("coll", "ring", px_coll_ring_vars, -1, NULL);
}

static int px_coll_ring_query(px_coll_group_t *g, int *priority, px_coll_module_t **module)
{
    (void)g;
    *priority = px_coll_ring_priority;
    *module = &px_coll_ring_module;
    return PX_SUCCESS;
}

const px_coll_component_t px_coll_ring_component = {
    .base = PX_COLL_COMPONENT_HEADER("ring", 1, 0, 0, px_coll_ring_register, NULL, NULL),
    .query = px_coll_ring_query,
};
