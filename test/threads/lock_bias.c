/*
 * lock_bias: the API lock's bias at PX_THREAD_MULTIPLE (runtime/proc/proc_lock.c,
 * docs/threads.md), each rank sending to itself (pxrun -n 2 lock_bias: alone
 * in its job, a process's receive from itself that nothing matches yet is
 * refused as a deadlock), run by t_threads.sh:
 *
 *   1. one thread, 4000 send+receive pairs: the data arrive, and (builds
 *      without a sanitizer, which owns the pthread symbols) the pairs after
 *      the first few hundred take no mutex: "mutex calls N in 4000 pairs";
 *   2. the owner of the bias blocks in px_recv while a second thread, which
 *      has never called Plexus, sends it the message: the second thread must
 *      take the lock away from a thread inside a blocking call ("revoke ok");
 *   3. two threads ping-pong through Plexus (each message checked), then take
 *      turns working alone long enough for the bias to move from one to the
 *      other and back, six times ("turns ok"); under TSan this checks that
 *      the hand-over orders memory. With "fifo" both threads of step 3 run
 *      at SCHED_FIFO on one CPU, so neither is preempted for the other: a
 *      wait that spins without ever yielding its core (the thread that would
 *      answer it cannot run) hangs there for good instead of costing a time
 *      slice per message on a loaded machine ("fifo unavailable: ..." where
 *      real-time scheduling is not permitted).
 *
 * With runtime_thread_locks=fine (t_threads.sh runs both) the same steps check the biased locks of
 * core/util/bias_lock.h too: a send to itself takes the API lock, the
 * matching lock and btl/self's lock of the BTL base, and with the bias none
 * of them is a mutex call once given.
 *
 * A watchdog ends the process with a message after 60 s (a lost hand-over).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "plexus.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define LB_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define LB_SANITIZER 1
#endif
#endif

static atomic_long mutex_calls;
#ifndef LB_SANITIZER
/* Count the library's mutex acquisitions: the executable's definitions come
 * before libc's for libplexus's calls. */
int pthread_mutex_lock(pthread_mutex_t *m)
{
    static int (*real)(pthread_mutex_t *);
    if (!real)
        real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    atomic_fetch_add(&mutex_calls, 1);
    return real(m);
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
    static int (*real)(pthread_mutex_t *);
    if (!real)
        real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    atomic_fetch_add(&mutex_calls, 1);
    return real(m);
}
#endif

static atomic_int failures;
static int self; /* this rank: every message goes to itself */

static void fail(const char *what, long i)
{
    fprintf(stderr, "lock_bias: rank %d: %s (at %ld)\n", self, what, i);
    ++failures;
}

/* n send+receive pairs to itself on tag, the payload checked. */
static void pairs(int tag, long n)
{
    long out, in;
    for (long i = 0; i < n; ++i) {
        out = i * 7 + tag;
        in = -1;
        if (px_send(&out, sizeof out, self, tag) != PX_SUCCESS ||
            px_recv(&in, sizeof in, self, tag, NULL) != PX_SUCCESS || in != out) {
            fail("a self send+receive lost or changed its payload", i);
            return;
        }
    }
}

static void *late_sender(void *arg)
{
    (void)arg;
    usleep(200 * 1000); /* the main thread is in px_recv by then */
    long v = 4242;
    if (px_send(&v, sizeof v, self, 2) != PX_SUCCESS)
        fail("the second thread's px_send failed", 0);
    return NULL;
}

enum { PP = 300, TURNS = 6, TURN_PAIRS = 1000 };
static atomic_int turn;     /* the turn now: thread turn % 2 works */
static long turn_mutex_max; /* the most mutex calls in one turn */

static void *pinger(void *arg)
{
    int me = (int)(long)arg;
    long v;
    /* Ping-pong through Plexus: thread 0 sends tag 10, thread 1 answers on 11. */
    for (long i = 0; i < PP; ++i) {
        if (0 == me) {
            v = i;
            px_send(&v, sizeof v, self, 10);
            v = -1;
            px_recv(&v, sizeof v, self, 11, NULL);
            if (v != i + 1) {
                fail("ping-pong: wrong answer", i);
                break;
            }
        } else {
            v = -1;
            px_recv(&v, sizeof v, self, 10, NULL);
            if (v != i) {
                fail("ping-pong: wrong ping", i);
                break;
            }
            ++v;
            px_send(&v, sizeof v, self, 11);
        }
    }
    /* Turns: each works alone (the other waits outside Plexus) long enough
     * to be given the bias, and starts by receiving the message the other
     * sent at the end of its turn. */
    for (int t = me; t < TURNS; t += 2) {
        while (atomic_load(&turn) != t)
            sched_yield();
        long c0 = atomic_load(&mutex_calls), msg = -1;
        if (t > 0 && (px_recv(&msg, sizeof msg, self, 20 + me, NULL) != PX_SUCCESS || msg != t - 1))
            fail("turns: the other thread's last message is wrong", t);
        pairs(30 + me, TURN_PAIRS);
        msg = t;
        px_send(&msg, sizeof msg, self, 20 + (1 - me));
        long c = atomic_load(&mutex_calls) - c0;
        if (c > turn_mutex_max)
            turn_mutex_max = c; /* ordered by turn */
        atomic_store(&turn, t + 1);
    }
    return NULL;
}

