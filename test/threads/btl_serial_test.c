/*
 * btl_serial_test.c: the BTL base serializes a module that is not thread-safe
 * (BTL API 3.4, docs/threads.md) and leaves the others alone.
 *  - a test module that counts the threads inside it at once: serialized by
 *    px_btl_base_serialize, 4 threads calling send, sendi, put, alloc/free,
 *    progress and a progress hook of the component's own
 *    (px_btl_base_progress_locked) never overlap in it, a callback's call back into the same
 *    module does not deadlock, and every call took the lock once;
 *  - the same module declared thread-safe is not wrapped, and two threads are
 *    seen inside it at once (the detector above is real);
 *  - a component built before 3.4 counts as not thread-safe whatever follows
 *    its struct; a module of an older minor is never written past btl_size;
 *    px_btl_base_unserialize gives back exactly the component's methods;
 *  - the runtime: at PX_THREAD_SERIALIZED no module is wrapped and no lock is
 *    taken; at PX_THREAD_MULTIPLE every in-tree transport (none says it is
 *    thread-safe) is, and messages from several threads go through its lock.
 * It starts threads, so test/tsan/run-tsan.sh runs it (test/threads).
 */
#define _GNU_SOURCE
#include "test/lib/px_check.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"

/* ---- a module that sees how many threads are inside it ---- */

static atomic_int inside;       /* threads inside a method now */
static atomic_int max_inside;   /* the most seen at once */
static atomic_long calls;       /* calls into the module (nested ones too) */
static _Thread_local int depth; /* this thread's nesting (a call back into the module) */
static bool wait_for_company;   /* the control: stay until a second thread came in */

static void enter(void)
{
    atomic_fetch_add(&calls, 1); /* every entry, nested ones too: each takes the lock */
    if (depth++ > 0)
        return;
    int now = atomic_fetch_add(&inside, 1) + 1;
    int seen = atomic_load(&max_inside);
    while (now > seen && !atomic_compare_exchange_weak(&max_inside, &seen, now))
        ;
    if (wait_for_company) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            sched_yield();
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (atomic_load(&max_inside) < 2 && t.tv_sec - t0.tv_sec < 20);
    } else {
        for (int i = 0; i < 3; ++i) /* a window for another thread to come in */
            sched_yield();
    }
}

static void leave(void)
{
    if (--depth > 0)
        return;
    atomic_fetch_sub(&inside, 1);
}

static px_btl_descriptor_t fake_des;

static px_btl_descriptor_t *fake_alloc(px_btl_module_t *btl, px_btl_endpoint_t *ep, uint8_t order,
                                       size_t size, uint32_t flags)
{
    (void)btl, (void)ep, (void)order, (void)size, (void)flags;
    enter();
    leave();
    return &fake_des;
}

static int fake_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    (void)btl, (void)des;
    enter();
    leave();
    return PX_SUCCESS;
}

/* A send that completes at once and, like a callback, calls back into the
 * module it runs in. */
static int fake_send(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                     px_btl_tag_t tag)
{
    (void)ep, (void)tag;
    enter();
    btl->btl_free(btl, des);
    leave();
    return 1;
}

static int fake_sendi(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *header,
                      size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                      uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor)
{
    (void)btl, (void)ep, (void)header, (void)header_size, (void)payload, (void)payload_size;
    (void)order, (void)flags, (void)tag, (void)descriptor;
    enter();
    leave();
    return PX_SUCCESS;
}

static int fake_put(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local, uint64_t remote,
                    px_btl_registration_handle_t *lh, px_btl_registration_handle_t *rh, size_t size,
                    int flags, int order, px_btl_rdma_completion_fn cbfunc, void *cbcontext,
                    void *cbdata)
{
    (void)remote, (void)rh, (void)size, (void)flags, (void)order;
    enter();
    if (cbfunc)
        cbfunc(btl, ep, local, lh, cbcontext, cbdata, PX_SUCCESS);
    leave();
    return PX_SUCCESS;
}

