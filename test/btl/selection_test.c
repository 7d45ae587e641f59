/*
 * selection_test.c: per-peer module selection (frameworks/btl/base) with
 * modules defined here: ties, several rails, exclusivity per peer, modules
 * without the send capability, failed add_procs, and unreachable peers with
 * the error text.
 */
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"

/* A fake module: reaches the ranks whose bit is set in `reach_mask`. */
typedef struct fake_module {
    px_btl_module_t super;
    unsigned reach_mask;
    const char *reason;
    int fail_add_procs;
    int del_calls;
} fake_module_t;

static int fake_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                          px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                          const char **reasons)
{
    fake_module_t *m = (fake_module_t *)btl;
    if (m->fail_add_procs)
        return PX_ERR_NOT_AVAILABLE;
    for (size_t i = 0; i < nprocs; ++i) {
        if (m->reach_mask & (1u << procs[i]->rank)) {
            px_bitmap_set_bit(reachable, (int)i);
            endpoints[i] = (px_btl_endpoint_t *)(uintptr_t)(0x1000 + procs[i]->rank);
        } else {
            reasons[i] = m->reason;
        }
    }
    return PX_SUCCESS;
}

static int fake_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                          px_btl_endpoint_t **endpoints)
{
    (void)nprocs;
    (void)procs;
    (void)endpoints;
    ((fake_module_t *)btl)->del_calls++;
    return PX_SUCCESS;
}

#define FAKE_COMPONENT(var, nm)                                                                    \
    static const px_btl_component_t var = {                                                        \
        .base = PX_MCA_COMPONENT_HEADER("btl", PX_BTL_API_MAJOR, PX_BTL_API_MINOR,                 \
                                        PX_BTL_API_RELEASE, nm, 1, 0, 0, NULL, NULL, NULL),        \
    }
FAKE_COMPONENT(comp_a, "alpha");
FAKE_COMPONENT(comp_b, "beta");
FAKE_COMPONENT(comp_c, "gamma");
FAKE_COMPONENT(comp_d, "delta");

static fake_module_t make(const px_btl_component_t *c, uint32_t excl, uint32_t lat, uint32_t bw,
                          uint32_t flags, unsigned mask, const char *reason)
{
    fake_module_t m;
    memset(&m, 0, sizeof(m));
    m.super.btl_component = c;
    m.super.btl_exclusivity = excl;
    m.super.btl_latency = lat;
    m.super.btl_bandwidth = bw;
    m.super.btl_eager_limit = 1000 + lat;
    m.super.btl_max_send_size = 10000 + bw;
    m.super.btl_flags = flags;
    m.super.btl_add_procs = fake_add_procs;
    m.super.btl_del_procs = fake_del_procs;
    m.reach_mask = mask;
    m.reason = reason;
    return m;
}

static px_proc_t procs[4];
static px_proc_t *pp[4];
/* What px_btl_base_add_procs returns per process (the runtime keeps these in
 * its process table). Poisoned before each call: add_procs must set each. */
static px_btl_base_peer_t *peers[4];
static void setup_procs(int n)
{
    const char *hosts[] = {"hostA", "hostA", "hostB", "hostC"};
    for (int i = 0; i < n; ++i) {
        memset(&procs[i], 0, sizeof(procs[i]));
        procs[i].rank = i;
        procs[i].hostname = hosts[i];
        procs[i].locality = 0 == i ? PX_PROC_LOCAL_SELF : 0;
        pp[i] = &procs[i];
        peers[i] = (px_btl_base_peer_t *)(uintptr_t)0xdead;
    }
}

#define S    PX_BTL_FLAGS_SEND
#define RDMA PX_BTL_FLAGS_RDMA

