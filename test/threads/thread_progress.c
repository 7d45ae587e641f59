/*
 * thread_progress: fine mode's progress without the API lock
 * (runtime_thread_locks=fine, docs/threads.md), run by t_threads.sh as
 * pxrun -n 2, over shm and over ofi:
 *
 *   1. on rank 0 one thread holds the API lock: its send to itself goes
 *      through btl/self, which the test wraps so that the send of one message
 *      (tag HOLD_TAG) waits inside it until the test lets it go (a send to
 *      the process itself is made under the API lock). Meanwhile two threads
 *      of rank 0 receive, with PX_ANY_TAG, the messages two
 *      threads of rank 1 send (MSGS each, its own tag, 8 to 300 bytes,
 *      checksummed): every message arrives once and intact, and each
 *      receiving thread gets each tag's messages in the order they were sent.
 *      They can only arrive if a waiting thread polls the transport without
 *      the API lock: with progress under the API lock (every build before
 *      this step) both receivers wait for it and after STALL_S seconds the
 *      test says "progress stalled while another thread held the API lock",
 *      lets the holder go and fails; no hang either way.
 *   2. still held: rank 1 sends a message above the eager limit (a
 *      rendezvous, whose header needs the API lock: it is queued for the
 *      lock's holder) and then a small one with the same tag; rank 0 polls
 *      both receives for a while (px_test), then lets the holder go: both
 *      complete, in the order sent (the small one waited behind the queued
 *      header: one sequence per pair of processes), data intact.
 *
 * Prints "nolock progress ok" and "deferred rendezvous ok" on rank 0; exit 0
 * when every check passed. A watchdog ends the process after 60 s.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"
#include "test/threads/held_sendi.h"

#define HOLD_TAG 4343
#define GO_TAG   4344
#define BIG_TAG  4345
#define TAG0     100 /* sender thread t uses TAG0 + t */
#define NSEND    2
#define NRECV    2
#define MSGS     1500
#define MAXDATA  300
#define BIG      (512 * 1024)
#define STALL_S  10.0

static int rank, other;
static px_btl_module_t *self_m;
static atomic_int failures;
static atomic_int remaining; /* receives still to post (phase 1) */
static atomic_int recv_done; /* receiving threads finished */
static atomic_uchar seen[NSEND][MSGS];

static void fail(const char *what)
{
    fprintf(stderr, "thread_progress rank %d: %s\n", rank, what);
    atomic_fetch_add(&failures, 1);
}

typedef struct msg {
    int32_t sender, k;
    uint32_t len, sum;
    unsigned char data[MAXDATA];
} msg_t;

static uint32_t checksum(const unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t h = 2166136261u ^ seed;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; ++i)
        p[i] = (unsigned char)(seed * 31 + i * 7);
}

static size_t msg_len(int t, int k)
{
    return 8 + (size_t)((k * 37 + t * 11) % (MAXDATA - 8));
}

/* Rank 0: takes the API lock and keeps it (the wrapped sendi). */
static void *holder(void *arg)
{
    (void)arg;
    int v = 77;
    if (px_send(&v, sizeof v, rank, HOLD_TAG) != PX_SUCCESS)
        fail("the held send to itself failed");
    return NULL;
}

/* Rank 0: receives with a wildcard until all messages are claimed. */
static void *receiver(void *arg)
{
    (void)arg;
    int last[NSEND];
    for (int t = 0; t < NSEND; ++t)
        last[t] = -1;
    msg_t m;
    while (atomic_fetch_sub(&remaining, 1) > 0) {
        px_status_t st;
        /* Any tag (not any source: the held message to itself would match
         * that once a stalled run lets the holder go) */
        if (px_recv(&m, sizeof m, other, PX_ANY_TAG, &st) != PX_SUCCESS) {
            fail("px_recv");
            break;
        }
        int t = st.tag - TAG0;
        if (st.source != other || t < 0 || t >= NSEND || m.sender != t || m.k < 0 || m.k >= MSGS ||
            m.len != msg_len(t, m.k) || st.length != offsetof(msg_t, data) + m.len ||
            m.sum != checksum(m.data, m.len, (uint32_t)m.k)) {
            fail("a message arrived wrong (source, tag, length or checksum)");
            continue;
        }
        if (atomic_exchange(&seen[t][m.k], 1))
            fail("a message arrived twice");
        if (m.k <= last[t])
            fail("a thread got one tag's messages out of the order they were sent");
        last[t] = m.k;
    }
    atomic_fetch_add(&recv_done, 1);
    return NULL;
}

/* Rank 1: sends MSGS messages with its own tag. */
static void *sender(void *arg)
{
    int t = (int)(intptr_t)arg;
    msg_t m;
    for (int k = 0; k < MSGS; ++k) {
        m.sender = t;
        m.k = k;
        m.len = (uint32_t)msg_len(t, k);
        fill(m.data, m.len, (unsigned)(k + t));
        m.sum = checksum(m.data, m.len, (uint32_t)k);
        if (px_send(&m, offsetof(msg_t, data) + m.len, other, TAG0 + t) != PX_SUCCESS) {
            fail("px_send");
            break;
        }
    }
    return NULL;
}

static void *watchdog(void *arg)
{
    (void)arg;
    sleep(60);
    fprintf(stderr, "thread_progress rank %d: still running after 60 s\n", rank);
    _exit(3);
}

