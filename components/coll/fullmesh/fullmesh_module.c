/*
 * fullmesh_module.c: coll/fullmesh's schedules.
 *
 * Recursive doubling (allreduce), p ranks, P the largest power of two <= p,
 * rem = p - P. The first 2*rem ranks fold in pairs: each even one sends its
 * vector to the odd one above it and sits out; then the P ranks left exchange
 * whole vectors with the partner at distance 1, 2, 4, ... (in the numbering
 * without the ranks sitting out), reducing after each exchange; last, each
 * odd folded rank sends the result back to its even partner. log2(P) + 2
 * rounds at most; all ranks end with bitwise the same result, since each
 * exchange reduces the same two operands on both sides.
 *
 *     4 ranks:  0 <-> 1   2 <-> 3      (distance 1)
 *               0 <-> 2   1 <-> 3      (distance 2)
 */
#include <stdlib.h>
#include <string.h>
#include "components/coll/fullmesh/fullmesh.h"
#include "core/util/error.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_ != PX_SUCCESS)                                                                     \
            return rc_;                                                                            \
    } while (0)

/* Ranks outnumber cores (the progress engine yields when idle; see
 * core/util/progress.h) and the group is larger than two: the linear forms,
 * unless coll_fullmesh_linear says otherwise. */
bool px_coll_fullmesh_linear(const px_coll_group_t *g)
{
    if (g->size <= 2 || 1 == px_coll_fullmesh_linear_mode)
        return false;
    return 2 == px_coll_fullmesh_linear_mode || px_progress_idle_limit > 0;
}

/* Through rank 0: everyone signals it, it answers everyone. Two passes over
 * the ranks instead of log2(p) rounds: better when ranks outnumber cores
 * and every round waits for the scheduler to run each rank. */
static int fm_barrier_linear(px_coll_group_t *g, px_coll_sched_t *s)
{
    int p = g->size;
    if (0 == g->rank) {
        for (int i = 1; i < p; ++i)
            TRY(px_coll_sched_recv(s, i, NULL, 0));
        TRY(px_coll_sched_round(s));
        for (int i = 1; i < p; ++i)
            TRY(px_coll_sched_send(s, i, NULL, 0));
        return px_coll_sched_round(s);
    }
    TRY(px_coll_sched_send(s, 0, NULL, 0));
    TRY(px_coll_sched_round(s));
    TRY(px_coll_sched_recv(s, 0, NULL, 0));
    return px_coll_sched_round(s);
}

static int fm_barrier(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    (void)a;
    if (px_coll_fullmesh_linear(g))
        return fm_barrier_linear(g, s);
    /* Dissemination: round k signals rank + 2^k and waits for rank - 2^k. */
    int p = g->size, r = g->rank;
    for (int k = 1; k < p; k <<= 1) {
        TRY(px_coll_sched_recv(s, (r - k + p) % p, NULL, 0));
        TRY(px_coll_sched_send(s, (r + k) % p, NULL, 0));
        TRY(px_coll_sched_round(s));
    }
    return PX_SUCCESS;
}

static int fm_bcast(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    if (g->rank != a->root)
        return px_coll_sched_recv(s, a->root, a->rbuf, bytes);
    for (int k = 1; k < g->size; ++k)
        TRY(px_coll_sched_send(s, (a->root + k) % g->size, a->rbuf, bytes));
    return px_coll_sched_round(s);
}

/* Everyone sends its vector to rank 0, which reduces them in rank order and
 * sends the result back: two passes over the ranks (see fm_barrier_linear). */
static int fm_allreduce_linear(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    int p = g->size;
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    if (g->rank) {
        TRY(px_coll_sched_send(s, 0, a->sbuf, bytes));
        TRY(px_coll_sched_round(s));
        TRY(px_coll_sched_recv(s, 0, a->rbuf, bytes));
        return px_coll_sched_round(s);
    }
    char *in = px_coll_sched_tmp(s, bytes * (size_t)(p - 1));
    if (NULL == in)
        return PX_ERR_OUT_OF_RESOURCE;
    for (int i = 1; i < p; ++i)
        TRY(px_coll_sched_recv(s, i, in + (size_t)(i - 1) * bytes, bytes));
    const void *cur = a->sbuf;
    for (int i = 1; i < p; ++i) {
        TRY(px_coll_sched_reduce(s, a->rbuf, cur, in + (size_t)(i - 1) * bytes, a->count, a->dtype,
                                 a->rop));
        cur = a->rbuf;
    }
    TRY(px_coll_sched_round(s));
    for (int i = 1; i < p; ++i)
        TRY(px_coll_sched_send(s, i, a->rbuf, bytes));
    return px_coll_sched_round(s);
}

