/*
 * thread_auto: runtime_thread_locks=auto (docs/threads.md), run by
 * t_threads.sh as pxrun -n 2 over shm:
 *
 *   1. the main thread alone ping-pongs ITERS messages with the other rank:
 *      the process is still under the API lock, no transport is serialized
 *      by the BTL base ("alone api ok");
 *   2. a second thread joins: each rank's main thread and second thread
 *      ping-pong ITERS messages each with the same thread of the other rank,
 *      on their own tag, every message checked; the second thread's first
 *      call comes while the main thread waits in px_recv holding the API
 *      lock's bias. Afterwards the process is either in fine mode (every
 *      module that is not thread-safe serialized by the base, the shm
 *      module's lock taken: "two threads fine ok") or still under the API
 *      lock (nothing serialized: "two threads api ok"); t_threads.sh says
 *      which it expects (fine with two CPUs or more per rank, PX_RT_TEST_CPUS=2;
 *      api with both ranks on one CPU).
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
#include <unistd.h>
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"

#define ITERS 300

static int rank, other;
static atomic_int failures;

static void *watchdog(void *arg)
{
    (void)arg;
    sleep(60);
    fprintf(stderr, "thread_auto rank %d: still running after 60 s\n", rank);
    _exit(3);
}

/* Thread t's ping-pong with thread t of the other rank, on tag t. */
static void pingpong(int t)
{
    for (int i = 0; i < ITERS; ++i) {
        int32_t msg[2] = {t, i}, got[2] = {-1, -1};
        int rc;
        if (0 == rank) {
            rc = px_send(msg, sizeof(msg), other, t);
            if (PX_SUCCESS == rc)
                rc = px_recv(got, sizeof(got), other, t, NULL);
        } else {
            rc = px_recv(got, sizeof(got), other, t, NULL);
            if (PX_SUCCESS == rc)
                rc = px_send(got, sizeof(got), other, t);
        }
        if (rc != PX_SUCCESS || got[0] != t || got[1] != i) {
            fprintf(stderr, "thread_auto rank %d thread %d: message %d: rc %d, got (%d, %d)\n",
                    rank, t, i, rc, got[0], got[1]);
            ++failures;
            return;
        }
    }
}

static void *second(void *arg)
{
    (void)arg;
    usleep(20000); /* the main thread is in its ping-pong, most likely waiting */
    pingpong(1);
    return NULL;
}

/* Modules that are not thread-safe: how many, and how many the base serializes. */
static void count_serialized(int *unsafe, int *serialized, px_btl_module_t **shm)
{
    *unsafe = *serialized = 0;
    for (int i = 0; i < px_btl_base_num_modules; ++i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        if (!strcmp(m->btl_component->base.component_name, "shm"))
            *shm = m;
        if (PX_BTL_THREADS_MULTIPLE == px_btl_base_thread_support(m->btl_component))
            continue;
        ++*unsafe;
        *serialized += px_btl_base_serialized(m);
    }
}

int main(void)
{
    int provided;
    if (px_init_thread(PX_THREAD_MULTIPLE, &provided) != PX_SUCCESS ||
        provided != PX_THREAD_MULTIPLE) {
        fprintf(stderr, "thread_auto: px_init_thread(MULTIPLE) failed\n");
        return 1;
    }
    rank = px_rank();
    other = 1 - rank;
    if (px_size() != 2) {
        fprintf(stderr, "thread_auto: runs on 2 ranks, not %d\n", px_size());
        return 2;
    }
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);

    int unsafe, serialized;
    px_btl_module_t *shm = NULL;
    pingpong(0);
    count_serialized(&unsafe, &serialized, &shm);
    if (0 == failures && 0 == serialized && unsafe > 0)
        printf("alone api ok\n");
    else
        fprintf(stderr, "thread_auto rank %d: one thread: %d of %d modules serialized\n", rank,
                serialized, unsafe);

    pthread_t th;
    pthread_create(&th, NULL, second, NULL);
    pingpong(0);
    pthread_join(th, NULL);
    count_serialized(&unsafe, &serialized, &shm);
    uint64_t shm_locks = shm ? px_btl_base_serial_locks(shm) : 0;
    if (failures) {
        fprintf(stderr, "thread_auto rank %d: messages failed\n", rank);
    } else if (unsafe > 0 && serialized == unsafe && shm_locks > 0) {
        printf("two threads fine ok\n"); /* switched; messages went through shm's lock */
    } else if (0 == serialized) {
        printf("two threads api ok\n");
    } else {
        fprintf(stderr,
                "thread_auto rank %d: two threads: %d of %d modules serialized, shm's lock taken "
                "%llu times: neither mode\n",
                rank, serialized, unsafe, (unsigned long long)shm_locks);
        ++failures;
    }
    px_finalize();
    return failures ? 1 : 0;
}