START_TEST(several_rails_and_ties)
{
    setup_procs(2);
    /* Two rails of the same exclusivity (one faster), one lower transport. */
    fake_module_t a = make(&comp_a, 1024, 10, 100, S | RDMA, 0x3, NULL);
    fake_module_t b = make(&comp_b, 1024, 5, 300, S | PX_BTL_FLAGS_GET, 0x3, NULL);
    fake_module_t c = make(&comp_c, 512, 1, 10000, S | RDMA, 0x3, NULL);
    px_btl_module_t *mods[] = {&c.super, &a.super, &b.super};
    px_btl_base_sort_modules(mods, 3);
    ck_assert_ptr_eq(mods[0], &a.super); /* stable among equal exclusivity */
    ck_assert_ptr_eq(mods[1], &b.super);
    ck_assert_ptr_eq(mods[2], &c.super);
    px_btl_base_table_t t;
    char *err = NULL;
    ck_assert_int_eq(px_btl_base_add_procs(&t, mods, 3, pp, 2, &procs[0], peers, &err), PX_SUCCESS);
    ck_assert_ptr_null(err);
    for (int r = 0; r < 2; ++r) {
        px_btl_base_peer_t *p = peers[r];
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(p->rank, r);
        /* send: both rails of the highest exclusivity, not gamma */
        ck_assert_int_eq(p->num_send, 2);
        ck_assert_ptr_eq(p->send[0].module, &a.super);
        ck_assert_ptr_eq(p->send[1].module, &b.super);
        ck_assert_ptr_eq(p->send[0].endpoint, (void *)(uintptr_t)(0x1000 + r));
        /* eager: the lowest latency */
        ck_assert_int_eq(p->num_eager, 1);
        ck_assert_ptr_eq(p->eager[0].module, &b.super);
        ck_assert_uint_eq(p->eager_limit, 1005);
        ck_assert_uint_eq(p->max_send_size, 10100);
        /* rdma: weighted by bandwidth, biggest first, summing to 1 */
        ck_assert_int_eq(p->num_rdma, 2);
        ck_assert_ptr_eq(p->rdma[0].module, &b.super);
        ck_assert_double_eq_tol(p->rdma[0].weight, 0.75, 1e-12);
        ck_assert_double_eq_tol(p->rdma[1].weight, 0.25, 1e-12);
        /* round robin over several send modules */
        px_btl_base_peer_module_t *s1 = px_btl_base_peer_send(p), *s2 = px_btl_base_peer_send(p),
                                  *s3 = px_btl_base_peer_send(p);
        ck_assert_ptr_ne(s1->module, s2->module);
        ck_assert_ptr_eq(s1->module, s3->module);
    }
    ck_assert_int_eq(px_btl_base_del_procs(&t, peers), PX_SUCCESS);
    ck_assert_int_eq(a.del_calls, 1);
    ck_assert_int_eq(c.del_calls, 1);
    ck_assert_ptr_null(peers[0]);
}
END_TEST

START_TEST(latency_tie_gives_several_eager)
{
    setup_procs(1);
    fake_module_t a = make(&comp_a, 1024, 7, 0, S | RDMA, 0x1, NULL);
    fake_module_t b = make(&comp_b, 1024, 7, 0, S | RDMA, 0x1, NULL);
    px_btl_module_t *mods[] = {&a.super, &b.super};
    px_btl_base_table_t t;
    ck_assert_int_eq(px_btl_base_add_procs(&t, mods, 2, pp, 1, &procs[0], peers, NULL), PX_SUCCESS);
    px_btl_base_peer_t *p = peers[0];
    ck_assert_int_eq(p->num_eager, 2);
    ck_assert_ptr_ne(px_btl_base_peer_eager(p)->module, px_btl_base_peer_eager(p)->module);
    /* zero bandwidth everywhere: equal weights */
    ck_assert_int_eq(p->num_rdma, 2);
    ck_assert_double_eq_tol(p->rdma[0].weight, 0.5, 1e-12);
    ck_assert_double_eq_tol(p->rdma[0].weight + p->rdma[1].weight, 1.0, 1e-12);
    px_btl_base_del_procs(&t, peers);
}
END_TEST