static int fake_progress(px_btl_module_t *btl)
{
    (void)btl;
    enter();
    leave();
    return 1;
}

static int fake_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *ep)
{
    (void)btl, (void)ep;
    return PX_SUCCESS;
}

static px_btl_component_t fake_component = {
    .base = PX_BTL_COMPONENT_HEADER("fakeser", 1, 0, 0, NULL, NULL, NULL),
    .btl_thread_support = PX_BTL_THREADS_SERIALIZED,
};

static px_btl_module_t fake_module(void)
{
    return (px_btl_module_t){
        .btl_size = PX_BTL_MODULE_SIZE,
        .btl_component = &fake_component,
        .btl_flags = PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT,
        .btl_alloc = fake_alloc,
        .btl_free = fake_free,
        .btl_send = fake_send,
        .btl_sendi = fake_sendi,
        .btl_put = fake_put,
        .btl_progress = fake_progress,
        .btl_dyn_remove = fake_dyn_remove,
    };
}

/* The most threads seen inside the module at once. */
static int most_inside(void)
{
    return atomic_load(&max_inside);
}

static void reset(void)
{
    atomic_store(&inside, 0);
    atomic_store(&max_inside, 0);
    atomic_store(&calls, 0);
    wait_for_company = false;
}

/* A completion the module runs from inside put: calls back into it. */
static void put_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                     px_btl_registration_handle_t *lh, void *ctx, void *cbdata, int status)
{
    (void)ep, (void)local, (void)lh, (void)ctx, (void)cbdata, (void)status;
    btl->btl_progress(btl);
}

#define ITERS 400
static void *hammer(void *arg)
{
    px_btl_module_t *m = arg;
    char buf[8] = "x";
    for (int i = 0; i < ITERS; ++i) {
        px_btl_descriptor_t *d = m->btl_alloc(m, NULL, PX_BTL_NO_ORDER, 8, 0);
        ck_assert_int_eq(m->btl_send(m, NULL, d, 1), 1);
        ck_assert_int_eq(m->btl_sendi(m, NULL, buf, 1, NULL, 0, PX_BTL_NO_ORDER, 0, 1, NULL),
                         PX_SUCCESS);
        ck_assert_int_eq(m->btl_put(m, NULL, buf, 0, NULL, NULL, 1, 0, 0, put_done, NULL, NULL),
                         PX_SUCCESS);
        m->btl_progress(m);
        /* a component's own progress hook, through the base */
        px_btl_base_progress_locked(m, fake_progress);
    }
    return NULL;
}

static void run_threads(px_btl_module_t *m, int n)
{
    pthread_t t[8];
    for (int i = 0; i < n; ++i)
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, m), 0);
    for (int i = 0; i < n; ++i)
        pthread_join(t[i], NULL);
}

START_TEST(serialized_module_one_thread_inside)
{
    reset();
    px_btl_module_t m = fake_module();
    ck_assert_uint_eq(px_btl_base_thread_support(&fake_component), PX_BTL_THREADS_SERIALIZED);
    ck_assert(!px_btl_base_serialized(&m));
    ck_assert_int_eq(px_btl_base_serialize((px_btl_module_t *[]){&m}, 1), PX_SUCCESS);
    ck_assert(px_btl_base_serialized(&m));
    ck_assert_ptr_ne(m.btl_send, fake_send); /* the base's wrapper */
    run_threads(&m, 4);
    ck_assert_int_eq(most_inside(), 1);
    /* Every call took the lock once (a nested one again, recursively), and no
     * lock was taken for nothing: progress that found the module busy
     * returned without a call. */
    ck_assert_uint_eq(px_btl_base_serial_locks(&m), (uint64_t)atomic_load(&calls));
    ck_assert_int_ge(atomic_load(&calls), 4 * ITERS * 4); /* alloc, send, sendi, put */
    px_btl_base_unserialize();
    ck_assert_ptr_eq(m.btl_send, fake_send);
    ck_assert(!px_btl_base_serialized(&m));
}
END_TEST

