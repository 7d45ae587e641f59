/*
 * coll.c: the collectives API (runtime/plexus_coll.h): argument checks,
 * in-place and PX_AVG handling, and running the schedules the coll
 * framework builds, blocking or as requests. Groups are in group.c.
 *
 * The runtime reaches the coll framework through its base
 * (frameworks/coll/coll.h) and hands it the point-to-point table below,
 * made of messaging's exported calls (runtime/pml/pml.h); the framework's
 * components never see runtime internals. A non-blocking collective is a
 * messaging request with hooks (PX_PML_REQ_GENERIC, coll_req_ops) on this
 * file's list `active`, stepped by a progress hook it registers with the
 * process table while that list is not empty; px_wait/px_test finish it
 * like any request, and the hooks free its schedule or give it up.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/coll/coll_internal.h"

/* A non-blocking collective's state (its request's owner). */
typedef struct px_rt_coll_op {
    px_coll_sched_t s;
    void *scratch; /* an in-place input copied aside */
} px_rt_coll_op_t;

static bool coll_open = false;
static px_list_t active; /* requests of non-blocking collectives in progress */
#define world_group px_rt_coll_world_group

/* ---- the point-to-point table ---- */

static int p2p_test(px_request_t *r, int *error)
{
    if (!px_pml_done(r))
        return 0;
    *error = r->status.error;
    return 1;
}

static int p2p_progress(void)
{
    if (PX_UNLIKELY(px_rt_api_shared))
        px_rt_api_pause(); /* hands the lock to a thread waiting for it, each pass */
    return px_pml_progress_once();
}

static double p2p_wait_timeout(void)
{
    return px_rt.wait_timeout;
}

static const px_coll_p2p_t px_rt_coll_p2p = {
    .isend = px_pml_isend,
    .irecv = px_pml_irecv,
    .test = p2p_test,
    .release = px_pml_release,
    .progress = p2p_progress,
    .wait_timeout = p2p_wait_timeout,
    .send_now = px_pml_send_inline,
};

/* ---- non-blocking collectives: their list, progress and request hooks ---- */

static int coll_progress(void);

/* Off the list; the progress hook goes with the last one. */
static void active_remove(px_request_t *r)
{
    px_list_remove_item(&active, &r->super.super);
    if (px_list_is_empty(&active))
        px_rt_progress_unregister(coll_progress);
}

static int coll_progress(void)
{
    int done = 0;
    px_request_t *r, *n;
    PX_LIST_FOREACH_SAFE(r, n, &active, px_request_t)
    {
        px_rt_coll_op_t *op = r->owner;
        int rc = px_coll_sched_step(&op->s);
        if (0 == rc)
            continue;
        active_remove(r);
        if (rc < 0)
            px_rt_coll_name_failed(op->s.group, "a non-blocking collective", 0);
        px_pml_request_complete(r, rc < 0 ? rc : PX_SUCCESS);
        done++;
    }
    return done;
}

/* ops->free: the wait returned the request; its schedule goes. */
static void coll_req_free(px_request_t *r)
{
    px_rt_coll_op_t *op = r->owner;
    if (NULL == op)
        return;
    px_coll_sched_fini(&op->s);
    free(op->scratch);
    free(op);
    r->owner = NULL;
}

/* ops->give_up: a wait gave up on it: the collective fails (its group with
 * it, the other members are told) and the request goes. */
static void coll_req_give_up(px_request_t *r, int error, const char *what)
{
    px_show_error("%s; the collective failed and its group with it (its other members "
                  "are told)",
                  what);
    if (!px_pml_done(r)) {
        active_remove(r);
        px_rt_coll_op_t *op = r->owner;
        if (op)
            px_coll_sched_fail(&op->s, error);
    }
    coll_req_free(r);
    px_pml_request_free(r);
}

static const px_request_ops_t coll_req_ops = {
    .what = "a non-blocking collective",
    .free = coll_req_free,
    .give_up = coll_req_give_up,
};

bool px_rt_coll_group_busy(const px_coll_group_t *g)
{
    px_request_t *r;
    PX_LIST_FOREACH(r, &active, px_request_t)
    {
        const px_rt_coll_op_t *op = r->owner;
        if (op && op->s.group == g)
            return true;
    }
    return false;
}

/* ---- open and close ---- */

int px_rt_coll_open(void)
{
    PX_OBJ_CONSTRUCT(&active, px_list_t);
    int rc = px_coll_base_open(&px_rt_coll_p2p);
    coll_open = PX_SUCCESS == rc;
    return rc;
}

