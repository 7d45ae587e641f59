/*
 * ring_module.c: coll/ring's algorithms.
 *
 * Reduce-scatter then allgather (allreduce), p ranks, the vector cut in p
 * blocks. In step s of the reduce-scatter, rank r sends block r-1-s to its
 * right neighbour and receives block r-2-s from its left, adding its own
 * input to it; after p-1 steps it holds block r complete. The allgather
 * then passes complete blocks around: in step s rank r sends block r-s and
 * receives block r-s-1. Every step sends exactly the block received in the
 * step before, so the whole thing is one chain of 2(p-1) steps:
 *
 *     3 ranks, blocks A B C          step 0        step 1
 *     rank 0 (owns A at the end)     sends C       sends B+C'
 *     rank 1 (owns B)                sends A       sends C+A'
 *     rank 2 (owns C)                sends B       sends A+B'
 *
 * The pipeline cuts each block into chunks (coll_ring_chunk): receiving chunk
 * c+1 overlaps reducing chunk c, and as soon as chunk c of step s is reduced
 * it is sent on as chunk c of step s+1. Up to coll_ring_window receives are
 * posted ahead, landing in that many chunk-sized slots (reduce-scatter) or
 * straight in the result (allgather). The sends of step 0 read the input, the
 * first reduction writes input + received into the result, so the input is
 * never copied. Chunks move through the mover (ring_move.c).
 */
#include <stdlib.h>
#include <string.h>
#include "components/coll/ring/ring.h"
#include "core/util/error.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_ != PX_SUCCESS)                                                                     \
            return rc_;                                                                            \
    } while (0)

static inline int mod(int v, int p)
{
    return ((v % p) + p) % p;
}
static inline size_t blk_off(const px_coll_ring_state_t *st, int b)
{
    return px_coll_block_start(st->count, st->p, b);
}
static inline size_t blk_len(const px_coll_ring_state_t *st, int b)
{
    return px_coll_block_start(st->count, st->p, b + 1) - px_coll_block_start(st->count, st->p, b);
}
static inline size_t nchunks(const px_coll_ring_state_t *st, int b)
{
    size_t l = blk_len(st, b);
    return l ? (l + st->chunk - 1) / st->chunk : 1;
}
/* The block sent in step s (received in step s-1). */
static inline int send_blk(const px_coll_ring_state_t *st, int s)
{
    int p = st->p;
    return mod(s < p - 1 ? st->r - 1 - s : st->r - (s - (p - 1)), p);
}
static inline int recv_blk(const px_coll_ring_state_t *st, int s)
{
    return send_blk(st, s + 1);
}
static inline size_t chunk_len(const px_coll_ring_state_t *st, int b, size_t c)
{
    size_t l = blk_len(st, b), at = c * st->chunk;
    return at >= l ? 0 : (l - at < st->chunk ? l - at : st->chunk);
}

static int post_send(px_coll_ring_state_t *st, const void *buf, size_t bytes)
{
    if (st->nsreq == st->sreqcap) {
        size_t ncap = st->sreqcap ? st->sreqcap * 2 : 16;
        struct px_request **n = realloc(st->sreq, ncap * sizeof(*n));
        if (NULL == n)
            return PX_ERR_OUT_OF_RESOURCE;
        st->sreq = n;
        st->sreqcap = ncap;
    }
    st->sreq[st->nsreq] = NULL;
    TRY(st->mover->send(st, buf, bytes, &st->sreq[st->nsreq]));
    st->nsreq++;
    return PX_SUCCESS;
}

