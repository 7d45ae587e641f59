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
 *   dyn_app contact
 *       open the listener and print the contact (can this process listen?)
 *   dyn_app connect-only FILE
 *       connect once and report the result (a wrong secret is refused)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"

#define MAXLEN (4u << 20)

static int fail(const char *what, int rc)
{
    printf("FAIL %s: %s (%d)\n", what, px_strerror(rc), rc);
    fflush(stdout);
    return 1;
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
}

static uint64_t sum(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static const char *read_contact(const char *file, char *buf, size_t len)
{
    for (int i = 0; i < 400; ++i) {
        FILE *f = fopen(file, "r");
        if (f) {
            size_t n = fread(buf, 1, len - 1, f);
            fclose(f);
            buf[n] = 0;
            char *nl = strchr(buf, '\n');
            if (nl) {
                *nl = 0;
                return buf;
            }
        }
        usleep(50000);
    }
    return NULL;
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
        fill(out, n, (unsigned)(round * 31 + k));
        memset(in, 0, n);
        int rc = px_send(out, n, p, 1);
        if (rc != PX_SUCCESS)
            return fail("px_send", rc);
        px_status_t st;
        rc = px_recv(in, MAXLEN, p, 2, &st);
        if (rc != PX_SUCCESS)
            return fail("px_recv", rc);
        if (st.length != n || sum(in, n) != sum(out, n) || st.source != p) {
            printf("FAIL echo of %zu bytes: got %zu from %d, checksum %s\n", n, st.length,
                   st.source, sum(in, n) == sum(out, n) ? "ok" : "differs");
            return 1;
        }
    }
    /* wildcard: the server takes the second message with PX_ANY_SOURCE;
     * here the echo is taken with PX_ANY_SOURCE too */
    fill(out, 5000, 99);
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
    if (st.source != p || st.length != 5000 || sum(in, 5000) != sum(out, 5000)) {
        printf("FAIL wildcard echo: source %d (peer %d), %zu bytes\n", st.source, p, st.length);
        return 1;
    }
    return 0;
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* CYCLES connections with one small echo each; the open descriptors after
 * the first and after the last must be the same. */
static int cycles(const char *file, int n)
{
    char c[512];
    if (!read_contact(file, c, sizeof c))
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
            fds1 = count_fds();
    }
    printf("cycles %d: descriptors after the first %d, after the last %d\n", n, fds1, count_fds());
    return 0;
}

static int client(const char *file, int conns)
{
    char c[512];
    if (!read_contact(file, c, sizeof c))
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
    } else if (0 == strcmp(argv[1], "contact")) {
        const char *c;
        rc = px_contact(&c);
        printf("px_contact: %s %s\n", px_strerror(rc), rc == PX_SUCCESS ? c : "");
        ret = rc == PX_SUCCESS ? 0 : 3;
    } else if (0 == strcmp(argv[1], "hold")) {
        char c[512];
        int p;
        if (!read_contact(argv[2], c, sizeof c))
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
    } else if (0 == strcmp(argv[1], "connect-only")) {
        char c[512];
        int p;
        if (!read_contact(argv[2], c, sizeof c))
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
