/*
 * self_test.c: btl/self through the module interface: reachability and
 * reasons, the three fragment lists chosen by size and bounded by
 * btl_self_free_list_max, zero-copy and packing prepare_src, send with its
 * completion and ownership rules, sendi, put/get, and the module variables.
 */
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include "components/btl/self/self.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"

static px_btl_module_t *btl;
static px_proc_t procs[2];
static px_proc_t *pp[2] = {&procs[0], &procs[1]};
static px_btl_endpoint_t *eps[2];
static px_bitmap_t reach;
static const char *reasons[2];

static void open_self(void)
{
    setenv("PX_MCA_btl", "self", 1);
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
    ck_assert_int_eq(px_mca_framework_open(&px_btl_base_framework), PX_SUCCESS);
    ck_assert_int_eq(px_btl_base_select(false), PX_SUCCESS);
    ck_assert_int_eq(px_btl_base_num_modules, 1);
    btl = px_btl_base_modules[0];
    ck_assert_str_eq(btl->btl_component->base.component_name, "self");
    procs[0] = (px_proc_t){.rank = 3, .hostname = "h", .locality = PX_PROC_LOCAL_SELF};
    procs[1] = (px_proc_t){.rank = 4, .hostname = "h", .locality = PX_PROC_LOCAL_HOST};
    PX_OBJ_CONSTRUCT(&reach, px_bitmap_t);
    px_bitmap_init(&reach, 2);
    ck_assert_int_eq(btl->btl_add_procs(btl, 2, pp, eps, &reach, reasons), PX_SUCCESS);
}

static void close_self(void)
{
    btl->btl_del_procs(btl, 2, pp, eps);
    PX_OBJ_DESTRUCT(&reach);
    ck_assert_int_eq(px_btl_base_finalize(), PX_SUCCESS);
    px_mca_var_finalize();
}

/* What the AM callback saw. */
static unsigned char got[200000];
static size_t got_len;
static int got_src, got_segs, events, am_at, cb_at;
static void am_cb(px_btl_module_t *b, const px_btl_receive_descriptor_t *d)
{
    (void)b;
    got_len = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i) {
        memcpy(got + got_len, d->des_segments[i].seg_addr, d->des_segments[i].seg_len);
        got_len += d->des_segments[i].seg_len;
    }
    got_src = d->src_rank;
    got_segs = (int)d->des_segment_count;
    ck_assert_int_eq(d->tag, 200);
    ck_assert_ptr_eq(d->cbdata, &got);
    am_at = ++events;
}
static void done_cb(px_btl_module_t *b, px_btl_endpoint_t *ep, px_btl_descriptor_t *des, int st)
{
    (void)b;
    (void)ep;
    (void)des;
    ck_assert_int_eq(st, PX_SUCCESS);
    cb_at = ++events;
}

START_TEST(reachability)
{
    open_self();
    ck_assert(px_bitmap_is_set_bit(&reach, 0));
    ck_assert(!px_bitmap_is_set_bit(&reach, 1));
    ck_assert_ptr_nonnull(eps[0]);
    ck_assert_ptr_null(eps[1]);
    ck_assert_str_eq(reasons[1], "self reaches only the calling process");
    ck_assert_uint_eq(btl->btl_exclusivity, PX_BTL_EXCLUSIVITY_HIGH);
    ck_assert(btl->btl_flags & PX_BTL_FLAGS_SEND_INPLACE);
    const char *vars[] = {
        "btl_self_exclusivity",   "btl_self_latency",       "btl_self_bandwidth",
        "btl_self_eager_limit",   "btl_self_max_send_size", "btl_self_put_limit",
        "btl_self_get_limit",     "btl_self_get_alignment", "btl_self_flags",
        "btl_self_free_list_num", "btl_self_free_list_max", "btl_self_free_list_inc"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); ++i)
        ck_assert_msg(px_mca_var_find(vars[i]) >= 0, "%s not registered", vars[i]);
    close_self();
}
END_TEST

START_TEST(alloc_by_size)
{
    open_self();
    px_btl_descriptor_t *d1 = btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, 100, 0);
    px_btl_descriptor_t *d2 = btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, 1000, 0);
    px_btl_descriptor_t *d3 = btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, 60000, 0);
    ck_assert_ptr_eq(((px_btl_self_frag_t *)d1)->list, &px_btl_self_state.frags_inline);
    ck_assert_ptr_eq(((px_btl_self_frag_t *)d2)->list, &px_btl_self_state.frags_eager);
    ck_assert_ptr_eq(((px_btl_self_frag_t *)d3)->list, &px_btl_self_state.frags_send);
    ck_assert_uint_eq(d3->des_segments[0].seg_len, 60000);
    memset(d3->des_segments[0].seg_addr, 1, 60000); /* really that big */
    ck_assert_ptr_null(btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, btl->btl_max_send_size + 1, 0));
    btl->btl_free(btl, d1);
    btl->btl_free(btl, d2);
    btl->btl_free(btl, d3);
    close_self();
}
END_TEST

START_TEST(free_list_max)
{
    setenv("PX_MCA_btl_self_free_list_max", "2", 1);
    setenv("PX_MCA_btl_self_free_list_inc", "1", 1);
    open_self();
    px_btl_descriptor_t *a = btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, 8, 0);
    px_btl_descriptor_t *b = btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, 8, 0);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, 8, 0));
    btl->btl_free(btl, a);
    a = btl->btl_alloc(btl, eps[0], PX_BTL_NO_ORDER, 8, 0);
    ck_assert_ptr_nonnull(a);
    btl->btl_free(btl, a);
    btl->btl_free(btl, b);
    close_self();
}
END_TEST

