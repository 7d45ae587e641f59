/*
 * xfer_batch.c: batches and the path of a request.
 *
 * Submission (any thread, no lock): each request is checked (regions, bounds,
 * the peer) and given its path:
 *  - inline: the best transport for the peer mapped the remote memory (a
 *    region allocated through a same-host transport): the submitting thread
 *    copies at once and the request is final before submit returns;
 *  - rails: one or more transports with put/get (or a mapping) of the best
 *    priority; a request larger than xfer_chunk_size is striped over up to
 *    PX_XFER_MAX_STRIPE of them, each a contiguous range sized by its
 *    bandwidth, moved in chunks, with a count of operations per rail;
 *  - stage: no direct path (xfer_stage.c).
 * Queued requests go to progress as runs of consecutive slots through a
 * lock-free MPSC queue (core/class/mpsc.h). Progress (xfer_work, under the
 * engine's lock, whichever thread holds it) starts them, retries those the
 * transports had no room for, and completes them from the transports'
 * callbacks: the status is stored with release order, then the batch's
 * pending count drops, after which the batch may be freed.
 *
 * A request whose peer fails while a transport still holds one of its
 * operations is final at once (the error) but stays held: its regions keep
 * their count and its batch is freed by the last callback if the application
 * freed it meanwhile (never before: a transport may still name it).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "core/util/progress.h"
#include "runtime/xfer/xfer.h"

static _Thread_local bool tl_progressing;

static bool batch_ok(const px_xfer_batch_t *b)
{
    return b && PX_XFER_BATCH_MAGIC == b->magic;
}

static bool region_ok(const px_xfer_region_t *r)
{
    return r && PX_XFER_REGION_MAGIC == r->magic;
}

static bool remote_ok(const px_xfer_remote_t *r)
{
    return r && PX_XFER_REMOTE_MAGIC == r->magic;
}

static PX_COLD int misuse(int rc, const char *fn, const char *fmt, ...) PX_PRINTF(3, 4);
static int misuse(int rc, const char *fn, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    px_xfer_fail(rc, "%s: %s", fn, msg);
    px_show_error("%s: %s", fn, msg);
    return rc;
}

/* ------------------------------------------------------------ progress */

/* One round of progress if no other thread is progressing: -1 when one is. */
static int progress_try(void)
{
    if (tl_progressing)
        return 0; /* called from inside progress (a callback): the outer round goes on */
    bool took;
    if (!px_xfer_lock_try(&took))
        return -1;
    tl_progressing = true;
    int n = px_progress_engine(); /* the transports, then px_xfer_progress_cb */
    if (!atomic_load_explicit(&px_xfer.cb_registered, memory_order_relaxed))
        n += px_xfer_work();
    tl_progressing = false;
    px_xfer_lock_drop(took);
    return n;
}

int px_xfer_progress(void)
{
    if (!px_xfer.ready)
        return 0;
    int n = progress_try();
    return n > 0 ? n : 0;
}

int px_xfer_progress_cb(void *ctx)
{
    (void)ctx;
    if (PX_LIKELY(0 == atomic_load_explicit(&px_xfer.work, memory_order_relaxed)))
        return 0;
    bool took;
    if (!px_xfer_lock_try(&took))
        return 0;
    int n = px_xfer_work();
    px_xfer_lock_drop(took);
    return n;
}

/* Progress until done(arg), or `timeout` seconds (< 0: no limit). */
static int wait_loop(bool (*done)(const void *), const void *arg, double timeout)
{
    double deadline = timeout >= 0 ? px_wtime() + timeout : 0;
    unsigned idle = 0;
    for (unsigned it = 0;; ++it) {
        if (done(arg))
            return PX_SUCCESS;
        int ev = progress_try();
        if (ev < 0) { /* another thread progresses: let it run */
            if (++idle >= 64) {
                idle = 0;
                sched_yield();
            } else {
                __builtin_ia32_pause();
            }
        }
        if (timeout >= 0 && 0 == (it & 63) && px_wtime() >= deadline)
            return done(arg) ? PX_SUCCESS : PX_ERR_TIMEOUT;
    }
}

/* ------------------------------------------------------------ batches */

int px_xfer_batch_alloc(size_t capacity, px_xfer_batch_t **batch)
{
    if (!batch || 0 == capacity || capacity > (1u << 20))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_alloc",
                      "capacity %zu, batch %p: expected 1 to 1048576 requests and a place for "
                      "the batch",
                      capacity, (void *)batch);
    size_t bytes = sizeof(px_xfer_batch_t) + capacity * sizeof(px_xfer_slot_t);
    px_xfer_batch_t *b = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!b)
        return misuse(PX_ERR_OUT_OF_RESOURCE, "px_xfer_batch_alloc",
                      "cannot allocate a batch of %zu requests (%zu bytes)", capacity, bytes);
    b->magic = PX_XFER_BATCH_MAGIC;
    b->cap = capacity;
    b->used = 0;
    atomic_init(&b->pending, 0);
    atomic_init(&b->holds, 0);
    atomic_init(&b->released, 0);
    atomic_init(&b->claimed, 0);
    *batch = b;
    return PX_SUCCESS;
}

size_t px_xfer_batch_count(const px_xfer_batch_t *batch)
{
    return batch_ok(batch) ? batch->used : 0;
}

size_t px_xfer_batch_pending(const px_xfer_batch_t *batch)
{
    return batch_ok(batch)
               ? atomic_load_explicit(&((px_xfer_batch_t *)batch)->pending, memory_order_acquire)
               : 0;
}

static void batch_clear(px_xfer_batch_t *b)
{
    for (size_t i = 0; i < b->used; ++i) {
        free(b->slots[i].why);
        b->slots[i].why = NULL;
    }
    b->used = 0;
}

static void batch_free_claimed(px_xfer_batch_t *b)
{
    if (0 == atomic_exchange(&b->claimed, 1))
        free(b);
}

int px_xfer_batch_reset(px_xfer_batch_t *batch)
{
    if (!batch_ok(batch))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_reset", "%p is not a batch", (void *)batch);
    size_t n = px_xfer_batch_pending(batch);
    int h = atomic_load_explicit(&batch->holds, memory_order_acquire);
    if (n || h)
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_reset",
                      "%zu request(s) are still in flight%s: wait for the batch first",
                      n ? n : (size_t)h,
                      n ? "" : " (a transport still holds them after their peer failed)");
    batch_clear(batch);
    return PX_SUCCESS;
}

