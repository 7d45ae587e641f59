/*
 * object_test.c: the object system: constructor/destructor order over four
 * levels of inheritance, lazy class initialisation, reference counting
 * (including two threads retaining/releasing one object 1M times each),
 * PX_OBJ_CONSTRUCT/PX_OBJ_DESTRUCT on caller memory, classes deeper than any
 * fixed bound.
 */
#include "test/lib/px_check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "core/class/object.h"

#if PX_CHECK_TSAN /* ThreadSanitizer is ~10x slower */
#define ITERS 200000
#else
#define ITERS 1000000
#endif

/* ---- a four-level chain that logs each call ---- */
static char calls[64];
static int ncalls;
static void log_call(char c)
{
    calls[ncalls++] = c;
    calls[ncalls] = '\0';
}

typedef struct {
    px_object_t super;
    int a;
} lvl1_t;
typedef struct {
    lvl1_t super;
    int b;
} lvl2_t;
typedef struct {
    lvl2_t super;
    int c;
} lvl3_t;
typedef struct {
    lvl3_t super;
    int d;
} lvl4_t;
static void c1(lvl1_t *o)
{
    o->a = 1;
    log_call('1');
}
static void d1(lvl1_t *o)
{
    (void)o;
    log_call('a');
}
static void c2(lvl2_t *o)
{
    o->b = o->super.a + 1;
    log_call('2');
}
static void d2(lvl2_t *o)
{
    (void)o;
    log_call('b');
}
static void c3(lvl3_t *o)
{
    o->c = o->super.b + 1;
    log_call('3');
}
static void d3(lvl3_t *o)
{
    (void)o;
    log_call('c');
}
static void c4(lvl4_t *o)
{
    o->d = o->super.c + 1;
    log_call('4');
}
static void d4(lvl4_t *o)
{
    (void)o;
    log_call('d');
}
PX_CLASS_DECLARATION(lvl1_t);
PX_CLASS_DECLARATION(lvl2_t);
PX_CLASS_DECLARATION(lvl3_t);
PX_CLASS_DECLARATION(lvl4_t);
PX_CLASS_INSTANCE(lvl1_t, px_object_t, c1, d1);
PX_CLASS_INSTANCE(lvl2_t, lvl1_t, c2, d2);
PX_CLASS_INSTANCE(lvl3_t, lvl2_t, c3, d3);
PX_CLASS_INSTANCE(lvl4_t, lvl3_t, c4, d4);

/* A level with no constructor/destructor in the middle of the chain. */
typedef struct {
    lvl2_t super;
} gap_t;
typedef struct {
    gap_t super;
    int e;
} below_gap_t;
static void c_below(below_gap_t *o)
{
    o->e = 7;
    log_call('G');
}
static void d_below(below_gap_t *o)
{
    (void)o;
    log_call('g');
}
PX_CLASS_DECLARATION(gap_t);
PX_CLASS_DECLARATION(below_gap_t);
PX_CLASS_INSTANCE(gap_t, lvl2_t, NULL, NULL);
PX_CLASS_INSTANCE(below_gap_t, gap_t, c_below, d_below);

START_TEST(ctor_dtor_order_four_levels)
{
    ncalls = 0;
    lvl4_t *o = PX_OBJ_NEW(lvl4_t);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(calls, "1234");
    ck_assert_int_eq(o->d, 4); /* each constructor saw its parent's work */
    ck_assert_int_eq(PX_OBJ_REFCOUNT(o), 1);
    ck_assert_ptr_eq(PX_OBJ_CLASS(o), PX_CLASS(lvl4_t));
    ck_assert_int_eq(PX_CLASS(lvl4_t)->cls_depth, 5); /* with px_object_t */
    PX_OBJ_RELEASE(o);
    ck_assert_ptr_null(o);
    ck_assert_str_eq(calls, "1234dcba");
}
END_TEST

START_TEST(ctor_dtor_order_construct_destruct)
{
    ncalls = 0;
    lvl3_t on_stack;
    PX_OBJ_CONSTRUCT(&on_stack, lvl3_t);
    ck_assert_str_eq(calls, "123");
    ck_assert_int_eq(on_stack.c, 3);
    PX_OBJ_DESTRUCT(&on_stack);
    ck_assert_str_eq(calls, "123cba");
}
END_TEST