static int ring_progress(px_coll_sched_t *s)
{
    px_coll_ring_state_t *st = s->priv;
    const px_coll_p2p_t *p2p = px_coll_p2p();
    const size_t es = st->es;
    if (!s->started) {
        s->started = true;
        if (0 == st->nsteps) { /* a group of one */
            if (st->out)
                memmove(st->out, st->in, st->count * es);
            else if (st->work != st->in)
                memmove(st->work, st->in, st->count * es);
            return 1;
        }
        int b = send_blk(st, 0);
        for (size_t c = 0, n = nchunks(st, b); c < n; ++c)
            TRY(post_send(st, st->in + (blk_off(st, b) + c * st->chunk) * es,
                          chunk_len(st, b, c) * es));
    }
    for (;;) {
        /* Post receives ahead. */
        while (st->ahead < st->window && st->post_step < st->nsteps) {
            int b = recv_blk(st, st->post_step);
            size_t slot = st->post_item % (unsigned long)st->window;
            size_t n = chunk_len(st, b, st->post_chunk);
            void *dst = st->post_step < st->p - 1
                            ? st->slots + slot * st->chunk * es
                            : st->work + (blk_off(st, b) + st->post_chunk * st->chunk) * es;
            TRY(st->mover->recv(st, dst, n * es, &st->rreq[slot]));
            st->ahead++;
            st->post_item++;
            if (++st->post_chunk == nchunks(st, b)) {
                st->post_chunk = 0;
                st->post_step++;
            }
        }
        if (0 == st->ahead)
            break;
        /* The oldest receive: reduce it and send it on. */
        size_t slot = st->done_item % (unsigned long)st->window;
        int err;
        if (!p2p->test(st->rreq[slot], &err))
            break;
        p2p->release(&st->rreq[slot]);
        if (err != PX_SUCCESS)
            return err;
        int step = st->done_step, b = recv_blk(st, step);
        size_t c = st->done_chunk, n = chunk_len(st, b, c);
        size_t off = blk_off(st, b) + c * st->chunk;
        char *res = st->work + off * es;
        if (step < st->p - 1) {
            if (st->out && step == st->p - 2)
                res = st->out + c * st->chunk * es;
            px_coll_reduce(res, st->in + off * es, st->slots + slot * st->chunk * es, n, st->dtype,
                           st->rop);
        }
        if (step + 1 < st->nsteps)
            TRY(post_send(st, res, n * es));
        st->ahead--;
        st->done_item++;
        if (++st->done_chunk == nchunks(st, b)) {
            st->done_chunk = 0;
            st->done_step++;
        }
    }
    /* Sends: drop the completed ones. */
    size_t k = 0;
    for (size_t i = 0; i < st->nsreq; ++i) {
        int err;
        if (p2p->test(st->sreq[i], &err)) {
            p2p->release(&st->sreq[i]);
            if (err != PX_SUCCESS)
                return err;
        } else {
            st->sreq[k++] = st->sreq[i];
        }
    }
    st->nsreq = k;
    return st->done_step >= st->nsteps && 0 == st->nsreq ? 1 : 0;
}

static void ring_abort(px_coll_sched_t *s)
{
    px_coll_ring_state_t *st = s->priv;
    if (NULL == st)
        return;
    const px_coll_p2p_t *p2p = px_coll_p2p();
    for (int i = 0; i < st->window; ++i)
        if (st->rreq[i])
            p2p->release(&st->rreq[i]);
    for (size_t i = 0; i < st->nsreq; ++i)
        if (st->sreq[i])
            p2p->release(&st->sreq[i]);
    st->nsreq = 0;
    st->ahead = 0;
}

static void ring_cleanup(px_coll_sched_t *s)
{
    px_coll_ring_state_t *st = s->priv;
    if (NULL == st)
        return;
    ring_abort(s);
    free(st->rreq);
    free(st->sreq);
    free(st->slots);
    free(st);
    s->priv = NULL;
}

/* The pipeline over `total` elements: allreduce (out NULL, work = result)
 * or reduce_scatter (out = this rank's block, work = scratch). */
static int ring_pipeline(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s,
                         size_t total, void *work, void *out, bool allgather)
{
    px_coll_ring_state_t *st = calloc(1, sizeof(*st));
    if (NULL == st)
        return PX_ERR_OUT_OF_RESOURCE;
    s->priv = st;
    s->progress = ring_progress;
    s->abort = ring_abort;
    s->cleanup = ring_cleanup;
    st->s = s;
    st->mover = &px_coll_ring_mover_p2p;
    st->p = g->size;
    st->r = g->rank;
    st->left_world = g->world[mod(g->rank - 1, g->size)];
    st->right_world = g->world[mod(g->rank + 1, g->size)];
    st->tag = s->tag;
    st->es = px_coll_dtype_size(a->dtype);
    st->count = total;
    st->in = a->sbuf;
    st->work = work;
    st->out = out;
    st->dtype = a->dtype;
    st->rop = a->rop;
    st->nsteps = g->size > 1 ? (allgather ? 2 : 1) * (g->size - 1) : 0;
    st->chunk = px_coll_ring_chunk / st->es;
    if (0 == st->chunk)
        st->chunk = 1;
    st->window = px_coll_ring_window > 0 ? px_coll_ring_window : 1;
    st->rreq = calloc((size_t)st->window, sizeof(*st->rreq));
    size_t maxblk = (total + (size_t)g->size - 1) / (size_t)g->size;
    size_t slot_elems = st->chunk < maxblk ? st->chunk : maxblk;
    st->slots = malloc((size_t)st->window * (slot_elems ? slot_elems : 1) * st->es);
    if (NULL == st->rreq || NULL == st->slots)
        return PX_ERR_OUT_OF_RESOURCE;
    /* Slots are indexed by the full chunk size: shrink it to fit the blocks. */
    if (st->chunk > slot_elems && slot_elems)
        st->chunk = slot_elems;
    return PX_SUCCESS;
}