int px_xfer_batch_free(px_xfer_batch_t **batch)
{
    if (!batch || !batch_ok(*batch))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_free",
                      "%p is not a batch (freed already, or never one)",
                      batch ? (void *)*batch : NULL);
    px_xfer_batch_t *b = *batch;
    size_t n = px_xfer_batch_pending(b);
    if (n)
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_free",
                      "%zu request(s) are still in flight: wait for the batch first", n);
    batch_clear(b);
    b->magic = 0;
    *batch = NULL;
    if (0 == atomic_load_explicit(&b->holds, memory_order_acquire)) {
        free(b);
        return PX_SUCCESS;
    }
    /* A transport still holds requests of a failed peer: the last callback frees it. */
    atomic_store(&b->released, 1);
    if (0 == atomic_load(&b->holds))
        batch_free_claimed(b);
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ submission */

static const char *host(int rank)
{
    return px_xfer_host(rank);
}

/* The reason of a failure: "rank R (host H), transport T: what". */
static char *reason(const px_xfer_slot_t *s, const char *fmt, va_list ap)
{
    char what[400];
    vsnprintf(what, sizeof what, fmt, ap);
    return px_asprintf("rank %d (host %s), transport %s: %s", s->peer, host(s->peer),
                       s->tlabel && *s->tlabel ? s->tlabel : "(none chosen)", what);
}

/* Fail a request that never left the submitting thread. */
static PX_COLD bool fail_now(px_xfer_slot_t *s, int rc, const char *fmt, ...) PX_PRINTF(3, 4);
static bool fail_now(px_xfer_slot_t *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s->why = reason(s, fmt, ap);
    va_end(ap);
    px_xfer_fail(rc, "%s", s->why ? s->why : "");
    atomic_store_explicit(&s->state, rc, memory_order_release);
    return false;
}

/* Record the first error of a request in progress (a failed peer's replaces
 * a transport's). */
static void slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *fmt, ...)
    PX_PRINTF(4, 5);
static void slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *fmt, ...)
{
    if (s->error && !replace)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *why = reason(s, fmt, ap);
    va_end(ap);
    free(s->why);
    s->why = why;
    s->error = rc;
}

void px_xfer_slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *what)
{
    slot_error(s, rc, replace, "%s", what);
}

/* Pick the path of a checked request. Returns PX_SUCCESS, or an error (with
 * the request failed) when the transport it names has no path. */
static int choose(px_xfer_slot_t *s, const char *tname)
{
    const px_xfer_remote_t *rm = s->remote;
    const bool write = PX_XFER_WRITE == s->op;
    if (tname && 0 == strcmp(tname, "stage"))
        goto stage;
    if (PX_LIKELY(!tname && rm->fast)) {
        s->path = PX_XFER_PATH_INLINE;
        s->tlabel = px_xfer.mods[rm->rails[0].mod].label_map;
        return PX_SUCCESS;
    }
    int cand[PX_XFER_MAX_RAILS], nc = 0;
    long best = 0;
    unsigned seen = 0;
    for (int i = 0; i < rm->nrails; ++i) {
        const px_xfer_rail_t *rl = &rm->rails[i];
        const px_xfer_mod_t *m = &px_xfer.mods[rl->mod];
        if (tname && 0 != strcmp(m->name, tname))
            continue;
        if (seen & (1u << rl->mod))
            continue; /* one rail per module: its best (the mapping first) */
        if (PX_XFER_RAIL_RDMA == rl->kind &&
            (!(write ? m->put : m->get) || (m->reg && !s->local->reg[rl->mod])))
            continue;
        if (nc && m->priority < best)
            break;
        seen |= 1u << rl->mod;
        best = m->priority;
        cand[nc++] = i;
    }
    if (0 == nc) {
        if (tname) {
            s->tlabel = "";
            return fail_now(s, PX_ERR_NOT_AVAILABLE,
                            "the request names transport \"%s\", which has no direct path to "
                            "this region (%d path(s) in its key reach this process; \"stage\" "
                            "names the staged path)",
                            tname, rm->nrails),
                   PX_ERR_NOT_AVAILABLE;
        }
        goto stage;
    }
    if (nc > PX_XFER_MAX_STRIPE)
        nc = PX_XFER_MAX_STRIPE;
    if (1 == nc || s->len <= px_xfer.chunk_size) {
        int pick = cand[0];
        for (int k = 1; k < nc; ++k) /* the heaviest rail takes a small request */
            if (px_xfer.mods[rm->rails[cand[k]].mod].btl->btl_bandwidth >
                px_xfer.mods[rm->rails[pick].mod].btl->btl_bandwidth)
                pick = cand[k];
        const px_xfer_rail_t *rl = &rm->rails[pick];
        const px_xfer_mod_t *m = &px_xfer.mods[rl->mod];
        if (PX_XFER_RAIL_MAP == rl->kind) {
            s->path = PX_XFER_PATH_INLINE;
            s->tlabel = m->label_map;
            return PX_SUCCESS;
        }
        /* xfer_stage_below: small requests without a mapping are served by
         * the target's CPU (a round trip of messages beats a system call or
         * a put/get setup, when the target progresses). */
        if (!tname && s->len < px_xfer.stage_below && s->peer != px_rt.rank)
            goto stage;
        s->path = PX_XFER_PATH_RAILS;
        s->nrails = 1;
        s->rail[0] = (uint8_t)pick;
        s->rcur[0] = 0;
        s->rend[0] = s->len;
        s->tlabel = write ? m->label_put : m->label_get;
        return PX_SUCCESS;
    }
    /* Striped: contiguous ranges in whole chunks, by bandwidth. */
    double w[PX_XFER_MAX_STRIPE], wsum = 0;
    for (int k = 0; k < nc; ++k) {
        w[k] = (double)px_xfer.mods[rm->rails[cand[k]].mod].btl->btl_bandwidth;
        wsum += w[k];
    }
    size_t chunks = (s->len + px_xfer.chunk_size - 1) / px_xfer.chunk_size, given = 0;
    size_t pos = 0, lpos = 0;
    s->path = PX_XFER_PATH_RAILS;
    s->nrails = 0;
    for (int k = 0; k < nc && pos < s->len; ++k) {
        size_t c = k + 1 == nc ? chunks - given
                               : (size_t)((double)chunks * (wsum > 0 ? w[k] / wsum : 1.0 / nc));
        if (c > chunks - given)
            c = chunks - given;
        given += c;
        size_t end = k + 1 == nc ? s->len : pos + c * px_xfer.chunk_size;
        if (end > s->len)
            end = s->len;
        if (end == pos)
            continue;
        int r = s->nrails++;
        s->rail[r] = (uint8_t)cand[k];
        s->rcur[r] = pos;
        s->rend[r] = end;
        pos = end;
        const px_xfer_rail_t *rl = &rm->rails[cand[k]];
        const px_xfer_mod_t *m = &px_xfer.mods[rl->mod];
        const char *lab =
            PX_XFER_RAIL_MAP == rl->kind ? m->label_map : (write ? m->label_put : m->label_get);
        int n = snprintf(s->tbuf + lpos, sizeof s->tbuf - lpos, "%s%s", lpos ? "+" : "", lab);
        if (n > 0)
            lpos = lpos + (size_t)n < sizeof s->tbuf ? lpos + (size_t)n : sizeof s->tbuf - 1;
    }
    s->tlabel = s->tbuf;
    atomic_fetch_add_explicit(&px_xfer.n_striped, 1, memory_order_relaxed);
    return PX_SUCCESS;
stage : {
    int sm = px_xfer.peers[s->peer].stage_mod;
    s->path = PX_XFER_PATH_STAGE;
    s->tlabel = sm >= 0 ? px_xfer.mods[sm].label_stage : "stage";
    return PX_SUCCESS;
}
}

