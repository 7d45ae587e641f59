/*
 * btl_check_util.c: what px_btl_check's checks share: reasons, progress,
 * the receive side (one active-message callback per check tag, the data of
 * each arrival gathered and handed to the check's verifier) and sends with
 * completion counting.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/util/error.h"
#include "core/util/progress.h"
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"
#include "tools/px_btl_check/btl_check.h"

#define BC_MAX_RANKS 64

int bc_fail(bc_ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    return BC_FAIL;
}

int bc_skip(bc_ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    return BC_SKIP;
}

double bc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Every registered progress function: the module under test and the helper
 * transports (whose runtime traffic must not stall while a check waits). */
void bc_progress(bc_ctx_t *c)
{
    (void)c;
    px_progress_engine();
}

void bc_fill(unsigned char *p, size_t len, size_t from, int tag, int src, unsigned long k)
{
    for (size_t i = 0; i < len; i++)
        p[i] = bc_pattern(tag, src, k, from + i);
}

/* ---- receive ---- */

static struct {
    bc_ctx_t *c;
    int tag;
    bc_rx_fn fn;
    unsigned long count[BC_MAX_RANKS];
    size_t bytes[BC_MAX_RANKS];
    char error[512];
    const size_t *sizes;
    size_t nsizes;
    unsigned char *got; /* [BC_MAX_RANKS][nsizes]: message seen */
    unsigned char *buf;
    size_t cap;
    unsigned long stale; /* arrivals on another check's tag */
} rx;

static void bc_am(px_btl_module_t *m, const px_btl_receive_descriptor_t *d)
{
    (void)m;
    if (NULL == rx.fn || d->tag != rx.tag) {
        rx.stale++;
        return;
    }
    int src = d->src_rank;
    if (src < 0 || src >= BC_MAX_RANKS) {
        bc_rx_note("a message on tag %d came with src_rank %d (not a rank of this job)", d->tag,
                   src);
        return;
    }
    size_t len = 0;
    for (size_t i = 0; i < d->des_segment_count; i++)
        len += d->des_segments[i].seg_len;
    if (len > rx.cap) {
        unsigned char *b = realloc(rx.buf, len);
        if (NULL == b) {
            bc_rx_note("out of memory gathering a %zu-byte message", len);
            return;
        }
        rx.buf = b;
        rx.cap = len;
    }
    size_t off = 0;
    for (size_t i = 0; i < d->des_segment_count; i++) {
        if (d->des_segments[i].seg_len)
            memcpy(rx.buf + off, d->des_segments[i].seg_addr, d->des_segments[i].seg_len);
        off += d->des_segments[i].seg_len;
    }
    unsigned long k = rx.count[src]++;
    rx.fn(rx.c, src, k, rx.buf, len);
}

void bc_rx_begin(bc_ctx_t *c, int tag, bc_rx_fn fn)
{
    rx.c = c;
    rx.tag = tag;
    rx.fn = fn;
    memset(rx.count, 0, sizeof rx.count);
    memset(rx.bytes, 0, sizeof rx.bytes);
    rx.error[0] = '\0';
    px_btl_base_register_am((px_btl_tag_t)tag, bc_am, NULL);
    /* Nobody sends before every rank listens on the tag. */
    px_barrier();
}

void bc_rx_end(void)
{
    px_btl_base_register_am((px_btl_tag_t)rx.tag, NULL, NULL);
    rx.fn = NULL;
}

unsigned long bc_rx_count(int src)
{
    return rx.count[src];
}

size_t bc_rx_bytes(int src)
{
    return rx.bytes[src];
}

const char *bc_rx_error(void)
{
    return rx.error;
}

void bc_rx_note(const char *fmt, ...)
{
    if (rx.error[0])
        return; /* the first error is the one to fix */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rx.error, sizeof rx.error, fmt, ap);
    va_end(ap);
}

bool bc_rx_wait(bc_ctx_t *c, int src, unsigned long n)
{
    double end = bc_now() + c->timeout;
    while (rx.count[src] < n) {
        bc_progress(c);
        if (bc_now() > end)
            return false;
    }
    return true;
}

bool bc_rx_wait_bytes(bc_ctx_t *c, int src, size_t total)
{
    double end = bc_now() + c->timeout;
    while (rx.bytes[src] < total && !rx.error[0]) {
        bc_progress(c);
        if (bc_now() > end)
            return false;
    }
    return true;
}