START_TEST(prepare_src_and_send)
{
    open_self();
    px_btl_base_register_am(200, am_cb, &got);
    static unsigned char data[100000];
    for (size_t i = 0; i < sizeof(data); ++i)
        data[i] = (unsigned char)(i * 13);
    /* Contiguous: header inline, payload referenced. */
    px_btl_convertor_t conv;
    px_btl_convertor_init_contig(&conv, data, sizeof(data));
    size_t size = 5000;
    px_btl_descriptor_t *d = btl->btl_prepare_src(btl, eps[0], &conv, PX_BTL_NO_ORDER, 16, &size,
                                                  PX_BTL_DES_SEND_ALWAYS_CALLBACK);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(size, 5000);
    ck_assert_uint_eq(d->des_segment_count, 2);
    ck_assert_ptr_eq(d->des_segments[1].seg_addr, data); /* zero copy */
    ck_assert_uint_eq(conv.position, 5000);
    memset(d->des_segments[0].seg_addr, 0xab, 16);
    d->des_cbfunc = done_cb;
    events = 0;
    ck_assert_int_eq(btl->btl_send(btl, eps[0], d, 200), 1);
    ck_assert_int_eq(am_at, 1); /* receiver first, */
    ck_assert_int_eq(cb_at, 2); /* then completion */
    ck_assert_uint_eq(got_len, 5016);
    ck_assert_int_eq(got_src, 3);
    ck_assert_int_eq(got[15], 0xab);
    ck_assert(0 == memcmp(got + 16, data, 5000));
    btl->btl_free(btl, d); /* no ownership flag: the caller frees */

    /* Non-contiguous: packed into one segment. */
    struct iovec iov[2] = {{data, 100}, {data + 1000, 200}};
    px_btl_convertor_t c2 = {.iov = iov, .iovcnt = 2, .total = 300, .position = 0};
    size = 300;
    d = btl->btl_prepare_src(btl, eps[0], &c2, PX_BTL_NO_ORDER, 8, &size,
                             PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(size, 300);
    ck_assert_uint_eq(d->des_segment_count, 1);
    d->des_cbfunc = done_cb;
    events = 0;
    cb_at = 0;
    ck_assert_int_eq(btl->btl_send(btl, eps[0], d, 200), 1);
    ck_assert_int_eq(cb_at, 0); /* completed in place: no callback without ALWAYS_CALLBACK */
    ck_assert_int_eq(got_segs, 1);
    ck_assert_uint_eq(got_len, 308);
    ck_assert(0 == memcmp(got + 8, data, 100));
    ck_assert(0 == memcmp(got + 108, data + 1000, 200));
    /* the BTL owned and freed it (ASan would see a leak or double free) */

    /* Packing is bounded by max_send_size. */
    px_btl_convertor_t c3 = {.iov = iov, .iovcnt = 2, .total = 300, .position = 0};
    size = 300;
    d = btl->btl_prepare_src(btl, eps[0], &c3, PX_BTL_NO_ORDER, btl->btl_max_send_size - 50, &size,
                             0);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(size, 50);
    btl->btl_free(btl, d);
    px_btl_base_register_am(200, NULL, NULL);
    close_self();
}
END_TEST

START_TEST(sendi_put_get)
{
    open_self();
    px_btl_base_register_am(200, am_cb, &got);
    const char hdr[] = "HDR", pay[] = "payload";
    px_btl_descriptor_t *out = (void *)1;
    ck_assert_int_eq(btl->btl_sendi(btl, eps[0], hdr, 3, pay, 7, PX_BTL_NO_ORDER, 0, 200, &out),
                     PX_SUCCESS);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(got_len, 10);
    ck_assert(0 == memcmp(got, "HDRpayload", 10));

    char src[64] = "remote memory", dst[64] = {0};
    ck_assert_int_eq(btl->btl_get(btl, eps[0], dst, (uint64_t)(uintptr_t)src, NULL, NULL, 14, 0,
                                  PX_BTL_NO_ORDER, NULL, NULL, NULL),
                     PX_SUCCESS);
    ck_assert_str_eq(dst, "remote memory");
    strcpy(dst, "written back");
    ck_assert_int_eq(btl->btl_put(btl, eps[0], dst, (uint64_t)(uintptr_t)src, NULL, NULL, 13, 0,
                                  PX_BTL_NO_ORDER, NULL, NULL, NULL),
                     PX_SUCCESS);
    ck_assert_str_eq(src, "written back");
    ck_assert_int_eq(btl->btl_flush(btl, NULL), PX_SUCCESS);
    px_btl_base_register_am(200, NULL, NULL);
    close_self();
}
END_TEST

START_TEST(flags_cannot_grow)
{
    setenv("PX_MCA_btl_self_flags", "0xff", 1);
    open_self();
    ck_assert_uint_eq(btl->btl_flags & 0x20, 0); /* needs-registration was not granted */
    ck_assert(btl->btl_flags & PX_BTL_FLAGS_GET);
    close_self();
}
END_TEST

PX_CHECK_MAIN("btl_self", NULL, NULL, 0, reachability, alloc_by_size, free_list_max,
              prepare_src_and_send, sendi_put_get, flags_cannot_grow)
