/*
 * path_stage.c: the staged path (its initiator; the target is
 * stage_target.c). When no transport has a direct path
 * between the two regions (only send/sendi transports, a module without GET,
 * flags cleared by the user, a request naming "stage"), a request moves as
 * active messages over the peer's eager transport, in chunks of
 * xfer_stage_size (capped by the transport's fragment):
 *
 *   write: initiator takes a buffer (the chunk's credit) and sends the
 *          chunk from the region (WRITE: the transport copies it in the
 *          call); the target's proxy (an active-message callback) copies it
 *          into the region and answers WACK; the buffer goes back then.
 *   read:  initiator takes a buffer (the chunk's credit) and sends
 *          READ; the target's proxy copies the region straight into its
 *          transport's descriptor (RDATA); the initiator copies it into
 *          the region and gives the buffer back.
 *
 * The pool of xfer_stage_count buffers (credits, no memory) bounds the chunks in flight
 * from this process. The target never waits for a buffer of its own (it
 * copies into the transport's descriptor, and what the transport cannot
 * take now waits on a job list with the region looked up again when it
 * runs), so two processes staging to each other cannot lock each other out.
 * The target looks the region up by id (the key's), so a region freed by its
 * owner is answered "no such region" and the request fails saying it was
 * deregistered. Replies name the request by its address and buffer;
 * a reply is acted on only when that buffer is held by that request.
 *
 * Correct for every transport that sends; slower than a direct path (two
 * copies and a round trip per chunk), as docs/transfer.md says.
 *
 * A reply never sends the next chunk on its own stack: it reports to
 * batch.c (NO_RESOURCES when a chunk could go now), which resumes the
 * request from progress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/xfer/xfer.h"

#define POOL_PROXY ((px_xfer_slot_t *)(uintptr_t)1) /* never used: the target holds none */

void px_xfer_stage_finalize(void)
{
    free(px_xfer.pool_free);
    free(px_xfer.pool_owner);
    px_xfer.pool_free = NULL;
    px_xfer.pool_owner = NULL;
    px_xfer.pool_count = px_xfer.pool_nfree = 0;
}

/* The pool is made on first use. Its buffers hold no bytes: each is a
 * chunk's credit (a write's chunk goes from the region into the transport,
 * a read's answer from the transport into the region), xfer_stage_size the
 * chunk's size. */
static bool pool_ready(void)
{
    if (px_xfer.pool_free)
        return true;
    int n = px_xfer.stage_count > 0 ? px_xfer.stage_count : 1;
    size_t size = px_xfer.stage_size >= 256 ? px_xfer.stage_size : 256;
    px_xfer.pool_free = malloc((size_t)n * sizeof(int));
    px_xfer.pool_owner = calloc((size_t)n, sizeof(px_xfer_slot_t *));
    if (!px_xfer.pool_free || !px_xfer.pool_owner) {
        free(px_xfer.pool_free);
        free(px_xfer.pool_owner);
        px_xfer.pool_free = NULL;
        px_xfer.pool_owner = NULL;
        return false;
    }
    px_xfer.pool_count = n;
    px_xfer.pool_size = size;
    for (int i = 0; i < n; ++i)
        px_xfer.pool_free[i] = n - 1 - i;
    px_xfer.pool_nfree = n;
    return true;
}

static int pool_get(px_xfer_slot_t *owner)
{
    if (0 == px_xfer.pool_nfree)
        return -1;
    int b = px_xfer.pool_free[--px_xfer.pool_nfree];
    px_xfer.pool_owner[b] = owner;
    return b;
}

static void pool_put(int b)
{
    px_xfer.pool_owner[b] = NULL;
    px_xfer.pool_free[px_xfer.pool_nfree++] = b;
}

/* Largest data bytes of one staged message to `peer`. */
static size_t stage_chunk(int peer)
{
    size_t c = px_xfer.pool_size;
    px_rt_peer_t *rp = px_rt_peer_find(peer);
    px_btl_module_t *m = rp ? rp->eager_btl : NULL;
    size_t room = m && m->btl_max_send_size > sizeof(px_xfer_stage_hdr_t)
                      ? m->btl_max_send_size - sizeof(px_xfer_stage_hdr_t)
                      : 0;
    if (room && c > room)
        c = room;
    return c;
}

/* ------------------------------------------------------------ initiator */

/* Where the request stands once nothing more goes out now. */
static px_xfer_pstatus_t stage_status(const px_xfer_slot_t *s)
{
    if (s->outstanding)
        return PX_XFER_P_IN_PROGRESS; /* the replies come */
    if (s->error)
        return PX_XFER_P_ERROR;
    return s->done >= s->len ? PX_XFER_P_DONE : PX_XFER_P_IN_PROGRESS;
}

