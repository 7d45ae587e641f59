/*
 * coll.c: the collectives API (runtime/plexus_coll.h): groups, argument
 * checks, in-place and PX_AVG handling, and running the schedules the coll
 * framework builds, blocking or as requests.
 *
 * The runtime reaches the coll framework through its base
 * (frameworks/coll/coll.h) and hands it the point-to-point table below; the
 * framework's components never see runtime internals. A non-blocking
 * collective is a px_request_t of type PX_RT_REQ_COLL on px_rt.colls, which
 * the runtime's progress steps (px_rt_coll_progress); px_wait/px_test finish
 * it like any request.
 *
 * Context ids: the world group has 0. px_group_split allgathers (color, key,
 * next free id) over the parent; the new groups take ids from the largest
 * next free id upward, one per color, and every parent member moves its next
 * free id past them. So no two groups sharing a pair of ranks ever share an
 * id, and their tags (INT32_MIN + id * 4096 + sequence) never meet.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/coll/coll.h"
#include "runtime/plexus_coll.h"
#include "runtime/pml/pml.h"

/* A non-blocking collective's state. */
typedef struct px_rt_coll_op {
    px_coll_sched_t s;
    void *scratch; /* an in-place input copied aside */
} px_rt_coll_op_t;

static px_coll_group_t *world_group = NULL;
static px_coll_group_t **groups = NULL; /* every live group (world first) */
static int ngroups = 0, groups_cap = 0;
static uint32_t next_ctx = 1;
static bool coll_open = false;

/* ---- the point-to-point table ---- */

static int p2p_test(px_request_t *r, int *error)
{
    if (!r->complete)
        return 0;
    *error = r->status.error;
    return 1;
}

static void p2p_release(px_request_t **req)
{
    px_request_t *r = *req;
    *req = NULL;
    if (NULL == r)
        return;
    if (r->complete) {
        req_release(r);
    } else if (r->on_posted) { /* no message matched it: cancel */
        px_list_remove_item(&px_rt.posted, &r->super.super);
        r->on_posted = false;
        req_free(r);
    } else {
        /* A transport or the peer still has it: whoever finishes it last
         * frees it (px_rt_req_unhold), else px_finalize does. */
        r->released = true;
        if (PX_RT_PEND_NONE == r->pending) /* a send still to start keeps its place */
            px_rt_req_unhold(r);
    }
}

static int p2p_progress(void)
{
    static unsigned pauses;
    if (PX_UNLIKELY(px_rt_api_shared) && 0 == (++pauses & 255))
        px_rt_api_pause(); /* a long collective lets px_xfer threads in now and then */
    return px_rt_progress_once();
}

static double p2p_wait_timeout(void)
{
    return px_rt.wait_timeout;
}

/* px_send's immediate path: the transport's inline send, no request. */
static int p2p_send_now(const void *buf, size_t len, int dest, int tag)
{
    px_rt_peer_t *peer = &px_rt.peers[dest];
    if (len >= peer->tiny_below || PX_UNLIKELY(peer->failed))
        return PX_ERR_NOT_SUPPORTED;
    px_rt_match_hdr_t h = {px_rt.rank, tag, peer->send_seq, 0};
    int rc = peer->eager_btl->btl_sendi(peer->eager_btl, peer->eager_ep, &h, sizeof(h), buf, len,
                                        PX_BTL_NO_ORDER, 0, PX_RT_AM_MATCH, NULL);
    if (PX_LIKELY(PX_SUCCESS == rc)) {
        peer->send_seq++;
        return PX_SUCCESS;
    }
    return PX_ERR_NOT_SUPPORTED;
}

static const px_coll_p2p_t px_rt_coll_p2p = {
    .isend = px_rt_isend,
    .irecv = px_rt_irecv,
    .test = p2p_test,
    .release = p2p_release,
    .progress = p2p_progress,
    .wait_timeout = p2p_wait_timeout,
    .send_now = p2p_send_now,
};

/* ---- groups ---- */

static int groups_add(px_coll_group_t *g)
{
    if (ngroups == groups_cap) {
        int ncap = groups_cap ? groups_cap * 2 : 8;
        px_coll_group_t **n = realloc(groups, (size_t)ncap * sizeof(*n));
        if (NULL == n)
            return PX_ERR_OUT_OF_RESOURCE;
        groups = n;
        groups_cap = ncap;
    }
    groups[ngroups++] = g;
    return PX_SUCCESS;
}

static void group_destroy(px_coll_group_t *g)
{
    for (int i = 0; i < ngroups; ++i)
        if (groups[i] == g) {
            groups[i] = groups[--ngroups];
            break;
        }
    px_coll_base_group_fini(g);
    free(g->world);
    free(g);
}

/* A group of `size` ranks whose world ranks are `world` (taken), this
 * process at `rank`, context `ctx`. */
