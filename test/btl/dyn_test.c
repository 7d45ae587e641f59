/*
 * dyn_test.c: dynamic peers in the BTL base (BTL API 3.3): the payload
 * parser on bad, truncated and oversized input; btl/self connecting the
 * process to itself through offer, accept and complete (active messages
 * both ways, put/get, remove, a send after remove fails); a stale reply;
 * a module built for BTL API 3.2 skipped (never called) with its reason;
 * an acceptor's declining reply reaching the connector as a reason.
 */
#include "test/lib/px_check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"

static void open_btl(const char *list)
{
    setenv("PX_MCA_btl", list, 1);
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
    ck_assert_int_eq(px_mca_framework_open(&px_btl_base_framework), PX_SUCCESS);
    ck_assert_int_eq(px_btl_base_select(false), PX_SUCCESS);
    ck_assert_int_ge(px_btl_base_num_modules, 1);
}

static void close_btl(void)
{
    ck_assert_int_eq(px_btl_base_finalize(), PX_SUCCESS);
    px_mca_var_finalize();
}

/* ------------------------------------------------------------ payloads */

static size_t put_part(unsigned char *p, const char *name, uint8_t index, uint8_t status,
                       const void *data, uint16_t len)
{
    size_t nl = strlen(name), at = 0;
    p[at++] = (unsigned char)nl;
    memcpy(p + at, name, nl);
    at += nl;
    const uint16_t v[3] = {1, 0, 0};
    for (int k = 0; k < 3; ++k) {
        p[at++] = (unsigned char)v[k];
        p[at++] = (unsigned char)(v[k] >> 8);
    }
    p[at++] = index;
    p[at++] = status;
    p[at++] = (unsigned char)len;
    p[at++] = (unsigned char)(len >> 8);
    memcpy(p + at, data, len);
    return at + len;
}

static size_t put_header(unsigned char *p, uint8_t kind, uint16_t nparts, uint32_t total)
{
    memcpy(p, "PXDY", 4);
    p[4] = 1;
    p[5] = kind;
    p[6] = (unsigned char)nparts;
    p[7] = (unsigned char)(nparts >> 8);
    memset(p + 8, 0x5a, 8);
    for (int i = 0; i < 4; ++i)
        p[16 + i] = (unsigned char)(total >> (8 * i));
    return 20;
}

static int parse(const void *buf, size_t len, char *why)
{
    static px_btl_dyn_payload_t pl;
    why[0] = '\0';
    return px_btl_base_dyn_parse(buf, len, &pl, why, 256);
}

