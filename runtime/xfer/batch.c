/*
 * batch.c: batches, submission and the request's state machine.
 *
 * Submission (any thread, no lock): each request is checked (regions, bounds,
 * the peer) and given its path (path.c, once). A path whose start runs at
 * submission (a mapping: path_inline.c) ends the request there; the others
 * go to progress as runs of consecutive slots through a lock-free MPSC
 * queue (core/class/mpsc.h), or start at once on the submitting thread when
 * it can take the lock and nothing is queued before them. Progress
 * (progress.c, under the engine's lock) starts them, resumes those on the
 * run queue and hands the transports' events to px_xfer_slot_event.
 *
 * Only this file moves a slot between states (px_xfer_sstate_t). A path's
 * call returns a status (px_xfer_pstatus_t) and this file acts on it:
 *
 *   from       on                                        to
 *   (submit)   refused, empty, or an at-submit path      DONE (seen by nobody else)
 *   (submit)   its path runs in progress                 QUEUED
 *   QUEUED     start: the peer failed                    DONE (the peer's error)
 *   QUEUED     start: a notification to the peer waits   HELD (the peer's held list)
 *   QUEUED     start                                     RUNNING (path->start)
 *   HELD       the notifications went out (progress)     QUEUED, started again
 *   HELD       the peer failed                           DONE
 *   RUNNING    the path returns IN_PROGRESS              ACTIVE
 *   RUNNING    the path returns NO_RESOURCES             BLOCKED (the run queue)
 *   RUNNING    the path returns DONE or ERROR            DONE, or DRAINING while a
 *                                                        transport holds operations
 *   RUNNING    an event, the peer failed                 RUNNING (the return decides)
 *   ACTIVE     an event: the path's status               as from RUNNING
 *   BLOCKED    progress takes it off the run queue       RUNNING (path->resume)
 *   BLOCKED    an event                                  BLOCKED (the resume decides)
 *   ACTIVE,    the peer failed: path->release            DONE, or DRAINING while a
 *   BLOCKED                                              transport holds operations
 *   DRAINING   the last operation's callback             DONE (its regions and batch let go)
 *   QUEUED     px_finalize                               DONE (PX_ERR_NOT_INITIALIZED)
 *
 * DRAINING and DONE are final for the application (px_xfer_batch_test); the
 * result is s->error, published with the state's release store, then the
 * batch's pending count drops, after which the batch may be freed. A
 * DRAINING request keeps its regions' counts and its batch, freed by the
 * last callback if the application freed it meanwhile (never before: a
 * transport may still name it).
 *
 * A completion starts nothing: a request that ends on an event's stack
 * leaves its peer's notifications, and what is held behind them, to the
 * next round of progress (px_xfer_work), and a path that could do more after
 * an event returns NO_RESOURCES, which puts it on the run queue.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "core/util/progress.h"
#include "runtime/xfer/xfer.h"

static bool batch_ok(const px_xfer_batch_t *b)
{
    return b && PX_XFER_BATCH_MAGIC == b->magic;
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

static inline int sstate(const px_xfer_slot_t *s)
{
    return atomic_load_explicit(&((px_xfer_slot_t *)s)->state, memory_order_relaxed);
}

static inline void set_state(px_xfer_slot_t *s, px_xfer_sstate_t st)
{
    atomic_store_explicit(&s->state, (int)st, memory_order_relaxed);
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
    for (size_t i = 0; i < capacity; ++i) {
        b->slots[i].why = NULL;
        PX_OBJ_CONSTRUCT(&b->slots[i].link, px_list_item_t);
    }
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

static void batch_destroy(px_xfer_batch_t *b)
{
    for (size_t i = 0; i < b->cap; ++i)
        PX_OBJ_DESTRUCT(&b->slots[i].link);
    free(b);
}

static void batch_free_claimed(px_xfer_batch_t *b)
{
    if (0 == atomic_exchange(&b->claimed, 1))
        batch_destroy(b);
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
        batch_destroy(b);
        return PX_SUCCESS;
    }
    /* A transport still holds requests of a failed peer: the last callback frees it. */
    atomic_store(&b->released, 1);
    if (0 == atomic_load(&b->holds))
        batch_free_claimed(b);
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ errors */

