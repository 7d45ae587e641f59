/*
 * free_list_test.c: px_free_list_t: growth to the maximum then NULL, payload
 * and item alignment, construction exactly once per item, allocator hooks and
 * the item-init callback, parameter errors, and the thread-safe path under 4
 * threads with an owner mark on every item.
 */
#include "test/lib/px_check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "core/class/free_list.h"
#include "core/util/error.h"

#if PX_CHECK_TSAN /* ThreadSanitizer is ~10x slower */
#define ITERS 200000
#else
#define ITERS 1000000
#endif

typedef struct {
    px_free_list_item_t super;
    atomic_int owner;
    int init_tag;
    char pad[40];
} frag_t;
static atomic_int ctor_calls, dtor_calls;
static void frag_construct(frag_t *f)
{
    atomic_init(&f->owner, 0);
    f->init_tag = 0;
    atomic_fetch_add(&ctor_calls, 1);
}
static void frag_destruct(frag_t *f)
{
    (void)f;
    atomic_fetch_add(&dtor_calls, 1);
}
PX_CLASS_DECLARATION(frag_t);
PX_CLASS_INSTANCE(frag_t, px_free_list_item_t, frag_construct, frag_destruct);

typedef struct {
    px_list_item_t super; /* not a free-list item */
} not_item_t;
PX_CLASS_DECLARATION(not_item_t);
PX_CLASS_INSTANCE(not_item_t, px_list_item_t, NULL, NULL);

static void reset_counts(void)
{
    atomic_store(&ctor_calls, 0);
    atomic_store(&dtor_calls, 0);
}

START_TEST(grows_to_max_then_null_alignment_honoured)
{
    reset_counts();
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t),
                               .payload_size = 100,
                               .payload_alignment = 256,
                               .item_alignment = 128,
                               .num_initial = 3,
                               .num_max = 10,
                               .num_per_grow = 4};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_SUCCESS);
    ck_assert_uint_eq(fl.num_allocated, 3);
    ck_assert_int_eq(atomic_load(&ctor_calls), 3);
    frag_t *got[10];
    for (int i = 0; i < 10; i++) {
        got[i] = (frag_t *)px_free_list_get(&fl);
        ck_assert_ptr_nonnull(got[i]);
        ck_assert_uint_eq((uintptr_t)got[i] % 128, 0);
        ck_assert_ptr_nonnull(got[i]->super.payload);
        ck_assert_uint_eq((uintptr_t)got[i]->super.payload % 256, 0);
        ck_assert_ptr_eq(got[i]->super.owner, &fl);
        memset(got[i]->super.payload, i, 100); /* payloads must not overlap */
        for (int j = 0; j < i; j++)
            ck_assert_ptr_ne(got[i], got[j]);
    }
    for (int i = 0; i < 10; i++)
        for (int k = 0; k < 100; k++)
            ck_assert_int_eq(((unsigned char *)got[i]->super.payload)[k], i);
    /* 3 initial + grows of 4 and then 3 (capped by the maximum) */
    ck_assert_uint_eq(fl.num_allocated, 10);
    ck_assert_ptr_null(px_free_list_get(&fl));
    ck_assert_int_eq(px_free_list_grow(&fl, 5), PX_ERR_TEMP_OUT_OF_RESOURCE);
    px_free_list_return(&fl, &got[4]->super);
    ck_assert_ptr_eq(px_free_list_get(&fl), &got[4]->super);
    ck_assert_ptr_null(px_free_list_get(&fl));
    for (int i = 0; i < 10; i++)
        px_free_list_return(&fl, &got[i]->super);
    ck_assert_int_eq(atomic_load(&ctor_calls), 10); /* once per item, never on get */
    ck_assert_int_eq(atomic_load(&dtor_calls), 0);
    PX_OBJ_DESTRUCT(&fl);
    ck_assert_int_eq(atomic_load(&dtor_calls), 10);
}
END_TEST

START_TEST(st_path_lifo_order_and_defaults)
{
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t)};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_SUCCESS);
    ck_assert_uint_eq(fl.num_allocated, 0); /* nothing until the first get */
    px_free_list_item_t *a = px_free_list_get(&fl);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(fl.num_allocated, 32); /* default num_per_grow */
    ck_assert_ptr_null(a->payload);          /* no payload asked for */
    ck_assert_uint_eq((uintptr_t)a % 64, 0); /* default alignment */
    px_free_list_item_t *b = px_free_list_get(&fl);
    px_free_list_return(&fl, a);
    px_free_list_return(&fl, b);
    ck_assert_ptr_eq(px_free_list_get(&fl), b); /* last returned, first out */
    ck_assert_ptr_eq(px_free_list_get(&fl), a);
    ck_assert_int_eq(px_free_list_grow(&fl, 3), PX_SUCCESS); /* unlimited max */
    ck_assert_uint_eq(fl.num_allocated, 35);
    PX_OBJ_DESTRUCT(&fl);
}
END_TEST

