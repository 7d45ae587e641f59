/*
 * dyn_app: an application of dynamic peers through the public API only
 * (runtime/plexus.h: px_contact, px_connect, px_accept, px_disconnect and
 * tagged messages to a peer id), for test/peer/t_dyn.sh, which starts each
 * side separately (no launcher: px_init alone). The secret comes from
 * PX_MCA_peer_secret_file.
 *
 *   dyn_app server FILE SESSIONS
 *       open the listener, write the contact to FILE, then serve SESSIONS
 *       connections one after another: receive from the peer (tag 1: echo
 *       back with tag 2; tag 5: the next message is taken with PX_ANY_SOURCE
 *       and echoed; tag 3: disconnect, next session); a failed receive
 *       prints the error and goes to the next session
 *   dyn_app client FILE CONNECTIONS
 *       connect CONNECTIONS times in a row (a new id each), each time: echo
 *       messages of 0 B .. 4 MiB (eager and rendezvous) with checksums, a
 *       wildcard exchange, then disconnect
 *   dyn_app cycles FILE N
 *       N connections in a row, one small echo each; prints the open
 *       descriptors after the first and after the last
 *   dyn_app hold FILE
 *       connect, print "connected", wait forever (the test kills it)
 *       (and, over 10 sessions or cycles, the usage after a tenth of them and
 *       after the last: descriptors, memfds, /dev/shm entries, RSS)
 *   dyn_app mutual MYFILE OTHERFILE
 *       write this contact to MYFILE, connect to the one in OTHERFILE while
 *       the other process connects here; accept its connection; echo
 *   dyn_app edge
 *       px_accept without a listener, px_connect to itself, px_accept with
 *       nobody connecting: prints each result
 *   dyn_app twice FILE
 *       two connections to one server at once, each echoes its own message
 *   dyn_app fdhog FILE
 *       a listener whose process is out of descriptors until FILE.go
 *       exists (prints the CPU time it used meanwhile), then one session
 *   dyn_app contact
 *       open the listener and print the contact (can this process listen?)
 *   dyn_app connect-only FILE
 *       connect once and report the result (a wrong secret is refused)
 *   dyn_app late FILE
 *       write the contact to FILE, accept one connection, then make progress
 *       with nothing pending with the peer for 2 s (it leaves meanwhile:
 *       connect-only), then send to it and print the result
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "test/peer/dyn_util.h"

#define MAXLEN (4u << 20)

static int fail(const char *what, int rc)
{
    printf("FAIL %s: %s (%d)\n", what, px_strerror(rc), rc);
    fflush(stdout);
    return 1;
}

/* What a connection could leave behind: open descriptors, memfds among
 * them, entries in /dev/shm, resident memory (KiB, /proc/self/statm). */
typedef struct {
    int fds, memfds, shm;
    long rss_kib, heap; /* heap: bytes malloc has handed out (mallinfo2) */
} usage_t;

static int count_dir(const char *path)
{
    int n = 0;
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Entries in DIR and its folders (one level down). */
static int count_tree(const char *path)
{
    int n = 0;
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        n++;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        int k = count_dir(sub);
        n += k > 0 ? k : 0;
    }
    closedir(d);
    return n;
}

/* The shared-memory folder counted: DYN_APP_SHM_DIR (the test points it and
 * btl_shm_backing_dir at a folder of its own), else /dev/shm. */
static usage_t usage(void)
{
    const char *dir = getenv("DYN_APP_SHM_DIR");
    usage_t u = {dyn_count_fds(), 0, count_tree(dir && *dir ? dir : "/dev/shm"), -1, 0};
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[300], t[300];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(p, t, sizeof t - 1);
        if (n > 0) {
            t[n] = 0;
            u.memfds += 0 == strncmp(t, "/memfd:", 7);
        }
    }
    if (d)
        closedir(d);
    FILE *f = fopen("/proc/self/statm", "r");
    long size, res;
    if (f && 2 == fscanf(f, "%ld %ld", &size, &res))
        u.rss_kib = res * (sysconf(_SC_PAGESIZE) / 1024);
    if (f)
        fclose(f);
    u.heap = (long)mallinfo2().uordblks;
    return u;
}

static void print_usage(const char *who, const char *when, usage_t u)
{
    printf("%s usage %s: fds %d memfds %d shm %d rss_kib %ld heap %ld\n", who, when, u.fds,
           u.memfds, u.shm, u.rss_kib, u.heap);
    fflush(stdout);
}

