/*
 * threads_stress: PX_THREAD_MULTIPLE under load (t_threads.sh, pxrun -n 4).
 * NT threads per rank at once, each:
 *  A. tagged traffic to every rank (tag = the sending thread) received with
 *     PX_ANY_SOURCE / PX_ANY_TAG by whichever thread: checksums, each message
 *     exactly once, and per receiving thread the sequence of each
 *     (source, tag) increasing (MPI's order with several receivers);
 *  B. receives and sends it starts and hands to the next thread, which waits
 *     for them (px_wait, px_test loops, px_waitall): the k-th receive posted
 *     must get the k-th message of its (source, tag);
 *  C. collectives on a group of its own (allreduce, bcast, alltoall);
 *  D. transfer-engine batches: write a pattern to the next rank, read it back.
 * Prints "threads ok RANK" when everything checked out.
 * Modes: "level REQUIRED" prints what px_init_thread / px_query_thread gave.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plexus.h"

#define NT      8
#define NA      24 /* phase A messages per thread per destination rank */
#define NB      16 /* phase B requests per thread */
#define ROUNDS  3
#define MAXLEN  65536
#define XF_SLOT 8192 /* bytes of the xfer region per thread */

static int rank, size;
static atomic_int failures;
static atomic_uchar *seen; /* [size][NT][NA * ROUNDS] phase A arrivals */
static px_group_t *groups[NT];
static px_xfer_remote_t *next_region; /* the next rank's region */
static px_xfer_region_t *my_region;
static pthread_barrier_t tbar;
static px_request_t *hand_recv[NT][NB], *hand_send[NT][NB];
static unsigned char *hand_rbuf[NT], *hand_sbuf[NT];

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "rank %d: ", rank);                                                        \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        atomic_fetch_add(&failures, 1);                                                            \
    } while (0)

typedef struct {
    int32_t src, thread, seq, len;
    uint32_t sum;
} hdr_t;

static uint32_t fill(unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1, sum = 0;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
        sum = sum * 31 + p[i];
    }
    return sum;
}

static uint32_t sum_of(const unsigned char *p, size_t n)
{
    uint32_t sum = 0;
    for (size_t i = 0; i < n; ++i)
        sum = sum * 31 + p[i];
    return sum;
}

static size_t len_for(int t, int seq)
{
    /* Mostly eager; every 11th a rendezvous. */
    return 0 == seq % 11 ? 40000 + (size_t)t * 64 : sizeof(hdr_t) + (size_t)((seq * 37 + t) % 2000);
}

static void phase_a(int t, int round)
{
    int nsend = NA * size;
    px_request_t **reqs = calloc((size_t)nsend, sizeof(*reqs));
    unsigned char **bufs = calloc((size_t)nsend, sizeof(*bufs));
    for (int i = 0; i < nsend; ++i) {
        int dest = (rank + i) % size, seq = round * NA + i / size;
        size_t len = len_for(t, seq);
        bufs[i] = malloc(len);
        hdr_t h = {rank, t, seq, (int32_t)len, 0};
        h.sum =
            fill(bufs[i] + sizeof(h), len - sizeof(h), (uint32_t)(rank * 1000003 + t * 1009 + seq));
        memcpy(bufs[i], &h, sizeof(h));
        int rc = px_isend(bufs[i], len, dest, t, &reqs[i]);
        if (rc != PX_SUCCESS)
            FAIL("A: px_isend to %d: %s", dest, px_strerror(rc));
    }
    int last[64][NT]; /* this thread's last seq per (source, tag) */
    for (int s = 0; s < size; ++s)
        for (int u = 0; u < NT; ++u)
            last[s][u] = -1;
    unsigned char *rb = malloc(MAXLEN);
    for (int i = 0; i < nsend; ++i) {
        px_status_t st;
        int rc;
        if (i & 1) {
            rc = px_recv(rb, MAXLEN, PX_ANY_SOURCE, PX_ANY_TAG, &st);
        } else {
            px_request_t *r;
            rc = px_irecv(rb, MAXLEN, PX_ANY_SOURCE, PX_ANY_TAG, &r);
            if (PX_SUCCESS == rc)
                rc = px_wait(&r, &st);
        }
        if (rc != PX_SUCCESS) {
            FAIL("A: receive: %s", px_strerror(rc));
            continue;
        }
        hdr_t h;
        memcpy(&h, rb, sizeof(h));
        if (h.src != st.source || h.thread != st.tag || h.src < 0 || h.src >= size ||
            h.thread < 0 || h.thread >= NT || (size_t)h.len != st.length || h.seq < 0 ||
            h.seq >= NA * ROUNDS) {
            FAIL("A: header %d/%d/%d/%d does not match status source %d tag %d length %zu", h.src,
                 h.thread, h.seq, h.len, st.source, st.tag, st.length);
            continue;
        }
        if (sum_of(rb + sizeof(h), st.length - sizeof(h)) != h.sum)
            FAIL("A: checksum of message %d from rank %d thread %d", h.seq, h.src, h.thread);
        if (h.seq <= last[h.src][h.thread])
            FAIL("A: order: message %d from rank %d tag %d after %d", h.seq, h.src, h.thread,
                 last[h.src][h.thread]);
        last[h.src][h.thread] = h.seq;
        if (atomic_fetch_add(&seen[(h.src * NT + h.thread) * NA * ROUNDS + h.seq], 1))
            FAIL("A: message %d from rank %d tag %d received twice", h.seq, h.src, h.thread);
    }
    int rc = px_waitall((size_t)nsend, reqs, NULL);
    if (rc != PX_SUCCESS)
        FAIL("A: px_waitall of the sends: %s", px_strerror(rc));
    for (int i = 0; i < nsend; ++i)
        free(bufs[i]);
    free(bufs);
    free(reqs);
    free(rb);
}