static void verbose_done(const px_xfer_slot_t *s, int err);
static void start(px_xfer_slot_t *s);

/* Check request `r` into slot `s` and run or route it; true when it goes to
 * progress. */
static bool prepare(px_xfer_batch_t *b, px_xfer_slot_t *s, const px_xfer_request_t *r)
{
    s->batch = b;
    s->why = NULL;
    s->tlabel = "";
    s->started = s->orphan = s->scheduling = s->pend = s->held = false;
    s->error = 0;
    s->outstanding = 0;
    s->done = 0;
    s->nrails = 0;
    s->scur = 0;
    s->peer = -1;
    s->op = (uint8_t)r->op;
    s->local = r->local;
    s->remote = r->remote;
    s->loff = r->local_offset;
    s->roff = r->remote_offset;
    s->len = r->length;
    if (PX_UNLIKELY(r->op != PX_XFER_READ && r->op != PX_XFER_WRITE))
        return fail_now(s, PX_ERR_BAD_PARAM,
                        "op %d is neither PX_XFER_READ (0) nor "
                        "PX_XFER_WRITE (1)",
                        r->op);
    if (PX_UNLIKELY(!region_ok(r->local)))
        return fail_now(s, PX_ERR_BAD_PARAM,
                        "the local region %p is not a region (freed, or never one)",
                        (void *)r->local);
    if (PX_UNLIKELY(!remote_ok(r->remote)))
        return fail_now(s, PX_ERR_BAD_PARAM,
                        "the remote region %p is not an imported region (released, or never "
                        "one)",
                        (void *)r->remote);
    const px_xfer_region_t *lr = r->local;
    const px_xfer_remote_t *rm = r->remote;
    s->peer = rm->peer;
    if (PX_UNLIKELY(s->loff > lr->len || s->len > lr->len - s->loff))
        return fail_now(s, PX_ERR_VALUE_OUT_OF_BOUNDS,
                        "out of bounds: local offset %zu + length %zu is past the end of the "
                        "local region (%zu bytes); refused here, nothing was sent",
                        s->loff, s->len, lr->len);
    if (PX_UNLIKELY(s->roff > rm->len || s->len > rm->len - s->roff))
        return fail_now(s, PX_ERR_VALUE_OUT_OF_BOUNDS,
                        "out of bounds: remote offset %zu + length %zu is past the end of the "
                        "peer's region (%zu bytes); refused here, nothing was sent",
                        s->roff, s->len, rm->len);
    px_xfer_peer_t *p = &px_xfer.peers[s->peer];
    int failed = atomic_load_explicit(&p->failed, memory_order_acquire);
    if (PX_UNLIKELY(failed))
        return fail_now(s, failed, "the peer failed: %s", p->why ? p->why : "?");
    if (PX_UNLIKELY(0 == s->len)) {
        s->tlabel = "none"; /* nothing to move: no path taken, and "" means failed */
        atomic_store_explicit(&s->state, PX_SUCCESS, memory_order_release);
        return false;
    }
    if (PX_SUCCESS != choose(s, r->transport))
        return false;
    if (PX_XFER_PATH_INLINE == s->path) {
        if (PX_UNLIKELY(px_xfer_remote_freed(rm)))
            return fail_now(s, PX_ERR_NOT_FOUND,
                            "the region was deregistered by its owner (px_xfer_free)");
        if (PX_XFER_WRITE == s->op)
            memcpy(rm->mapped + s->roff, lr->base + s->loff, s->len);
        else
            memcpy(lr->base + s->loff, rm->mapped + s->roff, s->len);
        atomic_store_explicit(&s->state, PX_SUCCESS, memory_order_release);
        if (PX_UNLIKELY(px_xfer.verbose >= 10))
            verbose_done(s, PX_SUCCESS);
        return false;
    }
    s->counted = false;
    atomic_store_explicit(&s->state, PX_XFER_PENDING, memory_order_release);
    return true;
}

/* A request that outlives its submission is counted: on its regions (a free
 * or release is refused meanwhile), its peer (flush), the engine (progress
 * has work) and its batch (wait). One started and completed inside submit,
 * under the lock, is never seen by anyone else and is not. */
static void count_slot(px_xfer_slot_t *s)
{
    atomic_fetch_add_explicit(&s->local->inflight, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->remote->inflight, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&px_xfer.peers[s->peer].inflight, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&px_xfer.work, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->batch->pending, 1, memory_order_relaxed);
    s->counted = true;
}

static void enqueue(px_xfer_slot_t *first, uint32_t n)
{
    first->q.kind = PX_XFER_Q_SLOT;
    first->qcount = n;
    px_mpsc_push(&px_xfer.queue, &first->q.node);
}

