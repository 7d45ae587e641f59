/*
 * xfer_api_test.c: every call of runtime/plexus_xfer.h and its error paths,
 * in one process (boot/singleton, btl/self: the process reaches itself by
 * put/get, and by the staged path over self's active messages). Each test
 * runs px_init and px_finalize in its own forked child (Check's fork mode).
 * The multi-process paths (mapped memory, CMA, ofi, striping, failures) are
 * test/xfer/t_xfer.sh's.
 */
#define _GNU_SOURCE
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"
#include "runtime/xfer/xfer.h"

#define LEN (256 * 1024)

static px_xfer_region_t *reg, *alloc;
static char *ubuf;
static unsigned char key[PX_XFER_KEY_MAX];
static size_t klen;

static void up(void)
{
    setenv("PX_MCA_btl", "self", 1);
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS);
    ubuf = aligned_alloc(4096, LEN);
    ck_assert_ptr_nonnull(ubuf);
    for (size_t i = 0; i < LEN; i++)
        ubuf[i] = (char)(i * 13 + 1);
    ck_assert_int_eq(px_xfer_register(ubuf, LEN, &reg), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_alloc(LEN, &alloc), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_key_export(alloc, key, sizeof key, &klen), PX_SUCCESS);
}

static void down(void)
{
    if (reg)
        ck_assert_int_eq(px_xfer_free(&reg), PX_SUCCESS);
    if (alloc)
        ck_assert_int_eq(px_xfer_free(&alloc), PX_SUCCESS);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
    free(ubuf);
}

static bool has(const char *text, const char *needle)
{
    return text && strstr(text, needle);
}

START_TEST(before_init)
{
    px_xfer_region_t *r = NULL;
    px_xfer_remote_t *rm = NULL;
    char buf[64];
    size_t n;
    int peer;
    ck_assert_int_eq(px_xfer_register(buf, sizeof buf, &r), PX_ERR_NOT_INITIALIZED);
    ck_assert(has(px_xfer_last_error(), "px_init"));
    ck_assert_int_eq(px_xfer_alloc(64, &r), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_free(&r), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_key_export(r, buf, sizeof buf, &n), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_key_import(0, buf, sizeof buf, &rm), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_write(r, 0, rm, 0, 1), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_read(r, 0, rm, 0, 1), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_flush(0), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_notify(0, "x", 1), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_notify_recv(&peer, buf, sizeof buf, &n, 0), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_enable_threads(), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_progress(), 0);
    /* A batch is memory of its own: it may be made and freed any time, but
     * nothing is submitted before px_init. */
    px_xfer_batch_t *b;
    ck_assert_int_eq(px_xfer_batch_alloc(4, &b), PX_SUCCESS);
    px_xfer_request_t q = {PX_XFER_WRITE, r, 0, rm, 0, 1, NULL};
    ck_assert_int_eq(px_xfer_batch_submit(b, &q, 1, NULL), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_xfer_batch_free(&b), PX_SUCCESS);
    ck_assert_ptr_null(b);
}
END_TEST

START_TEST(regions)
{
    px_xfer_region_t *r = NULL;
    ck_assert_ptr_eq(px_xfer_region_base(reg), ubuf);
    ck_assert_uint_eq(px_xfer_region_length(reg), LEN);
    char *a = px_xfer_region_base(alloc);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq((uintptr_t)a % 4096, 0);
    ck_assert_uint_eq(px_xfer_region_length(alloc), LEN);
    for (size_t i = 0; i < LEN; i += 4096)
        ck_assert_int_eq(a[i], 0); /* zeroed */
    ck_assert_int_eq(px_xfer_register(NULL, 10, &r), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "px_xfer_register"));
    ck_assert_int_eq(px_xfer_register(ubuf, 0, &r), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_register(ubuf, 10, NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_register((void *)(uintptr_t)-16, 64, &r), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_alloc(0, &r), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_alloc((size_t)1 << 50, &r), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_alloc(10, NULL), PX_ERR_BAD_PARAM);
    ck_assert_ptr_null(px_xfer_region_base(NULL));
    ck_assert_uint_eq(px_xfer_region_length(NULL), 0);
    ck_assert_int_eq(px_xfer_free(NULL), PX_ERR_BAD_PARAM);
    /* An odd length is kept as asked (pages are allocated behind it). */
    ck_assert_int_eq(px_xfer_alloc(10, &r), PX_SUCCESS);
    ck_assert_uint_eq(px_xfer_region_length(r), 10);
    px_xfer_region_t *copy = r;
    ck_assert_int_eq(px_xfer_free(&r), PX_SUCCESS);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(px_xfer_free(&r), PX_ERR_BAD_PARAM);
    (void)copy; /* freed: a dangling handle is refused by its magic (not tested: freed memory) */
}
END_TEST

