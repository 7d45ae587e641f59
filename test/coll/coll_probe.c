/*
 * coll_probe: the collectives' correctness program for test/coll/t_coll.sh,
 * run under pxrun. One launch covers a whole matrix, so the suite stays
 * cheap:
 *
 *   coll_probe matrix [--edges B1,B2,...] [--big-edges OP:B,...] [--large BYTES] [--quick]
 *      The world is split into two groups of every size pair (8 ranks:
 *      8 | 1+7 | 2+6 | 3+5 | 4+4; keys reversed in every other split), and
 *      both groups run, at the same time, every operation x datatype x
 *      reduction, in place and not, blocking and not, at counts 0, 1, odd,
 *      and one below / at / above each edge (bytes: the thresholds the script
 *      set). Results are compared with a serial computation over generated
 *      values in [-4, 4] (unsigned: [0, 8]), so sums and products of floats
 *      are exact integers and order cannot matter; PX_AVG divides that exact
 *      sum as the library does. A poison pattern and a guard area catch
 *      elements not written or written past the end. Then on the world:
 *      allreduce (double sum) of --large bytes, concurrent non-blocking
 *      collectives on both groups and the world interleaved with
 *      point-to-point traffic on user tags, px_test polling.
 *      --big-edges: one operation (doubles, on the world) around one large
 *      threshold each, instead of the whole matrix there.
 *      --quick (sanitizer builds): counts 0, 1, 7 only, and two splits.
 *      Prints "rank R: N checks, E errors" and exits 1 on an error.
 *   coll_probe mismatch
 *      Rank 0 calls an allreduce of 1000 doubles, the others of 2000 (a
 *      user's mistake, or a hostile member): each prints "rank R: mismatched
 *      allreduce: <error>" (or "succeeded", which the script fails).
 *   coll_probe die RANK
 *      Every rank loops over 4 MiB allreduces; RANK kills itself (SIGKILL)
 *      in the middle of the third. The others print "rank R: allreduce
 *      failed: ... after X s", free their buffers, and print "rank R:
 *      finalized" after px_finalize (they ignore SIGTERM so that only the library
 *      can end their wait; the script gives pxrun a long grace period).
 */
#include <signal.h>
#include <stdbool.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"

static int me, np;
static long checks, errors;
static int quiet_errors = 0;

static const size_t dsize[PX_DTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
static const char *dname[PX_DTYPE_COUNT] = {"int8",   "uint8", "int16",  "uint16", "int32",
                                            "uint32", "int64", "uint64", "float",  "double"};
static const char *oname[PX_OP_COUNT] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};
static const char *cname[9] = {"barrier",   "bcast",     "scatter",        "gather",  "reduce",
                               "allreduce", "allgather", "reduce_scatter", "alltoall"};

static bool is_float(int dt)
{
    return PX_FLOAT == dt || PX_DOUBLE == dt;
}
static bool is_unsigned(int dt)
{
    return PX_UINT8 == dt || PX_UINT16 == dt || PX_UINT32 == dt || PX_UINT64 == dt;
}
static bool rop_ok(int dt, int op)
{
    if (PX_AVG == op)
        return is_float(dt);
    if (op >= PX_BAND)
        return !is_float(dt);
    return true;
}

/* The generated value of element i of "source" src (a rank, or rank*p+j). */
static int64_t gen(long src, size_t i, int dt, int salt)
{
    int64_t v = (int64_t)((src * 31 + (long)i * 7 + salt * 13) % 9);
    return is_unsigned(dt) ? v : v - 4;
}

static void store(void *buf, size_t i, int dt, int64_t v)
{
    switch (dt) {
    case PX_INT8:
        ((int8_t *)buf)[i] = (int8_t)v;
        break;
    case PX_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case PX_INT16:
        ((int16_t *)buf)[i] = (int16_t)v;
        break;
    case PX_UINT16:
        ((uint16_t *)buf)[i] = (uint16_t)v;
        break;
    case PX_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case PX_UINT32:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    case PX_INT64:
        ((int64_t *)buf)[i] = v;
        break;
    case PX_UINT64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case PX_FLOAT:
        ((float *)buf)[i] = (float)v;
        break;
    default:
        ((double *)buf)[i] = (double)v;
        break;
    }
}