START_TEST(ctor_dtor_skip_missing_levels)
{
    ncalls = 0;
    below_gap_t *o = PX_OBJ_NEW(below_gap_t);
    ck_assert_str_eq(calls, "12G");
    ck_assert_int_eq(o->e, 7);
    PX_OBJ_RELEASE(o);
    ck_assert_str_eq(calls, "12Ggba");
}
END_TEST

START_TEST(refcount_retain_release)
{
    ncalls = 0;
    lvl1_t *o = PX_OBJ_NEW(lvl1_t);
    lvl1_t *alias = o;
    PX_OBJ_RETAIN(o);
    PX_OBJ_RETAIN(o);
    ck_assert_int_eq(PX_OBJ_REFCOUNT(o), 3);
    PX_OBJ_RELEASE(alias);
    ck_assert_ptr_null(alias);
    ck_assert_int_eq(PX_OBJ_REFCOUNT(o), 2);
    ck_assert_str_eq(calls, "1"); /* not destructed yet */
    alias = o;
    PX_OBJ_RELEASE(alias);
    ck_assert_str_eq(calls, "1");
    PX_OBJ_RELEASE(o);
    ck_assert_str_eq(calls, "1a");
}
END_TEST

/* ---- threads ---- */
static atomic_int destructions;
typedef struct {
    px_object_t super;
    long payload;
} shared_t;
static void shared_destruct(shared_t *o)
{
    (void)o;
    atomic_fetch_add(&destructions, 1);
}
PX_CLASS_DECLARATION(shared_t);
PX_CLASS_INSTANCE(shared_t, px_object_t, NULL, shared_destruct);

static shared_t *shared_obj;
static atomic_int go;
static void *retain_release_loop(void *arg)
{
    (void)arg;
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < ITERS; i++) {
        PX_OBJ_RETAIN(shared_obj);
        shared_t *mine = shared_obj;
        PX_OBJ_RELEASE(mine);
    }
    /* Each thread started holding one reference; drop it. */
    shared_t *mine = shared_obj;
    PX_OBJ_RELEASE(mine);
    return NULL;
}

START_TEST(threads_retain_release_one_destruction)
{
    enum { NT = 3 };
    atomic_store(&destructions, 0);
    atomic_store(&go, 0);
    shared_obj = PX_OBJ_NEW(shared_t);
    for (int i = 1; i < NT; i++)
        PX_OBJ_RETAIN(shared_obj); /* one reference per thread */
    ck_assert_int_eq(PX_OBJ_REFCOUNT(shared_obj), NT);
    pthread_t t[NT];
    for (int i = 0; i < NT; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, retain_release_loop, NULL), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&destructions), 1);
}
END_TEST

/* Lazy, thread-safe class initialisation: many threads create the first
 * objects of a fresh class at once. */
typedef struct {
    px_object_t super;
    int v;
} lazy_t;
static atomic_int lazy_ctor_calls;
static void lazy_construct(lazy_t *o)
{
    o->v = 9;
    atomic_fetch_add(&lazy_ctor_calls, 1);
}
PX_CLASS_DECLARATION(lazy_t);
PX_CLASS_INSTANCE(lazy_t, px_object_t, lazy_construct, NULL);
static void *lazy_new(void *arg)
{
    (void)arg;
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < 1000; i++) {
        lazy_t *o = PX_OBJ_NEW(lazy_t);
        if (o->v != 9)
            abort();
        PX_OBJ_RELEASE(o);
    }
    return NULL;
}

START_TEST(lazy_class_init_threads)
{
    ck_assert_int_eq(atomic_load(&PX_CLASS(lazy_t)->cls_initialized), 0);
    atomic_store(&go, 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, lazy_new, NULL);
    atomic_store(&go, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&PX_CLASS(lazy_t)->cls_initialized), 1);
    ck_assert_int_eq(atomic_load(&lazy_ctor_calls), 4000);
    ck_assert_ptr_nonnull(PX_CLASS(lazy_t)->cls_construct_array);
}
END_TEST

/* ---- no fixed depth limit: a 100-level chain built at run time ---- */
#define DEEP 100
static px_class_t deep[DEEP];
static int deep_order[2 * DEEP], ndeep;
static void deep_ctor(px_object_t *o)
{
    (void)o;
    deep_order[ndeep++] = 1;
}
static void deep_dtor(px_object_t *o)
{
    (void)o;
    deep_order[ndeep++] = -1;
}

