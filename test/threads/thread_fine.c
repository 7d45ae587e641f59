/*
 * thread_fine: PX_THREAD_MULTIPLE with runtime_thread_locks=fine
 * (docs/threads.md), run by t_threads.sh as pxrun -n 2 over shm:
 *
 *   1. the BTL base's lock per module is engaged: every module whose
 *      component is not thread-safe is serialized ("serialized ok"), and
 *      after traffic the shm module's lock was taken ("module lock taken");
 *   2. a transport call that blocks does not stop the other threads: on
 *      rank 0 the shm module's btl_sendi is wrapped so that the send of one
 *      message (tag BLOCK_TAG) waits until the test lets it go. While
 *      thread 1 is held there, thread 2 sends to itself and receives it
 *      (btl/self), receives rank 1's message (a non-blocking receive matched
 *      by progress over shm) and sends one to rank 1 (the call returns; rank
 *      1 gets it after the held one: one sequence of numbers per pair of
 *      processes). With one lock held across the transport call
 *      (runtime_thread_locks=api, and every build before fine mode) thread 2
 *      waits for that lock: after STALL_S seconds the test says so
 *      ("blocked send: others stalled"), lets thread 1 go, and fails; no
 *      hang either way. "blocked send ok" otherwise. Rank 1 does the same
 *      calls without a held send and checks every message.
 *
 * Exit 0 when every check passed. A watchdog ends the process after 60 s.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"
#include "test/threads/held_sendi.h"

#define BLOCK_TAG 4242
#define STALL_S   10.0

static int rank, size, other;
static px_btl_module_t *shm;
static atomic_int t2_done; /* thread 2 finished its calls */
static atomic_int failures;

static void fail(const char *what)
{
    fprintf(stderr, "thread_fine rank %d: %s\n", rank, what);
    atomic_fetch_add(&failures, 1);
}

static void *thread1(void *arg)
{
    (void)arg;
    int v = 1000 + rank;
    if (px_send(&v, sizeof v, other, BLOCK_TAG) != PX_SUCCESS)
        fail("the held send failed");
    return NULL;
}

static void *thread2(void *arg)
{
    (void)arg;
    int v = 7, w = 0;
    /* btl/self: a send to itself and its receive */
    if (px_send(&v, sizeof v, rank, 5) != PX_SUCCESS || px_recv(&w, sizeof w, rank, 5, NULL) ||
        w != 7)
        fail("send to itself and receive while another thread is held in a transport call");
    /* over shm: the other rank's message (its thread 2 sends it), and ours */
    px_request_t *rq;
    int got = 0;
    if (px_irecv(&got, sizeof got, other, 6, &rq) != PX_SUCCESS)
        fail("px_irecv");
    int mine = 100 + rank;
    if (px_send(&mine, sizeof mine, other, 6) != PX_SUCCESS)
        fail("px_send to the other rank while another thread is held");
    if (0 == rank) {
        if (px_wait(&rq, NULL) != PX_SUCCESS || got != 100 + other)
            fail("the other rank's message (progress over shm) while another thread is held");
        atomic_store(&t2_done, 1);
    } else { /* rank 0's message comes after its held one */
        atomic_store(&t2_done, 1);
        if (px_wait(&rq, NULL) != PX_SUCCESS || got != 100 + other)
            fail("rank 0's message after its held one");
    }
    return NULL;
}

static void *watchdog(void *arg)
{
    (void)arg;
    sleep(60);
    fprintf(stderr, "thread_fine rank %d: still running after 60 s: a lost wake-up\n", rank);
    _exit(3);
}

int main(void)
{
    int provided = -1;
    if (px_init_thread(PX_THREAD_MULTIPLE, &provided) != PX_SUCCESS ||
        provided != PX_THREAD_MULTIPLE) {
        fprintf(stderr, "thread_fine: px_init_thread(MULTIPLE) gave %d\n", provided);
        return 1;
    }
    rank = px_rank();
    size = px_size();
    if (size != 2) {
        fprintf(stderr, "thread_fine: run it on 2 ranks (pxrun -n 2), not %d\n", size);
        px_finalize();
        return 1;
    }
    other = 1 - rank;
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);

    /* 1. the base's lock per module, and the modules that are not thread-safe */
    int serialized = 0, unserialized = 0;
    for (int i = 0; i < px_btl_base_num_modules; ++i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        const char *name = m->btl_component->base.component_name;
        bool safe = PX_BTL_THREADS_MULTIPLE == px_btl_base_thread_support(m->btl_component);
        if (0 == strcmp(name, "shm"))
            shm = m;
        if (safe == px_btl_base_serialized(m)) {
            fprintf(stderr, "thread_fine rank %d: btl %s (%s) %s serialized by the base\n", rank,
                    name, safe ? "thread-safe" : "not thread-safe", safe ? "is" : "is not");
            unserialized++;
        } else {
            serialized += !safe;
        }
    }
    if (0 == unserialized && serialized > 0)
        printf("serialized ok %d\n", serialized);
    else
        atomic_fetch_add(&failures, 1);
    if (NULL == shm) {
        fprintf(stderr, "thread_fine rank %d: no shm module (run with btl self,shm)\n", rank);
        px_finalize();
        return 1;
    }

    /* 2. a send held inside the transport */
    uint64_t locks_before = px_btl_base_serial_locks(shm);
    px_barrier();
    if (0 == rank) /* its send of BLOCK_TAG waits inside the transport */
        held_arm(shm, BLOCK_TAG, 3 * STALL_S);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, thread1, NULL);
    while (0 == rank && !atomic_load(&held))
        sched_yield();
    pthread_create(&t2, NULL, thread2, NULL);
    double t0 = held_now();
    while (!atomic_load(&t2_done) && held_now() - t0 < STALL_S)
        usleep(1000);
    bool stalled = !atomic_load(&t2_done);
    atomic_store(&release, 1);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    if (0 == rank)
        held_disarm(shm);
    int v = 0;
    if (px_recv(&v, sizeof v, other, BLOCK_TAG, NULL) != PX_SUCCESS || v != 1000 + other)
        fail("the held message arrived wrong");
    if (stalled)
        fail("blocked send: others stalled (thread 2 did not finish its calls in 10 s while "
             "thread 1 was held inside the transport's send)");
    else if (0 == rank && 0 == atomic_load(&failures))
        printf("blocked send ok\n");
    uint64_t locks = px_btl_base_serial_locks(shm) - locks_before;
    if (locks > 0)
        printf("module lock taken %llu\n", (unsigned long long)locks);
    else
        fail("the shm module's lock was never taken during the traffic");
    px_barrier();
    int nf = atomic_load(&failures);
    px_finalize();
    return nf ? 1 : 0;
}
