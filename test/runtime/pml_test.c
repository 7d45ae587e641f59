/*
 * pml_test.c: the messaging API in one process over btl/self: every size
 * from 0 B to 64 MiB across the protocol switch points (tiny/eager/rendezvous,
 * with RDMA get and with pipelined fragments), wildcards, ordering, the
 * unexpected queue, truncation, many outstanding requests, transport errors,
 * bad arguments. Each test case runs in its own process (Check's fork mode),
 * so it may set PX_MCA_* variables before px_init.
 */
#include "test/lib/px_check.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/runtime.h"

static void init(void)
{
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS);
}
static void fin(void)
{
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
}

/* Sizes: 0..16, powers of two up to 64 MiB with +-1, and +-1 around the
 * tiny limit (256), the self eager data limit (4096 - 16) and the fragment
 * size (65536 - 16). */
static size_t sizes[256];
static int nsizes;
static void make_sizes(void)
{
    nsizes = 0;
    for (size_t s = 0; s <= 16; ++s)
        sizes[nsizes++] = s;
    for (size_t p = 32; p <= (64u << 20); p <<= 1) {
        sizes[nsizes++] = p - 1;
        sizes[nsizes++] = p;
        if (p < (64u << 20))
            sizes[nsizes++] = p + 1;
    }
    size_t around[] = {256, 4080, 65520, 65536 - 32};
    for (size_t i = 0; i < sizeof(around) / sizeof(around[0]); ++i)
        for (int d = -1; d <= 1; ++d)
            sizes[nsizes++] = around[i] + d;
}

/* Send each size to self and receive it, posted-first and unexpected-first. */
static void run_sizes(void)
{
    make_sizes();
    unsigned char *s = malloc(64u << 20), *r = malloc((64u << 20) + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(r);
    for (int i = 0; i < nsizes; ++i) {
        size_t n = sizes[i];
        for (int posted_first = 0; posted_first < 2; ++posted_first) {
            fill(s, n, (unsigned)(i * 2 + posted_first));
            memset(r, 0xee, n + 1);
            px_status_t st;
            px_request_t *sr = NULL, *rr = NULL;
            if (posted_first) {
                ck_assert_int_eq(px_irecv(r, n + 1, 0, 7, &rr), PX_SUCCESS);
                ck_assert_int_eq(px_send(s, n, 0, 7), PX_SUCCESS);
                ck_assert_int_eq(px_wait(&rr, &st), PX_SUCCESS);
                ck_assert_ptr_null(rr);
            } else {
                ck_assert_int_eq(px_isend(s, n, 0, 7, &sr), PX_SUCCESS);
                ck_assert_int_eq(px_recv(r, n + 1, 0, 7, &st), PX_SUCCESS);
                ck_assert_int_eq(px_wait(&sr, NULL), PX_SUCCESS);
            }
            ck_assert_msg(st.length == n, "size %zu: status length %zu", n, st.length);
            ck_assert_int_eq(st.source, 0);
            ck_assert_int_eq(st.tag, 7);
            ck_assert_int_eq(st.error, PX_SUCCESS);
            ck_assert_msg(0 == memcmp(s, r, n), "size %zu (posted first %d): data differs", n,
                          posted_first);
            ck_assert_msg(r[n] == 0xee, "size %zu: wrote past the message", n);
        }
    }
    ck_assert_uint_eq(px_rt_unexpected_count(), 0);
    ck_assert_uint_eq(px_rt_posted_count(), 0);
    free(s);
    free(r);
}

START_TEST(sizes_rdma_get)
{
    init();
    ck_assert_int_eq(px_rt.peers[0].btl->num_rdma, 1);
    ck_assert_uint_eq(px_rt.peers[0].tiny_below, 257);
    ck_assert_uint_eq(px_rt.peers[0].eager_data, 4096 - sizeof(px_rt_match_hdr_t));
    run_sizes();
    fin();
}
END_TEST

START_TEST(sizes_pipelined)
{
    setenv("PX_MCA_runtime_rndv_protocol", "pipeline", 1);
    init();
    ck_assert_int_eq(px_rt.rndv_protocol, PX_RT_RNDV_PIPELINE);
    run_sizes();
    fin();
}
END_TEST

START_TEST(sizes_rdma_put)
{
    setenv("PX_MCA_runtime_rndv_protocol", "put", 1);
    init();
    ck_assert_int_eq(px_rt.rndv_protocol, PX_RT_RNDV_PUT);
    run_sizes();
    fin();
}
END_TEST

START_TEST(sizes_no_sendi_small_eager)
{
    /* No immediate path, a tiny eager limit and small fragments. */
    setenv("PX_MCA_runtime_tiny_limit", "0", 1);
    setenv("PX_MCA_btl_self_eager_limit", "200", 1);
    setenv("PX_MCA_btl_self_max_send_size", "1000", 1);
    setenv("PX_MCA_btl_self_flags", "0x9", 1); /* send + in place: no RDMA */
    init();
    /* The variables took effect. */
    ck_assert_uint_eq(px_rt.peers[0].tiny_below, 0);
    ck_assert_uint_eq(px_rt.peers[0].eager_data, 200 - sizeof(px_rt_match_hdr_t));
    ck_assert_int_eq(px_rt.peers[0].btl->num_rdma, 0);
    ck_assert_uint_eq(px_rt.peers[0].btl->max_send_size, 1000);
    unsigned char s[5000], r[5000];
    size_t ns[] = {0, 1, 111, 112, 113, 127, 128, 129, 183, 184, 185, 999, 1000, 1001, 4999};
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); ++i) {
        fill(s, ns[i], (unsigned)i);
        px_request_t *sr;
        px_status_t st;
        ck_assert_int_eq(px_isend(s, ns[i], 0, 3, &sr), PX_SUCCESS);
        ck_assert_int_eq(px_recv(r, sizeof(r), 0, 3, &st), PX_SUCCESS);
        ck_assert_int_eq(px_wait(&sr, NULL), PX_SUCCESS);
        ck_assert_uint_eq(st.length, ns[i]);
        ck_assert(0 == memcmp(s, r, ns[i]));
    }
    fin();
}
END_TEST