START_TEST(keys)
{
    unsigned char small[8];
    size_t n = 0;
    ck_assert_int_eq(px_xfer_key_export(reg, small, sizeof small, &n), PX_ERR_TRUNCATE);
    ck_assert_uint_gt(n, sizeof small);
    ck_assert_uint_le(n, PX_XFER_KEY_MAX);
    ck_assert_int_eq(px_xfer_key_export(reg, NULL, 0, &n), PX_ERR_TRUNCATE);
    ck_assert_int_eq(px_xfer_key_export(NULL, key, sizeof key, &n), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_key_export(reg, key, sizeof key, NULL), PX_ERR_BAD_PARAM);
    px_xfer_remote_t *rm = NULL;
    ck_assert_int_eq(px_xfer_key_import(0, key, klen, &rm), PX_SUCCESS);
    ck_assert_uint_eq(px_xfer_remote_length(rm), LEN);
    ck_assert_int_eq(px_xfer_remote_peer(rm), 0);
    /* Importing the same region again works (the same memory). */
    px_xfer_remote_t *rm2 = NULL;
    ck_assert_int_eq(px_xfer_key_import(0, key, klen, &rm2), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_remote_release(&rm2), PX_SUCCESS);
    ck_assert_ptr_null(rm2);
    ck_assert_int_eq(px_xfer_remote_release(&rm2), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_SUCCESS);
    ck_assert_uint_eq(px_xfer_remote_length(NULL), 0);
    ck_assert_int_eq(px_xfer_remote_peer(NULL), PX_ERR_BAD_PARAM);
    /* Bad arguments. */
    ck_assert_int_eq(px_xfer_key_import(1, key, klen, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "expected a rank from 0 to 0"));
    ck_assert_int_eq(px_xfer_key_import(-1, key, klen, &rm), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_key_import(0, key, klen, NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_key_import(0, NULL, klen, &rm), PX_ERR_BAD_PARAM);
}
END_TEST

START_TEST(key_refusals)
{
    px_xfer_remote_t *rm = NULL;
    /* Truncated: every shorter prefix. */
    for (size_t n = 0; n < klen; n++) {
        ck_assert_int_eq(px_xfer_key_import(0, key, n, &rm), PX_ERR_BAD_PARAM);
        ck_assert_ptr_null(rm);
    }
    ck_assert(has(px_xfer_last_error(), "truncated"));
    /* Extra bytes. */
    unsigned char longer[PX_XFER_KEY_MAX + 1];
    memcpy(longer, key, klen);
    longer[klen] = 0;
    ck_assert_int_eq(px_xfer_key_import(0, longer, klen + 1, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "after its end"));
    /* Corrupt: every byte flipped in turn. */
    unsigned char bad[PX_XFER_KEY_MAX];
    for (size_t i = 0; i < klen; i++) {
        memcpy(bad, key, klen);
        bad[i] ^= 0x40;
        ck_assert_int_eq(px_xfer_key_import(0, bad, klen, &rm), PX_ERR_BAD_PARAM);
    }
    memcpy(bad, key, klen);
    bad[klen - 1] ^= 1;
    ck_assert_int_eq(px_xfer_key_import(0, bad, klen, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "corrupt"));
    memcpy(bad, key, klen);
    bad[0] = 'X';
    ck_assert_int_eq(px_xfer_key_import(0, bad, klen, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "not a Plexus transfer key"));
    /* Well-formed keys of another job, of another rank, a bad entry. */
    px_xfer_key_t k;
    char why[200];
    ck_assert_int_eq(px_xfer_key_parse(key, klen, &k, why, sizeof why), PX_SUCCESS);
    px_xfer_key_t other = k;
    other.job_hash ^= 1;
    size_t n = px_xfer_key_write(&other, bad, sizeof bad);
    ck_assert_int_eq(px_xfer_key_import(0, bad, n, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "another job"));
    other = k;
    other.owner = 3;
    n = px_xfer_key_write(&other, bad, sizeof bad);
    ck_assert_int_eq(px_xfer_key_import(0, bad, n, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "exported by rank 3, not by rank 0"));
    other = k;
    other.region_id = 0;
    n = px_xfer_key_write(&other, bad, sizeof bad);
    ck_assert_int_eq(px_xfer_key_import(0, bad, n, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "region id 0"));
    other = k;
    ck_assert_int_gt(other.nentries, 0);
    other.entries[0].kind = 9;
    n = px_xfer_key_write(&other, bad, sizeof bad);
    ck_assert_int_eq(px_xfer_key_import(0, bad, n, &rm), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "kind 9"));
    /* A key that names transports this process lacks imports with no direct
     * path (the staged path remains). */
    other = k;
    for (int i = 0; i < other.nentries; i++)
        other.entries[i].comp_id ^= 0x5a5a;
    n = px_xfer_key_write(&other, bad, sizeof bad);
    ck_assert_int_eq(px_xfer_key_import(0, bad, n, &rm), PX_SUCCESS);
    px_xfer_request_t q = {PX_XFER_WRITE, reg, 0, rm, 0, 100, NULL};
    px_xfer_batch_t *b;
    ck_assert_int_eq(px_xfer_batch_alloc(1, &b), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_batch_submit(b, &q, 1, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_batch_wait(b, 10), PX_SUCCESS);
    px_xfer_status_t st;
    ck_assert_int_eq(px_xfer_batch_test(b, 0, &st), PX_SUCCESS);
    ck_assert_str_eq(st.transport, "stage:self");
    ck_assert_int_eq(memcmp(px_xfer_region_base(alloc), ubuf, 100), 0);
    ck_assert_int_eq(px_xfer_batch_free(&b), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_SUCCESS);
}
END_TEST

/* Write then read back over `transport` (NULL: by priority). */
static void roundtrip(px_xfer_remote_t *rm, const char *transport, const char *expect_w,
                      const char *expect_r)
{
    char *a = px_xfer_region_base(alloc);
    memset(a, 0, LEN);
    px_xfer_batch_t *b;
    ck_assert_int_eq(px_xfer_batch_alloc(8, &b), PX_SUCCESS);
    px_xfer_request_t w[3] = {{PX_XFER_WRITE, reg, 0, rm, 0, 4096, transport},
                              {PX_XFER_WRITE, reg, 5000, rm, 70001, 33333, transport},
                              {PX_XFER_WRITE, reg, 100, rm, LEN - 1, 1, transport}};
    size_t first = 99;
    ck_assert_int_eq(px_xfer_batch_submit(b, w, 3, &first), PX_SUCCESS);
    ck_assert_uint_eq(first, 0);
    ck_assert_uint_eq(px_xfer_batch_count(b), 3);
    ck_assert_int_eq(px_xfer_batch_wait(b, 10), PX_SUCCESS);
    ck_assert_uint_eq(px_xfer_batch_pending(b), 0);
    px_xfer_status_t st;
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(px_xfer_batch_test(b, i, &st), PX_SUCCESS);
        ck_assert_int_eq(st.peer, 0);
        ck_assert_ptr_null(st.reason);
        ck_assert_str_eq(st.transport, expect_w);
    }
    ck_assert_int_eq(memcmp(a, ubuf, 4096), 0);
    ck_assert_int_eq(memcmp(a + 70001, ubuf + 5000, 33333), 0);
    ck_assert_int_eq(a[LEN - 1], ubuf[100]);
    ck_assert_int_eq(a[4096], 0); /* nothing past what was written */
    ck_assert_int_eq(a[70000], 0);
    /* Read back into another place of the registered buffer. */
    char *save = malloc(LEN);
    memcpy(save, ubuf, LEN);
    ck_assert_int_eq(px_xfer_batch_reset(b), PX_SUCCESS);
    ck_assert_uint_eq(px_xfer_batch_count(b), 0);
    px_xfer_request_t r = {PX_XFER_READ, reg, 200000, rm, 70001, 33333, transport};
    ck_assert_int_eq(px_xfer_batch_submit(b, &r, 1, &first), PX_SUCCESS);
    ck_assert_uint_eq(first, 0);
    ck_assert_int_eq(px_xfer_batch_wait(b, 10), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_batch_test(b, 0, &st), PX_SUCCESS);
    ck_assert_str_eq(st.transport, expect_r);
    ck_assert_int_eq(memcmp(ubuf + 200000, save + 5000, 33333), 0);
    memcpy(ubuf, save, LEN);
    free(save);
    ck_assert_int_eq(px_xfer_batch_free(&b), PX_SUCCESS);
}