void px_rt_coll_finalize(void)
{
    /* Non-blocking collectives never completed: let go of their requests. */
    px_list_item_t *it;
    while ((it = px_list_remove_first(&active))) {
        px_request_t *r = (px_request_t *)it;
        coll_req_free(r);
        px_pml_request_free(r);
    }
    px_rt_progress_unregister(coll_progress);
    PX_OBJ_DESTRUCT(&active);
    px_rt_coll_groups_fini();
    if (coll_open)
        px_coll_base_close();
    coll_open = false;
}

/* ---- collectives ---- */

static const char *const api_names[PX_COLL_NOPS][2] = {
    {"px_group_barrier", "px_ibarrier"}, {"px_bcast", "px_ibcast"},
    {"px_scatter", "px_iscatter"},       {"px_gather", "px_igather"},
    {"px_reduce", "px_ireduce"},         {"px_allreduce", "px_iallreduce"},
    {"px_allgather", "px_iallgather"},   {"px_reduce_scatter", "px_ireduce_scatter"},
    {"px_alltoall", "px_ialltoall"},
};

static bool has_rop(int opid)
{
    return PX_COLL_REDUCE == opid || PX_COLL_ALLREDUCE == opid || PX_COLL_REDUCE_SCATTER == opid;
}

static PX_COLD int bad(const char *fn, const char *what)
{
    px_show_error("%s: %s", fn, what);
    return PX_ERR_BAD_PARAM;
}

static PX_COLD int bad_rop(const char *fn, int dtype, int rop)
{
    char ok[128] = "";
    for (int k = 0; k < PX_OP_COUNT; ++k)
        if (px_coll_rop_valid(dtype, k)) {
            size_t u = strlen(ok);
            snprintf(ok + u, sizeof(ok) - u, "%s%s", u ? ", " : "", px_coll_rop_name(k));
        }
    char buf[256];
    if (rop < 0 || rop >= PX_OP_COUNT)
        snprintf(buf, sizeof(buf), "reduction %d is not a px_op_t (accepted for %s: %s)", rop,
                 px_coll_dtype_name(dtype), ok);
    else
        snprintf(buf, sizeof(buf), "reduction %s is not defined for %s (accepted for %s: %s)",
                 px_coll_rop_name(rop), px_coll_dtype_name(dtype), px_coll_dtype_name(dtype), ok);
    return bad(fn, buf);
}

/* Check, resolve in-place and PX_AVG (*avg: divide the result by the
 * group's size at the end); *scratch: an in-place input set aside (free it
 * when done). *trivial: nothing to communicate (count 0). */
