/*
 * xfer_stage.c: the staged path. When no transport has a direct path
 * between the two regions (only send/sendi transports, a module without GET,
 * flags cleared by the user, a request naming "stage"), a request moves as
 * active messages over the peer's eager transport, in chunks of
 * xfer_stage_size (capped by the transport's fragment):
 *
 *   write: initiator copies a chunk into a bounce buffer and sends it (WRITE);
 *          the target's proxy (an active-message callback) copies it into
 *          the region and answers WACK; the bounce buffer goes back then.
 *   read:  initiator takes a bounce buffer (the chunk's credit) and sends
 *          READ; the target's proxy copies the region straight into its
 *          transport's descriptor (RDATA); the initiator copies it into
 *          the region and gives the buffer back.
 *
 * The pool of xfer_stage_count bounce buffers bounds the chunks in flight
 * from this process. The target never waits for a buffer of its own (it
 * copies into the transport's descriptor, and what the transport cannot
 * take now waits on a job list with the region looked up again when it
 * runs), so two processes staging to each other cannot lock each other out.
 * The target looks the region up by id (the key's), so a region freed by its
 * owner is answered "no such region" and the request fails saying it was
 * deregistered. Replies name the request by its address and bounce buffer;
 * a reply is acted on only when that buffer is held by that request.
 *
 * Correct for every transport that sends; slower than a direct path (two
 * copies and a round trip per chunk), as docs/transfer.md says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/xfer/xfer.h"

#define POOL_PROXY ((px_xfer_slot_t *)(uintptr_t)1) /* never used: the target holds none */

int px_xfer_stage_init(void)
{
    px_xfer.pool = NULL;
    px_xfer.pool_free = NULL;
    px_xfer.pool_owner = NULL;
    px_xfer.pool_count = px_xfer.pool_nfree = 0;
    px_xfer.pool_size = 0;
    px_xfer.jobs = px_xfer.jobs_tail = NULL;
    return PX_SUCCESS;
}

void px_xfer_stage_finalize(void)
{
    while (px_xfer.jobs) {
        px_xfer_job_t *j = px_xfer.jobs;
        px_xfer.jobs = j->next;
        atomic_fetch_sub(&px_xfer.work, 1);
        free(j);
    }
    px_xfer.jobs_tail = NULL;
    free(px_xfer.pool);
    free(px_xfer.pool_free);
    free(px_xfer.pool_owner);
    px_xfer.pool = NULL;
    px_xfer.pool_free = NULL;
    px_xfer.pool_owner = NULL;
    px_xfer.pool_count = px_xfer.pool_nfree = 0;
}