int px_xfer_batch_submit(px_xfer_batch_t *batch, const px_xfer_request_t *requests, size_t count,
                         size_t *first)
{
    if (PX_UNLIKELY(!px_xfer.ready))
        return misuse(PX_ERR_NOT_INITIALIZED, "px_xfer_batch_submit",
                      "Plexus is not initialised (px_init)");
    if (PX_UNLIKELY(!batch_ok(batch) || (count && !requests)))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_submit",
                      "batch %p, requests %p: expected a batch and %zu requests", (void *)batch,
                      (const void *)requests, count);
    if (PX_UNLIKELY(count > batch->cap - batch->used))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_submit",
                      "%zu requests do not fit: the batch holds %zu, %zu are used (reset it or "
                      "allocate a larger one)",
                      count, batch->cap, batch->used);
    size_t at = batch->used;
    if (first)
        *first = at;
    batch->used += count;
    /* Queued requests start here, in this thread, when it can take the lock
     * and nothing is queued before them (a synchronous transport, CMA or
     * self, then completes them before submit returns); else they go to the
     * queue as runs of consecutive slots, for whoever progresses. */
    enum { UNDECIDED, DIRECT, QUEUED } mode = UNDECIDED;
    bool took = false;
    px_xfer_slot_t *run = NULL;
    uint32_t runlen = 0;
    for (size_t i = 0; i < count; ++i) {
        px_xfer_slot_t *s = &batch->slots[at + i];
        if (!prepare(batch, s, &requests[i]))
            continue;
        if (UNDECIDED == mode) {
            px_xfer_need_progress();
            mode = QUEUED;
            if (!tl_progressing && px_xfer_lock_try(&took)) {
                if (!px_xfer.in_work && px_mpsc_empty(&px_xfer.queue)) {
                    mode = DIRECT;
                    px_xfer.in_work = true;
                    tl_progressing = true;
                } else {
                    px_xfer_lock_drop(took);
                    took = false;
                }
            }
        }
        if (DIRECT == mode) {
            start(s);
            /* Not final yet (an asynchronous transport, or no room): from
             * here on it is like a queued one. Its completion needs the lock,
             * which this thread holds, so it cannot come before this. */
            if (PX_XFER_PENDING == atomic_load_explicit(&s->state, memory_order_relaxed) &&
                !s->counted)
                count_slot(s);
            continue;
        }
        count_slot(s);
        if (run && run + runlen == s && runlen < UINT32_MAX) {
            runlen++;
            continue;
        }
        if (run)
            enqueue(run, runlen);
        run = s;
        runlen = 1;
    }
    if (DIRECT == mode) {
        px_xfer.in_work = false;
        tl_progressing = false;
        px_xfer_lock_drop(took);
    }
    if (run) {
        enqueue(run, runlen);
        progress_try();
    }
    return PX_SUCCESS;
}

int px_xfer_batch_test(px_xfer_batch_t *batch, size_t index, px_xfer_status_t *status)
{
    if (PX_UNLIKELY(!batch_ok(batch) || index >= batch->used))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_test",
                      "batch %p, index %zu: expected a batch and the index of a request "
                      "submitted to it",
                      (void *)batch, index);
    px_xfer_slot_t *s = &batch->slots[index];
    int e = atomic_load_explicit(&s->state, memory_order_acquire);
    if (PX_XFER_PENDING == e && px_xfer.ready) {
        progress_try();
        e = atomic_load_explicit(&s->state, memory_order_acquire);
    }
    if (status) {
        status->error = e;
        status->peer = s->peer;
        status->transport = s->tlabel ? s->tlabel : "";
        status->reason = e < 0 ? s->why : NULL;
    }
    return e;
}

static bool batch_done(const void *arg)
{
    return 0 == px_xfer_batch_pending(arg);
}

