/*
 * shm_alltoall: stress program for test/shm/t_shm.sh, run under pxrun.
 * Every rank sends `--msgs` messages to every other rank per round, of
 * pseudo-random sizes from 0 B to `--max` bytes (log-uniform, so most are
 * small and a few are large), all with the same tag, so the receiver must
 * see each pair's messages in order. Sizes and contents derive from
 * (seed, src, dst, index): the receiver knows what to expect and checks the
 * length and a checksum of every message.
 *
 *   pxrun -n 4 shm_alltoall [--rounds R] [--msgs K] [--max BYTES] [--seed S]
 *                           [--kill-rank R --kill-after N] [--abort-on-error]
 * Prints "alltoall ok: N messages, B bytes" on rank 0, or names the first
 * mismatch and exits 1. --kill-rank makes that rank SIGKILL itself after
 * sending N messages (for the launchers' failure tests), saying first on
 * stderr "rank R: SIGKILL to itself at SECONDS" (the wall clock, so that a
 * test can time how long the others take to end). --abort-on-error: a rank
 * whose transfer fails calls px_abort, ending the job through its launcher
 * (otherwise it exits 1).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/plexus.h"

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static size_t msg_size(uint64_t seed, int src, int dst, long idx, size_t max)
{
    uint64_t h = mix(seed ^ ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ (uint64_t)idx);
    if (h % 16 == 0)
        return 0;
    /* log-uniform in [1, max] */
    int bits = 0;
    while (((size_t)1 << bits) < max)
        bits++;
    int b = (int)((h >> 8) % (uint64_t)(bits + 1));
    size_t lo = b ? (size_t)1 << (b - 1) : 1, hi = (size_t)1 << b;
    size_t s = lo + (size_t)((h >> 20) % (hi - lo + 1));
    return s > max ? max : s;
}

static void fill(unsigned char *p, size_t n, uint64_t key)
{
    uint64_t x = mix(key);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        memcpy(p + i, &x, 8);
    }
    for (; i < n; i++)
        p[i] = (unsigned char)(key + i);
}

static int abort_on_error;

/* A call failed: say so; then end this rank (exit 1), or with --abort-on-error
 * end the whole job through the launcher (px_abort), as an application whose
 * errors are fatal would. */
static int failed(int rank, const char *call, int rc)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, call, px_strerror(rc));
    if (abort_on_error)
        px_abort(1, "shm_alltoall: a transfer failed");
    return 1;
}

