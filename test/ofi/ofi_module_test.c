/*
 * ofi_module_test.c: btl/ofi inside one process: two modules (ranks 0 and 1)
 * on the same provider exchange active messages (fi_inject sendi, eager
 * fragments, prepare_src) and RDMA (put/get through registrations), over
 * tcp;ofi_rxm, sockets and shm; provider include/exclude/domain settings
 * that cannot be honoured make init decline with an error; a peer whose
 * address nobody listens on turns into an error on the send concerned,
 * through the error callback, with libfabric's text; a peer on another
 * provider is unreachable with a reason. The boot modex is a fake here.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include "test/lib/px_check.h"
#include <netinet/in.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "components/btl/ofi/ofi.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base_runtime.h"

/* A fake boot module: the modex is an array. */
#define NRANKS 4
#include "test/lib/fake_boot.h"

/* ---- helpers ---- */
static void use_provider(const char *include, const char *exclude, const char *domain)
{
    px_boot = &fake_boot;
    ck_assert_int_eq(px_btl_ofi_component.base.register_params(), PX_SUCCESS);
    ck_assert_int_ge(px_mca_var_set("btl_ofi_provider_include", include ? include : ""), 0);
    ck_assert_int_ge(px_mca_var_set("btl_ofi_provider_exclude", exclude ? exclude : ""), 0);
    ck_assert_int_ge(px_mca_var_set("btl_ofi_domain", domain ? domain : ""), 0);
    /* register again: discovery runs with the new settings */
    ck_assert_int_eq(px_btl_ofi_component.base.register_params(), PX_SUCCESS);
}

static px_btl_module_t *make_module(int rank)
{
    fake_boot.rank = rank;
    int n = -1;
    px_btl_module_t **mods = px_btl_ofi_component.btl_init(&n, false);
    if (NULL == mods)
        return NULL;
    ck_assert_int_eq(n, 1);
    px_btl_module_t *m = mods[0];
    free(mods);
    ck_assert_int_eq(px_btl_ofi_component.btl_modex_send(), PX_SUCCESS);
    return m;
}

static px_proc_t procs[NRANKS];
static px_proc_t *proc_ptrs[NRANKS];