static void *watchdog(void *arg)
{
    (void)arg;
    sleep(60);
    fprintf(stderr, "lock_bias: not done after 60 s (a thread waits for the lock forever?)\n");
    _exit(3);
}

/* Step 3's threads at SCHED_FIFO, both on one allowed CPU (the rank's, so
 * the two ranks use different CPUs where there are several): 0 (the caller
 * destroys *at) or an errno (*at is not left initialised). */
static int fifo_attr(pthread_attr_t *at)
{
    cpu_set_t all, one;
    int rc = pthread_attr_init(at);
    if (rc)
        return rc;
    if (sched_getaffinity(0, sizeof all, &all) != 0) {
        pthread_attr_destroy(at);
        return EINVAL;
    }
    int n = CPU_COUNT(&all), want = self % (n > 0 ? n : 1), cpu = -1;
    for (int c = 0, seen = 0; c < CPU_SETSIZE && cpu < 0; ++c)
        if (CPU_ISSET(c, &all) && seen++ == want)
            cpu = c;
    CPU_ZERO(&one);
    CPU_SET(cpu < 0 ? 0 : cpu, &one);
    struct sched_param sp = {.sched_priority = 1};
    if ((rc = pthread_attr_setaffinity_np(at, sizeof one, &one)) ||
        (rc = pthread_attr_setinheritsched(at, PTHREAD_EXPLICIT_SCHED)) ||
        (rc = pthread_attr_setschedpolicy(at, SCHED_FIFO)) ||
        (rc = pthread_attr_setschedparam(at, &sp))) {
        pthread_attr_destroy(at);
        return rc;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* "solo": steps 1 and 2 only; "fifo": step 3's threads at SCHED_FIFO on
     * one CPU (above). */
    int solo = argc > 1 && 0 == strcmp(argv[1], "solo");
    int fifo = argc > 1 && 0 == strcmp(argv[1], "fifo");
    int provided = -1;
    pthread_t wd, th[2];
    pthread_create(&wd, NULL, watchdog, NULL);
    if (px_init_thread(PX_THREAD_MULTIPLE, &provided) != PX_SUCCESS ||
        provided != PX_THREAD_MULTIPLE) {
        fprintf(stderr, "lock_bias: px_init_thread(MULTIPLE) failed (provided %d)\n", provided);
        return 1;
    }
    self = px_rank();
    /* 1. one thread */
    pairs(1, 1000); /* long enough to be given the bias */
    long before = atomic_load(&mutex_calls);
    pairs(1, 4000);
#ifdef LB_SANITIZER
    printf("mutex calls not counted (sanitizer build)\n");
#else
    printf("mutex calls %ld in 4000 pairs\n", atomic_load(&mutex_calls) - before);
#endif
    (void)before;
    /* 2. revoke from a thread inside a blocking receive */
    pthread_t s;
    long v = 0;
    pthread_create(&s, NULL, late_sender, NULL);
    if (px_recv(&v, sizeof v, self, 2, NULL) != PX_SUCCESS || v != 4242)
        fail("the blocking receive did not get the second thread's message", v);
    pthread_join(s, NULL);
    if (!failures)
        printf("revoke ok\n");
    if (solo) {
        px_finalize();
        return failures ? 1 : 0;
    }
    /* 3. two threads */
    pthread_attr_t at;
    int rc = fifo ? fifo_attr(&at) : 0;
    bool have_at = fifo && 0 == rc;
    for (long t = 0; t < 2 && 0 == rc; ++t) {
        rc = pthread_create(&th[t], fifo ? &at : NULL, pinger, (void *)t);
        if (rc && 1 == t) { /* the first one waits for its partner for good */
            fprintf(stderr, "lock_bias: the second SCHED_FIFO thread: %s\n", strerror(rc));
            _exit(1);
        }
    }
    if (have_at)
        pthread_attr_destroy(&at); /* its affinity set is allocated */
    if (rc) {
        printf("fifo unavailable: %s\n", strerror(rc));
        px_finalize();
        return failures ? 1 : 0;
    }
    for (int t = 0; t < 2; ++t)
        pthread_join(th[t], NULL);
    if (!failures)
        printf("turns ok\n");
#ifndef LB_SANITIZER
    printf("turn mutex calls max %ld in %d pairs\n", turn_mutex_max, TURN_PAIRS);
#endif
    pairs(1, 10); /* the main thread again */
    px_finalize();
    return failures ? 1 : 0;
}
