/*
 * abi_test.c: the growable BTL ABI, with plugins of test/abi built from
 * loop_plugin.c:
 *  - abi30, built against the frozen BTL API 3.0 headers (test/abi/btl-3.0),
 *    loads into this library, is selected beside btl/self, and moves data:
 *    an active message, put and get, and vector put/get, which the base runs
 *    as single put/get because a 3.0 module has no btl_put_v/btl_get_v;
 *    it has none of the 3.2 shareable-memory methods, which the base
 *    refuses for it;
 *  - btl/self (3.1) gets the vector calls itself;
 *  - abi30debug (the other PX_ENABLE_DEBUG) and abinewer (a newer minor than
 *    this library) are refused, saying what differs;
 *  - abi33, built against the frozen BTL API 3.3 header (before components
 *    declared thread support), loads unchanged, counts as serialized and,
 *    when the base's lock is asked for at PX_THREAD_MULTIPLE, takes it
 *    (docs/threads.md).
 * The base's fallback is also driven with a module whose put fails.
 */
#define _GNU_SOURCE
#include "test/lib/px_check.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"
#include "test/mca/mca_test_util.h"

static px_btl_module_t *loop, *self;
static px_proc_t proc;
static px_proc_t *pp[1] = {&proc};
static px_btl_endpoint_t *loop_ep[1], *self_ep[1];
static px_bitmap_t loop_reach, self_reach;

static px_mca_component_item_t *find_item(const char *name)
{
    px_mca_component_item_t *it;
    PX_LIST_FOREACH(it, &px_btl_base_framework.components, px_mca_component_item_t)
    if (0 == strcmp(it->component->component_name, name))
        return it;
    return NULL;
}

static const char *failure_reason(const char *component)
{
    for (int i = 0; i < px_mca_repository_failed_count(); i++) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (0 == strcmp(f->framework, "btl") && 0 == strcmp(f->component, component))
            return f->reason;
    }
    return NULL;
}

static void open_btl(const char *selection)
{
    setenv("PX_MCA_mca_component_path", ABI_PLUGIN_DIR, 1);
    setenv("PX_MCA_btl", selection, 1);
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
}

static void open_loop_and_self(void)
{
    open_btl("self,abi30");
    ck_assert_int_eq(px_mca_framework_open(&px_btl_base_framework), PX_SUCCESS);
    ck_assert_int_eq(px_btl_base_select(false), PX_SUCCESS);
    ck_assert_int_eq(px_btl_base_num_modules, 2);
    loop = self = NULL;
    for (int i = 0; i < px_btl_base_num_modules; i++) {
        px_btl_module_t *m = px_btl_base_modules[i];
        if (0 == strcmp(m->btl_component->base.component_name, "abi30"))
            loop = m;
        else if (0 == strcmp(m->btl_component->base.component_name, "self"))
            self = m;
    }
    ck_assert_ptr_nonnull(loop);
    ck_assert_ptr_nonnull(self);
    proc = (px_proc_t){.rank = 0, .hostname = "h", .locality = PX_PROC_LOCAL_SELF};
    PX_OBJ_CONSTRUCT(&loop_reach, px_bitmap_t);
    PX_OBJ_CONSTRUCT(&self_reach, px_bitmap_t);
    px_bitmap_init(&loop_reach, 1);
    px_bitmap_init(&self_reach, 1);
    const char *reasons[1] = {NULL};
    ck_assert_int_eq(loop->btl_add_procs(loop, 1, pp, loop_ep, &loop_reach, reasons), PX_SUCCESS);
    ck_assert_int_eq(self->btl_add_procs(self, 1, pp, self_ep, &self_reach, reasons), PX_SUCCESS);
    ck_assert(px_bitmap_is_set_bit(&loop_reach, 0));
}

static void close_loop_and_self(void)
{
    loop->btl_del_procs(loop, 1, pp, loop_ep);
    self->btl_del_procs(self, 1, pp, self_ep);
    PX_OBJ_DESTRUCT(&loop_reach);
    PX_OBJ_DESTRUCT(&self_reach);
    ck_assert_int_eq(px_btl_base_finalize(), PX_SUCCESS);
    px_mca_var_finalize();
}