static void *progress_once(void *arg)
{
    px_btl_module_t *m = arg;
    m->btl_progress(m);
    return NULL;
}

START_TEST(thread_safe_module_left_alone)
{
    reset();
    px_btl_component_t safe = fake_component;
    safe.btl_thread_support = PX_BTL_THREADS_MULTIPLE;
    px_btl_module_t m = fake_module();
    m.btl_component = &safe;
    ck_assert_uint_eq(px_btl_base_thread_support(&safe), PX_BTL_THREADS_MULTIPLE);
    ck_assert_str_eq(px_btl_base_thread_support_name(&safe), "multiple");
    ck_assert_int_eq(px_btl_base_serialize((px_btl_module_t *[]){&m}, 1), PX_SUCCESS);
    ck_assert(!px_btl_base_serialized(&m));
    ck_assert_ptr_eq(m.btl_send, fake_send);
    ck_assert_ptr_eq(m.btl_progress, fake_progress);
    /* Not serialized, two threads are inside at once: what the test above
     * would see without the base's lock. */
    wait_for_company = true;
    pthread_t t[2];
    for (int i = 0; i < 2; ++i)
        ck_assert_int_eq(pthread_create(&t[i], NULL, progress_once, &m), 0);
    for (int i = 0; i < 2; ++i)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(most_inside(), 2);
    /* A progress hook of the component's own runs directly, without a lock. */
    wait_for_company = false;
    long before = atomic_load(&calls);
    ck_assert_int_eq(px_btl_base_progress_locked(&m, fake_progress), 1);
    ck_assert_int_eq(atomic_load(&calls), before + 1);
    ck_assert_uint_eq(px_btl_base_serial_locks(&m), 0);
    px_btl_base_unserialize();
}
END_TEST

START_TEST(older_minor_serialized_and_never_written_past_its_size)
{
    reset();
    /* A component of 3.3 has no btl_thread_support; whatever the bytes there
     * hold, it is not a promise. An unknown value is none either. */
    px_btl_component_t old = fake_component;
    old.base.framework_version.minor = 3;
    old.btl_thread_support = PX_BTL_THREADS_MULTIPLE;
    ck_assert_uint_eq(px_btl_base_thread_support(&old), PX_BTL_THREADS_SERIALIZED);
    ck_assert_str_eq(px_btl_base_thread_support_name(&old), "serialized");
    px_btl_component_t odd = fake_component;
    odd.btl_thread_support = 7;
    ck_assert_uint_eq(px_btl_base_thread_support(&odd), PX_BTL_THREADS_SERIALIZED);
    ck_assert_uint_eq(px_btl_base_thread_support(NULL), PX_BTL_THREADS_SERIALIZED);

    /* A 3.0 module: the base wraps what it has and never touches the members
     * after its btl_size (here a sentinel the base must leave). */
    px_btl_module_t m = fake_module();
    m.btl_component = &old;
    m.btl_size = PX_BTL_MODULE_SIZE_3_0;
    m.btl_put_v = (px_btl_rdma_v_fn)(uintptr_t)1;
    px_btl_module_t before = m;
    ck_assert_int_eq(px_btl_base_serialize((px_btl_module_t *[]){&m}, 1), PX_SUCCESS);
    ck_assert(px_btl_base_serialized(&m));
    ck_assert_ptr_ne(m.btl_put, fake_put);
    ck_assert_ptr_eq(m.btl_put_v, (px_btl_rdma_v_fn)(uintptr_t)1);
    ck_assert_ptr_eq(m.btl_dyn_remove, fake_dyn_remove);
    ck_assert_ptr_null(m.btl_get); /* not offered stays not offered */
    /* serializing twice does not wrap twice */
    ck_assert_int_eq(px_btl_base_serialize((px_btl_module_t *[]){&m}, 1), PX_SUCCESS);
    run_threads(&m, 2);
    ck_assert_int_eq(most_inside(), 1);
    ck_assert_uint_eq(px_btl_base_serial_locks(&m), (uint64_t)atomic_load(&calls));
    px_btl_base_unserialize();
    ck_assert_mem_eq(&m, &before, sizeof(m));
}
END_TEST