static int group_make(int *world, int size, int rank, uint32_t ctx, px_coll_group_t **out)
{
    px_coll_group_t *g = calloc(1, sizeof(*g));
    if (NULL == g) {
        free(world);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    g->world = world;
    g->size = size;
    g->rank = rank;
    g->ctx = ctx;
    int rc = px_coll_base_group_init(g);
    if (PX_SUCCESS == rc)
        rc = groups_add(g);
    if (rc != PX_SUCCESS) {
        px_coll_base_group_fini(g);
        free(world);
        free(g);
        return rc;
    }
    *out = g;
    return PX_SUCCESS;
}

int px_rt_coll_open(void)
{
    int rc = px_coll_base_open(&px_rt_coll_p2p);
    coll_open = PX_SUCCESS == rc;
    return rc;
}

int px_rt_coll_world(void)
{
    int *world = malloc((size_t)px_rt.size * sizeof(int));
    if (NULL == world)
        return PX_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < px_rt.size; ++i)
        world[i] = i;
    next_ctx = 1;
    return group_make(world, px_rt.size, px_rt.rank, 0, &world_group);
}

void px_rt_coll_finalize(void)
{
    /* Non-blocking collectives never completed: let go of their requests. */
    px_list_item_t *it;
    while ((it = px_list_remove_first(&px_rt.colls))) {
        px_request_t *r = (px_request_t *)it;
        px_rt_coll_req_free(r);
        req_free(r);
    }
    while (ngroups > 0)
        group_destroy(groups[ngroups - 1]);
    free(groups);
    groups = NULL;
    groups_cap = 0;
    world_group = NULL;
    if (coll_open)
        px_coll_base_close();
    coll_open = false;
}

px_group_t *px_group_world(void)
{
    return px_rt.initialized ? world_group : NULL;
}

static bool group_ok(const px_coll_group_t *g, const char *fn)
{
    if (PX_LIKELY(g == world_group && NULL != g))
        return true; /* world_group is NULL outside px_init .. px_finalize */
    if (!px_rt.initialized) {
        px_show_error("%s: called before px_init (or after px_finalize)", fn);
        return false;
    }
    for (int i = 0; g && i < ngroups; ++i)
        if (groups[i] == g)
            return true;
    px_show_error("%s: the group %p is not a live group (px_group_world() or one made by "
                  "px_group_split and not freed)",
                  fn, (const void *)g);
    return false;
}

int px_group_rank(const px_group_t *g)
{
    return group_ok(g, "px_group_rank") ? g->rank : PX_ERR_BAD_PARAM;
}

int px_group_size(const px_group_t *g)
{
    return group_ok(g, "px_group_size") ? g->size : PX_ERR_BAD_PARAM;
}

int px_group_world_rank(const px_group_t *g, int rank)
{
    if (!group_ok(g, "px_group_world_rank"))
        return PX_ERR_BAD_PARAM;
    if (rank < 0 || rank >= g->size)
        return PX_ERR_BAD_PARAM;
    return g->world[rank];
}

static int group_free_locked(px_group_t **group)
{
    if (NULL == group || !group_ok(*group, "px_group_free"))
        return PX_ERR_BAD_PARAM;
    if (*group == world_group) {
        px_show_error("px_group_free: the world group cannot be freed (it lives until "
                      "px_finalize)");
        return PX_ERR_BAD_PARAM;
    }
    px_request_t *r;
    PX_LIST_FOREACH(r, &px_rt.colls, px_request_t)
    {
        if (r->coll && r->coll->s.group == *group) {
            px_show_error("px_group_free: a non-blocking collective on this group is still in "
                          "progress (complete it with px_wait or px_test first)");
            return PX_ERR_BAD_PARAM;
        }
    }
    group_destroy(*group);
    *group = NULL;
    return PX_SUCCESS;
}

int px_group_free(px_group_t **group)
{
    PX_RT_API_CALL(group_free_locked(group));
}