START_TEST(path_chosen_once_at_init)
{
    px_free_list_t st, mt;
    PX_OBJ_CONSTRUCT(&st, px_free_list_t);
    PX_OBJ_CONSTRUCT(&mt, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t), .num_initial = 1};
    ck_assert_int_eq(px_free_list_init(&st, &p), PX_SUCCESS);
    p.thread_safe = true;
    ck_assert_int_eq(px_free_list_init(&mt, &p), PX_SUCCESS);
    ck_assert_ptr_ne((void *)st.get, (void *)mt.get);
    ck_assert_ptr_ne((void *)st.put, (void *)mt.put);
    PX_OBJ_DESTRUCT(&st);
    PX_OBJ_DESTRUCT(&mt);
}
END_TEST

/* ---- allocator hooks ---- */
typedef struct {
    int allocs, frees;
    size_t outstanding;
    int fail_after; /* allocations to allow; -1: no limit */
    void *ptrs[64];
    size_t sizes[64];
    int bad_free; /* a free whose pointer/size/cookie did not match an alloc */
} hook_state_t;

static void *hook_alloc(void *ctx, size_t size, size_t align, void **cookie)
{
    hook_state_t *h = ctx;
    if (h->fail_after == 0)
        return NULL;
    if (h->fail_after > 0)
        h->fail_after--;
    void *p = NULL;
    if (posix_memalign(&p, align, size))
        return NULL;
    h->ptrs[h->allocs] = p;
    h->sizes[h->allocs] = size;
    *cookie = (void *)(intptr_t)(1000 + h->allocs); /* e.g. a memory registration */
    h->allocs++;
    h->outstanding += size;
    return p;
}

static void hook_free(void *ctx, void *ptr, size_t size, void *cookie)
{
    hook_state_t *h = ctx;
    int i = (int)((intptr_t)cookie - 1000);
    if (i < 0 || i >= h->allocs || h->ptrs[i] != ptr || h->sizes[i] != size)
        h->bad_free++;
    else
        h->ptrs[i] = NULL;
    h->frees++;
    h->outstanding -= size;
    free(ptr);
}

static int init_calls;
static int item_init(px_free_list_item_t *item, void *ctx)
{
    int *tag = ctx;
    init_calls++;
    ((frag_t *)item)->init_tag = *tag;
    /* the item is already constructed when its init runs */
    return atomic_load(&((frag_t *)item)->owner) == 0 ? PX_SUCCESS : PX_ERROR;
}

static int failing_init(px_free_list_item_t *item, void *ctx)
{
    (void)item;
    int *left = ctx;
    return (*left)-- > 0 ? PX_SUCCESS : PX_ERR_NOT_AVAILABLE;
}