START_TEST(wildcards)
{
    init();
    int a = 11, b = 22, c = 33, v = 0;
    px_status_t st;
    ck_assert_int_eq(px_send(&a, sizeof(a), 0, 100), PX_SUCCESS);
    ck_assert_int_eq(px_send(&b, sizeof(b), 0, 200), PX_SUCCESS);
    ck_assert_int_eq(px_send(&c, sizeof(c), 0, 300), PX_SUCCESS);
    /* A specific tag skips earlier messages. */
    ck_assert_int_eq(px_recv(&v, sizeof(v), PX_ANY_SOURCE, 200, &st), PX_SUCCESS);
    ck_assert_int_eq(v, 22);
    ck_assert_int_eq(st.tag, 200);
    ck_assert_int_eq(st.source, 0);
    /* Any tag takes the oldest. */
    ck_assert_int_eq(px_recv(&v, sizeof(v), 0, PX_ANY_TAG, &st), PX_SUCCESS);
    ck_assert_int_eq(v, 11);
    ck_assert_int_eq(st.tag, 100);
    ck_assert_int_eq(px_recv(&v, sizeof(v), PX_ANY_SOURCE, PX_ANY_TAG, &st), PX_SUCCESS);
    ck_assert_int_eq(v, 33);
    ck_assert_int_eq(st.tag, 300);
    /* Posted wildcards match in post order. */
    px_request_t *r1, *r2;
    int v1 = 0, v2 = 0;
    ck_assert_int_eq(px_irecv(&v1, sizeof(v1), PX_ANY_SOURCE, PX_ANY_TAG, &r1), PX_SUCCESS);
    ck_assert_int_eq(px_irecv(&v2, sizeof(v2), 0, 5, &r2), PX_SUCCESS);
    ck_assert_int_eq(px_send(&a, sizeof(a), 0, 5), PX_SUCCESS);
    ck_assert_int_eq(px_send(&b, sizeof(b), 0, 5), PX_SUCCESS);
    ck_assert_int_eq(px_wait(&r1, &st), PX_SUCCESS);
    ck_assert_int_eq(px_wait(&r2, NULL), PX_SUCCESS);
    ck_assert_int_eq(v1, 11);
    ck_assert_int_eq(v2, 22);
    /* A barrier's runtime-internal message never matches PX_ANY_TAG. */
    ck_assert_int_eq(px_barrier(), PX_SUCCESS);
    ck_assert_uint_eq(px_rt_unexpected_count(), 0);
    fin();
}
END_TEST