/* Elements at .. at + count - 1 of buf: element at + i is gen(src, i, dt,
 * salt), as store() would write them one by one (src and salt are never
 * negative: the residue mod 9 steps by 7 from element to element), a typed
 * loop per type: the fills of the large edges were a good part of the
 * probe's CPU. */
#define FILL_AS(T)                                                                                 \
    do {                                                                                           \
        T *o = (T *)buf + at;                                                                      \
        for (size_t i = 0; i < count; ++i) {                                                       \
            o[i] = (T)(v - off);                                                                   \
            v = v >= 2 ? v - 2 : v + 7;                                                            \
        }                                                                                          \
    } while (0)
static void fill(void *buf, size_t at, size_t count, int dt, long src, int salt)
{
    int64_t v = (int64_t)((src * 31 + salt * 13) % 9), off = is_unsigned(dt) ? 0 : 4;
    switch (dt) {
    case PX_INT8:
        FILL_AS(int8_t);
        break;
    case PX_UINT8:
        FILL_AS(uint8_t);
        break;
    case PX_INT16:
        FILL_AS(int16_t);
        break;
    case PX_UINT16:
        FILL_AS(uint16_t);
        break;
    case PX_INT32:
        FILL_AS(int32_t);
        break;
    case PX_UINT32:
        FILL_AS(uint32_t);
        break;
    case PX_INT64:
        FILL_AS(int64_t);
        break;
    case PX_UINT64:
        FILL_AS(uint64_t);
        break;
    case PX_FLOAT:
        FILL_AS(float);
        break;
    default:
        FILL_AS(double);
        break;
    }
}
#undef FILL_AS

/* Serial fold over `n` sources of element i, in the element type (unsigned
 * wrap for integers), written at out[i]. */
static void expect_fold(void *out, size_t i, int dt, int op, int n, long src0, long stride,
                        int salt)
{
    if (is_float(dt)) {
        double acc = (double)gen(src0, i, dt, salt);
        for (int k = 1; k < n; ++k) {
            double x = (double)gen(src0 + k * stride, i, dt, salt);
            switch (op) {
            case PX_SUM:
            case PX_AVG:
                acc += x;
                break;
            case PX_PROD:
                acc *= x;
                break;
            case PX_MIN:
                acc = x < acc ? x : acc;
                break;
            default:
                acc = x > acc ? x : acc;
                break;
            }
        }
        if (PX_FLOAT == dt) {
            float f = (float)acc;
            if (PX_AVG == op)
                f /= (float)n;
            ((float *)out)[i] = f;
        } else {
            if (PX_AVG == op)
                acc /= (double)n;
            ((double *)out)[i] = acc;
        }
        return;
    }
    uint64_t mask = dsize[dt] == 8 ? ~0ull : ((1ull << (8 * dsize[dt])) - 1);
    uint64_t acc = (uint64_t)gen(src0, i, dt, salt) & mask;
    for (int k = 1; k < n; ++k) {
        uint64_t x = (uint64_t)gen(src0 + k * stride, i, dt, salt) & mask;
        /* min / max compare as the type does: sign-extend signed ones. */
        int64_t sa, sx;
        int sh = 64 - 8 * (int)dsize[dt];
        sa = (int64_t)(acc << sh) >> sh;
        sx = (int64_t)(x << sh) >> sh;
        bool lt = is_unsigned(dt) ? x < acc : sx < sa;
        bool gt = is_unsigned(dt) ? x > acc : sx > sa;
        switch (op) {
        case PX_SUM:
            acc = (acc + x) & mask;
            break;
        case PX_PROD:
            acc = (acc * x) & mask;
            break;
        case PX_MIN:
            acc = lt ? x : acc;
            break;
        case PX_MAX:
            acc = gt ? x : acc;
            break;
        case PX_BAND:
            acc &= x;
            break;
        case PX_BOR:
            acc |= x;
            break;
        default:
            acc ^= x;
            break;
        }
    }
    store(out, i, dt, (int64_t)acc);
}