START_TEST(allocator_hooks_and_item_init_used)
{
    reset_counts();
    hook_state_t items = {.fail_after = -1}, payloads = {.fail_after = -1};
    px_free_list_allocator_t ia = {hook_alloc, hook_free, &items};
    px_free_list_allocator_t pa = {hook_alloc, hook_free, &payloads};
    int tag = 77;
    init_calls = 0;
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t),
                               .payload_size = 4000,
                               .payload_alignment = 4096,
                               .num_initial = 4,
                               .num_per_grow = 4,
                               .num_max = 12,
                               .item_allocator = &ia,
                               .payload_allocator = &pa,
                               .item_init = item_init,
                               .item_init_ctx = &tag};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_SUCCESS);
    ck_assert_int_eq(items.allocs, 1);
    ck_assert_int_eq(payloads.allocs, 1);
    ck_assert_int_eq(init_calls, 4);
    px_free_list_item_t *got[12];
    for (int i = 0; i < 12; i++) {
        got[i] = px_free_list_get(&fl);
        ck_assert_ptr_nonnull(got[i]);
        ck_assert_int_eq(((frag_t *)got[i])->init_tag, 77);
        ck_assert_uint_eq((uintptr_t)got[i]->payload % 4096, 0);
        /* the payload cookie is handed to the item */
        intptr_t c = (intptr_t)got[i]->registration - 1000;
        ck_assert(c >= 0 && c < payloads.allocs);
        ck_assert((char *)got[i]->payload >= (char *)payloads.ptrs[c] &&
                  (char *)got[i]->payload + 4000 <= (char *)payloads.ptrs[c] + payloads.sizes[c]);
        /* and the item lives in memory from the item hook */
        int inside = 0;
        for (int k = 0; k < items.allocs; k++)
            inside |= (char *)got[i] >= (char *)items.ptrs[k] &&
                      (char *)got[i] + sizeof(frag_t) <= (char *)items.ptrs[k] + items.sizes[k];
        ck_assert(inside);
    }
    ck_assert_ptr_null(px_free_list_get(&fl));
    ck_assert_int_eq(items.allocs, 3);
    ck_assert_int_eq(payloads.allocs, 3);
    ck_assert_int_eq(init_calls, 12);
    ck_assert_int_eq(atomic_load(&ctor_calls), 12);
    for (int i = 0; i < 12; i++)
        px_free_list_return(&fl, got[i]);
    PX_OBJ_DESTRUCT(&fl);
    ck_assert_int_eq(atomic_load(&dtor_calls), 12);
    ck_assert_int_eq(items.frees, 3);
    ck_assert_int_eq(payloads.frees, 3);
    ck_assert_int_eq(items.bad_free + payloads.bad_free, 0);
    ck_assert_uint_eq(items.outstanding + payloads.outstanding, 0);
}
END_TEST

START_TEST(item_init_error_stops_grow_and_cleans_up)
{
    reset_counts();
    hook_state_t items = {.fail_after = -1}, payloads = {.fail_after = -1};
    px_free_list_allocator_t ia = {hook_alloc, hook_free, &items};
    px_free_list_allocator_t pa = {hook_alloc, hook_free, &payloads};
    int left = 6;
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t),
                               .payload_size = 64,
                               .num_initial = 4,
                               .num_per_grow = 4,
                               .item_allocator = &ia,
                               .payload_allocator = &pa,
                               .item_init = failing_init,
                               .item_init_ctx = &left};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_SUCCESS);
    px_free_list_item_t *got[4];
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(got[i] = px_free_list_get(&fl));
    /* the next chunk fails on its third item: no item of it is handed out */
    ck_assert_ptr_null(px_free_list_get(&fl));
    ck_assert_uint_eq(fl.num_allocated, 4);
    ck_assert_int_eq(px_free_list_grow(&fl, 4), PX_ERR_NOT_AVAILABLE);
    ck_assert_int_eq(atomic_load(&dtor_calls), 3 + 1); /* failed chunks destructed */
    ck_assert_int_eq(items.allocs, 3);
    ck_assert_int_eq(items.frees, 2); /* the two failed chunks went back */
    ck_assert_int_eq(payloads.frees, 2);
    for (int i = 0; i < 4; i++)
        px_free_list_return(&fl, got[i]);
    PX_OBJ_DESTRUCT(&fl);
    ck_assert_int_eq(items.bad_free + payloads.bad_free, 0);
    ck_assert_uint_eq(items.outstanding + payloads.outstanding, 0);
    ck_assert_int_eq(atomic_load(&ctor_calls), atomic_load(&dtor_calls));
}
END_TEST

START_TEST(allocator_failure_is_reported)
{
    hook_state_t items = {.fail_after = 1}, payloads = {.fail_after = 0};
    px_free_list_allocator_t ia = {hook_alloc, hook_free, &items};
    px_free_list_allocator_t pa = {hook_alloc, hook_free, &payloads};
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t),
                               .payload_size = 64,
                               .num_initial = 2,
                               .item_allocator = &ia,
                               .payload_allocator = &pa};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_ERR_OUT_OF_RESOURCE);
    ck_assert_int_eq(items.frees, 1); /* the item chunk was given back */
    ck_assert_ptr_null(px_free_list_get(&fl));
    PX_OBJ_DESTRUCT(&fl);
    ck_assert_uint_eq(items.outstanding, 0);
}
END_TEST

START_TEST(bad_params_rejected)
{
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    px_free_list_params_t p = {0};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_free_list_init(&fl, NULL), PX_ERR_BAD_PARAM);
    p.item_class = PX_CLASS(not_item_t);
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_ERR_BAD_PARAM);
    p.item_class = PX_CLASS(frag_t);
    p.item_size = sizeof(frag_t) - 1;
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_ERR_BAD_PARAM);
    p.item_size = 0;
    p.payload_alignment = 48;
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_ERR_BAD_PARAM);
    p.payload_alignment = 0;
    p.num_initial = 5;
    p.num_max = 4;
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_ERR_BAD_PARAM);
    PX_OBJ_DESTRUCT(&fl);
}
END_TEST