static int coll_check(px_coll_group_t *g, px_coll_args_t *a, bool nb, void **scratch, bool *avg,
                      bool *trivial)
{
    const char *fn = api_names[a->opid][nb ? 1 : 0];
    *trivial = false;
    *avg = false;
    *scratch = NULL;
    if (!px_rt_coll_group_ok(g, fn))
        return px_rt.initialized ? PX_ERR_BAD_PARAM : PX_ERR_NOT_INITIALIZED;
    if (px_coll_base_group_check(g)) {
        px_show_error("%s: the group (%d ranks) failed in an earlier collective (%s): no more "
                      "collectives can run on it",
                      fn, g->size,
                      PX_ERR_GROUP_FAILED == g->failed ? "another member gave up on it"
                                                       : px_strerror(g->failed));
        px_rt_coll_name_failed(g, fn, 1.0);
        return PX_ERR_GROUP_FAILED;
    }
    const bool root_op = PX_COLL_BCAST == a->opid || PX_COLL_SCATTER == a->opid ||
                         PX_COLL_GATHER == a->opid || PX_COLL_REDUCE == a->opid;
    if (PX_COLL_BARRIER != a->opid) {
        char buf[160];
        if ((int)a->dtype < 0 || a->dtype >= PX_DTYPE_COUNT) {
            snprintf(buf, sizeof(buf), "datatype %d is not a px_dtype_t (PX_INT8 .. PX_DOUBLE)",
                     (int)a->dtype);
            return bad(fn, buf);
        }
        if (has_rop(a->opid) && !px_coll_rop_valid(a->dtype, a->rop))
            return bad_rop(fn, a->dtype, a->rop);
        if (root_op && (a->root < 0 || a->root >= g->size)) {
            snprintf(buf, sizeof(buf), "root %d is not in the group (valid: 0..%d)", a->root,
                     g->size - 1);
            return bad(fn, buf);
        }
        size_t es = px_coll_dtype_bytes(a->dtype), full_bytes;
        if (__builtin_mul_overflow(a->count, es * (size_t)g->size, &full_bytes)) {
            snprintf(buf, sizeof(buf), "count %zu of %s is too large", a->count,
                     px_coll_dtype_name(a->dtype));
            return bad(fn, buf);
        }
        if (0 == a->count) {
            *trivial = true;
            return PX_SUCCESS;
        }
        const bool root = root_op && g->rank == a->root;
        size_t blk = a->count * es, full = blk * (size_t)g->size;
        bool in_place = PX_IN_PLACE == a->sbuf;
        /* Buffers that must be there. */
        bool need_s = true, need_r = true;
        switch (a->opid) {
        case PX_COLL_BCAST:
            need_s = false;
            break;
        case PX_COLL_SCATTER:
            need_s = root;
            break;
        case PX_COLL_GATHER:
        case PX_COLL_REDUCE:
            need_r = root;
            break;
        default:
            break;
        }
        if (in_place) {
            bool allowed = PX_COLL_ALLREDUCE == a->opid || PX_COLL_ALLGATHER == a->opid ||
                           PX_COLL_REDUCE_SCATTER == a->opid || PX_COLL_ALLTOALL == a->opid ||
                           (root && (PX_COLL_REDUCE == a->opid || PX_COLL_GATHER == a->opid));
            if (!allowed)
                return bad(fn, "PX_IN_PLACE as the send buffer is accepted only by allreduce, "
                               "allgather, reduce_scatter, alltoall, and by reduce and gather "
                               "at the root");
        }
        if (PX_IN_PLACE == a->rbuf && !(PX_COLL_SCATTER == a->opid && root))
            return bad(fn, "PX_IN_PLACE as the receive buffer is accepted only by scatter at the "
                           "root");
        if ((need_s && NULL == a->sbuf) || (need_r && NULL == a->rbuf))
            return bad(fn, "a buffer is NULL with a count above 0");
        /* In place. */
        if (in_place) {
            switch (a->opid) {
            case PX_COLL_ALLREDUCE:
            case PX_COLL_REDUCE:
                a->sbuf = a->rbuf;
                break;
            case PX_COLL_ALLGATHER:
                a->sbuf = (char *)a->rbuf + (size_t)g->rank * blk;
                break;
            case PX_COLL_GATHER:
                a->sbuf = (char *)a->rbuf + (size_t)a->root * blk;
                break;
            case PX_COLL_REDUCE_SCATTER:
            case PX_COLL_ALLTOALL:
                /* The input is the whole receive buffer: set it aside. */
                *scratch = malloc(full);
                if (NULL == *scratch)
                    return PX_ERR_OUT_OF_RESOURCE;
                memcpy(*scratch, a->rbuf, full);
                a->sbuf = *scratch;
                break;
            default:
                break;
            }
        }
        if (PX_COLL_SCATTER == a->opid && root && PX_IN_PLACE == a->rbuf)
            a->rbuf = (char *)a->sbuf + (size_t)a->root * blk;
        if (PX_COLL_BCAST == a->opid)
            a->sbuf = a->rbuf;
        if (has_rop(a->opid) && PX_AVG == a->rop) {
            a->rop = PX_SUM;
            *avg = PX_COLL_REDUCE != a->opid || root;
        }
    }
    return PX_SUCCESS;
}

/* Check and build the schedule of a non-blocking call into `op`. */
static int coll_prepare(px_coll_group_t *g, px_coll_args_t *a, px_rt_coll_op_t *op, bool *trivial)
{
    bool avg;
    int rc = coll_check(g, a, true, &op->scratch, &avg, trivial);
    if (rc != PX_SUCCESS || *trivial)
        return rc;
    px_coll_sched_init(&op->s, g, a->opid, true);
    rc = px_coll_base_build(g, a, &op->s);
    if (rc != PX_SUCCESS) {
        px_show_error("%s: could not prepare the collective on a group of %d ranks: %s",
                      api_names[a->opid][1], g->size, px_strerror(rc));
        px_coll_sched_fini(&op->s);
        free(op->scratch);
        op->scratch = NULL;
        return rc;
    }
    if (avg) {
        op->s.scale_buf = a->rbuf;
        op->s.scale_count = a->count;
        op->s.scale_dtype = a->dtype;
        op->s.scale_div = (double)g->size;
    }
    return PX_SUCCESS;
}

