/*
 * xfer_probe.c: the transfer engine between processes, driven by
 * test/xfer/t_xfer.sh under pxrun (any number of ranks).
 *
 *   xfer_probe stress [--threads N] [--iters N] [--max BYTES] [--batch K]
 *                     [--mem alloc|reg|mixed] [--transport NAME] [--messaging] [--seed S]
 *     Every rank exports a region; each of N threads per rank writes random
 *     ranges (sizes log-uniform from 0 to --max, random offsets, up to K
 *     requests per batch) into its own slice of every rank's region (its own
 *     included), reads each range back and compares, then every rank reads
 *     its slices whole and compares them with what it wrote. --messaging
 *     keeps the main thread in messaging calls (px_xfer_enable_threads)
 *     while the threads transfer. Prints "rank R: stress ok: N requests"
 *     and "rank R: paths: LABEL COUNT ..." (the status transports seen).
 *   xfer_probe errors DIR [nodirect]
 *     (2 ranks) the multi-process error paths: a key imported as another
 *     rank's; a region deregistered by its owner (allocated and registered;
 *     staged, then by the direct path unless nodirect);
 *     a free, release or batch free refused while requests are in flight
 *     (the owner stays out of Plexus until DIR/go exists); a transport named
 *     that has no path; a notification delivered after the writes before it.
 *   xfer_probe freerace [--mem alloc|reg]
 *     (2 ranks) rank 1 frees its region while rank 0 reads it in a loop (by
 *     priority): the reads after the free fail with PX_ERR_NOT_FOUND and
 *     nothing else does; then messages both ways (eager and 4 MiB), a new
 *     key, a read of the new region and px_finalize all succeed. Prints
 *     "rank 0: freerace: read after the free: CODE: REASON" and
 *     "rank R: freerace ok, finalize: TEXT".
 *   xfer_probe paths [--sizes N,N,...]
 *     (2 ranks) rank 0 writes, then reads back and checks, 8 B, 4 KiB,
 *     16 KiB, 64 KiB and 1 MiB (or the sizes given, 1 B to 1 MiB) of rank
 *     1's registered user memory, one request at a time, and prints
 *     "rank 0: write|read SIZE B via LABEL" (the status's transport): which
 *     path xfer_stage_below chose.
 *   xfer_probe mutual [--transport NAME]
 *     (2 ranks) each rank submits reads of the other's region and frees its
 *     own at once, both waiting for the other's answer to the revocation
 *     while requests on the other's region are in flight: both frees return
 *     (no "did not answer"), every read ends with success or not found, and
 *     px_finalize succeeds. Prints "rank R: mutual ok: S ok, F not found".
 *   xfer_probe deadpeer
 *     (2 ranks, SIGTERM ignored) rank 1 SIGKILLs itself without progressing
 *     while rank 0 waits for a batch of staged requests to it (with
 *     PX_XFER_PROBE_SYNC=FILE, rank 0 submits once rank 1 created FILE, out
 *     of Plexus for good); rank 0 prints
 *     how they ended ("rank 0: deadpeer: N of N failed with ...").
 * A failure prints "rank R: FAIL ..." and exits 1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"

static int me, np;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("rank %d: FAIL ", me);                                                              \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        exit(1);                                                                                   \
    } while (0)
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            FAIL(__VA_ARGS__);                                                                     \
    } while (0)

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Everyone's keys to everyone (tag 100); remotes[r] for rank r. */
static void exchange(px_xfer_region_t *mine, px_xfer_remote_t **remotes)
{
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen;
    CHECK(px_xfer_key_export(mine, key, sizeof key, &klen) == PX_SUCCESS, "export: %s",
          px_xfer_last_error());
    unsigned char *all = malloc((size_t)np * PX_XFER_KEY_MAX);
    px_request_t **rq = calloc((size_t)np, sizeof *rq);
    for (int r = 0; r < np; r++)
        if (r != me)
            CHECK(px_irecv(all + (size_t)r * PX_XFER_KEY_MAX, PX_XFER_KEY_MAX, r, 100, &rq[r]) ==
                      PX_SUCCESS,
                  "irecv");
    for (int r = 0; r < np; r++)
        if (r != me)
            CHECK(px_send(key, klen, r, 100) == PX_SUCCESS, "send key");
    for (int r = 0; r < np; r++) {
        size_t n = klen;
        const unsigned char *k = key;
        if (r != me) {
            px_status_t st;
            CHECK(px_wait(&rq[r], &st) == PX_SUCCESS, "wait key");
            n = st.length;
            k = all + (size_t)r * PX_XFER_KEY_MAX;
        }
        CHECK(px_xfer_key_import(r, k, n, &remotes[r]) == PX_SUCCESS, "import from %d: %s", r,
              px_xfer_last_error());
    }
    free(rq);
    free(all);
}

/* ------------------------------------------------------------ stress */

typedef struct {
    int threads, iters, batch;
    size_t max;
    const char *mem, *transport;
    bool messaging;
    uint64_t seed;
    const char *sizes; /* paths: the sizes, commas between */
} opts_t;