#define B_LEN 3000

static void phase_b_post(int t, int round)
{
    int from = (rank + size - 1) % size, to = (rank + 1) % size;
    for (int k = 0; k < NB; ++k) {
        int rc = px_irecv(hand_rbuf[t] + (size_t)k * B_LEN, B_LEN, from, 100 + t, &hand_recv[t][k]);
        if (rc != PX_SUCCESS)
            FAIL("B: px_irecv: %s", px_strerror(rc));
    }
    for (int k = 0; k < NB; ++k) {
        unsigned char *p = hand_sbuf[t] + (size_t)k * B_LEN;
        int32_t id[2] = {round * NB + k, t};
        fill(p, B_LEN, (uint32_t)(to * 7919 + t * 31 + round * NB + k));
        memcpy(p, id, sizeof(id));
        int rc = px_isend(p, B_LEN, to, 100 + t, &hand_send[t][k]);
        if (rc != PX_SUCCESS)
            FAIL("B: px_isend: %s", px_strerror(rc));
    }
}

static void phase_b_wait(int t, int round)
{
    int o = (t + 1) % NT; /* the requests thread o started */
    for (int k = 0; k < NB; ++k) {
        px_status_t st;
        int rc;
        if (k % 3 == 0) {
            int flag = 0;
            do
                rc = px_test(&hand_recv[o][k], &flag, &st);
            while (PX_SUCCESS == rc && !flag);
        } else {
            rc = px_wait(&hand_recv[o][k], &st);
        }
        if (rc != PX_SUCCESS) {
            FAIL("B: wait for thread %d's receive %d: %s", o, k, px_strerror(rc));
            continue;
        }
        unsigned char *p = hand_rbuf[o] + (size_t)k * B_LEN;
        int32_t id[2];
        memcpy(id, p, sizeof(id));
        if (id[0] != round * NB + k || id[1] != o)
            FAIL("B: receive %d posted by thread %d got message %d of thread %d (order)", k, o,
                 id[0], id[1]);
        unsigned char want[B_LEN];
        fill(want, B_LEN, (uint32_t)(rank * 7919 + o * 31 + round * NB + k));
        if (memcmp(want + sizeof(id), p + sizeof(id), B_LEN - sizeof(id)) != 0)
            FAIL("B: data of thread %d's receive %d", o, k);
    }
    int rc = px_waitall(NB, hand_send[o], NULL);
    if (rc != PX_SUCCESS)
        FAIL("B: px_waitall of thread %d's sends: %s", o, px_strerror(rc));
}

