/*
 * rails_test.c: the messaging layer over two test rails defined here (a BTL
 * component "rail" whose init returns two modules of equal exclusivity and
 * latency: one delivers at once, the other from its progress function in
 * reverse order). Messages of every protocol then arrive out of order, and
 * must still be received in send order; a transport error reported from
 * progress fails the requests of that peer. With RDMA get or put offered,
 * the rendezvous chunk scheduler stripes, falls back and fails as it should.
 */
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include "core/class/list.h"
#include "core/mca/framework.h"
#include "runtime/plexus.h"
#include "runtime/runtime.h"
#include "frameworks/btl/base/base_runtime.h"

typedef struct rail_frag {
    px_btl_descriptor_t base;
    px_btl_segment_t seg;
    px_btl_endpoint_t *ep;
    px_btl_tag_t tag;
    struct rail_frag *next;
    unsigned char data[];
} rail_frag_t;

typedef struct rail_module {
    px_btl_module_t super;
    int delayed;
    int rank;
    int fail_next_progress;
    px_btl_error_fn err;
    rail_frag_t *queue; /* delivered by progress, newest first */
    int sent;
    size_t got_bytes; /* read by btl_get */
    int gets;
    size_t put_bytes; /* written by btl_put */
    int puts;
    int rdma_ok_left; /* >= 0: RDMA operations that succeed before the rest fail */
} rail_module_t;

/* Set before px_init: the rails offer RDMA get (or put), with bandwidths 3000
 * and 1000. */
static int rails_with_get, rails_with_put;

static rail_module_t rails[2];
static const px_btl_component_t px_btl_rail_component;