/* Record the first error of a request (a failed peer's replaces a
 * transport's). */
static void slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *fmt, ...)
    PX_PRINTF(4, 5);
static void slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *fmt, ...)
{
    if (s->error && !replace)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *why = px_xfer_reason(s, fmt, ap);
    va_end(ap);
    free(s->why);
    s->why = why;
    s->error = rc;
}

void px_xfer_slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *what)
{
    slot_error(s, rc, replace, "%s", what);
}

/* End a request that never left the submitting thread: s->error and s->why
 * are set; the thread's last error says it. Returns false (not queued). */
static bool end_at_submit(px_xfer_slot_t *s)
{
    if (s->error)
        px_xfer_fail(s->error, "%s", s->why ? s->why : "");
    atomic_store_explicit(&s->state, PX_XFER_S_DONE, memory_order_release);
    return false;
}

/* Fail a request that never left the submitting thread. */
static PX_COLD bool fail_now(px_xfer_slot_t *s, int rc, const char *fmt, ...) PX_PRINTF(3, 4);
static bool fail_now(px_xfer_slot_t *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s->why = px_xfer_reason(s, fmt, ap);
    va_end(ap);
    s->error = rc;
    return end_at_submit(s);
}

/* ------------------------------------------------------------ the machine */

static void verbose_done(const px_xfer_slot_t *s, int err)
{
    char rails[256] = "";
    size_t pos = 0;
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
              s->path && s->path->at_submit ? " (one memcpy by the submitting thread)" : "", rails,
              err ? (s->why ? s->why : px_strerror(err)) : "done");
}

/* A request that outlives its submission is counted: on its regions (a free
 * or release is refused meanwhile), its peer (flush), the engine (progress
 * has work) and its batch (wait). One started and completed inside submit,
 * under the lock, is never seen by anyone else and is not. */
static void count_slot(px_xfer_slot_t *s)
{
    atomic_fetch_add_explicit(&s->local->inflight, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->remote->inflight, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->remote->pp->inflight, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&px_xfer.work, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->batch->pending, 1, memory_order_relaxed);
    s->counted = true;
}

static void release_refs(px_xfer_slot_t *s)
{
    atomic_fetch_sub_explicit(&s->local->inflight, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->remote->inflight, 1, memory_order_relaxed);
}

/* Off whatever list its state puts it on. */
static void unlink_slot(px_xfer_slot_t *s)
{
    px_xfer_peer_t *p = s->remote->pp;
    switch (sstate(s)) {
    case PX_XFER_S_HELD:
        px_list_remove_item(&p->held, &s->link);
        break;
    case PX_XFER_S_RUNNING:
    case PX_XFER_S_ACTIVE:
        px_list_remove_item(&p->alist, &s->link);
        p->active--;
        break;
    case PX_XFER_S_BLOCKED:
        px_list_remove_item(&px_xfer.runq, &s->link);
        p->active--;
        break;
    default:
        break;
    }
}

/* The request is final (s->error its result): DONE, or DRAINING while a
 * transport still names it. */
static void slot_end(px_xfer_slot_t *s)
{
    px_xfer_peer_t *p = s->remote->pp;
    unlink_slot(s);
    const bool hold = s->outstanding > 0; /* a transport still names it */
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
        verbose_done(s, s->error);
    if (hold)
        atomic_fetch_add_explicit(&b->holds, 1, memory_order_relaxed);
    atomic_store_explicit(&s->state, hold ? PX_XFER_S_DRAINING : PX_XFER_S_DONE,
                          memory_order_release);
    /* Last touch of the slot (unless held): the batch may be freed now. */
    if (counted)
        atomic_fetch_sub_explicit(&b->pending, 1, memory_order_release);
}

/* The last operation of a DRAINING request completed. */
static void slot_drained(px_xfer_slot_t *s)
{
    release_refs(s);
    px_xfer_batch_t *b = s->batch;
    atomic_store_explicit(&s->state, PX_XFER_S_DONE, memory_order_release);
    if (1 == atomic_fetch_sub_explicit(&b->holds, 1, memory_order_acq_rel) &&
        atomic_load(&b->released))
        batch_free_claimed(b);
}

