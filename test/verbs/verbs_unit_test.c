/*
 * verbs_unit_test.c: btl/verbs inside one process (sources compiled in, a
 * fake boot modex). The device list libibverbs gives is the truth:
 *  - without a device (real libibverbs, no HCA) init declines with "no RDMA
 *    device found" and the device tests below check only that;
 *  - with one (test/verbs/t_verbs.sh runs this over the software device),
 *    two modules (ranks 0 and 1) connect their RC QPs and exchange active
 *    messages (inline sendi, fragments, prepare_src), hundreds of sends
 *    with only 2 receive credits (no RNR, all delivered in order), RDMA
 *    put/get through registrations, and a bad rkey, which ends in the error
 *    callback with the work-completion status, the peer's rank and host,
 *    and later sends to that peer fail at once.
 * Device selection: include/exclude lists ("dev", "dev:port"), both set is
 * an error.
 */
#define _GNU_SOURCE
#include "test/lib/px_check.h"
#include <dirent.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "components/btl/verbs/verbs.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base_runtime.h"

/* A fake boot module: the modex is an array. */
#define NRANKS 2
#include "test/lib/fake_boot.h"

static int num_devices(void)
{
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    if (l)
        ibv_free_device_list(l);
    return l ? n : 0;
}

static char *first_device(void)
{
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    char *name = (l && n) ? strdup(ibv_get_device_name(l[0])) : NULL;
    if (l)
        ibv_free_device_list(l);
    return name;
}

static void setup(void)
{
    px_boot = &fake_boot;
    fake_boot.rank = 0;
    ck_assert_int_eq(px_btl_verbs_component.base.register_params(), PX_SUCCESS);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_include", ""), 0);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_exclude", ""), 0);
    ck_assert_int_eq(px_btl_verbs_component.base.open(), PX_SUCCESS);
}

static void teardown(void)
{
    px_btl_verbs_component.base.close();
    px_boot = NULL;
}

START_TEST(list_matching)
{
    ck_assert(px_btl_verbs_list_matches("mlx5_0", "mlx5_0", 1));
    ck_assert(px_btl_verbs_list_matches("mlx5_0", "mlx5_0", 2));
    ck_assert(px_btl_verbs_list_matches("a, mlx5_0:2", "mlx5_0", 2));
    ck_assert(!px_btl_verbs_list_matches("mlx5_0:2", "mlx5_0", 1));
    ck_assert(!px_btl_verbs_list_matches("mlx5_1", "mlx5_0", 1));
    ck_assert(!px_btl_verbs_list_matches("mlx5", "mlx5_0", 1));
}
END_TEST

START_TEST(discovery_and_decline)
{
    ck_assert_int_ge(px_mca_var_find("btl_verbs_device_exclude"), 0);
    ck_assert_int_ge(px_mca_var_find("btl_verbs_num_recvs"), 0);
    ck_assert_int_ge(px_mca_var_find("btl_verbs_exclusivity"), 0);
    int idx = px_mca_var_find("btl_verbs_devices_found");
    ck_assert_int_ge(idx, 0);
    char *found = px_mca_var_value_string(idx);
    char *details = px_mca_var_value_string(px_mca_var_find("btl_verbs_port_details"));
    if (0 == num_devices()) {
        ck_assert_str_eq(found, "none");
        int n = -1;
        ck_assert_ptr_null(px_btl_verbs_component.btl_init(&n, false));
        ck_assert_int_eq(n, 0);
        ck_assert_msg(strstr(px_btl_verbs_decline_reason, "no RDMA device found"), "reason: %s",
                      px_btl_verbs_decline_reason);
    } else {
        char *first = first_device();
        ck_assert_msg(strstr(found, first) && strstr(found, "active"), "found: %s", found);
        ck_assert_msg(strstr(details, first) && strstr(details, "max_qp_wr") &&
                          strstr(details, "mtu"),
                      "details: %s", details);
        free(first);
    }
    free(found);
    free(details);
}
END_TEST