static px_xfer_pstatus_t stage_schedule(px_xfer_slot_t *s)
{
    const bool write = PX_XFER_WRITE == s->op;
    size_t chunk = stage_chunk(s->peer);
    while (s->scur < s->len && !s->error) {
        int b = pool_get(s);
        if (b < 0) {
            /* Every buffer is in flight: a reply of ours frees one (and
             * resumes us), or, with none of ours out, another's does. */
            if (0 == s->outstanding)
                return PX_XFER_P_NO_RESOURCES;
            break;
        }
        size_t c = s->len - s->scur < chunk ? s->len - s->scur : chunk;
        px_xfer_stage_hdr_t h = {.token = (uint64_t)(uintptr_t)s,
                                 .region = s->remote->id,
                                 .offset = s->roff + s->scur,
                                 .len = (uint32_t)c,
                                 .cookie = (uint16_t)b,
                                 .status = PX_XFER_ST_OK};
        /* Counted before sending: the answer may come inside the send (a
         * transport that delivers in place). */
        s->scur += c;
        s->outstanding++;
        int rc;
        if (write) {
            /* Straight from the region: the transport takes the bytes in
             * the call (px_xfer_send: sendi, or a descriptor it copies
             * into), so the buffer is the chunk's credit, not a copy. */
            rc = px_xfer_send(s->peer, PX_XFER_AM_WRITE, &h, sizeof h,
                              s->local->base + s->loff + s->scur - c, c);
        } else {
            rc = px_xfer_send(s->peer, PX_XFER_AM_READ, &h, sizeof h, NULL, 0);
        }
        if (PX_LIKELY(PX_SUCCESS == rc))
            continue;
        s->scur -= c;
        s->outstanding--;
        pool_put(b);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc)
            return PX_XFER_P_NO_RESOURCES;
        int failed = px_xfer_peer_check(s->remote->pp);
        char what[300];
        snprintf(what, sizeof what, "the staged %s could not be sent: %s", write ? "write" : "read",
                 failed ? s->remote->pp->why : px_strerror(rc));
        px_xfer_slot_error(s, failed ? failed : rc, failed != 0, what);
    }
    return stage_status(s);
}

static px_xfer_pstatus_t stage_start(px_xfer_slot_t *s)
{
    s->scur = 0;
    s->nrails = 0;
    if (!pool_ready()) {
        px_xfer_slot_error(s, PX_ERR_OUT_OF_RESOURCE, false,
                           "cannot allocate the staged path's credits (xfer_stage_count)");
        return stage_status(s);
    }
    return stage_schedule(s);
}

/* Its peer failed: the bounce buffers go back (staged chunks hold no
 * transport operation, so nothing stays held). */
static px_xfer_pstatus_t stage_release(px_xfer_slot_t *s)
{
    if (px_xfer.pool_free)
        for (int b = 0; b < px_xfer.pool_count; ++b)
            if (px_xfer.pool_owner[b] == s)
                pool_put(b);
    s->outstanding = 0;
    return PX_XFER_P_DONE;
}

const px_xfer_path_t px_xfer_path_stage = {
    .name = "stage",
    .at_submit = false,
    .transport_ops = false,
    .start = stage_start,
    .resume = stage_schedule,
    .release = stage_release,
};

/* The request a reply names, when the bounce buffer it names is that
 * request's (nothing else is trusted from the wire). */
static px_xfer_slot_t *stage_owner(const px_xfer_stage_hdr_t *h, int src, const char *what)
{
    if (!px_xfer.pool_free || h->cookie >= px_xfer.pool_count ||
        px_xfer.pool_owner[h->cookie] != (px_xfer_slot_t *)(uintptr_t)h->token ||
        NULL == px_xfer.pool_owner[h->cookie] || POOL_PROXY == px_xfer.pool_owner[h->cookie]) {
        if (!px_xfer_peer_error(src))
            PX_OUTPUT_VERBOSE(1, px_xfer.output,
                              "a staged %s from rank %d names no request in flight "
                              "(buffer %u); dropped",
                              what, src, h->cookie);
        return NULL;
    }
    px_xfer_slot_t *s = px_xfer.pool_owner[h->cookie];
    return s->peer == src ? s : NULL;
}

static const char *stage_status_text(int st)
{
    return PX_XFER_ST_NOREGION == st ? "the region was deregistered by its owner (px_xfer_free)"
                                     : "the target refused the chunk: out of its region's bounds "
                                       "or larger than its transport's fragment";
}

static void stage_reply(px_xfer_slot_t *s, const px_xfer_stage_hdr_t *h)
{
    pool_put(h->cookie);
    s->outstanding--;
    if (PX_XFER_ST_OK != h->status)
        px_xfer_slot_error(s, PX_XFER_ST_NOREGION == h->status ? PX_ERR_NOT_FOUND : PX_ERR_COMM,
                           false, stage_status_text(h->status));
    else
        s->done += h->len;
    /* A buffer is free again: the next chunk goes from progress. */
    px_xfer_slot_event(s, !s->error && s->scur < s->len ? PX_XFER_P_NO_RESOURCES : stage_status(s));
}

void px_xfer_am_wack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    size_t dl;
    if (!px_xfer_stage_hdr(d, &h, &dl, "write answer"))
        return;
    px_xfer_slot_t *s = stage_owner(&h, d->src_rank, "write answer");
    if (!s || PX_XFER_WRITE != s->op)
        return;
    stage_reply(s, &h);
}

void px_xfer_am_rdata(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    size_t dl;
    if (!px_xfer_stage_hdr(d, &h, &dl, "read answer"))
        return;
    px_xfer_slot_t *s = stage_owner(&h, d->src_rank, "read answer");
    if (!s || PX_XFER_READ != s->op)
        return;
    if (PX_XFER_ST_OK == h.status) {
        if (h.offset < s->roff || h.offset - s->roff > s->len || h.len > s->len ||
            h.offset - s->roff > s->len - h.len || dl != h.len) {
            h.status = PX_XFER_ST_BOUNDS; /* not what was asked: the request fails */
        } else {
            px_xfer_stage_copy_out(d, s->local->base + s->loff + (h.offset - s->roff), dl);
        }
    }
    stage_reply(s, &h);
}