static int rail_add_procs(px_btl_module_t *btl, size_t n, px_proc_t **procs,
                          px_btl_endpoint_t **eps, px_bitmap_t *reach, const char **reasons)
{
    for (size_t i = 0; i < n; ++i) {
        if (procs[i]->locality & PX_PROC_LOCAL_SELF) {
            px_bitmap_set_bit(reach, (int)i);
            eps[i] = (px_btl_endpoint_t *)btl;
            ((rail_module_t *)btl)->rank = procs[i]->rank;
        } else {
            reasons[i] = "rail reaches only the calling process";
        }
    }
    return PX_SUCCESS;
}
static int rail_del_procs(px_btl_module_t *b, size_t n, px_proc_t **p, px_btl_endpoint_t **e)
{
    (void)b;
    (void)n;
    (void)p;
    (void)e;
    return PX_SUCCESS;
}
static int rail_finalize(px_btl_module_t *btl)
{
    rail_module_t *m = (rail_module_t *)btl;
    while (m->queue) {
        rail_frag_t *f = m->queue;
        m->queue = f->next;
        free(f);
    }
    return PX_SUCCESS;
}
static px_btl_descriptor_t *rail_alloc(px_btl_module_t *btl, px_btl_endpoint_t *ep, uint8_t order,
                                       size_t size, uint32_t flags)
{
    (void)btl;
    (void)ep;
    (void)order;
    rail_frag_t *f = calloc(1, sizeof(*f) + size);
    f->seg.seg_addr = f->data;
    f->seg.seg_len = size;
    f->base.des_segments = &f->seg;
    f->base.des_segment_count = 1;
    f->base.des_flags = flags;
    return &f->base;
}
static int rail_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    (void)btl;
    free(des);
    return PX_SUCCESS;
}
static px_btl_descriptor_t *rail_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *ep,
                                             px_btl_convertor_t *conv, uint8_t order,
                                             size_t reserve, size_t *size, uint32_t flags)
{
    if (reserve + *size > btl->btl_max_send_size)
        *size = btl->btl_max_send_size - reserve;
    px_btl_descriptor_t *d = rail_alloc(btl, ep, order, reserve + *size, flags);
    rail_frag_t *f = (rail_frag_t *)d;
    *size = px_btl_convertor_pack(conv, f->data + reserve, *size);
    f->seg.seg_len = reserve + *size;
    return d;
}
static void rail_deliver(rail_module_t *m, rail_frag_t *f)
{
    const px_btl_active_message_callback_t *reg = &px_btl_base_active_message_trigger[f->tag];
    px_btl_receive_descriptor_t rd = {f->ep, m->rank, &f->seg, 1, f->tag, reg->cbdata};
    reg->cbfunc(&m->super, &rd);
}
static int rail_send(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                     px_btl_tag_t tag)
{
    rail_module_t *m = (rail_module_t *)btl;
    rail_frag_t *f = (rail_frag_t *)des;
    f->ep = ep;
    f->tag = tag;
    m->sent++;
    if (m->delayed) {
        f->next = m->queue;
        m->queue = f;
        return 0;
    }
    rail_deliver(m, f);
    if ((des->des_flags & PX_BTL_DES_SEND_ALWAYS_CALLBACK) && des->des_cbfunc)
        des->des_cbfunc(btl, ep, des, PX_SUCCESS);
    if (des->des_flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
        free(f);
    return 1;
}
static int rail_progress(px_btl_module_t *btl)
{
    rail_module_t *m = (rail_module_t *)btl;
    if (m->fail_next_progress) {
        m->fail_next_progress = 0;
        m->err(btl, NULL, m->rank, PX_ERR_PEER_FAILED, "rail test: link down");
        return 1;
    }
    int n = 0;
    rail_frag_t *q = m->queue; /* newest first: delivered in reverse send order */
    m->queue = NULL;
    while (q) {
        rail_frag_t *f = q;
        q = q->next;
        rail_deliver(m, f);
        if (f->base.des_cbfunc)
            f->base.des_cbfunc(btl, f->ep, &f->base, PX_SUCCESS);
        if (f->base.des_flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
            free(f);
        n++;
    }
    return n;
}
static int rail_get(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local, uint64_t remote,
                    px_btl_registration_handle_t *lh, px_btl_registration_handle_t *rh, size_t size,
                    int flags, int order, px_btl_rdma_completion_fn cb, void *ctx, void *cbdata)
{
    (void)rh;
    (void)flags;
    (void)order;
    rail_module_t *m = (rail_module_t *)btl;
    if (m->rdma_ok_left >= 0 && 0 == m->rdma_ok_left--)
        return PX_ERROR;
    memcpy(local, (void *)(uintptr_t)remote, size);
    m->got_bytes += size;
    m->gets++;
    cb(btl, ep, local, lh, ctx, cbdata, PX_SUCCESS);
    return PX_SUCCESS;
}
static int rail_put(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local, uint64_t remote,
                    px_btl_registration_handle_t *lh, px_btl_registration_handle_t *rh, size_t size,
                    int flags, int order, px_btl_rdma_completion_fn cb, void *ctx, void *cbdata)
{
    (void)rh;
    (void)flags;
    (void)order;
    rail_module_t *m = (rail_module_t *)btl;
    if (m->rdma_ok_left >= 0 && 0 == m->rdma_ok_left--)
        return PX_ERROR;
    memcpy((void *)(uintptr_t)remote, local, size);
    m->put_bytes += size;
    m->puts++;
    cb(btl, ep, local, lh, ctx, cbdata, PX_SUCCESS);
    return PX_SUCCESS;
}

static int rail_register_error(px_btl_module_t *btl, px_btl_error_fn fn)
{
    ((rail_module_t *)btl)->err = fn;
    return PX_SUCCESS;
}

static px_btl_module_t **rail_init(int *n, bool progress_threads)
{
    (void)progress_threads;
    px_btl_module_t **mods = malloc(2 * sizeof(*mods));
    for (int i = 0; i < 2; ++i) {
        memset(&rails[i], 0, sizeof(rails[i]));
        px_btl_module_t *m = &rails[i].super;
        m->btl_size = PX_BTL_MODULE_SIZE;
        m->btl_component = &px_btl_rail_component;
        m->btl_exclusivity = 2 * PX_BTL_EXCLUSIVITY_HIGH;
        m->btl_latency = 1;
        m->btl_bandwidth = 1000;
        m->btl_eager_limit = 1024;
        m->btl_max_send_size = 3000;
        m->btl_flags = PX_BTL_FLAGS_SEND;
        m->btl_add_procs = rail_add_procs;
        m->btl_del_procs = rail_del_procs;
        m->btl_finalize = rail_finalize;
        m->btl_alloc = rail_alloc;
        m->btl_free = rail_free;
        m->btl_prepare_src = rail_prepare_src;
        m->btl_send = rail_send;
        m->btl_progress = rail_progress;
        m->btl_register_error = rail_register_error;
        if (rails_with_get) {
            m->btl_flags |= PX_BTL_FLAGS_GET;
            m->btl_get = rail_get;
            m->btl_get_limit = 100000; /* several reads per rail */
            m->btl_bandwidth = i ? 1000 : 3000;
        }
        if (rails_with_put) {
            m->btl_flags |= PX_BTL_FLAGS_PUT;
            m->btl_put = rail_put;
            m->btl_put_limit = 100000;
            m->btl_bandwidth = i ? 1000 : 3000;
        }
        rails[i].rdma_ok_left = -1;
        rails[i].delayed = i;
        mods[i] = m;
    }
    *n = 2;
    return mods;
}

static const px_btl_component_t px_btl_rail_component = {
    .base = PX_BTL_COMPONENT_HEADER("rail", 1, 0, 0, NULL, NULL, NULL),
    .btl_init = rail_init,
};

static void init_rails(void)
{
    setenv("PX_MCA_btl", "self,rail", 1);
    ck_assert_int_eq(px_mca_repository_add_static(&px_btl_rail_component.base), PX_SUCCESS);
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS);
    ck_assert_str_eq(px_transport_name(0), "rail");
    ck_assert_int_eq(px_rt.peers[0].btl->num_eager, 2);
    ck_assert_int_eq(px_rt.peers[0].btl->num_send, 2);
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; ++i)
        b[i] = (unsigned char)(seed * 131 + i * 7);
}