/* ---- the runtime ---- */

static void use_self_only(void)
{
    setenv("PX_MCA_btl", "self", 1);
}

START_TEST(runtime_serialized_level_takes_no_lock)
{
    use_self_only();
    int provided = -1;
    ck_assert_int_eq(px_init_thread(PX_THREAD_SERIALIZED, &provided), PX_SUCCESS);
    ck_assert_int_eq(provided, PX_THREAD_SERIALIZED);
    ck_assert_int_ge(px_btl_base_num_modules, 1);
    px_btl_module_t *m = px_btl_base_modules[0];
    int (*send)(px_btl_module_t *, px_btl_endpoint_t *, px_btl_descriptor_t *, px_btl_tag_t) =
        m->btl_send;
    for (int i = 0; i < 100; ++i) {
        int v = i, r = -1;
        ck_assert_int_eq(px_send(&v, sizeof v, 0, 3), PX_SUCCESS);
        ck_assert_int_eq(px_recv(&r, sizeof r, 0, 3, NULL), PX_SUCCESS);
        ck_assert_int_eq(r, i);
    }
    for (int i = 0; i < px_btl_base_num_modules; ++i) {
        ck_assert(!px_btl_base_serialized(px_btl_base_modules[i]));
        ck_assert_uint_eq(px_btl_base_serial_locks(px_btl_base_modules[i]), 0);
    }
    ck_assert_ptr_eq(m->btl_send, send); /* the component's own method all along */
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

static void *ping_self(void *arg)
{
    int tag = (int)(intptr_t)arg;
    for (int i = 0; i < 200; ++i) {
        int v = tag * 1000 + i, r = -1;
        ck_assert_int_eq(px_send(&v, sizeof v, 0, tag), PX_SUCCESS);
        ck_assert_int_eq(px_recv(&r, sizeof r, 0, tag, NULL), PX_SUCCESS);
        ck_assert_int_eq(r, v);
    }
    return NULL;
}

START_TEST(runtime_multiple_serializes_transports)
{
    use_self_only();
    int provided = -1;
    ck_assert_int_eq(px_init_thread(PX_THREAD_MULTIPLE, &provided), PX_SUCCESS);
    ck_assert_int_eq(provided, PX_THREAD_MULTIPLE);
    /* The API lock serializes every transport call today, so the runtime
     * wraps nothing; the base's lock is what it will use once it calls
     * transports outside the API lock: asked for here, as it will. */
    for (int i = 0; i < px_btl_base_num_modules; ++i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        ck_assert_uint_eq(px_btl_base_thread_support(m->btl_component), PX_BTL_THREADS_SERIALIZED);
        ck_assert(!px_btl_base_serialized(m));
    }
    ck_assert_int_eq(px_btl_base_serialize(px_btl_base_modules, px_btl_base_num_modules),
                     PX_SUCCESS);
    for (int i = 0; i < px_btl_base_num_modules; ++i)
        ck_assert(px_btl_base_serialized(px_btl_base_modules[i]));
    px_btl_module_t *m = px_btl_base_modules[0];
    uint64_t before = px_btl_base_serial_locks(m);
    pthread_t t[4];
    for (int i = 0; i < 4; ++i)
        ck_assert_int_eq(pthread_create(&t[i], NULL, ping_self, (void *)(intptr_t)(10 + i)), 0);
    for (int i = 0; i < 4; ++i)
        pthread_join(t[i], NULL);
    /* 800 messages, each at least one send into the module */
    ck_assert_uint_ge(px_btl_base_serial_locks(m) - before, 800);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

PX_CHECK_MAIN("btl_serial", NULL, NULL, 120, serialized_module_one_thread_inside,
              thread_safe_module_left_alone, older_minor_serialized_and_never_written_past_its_size,
              runtime_serialized_level_takes_no_lock, runtime_multiple_serializes_transports)
