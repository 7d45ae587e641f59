/*
 * coll_late: a member that comes late to a collective the others already
 * gave up on (t_coll_late.sh, docs/coll.md "Failures").
 *
 *   coll_late OP COUNT MODE DIR
 *
 * OP: barrier, allgather, allreduce, bcast, ibarrier, iallgather,
 * iallreduce. MODE: "busy" (rank 0 makes no Plexus call while it waits) or
 * "progress" (rank 0 calls px_progress while it waits). DIR: a folder the
 * ranks share.
 *
 * Every rank but 0 calls OP on the world group and must fail (it times out
 * with runtime_wait_timeout, or is told of a failure); it then creates
 * DIR/done.RANK. Rank 0 waits for every done file (no messages: the others
 * are not waiting for anything then) and only then calls OP: the group is
 * failed, so the call must fail too. Each rank prints one line,
 * "rank R: OP: CODE (text)", then a second collective's result ("next: ..."),
 * then a point-to-point exchange with rank 0 (the pair still works) and
 * "finalized". Exit 0 when every expectation held on this rank.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "plexus.h"

static const char *code_name(int rc)
{
    switch (rc) {
    case PX_SUCCESS:
        return "PX_SUCCESS";
    case PX_ERR_TIMEOUT:
        return "PX_ERR_TIMEOUT";
    case PX_ERR_PEER_FAILED:
        return "PX_ERR_PEER_FAILED";
    case PX_ERR_GROUP_FAILED:
        return "PX_ERR_GROUP_FAILED";
    case PX_ERR_TRUNCATE:
        return "PX_ERR_TRUNCATE";
    default:
        return "other";
    }
}

static int run_op(const char *op, size_t count, int64_t *s, int64_t *r)
{
    px_group_t *w = px_group_world();
    px_request_t *req = NULL;
    int rc;
    if (0 == strcmp(op, "barrier"))
        return px_group_barrier(w);
    if (0 == strcmp(op, "allgather"))
        return px_allgather(s, r, count, PX_INT64, w);
    if (0 == strcmp(op, "allreduce"))
        return px_allreduce(s, r, count, PX_INT64, PX_SUM, w);
    if (0 == strcmp(op, "bcast"))
        return px_bcast(r, count, PX_INT64, 0, w); /* rank 0, late, is the root */
    if (0 == strcmp(op, "ibarrier"))
        rc = px_ibarrier(w, &req);
    else if (0 == strcmp(op, "iallgather"))
        rc = px_iallgather(s, r, count, PX_INT64, w, &req);
    else if (0 == strcmp(op, "iallreduce"))
        rc = px_iallreduce(s, r, count, PX_INT64, PX_SUM, w, &req);
    else {
        fprintf(stderr, "coll_late: unknown operation %s\n", op);
        exit(2);
    }
    if (rc != PX_SUCCESS)
        return rc;
    return px_wait(&req, NULL);
}

static bool all_done(const char *dir, int np)
{
    for (int i = 1; i < np; ++i) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/done.%d", dir, i);
        if (access(path, F_OK) != 0)
            return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    if (argc < 5) {
        fprintf(stderr, "usage: coll_late OP COUNT busy|progress DIR\n");
        return 2;
    }
    const char *op = argv[1], *mode = argv[3], *dir = argv[4];
    size_t count = strtoull(argv[2], NULL, 10);
    int me = px_rank(), np = px_size();
    size_t n = count * (size_t)np + 1;
    int64_t *s = malloc(n * sizeof(*s)), *r = malloc(n * sizeof(*r));
    if (!s || !r)
        return 2;
    for (size_t i = 0; i < n; ++i)
        s[i] = me + 1, r[i] = -1;
    int bad = 0;
    if (0 == me) {
        /* Late: wait (up to 120 s) until every other rank has given up. */
        struct timespec ts = {0, 2000000};
        for (int k = 0; k < 60000 && !all_done(dir, np); ++k) {
            if (0 == strcmp(mode, "progress"))
                px_progress();
            nanosleep(&ts, NULL);
        }
        if (!all_done(dir, np)) {
            printf("rank 0: the other ranks never gave up\n");
            return 1;
        }
    }
    int rc = run_op(op, count, s, r);
    printf("rank %d: %s: %s (%s)\n", me, op, code_name(rc), px_strerror(rc));
    fflush(stdout);
    if (PX_SUCCESS == rc)
        bad++;
    if (me != 0) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/done.%d", dir, me);
        FILE *f = fopen(path, "w");
        if (f)
            fclose(f);
    }
    /* Any later collective on the group fails at once, on every rank. */
    int rc2 = run_op(op, count, s, r);
    printf("rank %d: next: %s (%s)\n", me, code_name(rc2), px_strerror(rc2));
    if (rc2 != PX_ERR_GROUP_FAILED)
        bad++;
    /* Point-to-point still works between rank 0 and the others. */
    int v = me;
    if (0 == me) {
        for (int i = 1; i < np; ++i) {
            int got = -1;
            if (px_recv(&got, sizeof(got), i, 7, NULL) != PX_SUCCESS || got != i)
                bad++;
        }
    } else if (px_send(&v, sizeof(v), 0, 7) != PX_SUCCESS) {
        bad++;
    }
    rc = px_finalize();
    printf("rank %d: finalized: %s, %d unexpected\n", me, code_name(rc), bad);
    free(s);
    free(r);
    return bad || rc != PX_SUCCESS ? 1 : 0;
}
