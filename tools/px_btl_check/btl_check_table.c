/*
 * btl_check_table.c: the checks of the module job, and the table of every
 * check (a new check is one function and one entry). Each runs on every rank
 * of the job at the same time; a rank sends to its ring successor `to` and
 * receives from its predecessor `from` (itself when the job has one rank).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "runtime/plexus.h"
#include "tools/px_btl_check/btl_check.h"

/* btl_check_more.c */
int bc_check_put(bc_ctx_t *c);
int bc_check_get(bc_ctx_t *c);
int bc_check_flush(bc_ctx_t *c);
int bc_check_peers(bc_ctx_t *c);
int bc_check_finalize(bc_ctx_t *c);
int bc_check_proto_sizes(bc_ctx_t *c);
int bc_check_proto_wild(bc_ctx_t *c);
int bc_check_death_cb(bc_ctx_t *c);
int bc_check_death_send(bc_ctx_t *c);

/* The check's tag: one per check, so that a late message of one check is
 * never taken for a message of the next. */
static int tag_of(const bc_check_t *ck)
{
    return PX_BTL_TAG_USER_MIN + (int)(ck - bc_checks);
}
static int cur_tag;

static int check_reach(bc_ctx_t *c)
{
    char list[BC_REASON / 2] = "";
    int missing = 0;
    for (int r = 0; r < c->size; r++) {
        bool need = (r != c->rank) || c->size == 1;
        if (!need || c->ep[r])
            continue;
        missing++;
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%srank %d: %s", missing > 1 ? "; " : "", r,
                 c->why_not[r] ? c->why_not[r] : "no reason given (add_procs may set reasons[i])");
    }
    if (missing)
        return bc_fail(c, "%s does not reach %d of the ranks it must (%s)", c->name, missing, list);
    return BC_OK;
}

/* The sizes of the active-message check: every size to 256, then each power
 * of two and its neighbours, up to the eager limit and its neighbour below. */
static size_t *am_sizes(size_t eager, size_t *n)
{
    size_t *s = malloc(sizeof(size_t) * (300 + 3 * 64)), k = 0;
    for (size_t i = 0; i <= 256 && i <= eager; i++)
        s[k++] = i;
    for (size_t p = 512; p < eager; p *= 2) {
        s[k++] = p - 1;
        s[k++] = p;
        if (p + 1 <= eager)
            s[k++] = p + 1;
    }
    if (eager > 256) {
        s[k++] = eager - 1;
        s[k++] = eager;
    }
    *n = k;
    return s;
}

static int check_am(bc_ctx_t *c)
{
    size_t n, *sizes = am_sizes(c->m->btl_eager_limit, &n);
    bc_rx_expect_sizes(sizes, n);
    bc_rx_begin(c, cur_tag, bc_rx_sized);
    int rc = BC_OK;
    for (size_t k = 0; k < n && rc == BC_OK; k++)
        rc = bc_send_alloc(c, c->to, cur_tag, k, sizes[k]);
    if (rc == BC_OK && !bc_rx_wait(c, c->from, n))
        rc = bc_fail(c, "%lu of %zu messages from rank %d arrived within %.0f s%s%s",
                     bc_rx_count(c->from), n, c->from, c->timeout, bc_rx_error()[0] ? "; " : "",
                     bc_rx_error());
    if (rc == BC_OK && bc_rx_error()[0])
        rc = bc_fail(c, "%s", bc_rx_error());
    bc_rx_end();
    free(sizes);
    return rc;
}

static int send_conv(bc_ctx_t *c, px_btl_convertor_t *conv, size_t total, const char *what)
{
    size_t nfrags = 0;
    int rc = bc_send_prepared(c, c->to, cur_tag, conv, &nfrags);
    if (rc == BC_OK && !bc_rx_wait_bytes(c, c->from, total))
        rc = bc_fail(c, "%s: %zu of %zu bytes from rank %d arrived within %.0f s%s%s", what,
                     bc_rx_bytes(c->from), total, c->from, c->timeout, bc_rx_error()[0] ? "; " : "",
                     bc_rx_error());
    if (rc == BC_OK && bc_rx_error()[0])
        rc = bc_fail(c, "%s: %s", what, bc_rx_error());
    return rc;
}