START_TEST(transfers)
{
    px_xfer_remote_t *rm;
    ck_assert_int_eq(px_xfer_key_import(0, key, klen, &rm), PX_SUCCESS);
    roundtrip(rm, NULL, "self:put", "self:get");
    roundtrip(rm, "self", "self:put", "self:get");
    roundtrip(rm, "stage", "stage:self", "stage:self");
    /* The single calls. */
    char *a = px_xfer_region_base(alloc);
    ck_assert_int_eq(px_xfer_write(reg, 1, rm, 2, 1000), PX_SUCCESS);
    ck_assert_int_eq(memcmp(a + 2, ubuf + 1, 1000), 0);
    ck_assert_int_eq(px_xfer_read(reg, 3000, rm, 2, 1000), PX_SUCCESS);
    ck_assert_int_eq(memcmp(ubuf + 3000, ubuf + 1, 1000), 0);
    ck_assert_int_eq(px_xfer_write(reg, 0, rm, 0, 0), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_flush(0), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_flush(-1), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_flush(1), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_flush(-2), PX_ERR_BAD_PARAM);
    ck_assert_int_ge(px_xfer_progress(), 0);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_SUCCESS);
}
END_TEST

/* A staged write or read of a region onto itself, the ranges overlapping:
 * btl/self delivers in place, so the proxy's copy has the sender's own
 * bytes as its source (the write sends straight from its region); it must
 * land as memmove would (ASan's memcpy-param-overlap otherwise). */