/* The cycles after which usage is taken the first time (the rest must not
 * grow it): a tenth of them, at least one. */
static int warm_up(int n)
{
    return n / 10 > 0 ? n / 10 : 1;
}

static int server(const char *file, int sessions)
{
    const char *contact;
    int rc = px_contact(&contact);
    if (rc != PX_SUCCESS)
        return fail("px_contact", rc);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "%s\n", contact);
    fclose(f);
    rename(tmp, file);
    unsigned char *buf = malloc(MAXLEN);
    for (int s = 0; s < sessions; ++s) {
        int p;
        rc = px_accept(60, &p);
        if (rc != PX_SUCCESS)
            return fail("px_accept", rc);
        /* One peer connected here (its process waits for the echo), none
         * other: the same state at both measures. */
        if (sessions >= 10 && s == warm_up(sessions))
            print_usage("server", "after warm-up", usage());
        if (sessions >= 10 && s == sessions - 1)
            print_usage("server", "after the last", usage());
        printf("session %d: accepted peer %d\n", s, p);
        fflush(stdout);
        for (;;) {
            px_status_t st;
            rc = px_recv(buf, MAXLEN, p, PX_ANY_TAG, &st);
            if (rc != PX_SUCCESS) {
                printf("session %d: receive from peer %d failed: %s\n", s, p, px_strerror(rc));
                fflush(stdout);
                px_disconnect(p);
                break;
            }
            if (st.source != p)
                return fail("status.source is not the peer", PX_ERR_FATAL);
            if (3 == st.tag) {
                rc = px_disconnect(p);
                printf("session %d: peer %d said bye, disconnect: %s\n", s, p, px_strerror(rc));
                fflush(stdout);
                break;
            }
            if (5 == st.tag) {
                rc = px_recv(buf, MAXLEN, PX_ANY_SOURCE, PX_ANY_TAG, &st);
                if (rc != PX_SUCCESS)
                    return fail("wildcard receive", rc);
                if (st.source != p) {
                    printf("FAIL wildcard source %d, expected %d\n", st.source, p);
                    return 1;
                }
            }
            rc = px_send(buf, st.length, p, 2);
            if (rc != PX_SUCCESS) {
                printf("session %d: send to peer %d failed: %s\n", s, p, px_strerror(rc));
                px_disconnect(p);
                break;
            }
        }
    }
    free(buf);
    printf("server done\n");
    return 0;
}

static int exchange(int p, unsigned char *out, unsigned char *in, int round)
{
    static const size_t sizes[] = {0, 1, 100, 4000, 65536, 300000, MAXLEN};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        size_t n = sizes[k];
        dyn_fill(out, n, (unsigned)(round * 31 + k));
        memset(in, 0, n);
        int rc = px_send(out, n, p, 1);
        if (rc != PX_SUCCESS)
            return fail("px_send", rc);
        px_status_t st;
        rc = px_recv(in, MAXLEN, p, 2, &st);
        if (rc != PX_SUCCESS)
            return fail("px_recv", rc);
        if (st.length != n || dyn_sum(in, n) != dyn_sum(out, n) || st.source != p) {
            printf("FAIL echo of %zu bytes: got %zu from %d, checksum %s\n", n, st.length,
                   st.source, dyn_sum(in, n) == dyn_sum(out, n) ? "ok" : "differs");
            return 1;
        }
    }
    /* wildcard: the server takes the second message with PX_ANY_SOURCE;
     * here the echo is taken with PX_ANY_SOURCE too */
    dyn_fill(out, 5000, 99);
    px_request_t *rq;
    int rc = px_irecv(in, MAXLEN, PX_ANY_SOURCE, PX_ANY_TAG, &rq);
    if (rc != PX_SUCCESS)
        return fail("px_irecv any", rc);
    if ((rc = px_send("", 0, p, 5)) != PX_SUCCESS || (rc = px_send(out, 5000, p, 7)) != PX_SUCCESS)
        return fail("px_send (wildcard)", rc);
    px_status_t st;
    rc = px_wait(&rq, &st);
    if (rc != PX_SUCCESS)
        return fail("px_wait any", rc);
    if (st.source != p || st.length != 5000 || dyn_sum(in, 5000) != dyn_sum(out, 5000)) {
        printf("FAIL wildcard echo: source %d (peer %d), %zu bytes\n", st.source, p, st.length);
        return 1;
    }
    return 0;
}

/* CYCLES connections with one small echo each; the open descriptors after
 * the first and after the last must be the same. */