static void phase_c(int t, int round)
{
    px_group_t *g = groups[t];
    int gs = px_group_size(g), gr = px_group_rank(g);
    int64_t v[4] = {gr + t, round, 1, gr * 2}, out[4];
    int rc = px_allreduce(v, out, 4, PX_INT64, PX_SUM, g);
    int64_t n = gs;
    if (rc != PX_SUCCESS || out[0] != n * (n - 1) / 2 + n * t || out[1] != n * round ||
        out[2] != n || out[3] != n * (n - 1))
        FAIL("C: allreduce on thread %d's group: rc %d, %lld %lld %lld %lld", t, rc,
             (long long)out[0], (long long)out[1], (long long)out[2], (long long)out[3]);
    int b[16];
    for (int i = 0; i < 16; ++i)
        b[i] = 0 == gr ? i * t + round : -1;
    rc = px_bcast(b, 16, PX_INT32, 0, g);
    for (int i = 0; i < 16; ++i)
        if (rc != PX_SUCCESS || b[i] != i * t + round) {
            FAIL("C: bcast on thread %d's group: rc %d, b[%d] = %d", t, rc, i, b[i]);
            break;
        }
    int *sb = malloc(sizeof(int) * (size_t)gs * 8), *rb = malloc(sizeof(int) * (size_t)gs * 8);
    for (int i = 0; i < gs * 8; ++i)
        sb[i] = gr * 100000 + i * 10 + t;
    rc = px_alltoall(sb, rb, 8, PX_INT32, g);
    for (int s = 0; s < gs; ++s)
        for (int j = 0; j < 8; ++j)
            if (rc != PX_SUCCESS || rb[s * 8 + j] != s * 100000 + (gr * 8 + j) * 10 + t) {
                FAIL("C: alltoall on thread %d's group: rc %d, block %d", t, rc, s);
                s = gs;
                break;
            }
    free(sb);
    free(rb);
}

static void phase_d(int t, int round)
{
    px_xfer_batch_t *b;
    int rc = px_xfer_batch_alloc(8, &b);
    if (rc != PX_SUCCESS) {
        FAIL("D: px_xfer_batch_alloc: %s", px_strerror(rc));
        return;
    }
    /* Local halves: [0, XF_SLOT/2) the pattern, [XF_SLOT/2, XF_SLOT) read back. */
    size_t base = (size_t)t * XF_SLOT, half = XF_SLOT / 2, piece = half / 4;
    unsigned char *mine = (unsigned char *)px_xfer_region_base(my_region) + base;
    fill(mine, half, (uint32_t)(rank * 131 + t * 17 + round));
    memset(mine + half, 0, half);
    px_xfer_request_t w[4], r[4];
    for (int i = 0; i < 4; ++i) {
        /* The next rank's slot of (this rank's thread t) sits after its own
         * threads' slots: [NT + t] region slots are written only by us. */
        w[i] = (px_xfer_request_t){PX_XFER_WRITE,
                                   my_region,
                                   base + i * piece,
                                   next_region,
                                   (size_t)(NT + t) * XF_SLOT + i * piece,
                                   piece,
                                   NULL};
        r[i] = (px_xfer_request_t){PX_XFER_READ,
                                   my_region,
                                   base + half + i * piece,
                                   next_region,
                                   (size_t)(NT + t) * XF_SLOT + i * piece,
                                   piece,
                                   NULL};
    }
    if ((rc = px_xfer_batch_submit(b, w, 4, NULL)) != PX_SUCCESS ||
        (rc = px_xfer_batch_wait(b, 60)) != PX_SUCCESS)
        FAIL("D: writes: %s (%s)", px_strerror(rc), px_xfer_last_error());
    if ((rc = px_xfer_batch_reset(b)) != PX_SUCCESS ||
        (rc = px_xfer_batch_submit(b, r, 4, NULL)) != PX_SUCCESS ||
        (rc = px_xfer_batch_wait(b, 60)) != PX_SUCCESS)
        FAIL("D: reads: %s (%s)", px_strerror(rc), px_xfer_last_error());
    if (memcmp(mine, mine + half, half) != 0)
        FAIL("D: thread %d read back other bytes than it wrote", t);
    px_xfer_batch_free(&b);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int round = 0; round < ROUNDS; ++round) {
        phase_b_post(t, round);
        pthread_barrier_wait(&tbar); /* every thread's B requests exist */
        phase_a(t, round);
        phase_c(t, round);
        phase_b_wait(t, round);
        phase_d(t, round);
        pthread_barrier_wait(&tbar); /* B's buffers are free again */
    }
    return NULL;
}