/* The pool is made on first use. */
static bool pool_ready(void)
{
    if (px_xfer.pool)
        return true;
    int n = px_xfer.stage_count > 0 ? px_xfer.stage_count : 1;
    size_t size = px_xfer.stage_size >= 256 ? px_xfer.stage_size : 256;
    px_xfer.pool = malloc((size_t)n * size);
    px_xfer.pool_free = malloc((size_t)n * sizeof(int));
    px_xfer.pool_owner = calloc((size_t)n, sizeof(px_xfer_slot_t *));
    if (!px_xfer.pool || !px_xfer.pool_free || !px_xfer.pool_owner) {
        free(px_xfer.pool);
        free(px_xfer.pool_free);
        free(px_xfer.pool_owner);
        px_xfer.pool = NULL;
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

static char *pool_buf(int b)
{
    return px_xfer.pool + (size_t)b * px_xfer.pool_size;
}

/* Largest data bytes of one staged message to `peer`. */
static size_t stage_chunk(int peer)
{
    size_t c = px_xfer.pool_size;
    px_btl_module_t *m = px_rt.peers[peer].eager_btl;
    size_t room = m && m->btl_max_send_size > sizeof(px_xfer_stage_hdr_t)
                      ? m->btl_max_send_size - sizeof(px_xfer_stage_hdr_t)
                      : 0;
    if (room && c > room)
        c = room;
    return c;
}

int px_xfer_send(int peer, px_btl_tag_t am, const void *hdr, size_t hlen, const void *data,
                 size_t dlen)
{
    px_rt_peer_t *rp = &px_rt.peers[peer];
    px_btl_module_t *m = rp->eager_btl;
    if (atomic_load(&px_xfer.peers[peer].failed))
        return atomic_load(&px_xfer.peers[peer].failed);
    if (!m)
        return PX_ERR_UNREACH;
    if (m->btl_sendi) {
        int rc = m->btl_sendi(m, rp->eager_ep, hdr, hlen, data, dlen, PX_BTL_NO_ORDER, 0, am, NULL);
        if (PX_SUCCESS == rc || PX_ERR_TEMP_OUT_OF_RESOURCE != rc)
            return rc;
    }
    if (hlen + dlen > m->btl_max_send_size)
        return PX_ERR_BAD_PARAM;
    px_btl_descriptor_t *des =
        m->btl_alloc(m, rp->eager_ep, PX_BTL_NO_ORDER, hlen + dlen, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (!des)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    char *p = des->des_segments[0].seg_addr;
    memcpy(p, hdr, hlen);
    if (dlen)
        memcpy(p + hlen, data, dlen);
    des->des_segments[0].seg_len = hlen + dlen;
    des->des_cbfunc = NULL;
    int rc = m->btl_send(m, rp->eager_ep, des, am);
    if (rc < 0) {
        m->btl_free(m, des);
        return rc;
    }
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ initiator */

void px_xfer_stage_release(px_xfer_slot_t *s)
{
    if (!px_xfer.pool)
        return;
    for (int b = 0; b < px_xfer.pool_count; ++b)
        if (px_xfer.pool_owner[b] == s)
            pool_put(b);
}

static void stage_check(px_xfer_slot_t *s)
{
    if (s->scheduling || s->pend || s->outstanding)
        return;
    if (s->error || s->done >= s->len)
        px_xfer_slot_complete(s, s->error, NULL);
}

void px_xfer_stage_start(px_xfer_slot_t *s)
{
    s->scur = 0;
    s->nrails = 0;
    if (!pool_ready()) {
        px_xfer_slot_error(s, PX_ERR_OUT_OF_RESOURCE, false,
                           "cannot allocate the staged path's bounce buffers (xfer_stage_count "
                           "x xfer_stage_size)");
        stage_check(s);
        return;
    }
    px_xfer_stage_schedule(s);
}

void px_xfer_stage_schedule(px_xfer_slot_t *s)
{
    const bool write = PX_XFER_WRITE == s->op;
    size_t chunk = stage_chunk(s->peer);
    s->scheduling = true;
    while (s->scur < s->len && !s->error) {
        int b = pool_get(s);
        if (b < 0) {
            /* Every buffer is in flight: a reply frees one and schedules us. */
            if (0 == s->outstanding)
                px_xfer_pend_add(s);
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
            memcpy(pool_buf(b), s->local->base + s->loff + s->scur - c, c);
            rc = px_xfer_send(s->peer, PX_XFER_AM_WRITE, &h, sizeof h, pool_buf(b), c);
        } else {
            rc = px_xfer_send(s->peer, PX_XFER_AM_READ, &h, sizeof h, NULL, 0);
        }
        if (PX_LIKELY(PX_SUCCESS == rc))
            continue;
        s->scur -= c;
        s->outstanding--;
        pool_put(b);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
            px_xfer_pend_add(s);
            break;
        }
        int failed = atomic_load(&px_xfer.peers[s->peer].failed);
        char what[300];
        snprintf(what, sizeof what, "the staged %s could not be sent: %s", write ? "write" : "read",
                 failed ? px_xfer.peers[s->peer].why : px_strerror(rc));
        px_xfer_slot_error(s, failed ? failed : rc, failed != 0, what);
    }
    s->scheduling = false;
    stage_check(s);
}

/* The header of a staged message (NULL, after saying why, when short). */
static bool stage_hdr(const px_btl_receive_descriptor_t *d, px_xfer_stage_hdr_t *h,
                      size_t *data_len, const char *what)
{
    size_t total = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i)
        total += d->des_segments[i].seg_len;
    if (d->des_segment_count < 1 || d->des_segments[0].seg_len < sizeof *h) {
        px_show_error("a staged %s from rank %d has %zu bytes, %zu in its first segment: less "
                      "than its %zu-byte header (which a transport delivers whole, first); "
                      "dropped",
                      what, d->src_rank, total,
                      d->des_segment_count ? d->des_segments[0].seg_len : 0, sizeof *h);
        return false;
    }
    memcpy(h, d->des_segments[0].seg_addr, sizeof *h);
    *data_len = total - sizeof *h;
    return true;
}

/* Copy `len` bytes after the header out of the segments. */
static void stage_copy_out(const px_btl_receive_descriptor_t *d, char *dst, size_t len)
{
    size_t skip = sizeof(px_xfer_stage_hdr_t);
    for (size_t i = 0; i < d->des_segment_count && len; ++i) {
        const char *a = d->des_segments[i].seg_addr;
        size_t l = d->des_segments[i].seg_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        size_t c = l - skip < len ? l - skip : len;
        memcpy(dst, a + skip, c);
        dst += c;
        len -= c;
        skip = 0;
    }
}

/* The request a reply names, when the bounce buffer it names is that
 * request's (nothing else is trusted from the wire). */
static px_xfer_slot_t *stage_owner(const px_xfer_stage_hdr_t *h, int src, const char *what)
{
    if (!px_xfer.pool || h->cookie >= px_xfer.pool_count ||
        px_xfer.pool_owner[h->cookie] != (px_xfer_slot_t *)(uintptr_t)h->token ||
        NULL == px_xfer.pool_owner[h->cookie] || POOL_PROXY == px_xfer.pool_owner[h->cookie]) {
        if (!atomic_load(&px_xfer.peers[src].failed))
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
    if (s->error || s->scheduling)
        stage_check(s); /* (while scheduling: its loop goes on and checks at the end) */
    else if (!s->pend)
        px_xfer_stage_schedule(s); /* a buffer is free again */
}

void px_xfer_am_wack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    size_t dl;
    if (!stage_hdr(d, &h, &dl, "write answer"))
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
    if (!stage_hdr(d, &h, &dl, "read answer"))
        return;
    px_xfer_slot_t *s = stage_owner(&h, d->src_rank, "read answer");
    if (!s || PX_XFER_READ != s->op)
        return;
    if (PX_XFER_ST_OK == h.status) {
        if (h.offset < s->roff || h.offset - s->roff > s->len || h.len > s->len ||
            h.offset - s->roff > s->len - h.len || dl != h.len) {
            h.status = PX_XFER_ST_BOUNDS; /* not what was asked: the request fails */
        } else {
            stage_copy_out(d, s->local->base + s->loff + (h.offset - s->roff), dl);
        }
    }
    stage_reply(s, &h);
}

/* ------------------------------------------------------------ target (proxy) */

static void job_queue(px_xfer_job_t *j)
{
    px_xfer_need_progress();
    j->next = NULL;
    if (px_xfer.jobs_tail)
        px_xfer.jobs_tail->next = j;
    else
        px_xfer.jobs = j;
    px_xfer.jobs_tail = j;
    atomic_fetch_add(&px_xfer.work, 1);
}

/* Check a chunk against the region; returns the status. */
static uint8_t target_check(const px_xfer_stage_hdr_t *h, px_xfer_region_t **out, int peer)
{
    px_xfer_region_t *r = px_xfer_region_find(h->region);
    *out = r;
    if (!r)
        return PX_XFER_ST_NOREGION;
    if (h->offset > r->len || h->len > r->len - h->offset)
        return PX_XFER_ST_BOUNDS;
    px_btl_module_t *m = px_rt.peers[peer].eager_btl;
    if (m && h->len + sizeof *h > m->btl_max_send_size)
        return PX_XFER_ST_BOUNDS;
    return PX_XFER_ST_OK;
}

/* Run a proxy's answer; PX_ERR_TEMP_OUT_OF_RESOURCE when it must wait. */
static long revoked_inflight(int peer, uint64_t id)
{
    long n = 0;
    for (px_xfer_remote_t *rm = px_xfer.remote_list; rm; rm = rm->next)
        if (rm->peer == peer && rm->id == id)
            n += atomic_load(&rm->inflight);
    return n;
}

static int job_run(px_xfer_job_t *j)
{
    if (PX_XFER_AM_RVACK == j->am) {
        /* After every request of ours on the region has ended (1: not yet;
         * the jobs behind it go on meanwhile, they may be what those
         * requests wait for). */
        if (revoked_inflight(j->peer, j->hdr.region) > 0)
            return 1;
        return px_xfer_send(j->peer, PX_XFER_AM_RVACK, &j->hdr, sizeof j->hdr, NULL, 0);
    }
    if (PX_XFER_AM_WACK == j->am)
        return px_xfer_send(j->peer, PX_XFER_AM_WACK, &j->hdr, sizeof j->hdr, NULL, 0);
    px_xfer_region_t *r;
    px_xfer_stage_hdr_t h = j->hdr;
    h.status = target_check(&h, &r, j->peer);
    if (PX_XFER_ST_OK != h.status) {
        h.len = 0;
        return px_xfer_send(j->peer, PX_XFER_AM_RDATA, &h, sizeof h, NULL, 0);
    }
    return px_xfer_send(j->peer, PX_XFER_AM_RDATA, &h, sizeof h, r->base + h.offset, h.len);
}

int px_xfer_stage_jobs(void)
{
    int n = 0;
    px_xfer_job_t **link = &px_xfer.jobs, *prev = NULL;
    while (*link) {
        px_xfer_job_t *j = *link;
        int rc = job_run(j);
        if (rc > 0 && !atomic_load(&px_xfer.peers[j->peer].failed)) {
            prev = j; /* a revocation answer that must wait: skip it */
            link = &j->next;
            continue;
        }
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc && !atomic_load(&px_xfer.peers[j->peer].failed))
            break;
        *link = j->next;
        if (px_xfer.jobs_tail == j)
            px_xfer.jobs_tail = prev;
        atomic_fetch_sub(&px_xfer.work, 1);
        free(j);
        n++;
    }
    return n;
}

/* Answer now, or queue the answer (behind earlier ones, keeping their order). */
static void target_answer(int peer, uint8_t am, const px_xfer_stage_hdr_t *h)
{
    px_xfer_job_t tmp = {.peer = peer, .am = am, .buf = -1, .hdr = *h};
    if (!px_xfer.jobs) {
        int rc = job_run(&tmp);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc && rc <= 0)
            return;
    }
    px_xfer_job_t *j = malloc(sizeof *j);
    if (!j) {
        px_show_error("out of memory queueing a staged answer to rank %d; dropped", peer);
        return;
    }
    *j = tmp;
    job_queue(j);
}

