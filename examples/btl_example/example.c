/*
 * example.c: a minimal out-of-tree BTL component, built only against the
 * installed Plexus headers and plexus.pc (see Makefile and
 * docs/writing-a-component.md). It registers one variable, keeps its
 * fragments in a free list of its own class (as a transport does), and its
 * module reaches no peer, explaining why, so px_init names it among the
 * modules tried. When the framework closes, the plugin is unloaded; the class
 * registry forgets its class first (docs/object-system.md).
 *
 * Build:  cc -shared -fPIC $(pkg-config --cflags plexus) -o plexus_btl_example.so example.c
 * Use:    PX_MCA_mca_component_path=$PWD px_info --param btl example --level 9
 */
#include <stdlib.h>
#include <core/class/free_list.h>
#include <core/mca/var.h>
#include <core/util/error.h>
#include <frameworks/btl/btl.h>

static char *px_btl_example_greeting;
static px_btl_module_t px_btl_example_module;

/* A fragment: a class of this plugin, derived from px_free_list_item_t. */
typedef struct {
    px_free_list_item_t super;
    size_t length;
} px_btl_example_frag_t;
static void px_btl_example_frag_construct(px_btl_example_frag_t *frag)
{
    frag->length = 0;
}
PX_CLASS_INSTANCE(px_btl_example_frag_t, px_free_list_item_t, px_btl_example_frag_construct, NULL);

static px_free_list_t px_btl_example_frags;
static bool px_btl_example_frags_made;

/* The component's variables, as a table (docs/writing-a-component.md). */
static const px_mca_var_field_t px_btl_example_vars[] = {
    {.name = "greeting",
     .help = "A string this example component registers",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 9,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "hello from an out-of-tree component",
     .storage = &px_btl_example_greeting},
    {.name = NULL},
};

static int px_btl_example_register(void)
{
    int rc = px_mca_var_register_table("btl", "example", px_btl_example_vars, -1, NULL);
    return rc < 0 ? rc : PX_SUCCESS;
}

static int px_btl_example_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                                    px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                                    const char **reasons)
{
    (void)btl;
    (void)procs;
    (void)reachable;
    for (size_t i = 0; i < nprocs; i++) {
        endpoints[i] = NULL;
        reasons[i] = "the example component reaches no peer: it only shows how to build one";
    }
    return PX_SUCCESS;
}

static int px_btl_example_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                                    px_btl_endpoint_t **endpoints)
{
    (void)btl;
    (void)nprocs;
    (void)procs;
    (void)endpoints;
    return PX_SUCCESS;
}

static int px_btl_example_finalize(px_btl_module_t *btl)
{
    (void)btl;
    /* Every object the plugin made is gone before its code is unloaded. */
    if (px_btl_example_frags_made)
        PX_OBJ_DESTRUCT(&px_btl_example_frags);
    px_btl_example_frags_made = false;
    return PX_SUCCESS;
}

static px_btl_module_t **px_btl_example_init(int *num_modules, bool progress_threads)
{
    (void)progress_threads;
    *num_modules = 0;
    PX_OBJ_CONSTRUCT(&px_btl_example_frags, px_free_list_t);
    px_btl_example_frags_made = true;
    px_free_list_params_t params = {
        .item_class = PX_CLASS(px_btl_example_frag_t), .payload_size = 256, .num_initial = 8};
    px_btl_module_t **modules = NULL;
    if (px_free_list_init(&px_btl_example_frags, &params) == PX_SUCCESS)
        modules = malloc(sizeof(*modules));
    px_free_list_item_t *frag = modules ? px_free_list_get(&px_btl_example_frags) : NULL;
    if (NULL == frag) { /* decline: give back what was made */
        free(modules);
        px_btl_example_finalize(NULL);
        return NULL;
    }
    px_free_list_return(&px_btl_example_frags, frag);
    px_btl_example_module.btl_size = PX_BTL_MODULE_SIZE;
    px_btl_example_module.btl_exclusivity = PX_BTL_EXCLUSIVITY_LOW;
    px_btl_example_module.btl_latency = 1000000;
    px_btl_example_module.btl_bandwidth = 1;
    px_btl_example_module.btl_flags = PX_BTL_FLAGS_SEND;
    px_btl_example_module.btl_add_procs = px_btl_example_add_procs;
    px_btl_example_module.btl_del_procs = px_btl_example_del_procs;
    px_btl_example_module.btl_finalize = px_btl_example_finalize;
    modules[0] = &px_btl_example_module;
    *num_modules = 1;
    return modules;
}

/* The one symbol the repository looks for: px_<framework>_<component>_component. */
const px_btl_component_t px_btl_example_component = {
    .base = PX_BTL_COMPONENT_HEADER("example", 1, 2, 3, px_btl_example_register, NULL, NULL),
    .btl_init = px_btl_example_init,
};