/* Act on what the path said of a RUNNING or ACTIVE request. */
static void slot_act(px_xfer_slot_t *s, px_xfer_pstatus_t st)
{
    switch (st) {
    case PX_XFER_P_IN_PROGRESS:
        set_state(s, PX_XFER_S_ACTIVE);
        return;
    case PX_XFER_P_NO_RESOURCES:
        px_list_remove_item(&s->remote->pp->alist, &s->link);
        px_list_append(&px_xfer.runq, &s->link);
        set_state(s, PX_XFER_S_BLOCKED);
        return;
    case PX_XFER_P_DONE:
    case PX_XFER_P_ERROR:
        slot_end(s);
        return;
    }
}

void px_xfer_slot_event(px_xfer_slot_t *s, px_xfer_pstatus_t st)
{
    switch (sstate(s)) {
    case PX_XFER_S_ACTIVE:
        slot_act(s, st);
        return;
    case PX_XFER_S_DRAINING:
        if (0 == s->outstanding)
            slot_drained(s);
        return;
    default: /* RUNNING: its path call decides on return; BLOCKED: its resume does */
        return;
    }
}

void px_xfer_slot_start(px_xfer_slot_t *s)
{
    px_xfer_peer_t *p = s->remote->pp;
    int failed = atomic_load_explicit(&p->failed, memory_order_acquire);
    if (PX_UNLIKELY(failed)) {
        slot_error(s, failed, true, "the peer failed: %s", p->why ? p->why : "?");
        slot_end(s);
        return;
    }
    if (PX_UNLIKELY(!px_list_is_empty(&p->notes))) { /* behind a notification still waiting */
        px_list_append(&p->held, &s->link);
        set_state(s, PX_XFER_S_HELD);
        return;
    }
    px_list_append(&p->alist, &s->link);
    p->active++;
    set_state(s, PX_XFER_S_RUNNING);
    slot_act(s, s->path->start(s));
}

void px_xfer_slot_resume(px_xfer_slot_t *s)
{
    px_list_remove_item(&px_xfer.runq, &s->link);
    px_list_append(&s->remote->pp->alist, &s->link);
    set_state(s, PX_XFER_S_RUNNING);
    slot_act(s, s->path->resume(s));
}

void px_xfer_slot_abort(px_xfer_slot_t *s, int rc, const char *what)
{
    slot_error(s, rc, true, "%s", what);
    slot_end(s);
}

void px_xfer_held_start(int peer)
{
    px_xfer_peer_t *p = px_xfer_peer_get(peer);
    px_list_item_t *it;
    if (!p)
        return;
    while (px_list_is_empty(&p->notes) && (it = px_list_remove_first(&p->held)) != NULL) {
        px_xfer_slot_t *s = px_container_of(it, px_xfer_slot_t, link);
        set_state(s, PX_XFER_S_QUEUED);
        px_xfer_slot_start(s);
    }
}

/* ------------------------------------------------------------ submission */

/* Check request `r` into slot `s` and run or route it; true when it goes to
 * progress. */