static void fail(const char *what, int op, int dt, int rop, size_t count, int gsize,
                 const char *how, size_t at)
{
    errors++;
    if (quiet_errors++ < 20)
        fprintf(stderr,
                "coll_probe: rank %d: %s %s %s/%s count %zu, group of %d (%s): element %zu "
                "wrong\n",
                me, what, cname[op], dname[dt], rop >= 0 ? oname[rop] : "-", count, gsize, how, at);
}

#define POISON 0xA5
#define GUARD  64

/* Compare `n` elements at got with want; also the guard after them. */
static void compare(const void *got, const void *want, size_t n, int dt, int op, int rop,
                    size_t count, int gsize, const char *how)
{
    checks++;
    size_t es = dsize[dt];
    if (memcmp(got, want, n * es)) {
        size_t at = 0;
        while (at < n && !memcmp((const char *)got + at * es, (const char *)want + at * es, es))
            at++;
        fail("result", op, dt, rop, count, gsize, how, at);
        return;
    }
    const unsigned char *g = (const unsigned char *)got + n * es;
    for (int k = 0; k < GUARD; ++k)
        if (g[k] != POISON) {
            fail("guard overwritten after", op, dt, rop, count, gsize, how, n);
            return;
        }
}

/* n bytes and a guard, all POISON (a buffer the library writes or reads). */
static void *xalloc(size_t n)
{
    void *p = malloc(n + GUARD);
    if (NULL == p) {
        fprintf(stderr, "coll_probe: out of memory (%zu bytes)\n", n);
        px_abort(2, "coll_probe: out of memory");
    }
    memset(p, POISON, n + GUARD);
    return p;
}

/* n bytes the probe writes in full before anything reads them (the
 * expected results, which compare() reads only where written; a send
 * buffer, filled before the call: only its guard is poisoned, as before),
 * not poisoned: at the large edges the poisoning was a good part of the
 * probe's CPU. */
static void *xalloc_filled(size_t n)
{
    unsigned char *p = malloc(n + GUARD);
    if (NULL == p) {
        fprintf(stderr, "coll_probe: out of memory (%zu bytes)\n", n);
        px_abort(2, "coll_probe: out of memory");
    }
    memset(p + n, POISON, GUARD);
    return p;
}

static int run_call(int op, bool nb, bool test_poll, const void *s, void *r, size_t count, int dt,
                    int rop, int root, px_group_t *g)
{
    px_request_t *req = NULL;
    int rc;
    if (!nb) {
        switch (op) {
        case 0:
            return px_group_barrier(g);
        case 1:
            return px_bcast(r, count, dt, root, g);
        case 2:
            return px_scatter(s, r, count, dt, root, g);
        case 3:
            return px_gather(s, r, count, dt, root, g);
        case 4:
            return px_reduce(s, r, count, dt, rop, root, g);
        case 5:
            return px_allreduce(s, r, count, dt, rop, g);
        case 6:
            return px_allgather(s, r, count, dt, g);
        case 7:
            return px_reduce_scatter(s, r, count, dt, rop, g);
        default:
            return px_alltoall(s, r, count, dt, g);
        }
    }
    switch (op) {
    case 0:
        rc = px_ibarrier(g, &req);
        break;
    case 1:
        rc = px_ibcast(r, count, dt, root, g, &req);
        break;
    case 2:
        rc = px_iscatter(s, r, count, dt, root, g, &req);
        break;
    case 3:
        rc = px_igather(s, r, count, dt, root, g, &req);
        break;
    case 4:
        rc = px_ireduce(s, r, count, dt, rop, root, g, &req);
        break;
    case 5:
        rc = px_iallreduce(s, r, count, dt, rop, g, &req);
        break;
    case 6:
        rc = px_iallgather(s, r, count, dt, g, &req);
        break;
    case 7:
        rc = px_ireduce_scatter(s, r, count, dt, rop, g, &req);
        break;
    default:
        rc = px_ialltoall(s, r, count, dt, g, &req);
        break;
    }
    if (rc != PX_SUCCESS)
        return rc;
    if (test_poll) {
        int flag = 0;
        while (!flag) {
            rc = px_test(&req, &flag, NULL);
            if (rc != PX_SUCCESS)
                return rc;
        }
        return req ? PX_ERR_FATAL : PX_SUCCESS;
    }
    return px_wait(&req, NULL);
}

