/*
 * px_coll_check_worker.c: one rank of a px_coll_check job (px_coll_check.h):
 * splits the world into groups of every size, runs one operation there over
 * every datatype and reduction, several counts and roots, blocking and not,
 * in place and not, and compares each result with a serial computation; the
 * guard bytes after every buffer must stay untouched.
 */
#include <errno.h>
#include <limits.h>
#ifdef __linux__
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core/mca/mca_tools.h"
#include "core/mca/var.h"
#include "core/util/argv.h"
#include "core/util/error.h"
#include "frameworks/coll/coll.h"
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#include "tools/px_coll_check/px_coll_check.h"

#define CC_GUARD  64 /* bytes after every buffer that must stay untouched */
#define CC_POISON 0xA5

typedef struct cc_state {
    const char *comp;
    int op;
    bool quick;
    long calls, errors;
    char first[CC_REASON]; /* the first errors, for the report */
} cc_state_t;

static void report(int check, int rank, int result, const char *reason)
{
    static const char *word[] = {"ok", "fail", "skip"};
    char line[CC_REASON + 64];
    snprintf(line, sizeof line, "%.*s", (int)sizeof line - 1, reason);
    for (char *p = line; *p; p++)
        if (*p == '\n')
            *p = ' ';
    printf(CC_REPORT "%d %d %s %s\n", check, rank, word[result], line);
    fflush(stdout);
}

static void note_error(cc_state_t *st, const char *fmt, ...) PX_PRINTF(2, 3);
static void note_error(cc_state_t *st, const char *fmt, ...)
{
    st->errors++;
    size_t l = strlen(st->first);
    if (st->errors > 2 || l + 8 >= sizeof st->first)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (l)
        l += (size_t)snprintf(st->first + l, sizeof st->first - l, "; ");
    if (l < sizeof st->first)
        vsnprintf(st->first + l, sizeof st->first - l, fmt, ap);
    va_end(ap);
}

static bool is_float(int dt)
{
    return PX_FLOAT == dt || PX_DOUBLE == dt;
}
static bool is_unsigned(int dt)
{
    return PX_UINT8 == dt || PX_UINT16 == dt || PX_UINT32 == dt || PX_UINT64 == dt;
}

/* Element i of source `src` (a group rank, or rank * size + block): small
 * integers ([-4, 4], unsigned [0, 8]), so sums and products of up to 8 ranks
 * are exact in every type and the order of a reduction cannot matter. */
static int64_t gen(long src, size_t i, int dt, int salt)
{
    int64_t v = (int64_t)(((uint64_t)src * 31 + i * 7 + (uint64_t)salt * 13) % 9);
    return is_unsigned(dt) ? v : v - 4;
}

static void store(void *buf, size_t i, int dt, double fv, int64_t v)
{
    switch (dt) {
    case PX_INT8:
    case PX_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case PX_INT16:
    case PX_UINT16:
        ((uint16_t *)buf)[i] = (uint16_t)v;
        break;
    case PX_INT32:
    case PX_UINT32:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    case PX_INT64:
    case PX_UINT64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case PX_FLOAT:
        ((float *)buf)[i] = (float)fv;
        break;
    default:
        ((double *)buf)[i] = fv;
        break;
    }
}

static void put(void *buf, size_t i, int dt, int64_t v)
{
    store(buf, i, dt, (double)v, v);
}

/* The reduction of element i over the group's p ranks (source r: gen(r, k)),
 * computed serially, stored as the library must give it. */
