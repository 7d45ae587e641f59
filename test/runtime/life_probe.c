/*
 * life_probe.c: request lifetime after a wait timeout, and the failure paths
 * of px_finalize, under pxrun (run by test/runtime/t_lifetime.sh). The ranks
 * order their steps through files in $PROBE_DIR (made by the script), so no
 * step depends on how fast a loaded machine runs; a rank waiting for a file
 * makes no Plexus call, so nothing of its own progresses meanwhile.
 *
 *   life_probe eager    2 ranks, runtime_wait_timeout set. Rank 0 sends 100 B
 *                       and then 6000 B (eager over shm) to rank 1, which is
 *                       not progressing: the wait times out. A receive posted
 *                       next must complete only with the message rank 1 sends
 *                       for it, after rank 1 has taken the first two.
 *   life_probe rndv     3 ranks, rendezvous by RDMA get. Rank 0's 1 MiB send to
 *                       rank 1 times out; its next 1 MiB send, to rank 2, must
 *                       not be completed by rank 1's late FIN (rank 0 then
 *                       overwrites that buffer and rank 2 would read garbage).
 *   life_probe finalize 2 ranks. Rank 0 calls px_finalize with a timeout while
 *                       rank 1 is still busy: its barrier fails; rank 1 then
 *                       finalizes. Both must end (no lone boot fence).
 *   life_probe unread   2 ranks. Rank 1 sends 3 eager messages rank 0 never
 *                       receives; both finalize.
 *   life_probe uxfail   2 ranks, rank 0 with PX_RT_TEST_UX_FAIL=1: rank 1's
 *                       first unexpected message cannot be queued; rank 0's
 *                       receive from it must fail, not hang or succeed.
 * Each rank prints "rank R: N errors".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/plexus.h"

static const char *dir;
static int errors, my_rank;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("rank %d: FAIL: ", my_rank);                                                        \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        errors++;                                                                                  \
    } while (0)

static void path(char *p, size_t n, const char *name)
{
    snprintf(p, n, "%s/%s", dir, name);
}

static void post(const char *name)
{
    char p[4096];
    path(p, sizeof(p), name);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

static int exists(const char *name)
{
    char p[4096];
    path(p, sizeof(p), name);
    return 0 == access(p, F_OK);
}

/* Wait for a file without calling into Plexus (at most 60 s). */
static void await(const char *name)
{
    for (int i = 0; i < 60000 && !exists(name); ++i) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (!exists(name))
        FAIL("gave up waiting for %s", name);
}

/* Run progress until it has nothing left to do for a while. */
static void drain(void)
{
    for (int idle = 0; idle < 2000;) {
        if (px_progress() > 0)
            idle = 0;
        else
            idle++;
    }
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t k = 0; k < n; ++k)
        b[k] = (unsigned char)(k * 131 + seed);
}

static size_t differs(const unsigned char *b, size_t n, unsigned seed)
{
    for (size_t k = 0; k < n; ++k)
        if (b[k] != (unsigned char)(k * 131 + seed))
            return k + 1;
    return 0;
}

static void probe_eager(int me)
{
    static unsigned char big[6000], small[100];
    char late[16] = "";
    if (0 == me) {
        fill(small, sizeof(small), 1);
        fill(big, sizeof(big), 2);
        if (px_send(small, sizeof(small), 1, 1) != PX_SUCCESS)
            FAIL("100 B send failed");
        px_request_t *s;
        if (px_isend(big, sizeof(big), 1, 2, &s) != PX_SUCCESS)
            FAIL("6000 B isend failed");
        int rc = px_wait(&s, NULL);
        if (rc != PX_ERR_TIMEOUT)
            FAIL("the 6000 B send to a rank not progressing returned %s, expected a timeout",
                 px_strerror(rc));
        px_request_t *r;
        if (px_irecv(late, sizeof(late), 1, 3, &r) != PX_SUCCESS)
            FAIL("irecv failed");
        post("go1");
        int flag = 0;
        px_status_t st;
        while (!flag && !exists("done1"))
            px_test(&r, &flag, &st);
        if (!flag) {
            drain(); /* rank 1 has taken both messages: their completions come in */
            px_test(&r, &flag, &st);
        }
        if (flag)
            FAIL("the receive completed before its message was sent (error %d, %zu bytes)",
                 st.error, st.length);
        post("go3");
        for (int i = 0; !flag && i < 100000000; ++i)
            px_test(&r, &flag, &st);
        if (!flag)
            FAIL("the receive of the late message never completed");
        else if (st.error != PX_SUCCESS || st.length != 5 || strcmp(late, "late"))
            FAIL("the late message arrived as error %d, %zu bytes, \"%.15s\"", st.error, st.length,
                 late);
    } else {
        await("go1");
        px_status_t st;
        if (px_recv(small, sizeof(small), 0, 1, &st) != PX_SUCCESS || differs(small, 100, 1))
            FAIL("the 100 B message was lost or damaged");
        int rc = px_recv(big, sizeof(big), 0, 2, &st);
        /* The sender gave up waiting, but the message was already sent. */
        if (rc != PX_SUCCESS || st.length != sizeof(big) || differs(big, sizeof(big), 2))
            FAIL("the 6000 B message: %s, %zu bytes", px_strerror(rc), st.length);
        post("done1");
        await("go3");
        if (px_send("late", 5, 0, 3) != PX_SUCCESS)
            FAIL("sending the late message failed");
    }
}

