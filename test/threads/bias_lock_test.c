/*
 * bias_lock_test.c: the biased lock (core/util/bias_lock.h; docs/threads.md,
 * "The biased locks of fine mode").
 *
 * stale_owner: a thread that loaded `owner` (its own id) and was preempted
 * before it said it is inside goes on after its bias was revoked and given
 * to another thread that is now inside. Its entry fails, as it must; what it
 * writes on the way out must not hide the new owner from a revoker: its own
 * try of the lock after that has to fail while the new owner holds it. The
 * preemption is made deterministic with the header's test hook
 * (PX_BIAS_TEST_STALL), which stops the stale thread at that exact point.
 * Session 37: with one `inside` flag shared by every owner the stale thread
 * cleared the new owner's flag and its try took the lock beside it.
 *
 * turns: 4 threads take the lock in bursts longer than the streak, so the
 * bias moves between them all the time, and add to plain counters inside;
 * the sums are exact. Under ThreadSanitizer it is also the check that an
 * exit through the bias is ordered before the next holder.
 *
 * unlocked_writer (ThreadSanitizer builds only): a thread that writes the
 * data without taking the lock, against holders through the bias, is still
 * reported: the program runs itself in that mode with the reports sent to
 * its stderr and expects ThreadSanitizer's exit status and a data race.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stall_hook(const void *id);
#define PX_BIAS_TEST_STALL(l) stall_hook(l)
#include "core/util/bias_lock.h"
#include "test/lib/px_check.h"

static _Thread_local bool stall_armed;
static sem_t stalled, go_on;

static void stall_hook(const void *id)
{
    (void)id;
    if (!stall_armed)
        return;
    stall_armed = false;
    sem_post(&stalled);
    while (sem_wait(&go_on) != 0 && EINTR == errno)
        ;
}

static void sem_wait_all(sem_t *s)
{
    while (sem_wait(s) != 0 && EINTR == errno)
        ;
}

static px_bias_lock_t lk;

/* Take and leave the lock until this thread has its bias: true when the
 * mutex is no longer taken for a lock and unlock. */
static bool get_bias(void)
{
    for (int i = 0; i < PX_BIAS_LOCK_STREAK + 1; i++) {
        px_bias_lock(&lk);
        px_bias_unlock(&lk);
    }
    px_bias_lock(&lk);
    uint64_t takes = lk.mutex_takes;
    px_bias_unlock(&lk);
    px_bias_lock(&lk);
    bool biased = lk.mutex_takes == takes;
    px_bias_unlock(&lk);
    return biased;
}

static sem_t x_inside, x_leave;
static bool z_took;

static void *stale_thread(void *arg)
{
    (void)arg;
    ck_assert_msg(get_bias(), "the bias was not given after %d takes", PX_BIAS_LOCK_STREAK + 1);
    stall_armed = true;
    z_took = px_bias_trylock(&lk); /* stops in the hook until told */
    if (z_took)
        px_bias_unlock(&lk);
    return NULL;
}

static void *new_owner(void *arg)
{
    (void)arg;
    /* The first take revokes the stale thread's bias. */
    ck_assert_msg(get_bias(), "the bias was not given after %d takes", PX_BIAS_LOCK_STREAK + 1);
    px_bias_lock(&lk);
    sem_post(&x_inside);
    sem_wait_all(&x_leave);
    px_bias_unlock(&lk);
    return NULL;
}

START_TEST(stale_owner)
{
    if (!px_bias_usable()) {
        printf("# stale_owner: no membarrier here, so no bias: skipped\n");
        return;
    }
    ck_assert_int_eq(px_bias_lock_init(&lk, true), 0);
    sem_init(&stalled, 0, 0);
    sem_init(&go_on, 0, 0);
    sem_init(&x_inside, 0, 0);
    sem_init(&x_leave, 0, 0);
    pthread_t z, x;
    ck_assert_int_eq(pthread_create(&z, NULL, stale_thread, NULL), 0);
    sem_wait_all(&stalled); /* z loaded owner == z and stopped */
    ck_assert_int_eq(pthread_create(&x, NULL, new_owner, NULL), 0);
    sem_wait_all(&x_inside); /* x revoked z's bias, got its own, is inside */
    sem_post(&go_on);
    pthread_join(z, NULL);
    bool took = z_took;
    sem_post(&x_leave);
    pthread_join(x, NULL);
    ck_assert_msg(!took, "a thread took the lock while its biased owner was inside");
    /* And the lock still works for anybody. */
    px_bias_lock(&lk);
    ck_assert(px_bias_lock_held(&lk));
    px_bias_unlock(&lk);
    px_bias_lock_destroy(&lk);
}
END_TEST