static bool prepare(px_xfer_batch_t *b, px_xfer_slot_t *s, const px_xfer_request_t *r)
{
    s->batch = b;
    s->why = NULL;
    s->tlabel = "";
    s->path = NULL;
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
    if (PX_UNLIKELY(!px_xfer_region_ok(r->local)))
        return fail_now(s, PX_ERR_BAD_PARAM,
                        "the local region %p is not a region (freed, or never one)",
                        (void *)r->local);
    if (PX_UNLIKELY(!px_xfer_remote_ok(r->remote)))
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
    px_xfer_peer_t *p = s->remote->pp;
    int failed = atomic_load_explicit(&p->failed, memory_order_acquire);
    if (PX_UNLIKELY(failed))
        return fail_now(s, failed, "the peer failed: %s", p->why ? p->why : "?");
    if (PX_UNLIKELY(0 == s->len)) {
        s->tlabel = "none"; /* nothing to move: no path taken, and "" means failed */
        return end_at_submit(s);
    }
    if (PX_SUCCESS != px_xfer_path_choose(s, r->transport))
        return end_at_submit(s);
    if (s->path->at_submit) {
        s->path->start(s); /* DONE, or ERROR with s->error */
        if (PX_UNLIKELY(px_xfer.verbose >= 10) && !s->error)
            verbose_done(s, PX_SUCCESS);
        return end_at_submit(s);
    }
    s->counted = false;
    atomic_store_explicit(&s->state, PX_XFER_S_QUEUED, memory_order_release);
    return true;
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
            if (!px_xfer_tl_progressing && px_xfer_lock_try(&took)) {
                if (!px_xfer.in_work && px_mpsc_empty(&px_xfer.queue)) {
                    mode = DIRECT;
                    px_xfer.in_work = true;
                    px_xfer_tl_progressing = true;
                } else {
                    px_xfer_lock_drop(took);
                    took = false;
                }
            }
        }
        if (DIRECT == mode) {
            px_xfer_slot_start(s);
            /* Not final yet (an asynchronous transport, or no room): from
             * here on it is like a queued one. Its completion needs the lock,
             * which this thread holds, so it cannot come before this. */
            if (!px_xfer_slot_final(s) && !s->counted)
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
        px_xfer_tl_progressing = false;
        px_xfer_lock_drop(took);
    }
    if (run) {
        enqueue(run, runlen);
        px_xfer_progress_try();
    }
    return PX_SUCCESS;
}

/* The result of a slot: PX_XFER_PENDING until final. */
static inline int slot_result(const px_xfer_slot_t *s)
{
    if (atomic_load_explicit(&((px_xfer_slot_t *)s)->state, memory_order_acquire) <
        PX_XFER_S_DRAINING)
        return PX_XFER_PENDING;
    return s->error;
}

int px_xfer_batch_test(px_xfer_batch_t *batch, size_t index, px_xfer_status_t *status)
{
    if (PX_UNLIKELY(!batch_ok(batch) || index >= batch->used))
        return misuse(PX_ERR_BAD_PARAM, "px_xfer_batch_test",
                      "batch %p, index %zu: expected a batch and the index of a request "
                      "submitted to it",
                      (void *)batch, index);
    px_xfer_slot_t *s = &batch->slots[index];
    int e = slot_result(s);
    if (PX_XFER_PENDING == e && px_xfer.ready) {
        px_xfer_progress_try();
        e = slot_result(s);
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
        int rc = px_xfer_wait_loop(batch_done, batch, timeout);
        if (rc != PX_SUCCESS)
            return px_xfer_fail(rc,
                                "px_xfer_batch_wait: %zu request(s) still in flight after "
                                "%g s",
                                px_xfer_batch_pending(batch), timeout);
    }
    for (size_t i = 0; i < batch->used; ++i) {
        int e = slot_result(&batch->slots[i]);
        if (e < 0) {
            px_xfer_fail(e, "%s", batch->slots[i].why ? batch->slots[i].why : px_strerror(e));
            return e;
        }
    }
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ single requests */

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
    return px_xfer_batch_wait(b, px_xfer_wait_limit());
}