/* prepare_src of contiguous data around the eager limit and max_send_size. */
static int check_prepare_contig(bc_ctx_t *c)
{
    size_t e = c->m->btl_eager_limit, s = c->m->btl_max_send_size;
    size_t totals[] = {0, 1, e - 1, e, e + 1, s - 1, s, s + 1, 3 * s + 7};
    size_t all = 0, big = 0;
    for (size_t i = 0; i < sizeof totals / sizeof *totals; i++) {
        all += totals[i];
        big = totals[i] > big ? totals[i] : big;
    }
    /* The sender's data is bc_pattern(tag, rank, 0, offset) whatever the
     * message: one buffer serves every total. */
    unsigned char *buf = malloc(big ? big : 1);
    bc_fill(buf, big, 0, cur_tag, c->rank, 0);
    bc_rx_begin(c, cur_tag, bc_rx_frags);
    int rc = BC_OK;
    size_t sent = 0;
    for (size_t i = 0; i < sizeof totals / sizeof *totals && rc == BC_OK; i++) {
        px_btl_convertor_t conv;
        px_btl_convertor_init_contig(&conv, buf, totals[i]);
        char what[64];
        snprintf(what, sizeof what, "%zu contiguous bytes", totals[i]);
        sent += totals[i];
        if (totals[i] == 0)
            continue; /* nothing to prepare; the active-message check sent 0 bytes */
        rc = send_conv(c, &conv, sent, what);
    }
    (void)all;
    bc_rx_end();
    /* Wait for the peer before freeing: a module may reference the buffer. */
    int brc = bc_barrier(c);
    free(buf);
    return rc != BC_OK ? rc : brc;
}

static int check_prepare_iov(bc_ctx_t *c)
{
    size_t s = c->m->btl_max_send_size;
    size_t lens[] = {1, 0, 7, 4093, 3, s + 11, 64, 1}, total = 0;
    size_t nio = sizeof lens / sizeof *lens;
    for (size_t i = 0; i < nio; i++)
        total += lens[i];
    unsigned char *buf = malloc(total + 2 * nio), *p = buf;
    struct iovec iov[sizeof lens / sizeof *lens];
    size_t off = 0;
    for (size_t i = 0; i < nio; i++) {
        p += 2; /* gaps between the pieces: a module that ignores the iovec reads them */
        iov[i].iov_base = p;
        iov[i].iov_len = lens[i];
        bc_fill(p, lens[i], off, cur_tag, c->rank, 0);
        memset(p - 2, 0xEE, 2);
        p += lens[i];
        off += lens[i];
    }
    px_btl_convertor_t conv = {.iov = iov, .iovcnt = nio, .total = total, .position = 0};
    bc_rx_begin(c, cur_tag, bc_rx_frags);
    int rc = send_conv(c, &conv, total, "an iovec of 8 pieces");
    bc_rx_end();
    int brc = bc_barrier(c);
    free(buf);
    return rc != BC_OK ? rc : brc;
}

/* In send order: message k carries k in its first 4 bytes. */
static void rx_order(bc_ctx_t *c, int src, unsigned long k, const unsigned char *d, size_t len)
{
    (void)c;
    uint32_t got;
    if (len != 8) {
        bc_rx_note("message %lu from rank %d has %zu bytes, 8 were sent", k, src, len);
        return;
    }
    memcpy(&got, d, 4);
    if (got != k)
        bc_rx_note("the %lu-th message from rank %d to arrive was message %u: out of send order", k,
                   src, got);
}