static opts_t o = {1, 20, 8, 1 << 20, "alloc", NULL, false, 1, NULL};
static px_xfer_remote_t **remotes;
static size_t slice;  /* bytes of one (writer, thread) slice */
static char **shadow; /* [peer * threads + t]: what this rank wrote there */
static atomic_long requests;
static pthread_mutex_t labels_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[40];
    long n;
} labels[32];
static int nlabels;
static atomic_int workers_done;

static void count_label(const char *l)
{
    pthread_mutex_lock(&labels_lock);
    int i;
    for (i = 0; i < nlabels; i++)
        if (!strcmp(labels[i].name, l))
            break;
    if (i == nlabels && nlabels < 32)
        snprintf(labels[nlabels++].name, sizeof labels[0].name, "%s", l);
    if (i < 32)
        labels[i].n++;
    pthread_mutex_unlock(&labels_lock);
}

static bool use_alloc(uint64_t *s)
{
    if (!strcmp(o.mem, "alloc"))
        return true;
    if (!strcmp(o.mem, "reg"))
        return false;
    return rnd(s) & 1;
}

static px_xfer_region_t *make_region(size_t len, uint64_t *s, char **mem)
{
    px_xfer_region_t *r;
    if (use_alloc(s)) {
        CHECK(px_xfer_alloc(len, &r) == PX_SUCCESS, "alloc %zu: %s", len, px_xfer_last_error());
        *mem = NULL;
    } else {
        *mem = aligned_alloc(64, (len + 63) & ~(size_t)63);
        CHECK(*mem, "malloc");
        memset(*mem, 0, len);
        CHECK(px_xfer_register(*mem, len, &r) == PX_SUCCESS, "register: %s", px_xfer_last_error());
    }
    return r;
}

static size_t pick_size(uint64_t *s, size_t max)
{
    int bits = 0;
    while (((size_t)1 << bits) < max)
        bits++;
    int e = (int)(rnd(s) % (uint64_t)(bits + 2));
    if (0 == e)
        return 0;
    size_t lo = (size_t)1 << (e - 1), n = lo + rnd(s) % lo;
    return n > max ? max : n;
}

static void check_batch(px_xfer_batch_t *b, const char *what)
{
    int rc = px_xfer_batch_wait(b, -1);
    size_t n = px_xfer_batch_count(b);
    for (size_t i = 0; i < n; i++) {
        px_xfer_status_t st;
        int e = px_xfer_batch_test(b, i, &st);
        if (e != PX_SUCCESS)
            FAIL("%s request %zu: %s: %s", what, i, px_strerror(e), st.reason ? st.reason : "");
        count_label(st.transport);
    }
    CHECK(rc == PX_SUCCESS, "%s: batch_wait %s", what, px_strerror(rc));
    atomic_fetch_add(&requests, (long)n);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t s = o.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)me * 7919 + (uint64_t)t * 104729 + 1;
    char *srcmem, *dstmem;
    px_xfer_region_t *src = make_region(o.max + 64, &s, &srcmem);
    px_xfer_region_t *dst = make_region(o.max + 64, &s, &dstmem);
    char *sp = px_xfer_region_base(src), *dp = px_xfer_region_base(dst);
    px_xfer_batch_t *b;
    CHECK(px_xfer_batch_alloc((size_t)o.batch, &b) == PX_SUCCESS, "batch_alloc");
    px_xfer_request_t *w = calloc((size_t)o.batch, sizeof *w);
    size_t *soff = calloc((size_t)o.batch, sizeof *soff);
    for (int it = 0; it < o.iters; it++) {
        int k = 1 + (int)(rnd(&s) % (uint64_t)o.batch);
        size_t part = slice / (size_t)k, spart = (o.max + 64) / (size_t)k;
        /* k requests into disjoint parts of the slices, each to a random rank. */
        for (int i = 0; i < k; i++) {
            int q = (int)(rnd(&s) % (uint64_t)np);
            size_t len = pick_size(&s, part < spart ? part : spart);
            size_t ro = (size_t)i * part + (len < part ? rnd(&s) % (part - len + 1) : 0);
            size_t so = (size_t)i * spart + (len < spart ? rnd(&s) % (spart - len + 1) : 0);
            for (size_t x = 0; x < len; x++)
                sp[so + x] = (char)rnd(&s);
            soff[i] = so;
            size_t base = ((size_t)me * (size_t)o.threads + (size_t)t) * slice;
            w[i] = (px_xfer_request_t){PX_XFER_WRITE, src, so,         remotes[q],
                                       base + ro,     len, o.transport};
        }
        CHECK(px_xfer_batch_reset(b) == PX_SUCCESS, "reset");
        CHECK(px_xfer_batch_submit(b, w, (size_t)k, NULL) == PX_SUCCESS, "submit writes");
        check_batch(b, "write");
        for (int i = 0; i < k; i++) {
            int q = px_xfer_remote_peer(w[i].remote);
            size_t base = ((size_t)me * (size_t)o.threads + (size_t)t) * slice;
            memcpy(shadow[q * o.threads + t] + (w[i].remote_offset - base), sp + soff[i],
                   w[i].length);
            /* read it back into the same offsets of dst */
            w[i].op = PX_XFER_READ;
            w[i].local = dst;
            memset(dp + soff[i], 0x5a, w[i].length);
        }
        CHECK(px_xfer_batch_reset(b) == PX_SUCCESS, "reset");
        CHECK(px_xfer_batch_submit(b, w, (size_t)k, NULL) == PX_SUCCESS, "submit reads");
        check_batch(b, "read");
        for (int i = 0; i < k; i++)
            if (memcmp(dp + soff[i], sp + soff[i], w[i].length))
                FAIL("thread %d iteration %d: %zu bytes read back from rank %d at %zu differ "
                     "from those written (transport %s)",
                     t, it, w[i].length, px_xfer_remote_peer(w[i].remote), w[i].remote_offset,
                     o.transport ? o.transport : "by priority");
    }
    CHECK(px_xfer_batch_free(&b) == PX_SUCCESS, "batch_free");
    CHECK(px_xfer_free(&src) == PX_SUCCESS && px_xfer_free(&dst) == PX_SUCCESS, "free");
    free(srcmem);
    free(dstmem);
    free(w);
    free(soff);
    atomic_fetch_add(&workers_done, 1);
    return NULL;
}