START_TEST(staged_overlap)
{
    unsigned char k[PX_XFER_KEY_MAX];
    size_t kl;
    px_xfer_remote_t *rm;
    ck_assert_int_eq(px_xfer_key_export(reg, k, sizeof k, &kl), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_key_import(0, k, kl, &rm), PX_SUCCESS);
    char *want = malloc(LEN);
    ck_assert_ptr_nonnull(want);
    px_xfer_batch_t *b;
    ck_assert_int_eq(px_xfer_batch_alloc(1, &b), PX_SUCCESS);
    static const struct {
        int op;
        size_t loff, roff, len;
    } c[] = {{PX_XFER_WRITE, 0, 100, 4096},
             {PX_XFER_WRITE, 300, 0, 5000},
             {PX_XFER_READ, 64, 0, 3000},
             {PX_XFER_READ, 0, 700, 2048}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        memcpy(want, ubuf, LEN);
        if (PX_XFER_WRITE == c[i].op)
            memmove(want + c[i].roff, want + c[i].loff, c[i].len);
        else
            memmove(want + c[i].loff, want + c[i].roff, c[i].len);
        px_xfer_request_t q = {c[i].op, reg, c[i].loff, rm, c[i].roff, c[i].len, "stage"};
        ck_assert_int_eq(px_xfer_batch_reset(b), PX_SUCCESS);
        ck_assert_int_eq(px_xfer_batch_submit(b, &q, 1, NULL), PX_SUCCESS);
        ck_assert_int_eq(px_xfer_batch_wait(b, 10), PX_SUCCESS);
        px_xfer_status_t st;
        ck_assert_int_eq(px_xfer_batch_test(b, 0, &st), PX_SUCCESS);
        ck_assert_str_eq(st.transport, "stage:self");
        ck_assert_int_eq(memcmp(ubuf, want, LEN), 0);
    }
    ck_assert_int_eq(px_xfer_batch_free(&b), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_SUCCESS);
    for (size_t i = 0; i < LEN; i++) /* as up() left it, for the tests after */
        ubuf[i] = (char)(i * 13 + 1);
    free(want);
}
END_TEST

