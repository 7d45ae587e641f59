/*
 * class_plugin.c: a shared object loaded by class_unload_test, standing for a
 * third-party plugin: it defines two classes (one derived from
 * px_free_list_item_t), makes objects of them, and can keep one alive. It
 * links nothing: the object system comes from the test program, which
 * exports it (-export-dynamic), built with the same PX_ENABLE_DEBUG setting.
 */
#include "core/class/free_list.h"
#include "core/class/object.h"
#include "core/util/error.h"

typedef struct {
    px_object_t super;
    int value;
} class_plugin_thing_t;
static void thing_construct(class_plugin_thing_t *t)
{
    t->value = 42;
}
PX_CLASS_INSTANCE(class_plugin_thing_t, px_object_t, thing_construct, NULL);

typedef struct {
    px_free_list_item_t super;
    int tag;
} class_plugin_frag_t;
static void frag_construct(class_plugin_frag_t *f)
{
    f->tag = 7;
}
PX_CLASS_INSTANCE(class_plugin_frag_t, px_free_list_item_t, frag_construct, NULL);

static class_plugin_thing_t *kept;

int class_plugin_run(int keep);
int class_plugin_drop(void);

/* Use both classes; with keep, one object stays alive. Returns 0 on success. */
int class_plugin_run(int keep)
{
    class_plugin_thing_t *t = PX_OBJ_NEW(class_plugin_thing_t);
    if (NULL == t || t->value != 42)
        return -1;
    px_free_list_t frags;
    PX_OBJ_CONSTRUCT(&frags, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(class_plugin_frag_t), .num_initial = 4};
    int rc = px_free_list_init(&frags, &p);
    px_free_list_item_t *item = rc == PX_SUCCESS ? px_free_list_get(&frags) : NULL;
    if (item) {
        rc = ((class_plugin_frag_t *)item)->tag == 7 ? 0 : -1;
        px_free_list_return(&frags, item);
    }
    PX_OBJ_DESTRUCT(&frags);
    if (keep)
        kept = t;
    else
        PX_OBJ_RELEASE(t);
    return item ? rc : -1;
}

/* Release the object kept by class_plugin_run(1). */
int class_plugin_drop(void)
{
    if (kept)
        PX_OBJ_RELEASE(kept);
    return 0;
}