static int stress(void)
{
    slice = o.max;
    size_t total = slice * (size_t)np * (size_t)o.threads;
    uint64_t s = o.seed + (uint64_t)me;
    char *mymem;
    px_xfer_region_t *mine = make_region(total, &s, &mymem);
    remotes = calloc((size_t)np, sizeof *remotes);
    exchange(mine, remotes);
    shadow = calloc((size_t)np * (size_t)o.threads, sizeof *shadow);
    for (int i = 0; i < np * o.threads; i++)
        shadow[i] = calloc(1, slice ? slice : 1);
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    if (o.messaging)
        CHECK(px_xfer_enable_threads() == PX_SUCCESS, "enable_threads");
    pthread_t *th = calloc((size_t)o.threads, sizeof *th);
    for (int t = 0; t < o.threads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    if (o.messaging) {
        /* Messaging beside the transfers: every round, each rank tells every
         * other whether its threads are done; all stop at the first round in
         * which all are (each sees the same flags). */
        long rounds = 0;
        int *in = calloc((size_t)np, sizeof *in);
        px_request_t **rq = calloc((size_t)np, sizeof *rq);
        for (bool all = false; !all; rounds++) {
            int done = atomic_load(&workers_done) == o.threads;
            for (int r = 0; r < np; r++)
                if (r != me)
                    CHECK(px_irecv(&in[r], sizeof in[r], r, 7, &rq[r]) == PX_SUCCESS, "irecv");
            for (int r = 0; r < np; r++)
                if (r != me)
                    CHECK(px_send(&done, sizeof done, r, 7) == PX_SUCCESS, "send");
            all = done;
            for (int r = 0; r < np; r++)
                if (r != me) {
                    CHECK(px_wait(&rq[r], NULL) == PX_SUCCESS, "wait");
                    all = all && in[r];
                }
        }
        free(in);
        free(rq);
        printf("rank %d: messaging beside the transfers: %ld rounds\n", me, rounds);
    }
    for (int t = 0; t < o.threads; t++)
        pthread_join(th[t], NULL);
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    /* Every slice this rank wrote, read whole from its owner. */
    char *tmpmem;
    px_xfer_region_t *tmp = make_region(slice ? slice : 1, &s, &tmpmem);
    for (int q = 0; q < np; q++)
        for (int t = 0; t < o.threads; t++) {
            size_t base = ((size_t)me * (size_t)o.threads + (size_t)t) * slice;
            if (!slice)
                continue;
            int rc = px_xfer_read(tmp, 0, remotes[q], base, slice);
            CHECK(rc == PX_SUCCESS, "final read from %d: %s", q, px_xfer_last_error());
            if (memcmp(px_xfer_region_base(tmp), shadow[q * o.threads + t], slice))
                FAIL("rank %d's slice of thread %d does not hold what was written", q, t);
        }
    CHECK(px_xfer_flush(-1) == PX_SUCCESS, "flush");
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    printf("rank %d: stress ok: %ld requests\n", me, atomic_load(&requests));
    printf("rank %d: paths:", me);
    for (int i = 0; i < nlabels; i++)
        printf(" %s %ld", labels[i].name[0] ? labels[i].name : "(none)", labels[i].n);
    printf("\n");
    for (int r = 0; r < np; r++)
        px_xfer_remote_release(&remotes[r]);
    px_xfer_free(&tmp);
    free(tmpmem);
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    px_xfer_free(&mine);
    free(mymem);
    for (int i = 0; i < np * o.threads; i++)
        free(shadow[i]);
    free(shadow);
    free(remotes);
    free(th);
    return 0;
}

/* ------------------------------------------------------------ errors */

static void wait_file(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    for (int i = 0; i < 60000 && stat(p, &st) != 0; i++)
        usleep(1000);
}

static void touch(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

static int errors(const char *dir, bool direct)
{
    CHECK(np == 2, "errors needs 2 ranks");
    int peer = 1 - me;
    char *ubuf = calloc(1, 1 << 20);
    px_xfer_region_t *a, *r, *loc;
    CHECK(px_xfer_alloc(1 << 20, &a) == PX_SUCCESS, "alloc");
    CHECK(px_xfer_register(ubuf, 1 << 20, &r) == PX_SUCCESS, "register");
    char *lbuf = malloc(1 << 20);
    for (int i = 0; i < 1 << 20; i++)
        lbuf[i] = (char)(i * 31 + 7);
    CHECK(px_xfer_register(lbuf, 1 << 20, &loc) == PX_SUCCESS, "register");
    px_xfer_remote_t *ra[2], *rr[2];
    exchange(a, ra);
    exchange(r, rr);

    /* A key given as another rank's. */
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen;
    CHECK(px_xfer_key_export(a, key, sizeof key, &klen) == PX_SUCCESS, "export");
    px_xfer_remote_t *bad = NULL;
    CHECK(px_xfer_key_import(peer, key, klen, &bad) == PX_ERR_BAD_PARAM, "wrong rank accepted");
    CHECK(strstr(px_xfer_last_error(), "not by rank"), "wrong rank message: %s",
          px_xfer_last_error());
    printf("rank %d: key of rank %d imported as rank %d's: refused: %s\n", me, me, peer,
           px_xfer_last_error());

    /* A transport named that has no path; "stage" always has one. */
    px_xfer_batch_t *b;
    CHECK(px_xfer_batch_alloc(64, &b) == PX_SUCCESS, "batch");
    px_xfer_request_t q = {PX_XFER_WRITE, loc, 0, ra[peer], 0, 100, "nosuch"};
    px_xfer_batch_submit(b, &q, 1, NULL);
    px_xfer_status_t st;
    CHECK(px_xfer_batch_wait(b, 30) == PX_ERR_NOT_AVAILABLE, "transport nosuch accepted");
    px_xfer_batch_test(b, 0, &st);
    printf("rank %d: transport nosuch: %s\n", me, st.reason);
    px_xfer_batch_reset(b);
    q.transport = "stage";
    px_xfer_batch_submit(b, &q, 1, NULL);
    CHECK(px_xfer_batch_wait(b, 30) == PX_SUCCESS, "stage: %s", px_xfer_last_error());
    px_xfer_batch_test(b, 0, &st);
    printf("rank %d: transport stage: %s\n", me, st.transport);
    px_xfer_batch_reset(b);
    CHECK(px_barrier() == PX_SUCCESS, "barrier");

    /* Notification after writes: rank 0 writes 1 MiB into rank 1's
     * allocated and registered regions (by priority), then notifies. */
    if (me == 0) {
        px_xfer_request_t w[2] = {{PX_XFER_WRITE, loc, 0, ra[1], 0, 1 << 20, NULL},
                                  {PX_XFER_WRITE, loc, 0, rr[1], 0, 1 << 20, NULL}};
        px_xfer_batch_submit(b, w, 2, NULL);
        CHECK(px_xfer_notify(1, "written", 8) == PX_SUCCESS, "notify");
        CHECK(px_xfer_batch_wait(b, 60) == PX_SUCCESS, "writes: %s", px_xfer_last_error());
        px_xfer_batch_test(b, 0, &st);
        printf("rank 0: wrote rank 1's allocated region via %s", st.transport);
        px_xfer_batch_test(b, 1, &st);
        printf(", its registered region via %s\n", st.transport);
        px_xfer_batch_reset(b);
    } else {
        int from;
        char msg[16];
        size_t n;
        CHECK(px_xfer_notify_recv(&from, msg, sizeof msg, &n, 60) == PX_SUCCESS, "notify_recv: %s",
              px_xfer_last_error());
        CHECK(from == 0 && n == 8 && !strcmp(msg, "written"), "notification");
        bool ok = !memcmp(px_xfer_region_base(a), lbuf, 1 << 20) && !memcmp(ubuf, lbuf, 1 << 20);
        printf("rank 1: notification \"%s\" from rank %d: the data before it %s\n", msg, from,
               ok ? "is all there" : "IS MISSING");
        CHECK(ok, "data missing after the notification");
    }
    CHECK(px_barrier() == PX_SUCCESS, "barrier");

    /* In flight: rank 1 stays out of Plexus until DIR/go, so staged reads to
     * it wait; their regions cannot be freed meanwhile. */
    if (me == 0) {
        px_xfer_request_t rq[4];
        for (int i = 0; i < 4; i++)
            rq[i] =
                (px_xfer_request_t){PX_XFER_READ, loc, (size_t)i * 4096, rr[1], 0, 4096, "stage"};
        px_xfer_batch_submit(b, rq, 4, NULL);
        CHECK(px_xfer_batch_pending(b) > 0, "staged reads completed without the target");
        CHECK(px_xfer_free(&loc) == PX_ERR_BAD_PARAM, "free of a region in use accepted");
        CHECK(strstr(px_xfer_last_error(), "in flight"), "message: %s", px_xfer_last_error());
        printf("rank 0: free while in flight: %s\n", px_xfer_last_error());
        CHECK(px_xfer_remote_release(&rr[1]) == PX_ERR_BAD_PARAM, "release in use accepted");
        printf("rank 0: release while in flight: %s\n", px_xfer_last_error());
        CHECK(px_xfer_batch_free(&b) == PX_ERR_BAD_PARAM, "batch_free in flight accepted");
        CHECK(px_xfer_batch_reset(b) == PX_ERR_BAD_PARAM, "batch_reset in flight accepted");
        CHECK(px_xfer_batch_wait(b, 0) == PX_ERR_TIMEOUT, "wait(0) of a pending batch");
        touch(dir, "go");
        CHECK(px_xfer_batch_wait(b, 60) == PX_SUCCESS, "staged reads: %s", px_xfer_last_error());
        printf("rank 0: the staged reads completed once rank 1 progressed\n");
        px_xfer_batch_reset(b);
    } else {
        wait_file(dir, "go");
    }
    CHECK(px_barrier() == PX_SUCCESS, "barrier");

    /* Deregistered: rank 1 frees both regions; rank 0's requests to them fail. */
    if (me == 1) {
        CHECK(px_xfer_free(&a) == PX_SUCCESS && px_xfer_free(&r) == PX_SUCCESS, "free");
    }
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    if (me == 0) {
        /* Staged first: a direct request to a stale registration over a
         * network transport may break the connection (docs/transfer.md). */
        px_xfer_request_t d[4] = {{PX_XFER_WRITE, loc, 0, ra[1], 0, 4096, "stage"},
                                  {PX_XFER_READ, loc, 0, rr[1], 0, 4096, "stage"},
                                  {PX_XFER_WRITE, loc, 0, ra[1], 0, 4096, NULL},
                                  {PX_XFER_READ, loc, 0, rr[1], 0, 4096, NULL}};
        int nd = direct ? 4 : 2;
        px_xfer_batch_submit(b, d, 2, NULL);
        px_xfer_batch_wait(b, 60);
        if (direct) {
            px_xfer_batch_submit(b, d + 2, 2, NULL);
            px_xfer_batch_wait(b, 60);
        }
        for (int i = 0; i < nd; i++) {
            int e = px_xfer_batch_test(b, (size_t)i, &st);
            printf("rank 0: %s a deregistered %s region via %s: %s: %s\n",
                   d[i].op == PX_XFER_WRITE ? "write to" : "read from",
                   i % 2 ? "registered" : "allocated", st.transport, px_strerror(e),
                   st.reason ? st.reason : "(no reason)");
            CHECK(e < 0, "request %d to a deregistered region succeeded", i);
        }
        px_xfer_batch_reset(b);
    }
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    CHECK(px_xfer_batch_free(&b) == PX_SUCCESS, "batch free");
    for (int i = 0; i < 2; i++) {
        px_xfer_remote_release(&ra[i]);
        if (rr[i])
            px_xfer_remote_release(&rr[i]);
    }
    if (a)
        px_xfer_free(&a);
    if (r)
        px_xfer_free(&r);
    px_xfer_free(&loc);
    free(ubuf);
    free(lbuf);
    printf("rank %d: errors ok\n", me);
    return 0;
}

/* ------------------------------------------------------------ deadpeer */

static int deadpeer(void)
{
    CHECK(np == 2, "deadpeer needs 2 ranks");
    px_xfer_region_t *r, *loc;
    CHECK(px_xfer_alloc(1 << 20, &r) == PX_SUCCESS, "alloc");
    CHECK(px_xfer_alloc(1 << 20, &loc) == PX_SUCCESS, "alloc");
    px_xfer_remote_t *rm[2];
    exchange(r, rm);
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    /* Rank 0 submits only once rank 1 is out of Plexus for good (it may still
     * be progressing inside the barrier when rank 0's returns, and would then
     * serve the requests): rank 1 says so by creating the file
     * PX_XFER_PROBE_SYNC names. */
    const char *sync = getenv("PX_XFER_PROBE_SYNC");
    if (me == 1) {
        if (sync) {
            FILE *f = fopen(sync, "w");
            CHECK(f != NULL, "cannot create %s", sync);
            fclose(f);
        }
        usleep(300 * 1000); /* out of Plexus: rank 0's staged requests wait */
        raise(SIGKILL);
    }
    for (int i = 0; sync && access(sync, F_OK) != 0; i++) {
        CHECK(i < 60000, "rank 1 did not create %s within 60 s", sync);
        usleep(1000);
    }
    px_xfer_batch_t *b;
    px_xfer_batch_alloc(16, &b);
    px_xfer_request_t q[16];
    for (int i = 0; i < 16; i++)
        q[i] = (px_xfer_request_t){i % 2 ? PX_XFER_READ : PX_XFER_WRITE,
                                   loc,
                                   (size_t)i * 65536,
                                   rm[1],
                                   (size_t)i * 65536,
                                   65536,
                                   "stage"};
    double t0 = px_wtime();
    px_xfer_batch_submit(b, q, 16, NULL);
    int rc = px_xfer_batch_wait(b, 60);
    double dt = px_wtime() - t0;
    int failed = 0;
    px_xfer_status_t st = {0};
    for (int i = 0; i < 16; i++)
        failed += px_xfer_batch_test(b, (size_t)i, &st) == PX_ERR_PEER_FAILED;
    px_xfer_batch_test(b, 15, &st);
    printf("rank 0: deadpeer: wait returned %s after %.3f s; %d of 16 failed with peer "
           "failed; last: %s\n",
           px_strerror(rc), dt, failed, st.reason ? st.reason : "(none)");
    /* Later requests to it fail at once. */
    px_xfer_batch_reset(b);
    q[0].transport = NULL;
    px_xfer_batch_submit(b, q, 1, NULL);
    int e = px_xfer_batch_test(b, 0, &st);
    printf("rank 0: deadpeer: a later request: %s: %s\n", px_strerror(e), st.reason);
    printf("rank 0: deadpeer: flush: %s\n", px_strerror(px_xfer_flush(1)));
    px_xfer_batch_free(&b);
    px_xfer_remote_release(&rm[0]);
    px_xfer_remote_release(&rm[1]);
    px_xfer_free(&r);
    px_xfer_free(&loc);
    return 0;
}

/* ------------------------------------------------------------ freerace */

static int freerace(void)
{
    CHECK(np == 2, "freerace needs 2 ranks");
    const size_t len = 1 << 20, piece = 64 << 10;
    const bool alloc = !strcmp(o.mem, "alloc");
    char *ubuf = NULL;
    px_xfer_region_t *r, *loc;
    if (alloc) {
        CHECK(px_xfer_alloc(len, &r) == PX_SUCCESS, "alloc: %s", px_xfer_last_error());
    } else {
        ubuf = malloc(len);
        CHECK(ubuf && px_xfer_register(ubuf, len, &r) == PX_SUCCESS, "register: %s",
              px_xfer_last_error());
    }
    memset(px_xfer_region_base(r), 'a' + me, len);
    char *lbuf = malloc(len);
    CHECK(lbuf && px_xfer_register(lbuf, len, &loc) == PX_SUCCESS, "register");
    px_xfer_remote_t *rm[2];
    exchange(r, rm);
    int go = 1;
    if (0 == me) {
        px_request_t *freed = NULL;
        int note = 0, flag = 0;
        CHECK(px_irecv(&note, sizeof note, 1, 201, &freed) == PX_SUCCESS, "irecv");
        CHECK(px_send(&go, sizeof go, 1, 200) == PX_SUCCESS, "send go");
        long before = 0, after = 0, early = 0;
        int e = PX_SUCCESS;
        const char *path = "?";
        char reason[512] = "";
        px_xfer_batch_t *b;
        CHECK(px_xfer_batch_alloc(1, &b) == PX_SUCCESS, "batch");
        /* Read until a read issued after the free was seen has failed. */
        for (long i = 0; i < 2000000; ++i) {
            if (!flag)
                CHECK(px_test(&freed, &flag, NULL) == PX_SUCCESS, "test");
            const bool seen = flag;
            px_xfer_request_t q = {PX_XFER_READ, loc,        0, rm[1], (size_t)(i % 16) * piece,
                                   piece,        o.transport};
            px_xfer_status_t st;
            CHECK(px_xfer_batch_submit(b, &q, 1, NULL) == PX_SUCCESS, "submit");
            e = px_xfer_batch_wait(b, 60);
            px_xfer_batch_test(b, 0, &st);
            path = st.transport;
            snprintf(reason, sizeof reason, "%s", st.reason ? st.reason : "");
            CHECK(px_xfer_batch_reset(b) == PX_SUCCESS, "reset");
            if (PX_SUCCESS == e) {
                CHECK(seen || lbuf[0] == 'b', "read wrong data before the free");
                if (seen)
                    after++;
                else
                    before++;
                continue;
            }
            CHECK(PX_ERR_NOT_FOUND == e, "a read of the freed region failed with %s, not %s: %s",
                  px_strerror(e), px_strerror(PX_ERR_NOT_FOUND), reason);
            if (!seen) {
                early++; /* the free raced this read: fine, it failed as it should */
                continue;
            }
            break;
        }
        printf("rank 0: freerace: %ld reads before the free, %ld failed around it, %ld succeeded "
               "after it\n",
               before, early, after);
        printf("rank 0: freerace: read after the free via %s: %s: %s\n", path[0] ? path : "\"\"",
               px_strerror(e), reason);
        CHECK(PX_ERR_NOT_FOUND == e, "no read failed after the free");
        CHECK(px_xfer_batch_free(&b) == PX_SUCCESS, "batch free");
        CHECK(px_send(&go, sizeof go, 1, 202) == PX_SUCCESS, "send done: the pair failed");
    } else {
        CHECK(px_recv(&go, sizeof go, 0, 200, NULL) == PX_SUCCESS, "recv go");
        usleep(100000); /* let rank 0 read a while */
        CHECK(px_xfer_free(&r) == PX_SUCCESS, "free: %s", px_xfer_last_error());
        CHECK(px_send(&go, sizeof go, 0, 201) == PX_SUCCESS, "send freed");
        CHECK(px_recv(&go, sizeof go, 0, 202, NULL) == PX_SUCCESS,
              "recv done: the pair failed after the free");
    }
    /* The pair still works: messages both ways, small and 4 MiB. */
    size_t big = 4 << 20;
    char *m = malloc(big), *in = malloc(big);
    CHECK(m && in, "malloc");
    memset(m, 'x' + me, big);
    for (int k = 0; k < 2; ++k) {
        size_t n = k ? big : 8;
        px_request_t *rq;
        px_status_t st;
        CHECK(px_irecv(in, n, 1 - me, 210 + k, &rq) == PX_SUCCESS, "irecv");
        CHECK(px_send(m, n, 1 - me, 210 + k) == PX_SUCCESS, "send %zu B after the free", n);
        CHECK(px_wait(&rq, &st) == PX_SUCCESS, "receive %zu B after the free: %s", n,
              px_strerror(st.error));
        CHECK(st.length == n && in[0] == 'x' + 1 - me && in[n - 1] == 'x' + 1 - me,
              "wrong message after the free");
    }
    /* A new region of rank 1 (and of rank 0): keys import, reads work. */
    px_xfer_region_t *r2;
    char *ubuf2 = malloc(len);
    CHECK(ubuf2 && px_xfer_register(ubuf2, len, &r2) == PX_SUCCESS, "register 2");
    memset(ubuf2, 'p' + me, len);
    px_xfer_remote_t *rm2[2];
    exchange(r2, rm2);
    CHECK(px_xfer_read(loc, 0, rm2[1 - me], 0, len) == PX_SUCCESS,
          "read of a new region after the free: %s", px_xfer_last_error());
    CHECK(lbuf[0] == 'p' + 1 - me && lbuf[len - 1] == 'p' + 1 - me, "new region: wrong data");
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    for (int i = 0; i < 2; ++i) {
        px_xfer_remote_release(&rm[i]);
        px_xfer_remote_release(&rm2[i]);
    }
    if (r)
        px_xfer_free(&r);
    px_xfer_free(&r2);
    px_xfer_free(&loc);
    free(ubuf);
    free(ubuf2);
    free(lbuf);
    free(m);
    free(in);
    return 0;
}

static int mutual(void)
{
    CHECK(np == 2, "mutual needs 2 ranks");
    const size_t len = 1 << 20;
    char *ubuf = malloc(len), *lbuf = malloc(len);
    px_xfer_region_t *r, *loc;
    CHECK(ubuf && lbuf && px_xfer_register(ubuf, len, &r) == PX_SUCCESS &&
              px_xfer_register(lbuf, len, &loc) == PX_SUCCESS,
          "register");
    px_xfer_remote_t *rm[2];
    exchange(r, rm);
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    px_xfer_batch_t *b;
    CHECK(px_xfer_batch_alloc(16, &b) == PX_SUCCESS, "batch");
    px_xfer_request_t q[16];
    for (int i = 0; i < 16; i++)
        q[i] = (px_xfer_request_t){PX_XFER_READ,      loc,   (size_t)i * 65536, rm[1 - me],
                                   (size_t)i * 65536, 65536, o.transport};
    CHECK(px_xfer_batch_submit(b, q, 16, NULL) == PX_SUCCESS, "submit");
    double t0 = px_wtime();
    CHECK(px_xfer_free(&r) == PX_SUCCESS, "free: %s", px_xfer_last_error());
    double took = px_wtime() - t0;
    int e = px_xfer_batch_wait(b, 60);
    CHECK(e != PX_ERR_TIMEOUT, "the reads did not end");
    int ok = 0, gone = 0;
    for (int i = 0; i < 16; i++) {
        px_xfer_status_t st;
        int x = px_xfer_batch_test(b, (size_t)i, &st);
        CHECK(PX_SUCCESS == x || PX_ERR_NOT_FOUND == x, "read %d: %s: %s", i, px_strerror(x),
              st.reason ? st.reason : "");
        ok += PX_SUCCESS == x;
        gone += PX_ERR_NOT_FOUND == x;
    }
    printf("rank %d: mutual ok: %d ok, %d not found (free took %.3f s)\n", me, ok, gone, took);
    CHECK(px_xfer_batch_free(&b) == PX_SUCCESS, "batch free");
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    px_xfer_remote_release(&rm[0]);
    px_xfer_remote_release(&rm[1]);
    px_xfer_free(&loc);
    free(ubuf);
    free(lbuf);
    return 0;
}

/* ------------------------------------------------------------ paths */

/* paths: rank 0 writes then reads each size to rank 1's registered user
 * memory, one request at a time, checks the bytes and prints the path each
 * took ("rank 0: write 8 B via stage:shm"); rank 1 waits in a barrier
 * (which progresses, so it serves staged requests). */
static int paths(void)
{
    CHECK(np == 2, "paths needs 2 ranks");
    size_t sizes[64] = {8, 4096, 16384, 65536, 1 << 20};
    size_t nsizes = 5;
    const size_t len = 1 << 20;
    if (o.sizes) {
        nsizes = 0;
        for (const char *p = o.sizes; *p && nsizes < 64;) {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            CHECK(end != p && v >= 1 && v <= len && (',' == *end || !*end),
                  "--sizes %s: expected sizes of 1 to %zu bytes, commas between", o.sizes, len);
            sizes[nsizes++] = (size_t)v;
            p = ',' == *end ? end + 1 : end;
        }
    }
    unsigned char *ubuf = malloc(len), *lbuf = malloc(len);
    CHECK(ubuf && lbuf, "malloc");
    memset(ubuf, 0, len);
    px_xfer_region_t *r, *loc;
    CHECK(px_xfer_register(ubuf, len, &r) == PX_SUCCESS &&
              px_xfer_register(lbuf, len, &loc) == PX_SUCCESS,
          "register: %s", px_xfer_last_error());
    px_xfer_remote_t *rm[2];
    exchange(r, rm);
    if (0 == me) {
        px_xfer_batch_t *b;
        CHECK(px_xfer_batch_alloc(1, &b) == PX_SUCCESS, "batch");
        for (size_t k = 0; k < nsizes; k++) {
            size_t n = sizes[k];
            for (int op = 0; op < 2; op++) {
                bool wr = 0 == op;
                for (size_t i = 0; i < n; i++)
                    lbuf[i] = wr ? (unsigned char)(i * 7 + k + 1) : 0;
                px_xfer_request_t q = {
                    wr ? PX_XFER_WRITE : PX_XFER_READ, loc, 0, rm[1], 0, n, NULL};
                CHECK(px_xfer_batch_submit(b, &q, 1, NULL) == PX_SUCCESS, "submit");
                px_xfer_status_t st;
                int e = px_xfer_batch_wait(b, 60);
                int t = px_xfer_batch_test(b, 0, &st);
                CHECK(PX_SUCCESS == e && PX_SUCCESS == t, "%s of %zu B: %s: %s",
                      wr ? "write" : "read", n, px_strerror(t), st.reason ? st.reason : "");
                if (!wr)
                    for (size_t i = 0; i < n; i++)
                        CHECK(lbuf[i] == (unsigned char)(i * 7 + k + 1),
                              "read of %zu B: byte %zu is %u, not what was written", n, i, lbuf[i]);
                printf("rank 0: %s %zu B via %s\n", wr ? "write" : "read", n, st.transport);
                CHECK(px_xfer_batch_reset(b) == PX_SUCCESS, "reset");
            }
        }
        CHECK(px_xfer_batch_free(&b) == PX_SUCCESS, "batch free");
    }
    CHECK(px_barrier() == PX_SUCCESS, "barrier");
    px_xfer_remote_release(&rm[0]);
    px_xfer_remote_release(&rm[1]);
    px_xfer_free(&r);
    px_xfer_free(&loc);
    free(ubuf);
    free(lbuf);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "deadpeer"))
        signal(SIGTERM, SIG_IGN); /* only the transports may end rank 0's wait */
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--threads"))
            o.threads = atoi(v), i++;
        else if (!strcmp(argv[i], "--iters"))
            o.iters = atoi(v), i++;
        else if (!strcmp(argv[i], "--batch"))
            o.batch = atoi(v), i++;
        else if (!strcmp(argv[i], "--max"))
            o.max = strtoull(v, NULL, 0), i++;
        else if (!strcmp(argv[i], "--mem"))
            o.mem = v, i++;
        else if (!strcmp(argv[i], "--transport"))
            o.transport = v, i++;
        else if (!strcmp(argv[i], "--seed"))
            o.seed = strtoull(v, NULL, 0), i++;
        else if (!strcmp(argv[i], "--messaging"))
            o.messaging = true;
        else if (!strcmp(argv[i], "--sizes"))
            o.sizes = v, i++;
    }
    if (o.threads < 1 || o.batch < 1 || o.iters < 0) {
        fprintf(stderr, "xfer_probe: bad options\n");
        return 2;
    }
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    me = px_rank();
    np = px_size();
    int rc = 2;
    if (!strcmp(mode, "stress"))
        rc = stress();
    else if (!strcmp(mode, "errors") && argc > 2)
        rc = errors(argv[2], !(argc > 3 && !strcmp(argv[3], "nodirect")));
    else if (!strcmp(mode, "deadpeer"))
        rc = deadpeer();
    else if (!strcmp(mode, "freerace"))
        rc = freerace();
    else if (!strcmp(mode, "mutual"))
        rc = mutual();
    else if (!strcmp(mode, "paths"))
        rc = paths();
    else
        fprintf(stderr, "xfer_probe: unknown mode '%s'\n", mode);
    int frc = px_finalize();
    if (!strcmp(mode, "freerace") || !strcmp(mode, "mutual")) {
        printf("rank %d: %s %s, finalize: %s\n", me, mode, rc ? "FAILED" : "ok", px_strerror(frc));
        if (frc != PX_SUCCESS)
            rc = 1;
    }
    return rc;
}