void px_xfer_am_write(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    size_t dl;
    if (!px_xfer.ready || !stage_hdr(d, &h, &dl, "write"))
        return;
    px_xfer_region_t *r;
    h.status = target_check(&h, &r, d->src_rank);
    if (PX_XFER_ST_OK == h.status && dl != h.len)
        h.status = PX_XFER_ST_BOUNDS;
    if (PX_XFER_ST_OK == h.status)
        stage_copy_out(d, r->base + h.offset, dl);
    target_answer(d->src_rank, PX_XFER_AM_WACK, &h);
}

void px_xfer_am_read(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    size_t dl;
    if (!px_xfer.ready || !stage_hdr(d, &h, &dl, "read"))
        return;
    target_answer(d->src_rank, PX_XFER_AM_RDATA, &h);
}

/* ------------------------------------------------------------ revoking */

/* A region of this process that peers may reach with a network key is being
 * freed: a deregistered key makes a connected transport drop the connection
 * (tcp;ofi_rxm shuts it, an RC queue pair goes to error), which loses the
 * pair. So the owner first tells every live peer (REVOKE) and waits for each
 * answer (RVACK): a peer marks its imports of the region revoked (requests
 * then fail with PX_ERR_NOT_FOUND before a byte moves, also for keys it
 * imports later) and answers once no request of its uses the region. */