/* The plugin's own count of btl_put/btl_get calls. */
static int *loop_rdma_calls(void)
{
    px_mca_component_item_t *it = find_item("abi30");
    ck_assert_ptr_nonnull(it);
    void *h = dlopen(it->path, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    int *calls = dlsym(h, "px_btl_abi30_rdma_calls");
    ck_assert_ptr_nonnull(calls);
    dlclose(h); /* still held by the framework */
    return calls;
}

static char got[256];
static size_t got_len;
static void am_cb(px_btl_module_t *b, const px_btl_receive_descriptor_t *d)
{
    (void)b;
    got_len = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i) {
        memcpy(got + got_len, d->des_segments[i].seg_addr, d->des_segments[i].seg_len);
        got_len += d->des_segments[i].seg_len;
    }
}

START_TEST(frozen_plugin_loads_and_is_selected)
{
    open_loop_and_self();
    const px_mca_component_t *c = &loop->btl_component->base;
    ck_assert_int_eq(c->framework_version.major, 3);
    ck_assert_int_eq(c->framework_version.minor, 0);
    ck_assert_int_eq(PX_BTL_API_MAJOR, 3);
    ck_assert_int_ge(PX_BTL_API_MINOR, 1); /* the library is newer than the plugin */
    /* A 3.0 module: its size ends before the 3.1 methods, which the base
     * therefore never reads. */
    ck_assert_uint_eq(loop->btl_size, PX_BTL_MODULE_SIZE_3_0);
    ck_assert_uint_lt(loop->btl_size, PX_BTL_MODULE_SIZE);
    ck_assert(!PX_BTL_MODULE_HAS(loop, btl_put_v));
    ck_assert(!PX_BTL_MODULE_HAS(loop, btl_get_v));
    ck_assert_uint_eq(self->btl_size, PX_BTL_MODULE_SIZE);
    ck_assert(PX_BTL_MODULE_HAS(self, btl_put_v));
    ck_assert_ptr_null(failure_reason("abi30"));
    /* Nor the 3.2 shareable-memory methods: the base refuses them for it,
     * without reading past its struct (the transfer engine then registers
     * memory of its own), and its put/get serve one-sided transfers by its
     * 3.0 flags. */
    ck_assert(!PX_BTL_MODULE_HAS(loop, btl_mem_alloc));
    ck_assert(!PX_BTL_MODULE_HAS(loop, btl_mem_map));
    ck_assert(!px_btl_base_has_mem_map(loop));
    px_btl_mem_t mem;
    ck_assert_int_eq(px_btl_base_mem_alloc(loop, 4096, &mem), PX_ERR_NOT_SUPPORTED);
    ck_assert_int_eq(px_btl_base_mem_map(loop, loop_ep[0], "x", 1, &mem), PX_ERR_NOT_SUPPORTED);
    ck_assert_int_eq(px_btl_base_mem_unmap(loop, &mem), PX_ERR_NOT_SUPPORTED);
    ck_assert_int_eq(px_btl_base_mem_free(loop, &mem), PX_ERR_NOT_SUPPORTED);
    ck_assert(px_btl_base_xfer_can_put(loop));
    ck_assert(px_btl_base_xfer_can_get(loop));
    /* Active message through the plugin. */
    px_btl_base_register_am(201, am_cb, NULL);
    px_btl_descriptor_t *d = loop->btl_alloc(loop, loop_ep[0], PX_BTL_NO_ORDER, 12, 0);
    ck_assert_ptr_nonnull(d);
    memcpy(d->des_segments[0].seg_addr, "hello, 3.0!", 12);
    ck_assert_int_eq(loop->btl_send(loop, loop_ep[0], d, 201), 1);
    ck_assert_uint_eq(got_len, 12);
    ck_assert_str_eq(got, "hello, 3.0!");
    loop->btl_free(loop, d);
    px_btl_base_register_am(201, NULL, NULL);
    close_loop_and_self();
}
END_TEST