/* Rabenseifner's allreduce: a reduce-scatter by recursive halving, then an
 * allgather by recursive doubling, over the largest power of two P <= p
 * ranks (the first 2(p-P) ranks fold in pairs first, as in recursive
 * doubling). The vector is cut in P blocks; newrank n ends the first half
 * owning block n complete:
 *
 *     4 ranks, blocks A B C D       keeps         sends
 *     step 1 (distance 2): rank 0   A B           C D  to rank 2
 *     step 2 (distance 1): rank 0   A             B    to rank 1
 *     then the same exchanges in reverse order, each rank sending what it
 *     has complete: A to 1, then A B to 2.
 *
 * Each rank moves 2(P-1)/P of the vector, as a ring does, in 2 log2(P)
 * steps instead of 2(p-1): fewer waits for the scheduler when ranks
 * outnumber cores. Each block is reduced by one rank only (lower rank's
 * operand first), so every rank ends with bitwise the same result. */
bool px_coll_fullmesh_halving(const px_coll_group_t *g, size_t bytes)
{
    return g->size > 1 && bytes >= px_coll_fullmesh_halving_min;
}

/* Blocks [b, b + count) of n elements cut into pof2 blocks: their first
 * element in *off; returns how many elements they hold. */
static size_t blocks(size_t n, int pof2, int b, int count, size_t *off)
{
    *off = px_coll_block_start(n, pof2, b);
    return px_coll_block_start(n, pof2, b + count) - *off;
}

/* The group rank of the folded rank np (the first rem pairs folded into
 * their odd member). */
static int unfolded(int np, int rem)
{
    return np < rem ? np * 2 + 1 : np + rem;
}

static int fm_allreduce_halving(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    int p = g->size, r = g->rank;
    size_t es = px_coll_dtype_size(a->dtype), n = a->count;
    int pof2 = 1;
    while (pof2 * 2 <= p)
        pof2 *= 2;
    int rem = p - pof2, newrank;
    char *rb = a->rbuf;
    const char *cur = a->sbuf;
    /* Scratch: the folded vector, or the largest half received. */
    size_t half = px_coll_block_start(n, pof2, pof2 / 2);
    char *tmp = px_coll_sched_tmp(s, (r < 2 * rem ? n : half) * es);
    if (NULL == tmp)
        return PX_ERR_OUT_OF_RESOURCE;
    if (r < 2 * rem) {
        if (0 == r % 2) {
            TRY(px_coll_sched_send(s, r + 1, cur, n * es));
            TRY(px_coll_sched_round(s));
            newrank = -1;
        } else {
            TRY(px_coll_sched_recv(s, r - 1, tmp, n * es));
            TRY(px_coll_sched_reduce(s, rb, tmp, cur, n, a->dtype, a->rop));
            TRY(px_coll_sched_round(s));
            cur = rb;
            newrank = r / 2;
        }
    } else {
        newrank = r - rem;
    }
    if (newrank >= 0) {
        /* Reduce-scatter: halve the range of blocks at each step. */
        for (int mask = pof2 / 2; mask >= 1; mask >>= 1) {
            int np = newrank ^ mask, peer = unfolded(np, rem);
            size_t ko, so;
            size_t kl = blocks(n, pof2, newrank & ~(mask - 1), mask, &ko);
            size_t sl = blocks(n, pof2, np & ~(mask - 1), mask, &so);
            TRY(px_coll_sched_recv(s, peer, tmp, kl * es));
            TRY(px_coll_sched_send(s, peer, cur + so * es, sl * es));
            const void *mine = cur + ko * es;
            TRY(px_coll_sched_reduce(s, rb + ko * es, np < newrank ? tmp : mine,
                                     np < newrank ? mine : tmp, kl, a->dtype, a->rop));
            TRY(px_coll_sched_round(s));
            cur = rb;
        }
        /* Allgather: double the range back. */
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int np = newrank ^ mask, peer = unfolded(np, rem);
            size_t ko, ro;
            size_t kl = blocks(n, pof2, newrank & ~(mask - 1), mask, &ko);
            size_t rl = blocks(n, pof2, np & ~(mask - 1), mask, &ro);
            TRY(px_coll_sched_recv(s, peer, rb + ro * es, rl * es));
            TRY(px_coll_sched_send(s, peer, rb + ko * es, kl * es));
            TRY(px_coll_sched_round(s));
        }
    }
    if (r < 2 * rem) {
        if (r % 2)
            TRY(px_coll_sched_send(s, r - 1, rb, n * es));
        else
            TRY(px_coll_sched_recv(s, r + 1, rb, n * es));
        TRY(px_coll_sched_round(s));
    }
    return PX_SUCCESS;
}

