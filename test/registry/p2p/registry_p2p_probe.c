/*
 * registry_p2p_probe: one process of t_registry_p2p.sh, started separately,
 * using registry/p2p through the registry framework (PX_MCA_registry=p2p).
 *
 *   owner FILE NAME=VALUE...   put each name (PUT_CREATE), write the
 *                              listener's "a.b.c.d:port" to FILE, then serve
 *                              until killed (sleeping: lookups are answered
 *                              by the listener's thread)
 *   get NAME                   the value of "<namespace>/NAME": prints
 *                              "value=<bytes>" (exit 0) or "error=<rc> ..."
 *                              and "elapsed_ms=<ms>"; exit 2 NOT_FOUND,
 *                              3 NOT_AVAILABLE, 4 TIMEOUT, 5 BAD_PARAM, 1 other
 *   list PREFIX                "key=<key> value=<value>" per entry
 *   local                      put, get, del, list and qualify on this
 *                              process's own names (prints each check)
 *   hostile A.B.C.D PORT MODE N   open N connections to a listener and hold
 *                              them until killed; MODE stall (send nothing),
 *                              garbage (random bytes), oversize (a header
 *                              announcing a namespace of 65535 bytes),
 *                              slowloris (a valid request, one byte per
 *                              100 ms); prints "ready" once all are open
 *   fakeowner FILE MODE        a hostile "owner": listens on 127.0.0.1, writes
 *                              "127.0.0.1:port" to FILE, answers every
 *                              connection per MODE: huge (a header announcing
 *                              4 GiB), truncated (announces 100 bytes, sends
 *                              10, closes), badmagic, silent (reads, never
 *                              answers), badlist (a LIST entry overrunning)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "core/util/error.h"
#include "frameworks/registry/registry.h"
#include "runtime/plexus.h"

static px_registry_module_t *m;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static char *key_of(const char *name)
{
    const char *ns = px_registry_base_namespace();
    size_t n = strlen(ns) + strlen(name) + 2;
    char *k = malloc(n);
    snprintf(k, n, "%s/%s", ns, name);
    return k;
}

static int exit_code(int rc)
{
    switch (rc) {
    case PX_SUCCESS:
        return 0;
    case PX_ERR_NOT_FOUND:
        return 2;
    case PX_ERR_NOT_AVAILABLE:
        return 3;
    case PX_ERR_TIMEOUT:
        return 4;
    case PX_ERR_BAD_PARAM:
        return 5;
    default:
        return 1;
    }
}

static void write_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        exit(1);
    }
}

static int print_entry(const char *key, const void *value, size_t len, void *arg)
{
    (void)arg;
    printf("key=%s value=%.*s\n", key, (int)len, (const char *)value);
    return PX_SUCCESS;
}

static int failures;
#define EXPECT(what, cond)                                                                         \
    do {                                                                                           \
        bool ok_ = (cond);                                                                         \
        printf("%s %s\n", ok_ ? "pass" : "FAIL", what);                                            \
        failures += !ok_;                                                                          \
    } while (0)

static int count_entry(const char *key, const void *value, size_t len, void *arg)
{
    (void)key, (void)value, (void)len;
    ++*(int *)arg;
    return PX_SUCCESS;
}

static int stop_entry(const char *key, const void *value, size_t len, void *arg)
{
    (void)key, (void)value, (void)len, (void)arg;
    return 42;
}

static int local_checks(void)
{
    char *k1 = key_of("kv/a"), *k2 = key_of("kv/b"), *k3 = key_of("other");
    void *v = NULL;
    size_t len = 0;
    EXPECT("get of a name never put is NOT_FOUND", m->get(m, k1, &v, &len) == PX_ERR_NOT_FOUND);
    EXPECT("put", m->put(m, k1, "one", 3, PX_REGISTRY_PUT_ANY) == PX_SUCCESS);
    EXPECT("get returns the value with a NUL after it",
           m->get(m, k1, &v, &len) == PX_SUCCESS && len == 3 && memcmp(v, "one\0", 4) == 0);
    free(v);
    EXPECT("PUT_CREATE of the same bytes renews", m->put(m, k1, "one", 3, 1) == PX_SUCCESS);
    EXPECT("PUT_CREATE of other bytes is EXISTS", m->put(m, k1, "two", 3, 1) == PX_ERR_EXISTS);
    EXPECT("PUT_ANY replaces", m->put(m, k1, "two", 3, PX_REGISTRY_PUT_ANY) == PX_SUCCESS);
    EXPECT("put of an empty value", m->put(m, k2, "", 0, PX_REGISTRY_PUT_ANY) == PX_SUCCESS);
    EXPECT("put of a third name", m->put(m, k3, "3", 1, PX_REGISTRY_PUT_ANY) == PX_SUCCESS);
    static char big[PX_REGISTRY_VALUE_MAX + 1];
    EXPECT("put of a value over PX_REGISTRY_VALUE_MAX is BAD_PARAM",
           m->put(m, k3, big, sizeof big, PX_REGISTRY_PUT_ANY) == PX_ERR_BAD_PARAM);
    EXPECT("put of PX_REGISTRY_VALUE_MAX bytes",
           m->put(m, k3, big, PX_REGISTRY_VALUE_MAX, PX_REGISTRY_PUT_ANY) == PX_SUCCESS);
    char *pre = key_of("kv/");
    int n = 0;
    EXPECT("list of a prefix", m->list(m, pre, count_entry, &n) == PX_SUCCESS && n == 2);
    EXPECT("list stops with the callback's code", m->list(m, pre, stop_entry, NULL) == 42);
    char q[512];
    EXPECT("qualify gives a.b.c.d:port/name",
           m->qualify && m->qualify(m, "kv/a", q, sizeof q) == PX_SUCCESS && strstr(q, ":") &&
               strstr(q, "/kv/a"));
    printf("qualified=%s\n", q);
    char *kq = key_of(q);
    EXPECT("get of the own qualified name is the local entry",
           m->get(m, kq, &v, &len) == PX_SUCCESS && len == 3 && memcmp(v, "two", 3) == 0);
    free(v);
    char small[8];
    EXPECT("qualify into a too small buffer fails",
           m->qualify(m, "kv/a", small, sizeof small) != PX_SUCCESS);
    char *bad = key_of("999.1.1.1:80/x");
    EXPECT("get of an invalid address is BAD_PARAM", m->get(m, bad, &v, &len) == PX_ERR_BAD_PARAM);
    char *other = key_of("127.0.0.1:1/x");
    EXPECT("put under another process's address is BAD_PARAM",
           m->put(m, other, "x", 1, PX_REGISTRY_PUT_ANY) == PX_ERR_BAD_PARAM);
    EXPECT("del of other bytes is EXISTS", m->del(m, k1, "one", 3) == PX_ERR_EXISTS);
    EXPECT("del of its own bytes", m->del(m, k1, "two", 3) == PX_SUCCESS);
    EXPECT("del again is NOT_FOUND", m->del(m, k1, NULL, 0) == PX_ERR_NOT_FOUND);
    EXPECT("del of whatever is there", m->del(m, k2, NULL, 0) == PX_SUCCESS);
    n = 0;
    EXPECT("list after the deletions", m->list(m, pre, count_entry, &n) == PX_SUCCESS && n == 0);
    free(k1), free(k2), free(k3), free(pre), free(kq), free(bad), free(other);
    printf("failures=%d\n", failures);
    return failures ? 1 : 0;
}

static int connect_to(const char *ip, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, ip, &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        perror("connect");
        exit(1);
    }
    return fd;
}

static int hostile(const char *ip, int port, const char *mode, int n)
{
    int *fds = calloc((size_t)n, sizeof *fds);
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < n; ++i) {
        fds[i] = connect_to(ip, port);
        if (!strcmp(mode, "garbage")) {
            char junk[64];
            for (size_t j = 0; j < sizeof junk; ++j)
                junk[j] = (char)rand();
            if (write(fds[i], junk, sizeof junk) < 0) {
            }
        } else if (!strcmp(mode, "oversize")) {
            unsigned char h[12] = {'P', 'X', 'R', 'Q', 1, 1, 0xff, 0xff, 0xff, 0xff, 0, 0};
            if (write(fds[i], h, sizeof h) < 0) {
            }
        }
    }
    printf("ready\n");
    fflush(stdout);
    /* slowloris: one byte of a valid request per 100 ms on each */
    unsigned char req[] = {'P', 'X', 'R', 'Q', 1,   1,   0,   6,   0,  1,
                           0,   0,   'p', 'l', 'e', 'x', 'u', 's', 'x'};
    for (size_t b = 0;; ++b) {
        if (!strcmp(mode, "slowloris") && b < sizeof req)
            for (int i = 0; i < n; ++i)
                if (write(fds[i], req + b, 1) < 0) {
                }
        usleep(100000);
    }
    return 0;
}