static void fold(void *dst, size_t di, int dt, int rop, int p, size_t k, int salt)
{
    if (is_float(dt)) {
        double acc = (double)gen(0, k, dt, salt);
        for (int r = 1; r < p; r++) {
            double v = (double)gen(r, k, dt, salt);
            switch (rop) {
            case PX_PROD:
                acc *= v;
                break;
            case PX_MIN:
                acc = v < acc ? v : acc;
                break;
            case PX_MAX:
                acc = v > acc ? v : acc;
                break;
            default: /* sum, avg */
                acc += v;
                break;
            }
        }
        if (PX_AVG == rop) {
            if (PX_FLOAT == dt) {
                ((float *)dst)[di] = (float)acc / (float)p;
                return;
            }
            acc /= p;
        }
        store(dst, di, dt, acc, 0);
        return;
    }
    /* Integers wrap (two's complement): computing in 64 bits and truncating
     * gives the same bits as the type's own arithmetic. */
    uint64_t acc = (uint64_t)gen(0, k, dt, salt);
    for (int r = 1; r < p; r++) {
        int64_t v = gen(r, k, dt, salt);
        switch (rop) {
        case PX_PROD:
            acc *= (uint64_t)v;
            break;
        case PX_MIN:
            acc = v < (int64_t)acc ? (uint64_t)v : acc;
            break;
        case PX_MAX:
            acc = v > (int64_t)acc ? (uint64_t)v : acc;
            break;
        case PX_BAND:
            acc &= (uint64_t)v;
            break;
        case PX_BOR:
            acc |= (uint64_t)v;
            break;
        case PX_BXOR:
            acc ^= (uint64_t)v;
            break;
        default:
            acc += (uint64_t)v;
            break;
        }
    }
    put(dst, di, dt, (int64_t)acc);
}

static void *xalloc(size_t bytes)
{
    unsigned char *p = malloc(bytes + CC_GUARD);
    if (!p) {
        fprintf(stderr, "px_coll_check: out of memory (%zu bytes)\n", bytes + CC_GUARD);
        exit(1);
    }
    memset(p, CC_POISON, bytes + CC_GUARD);
    return p;
}

static bool guard_ok(const void *buf, size_t bytes)
{
    const unsigned char *g = (const unsigned char *)buf + bytes;
    for (int i = 0; i < CC_GUARD; i++)
        if (g[i] != CC_POISON)
            return false;
    return true;
}

static int call(int op, bool nb, const void *s, void *r, size_t count, int dt, int rop, int root,
                px_group_t *g)
{
    px_request_t *req = NULL;
    int rc;
    switch (op) {
    case PX_COLL_BARRIER:
        rc = nb ? px_ibarrier(g, &req) : px_group_barrier(g);
        break;
    case PX_COLL_BCAST:
        rc = nb ? px_ibcast(r, count, dt, root, g, &req) : px_bcast(r, count, dt, root, g);
        break;
    case PX_COLL_SCATTER:
        rc =
            nb ? px_iscatter(s, r, count, dt, root, g, &req) : px_scatter(s, r, count, dt, root, g);
        break;
    case PX_COLL_GATHER:
        rc = nb ? px_igather(s, r, count, dt, root, g, &req) : px_gather(s, r, count, dt, root, g);
        break;
    case PX_COLL_REDUCE:
        rc = nb ? px_ireduce(s, r, count, dt, rop, root, g, &req)
                : px_reduce(s, r, count, dt, rop, root, g);
        break;
    case PX_COLL_ALLREDUCE:
        rc = nb ? px_iallreduce(s, r, count, dt, rop, g, &req)
                : px_allreduce(s, r, count, dt, rop, g);
        break;
    case PX_COLL_ALLGATHER:
        rc = nb ? px_iallgather(s, r, count, dt, g, &req) : px_allgather(s, r, count, dt, g);
        break;
    case PX_COLL_REDUCE_SCATTER:
        rc = nb ? px_ireduce_scatter(s, r, count, dt, rop, g, &req)
                : px_reduce_scatter(s, r, count, dt, rop, g);
        break;
    default:
        rc = nb ? px_ialltoall(s, r, count, dt, g, &req) : px_alltoall(s, r, count, dt, g);
        break;
    }
    if (nb && PX_SUCCESS == rc)
        rc = px_wait(&req, NULL);
    return rc;
}

/* Where results differ: the first element that is wrong. */
static bool compare(cc_state_t *st, const char *what, const void *got, const void *want, size_t n,
                    int dt)
{
    size_t es = px_coll_dtype_size(dt);
    if (0 == memcmp(got, want, n * es))
        return true;
    for (size_t i = 0; i < n; i++) {
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es)) {
            const unsigned char *a = (const unsigned char *)got + i * es,
                                *b = (const unsigned char *)want + i * es;
            char hg[40] = "", hw[40] = "";
            for (size_t k = 0; k < es; k++) {
                snprintf(hg + 2 * k, sizeof hg - 2 * k, "%02x", a[es - 1 - k]);
                snprintf(hw + 2 * k, sizeof hw - 2 * k, "%02x", b[es - 1 - k]);
            }
            note_error(st, "%s: element %zu of %zu is 0x%s, expected 0x%s", what, i, n, hg, hw);
            return false;
        }
    }
    return true;
}