static int fm_allreduce(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    if (px_coll_fullmesh_halving(g, a->count * px_coll_dtype_size(a->dtype)))
        return fm_allreduce_halving(g, a, s);
    if (px_coll_fullmesh_linear(g))
        return fm_allreduce_linear(g, a, s);
    int p = g->size, r = g->rank;
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    int pof2 = 1;
    while (pof2 * 2 <= p)
        pof2 *= 2;
    int rem = p - pof2, newrank;
    void *tmp = p > 1 ? px_coll_sched_tmp(s, bytes) : NULL;
    if (p > 1 && NULL == tmp)
        return PX_ERR_OUT_OF_RESOURCE;
    const void *cur = a->sbuf; /* the vector so far: sbuf until the first reduction */
    if (r < 2 * rem) {
        if (0 == r % 2) {
            TRY(px_coll_sched_send(s, r + 1, cur, bytes));
            TRY(px_coll_sched_round(s));
            newrank = -1;
        } else {
            TRY(px_coll_sched_recv(s, r - 1, tmp, bytes));
            TRY(px_coll_sched_reduce(s, a->rbuf, tmp, cur, a->count, a->dtype, a->rop));
            TRY(px_coll_sched_round(s));
            cur = a->rbuf;
            newrank = r / 2;
        }
    } else {
        newrank = r - rem;
    }
    if (newrank >= 0) {
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int np = newrank ^ mask, peer = unfolded(np, rem);
            TRY(px_coll_sched_recv(s, peer, tmp, bytes));
            TRY(px_coll_sched_send(s, peer, cur, bytes));
            /* The lower rank's operand first on both sides: bitwise the same
             * result (NaN and signed zeros in min/max included). */
            const void *lo = np < newrank ? tmp : cur, *hi = np < newrank ? cur : tmp;
            TRY(px_coll_sched_reduce(s, a->rbuf, lo, hi, a->count, a->dtype, a->rop));
            TRY(px_coll_sched_round(s));
            cur = a->rbuf;
        }
    }
    if (cur != a->rbuf && newrank >= 0) {
        TRY(px_coll_sched_copy(s, a->rbuf, cur, bytes)); /* a group of one */
        TRY(px_coll_sched_round(s));
    }
    if (r < 2 * rem) {
        if (r % 2)
            TRY(px_coll_sched_send(s, r - 1, a->rbuf, bytes));
        else
            TRY(px_coll_sched_recv(s, r + 1, a->rbuf, bytes));
        TRY(px_coll_sched_round(s));
    }
    return PX_SUCCESS;
}

static int fm_allgather(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t blk = a->count * px_coll_dtype_size(a->dtype);
    int p = g->size, r = g->rank;
    char *dst = a->rbuf;
    for (int k = 1; k < p; ++k) {
        int from = (r - k + p) % p;
        TRY(px_coll_sched_recv(s, from, dst + (size_t)from * blk, blk));
    }
    for (int k = 1; k < p; ++k)
        TRY(px_coll_sched_send(s, (r + k) % p, a->sbuf, blk));
    TRY(px_coll_sched_copy(s, dst + (size_t)r * blk, a->sbuf, blk));
    return px_coll_sched_round(s);
}

