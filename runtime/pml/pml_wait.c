/*
 * pml_wait.c: the slow path of a wait: progress until a request completes,
 * runtime_wait_timeout, and what a timeout does to a request a transport may
 * still hold (docs/api.md, "When a wait times out"). The fast path is inline
 * in pml.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress_internal.h"
#include "runtime/pml/pml_internal.h"

/* A send to ourselves whose RNDV header still waits in our own unexpected
 * queue: nothing outside this process knows of it. Removes that header. */
static bool self_rndv_unqueue(px_request_t *r)
{
    if (PX_PML_REQ_SEND != r->type || r->peer != px_rt.rank)
        return false;
    uint64_t id = (uint64_t)(uintptr_t)r;
    px_rt_ux_t *u, *n;
    const bool mt = px_pml_fine;
    ml_lock(mt);
    PX_LIST_FOREACH_SAFE(u, n, &px_rt.unexpected, px_rt_ux_t)
    {
        if (PX_PML_KIND_RNDV == u->kind && u->rndv.sreq == id && u->src == px_rt.rank) {
            px_list_remove_item(&px_rt.unexpected, &u->super.super);
            ux_free(u);
            ml_unlock(mt);
            return true;
        }
    }
    ml_unlock(mt);
    return false;
}

/* A wait gave up on `r` (`what` says which operation and why). The request
 * leaves the application either way; what becomes of it depends on how far
 * it got, and the message printed says which:
 *  - nothing outside this process knows of it (a receive no message matched,
 *    a send to ourselves not yet matched): cancelled and freed, the buffer is
 *    the application's again;
 *  - a transport or the peer may still use it (an eager send whose descriptor
 *    the transport has not handed back, a rendezvous under way, a send that
 *    spent its sequence number): it is "released" and freed by the last
 *    callback that names it (req_held), never before; a rendezvous (or a send
 *    that never left) also fails the peer, since that pair's stream of
 *    messages can no longer be completed in order. The buffer belongs to
 *    Plexus until px_finalize. */