START_TEST(exclusivity_per_peer)
{
    setup_procs(3);
    /* "self" reaches rank 0 only, "shm" ranks 0-1, "net" everyone. */
    fake_module_t self = make(&comp_a, PX_BTL_EXCLUSIVITY_HIGH, 0, 0, S, 0x1, "only itself");
    fake_module_t shm = make(&comp_b, 0x8000, 1, 0, S, 0x3, "other host");
    fake_module_t net = make(&comp_c, PX_BTL_EXCLUSIVITY_DEFAULT, 10, 0, S | RDMA, 0x7, NULL);
    px_btl_module_t *mods[] = {&net.super, &shm.super, &self.super};
    px_btl_base_sort_modules(mods, 3);
    px_btl_base_table_t t;
    ck_assert_int_eq(px_btl_base_add_procs(&t, mods, 3, pp, 3, &procs[0], peers, NULL), PX_SUCCESS);
    px_btl_base_peer_t *p0 = peers[0], *p1 = peers[1], *p2 = peers[2];
    ck_assert_int_eq(p0->num_send, 1);
    ck_assert_ptr_eq(p0->send[0].module, &self.super);
    ck_assert_int_eq(p0->num_rdma, 0); /* net reaches it, but a higher one wins */
    ck_assert_ptr_eq(p1->send[0].module, &shm.super);
    ck_assert_ptr_eq(p2->send[0].module, &net.super);
    ck_assert_int_eq(p2->num_rdma, 1);
    ck_assert_double_eq_tol(p2->rdma[0].weight, 1.0, 1e-12);
    px_btl_base_del_procs(&t, peers);
}
END_TEST

START_TEST(unreachable_peer)
{
    setup_procs(3);
    fake_module_t self = make(&comp_a, PX_BTL_EXCLUSIVITY_HIGH, 0, 0, S, 0x1,
                              "self reaches only the calling process");
    fake_module_t shm = make(&comp_b, 0x8000, 1, 0, S, 0x3, "not on this host");
    fake_module_t rdma_only = make(&comp_c, 0x400, 5, 0, RDMA, 0x7, NULL);
    fake_module_t broken = make(&comp_d, 0x100, 5, 0, S, 0x7, NULL);
    broken.fail_add_procs = 1;
    px_btl_module_t *mods[] = {&self.super, &shm.super, &rdma_only.super, &broken.super};
    px_btl_base_table_t t;
    char *err = NULL;
    ck_assert_int_eq(px_btl_base_add_procs(&t, mods, 4, pp, 3, &procs[0], peers, &err),
                     PX_ERR_UNREACH);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "no transport reaches rank 2 (host hostB) from rank 0 (host hostA)"),
                  "%s", err);
    ck_assert_msg(strstr(err, "Modules tried (4)"), "%s", err);
    ck_assert_msg(strstr(err, "alpha (exclusivity 65536): self reaches only the calling process"),
                  "%s", err);
    ck_assert_msg(strstr(err, "beta (exclusivity 32768): not on this host"), "%s", err);
    ck_assert_msg(strstr(err, "gamma (exclusivity 1024): reaches it but cannot send"), "%s", err);
    ck_assert_msg(strstr(err, "delta (exclusivity 256): add_procs failed"), "%s", err);
    free(err);
    /* Everything was released: no peer left behind, every module told. */
    for (int i = 0; i < 3; ++i)
        ck_assert_ptr_null(peers[i]);
    ck_assert_int_eq(self.del_calls, 1);
    ck_assert_ptr_null(t.reach);
}
END_TEST

START_TEST(no_module_at_all)
{
    setup_procs(1);
    px_btl_base_table_t t;
    char *err = NULL;
    ck_assert_int_eq(px_btl_base_add_procs(&t, NULL, 0, pp, 1, &procs[0], peers, &err),
                     PX_ERR_UNREACH);
    ck_assert_msg(strstr(err, "no transport reaches rank 0 (host hostA) from rank 0 (host hostA)"),
                  "%s", err);
    ck_assert_msg(strstr(err, "No BTL module was available"), "%s", err);
    free(err);
    /* The per-peer results need somewhere to go. */
    ck_assert_int_eq(px_btl_base_add_procs(&t, NULL, 0, pp, 1, &procs[0], NULL, NULL),
                     PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_btl_base_del_procs(&t, NULL), PX_SUCCESS);
}
END_TEST