/* One collective call, checked. */
static void check_one(px_group_t *g, int op, int dt, int rop, size_t count, bool inplace, bool nb,
                      bool test_poll, int salt)
{
    int p = px_group_size(g), r = px_group_rank(g);
    size_t es = dsize[dt], blk = count * es;
    int root = (int)((count + (size_t)salt) % (size_t)p);
    char how[64];
    snprintf(how, sizeof(how), "%s%s%s", inplace ? "in place" : "separate",
             nb ? (test_poll ? ", px_test" : ", non-blocking") : "", "");
    void *s = NULL, *rb = NULL, *want = NULL;
    size_t sn = 0, rn = 0; /* elements */
    switch (op) {
    case 1:
        rn = count;
        break;
    case 2:
        sn = count * (size_t)p;
        rn = count;
        break;
    case 3:
        sn = count;
        rn = count * (size_t)p;
        break;
    case 4:
    case 5:
        sn = count;
        rn = count;
        break;
    case 6:
        sn = count;
        rn = count * (size_t)p;
        break;
    case 7:
        sn = count * (size_t)p;
        rn = count;
        break;
    case 8:
        sn = count * (size_t)p;
        rn = count * (size_t)p;
        break;
    default:
        break;
    }
    s = xalloc_filled(sn * es); /* every element is filled below (scatter: at the root) */
    rb = xalloc((op == 7 ? sn : rn) * es); /* reduce_scatter in place: the input is in recvbuf */
    want = xalloc_filled((op == 7 ? sn : rn) * es);
    const void *sarg = s;
    void *rarg = rb;
    size_t wn = rn; /* elements to compare */
    bool compare_here = true;
    switch (op) {
    case 1: /* bcast */
        fill(want, 0, count, dt, root, salt);
        if (r == root)
            fill(rb, 0, count, dt, root, salt);
        break;
    case 2: /* scatter: block j of root's send is source j */
        fill(want, 0, count, dt, r, salt);
        if (r == root)
            for (int j = 0; j < p; ++j)
                fill(s, (size_t)j * count, count, dt, j, salt);
        if (inplace && r == root) {
            rarg = PX_IN_PLACE;
            compare_here = false;
            /* The root's block stays in sendbuf: check it there. */
        }
        break;
    case 3: /* gather */
        fill(s, 0, count, dt, r, salt);
        for (int j = 0; j < p; ++j)
            fill(want, (size_t)j * count, count, dt, j, salt);
        if (inplace && r == root) {
            memcpy((char *)rb + (size_t)r * blk, s, blk);
            sarg = PX_IN_PLACE;
        }
        compare_here = r == root;
        break;
    case 4:
    case 5: /* reduce, allreduce */
        fill(s, 0, count, dt, r, salt);
        for (size_t i = 0; i < count; ++i)
            expect_fold(want, i, dt, rop, p, 0, 1, salt);
        if (inplace && (op == 5 || r == root)) {
            memcpy(rb, s, blk);
            sarg = PX_IN_PLACE;
        }
        compare_here = op == 5 || r == root;
        break;
    case 6: /* allgather */
        fill(s, 0, count, dt, r, salt);
        for (int j = 0; j < p; ++j)
            fill(want, (size_t)j * count, count, dt, j, salt);
        if (inplace) {
            memcpy((char *)rb + (size_t)r * blk, s, blk);
            sarg = PX_IN_PLACE;
        }
        break;
    case 7: /* reduce_scatter: element k of the full vector from rank j is gen(j, k) */
        fill(s, 0, sn, dt, r, salt);
        for (size_t i = 0; i < count; ++i) {
            expect_fold(want, (size_t)r * count + i, dt, rop, p, 0, 1, salt);
            memmove((char *)want + i * es, (char *)want + ((size_t)r * count + i) * es, es);
        }
        if (inplace) {
            memcpy(rb, s, sn * es);
            sarg = PX_IN_PLACE;
        } else {
            memset(rb, POISON, sn * es + GUARD);
        }
        break;
    case 8: /* alltoall: block j from rank r is source r*p+j */
        for (int j = 0; j < p; ++j) {
            fill(s, (size_t)j * count, count, dt, (long)r * p + j, salt);
            fill(want, (size_t)j * count, count, dt, (long)j * p + r, salt);
        }
        if (inplace) {
            memcpy(rb, s, sn * es);
            sarg = PX_IN_PLACE;
        }
        break;
    default:
        break;
    }
    int rc = run_call(op, nb, test_poll, sarg, rarg, count, dt, rop, root, g);
    checks++;
    if (rc != PX_SUCCESS) {
        errors++;
        if (quiet_errors++ < 20)
            fprintf(stderr, "coll_probe: rank %d: %s %s/%s count %zu group of %d (%s): %s\n", me,
                    cname[op], dname[dt], oname[rop], count, p, how, px_strerror(rc));
    } else if (op == 2 && inplace && r == root) {
        checks++;
        if (memcmp((char *)s + (size_t)root * blk, want, blk))
            fail("result", op, dt, -1, count, p, how, 0);
    } else if (op == 7 && inplace) {
        /* Result in the first count elements; the rest of recvbuf is the input. */
        checks++;
        if (memcmp(rb, want, blk))
            fail("result", op, dt, rop, count, p, how, 0);
    } else if (compare_here && op != 0) {
        compare(rb, want, wn, dt, op, op == 4 || op == 5 || op == 7 ? rop : -1, count, p, how);
    }
    free(s);
    free(rb);
    free(want);
}