static int fm_alltoall(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t blk = a->count * px_coll_dtype_size(a->dtype);
    int p = g->size, r = g->rank;
    const char *src = a->sbuf;
    char *dst = a->rbuf;
    TRY(px_coll_sched_copy(s, dst + (size_t)r * blk, src + (size_t)r * blk, blk));
    TRY(px_coll_sched_round(s));
    /* Pairwise: in round k, send to rank + k and receive from rank - k. */
    for (int k = 1; k < p; ++k) {
        int to = (r + k) % p, from = (r - k + p) % p;
        TRY(px_coll_sched_recv(s, from, dst + (size_t)from * blk, blk));
        TRY(px_coll_sched_send(s, to, src + (size_t)to * blk, blk));
        TRY(px_coll_sched_round(s));
    }
    return PX_SUCCESS;
}

/* ---- blocking shortcuts: the same messages as the schedules above, sent
 * and awaited directly (no schedule is built or interpreted) ---- */

/* Scratch of a shortcut: on the stack up to FM_STACK bytes, else malloc. */
#define FM_STACK 4096
typedef struct fm_tmp {
    void *p;
    bool heap;
} fm_tmp_t;
static inline void *fm_tmp_get(fm_tmp_t *t, void *stack, size_t bytes)
{
    t->heap = bytes > FM_STACK;
    t->p = t->heap ? malloc(bytes) : stack;
    return t->p;
}
static inline void fm_tmp_put(fm_tmp_t *t)
{
    if (t->heap)
        free(t->p);
}

static int fm_run_barrier(px_coll_group_t *g, const px_coll_args_t *a, int tag)
{
    (void)a;
    int p = g->size, r = g->rank;
    if (p > PX_COLL_RUN_MAXREQ)
        return PX_ERR_NOT_SUPPORTED;
    px_coll_run_t R;
    px_coll_run_init(&R, g, PX_COLL_BARRIER, tag);
    if (px_coll_fullmesh_linear(g)) {
        if (0 == r) {
            for (int i = 1; i < p; ++i)
                TRY(px_coll_run_recv(&R, i, NULL, 0));
            TRY(px_coll_run_wait(&R));
            for (int i = 1; i < p; ++i)
                TRY(px_coll_run_send(&R, i, NULL, 0));
            return px_coll_run_wait(&R);
        }
        TRY(px_coll_run_send(&R, 0, NULL, 0));
        TRY(px_coll_run_wait(&R));
        TRY(px_coll_run_recv(&R, 0, NULL, 0));
        return px_coll_run_wait(&R);
    }
    for (int k = 1; k < p; k <<= 1) {
        TRY(px_coll_run_send(&R, (r + k) % p, NULL, 0));
        TRY(px_coll_run_recv(&R, (r - k + p) % p, NULL, 0));
        TRY(px_coll_run_wait(&R));
    }
    return PX_SUCCESS;
}

static int fm_run_bcast(px_coll_group_t *g, const px_coll_args_t *a, int tag)
{
    int p = g->size;
    if (p > PX_COLL_RUN_MAXREQ)
        return PX_ERR_NOT_SUPPORTED;
    size_t bytes = a->count * px_coll_dtype_bytes(a->dtype);
    px_coll_run_t R;
    px_coll_run_init(&R, g, PX_COLL_BCAST, tag);
    if (g->rank != a->root)
        TRY(px_coll_run_recv(&R, a->root, a->rbuf, bytes));
    else
        for (int k = 1; k < p; ++k)
            TRY(px_coll_run_send(&R, (a->root + k) % p, a->rbuf, bytes));
    return px_coll_run_wait(&R);
}