static void probe_rndv(int me)
{
    const size_t n = 1u << 20;
    unsigned char *a = malloc(n), *b = malloc(n);
    if (0 == me) {
        fill(a, n, 11);
        fill(b, n, 22);
        px_request_t *s;
        if (px_isend(a, n, 1, 5, &s) != PX_SUCCESS)
            FAIL("isend to rank 1 failed");
        int rc = px_wait(&s, NULL);
        if (rc != PX_ERR_TIMEOUT)
            FAIL("the send to a rank not progressing returned %s, expected a timeout",
                 px_strerror(rc));
        /* Buffer a stays untouched: rank 1 may still read it. */
        if (px_isend(b, n, 2, 6, &s) != PX_SUCCESS)
            FAIL("isend to rank 2 failed");
        post("go1");
        int flag = 0;
        while (!flag && !exists("done1"))
            px_test(&s, &flag, NULL);
        if (!flag) {
            drain(); /* rank 1's FIN for the first send comes in here */
            px_test(&s, &flag, NULL);
        }
        if (flag) /* the send is complete: its buffer is ours again */
            memset(b, 0xee, n);
        post("go2");
        while (!flag)
            px_test(&s, &flag, NULL);
        memset(b, 0xee, n);
    } else if (1 == me) {
        await("go1");
        px_status_t st;
        int rc = px_recv(a, n, 0, 5, &st);
        if (rc != PX_SUCCESS) /* rank 0 gave up on this send: an error is fair */
            printf("rank 1: the timed-out send arrived as %s\n", px_strerror(rc));
        else if (differs(a, n, 11))
            FAIL("the timed-out send delivered damaged data");
        post("done1");
    } else {
        await("go2");
        px_status_t st;
        int rc = px_recv(b, n, 0, 6, &st);
        size_t at = differs(b, n, 22);
        if (rc != PX_SUCCESS || st.length != n || at)
            FAIL("1 MiB from rank 0: %s, %zu bytes, first wrong byte at %zu", px_strerror(rc),
                 st.length, at ? at - 1 : 0);
    }
    free(a);
    free(b);
}

static void probe_unread(int me)
{
    if (1 == me)
        for (int i = 0; i < 3; ++i)
            if (px_send("unread", 7, 0, 9) != PX_SUCCESS)
                FAIL("send %d failed", i);
}

static void probe_uxfail(int me)
{
    if (1 == me) {
        if (px_send("one", 4, 0, 1) != PX_SUCCESS)
            FAIL("send failed");
        post("sent");
    } else {
        await("sent");
        drain(); /* the message arrives unexpected and cannot be queued */
        char buf[8];
        px_status_t st;
        int rc = px_recv(buf, sizeof(buf), 1, 1, &st);
        if (rc == PX_SUCCESS)
            FAIL("the receive succeeded although its message could not be queued");
        else
            printf("rank 0: receive from rank 1: %s\n", px_strerror(rc));
    }
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    dir = getenv("PROBE_DIR");
    if (NULL == dir)
        dir = ".";
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    int me = px_rank();
    my_rank = me;
    const char *mode = argv[1];
    int frc = PX_SUCCESS;
    if (0 == strcmp(mode, "eager"))
        probe_eager(me);
    else if (0 == strcmp(mode, "rndv"))
        probe_rndv(me);
    else if (0 == strcmp(mode, "unread"))
        probe_unread(me);
    else if (0 == strcmp(mode, "uxfail"))
        probe_uxfail(me);
    else if (0 == strcmp(mode, "finalize")) {
        if (1 == me)
            await("fin0");
    }
    if (0 == strcmp(mode, "finalize") && 0 == me) {
        /* Rank 1 is not in px_finalize yet: the barrier times out. */
        frc = px_finalize();
        printf("rank 0: px_finalize: %s\n", px_strerror(frc));
        post("fin0");
    } else {
        /* Where a peer was failed, px_finalize's barrier reports it. */
        frc = px_finalize();
        if ((0 == strcmp(mode, "eager") || 0 == strcmp(mode, "unread")) && frc != PX_SUCCESS)
            FAIL("px_finalize: %s", px_strerror(frc));
    }
    printf("rank %d: %d errors\n", me, errors);
    return errors ? 1 : 0;
}