static int check_order(bc_ctx_t *c)
{
    enum { N = 2000 };
    bc_rx_begin(c, cur_tag, rx_order);
    int rc = BC_OK;
    for (uint32_t k = 0; k < N && rc == BC_OK; k++) {
        px_btl_descriptor_t *des;
        double end = bc_now() + c->timeout;
        while (NULL == (des = c->m->btl_alloc(c->m, c->ep[c->to], PX_BTL_NO_ORDER, 8,
                                              PX_BTL_DES_FLAGS_BTL_OWNERSHIP)) &&
               bc_now() < end)
            bc_progress(c);
        if (NULL == des) {
            rc = bc_fail(c, "btl_alloc(8) returned NULL for longer than %.0f s", c->timeout);
            break;
        }
        memset(des->des_segments[0].seg_addr, 0, 8);
        memcpy(des->des_segments[0].seg_addr, &k, 4);
        des->des_segments[0].seg_len = 8;
        des->des_cbfunc = NULL;
        des->des_cbdata = NULL;
        int s;
        while ((s = c->m->btl_send(c->m, c->ep[c->to], des, (px_btl_tag_t)cur_tag)) ==
                   PX_ERR_TEMP_OUT_OF_RESOURCE &&
               bc_now() < end)
            bc_progress(c);
        if (s < 0) {
            c->m->btl_free(c->m, des);
            rc = bc_fail(c, "btl_send of message %u returned %s", k, px_strerror(s));
        }
    }
    if (rc == BC_OK && !bc_rx_wait(c, c->from, N))
        rc = bc_fail(c, "%lu of %d messages from rank %d arrived within %.0f s%s%s",
                     bc_rx_count(c->from), N, c->from, c->timeout, bc_rx_error()[0] ? "; " : "",
                     bc_rx_error());
    if (rc == BC_OK && bc_rx_error()[0])
        rc = bc_fail(c, "%s", bc_rx_error());
    bc_rx_end();
    return rc;
}

/* sendi: header and payload arrive as one message; when it declines, the
 * descriptor it offers (or alloc) carries the same bytes. */
static int check_sendi(bc_ctx_t *c)
{
    px_btl_module_t *m = c->m;
    if (NULL == m->btl_sendi)
        return bc_skip(c, "the module has no btl_sendi (the runtime uses alloc and send)");
    enum { N = 600, HDR = 16 };
    size_t e = m->btl_eager_limit, pay[] = {0, 1, 47, 1000, e - HDR - 1, e - HDR};
    size_t np = sizeof pay / sizeof *pay;
    size_t sizes[N];
    for (int k = 0; k < N; k++)
        sizes[k] = HDR + (pay[k % np] < e - HDR ? pay[k % np] : e - HDR);
    unsigned char *buf = malloc(e);
    bc_rx_expect_sizes(sizes, N);
    bc_rx_begin(c, cur_tag, bc_rx_sized);
    int rc = BC_OK, declined = 0, offered = 0;
    for (int k = 0; k < N && rc == BC_OK; k++) {
        size_t len = sizes[k];
        bc_fill(buf, len, 0, cur_tag, c->rank, (unsigned long)k);
        px_btl_descriptor_t *des = NULL;
        int s = m->btl_sendi(m, c->ep[c->to], buf, HDR, buf + HDR, len - HDR, PX_BTL_NO_ORDER,
                             PX_BTL_DES_FLAGS_BTL_OWNERSHIP, (px_btl_tag_t)cur_tag, &des);
        if (s == PX_SUCCESS)
            continue;
        if (s != PX_ERR_TEMP_OUT_OF_RESOURCE) {
            rc = bc_fail(c,
                         "btl_sendi of %zu + %zu bytes returned %d (%s): it must succeed or say "
                         "PX_ERR_TEMP_OUT_OF_RESOURCE",
                         (size_t)HDR, len - HDR, s, px_strerror(s));
            break;
        }
        declined++;
        if (des) {
            offered++;
            if (des->des_segment_count < 1 || des->des_segments[0].seg_len < len) {
                rc = bc_fail(c,
                             "btl_sendi declined and offered a descriptor whose first segment "
                             "has %zu bytes, less than the %zu of header and payload",
                             des->des_segment_count ? des->des_segments[0].seg_len : 0, len);
                m->btl_free(m, des);
                break;
            }
            memcpy(des->des_segments[0].seg_addr, buf, len);
            des->des_segments[0].seg_len = len;
            des->des_segment_count = 1;
            des->des_flags |= PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
            des->des_cbfunc = NULL;
            des->des_cbdata = NULL;
            int r = m->btl_send(m, c->ep[c->to], des, (px_btl_tag_t)cur_tag);
            if (r < 0) {
                m->btl_free(m, des);
                rc = bc_fail(c, "btl_send of the descriptor btl_sendi offered returned %s",
                             px_strerror(r));
            }
        } else {
            rc = bc_send_alloc(c, c->to, cur_tag, (unsigned long)k, len);
        }
    }
    if (rc == BC_OK && !bc_rx_wait(c, c->from, N))
        rc = bc_fail(c,
                     "%lu of %d messages from rank %d arrived within %.0f s (sendi declined "
                     "%d times, offering a descriptor %d times)%s%s",
                     bc_rx_count(c->from), N, c->from, c->timeout, declined, offered,
                     bc_rx_error()[0] ? "; " : "", bc_rx_error());
    if (rc == BC_OK && bc_rx_error()[0])
        rc = bc_fail(c, "%s (sendi declined %d times, offering a descriptor %d times)",
                     bc_rx_error(), declined, offered);
    bc_rx_end();
    free(buf);
    return rc;
}