static int fm_run_allreduce_linear(px_coll_group_t *g, const px_coll_args_t *a, int tag)
{
    int p = g->size;
    size_t bytes = a->count * px_coll_dtype_bytes(a->dtype);
    px_coll_run_t R;
    px_coll_run_init(&R, g, PX_COLL_ALLREDUCE, tag);
    if (g->rank) {
        TRY(px_coll_run_send(&R, 0, a->sbuf, bytes));
        TRY(px_coll_run_wait(&R));
        TRY(px_coll_run_recv(&R, 0, a->rbuf, bytes));
        return px_coll_run_wait(&R);
    }
    _Alignas(64) unsigned char stack[FM_STACK];
    fm_tmp_t t;
    char *in = fm_tmp_get(&t, stack, bytes * (size_t)(p - 1));
    if (NULL == in)
        return PX_ERR_OUT_OF_RESOURCE;
    int rc = PX_SUCCESS;
    for (int i = 1; i < p && PX_SUCCESS == rc; ++i)
        rc = px_coll_run_recv(&R, i, in + (size_t)(i - 1) * bytes, bytes);
    if (PX_SUCCESS == rc)
        rc = px_coll_run_wait(&R);
    if (PX_SUCCESS == rc) {
        const void *cur = a->sbuf;
        for (int i = 1; i < p; ++i) {
            px_coll_reduce(a->rbuf, cur, in + (size_t)(i - 1) * bytes, a->count, a->dtype, a->rop);
            cur = a->rbuf;
        }
        for (int i = 1; i < p && PX_SUCCESS == rc; ++i)
            rc = px_coll_run_send(&R, i, a->rbuf, bytes);
        if (PX_SUCCESS == rc)
            rc = px_coll_run_wait(&R);
    }
    fm_tmp_put(&t);
    return rc;
}

/* Two ranks: one exchange of the whole vector (recursive doubling's only
 * step), received into the result unless the input is there. */
#define FM_PAIR_STACK 512
static int fm_run_allreduce_pair(px_coll_group_t *g, const px_coll_args_t *a, int tag)
{
    size_t bytes = a->count * px_coll_dtype_bytes(a->dtype);
    int peer = 1 - g->rank;
    _Alignas(64) unsigned char stack[FM_PAIR_STACK];
    void *in = a->rbuf;
    if (a->sbuf == a->rbuf)
        in = stack;
    px_coll_run_t R;
    px_coll_run_init(&R, g, PX_COLL_ALLREDUCE, tag);
    /* Send first: the peer waits for it, and ours arrives after we post. */
    TRY(px_coll_run_send(&R, peer, a->sbuf, bytes));
    TRY(px_coll_run_recv(&R, peer, in, bytes));
    TRY(px_coll_run_wait(&R));
    /* Rank 0's operand first on both sides (as fm_allreduce). */
    const void *lo = peer ? a->sbuf : in, *hi = peer ? in : a->sbuf;
    return px_coll_reduce(a->rbuf, lo, hi, a->count, a->dtype, a->rop);
}

/* Recursive doubling, as fm_allreduce. Received vectors land in the result
 * when the input is elsewhere (then reduced in place), else in scratch. */
