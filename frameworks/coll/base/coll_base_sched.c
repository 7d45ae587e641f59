/*
 * coll_base_sched.c: collective schedules and the engine that runs them.
 *
 * A schedule is a list of rounds. A round's sends and receives are posted
 * together; when all of them have completed, its reductions and copies run
 * in order and the next round starts. Every message of one collective
 * carries the same tag (the group's context and the collective's sequence
 * number); the per-pair ordering of the messaging layer keeps the messages
 * of successive rounds apart. A module with a schedule that rounds cannot
 * express (ring's pipeline) sets progress/abort/cleanup instead.
 *
 * Failure: when a request fails (a peer died) or a wait times out, the
 * schedule lets go of its requests, the group is marked failed, and every
 * other member is sent a zero-byte notice on the group's alert tag. Every
 * member keeps one receive posted for it, which each step of any schedule
 * on the group tests; so a member waiting for a healthy rank that gave up is
 * released too, instead of waiting forever.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"
#include "frameworks/coll/coll.h"

extern const px_coll_p2p_t *px_coll_base_p2p;

const px_coll_p2p_t *px_coll_p2p(void)
{
    return px_coll_base_p2p;
}

void px_coll_sched_init(px_coll_sched_t *s, px_coll_group_t *g, int opid, bool heap)
{
    s->group = g;
    s->opid = opid;
    s->tag = 0;
    s->error = PX_SUCCESS;
    s->started = s->done = s->settling = false;
    s->progress = NULL;
    s->abort = NULL;
    s->cleanup = NULL;
    s->priv = NULL;
    s->acts = s->inline_acts;
    s->nacts = s->cur = s->round_end = 0;
    s->cap = PX_COLL_SCHED_INLINE_ACTS;
    s->reqs = s->inline_reqs;
    s->nreqs = 0;
    s->reqcap = PX_COLL_SCHED_INLINE_REQS;
    s->ntmp = 0;
    s->inline_tmp_used = 0;
    s->scale_buf = NULL;
    s->scale_count = 0;
    s->heap = heap;
}

static px_coll_action_t *add(px_coll_sched_t *s)
{
    if (s->nacts == s->cap) {
        size_t ncap = s->cap * 2;
        px_coll_action_t *n = malloc(ncap * sizeof(*n));
        if (NULL == n)
            return NULL;
        memcpy(n, s->acts, s->nacts * sizeof(*n));
        if (s->acts != s->inline_acts)
            free(s->acts);
        s->acts = n;
        s->cap = ncap;
    }
    px_coll_action_t *a = &s->acts[s->nacts++];
    memset(a, 0, sizeof(*a));
    return a;
}

int px_coll_sched_send(px_coll_sched_t *s, int peer, const void *buf, size_t bytes)
{
    px_coll_action_t *a = add(s);
    if (NULL == a)
        return PX_ERR_OUT_OF_RESOURCE;
    a->kind = PX_COLL_ACT_SEND;
    a->peer = peer;
    a->a = buf;
    a->len = bytes;
    return PX_SUCCESS;
}

int px_coll_sched_recv(px_coll_sched_t *s, int peer, void *buf, size_t bytes)
{
    px_coll_action_t *a = add(s);
    if (NULL == a)
        return PX_ERR_OUT_OF_RESOURCE;
    a->kind = PX_COLL_ACT_RECV;
    a->peer = peer;
    a->dst = buf;
    a->len = bytes;
    return PX_SUCCESS;
}

int px_coll_sched_reduce(px_coll_sched_t *s, void *dst, const void *x, const void *y, size_t count,
                         int dtype, int rop)
{
    px_coll_action_t *a = add(s);
    if (NULL == a)
        return PX_ERR_OUT_OF_RESOURCE;
    a->kind = PX_COLL_ACT_REDUCE;
    a->dst = dst;
    a->a = x;
    a->b = y;
    a->len = count;
    a->dtype = (uint8_t)dtype;
    a->rop = (uint8_t)rop;
    return PX_SUCCESS;
}

int px_coll_sched_copy(px_coll_sched_t *s, void *dst, const void *src, size_t bytes)
{
    if (dst == src || 0 == bytes)
        return PX_SUCCESS;
    px_coll_action_t *a = add(s);
    if (NULL == a)
        return PX_ERR_OUT_OF_RESOURCE;
    a->kind = PX_COLL_ACT_COPY;
    a->dst = dst;
    a->a = src;
    a->len = bytes;
    return PX_SUCCESS;
}

int px_coll_sched_round(px_coll_sched_t *s)
{
    /* An empty round (nothing since the last end) is dropped. */
    if (0 == s->nacts || PX_COLL_ACT_ROUND == s->acts[s->nacts - 1].kind)
        return PX_SUCCESS;
    px_coll_action_t *a = add(s);
    if (NULL == a)
        return PX_ERR_OUT_OF_RESOURCE;
    a->kind = PX_COLL_ACT_ROUND;
    return PX_SUCCESS;
}