static size_t edges[16];
static int nedges = 0;
static bool quick = false;
/* --big-edges OP:BYTES,...: one operation around one large threshold (doubles). */
static int big_op[8], nbig = 0;
static size_t big_bytes[8]; /* --quick: counts 0, 1, 7 and two splits (sanitizer builds) */

static void matrix_on(px_group_t *g, int salt)
{
    const size_t small[] = {0, 1, 7, 33};
    for (int op = 0; op < 9; ++op) {
        const bool reduces = op == 4 || op == 5 || op == 7;
        for (int dt = 0; dt < PX_DTYPE_COUNT; ++dt) {
            for (int rop = 0; rop < (reduces ? PX_OP_COUNT : 1); ++rop) {
                if (reduces && !rop_ok(dt, rop))
                    continue;
                /* v 4 and 5: odd group ranks non-blocking, even ones blocking
                 * (a blocking call's shortcut matches the schedule). */
                for (int v = 0; v < 6; ++v) {
                    bool inplace = v & 1, nb = v & 2;
                    if (v >= 4)
                        nb = px_group_rank(g) & 1;
                    if (op == 0 && (inplace || dt))
                        continue;
                    if (op == 1 && inplace)
                        continue; /* bcast has no in-place form */
                    for (size_t c = 0; c < (quick ? 3 : sizeof(small) / sizeof(small[0])); ++c) {
                        if (v >= 4 && c != 1 && c != 3)
                            continue;
                        check_one(g, op, dt, rop, small[c], inplace, nb, v < 4 && nb && c == 2,
                                  salt + (int)c);
                    }
                }
            }
        }
        /* Around every threshold: a few types and reductions. */
        const int dts[] = {PX_INT8, PX_INT32, PX_FLOAT, PX_DOUBLE};
        for (int e = 0; e < nedges && op != 0; ++e)
            for (int d = 0; d < 4; ++d) {
                int dt = dts[d];
                size_t base = edges[e] / dsize[dt];
                size_t cs[3] = {base ? base - 1 : 0, base, base + 1};
                /* Below: non-blocking; at: blocking; above: in place, odd
                 * group ranks non-blocking, even ones blocking. */
                for (int k = 0; k < 3; ++k) {
                    int rop = reduces ? (k == 1 ? PX_MAX : PX_SUM) : PX_SUM;
                    bool nb = 0 == k || (2 == k && (px_group_rank(g) & 1));
                    check_one(g, op, dt, rop, cs[k], k == 2, nb, false, salt + e * 3 + k);
                }
            }
    }
}