START_TEST(parse_bad_payloads)
{
    unsigned char b[512];
    char why[256];
    size_t n = put_header(b, PX_BTL_DYN_OFFER, 1, 0);
    n += put_part(b + n, "self", 0, 0, "abcd", 4);
    b[16] = (unsigned char)n;
    static px_btl_dyn_payload_t pl;
    ck_assert_int_eq(px_btl_base_dyn_parse(b, n, &pl, why, sizeof why), PX_SUCCESS);
    ck_assert_int_eq(pl.nparts, 1);
    ck_assert_str_eq(pl.parts[0].component, "self");
    ck_assert_uint_eq(pl.parts[0].len, 4);
    ck_assert(0 == memcmp(pl.parts[0].data, "abcd", 4));

    /* Every truncation is refused with a reason, never read past. */
    for (size_t cut = 0; cut < n; ++cut) {
        unsigned char *t = malloc(cut ? cut : 1);
        memcpy(t, b, cut);
        ck_assert_int_eq(parse(t, cut, why), PX_ERR_BAD_PARAM);
        ck_assert_msg(why[0] != '\0', "no reason at %zu", cut);
        free(t);
    }
    ck_assert_int_eq(parse(b, n - 3, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "truncated"));
    /* Oversized. */
    unsigned char *big = calloc(1, PX_BTL_DYN_PAYLOAD_MAX + 1);
    memcpy(big, b, n);
    ck_assert_int_eq(parse(big, PX_BTL_DYN_PAYLOAD_MAX + 1, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "larger than"));
    free(big);
    /* Magic, version, kind, counts, names, status, duplicates, trailing bytes. */
    unsigned char c[512];
    memcpy(c, b, n);
    c[0] = 'X';
    ck_assert_int_eq(parse(c, n, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "PXDY"));
    memcpy(c, b, n);
    c[4] = 9;
    ck_assert_int_eq(parse(c, n, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "version 9"));
    memcpy(c, b, n);
    c[5] = 3;
    ck_assert_int_eq(parse(c, n, why), PX_ERR_BAD_PARAM);
    memcpy(c, b, n);
    c[6] = 200;
    ck_assert_int_eq(parse(c, n, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "200 parts"));
    memcpy(c, b, n);
    c[21] = 'S'; /* "Self" */
    ck_assert_int_eq(parse(c, n, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "a-z"));
    memcpy(c, b, n);
    c[20 + 1 + 4 + 7] = 5; /* status */
    ck_assert_int_eq(parse(c, n, why), PX_ERR_BAD_PARAM);
    /* A part longer than the limit. */
    size_t m = put_header(c, PX_BTL_DYN_OFFER, 1, 0);
    unsigned char *huge = calloc(1, PX_BTL_DYN_PART_MAX + 100);
    unsigned char *d = malloc(PX_BTL_DYN_PART_MAX + 200);
    memcpy(d, c, m);
    m += put_part(d + m, "shm", 0, 0, huge, PX_BTL_DYN_PART_MAX + 1);
    d[16] = (unsigned char)m;
    d[17] = (unsigned char)(m >> 8);
    ck_assert_int_eq(parse(d, m, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "at most"));
    free(huge);
    free(d);
    /* Two parts of the same module. */
    m = put_header(c, PX_BTL_DYN_OFFER, 2, 0);
    m += put_part(c + m, "self", 0, 0, "x", 1);
    m += put_part(c + m, "self", 0, 0, "y", 1);
    c[16] = (unsigned char)m;
    ck_assert_int_eq(parse(c, m, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "two parts"));
    /* Trailing bytes after the parts (the total says so too). */
    memcpy(c, b, n);
    c[n] = 0;
    c[16] = (unsigned char)(n + 1);
    ck_assert_int_eq(parse(c, n + 1, why), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(why, "after its 1 parts"));
    ck_assert_int_eq(px_btl_base_dyn_parse(NULL, 0, &pl, why, sizeof why), PX_ERR_BAD_PARAM);
}
END_TEST

/* ------------------------------------------------------------ btl/self */

static int got_count, got_src;
static px_btl_endpoint_t *got_ep;
static char got[64];
static void am_cb(px_btl_module_t *b, const px_btl_receive_descriptor_t *d)
{
    (void)b;
    got_count++;
    got_src = d->src_rank;
    got_ep = d->endpoint;
    size_t n =
        d->des_segments[0].seg_len < sizeof got - 1 ? d->des_segments[0].seg_len : sizeof got - 1;
    memcpy(got, d->des_segments[0].seg_addr, n);
    got[n] = '\0';
}

static int send_text(px_btl_base_peer_t *p, const char *text)
{
    px_btl_base_peer_module_t *pm = px_btl_base_peer_eager(p);
    return pm->module->btl_sendi(pm->module, pm->endpoint, text, strlen(text), NULL, 0,
                                 PX_BTL_NO_ORDER, 0, 200, NULL);
}