static PX_COLD void req_give_up(px_request_t *r, const char *what)
{
    if (PX_PML_REQ_GENERIC == r->type) { /* its owner reports and frees it */
        r->ops->give_up(r, PX_ERR_TIMEOUT, what);
        return;
    }
    px_pml_pending_remove(r);
    const bool mt = px_pml_fine; /* the API lock is held; the queues are the matching lock's */
    ml_lock(mt);
    if (r->on_posted) {
        px_list_remove_item(&px_rt.posted, &r->super.super);
        r->on_posted = false;
        ml_unlock(mt);
        px_show_error("%s; the receive was cancelled (its buffer is free again)", what);
        req_free(r);
        return;
    }
    if (req_done(r)) { /* matched while this thread took the API lock to give up */
        ml_unlock(mt);
        return;
    }
    ml_unlock(mt);
    if (self_rndv_unqueue(r)) {
        px_pml_active_remove(r);
        px_pml_req_release_regs(r);
        px_show_error("%s; the send was cancelled (its buffer is free again)", what);
        req_free(r);
        return;
    }
    const bool send = PX_PML_REQ_SEND == r->type;
    const int peer = send ? r->peer : r->status.source;
    /* An eager send whose data the transport has taken arrives whole: the
     * peer's stream is intact. Anything else leaves a hole in it. */
    const bool eager_out = send && r->des_held && !r->on_active;
    /* The peer may still read a buffer offered for RDMA get: keep it
     * registered, and the request findable for the FIN, until it says so. */
    const bool peer_reads = send && r->on_active && PX_PML_RDMA_GET == r->rdma_mode;
    if (!peer_reads)
        px_pml_active_remove(r);
    r->released = true;
    r->status.error = PX_ERR_TIMEOUT;
    const bool held = req_held(r);
    if (held)
        px_show_error("%s; the %s is still held by the transport%s, so Plexus frees it when that "
                      "lets go: do not reuse or free its buffer before px_finalize",
                      what, send ? "send" : "receive",
                      peer_reads ? " (the receiver may still read the buffer)" : "");
    else
        px_show_error("%s; the %s was abandoned (no transport holds it: its buffer is free again)",
                      what, send ? "send" : "receive");
    if (!eager_out && px_rt_peer_find(peer) && !px_rt_peer_find(peer)->failed) {
        char why[256];
        snprintf(why, sizeof(why), "a %s %s it timed out after its transfer had begun",
                 send ? "send" : "receive", send ? "to" : "from");
        px_rt_fail_peer(peer, PX_ERR_PEER_FAILED, why);
    }
    px_pml_req_unhold(r); /* frees it now when nothing holds it */
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void describe(char *buf, size_t n, const px_request_t *r, const char *who, const char *tail)
{
    if (PX_PML_REQ_GENERIC == r->type) {
        snprintf(buf, n, "%s: %s %s", who, r->ops->what, tail);
        return;
    }
    const bool send = PX_PML_REQ_SEND == r->type;
    int peer = send ? r->peer : r->status.source;
    char rank[32], tag[48];
    if (PX_ANY_SOURCE == peer)
        snprintf(rank, sizeof(rank), "any rank");
    else
        snprintf(rank, sizeof(rank), "rank %d", peer);
    if (r->tag >= 0)
        snprintf(tag, sizeof(tag), " with tag %d", r->tag);
    else if (PX_ANY_TAG == r->tag)
        snprintf(tag, sizeof(tag), " with any tag");
    else
        tag[0] = '\0'; /* runtime-internal: `who` names the operation */
    snprintf(buf, n, "%s: the %s of %zu bytes %s %s%s %s", who, send ? "send" : "receive", r->len,
             send ? "to" : "from", rank, tag, tail);
}

/* An idle wait at PX_THREAD_MULTIPLE gives its core away after
 * progress_idle_spins empty progress passes, on each further empty pass
 * (sched_yield, or progress_idle_sleep_us), unless
 * progress_yield_when_idle=never: what completes its request may be another
 * thread of this process (a send to itself) that waits for a core the spin
 * holds; on an oversubscribed machine (or threads sharing a core) a wait that
 * never yields makes each hand-over between them cost a scheduler time slice
 * (test/threads/lock_bias fifo: for ever, when neither is preempted). */
static unsigned mt_idle_limit(const px_request_t *r)
{
    /* Only a request this process itself may complete (to or from itself,
     * or from any source): a wait for another process keeps spinning, as
     * the API lock's hand-over already lets this process's other threads in
     * (yielding there cost 2 threads per process on one core 0.66x their
     * message rate, compare-threads.sh). */
    if (!px_rt_api_shared || (r->peer != px_rt.rank && r->peer != PX_ANY_SOURCE))
        return 0;
    const px_progress_idle_policy_t *p = px_progress_policy_storage();
    if (PX_PROGRESS_YIELD_NEVER == p->yield_when_idle)
        return 0;
    return p->idle_spins > 0 ? (unsigned)p->idle_spins : 1;
}

/* Progress until `r` completes; PX_ERR_TIMEOUT (after giving it up) when it
 * can never complete or runtime_wait_timeout passes. */
int px_pml_wait_slow(px_request_t *r, const char *who)
{
    double start = 0;
    unsigned spins = 0, idle = 0;
    const unsigned mt_limit = mt_idle_limit(r);
    char what[512];
    while (!req_done(r)) {
        int n = px_pml_progress_once();
        if (req_done(r))
            break;
        if (n > 0)
            idle = 0;
        else if (PX_UNLIKELY(mt_limit) && ++idle >= mt_limit)
            px_progress_give_core(); /* see mt_idle_limit */
        if (0 == n && 1 == px_rt.size && 0 == px_progress_nentries &&
            px_list_is_empty(&px_rt.pending)) {
            describe(what, sizeof(what), r, who,
                     PX_PML_REQ_SEND == r->type
                         ? "can never complete: this process is alone in the job and no "
                           "matching receive is queued"
                         : "can never complete: this process is alone in the job and no "
                           "matching message is queued");
            req_give_up(r, what);
            return PX_ERR_TIMEOUT;
        }
        if (PX_UNLIKELY(px_rt_api_shared))
            px_rt_api_pause(); /* hand the lock to a thread blocked on it, each pass (and
                                * report transport errors fine mode deferred) */
        if (px_rt.wait_timeout > 0 && 0 == (++spins & 1023)) {
            double t = now();
            if (0 == start)
                start = t;
            else if (t - start > px_rt.wait_timeout) {
                char tail[96];
                snprintf(tail, sizeof(tail), "did not complete within runtime_wait_timeout = %g s",
                         px_rt.wait_timeout);
                describe(what, sizeof(what), r, who, tail);
                req_give_up(r, what);
                return PX_ERR_TIMEOUT;
            }
        }
    }
    return PX_SUCCESS;
}

/* ------------------------------------------------------------------ fine mode */

/* Fine mode's pass under the API lock, after the transports were polled
 * without it: the progress callbacks that are not a module's (the transfer
 * engine's, a transport's own for its dynamic peers), messaging's pending
 * steps and the layers' hooks (the queued work of px_rt_defer_push among
 * them). */
static int progress_rest(int polled)
{
    int n = 0;
    for (int i = 0; i < px_progress_nentries; ++i)
        if (px_progress_entries[i].fn != px_btl_base_progress_module)
            n += px_progress_entries[i].fn(px_progress_entries[i].ctx);
    px_progress_idle_tick(n + polled);
    if (PX_UNLIKELY(!px_list_is_empty(&px_rt.pending)))
        n += px_pml_pending_progress();
    /* The first hook is px_rt_defer_drain (px_pml_threads_fine): run inline,
     * the others when there are any. */
    n += px_rt_defer_run();
    if (PX_UNLIKELY(px_rt.nprogress > 1))
        n += px_rt_progress_hooks();
    return n;
}

/* Fine mode: each transport is polled under its module's own lock, without
 * the API lock (callbacks that need that lock take it by a try or queue
 * their work for its holder: px_rt_defer_push); then, when the API lock is
 * free, the rest of a round under it. A thread that holds the API lock (a
 * locked path) runs the whole round under it, as before. */
int px_pml_progress_fine(bool *ran)
{
    int n = 0;
    bool took, polled = px_rt_tl_held == PX_RT_HELD_NOT;
    if (polled)
        n = px_btl_base_progress_modules();
    if (!px_rt_lock_try(&took)) {
        if (ran)
            *ran = false;
        return n;
    }
    if (ran)
        *ran = true;
    px_rt_btl_errors_drain();
    n += polled ? progress_rest(n) : pml_progress();
    px_rt_lock_drop(took);
    return n;
}

/* A wait gives up on `r` in fine mode: under the API lock (the request may
 * complete meanwhile: then it has not given up). PX_SUCCESS or
 * PX_ERR_TIMEOUT. */
static PX_COLD int fine_give_up(px_request_t *r, const char *who, const char *tail, bool alone)
{
    char what[512];
    bool took = api_enter(true);
    int rc = PX_ERR_TIMEOUT;
    if (req_done(r) ||
        (alone && (px_progress_nentries != 0 || !px_list_is_empty(&px_rt.pending)))) {
        rc = PX_SUCCESS; /* done, or not alone after all: wait on */
    } else {
        describe(what, sizeof(what), r, who, tail);
        req_give_up(r, what);
        if (req_done(r) && !r->released) /* it was matched under the lock: not given up */
            rc = PX_SUCCESS;
    }
    api_leave(took);
    return rc;
}

/* Threads of this process in a fine-mode wait's loop. */
static atomic_uint fine_waiters;

/* Fine mode: a wait for another process's message whose progress found
 * nothing progress_idle_spins passes in a row gives its core away too, on
 * each further empty pass, while another thread of this process waits as
 * well (unless progress_yield_when_idle=never). Threads that share a core
 * otherwise take turns by whole time slices: a thread waiting for an answer
 * that only a descheduled thread of the other process sends spins its slice
 * away while this process's other thread, whose partner runs, waits for the
 * core (the bimodal 2-thread rate of fine mode, 2.9 or 9.7 million
 * messages/s by round, docs/threads.md). Under the API lock a waiter hands
 * the lock to a thread blocked on it each pass instead; a lone waiter never
 * yields here. */
static unsigned fine_peer_idle_limit(void)
{
    const px_progress_idle_policy_t *p = px_progress_policy_storage();
    if (PX_PROGRESS_YIELD_NEVER == p->yield_when_idle)
        return 0;
    return p->idle_spins > 0 ? (unsigned)p->idle_spins : 1;
}

static int wait_fine_loop(px_request_t *r, const char *who);

int px_pml_wait_slow_fine(px_request_t *r, const char *who)
{
    if (px_rt_tl_held != PX_RT_HELD_NOT) /* a locked path (a dynamic peer, a send to itself) */
        return px_pml_wait_slow(r, who);
    atomic_fetch_add_explicit(&fine_waiters, 1, memory_order_relaxed);
    int rc = wait_fine_loop(r, who);
    atomic_fetch_sub_explicit(&fine_waiters, 1, memory_order_relaxed);
    return rc;
}

static int wait_fine_loop(px_request_t *r, const char *who)
{
    double start = 0;
    unsigned spins = 0, idle = 0;
    const unsigned mt_limit = mt_idle_limit(r);
    const unsigned limit = mt_limit ? mt_limit : fine_peer_idle_limit();
    while (!req_done(r)) {
        bool ran;
        int n = px_pml_progress_fine(&ran);
        if (req_done(r))
            break;
        if (n > 0)
            idle = 0;
        if (!ran && 0 == n) {
            sched_yield(); /* another thread is progressing: let it run */
        } else if (0 == n && limit && ++idle >= limit &&
                   (mt_limit || atomic_load_explicit(&fine_waiters, memory_order_relaxed) > 1)) {
            px_progress_give_core(); /* nothing moved for a while (mt_idle_limit, above) */
        }
        if (ran && 0 == n && 1 == px_rt.size) {
            int rc = fine_give_up(r, who,
                                  PX_PML_REQ_SEND == r->type
                                      ? "can never complete: this process is alone in the job "
                                        "and no matching receive is queued"
                                      : "can never complete: this process is alone in the job "
                                        "and no matching message is queued",
                                  true);
            if (rc != PX_SUCCESS)
                return rc;
        }
        if (px_rt.wait_timeout > 0 && 0 == (++spins & 1023)) {
            double t = now();
            if (0 == start) {
                start = t;
            } else if (t - start > px_rt.wait_timeout) {
                char tail[96];
                snprintf(tail, sizeof(tail), "did not complete within runtime_wait_timeout = %g s",
                         px_rt.wait_timeout);
                int rc = fine_give_up(r, who, tail, false);
                if (rc != PX_SUCCESS)
                    return rc;
                start = t;
            }
        }
    }
    return PX_SUCCESS;
}
