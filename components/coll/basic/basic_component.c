/*
 * basic_component.c: registration and query of coll/basic.
 */
#include "components/coll/basic/basic.h"
#include "core/mca/var.h"
#include "core/util/error.h"

int px_coll_basic_priority = 10;

static const px_mca_var_field_t px_coll_basic_vars[] = {
    PX_COLL_PRIORITY_VAR("basic", px_coll_basic_priority),
    {.name = NULL},
};

static int px_coll_basic_register(void)
{
    return px_mca_var_register_table("coll", "basic", px_coll_basic_vars, -1, NULL);
}

static int px_coll_basic_query(px_coll_group_t *g, int *priority, px_coll_module_t **module)
{
    (void)g;
    *priority = px_coll_basic_priority;
    *module = &px_coll_basic_module;
    return PX_SUCCESS;
}

const px_coll_component_t px_coll_basic_component = {
    .base = PX_COLL_COMPONENT_HEADER("basic", 1, 0, 0, px_coll_basic_register, NULL, NULL),
    .query = px_coll_basic_query,
};