static int cycles(const char *file, int n)
{
    char c[512];
    if (!dyn_read_contact(file, c, sizeof c, 20))
        return fail("no contact in the file", PX_ERR_TIMEOUT);
    int fds1 = -1, last = -1;
    for (int i = 0; i < n; ++i) {
        int p, v = i, w = -1, rc;
        if ((rc = px_connect(c, &p)) != PX_SUCCESS)
            return fail("px_connect", rc);
        if (p == last)
            return fail("a reused peer id", PX_ERR_FATAL);
        last = p;
        if ((rc = px_send(&v, sizeof v, p, 1)) != PX_SUCCESS ||
            (rc = px_recv(&w, sizeof w, p, 2, NULL)) != PX_SUCCESS)
            return fail("echo", rc);
        if (w != v)
            return fail("echo value", PX_ERR_FATAL);
        if ((rc = px_send("", 0, p, 3)) != PX_SUCCESS || (rc = px_disconnect(p)) != PX_SUCCESS)
            return fail("bye", rc);
        if (0 == i)
            fds1 = dyn_count_fds();
        if (i + 1 == warm_up(n))
            print_usage("client", "after warm-up", usage());
    }
    /* A transport may close a connection's last descriptor only once the
     * server noticed the disconnect (softverbs: the socket of the QP's
     * connection, after the server removed its QP): under load the last few
     * are still open here. Wait up to 5 s for the count to come back to the
     * first's; a descriptor leaked per connection never does. */
    int fdsn = dyn_count_fds();
    for (int t = 0; t < 500 && fdsn > fds1; ++t) {
        px_progress();
        usleep(10000);
        fdsn = dyn_count_fds();
    }
    printf("cycles %d: descriptors after the first %d, after the last %d\n", n, fds1, fdsn);
    print_usage("client", "after the last", usage());
    return 0;
}

static void write_contact(const char *file, const char *contact)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%s\n", contact);
        fclose(f);
        rename(tmp, file);
    }
}

/* Both processes connect to each other at the same moment (each waits for
 * the other's contact, then connects): both connects finish, each side has
 * two peers, the one its px_connect gave and the one px_accept gives for
 * the other's connection. A message sent to the first arrives from the
 * second on the other side. */
static int mutual(const char *mine, const char *theirs)
{
    const char *me;
    char c[512];
    int rc = px_contact(&me);
    if (rc != PX_SUCCESS)
        return fail("px_contact", rc);
    write_contact(mine, me);
    if (!dyn_read_contact(theirs, c, sizeof c, 20))
        return fail("no contact of the other process", PX_ERR_TIMEOUT);
    int out, in;
    if ((rc = px_connect(c, &out)) != PX_SUCCESS)
        return fail("px_connect (mutual)", rc);
    printf("mutual: connected, peer %d\n", out);
    fflush(stdout);
    if ((rc = px_accept(30, &in)) != PX_SUCCESS)
        return fail("px_accept (mutual)", rc);
    printf("mutual: accepted the other's connection, peer %d\n", in);
    fflush(stdout);
    if (in == out)
        return fail("the accepted peer has the connected peer's id", PX_ERR_FATAL);
    int v = (int)getpid(), w = -1, e = -1;
    if ((rc = px_send(&v, sizeof v, out, 1)) != PX_SUCCESS)
        return fail("send to the connected peer", rc);
    if ((rc = px_recv(&w, sizeof w, in, 1, NULL)) != PX_SUCCESS)
        return fail("receive from the accepted peer", rc);
    if ((rc = px_send(&w, sizeof w, in, 2)) != PX_SUCCESS)
        return fail("echo to the accepted peer", rc);
    if ((rc = px_recv(&e, sizeof e, out, 2, NULL)) != PX_SUCCESS)
        return fail("echo from the connected peer", rc);
    if (e != v)
        return fail("the echo differs", PX_ERR_FATAL);
    printf("mutual: echo through both peers ok (the other is pid %d)\n", w);
    fflush(stdout);
    /* both sides done before either disconnects */
    if ((rc = px_send(&v, sizeof v, out, 3)) != PX_SUCCESS ||
        (rc = px_recv(&w, sizeof w, in, 3, NULL)) != PX_SUCCESS)
        return fail("bye", rc);
    if ((rc = px_disconnect(out)) != PX_SUCCESS || (rc = px_disconnect(in)) != PX_SUCCESS)
        return fail("px_disconnect", rc);
    printf("mutual done\n");
    return 0;
}