void *px_coll_sched_tmp(px_coll_sched_t *s, size_t bytes)
{
    /* Small scratch comes from inside the schedule: no allocation. */
    size_t need = bytes <= 64 ? 64 : (bytes + 63) & ~(size_t)63;
    if (bytes <= PX_COLL_SCHED_INLINE_TMP &&
        need <= PX_COLL_SCHED_INLINE_TMP - s->inline_tmp_used) {
        void *p = s->inline_tmp + s->inline_tmp_used;
        s->inline_tmp_used += need;
        return p;
    }
    if (s->ntmp >= PX_COLL_SCHED_MAX_TMP)
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p)
        s->tmp[s->ntmp++] = p;
    return p;
}

static int tag_of(const px_coll_group_t *g, uint32_t seq)
{
    int64_t t = (int64_t)INT32_MIN + (int64_t)g->ctx * PX_COLL_SEQ_SPAN + seq;
    return (int)t;
}

/* ---- failure ---- */

static void release_reqs(px_coll_sched_t *s)
{
    for (size_t i = 0; i < s->nreqs; ++i)
        if (s->reqs[i])
            px_coll_base_p2p->release(&s->reqs[i]);
    s->nreqs = 0;
    if (s->abort)
        s->abort(s);
}

void px_coll_base_group_failed(px_coll_group_t *g, int error, int by)
{
    if (g->failed)
        return;
    g->failed = error ? error : PX_ERR_PEER_FAILED;
    g->failed_rank = by;
    /* Tell every other member (they may be waiting for this one). */
    int tag = tag_of(g, PX_COLL_SEQ_ALERT);
    for (int i = 0; i < g->size; ++i) {
        if (i == g->rank)
            continue;
        struct px_request *r = NULL;
        if (PX_SUCCESS == px_coll_base_p2p->isend(NULL, 0, g->world[i], tag, &r) && r)
            px_coll_base_p2p->release(&r);
    }
}

/* Has another member reported a failure? */
static inline void check_alert(px_coll_group_t *g)
{
    int err;
    if (g->alert_req && px_coll_base_p2p->test(g->alert_req, &err)) {
        px_coll_base_p2p->release(&g->alert_req);
        if (!g->failed) {
            g->failed = PX_ERR_GROUP_FAILED;
            g->failed_rank = -1;
        }
    }
}

int px_coll_base_group_check(px_coll_group_t *g)
{
    check_alert(g);
    return g->failed;
}

int px_coll_base_settle(px_coll_group_t *g, int opid, int rc, bool poll)
{
    if (PX_LIKELY(PX_SUCCESS != rc && PX_ERR_TRUNCATE != rc))
        return rc;
    /* A member that gave up on this collective sent its notice after its
     * messages: a late member may have matched those and be done. */
    if (poll && g->alert_req && !g->failed)
        px_coll_base_p2p->progress();
    check_alert(g);
    if (PX_LIKELY(!g->failed))
        return rc;
    px_show_error("%s on a group of %d ranks (this is rank %d): %s before this member "
                  "finished, so its result is not valid either",
                  px_coll_op_name(opid), g->size, g->rank,
                  PX_ERR_GROUP_FAILED == g->failed
                      ? "another member gave up on the collective (it timed out or lost a peer) "
                        "and failed the group"
                      : "the group failed");
    return PX_ERR_GROUP_FAILED;
}

