/*
 * px_perf_connect.c: px_perf --connect, peers that connect later against a
 * job rank, in one run (docs/px_perf.md, issue 23). Under `pxrun -n 2` (or
 * any launcher of 2 ranks) rank 0 opens its listener (px_contact) and hands
 * the contact to rank 1 over the job's messaging; then
 *
 *   setup   CONNS fresh connections, one after another: rank 1 times
 *           px_connect, a 4-byte message to the new peer and its echo (the
 *           first round trip), then says bye and both sides px_disconnect;
 *           before each, rank 0 tells rank 1 (as a rank) that it waits in
 *           px_accept, so every connection starts from the same state.
 *           Printed: the first connection, the median, p90, p99 and the
 *           largest of the rest, and the median of px_connect alone.
 *   steady  one more connection, kept: ROUNDS interleaved rounds, each
 *           timing, per size, a ping-pong block and a window-64 streaming
 *           block with rank 1 as a rank and with the connected peer (the
 *           order alternating each round). Printed: the median block of
 *           each side and the median over the rounds of each round's ratio
 *           peer/rank.
 *
 * The secret file (peer_secret_file) and, across hosts, the listener's
 * address (peer_listen_address on rank 0) come from the environment as for
 * any process that connects (docs/peers.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "tools/px_perf/px_perf.h"

#define WIN         64
#define TAG_CONTACT 40
#define TAG_READY   41
#define TAG_PING    1
#define TAG_PONG    2
#define TAG_BYE     3
#define TAG_WIN     4
#define TAG_ACK     5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of n sorted values, nearest rank. */
static double quantile(const double *v, int n, double q)
{
    int i = (int)(q * n + 0.999999) - 1;
    if (i < 0)
        i = 0;
    if (i >= n)
        i = n - 1;
    return v[i];
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One connection, as rank 1: connect, first round trip, bye, disconnect.
 * *setup: px_connect to the echo received; *conn: px_connect alone (s). */
static void connect_once(const char *contact, int keep, int *peer, double *setup, double *conn)
{
    int p, v = 7, w = 0;
    double t0 = px_wtime();
    px_perf_check(px_connect(contact, &p), "px_connect");
    double t1 = px_wtime();
    px_perf_check(px_send(&v, sizeof v, p, TAG_PING), "px_send to the new peer");
    px_perf_check(px_recv(&w, sizeof w, p, TAG_PONG, NULL), "px_recv from the new peer");
    double t2 = px_wtime();
    if (w != v)
        px_abort(3, "px_perf --connect: the first round trip returned another value");
    *setup = t2 - t0;
    *conn = t1 - t0;
    *peer = p;
    if (!keep) {
        px_perf_check(px_send("", 0, p, TAG_BYE), "px_send (bye)");
        px_perf_check(px_disconnect(p), "px_disconnect");
    }
}

/* The other side, rank 0: accept, echo the first message, wait for bye. */
static void accept_once(int keep, int *peer)
{
    int p, v = 0;
    px_perf_check(px_accept(60, &p), "px_accept");
    px_perf_check(px_recv(&v, sizeof v, p, TAG_PING, NULL), "px_recv from the new peer");
    px_perf_check(px_send(&v, sizeof v, p, TAG_PONG), "px_send to the new peer");
    *peer = p;
    if (!keep) {
        px_perf_check(px_recv(NULL, 0, p, TAG_BYE, NULL), "px_recv (bye)");
        px_perf_check(px_disconnect(p), "px_disconnect");
    }
}

/* A ping-pong block of n round trips with `other` (rank 0 starts):
 * half the round trip in microseconds. */
static double lat_block(int rank, int other, char *buf, char *rbuf, size_t s, long n)
{
    double t0 = px_wtime();
    for (long i = 0; i < n; i++) {
        if (rank == 0) {
            px_perf_check(px_send(buf, s, other, TAG_PING), "px_send");
            px_perf_check(px_recv(rbuf, s, other, TAG_PING, NULL), "px_recv");
        } else {
            px_perf_check(px_recv(rbuf, s, other, TAG_PING, NULL), "px_recv");
            px_perf_check(px_send(buf, s, other, TAG_PING), "px_send");
        }
    }
    return (px_wtime() - t0) / (double)n / 2 * 1e6;
}

/* A streaming block of n windows of 64 from rank 0 to `other`, each acked
 * with 0 bytes: MB/s. */
static double bw_block(int rank, int other, char *buf, char *rbuf, size_t s, int n)
{
    px_request_t *req[WIN];
    double t0 = px_wtime();
    for (int k = 0; k < n; k++) {
        for (int w = 0; w < WIN; w++) {
            if (rank == 0)
                px_perf_check(px_isend(buf, s, other, TAG_WIN, &req[w]), "px_isend");
            else
                px_perf_check(px_irecv(rbuf, s, other, TAG_WIN, &req[w]), "px_irecv");
        }
        px_perf_check(px_waitall(WIN, req, NULL), "px_waitall");
        if (rank == 0)
            px_perf_check(px_recv(NULL, 0, other, TAG_ACK, NULL), "px_recv (ack)");
        else
            px_perf_check(px_send(NULL, 0, other, TAG_ACK), "px_send (ack)");
    }
    return (double)s * WIN * n / (px_wtime() - t0) / 1e6;
}

static void print_setup(const char *what, double first, double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    printf("%-10s %6d %10.1f %10.1f %10.1f %10.1f %10.1f\n", what, n, first * 1e6,
           quantile(v, n, 0.5) * 1e6, quantile(v, n, 0.9) * 1e6, quantile(v, n, 0.99) * 1e6,
           v[n - 1] * 1e6);
}

int px_perf_connect(const px_perf_opts_t *o)
{
    int rank = px_rank(), size = px_size();
    int conns = o->conns ? o->conns : 100, rounds = o->reps ? o->reps : 5;
    static const size_t dsizes[] = {8, 4096, 65536, 1 << 20, 4 << 20};
    const size_t *sizes = o->nsizes ? o->sizes : dsizes;
    int nsizes = o->nsizes ? o->nsizes : (int)(sizeof dsizes / sizeof dsizes[0]);
    int other = rank == 0 ? 1 : 0;
    if (rank >= 2) { /* ranks past 1 wait */
        px_perf_check(px_barrier(), "px_barrier");
        return px_finalize() == PX_SUCCESS ? 0 : 1;
    }

    /* The contact, from rank 0 to rank 1 as a job message. */
    char contact[1024] = "";
    if (rank == 0) {
        const char *c;
        px_perf_check(px_contact(&c), "px_contact (is PX_MCA_peer_secret_file set?)");
        snprintf(contact, sizeof contact, "%s", c);
        px_perf_check(px_send(contact, sizeof contact, 1, TAG_CONTACT), "px_send (contact)");
    } else {
        px_perf_check(px_recv(contact, sizeof contact, 0, TAG_CONTACT, NULL), "px_recv (contact)");
    }

    /* Setup: conns + 1 fresh connections (the first one apart). */
    double *setup = malloc(sizeof(double) * (size_t)(conns + 1));
    double *conn = malloc(sizeof(double) * (size_t)(conns + 1));
    if (!setup || !conn)
        px_abort(3, "px_perf --connect: no memory");
    char peer_transport[64] = "";
    for (int i = 0; i <= conns; i++) {
        int p;
        if (rank == 0) {
            px_perf_check(px_send(NULL, 0, 1, TAG_READY), "px_send (ready)");
            accept_once(0, &p);
        } else {
            px_perf_check(px_recv(NULL, 0, 0, TAG_READY, NULL), "px_recv (ready)");
            connect_once(contact, 0, &p, &setup[i], &conn[i]);
        }
    }

    /* Steady state: one kept connection against rank `other`. */
    int peer;
    if (rank == 0) {
        px_perf_check(px_send(NULL, 0, 1, TAG_READY), "px_send (ready)");
        accept_once(1, &peer);
    } else {
        double a, b;
        px_perf_check(px_recv(NULL, 0, 0, TAG_READY, NULL), "px_recv (ready)");
        connect_once(contact, 1, &peer, &a, &b);
    }
    snprintf(peer_transport, sizeof peer_transport, "%s", px_transport_name(peer));
    size_t maxs = 0;
    for (int i = 0; i < nsizes; i++)
        maxs = sizes[i] > maxs ? sizes[i] : maxs;
    size_t alloc = (maxs + 4095) & ~(size_t)4095;
    alloc = alloc ? alloc : 4096;
    char *buf = aligned_alloc(4096, alloc), *rbuf = aligned_alloc(4096, alloc);
    if (!buf || !rbuf)
        px_abort(3, "px_perf --connect: no memory for the buffers");
    memset(buf, 1, alloc);
    memset(rbuf, 0, alloc);
    /* [size][round]: rank's and peer's latency and bandwidth */
    size_t cells = (size_t)nsizes * (size_t)rounds;
    double *rl = calloc(cells, sizeof(double)), *pl = calloc(cells, sizeof(double));
    double *rb = calloc(cells, sizeof(double)), *pb = calloc(cells, sizeof(double));
    double *tmp = calloc((size_t)rounds, sizeof(double));
    if (!rl || !pl || !rb || !pb || !tmp)
        px_abort(3, "px_perf --connect: no memory for the results");
    for (int si = 0; si < nsizes; si++) { /* warm-up: both paths, every size */
        size_t s = sizes[si];
        lat_block(rank, other, buf, rbuf, s, 100);
        lat_block(rank, peer, buf, rbuf, s, 100);
        bw_block(rank, other, buf, rbuf, s, 2);
        bw_block(rank, peer, buf, rbuf, s, 2);
    }
    for (int r = 0; r < rounds; r++) {
        for (int si = 0; si < nsizes; si++) {
            size_t s = sizes[si];
            long li = o->iters ? o->iters : (s <= 4096 ? 2000 : (s <= 262144 ? 200 : 20));
            int bi = o->iters ? (int)o->iters : (s <= 32768 ? 20 : 4);
            size_t c = (size_t)si * (size_t)rounds + (size_t)r;
            for (int k = 0; k < 2; k++) { /* rank first in even rounds, peer first in odd */
                int use_peer = (k + r) % 2;
                double l = lat_block(rank, use_peer ? peer : other, buf, rbuf, s, li);
                (use_peer ? pl : rl)[c] = l;
            }
            for (int k = 0; k < 2; k++) {
                int use_peer = (k + r) % 2;
                double b = bw_block(rank, use_peer ? peer : other, buf, rbuf, s, bi);
                (use_peer ? pb : rb)[c] = b;
            }
        }
    }

    /* Rank 1 holds the setup times: to rank 0, which prints. */
    if (rank == 1) {
        px_perf_check(px_send(setup, sizeof(double) * (size_t)(conns + 1), 0, TAG_CONTACT),
                      "px_send (times)");
        px_perf_check(px_send(conn, sizeof(double) * (size_t)(conns + 1), 0, TAG_CONTACT),
                      "px_send (times)");
    } else {
        px_perf_check(px_recv(setup, sizeof(double) * (size_t)(conns + 1), 1, TAG_CONTACT, NULL),
                      "px_recv (times)");
        px_perf_check(px_recv(conn, sizeof(double) * (size_t)(conns + 1), 1, TAG_CONTACT, NULL),
                      "px_recv (times)");
    }
    /* Release the kept peer: rank 1 says bye first. */
    if (rank == 1) {
        px_perf_check(px_send("", 0, peer, TAG_BYE), "px_send (bye)");
        px_perf_check(px_disconnect(peer), "px_disconnect");
    } else {
        px_perf_check(px_recv(NULL, 0, peer, TAG_BYE, NULL), "px_recv (bye)");
        px_perf_check(px_disconnect(peer), "px_disconnect");
    }

    if (rank == 0) {
        printf("# px_perf --connect: rank 1 connects to rank 0's contact; transport to rank 1: "
               "%s, to the connected peer: %s\n",
               px_transport_name(1), peer_transport);
        printf("# connection setup, %d fresh connections (us): px_connect to the first round "
               "trip done (setup_us), px_connect alone (connect_us); 'first' is the first "
               "connection, the statistics are of the others\n",
               conns + 1);
        printf("%-10s %6s %10s %10s %10s %10s %10s\n", "what", "n", "first", "median", "p90", "p99",
               "max");
        print_setup("setup_us", setup[0], setup + 1, conns);
        print_setup("connect_us", conn[0], conn + 1, conns);
        printf("# steady state, %d interleaved rounds: median block of each side, median over "
               "the rounds of each round's ratio peer/rank\n",
               rounds);
        const char *f = o->csv ? "%s,%s,%s,%s,%s,%s,%s\n" : "%10s %12s %12s %10s %12s %12s %10s\n";
        printf(f, "bytes", "rank_lat_us", "peer_lat_us", "lat_ratio", "rank_bw_MBps",
               "peer_bw_MBps", "bw_ratio");
        for (int si = 0; si < nsizes; si++) {
            double *a = rl + si * rounds, *b = pl + si * rounds, *c = rb + si * rounds,
                   *d = pb + si * rounds;
            for (int r = 0; r < rounds; r++)
                tmp[r] = b[r] / a[r];
            double lr = median(tmp, rounds);
            for (int r = 0; r < rounds; r++)
                tmp[r] = d[r] / c[r];
            double br = median(tmp, rounds);
            double ml = median(a, rounds), mp = median(b, rounds);
            double mb = median(c, rounds), mq = median(d, rounds);
            printf(o->csv ? "%zu,%.4f,%.4f,%.3f,%.1f,%.1f,%.3f\n"
                          : "%10zu %12.3f %12.3f %10.3f %12.1f %12.1f %10.3f\n",
                   sizes[si], ml, mp, lr, mb, mq, br);
        }
        fflush(stdout);
    }
    free(buf);
    free(rbuf);
    free(rl);
    free(pl);
    free(rb);
    free(pb);
    free(tmp);
    free(setup);
    free(conn);
    (void)size;
    px_perf_check(px_barrier(), "px_barrier");
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}