/* The fast path: a mapped peer region, copied here. */
static inline bool single_inline(int op, px_xfer_region_t *local, size_t loff,
                                 px_xfer_remote_t *remote, size_t roff, size_t length)
{
    if (PX_UNLIKELY(!px_xfer.ready || !px_xfer_region_ok(local) || !px_xfer_remote_ok(remote) ||
                    !remote->fast || loff > local->len || length > local->len - loff ||
                    roff > remote->len || length > remote->len - roff))
        return false;
    if (PX_UNLIKELY(atomic_load_explicit(&remote->pp->failed, memory_order_relaxed) ||
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

/* ------------------------------------------------------------ failures */

/* End a started request of a failed peer (its error is recorded). */
static void end_failed(px_xfer_slot_t *s)
{
    /* DONE: nothing held any more; IN_PROGRESS: a transport holds operations,
     * so slot_end makes it DRAINING until their callbacks. */
    (void)s->path->release(s);
    if (PX_XFER_S_RUNNING == sstate(s))
        return; /* its path call is on the stack: its return ends it */
    slot_end(s);
}

void px_xfer_batch_peer_failed(px_xfer_peer_t *p)
{
    int failed = atomic_load(&p->failed);
    const char *why = p->why ? p->why : "?";
    px_xfer_slot_t *s;
    /* Blocked on the run queue. */
    px_list_item_t *it = px_list_get_first(&px_xfer.runq);
    while (it != px_list_get_end(&px_xfer.runq)) {
        px_list_item_t *nx = px_list_get_next(it);
        s = px_container_of(it, px_xfer_slot_t, link);
        if (s->remote->pp == p) {
            slot_error(s, failed, true, "the peer failed: %s", why);
            end_failed(s);
        }
        it = nx;
    }
    /* Started. */
    it = px_list_get_first(&p->alist);
    while (it != px_list_get_end(&p->alist)) {
        px_list_item_t *nx = px_list_get_next(it);
        s = px_container_of(it, px_xfer_slot_t, link);
        slot_error(s, failed, true, "the peer failed: %s", why);
        end_failed(s);
        it = nx;
    }
    /* Held behind a notification. */
    while ((it = px_list_get_first(&p->held)) != px_list_get_end(&p->held)) {
        s = px_container_of(it, px_xfer_slot_t, link);
        slot_error(s, failed, true, "the peer failed: %s", why);
        slot_end(s);
    }
    px_xfer_notes_drop(p);
}

void px_xfer_batch_finalize(void)
{
    /* Let the transports finish what they hold (bounded), then end the rest. */
    double until = px_wtime() + 5.0;
    for (;;) {
        bool busy = !px_mpsc_empty(&px_xfer.queue) || !px_list_is_empty(&px_xfer.runq);
        for (int r = 0; r < px_xfer.npeers + px_xfer.ndyn && !busy; ++r) {
            px_xfer_peer_t *p =
                r < px_xfer.npeers ? &px_xfer.peers[r] : px_xfer.dyn[r - px_xfer.npeers];
            for (px_list_item_t *it = px_list_get_first(&p->alist);
                 it != px_list_get_end(&p->alist) && !busy; it = px_list_get_next(it))
                busy = px_container_of(it, px_xfer_slot_t, link)->path->transport_ops;
        }
        if (!busy || px_wtime() > until)
            break;
        px_xfer_tl_progressing = true;
        px_progress_engine();
        if (!atomic_load_explicit(&px_xfer.cb_registered, memory_order_relaxed))
            px_xfer_work();
        px_xfer_tl_progressing = false;
    }
    px_mpsc_node_t *node = px_mpsc_take_all(&px_xfer.queue);
    while (node) {
        px_mpsc_node_t *next = node->next;
        px_xfer_qnode_t *q = (px_xfer_qnode_t *)node;
        if (PX_XFER_Q_SLOT == q->kind) {
            px_xfer_slot_t *s = (px_xfer_slot_t *)q;
            uint32_t cnt = s->qcount;
            for (uint32_t k = 0; k < cnt; ++k)
                px_xfer_slot_abort(s + k, PX_ERR_NOT_INITIALIZED,
                                   "px_finalize was called while the request was queued");
        } else {
            px_xfer_note_t *n = (px_xfer_note_t *)q;
            atomic_fetch_sub(&px_xfer.work, 1);
            PX_OBJ_DESTRUCT(&n->link);
            free(n);
        }
        node = next;
    }
    for (int r = 0; r < px_xfer.npeers + px_xfer.ndyn; ++r) {
        px_xfer_peer_t *p =
            r < px_xfer.npeers ? &px_xfer.peers[r] : px_xfer.dyn[r - px_xfer.npeers];
        if (!atomic_load(&p->failed)) {
            free(p->why);
            p->why = strdup("px_finalize was called while the request was in flight");
            atomic_store(&p->failed, PX_ERR_NOT_INITIALIZED);
        }
        px_xfer_batch_peer_failed(p);
    }
}