/* One call of the operation on group g, set up, run and checked. Returns
 * false when the group can no longer be used (the call returned an error). */
static bool one(cc_state_t *st, px_group_t *g, int dt, int rop, size_t count, int root, bool nb,
                bool inplace, int salt)
{
    const int op = st->op, p = px_group_size(g), r = px_group_rank(g);
    const size_t es = px_coll_dtype_size(dt), blk = count * es;
    size_t sn = count, rn = count; /* elements of the send and receive buffers */
    switch (op) {
    case PX_COLL_SCATTER:
        sn = count * (size_t)p;
        break;
    case PX_COLL_GATHER:
    case PX_COLL_ALLGATHER:
        rn = count * (size_t)p;
        break;
    case PX_COLL_REDUCE_SCATTER:
        sn = count * (size_t)p;
        rn = inplace ? sn : count; /* in place: the input is in recvbuf */
        break;
    case PX_COLL_ALLTOALL:
        sn = rn = count * (size_t)p;
        break;
    default:
        break;
    }
    unsigned char *s = xalloc(sn * es), *rb = xalloc(rn * es), *want = xalloc(rn * es);
    const void *sarg = s;
    void *rarg = rb;
    size_t wn = rn;
    const unsigned char *where = rb; /* where the result is read */
    bool check_result = op != PX_COLL_BARRIER;
    switch (op) {
    case PX_COLL_BCAST:
        for (size_t i = 0; i < count; i++) {
            put(want, i, dt, gen(root, i, dt, salt));
            if (r == root)
                put(rb, i, dt, gen(root, i, dt, salt));
        }
        break;
    case PX_COLL_SCATTER: /* block j of the root's send buffer is source j */
        for (size_t i = 0; i < count; i++)
            put(want, i, dt, gen(r, i, dt, salt));
        wn = count;
        if (r == root) {
            for (int j = 0; j < p; j++)
                for (size_t i = 0; i < count; i++)
                    put(s, (size_t)j * count + i, dt, gen(j, i, dt, salt));
            if (inplace) {
                rarg = PX_IN_PLACE; /* the root's block stays in its send buffer */
                where = s + (size_t)root * blk;
            }
        }
        break;
    case PX_COLL_GATHER:
    case PX_COLL_ALLGATHER:
        for (size_t i = 0; i < count; i++)
            put(s, i, dt, gen(r, i, dt, salt));
        for (int j = 0; j < p; j++)
            for (size_t i = 0; i < count; i++)
                put(want, (size_t)j * count + i, dt, gen(j, i, dt, salt));
        if (inplace && (op == PX_COLL_ALLGATHER || r == root)) {
            memcpy(rb + (size_t)r * blk, s, blk);
            sarg = PX_IN_PLACE;
        }
        check_result = op == PX_COLL_ALLGATHER || r == root;
        break;
    case PX_COLL_REDUCE:
    case PX_COLL_ALLREDUCE:
        for (size_t i = 0; i < count; i++) {
            put(s, i, dt, gen(r, i, dt, salt));
            fold(want, i, dt, rop, p, i, salt);
        }
        if (inplace && (op == PX_COLL_ALLREDUCE || r == root)) {
            memcpy(rb, s, blk);
            sarg = PX_IN_PLACE;
        }
        check_result = op == PX_COLL_ALLREDUCE || r == root;
        break;
    case PX_COLL_REDUCE_SCATTER: /* element k of rank j's full vector is gen(j, k) */
        for (size_t k = 0; k < sn; k++)
            put(s, k, dt, gen(r, k, dt, salt));
        for (size_t i = 0; i < count; i++)
            fold(want, i, dt, rop, p, (size_t)r * count + i, salt);
        wn = count;
        if (inplace) {
            memcpy(rb, s, sn * es);
            sarg = PX_IN_PLACE;
        }
        break;
    case PX_COLL_ALLTOALL: /* block j from rank r is source r * p + j */
        for (int j = 0; j < p; j++)
            for (size_t i = 0; i < count; i++) {
                put(s, (size_t)j * count + i, dt, gen((long)r * p + j, i, dt, salt));
                put(want, (size_t)j * count + i, dt, gen((long)j * p + r, i, dt, salt));
            }
        if (inplace) {
            memcpy(rb, s, sn * es);
            sarg = PX_IN_PLACE;
        }
        break;
    default:
        break;
    }
    /* The send buffer as given, to see that the component did not write it. */
    unsigned char *scopy = malloc(sn * es + 1);
    if (scopy)
        memcpy(scopy, s, sn * es);
    const bool red =
        op == PX_COLL_REDUCE || op == PX_COLL_ALLREDUCE || op == PX_COLL_REDUCE_SCATTER;
    const bool rooted = op == PX_COLL_BCAST || op == PX_COLL_SCATTER || op == PX_COLL_GATHER ||
                        op == PX_COLL_REDUCE;
    char rootp[24] = "", what[200];
    if (rooted)
        snprintf(rootp, sizeof rootp, ", root %d", root);
    snprintf(what, sizeof what, "%s %s%s%s count %zu, group of %d%s, %s%s: group rank %d",
             px_coll_op_name(op), px_coll_dtype_name(dt), red ? " " : "",
             red ? px_coll_rop_name(rop) : "", count, p, rootp, nb ? "non-blocking" : "blocking",
             inplace ? ", in place" : "", r);
    st->calls++;
    int rc = call(op, nb, sarg, rarg, count, dt, rop, root, g);
    bool alive = true;
    if (rc != PX_SUCCESS) {
        note_error(st, "%s: returned %s", what, px_strerror(rc));
        alive = false;
    } else {
        if (check_result)
            compare(st, what, where, want, wn, dt);
        if (!guard_ok(rb, rn * es))
            note_error(st, "%s: wrote past the end of the receive buffer (%zu bytes)", what,
                       rn * es);
        if (!guard_ok(s, sn * es))
            note_error(st, "%s: wrote past the end of the send buffer (%zu bytes)", what, sn * es);
        if (scopy && sarg != PX_IN_PLACE && !(op == PX_COLL_SCATTER && inplace && r == root) &&
            memcmp(scopy, s, sn * es))
            note_error(st, "%s: changed the send buffer", what);
        if (!check_result && op != PX_COLL_BARRIER && rarg != PX_IN_PLACE) {
            /* ranks without a result (gather, reduce off the root): recvbuf untouched */
            for (size_t k = 0; k < rn * es; k++)
                if (rb[k] != CC_POISON) {
                    note_error(st,
                               "%s: wrote byte %zu of a receive buffer this rank does not "
                               "receive into",
                               what, k);
                    break;
                }
        }
    }
    free(scopy);
    free(s);
    free(rb);
    free(want);
    return alive;
}

