/*
 * objbench_opal.c: the peer side of objbench: Open MPI's OPAL object system
 * and free list, measured the same way as Plexus's. Compiled only when
 * configure found OPAL's headers (PX_HAVE_OPAL); linked with -lopen-pal.
 * Only opal_/OBJ_ names are used here, only px_bench_ names are exported.
 */
#include "opal_config.h"
#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/class/opal_object.h"
#include "opal/runtime/opal.h"
#include "test/bench/objbench.h"

/* Same layout as objbench.c's bench_obj_t: a list item plus 32 bytes. */
typedef struct {
    opal_list_item_t super;
    int payload[8];
} opal_bench_obj_t;
static void opal_bench_obj_construct(opal_bench_obj_t *o)
{
    o->payload[0] = 1;
}
static OBJ_CLASS_INSTANCE(opal_bench_obj_t, opal_list_item_t, opal_bench_obj_construct, NULL);

typedef struct {
    opal_free_list_item_t super;
    int payload[8];
} opal_bench_frag_t;
static void opal_bench_frag_construct(opal_bench_frag_t *f)
{
    f->payload[0] = 1;
}
static OBJ_CLASS_INSTANCE(opal_bench_frag_t, opal_free_list_item_t, opal_bench_frag_construct,
                          NULL);

static opal_free_list_t fl;

int px_bench_opal_init(void)
{
    int argc = 1;
    char *args[] = {"objbench", NULL}, **argv = args;
    if (OPAL_SUCCESS != opal_init_util(&argc, &argv))
        return -1;
    OBJ_CONSTRUCT(&fl, opal_free_list_t);
    /* 64 items first, grow by 64, no maximum, no payload (as objbench.c) */
    return opal_free_list_init(&fl, sizeof(opal_bench_frag_t), 64, OBJ_CLASS(opal_bench_frag_t), 0,
                               64, 64, -1, 64, NULL, 0, NULL, NULL, NULL);
}

void px_bench_opal_fini(void)
{
    OBJ_DESTRUCT(&fl);
    opal_finalize_util();
}

double px_bench_opal_new_release(long n)
{
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        opal_bench_obj_t *o = OBJ_NEW(opal_bench_obj_t);
        __asm__ __volatile__("" ::"r"(o) : "memory");
        OBJ_RELEASE(o);
    }
    return (px_bench_now_ns() - t) / n;
}

double px_bench_opal_free_list_st(long n)
{
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        opal_free_list_item_t *it = opal_free_list_get_st(&fl);
        __asm__ __volatile__("" ::"r"(it) : "memory");
        opal_free_list_return_st(&fl, it);
    }
    return (px_bench_now_ns() - t) / n;
}

double px_bench_opal_free_list_mt(long n)
{
    bool saved = opal_uses_threads;
    opal_uses_threads = true; /* opal_free_list_get/return take the atomic LIFO path */
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        opal_free_list_item_t *it = opal_free_list_get(&fl);
        __asm__ __volatile__("" ::"r"(it) : "memory");
        opal_free_list_return(&fl, it);
    }
    double r = (px_bench_now_ns() - t) / n;
    opal_uses_threads = saved;
    return r;
}