/* ---- 4 threads, thread-safe path ---- */
static px_free_list_t shared_fl;
static atomic_int violations, nulls, go, done;
/* Each thread does at least ITERS get/return pairs and keeps going until every
 * thread has done its share, so that the threads really overlap even when
 * the machine is busy (bounded at 20x ITERS). */
static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < 20 * ITERS; i++) {
        if (i == ITERS)
            atomic_fetch_add(&done, 1);
        if (i >= ITERS && atomic_load_explicit(&done, memory_order_relaxed) == 4)
            break;
        frag_t *f = (frag_t *)px_free_list_get(&shared_fl);
        if (NULL == f) {
            atomic_fetch_add(&nulls, 1);
            continue;
        }
        if (0 != atomic_exchange(&f->owner, me))
            atomic_fetch_add(&violations, 1);
        if (me != atomic_exchange(&f->owner, 0))
            atomic_fetch_add(&violations, 1);
        px_free_list_return(&shared_fl, &f->super);
    }
    return NULL;
}

START_TEST(threads_get_return_no_item_held_twice)
{
    reset_counts();
    atomic_store(&go, 0);
    atomic_store(&done, 0);
    atomic_store(&violations, 0);
    atomic_store(&nulls, 0);
    PX_OBJ_CONSTRUCT(&shared_fl, px_free_list_t);
    /* Few items and growth under contention: 4 threads hold at most 4, so
     * get never has to fail, and a grow happens while others pop. */
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t),
                               .payload_size = 32,
                               .num_initial = 1,
                               .num_per_grow = 2,
                               .num_max = 6,
                               .thread_safe = true};
    ck_assert_int_eq(px_free_list_init(&shared_fl, &p), PX_SUCCESS);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1)), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int v = atomic_load(&violations), n0 = atomic_load(&nulls);
    ck_assert_msg(v == 0, "%d times an item was held by two threads at once", v);
    ck_assert_msg(n0 == 0, "get returned NULL %d times below the maximum", n0);
    ck_assert_uint_le(shared_fl.num_allocated, 6);
    ck_assert_uint_eq(shared_fl.tc.slot, 0); /* a list with a maximum has no caches */
    ck_assert_int_eq(atomic_load(&ctor_calls), (int)shared_fl.num_allocated);
    /* every allocated item is on the list exactly once */
    frag_t *all[6];
    size_t n = 0;
    while (n < shared_fl.num_allocated && (all[n] = (frag_t *)px_free_list_get(&shared_fl)))
        n++;
    ck_assert_uint_eq(n, shared_fl.num_allocated);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            ck_assert_ptr_ne(all[i], all[j]);
    PX_OBJ_DESTRUCT(&shared_fl);
    ck_assert_int_eq(atomic_load(&dtor_calls), atomic_load(&ctor_calls));
}
END_TEST

/* Unlimited thread-safe list: each thread keeps a per-thread cache. The same
 * owner-mark check, and after the threads exit every item has come back to
 * the shared LIFO (their caches are flushed at thread exit). */
static void *worker_inline(void *arg)
{
    int me = (int)(intptr_t)arg;
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < 20 * ITERS; i++) {
        if (i == ITERS)
            atomic_fetch_add(&done, 1);
        if (i >= ITERS && atomic_load_explicit(&done, memory_order_relaxed) == 4)
            break;
        /* hold up to 3 items at once so caches fill and spill */
        frag_t *f[3];
        int k = 1 + i % 3;
        for (int j = 0; j < k; j++) {
            f[j] =
                (frag_t *)(i % 2 ? px_free_list_get_mt(&shared_fl) : px_free_list_get(&shared_fl));
            if (NULL == f[j] || 0 != atomic_exchange(&f[j]->owner, me))
                atomic_fetch_add(&violations, 1);
        }
        for (int j = 0; j < k; j++) {
            if (f[j] && me != atomic_exchange(&f[j]->owner, 0))
                atomic_fetch_add(&violations, 1);
            if (f[j])
                px_free_list_return_mt(&shared_fl, &f[j]->super);
        }
    }
    return NULL;
}

