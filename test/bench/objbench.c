/*
 * objbench.c: cost of the object system and the free list, in ns per
 * operation: PX_OBJ_NEW+PX_OBJ_RELEASE, malloc+free of the same size, and free
 * list get+return on the single-thread and the thread-safe path. When built
 * with OPAL (configure found libopenmpi-dev), Open MPI's OBJ_NEW/OBJ_RELEASE
 * and opal_free_list are measured in the same run and the ratios printed
 * against the targets in docs/object-system.md.
 *
 *   build-dir/test/bench/objbench [iterations]     (default 20000000)
 *
 * Each figure is the best of 5 rounds (rounds interleave Plexus and OPAL so
 * machine noise hits both alike). A benchmark reports; it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "core/class/free_list.h"
#include "core/class/list.h"
#include "test/bench/objbench.h"

#define ROUNDS 5

double px_bench_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* The same shape as OPAL's benchmark object: a list item plus 32 bytes, with
 * a constructor. */
typedef struct {
    px_list_item_t super;
    int payload[8];
} bench_obj_t;
static void bench_obj_construct(bench_obj_t *o)
{
    o->payload[0] = 1;
}
PX_CLASS_DECLARATION(bench_obj_t);
PX_CLASS_INSTANCE(bench_obj_t, px_list_item_t, bench_obj_construct, NULL);

typedef struct {
    px_free_list_item_t super;
    int payload[8];
} bench_frag_t;
static void bench_frag_construct(bench_frag_t *f)
{
    f->payload[0] = 1;
}
PX_CLASS_DECLARATION(bench_frag_t);
PX_CLASS_INSTANCE(bench_frag_t, px_free_list_item_t, bench_frag_construct, NULL);

static double px_new_release(long n)
{
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        bench_obj_t *o = PX_OBJ_NEW(bench_obj_t);
        __asm__ __volatile__("" ::"r"(o) : "memory");
        PX_OBJ_RELEASE(o);
    }
    return (px_bench_now_ns() - t) / n;
}

static double malloc_free(long n)
{
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        void *p = malloc(sizeof(bench_obj_t));
        __asm__ __volatile__("" ::"r"(p) : "memory");
        free(p);
    }
    return (px_bench_now_ns() - t) / n;
}

/* Generic API: dispatch through the function pointers chosen at init. */
static double px_free_list(px_free_list_t *fl, long n)
{
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        px_free_list_item_t *it = px_free_list_get(fl);
        __asm__ __volatile__("" ::"r"(it) : "memory");
        px_free_list_return(fl, it);
    }
    return (px_bench_now_ns() - t) / n;
}

/* Inline per-kind API (what OPAL's get_st/return_st and get/return are). */
static double px_free_list_st(px_free_list_t *fl, long n)
{
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        px_free_list_item_t *it = px_free_list_get_st(fl);
        __asm__ __volatile__("" ::"r"(it) : "memory");
        px_free_list_return_st(fl, it);
    }
    return (px_bench_now_ns() - t) / n;
}

static double px_free_list_mt(px_free_list_t *fl, long n)
{
    double t = px_bench_now_ns();
    for (long i = 0; i < n; i++) {
        px_free_list_item_t *it = px_free_list_get_mt(fl);
        __asm__ __volatile__("" ::"r"(it) : "memory");
        px_free_list_return_mt(fl, it);
    }
    return (px_bench_now_ns() - t) / n;
}

static double min2(double a, double b)
{
    return a < b ? a : b;
}

static void ratio(const char *what, double ours, double peer, double target, const char *peer_name)
{
    printf("  %-34s %5.2fx %-10s (target <= %.2fx)  %s\n", what, ours / peer, peer_name, target,
           ours / peer <= target ? "met" : "NOT met");
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000L;
    if (n <= 0) {
        fprintf(stderr, "objbench: iterations '%s' must be a positive number\n", argv[1]);
        return 2;
    }
    px_free_list_t st, mt;
    PX_OBJ_CONSTRUCT(&st, px_free_list_t);
    PX_OBJ_CONSTRUCT(&mt, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(bench_frag_t),
                               .item_alignment = 64,
                               .num_initial = 64,
                               .num_per_grow = 64};
    if (px_free_list_init(&st, &p))
        return 1;
    p.thread_safe = true;
    if (px_free_list_init(&mt, &p))
        return 1;
#ifdef PX_BENCH_HAVE_OPAL
    if (px_bench_opal_init()) {
        fprintf(stderr, "objbench: opal_init_util or opal_free_list_init failed\n");
        return 1;
    }
#endif
    double px_nr = 1e30, mf = 1e30, px_st = 1e30, px_mt = 1e30, px_gst = 1e30, px_gmt = 1e30;
    double op_nr = 1e30, op_st = 1e30, op_mt = 1e30;
    (void)op_nr, (void)op_st, (void)op_mt;
    for (int r = 0; r < ROUNDS; r++) {
        px_nr = min2(px_nr, px_new_release(n));
        mf = min2(mf, malloc_free(n));
        px_st = min2(px_st, px_free_list_st(&st, n));
        px_mt = min2(px_mt, px_free_list_mt(&mt, n));
        px_gst = min2(px_gst, px_free_list(&st, n));
        px_gmt = min2(px_gmt, px_free_list(&mt, n));
#ifdef PX_BENCH_HAVE_OPAL
        op_nr = min2(op_nr, px_bench_opal_new_release(n));
        op_st = min2(op_st, px_bench_opal_free_list_st(n));
        op_mt = min2(op_mt, px_bench_opal_free_list_mt(n));
#endif
    }
    printf("objbench: %ld iterations, best of %d rounds, ns per operation\n", n, ROUNDS);
    printf("  %-44s %7.2f ns\n", "plexus PX_OBJ_NEW+PX_OBJ_RELEASE", px_nr);
    printf("  %-44s %7.2f ns\n", "malloc+free (same size)", mf);
    printf("  %-44s %7.2f ns\n", "plexus free list get_st+return_st", px_st);
    printf("  %-44s %7.2f ns\n", "plexus free list get_mt+return_mt", px_mt);
    printf("  %-44s %7.2f ns\n", "plexus px_free_list_get+return, st list", px_gst);
    printf("  %-44s %7.2f ns\n", "plexus px_free_list_get+return, mt list", px_gmt);
#ifdef PX_BENCH_HAVE_OPAL
    printf("  %-44s %7.2f ns\n", "opal OBJ_NEW+OBJ_RELEASE", op_nr);
    printf("  %-44s %7.2f ns\n", "opal_free_list get_st+return_st", op_st);
    printf("  %-44s %7.2f ns\n", "opal_free_list get+return (threads on)", op_mt);
    printf("ratios:\n");
    ratio("new+release vs OPAL", px_nr, op_nr, 0.7, "OPAL");
    ratio("new+release vs malloc+free", px_nr, mf, 1.2, "malloc");
    ratio("free list single-thread vs OPAL", px_st, op_st, 1.1, "OPAL");
    ratio("free list thread-safe vs OPAL", px_mt, op_mt, 0.7, "OPAL");
    px_bench_opal_fini();
#else
    printf("ratios:\n");
    ratio("new+release vs malloc+free", px_nr, mf, 1.2, "malloc");
    printf("  (OPAL not found at configure time: install libopenmpi-dev for the OPAL ratios)\n");
#endif
    PX_OBJ_DESTRUCT(&st);
    PX_OBJ_DESTRUCT(&mt);
    px_class_finalize();
    return 0;
}