/* Calls with a defined answer and no partner: px_accept without a listener,
 * px_connect to this process's own contact, px_accept with nobody
 * connecting (0 s and 0.5 s). Prints each result. */
static int edge(void)
{
    int p = -1, rc;
    rc = px_accept(0.1, &p);
    printf("accept without contact: %s\n", px_strerror(rc));
    const char *me;
    if ((rc = px_contact(&me)) != PX_SUCCESS)
        return fail("px_contact", rc);
    rc = px_connect(me, &p);
    printf("connect to self: %s\n", px_strerror(rc));
    rc = px_accept(0, &p);
    printf("accept nobody (0 s): %s\n", px_strerror(rc));
    rc = px_accept(0.5, &p);
    printf("accept nobody (0.5 s): %s\n", px_strerror(rc));
    /* and everything still works: the listener is open, the process sane */
    const char *again;
    rc = px_contact(&again);
    printf("contact again: %s %s\n", px_strerror(rc),
           again && 0 == strcmp(again, me) ? "same" : "differs");
    fflush(stdout);
    return 0;
}

/* Two connections to one server process at once: two peer ids, each with
 * its own messages (the second's message is sent first and waits for the
 * server's second session). */
static int twice(const char *file)
{
    char c[512];
    if (!dyn_read_contact(file, c, sizeof c, 20))
        return fail("no contact in the file", PX_ERR_TIMEOUT);
    int p1, p2, rc;
    if ((rc = px_connect(c, &p1)) != PX_SUCCESS || (rc = px_connect(c, &p2)) != PX_SUCCESS)
        return fail("px_connect (twice)", rc);
    printf("twice: peers %d and %d\n", p1, p2);
    fflush(stdout);
    if (p1 == p2)
        return fail("two connections, one id", PX_ERR_FATAL);
    int v1 = 111, v2 = 222, w = 0;
    if ((rc = px_send(&v2, sizeof v2, p2, 1)) != PX_SUCCESS ||
        (rc = px_send(&v1, sizeof v1, p1, 1)) != PX_SUCCESS)
        return fail("send", rc);
    if ((rc = px_recv(&w, sizeof w, p1, 2, NULL)) != PX_SUCCESS || w != v1)
        return fail("echo on the first connection", rc ? rc : PX_ERR_FATAL);
    if ((rc = px_send("", 0, p1, 3)) != PX_SUCCESS || (rc = px_disconnect(p1)) != PX_SUCCESS)
        return fail("bye on the first", rc);
    if ((rc = px_recv(&w, sizeof w, p2, 2, NULL)) != PX_SUCCESS || w != v2)
        return fail("echo on the second connection", rc ? rc : PX_ERR_FATAL);
    if ((rc = px_send("", 0, p2, 3)) != PX_SUCCESS || (rc = px_disconnect(p2)) != PX_SUCCESS)
        return fail("bye on the second", rc);
    printf("twice done: each connection echoed its own message\n");
    return 0;
}

/* A listener in a process out of descriptors: open the listener, take
 * every free descriptor, then progress (px_accept 0.2 s at a time) until
 * FILE.go exists; print the CPU time that took against the wall time.
 * Then give the descriptors back and serve one session (as server). */