static int level_mode(const char *arg)
{
    char *end;
    long req = strtol(arg, &end, 10);
    int provided = -1;
    int rc = px_init_thread((int)req, &provided);
    printf("init_thread %ld rc %d provided %d\n", req, rc, provided);
    if (rc != PX_SUCCESS) {
        /* A bad level leaves Plexus uninitialised: a good one works after. */
        rc = px_init_thread(PX_THREAD_MULTIPLE, &provided);
        printf("init_thread %d rc %d provided %d\n", PX_THREAD_MULTIPLE, rc, provided);
        if (rc != PX_SUCCESS)
            return 1;
    }
    int q = -1;
    rc = px_query_thread(&q);
    printf("query rc %d level %d\n", rc, q);
    px_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && 0 == strcmp(argv[1], "level"))
        return level_mode(argv[2]);
    int provided = -1;
    int rc = px_init_thread(PX_THREAD_MULTIPLE, &provided);
    if (rc != PX_SUCCESS || provided != PX_THREAD_MULTIPLE) {
        fprintf(stderr, "px_init_thread: rc %d provided %d\n", rc, provided);
        return 1;
    }
    rank = px_rank();
    size = px_size();
    if (size > 64) {
        fprintf(stderr, "at most 64 ranks\n");
        return 1;
    }
    seen = calloc((size_t)size * NT * NA * ROUNDS, sizeof(*seen));
    for (int t = 0; t < NT; ++t) {
        /* Thread t's group: every rank, its order turned by t. */
        rc = px_group_split(px_group_world(), 0, (rank + t) % size, &groups[t]);
        if (rc != PX_SUCCESS) {
            fprintf(stderr, "px_group_split: %s\n", px_strerror(rc));
            return 1;
        }
        hand_rbuf[t] = malloc((size_t)NB * B_LEN);
        hand_sbuf[t] = malloc((size_t)NB * B_LEN);
    }
    /* Regions: slots [0, NT) for this rank's own threads, [NT, 2 NT) that the
     * previous rank's threads write; keys go round the ring. */
    if ((rc = px_xfer_alloc((size_t)2 * NT * XF_SLOT, &my_region)) != PX_SUCCESS) {
        fprintf(stderr, "px_xfer_alloc: %s\n", px_strerror(rc));
        return 1;
    }
    static unsigned char key[PX_XFER_KEY_MAX], theirs[PX_XFER_KEY_MAX];
    size_t klen = 0;
    px_status_t st;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    px_request_t *kr;
    if ((rc = px_xfer_key_export(my_region, key, sizeof key, &klen)) != PX_SUCCESS ||
        (rc = px_irecv(theirs, sizeof theirs, to, 7, &kr)) != PX_SUCCESS ||
        (rc = px_send(key, klen, from, 7)) != PX_SUCCESS ||
        (rc = px_wait(&kr, &st)) != PX_SUCCESS ||
        (rc = px_xfer_key_import(to, theirs, st.length, &next_region)) != PX_SUCCESS) {
        fprintf(stderr, "key exchange: %s\n", px_strerror(rc));
        return 1;
    }
    pthread_barrier_init(&tbar, NULL, NT);
    pthread_t th[NT];
    for (int t = 0; t < NT; ++t)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < NT; ++t)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&tbar);
    for (int s = 0; s < size; ++s)
        for (int u = 0; u < NT; ++u)
            for (int q = 0; q < NA * ROUNDS; ++q)
                if (1 != atomic_load(&seen[(s * NT + u) * NA * ROUNDS + q]))
                    FAIL("A: message %d from rank %d tag %d received %d times", q, s, u,
                         (int)atomic_load(&seen[(s * NT + u) * NA * ROUNDS + q]));
    px_barrier();
    px_xfer_remote_release(&next_region);
    px_xfer_free(&my_region);
    for (int t = 0; t < NT; ++t) {
        px_group_free(&groups[t]);
        free(hand_rbuf[t]);
        free(hand_sbuf[t]);
    }
    free(seen);
    int bad = atomic_load(&failures);
    if (0 == bad)
        printf("threads ok %d\n", rank);
    rc = px_finalize();
    return bad || rc != PX_SUCCESS ? 1 : 0;
}