void bc_rx_expect_sizes(const size_t *sizes, size_t nsizes)
{
    rx.sizes = sizes;
    rx.nsizes = nsizes;
    free(rx.got);
    rx.got = calloc(BC_MAX_RANKS * (nsizes ? nsizes : 1), 1);
}

/* Which message this is: btl.h promises no order between messages (the
 * runtime orders by sequence number), so an arrival is matched to a message
 * not yet seen of its length whose bytes it has (the pattern depends on the
 * message's index). */
void bc_rx_sized(bc_ctx_t *c, int src, unsigned long n, const unsigned char *data, size_t len)
{
    (void)c;
    (void)n;
    unsigned char *got = rx.got + (size_t)src * rx.nsizes;
    long first = -1;
    for (size_t k = 0; k < rx.nsizes; k++) {
        if (got[k] || rx.sizes[k] != len)
            continue;
        if (first < 0)
            first = (long)k;
        size_t i = 0;
        while (i < len && data[i] == bc_pattern(rx.tag, src, k, i))
            i++;
        if (i == len) {
            got[k] = 1;
            return;
        }
    }
    if (first < 0) {
        bc_rx_note("a %zu-byte message arrived from rank %d that was not sent (no message of "
                   "that length left: a duplicate, or a length changed on the way)",
                   len, src);
        return;
    }
    for (size_t i = 0; i < len; i++)
        if (data[i] != bc_pattern(rx.tag, src, (unsigned long)first, i)) {
            bc_rx_note("message %ld from rank %d (%zu bytes): byte %zu is 0x%02x, 0x%02x was sent",
                       first, src, len, i, data[i],
                       bc_pattern(rx.tag, src, (unsigned long)first, i));
            return;
        }
}