/* Completion callbacks: exactly one with ALWAYS_CALLBACK, one when the send
 * started (returned 0) without it, none when it completed in place
 * (returned 1) without it; the right descriptor, status success. With
 * BTL_OWNERSHIP the module frees the descriptor, otherwise the caller does. */
static int check_callbacks(bc_ctx_t *c)
{
    px_btl_module_t *m = c->m;
    enum { N = 48 };
    static const uint32_t flags[3] = {PX_BTL_DES_SEND_ALWAYS_CALLBACK, 0,
                                      PX_BTL_DES_SEND_ALWAYS_CALLBACK |
                                          PX_BTL_DES_FLAGS_BTL_OWNERSHIP};
    static const char *fname[3] = {"ALWAYS_CALLBACK", "no flags", "ALWAYS_CALLBACK|BTL_OWNERSHIP"};
    /* Static: a late callback after a failed check must not write into a
     * stack frame that is gone. */
    static bc_sent_t sent[N];
    static int ret[N];
    static size_t sizes[N];
    memset(sent, 0, sizeof sent);
    for (int k = 0; k < N; k++)
        sizes[k] = (k % 4 == 3) ? m->btl_eager_limit : (size_t)(k * 5);
    bc_rx_expect_sizes(sizes, N);
    bc_rx_begin(c, cur_tag, bc_rx_sized);
    int rc = BC_OK;
    for (int k = 0; k < N && rc == BC_OK; k++) {
        uint32_t f = flags[k % 3];
        px_btl_descriptor_t *des;
        double end = bc_now() + c->timeout;
        while (NULL == (des = m->btl_alloc(m, c->ep[c->to], PX_BTL_NO_ORDER, sizes[k], f)) &&
               bc_now() < end)
            bc_progress(c);
        if (NULL == des) {
            rc = bc_fail(c, "btl_alloc(%zu) returned NULL for longer than %.0f s", sizes[k],
                         c->timeout);
            break;
        }
        bc_fill(des->des_segments[0].seg_addr, sizes[k], 0, cur_tag, c->rank, (unsigned long)k);
        des->des_segments[0].seg_len = sizes[k];
        des->des_flags = f;
        des->des_cbfunc = bc_send_cb;
        des->des_cbdata = &sent[k];
        sent[k].des = des;
        while ((ret[k] = m->btl_send(m, c->ep[c->to], des, (px_btl_tag_t)cur_tag)) ==
                   PX_ERR_TEMP_OUT_OF_RESOURCE &&
               bc_now() < end)
            bc_progress(c);
        if (ret[k] < 0) {
            m->btl_free(m, des);
            rc = bc_fail(c, "btl_send (%s) returned %s", fname[k % 3], px_strerror(ret[k]));
        } else if (ret[k] == 1 && !(f & PX_BTL_DES_SEND_ALWAYS_CALLBACK) && sent[k].callbacks == 0)
            m->btl_free(m, des); /* completed in place, no callback: the caller frees */
    }
    if (rc == BC_OK && !bc_rx_wait(c, c->from, N))
        rc = bc_fail(c, "%lu of %d messages from rank %d arrived within %.0f s",
                     bc_rx_count(c->from), N, c->from, c->timeout);
    /* Let late (or double) callbacks come. */
    double end = bc_now() + c->timeout;
    for (int k = 0; k < N && rc == BC_OK; k++) {
        bool want = (flags[k % 3] & PX_BTL_DES_SEND_ALWAYS_CALLBACK) || ret[k] == 0;
        while (want && sent[k].callbacks == 0 && bc_now() < end)
            bc_progress(c);
    }
    double settle = bc_now() + 0.05;
    while (bc_now() < settle)
        bc_progress(c);
    for (int k = 0; k < N && rc == BC_OK; k++) {
        uint32_t f = flags[k % 3];
        int want = ((f & PX_BTL_DES_SEND_ALWAYS_CALLBACK) || ret[k] == 0) ? 1 : 0;
        if (sent[k].callbacks != want)
            rc = bc_fail(c,
                         "send %d (%zu bytes, %s) returned %d and its completion callback ran "
                         "%d times (within %.0f s), %d expected (btl.md: once with "
                         "ALWAYS_CALLBACK or when btl_send returned 0, never otherwise)",
                         k, sizes[k], fname[k % 3], ret[k], sent[k].callbacks, c->timeout, want);
        else if (want && sent[k].wrong_des)
            rc = bc_fail(c, "send %d (%s): the completion callback was given another descriptor", k,
                         fname[k % 3]);
        else if (want && sent[k].status != PX_SUCCESS)
            rc = bc_fail(c, "send %d (%s): the completion callback had status %s", k, fname[k % 3],
                         px_strerror(sent[k].status));
    }
    if (rc == BC_OK && bc_rx_error()[0])
        rc = bc_fail(c, "%s", bc_rx_error());
    bc_rx_end();
    return rc;
}