enum { N = 120 };
static const size_t choices[] = {0, 10, 700, 1008, 1009, 5000, 20000};

START_TEST(ordering_across_rails)
{
    init_rails();
    for (int posted_first = 0; posted_first < 2; ++posted_first) {
        unsigned char *s[N], *r[N];
        size_t len[N];
        px_request_t *sr[N], *rr[N];
        px_status_t st[N];
        for (int i = 0; i < N; ++i) {
            len[i] = choices[(i * 3 + posted_first) % 7];
            s[i] = malloc(len[i] + 1);
            r[i] = malloc(20001);
            fill(s[i], len[i], (unsigned)i);
        }
        if (posted_first)
            for (int i = 0; i < N; ++i)
                ck_assert_int_eq(px_irecv(r[i], 20001, 0, 4, &rr[i]), PX_SUCCESS);
        for (int i = 0; i < N; ++i)
            ck_assert_int_eq(px_isend(s[i], len[i], 0, 4, &sr[i]), PX_SUCCESS);
        if (!posted_first)
            for (int i = 0; i < N; ++i)
                ck_assert_int_eq(px_irecv(r[i], 20001, 0, PX_ANY_TAG, &rr[i]), PX_SUCCESS);
        ck_assert_int_eq(px_waitall(N, rr, st), PX_SUCCESS);
        ck_assert_int_eq(px_waitall(N, sr, NULL), PX_SUCCESS);
        for (int i = 0; i < N; ++i) {
            ck_assert_msg(st[i].length == len[i], "message %d: %zu bytes, sent %zu", i,
                          st[i].length, len[i]);
            ck_assert_msg(0 == memcmp(r[i], s[i], len[i]), "message %d: wrong data", i);
            free(s[i]);
            free(r[i]);
        }
    }
    /* both rails carried traffic, so arrival order really differed */
    ck_assert_int_gt(rails[0].sent, 10);
    ck_assert_int_gt(rails[1].sent, 10);
    ck_assert_uint_gt(px_rt.ooo_arrivals, 10);
    ck_assert_uint_eq(px_list_get_size(&px_rt.peers[0].ooo), 0);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

START_TEST(striped_get)
{
    rails_with_get = 1;
    init_rails();
    px_btl_base_peer_t *p = px_rt.peers[0].btl;
    ck_assert_int_eq(p->num_rdma, 2);
    ck_assert_ptr_eq(p->rdma[0].module, &rails[0].super); /* heaviest first */
    ck_assert_double_eq_tol(p->rdma[0].weight, 0.75, 1e-12);
    size_t n = 1u << 20;
    unsigned char *s = malloc(n), *r = malloc(n);
    fill(s, n, 5);
    for (int posted_first = 0; posted_first < 2; ++posted_first) {
        memset(r, 0, n);
        rails[0].got_bytes = rails[1].got_bytes = 0;
        px_request_t *sr, *rr;
        px_status_t st;
        if (posted_first)
            ck_assert_int_eq(px_irecv(r, n, 0, 8, &rr), PX_SUCCESS);
        ck_assert_int_eq(px_isend(s, n, 0, 8, &sr), PX_SUCCESS);
        if (!posted_first)
            ck_assert_int_eq(px_irecv(r, n, 0, 8, &rr), PX_SUCCESS);
        ck_assert_int_eq(px_wait(&rr, &st), PX_SUCCESS);
        ck_assert_int_eq(px_wait(&sr, NULL), PX_SUCCESS);
        ck_assert_uint_eq(st.length, n);
        ck_assert(0 == memcmp(r, s, n));
        /* the read was striped 3:1 by bandwidth */
        ck_assert_uint_eq(rails[0].got_bytes, 3 * n / 4);
        ck_assert_uint_eq(rails[1].got_bytes, n / 4);
    }
    ck_assert_int_ge(rails[0].gets, 2 * 8); /* get_limit splits each rail's range */
    /* a truncated receive reads only what fits, still striped */
    rails[0].got_bytes = rails[1].got_bytes = 0;
    px_request_t *sr;
    ck_assert_int_eq(px_isend(s, n, 0, 9, &sr), PX_SUCCESS);
    px_status_t st;
    ck_assert_int_eq(px_recv(r, 4000, 0, 9, &st), PX_ERR_TRUNCATE);
    ck_assert_int_eq(px_wait(&sr, NULL), PX_SUCCESS);
    ck_assert_uint_eq(st.length, 4000);
    ck_assert_uint_eq(rails[0].got_bytes + rails[1].got_bytes, 4000);
    ck_assert_uint_eq(rails[0].got_bytes, 3000);
    free(s);
    free(r);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

START_TEST(error_from_progress)
{
    init_rails();
    int v = 0;
    px_request_t *r;
    ck_assert_int_eq(px_irecv(&v, sizeof(v), 0, 1, &r), PX_SUCCESS);
    rails[1].fail_next_progress = 1;
    px_status_t st;
    ck_assert_int_eq(px_wait(&r, &st), PX_ERR_PEER_FAILED);
    ck_assert_int_eq(st.error, PX_ERR_PEER_FAILED);
    ck_assert_int_eq(px_send(&v, sizeof(v), 0, 1), PX_ERR_PEER_FAILED);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

/* Send `n` bytes to ourselves by rendezvous, the receive posted first; the
 * receive's and the send's errors in *rrc and *src. */
static void rndv_to_self(unsigned char *s, unsigned char *r, size_t n, int *rrc, int *src)
{
    px_request_t *sr, *rr;
    ck_assert_int_eq(px_irecv(r, n, 0, 8, &rr), PX_SUCCESS);
    ck_assert_int_eq(px_isend(s, n, 0, 8, &sr), PX_SUCCESS);
    *rrc = px_wait(&rr, NULL);
    *src = px_wait(&sr, NULL);
}

/* RDMA put over the heaviest rail, in chunks of put_limit; refused before
 * any byte moved, the data goes as fragments instead. */
START_TEST(put_and_fallback)
{
    rails_with_put = 1;
    init_rails();
    ck_assert_int_eq(px_rt.peers[0].btl->num_rdma, 2);
    size_t n = 1u << 20;
    unsigned char *s = malloc(n), *r = malloc(n);
    fill(s, n, 7);
    int rrc, src;
    rndv_to_self(s, r, n, &rrc, &src);
    ck_assert_int_eq(rrc, PX_SUCCESS);
    ck_assert_int_eq(src, PX_SUCCESS);
    ck_assert(0 == memcmp(r, s, n));
    ck_assert_uint_eq(rails[0].put_bytes, n);
    ck_assert_int_eq(rails[0].puts, (int)((n + 99999) / 100000));
    ck_assert_int_eq(rails[1].puts, 0);
    /* the first put refused: fragments carry it all */
    memset(r, 0, n);
    rails[0].put_bytes = 0;
    rails[0].rdma_ok_left = 0;
    rndv_to_self(s, r, n, &rrc, &src);
    ck_assert_int_eq(rrc, PX_SUCCESS);
    ck_assert_int_eq(src, PX_SUCCESS);
    ck_assert(0 == memcmp(r, s, n));
    ck_assert_uint_eq(rails[0].put_bytes, 0);
    free(s);
    free(r);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

/* An RDMA operation failing after others moved data fails both sides with
 * PX_ERR_COMM, and neither waits for the rest. A put failing so used to leave
 * the sender waiting for bytes it would never write: it never sent PUT-FIN,
 * and both sides hung. */
static void rdma_fails_midway(int get)
{
    rails_with_get = get;
    rails_with_put = !get;
    setenv("PX_MCA_runtime_wait_timeout", "10", 1); /* the old hang, bounded */
    init_rails();
    unsetenv("PX_MCA_runtime_wait_timeout");
    size_t n = 1u << 20;
    unsigned char *s = malloc(n), *r = malloc(n);
    fill(s, n, 9);
    rails[0].rdma_ok_left = 2;
    int rrc, src;
    rndv_to_self(s, r, n, &rrc, &src);
    ck_assert_int_eq(rrc, PX_ERR_COMM);
    ck_assert_int_eq(src, get ? PX_SUCCESS : PX_ERR_COMM); /* get: the receiver's error */
    ck_assert_int_eq(rails[0].gets + rails[0].puts, 2);
    /* the pair still works */
    rails[0].rdma_ok_left = -1;
    rndv_to_self(s, r, n, &rrc, &src);
    ck_assert_int_eq(rrc, PX_SUCCESS);
    ck_assert_int_eq(src, PX_SUCCESS);
    ck_assert(0 == memcmp(r, s, n));
    free(s);
    free(r);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}

START_TEST(get_fails_midway)
{
    rdma_fails_midway(1);
}
END_TEST

START_TEST(put_fails_midway)
{
    rdma_fails_midway(0);
}
END_TEST

/* A message arriving ahead of its turn whose record cannot be allocated
 * (test hook PX_RT_TEST_UX_FAIL=1: the first one fails) used to be dropped
 * with recv_seq never reaching past it: every later message from that peer
 * waited forever. Now the peer fails, and so do the receives from it. */
START_TEST(ooo_record_fails)
{
    setenv("PX_RT_TEST_UX_FAIL", "1", 1);
    setenv("PX_MCA_runtime_wait_timeout", "5", 1); /* the old hang, bounded */
    init_rails();
    unsetenv("PX_RT_TEST_UX_FAIL");
    enum { M = 6 };
    int in[M], out[M];
    px_request_t *rr[M], *sr[M];
    px_status_t st[M];
    /* Receives first: a message in its turn needs no record; only one that
     * arrives ahead of its turn (rail 1 delivers later) takes one. */
    for (int i = 0; i < M; ++i)
        ck_assert_int_eq(px_irecv(&in[i], sizeof(in[i]), 0, 3, &rr[i]), PX_SUCCESS);
    for (int i = 0; i < M; ++i) { /* sends after the failure fail at once */
        out[i] = i;
        sr[i] = NULL;
        int src = px_isend(&out[i], sizeof(out[i]), 0, 3, &sr[i]);
        ck_assert(PX_SUCCESS == src || (PX_ERR_PEER_FAILED == src && px_rt.peers[0].failed));
    }
    int rc = px_waitall(M, rr, st);
    ck_assert_int_eq(rc, PX_ERR_PEER_FAILED);
    ck_assert_uint_gt(px_rt.ooo_arrivals, 0);
    ck_assert_int_eq(px_rt.peers[0].failed, PX_ERR_PEER_FAILED);
    for (int i = 0; i < M; ++i) /* each either arrived whole or failed */
        ck_assert(PX_SUCCESS == st[i].error ? in[i] == i : PX_ERR_PEER_FAILED == st[i].error);
    px_waitall(M, sr, NULL);
    ck_assert_int_eq(px_send(&out[0], sizeof(out[0]), 0, 3), PX_ERR_PEER_FAILED);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
    unsetenv("PX_MCA_runtime_wait_timeout");
}
END_TEST

PX_CHECK_MAIN("rails", NULL, NULL, 60, ordering_across_rails, striped_get, error_from_progress,
              ooo_record_fails, put_and_fallback, get_fails_midway, put_fails_midway)