/* The common case, decided in a few compares: a valid type and count,
 * both buffers there and not in place, a root in the group, a reduction
 * every type has (sum, prod, min, max). Anything else takes coll_check. */
static inline bool coll_plain(const px_coll_group_t *g, const px_coll_args_t *a)
{
    if (PX_COLL_BARRIER == a->opid)
        return true;
    if ((unsigned)a->dtype >= PX_DTYPE_COUNT || 0 == a->count || (a->count >> 32) ||
        g->size > (1 << 20) || NULL == a->rbuf || PX_IN_PLACE == a->rbuf)
        return false;
    switch (a->opid) {
    case PX_COLL_ALLREDUCE:
        return a->sbuf && PX_IN_PLACE != a->sbuf && (unsigned)a->rop < PX_AVG;
    case PX_COLL_BCAST:
        return (unsigned)a->root < (unsigned)g->size;
    case PX_COLL_ALLGATHER:
        return a->sbuf && PX_IN_PLACE != a->sbuf;
    default:
        return false;
    }
}

/* No failure seen and no failure notice arrived (coll_check says why). */
static inline bool group_sound(const px_coll_group_t *g)
{
    return !g->failed && (NULL == g->alert_req || !px_pml_done(g->alert_req));
}

/* A blocking call: the chosen module's shortcut or its schedule, run here.
 * The entry points below run under the transfer engine's lock once
 * px_xfer_enable_threads was called (PX_RT_API_CALL), like every messaging
 * call: the transports are driven by one thread at a time. */
static int coll_blocking_locked(px_coll_group_t *g, px_coll_args_t *a)
{
    if (PX_LIKELY(g == world_group && NULL != g && group_sound(g) && coll_plain(g, a)))
        return px_coll_base_blocking(g, a);
    void *scratch;
    bool avg, trivial;
    int rc = coll_check(g, a, false, &scratch, &avg, &trivial);
    if (rc != PX_SUCCESS || trivial)
        return rc;
    rc = px_coll_base_blocking(g, a);
    if (PX_UNLIKELY(rc != PX_SUCCESS && rc != PX_ERR_TRUNCATE))
        px_rt_coll_name_failed(g, api_names[a->opid][0], 1.0);
    if (PX_UNLIKELY(avg) && PX_SUCCESS == rc)
        px_coll_scale(a->rbuf, a->count, a->dtype, (double)g->size);
    if (PX_UNLIKELY(scratch != NULL))
        free(scratch);
    return rc;
}

static int coll_blocking(px_coll_group_t *g, px_coll_args_t *a)
{
    PX_RT_API_CALL(coll_blocking_locked(g, a));
}