typedef struct px_xfer_revoke_wait {
    struct px_xfer_revoke_wait *next;
    uint64_t id;
    _Atomic unsigned char got[]; /* [npeers]: answered (or need not) */
} px_xfer_revoke_wait_t;

static px_xfer_revoke_wait_t *revoke_waits; /* lock held */

bool px_xfer_is_revoked(int peer, uint64_t id)
{
    const px_xfer_peer_t *p = &px_xfer.peers[peer];
    for (size_t i = 0; i < p->nrevoked; ++i)
        if (p->revoked[i] == id)
            return true;
    return false;
}

static bool revoke_hdr(const px_btl_receive_descriptor_t *d, px_xfer_stage_hdr_t *h,
                       const char *what)
{
    size_t dl;
    if (!px_xfer.ready || !stage_hdr(d, h, &dl, what))
        return false;
    if (d->src_rank < 0 || d->src_rank >= px_xfer.npeers || d->src_rank == px_rt.rank) {
        px_show_error("a %s names rank %d as its sender (the job has %d); dropped", what,
                      d->src_rank, px_xfer.npeers);
        return false;
    }
    return true;
}

void px_xfer_am_revoke(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    if (!revoke_hdr(d, &h, "region revocation"))
        return;
    int src = d->src_rank;
    for (px_xfer_remote_t *rm = px_xfer.remote_list; rm; rm = rm->next)
        if (rm->peer == src && rm->id == h.region)
            atomic_store_explicit(&rm->revoked, true, memory_order_release);
    px_xfer_peer_t *p = &px_xfer.peers[src];
    if (!px_xfer_is_revoked(src, h.region)) {
        if (p->nrevoked == p->revoked_cap) {
            size_t cap = p->revoked_cap ? 2 * p->revoked_cap : 16;
            uint64_t *n = realloc(p->revoked, cap * sizeof *n);
            if (n) {
                p->revoked = n;
                p->revoked_cap = cap;
            }
        }
        if (p->nrevoked < p->revoked_cap)
            p->revoked[p->nrevoked++] = h.region;
    }
    target_answer(src, PX_XFER_AM_RVACK, &h);
}