static int fdhog(const char *file)
{
    const char *me;
    int rc = px_contact(&me);
    if (rc != PX_SUCCESS)
        return fail("px_contact", rc);
    char go[4096];
    snprintf(go, sizeof go, "%s.go", file);
    int cap = 1 << 16, n = 0;
    int *fds = malloc((size_t)cap * sizeof *fds);
    int fd;
    write_contact(file, me);
    while (n < cap && (fd = open("/dev/null", O_RDONLY)) >= 0)
        fds[n++] = fd;
    printf("fdhog: holding %d descriptors, the next open fails: %s\n", n, strerror(errno));
    fflush(stdout);
    struct timespec w0, c0, w1, c1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    int got = 0;
    while (0 != access(go, F_OK)) {
        int p;
        rc = px_accept(0.2, &p);
        if (rc == PX_SUCCESS)
            got++;
    }
    clock_gettime(CLOCK_MONOTONIC, &w1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double wall = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    printf("fdhog: out of descriptors for %.2f s wall, %.2f s cpu, accepted %d\n", wall, cpu, got);
    fflush(stdout);
    while (n > 0)
        close(fds[--n]);
    free(fds);
    return server(file, 1);
}

static int client(const char *file, int conns)
{
    char c[512];
    if (!dyn_read_contact(file, c, sizeof c, 20))
        return fail("no contact in the file", PX_ERR_TIMEOUT);
    unsigned char *out = malloc(MAXLEN), *in = malloc(MAXLEN);
    int last = -1;
    for (int i = 0; i < conns; ++i) {
        int p;
        int rc = px_connect(c, &p);
        if (rc != PX_SUCCESS)
            return fail("px_connect", rc);
        if (p == last || p < (1 << 24)) {
            printf("FAIL peer id %d (previous %d): not a new dynamic id\n", p, last);
            return 1;
        }
        last = p;
        printf("connection %d: peer %d over %s\n", i, p, px_transport_name(p));
        fflush(stdout);
        if (exchange(p, out, in, i))
            return 1;
        if ((rc = px_send("", 0, p, 3)) != PX_SUCCESS)
            return fail("bye", rc);
        if ((rc = px_disconnect(p)) != PX_SUCCESS)
            return fail("px_disconnect", rc);
        /* the id is gone: a send to it fails at once */
        rc = px_send("", 0, p, 1);
        if (rc != PX_ERR_PEER_FAILED)
            return fail("a send after px_disconnect did not fail with PX_ERR_PEER_FAILED", rc);
        printf("connection %d: echoed 0 B .. 4 MiB and a wildcard exchange\n", i);
        fflush(stdout);
    }
    printf("client done: %d connections\n", conns);
    free(out);
    free(in);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment in test/peer/dyn_app.c\n");
        return 2;
    }
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS)
        return fail("px_init", rc);
    int ret = 0;
    if (0 == strcmp(argv[1], "server") && argc >= 4) {
        ret = server(argv[2], atoi(argv[3]));
    } else if (0 == strcmp(argv[1], "cycles") && argc >= 4) {
        ret = cycles(argv[2], atoi(argv[3]));
    } else if (0 == strcmp(argv[1], "client") && argc >= 4) {
        ret = client(argv[2], atoi(argv[3]));
    } else if (0 == strcmp(argv[1], "mutual") && argc >= 4) {
        ret = mutual(argv[2], argv[3]);
    } else if (0 == strcmp(argv[1], "edge")) {
        ret = edge();
    } else if (0 == strcmp(argv[1], "twice") && argc >= 3) {
        ret = twice(argv[2]);
    } else if (0 == strcmp(argv[1], "fdhog") && argc >= 3) {
        ret = fdhog(argv[2]);
    } else if (0 == strcmp(argv[1], "contact")) {
        const char *c;
        rc = px_contact(&c);
        printf("px_contact: %s %s\n", px_strerror(rc), rc == PX_SUCCESS ? c : "");
        ret = rc == PX_SUCCESS ? 0 : 3;
    } else if (0 == strcmp(argv[1], "hold")) {
        char c[512];
        int p;
        if (!dyn_read_contact(argv[2], c, sizeof c, 20))
            return fail("no contact", PX_ERR_TIMEOUT);
        rc = px_connect(c, &p);
        if (rc != PX_SUCCESS)
            return fail("px_connect", rc);
        printf("connected: peer %d\n", p);
        fflush(stdout);
        for (;;) {
            px_progress();
            usleep(1000);
        }
    } else if (0 == strcmp(argv[1], "late") && argc >= 3) {
        const char *c;
        if ((rc = px_contact(&c)) != PX_SUCCESS)
            return fail("px_contact", rc);
        write_contact(argv[2], c);
        int p;
        if ((rc = px_accept(60, &p)) != PX_SUCCESS)
            return fail("px_accept", rc);
        printf("accepted peer %d\n", p);
        fflush(stdout);
        for (int i = 0; i < 2000; ++i) {
            px_progress();
            usleep(1000);
        }
        char b = 1;
        rc = px_send(&b, 1, p, 1);
        printf("late send: %s\n", px_strerror(rc));
        ret = rc == PX_SUCCESS ? 0 : 3;
    } else if (0 == strcmp(argv[1], "connect-only")) {
        char c[512];
        int p;
        if (!dyn_read_contact(argv[2], c, sizeof c, 20))
            return fail("no contact", PX_ERR_TIMEOUT);
        rc = px_connect(c, &p);
        printf("px_connect: %s\n", px_strerror(rc));
        ret = rc == PX_SUCCESS ? 0 : 3;
    } else {
        fprintf(stderr, "dyn_app: unknown mode %s\n", argv[1]);
        ret = 2;
    }
    px_finalize();
    return ret;
}