/* The barrier: nobody leaves before everyone entered. Rank r enters after
 * r * 20 ms; every rank then sends its entry and exit times (one monotonic
 * clock on a host) to rank 0 of the group by point-to-point messages. */
static bool barrier_order(cc_state_t *st, px_group_t *g, bool nb, int tag)
{
    int p = px_group_size(g), r = px_group_rank(g);
    struct timespec d = {0, 20 * 1000 * 1000L * (long)r};
    nanosleep(&d, NULL);
    double t[2];
    t[0] = px_wtime();
    st->calls++;
    int rc = call(PX_COLL_BARRIER, nb, NULL, NULL, 0, 0, 0, 0, g);
    t[1] = px_wtime();
    if (rc != PX_SUCCESS) {
        note_error(st, "barrier, group of %d, %s: rank %d: returned %s", p,
                   nb ? "non-blocking" : "blocking", r, px_strerror(rc));
        return false;
    }
    int root = px_group_world_rank(g, 0);
    if (r != 0)
        return PX_SUCCESS == px_send(t, sizeof t, root, tag);
    double last_in = t[0], first_out = t[1];
    int who_out = 0, who_in = 0;
    for (int j = 1; j < p; j++) {
        double u[2];
        if (px_recv(u, sizeof u, px_group_world_rank(g, j), tag, NULL) != PX_SUCCESS)
            return false;
        if (u[0] > last_in) {
            last_in = u[0];
            who_in = j;
        }
        if (u[1] < first_out) {
            first_out = u[1];
            who_out = j;
        }
    }
    if (first_out < last_in)
        note_error(st,
                   "barrier, group of %d, %s: group rank %d left %.3f ms before group rank %d "
                   "entered",
                   p, nb ? "non-blocking" : "blocking", who_out, (last_in - first_out) * 1e3,
                   who_in);
    return true;
}