START_TEST(deep_hierarchy_no_limit)
{
    for (int i = 0; i < DEEP; i++) {
        deep[i] = (px_class_t){.cls_name = "deep",
                               .cls_parent = i ? &deep[i - 1] : PX_CLASS(px_object_t),
                               .cls_construct = deep_ctor,
                               .cls_destruct = deep_dtor,
                               .cls_sizeof = sizeof(px_object_t)};
    }
    ndeep = 0;
    px_object_t *o = px_obj_new_(&deep[DEEP - 1], __FILE__, __LINE__);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(ndeep, DEEP);
    ck_assert_int_eq(deep[DEEP - 1].cls_depth, DEEP + 1);
    PX_OBJ_RELEASE(o);
    ck_assert_int_eq(ndeep, 2 * DEEP);
    for (int i = 0; i < DEEP; i++)
        ck_assert_int_eq(deep_order[DEEP + i], -1);
}
END_TEST

START_TEST(finalize_resets_classes)
{
    lvl2_t *o = PX_OBJ_NEW(lvl2_t);
    PX_OBJ_RELEASE(o);
    ck_assert_int_eq(px_class_finalize(), 0);
    ck_assert_int_eq(atomic_load(&PX_CLASS(lvl2_t)->cls_initialized), 0);
    /* Classes initialise again on next use. */
    ncalls = 0;
    o = PX_OBJ_NEW(lvl2_t);
    ck_assert_str_eq(calls, "12");
    PX_OBJ_RELEASE(o);
}
END_TEST

/* Freed objects may be reused from the per-thread cache: constructors run
 * again on reused memory, and objects made on one thread can die on another. */
typedef struct {
    px_object_t super;
    int state;
} cached_t;
static void cached_construct(cached_t *o)
{
    o->state = 1;
}
static void cached_destruct(cached_t *o)
{
    o->state = -1;
}
PX_CLASS_DECLARATION(cached_t);
PX_CLASS_INSTANCE(cached_t, px_object_t, cached_construct, cached_destruct);

START_TEST(reuse_reconstructs)
{
    cached_t *a = PX_OBJ_NEW(cached_t);
    a->state = 42;
    cached_t *old = a;
    PX_OBJ_RELEASE(a);
    cached_t *b = PX_OBJ_NEW(cached_t);
    ck_assert_int_eq(b->state, 1); /* constructed afresh */
    ck_assert_int_eq(PX_OBJ_REFCOUNT(b), 1);
#if PX_OBJ_CACHE
    ck_assert_ptr_eq(b, old); /* the cache handed the same memory back */
#else
    (void)old;
#endif
    PX_OBJ_RELEASE(b);
    /* More objects than a cache holds, in and out twice. */
    enum { N = 3 * PX_TCACHE_CAP };
    cached_t *objs[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            objs[i] = PX_OBJ_NEW(cached_t);
            ck_assert_int_eq(objs[i]->state, 1);
            for (int j = 0; j < i; j++)
                ck_assert_ptr_ne(objs[i], objs[j]);
        }
        for (int i = 0; i < N; i++)
            PX_OBJ_RELEASE(objs[i]);
    }
}
END_TEST

static cached_t *handoff[64];
static void *release_all(void *arg)
{
    (void)arg;
    for (int i = 0; i < 64; i++)
        PX_OBJ_RELEASE(handoff[i]); /* fills this thread's cache, freed at exit */
    cached_t *mine = PX_OBJ_NEW(cached_t);
    void *ok = (void *)(intptr_t)(mine->state == 1);
    PX_OBJ_RELEASE(mine);
    return ok;
}

START_TEST(objects_die_on_other_threads)
{
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 64; i++)
            handoff[i] = PX_OBJ_NEW(cached_t);
        pthread_t t;
        void *ok = NULL;
        ck_assert_int_eq(pthread_create(&t, NULL, release_all, NULL), 0);
        pthread_join(t, &ok);
        ck_assert_ptr_eq(ok, (void *)1);
    }
}
END_TEST

PX_CHECK_MAIN("object", NULL, NULL, 60, ctor_dtor_order_four_levels,
              ctor_dtor_order_construct_destruct, ctor_dtor_skip_missing_levels,
              refcount_retain_release, threads_retain_release_one_destruction,
              lazy_class_init_threads, deep_hierarchy_no_limit, finalize_resets_classes,
              reuse_reconstructs, objects_die_on_other_threads)