int px_xfer_batch_wait(px_xfer_batch_t *batch, double timeout)
{
    if (PX_UNLIKELY(!batch_ok(batch)))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_wait", "%p is not a batch", (void *)batch);
    if (px_xfer_batch_pending(batch)) {
        if (!px_xfer.ready)
            return misuse(PX_ERR_NOT_INITIALIZED, "px_xfer_batch_wait",
                          "Plexus is not initialised (px_init)");
        int rc = wait_loop(batch_done, batch, timeout);
        if (rc != PX_SUCCESS)
            return px_xfer_fail(rc,
                                "px_xfer_batch_wait: %zu request(s) still in flight after "
                                "%g s",
                                px_xfer_batch_pending(batch), timeout);
    }
    for (size_t i = 0; i < batch->used; ++i) {
        int e = atomic_load_explicit(&batch->slots[i].state, memory_order_acquire);
        if (e < 0) {
            px_xfer_fail(e, "%s", batch->slots[i].why ? batch->slots[i].why : px_strerror(e));
            return e;
        }
    }
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ single requests */

static double wait_limit(void)
{
    return px_rt.wait_timeout > 0 ? px_rt.wait_timeout : -1;
}

static PX_NOINLINE int single_slow(int op, px_xfer_region_t *local, size_t loff,
                                   px_xfer_remote_t *remote, size_t roff, size_t length)
{
    if (!px_xfer.ready)
        return misuse(PX_ERR_NOT_INITIALIZED, op ? "px_xfer_write" : "px_xfer_read",
                      "Plexus is not initialised (px_init)");
    px_xfer_batch_t *b = px_xfer_tl_batch();
    if (!b)
        return PX_ERR_OUT_OF_RESOURCE;
    if (px_xfer_batch_pending(b) || PX_SUCCESS != px_xfer_batch_reset(b))
        return px_xfer_fail(PX_ERR_BAD_PARAM, "%s called from inside itself (a callback)",
                            op ? "px_xfer_write" : "px_xfer_read");
    px_xfer_request_t r = {op, local, loff, remote, roff, length, NULL};
    int rc = px_xfer_batch_submit(b, &r, 1, NULL);
    if (rc != PX_SUCCESS)
        return rc;
    return px_xfer_batch_wait(b, wait_limit());
}

/* The fast path: a mapped peer region, copied here. */
static inline bool single_inline(int op, px_xfer_region_t *local, size_t loff,
                                 px_xfer_remote_t *remote, size_t roff, size_t length)
{
    if (PX_UNLIKELY(!px_xfer.ready || !region_ok(local) || !remote_ok(remote) || !remote->fast ||
                    loff > local->len || length > local->len - loff || roff > remote->len ||
                    length > remote->len - roff))
        return false;
    if (PX_UNLIKELY(
            atomic_load_explicit(&px_xfer.peers[remote->peer].failed, memory_order_relaxed) ||
            px_xfer_remote_freed(remote) || px_xfer.verbose >= 10))
        return false;
    if (PX_XFER_WRITE == op)
        memcpy(remote->fast + roff, local->base + loff, length);
    else
        memcpy(local->base + loff, remote->fast + roff, length);
    return true;
}

int px_xfer_write(px_xfer_region_t *local, size_t local_offset, px_xfer_remote_t *remote,
                  size_t remote_offset, size_t length)
{
    if (PX_LIKELY(single_inline(PX_XFER_WRITE, local, local_offset, remote, remote_offset, length)))
        return PX_SUCCESS;
    return single_slow(PX_XFER_WRITE, local, local_offset, remote, remote_offset, length);
}

int px_xfer_read(px_xfer_region_t *local, size_t local_offset, px_xfer_remote_t *remote,
                 size_t remote_offset, size_t length)
{
    if (PX_LIKELY(single_inline(PX_XFER_READ, local, local_offset, remote, remote_offset, length)))
        return PX_SUCCESS;
    return single_slow(PX_XFER_READ, local, local_offset, remote, remote_offset, length);
}

/* ------------------------------------------------------------ completion */

static void verbose_done(const px_xfer_slot_t *s, int err)
{
    char rails[256] = "";
    size_t pos = 0;
    if (PX_XFER_PATH_RAILS == s->path)
        for (int k = 0; k < s->nrails && pos < sizeof rails; ++k) {
            const px_xfer_rail_t *rl = &s->remote->rails[s->rail[k]];
            pos += (size_t)snprintf(rails + pos, sizeof rails - pos, "%s%s#%u %zu B",
                                    k ? ", " : "; rails: ", px_xfer.mods[rl->mod].name,
                                    px_xfer.mods[rl->mod].comp_index, s->rbytes[k]);
        }
    px_output(px_xfer.output, "%s of %zu B %s rank %d (region %llx +%zu) via %s%s%s: %s",
              PX_XFER_WRITE == s->op ? "write" : "read", s->len,
              PX_XFER_WRITE == s->op ? "to" : "from", s->peer, (unsigned long long)s->remote->id,
              s->roff, s->tlabel,
              PX_XFER_PATH_INLINE == s->path ? " (one memcpy by the submitting thread)" : "", rails,
              err ? (s->why ? s->why : px_strerror(err)) : "done");
}

static void release_refs(px_xfer_slot_t *s)
{
    atomic_fetch_sub_explicit(&s->local->inflight, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->remote->inflight, 1, memory_order_relaxed);
}

static void alist_remove(px_xfer_peer_t *p, px_xfer_slot_t *s)
{
    if (s->aprev)
        s->aprev->anext = s->anext;
    else
        p->alist = s->anext;
    if (s->anext)
        s->anext->aprev = s->aprev;
    s->anext = s->aprev = NULL;
}

void px_xfer_slot_complete(px_xfer_slot_t *s, int error, char *why)
{
    px_xfer_peer_t *p = &px_xfer.peers[s->peer];
    if (why && why != s->why) {
        free(s->why);
        s->why = why;
    }
    if (s->started) {
        alist_remove(p, s);
        p->active--;
        s->started = false;
    }
    bool hold = s->outstanding > 0; /* a transport still names it */
    if (PX_UNLIKELY(hold && !s->counted))
        count_slot(s); /* ends inside submit but stays held: counted like the others */
    px_xfer_batch_t *b = s->batch;
    const bool counted = s->counted;
    if (counted) {
        if (!hold)
            release_refs(s);
        atomic_fetch_sub_explicit(&p->inflight, 1, memory_order_release);
        atomic_fetch_sub_explicit(&px_xfer.work, 1, memory_order_relaxed);
    }
    if (PX_UNLIKELY(px_xfer.verbose >= 10))
        verbose_done(s, error);
    if (hold) {
        s->orphan = true;
        atomic_fetch_add_explicit(&b->holds, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&s->state, error, memory_order_release);
    /* Last touch of the slot (unless held): the batch may be freed now. */
    if (counted)
        atomic_fetch_sub_explicit(&b->pending, 1, memory_order_release);
    if (0 == p->active && p->notes)
        px_xfer_notes_try((int)(p - px_xfer.peers));
}

/* The last operation of a request completed after its peer failed. */
static void orphan_done(px_xfer_slot_t *s)
{
    release_refs(s);
    px_xfer_batch_t *b = s->batch;
    if (1 == atomic_fetch_sub_explicit(&b->holds, 1, memory_order_acq_rel) &&
        atomic_load(&b->released))
        batch_free_claimed(b);
}

/* ------------------------------------------------------------ rails */

void px_xfer_pend_add(px_xfer_slot_t *s)
{
    if (s->pend)
        return;
    s->pend = true;
    s->pnext = NULL;
    if (px_xfer.pending_tail)
        px_xfer.pending_tail->pnext = s;
    else
        px_xfer.pending = s;
    px_xfer.pending_tail = s;
}

static void finish(px_xfer_slot_t *s)
{
    px_xfer_slot_complete(s, s->error, NULL);
}

static void rails_check(px_xfer_slot_t *s)
{
    if (s->scheduling || s->pend || s->orphan)
        return;
    if (s->outstanding) {
        if (s->error && atomic_load(&px_xfer.peers[s->peer].failed))
            finish(s); /* final now; the transport's callbacks release it */
        return;
    }
    if (s->error || s->done >= s->len)
        finish(s);
}

static void rdma_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                      px_btl_registration_handle_t *lh, void *context, void *cbdata, int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    px_xfer_slot_t *s = context;
    uintptr_t cd = (uintptr_t)cbdata;
    int k = (int)(cd >> 56);
    size_t c = cd & ((1ULL << 56) - 1);
    s->outstanding--;
    s->rops[k]--;
    if (PX_UNLIKELY(s->orphan)) {
        if (0 == s->outstanding)
            orphan_done(s);
        return;
    }
    if (PX_UNLIKELY(status != PX_SUCCESS)) {
        slot_error(s, status, false,
                   "the %s of %zu bytes failed (%s); the remote region may have been freed by "
                   "its owner, or the peer failed",
                   PX_XFER_WRITE == s->op ? "put" : "get", c, px_strerror(status));
    } else {
        s->rbytes[k] += c;
        s->done += c;
    }
    rails_check(s);
}

/* Hand the rest of every rail's range to its transport, in chunks. */
static void rails_schedule(px_xfer_slot_t *s)
{
    const bool write = PX_XFER_WRITE == s->op;
    px_xfer_remote_t *rm = s->remote;
    s->scheduling = true;
    for (int k = 0; k < s->nrails && !s->error; ++k) {
        const px_xfer_rail_t *rl = &rm->rails[s->rail[k]];
        px_btl_module_t *btl = px_xfer.mods[rl->mod].btl;
        size_t limit = write ? btl->btl_put_limit : btl->btl_get_limit;
        /* Striped: chunks of xfer_chunk_size; one rail: as large as the
         * module takes (one system call for CMA, one work request for RDMA). */
        size_t chunk = s->nrails > 1 ? px_xfer.chunk_size : SIZE_MAX;
        if (limit && chunk > limit)
            chunk = limit;
        while (s->rcur[k] < s->rend[k] && !s->error) {
            size_t off = s->rcur[k], c = s->rend[k] - off;
            if (c > chunk)
                c = chunk;
            char *lp = s->local->base + s->loff + off;
            if (PX_XFER_RAIL_MAP == rl->kind) {
                if (px_xfer_remote_freed(rm)) {
                    slot_error(s, PX_ERR_NOT_FOUND, false,
                               "the region was deregistered by its owner (px_xfer_free)");
                    break;
                }
                char *rp = rm->mapped + s->roff + off;
                memcpy(write ? rp : lp, write ? lp : rp, c);
                s->rcur[k] += c;
                s->rbytes[k] += c;
                s->done += c;
                continue;
            }
            if (PX_UNLIKELY(px_xfer_remote_freed(rm))) {
                slot_error(s, PX_ERR_NOT_FOUND, false,
                           "the region was deregistered by its owner (px_xfer_free)");
                break;
            }
            s->rcur[k] += c;
            s->outstanding++;
            s->rops[k]++;
            int rc = (write ? btl->btl_put : btl->btl_get)(
                btl, rl->ep, lp, rm->addr + s->roff + off, s->local->reg[rl->mod],
                rl->hsize ? (px_btl_registration_handle_t *)rl->handle : NULL, c, 0,
                PX_BTL_NO_ORDER, rdma_done, s, (void *)(((uintptr_t)k << 56) | c));
            if (PX_LIKELY(PX_SUCCESS == rc))
                continue;
            s->rcur[k] -= c;
            s->outstanding--;
            s->rops[k]--;
            if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
                px_xfer_pend_add(s);
                goto out;
            }
            int failed = atomic_load(&px_xfer.peers[s->peer].failed);
            slot_error(s, failed ? failed : rc, failed != 0,
                       "the transport refused the %s of %zu bytes: %s", write ? "put" : "get", c,
                       failed ? px_xfer.peers[s->peer].why : px_strerror(rc));
        }
    }
out:
    s->scheduling = false;
    rails_check(s);
}