/* Mixed protocols on one tag arrive in send order. */
START_TEST(ordering)
{
    init();
    enum { N = 60 };
    size_t ns[N];
    unsigned char *bufs[N];
    px_request_t *sr[N];
    for (int i = 0; i < N; ++i) {
        size_t choices[] = {0, 8, 300, 3000, 5000, 70000, 300000};
        ns[i] = choices[(i * 5) % 7];
        bufs[i] = malloc(ns[i] + 1);
        fill(bufs[i], ns[i], (unsigned)i);
        ck_assert_int_eq(px_isend(bufs[i], ns[i], 0, 9, &sr[i]), PX_SUCCESS);
    }
    unsigned char *r = malloc(300001);
    for (int i = 0; i < N; ++i) {
        px_status_t st;
        ck_assert_int_eq(px_recv(r, 300001, 0, PX_ANY_TAG, &st), PX_SUCCESS);
        ck_assert_msg(st.length == ns[i], "message %d: length %zu, expected %zu", i, st.length,
                      ns[i]);
        ck_assert_msg(0 == memcmp(r, bufs[i], ns[i]), "message %d: wrong data", i);
    }
    ck_assert_int_eq(px_waitall(N, sr, NULL), PX_SUCCESS);
    for (int i = 0; i < N; ++i) {
        ck_assert_ptr_null(sr[i]);
        free(bufs[i]);
    }
    free(r);
    fin();
}
END_TEST

START_TEST(unexpected_queue)
{
    init();
    enum { N = 500 };
    for (int i = 0; i < N; ++i) {
        int v = i * 3;
        size_t len = (i % 3) ? sizeof(v) : 1000; /* some beyond the inline size */
        unsigned char buf[1000];
        memset(buf, i & 0xff, sizeof(buf));
        memcpy(buf, &v, sizeof(v));
        ck_assert_int_eq(px_send(buf, len, 0, i), PX_SUCCESS);
    }
    ck_assert_uint_eq(px_rt_unexpected_count(), N);
    for (int i = N - 1; i >= 0; --i) {
        unsigned char buf[1000];
        px_status_t st;
        ck_assert_int_eq(px_recv(buf, sizeof(buf), 0, i, &st), PX_SUCCESS);
        int v;
        memcpy(&v, buf, sizeof(v));
        ck_assert_int_eq(v, i * 3);
        ck_assert_uint_eq(st.length, (i % 3) ? sizeof(v) : 1000);
        if (0 == i % 3)
            ck_assert_int_eq(buf[999], i & 0xff);
    }
    ck_assert_uint_eq(px_rt_unexpected_count(), 0);
    fin();
}
END_TEST