#if defined(PX_BIAS_TSAN)
#define ROUNDS 100
#else
#define ROUNDS 2000
#endif
#define NTHREADS 4
#define BURST    (2 * PX_BIAS_LOCK_STREAK)

static unsigned long counter, per_thread[NTHREADS];

static void *turns_thread(void *arg)
{
    long id = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BURST; i++) {
            px_bias_lock(&lk);
            px_bias_lock(&lk); /* recursive */
            counter++;
            per_thread[(id + i) % NTHREADS]++;
            px_bias_unlock(&lk);
            px_bias_unlock(&lk);
        }
        sched_yield();
    }
    return NULL;
}

START_TEST(turns)
{
    ck_assert_int_eq(px_bias_lock_init(&lk, true), 0);
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, turns_thread, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    unsigned long sum = 0;
    for (int i = 0; i < NTHREADS; i++)
        sum += per_thread[i];
    ck_assert_uint_eq(counter, (unsigned long)NTHREADS * ROUNDS * BURST);
    ck_assert_uint_eq(sum, counter);
    px_bias_lock_destroy(&lk);
}
END_TEST

#if defined(PX_BIAS_TSAN)
/* The mode the test below runs: holders through the bias against a thread
 * that writes without the lock. */
static void *unlocked_writer_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        counter++; /* no lock: the race ThreadSanitizer must report */
        sched_yield();
    }
    return NULL;
}

static int unlocked_writer_mode(void)
{
    px_bias_lock_init(&lk, true);
    if (!get_bias())
        return 3; /* no bias: the check would not be the one meant */
    pthread_t w;
    pthread_create(&w, NULL, unlocked_writer_thread, NULL);
    for (int i = 0; i < 1000; i++) {
        px_bias_lock(&lk);
        counter++;
        px_bias_unlock(&lk);
        sched_yield();
    }
    pthread_join(w, NULL);
    return 0;
}

START_TEST(unlocked_writer)
{
    char out[] = "/tmp/bias_lock_test.XXXXXX";
    int fd = mkstemp(out);
    ck_assert_int_ge(fd, 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (0 == pid) {
        dup2(fd, 2);
        const char *o = getenv("TSAN_OPTIONS");
        char opts[4096];
        snprintf(opts, sizeof opts, "%s exitcode=66 log_path=stderr", o ? o : "");
        setenv("TSAN_OPTIONS", opts, 1);
        execl("/proc/self/exe", "bias_lock_test", "--unlocked-writer", (char *)NULL);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    char buf[65536];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(out);
    buf[n > 0 ? n : 0] = '\0';
    ck_assert_msg(WIFEXITED(st) && 66 == WEXITSTATUS(st),
                  "the unlocked writer was not reported (status %d)", st);
    ck_assert_msg(strstr(buf, "ThreadSanitizer: data race") != NULL, "no data race in: %s", buf);
}
END_TEST
#endif

int main(int argc, char **argv)
{
#if defined(PX_BIAS_TSAN)
    if (argc > 1 && 0 == strcmp(argv[1], "--unlocked-writer"))
        return unlocked_writer_mode();
    const TTest *tests[] = {stale_owner, turns, unlocked_writer};
#else
    (void)argc;
    (void)argv;
    const TTest *tests[] = {stale_owner, turns};
#endif
    Suite *s = suite_create("bias_lock");
    suite_add_tcase(
        s, px_check_tcase("bias_lock", NULL, NULL, 120, tests, sizeof tests / sizeof tests[0]));
    return px_check_run(s);
}