static int ring_allreduce(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    return ring_pipeline(g, a, s, a->count, a->rbuf, NULL, true);
}

static int ring_reduce_scatter(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t total = a->count * (size_t)g->size;
    void *work = g->size > 1 ? px_coll_sched_tmp(s, total * px_coll_dtype_size(a->dtype)) : NULL;
    if (g->size > 1 && NULL == work)
        return PX_ERR_OUT_OF_RESOURCE;
    return ring_pipeline(g, a, s, total, work, a->rbuf, false);
}

/* Ring allgather of variable blocks of buf (block b: [start(b), start(b+1))
 * elements of `count` cut in p), every rank already holding block `rank`.
 * `first` (may be NULL) is where this rank's own block is read in step 0. */
static int ring_allgather_blocks(px_coll_group_t *g, px_coll_sched_t *s, char *buf, size_t count,
                                 size_t es, const void *first)
{
    int p = g->size, r = g->rank, left = mod(r - 1, p), right = mod(r + 1, p);
    for (int step = 0; step < p - 1; ++step) {
        int sb = mod(r - step, p), rb = mod(r - step - 1, p);
        size_t so = px_coll_block_start(count, p, sb),
               sl = px_coll_block_start(count, p, sb + 1) - so;
        size_t ro = px_coll_block_start(count, p, rb),
               rl = px_coll_block_start(count, p, rb + 1) - ro;
        TRY(px_coll_sched_recv(s, left, buf + ro * es, rl * es));
        TRY(px_coll_sched_send(s, right, 0 == step && first ? first : buf + so * es, sl * es));
        TRY(px_coll_sched_round(s));
    }
    return PX_SUCCESS;
}

static int ring_allgather(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t es = px_coll_dtype_size(a->dtype), blk = a->count * es;
    char *dst = a->rbuf;
    /* The own block is copied once step 0's messages are out (it is sent
     * from sbuf), in the first round's local part. */
    int p = g->size;
    if (1 == p) {
        TRY(px_coll_sched_copy(s, dst, a->sbuf, blk));
        return px_coll_sched_round(s);
    }
    int r = g->rank, left = mod(r - 1, p), right = mod(r + 1, p);
    for (int step = 0; step < p - 1; ++step) {
        int sb = mod(r - step, p), rb = mod(r - step - 1, p);
        TRY(px_coll_sched_recv(s, left, dst + (size_t)rb * blk, blk));
        TRY(px_coll_sched_send(s, right, 0 == step ? a->sbuf : dst + (size_t)sb * blk, blk));
        if (0 == step)
            TRY(px_coll_sched_copy(s, dst + (size_t)r * blk, a->sbuf, blk));
        TRY(px_coll_sched_round(s));
    }
    return PX_SUCCESS;
}

static int ring_bcast(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    /* Scatter the blocks from the root, then ring-allgather them. */
    size_t es = px_coll_dtype_size(a->dtype);
    int p = g->size, r = g->rank;
    char *buf = a->rbuf;
    if (p == 1)
        return PX_SUCCESS;
    size_t own = px_coll_block_start(a->count, p, r);
    size_t ownl = px_coll_block_start(a->count, p, r + 1) - own;
    if (r == a->root) {
        for (int k = 1; k < p; ++k) {
            int i = (a->root + k) % p;
            size_t o = px_coll_block_start(a->count, p, i);
            size_t l = px_coll_block_start(a->count, p, i + 1) - o;
            TRY(px_coll_sched_send(s, i, buf + o * es, l * es));
        }
    } else {
        TRY(px_coll_sched_recv(s, a->root, buf + own * es, ownl * es));
    }
    TRY(px_coll_sched_round(s));
    return ring_allgather_blocks(g, s, buf, a->count, es, NULL);
}

px_coll_module_t px_coll_ring_module = {
    .name = "ring",
    .op =
        {
            [PX_COLL_BCAST] = ring_bcast,
            [PX_COLL_ALLREDUCE] = ring_allreduce,
            [PX_COLL_ALLGATHER] = ring_allgather,
            [PX_COLL_REDUCE_SCATTER] = ring_reduce_scatter,
        },
    .group_free = NULL,
};