static int v_calls, v_status;
static void *v_local;
static void v_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local_address,
                   px_btl_registration_handle_t *local_handle, void *context, void *cbdata,
                   int status)
{
    (void)btl;
    (void)ep;
    (void)local_handle;
    ck_assert_ptr_eq(context, &v_calls);
    ck_assert_ptr_eq(cbdata, &v_status);
    v_calls++;
    v_status = status;
    v_local = local_address;
}

/* put_v then get_v of three segments through `m`; checks the data and the
 * single completion. */
static void vector_round_trip(px_btl_module_t *m, px_btl_endpoint_t *ep)
{
    char src[3][32], dst[3][32], back[3][32];
    px_btl_rdma_segment_t segs[3];
    for (int i = 0; i < 3; i++) {
        snprintf(src[i], sizeof(src[i]), "segment %d of the vector", i % 10);
        memset(dst[i], 0, sizeof(dst[i]));
        memset(back[i], 0, sizeof(back[i]));
        segs[i] = (px_btl_rdma_segment_t){src[i], (uint64_t)(uintptr_t)dst[i], (size_t)(10 + i)};
    }
    v_calls = 0;
    v_status = -1;
    ck_assert_int_eq(px_btl_base_put_v(m, ep, segs, 3, NULL, NULL, 0, PX_BTL_NO_ORDER, v_done,
                                       &v_calls, &v_status),
                     PX_SUCCESS);
    ck_assert_int_eq(v_calls, 1);
    ck_assert_int_eq(v_status, PX_SUCCESS);
    ck_assert_ptr_eq(v_local, src[0]);
    for (int i = 0; i < 3; i++) {
        ck_assert(0 == memcmp(dst[i], src[i], (size_t)(10 + i)));
        ck_assert_int_eq(dst[i][10 + i], 0); /* no more than the segment */
        segs[i].local_address = back[i];
    }
    v_calls = 0;
    ck_assert_int_eq(px_btl_base_get_v(m, ep, segs, 3, NULL, NULL, 0, PX_BTL_NO_ORDER, v_done,
                                       &v_calls, &v_status),
                     PX_SUCCESS);
    ck_assert_int_eq(v_calls, 1);
    ck_assert_int_eq(v_status, PX_SUCCESS);
    for (int i = 0; i < 3; i++)
        ck_assert(0 == memcmp(back[i], src[i], (size_t)(10 + i)));
}

START_TEST(frozen_plugin_vector_uses_fallback)
{
    setenv("PX_MCA_btl_base_verbose", "10", 1);
    open_loop_and_self();
    int *calls = loop_rdma_calls();
    int before_calls = *calls;
    uint64_t before = px_btl_base_vector_fallbacks();
    capture_begin();
    vector_round_trip(loop, loop_ep[0]);
    const char *err = capture_end();
    /* Two vector calls, each run by the base as three single ones. */
    ck_assert_uint_eq(px_btl_base_vector_fallbacks() - before, 2);
    ck_assert_int_eq(*calls - before_calls, 6);
    ck_assert_msg(strstr(err, "btl abi30: module (btl API 3.0, btl_size ") &&
                      strstr(err, ") has no btl_put_v: the base issues 3 btl_put") &&
                      strstr(err, ") has no btl_get_v: the base issues 3 btl_get"),
                  "verbose output lacks the fallback: %s", err);
    close_loop_and_self();
}
END_TEST

START_TEST(native_vector_in_self)
{
    open_loop_and_self();
    uint64_t before = px_btl_base_vector_fallbacks();
    vector_round_trip(self, self_ep[0]);
    ck_assert_uint_eq(px_btl_base_vector_fallbacks(), before); /* self did it itself */
    close_loop_and_self();
}
END_TEST

/* Opening the framework with only `name` fails; its recorded reason and the
 * verbose output contain `part`, the reason also every string of `also`
 * (NULL-terminated; NULL: nothing more). */