typedef struct split_entry {
    int32_t color, key, next_ctx;
} split_entry_t;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int group_split_locked(px_group_t *parent, int color, int key, px_group_t **newgroup)
{
    if (!group_ok(parent, "px_group_split"))
        return PX_ERR_BAD_PARAM;
    if (NULL == newgroup || (color < 0 && color != PX_UNDEFINED)) {
        px_show_error("px_group_split: color %d is invalid (valid: >= 0, or PX_UNDEFINED to join "
                      "no group)%s",
                      color, newgroup ? "" : "; and newgroup is NULL");
        return PX_ERR_BAD_PARAM;
    }
    *newgroup = NULL;
    int p = parent->size;
    split_entry_t mine = {color, key, (int32_t)next_ctx};
    split_entry_t *all = malloc((size_t)p * sizeof(*all));
    int *colors = malloc((size_t)p * sizeof(int));
    if (NULL == all || NULL == colors) {
        free(all);
        free(colors);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = px_allgather(&mine, all, 3, PX_INT32, parent);
    if (rc != PX_SUCCESS) {
        free(all);
        free(colors);
        return rc;
    }
    uint32_t base = 0;
    int ncolors = 0;
    for (int i = 0; i < p; ++i) {
        if ((uint32_t)all[i].next_ctx > base)
            base = (uint32_t)all[i].next_ctx;
        if (all[i].color >= 0)
            colors[ncolors++] = all[i].color;
    }
    qsort(colors, (size_t)ncolors, sizeof(int), cmp_int);
    int distinct = 0, my_index = -1;
    for (int i = 0; i < ncolors; ++i) {
        if (i && colors[i] == colors[i - 1])
            continue;
        if (colors[i] == color)
            my_index = distinct;
        distinct++;
    }
    free(colors);
    if ((uint64_t)base + (uint64_t)distinct > PX_COLL_MAX_CTX) {
        free(all);
        px_show_error("px_group_split: out of context ids (%u groups made in this job; at most "
                      "%u): free groups you no longer need is not enough, ids are not reused",
                      base, PX_COLL_MAX_CTX);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    next_ctx = base + (uint32_t)distinct;
    if (PX_UNDEFINED == color) {
        free(all);
        return PX_SUCCESS;
    }
    /* Members: parent ranks of my color, by (key, parent rank). */
    int n = 0;
    int *members = malloc((size_t)p * sizeof(int));
    if (NULL == members) {
        free(all);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < p; ++i)
        if (all[i].color == color) {
            int k = n++;
            while (k > 0 && (all[members[k - 1]].key > all[i].key))
                members[k] = members[k - 1], k--;
            members[k] = i;
        }
    int myrank = -1;
    for (int i = 0; i < n; ++i) {
        if (members[i] == parent->rank)
            myrank = i;
        members[i] = parent->world[members[i]];
    }
    free(all);
    return group_make(members, n, myrank, base + (uint32_t)my_index, newgroup);
}

int px_group_split(px_group_t *parent, int color, int key, px_group_t **newgroup)
{
    PX_RT_API_CALL(group_split_locked(parent, color, key, newgroup));
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
    if (!group_ok(g, fn))
        return px_rt.initialized ? PX_ERR_BAD_PARAM : PX_ERR_NOT_INITIALIZED;
    if (px_coll_base_group_check(g)) {
        px_show_error("%s: the group (%d ranks) failed in an earlier collective (%s): no more "
                      "collectives can run on it",
                      fn, g->size,
                      PX_ERR_GROUP_FAILED == g->failed ? "another member gave up on it"
                                                       : px_strerror(g->failed));
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
    return !g->failed && (NULL == g->alert_req || !g->alert_req->complete);
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
    px_request_t *r = req_alloc(PX_RT_REQ_COLL);
    if (NULL == r) {
        if (!trivial)
            px_coll_sched_fini(&op->s);
        free(op->scratch);
        free(op);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    r->peer = PX_ANY_SOURCE;
    r->tag = PX_ANY_TAG;
    r->buf = NULL;
    r->len = 0;
    r->status = (px_status_t){PX_ANY_SOURCE, PX_ANY_TAG, 0, PX_SUCCESS};
    *request = r;
    if (trivial) {
        free(op);
        r->coll = NULL;
        req_complete(r);
        return PX_SUCCESS;
    }
    r->coll = op;
    /* The first step posts the first round; a schedule with nothing to wait
     * for (a group of one) completes here. */
    rc = px_coll_sched_step(&op->s);
    if (0 == rc) {
        px_list_append(&px_rt.colls, &r->super.super);
    } else {
        r->status.error = rc < 0 ? rc : PX_SUCCESS;
        req_complete(r);
    }
    return PX_SUCCESS;
}

static int coll_nonblocking(px_coll_group_t *g, px_coll_args_t *a, px_request_t **request)
{
    PX_RT_API_CALL(coll_nonblocking_locked(g, a, request));
}

int px_rt_coll_progress(void)
{
    int done = 0;
    px_request_t *r, *n;
    PX_LIST_FOREACH_SAFE(r, n, &px_rt.colls, px_request_t)
    {
        int rc = px_coll_sched_step(&r->coll->s);
        if (0 == rc)
            continue;
        px_list_remove_item(&px_rt.colls, &r->super.super);
        r->status.error = rc < 0 ? rc : PX_SUCCESS;
        req_complete(r);
        done++;
    }
    return done;
}

void px_rt_coll_req_free(px_request_t *r)
{
    px_rt_coll_op_t *op = r->coll;
    if (NULL == op)
        return;
    px_coll_sched_fini(&op->s);
    free(op->scratch);
    free(op);
    r->coll = NULL;
}

void px_rt_coll_req_give_up(px_request_t *r, int error)
{
    if (!r->complete) {
        px_list_remove_item(&px_rt.colls, &r->super.super);
        if (r->coll)
            px_coll_sched_fail(&r->coll->s, error);
    }
    px_rt_coll_req_free(r);
    req_free(r);
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