static int coll_nonblocking_locked(px_coll_group_t *g, px_coll_args_t *a, px_request_t **request)
{
    if (NULL == request) {
        px_show_error("%s: the request pointer is NULL", api_names[a->opid][1]);
        return PX_ERR_BAD_PARAM;
    }
    *request = NULL;
    px_rt_coll_op_t *op = malloc(sizeof(*op));
    if (NULL == op)
        return PX_ERR_OUT_OF_RESOURCE;
    bool trivial;
    int rc = coll_prepare(g, a, op, &trivial);
    if (rc != PX_SUCCESS) {
        free(op);
        return rc;
    }
    px_request_t *r = px_pml_request_alloc(&coll_req_ops, NULL);
    if (NULL == r) {
        if (!trivial)
            px_coll_sched_fini(&op->s);
        free(op->scratch);
        free(op);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    *request = r;
    if (trivial) {
        free(op);
        px_pml_request_complete(r, PX_SUCCESS);
        return PX_SUCCESS;
    }
    r->owner = op;
    /* The first step posts the first round; a schedule with nothing to wait
     * for (a group of one) completes here. */
    rc = px_coll_sched_step(&op->s);
    if (rc != 0) {
        px_pml_request_complete(r, rc < 0 ? rc : PX_SUCCESS);
        return PX_SUCCESS;
    }
    if (px_list_is_empty(&active) && (rc = px_rt_progress_register(coll_progress)) != PX_SUCCESS) {
        px_coll_sched_fail(&op->s, rc);
        px_pml_request_complete(r, rc);
        return PX_SUCCESS;
    }
    px_list_append(&active, &r->super.super);
    return PX_SUCCESS;
}

static int coll_nonblocking(px_coll_group_t *g, px_coll_args_t *a, px_request_t **request)
{
    PX_RT_API_CALL(coll_nonblocking_locked(g, a, request));
}

#define ARGS(op_, s_, r_, n_, dt_, rop_, root_)                                                    \
    (px_coll_args_t)                                                                               \
    {                                                                                              \
        .opid = (op_), .sbuf = (s_), .rbuf = (r_), .count = (n_), .dtype = (dt_), .rop = (rop_),   \
        .root = (root_)                                                                            \
    }

int px_group_barrier(px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_BARRIER, NULL, NULL, 0, PX_UINT8, PX_SUM, 0);
    return coll_blocking(g, &a);
}
int px_bcast(void *buf, size_t count, px_dtype_t dt, int root, px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_BCAST, buf, buf, count, dt, PX_SUM, root);
    return coll_blocking(g, &a);
}
int px_scatter(const void *s, void *r, size_t count, px_dtype_t dt, int root, px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_SCATTER, s, r, count, dt, PX_SUM, root);
    return coll_blocking(g, &a);
}
int px_gather(const void *s, void *r, size_t count, px_dtype_t dt, int root, px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_GATHER, s, r, count, dt, PX_SUM, root);
    return coll_blocking(g, &a);
}
int px_reduce(const void *s, void *r, size_t count, px_dtype_t dt, px_op_t op, int root,
              px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_REDUCE, s, r, count, dt, op, root);
    return coll_blocking(g, &a);
}
int px_allreduce(const void *s, void *r, size_t count, px_dtype_t dt, px_op_t op, px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_ALLREDUCE, s, r, count, dt, op, 0);
    return coll_blocking(g, &a);
}
int px_allgather(const void *s, void *r, size_t count, px_dtype_t dt, px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_ALLGATHER, s, r, count, dt, PX_SUM, 0);
    return coll_blocking(g, &a);
}
int px_reduce_scatter(const void *s, void *r, size_t count, px_dtype_t dt, px_op_t op,
                      px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_REDUCE_SCATTER, s, r, count, dt, op, 0);
    return coll_blocking(g, &a);
}
int px_alltoall(const void *s, void *r, size_t count, px_dtype_t dt, px_group_t *g)
{
    px_coll_args_t a = ARGS(PX_COLL_ALLTOALL, s, r, count, dt, PX_SUM, 0);
    return coll_blocking(g, &a);
}

int px_ibarrier(px_group_t *g, px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_BARRIER, NULL, NULL, 0, PX_UINT8, PX_SUM, 0);
    return coll_nonblocking(g, &a, req);
}
int px_ibcast(void *buf, size_t count, px_dtype_t dt, int root, px_group_t *g, px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_BCAST, buf, buf, count, dt, PX_SUM, root);
    return coll_nonblocking(g, &a, req);
}
int px_iscatter(const void *s, void *r, size_t count, px_dtype_t dt, int root, px_group_t *g,
                px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_SCATTER, s, r, count, dt, PX_SUM, root);
    return coll_nonblocking(g, &a, req);
}
int px_igather(const void *s, void *r, size_t count, px_dtype_t dt, int root, px_group_t *g,
               px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_GATHER, s, r, count, dt, PX_SUM, root);
    return coll_nonblocking(g, &a, req);
}
int px_ireduce(const void *s, void *r, size_t count, px_dtype_t dt, px_op_t op, int root,
               px_group_t *g, px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_REDUCE, s, r, count, dt, op, root);
    return coll_nonblocking(g, &a, req);
}
int px_iallreduce(const void *s, void *r, size_t count, px_dtype_t dt, px_op_t op, px_group_t *g,
                  px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_ALLREDUCE, s, r, count, dt, op, 0);
    return coll_nonblocking(g, &a, req);
}
int px_iallgather(const void *s, void *r, size_t count, px_dtype_t dt, px_group_t *g,
                  px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_ALLGATHER, s, r, count, dt, PX_SUM, 0);
    return coll_nonblocking(g, &a, req);
}
int px_ireduce_scatter(const void *s, void *r, size_t count, px_dtype_t dt, px_op_t op,
                       px_group_t *g, px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_REDUCE_SCATTER, s, r, count, dt, op, 0);
    return coll_nonblocking(g, &a, req);
}
int px_ialltoall(const void *s, void *r, size_t count, px_dtype_t dt, px_group_t *g,
                 px_request_t **req)
{
    px_coll_args_t a = ARGS(PX_COLL_ALLTOALL, s, r, count, dt, PX_SUM, 0);
    return coll_nonblocking(g, &a, req);
}