int main(int argc, char **argv)
{
    int rounds = 3, msgs = 4, kill_rank = -1;
    long kill_after = 0;
    size_t max = 1 << 20;
    uint64_t seed = 12345;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--abort-on-error")) {
            abort_on_error = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "shm_alltoall: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--rounds"))
            rounds = atoi(v);
        else if (!strcmp(a, "--msgs"))
            msgs = atoi(v);
        else if (!strcmp(a, "--max"))
            max = (size_t)atol(v);
        else if (!strcmp(a, "--seed"))
            seed = (uint64_t)atoll(v);
        else if (!strcmp(a, "--kill-rank"))
            kill_rank = atoi(v);
        else if (!strcmp(a, "--kill-after"))
            kill_after = atol(v);
        else {
            fprintf(stderr, "shm_alltoall: unknown option %s\n", a);
            return 2;
        }
    }
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "shm_alltoall: px_init: %s\n", px_strerror(rc));
        return 1;
    }
    int rank = px_rank(), size = px_size();
    if (rank == 0) {
        const char *j = getenv("PX_JOBID");
        printf("jobid=%s\n", j ? j : "?");
        for (int p = 1; p < size; p++)
            printf("transport 0->%d: %s\n", p, px_transport_name(p));
        fflush(stdout);
    }
    size_t npeer = (size_t)(size - 1) * (size_t)msgs;
    unsigned char **sbuf = calloc(npeer, sizeof *sbuf), **rbuf = calloc(npeer, sizeof *rbuf);
    size_t *rlen = calloc(npeer, sizeof *rlen);
    px_request_t **req = calloc(2 * npeer, sizeof *req);
    px_status_t *st = calloc(2 * npeer, sizeof *st);
    long sent = 0, nmsg = 0;
    size_t nbytes = 0;
    int bad = 0;
    for (int r = 0; r < rounds && !bad; r++) {
        size_t k = 0;
        /* Receives first, so large messages meet a posted buffer half the time. */
        for (int p = 0; p < size; p++) {
            if (p == rank)
                continue;
            for (int m = 0; m < msgs; m++, k++) {
                long idx = (long)r * msgs + m;
                rlen[k] = msg_size(seed, p, rank, idx, max);
                rbuf[k] = malloc(rlen[k] + 16);
                memset(rbuf[k], 0xee, rlen[k] + 16);
                rc = px_irecv(rbuf[k], rlen[k] + 16, p, 7, &req[k]);
                if (rc != PX_SUCCESS) {
                    return failed(rank, "px_irecv", rc);
                }
            }
        }
        k = 0;
        for (int step = 1; step < size; step++) {
            int p = (rank + step) % size;
            for (int m = 0; m < msgs; m++, k++) {
                long idx = (long)r * msgs + m;
                size_t len = msg_size(seed, rank, p, idx, max);
                sbuf[k] = malloc(len ? len : 1);
                fill(sbuf[k], len,
                     seed ^ ((uint64_t)rank << 48) ^ ((uint64_t)p << 32) ^ (uint64_t)idx);
                rc = px_isend(sbuf[k], len, p, 7, &req[npeer + k]);
                if (rc != PX_SUCCESS) {
                    return failed(rank, "px_isend", rc);
                }
                if (rank == kill_rank && ++sent >= kill_after) {
                    px_progress();
                    struct timespec ts;
                    clock_gettime(CLOCK_REALTIME, &ts);
                    fprintf(stderr, "rank %d: SIGKILL to itself at %.3f\n", rank,
                            (double)ts.tv_sec + ts.tv_nsec * 1e-9);
                    raise(SIGKILL);
                }
            }
        }
        rc = px_waitall(2 * npeer, req, st);
        if (rc != PX_SUCCESS) {
            return failed(rank, "px_waitall", rc);
        }
        k = 0;
        unsigned char *expect = malloc(max ? max : 1);
        for (int p = 0; p < size && !bad; p++) {
            if (p == rank)
                continue;
            for (int m = 0; m < msgs; m++, k++) {
                long idx = (long)r * msgs + m;
                fill(expect, rlen[k],
                     seed ^ ((uint64_t)p << 48) ^ ((uint64_t)rank << 32) ^ (uint64_t)idx);
                const unsigned char guard[16] = {0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
                                                 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee};
                if (st[k].length != rlen[k] || st[k].source != p || st[k].tag != 7 ||
                    memcmp(rbuf[k], expect, rlen[k]) != 0 ||
                    memcmp(rbuf[k] + rlen[k], guard, 16) != 0) {
                    size_t at = 0;
                    while (at < rlen[k] && rbuf[k][at] == expect[at])
                        at++;
                    fprintf(stderr,
                            "rank %d: round %d message %d from rank %d: expected %zu bytes, got "
                            "%zu from rank %d tag %d; first difference at byte %zu\n",
                            rank, r, m, p, rlen[k], st[k].length, st[k].source, st[k].tag, at);
                    bad = 1;
                    break;
                }
                nmsg++;
                nbytes += rlen[k];
            }
        }
        free(expect);
        for (size_t i = 0; i < npeer; i++) {
            free(sbuf[i]);
            free(rbuf[i]);
            sbuf[i] = rbuf[i] = NULL;
        }
    }
    long total[2] = {nmsg, (long)nbytes};
    if (rank != 0) {
        px_send(total, sizeof total, 0, 9);
    } else {
        for (int p = 1; p < size; p++) {
            long t[2];
            px_recv(t, sizeof t, p, 9, NULL);
            total[0] += t[0];
            total[1] += t[1];
        }
    }
    px_barrier();
    if (rank == 0 && !bad)
        printf("alltoall ok: %ld messages, %ld bytes, %d ranks\n", total[0], total[1], size);
    free(sbuf);
    free(rbuf);
    free(rlen);
    free(req);
    free(st);
    px_finalize();
    return bad;
}