static void truncation_sizes(void)
{
    size_t ns[] = {100, 5000, 1u << 20};
    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); ++k) {
        for (int posted_first = 0; posted_first < 2; ++posted_first) {
            size_t n = ns[k];
            unsigned char *s = malloc(n), *r = malloc(n);
            fill(s, n, (unsigned)k);
            memset(r, 0, n);
            int next = 4242, got = 0;
            px_status_t st;
            px_request_t *rr = NULL, *sr = NULL;
            if (posted_first)
                ck_assert_int_eq(px_irecv(r, 50, 0, 1, &rr), PX_SUCCESS);
            ck_assert_int_eq(px_isend(s, n, 0, 1, &sr), PX_SUCCESS);
            ck_assert_int_eq(px_send(&next, sizeof(next), 0, 1), PX_SUCCESS);
            if (posted_first)
                ck_assert_int_eq(px_wait(&rr, &st), PX_ERR_TRUNCATE);
            else
                ck_assert_int_eq(px_recv(r, 50, 0, 1, &st), PX_ERR_TRUNCATE);
            ck_assert_int_eq(st.error, PX_ERR_TRUNCATE);
            ck_assert_uint_eq(st.length, 50);
            ck_assert(0 == memcmp(r, s, 50));
            ck_assert_int_eq(r[50], 0); /* nothing written past the buffer */
            ck_assert_int_eq(px_wait(&sr, NULL), PX_SUCCESS);
            /* The following message still arrives, whole. */
            ck_assert_int_eq(px_recv(&got, sizeof(got), 0, 1, &st), PX_SUCCESS);
            ck_assert_int_eq(got, 4242);
            free(s);
            free(r);
        }
    }
    ck_assert_uint_eq(px_rt_unexpected_count(), 0);
}

START_TEST(truncation_get)
{
    init();
    truncation_sizes();
    fin();
}
END_TEST

START_TEST(truncation_pipelined)
{
    setenv("PX_MCA_runtime_rndv_protocol", "pipeline", 1);
    init();
    truncation_sizes();
    fin();
}
END_TEST

START_TEST(truncation_put)
{
    setenv("PX_MCA_runtime_rndv_protocol", "put", 1);
    init();
    truncation_sizes();
    fin();
}
END_TEST

START_TEST(many_outstanding)
{
    init();
    enum { N = 5000 };
    px_request_t **rr = malloc(N * sizeof(*rr)), **sr = malloc(N * sizeof(*sr));
    int *in = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int));
    px_status_t *st = malloc(N * sizeof(*st));
    /* Receives first. */
    for (int i = 0; i < N; ++i)
        ck_assert_int_eq(px_irecv(&in[i], sizeof(int), PX_ANY_SOURCE, i % 7, &rr[i]), PX_SUCCESS);
    ck_assert_uint_eq(px_rt_posted_count(), N);
    for (int i = 0; i < N; ++i) {
        out[i] = i;
        ck_assert_int_eq(px_isend(&out[i], sizeof(int), 0, i % 7, &sr[i]), PX_SUCCESS);
    }
    ck_assert_int_eq(px_waitall(N, sr, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_waitall(N, rr, st), PX_SUCCESS);
    for (int i = 0; i < N; ++i) {
        ck_assert_int_eq(in[i], i);
        ck_assert_int_eq(st[i].tag, i % 7);
    }
    /* Sends first, then px_test until done. */
    for (int i = 0; i < N; ++i)
        ck_assert_int_eq(px_isend(&out[i], sizeof(int), 0, 3, &sr[i]), PX_SUCCESS);
    for (int i = 0; i < N; ++i)
        ck_assert_int_eq(px_irecv(&in[i], sizeof(int), 0, 3, &rr[i]), PX_SUCCESS);
    for (int i = 0; i < N; ++i) {
        int flag = 0;
        ck_assert_int_eq(px_test(&rr[i], &flag, &st[i]), PX_SUCCESS);
        ck_assert_int_eq(flag, 1);
        ck_assert_ptr_null(rr[i]);
        ck_assert_int_eq(in[i], i);
    }
    ck_assert_int_eq(px_waitall(N, sr, NULL), PX_SUCCESS);
    free(rr);
    free(sr);
    free(in);
    free(out);
    free(st);
    fin();
}
END_TEST

START_TEST(test_incomplete)
{
    init();
    px_request_t *r;
    int v = 0, flag = 1;
    ck_assert_int_eq(px_irecv(&v, sizeof(v), 0, 1, &r), PX_SUCCESS);
    ck_assert_int_eq(px_test(&r, &flag, NULL), PX_SUCCESS);
    ck_assert_int_eq(flag, 0);
    ck_assert_ptr_nonnull(r);
    int w = 9;
    ck_assert_int_eq(px_send(&w, sizeof(w), 0, 1), PX_SUCCESS);
    ck_assert_int_eq(px_test(&r, &flag, NULL), PX_SUCCESS);
    ck_assert_int_eq(flag, 1);
    ck_assert_int_eq(v, 9);
    fin();
}
END_TEST