/* ------------------------------------------------------------ progress */

static void start(px_xfer_slot_t *s)
{
    px_xfer_peer_t *p = &px_xfer.peers[s->peer];
    int failed = atomic_load_explicit(&p->failed, memory_order_acquire);
    if (PX_UNLIKELY(failed)) {
        slot_error(s, failed, true, "the peer failed: %s", p->why ? p->why : "?");
        px_xfer_slot_complete(s, failed, NULL);
        return;
    }
    if (PX_UNLIKELY(p->notes != NULL)) { /* behind a notification still waiting */
        s->held = true;
        s->pnext = NULL;
        if (p->held_tail)
            p->held_tail->pnext = s;
        else
            p->held = s;
        p->held_tail = s;
        return;
    }
    s->started = true;
    s->aprev = NULL;
    s->anext = p->alist;
    if (p->alist)
        p->alist->aprev = s;
    p->alist = s;
    p->active++;
    if (PX_XFER_PATH_RAILS == s->path) {
        for (int k = 0; k < s->nrails; ++k)
            s->rops[k] = 0, s->rbytes[k] = 0;
        rails_schedule(s);
    } else {
        px_xfer_stage_start(s);
    }
}

static void resume(px_xfer_slot_t *s)
{
    if (PX_XFER_PATH_RAILS == s->path)
        rails_schedule(s);
    else
        px_xfer_stage_schedule(s);
}

static void note_arrive(px_xfer_note_t *n)
{
    px_xfer_peer_t *p = &px_xfer.peers[n->peer];
    if (atomic_load(&p->failed)) {
        atomic_fetch_sub(&px_xfer.work, 1);
        free(n);
        return;
    }
    n->next = NULL;
    if (p->notes_tail)
        p->notes_tail->next = n;
    else
        p->notes = n;
    p->notes_tail = n;
    px_xfer.notes_waiting++;
    px_xfer_notes_try(n->peer);
}

typedef struct {
    uint32_t len;
    uint32_t pad;
} px_xfer_note_hdr_t;

void px_xfer_notes_try(int peer)
{
    px_xfer_peer_t *p = &px_xfer.peers[peer];
    while (p->notes && 0 == p->active) {
        px_xfer_note_t *n = p->notes;
        px_xfer_note_hdr_t h = {(uint32_t)n->len, 0};
        int rc = px_xfer_send(peer, PX_XFER_AM_NOTIFY, &h, sizeof h, n->data, n->len);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc)
            return; /* retried from progress */
        if (rc != PX_SUCCESS)
            PX_OUTPUT_VERBOSE(1, px_xfer.output, "a notification to rank %d was dropped: %s", peer,
                              px_strerror(rc));
        p->notes = n->next;
        if (!p->notes)
            p->notes_tail = NULL;
        px_xfer.notes_waiting--;
        atomic_fetch_sub(&px_xfer.work, 1);
        free(n);
    }
    if (!p->notes && p->held) {
        px_xfer_slot_t *list = p->held;
        p->held = p->held_tail = NULL;
        while (list) {
            px_xfer_slot_t *s = list;
            list = s->pnext;
            s->held = false;
            start(s);
        }
    }
}