static int finish_error(px_coll_sched_t *s, int error, bool tell)
{
    release_reqs(s);
    s->error = error;
    s->done = true;
    if (tell)
        px_coll_base_group_failed(s->group, error, s->group->rank);
    return error;
}

void px_coll_sched_fail(px_coll_sched_t *s, int error)
{
    if (!s->done)
        finish_error(s, error, true);
}

/* ---- the round engine ---- */

static int post_round(px_coll_sched_t *s)
{
    const px_coll_p2p_t *p = px_coll_base_p2p;
    px_coll_group_t *g = s->group;
    size_t i = s->cur;
    s->nreqs = 0;
    for (; i < s->nacts && PX_COLL_ACT_ROUND != s->acts[i].kind; ++i) {
        px_coll_action_t *a = &s->acts[i];
        if (PX_COLL_ACT_SEND != a->kind && PX_COLL_ACT_RECV != a->kind)
            continue;
        if (s->nreqs == s->reqcap) {
            size_t ncap = s->reqcap * 2;
            struct px_request **n = malloc(ncap * sizeof(*n));
            if (NULL == n)
                return PX_ERR_OUT_OF_RESOURCE;
            memcpy(n, s->reqs, s->nreqs * sizeof(*n));
            if (s->reqs != s->inline_reqs)
                free(s->reqs);
            s->reqs = n;
            s->reqcap = ncap;
        }
        struct px_request **r = &s->reqs[s->nreqs];
        *r = NULL;
        int rc = PX_COLL_ACT_SEND == a->kind
                     ? p->isend(a->a, a->len, g->world[a->peer], s->tag, r)
                     : p->irecv(a->dst, a->len, g->world[a->peer], s->tag, r);
        if (rc != PX_SUCCESS)
            return rc;
        s->nreqs++;
    }
    s->round_end = i;
    return PX_SUCCESS;
}

static void run_locals(px_coll_sched_t *s)
{
    for (size_t i = s->cur; i < s->round_end; ++i) {
        px_coll_action_t *a = &s->acts[i];
        if (PX_COLL_ACT_REDUCE == a->kind)
            px_coll_reduce(a->dst, a->a, a->b, a->len, a->dtype, a->rop);
        else if (PX_COLL_ACT_COPY == a->kind)
            memmove(a->dst, a->a, a->len);
    }
}

static int rounds_progress(px_coll_sched_t *s)
{
    const px_coll_p2p_t *p = px_coll_base_p2p;
    for (;;) {
        /* Every request of the round complete? (Freed as they finish.) */
        for (size_t i = 0; i < s->nreqs; ++i) {
            if (NULL == s->reqs[i])
                continue;
            int err;
            if (!p->test(s->reqs[i], &err))
                return 0;
            p->release(&s->reqs[i]);
            if (err != PX_SUCCESS && err != PX_ERR_TRUNCATE)
                return err;
            if (PX_ERR_TRUNCATE == err)
                return PX_ERR_TRUNCATE;
        }
        s->nreqs = 0;
        run_locals(s);
        s->cur = s->round_end < s->nacts ? s->round_end + 1 : s->nacts;
        if (s->cur >= s->nacts)
            return 1;
        int rc = post_round(s);
        if (rc != PX_SUCCESS)
            return rc;
    }
}