START_TEST(request_errors)
{
    px_xfer_remote_t *rm;
    ck_assert_int_eq(px_xfer_key_import(0, key, klen, &rm), PX_SUCCESS);
    px_xfer_batch_t *b;
    ck_assert_int_eq(px_xfer_batch_alloc(16, &b), PX_SUCCESS);
    px_xfer_region_t *gone = (px_xfer_region_t *)(void *)ubuf; /* not a region */
    px_xfer_request_t q[] = {
        {PX_XFER_WRITE, reg, LEN - 10, rm, 0, 11, NULL}, /* local out of bounds */
        {PX_XFER_READ, reg, 0, rm, LEN - 10, 11, NULL},  /* remote out of bounds */
        {PX_XFER_WRITE, reg, SIZE_MAX, rm, 0, 2, NULL},  /* offset overflow */
        {PX_XFER_READ, reg, 0, rm, 1, SIZE_MAX, NULL},   /* length overflow */
        {7, reg, 0, rm, 0, 1, NULL},                     /* no such op */
        {PX_XFER_WRITE, NULL, 0, rm, 0, 1, NULL},        /* no local region */
        {PX_XFER_WRITE, gone, 0, rm, 0, 1, NULL},        /* not a region */
        {PX_XFER_WRITE, reg, 0, NULL, 0, 1, NULL},       /* no remote */
        {PX_XFER_WRITE, reg, 0, rm, 0, 1, "nosuch"},     /* no such transport */
        {PX_XFER_WRITE, reg, 0, rm, 0, 0, NULL},         /* zero bytes: fine */
    };
    const int expect[] = {PX_ERR_VALUE_OUT_OF_BOUNDS, PX_ERR_VALUE_OUT_OF_BOUNDS,
                          PX_ERR_VALUE_OUT_OF_BOUNDS, PX_ERR_VALUE_OUT_OF_BOUNDS,
                          PX_ERR_BAD_PARAM,           PX_ERR_BAD_PARAM,
                          PX_ERR_BAD_PARAM,           PX_ERR_BAD_PARAM,
                          PX_ERR_NOT_AVAILABLE,       PX_SUCCESS};
    const size_t n = sizeof q / sizeof q[0];
    ck_assert_int_eq(px_xfer_batch_submit(b, q, n, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_batch_wait(b, 10), PX_ERR_VALUE_OUT_OF_BOUNDS);
    ck_assert(has(px_xfer_last_error(), "out of bounds"));
    px_xfer_status_t st;
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(px_xfer_batch_test(b, i, &st), expect[i]);
        ck_assert_int_eq(st.error, expect[i]);
        if (expect[i] < 0) {
            ck_assert_ptr_nonnull(st.reason);
            ck_assert(has(st.reason, "transport"));
        }
    }
    px_xfer_batch_test(b, 0, &st);
    ck_assert(has(st.reason, "rank 0 (host "));
    ck_assert(has(st.reason, "local offset"));
    ck_assert(has(st.reason, "nothing was sent"));
    px_xfer_batch_test(b, 1, &st);
    ck_assert(has(st.reason, "remote offset"));
    px_xfer_batch_test(b, 8, &st);
    ck_assert(has(st.reason, "names transport \"nosuch\""));
    /* A zero-byte request succeeded: its path says so, never "" (failed). */
    ck_assert_int_eq(px_xfer_batch_test(b, n - 1, &st), PX_SUCCESS);
    ck_assert_ptr_nonnull(st.transport);
    ck_assert_str_eq(st.transport, "none");
    /* A failed one: "". */
    px_xfer_batch_test(b, 0, &st);
    ck_assert_str_eq(st.transport, "");
    /* Nothing was written by the refused requests. */
    ck_assert_int_eq(((char *)px_xfer_region_base(alloc))[0], 0);
    /* Batch misuse. */
    ck_assert_int_eq(px_xfer_batch_test(b, n, &st), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_test(NULL, 0, &st), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_submit(b, q, 16 - n + 1, NULL), PX_ERR_BAD_PARAM);
    ck_assert(has(px_xfer_last_error(), "do not fit"));
    ck_assert_uint_eq(px_xfer_batch_count(b), n); /* nothing submitted */
    ck_assert_int_eq(px_xfer_batch_submit(b, NULL, 1, NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_submit(NULL, q, 1, NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_submit(b, q, 0, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_batch_wait(NULL, 1), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_reset(NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_alloc(0, &b), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_alloc((1u << 20) + 1, &b), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_alloc(1, NULL), PX_ERR_BAD_PARAM);
    ck_assert_uint_eq(px_xfer_batch_count(NULL), 0);
    ck_assert_uint_eq(px_xfer_batch_pending(NULL), 0);
    ck_assert_int_eq(px_xfer_batch_free(&b), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_batch_free(&b), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_batch_free(NULL), PX_ERR_BAD_PARAM);
    /* The single calls report the reason too. */
    ck_assert_int_eq(px_xfer_write(reg, 0, rm, LEN, 1), PX_ERR_VALUE_OUT_OF_BOUNDS);
    ck_assert(has(px_xfer_last_error(), "out of bounds"));
    ck_assert_int_eq(px_xfer_read(reg, LEN, rm, 0, 1), PX_ERR_VALUE_OUT_OF_BOUNDS);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_SUCCESS);
}
END_TEST

START_TEST(deregistered)
{
    /* The region is freed by its owner (here the same process): direct and
     * staged requests to it fail, saying so, and nothing is copied. */
    px_xfer_region_t *victim;
    ck_assert_int_eq(px_xfer_alloc(8192, &victim), PX_SUCCESS);
    unsigned char vkey[PX_XFER_KEY_MAX];
    size_t vlen;
    ck_assert_int_eq(px_xfer_key_export(victim, vkey, sizeof vkey, &vlen), PX_SUCCESS);
    px_xfer_remote_t *rm;
    ck_assert_int_eq(px_xfer_key_import(0, vkey, vlen, &rm), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_write(reg, 0, rm, 0, 100), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_free(&victim), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_write(reg, 0, rm, 0, 100), PX_ERR_NOT_FOUND);
    ck_assert(has(px_xfer_last_error(), "deregistered"));
    ck_assert(has(px_xfer_last_error(), "self:put"));
    ck_assert_int_eq(px_xfer_read(reg, 0, rm, 0, 100), PX_ERR_NOT_FOUND);
    px_xfer_batch_t *b;
    ck_assert_int_eq(px_xfer_batch_alloc(2, &b), PX_SUCCESS);
    px_xfer_request_t q[2] = {{PX_XFER_WRITE, reg, 0, rm, 0, 100, "stage"},
                              {PX_XFER_READ, reg, 0, rm, 0, 100, "stage"}};
    ck_assert_int_eq(px_xfer_batch_submit(b, q, 2, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_batch_wait(b, 10), PX_ERR_NOT_FOUND);
    px_xfer_status_t st;
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(px_xfer_batch_test(b, (size_t)i, &st), PX_ERR_NOT_FOUND);
        ck_assert_str_eq(st.transport, "stage:self");
        ck_assert(has(st.reason, "deregistered by its owner"));
    }
    ck_assert_int_eq(px_xfer_batch_free(&b), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_SUCCESS);
}
END_TEST

START_TEST(notifications)
{
    int peer = -1;
    char buf[PX_XFER_NOTIFY_MAX + 1];
    size_t n = 0;
    ck_assert_int_eq(px_xfer_notify_recv(&peer, buf, sizeof buf, &n, 0), PX_ERR_TIMEOUT);
    ck_assert_int_eq(px_xfer_notify(0, "first", 6), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_notify(0, "second message", 15), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_notify(0, NULL, 0), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_notify_recv(&peer, buf, sizeof buf, &n, 5), PX_SUCCESS);
    ck_assert_int_eq(peer, 0);
    ck_assert_uint_eq(n, 6);
    ck_assert_str_eq(buf, "first");
    ck_assert_int_eq(px_xfer_notify_recv(&peer, buf, 4, &n, 5), PX_ERR_TRUNCATE);
    ck_assert_uint_eq(n, 15);
    ck_assert_int_eq(memcmp(buf, "seco", 4), 0);
    ck_assert_int_eq(px_xfer_notify_recv(&peer, buf, sizeof buf, &n, 5), PX_SUCCESS);
    ck_assert_uint_eq(n, 0);
    memset(buf, 'x', sizeof buf);
    ck_assert_int_eq(px_xfer_notify(0, buf, PX_XFER_NOTIFY_MAX), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_notify_recv(&peer, buf, sizeof buf, &n, 5), PX_SUCCESS);
    ck_assert_uint_eq(n, PX_XFER_NOTIFY_MAX);
    ck_assert_int_eq(px_xfer_notify(0, buf, PX_XFER_NOTIFY_MAX + 1), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_notify(1, "x", 1), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_notify(0, NULL, 3), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_notify_recv(NULL, buf, 1, &n, 0), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_notify_recv(&peer, NULL, 1, &n, 0), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_xfer_notify_recv(&peer, buf, 1, NULL, 0), PX_ERR_BAD_PARAM);
}
END_TEST

START_TEST(threads_and_messaging)
{
    /* After px_xfer_enable_threads the messaging calls take the engine's
     * lock: they still work, nested or not. */
    ck_assert_int_eq(px_xfer_enable_threads(), PX_SUCCESS);
    px_request_t *r;
    char in[8] = "", out[8] = "hello";
    ck_assert_int_eq(px_irecv(in, sizeof in, 0, 3, &r), PX_SUCCESS);
    ck_assert_int_eq(px_send(out, 6, 0, 3), PX_SUCCESS);
    int flag = 0;
    while (!flag)
        ck_assert_int_eq(px_test(&r, &flag, NULL), PX_SUCCESS);
    ck_assert_str_eq(in, "hello");
    ck_assert_int_eq(px_barrier(), PX_SUCCESS);
    ck_assert_int_ge(px_progress(), 0);
    px_xfer_remote_t *rm;
    ck_assert_int_eq(px_xfer_key_import(0, key, klen, &rm), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_write(reg, 0, rm, 0, 64), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_remote_release(&rm), PX_SUCCESS);
}
END_TEST

START_TEST(finalize_frees)
{
    /* Regions, remotes and batches left to px_finalize: it frees what the
     * engine owns (LeakSanitizer checks in the sanitizer build). */
    px_xfer_remote_t *rm;
    ck_assert_int_eq(px_xfer_key_import(0, key, klen, &rm), PX_SUCCESS);
    px_xfer_region_t *extra;
    ck_assert_int_eq(px_xfer_alloc(100, &extra), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_write(reg, 0, rm, 0, 64), PX_SUCCESS);
    ck_assert_int_eq(px_xfer_notify(0, "left", 5), PX_SUCCESS);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
    reg = alloc = NULL;
    /* After px_finalize every call refuses (the handles are gone). */
    ck_assert_int_eq(px_xfer_write(NULL, 0, NULL, 0, 1), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS); /* for down() */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("xfer_api");
    const TTest *pre[] = {before_init};
    suite_add_tcase(s, px_check_tcase("before_init", NULL, NULL, 60, pre, 1));
    const TTest *t[] = {regions,       keys,           key_refusals,
                        transfers,     staged_overlap, request_errors,
                        deregistered,  notifications,  threads_and_messaging,
                        finalize_frees};
    suite_add_tcase(s, px_check_tcase("api", up, down, 60, t, PX_CHECK_COUNT(t)));
    return px_check_run(s);
}