static void add_peers(px_btl_module_t *m, int first, int count, px_btl_endpoint_t **eps,
                      const char **reasons, px_bitmap_t *bm)
{
    for (int i = 0; i < NRANKS; ++i) {
        procs[i].rank = i;
        procs[i].hostname = "testhost";
        procs[i].locality = PX_PROC_LOCAL_HOST;
        proc_ptrs[i] = &procs[i];
        reasons[i] = NULL;
    }
    PX_OBJ_CONSTRUCT(bm, px_bitmap_t);
    px_bitmap_init(bm, NRANKS);
    ck_assert_int_eq(m->btl_add_procs(m, (size_t)count, &proc_ptrs[first], eps, bm, reasons),
                     PX_SUCCESS);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Progress both modules until *flag reaches want (10 s at most). */
static void progress_until(px_btl_module_t *a, px_btl_module_t *b, volatile int *flag, int want)
{
    double t0 = now();
    while (*flag < want && now() - t0 < 10) {
        a->btl_progress(a);
        if (b)
            b->btl_progress(b);
    }
    ck_assert_msg(*flag >= want, "timed out waiting: %d of %d events", *flag, want);
}

/* Retry an operation while the transport says "again" (connecting), with
 * progress, for 10 s at most. */
#define RETRY(a, b, expr)                                                                          \
    ({                                                                                             \
        int rc_;                                                                                   \
        double t0_ = now();                                                                        \
        while (PX_ERR_TEMP_OUT_OF_RESOURCE == (rc_ = (expr)) && now() - t0_ < 10) {                \
            (a)->btl_progress(a);                                                                  \
            if (b)                                                                                 \
                (b)->btl_progress(b);                                                              \
        }                                                                                          \
        rc_;                                                                                       \
    })

/* Messages received on tag 200. */
static volatile int n_recv;
static char recv_data[8][70000];
static size_t recv_len[8];
static int recv_src[8];

static void am_cb(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    ck_assert_uint_eq(d->des_segment_count, 1);
    int i = n_recv % 8;
    recv_len[i] = d->des_segments[0].seg_len;
    memcpy(recv_data[i], d->des_segments[0].seg_addr, recv_len[i]);
    recv_src[i] = d->src_rank;
    n_recv++;
}

static volatile int n_send_done, last_send_status;
static void send_cb(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                    int status)
{
    (void)btl;
    (void)ep;
    (void)des;
    last_send_status = status;
    n_send_done++;
}

static void exchange(const char *provider)
{
    use_provider(provider, NULL, NULL);
    px_btl_module_t *a = make_module(0), *b = make_module(1);
    ck_assert_msg(a && b, "btl/ofi declined on provider %s", provider);
    px_btl_endpoint_t *ea[NRANKS], *eb[NRANKS];
    const char *ra[NRANKS], *rb[NRANKS];
    px_bitmap_t bma, bmb;
    add_peers(a, 0, 2, ea, ra, &bma);
    add_peers(b, 0, 2, eb, rb, &bmb);
    ck_assert(px_bitmap_is_set_bit(&bma, 1));
    ck_assert(px_bitmap_is_set_bit(&bmb, 0));
    px_btl_base_register_am(200, am_cb, NULL);
    n_recv = 0;

    /* 1: sendi of a tiny message (fi_inject) */
    const char hdr[8] = "HEADER!", pay[] = "tiny payload";
    int rc =
        RETRY(a, b, a->btl_sendi(a, ea[1], hdr, sizeof(hdr), pay, sizeof(pay), 0, 0, 200, NULL));
    ck_assert_int_eq(rc, PX_SUCCESS);
    /* 2: an eager fragment from btl_alloc, the caller keeping it */
    px_btl_descriptor_t *d = a->btl_alloc(a, ea[1], 0, 1000, 0);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(d->des_segments[0].seg_len, 1000);
    memset(d->des_segments[0].seg_addr, 'x', 1000);
    d->des_cbfunc = send_cb;
    n_send_done = 0;
    ck_assert_int_ge(a->btl_send(a, ea[1], d, 200), 0);
    /* 3: the largest fragment from prepare_src, the BTL owning it */
    static char big[70000];
    for (size_t i = 0; i < sizeof(big); ++i)
        big[i] = (char)(i * 7);
    px_btl_convertor_t conv;
    px_btl_convertor_init_contig(&conv, big, sizeof(big));
    size_t size = sizeof(big);
    px_btl_descriptor_t *d3 =
        a->btl_prepare_src(a, ea[1], &conv, 0, 16, &size, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    ck_assert_ptr_nonnull(d3);
    ck_assert_uint_eq(size, a->btl_max_send_size - 16);
    memset(d3->des_segments[0].seg_addr, 'h', 16);
    ck_assert_int_ge(a->btl_send(a, ea[1], d3, 200), 0);
    progress_until(a, b, &n_recv, 3);
    progress_until(a, b, &n_send_done, 1);
    ck_assert_int_eq(last_send_status, PX_SUCCESS);
    a->btl_free(a, d);
    /* in order, from rank 0, intact */
    ck_assert_int_eq(recv_src[0], 0);
    ck_assert_uint_eq(recv_len[0], sizeof(hdr) + sizeof(pay));
    ck_assert_mem_eq(recv_data[0], hdr, sizeof(hdr));
    ck_assert_str_eq(recv_data[0] + sizeof(hdr), pay);
    ck_assert_uint_eq(recv_len[1], 1000);
    ck_assert_int_eq(recv_data[1][999], 'x');
    ck_assert_uint_eq(recv_len[2], 16 + size);
    ck_assert_mem_eq(recv_data[2] + 16, big, size);
    /* and back from 1 to 0 */
    rc = RETRY(a, b, b->btl_sendi(b, eb[0], hdr, sizeof(hdr), NULL, 0, 0, 0, 200, NULL));
    ck_assert_int_eq(rc, PX_SUCCESS);
    progress_until(a, b, &n_recv, 4);
    ck_assert_int_eq(recv_src[3], 1);

    b->btl_del_procs(b, 2, proc_ptrs, eb);
    a->btl_del_procs(a, 2, proc_ptrs, ea);
    b->btl_finalize(b);
    a->btl_finalize(a);
    PX_OBJ_DESTRUCT(&bma);
    PX_OBJ_DESTRUCT(&bmb);
}

static volatile int n_rdma, last_rdma_status;
static void rdma_cb(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                    px_btl_registration_handle_t *lh, void *ctx, void *data, int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    (void)data;
    ck_assert_ptr_eq(ctx, (void *)0x1234);
    last_rdma_status = status;
    n_rdma++;
}

static void rdma(const char *provider)
{
    use_provider(provider, NULL, NULL);
    px_btl_module_t *a = make_module(0), *b = make_module(1);
    ck_assert(a && b);
    ck_assert(a->btl_flags & PX_BTL_FLAGS_PUT);
    px_btl_endpoint_t *ea[NRANKS], *eb[NRANKS];
    const char *ra[NRANKS], *rb[NRANKS];
    px_bitmap_t bma, bmb;
    add_peers(a, 0, 2, ea, ra, &bma);
    add_peers(b, 0, 2, eb, rb, &bmb);
    size_t len = 1 << 20;
    char *remote = malloc(len), *local = malloc(len);
    memset(remote, 0, len);
    for (size_t i = 0; i < len; ++i)
        local[i] = (char)(i * 13 + 1);
    px_btl_registration_handle_t *rh = b->btl_register_mem(b, NULL, remote, len, 0);
    px_btl_registration_handle_t *lh = a->btl_register_mem(a, NULL, local, len, 0);
    ck_assert(rh && lh);
    /* the peer sees only the wire bytes of the handle */
    char wire[64];
    ck_assert_uint_le(a->btl_registration_handle_size, sizeof(wire));
    memset(wire, 0, sizeof(wire));
    memcpy(wire, rh, b->btl_registration_handle_size);
    n_rdma = 0;
    ck_assert_int_eq(RETRY(a, b,
                           a->btl_put(a, ea[1], local + 100, (uint64_t)(uintptr_t)(remote + 4096),
                                      lh, (px_btl_registration_handle_t *)wire, 300000, 0, 0,
                                      rdma_cb, (void *)0x1234, NULL)),
                     PX_SUCCESS);
    progress_until(a, b, &n_rdma, 1);
    ck_assert_int_eq(last_rdma_status, PX_SUCCESS);
    ck_assert_mem_eq(remote + 4096, local + 100, 300000);
    ck_assert_int_eq(remote[4095], 0);
    /* get back into a fresh buffer, unregistered on our side */
    char *back = calloc(1, 300000);
    ck_assert_int_eq(RETRY(a, b,
                           a->btl_get(a, ea[1], back, (uint64_t)(uintptr_t)(remote + 4096), NULL,
                                      (px_btl_registration_handle_t *)wire, 300000, 0, 0, rdma_cb,
                                      (void *)0x1234, NULL)),
                     PX_SUCCESS);
    progress_until(a, b, &n_rdma, 2);
    ck_assert_int_eq(last_rdma_status, PX_SUCCESS);
    ck_assert_mem_eq(back, local + 100, 300000);
    /* registering the same buffer again is a cache hit: the same handle */
    px_btl_registration_handle_t *lh2 = a->btl_register_mem(a, NULL, local + 10, 100, 0);
    ck_assert_ptr_eq(lh2, lh);
    ck_assert_int_eq(a->btl_deregister_mem(a, lh2), PX_SUCCESS);
    ck_assert_int_eq(a->btl_deregister_mem(a, lh), PX_SUCCESS);
    ck_assert_int_eq(b->btl_deregister_mem(b, rh), PX_SUCCESS);
    ck_assert_int_eq(a->btl_flush(a, NULL), PX_SUCCESS);
    b->btl_del_procs(b, 2, proc_ptrs, eb);
    a->btl_del_procs(a, 2, proc_ptrs, ea);
    b->btl_finalize(b);
    a->btl_finalize(a);
    PX_OBJ_DESTRUCT(&bma);
    PX_OBJ_DESTRUCT(&bmb);
    free(remote);
    free(local);
    free(back);
}

START_TEST(exchange_tcp)
{
    exchange("tcp;ofi_rxm");
}
END_TEST

/* Is provider `name` among those libfabric offers here (exactly)? */
static bool have_provider(const char *name)
{
    use_provider(NULL, NULL, NULL);
    int idx = px_mca_var_find("btl_ofi_providers_available");
    ck_assert_int_ge(idx, 0);
    char *avail = px_mca_var_value_string(idx);
    bool found = false;
    size_t n = strlen(name);
    for (const char *p = avail; p && *p && !found; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        found = 0 == strncmp(p, name, n) && (',' == p[n] || '\0' == p[n]);
    free(avail);
    return found;
}

/* net: libfabric 1.16-1.17's RDM endpoints straight over TCP, the default
 * where it exists (btl_ofi_provider_order). */
START_TEST(exchange_net)
{
    if (!have_provider("net")) {
        printf("exchange_net: skipped: this libfabric has no provider net (1.16-1.17 only)\n");
        return;
    }
    exchange("net");
}
END_TEST
START_TEST(exchange_sockets)
{
    exchange("sockets");
}
END_TEST
START_TEST(exchange_shm)
{
    exchange("shm");
}
END_TEST
START_TEST(rdma_tcp)
{
    rdma("tcp;ofi_rxm");
}
END_TEST
START_TEST(rdma_net)
{
    if (!have_provider("net")) {
        printf("rdma_net: skipped: this libfabric has no provider net (1.16-1.17 only)\n");
        return;
    }
    rdma("net");
}
END_TEST
START_TEST(rdma_sockets)
{
    rdma("sockets");
}
END_TEST
START_TEST(rdma_shm)
{
    rdma("shm");
}
END_TEST

static char *selected_text(void)
{
    int idx = px_mca_var_find("btl_ofi_provider_selected");
    ck_assert_int_ge(idx, 0);
    return px_mca_var_value_string(idx);
}

START_TEST(provider_choice)
{
    /* default: something is chosen, and it is listed as available */
    use_provider(NULL, NULL, NULL);
    char *sel = selected_text();
    int idx = px_mca_var_find("btl_ofi_providers_available");
    ck_assert_int_ge(idx, 0);
    char *avail = px_mca_var_value_string(idx);
    ck_assert_ptr_nonnull(strstr(avail, "tcp;ofi_rxm"));
    ck_assert_ptr_nonnull(strstr(avail, "sockets"));
    ck_assert_ptr_null(strstr(sel, "none"));
    /* over TCP the default is net where libfabric has it: per message
     * received, tcp;ofi_rxm adds a write and a read of its signalling pipe
     * (strace, docs/measurements/ofi.md) */
    if (strstr(avail, "net,") || strstr(avail, "net;ofi_rxm")) {
        px_btl_module_t *d = make_module(0);
        ck_assert_ptr_nonnull(d);
        ck_assert_str_eq(((px_btl_ofi_module_t *)d)->info->fabric_attr->prov_name, "net");
        d->btl_finalize(d);
        /* "net" names net, not net;ofi_rxm (a core name matches its utility
         * stack only after the provider of that name) */
        use_provider("net", NULL, NULL);
        d = make_module(0);
        ck_assert_ptr_nonnull(d);
        ck_assert_str_eq(((px_btl_ofi_module_t *)d)->info->fabric_attr->prov_name, "net");
        d->btl_finalize(d);
    }
    /* the informational variables cannot be set */
    ck_assert_int_lt(px_mca_var_set("btl_ofi_provider_selected", "x"), 0);
    free(sel);
    free(avail);
    /* a core name picks its utility stack, and include order is preference */
    use_provider("tcp", NULL, NULL);
    px_btl_module_t *m = make_module(0);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(((px_btl_ofi_module_t *)m)->info->fabric_attr->prov_name, "tcp;ofi_rxm");
    m->btl_finalize(m);
    use_provider("nosuch,sockets,tcp", NULL, NULL);
    m = make_module(0);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(((px_btl_ofi_module_t *)m)->info->fabric_attr->prov_name, "sockets");
    m->btl_finalize(m);
    /* exclude removes providers from the default order */
    use_provider(NULL, "cxi,efa,psm3,opx,verbs,psm2,tcp,net,udp", NULL);
    m = make_module(0);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(((px_btl_ofi_module_t *)m)->info->fabric_attr->prov_name, "sockets");
    m->btl_finalize(m);
    /* a domain by name */
    use_provider("tcp", NULL, "lo");
    m = make_module(0);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(((px_btl_ofi_module_t *)m)->info->domain_attr->name, "lo");
    m->btl_finalize(m);
}
END_TEST

START_TEST(provider_errors)
{
    int n = -1;
    /* a provider that does not exist: init declines */
    use_provider("nosuch", NULL, NULL);
    ck_assert_ptr_null(px_btl_ofi_component.btl_init(&n, false));
    ck_assert_int_eq(n, 0);
    /* both lists set */
    use_provider("tcp", "sockets", NULL);
    ck_assert_ptr_null(px_btl_ofi_component.btl_init(&n, false));
    /* everything excluded */
    use_provider(NULL, "cxi,efa,psm3,opx,verbs,psm2,tcp,net,udp,sockets,shm,psm,ofi_rxd", NULL);
    ck_assert_ptr_null(px_btl_ofi_component.btl_init(&n, false));
    /* a domain that does not exist */
    use_provider("tcp", NULL, "nosuch0");
    ck_assert_ptr_null(px_btl_ofi_component.btl_init(&n, false));
}
END_TEST

static volatile int n_err, err_rank, err_code;
static char err_text[600];
static void error_cb(px_btl_module_t *btl, px_btl_endpoint_t *ep, int rank, int error,
                     const char *description)
{
    (void)btl;
    (void)ep;
    err_rank = rank;
    err_code = error;
    snprintf(err_text, sizeof(err_text), "%s", description);
    n_err++;
}

START_TEST(unreachable_peer)
{
    use_provider("tcp;ofi_rxm", NULL, "lo");
    /* tcp;ofi_rxm retries a refused connection forever, answering EAGAIN:
     * the connect timeout turns that into an error */
    ck_assert_int_ge(px_mca_var_set("btl_ofi_connect_timeout", "2"), 0);
    /* the timeout itself is under test: no probe of the refused port */
    ck_assert_int_ge(px_mca_var_set("btl_ofi_connect_probe", "0"), 0);
    px_btl_module_t *a = make_module(0);
    ck_assert_ptr_nonnull(a);
    /* rank 2 "published" a tcp address on a port nobody listens on */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = 0};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
    socklen_t sl = sizeof(sin);
    getsockname(s, (struct sockaddr *)&sin, &sl);
    close(s);
    size_t len = sizeof(px_btl_ofi_modex_t) + sizeof(sin);
    px_btl_ofi_modex_t *b = calloc(1, len);
    strcpy(b->prov, "tcp;ofi_rxm");
    b->addr_format = ((px_btl_ofi_module_t *)a)->info->addr_format;
    b->addrlen = sizeof(sin);
    memcpy(b->addr, &sin, sizeof(sin));
    blob[2] = b;
    blob_len[2] = len;
    fake_drop_extra(2);
    fake_drop_extra(3);
    /* rank 3 uses another provider */
    px_btl_ofi_modex_t *c = calloc(1, len);
    memcpy(c, b, len);
    strcpy(c->prov, "verbs;ofi_rxm");
    blob[3] = c;
    blob_len[3] = len;

    px_btl_endpoint_t *ep[NRANKS];
    const char *reasons[NRANKS];
    px_bitmap_t bm;
    add_peers(a, 2, 2, ep, reasons, &bm);
    ck_assert(px_bitmap_is_set_bit(&bm, 0));
    ck_assert(!px_bitmap_is_set_bit(&bm, 1));
    ck_assert_ptr_nonnull(reasons[1]);
    ck_assert_msg(strstr(reasons[1], "verbs;ofi_rxm"), "reason: %s", reasons[1]);
    a->btl_register_error(a, error_cb);
    n_err = 0;
    n_send_done = 0;
    px_btl_descriptor_t *d = a->btl_alloc(a, ep[0], 0, 100, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    ck_assert_ptr_nonnull(d);
    d->des_cbfunc = send_cb;
    ck_assert_int_ge(a->btl_send(a, ep[0], d, 200), 0);
    progress_until(a, NULL, &n_err, 1);
    progress_until(a, NULL, &n_send_done, 1);
    ck_assert_int_lt(last_send_status, 0);
    ck_assert_int_eq(err_rank, 2);
    ck_assert_int_lt(err_code, 0);
    ck_assert_msg(strstr(err_text, "rank 2") && strstr(err_text, "tcp;ofi_rxm"), "text: %s",
                  err_text);
    fprintf(stderr, "error callback text: %s\n", err_text);
    ck_assert_int_eq(err_code, PX_ERR_UNREACH);
    /* the peer is now known to be lost: new operations fail at once */
    const char h[8] = "x";
    ck_assert_int_eq(a->btl_sendi(a, ep[0], h, 8, NULL, 0, 0, 0, 200, NULL), PX_ERR_UNREACH);
    d = a->btl_alloc(a, ep[0], 0, 100, 0);
    ck_assert_int_eq(a->btl_send(a, ep[0], d, 200), PX_ERR_UNREACH);
    a->btl_free(a, d);
    ck_assert_msg(strstr(err_text, "btl_ofi_connect_timeout") && !strstr(err_text, "refused a TCP"),
                  "text: %s", err_text);
    a->btl_del_procs(a, 2, &proc_ptrs[2], ep);
    a->btl_finalize(a);
    ck_assert_int_ge(px_mca_var_set("btl_ofi_connect_probe", "1"), 0);
    PX_OBJ_DESTRUCT(&bm);
}
END_TEST

/* A peer whose process is gone while this one still connects to it: its
 * published port now refuses connections. tcp;ofi_rxm retries that forever
 * with EAGAIN; btl/ofi must report the death as soon as a probe of the port
 * is refused, not after btl_ofi_connect_timeout (left at 3600 s here, so
 * only the probe can end the wait within progress_until's bound). */
START_TEST(dead_peer_while_connecting)
{
    use_provider("tcp;ofi_rxm", NULL, "lo");
    ck_assert_int_ge(px_mca_var_set("btl_ofi_connect_timeout", "3600"), 0);
    ck_assert_int_ge(px_mca_var_set("btl_ofi_connect_probe", "1"), 0);
    px_btl_module_t *a = make_module(0), *b = make_module(1);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    b->btl_finalize(b); /* rank 1 "dies": its endpoint and listening port close */
    px_btl_endpoint_t *ep[NRANKS];
    const char *reasons[NRANKS];
    px_bitmap_t bm;
    add_peers(a, 1, 1, ep, reasons, &bm);
    ck_assert(px_bitmap_is_set_bit(&bm, 0));
    a->btl_register_error(a, error_cb);
    n_err = 0;
    n_send_done = 0;
    px_btl_descriptor_t *d = a->btl_alloc(a, ep[0], 0, 100, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    ck_assert_ptr_nonnull(d);
    d->des_cbfunc = send_cb;
    ck_assert_int_ge(a->btl_send(a, ep[0], d, 200), 0);
    progress_until(a, NULL, &n_err, 1);
    progress_until(a, NULL, &n_send_done, 1);
    fprintf(stderr, "error callback text: %s\n", err_text);
    ck_assert_int_lt(last_send_status, 0);
    ck_assert_int_eq(err_rank, 1);
    ck_assert_int_eq(err_code, PX_ERR_UNREACH);
    ck_assert_msg(strstr(err_text, "rank 1") && strstr(err_text, "refused"), "text: %s", err_text);
    /* later operations fail at once */
    const char h[8] = "x";
    ck_assert_int_eq(a->btl_sendi(a, ep[0], h, 8, NULL, 0, 0, 0, 200, NULL), PX_ERR_UNREACH);
    a->btl_del_procs(a, 1, &proc_ptrs[1], ep);
    a->btl_finalize(a);
    ck_assert_int_ge(px_mca_var_set("btl_ofi_connect_timeout", "30"), 0);
    PX_OBJ_DESTRUCT(&bm);
}
END_TEST

/* The probe must not take a live peer for a dead one: rank 1 does not
 * progress for a while (rxm cannot finish connecting to it, and rank 0's send
 * waits with EAGAIN long enough for probes, which its kernel accepts); then
 * it progresses and the message arrives, with no error reported. */
START_TEST(slow_peer_is_not_dead)
{
    use_provider("tcp;ofi_rxm", NULL, "lo");
    ck_assert_int_ge(px_mca_var_set("btl_ofi_connect_probe", "1"), 0);
    px_btl_module_t *a = make_module(0), *b = make_module(1);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    px_btl_endpoint_t *ea[NRANKS], *eb[NRANKS];
    const char *ra[NRANKS], *rb[NRANKS];
    px_bitmap_t bma, bmb;
    add_peers(a, 0, 2, ea, ra, &bma);
    add_peers(b, 0, 2, eb, rb, &bmb);
    a->btl_register_error(a, error_cb);
    px_btl_base_register_am(200, am_cb, NULL);
    n_err = 0;
    n_recv = 0;
    n_send_done = 0;
    px_btl_descriptor_t *d = a->btl_alloc(a, ea[1], 0, 100, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    ck_assert_ptr_nonnull(d);
    memset(d->des_segments[0].seg_addr, 's', 100);
    d->des_cbfunc = send_cb;
    ck_assert_int_ge(a->btl_send(a, ea[1], d, 200), 0);
    double t0 = now();
    while (now() - t0 < 2.5) /* only rank 0 progresses: probes run */
        a->btl_progress(a);
    progress_until(a, b, &n_recv, 1);
    progress_until(a, b, &n_send_done, 1);
    ck_assert_int_eq(last_send_status, PX_SUCCESS);
    ck_assert_msg(0 == n_err, "error reported for a live peer: %s", err_text);
    ck_assert_uint_eq(recv_len[0], 100);
    ck_assert_int_eq(recv_data[0][99], 's');
    a->btl_del_procs(a, 2, &proc_ptrs[0], ea);
    b->btl_del_procs(b, 2, &proc_ptrs[0], eb);
    a->btl_finalize(a);
    b->btl_finalize(b);
    PX_OBJ_DESTRUCT(&bma);
    PX_OBJ_DESTRUCT(&bmb);
}
END_TEST

/* Before libfabric loads, btl/ofi raises rxm's eager limit (rxm's
 * segmentation above 16 KiB was 2-3x slower), unless this host has an RDMA
 * device (rxm over verbs needs its default). Each test runs in a process of
 * its own, so libfabric loads here, after the unsetenv. */
START_TEST(rxm_eager_limit_env)
{
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && 0 == strcmp(fork_mode, "no"))
        return; /* libfabric was loaded by an earlier test of this process */
    unsetenv("FI_OFI_RXM_EAGER_LIMIT");
    use_provider("tcp;ofi_rxm", NULL, "lo");
    px_btl_module_t *a = make_module(0);
    ck_assert_ptr_nonnull(a);
    const char *v = getenv("FI_OFI_RXM_EAGER_LIMIT");
    bool rdma = false;
    DIR *d = opendir("/sys/class/infiniband");
    if (d) {
        for (struct dirent *e; !rdma && (e = readdir(d));)
            rdma = '.' != e->d_name[0];
        closedir(d);
    }
    if (rdma) {
        ck_assert_msg(NULL == v, "set to %s although an RDMA device is present", v);
    } else {
        ck_assert_ptr_nonnull(v);
        char want[32];
        snprintf(want, sizeof(want), "%zu", px_btl_ofi_rxm_eager_limit);
        ck_assert_str_eq(v, want);
        ck_assert_uint_ge(px_btl_ofi_rxm_eager_limit, a->btl_max_send_size + 8);
    }
    a->btl_finalize(a);
}
END_TEST

/* Before libfabric loads, btl/ofi shortens rxm's connection-event interval
 * (FI_OFI_RXM_CM_PROGRESS_INTERVAL, 10 ms by default: the first transfer to
 * a new peer waited one interval on each side), unless the user set it. */
START_TEST(rxm_cm_progress_interval_env)
{
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && 0 == strcmp(fork_mode, "no"))
        return; /* libfabric was loaded by an earlier test of this process */
    unsetenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL");
    use_provider("tcp;ofi_rxm", NULL, "lo");
    px_btl_module_t *a = make_module(0);
    ck_assert_ptr_nonnull(a);
    const char *v = getenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL");
    ck_assert_msg(NULL != v, "FI_OFI_RXM_CM_PROGRESS_INTERVAL was not set before libfabric loaded");
    char want[32];
    snprintf(want, sizeof(want), "%d", px_btl_ofi_rxm_cm_progress_interval);
    ck_assert_str_eq(v, want);
    ck_assert_int_gt(px_btl_ofi_rxm_cm_progress_interval, 0);
    ck_assert_int_lt(px_btl_ofi_rxm_cm_progress_interval, 10000); /* below rxm's default */
    a->btl_finalize(a);
}
END_TEST

/* The user's own FI_OFI_RXM_CM_PROGRESS_INTERVAL is left as it is. */
START_TEST(rxm_cm_progress_interval_user)
{
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && 0 == strcmp(fork_mode, "no"))
        return;
    setenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL", "4321", 1);
    use_provider("tcp;ofi_rxm", NULL, "lo");
    px_btl_module_t *a = make_module(0);
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(getenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL"), "4321");
    a->btl_finalize(a);
    unsetenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL");
}
END_TEST

/* Before libfabric loads, btl/ofi sets rxm's bounce-buffer size
 * (FI_OFI_RXM_BUFFER_SIZE), which rxm otherwise takes from its eager limit
 * (66 KiB here): 256 such receive buffers, 17 MB, were allocated and faulted
 * in at the first transfer to every new peer. Left alone with an RDMA device
 * (rxm over verbs needs them as large as its eager limit). */
START_TEST(rxm_buffer_size_env)
{
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && 0 == strcmp(fork_mode, "no"))
        return; /* libfabric was loaded by an earlier test of this process */
    unsetenv("FI_OFI_RXM_BUFFER_SIZE");
    use_provider("tcp;ofi_rxm", NULL, "lo");
    px_btl_module_t *a = make_module(0);
    ck_assert_ptr_nonnull(a);
    const char *v = getenv("FI_OFI_RXM_BUFFER_SIZE");
    bool rdma = false;
    DIR *d = opendir("/sys/class/infiniband");
    if (d) {
        for (struct dirent *e; !rdma && (e = readdir(d));)
            rdma = '.' != e->d_name[0];
        closedir(d);
    }
    if (rdma) {
        ck_assert_msg(NULL == v, "set to %s although an RDMA device is present", v);
    } else {
        ck_assert_msg(NULL != v, "FI_OFI_RXM_BUFFER_SIZE was not set before libfabric loaded");
        char want[32];
        snprintf(want, sizeof(want), "%zu", px_btl_ofi_rxm_buffer_size);
        ck_assert_str_eq(v, want);
        /* well below the eager limit rxm would size them by otherwise */
        ck_assert_uint_gt(px_btl_ofi_rxm_buffer_size, 0);
        ck_assert_uint_le(px_btl_ofi_rxm_buffer_size, 16384);
    }
    a->btl_finalize(a);
}
END_TEST

/* The user's own FI_OFI_RXM_BUFFER_SIZE is left as it is. */
START_TEST(rxm_buffer_size_user)
{
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && 0 == strcmp(fork_mode, "no"))
        return;
    setenv("FI_OFI_RXM_BUFFER_SIZE", "32768", 1);
    use_provider("tcp;ofi_rxm", NULL, "lo");
    px_btl_module_t *a = make_module(0);
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(getenv("FI_OFI_RXM_BUFFER_SIZE"), "32768");
    a->btl_finalize(a);
    unsetenv("FI_OFI_RXM_BUFFER_SIZE");
}
END_TEST

/* Send `len` raw bytes from module b to its endpoint ep (the peer), as a
 * broken or hostile peer could: libfabric's inject, retried while connecting. */
static void send_raw(px_btl_module_t *a, px_btl_module_t *b, px_btl_endpoint_t *ep,
                     const void *bytes, size_t len)
{
    px_btl_ofi_module_t *mb = (px_btl_ofi_module_t *)b;
    ssize_t rc;
    double t0 = now();
    while (-FI_EAGAIN == (rc = fi_inject(mb->ep, bytes, len, ep->addr)) && now() - t0 < 10) {
        a->btl_progress(a);
        b->btl_progress(b);
    }
    ck_assert_int_eq((int)rc, 0);
}

/* Headers a broken or hostile peer could send. One naming a rank outside
 * the job cannot be pinned on a peer: it is dropped (and said), nothing else
 * changes. One with flags this version never sends, from rank 1: dropped,
 * and rank 1 fails through the error callback with an error naming it and
 * the flags; later sends to it are refused. */
START_TEST(bad_header)
{
    use_provider("tcp;ofi_rxm", NULL, "lo");
    px_btl_module_t *a = make_module(0), *b = make_module(1);
    ck_assert_msg(a && b, "btl/ofi declined on tcp;ofi_rxm");
    px_btl_endpoint_t *ea[NRANKS], *eb[NRANKS];
    const char *ra[NRANKS], *rb[NRANKS];
    px_bitmap_t bma, bmb;
    add_peers(a, 0, 2, ea, ra, &bma);
    add_peers(b, 0, 2, eb, rb, &bmb);
    a->btl_register_error(a, error_cb);
    px_btl_base_register_am(200, am_cb, NULL);
    n_recv = 0;
    n_err = 0;
    px_btl_ofi_hdr_t h = {.tag = 200, .flags = 0, .src_rank = NRANKS + 5};
    send_raw(a, b, eb[0], &h, sizeof(h));
    /* then a good message: when it is in, the bad one was handled */
    const char hdr[8] = "GOOD";
    ck_assert_int_eq(
        RETRY(a, b, b->btl_sendi(b, eb[0], hdr, sizeof(hdr), NULL, 0, 0, 0, 200, NULL)),
        PX_SUCCESS);
    progress_until(a, b, &n_recv, 1);
    ck_assert_int_eq(n_recv, 1);
    ck_assert_int_eq(recv_src[0], 1);
    ck_assert_str_eq(recv_data[0], "GOOD");
    ck_assert_int_eq(n_err, 0);
    ck_assert(!ea[1]->failed);

    h.src_rank = 1;
    h.flags = 0x80;
    send_raw(a, b, eb[0], &h, sizeof(h));
    progress_until(a, b, &n_err, 1);
    fprintf(stderr, "error callback text: %s\n", err_text);
    ck_assert_int_eq(err_rank, 1);
    ck_assert_int_eq(err_code, PX_ERR_COMM);
    ck_assert_msg(strstr(err_text, "rank 1") && strstr(err_text, "flags 0x80"), "text: %s",
                  err_text);
    ck_assert_int_eq(n_recv, 1);
    ck_assert(ea[1]->failed);
    ck_assert_int_eq(a->btl_sendi(a, ea[1], hdr, sizeof(hdr), NULL, 0, 0, 0, 200, NULL),
                     PX_ERR_UNREACH);
    b->btl_del_procs(b, 2, proc_ptrs, eb);
    a->btl_del_procs(a, 2, proc_ptrs, ea);
    b->btl_finalize(b);
    a->btl_finalize(a);
    PX_OBJ_DESTRUCT(&bma);
    PX_OBJ_DESTRUCT(&bmb);
}
END_TEST

/* A modex blob whose address is shorter than its format (4 bytes of a
 * sockaddr_in): libfabric would read past it. The peer is unreachable with
 * the reason, and nothing is inserted. */
START_TEST(bad_modex)
{
    use_provider("tcp;ofi_rxm", NULL, "lo");
    px_btl_module_t *a = make_module(0);
    ck_assert_ptr_nonnull(a);
    px_btl_ofi_module_t *ma = (px_btl_ofi_module_t *)a;
    size_t len = sizeof(px_btl_ofi_modex_t) + 4;
    px_btl_ofi_modex_t *m = calloc(1, len);
    strcpy(m->prov, "tcp;ofi_rxm");
    m->addr_format = ma->info->addr_format;
    m->addrlen = 4;
    memcpy(m->addr, ma->addr, 4);
    free(blob[2]);
    blob[2] = m;
    blob_len[2] = len;
    fake_drop_extra(2);
    px_btl_endpoint_t *ep[NRANKS];
    const char *reasons[NRANKS];
    px_bitmap_t bm;
    add_peers(a, 2, 1, ep, reasons, &bm);
    ck_assert(!px_bitmap_is_set_bit(&bm, 0));
    ck_assert_ptr_null(ep[0]);
    ck_assert_msg(reasons[0] && strstr(reasons[0], "rank 2") && strstr(reasons[0], "4 bytes"),
                  "reason: %s", reasons[0] ? reasons[0] : "(none)");
    fprintf(stderr, "reason: %s\n", reasons[0]);
    a->btl_finalize(a);
    free(blob[2]);
    blob[2] = NULL;
    PX_OBJ_DESTRUCT(&bm);
}
END_TEST

/* ---- RDMA lanes (btl_ofi_rdma_lanes) ---- */

static px_btl_module_t *make_module_lanes(int rank, const char *lanes)
{
    ck_assert_int_ge(px_mca_var_set("btl_ofi_rdma_lanes", lanes), 0);
    return make_module(rank);
}

/* Get `len` bytes from `remote`+off into a zeroed buffer and put them back
 * elsewhere in `remote`, byte-checked, guard bytes untouched; how many
 * RDMA operations each lane of `a` posted is left in a's lane_ops. */
static void lanes_roundtrip(px_btl_module_t *a, px_btl_module_t *b, px_btl_endpoint_t *ep,
                            char *remote, px_btl_registration_handle_t *rh, size_t off, size_t len)
{
    char wire[64];
    memset(wire, 0, sizeof(wire));
    memcpy(wire, rh, a->btl_registration_handle_size);
    char *local = calloc(1, len + 2);
    local[len] = 'G';
    int want = n_rdma + 1;
    ck_assert_int_eq(RETRY(a, b,
                           a->btl_get(a, ep, local, (uint64_t)(uintptr_t)(remote + off), NULL,
                                      (px_btl_registration_handle_t *)wire, len, 0, 0, rdma_cb,
                                      (void *)0x1234, NULL)),
                     PX_SUCCESS);
    progress_until(a, b, &n_rdma, want);
    ck_assert_int_eq(last_rdma_status, PX_SUCCESS);
    ck_assert_msg(0 == memcmp(local, remote + off, len), "get of %zu bytes differs", len);
    ck_assert_int_eq(local[len], 'G');
    /* put it 2 MiB further, after flipping it, and check the bytes around */
    for (size_t i = 0; i < len; ++i)
        local[i] = (char)~local[i];
    char *dst = remote + (2u << 20);
    memset(dst - 1, 'L', len + 2);
    ck_assert_int_eq(RETRY(a, b,
                           a->btl_put(a, ep, local, (uint64_t)(uintptr_t)dst, NULL,
                                      (px_btl_registration_handle_t *)wire, len, 0, 0, rdma_cb,
                                      (void *)0x1234, NULL)),
                     PX_SUCCESS);
    progress_until(a, b, &n_rdma, want + 1);
    ck_assert_int_eq(last_rdma_status, PX_SUCCESS);
    ck_assert_msg(0 == memcmp(dst, local, len), "put of %zu bytes differs", len);
    ck_assert_int_eq(dst[-1], 'L');
    ck_assert_int_eq(dst[len], 'L');
    free(local);
}

/* The modex blob an older Plexus (before the lanes, e.g. e460ad3) writes
 * for module `m`, built as it did: header (provider, format, address length)
 * and the address, nothing after. */
static void *older_blob(px_btl_ofi_module_t *m, size_t *len)
{
    *len = sizeof(px_btl_ofi_modex_t) + m->addrlen;
    px_btl_ofi_modex_t *b = calloc(1, *len);
    snprintf(b->prov, sizeof(b->prov), "%s", px_btl_ofi_prov(m));
    b->addr_format = m->info->addr_format;
    b->addrlen = (uint32_t)m->addrlen;
    memcpy(b->addr, m->addr, m->addrlen);
    return b;
}

/* The part of btl/ofi (module 0, or its extension) in a dynamic-peer
 * payload, or NULL. */
static const px_btl_dyn_part_t *ofi_part(const void *payload, size_t len, uint8_t index,
                                         px_btl_dyn_payload_t *pl)
{
    char why[256];
    ck_assert_int_eq(px_btl_base_dyn_parse(payload, len, pl, why, sizeof why), PX_SUCCESS);
    for (int i = 0; i < pl->nparts; ++i)
        if (pl->parts[i].index == index && 0 == strcmp(pl->parts[i].component, "ofi"))
            return &pl->parts[i];
    return NULL;
}

/* Drop the last part of a payload (btl/ofi's extension: it comes last),
 * as an older Plexus, which writes none, would have sent it. */
static void drop_last_part(unsigned char *payload, size_t *len)
{
    px_btl_dyn_payload_t pl;
    char why[256];
    ck_assert_int_eq(px_btl_base_dyn_parse(payload, *len, &pl, why, sizeof why), PX_SUCCESS);
    const px_btl_dyn_part_t *last = &pl.parts[pl.nparts - 1];
    size_t at = (size_t)(last->data - payload) - (1 + strlen(last->component) + 10);
    ck_assert_uint_eq(at + (1 + strlen(last->component) + 10) + last->len, *len);
    *len = at;
    payload[6] = (unsigned char)(pl.nparts - 1);
    payload[7] = 0;
    for (int i = 0; i < 4; ++i)
        payload[16 + i] = (unsigned char)(at >> (8 * i));
}

/* Connect module a[0] to b[0] as dynamic peers through the base (the
 * payloads as they travel; the arrays must outlive the connection),
 * optionally as an older Plexus on both sides would see them (`older`: no
 * extension parts); the base's peers in *pa, *pb. */
static void dyn_connect(px_btl_module_t **a, px_btl_module_t **b, bool older,
                        px_btl_base_dyn_peer_t **pa, px_btl_base_dyn_peer_t **pb)
{
    void *offer = NULL, *reply = NULL;
    size_t olen = 0, rlen = 0;
    char *err = NULL;
    ck_assert_int_eq(px_btl_base_dyn_offer(a, 1, pa, &offer, &olen, &err), PX_SUCCESS);
    px_btl_dyn_payload_t pl;
    const px_btl_dyn_part_t *part = ofi_part(offer, olen, 0, &pl);
    /* what an older Plexus reads: the part it knows, byte for byte (its
     * number, then the blob of the older release) */
    size_t olderlen;
    void *ob = older_blob((px_btl_ofi_module_t *)a[0], &olderlen);
    ck_assert_ptr_nonnull(part);
    ck_assert_uint_eq(part->len, 8 + olderlen);
    ck_assert_mem_eq(part->data + 8, ob, olderlen);
    free(ob);
    if (older && ofi_part(offer, olen, PX_BTL_DYN_EXT_INDEX, &pl))
        drop_last_part(offer, &olen);
    ck_assert_int_eq(px_btl_base_dyn_accept(b, 1, offer, olen, pb, &reply, &rlen, &err),
                     PX_SUCCESS);
    part = ofi_part(reply, rlen, 0, &pl);
    ob = older_blob((px_btl_ofi_module_t *)b[0], &olderlen);
    ck_assert_ptr_nonnull(part);
    ck_assert_uint_eq(part->len, 8 + olderlen);
    ck_assert_mem_eq(part->data + 8, ob, olderlen);
    free(ob);
    if (older && ofi_part(reply, rlen, PX_BTL_DYN_EXT_INDEX, &pl))
        drop_last_part(reply, &rlen);
    ck_assert_int_eq(px_btl_base_dyn_complete(*pa, reply, rlen, &err), PX_SUCCESS);
    free(offer);
    free(reply);
}

/* Rank 0 and rank 1 with 3 lanes each, rank 2 with 1 and publishing only
 * what an older Plexus publishes: the blob under "btl.ofi" of every process
 * is the older release's blob byte for byte (lane 0 only; the lanes are
 * under "btl.ofi.lanes"); reads and writes around the piece sizes arrive
 * intact, spread over the 3 lanes with rank 1 and on one lane with rank 2,
 * also as dynamic peers (the extension part carries the lanes; without it,
 * as from an older Plexus, one lane); a lanes list with a lane count of 9,
 * or of 0, cut short or with a byte too many is refused naming the rank. */
static void rdma_lanes_on(const char *prov)
{
    use_provider(prov, NULL, "lo");
    ck_assert_int_ge(px_mca_var_set("btl_ofi_rdma_lane_min", "4096"), 0);
    px_btl_module_t *a = make_module_lanes(0, "3"), *b = make_module_lanes(1, "3");
    px_btl_module_t *c = make_module_lanes(2, "1");
    ck_assert(a && b && c);
    px_btl_ofi_module_t *ma = (px_btl_ofi_module_t *)a, *mc = (px_btl_ofi_module_t *)c;
    ck_assert_uint_eq(ma->nlanes, 3);
    ck_assert_uint_eq(mc->nlanes, 1);
    /* what an older Plexus reads of a process with 3 lanes, and of one with
     * 1: the blob it knows, byte for byte */
    for (int r = 0; r < 3; r += 2) {
        size_t olen;
        void *ob = older_blob(r ? mc : ma, &olen);
        ck_assert_uint_eq(blob_len[r], olen);
        ck_assert_mem_eq(blob[r], ob, olen);
        free(ob);
    }
    ck_assert_str_eq(xkey[0], "btl.ofi.lanes");
    ck_assert_uint_gt(xblob_len[0], 8);
    /* rank 2 as an older Plexus: no lanes key at all */
    fake_drop_extra(2);
    /* rank 3: rank 0's blob, its lanes list with a lane count of 9 */
    const size_t cnt_at = 4;
    free(blob[3]);
    blob[3] = malloc(blob_len[0]);
    memcpy(blob[3], blob[0], blob_len[0]);
    blob_len[3] = blob_len[0];
    fake_drop_extra(3);
    xblob[3] = malloc(xblob_len[0]);
    memcpy(xblob[3], xblob[0], xblob_len[0]);
    xblob_len[3] = xblob_len[0];
    strcpy(xkey[3], xkey[0]);
    uint32_t bad = 9;
    memcpy((char *)xblob[3] + cnt_at, &bad, 4);

    px_btl_endpoint_t *ea[NRANKS], *eb[NRANKS], *ec[NRANKS];
    const char *ra[NRANKS], *rb[NRANKS], *rc_[NRANKS];
    px_bitmap_t bma, bmb, bmc;
    add_peers(a, 0, 4, ea, ra, &bma);
    add_peers(b, 0, 2, eb, rb, &bmb);
    add_peers(c, 0, 3, ec, rc_, &bmc);
    ck_assert(px_bitmap_is_set_bit(&bma, 1) && px_bitmap_is_set_bit(&bma, 2));
    ck_assert_uint_eq(ea[1]->nlanes, 3);
    ck_assert_uint_eq(eb[0]->nlanes, 3);
    ck_assert_uint_eq(ea[2]->nlanes, 1); /* the older one's */
    ck_assert_uint_eq(ec[0]->nlanes, 1);
    /* the malformed count: unreachable, with a reason naming the rank */
    ck_assert(!px_bitmap_is_set_bit(&bma, 3));
    ck_assert_msg(ra[3] && strstr(ra[3], "rank 3") && strstr(ra[3], "lane count of 9") &&
                      strstr(ra[3], "btl.ofi.lanes"),
                  "reason: %s", ra[3] ? ra[3] : "(none)");
    fprintf(stderr, "reason: %s\n", ra[3]);
    /* the parsers alone: a count of 0, a list cut short, a byte too many;
     * a byte after the address of the blob */
    {
        px_btl_ofi_peer_addr_t pa;
        char why[400];
        const char *prov_ = px_btl_ofi_prov(ma);
        uint32_t fmt = ma->info->addr_format;
        size_t n = blob_len[0];
        char *x = malloc(n + 1);
        memcpy(x, blob[0], n);
        x[n] = 0;
        ck_assert_int_eq(px_btl_ofi_modex_parse(x, n + 1, prov_, fmt, ma->addrlen, &pa, why, 400),
                         PX_ERR_BAD_PARAM);
        ck_assert_msg(strstr(why, "follow the header"), "why: %s", why);
        ck_assert_int_eq(px_btl_ofi_modex_parse(x, n, prov_, fmt, ma->addrlen, &pa, why, 400),
                         PX_SUCCESS);
        ck_assert_uint_eq(pa.nlanes, 1);
        free(x);
        n = xblob_len[0];
        x = malloc(n + 1);
        memcpy(x, xblob[0], n);
        ck_assert_int_eq(px_btl_ofi_lanes_parse(x, n, prov_, fmt, ma->addrlen, &pa, why, 400),
                         PX_SUCCESS);
        ck_assert_uint_eq(pa.nlanes, 3);
        uint32_t zero = 0;
        memcpy(x + cnt_at, &zero, 4);
        ck_assert_int_eq(px_btl_ofi_lanes_parse(x, n, prov_, fmt, ma->addrlen, &pa, why, 400),
                         PX_ERR_BAD_PARAM);
        ck_assert_msg(strstr(why, "lane count of 0"), "why: %s", why);
        ck_assert_uint_eq(pa.nlanes, 1);
        memcpy(x, xblob[0], n);
        ck_assert_int_eq(px_btl_ofi_lanes_parse(x, n - 1, prov_, fmt, ma->addrlen, &pa, why, 400),
                         PX_ERR_BAD_PARAM);
        ck_assert_msg(strstr(why, "lane 2"), "why: %s", why);
        x[n] = 0;
        ck_assert_int_eq(px_btl_ofi_lanes_parse(x, n + 1, prov_, fmt, ma->addrlen, &pa, why, 400),
                         PX_ERR_BAD_PARAM);
        ck_assert_msg(strstr(why, "after the last"), "why: %s", why);
        free(x);
    }

    size_t len = 4u << 20;
    char *rem_b = malloc(len), *rem_c = malloc(len);
    for (size_t i = 0; i < len; ++i)
        rem_b[i] = (char)(i * 29 + 7), rem_c[i] = (char)(i * 31 + 3);
    px_btl_registration_handle_t *rhb = b->btl_register_mem(b, NULL, rem_b, len, 0);
    px_btl_registration_handle_t *rhc = c->btl_register_mem(c, NULL, rem_c, len, 0);
    ck_assert(rhb && rhc);
    n_rdma = 0;
    /* whole (below 2 pieces), 2 pieces, 3 pieces (the last one longer),
     * and large */
    const size_t sizes[] = {1, 8191, 8192, 12287, 12288, 12289, (1u << 20) + 13};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i)
        lanes_roundtrip(a, b, ea[1], rem_b, rhb, 4096 + 3 * i, sizes[i]);
    for (int l = 0; l < 3; ++l)
        ck_assert_msg(ma->lane_ops[l] >= 4, "lane %d posted %llu operations", l,
                      (unsigned long long)ma->lane_ops[l]);
    /* with the one-lane peer, everything stays on lane 0 */
    uint64_t before[3] = {ma->lane_ops[0], ma->lane_ops[1], ma->lane_ops[2]};
    lanes_roundtrip(a, c, ea[2], rem_c, rhc, 5, 12289);
    lanes_roundtrip(a, c, ea[2], rem_c, rhc, 5, (1u << 20) + 13);
    ck_assert_uint_ge(ma->lane_ops[0], before[0] + 4);
    ck_assert_uint_eq(ma->lane_ops[1], before[1]);
    ck_assert_uint_eq(ma->lane_ops[2], before[2]);
    /* and from the one-lane side */
    ck_assert_uint_eq(ec[1]->nlanes, 1);
    lanes_roundtrip(c, b, ec[1], rem_b, rhb, 0, (1u << 20) + 13);
    /* dynamic peers (BTL API 3.3), through the base: a (3 lanes) connects
     * to b (3) and to c (1), and to b as an older Plexus would (no
     * extension parts: 1 lane) */
    {
        px_btl_module_t *peer[3] = {b, c, b}, *self[1] = {a};
        const unsigned want[3] = {3, 1, 1};
        for (int k = 0; k < 3; ++k) {
            px_btl_base_dyn_peer_t *pa = NULL, *pb = NULL;
            dyn_connect(self, &peer[k], 2 == k, &pa, &pb);
            px_btl_endpoint_t *da = pa->endpoints[0], *dp = pb->endpoints[0];
            ck_assert_uint_eq(da->nlanes, want[k]);
            ck_assert_uint_eq(dp->nlanes, want[k]);
            lanes_roundtrip(a, peer[k], da, 1 == k ? rem_c : rem_b, 1 == k ? rhc : rhb, 7, 12289);
            ck_assert_int_eq(px_btl_base_dyn_remove(pa), PX_SUCCESS);
            ck_assert_int_eq(px_btl_base_dyn_remove(pb), PX_SUCCESS);
        }
        /* a lane count of 9 in the extension: the acceptor refuses it,
         * saying why */
        px_btl_base_dyn_peer_t *pa = NULL, *pb = NULL;
        void *offer = NULL, *reply = NULL;
        size_t olen = 0, rlen = 0;
        char *err = NULL;
        ck_assert_int_eq(px_btl_base_dyn_offer(self, 1, &pa, &offer, &olen, &err), PX_SUCCESS);
        px_btl_dyn_payload_t pl;
        const px_btl_dyn_part_t *ext = ofi_part(offer, olen, PX_BTL_DYN_EXT_INDEX, &pl);
        ck_assert_ptr_nonnull(ext);
        memcpy((unsigned char *)offer + (ext->data - (const unsigned char *)offer) + cnt_at, &bad,
               4);
        ck_assert_int_eq(px_btl_base_dyn_accept(&peer[0], 1, offer, olen, &pb, &reply, &rlen, &err),
                         PX_ERR_UNREACH);
        ck_assert_msg(err && strstr(err, "lane count of 9"), "error: %s", err ? err : "(none)");
        fprintf(stderr, "error: %s\n", err);
        free(err);
        free(reply);
        free(offer);
        ck_assert_int_eq(px_btl_base_dyn_remove(pa), PX_SUCCESS);
    }
    ck_assert_int_eq(b->btl_deregister_mem(b, rhb), PX_SUCCESS);
    ck_assert_int_eq(c->btl_deregister_mem(c, rhc), PX_SUCCESS);
    a->btl_del_procs(a, 3, proc_ptrs, ea);
    b->btl_del_procs(b, 2, proc_ptrs, eb);
    c->btl_del_procs(c, 3, proc_ptrs, ec);
    c->btl_finalize(c);
    b->btl_finalize(b);
    a->btl_finalize(a);
    PX_OBJ_DESTRUCT(&bma);
    PX_OBJ_DESTRUCT(&bmb);
    PX_OBJ_DESTRUCT(&bmc);
    free(rem_b);
    free(rem_c);
    for (int i = 0; i < NRANKS; ++i) {
        free(blob[i]);
        blob[i] = NULL;
        fake_drop_extra(i);
    }
    ck_assert_int_ge(px_mca_var_set("btl_ofi_rdma_lanes", "1"), 0);
    ck_assert_int_ge(px_mca_var_set("btl_ofi_rdma_lane_min", "32768"), 0);
}

