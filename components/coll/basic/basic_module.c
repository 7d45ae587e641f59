/*
 * basic_module.c: coll/basic's schedules.
 *
 * Binomial trees number ranks relative to the root (vr = rank - root mod p):
 * in a bcast, vr receives from vr - 2^k where 2^k is its lowest set bit and
 * sends to vr + 2^j for every smaller 2^j; a reduce runs the same tree
 * upward, each rank reducing its children's vectors into its own before
 * sending to its parent. Every operation is correct for any group size.
 */
#include <string.h>
#include "components/coll/basic/basic.h"
#include "core/util/error.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_ != PX_SUCCESS)                                                                     \
            return rc_;                                                                            \
    } while (0)

static inline int abs_rank(int vr, int root, int p)
{
    return (vr + root) % p;
}

/* Binomial bcast of `bytes` at buf from `root`. */
static int tree_bcast(px_coll_sched_t *s, px_coll_group_t *g, void *buf, size_t bytes, int root)
{
    int p = g->size, vr = (g->rank - root + p) % p, mask = 1;
    while (mask < p) {
        if (vr & mask) {
            TRY(px_coll_sched_recv(s, abs_rank(vr - mask, root, p), buf, bytes));
            TRY(px_coll_sched_round(s));
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < p)
            TRY(px_coll_sched_send(s, abs_rank(vr + mask, root, p), buf, bytes));
    return px_coll_sched_round(s);
}

/* Binomial reduce of `count` elements of sbuf into rbuf at `root` (rbuf
 * is used only there). */
static int tree_reduce(px_coll_sched_t *s, px_coll_group_t *g, const void *sbuf, void *rbuf,
                       size_t count, int dtype, int rop, int root)
{
    int p = g->size, vr = (g->rank - root + p) % p;
    size_t bytes = count * px_coll_dtype_size(dtype);
    /* Children: vr | mask for each mask below vr's lowest set bit. */
    int nchild = 0;
    for (int mask = 1; mask < p && !(vr & mask); mask <<= 1)
        if ((vr | mask) < p)
            nchild++;
    const void *acc_in = sbuf;
    void *acc = g->rank == root ? rbuf : NULL;
    if (nchild > 0) {
        if (NULL == acc && NULL == (acc = px_coll_sched_tmp(s, bytes)))
            return PX_ERR_OUT_OF_RESOURCE;
        void *in = px_coll_sched_tmp(s, bytes);
        if (NULL == in)
            return PX_ERR_OUT_OF_RESOURCE;
        int first = 1;
        for (int mask = 1; mask < p && !(vr & mask); mask <<= 1) {
            int child = vr | mask;
            if (child >= p)
                continue;
            TRY(px_coll_sched_recv(s, abs_rank(child, root, p), in, bytes));
            /* The first reduction reads sbuf, so no copy of it is needed. */
            TRY(px_coll_sched_reduce(s, acc, first ? sbuf : acc, in, count, dtype, rop));
            TRY(px_coll_sched_round(s));
            first = 0;
        }
        acc_in = acc;
    } else if (acc) {
        TRY(px_coll_sched_copy(s, acc, sbuf, bytes)); /* root alone */
        TRY(px_coll_sched_round(s));
    }
    if (vr != 0) {
        int lowbit = vr & -vr;
        TRY(px_coll_sched_send(s, abs_rank(vr - lowbit, root, p), acc_in, bytes));
        TRY(px_coll_sched_round(s));
    }
    return PX_SUCCESS;
}

static int basic_barrier(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    (void)a;
    /* Fan-in then fan-out over the binomial tree of rank 0, zero bytes. */
    int p = g->size, vr = g->rank;
    for (int mask = 1; mask < p && !(vr & mask); mask <<= 1)
        if ((vr | mask) < p)
            TRY(px_coll_sched_recv(s, vr | mask, NULL, 0));
    TRY(px_coll_sched_round(s));
    if (vr) {
        TRY(px_coll_sched_send(s, vr - (vr & -vr), NULL, 0));
        TRY(px_coll_sched_round(s));
    }
    return tree_bcast(s, g, NULL, 0, 0);
}

static int basic_bcast(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    return tree_bcast(s, g, a->rbuf, a->count * px_coll_dtype_size(a->dtype), a->root);
}

static int basic_scatter(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t blk = a->count * px_coll_dtype_size(a->dtype);
    if (g->rank != a->root)
        return px_coll_sched_recv(s, a->root, a->rbuf, blk);
    const char *src = a->sbuf;
    for (int k = 1; k < g->size; ++k) {
        int i = (a->root + k) % g->size;
        TRY(px_coll_sched_send(s, i, src + (size_t)i * blk, blk));
    }
    TRY(px_coll_sched_copy(s, a->rbuf, src + (size_t)a->root * blk, blk));
    return px_coll_sched_round(s);
}

static int basic_gather(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t blk = a->count * px_coll_dtype_size(a->dtype);
    if (g->rank != a->root)
        return px_coll_sched_send(s, a->root, a->sbuf, blk);
    char *dst = a->rbuf;
    for (int k = 1; k < g->size; ++k) {
        int i = (a->root + k) % g->size;
        TRY(px_coll_sched_recv(s, i, dst + (size_t)i * blk, blk));
    }
    TRY(px_coll_sched_copy(s, dst + (size_t)a->root * blk, a->sbuf, blk));
    return px_coll_sched_round(s);
}

static int basic_reduce(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    return tree_reduce(s, g, a->sbuf, a->rbuf, a->count, a->dtype, a->rop, a->root);
}

static int basic_allreduce(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    TRY(tree_reduce(s, g, a->sbuf, a->rbuf, a->count, a->dtype, a->rop, 0));
    return tree_bcast(s, g, a->rbuf, a->count * px_coll_dtype_size(a->dtype), 0);
}

static int basic_allgather(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t blk = a->count * px_coll_dtype_size(a->dtype);
    char *dst = a->rbuf;
    if (0 == g->rank) {
        for (int i = 1; i < g->size; ++i)
            TRY(px_coll_sched_recv(s, i, dst + (size_t)i * blk, blk));
        TRY(px_coll_sched_copy(s, dst, a->sbuf, blk));
    } else {
        TRY(px_coll_sched_send(s, 0, a->sbuf, blk));
    }
    TRY(px_coll_sched_round(s));
    return tree_bcast(s, g, a->rbuf, blk * (size_t)g->size, 0);
}

static int basic_reduce_scatter(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t blk = a->count * px_coll_dtype_size(a->dtype);
    size_t total = a->count * (size_t)g->size;
    void *full = NULL;
    if (0 == g->rank && NULL == (full = px_coll_sched_tmp(s, blk * (size_t)g->size)))
        return PX_ERR_OUT_OF_RESOURCE;
    TRY(tree_reduce(s, g, a->sbuf, full, total, a->dtype, a->rop, 0));
    px_coll_args_t sc = *a;
    sc.opid = PX_COLL_SCATTER;
    sc.sbuf = full;
    sc.root = 0;
    return basic_scatter(g, &sc, s);
}

static int basic_alltoall(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t blk = a->count * px_coll_dtype_size(a->dtype);
    const char *src = a->sbuf;
    char *dst = a->rbuf;
    int p = g->size, r = g->rank;
    for (int k = 1; k < p; ++k) {
        int from = (r - k + p) % p;
        TRY(px_coll_sched_recv(s, from, dst + (size_t)from * blk, blk));
    }
    for (int k = 1; k < p; ++k) {
        int to = (r + k) % p;
        TRY(px_coll_sched_send(s, to, src + (size_t)to * blk, blk));
    }
    TRY(px_coll_sched_copy(s, dst + (size_t)r * blk, src + (size_t)r * blk, blk));
    return px_coll_sched_round(s);
}

px_coll_module_t px_coll_basic_module = {
    .name = "basic",
    .op =
        {
            [PX_COLL_BARRIER] = basic_barrier,
            [PX_COLL_BCAST] = basic_bcast,
            [PX_COLL_SCATTER] = basic_scatter,
            [PX_COLL_GATHER] = basic_gather,
            [PX_COLL_REDUCE] = basic_reduce,
            [PX_COLL_ALLREDUCE] = basic_allreduce,
            [PX_COLL_ALLGATHER] = basic_allgather,
            [PX_COLL_REDUCE_SCATTER] = basic_reduce_scatter,
            [PX_COLL_ALLTOALL] = basic_alltoall,
        },
    .group_free = NULL,
};