/* Non-blocking collectives on both halves and the world at once, with user
 * point-to-point messages crossing them on the same ranks. */
static void concurrent(px_group_t *world, px_group_t *half, int salt)
{
    int p = px_group_size(world);
    size_t n = 1000 + (size_t)salt;
    double *a = xalloc(n * 8), *ra = xalloc(n * 8), *b = xalloc(n * 8), *rbuf = xalloc(n * 8);
    int64_t *c = xalloc(n * 8 * (size_t)px_group_size(half));
    for (size_t i = 0; i < n; ++i) {
        a[i] = (double)gen(me, i, PX_DOUBLE, salt);
        b[i] = (double)gen(px_group_rank(half), i, PX_DOUBLE, salt + 1);
    }
    px_request_t *req[4 + 2];
    int token_out = 1000 + me, token_in = -1;
    int rc = px_iallreduce(a, ra, n, PX_DOUBLE, PX_SUM, world, &req[0]);
    rc |= px_iallreduce(b, rbuf, n, PX_DOUBLE, PX_MAX, half, &req[1]);
    rc |= px_ibarrier(half, &req[2]);
    rc |= px_iallgather(a, c, 1, PX_INT64, half, &req[3]);
    rc |= px_irecv(&token_in, sizeof(int), (me + p - 1) % p, 5, &req[4]);
    rc |= px_isend(&token_out, sizeof(int), (me + 1) % p, 5, &req[5]);
    px_status_t st[6];
    if (PX_SUCCESS == rc)
        rc = px_waitall(6, req, st);
    checks++;
    if (rc != PX_SUCCESS || token_in != 1000 + (me + p - 1) % p) {
        errors++;
        fprintf(stderr,
                "coll_probe: rank %d: concurrent collectives + point-to-point: %s, token "
                "%d\n",
                me, px_strerror(rc), token_in);
    }
    double *want = xalloc(n * 8);
    for (size_t i = 0; i < n; ++i)
        expect_fold(want, i, PX_DOUBLE, PX_SUM, p, 0, 1, salt);
    compare(ra, want, n, PX_DOUBLE, 5, PX_SUM, n, p, "concurrent, world");
    for (size_t i = 0; i < n; ++i)
        expect_fold(want, i, PX_DOUBLE, PX_MAX, px_group_size(half), 0, 1, salt + 1);
    compare(rbuf, want, n, PX_DOUBLE, 5, PX_MAX, n, px_group_size(half), "concurrent, half");
    free(want);
    free(a);
    free(ra);
    free(b);
    free(rbuf);
    free(c);
}