START_TEST(rdma_lanes)
{
    rdma_lanes_on("tcp;ofi_rxm");
}
END_TEST

/* The same over net, btl/ofi's first choice over TCP. */
START_TEST(rdma_lanes_net)
{
    rdma_lanes_on("net");
}
END_TEST

int main(void)
{
    /* keep the tcp and sockets providers on loopback */
    setenv("FI_TCP_IFACE", "lo", 0);
    setenv("FI_SOCKETS_IFACE", "lo", 0);
    setenv("FI_NET_IFACE", "lo", 0);
    const TTest *tests[] = {exchange_tcp,
                            exchange_net,
                            exchange_sockets,
                            exchange_shm,
                            rdma_tcp,
                            rdma_net,
                            rdma_sockets,
                            rdma_shm,
                            provider_choice,
                            provider_errors,
                            unreachable_peer,
                            dead_peer_while_connecting,
                            slow_peer_is_not_dead,
                            rxm_eager_limit_env,
                            rxm_cm_progress_interval_env,
                            rxm_cm_progress_interval_user,
                            rxm_buffer_size_env,
                            rxm_buffer_size_user,
                            bad_header,
                            bad_modex,
                            rdma_lanes,
                            rdma_lanes_net};
    Suite *s = suite_create("btl_ofi");
    suite_add_tcase(s, px_check_tcase("btl_ofi", NULL, NULL, 60, tests, PX_CHECK_COUNT(tests)));
    return px_check_run(s);
}
