/*
 * dyn_group: one member of a group of connected peers (px_group_from_peers,
 * docs/peers.md), through the public API only, for test/peer/t_dyn_group.sh,
 * which starts every member separately (no launcher: px_init alone). The
 * secret comes from PX_MCA_peer_secret_file.
 *
 *   dyn_group DIR IDX N MODE [ARG]
 *
 * Member IDX of N opens its listener and writes its contact to DIR/IDX.contact,
 * connects to every member below it (in a random order, telling each its
 * index with a message) and accepts every member above it. Then, by MODE:
 *
 *   ok        form the group (the ids in a random order, key 0), check that
 *             every member sees the same order (an allgather of the indexes
 *             against its own ids), run barrier, bcast, allreduce, allgather,
 *             alltoall, reduce_scatter, reduce, gather, scatter (blocking and
 *             one non-blocking allreduce) of several sizes with every result
 *             checked; print "collectives ok"; free, disconnect; print
 *             "yields alone A connected C disconnected D" (1: the progress
 *             engine's idle policy gives the core away, after px_init, once
 *             connected to the others, after the disconnects); finalize
 *   kill K    form the group and run allreduces in a loop (printing
 *             "looping"), until one fails (the test kills member K); a
 *             survivor prints "collective failed: ERR", disconnects K, forms
 *             a new group of the others (key = IDX), checks an allreduce and
 *             prints "regrouped ok"; member K loops until killed
 *   idle K    form the group, a barrier, print "ready"; member K waits to be
 *             killed; the others wait for DIR/killed (the test kills K
 *             first), progress half a second (nothing pending with K when
 *             its connection closes), then an allreduce must fail: they
 *             print "collective failed: ERR"
 *   absent A  member A connects but never calls px_group_from_peers (it waits
 *             for DIR/end); the others call it with a 3 s bound and print
 *             "formation failed: ERR"
 *   short     member 0 lists only itself and member 1; the others list all:
 *             every member prints "formation failed: ERR"
 *   ring      (N = 4) each member lists itself and its two neighbours: the
 *             same count, other sets; every member prints "formation failed"
 *
 * Exit 0 when the member did what its mode expects, 1 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/util/progress.h"
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#include "test/peer/dyn_util.h"

#define MAXN 8

static int idx, n;
static int id_of[MAXN]; /* this process's id of each member (its px_rank() for itself) */

static int fail(const char *what, int rc)
{
    printf("FAIL member %d: %s: %s (%d)\n", idx, what, px_strerror(rc), rc);
    fflush(stdout);
    return 1;
}

static void say(const char *fmt, const char *arg)
{
    printf("member %d: ", idx);
    printf(fmt, arg);
    printf("\n");
    fflush(stdout);
}

static int connect_all(const char *dir)
{
    const char *contact;
    int rc = px_contact(&contact);
    if (rc != PX_SUCCESS)
        return fail("px_contact", rc);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%d.contact", dir, idx);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return fail("writing the contact file", PX_ERR_FATAL);
    fprintf(f, "%s\n", contact);
    fclose(f);
    rename(tmp, path);
    id_of[idx] = px_rank();
    /* connect to every member below, in a random order */
    int lower[MAXN];
    for (int i = 0; i < idx; ++i)
        lower[i] = i;
    for (int i = idx - 1; i > 0; --i) {
        int j = rand() % (i + 1), t = lower[i];
        lower[i] = lower[j];
        lower[j] = t;
    }
    for (int k = 0; k < idx; ++k) {
        int j = lower[k];
        char c[512];
        snprintf(path, sizeof path, "%s/%d.contact", dir, j);
        if (!dyn_read_contact(path, c, sizeof c, 60))
            return fail("no contact file from a lower member", PX_ERR_TIMEOUT);
        int p;
        rc = px_connect(c, &p);
        if (rc != PX_SUCCESS)
            return fail("px_connect", rc);
        int32_t me = idx;
        rc = px_send(&me, sizeof me, p, 7);
        if (rc != PX_SUCCESS)
            return fail("px_send (index)", rc);
        id_of[j] = p;
        printf("member %d: connected to member %d as peer %d over %s\n", idx, j, p,
               px_transport_name(p) ? px_transport_name(p) : "?");
    }
    /* accept every member above */
    for (int k = idx + 1; k < n; ++k) {
        int p;
        rc = px_accept(60, &p);
        if (rc != PX_SUCCESS)
            return fail("px_accept", rc);
        int32_t who = -1;
        px_status_t st;
        rc = px_recv(&who, sizeof who, p, 7, &st);
        if (rc != PX_SUCCESS || who <= idx || who >= n || st.length != sizeof who)
            return fail("receiving a member's index", rc ? rc : PX_ERR_FATAL);
        id_of[who] = p;
        printf("member %d: accepted member %d as peer %d over %s\n", idx, who, p,
               px_transport_name(p) ? px_transport_name(p) : "?");
    }
    fflush(stdout);
    return 0;
}