static int fm_run_allreduce(px_coll_group_t *g, const px_coll_args_t *a, int tag)
{
    int p = g->size, r = g->rank;
    if (px_coll_fullmesh_halving(g, a->count * px_coll_dtype_bytes(a->dtype)))
        return PX_ERR_NOT_SUPPORTED; /* the schedule: large messages */
    if (2 == p && (a->sbuf != a->rbuf || a->count * px_coll_dtype_bytes(a->dtype) <= FM_PAIR_STACK))
        return fm_run_allreduce_pair(g, a, tag);
    if (1 == p) {
        if (a->rbuf != a->sbuf)
            memcpy(a->rbuf, a->sbuf, a->count * px_coll_dtype_bytes(a->dtype));
        return PX_SUCCESS;
    }
    if (px_coll_fullmesh_linear(g))
        return p > PX_COLL_RUN_MAXREQ ? PX_ERR_NOT_SUPPORTED : fm_run_allreduce_linear(g, a, tag);
    size_t bytes = a->count * px_coll_dtype_bytes(a->dtype);
    int pof2 = 1;
    while (pof2 * 2 <= p)
        pof2 *= 2;
    int rem = p - pof2, newrank;
    px_coll_run_t R;
    px_coll_run_init(&R, g, PX_COLL_ALLREDUCE, tag);
    _Alignas(64) unsigned char stack[FM_STACK];
    fm_tmp_t t;
    char *tmp = fm_tmp_get(&t, stack, bytes);
    if (NULL == tmp)
        return PX_ERR_OUT_OF_RESOURCE;
    int rc = PX_SUCCESS;
    const void *cur = a->sbuf;
    if (r < 2 * rem) {
        if (0 == r % 2) {
            rc = px_coll_run_send(&R, r + 1, cur, bytes);
            if (PX_SUCCESS == rc)
                rc = px_coll_run_wait(&R);
            newrank = -1;
        } else {
            rc = px_coll_run_recv(&R, r - 1, tmp, bytes);
            if (PX_SUCCESS == rc)
                rc = px_coll_run_wait(&R);
            if (PX_SUCCESS == rc)
                px_coll_reduce(a->rbuf, tmp, cur, a->count, a->dtype, a->rop);
            cur = a->rbuf;
            newrank = r / 2;
        }
    } else {
        newrank = r - rem;
    }
    for (int mask = 1; newrank >= 0 && mask < pof2 && PX_SUCCESS == rc; mask <<= 1) {
        int np = newrank ^ mask;
        int peer = np < rem ? np * 2 + 1 : np + rem;
        /* Land it in the result when that is not the operand we send. */
        void *in = cur != a->rbuf ? a->rbuf : tmp;
        rc = px_coll_run_recv(&R, peer, in, bytes);
        if (PX_SUCCESS == rc)
            rc = px_coll_run_send(&R, peer, cur, bytes);
        if (PX_SUCCESS == rc)
            rc = px_coll_run_wait(&R);
        if (PX_SUCCESS == rc) {
            const void *lo = np < newrank ? in : cur, *hi = np < newrank ? cur : in;
            px_coll_reduce(a->rbuf, lo, hi, a->count, a->dtype, a->rop);
        }
        cur = a->rbuf;
    }
    if (r < 2 * rem && PX_SUCCESS == rc) {
        if (r % 2)
            rc = px_coll_run_send(&R, r - 1, a->rbuf, bytes);
        else
            rc = px_coll_run_recv(&R, r + 1, a->rbuf, bytes);
        if (PX_SUCCESS == rc)
            rc = px_coll_run_wait(&R);
    }
    fm_tmp_put(&t);
    return rc;
}

static int fm_run_allgather(px_coll_group_t *g, const px_coll_args_t *a, int tag)
{
    int p = g->size, r = g->rank;
    if (2 * (p - 1) > PX_COLL_RUN_MAXREQ)
        return PX_ERR_NOT_SUPPORTED;
    size_t blk = a->count * px_coll_dtype_bytes(a->dtype);
    char *dst = a->rbuf;
    px_coll_run_t R;
    px_coll_run_init(&R, g, PX_COLL_ALLGATHER, tag);
    /* Sends first: the peers wait for them; theirs arrive after we post. */
    for (int k = 1; k < p; ++k)
        TRY(px_coll_run_send(&R, (r + k) % p, a->sbuf, blk));
    for (int k = 1; k < p; ++k) {
        int from = (r - k + p) % p;
        TRY(px_coll_run_recv(&R, from, dst + (size_t)from * blk, blk));
    }
    if (dst + (size_t)r * blk != a->sbuf)
        memcpy(dst + (size_t)r * blk, a->sbuf, blk);
    return px_coll_run_wait(&R);
}

px_coll_module_t px_coll_fullmesh_module = {
    .name = "fullmesh",
    .op =
        {
            [PX_COLL_BARRIER] = fm_barrier,
            [PX_COLL_BCAST] = fm_bcast,
            [PX_COLL_ALLREDUCE] = fm_allreduce,
            [PX_COLL_ALLGATHER] = fm_allgather,
            [PX_COLL_ALLTOALL] = fm_alltoall,
        },
    .group_free = NULL,
    .run =
        {
            [PX_COLL_BARRIER] = fm_run_barrier,
            [PX_COLL_BCAST] = fm_run_bcast,
            [PX_COLL_ALLREDUCE] = fm_run_allreduce,
            [PX_COLL_ALLGATHER] = fm_run_allgather,
        },
};