START_TEST(never_completes)
{
    init();
    int v;
    /* Alone in the job, nothing queued: an error, not a hang. */
    ck_assert_int_eq(px_recv(&v, sizeof(v), 0, 77, NULL), PX_ERR_TIMEOUT);
    ck_assert_uint_eq(px_rt_posted_count(), 0);
    /* A rendezvous send with no receive, likewise; its header is withdrawn. */
    static unsigned char big[100000];
    ck_assert_int_eq(px_send(big, sizeof(big), 0, 78), PX_ERR_TIMEOUT);
    ck_assert_uint_eq(px_rt_unexpected_count(), 0);
    /* Everything still works afterwards. */
    ck_assert_int_eq(px_send(&v, sizeof(v), 0, 1), PX_SUCCESS);
    ck_assert_int_eq(px_recv(&v, sizeof(v), 0, 1, NULL), PX_SUCCESS);
    fin();
}
END_TEST

START_TEST(transport_error)
{
    init();
    int v = 0;
    px_request_t *r;
    ck_assert_int_eq(px_irecv(&v, sizeof(v), 0, 1, &r), PX_SUCCESS);
    /* What a module's progress reports when it loses a peer. */
    px_rt_btl_error(NULL, NULL, 0, PX_ERR_PEER_FAILED, "test: connection lost");
    px_status_t st;
    ck_assert_int_eq(px_wait(&r, &st), PX_ERR_PEER_FAILED);
    ck_assert_int_eq(st.error, PX_ERR_PEER_FAILED);
    ck_assert_int_eq(px_send(&v, sizeof(v), 0, 1), PX_ERR_PEER_FAILED);
    ck_assert_int_eq(px_recv(&v, sizeof(v), 0, 1, NULL), PX_ERR_PEER_FAILED);
    fin();
}
END_TEST

START_TEST(bad_arguments)
{
    int v = 0;
    px_request_t *r;
    ck_assert_int_eq(px_send(&v, sizeof(v), 0, 1), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_rank(), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_initialized(), 0);
    init();
    ck_assert_int_eq(px_initialized(), 1);
    ck_assert_int_eq(px_init(NULL, NULL), PX_ERR_EXISTS);
    ck_assert_int_eq(px_rank(), 0);
    ck_assert_int_eq(px_size(), 1);
    ck_assert_int_eq(px_send(&v, sizeof(v), 1, 1), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_send(&v, sizeof(v), -1, 1), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_send(&v, sizeof(v), 0, -5), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_send(&v, sizeof(v), 0, PX_ANY_TAG), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_isend(&v, sizeof(v), 0, 1, NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_irecv(&v, sizeof(v), 3, 1, &r), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_recv(&v, sizeof(v), 0, -2, NULL), PX_ERR_BAD_PARAM);
    ck_assert_str_eq(px_transport_name(0), "self");
    ck_assert_ptr_null(px_transport_name(1));
    double t0 = px_wtime(), t1 = px_wtime();
    ck_assert(t1 >= t0);
    fin();
    ck_assert_int_eq(px_finalize(), PX_ERR_NOT_INITIALIZED);
}
END_TEST

START_TEST(reinit)
{
    for (int k = 0; k < 3; ++k) {
        init();
        int v = k, w = -1;
        ck_assert_int_eq(px_send(&v, sizeof(v), 0, 1), PX_SUCCESS);
        ck_assert_int_eq(px_recv(&w, sizeof(w), 0, 1, NULL), PX_SUCCESS);
        ck_assert_int_eq(w, k);
        fin();
    }
}
END_TEST

PX_CHECK_MAIN("pml", NULL, NULL, 120, sizes_rdma_get, sizes_pipelined, sizes_rdma_put,
              sizes_no_sendi_small_eager, wildcards, ordering, unexpected_queue, truncation_get,
              truncation_pipelined, truncation_put, many_outstanding, test_incomplete,
              never_completes, transport_error, bad_arguments, reinit)