int px_coll_sched_step(px_coll_sched_t *s)
{
    if (s->done)
        return s->error ? s->error : 1;
    px_coll_group_t *g = s->group;
    int rc;
    if (PX_UNLIKELY(s->settling)) {
        /* Finished at the last step; a transport poll later, did a notice
         * that followed the messages it matched arrive? */
        s->settling = false;
        rc = px_coll_base_settle(g, s->opid, s->error, false);
        if (rc != PX_SUCCESS)
            return finish_error(s, rc, false);
        goto complete;
    }
    check_alert(g);
    if (PX_UNLIKELY(g->failed))
        return finish_error(s, g->failed, false);
    if (s->progress) {
        rc = s->progress(s);
    } else {
        if (!s->started) {
            s->started = true;
            s->cur = 0;
            rc = s->nacts ? post_round(s) : PX_SUCCESS;
            if (rc != PX_SUCCESS)
                return finish_error(s, rc, true);
        }
        rc = s->nacts ? rounds_progress(s) : 1;
    }
    if (0 == rc)
        return 0;
    if (rc > 0 || PX_ERR_TRUNCATE == rc) {
        /* Done here: did the group fail meanwhile (a member gave up)? Its
         * notice follows the messages this member matched; a non-blocking
         * one completes a transport poll later (a step runs inside
         * progress), a blocking one is settled by its caller, which polls. */
        int e = px_coll_base_settle(g, s->opid, rc > 0 ? PX_SUCCESS : rc, false);
        if (e != PX_SUCCESS)
            return finish_error(s, e, false);
        if (s->heap && g->alert_req) {
            s->settling = true;
            s->error = rc > 0 ? PX_SUCCESS : rc;
            return 0;
        }
    }
    if (rc < 0)
        return finish_error(s, rc, PX_ERR_TRUNCATE != rc);
complete:
    if (s->scale_buf)
        px_coll_scale(s->scale_buf, s->scale_count, s->scale_dtype, s->scale_div);
    s->done = true;
    return 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One idle turn of a blocking wait: progress, give the core away when the
 * ranks outnumber the cores and nothing happened (as Open MPI's
 * mpi_yield_when_idle does, at every idle poll rather than after
 * progress_idle_spins of them: a collective waits for every rank to run),
 * and every 1024 turns check runtime_wait_timeout: 1 when it passed. */
typedef struct wait_clock {
    double limit, start;
    unsigned spins;
} wait_clock_t;

static inline void wait_clock_init(wait_clock_t *c)
{
    c->limit = px_coll_base_p2p->wait_timeout();
    c->start = 0;
    c->spins = 0;
}

static inline int wait_turn(wait_clock_t *c)
{
    if (0 == px_coll_base_p2p->progress() && px_progress_idle_limit)
        px_progress_idle();
    if (c->limit > 0 && 0 == (++c->spins & 1023)) {
        double t = now();
        if (0 == c->start)
            c->start = t;
        else if (t - c->start > c->limit)
            return 1;
    }
    return 0;
}

static PX_COLD void timeout_error(const px_coll_group_t *g, int opid, double limit)
{
    px_show_error("%s on a group of %d ranks (this is rank %d) did not complete within "
                  "runtime_wait_timeout = %g s; the group is failed and its other members told",
                  px_coll_op_name(opid), g->size, g->rank, limit);
}

int px_coll_sched_run(px_coll_sched_t *s)
{
    wait_clock_t c;
    wait_clock_init(&c);
    int rc;
    while (0 == (rc = px_coll_sched_step(s))) {
        if (wait_turn(&c)) {
            timeout_error(s->group, s->opid, c.limit);
            px_coll_sched_fail(s, PX_ERR_TIMEOUT);
            return PX_ERR_TIMEOUT;
        }
    }
    return rc > 0 ? PX_SUCCESS : rc;
}

/* ---- blocking shortcuts ---- */

/* Let go of every request, fail the group (telling the others unless the
 * error is a truncation, which only this member sees) and keep the error. */
static PX_COLD int run_fail(px_coll_run_t *r, int error)
{
    for (int i = 0; i < r->n; ++i)
        if (r->req[i])
            px_coll_base_p2p->release(&r->req[i]);
    r->n = 0;
    r->error = error;
    if (PX_ERR_TRUNCATE != error)
        px_coll_base_group_failed(r->g, error, r->g->rank);
    return error;
}

int px_coll_run_send(px_coll_run_t *r, int peer, const void *buf, size_t bytes)
{
    if (PX_UNLIKELY(r->error))
        return r->error;
    /* Small enough to leave at once: no request to wait for. */
    if (PX_SUCCESS == px_coll_base_p2p->send_now(buf, bytes, r->g->world[peer], r->tag))
        return PX_SUCCESS;
    if (PX_UNLIKELY(r->n >= PX_COLL_RUN_MAXREQ))
        return run_fail(r, PX_ERR_OUT_OF_RESOURCE);
    struct px_request **q = &r->req[r->n];
    *q = NULL;
    int rc = px_coll_base_p2p->isend(buf, bytes, r->g->world[peer], r->tag, q);
    if (PX_UNLIKELY(rc != PX_SUCCESS))
        return run_fail(r, rc);
    r->n++;
    return PX_SUCCESS;
}

int px_coll_run_recv(px_coll_run_t *r, int peer, void *buf, size_t bytes)
{
    if (PX_UNLIKELY(r->error))
        return r->error;
    if (PX_UNLIKELY(r->n >= PX_COLL_RUN_MAXREQ))
        return run_fail(r, PX_ERR_OUT_OF_RESOURCE);
    struct px_request **q = &r->req[r->n];
    *q = NULL;
    int rc = px_coll_base_p2p->irecv(buf, bytes, r->g->world[peer], r->tag, q);
    if (PX_UNLIKELY(rc != PX_SUCCESS))
        return run_fail(r, rc);
    r->n++;
    return PX_SUCCESS;
}

int px_coll_run_wait(px_coll_run_t *r)
{
    if (PX_UNLIKELY(r->error))
        return r->error;
    const px_coll_p2p_t *p = px_coll_base_p2p;
    px_coll_group_t *g = r->g;
    wait_clock_t c = {.limit = -1};
    unsigned spins = 0;
    int i = 0;
    for (;;) {
        /* Release what completed, in order; stop at the first that has not. */
        for (; i < r->n; ++i) {
            int err;
            if (!p->test(r->req[i], &err))
                break;
            p->release(&r->req[i]);
            if (PX_UNLIKELY(err != PX_SUCCESS))
                return run_fail(r, err);
        }
        if (i == r->n)
            break;
        /* Now and then: another member's failure notice, the timeout. */
        if (PX_UNLIKELY(0 == (++spins & 63))) {
            check_alert(g);
            if (PX_UNLIKELY(g->failed)) {
                int e = g->failed;
                for (int k = 0; k < r->n; ++k)
                    if (r->req[k])
                        p->release(&r->req[k]);
                r->n = 0;
                r->error = e;
                return e;
            }
            if (c.limit < 0)
                wait_clock_init(&c);
            if (c.limit > 0 && 0 == (spins & 1023)) {
                double t = now();
                if (0 == c.start)
                    c.start = t;
                else if (t - c.start > c.limit) {
                    timeout_error(g, r->opid, c.limit);
                    return run_fail(r, PX_ERR_TIMEOUT);
                }
            }
        }
        if (0 == p->progress() && px_progress_idle_limit)
            px_progress_idle();
    }
    r->n = 0;
    return PX_SUCCESS;
}

void px_coll_sched_fini(px_coll_sched_t *s)
{
    if (!s->done)
        release_reqs(s);
    if (s->cleanup)
        s->cleanup(s);
    s->cleanup = NULL;
    if (s->acts != s->inline_acts)
        free(s->acts);
    if (s->reqs != s->inline_reqs)
        free(s->reqs);
    s->acts = s->inline_acts;
    s->reqs = s->inline_reqs;
    for (int i = 0; i < s->ntmp; ++i)
        free(s->tmp[i]);
    s->ntmp = 0;
}

/* The tag of a schedule (set by the base when it builds one). */
int px_coll_base_tag(px_coll_group_t *g, uint32_t seq);
int px_coll_base_tag(px_coll_group_t *g, uint32_t seq)
{
    return tag_of(g, seq);
}
