/*
 * fullmesh_component.c: registration and query of coll/fullmesh.
 */
#include "components/coll/fullmesh/fullmesh.h"
#include "core/mca/var.h"
#include "core/util/error.h"

int px_coll_fullmesh_priority = 30;
int px_coll_fullmesh_linear_mode = 0;
size_t px_coll_fullmesh_halving_min = 64 * 1024;

static const px_mca_var_enum_value_t px_coll_fullmesh_linear_values[] = {
    {0, "auto"}, {1, "never"}, {2, "always"}, {0, NULL}};

static const px_mca_var_field_t px_coll_fullmesh_vars[] = {
    PX_COLL_PRIORITY_VAR("fullmesh", px_coll_fullmesh_priority),
    {.name = "linear",
     .help = "Barrier and allreduce through rank 0 (two passes over the ranks) instead of "
             "dissemination / recursive doubling (log2(p) rounds): auto when ranks outnumber the "
             "cores of this node (the progress engine yields when idle), never, or always",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = px_coll_fullmesh_linear_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .storage = &px_coll_fullmesh_linear_mode},
    {.name = "allreduce_halving_min",
     .help = "Allreduces of at least this many bytes served by coll/fullmesh use Rabenseifner's "
             "algorithm (reduce-scatter by recursive halving, allgather by recursive doubling: "
             "2 log2(p) steps moving 2(p-1)/p of the vector); smaller ones recursive doubling "
             "or the linear form",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "64k",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_fullmesh_halving_min},
    {.name = NULL},
};

static int px_coll_fullmesh_register(void)
{
    return px_mca_var_register_table("coll", "fullmesh", px_coll_fullmesh_vars, -1, NULL);
}

static int px_coll_fullmesh_query(px_coll_group_t *g, int *priority, px_coll_module_t **module)
{
    (void)g;
    *priority = px_coll_fullmesh_priority;
    *module = &px_coll_fullmesh_module;
    return PX_SUCCESS;
}

const px_coll_component_t px_coll_fullmesh_component = {
    .base = PX_COLL_COMPONENT_HEADER("fullmesh", 1, 0, 0, px_coll_fullmesh_register, NULL, NULL),
    .query = px_coll_fullmesh_query,
};