START_TEST(select_peer_pure)
{
    /* The pure function on hand-made reach tables. */
    fake_module_t a = make(&comp_a, 1024, 3, 50, S | RDMA, 0, NULL);
    fake_module_t b = make(&comp_b, 1024, 3, 150, S | RDMA, 0, NULL);
    px_btl_base_reach_t reach[2];
    px_btl_endpoint_t *eps[2][2] = {{(void *)1, (void *)2}, {(void *)3, (void *)4}};
    const char *why[2][2] = {{NULL, NULL}, {"b: no", NULL}};
    px_btl_module_t *m[2] = {&a.super, &b.super};
    for (int i = 0; i < 2; ++i) {
        reach[i].module = m[i];
        PX_OBJ_CONSTRUCT(&reach[i].reachable, px_bitmap_t);
        px_bitmap_init(&reach[i].reachable, 2);
        reach[i].endpoints = eps[i];
        reach[i].reasons = why[i];
    }
    px_bitmap_set_bit(&reach[0].reachable, 0);
    px_bitmap_set_bit(&reach[0].reachable, 1);
    px_bitmap_set_bit(&reach[1].reachable, 1);
    px_btl_base_peer_t *p;
    ck_assert_int_eq(px_btl_base_select_peer(reach, 2, 0, 5, &p), PX_SUCCESS);
    ck_assert_int_eq(p->rank, 5);
    ck_assert_int_eq(p->num_send, 1);
    ck_assert_ptr_eq(p->send[0].endpoint, (void *)1);
    px_btl_base_peer_free(p);
    ck_assert_int_eq(px_btl_base_select_peer(reach, 2, 1, 6, &p), PX_SUCCESS);
    ck_assert_int_eq(p->num_send, 2);
    ck_assert_int_eq(p->num_eager, 2);
    ck_assert_ptr_eq(p->rdma[0].module, &b.super);
    ck_assert_double_eq_tol(p->rdma[0].weight, 0.75, 1e-12);
    px_btl_base_peer_free(p);
    px_bitmap_clear_bit(&reach[0].reachable, 0);
    ck_assert_int_eq(px_btl_base_select_peer(reach, 2, 0, 5, &p), PX_ERR_UNREACH);
    ck_assert_ptr_null(p);
    px_proc_t me = {.rank = 1, .hostname = "h1"}, peer = {.rank = 5, .hostname = "h2"};
    char *msg = px_btl_base_unreachable_message(reach, 2, &me, &peer, 0);
    ck_assert_msg(strstr(msg, "alpha (exclusivity 1024): declined without giving a reason"), "%s",
                  msg);
    ck_assert_msg(strstr(msg, "beta (exclusivity 1024): b: no"), "%s", msg);
    free(msg);
    for (int i = 0; i < 2; ++i)
        PX_OBJ_DESTRUCT(&reach[i].reachable);
}
END_TEST

START_TEST(convertor_pack)
{
    char a[] = "hello ", b[] = "plexus ", c[] = "world";
    struct iovec iov[3] = {{a, 6}, {b, 7}, {c, 5}};
    px_btl_convertor_t conv = {.iov = iov, .iovcnt = 3, .total = 18, .position = 0};
    char out[32] = {0};
    ck_assert(!px_btl_convertor_is_contiguous(&conv));
    ck_assert_uint_eq(px_btl_convertor_pack(&conv, out, 4), 4);
    ck_assert_uint_eq(px_btl_convertor_pack(&conv, out + 4, 8), 8);
    ck_assert_uint_eq(px_btl_convertor_pack(&conv, out + 12, 100), 6);
    ck_assert_uint_eq(px_btl_convertor_pack(&conv, out + 18, 100), 0);
    ck_assert_str_eq(out, "hello plexus world");
    px_btl_convertor_init_contig(&conv, "abcdef", 6);
    ck_assert(px_btl_convertor_is_contiguous(&conv));
    memset(out, 0, sizeof(out));
    ck_assert_uint_eq(px_btl_convertor_pack(&conv, out, 2), 2);
    ck_assert_str_eq((char *)px_btl_convertor_current(&conv), "cdef");
}
END_TEST

PX_CHECK_MAIN("btl_selection", NULL, NULL, 0, several_rails_and_ties,
              latency_tie_gives_several_eager, exclusivity_per_peer, unreachable_peer,
              no_module_at_all, select_peer_pure, convertor_pack)
