/*
 * progress.c: the engine's progress. A round (whichever thread holds the
 * engine's lock) drives the transports, then the engine's own work in this
 * order: the queue into progress (submitted runs of requests and
 * notifications, started in order), the run queue (requests whose path had
 * no resources, or more to do after an event: resumed here, never on an
 * event's stack), the notifications that wait for their peer's writes (and
 * the requests held behind them), and the staged target's answers that
 * waited for room. Also the waits of the API and px_xfer_flush.
 */
#define _GNU_SOURCE
#include <sched.h>
#include "core/util/error.h"
#include "core/util/progress.h"
#include "runtime/xfer/xfer.h"

_Thread_local bool px_xfer_tl_progressing;

int px_xfer_progress_try(void)
{
    if (px_xfer_tl_progressing)
        return 0; /* called from inside progress (a callback): the outer round goes on */
    bool took;
    if (!px_xfer_lock_try(&took))
        return -1;
    px_xfer_tl_progressing = true;
    int n = px_progress_engine(); /* the transports, then px_xfer_progress_cb */
    /* Fine mode: what other threads' progress queued for the API lock's
     * holder (proc.h), which this is now. */
    n += px_rt_defer_run();
    /* A connected peer leaves through its connection, which messaging's
     * progress hooks watch (runtime/pml/pml_dyn.c, every millisecond at
     * most): the engine's waits must notice it too. */
    if (PX_UNLIKELY(px_rt.ndyn > 0 && px_rt.nprogress > 0))
        n += px_rt_progress_hooks();
    if (!atomic_load_explicit(&px_xfer.cb_registered, memory_order_relaxed))
        n += px_xfer_work();
    px_xfer_tl_progressing = false;
    px_xfer_lock_drop(took);
    return n;
}

int px_xfer_progress(void)
{
    if (!px_xfer.ready)
        return 0;
    int n = px_xfer_progress_try();
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

void px_xfer_need_progress(void)
{
    /* Any progress (a messaging wait too) drives the queue from now on. Not
     * in a process alone: its messaging waits tell a wait that can never end
     * by an empty progress engine, and its engine runs the work itself;
     * unless it has connected peers, whose staged requests and revocations
     * must be answered while it waits for messages. */
    if (PX_LIKELY(atomic_load_explicit(&px_xfer.cb_registered, memory_order_acquire)) ||
        (px_rt.size < 2 && 0 == px_rt.ndyn))
        return;
    bool took;
    px_xfer_lock_take(&took);
    if (!atomic_load(&px_xfer.cb_registered) &&
        PX_SUCCESS == px_progress_register(px_xfer_progress_cb, NULL))
        atomic_store_explicit(&px_xfer.cb_registered, true, memory_order_release);
    px_xfer_lock_drop(took);
}

int px_xfer_wait_loop(bool (*done)(const void *), const void *arg, double timeout)
{
    double deadline = timeout >= 0 ? px_wtime() + timeout : 0;
    unsigned idle = 0;
    for (unsigned it = 0;; ++it) {
        if (done(arg))
            return PX_SUCCESS;
        int ev = px_xfer_progress_try();
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

double px_xfer_wait_limit(void)
{
    return px_rt.wait_timeout > 0 ? px_rt.wait_timeout : -1;
}

/* The run queue: each request on it when the round began, once (one that
 * blocks again waits for the next round). */
static int runq_drain(void)
{
    size_t n = px_list_get_size(&px_xfer.runq);
    int done = 0;
    while (n-- > 0) {
        px_list_item_t *it = px_list_get_first(&px_xfer.runq);
        if (it == px_list_get_end(&px_xfer.runq))
            break; /* a failed peer's requests left it meanwhile */
        px_xfer_slot_resume(px_container_of(it, px_xfer_slot_t, link));
        done++;
    }
    return done;
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
                    px_xfer_slot_start(s + k);
                n += (int)cnt;
            } else {
                px_xfer_note_arrive((px_xfer_note_t *)q);
                n++;
            }
            node = next;
        }
    }
    if (!px_list_is_empty(&px_xfer.runq))
        n += runq_drain();
    if (px_xfer.notes_waiting)
        px_xfer_notes_run();
    n += px_xfer_stage_jobs();
    px_xfer.in_work = false;
    return n;
}

/* ------------------------------------------------------------ flush */

static bool peer_idle(const void *arg)
{
    px_xfer_peer_t *p = (px_xfer_peer_t *)arg;
    if (p)
        return 0 == atomic_load_explicit(&p->inflight, memory_order_acquire);
    for (int r = 0; r < px_xfer.npeers; ++r)
        if (atomic_load_explicit(&px_xfer.peers[r].inflight, memory_order_acquire))
            return false;
    /* Dynamic peers: the table may change while another thread progresses. */
    bool took, idle = true;
    if (px_xfer.ndyn && px_xfer_lock_try(&took)) {
        for (int r = 0; r < px_xfer.ndyn && idle; ++r)
            idle = 0 == atomic_load_explicit(&px_xfer.dyn[r]->inflight, memory_order_acquire);
        px_xfer_lock_drop(took);
    } else if (px_xfer.ndyn)
        idle = false;
    return idle;
}

int px_xfer_flush(int peer)
{
    if (PX_UNLIKELY(!px_xfer.ready))
        return px_xfer_api_error(PX_ERR_NOT_INITIALIZED, "px_xfer_flush",
                                 "Plexus is not initialised");
    px_xfer_peer_t *p = NULL;
    if (peer >= 0 && peer < px_xfer.npeers)
        p = &px_xfer.peers[peer];
    else if (peer >= PX_RT_DYN_BASE) {
        /* A connected peer the engine has no state for has nothing in flight. */
        p = px_xfer_peer_dyn(peer, true);
        if (!p)
            return px_xfer_fail(PX_ERR_PEER_FAILED,
                                "px_xfer_flush: peer %d is not connected (disconnected, gone, or "
                                "never an id px_connect or px_accept gave)",
                                peer);
    } else if (PX_UNLIKELY(peer != -1))
        return px_xfer_api_error(PX_ERR_BAD_PARAM, "px_xfer_flush",
                                 "peer %d: expected -1, a rank from 0 to %d or a connected "
                                 "peer's id",
                                 peer, px_xfer.npeers - 1);
    char name[300];
    if (!peer_idle(p)) {
        /* p stays: a request in flight holds a remote that names it. */
        int rc = px_xfer_wait_loop(peer_idle, p, px_xfer_wait_limit());
        if (rc != PX_SUCCESS)
            return px_xfer_fail(rc,
                                "px_xfer_flush: requests to %s still in flight after %g s "
                                "(runtime_wait_timeout)",
                                p ? px_xfer_peer_name(peer, name, sizeof name) : "every peer",
                                px_xfer_wait_limit());
    }
    atomic_thread_fence(memory_order_release);
    if (p) {
        int failed = atomic_load_explicit(&p->failed, memory_order_acquire);
        if (PX_UNLIKELY(failed))
            return px_xfer_fail(failed, "px_xfer_flush: %s failed: %s",
                                px_xfer_peer_name(peer, name, sizeof name), p->why ? p->why : "?");
    }
    return PX_SUCCESS;
}