START_TEST(self_connects_to_itself)
{
    open_btl("self");
    px_btl_base_register_am(200, am_cb, NULL);
    px_btl_module_t **mods = px_btl_base_modules;
    int n = px_btl_base_num_modules;
    for (int cycle = 0; cycle < 50; ++cycle) {
        px_btl_base_dyn_peer_t *c = NULL, *a = NULL;
        void *offer = NULL, *reply = NULL;
        size_t olen = 0, rlen = 0;
        char *err = NULL;
        ck_assert_int_eq(px_btl_base_dyn_offer(mods, n, &c, &offer, &olen, &err), PX_SUCCESS);
        ck_assert_ptr_null(c->peer);
        ck_assert_int_eq(px_btl_base_dyn_accept(mods, n, offer, olen, &a, &reply, &rlen, &err),
                         PX_SUCCESS);
        ck_assert_ptr_nonnull(a->peer);
        ck_assert_int_eq(a->peer->rank, PX_BTL_RANK_DYNAMIC);
        /* A second accept of the same offer is refused (connecting twice). */
        px_btl_base_dyn_peer_t *a2 = NULL;
        void *r2 = NULL;
        size_t r2len = 0;
        ck_assert_int_eq(px_btl_base_dyn_accept(mods, n, offer, olen, &a2, &r2, &r2len, &err),
                         PX_ERR_UNREACH);
        ck_assert_ptr_nonnull(strstr(err, "accepted already"));
        free(err);
        free(r2);
        err = NULL;
        ck_assert_int_eq(px_btl_base_dyn_complete(c, reply, rlen, &err), PX_SUCCESS);
        ck_assert_ptr_nonnull(c->peer);
        /* Both ways; each arrives on the other side's endpoint, as a dynamic peer. */
        got_count = 0;
        ck_assert_int_eq(send_text(c->peer, "to acceptor"), PX_SUCCESS);
        ck_assert_int_eq(got_count, 1);
        ck_assert_str_eq(got, "to acceptor");
        ck_assert_int_eq(got_src, PX_BTL_RANK_DYNAMIC);
        ck_assert_ptr_eq(got_ep, a->peer->send[0].endpoint);
        ck_assert_int_eq(send_text(a->peer, "to connector"), PX_SUCCESS);
        ck_assert_int_eq(got_count, 2);
        ck_assert_ptr_eq(got_ep, c->peer->send[0].endpoint);
        /* put/get through the peer's RDMA module. */
        ck_assert_int_eq(c->peer->num_rdma, 1);
        px_btl_base_peer_module_t *rm = &c->peer->rdma[0];
        char src[16] = "one-sided", dst[16] = "";
        ck_assert_int_eq(rm->module->btl_get(rm->module, rm->endpoint, dst,
                                             (uint64_t)(uintptr_t)src, NULL, NULL, 10, 0,
                                             PX_BTL_NO_ORDER, NULL, NULL, NULL),
                         PX_SUCCESS);
        ck_assert_str_eq(dst, "one-sided");
        /* After the acceptor removes its side, the connector's sends fail. */
        px_btl_base_peer_module_t *cm = px_btl_base_peer_eager(c->peer);
        ck_assert_int_eq(px_btl_base_dyn_remove(a), PX_SUCCESS);
        ck_assert_int_eq(cm->module->btl_sendi(cm->module, cm->endpoint, "x", 1, NULL, 0,
                                               PX_BTL_NO_ORDER, 0, 200, NULL),
                         PX_ERR_UNREACH);
        ck_assert_int_eq(px_btl_base_dyn_remove(c), PX_SUCCESS);
        /* A reply for a connection that is gone does not complete another. */
        px_btl_base_dyn_peer_t *c2 = NULL;
        void *o2 = NULL;
        size_t o2len = 0;
        ck_assert_int_eq(px_btl_base_dyn_offer(mods, n, &c2, &o2, &o2len, &err), PX_SUCCESS);
        ck_assert_int_eq(px_btl_base_dyn_complete(c2, reply, rlen, &err), PX_ERR_BAD_PARAM);
        ck_assert_ptr_nonnull(strstr(err, "stale"));
        free(err);
        err = NULL;
        /* An offer is not a reply, and a reply is not an offer. */
        ck_assert_int_eq(px_btl_base_dyn_complete(c2, o2, o2len, &err), PX_ERR_BAD_PARAM);
        free(err);
        err = NULL;
        ck_assert_int_eq(px_btl_base_dyn_accept(mods, n, reply, rlen, &a2, &r2, &r2len, &err),
                         PX_ERR_BAD_PARAM);
        ck_assert_ptr_nonnull(strstr(err, "reply where an offer"));
        free(err);
        err = NULL;
        ck_assert_int_eq(px_btl_base_dyn_remove(c2), PX_SUCCESS);
        free(o2);
        free(offer);
        free(reply);
    }
    px_btl_base_register_am(200, NULL, NULL);
    close_btl();
}
END_TEST

/* An offer from another process: btl/self declines, and says so both in the
 * acceptor's error and, through the reply, in the connector's. */