START_TEST(threads_cached_path_no_item_held_twice)
{
    reset_counts();
    atomic_store(&go, 0);
    atomic_store(&done, 0);
    atomic_store(&violations, 0);
    PX_OBJ_CONSTRUCT(&shared_fl, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t),
                               .num_initial = 8,
                               .num_per_grow = 8,
                               .thread_safe = true}; /* no maximum: cached */
    ck_assert_int_eq(px_free_list_init(&shared_fl, &p), PX_SUCCESS);
    ck_assert_uint_ne(shared_fl.tc.slot, 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_inline, (void *)(intptr_t)(i + 1)), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int v = atomic_load(&violations);
    ck_assert_msg(v == 0, "%d times an item was held twice (or get failed)", v);
    ck_assert_int_eq(atomic_load(&ctor_calls), (int)shared_fl.num_allocated);
    /* every item is back on the shared LIFO exactly once */
    size_t n = 0;
    px_list_item_t *it;
    while (NULL != (it = px_lifo_pop_atomic(&shared_fl.super))) {
        ck_assert_int_eq(atomic_exchange(&((frag_t *)it)->owner, -1), 0);
        n++;
    }
    ck_assert_uint_eq(n, shared_fl.num_allocated);
    PX_OBJ_DESTRUCT(&shared_fl);
    ck_assert_int_eq(atomic_load(&dtor_calls), atomic_load(&ctor_calls));
}
END_TEST

/* A thread that outlives a list must not hand out the dead list's items from
 * its cache when a new list takes the same cache slot. */
static pthread_barrier_t bar;
static px_free_list_t fl_a, fl_b;
static void *long_lived(void *arg)
{
    (void)arg;
    px_free_list_item_t *x = px_free_list_get(&fl_a);
    px_free_list_return(&fl_a, x); /* now in this thread's cache for fl_a */
    pthread_barrier_wait(&bar);    /* main destroys fl_a, makes fl_b */
    pthread_barrier_wait(&bar);
    intptr_t bad = 0;
    for (int i = 0; i < 40; i++) {
        px_free_list_item_t *y = px_free_list_get(&fl_b);
        bad += (NULL == y || y->owner != &fl_b);
    }
    return (void *)bad;
}

START_TEST(stale_thread_cache_not_reused)
{
    px_free_list_params_t p = {
        .item_class = PX_CLASS(frag_t), .num_initial = 4, .num_per_grow = 4, .thread_safe = true};
    PX_OBJ_CONSTRUCT(&fl_a, px_free_list_t);
    ck_assert_int_eq(px_free_list_init(&fl_a, &p), PX_SUCCESS);
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, long_lived, NULL);
    pthread_barrier_wait(&bar);
    uint32_t slot = fl_a.tc.slot;
    PX_OBJ_DESTRUCT(&fl_a);
    PX_OBJ_CONSTRUCT(&fl_b, px_free_list_t);
    ck_assert_int_eq(px_free_list_init(&fl_b, &p), PX_SUCCESS);
    ck_assert_uint_eq(fl_b.tc.slot, slot); /* the slot was reused */
    pthread_barrier_wait(&bar);
    void *bad;
    pthread_join(t, &bad);
    ck_assert_ptr_null(bad);
    pthread_barrier_destroy(&bar);
    PX_OBJ_DESTRUCT(&fl_b);
}
END_TEST

START_TEST(inline_st_api)
{
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    px_free_list_params_t p = {.item_class = PX_CLASS(frag_t), .num_per_grow = 2, .num_max = 3};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_SUCCESS);
    px_free_list_item_t *a = px_free_list_get_st(&fl), *b = px_free_list_get_st(&fl);
    px_free_list_item_t *c = px_free_list_get_st(&fl);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_null(px_free_list_get_st(&fl));
    px_free_list_return_st(&fl, b);
    ck_assert_ptr_eq(px_free_list_get(&fl), b); /* same list, generic API */
    px_free_list_return(&fl, a);
    px_free_list_return_st(&fl, b);
    px_free_list_return_st(&fl, c);
    PX_OBJ_DESTRUCT(&fl);
}
END_TEST

PX_CHECK_MAIN("free_list", NULL, NULL, 60, grows_to_max_then_null_alignment_honoured,
              st_path_lifo_order_and_defaults, path_chosen_once_at_init,
              allocator_hooks_and_item_init_used, item_init_error_stops_grow_and_cleans_up,
              allocator_failure_is_reported, bad_params_rejected,
              threads_get_return_no_item_held_twice, threads_cached_path_no_item_held_twice,
              stale_thread_cache_not_reused, inline_st_api)