START_TEST(include_exclude)
{
    char text[2048];
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_include", "nosuchdev0"), 0);
    ck_assert_int_eq(px_btl_verbs_discover(NULL, 0, text, sizeof(text)), 0);
    char *dev = first_device();
    if (NULL == dev)
        return; /* no device: nothing more to filter */
    char spec[300];
    /* the device's port 2 does not exist: nothing usable */
    snprintf(spec, sizeof(spec), "%s:2", dev);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_include", spec), 0);
    ck_assert_int_eq(px_btl_verbs_discover(NULL, 0, text, sizeof(text)), 0);
    snprintf(spec, sizeof(spec), "%s:1", dev);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_include", spec), 0);
    ck_assert_int_eq(px_btl_verbs_discover(NULL, 0, text, sizeof(text)), 1);
    /* both lists set: init refuses, naming both */
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_exclude", dev), 0);
    int n = -1;
    ck_assert_ptr_null(px_btl_verbs_component.btl_init(&n, false));
    ck_assert_msg(strstr(px_btl_verbs_decline_reason, "btl_verbs_device_include") &&
                      strstr(px_btl_verbs_decline_reason, "btl_verbs_device_exclude"),
                  "reason: %s", px_btl_verbs_decline_reason);
    /* excluding dev:1 leaves nothing, and init says why */
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_include", ""), 0);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_exclude", spec), 0);
    ck_assert_ptr_null(px_btl_verbs_component.btl_init(&n, false));
    ck_assert_msg(strstr(px_btl_verbs_decline_reason, "no usable RDMA port") &&
                      strstr(px_btl_verbs_decline_reason, "in btl_verbs_device_exclude"),
                  "reason: %s", px_btl_verbs_decline_reason);
    free(dev);
}
END_TEST

/* ---- two modules in one process ---- */

static px_btl_module_t *make_module(int rank)
{
    fake_boot.rank = rank;
    int n = -1;
    px_btl_module_t **mods = px_btl_verbs_component.btl_init(&n, false);
    ck_assert_msg(mods != NULL, "init declined: %s", px_btl_verbs_decline_reason);
    ck_assert_int_eq(n, 1);
    px_btl_module_t *m = mods[0];
    free(mods);
    ck_assert_int_eq(px_btl_verbs_component.btl_modex_send(), PX_SUCCESS);
    return m;
}

static px_proc_t procs[NRANKS];
static px_proc_t *proc_ptrs[NRANKS];