void bc_rx_frags(bc_ctx_t *c, int src, unsigned long k, const unsigned char *data, size_t len)
{
    (void)c;
    bc_frag_hdr_t h;
    if (len < sizeof h) {
        bc_rx_note("fragment %lu from rank %d has %zu bytes, less than the %zu-byte reserve", k,
                   src, len, sizeof h);
        return;
    }
    memcpy(&h, data, sizeof h);
    size_t n = len - sizeof h;
    if (h.offset + n > h.total) {
        bc_rx_note("fragment %lu from rank %d: %zu data bytes at offset %llu pass the end of its "
                   "%llu-byte buffer (the header was damaged?)",
                   k, src, n, (unsigned long long)h.offset, (unsigned long long)h.total);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (data[sizeof h + i] != bc_pattern(rx.tag, src, 0, h.offset + i)) {
            bc_rx_note("fragment %lu from rank %d: data byte %llu is 0x%02x, 0x%02x was sent", k,
                       src, (unsigned long long)(h.offset + i), data[sizeof h + i],
                       bc_pattern(rx.tag, src, 0, h.offset + i));
            return;
        }
    rx.bytes[src] += n;
}

/* ---- send ---- */

void bc_send_cb(px_btl_module_t *m, px_btl_endpoint_t *ep, px_btl_descriptor_t *des, int status)
{
    (void)ep;
    bc_sent_t *s = des->des_cbdata;
    if (NULL == s)
        return;
    s->callbacks++;
    s->status = status;
    if (s->des && s->des != des)
        s->wrong_des = true;
    if (!(des->des_flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP))
        m->btl_free(m, des);
}

/* Hand `des` to btl_send, retrying while the module is out of resources. */
static int send_des(bc_ctx_t *c, int dest, px_btl_descriptor_t *des, int tag, size_t len)
{
    double end = bc_now() + c->timeout;
    /* Read before the send: with BTL ownership the descriptor may be gone
     * when btl_send returns 1. */
    const uint32_t flags = des->des_flags;
    for (;;) {
        int rc = c->m->btl_send(c->m, c->ep[dest], des, (px_btl_tag_t)tag);
        if (rc == 1) {
            if (!(flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP))
                c->m->btl_free(c->m, des);
            return BC_OK;
        }
        if (rc == 0)
            return BC_OK;
        if (rc != PX_ERR_TEMP_OUT_OF_RESOURCE || bc_now() > end) {
            c->m->btl_free(c->m, des);
            return bc_fail(c, "btl_send of %zu bytes to rank %d returned %d (%s)%s", len, dest, rc,
                           px_strerror(rc),
                           rc == PX_ERR_TEMP_OUT_OF_RESOURCE ? " for longer than the timeout" : "");
        }
        bc_progress(c);
    }
}

int bc_send_alloc(bc_ctx_t *c, int dest, int tag, unsigned long k, size_t len)
{
    px_btl_module_t *m = c->m;
    double end = bc_now() + c->timeout;
    px_btl_descriptor_t *des;
    while (NULL == (des = m->btl_alloc(m, c->ep[dest], PX_BTL_NO_ORDER, len,
                                       PX_BTL_DES_FLAGS_BTL_OWNERSHIP))) {
        if (bc_now() > end)
            return bc_fail(c,
                           "btl_alloc of %zu bytes (eager limit %zu) for rank %d returned NULL "
                           "for longer than the timeout (%.0f s)",
                           len, m->btl_eager_limit, dest, c->timeout);
        bc_progress(c);
    }
    if (des->des_segment_count < 1 || des->des_segments[0].seg_len < len)
        return bc_fail(c,
                       "btl_alloc(%zu) gave a descriptor of %zu segment(s), the first of %zu "
                       "bytes: it must have room for the size asked in its first segment",
                       len, des->des_segment_count,
                       des->des_segment_count ? des->des_segments[0].seg_len : 0);
    bc_fill(des->des_segments[0].seg_addr, len, 0, tag, c->rank, k);
    des->des_segments[0].seg_len = len;
    des->des_segment_count = 1;
    des->des_cbfunc = NULL;
    des->des_cbdata = NULL;
    return send_des(c, dest, des, tag, len);
}

int bc_send_prepared(bc_ctx_t *c, int dest, int tag, px_btl_convertor_t *conv, size_t *nfrags)
{
    px_btl_module_t *m = c->m;
    *nfrags = 0;
    while (conv->position < conv->total) {
        size_t want = conv->total - conv->position, size = want, off = conv->position;
        double end = bc_now() + c->timeout;
        px_btl_descriptor_t *des;
        while (NULL == (des = m->btl_prepare_src(m, c->ep[dest], conv, PX_BTL_NO_ORDER,
                                                 sizeof(bc_frag_hdr_t), &size,
                                                 PX_BTL_DES_FLAGS_BTL_OWNERSHIP))) {
            if (bc_now() > end)
                return bc_fail(c,
                               "btl_prepare_src (%zu of %zu bytes left, %s) for rank %d returned "
                               "NULL for longer than the timeout",
                               want, conv->total,
                               px_btl_convertor_is_contiguous(conv) ? "contiguous" : "iovec", dest);
            bc_progress(c);
            size = want;
        }
        if (size == 0 || size > want)
            return bc_fail(c,
                           "btl_prepare_src asked for %zu bytes at offset %zu (%s) set *size to "
                           "%zu: it must take at least 1 byte and at most the bytes asked",
                           want, off, px_btl_convertor_is_contiguous(conv) ? "contiguous" : "iovec",
                           size);
        if (conv->position != off + size)
            return bc_fail(c,
                           "btl_prepare_src took %zu bytes at offset %zu but moved the "
                           "convertor to %zu (it must advance it by *size)",
                           size, off, conv->position);
        size_t seglen = 0;
        for (size_t i = 0; i < des->des_segment_count; i++)
            seglen += des->des_segments[i].seg_len;
        if (des->des_segment_count < 1 || des->des_segments[0].seg_len < sizeof(bc_frag_hdr_t) ||
            seglen != sizeof(bc_frag_hdr_t) + size)
            return bc_fail(c,
                           "btl_prepare_src(reserve %zu, *size %zu) gave %zu segment(s) of %zu "
                           "bytes in all, the first of %zu: it must be the reserve (contiguous, "
                           "first) plus *size",
                           sizeof(bc_frag_hdr_t), size, des->des_segment_count, seglen,
                           des->des_segment_count ? des->des_segments[0].seg_len : 0);
        bc_frag_hdr_t h = {off, conv->total};
        memcpy(des->des_segments[0].seg_addr, &h, sizeof h);
        des->des_cbfunc = NULL;
        des->des_cbdata = NULL;
        if (send_des(c, dest, des, tag, size) != BC_OK)
            return BC_FAIL;
        (*nfrags)++;
    }
    return BC_OK;
}

int bc_barrier(bc_ctx_t *c)
{
    int rc = px_barrier();
    if (rc != PX_SUCCESS)
        return bc_fail(c, "px_barrier between checks failed: %s", px_strerror(rc));
    return BC_OK;
}