int main(void)
{
    int provided = -1;
    if (px_init_thread(PX_THREAD_MULTIPLE, &provided) != PX_SUCCESS ||
        provided != PX_THREAD_MULTIPLE) {
        fprintf(stderr, "thread_progress: px_init_thread(MULTIPLE) gave %d\n", provided);
        return 1;
    }
    rank = px_rank();
    if (px_size() != 2) {
        fprintf(stderr, "thread_progress: run it on 2 ranks (pxrun -n 2)\n");
        px_finalize();
        return 1;
    }
    other = 1 - rank;
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);
    for (int i = 0; i < px_btl_base_num_modules; ++i)
        if (0 == strcmp(px_btl_base_modules[i]->btl_component->base.component_name, "self"))
            self_m = px_btl_base_modules[i];
    if (NULL == self_m || NULL == self_m->btl_sendi) {
        fprintf(stderr, "thread_progress rank %d: no btl/self with sendi\n", rank);
        px_finalize();
        return 1;
    }
    unsigned char *big = malloc(BIG), *bigin = calloc(1, BIG);
    if (!big || !bigin)
        return 1;
    fill(big, BIG, 5);
    px_barrier();

    if (1 == rank) {
        pthread_t s[NSEND];
        for (int t = 0; t < NSEND; ++t)
            pthread_create(&s[t], NULL, sender, (void *)(intptr_t)t);
        for (int t = 0; t < NSEND; ++t)
            pthread_join(s[t], NULL);
        int go = 0;
        if (px_recv(&go, sizeof go, other, GO_TAG, NULL) != PX_SUCCESS || go != 1)
            fail("the go message");
        int small = 4242;
        px_request_t *rq;
        if (px_isend(big, BIG, other, BIG_TAG, &rq) != PX_SUCCESS ||
            px_send(&small, sizeof small, other, BIG_TAG) != PX_SUCCESS ||
            px_wait(&rq, NULL) != PX_SUCCESS)
            fail("the rendezvous and the small message after it");
    } else {
        /* 1. the API lock held; two threads receive with wildcards */
        held_arm(self_m, HOLD_TAG, 3 * STALL_S); /* btl/self's sendi, under the API lock */
        atomic_store(&remaining, NSEND * MSGS);
        pthread_t h, r[NRECV];
        pthread_create(&h, NULL, holder, NULL);
        while (!atomic_load(&held))
            sched_yield();
        for (int i = 0; i < NRECV; ++i)
            pthread_create(&r[i], NULL, receiver, NULL);
        double t0 = held_now();
        while (atomic_load(&recv_done) < NRECV && held_now() - t0 < STALL_S)
            usleep(1000);
        bool stalled = atomic_load(&recv_done) < NRECV;
        if (stalled) {
            fail("progress stalled while another thread held the API lock (the receivers did "
                 "not get rank 1's messages in 10 s)");
            atomic_store(&release, 1);
        }
        for (int i = 0; i < NRECV; ++i)
            pthread_join(r[i], NULL);
        int missing = 0;
        for (int t = 0; t < NSEND; ++t)
            for (int k = 0; k < MSGS; ++k)
                missing += !atomic_load(&seen[t][k]);
        if (missing)
            fail("messages missing");
        if (!stalled && 0 == missing && 0 == atomic_load(&failures))
            printf("nolock progress ok %d messages\n", NSEND * MSGS);

        /* 2. still held: a rendezvous (queued for the lock's holder) and a
         * small message after it, same tag */
        px_request_t *rb, *rs;
        int small = 0;
        if (px_irecv(bigin, BIG, other, BIG_TAG, &rb) != PX_SUCCESS ||
            px_irecv(&small, sizeof small, other, BIG_TAG, &rs) != PX_SUCCESS)
            fail("px_irecv");
        int go = 1;
        if (px_send(&go, sizeof go, other, GO_TAG) != PX_SUCCESS)
            fail("the go message");
        int fb = 0, fs = 0;
        t0 = held_now();
        while (held_now() - t0 < 0.3) { /* progress without the API lock for a while */
            if (!fs && px_test(&rs, &fs, NULL) != PX_SUCCESS)
                fail("px_test");
            if (!fb && px_test(&rb, &fb, NULL) != PX_SUCCESS)
                fail("px_test");
            sched_yield();
        }
        if (!stalled && (fs || fb))
            fail("a message completed while the API lock was held although the rendezvous "
                 "before it needs that lock");
        atomic_store(&release, 1);
        pthread_join(h, NULL);
        px_status_t sb, ss;
        if ((!fb && px_wait(&rb, &sb) != PX_SUCCESS) || (!fs && px_wait(&rs, &ss) != PX_SUCCESS))
            fail("px_wait");
        if (memcmp(big, bigin, BIG) != 0 || small != 4242)
            fail("the rendezvous or the small message after it arrived wrong");
        else if (0 == atomic_load(&failures))
            printf("deferred rendezvous ok\n");
        held_disarm(self_m);
        int v = 0;
        if (px_recv(&v, sizeof v, rank, HOLD_TAG, NULL) != PX_SUCCESS || v != 77)
            fail("the held message to itself");
    }
    px_barrier();
    int nf = atomic_load(&failures);
    free(big);
    free(bigin);
    px_finalize();
    return nf ? 1 : 0;
}