static int check_finalize_placeholder(bc_ctx_t *c)
{
    return bc_check_finalize(c);
}

int bc_current_tag(void);
int bc_current_tag(void)
{
    return cur_tag;
}

const bc_check_t bc_checks[] = {
    {BC_JOB_MODULE, "add_procs: the module reaches every rank it must, reasons otherwise",
     check_reach},
    {BC_JOB_MODULE,
     "active messages (alloc + send) of 0..256 bytes and 2^n +-1 up to the eager "
     "limit, data checked",
     check_am},
    {BC_JOB_MODULE,
     "prepare_src of contiguous data: eager limit and max_send_size +-1, in "
     "fragments, data checked",
     check_prepare_contig},
    {BC_JOB_MODULE, "prepare_src of iovec data (8 pieces), data checked", check_prepare_iov},
    {BC_JOB_MODULE, "ordering: 2000 messages to one peer arrive in send order", check_order},
    {BC_JOB_MODULE, "sendi, and the descriptor or alloc it falls back to", check_sendi},
    {BC_JOB_MODULE, "completion callbacks and ownership flags", check_callbacks},
    {BC_JOB_MODULE, "put (with registration when the module needs it), data checked", bc_check_put},
    {BC_JOB_MODULE, "get (with registration when the module needs it), data checked", bc_check_get},
    {BC_JOB_MODULE, "flush: every send completed when it returns", bc_check_flush},
    {BC_JOB_MODULE, "many peers: every rank to every rank at once, data checked", bc_check_peers},
    {BC_JOB_MODULE, "clean finalize: px_finalize succeeds, no object left alive",
     check_finalize_placeholder},
    {BC_JOB_PROTO,
     "messaging layer with only this transport and self: px_send/px_recv of "
     "eager and rendezvous sizes",
     bc_check_proto_sizes},
    {BC_JOB_PROTO, "messaging layer: wildcard receives (any source, any tag)", bc_check_proto_wild},
    {BC_JOB_DEATH, "a peer that dies: the module's error callback names it, in bounded time",
     bc_check_death_cb},
    {BC_JOB_DEATH, "a peer that dies: a send to it fails instead of hanging", bc_check_death_send},
};
const int bc_nchecks = sizeof bc_checks / sizeof *bc_checks;

/* Run check i (the worker calls it): sets the tag first. */
int bc_run_check(bc_ctx_t *c, int i);
int bc_run_check(bc_ctx_t *c, int i)
{
    cur_tag = tag_of(&bc_checks[i]);
    c->reason[0] = '\0';
    return bc_checks[i].run(c);
}