int px_xfer_work(void)
{
    if (px_xfer.in_work)
        return 0;
    px_xfer.in_work = true;
    int n = 0;
    px_mpsc_node_t *node;
    while ((node = px_mpsc_take_all(&px_xfer.queue)) != NULL) {
        while (node) {
            px_mpsc_node_t *next = node->next;
            px_xfer_qnode_t *q = (px_xfer_qnode_t *)node;
            if (PX_XFER_Q_SLOT == q->kind) {
                px_xfer_slot_t *s = (px_xfer_slot_t *)q;
                uint32_t cnt = s->qcount;
                for (uint32_t k = 0; k < cnt; ++k)
                    start(s + k);
                n += (int)cnt;
            } else {
                note_arrive((px_xfer_note_t *)q);
                n++;
            }
            node = next;
        }
    }
    if (px_xfer.pending) {
        px_xfer_slot_t *list = px_xfer.pending;
        px_xfer.pending = px_xfer.pending_tail = NULL;
        while (list) {
            px_xfer_slot_t *s = list;
            list = s->pnext;
            s->pend = false;
            resume(s);
            n++;
        }
    }
    if (px_xfer.notes_waiting)
        for (int r = 0; r < px_xfer.npeers; ++r)
            if (px_xfer.peers[r].notes)
                px_xfer_notes_try(r);
    n += px_xfer_stage_jobs();
    px_xfer.in_work = false;
    return n;
}

/* ------------------------------------------------------------ failures */

void px_xfer_batch_peer_failed(int rank)
{
    px_xfer_peer_t *p = &px_xfer.peers[rank];
    int failed = atomic_load(&p->failed);
    /* Out of the pending list first. */
    px_xfer_slot_t *keep = NULL, *keep_tail = NULL, *list = px_xfer.pending;
    px_xfer.pending = px_xfer.pending_tail = NULL;
    while (list) {
        px_xfer_slot_t *s = list;
        list = s->pnext;
        if (s->peer == rank) {
            s->pend = false;
            continue;
        }
        s->pnext = NULL;
        if (keep_tail)
            keep_tail->pnext = s;
        else
            keep = s;
        keep_tail = s;
    }
    px_xfer.pending = keep;
    px_xfer.pending_tail = keep_tail;
    /* Started requests. */
    px_xfer_slot_t *s = p->alist;
    while (s) {
        px_xfer_slot_t *next = s->anext;
        slot_error(s, failed, true, "the peer failed: %s", p->why ? p->why : "?");
        if (PX_XFER_PATH_STAGE == s->path) {
            px_xfer_stage_release(s);
            s->outstanding = 0; /* staged chunks hold no transport operation */
            if (!s->scheduling)
                finish(s);
        } else {
            rails_check(s);
        }
        s = next;
    }
    /* Held behind a notification. */
    px_xfer_slot_t *h = p->held;
    p->held = p->held_tail = NULL;
    while (h) {
        px_xfer_slot_t *next = h->pnext;
        h->held = false;
        slot_error(h, failed, true, "the peer failed: %s", p->why ? p->why : "?");
        px_xfer_slot_complete(h, failed, NULL);
        h = next;
    }
    while (p->notes) {
        px_xfer_note_t *n = p->notes;
        p->notes = n->next;
        px_xfer.notes_waiting--;
        atomic_fetch_sub(&px_xfer.work, 1);
        free(n);
    }
    p->notes_tail = NULL;
}

void px_xfer_batch_finalize(void)
{
    /* Let the transports finish what they hold (bounded), then end the rest. */
    double until = px_wtime() + 5.0;
    for (;;) {
        bool busy = !px_mpsc_empty(&px_xfer.queue) || px_xfer.pending;
        for (int r = 0; r < px_xfer.npeers && !busy; ++r)
            for (px_xfer_slot_t *s = px_xfer.peers[r].alist; s && !busy; s = s->anext)
                busy = PX_XFER_PATH_RAILS == s->path;
        if (!busy || px_wtime() > until)
            break;
        tl_progressing = true;
        px_progress_engine();
        if (!atomic_load_explicit(&px_xfer.cb_registered, memory_order_relaxed))
            px_xfer_work();
        tl_progressing = false;
    }
    px_mpsc_node_t *node = px_mpsc_take_all(&px_xfer.queue);
    while (node) {
        px_mpsc_node_t *next = node->next;
        px_xfer_qnode_t *q = (px_xfer_qnode_t *)node;
        if (PX_XFER_Q_SLOT == q->kind) {
            px_xfer_slot_t *s = (px_xfer_slot_t *)q;
            uint32_t cnt = s->qcount;
            for (uint32_t k = 0; k < cnt; ++k) {
                slot_error(s + k, PX_ERR_NOT_INITIALIZED, true,
                           "px_finalize was called while the request was queued");
                px_xfer_slot_complete(s + k, PX_ERR_NOT_INITIALIZED, NULL);
            }
        } else {
            atomic_fetch_sub(&px_xfer.work, 1);
            free(q);
        }
        node = next;
    }
    px_xfer.pending = px_xfer.pending_tail = NULL;
    for (int r = 0; r < px_xfer.npeers; ++r) {
        px_xfer_peer_t *p = &px_xfer.peers[r];
        for (px_xfer_slot_t *s = p->alist; s; s = s->anext)
            s->pend = false;
        if (!atomic_load(&p->failed)) {
            free(p->why);
            p->why = strdup("px_finalize was called while the request was in flight");
            atomic_store(&p->failed, PX_ERR_NOT_INITIALIZED);
        }
        px_xfer_batch_peer_failed(r);
    }
}

/* ------------------------------------------------------------ flush, notify */

static bool peer_idle(const void *arg)
{
    int peer = *(const int *)arg;
    if (peer >= 0)
        return 0 == atomic_load_explicit(&px_xfer.peers[peer].inflight, memory_order_acquire);
    for (int r = 0; r < px_xfer.npeers; ++r)
        if (atomic_load_explicit(&px_xfer.peers[r].inflight, memory_order_acquire))
            return false;
    return true;
}