static void large(px_group_t *world, size_t bytes)
{
    size_t n = bytes / 8;
    double *s = malloc(n * 8), *r = malloc(n * 8);
    if (!s || !r)
        px_abort(2, "coll_probe: out of memory");
    for (size_t i = 0; i < n; ++i)
        s[i] = (double)gen(me, i, PX_DOUBLE, 3);
    int rc = px_allreduce(s, r, n, PX_DOUBLE, PX_SUM, world);
    checks++;
    size_t bad = n;
    for (size_t i = 0; i < n && PX_SUCCESS == rc; ++i) {
        double w = 0;
        for (int k = 0; k < np; ++k)
            w += (double)gen(k, i, PX_DOUBLE, 3);
        if (r[i] != w) {
            bad = i;
            break;
        }
    }
    if (rc != PX_SUCCESS || bad != n) {
        errors++;
        fprintf(stderr,
                "coll_probe: rank %d: allreduce of %zu bytes: %s, first wrong element "
                "%zu\n",
                me, bytes, px_strerror(rc), bad);
    }
    /* And a bcast of the same size from the last rank. */
    if (me == np - 1)
        for (size_t i = 0; i < n; ++i)
            r[i] = (double)(i % 1000);
    rc = px_bcast(r, n, PX_DOUBLE, np - 1, world);
    checks++;
    for (size_t i = 0; i < n && PX_SUCCESS == rc; ++i)
        if (r[i] != (double)(i % 1000)) {
            rc = PX_ERR_FATAL;
            break;
        }
    if (rc != PX_SUCCESS) {
        errors++;
        fprintf(stderr, "coll_probe: rank %d: bcast of %zu bytes: %s\n", me, bytes,
                px_strerror(rc));
    }
    free(s);
    free(r);
}

static int die_mode(int victim)
{
    signal(SIGTERM, SIG_IGN); /* only the library may end our wait */
    size_t n = (4u << 20) / 8;
    double *s = calloc(n, 8), *r = calloc(n, 8);
    px_group_t *w = px_group_world();
    double t0 = 0;
    for (int it = 0; it < 1000; ++it) {
        px_request_t *req;
        int rc = px_iallreduce(s, r, n, PX_DOUBLE, PX_SUM, w, &req);
        if (me == victim && it == 2) {
            /* In the middle of the collective: others are waiting on us. */
            for (int k = 0; k < 50; ++k)
                px_progress();
            raise(SIGKILL);
        }
        if (it == 2)
            t0 = px_wtime();
        if (PX_SUCCESS == rc)
            rc = px_wait(&req, NULL);
        if (rc != PX_SUCCESS) {
            printf("rank %d: allreduce failed: %s after %.2f s\n", me, px_strerror(rc),
                   t0 > 0 ? px_wtime() - t0 : 0.0);
            fflush(stdout);
            /* The group is failed: a later collective fails at once. */
            rc = px_allreduce(s, r, 1, PX_DOUBLE, PX_SUM, w);
            printf("rank %d: next allreduce: %s\n", me, px_strerror(rc));
            fflush(stdout);
            /* docs/coll.md keeps a failed collective's buffers Plexus's
             * until px_finalize, because of RDMA in flight; over shm none
             * is, and what the peers still send for the failed collective
             * must be dropped, never copied into these freed buffers. */
            free(s);
            free(r);
            px_finalize();
            printf("rank %d: finalized\n", me);
            fflush(stdout);
            return 0;
        }
    }
    printf("rank %d: no error after 1000 allreduces\n", me);
    return 1;
}

static int mismatch_mode(void)
{
    size_t n = 0 == me ? 1000 : 2000;
    double *s = calloc(n, sizeof *s), *r = calloc(n, sizeof *r);
    if (!s || !r)
        return 2;
    int rc = px_allreduce(s, r, n, PX_DOUBLE, PX_SUM, px_group_world());
    printf("rank %d: mismatched allreduce: %s\n", me,
           PX_SUCCESS == rc ? "succeeded" : px_strerror(rc));
    fflush(stdout);
    free(s);
    free(r);
    px_finalize();
    return 0;
}