int cc_worker(const char *comp, int op, bool quick, int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef M_MMAP_THRESHOLD
    /* Check buffers up to 32 MiB (glibc's most) from the heap, kept there
     * when freed: glibc would map each one above its threshold afresh and
     * every call faulted in new zeroed pages (about a third of a worker's
     * CPU at the large sizes; xalloc() poisons every buffer anyway). The
     * sanitizers' allocator ignores this. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    int wrank = getenv("PX_RANK") ? atoi(getenv("PX_RANK")) : 0;
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        printf(CC_REPORT "fatal %d px_init failed: %s (its message is on stderr above)\n", wrank,
               px_strerror(rc));
        return 1;
    }
    int n = px_size(), me = px_rank();
    cc_state_t st = {.comp = comp, .op = op, .quick = quick};
    /* Groups of every size: for k = 1..n the world splits into ranks < k and
     * the rest (keys reversed for odd k, so group ranks differ from world
     * order); both halves run at once. */
    px_group_t *groups[9] = {0};
    int ng = 0;
    char split_why[CC_REASON] = "";
    for (int k = 1; k <= n; k++) {
        int color = me < k ? 0 : 1, key = (k & 1) ? n - me : me;
        px_group_t *g = NULL;
        rc = px_group_split(px_group_world(), color, key, &g);
        int want = color ? n - k : k;
        if (rc != PX_SUCCESS || !g || px_group_size(g) != want) {
            snprintf(split_why, sizeof split_why,
                     "px_group_split of the world into ranks < %d and the rest %s (this job's "
                     "allgather, which the split uses, is %s)",
                     k,
                     rc != PX_SUCCESS ? px_strerror(rc)
                     : !g             ? "gave no group"
                                      : "gave a group of the wrong size",
                     op == PX_COLL_ALLGATHER ? comp : "the built-in one");
            break;
        }
        /* Group rank order: by key, then world rank. */
        int lo = color ? k : 0, bad = 0;
        for (int j = 0; j < want; j++) {
            int w = (k & 1) ? lo + want - 1 - j : lo + j;
            bad += px_group_world_rank(g, j) != w;
        }
        if (bad) {
            snprintf(split_why, sizeof split_why,
                     "px_group_split into ranks < %d and the rest put %d rank(s) out of key "
                     "order (this job's allgather, which the split uses, is %s)",
                     k, bad, op == PX_COLL_ALLGATHER ? comp : "the built-in one");
            break;
        }
        groups[ng++] = g;
    }
    if (split_why[0]) {
        report(op + 1, me, CC_FAIL, split_why);
        if (PX_COLL_BARRIER == op)
            report(0, me, CC_FAIL, split_why);
        fflush(stdout);
        _exit(1); /* the groups differ between ranks: nothing more can agree */
    }
    /* What the component offers these groups: its module (a declined query
     * leaves it out of g->modules) and whether it fills op[op]. */
    int served = 0, provides = 0, declined[9], ndeclined = 0, not_first = 0;
    for (int i = 0; i < ng; i++) {
        px_coll_group_t *g = (px_coll_group_t *)groups[i];
        px_coll_module_t *m = NULL;
        for (int j = 0; j < g->nmodules; j++)
            if (g->modules[j] && g->modules[j]->name && !strcmp(g->modules[j]->name, comp))
                m = g->modules[j];
        if (!m) {
            declined[ndeclined++] = g->size;
            continue;
        }
        served++;
        if (m->op[op]) {
            provides++;
            if (g->size > 1 && (g->nchoice[op] < 1 || g->choice[op][0].module != m))
                not_first++;
        }
    }
    char txt[CC_REASON] = "";
    for (int i = 0; i < ndeclined; i++) {
        size_t l = strlen(txt);
        snprintf(txt + l, sizeof txt - l, "%s%d", l ? ", " : "", declined[i]);
    }
    if (PX_COLL_BARRIER == op) {
        char why[CC_REASON + 100];
        if (0 == served)
            snprintf(
                why, sizeof why,
                "coll/%.63s gave no module for any group (its query declined groups of %.400s); "
                "coll_base_verbose 10 shows its answers",
                comp, txt);
        else if (ndeclined)
            snprintf(why, sizeof why, "declined groups of %.400s ranks (others serve them)", txt);
        else
            snprintf(why, sizeof why, "a module for each of this rank's %d groups", ng);
        report(0, me, served ? CC_OK : CC_FAIL, why);
    }
    int result;
    char why[CC_REASON + 200];
    if (0 == provides) {
        result = CC_SKIP;
        snprintf(why, sizeof why, "coll/%s does not provide %s%s", comp, px_coll_op_name(op),
                 served ? " (op[] is NULL)" : " (no module)");
    } else if (not_first) {
        result = CC_FAIL;
        snprintf(why, sizeof why,
                 "the rules file naming coll/%s for %s did not choose it on %d group(s)", comp,
                 px_coll_op_name(op), not_first);
    } else {
        /* The matrix. */
        static const size_t counts_full[] = {0, 1, 7, 65, 1031, 20000};
        static const size_t counts_quick[] = {0, 1, 7};
        const size_t *counts = quick ? counts_quick : counts_full;
        int ncounts = quick ? 3 : 6;
        int salt = 0;
        for (int gi = 0; gi < ng; gi++) {
            px_group_t *g = groups[gi];
            int p = px_group_size(g);
            salt = 0; /* the same sequence on every member, whatever the other groups did */
            bool alive = true;
            if (PX_COLL_BARRIER == op) {
                for (int nb = 0; nb < 2 && alive; nb++)
                    alive = barrier_order(&st, g, nb, 1000 + gi);
                continue;
            }
            bool red =
                op == PX_COLL_REDUCE || op == PX_COLL_ALLREDUCE || op == PX_COLL_REDUCE_SCATTER;
            bool rooted = op == PX_COLL_BCAST || op == PX_COLL_SCATTER || op == PX_COLL_GATHER ||
                          op == PX_COLL_REDUCE;
            bool has_inplace = op != PX_COLL_BCAST;
            int roots[3] = {0, p - 1, p / 2}, nroots = rooted ? (p > 2 ? 3 : p) : 1;
            for (int dt = 0; dt < PX_DTYPE_COUNT && alive; dt++) {
                for (int rop = 0; rop < (red ? PX_OP_COUNT : 1) && alive; rop++) {
                    if (red && !px_coll_rop_valid(dt, rop))
                        continue;
                    for (int ci = 0; ci < ncounts && alive; ci++) {
                        size_t count = counts[ci];
                        /* The largest count (rendezvous, pipelines) for the
                         * first valid reduction of a few types only. */
                        if (count >= 20000 &&
                            ((dt != PX_INT8 && dt != PX_DOUBLE) || (red && rop != PX_SUM)))
                            continue;
                        if (count > 7 && red && rop != PX_SUM && rop != PX_BXOR && rop != PX_MAX)
                            continue;
                        for (int ri = 0; ri < nroots && alive; ri++)
                            for (int mode = 0; mode < (has_inplace ? 4 : 2) && alive; mode++)
                                alive = one(&st, g, dt, rop, count, roots[ri], mode & 1, mode >= 2,
                                            ++salt);
                    }
                }
            }
            if (!alive)
                note_error(&st,
                           "(the group of %d is failed after that error; the next group "
                           "goes on)",
                           p);
        }
        result = st.errors ? CC_FAIL : CC_OK;
        if (st.errors)
            snprintf(why, sizeof why, "%ld of %ld calls wrong: %s", st.errors, st.calls, st.first);
        else
            snprintf(why, sizeof why, "%ld calls checked on groups of%s", st.calls, "");
        if (!st.errors) {
            for (int i = 0; i < ng; i++) {
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, " %d", px_group_size(groups[i]));
            }
            if (ndeclined) {
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, " (it declined groups of %s)", txt);
            }
        }
    }
    /* px_finalize first (its barrier is the built-in one unless this is the
     * barrier job): a component that leaves the job unclean fails its check. */
    for (int i = 0; i < ng; i++)
        px_group_free(&groups[i]);
    rc = px_finalize();
    if (rc != PX_SUCCESS) {
        size_t l = strlen(why);
        snprintf(why + l, sizeof why - l, "%spx_finalize failed: %s", l ? "; " : "",
                 px_strerror(rc));
        result = CC_FAIL;
    }
    report(op + 1, me, result, why);
    return rc == PX_SUCCESS ? 0 : 1;
}