static void assert_refused(const char *name, const char *part, const char *const *also)
{
    open_btl(name);
    setenv("PX_MCA_btl_base_verbose", "1", 1);
    capture_begin();
    int rc = px_mca_framework_open(&px_btl_base_framework);
    const char *err = capture_end();
    ck_assert_int_ne(rc, PX_SUCCESS); /* the include list names only it */
    const char *reason = failure_reason(name);
    ck_assert_msg(reason != NULL, "%s was not refused", name);
    ck_assert_msg(strstr(reason, part) != NULL, "reason \"%s\" lacks \"%s\"", reason, part);
    ck_assert_msg(strstr(err, part) != NULL, "error output \"%s\" lacks \"%s\"", err, part);
    for (int i = 0; also && also[i]; i++)
        ck_assert_msg(strstr(reason, also[i]), "reason \"%s\" lacks \"%s\"", reason, also[i]);
    ck_assert_ptr_null(find_item(name));
    px_mca_var_finalize();
}

START_TEST(other_debug_refused)
{
    char *part = NULL, *also = NULL;
    ck_assert_int_ge(asprintf(&part,
                              "build fingerprint mismatch: the plugin was built with debug=%d, "
                              "sizeof(px_object_t)=",
                              !PX_ENABLE_DEBUG),
                     0);
    ck_assert_int_ge(asprintf(&also, "; this library with debug=%d, sizeof(px_object_t)=%zu",
                              PX_ENABLE_DEBUG, sizeof(px_object_t)),
                     0);
    /* The BTL descriptor embeds an object: its size differs too, by name. */
    const char *const more[] = {also, "sizeof(px_btl_descriptor_t)=", NULL};
    assert_refused("abi30debug", part, more);
    free(part);
    free(also);
}
END_TEST

START_TEST(newer_minor_refused)
{
    char *part = NULL;
    ck_assert_int_ge(asprintf(&part,
                              "framework API too new: built for btl API 3.%d.%d, this library has "
                              "3.%d.%d",
                              PX_BTL_API_MINOR + 1, PX_BTL_API_RELEASE, PX_BTL_API_MINOR,
                              PX_BTL_API_RELEASE),
                     0);
    assert_refused("abinewer", part, NULL);
    free(part);
}
END_TEST

/* The fallback on a module of the test's own: a 3.0-sized module whose put
 * fails on the second segment, and one without put at all. */
static int fake_puts;
static int fake_put(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, void *local_address,
                    uint64_t remote_address, px_btl_registration_handle_t *local_handle,
                    px_btl_registration_handle_t *remote_handle, size_t size, int flags, int order,
                    px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    (void)remote_handle;
    (void)flags;
    (void)order;
    if (++fake_puts == 2)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    memcpy((void *)(uintptr_t)remote_address, local_address, size);
    cbfunc(btl, endpoint, local_address, local_handle, cbcontext, cbdata, PX_SUCCESS);
    return PX_SUCCESS;
}