/* Connect module m (of rank `me`) to every rank; eps[r] is rank r's endpoint. */
static void connect_all(px_btl_module_t *m, int me, px_btl_endpoint_t **eps)
{
    const char *reasons[NRANKS] = {NULL};
    px_bitmap_t bm;
    for (int i = 0; i < NRANKS; ++i) {
        procs[i].rank = i;
        procs[i].hostname = "testhost";
        procs[i].locality = PX_PROC_LOCAL_HOST;
        proc_ptrs[i] = &procs[i];
    }
    PX_OBJ_CONSTRUCT(&bm, px_bitmap_t);
    px_bitmap_init(&bm, NRANKS);
    ((px_btl_verbs_module_t *)m)->my_rank = me;
    ck_assert_int_eq(m->btl_add_procs(m, NRANKS, proc_ptrs, eps, &bm, reasons), PX_SUCCESS);
    for (int i = 0; i < NRANKS; ++i)
        ck_assert_msg(px_bitmap_is_set_bit(&bm, i), "rank %d unreachable: %s", i,
                      reasons[i] ? reasons[i] : "?");
    PX_OBJ_DESTRUCT(&bm);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void progress_until(px_btl_module_t *a, px_btl_module_t *b, volatile int *flag, int want)
{
    double t0 = now();
    while (*flag < want && now() - t0 < 20) {
        a->btl_progress(a);
        b->btl_progress(b);
    }
    ck_assert_msg(*flag >= want, "timed out waiting: %d of %d events", *flag, want);
}

static volatile int received;
static int bad_order;
static char last[256];
static size_t last_len;
static void on_msg(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    last_len = d->des_segments[0].seg_len;
    memcpy(last, d->des_segments[0].seg_addr, last_len < sizeof(last) ? last_len : sizeof(last));
    if (last_len == sizeof(int) && *(int *)d->des_segments[0].seg_addr != received)
        bad_order++;
    received++;
}

static volatile int errors;
static char error_text[800];
static int error_rank = -2;
static px_btl_module_t *m0, *m1;
/* Counts every error; keeps the first one rank 0's module reported (the
 * responder's side may report its flushed receives first). */
static void on_error(px_btl_module_t *btl, px_btl_endpoint_t *ep, int rank, int error,
                     const char *description)
{
    (void)ep;
    (void)error;
    errors++;
    if (btl == m0 && -2 == error_rank) {
        error_rank = rank;
        snprintf(error_text, sizeof(error_text), "%s", description);
    }
}

static volatile int rdma_done_count, rdma_status;
static void on_rdma(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *la,
                    px_btl_registration_handle_t *lh, void *cc, void *cd, int status)
{
    (void)btl;
    (void)ep;
    (void)la;
    (void)lh;
    (void)cc;
    (void)cd;
    rdma_status = status;
    rdma_done_count++;
}

static px_btl_endpoint_t *e0[NRANKS], *e1[NRANKS];

static bool pair_up(int num_recvs)
{
    if (0 == num_devices())
        return false;
    char v[16];
    snprintf(v, sizeof(v), "%d", num_recvs);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_num_recvs", v), 0);
    m0 = make_module(0);
    m1 = make_module(1);
    connect_all(m0, 0, e0);
    connect_all(m1, 1, e1);
    received = 0;
    bad_order = 0;
    errors = 0;
    error_rank = -2;
    ck_assert_int_eq(px_btl_base_register_am(200, on_msg, NULL), PX_SUCCESS);
    m0->btl_register_error(m0, on_error);
    m1->btl_register_error(m1, on_error);
    return true;
}

static void pair_down(void)
{
    m0->btl_del_procs(m0, NRANKS, proc_ptrs, e0);
    m1->btl_del_procs(m1, NRANKS, proc_ptrs, e1);
    m0->btl_finalize(m0);
    m1->btl_finalize(m1);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_num_recvs", "16"), 0);
}

START_TEST(messages)
{
    if (!pair_up(16))
        return;
    /* inline sendi */
    ck_assert_int_le(sizeof(px_btl_verbs_hdr_t) + 5,
                     (size_t)((px_btl_verbs_module_t *)m0)->max_inline);
    ck_assert_int_eq(m0->btl_sendi(m0, e0[1], "hel", 3, "lo", 2, PX_BTL_NO_ORDER, 0, 200, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &received, 1);
    ck_assert_int_eq((int)last_len, 5);
    ck_assert(0 == memcmp(last, "hello", 5));
    /* sendi beyond max inline: a fragment */
    char big[4000];
    for (size_t i = 0; i < sizeof(big); ++i)
        big[i] = (char)(i * 7);
    ck_assert_int_eq(m1->btl_sendi(m1, e1[0], big, 10, big + 10, sizeof(big) - 10, PX_BTL_NO_ORDER,
                                   0, 200, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &received, 2);
    ck_assert_int_eq((int)last_len, 256 > sizeof(big) ? (int)sizeof(big) : (int)last_len);
    /* alloc + send */
    px_btl_descriptor_t *d = m0->btl_alloc(m0, e0[1], PX_BTL_NO_ORDER, 100, 0);
    ck_assert_ptr_nonnull(d);
    memset(d->des_segments[0].seg_addr, 'x', 100);
    d->des_flags |= PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
    ck_assert_int_ge(m0->btl_send(m0, e0[1], d, 200), 0);
    progress_until(m0, m1, &received, 3);
    ck_assert_int_eq((int)last_len, 100);
    ck_assert_int_eq(last[99], 'x');
    /* to itself (loopback QP) */
    ck_assert_int_eq(m0->btl_sendi(m0, e0[0], "me", 2, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &received, 4);
    ck_assert(0 == memcmp(last, "me", 2));
    ck_assert_int_eq(errors, 0);
    ck_assert_int_eq(m0->btl_flush(m0, NULL), PX_SUCCESS);
    pair_down();
}
END_TEST

/* Many more sends than receive buffers, both ways: credits hold the sends
 * back (queued in order) and come back piggybacked or as updates; nothing is
 * lost or reordered and no RNR error appears. */
START_TEST(credits)
{
    if (!pair_up(2))
        return;
    const int n = 600;
    int queued_ok = 0;
    for (int i = 0; i < n; ++i) {
        px_btl_descriptor_t *d = m0->btl_alloc(m0, e0[1], PX_BTL_NO_ORDER, sizeof(int), 0);
        ck_assert_ptr_nonnull(d);
        memcpy(d->des_segments[0].seg_addr, &i, sizeof(int));
        d->des_flags |= PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
        if (m0->btl_send(m0, e0[1], d, 200) >= 0)
            queued_ok++;
    }
    ck_assert_int_eq(queued_ok, n);
    ck_assert_int_le(e0[1]->credits, 2);
    progress_until(m0, m1, &received, n);
    ck_assert_int_eq(bad_order, 0);
    ck_assert_int_eq(errors, 0);
    /* and back, with sendi refusing (not failing) when out of credits */
    received = 0;
    int sent = 0;
    double t0 = now();
    while (sent < n && now() - t0 < 20) {
        int rc =
            m1->btl_sendi(m1, e1[0], &sent, sizeof(int), NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL);
        if (PX_SUCCESS == rc)
            sent++;
        else
            ck_assert_int_eq(rc, PX_ERR_TEMP_OUT_OF_RESOURCE);
        m0->btl_progress(m0);
        m1->btl_progress(m1);
    }
    progress_until(m0, m1, &received, n);
    ck_assert_int_eq(bad_order, 0);
    ck_assert_int_eq(errors, 0);
    pair_down();
}
END_TEST

START_TEST(rdma)
{
    if (!pair_up(16))
        return;
    size_t len = 256 * 1024;
    char *src = malloc(len), *dst = calloc(1, len);
    for (size_t i = 0; i < len; ++i)
        src[i] = (char)(i * 13 + 1);
    px_btl_registration_handle_t *rs = m1->btl_register_mem(m1, e1[0], src, len, 0);
    px_btl_registration_handle_t *ld = m0->btl_register_mem(m0, e0[1], dst, len, 0);
    ck_assert_ptr_nonnull(rs);
    ck_assert_ptr_nonnull(ld);
    /* get: rank 0 reads rank 1's buffer */
    rdma_done_count = 0;
    ck_assert_int_eq(m0->btl_get(m0, e0[1], dst, (uint64_t)(uintptr_t)src, ld, rs, len, 0,
                                 PX_BTL_NO_ORDER, on_rdma, NULL, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &rdma_done_count, 1);
    ck_assert_int_eq(rdma_status, PX_SUCCESS);
    ck_assert(0 == memcmp(src, dst, len));
    /* put without a local handle (registered for the operation) */
    memset(src, 0, len);
    ck_assert_int_eq(m0->btl_put(m0, e0[1], dst, (uint64_t)(uintptr_t)src, NULL, rs, 4096, 0,
                                 PX_BTL_NO_ORDER, on_rdma, NULL, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &rdma_done_count, 2);
    ck_assert_int_eq(rdma_status, PX_SUCCESS);
    ck_assert(0 == memcmp(src, dst, 4096));
    ck_assert_int_eq(errors, 0);
    /* a bad rkey: the read fails, the error callback names the status and
     * the peer, and later sends to that peer fail at once (no hang) */
    px_btl_registration_handle_t bad = *rs;
    bad.rkey ^= 0x5a5a5a;
    ck_assert_int_eq(m0->btl_get(m0, e0[1], dst, (uint64_t)(uintptr_t)src, ld, &bad, 4096, 0,
                                 PX_BTL_NO_ORDER, on_rdma, NULL, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &rdma_done_count, 3);
    ck_assert_int_ne(rdma_status, PX_SUCCESS);
    /* (the responder's QP goes to the error state too: its flushed receives
     * may be reported after this one) */
    ck_assert_int_ge(errors, 1);
    ck_assert_int_eq(error_rank, 1);
    ck_assert_msg(strstr(error_text, "RDMA read from rank 1 on host testhost") &&
                      strstr(error_text, "remote access error"),
                  "error: %s", error_text);
    ck_assert_int_eq(m0->btl_sendi(m0, e0[1], "x", 1, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL),
                     PX_ERR_UNREACH);
    m1->btl_deregister_mem(m1, rs);
    m0->btl_deregister_mem(m0, ld);
    free(src);
    free(dst);
    pair_down();
}
END_TEST

/* A peer whose header returns credits this process never spent on it (what
 * a broken or hostile peer could send: more would overrun its receives and
 * overflow the counters): the message is dropped, and the peer fails with an
 * error naming it, nothing delivered, later sends to it refused. */
START_TEST(bad_header)
{
    if (!pair_up(16))
        return;
    /* m0 has spent no credit on rank 1: a header returning 5 is a lie */
    ck_assert_int_eq(e0[1]->credits, 16);
    px_btl_verbs_hdr_t h = {.tag = 200, .credits = 5};
    struct ibv_sge sge = {.addr = (uintptr_t)&h, .length = sizeof(h)};
    struct ibv_send_wr wr = {.wr_id = (uintptr_t)&e1[0]->inline_ctx,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
                       *bad;
    /* as btl/verbs's own inline send counts it, so its completion balances */
    e1[0]->sq_free--;
    e1[0]->outstanding++;
    ((px_btl_verbs_module_t *)m1)->outstanding++;
    ck_assert_int_eq(ibv_post_send(e1[0]->qp, &wr, &bad), 0);
    double t0 = now();
    while (-2 == error_rank && now() - t0 < 20) {
        m0->btl_progress(m0);
        m1->btl_progress(m1);
    }
    ck_assert_msg(-2 != error_rank, "no error reported for a header with 5 unearned credits");
    fprintf(stderr, "error callback text: %s\n", error_text);
    ck_assert_int_eq(error_rank, 1);
    ck_assert_msg(strstr(error_text, "rank 1") && strstr(error_text, "returning 5 send credits") &&
                      strstr(error_text, "at most 0"),
                  "text: %s", error_text);
    ck_assert_int_eq(received, 0);
    ck_assert(e0[1]->failed);
    ck_assert_int_eq(e0[1]->credits, 16);
    ck_assert_int_eq(m0->btl_sendi(m0, e0[1], "x", 1, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL),
                     PX_ERR_UNREACH);
    pair_down();
}
END_TEST

/* A peer's modex record that no port publishes (QP number 0 for this rank):
 * add_procs refuses the peer with the reason, connects nothing. */
START_TEST(bad_modex)
{
    if (0 == num_devices())
        return;
    m0 = make_module(0);
    m1 = make_module(1);
    /* rank 1's record: header, then port 0's fixed part, then qpn[rank 0] */
    ck_assert_uint_ge(blob_len[1], sizeof(px_btl_verbs_modex_hdr_t) +
                                       sizeof(px_btl_verbs_modex_port_t) + sizeof(uint32_t));
    memset((char *)blob[1] + sizeof(px_btl_verbs_modex_hdr_t) + sizeof(px_btl_verbs_modex_port_t),
           0, sizeof(uint32_t));
    const char *reasons[NRANKS] = {NULL};
    px_bitmap_t bm;
    for (int i = 0; i < NRANKS; ++i) {
        procs[i].rank = i;
        procs[i].hostname = "testhost";
        proc_ptrs[i] = &procs[i];
    }
    PX_OBJ_CONSTRUCT(&bm, px_bitmap_t);
    px_bitmap_init(&bm, NRANKS);
    ((px_btl_verbs_module_t *)m0)->my_rank = 0;
    ck_assert_int_eq(m0->btl_add_procs(m0, NRANKS, proc_ptrs, e0, &bm, reasons), PX_SUCCESS);
    ck_assert(px_bitmap_is_set_bit(&bm, 0));
    ck_assert(!px_bitmap_is_set_bit(&bm, 1));
    ck_assert_ptr_null(e0[1]);
    ck_assert_msg(reasons[1] && strstr(reasons[1], "rank 1") && strstr(reasons[1], "QP number 0"),
                  "reason: %s", reasons[1] ? reasons[1] : "(none)");
    fprintf(stderr, "reason: %s\n", reasons[1]);
    PX_OBJ_DESTRUCT(&bm);
    m0->btl_del_procs(m0, NRANKS, proc_ptrs, e0);
    m0->btl_finalize(m0);
    m1->btl_finalize(m1);
}
END_TEST

/* ---- dynamic peers (BTL API 3.3) ---- */

static px_btl_endpoint_t *last_ep;
static int last_src;
static void on_dyn_msg(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    last_ep = d->endpoint;
    last_src = d->src_rank;
    on_msg(btl, d);
}

/* softverbs's object counts (px_softverbs_counts); false on another library. */
static bool sv_counts(int c[4])
{
    void (*fn)(int *, int *, int *, int *) = NULL;
    *(void **)&fn = dlsym(RTLD_DEFAULT, "px_softverbs_counts");
    if (fn)
        fn(&c[0], &c[1], &c[2], &c[3]);
    return NULL != fn;
}

static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* m0 connects to m1 as a dynamic peer: *c (m0's side), *a (m1's side). */
static void dyn_pair(px_btl_endpoint_t **c, px_btl_endpoint_t **a)
{
    unsigned char offer[PX_BTL_DYN_PART_MAX], reply[PX_BTL_DYN_PART_MAX];
    size_t olen = sizeof(offer), rlen = sizeof(reply);
    char why[PX_BTL_DYN_REASON_MAX] = "";
    ck_assert_int_eq(m0->btl_dyn_offer(m0, c, offer, &olen, why), PX_SUCCESS);
    ck_assert_int_eq((int)olen, PX_BTL_VERBS_DYN_LEN);
    ck_assert_msg(PX_SUCCESS == m1->btl_dyn_accept(m1, offer, olen, a, reply, &rlen, why),
                  "accept: %s", why);
    ck_assert_msg(PX_SUCCESS == m0->btl_dyn_complete(m0, *c, reply, rlen, why), "complete: %s",
                  why);
}

static void dyn_exchange(px_btl_endpoint_t *c, px_btl_endpoint_t *a)
{
    int before = received;
    ck_assert_int_eq(
        m0->btl_sendi(m0, c, "to acceptor", 11, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL),
        PX_SUCCESS);
    progress_until(m0, m1, &received, before + 1);
    ck_assert_ptr_eq(last_ep, a);
    ck_assert_int_eq(last_src, PX_BTL_RANK_DYNAMIC);
    ck_assert(11 == last_len && 0 == memcmp(last, "to acceptor", 11));
    char big[3000];
    memset(big, 'b', sizeof(big));
    ck_assert_int_eq(
        m1->btl_sendi(m1, a, big, 10, big + 10, sizeof(big) - 10, PX_BTL_NO_ORDER, 0, 200, NULL),
        PX_SUCCESS);
    progress_until(m0, m1, &received, before + 2);
    ck_assert_ptr_eq(last_ep, c);
    ck_assert_int_eq((int)last_len, (int)sizeof(big));
}

/* Two modules of one process connect as dynamic peers through offer, accept
 * and complete (no add_procs, no modex): messages both ways arrive on the
 * peer's endpoint as PX_BTL_RANK_DYNAMIC, more messages than receives (the
 * credits the peer said it posted), get and put; remove, add again; a peer
 * that removed its side fails the other's next operation with an error
 * naming a dynamic peer; 1,000 connect/exchange/remove cycles and offers
 * never completed leave the device's QPs, CQs, MRs, PDs and the open
 * descriptors as they were. */
START_TEST(dyn_peers)
{
    if (0 == num_devices())
        return;
    m0 = make_module(0);
    m1 = make_module(1);
    ck_assert(px_btl_base_dyn_capable(m0));
    ck_assert_int_eq(px_btl_base_register_am(200, on_dyn_msg, NULL), PX_SUCCESS);
    m0->btl_register_error(m0, on_error);
    m1->btl_register_error(m1, on_error);
    received = 0;
    bad_order = 0;
    errors = 0;
    error_rank = -2;
    px_btl_endpoint_t *c = NULL, *a = NULL;
    dyn_pair(&c, &a);
    dyn_exchange(c, a);
    /* 100 sends with 16 receives posted: the credits bring them all, in order. */
    int base = received;
    for (int i = 0; i < 100; ++i) {
        int v = base + i;
        px_btl_descriptor_t *d = m0->btl_alloc(m0, c, PX_BTL_NO_ORDER, sizeof(int), 0);
        ck_assert_ptr_nonnull(d);
        memcpy(d->des_segments[0].seg_addr, &v, sizeof(int));
        d->des_flags |= PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
        ck_assert_int_ge(m0->btl_send(m0, c, d, 200), 0);
    }
    progress_until(m0, m1, &received, base + 100);
    ck_assert_int_eq(bad_order, 0);
    /* get and put through the dynamic peer's QP */
    char src[4096], dst[4096];
    memset(src, 's', sizeof(src));
    memset(dst, 0, sizeof(dst));
    px_btl_registration_handle_t *rs = m1->btl_register_mem(m1, a, src, sizeof(src), 0);
    px_btl_registration_handle_t *ld = m0->btl_register_mem(m0, c, dst, sizeof(dst), 0);
    ck_assert(rs && ld);
    rdma_done_count = 0;
    ck_assert_int_eq(m0->btl_get(m0, c, dst, (uint64_t)(uintptr_t)src, ld, rs, sizeof(src), 0,
                                 PX_BTL_NO_ORDER, on_rdma, NULL, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &rdma_done_count, 1);
    ck_assert_int_eq(rdma_status, PX_SUCCESS);
    ck_assert(0 == memcmp(src, dst, sizeof(src)));
    memset(dst, 'p', sizeof(dst));
    ck_assert_int_eq(m0->btl_put(m0, c, dst, (uint64_t)(uintptr_t)src, ld, rs, sizeof(src), 0,
                                 PX_BTL_NO_ORDER, on_rdma, NULL, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &rdma_done_count, 2);
    ck_assert_int_eq(rdma_status, PX_SUCCESS);
    ck_assert_int_eq(src[100], 'p');
    m1->btl_deregister_mem(m1, rs);
    m0->btl_deregister_mem(m0, ld);
    ck_assert_int_eq(errors, 0);
    ck_assert_int_eq(m0->btl_dyn_remove(m0, c), PX_SUCCESS);
    ck_assert_int_eq(m1->btl_dyn_remove(m1, a), PX_SUCCESS);

    /* Added again after the remove: a new QP pair that works. */
    dyn_pair(&c, &a);
    dyn_exchange(c, a);
    /* The acceptor leaves first: the connector's next send fails (transport
     * retries exceeded), reported once, naming a dynamic peer; then it
     * removes its side too. */
    ck_assert_int_eq(m1->btl_dyn_remove(m1, a), PX_SUCCESS);
    ck_assert_int_eq(m0->btl_sendi(m0, c, "gone?", 5, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL),
                     PX_SUCCESS);
    progress_until(m0, m1, &errors, 1);
    ck_assert_int_eq(error_rank, PX_BTL_RANK_DYNAMIC);
    ck_assert_msg(strstr(error_text, "dynamic peer"), "error: %s", error_text);
    fprintf(stderr, "dyn_peers: the gone peer's error: %s\n", error_text);
    ck_assert_int_eq(m0->btl_sendi(m0, c, "x", 1, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL),
                     PX_ERR_UNREACH);
    ck_assert_int_eq(m0->btl_dyn_remove(m0, c), PX_SUCCESS);
    errors = 0;

    /* 1,000 cycles, every other one with an offer that is never completed. */
    int sv0[4] = {0}, sv1[4] = {0};
    dyn_pair(&c, &a); /* warm the free lists */
    dyn_exchange(c, a);
    ck_assert_int_eq(m1->btl_dyn_remove(m1, a), PX_SUCCESS);
    ck_assert_int_eq(m0->btl_dyn_remove(m0, c), PX_SUCCESS);
    bool have = sv_counts(sv0);
    long fds0 = open_fds();
    for (int i = 0; i < 1000; ++i) {
        dyn_pair(&c, &a);
        if (0 == i % 10)
            dyn_exchange(c, a);
        if (i & 1) {
            ck_assert_int_eq(m1->btl_dyn_remove(m1, a), PX_SUCCESS);
            ck_assert_int_eq(m0->btl_dyn_remove(m0, c), PX_SUCCESS);
        } else {
            ck_assert_int_eq(m0->btl_dyn_remove(m0, c), PX_SUCCESS);
            ck_assert_int_eq(m1->btl_dyn_remove(m1, a), PX_SUCCESS);
            unsigned char offer[PX_BTL_DYN_PART_MAX];
            size_t olen = sizeof(offer);
            char why[PX_BTL_DYN_REASON_MAX];
            ck_assert_int_eq(m0->btl_dyn_offer(m0, &c, offer, &olen, why), PX_SUCCESS);
            ck_assert_int_eq(m0->btl_dyn_remove(m0, c), PX_SUCCESS);
        }
    }
    ck_assert_int_eq(errors, 0);
    ck_assert_int_eq(((px_btl_verbs_module_t *)m0)->num_dyn, 0);
    ck_assert_int_eq(((px_btl_verbs_module_t *)m1)->num_dyn, 0);
    ck_assert_ptr_null(((px_btl_verbs_module_t *)m0)->dyn_zombies);
    ck_assert_int_le(open_fds(), fds0); /* (the device may close idle sockets meanwhile) */
    if (have) {
        sv_counts(sv1);
        fprintf(stderr,
                "dyn_peers: after 1000 cycles: QPs %d -> %d, CQs %d -> %d, MRs %d -> %d, PDs %d "
                "-> %d\n",
                sv0[0], sv1[0], sv0[1], sv1[1], sv0[2], sv1[2], sv0[3], sv1[3]);
        ck_assert(0 == memcmp(sv0, sv1, sizeof(sv0)));
    }
    px_btl_base_register_am(200, NULL, NULL);
    m0->btl_finalize(m0);
    m1->btl_finalize(m1);
}
END_TEST

/* A part made by make(): accept must refuse it with `code` and a reason
 * containing `text`, and make no QP for it. */
static void refused(const unsigned char *part, size_t len, int code, const char *text)
{
    unsigned char reply[PX_BTL_DYN_PART_MAX];
    size_t rlen = sizeof(reply);
    char why[PX_BTL_DYN_REASON_MAX] = "";
    px_btl_endpoint_t *ep = NULL;
    int q0[4] = {0}, q1[4] = {0};
    bool have = sv_counts(q0);
    int rc = m1->btl_dyn_accept(m1, part, len, &ep, reply, &rlen, why);
    ck_assert_msg(rc == code && strstr(why, text), "expected %d with \"%s\", got %d: %s", code,
                  text, rc, why);
    ck_assert_ptr_null(ep);
    fprintf(stderr, "dyn_bad_parts: %s\n", why);
    if (have) {
        sv_counts(q1);
        ck_assert_int_eq(q0[0], q1[0]);
    }
    ck_assert_int_eq(((px_btl_verbs_module_t *)m1)->num_dyn, 0);
}

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Every field of a peer's part is checked, each refusal says which field,
 * its value and what is accepted; a reflected reply (this connection's own
 * QP) is refused at complete. */
START_TEST(dyn_bad_parts)
{
    if (0 == num_devices())
        return;
    m0 = make_module(0);
    m1 = make_module(1);
    px_btl_endpoint_t *c = NULL;
    unsigned char good[PX_BTL_DYN_PART_MAX], b[PX_BTL_DYN_PART_MAX + 8];
    size_t glen = sizeof(good);
    char why[PX_BTL_DYN_REASON_MAX];
    ck_assert_int_eq(m0->btl_dyn_offer(m0, &c, good, &glen, why), PX_SUCCESS);
    const size_t L = PX_BTL_VERBS_DYN_LEN;
#define MUT(stmt, code, text)                                                                      \
    do {                                                                                           \
        memcpy(b, good, L);                                                                        \
        stmt;                                                                                      \
        refused(b, L, code, text);                                                                 \
    } while (0)
    refused(good, L - 1, PX_ERR_BAD_PARAM, "55 bytes; version 1's is exactly 56");
    memcpy(b, good, L);
    b[L] = 0;
    refused(b, L + 1, PX_ERR_BAD_PARAM, "57 bytes");
    refused(good, 0, PX_ERR_BAD_PARAM, "0 bytes");
    MUT(b[0] ^= 0xff, PX_ERR_BAD_PARAM, "not the magic");
    MUT(b[4] = 2, PX_ERR_BAD_PARAM, "version 2; this process reads version 1");
    MUT(put16(b + 10, 0x8000), PX_ERR_BAD_PARAM, "flags 0x8000");
    MUT(b[5] = 7, PX_ERR_BAD_PARAM, "link layer 7");
    MUT(b[6] = 0, PX_ERR_BAD_PARAM, "port 0");
    MUT(b[7] = 0, PX_ERR_BAD_PARAM, "MTU code 0");
    MUT(b[7] = 6, PX_ERR_BAD_PARAM, "MTU code 6");
    MUT(put16(b + 8, 0xc001), PX_ERR_BAD_PARAM, "LID 0xc001");
    MUT((put16(b + 8, 0), memset(b + 40, 0, 16)), PX_ERR_BAD_PARAM, "GID of zeros");
    MUT(put32(b + 12, 0), PX_ERR_BAD_PARAM, "QP number 0; a QP number is 1..16777215");
    MUT(put32(b + 12, 0x1000000), PX_ERR_BAD_PARAM, "QP number 16777216");
    MUT(put32(b + 16, 0x1000000), PX_ERR_BAD_PARAM, "PSN 16777216");
    MUT(put16(b + 20, 0), PX_ERR_BAD_PARAM, "0 data receives");
    MUT(put16(b + 20, 5000), PX_ERR_BAD_PARAM, "5000 data receives");
    MUT(put16(b + 22, 0), PX_ERR_BAD_PARAM, "0 control receives");
    MUT(put16(b + 22, 65), PX_ERR_BAD_PARAM, "65 control receives");
    MUT(put32(b + 24, 8), PX_ERR_BAD_PARAM, "receive buffers are 8 bytes");
    /* Well formed, but not this process's fabric or sizes: unreachable, why. */
    MUT(put32(b + 24, 4096), PX_ERR_UNREACH, "set btl_verbs_max_send_size the same");
    MUT(b[5] =
            b[5] == IBV_LINK_LAYER_ETHERNET ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET,
        PX_ERR_UNREACH, "same fabric");
#undef MUT
    /* The connector is given its own part back as the reply. */
    ck_assert_int_eq(m0->btl_dyn_complete(m0, c, good, glen, why), PX_ERR_BAD_PARAM);
    ck_assert_msg(strstr(why, "reflected"), "why: %s", why);
    /* A reply for an endpoint that is not an offered one. */
    ck_assert_int_eq(m0->btl_dyn_complete(m0, NULL, good, glen, why), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(m0->btl_dyn_remove(m0, c), PX_SUCCESS);
    ck_assert_int_eq(m0->btl_dyn_remove(m0, NULL), PX_ERR_BAD_PARAM);
    m0->btl_finalize(m0);
    m1->btl_finalize(m1);
}
END_TEST

PX_CHECK_MAIN("btl_verbs", setup, teardown, 120, list_matching, discovery_and_decline,
              include_exclude, messages, credits, rdma, bad_header, bad_modex, dyn_peers,
              dyn_bad_parts)
