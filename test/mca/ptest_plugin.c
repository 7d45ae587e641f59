/*
 * ptest_plugin.c: one source for every test plugin of the ptest framework.
 * test/mca/Makefile.inc builds it several times with -D settings:
 *   PTEST_NAME        file-name component (symbol px_ptest_<PTEST_NAME>_component)
 *   PTEST_STRUCT_NAME component name inside the struct (default PTEST_NAME)
 *   PTEST_ABI         MCA ABI version (default current)
 *   PTEST_API_MAJOR   framework API major (default 1)
 *   PTEST_API_MINOR   framework API minor (default the library's)
 *   PTEST_FLIP_DEBUG  built with the other PX_ENABLE_DEBUG than the library
 *   PTEST_UNRESOLVED  call a function that exists nowhere
 *   PTEST_OPEN_RC     what open returns (default PX_SUCCESS)
 *   PTEST_CLASSES     define classes and use them in open (an object made and
 *                     released, a free list grown), as a transport would;
 *                     everything is destructed before open fails or in close
 */
#include "core/px_config.h"
#ifdef PTEST_FLIP_DEBUG /* before any header that lays out objects */
#if PX_ENABLE_DEBUG
#undef PX_ENABLE_DEBUG
#define PX_ENABLE_DEBUG 0
#else
#undef PX_ENABLE_DEBUG
#define PX_ENABLE_DEBUG 1
#endif
#endif
#include <stdbool.h>
#include <stdio.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/mca/ptest.h"

#define STR2(x)       #x
#define STR(x)        STR2(x)
#define CAT3(a, b, c) a##b##c
#define SYM(a, b, c)  CAT3(a, b, c)

#ifndef PTEST_STRUCT_NAME
#define PTEST_STRUCT_NAME STR(PTEST_NAME)
#endif
#ifndef PTEST_ABI
#define PTEST_ABI PX_MCA_ABI_VERSION_CURRENT
#endif
#ifndef PTEST_API_MAJOR
#define PTEST_API_MAJOR PX_PTEST_API_MAJOR
#endif
#ifndef PTEST_API_MINOR
#define PTEST_API_MINOR PX_PTEST_API_MINOR
#endif
#ifndef PTEST_OPEN_RC
#define PTEST_OPEN_RC PX_SUCCESS
#endif

static int counters[3];
static int weight = 7;
static const char *label = "plugin-default";
static const px_mca_var_enum_value_t modes[] = {{1, "fast"}, {2, "slow"}, {0, NULL}};
static int mode = 1;

static const int *plugin_counters(void)
{
    return counters;
}

static const char *found = "not probed";
static char found_buf[64];

/* An informational variable computed on first read (like a discovery). */
static int plugin_probe(void)
{
    snprintf(found_buf, sizeof(found_buf), "probed:%s", STR(PTEST_NAME));
    found = found_buf;
    return PX_SUCCESS;
}

static int plugin_register(void)
{
    counters[0]++;
    px_mca_var_register("ptest", STR(PTEST_NAME), "weight", "Weight of a ptest plugin",
                        PX_MCA_VAR_TYPE_INT, NULL, 4, PX_MCA_VAR_SCOPE_LOCAL, 0, &weight);
    px_mca_var_register("ptest", STR(PTEST_NAME), "label", "Label of a ptest plugin",
                        PX_MCA_VAR_TYPE_STRING, NULL, 4, PX_MCA_VAR_SCOPE_LOCAL, 0, &label);
    px_mca_var_register("ptest", STR(PTEST_NAME), "mode", "Mode of a ptest plugin",
                        PX_MCA_VAR_TYPE_ENUM, modes, 4, PX_MCA_VAR_SCOPE_LOCAL, 0, &mode);
    int idx = px_mca_var_register("ptest", STR(PTEST_NAME), "found",
                                  "What a ptest plugin found (probed on first read)",
                                  PX_MCA_VAR_TYPE_STRING, NULL, 2, PX_MCA_VAR_SCOPE_CONSTANT,
                                  PX_MCA_VAR_FLAG_READONLY, &found);
    if (idx >= 0)
        px_mca_var_set_probe(idx, plugin_probe);
    return PX_SUCCESS;
}

#ifdef PTEST_CLASSES
#include "core/class/free_list.h"
typedef struct {
    px_object_t super;
    int value;
} ptest_thing_t;
static void thing_construct(ptest_thing_t *t)
{
    t->value = 42;
}
PX_CLASS_INSTANCE(ptest_thing_t, px_object_t, thing_construct, NULL);

typedef struct {
    px_free_list_item_t super;
    int tag;
} ptest_frag_t;
static void frag_construct(ptest_frag_t *f)
{
    f->tag = 7;
}
static void frag_destruct(ptest_frag_t *f)
{
    f->tag = -1;
}
PX_CLASS_INSTANCE(ptest_frag_t, px_free_list_item_t, frag_construct, frag_destruct);

static px_free_list_t frags;
static bool frags_made;

static int use_classes(void)
{
    ptest_thing_t *t = PX_OBJ_NEW(ptest_thing_t);
    if (NULL == t || t->value != 42)
        return PX_ERR_OUT_OF_RESOURCE;
    PX_OBJ_RELEASE(t);
    PX_OBJ_CONSTRUCT(&frags, px_free_list_t);
    frags_made = true;
    px_free_list_params_t p = {
        .item_class = PX_CLASS(ptest_frag_t), .num_initial = 4, .thread_safe = true};
    if (px_free_list_init(&frags, &p) != PX_SUCCESS)
        return PX_ERR_OUT_OF_RESOURCE;
    px_free_list_item_t *item = px_free_list_get(&frags);
    if (NULL == item || ((ptest_frag_t *)item)->tag != 7)
        return PX_ERR_OUT_OF_RESOURCE;
    px_free_list_return(&frags, item);
    return PX_SUCCESS;
}

static void drop_classes(void)
{
    if (frags_made)
        PX_OBJ_DESTRUCT(&frags);
    frags_made = false;
}
#endif

static int plugin_open(void)
{
    counters[1]++;
#ifdef PTEST_CLASSES
    int rc = use_classes();
    if (rc != PX_SUCCESS || PTEST_OPEN_RC != PX_SUCCESS)
        drop_classes();
    if (rc != PX_SUCCESS)
        return rc;
#endif
    return PTEST_OPEN_RC;
}

static int plugin_close(void)
{
    counters[2]++;
#ifdef PTEST_CLASSES
    drop_classes();
#endif
    return PX_SUCCESS;
}

#ifdef PTEST_UNRESOLVED
extern int px_ptest_function_that_exists_nowhere(void);
#endif

static int plugin_query(int *priority)
{
#ifdef PTEST_UNRESOLVED
    *priority = px_ptest_function_that_exists_nowhere();
#else
    *priority = weight;
#endif
    return PX_SUCCESS;
}

const px_ptest_component_t SYM(px_ptest_, PTEST_NAME, _component) = {
    .base =
        {
            .mca_abi_version = PTEST_ABI,
            .framework_name = "ptest",
            .framework_version = {PTEST_API_MAJOR, PTEST_API_MINOR, 0},
            .component_name = PTEST_STRUCT_NAME,
            .component_version = {1, 2, 3},
            .register_params = plugin_register,
            .open = plugin_open,
            .close = plugin_close,
            .fingerprint = PX_MCA_FINGERPRINT(0, 0, 0, 0),
        },
    .query = plugin_query,
    .counters = plugin_counters,
};