START_TEST(fallback_errors)
{
    px_btl_module_t m = {.btl_size = PX_BTL_MODULE_SIZE_3_0, .btl_put = fake_put};
    char a[4] = "abc", b[4] = "", c[4] = "";
    px_btl_rdma_segment_t segs[2] = {{a, (uint64_t)(uintptr_t)b, 4},
                                     {a, (uint64_t)(uintptr_t)c, 4}};
    /* The second cannot start: the first completes, then one callback with the error. */
    v_calls = 0;
    ck_assert_int_eq(
        px_btl_base_put_v(&m, NULL, segs, 2, NULL, NULL, 0, 0, v_done, &v_calls, &v_status),
        PX_SUCCESS);
    ck_assert_int_eq(v_calls, 1);
    ck_assert_int_eq(v_status, PX_ERR_TEMP_OUT_OF_RESOURCE);
    ck_assert_str_eq(b, "abc");
    /* The first cannot start: the error is returned, no callback. */
    fake_puts = 1;
    v_calls = 0;
    ck_assert_int_eq(
        px_btl_base_put_v(&m, NULL, segs, 2, NULL, NULL, 0, 0, v_done, &v_calls, &v_status),
        PX_ERR_TEMP_OUT_OF_RESOURCE);
    ck_assert_int_eq(v_calls, 0);
    ck_assert_int_eq(
        px_btl_base_put_v(&m, NULL, segs, 0, NULL, NULL, 0, 0, v_done, &v_calls, &v_status),
        PX_ERR_BAD_PARAM);
    ck_assert_int_eq(
        px_btl_base_get_v(&m, NULL, segs, 2, NULL, NULL, 0, 0, v_done, &v_calls, &v_status),
        PX_ERR_NOT_SUPPORTED);
    /* Beyond its btl_size a method is never read, whatever the memory holds. */
    m.btl_put_v = (px_btl_rdma_v_fn)(uintptr_t)1; /* would crash if called */
    ck_assert(!PX_BTL_MODULE_HAS(&m, btl_put_v));
    fake_puts = 10;
    v_calls = 0;
    ck_assert_int_eq(
        px_btl_base_put_v(&m, NULL, segs, 2, NULL, NULL, 0, 0, v_done, &v_calls, &v_status),
        PX_SUCCESS);
    ck_assert_int_eq(v_calls, 1);
}
END_TEST

/* A plugin of the minor before thread support: it carries the messaging
 * layer at PX_THREAD_MULTIPLE, and the base serializes it (its component
 * struct ends before btl_thread_support: the base must not read that member,
 * which ASan would report as a global-buffer-overflow in the plugin). */
START_TEST(minor_3_3_plugin_serialized_at_multiple)
{
    setenv("PX_MCA_mca_component_path", ABI_PLUGIN_DIR, 1);
    setenv("PX_MCA_btl", "abi33", 1);
    int provided = -1;
    ck_assert_int_eq(px_init_thread(PX_THREAD_MULTIPLE, &provided), PX_SUCCESS);
    ck_assert_int_eq(provided, PX_THREAD_MULTIPLE);
    ck_assert_int_eq(px_btl_base_num_modules, 1);
    px_btl_module_t *m = px_btl_base_modules[0];
    const px_btl_component_t *c = m->btl_component;
    ck_assert_str_eq(c->base.component_name, "abi33");
    ck_assert_int_eq(c->base.framework_version.minor, 3);
    ck_assert_uint_eq(m->btl_size, PX_BTL_MODULE_SIZE_3_3);
    ck_assert_ptr_null(failure_reason("abi33"));
    ck_assert_uint_eq(px_btl_base_thread_support(c), PX_BTL_THREADS_SERIALIZED);
    ck_assert_str_eq(px_btl_base_thread_support_name(c), "serialized");
    /* The runtime serializes it through the API lock today; the base's own
     * lock (for calls outside it) is asked for as the runtime will. */
    ck_assert(!px_btl_base_serialized(m));
    ck_assert_int_eq(px_btl_base_serialize(px_btl_base_modules, px_btl_base_num_modules),
                     PX_SUCCESS);
    ck_assert(px_btl_base_serialized(m));
    uint64_t before = px_btl_base_serial_locks(m);
    int v = 42, r = 0;
    ck_assert_int_eq(px_send(&v, sizeof v, 0, 7), PX_SUCCESS);
    ck_assert_int_eq(px_recv(&r, sizeof r, PX_ANY_SOURCE, 7, NULL), PX_SUCCESS);
    ck_assert_int_eq(r, 42);
    ck_assert_uint_gt(px_btl_base_serial_locks(m), before); /* the message went through it */
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
    /* finalize gave the plugin its own methods back and dropped the lock */
    ck_assert(!px_btl_base_serialized(m));
}
END_TEST

PX_CHECK_MAIN("abi", NULL, NULL, 0, frozen_plugin_loads_and_is_selected,
              frozen_plugin_vector_uses_fallback, native_vector_in_self, other_debug_refused,
              newer_minor_refused, fallback_errors, minor_3_3_plugin_serialized_at_multiple)