/* The member index of id `id` (this process's ids). */
static int index_of(int id)
{
    for (int i = 0; i < n; ++i)
        if (id_of[i] == id)
            return i;
    return -1;
}

static int form(const int *members, int count, int key, double timeout, px_group_t **g)
{
    int ids[MAXN];
    memcpy(ids, members, (size_t)count * sizeof(int));
    for (int i = count - 1; i > 0; --i) { /* the order passed does not matter */
        int j = rand() % (i + 1), t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    return px_group_from_peers(ids, count, key, timeout, g);
}

/* The value member `m` contributes at element `i` of call `c`. */
static uint32_t val(int m, size_t i, int c)
{
    uint32_t x = (uint32_t)(m + 1) * 2654435761u ^ (uint32_t)i * 40503u ^ (uint32_t)c * 977u;
    return x ^ (x >> 13);
}

/* Group rank r -> member index, checked against the allgathered indexes. */
static int check_order(px_group_t *g, int *member_of)
{
    int size = px_group_size(g);
    int32_t mine = idx, all[MAXN];
    int rc = px_allgather(&mine, all, 1, PX_INT32, g);
    if (rc != PX_SUCCESS)
        return fail("allgather of the indexes", rc);
    for (int r = 0; r < size; ++r) {
        member_of[r] = index_of(px_group_world_rank(g, r));
        if (member_of[r] != all[r] || member_of[r] < 0) {
            printf("FAIL member %d: group rank %d is member %d here but member %d says it is\n",
                   idx, r, member_of[r], all[r]);
            return 1;
        }
    }
    if (member_of[px_group_rank(g)] != idx)
        return fail("px_group_rank is not this member", PX_ERR_FATAL);
    return 0;
}

static int collectives(px_group_t *g, const int *member_of)
{
    const size_t counts[] = {1, 7, 1000, 70000, 300000};
    int p = px_group_size(g), me = px_group_rank(g), c = 0;
    size_t maxc = 300000;
    uint32_t *s = malloc(maxc * (size_t)p * sizeof *s), *r = malloc(maxc * (size_t)p * sizeof *r);
    if (!s || !r)
        return fail("malloc", PX_ERR_OUT_OF_RESOURCE);
    int rc = px_group_barrier(g);
    if (rc != PX_SUCCESS)
        return fail("barrier", rc);
    for (size_t k = 0; k < sizeof counts / sizeof *counts; ++k) {
        size_t cnt = counts[k];
        /* bcast from every root in turn */
        for (int root = 0; root < p; ++root, ++c) {
            for (size_t i = 0; i < cnt; ++i)
                r[i] = me == root ? val(member_of[root], i, c) : 0;
            if ((rc = px_bcast(r, cnt, PX_UINT32, root, g)) != PX_SUCCESS)
                return fail("bcast", rc);
            for (size_t i = 0; i < cnt; ++i)
                if (r[i] != val(member_of[root], i, c))
                    return fail("bcast result", PX_ERR_FATAL);
        }
        /* allreduce (sum, wrapping), blocking then non-blocking */
        for (int nb = 0; nb < 2; ++nb, ++c) {
            for (size_t i = 0; i < cnt; ++i)
                s[i] = val(idx, i, c);
            if (nb) {
                px_request_t *q;
                if ((rc = px_iallreduce(s, r, cnt, PX_UINT32, PX_SUM, g, &q)) != PX_SUCCESS ||
                    (rc = px_wait(&q, NULL)) != PX_SUCCESS)
                    return fail("iallreduce", rc);
            } else if ((rc = px_allreduce(s, r, cnt, PX_UINT32, PX_SUM, g)) != PX_SUCCESS)
                return fail("allreduce", rc);
            for (size_t i = 0; i < cnt; ++i) {
                uint32_t want = 0;
                for (int q = 0; q < p; ++q)
                    want += val(member_of[q], i, c);
                if (r[i] != want)
                    return fail("allreduce result", PX_ERR_FATAL);
            }
        }
        /* allgather */
        for (size_t i = 0; i < cnt; ++i)
            s[i] = val(idx, i, c);
        if ((rc = px_allgather(s, r, cnt, PX_UINT32, g)) != PX_SUCCESS)
            return fail("allgather", rc);
        for (int q = 0; q < p; ++q)
            for (size_t i = 0; i < cnt; ++i)
                if (r[(size_t)q * cnt + i] != val(member_of[q], i, c))
                    return fail("allgather result", PX_ERR_FATAL);
        c++;
        /* alltoall: block q of member m is val(m, q*cnt+i) */
        for (int q = 0; q < p; ++q)
            for (size_t i = 0; i < cnt; ++i)
                s[(size_t)q * cnt + i] = val(idx, (size_t)q * cnt + i, c);
        if ((rc = px_alltoall(s, r, cnt, PX_UINT32, g)) != PX_SUCCESS)
            return fail("alltoall", rc);
        for (int q = 0; q < p; ++q)
            for (size_t i = 0; i < cnt; ++i)
                if (r[(size_t)q * cnt + i] != val(member_of[q], (size_t)me * cnt + i, c))
                    return fail("alltoall result", PX_ERR_FATAL);
        c++;
        /* reduce_scatter (max): block me of the element-wise max */
        for (size_t i = 0; i < cnt * (size_t)p; ++i)
            s[i] = val(idx, i, c);
        if ((rc = px_reduce_scatter(s, r, cnt, PX_UINT32, PX_MAX, g)) != PX_SUCCESS)
            return fail("reduce_scatter", rc);
        for (size_t i = 0; i < cnt; ++i) {
            uint32_t want = 0;
            for (int q = 0; q < p; ++q) {
                uint32_t v = val(member_of[q], (size_t)me * cnt + i, c);
                want = v > want ? v : want;
            }
            if (r[i] != want)
                return fail("reduce_scatter result", PX_ERR_FATAL);
        }
        c++;
        /* reduce (xor) and gather to the last rank, scatter from rank 0 */
        int root = p - 1;
        for (size_t i = 0; i < cnt; ++i)
            s[i] = val(idx, i, c);
        if ((rc = px_reduce(s, r, cnt, PX_UINT32, PX_BXOR, root, g)) != PX_SUCCESS)
            return fail("reduce", rc);
        if (me == root)
            for (size_t i = 0; i < cnt; ++i) {
                uint32_t want = 0;
                for (int q = 0; q < p; ++q)
                    want ^= val(member_of[q], i, c);
                if (r[i] != want)
                    return fail("reduce result", PX_ERR_FATAL);
            }
        if ((rc = px_gather(s, r, cnt, PX_UINT32, root, g)) != PX_SUCCESS)
            return fail("gather", rc);
        if (me == root)
            for (int q = 0; q < p; ++q)
                for (size_t i = 0; i < cnt; ++i)
                    if (r[(size_t)q * cnt + i] != val(member_of[q], i, c))
                        return fail("gather result", PX_ERR_FATAL);
        c++;
        for (size_t i = 0; i < cnt * (size_t)p; ++i)
            s[i] = val(member_of[0], i, c);
        if ((rc = px_scatter(s, r, cnt, PX_UINT32, 0, g)) != PX_SUCCESS)
            return fail("scatter", rc);
        for (size_t i = 0; i < cnt; ++i)
            if (r[i] != val(member_of[0], (size_t)me * cnt + i, c))
                return fail("scatter result", PX_ERR_FATAL);
        c++;
        printf("member %d: %zu elements: every collective checked\n", idx, cnt);
        fflush(stdout);
    }
    if ((rc = px_group_barrier(g)) != PX_SUCCESS)
        return fail("barrier", rc);
    free(s);
    free(r);
    return 0;
}

static int disconnect_all(int except)
{
    for (int i = 0; i < n; ++i)
        if (i != idx && i != except && id_of[i] >= 0) {
            int rc = px_disconnect(id_of[i]);
            if (rc != PX_SUCCESS)
                return fail("px_disconnect", rc);
        }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: dyn_group DIR IDX N ok|kill K|absent A|short\n");
        return 2;
    }
    const char *dir = argv[1], *mode = argv[4];
    idx = atoi(argv[2]);
    n = atoi(argv[3]);
    int arg = argc > 5 ? atoi(argv[5]) : -1;
    if (n < 2 || n > MAXN || idx < 0 || idx >= n) {
        fprintf(stderr, "dyn_group: IDX 0..N-1, N 2..%d\n", MAXN);
        return 2;
    }
    srand((unsigned)getpid());
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS)
        return fail("px_init", rc);
    /* Whether the idle policy gives the core away: alone, connected to the
     * others, after disconnecting (ok mode prints it). */
    int yield_alone = 0 != px_progress_idle_limit, yield_connected;
    if (connect_all(dir))
        return 1;
    yield_connected = 0 != px_progress_idle_limit;
    px_group_t *g = NULL;
    int member_of[MAXN];
    if (0 == strcmp(mode, "ok")) {
        if ((rc = form(id_of, n, 0, 30, &g)) != PX_SUCCESS)
            return fail("px_group_from_peers", rc);
        printf("member %d: group rank %d of %d\n", idx, px_group_rank(g), px_group_size(g));
        if (check_order(g, member_of) || collectives(g, member_of))
            return 1;
        say("collectives ok%s", "");
        if ((rc = px_group_free(&g)) != PX_SUCCESS)
            return fail("px_group_free", rc);
        if (disconnect_all(-1))
            return 1;
        printf("member %d: yields alone %d connected %d disconnected %d\n", idx, yield_alone,
               yield_connected, 0 != px_progress_idle_limit);
    } else if (0 == strcmp(mode, "kill")) {
        if ((rc = form(id_of, n, 0, 30, &g)) != PX_SUCCESS)
            return fail("px_group_from_peers", rc);
        if (check_order(g, member_of))
            return 1;
        uint32_t v[4096], out[4096];
        for (int i = 0; i < 4096; ++i)
            v[i] = (uint32_t)idx + 1;
        int iter = 0;
        double t0 = px_wtime();
        for (;;) {
            size_t cnt = 1 + (size_t)(iter % 4096);
            rc = px_allreduce(v, out, cnt, PX_UINT32, PX_SUM, g);
            if (rc != PX_SUCCESS)
                break;
            if (0 == iter)
                say("looping%s", "");
            uint32_t want = (uint32_t)(n * (n + 1) / 2);
            for (size_t i = 0; i < cnt; ++i)
                if (out[i] != want)
                    return fail("allreduce result in the loop", PX_ERR_FATAL);
            iter++;
            if (px_wtime() - t0 > 120)
                return fail("nobody was killed within 120 s", PX_ERR_TIMEOUT);
        }
        printf("member %d: collective failed: %s (after %d allreduces)\n", idx, px_strerror(rc),
               iter);
        fflush(stdout);
        if (idx == arg)
            return fail("the member to be killed saw a failure", rc);
        if ((rc = px_group_free(&g)) != PX_SUCCESS)
            return fail("px_group_free of the failed group", rc);
        if ((rc = px_disconnect(id_of[arg])) != PX_SUCCESS)
            return fail("px_disconnect of the dead member", rc);
        int rest[MAXN], k = 0;
        for (int i = 0; i < n; ++i)
            if (i != arg)
                rest[k++] = id_of[i];
        if ((rc = form(rest, k, idx, 30, &g)) != PX_SUCCESS)
            return fail("px_group_from_peers of the survivors", rc);
        uint32_t one = (uint32_t)idx, total = 0;
        if ((rc = px_allreduce(&one, &total, 1, PX_UINT32, PX_SUM, g)) != PX_SUCCESS)
            return fail("allreduce of the survivors", rc);
        if (total != (uint32_t)(n * (n - 1) / 2 - arg))
            return fail("allreduce of the survivors: wrong sum", PX_ERR_FATAL);
        int expect_rank = idx > arg ? idx - 1 : idx; /* ordered by key = index */
        if (px_group_rank(g) != expect_rank)
            return fail("the survivors' group is not ordered by key", PX_ERR_FATAL);
        say("regrouped ok%s", "");
        px_group_barrier(g);
        px_group_free(&g);
        id_of[arg] = -1;
        if (disconnect_all(arg))
            return 1;
    } else if (0 == strcmp(mode, "absent")) {
        if (idx == arg) {
            say("connected, not joining%s", "");
            char end[4096];
            snprintf(end, sizeof end, "%s/end", dir);
            for (int i = 0; i < 2400 && access(end, F_OK) != 0; ++i) {
                usleep(50000);
                px_progress();
            }
            return 0;
        }
        rc = form(id_of, n, 0, 3, &g);
        printf("member %d: formation failed: %s\n", idx, px_strerror(rc));
        fflush(stdout);
        if (PX_SUCCESS == rc)
            return fail("the group formed without a member", PX_ERR_FATAL);
    } else if (0 == strcmp(mode, "short")) {
        int cnt = 0 == idx ? 2 : n;
        rc = form(id_of, cnt, 0, 10, &g);
        printf("member %d: formation failed: %s\n", idx, px_strerror(rc));
        fflush(stdout);
        if (PX_SUCCESS == rc)
            return fail("the group formed with different member lists", PX_ERR_FATAL);
    } else if (0 == strcmp(mode, "idle")) {
        if ((rc = form(id_of, n, 0, 30, &g)) != PX_SUCCESS)
            return fail("px_group_from_peers", rc);
        if ((rc = px_group_barrier(g)) != PX_SUCCESS)
            return fail("barrier", rc);
        say("ready%s", "");
        char killed[4096];
        snprintf(killed, sizeof killed, "%s/killed", dir);
        double t0 = px_wtime();
        while (access(killed, F_OK) != 0 && px_wtime() - t0 < 120)
            px_progress(); /* the victim waits here to be killed */
        if (idx == arg)
            return fail("the member to be killed was not killed", PX_ERR_TIMEOUT);
        for (t0 = px_wtime(); px_wtime() - t0 < 0.5;)
            px_progress(); /* its connection closes while nothing is pending with it */
        uint32_t one = 1, total = 0;
        rc = px_allreduce(&one, &total, 1, PX_UINT32, PX_SUM, g);
        printf("member %d: collective failed: %s\n", idx, px_strerror(rc));
        fflush(stdout);
        if (PX_SUCCESS == rc)
            return fail("an allreduce with a dead member succeeded", PX_ERR_FATAL);
        px_group_free(&g);
    } else if (0 == strcmp(mode, "ring")) {
        /* each lists itself and its two neighbours: every pair listed is
         * mutual and every count is 3, but no two members list the same set */
        int three[3] = {id_of[idx], id_of[(idx + 1) % n], id_of[(idx + n - 1) % n]};
        rc = form(three, 3, 0, 10, &g);
        printf("member %d: formation failed: %s\n", idx, px_strerror(rc));
        fflush(stdout);
        if (PX_SUCCESS == rc)
            return fail("the group formed with different member sets", PX_ERR_FATAL);
    } else {
        fprintf(stderr, "dyn_group: unknown mode %s\n", mode);
        return 2;
    }
    px_finalize();
    return 0;
}