int main(int argc, char **argv)
{
#ifdef M_MMAP_THRESHOLD
    /* Buffers up to 32 MiB (glibc's most) from the heap, kept there when
     * freed: glibc would map (and unmap) each one above its threshold
     * afresh, and every call at the large edges faulted in new zeroed pages
     * (a third of the probe's CPU at 1 MiB; each buffer is poisoned or
     * written in full before use either way). The sanitizers' allocator
     * ignores this. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    me = px_rank();
    np = px_size();
    const char *mode = argc > 1 ? argv[1] : "matrix";
    if (0 == strcmp(mode, "die"))
        return die_mode(argc > 2 ? atoi(argv[2]) : 1);
    if (0 == strcmp(mode, "mismatch"))
        return mismatch_mode();
    size_t large_bytes = 0;
    for (int i = 2; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--edges") && i + 1 < argc) {
            char *list = argv[++i];
            for (char *t = strtok(list, ","); t && nedges < 16; t = strtok(NULL, ","))
                edges[nedges++] = strtoull(t, NULL, 10);
        } else if (0 == strcmp(argv[i], "--big-edges") && i + 1 < argc) {
            char *list = argv[++i];
            for (char *t = strtok(list, ","); t && nbig < 8; t = strtok(NULL, ",")) {
                char *colon = strchr(t, ':');
                if (NULL == colon)
                    continue;
                *colon = '\0';
                for (int k = 0; k < 9; ++k)
                    if (0 == strcmp(t, cname[k])) {
                        big_op[nbig] = k;
                        big_bytes[nbig++] = strtoull(colon + 1, NULL, 10);
                    }
            }
        } else if (0 == strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (0 == strcmp(argv[i], "--large") && i + 1 < argc) {
            large_bytes = strtoull(argv[++i], NULL, 10);
        }
    }
    px_group_t *world = px_group_world();
    /* Two groups of every size pair: first `a` ranks and the rest. */
    for (int a = np; a >= (np + 1) / 2; a = quick && a > (np + 1) / 2 ? (np + 1) / 2 : a - 1) {
        int color = me < a ? 0 : 1;
        int key = (a % 2) ? np - me : me; /* reversed keys in every other split */
        px_group_t *g = NULL;
        int rc = px_group_split(world, color, key, &g);
        checks++;
        if (rc != PX_SUCCESS || NULL == g) {
            errors++;
            fprintf(stderr, "coll_probe: rank %d: px_group_split: %s\n", me, px_strerror(rc));
            continue;
        }
        int want_size = color ? np - a : a;
        int want_rank = (a % 2) ? want_size - 1 - (color ? me - a : me) : (color ? me - a : me);
        checks++;
        if (px_group_size(g) != want_size || px_group_rank(g) != want_rank) {
            errors++;
            fprintf(stderr, "coll_probe: rank %d: split %d: size %d rank %d, expected %d %d\n", me,
                    a, px_group_size(g), px_group_rank(g), want_size, want_rank);
        }
        matrix_on(g, a);
        concurrent(world, g, a);
        px_group_free(&g);
    }
    for (int b = 0; b < nbig; ++b) {
        size_t base = big_bytes[b] / 8;
        size_t cs[3] = {base - 1, base, base + 1};
        for (int k = 0; k < 3; ++k)
            check_one(world, big_op[b], PX_DOUBLE, PX_SUM, cs[k], k == 2 && big_op[b] != 1,
                      0 == k || (2 == k && (me & 1)), false, k);
    }
    if (large_bytes)
        large(world, large_bytes);
    /* A split with PX_UNDEFINED and a bad color. */
    px_group_t *none = (px_group_t *)1;
    int rc = px_group_split(world, PX_UNDEFINED, 0, &none);
    checks++;
    if (rc != PX_SUCCESS || none != NULL) {
        errors++;
        fprintf(stderr, "coll_probe: rank %d: split with PX_UNDEFINED: %s\n", me, px_strerror(rc));
    }
    printf("rank %d: %ld checks, %ld errors\n", me, checks, errors);
    fflush(stdout);
    rc = px_finalize();
    return errors || rc != PX_SUCCESS ? 1 : 0;
}