void px_xfer_am_rvack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    if (!revoke_hdr(d, &h, "revocation answer"))
        return;
    for (px_xfer_revoke_wait_t *w = revoke_waits; w; w = w->next)
        if ((uint64_t)(uintptr_t)w == h.token && w->id == h.region)
            atomic_store(&w->got[d->src_rank], 1);
}

static double revoke_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void px_xfer_revoke(uint64_t region_id)
{
    int n = px_xfer.npeers;
    px_xfer_revoke_wait_t *w = calloc(1, sizeof *w + (size_t)n);
    unsigned char *sent = calloc(1, (size_t)n ? (size_t)n : 1);
    if (!w || !sent) {
        free(w);
        free(sent);
        return;
    }
    w->id = region_id;
    bool took;
    px_xfer_lock_take(&took);
    w->next = revoke_waits;
    revoke_waits = w;
    px_xfer_lock_drop(took);
    px_xfer_stage_hdr_t h = {.token = (uint64_t)(uintptr_t)w, .region = region_id};
    const double limit = px_rt.wait_timeout > 0 ? px_rt.wait_timeout : 60;
    const double start = revoke_now();
    for (;;) {
        int left = 0;
        px_xfer_lock_take(&took);
        for (int p = 0; p < n; ++p) {
            if (atomic_load(&w->got[p]))
                continue;
            if (p == px_rt.rank || atomic_load(&px_xfer.peers[p].failed)) {
                atomic_store(&w->got[p], 1);
                continue;
            }
            if (!sent[p]) {
                int rc = px_xfer_send(p, PX_XFER_AM_REVOKE, &h, sizeof h, NULL, 0);
                if (PX_SUCCESS == rc)
                    sent[p] = 1;
                else if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc) {
                    atomic_store(&w->got[p], 1); /* it cannot be reached: nothing to wait for */
                    continue;
                }
            }
            left++;
        }
        px_xfer_lock_drop(took);
        if (0 == left)
            break;
        if (revoke_now() - start > limit) {
            px_show_error("px_xfer_free: %d peer(s) did not answer within %g s that they no "
                          "longer use region %llx; it is deregistered anyway (a request of "
                          "theirs on it may break the connection)",
                          left, limit, (unsigned long long)region_id);
            break;
        }
        px_xfer_progress();
    }
    px_xfer_lock_take(&took);
    for (px_xfer_revoke_wait_t **pp = &revoke_waits; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    px_xfer_lock_drop(took);
    free(w);
    free(sent);
}