int px_xfer_flush(int peer)
{
    if (PX_UNLIKELY(!px_xfer.ready))
        return misuse(PX_ERR_NOT_INITIALIZED, "px_xfer_flush", "Plexus is not initialised");
    if (PX_UNLIKELY(peer < -1 || peer >= px_xfer.npeers))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_flush", "peer %d: expected -1 or 0 to %d", peer,
                      px_xfer.npeers - 1);
    if (!peer_idle(&peer)) {
        int rc = wait_loop(peer_idle, &peer, wait_limit());
        if (rc != PX_SUCCESS)
            return px_xfer_fail(rc,
                                "px_xfer_flush: requests to %s%d still in flight after %g s "
                                "(runtime_wait_timeout)",
                                peer < 0 ? "rank " : "rank ", peer, wait_limit());
    }
    atomic_thread_fence(memory_order_release);
    if (peer >= 0) {
        int failed = atomic_load_explicit(&px_xfer.peers[peer].failed, memory_order_acquire);
        if (PX_UNLIKELY(failed))
            return px_xfer_fail(failed, "px_xfer_flush: rank %d (host %s) failed: %s", peer,
                                host(peer),
                                px_xfer.peers[peer].why ? px_xfer.peers[peer].why : "?");
    }
    return PX_SUCCESS;
}

int px_xfer_notify(int peer, const void *message, size_t length)
{
    if (PX_UNLIKELY(!px_xfer.ready))
        return misuse(PX_ERR_NOT_INITIALIZED, "px_xfer_notify", "Plexus is not initialised");
    if (PX_UNLIKELY(peer < 0 || peer >= px_xfer.npeers || length > PX_XFER_NOTIFY_MAX ||
                    (length && !message)))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_notify",
                      "peer %d, %zu bytes at %p: expected a rank from 0 to %d and at most %d "
                      "bytes",
                      peer, length, message, px_xfer.npeers - 1, PX_XFER_NOTIFY_MAX);
    int failed = atomic_load_explicit(&px_xfer.peers[peer].failed, memory_order_acquire);
    if (failed)
        return px_xfer_fail(failed, "px_xfer_notify: rank %d (host %s) failed: %s", peer,
                            host(peer), px_xfer.peers[peer].why ? px_xfer.peers[peer].why : "?");
    px_xfer_note_t *n = malloc(sizeof *n + length);
    if (!n)
        return px_xfer_fail(PX_ERR_OUT_OF_RESOURCE, "px_xfer_notify: out of memory");
    n->q.kind = PX_XFER_Q_NOTE;
    n->peer = peer;
    n->len = length;
    if (length)
        memcpy(n->data, message, length);
    px_xfer_need_progress();
    atomic_fetch_add_explicit(&px_xfer.work, 1, memory_order_relaxed);
    px_mpsc_push(&px_xfer.queue, &n->q.node);
    progress_try();
    return PX_SUCCESS;
}

void px_xfer_am_notify(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    size_t total = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i)
        total += d->des_segments[i].seg_len;
    px_xfer_note_hdr_t h;
    if (d->des_segment_count < 1 || d->des_segments[0].seg_len < sizeof h) {
        px_show_error("a notification from rank %d has %zu bytes, %zu in its first segment: "
                      "less than its %zu-byte header (which a transport delivers whole, first); "
                      "dropped",
                      d->src_rank, total, d->des_segment_count ? d->des_segments[0].seg_len : 0,
                      sizeof h);
        return;
    }
    memcpy(&h, d->des_segments[0].seg_addr, sizeof h);
    if (h.len > PX_XFER_NOTIFY_MAX || h.len != total - sizeof h) {
        px_show_error("a notification from rank %d says %u bytes and carries %zu; dropped",
                      d->src_rank, h.len, total - sizeof h);
        return;
    }
    px_xfer_inbox_item_t *it = malloc(sizeof *it + h.len);
    if (!it)
        return;
    it->next = NULL;
    it->peer = d->src_rank;
    it->len = h.len;
    size_t skip = sizeof h, pos = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i) {
        const char *a = d->des_segments[i].seg_addr;
        size_t l = d->des_segments[i].seg_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        memcpy(it->data + pos, a + skip, l - skip);
        pos += l - skip;
        skip = 0;
    }
    pthread_mutex_lock(&px_xfer.inbox_lock);
    if (px_xfer.inbox_tail)
        px_xfer.inbox_tail->next = it;
    else
        px_xfer.inbox = it;
    px_xfer.inbox_tail = it;
    atomic_fetch_add(&px_xfer.inbox_count, 1);
    pthread_mutex_unlock(&px_xfer.inbox_lock);
}

static px_xfer_inbox_item_t *inbox_pop(void)
{
    if (0 == atomic_load_explicit(&px_xfer.inbox_count, memory_order_acquire))
        return NULL;
    pthread_mutex_lock(&px_xfer.inbox_lock);
    px_xfer_inbox_item_t *it = px_xfer.inbox;
    if (it) {
        px_xfer.inbox = it->next;
        if (!px_xfer.inbox)
            px_xfer.inbox_tail = NULL;
        atomic_fetch_sub(&px_xfer.inbox_count, 1);
    }
    pthread_mutex_unlock(&px_xfer.inbox_lock);
    return it;
}

static bool inbox_nonempty(const void *arg)
{
    (void)arg;
    return atomic_load_explicit(&px_xfer.inbox_count, memory_order_acquire) > 0;
}

int px_xfer_notify_recv(int *peer, void *buffer, size_t capacity, size_t *length, double timeout)
{
    if (PX_UNLIKELY(!px_xfer.ready))
        return misuse(PX_ERR_NOT_INITIALIZED, "px_xfer_notify_recv", "Plexus is not initialised");
    if (PX_UNLIKELY(!peer || !length || (capacity && !buffer)))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_notify_recv",
                      "peer %p, buffer %p, length %p: expected places for the peer, the bytes "
                      "and the length",
                      (void *)peer, buffer, (void *)length);
    double deadline = timeout >= 0 ? px_wtime() + timeout : 0;
    for (;;) {
        px_xfer_inbox_item_t *it = inbox_pop();
        if (!it) {
            progress_try();
            it = inbox_pop();
        }
        if (it) {
            *peer = it->peer;
            *length = it->len;
            size_t c = it->len < capacity ? it->len : capacity;
            if (c)
                memcpy(buffer, it->data, c);
            int rc = it->len > capacity ? PX_ERR_TRUNCATE : PX_SUCCESS;
            free(it);
            return rc;
        }
        double left = timeout >= 0 ? deadline - px_wtime() : 1.0;
        if (left <= 0)
            return px_xfer_fail(PX_ERR_TIMEOUT, "px_xfer_notify_recv: no notification within %g s",
                                timeout);
        wait_loop(inbox_nonempty, NULL, left < 0.05 ? left : 0.05);
    }
}