START_TEST(self_declines_another_process)
{
    open_btl("self");
    px_btl_module_t **mods = px_btl_base_modules;
    int n = px_btl_base_num_modules;
    px_btl_base_dyn_peer_t *c = NULL, *a = NULL;
    void *offer = NULL, *reply = NULL;
    size_t olen = 0, rlen = 0;
    char *err = NULL;
    ck_assert_int_eq(px_btl_base_dyn_offer(mods, n, &c, &offer, &olen, &err), PX_SUCCESS);
    /* The part's pid is at offset 4 of btl/self's part (after the base's
     * 20-byte header and 1 + 4 + 10 bytes of the part's header). */
    unsigned char *p = offer;
    p[20 + 15 + 4] ^= 0x55;
    ck_assert_int_eq(px_btl_base_dyn_accept(mods, n, offer, olen, &a, &reply, &rlen, &err),
                     PX_ERR_UNREACH);
    ck_assert_ptr_null(a);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "self reaches only the calling process"));
    free(err);
    err = NULL;
    ck_assert_ptr_nonnull(reply);
    ck_assert_int_eq(px_btl_base_dyn_complete(c, reply, rlen, &err), PX_ERR_UNREACH);
    ck_assert_ptr_nonnull(strstr(err, "the accepting side declined: self reaches only"));
    free(err);
    ck_assert_int_eq(px_btl_base_dyn_remove(c), PX_SUCCESS);
    free(offer);
    free(reply);
    close_btl();
}
END_TEST

/* ------------------------------------------------------------ older minors */

static int poison_calls;
static int poison_offer(px_btl_module_t *b, px_btl_endpoint_t **e, void *p, size_t *l, char *r)
{
    (void)b;
    (void)e;
    (void)p;
    (void)l;
    (void)r;
    poison_calls++;
    return PX_ERR_FATAL;
}

START_TEST(old_minor_skipped)
{
    open_btl("self");
    /* A module built for 3.2: the 3.3 members lie past its btl_size, and
     * whatever the memory there holds is never called. */
    static px_btl_component_t comp;
    comp.base.component_name = "old";
    comp.base.framework_version = (px_mca_version_t){3, 2, 0};
    comp.base.component_version = (px_mca_version_t){1, 0, 0};
    static px_btl_module_t old;
    old = *px_btl_base_modules[0];
    old.btl_component = &comp;
    old.btl_exclusivity = PX_BTL_EXCLUSIVITY_HIGH + 1;
    old.btl_size = PX_BTL_MODULE_SIZE_3_2;
    old.btl_dyn_offer = poison_offer;
    ck_assert(!px_btl_base_dyn_capable(&old));
    ck_assert(px_btl_base_dyn_capable(px_btl_base_modules[0]));
    px_btl_module_t *mods[2] = {&old, px_btl_base_modules[0]};
    px_btl_base_dyn_peer_t *c = NULL, *a = NULL;
    void *offer = NULL, *reply = NULL;
    size_t olen = 0, rlen = 0;
    char *err = NULL;
    ck_assert_int_eq(px_btl_base_dyn_offer(mods, 2, &c, &offer, &olen, &err), PX_SUCCESS);
    ck_assert_ptr_null(c->endpoints[0]);
    ck_assert_int_eq(px_btl_base_dyn_accept(mods, 2, offer, olen, &a, &reply, &rlen, &err),
                     PX_SUCCESS);
    ck_assert_int_eq(px_btl_base_dyn_complete(c, reply, rlen, &err), PX_SUCCESS);
    ck_assert_int_eq(poison_calls, 0);
    /* The chosen module is self, although "old" has the higher exclusivity. */
    ck_assert_ptr_eq(c->peer->send[0].module, px_btl_base_modules[0]);
    ck_assert_ptr_eq(a->peer->send[0].module, px_btl_base_modules[0]);
    px_btl_base_dyn_remove(a);
    px_btl_base_dyn_remove(c);
    free(offer);
    free(reply);
    /* With only the old module, the error names it and its minor. */
    ck_assert_int_eq(px_btl_base_dyn_offer(mods, 1, &c, &offer, &olen, &err), PX_ERR_UNREACH);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "old: built for BTL API 3.2, before 3.3"));
    free(err);
    ck_assert_int_eq(poison_calls, 0);
    close_btl();
}
END_TEST

PX_CHECK_MAIN("btl_dyn", NULL, NULL, 0, parse_bad_payloads, self_connects_to_itself,
              self_declines_another_process, old_minor_skipped)