static int fakeowner(const char *file, const char *mode)
{
    signal(SIGPIPE, SIG_IGN);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t sl = sizeof sa;
    if (bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 64) ||
        getsockname(l, (struct sockaddr *)&sa, &sl)) {
        perror("fakeowner");
        return 1;
    }
    char text[64];
    snprintf(text, sizeof text, "127.0.0.1:%d", ntohs(sa.sin_port));
    write_file(file, text);
    for (;;) {
        int c = accept(l, NULL, NULL);
        if (c < 0)
            continue;
        char in[4096];
        ssize_t got = read(c, in, sizeof in);
        (void)got;
        unsigned char a[64] = {'P', 'X', 'R', 'A', 1, 0, 0, 0};
        size_t n = 12;
        if (!strcmp(mode, "huge"))
            a[8] = a[9] = a[10] = a[11] = 0xff;
        else if (!strcmp(mode, "truncated"))
            a[11] = 100, n = 22;
        else if (!strcmp(mode, "badmagic"))
            a[0] = 'H', a[1] = 'T', a[2] = 'T', a[3] = 'P';
        else if (!strcmp(mode, "badlist"))
            a[11] = 8, a[12] = 0, a[13] = 1, a[14] = 0, a[15] = 0, a[16] = 0x10, a[17] = 0,
            a[18] = 'x', n = 20;
        else if (!strcmp(mode, "silent")) {
            sleep(3600);
        }
        if (write(c, a, n) < 0) {
        }
        close(c);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of registry_p2p_probe.c\n");
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "hostile") && argc == 6)
        return hostile(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]));
    if (!strcmp(cmd, "fakeowner") && argc == 4)
        return fakeowner(argv[2], argv[3]);
    setenv("PX_MCA_registry", "p2p", 1);
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    if (px_registry_base_select(&m) != PX_SUCCESS || !m) {
        fprintf(stderr, "registry_p2p_probe: no registry module\n");
        return 1;
    }
    if (strcmp(m->name, "p2p") != 0) {
        fprintf(stderr, "registry_p2p_probe: module %s selected, not p2p\n", m->name);
        return 1;
    }
    int rc = 0;
    if (!strcmp(cmd, "owner") && argc >= 3) {
        for (int i = 3; i < argc; ++i) {
            char *eq = strchr(argv[i], '=');
            if (!eq)
                return 1;
            *eq = 0;
            char *k = key_of(argv[i]);
            if (m->put(m, k, eq + 1, strlen(eq + 1), PX_REGISTRY_PUT_CREATE) != PX_SUCCESS)
                return 1;
            free(k);
        }
        char q[600];
        if (m->qualify(m, "x", q, sizeof q) != PX_SUCCESS)
            return 1;
        q[strlen(q) - 2] = 0; /* "a.b.c.d:port" */
        write_file(argv[2], q);
        for (;;)
            pause();
    } else if (!strcmp(cmd, "get") && argc == 3) {
        char *k = key_of(argv[2]);
        void *v = NULL;
        size_t len = 0;
        double t0 = now_ms();
        rc = m->get(m, k, &v, &len);
        double t1 = now_ms();
        if (rc == PX_SUCCESS)
            printf("value=%.*s\n", (int)len, (char *)v);
        else
            printf("error=%d %s\n", rc, px_strerror(rc));
        printf("elapsed_ms=%.3f\n", t1 - t0);
        free(v);
        free(k);
        rc = exit_code(rc);
    } else if (!strcmp(cmd, "list") && argc == 3) {
        char *k = key_of(argv[2]);
        int r = m->list(m, k, print_entry, NULL);
        if (r != PX_SUCCESS)
            printf("error=%d %s\n", r, px_strerror(r));
        free(k);
        rc = exit_code(r);
    } else if (!strcmp(cmd, "local")) {
        rc = local_checks();
    } else {
        fprintf(stderr, "registry_p2p_probe: unknown command %s\n", cmd);
        rc = 1;
    }
    fflush(stdout);
    px_finalize();
    return rc;
}
