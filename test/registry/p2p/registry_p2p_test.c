/*
 * px-test: waits (mostly timeouts running out: run-tests.sh runs it in the waiting lane)
 * registry_p2p_test: registry/p2p's wire format and its listener, in one
 * process: the request and answer parsers on good, partial and malformed
 * input; a listener on a table of its own answering GET and LIST through the
 * component's client; hostile clients (200 stalled connections, garbage, an
 * oversized length, slowloris) while a real lookup is still answered; and
 * hostile owners (an oversized, truncated or foreign answer, silence) whose
 * answers the client refuses within its bound. The module through the
 * framework and between processes: t_registry_p2p.sh.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "components/registry/p2p/p2p.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "test/lib/px_check.h"

/* ------------------------------------------------------------ wire */

START_TEST(request_roundtrip)
{
    uint8_t b[PX_REGISTRY_P2P_REQ_MAX];
    int n = px_registry_p2p_request_encode(b, PX_REGISTRY_P2P_GET, "plexus", 6, "kv/a", 4);
    ck_assert_int_eq(n, 12 + 10);
    px_registry_p2p_request_t r;
    char why[256];
    for (int have = 0; have < n; ++have) {
        int need = px_registry_p2p_request_parse(b, (size_t)have, &r, why, sizeof why);
        ck_assert_msg(need > have && need <= n, "have %d: need %d", have, need);
    }
    ck_assert_int_eq(px_registry_p2p_request_parse(b, (size_t)n, &r, why, sizeof why), 0);
    ck_assert_int_eq(r.op, PX_REGISTRY_P2P_GET);
    ck_assert_int_eq((int)r.total, n);
    ck_assert(r.ns_len == 6 && memcmp(r.ns, "plexus", 6) == 0);
    ck_assert(r.key_len == 4 && memcmp(r.key, "kv/a", 4) == 0);
    /* a later version's extension is skipped */
    b[4] = 7;
    b[11] = 3;
    memcpy(b + n, "xyz", 3);
    ck_assert_int_eq(px_registry_p2p_request_parse(b, (size_t)n, &r, why, sizeof why), n + 3);
    ck_assert_int_eq(px_registry_p2p_request_parse(b, (size_t)n + 3, &r, why, sizeof why), 0);
    ck_assert_int_eq((int)r.total, n + 3);
}
END_TEST

START_TEST(request_malformed)
{
    static const struct {
        uint8_t hdr[12];
        const char *why;
    } bad[] = {
        {{'G', 'E', 'T', ' ', 1, 1, 0, 1, 0, 1, 0, 0}, "not a registry/p2p request"},
        {{'P', 'X', 'R', 'Q', 0, 1, 0, 1, 0, 1, 0, 0}, "version 0"},
        {{'P', 'X', 'R', 'Q', 1, 9, 0, 1, 0, 1, 0, 0}, "unknown operation 9"},
        {{'P', 'X', 'R', 'Q', 1, 1, 0, 0, 0, 1, 0, 0}, "namespace of 0"},
        {{'P', 'X', 'R', 'Q', 1, 1, 0xff, 0xff, 0, 1, 0, 0}, "at most 512"},
        {{'P', 'X', 'R', 'Q', 1, 1, 1, 0, 1, 0, 0, 0}, "at most 512"},
        {{'P', 'X', 'R', 'Q', 1, 1, 0, 1, 0, 0, 0, 0}, "GET of an empty name"},
        {{'P', 'X', 'R', 'Q', 1, 2, 0, 1, 0, 0, 0xff, 0xff}, "extension of 65535"},
    };
    for (size_t i = 0; i < PX_CHECK_COUNT(bad); ++i) {
        px_registry_p2p_request_t r;
        char why[256] = "";
        ck_assert_int_eq(px_registry_p2p_request_parse(bad[i].hdr, 12, &r, why, sizeof why),
                         PX_ERR_BAD_PARAM);
        ck_assert_msg(strstr(why, bad[i].why), "case %zu: \"%s\" lacks \"%s\"", i, why, bad[i].why);
    }
    uint8_t b[64];
    int n = px_registry_p2p_request_encode(b, PX_REGISTRY_P2P_GET, "ns", 2, "a b", 3);
    px_registry_p2p_request_t r;
    char why[256] = "";
    ck_assert_int_eq(px_registry_p2p_request_parse(b, (size_t)n, &r, why, sizeof why),
                     PX_ERR_BAD_PARAM);
    ck_assert(strstr(why, "printable ASCII"));
}
END_TEST

START_TEST(answer_checks)
{
    uint8_t h[12];
    px_registry_p2p_answer_t a;
    char why[256];
    px_registry_p2p_answer_header(h, PX_REGISTRY_P2P_OK, 0, PX_REGISTRY_VALUE_MAX);
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_GET, 1 << 20, &a, why, 256),
                     PX_SUCCESS);
    px_registry_p2p_answer_header(h, PX_REGISTRY_P2P_OK, 0, PX_REGISTRY_VALUE_MAX + 1);
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_GET, 1 << 20, &a, why, 256),
                     PX_ERR_BAD_PARAM);
    ck_assert(strstr(why, "PX_REGISTRY_VALUE_MAX"));
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_LIST, 1 << 20, &a, why, 256),
                     PX_SUCCESS);
    px_registry_p2p_answer_header(h, PX_REGISTRY_P2P_OK, 0, 0xffffffffu);
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_LIST, 1 << 20, &a, why, 256),
                     PX_ERR_BAD_PARAM);
    px_registry_p2p_answer_header(h, PX_REGISTRY_P2P_NOT_FOUND, 0, 2000);
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_GET, 1 << 20, &a, why, 256),
                     PX_ERR_BAD_PARAM);
    px_registry_p2p_answer_header(h, 9, 0, 0);
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_GET, 1 << 20, &a, why, 256),
                     PX_ERR_BAD_PARAM);
    px_registry_p2p_answer_header(h, 0, 4, 0);
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_GET, 1 << 20, &a, why, 256),
                     PX_ERR_BAD_PARAM);
    px_registry_p2p_answer_header(h, 0, 0, 0);
    h[4] = PX_REGISTRY_P2P_VERSION + 1;
    ck_assert_int_eq(px_registry_p2p_answer_check(h, PX_REGISTRY_P2P_GET, 1 << 20, &a, why, 256),
                     PX_ERR_BAD_PARAM);
    ck_assert(strstr(why, "version"));
    /* LIST entries: a good one, then one overrunning the body */
    uint8_t body[64];
    size_t n = px_registry_p2p_list_put(body, "kv/a", 4, "vv", 2);
    const uint8_t *p = body, *end = body + n;
    const char *name;
    const uint8_t *value;
    size_t nl, vl;
    ck_assert_int_eq(px_registry_p2p_list_next(&p, end, &name, &nl, &value, &vl, why, 256), 1);
    ck_assert(nl == 4 && vl == 2 && memcmp(value, "vv", 2) == 0);
    ck_assert_int_eq(px_registry_p2p_list_next(&p, end, &name, &nl, &value, &vl, why, 256), 0);
    p = body, end = body + n - 1;
    ck_assert_int_eq(px_registry_p2p_list_next(&p, end, &name, &nl, &value, &vl, why, 256),
                     PX_ERR_BAD_PARAM);
    ck_assert(strstr(why, "overruns"));
}
END_TEST

START_TEST(hostport)
{
    uint32_t a;
    int port;
    char why[256];
    ck_assert_int_eq(px_registry_p2p_parse_hostport("127.0.0.1:4000", 14, &a, &port, why, 256), 1);
    ck_assert_int_eq(port, 4000);
    ck_assert_int_eq(a, htonl(0x7f000001));
    ck_assert_int_eq(px_registry_p2p_parse_hostport("kv", 2, &a, &port, why, 256), 0);
    ck_assert_int_eq(px_registry_p2p_parse_hostport("a:b", 3, &a, &port, why, 256), 0);
    ck_assert_int_eq(px_registry_p2p_parse_hostport("12:", 3, &a, &port, why, 256), 0);
    ck_assert_int_eq(px_registry_p2p_parse_hostport("1.2.3.4:5:6", 11, &a, &port, why, 256), 0);
    ck_assert_int_eq(px_registry_p2p_parse_hostport("999.1.1.1:80", 12, &a, &port, why, 256),
                     PX_ERR_BAD_PARAM);
    ck_assert(strstr(why, "not a numeric IPv4 address"));
    ck_assert_int_eq(px_registry_p2p_parse_hostport("1.2.3.4:70000", 13, &a, &port, why, 256),
                     PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_registry_p2p_parse_hostport("1.2.3.4:0", 9, &a, &port, why, 256),
                     PX_ERR_BAD_PARAM);
}
END_TEST

/* ------------------------------------------------------------ listener */

static px_registry_p2p_table_t table;
static px_registry_p2p_listener_t *listener;
static int port;
static uint32_t lo;

static void start(double timeout, int max_clients)
{
    ck_assert_int_eq(px_registry_p2p_table_init(&table), PX_SUCCESS);
    px_registry_p2p_listen_opts_t o = {.address = "127.0.0.1",
                                       .port = 0,
                                       .ns = "plexus",
                                       .max_clients = max_clients,
                                       .timeout = timeout,
                                       .list_max = 1 << 20,
                                       .output = px_output_open("p2p-test", 0)};
    char why[256];
    ck_assert_int_eq(px_registry_p2p_listen(&table, &o, &listener, &port, why, sizeof why),
                     PX_SUCCESS);
    lo = htonl(0x7f000001);
    ck_assert_int_eq(px_registry_p2p_table_put(&table, "plexus/kv/a", "alpha", 5, 0), PX_SUCCESS);
    ck_assert_int_eq(px_registry_p2p_table_put(&table, "plexus/kv/b", "beta", 4, 0), PX_SUCCESS);
    ck_assert_int_eq(px_registry_p2p_table_put(&table, "plexus/z", "zeta", 4, 0), PX_SUCCESS);
    ck_assert_int_eq(px_registry_p2p_table_put(&table, "other/kv/a", "x", 1, 0), PX_SUCCESS);
}

static void stop(void)
{
    px_registry_p2p_listen_stop(listener);
    listener = NULL;
    px_registry_p2p_table_fini(&table);
}

static int ask(int op, const char *ns, const char *key, double timeout, px_registry_p2p_answer_t *a,
               uint8_t **body, char *why)
{
    char contact[32];
    snprintf(contact, sizeof contact, "127.0.0.1:%d", port);
    return px_registry_p2p_ask(lo, port, contact, op, ns, strlen(ns), key, strlen(key), timeout,
                               1 << 20, a, body, why, 512);
}

START_TEST(listener_answers)
{
    start(5, 16);
    px_registry_p2p_answer_t a;
    uint8_t *body = NULL;
    char why[512] = "";
    ck_assert_msg(ask(PX_REGISTRY_P2P_GET, "plexus", "kv/a", 5, &a, &body, why) == PX_SUCCESS, "%s",
                  why);
    ck_assert_int_eq(a.status, PX_REGISTRY_P2P_OK);
    ck_assert(a.body_len == 5 && memcmp(body, "alpha", 6) == 0);
    free(body);
    ck_assert_int_eq(ask(PX_REGISTRY_P2P_GET, "plexus", "kv/none", 5, &a, &body, why), PX_SUCCESS);
    ck_assert_int_eq(a.status, PX_REGISTRY_P2P_NOT_FOUND);
    ck_assert_msg(strstr((char *)body, "no name \"kv/none\""), "%s", body);
    free(body);
    /* another namespace's asker is told which namespace this owner serves */
    ck_assert_int_eq(ask(PX_REGISTRY_P2P_GET, "other", "kv/a", 5, &a, &body, why), PX_SUCCESS);
    ck_assert_int_eq(a.status, PX_REGISTRY_P2P_NAMESPACE);
    ck_assert_msg(strstr((char *)body, "namespace \"plexus\""), "%s", body);
    free(body);
    ck_assert_int_eq(ask(PX_REGISTRY_P2P_LIST, "plexus", "kv/", 5, &a, &body, why), PX_SUCCESS);
    ck_assert_int_eq(a.status, PX_REGISTRY_P2P_OK);
    const uint8_t *p = body, *end = body + a.body_len;
    const char *name;
    const uint8_t *value;
    size_t nl, vl;
    int n = 0, r;
    while ((r = px_registry_p2p_list_next(&p, end, &name, &nl, &value, &vl, why, 512)) == 1) {
        ck_assert(nl == 4 && memcmp(name, "kv/", 3) == 0);
        ++n;
    }
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(n, 2);
    free(body);
    stop();
    /* nobody listens any more */
    ck_assert_int_eq(ask(PX_REGISTRY_P2P_GET, "plexus", "kv/a", 5, &a, &body, why),
                     PX_ERR_NOT_AVAILABLE);
    ck_assert_msg(strstr(why, "nobody listens at 127.0.0.1:"), "%s", why);
}
END_TEST

static int connect_lo(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = lo;
    ck_assert(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    return fd;
}

/* Read from fd until EOF (or an error): the bytes, up to cap. */
static ssize_t read_to_end(int fd, uint8_t *buf, size_t cap, int *err)
{
    size_t got = 0;
    *err = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r > 0 && (got += (size_t)r) < cap)
            continue;
        if (r < 0)
            *err = errno;
        return (ssize_t)got;
    }
}

START_TEST(closes_after_answer)
{
    /* A connection whose whole request was answered and that sent nothing
     * more is closed by the listener at once (its thread does not wait
     * for the client's close): a byte the client sends afterwards meets a
     * closed socket (a reset). One that sent more than its request (bytes
     * that would reset the connection if it closed) is drained as before:
     * it reads its whole answer. */
    start(5, 16);
    struct timeval tv = {.tv_sec = 5};
    uint8_t req[PX_REGISTRY_P2P_REQ_MAX + 8], buf[256];
    int rl = px_registry_p2p_request_encode(req, PX_REGISTRY_P2P_GET, "plexus", 6, "kv/a", 4);
    ck_assert_int_gt(rl, 0);
    int fd = connect_lo(), err;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(write(fd, req, (size_t)rl), rl);
    ssize_t got = read_to_end(fd, buf, sizeof buf, &err);
    ck_assert_int_eq(got, PX_REGISTRY_P2P_HDR_LEN + 5);
    ck_assert(memcmp(buf + PX_REGISTRY_P2P_HDR_LEN, "alpha", 5) == 0);
    ck_assert_int_eq(err, 0);
    /* the listener's socket is gone: a byte sent now is answered by a reset */
    ck_assert_int_eq(send(fd, "x", 1, MSG_NOSIGNAL), 1);
    usleep(100 * 1000);
    ssize_t r = send(fd, "y", 1, MSG_NOSIGNAL);
    int e = errno;
    ck_assert_msg(r < 0 && (e == EPIPE || e == ECONNRESET),
                  "the listener still held the answered connection (send: %zd, %s)", r,
                  r < 0 ? strerror(e) : "sent");
    close(fd);
    /* a request with bytes after it: the whole answer still arrives */
    memcpy(req + rl, "MORE", 4);
    fd = connect_lo();
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ck_assert_int_eq(write(fd, req, (size_t)rl + 4), rl + 4);
    got = read_to_end(fd, buf, sizeof buf, &err);
    ck_assert_msg(got == PX_REGISTRY_P2P_HDR_LEN + 5, "got %zd bytes (%s)", got, strerror(err));
    ck_assert(memcmp(buf + PX_REGISTRY_P2P_HDR_LEN, "alpha", 5) == 0);
    close(fd);
    px_registry_p2p_stats_t st;
    px_registry_p2p_listen_stats(listener, &st);
    ck_assert_uint_eq(st.answered, 2);
    stop();
}
END_TEST

START_TEST(hostile_clients)
{
    /* 64 served at once, 3 s per connection: 200 stalled connections,
     * garbage, an oversized length and slowloris clients, then a real
     * lookup, which must be answered well within its own 3 s bound. */
    start(3, 64);
    enum { N = 200 };
    int fds[N + 30];
    int k = 0;
    for (int i = 0; i < N; ++i)
        fds[k++] = connect_lo();
    for (int i = 0; i < 10; ++i) {
        fds[k] = connect_lo();
        ck_assert_int_eq(write(fds[k++], "GARBAGE GARBAGE GARBAGE!", 24), 24);
    }
    for (int i = 0; i < 10; ++i) {
        uint8_t h[12] = {'P', 'X', 'R', 'Q', 1, 1, 0xff, 0xff, 0xff, 0xff, 0, 0};
        fds[k] = connect_lo();
        ck_assert_int_eq(write(fds[k++], h, sizeof h), 12);
    }
    uint8_t req[64];
    int rl = px_registry_p2p_request_encode(req, PX_REGISTRY_P2P_GET, "plexus", 6, "kv/a", 4);
    for (int i = 0; i < 10; ++i) {
        fds[k] = connect_lo();
        ck_assert_int_eq(write(fds[k++], req, 5), 5); /* and nothing more */
    }
    (void)rl;
    px_registry_p2p_answer_t a;
    uint8_t *body = NULL;
    char why[512] = "";
    double t0 = px_registry_p2p_now();
    ck_assert_msg(ask(PX_REGISTRY_P2P_GET, "plexus", "kv/b", 3, &a, &body, why) == PX_SUCCESS, "%s",
                  why);
    ck_assert(a.status == PX_REGISTRY_P2P_OK && a.body_len == 4 && !memcmp(body, "beta", 4));
    free(body);
    double took = px_registry_p2p_now() - t0;
    /* the garbage and the oversized header were refused with an answer */
    char buf[256];
    ssize_t got = read(fds[N], buf, sizeof buf);
    ck_assert_int_gt(got, 12);
    ck_assert(memcmp(buf, "PXRA", 4) == 0 && buf[5] == PX_REGISTRY_P2P_BAD_REQUEST);
    /* the stalled connections end at their deadline (or were replaced):
     * none is served forever */
    sleep(4);
    px_registry_p2p_stats_t s;
    px_registry_p2p_listen_stats(listener, &s);
    ck_assert_uint_ge(s.accepted, N + 31);
    ck_assert_uint_ge(s.dropped_evicted + s.dropped_deadline, N - 64);
    ck_assert_uint_ge(s.refused, 20);
    /* and the listener still answers */
    ck_assert_msg(ask(PX_REGISTRY_P2P_GET, "plexus", "z", 3, &a, &body, why) == PX_SUCCESS, "%s",
                  why);
    free(body);
    for (int i = 0; i < k; ++i)
        close(fds[i]);
    fprintf(stderr,
            "hostile_clients: the real lookup took %.3f s; stats: %lu accepted, %lu "
            "answered, %lu refused, %lu dropped at deadline, %lu replaced\n",
            took, (unsigned long)s.accepted, (unsigned long)s.answered, (unsigned long)s.refused,
            (unsigned long)s.dropped_deadline, (unsigned long)s.dropped_evicted);
    stop();
}
END_TEST

/* The module's calls change the table while the listener's thread reads it:
 * a thread puts, replaces and removes entries while lookups and listings go
 * through the listener; every answer is a whole value that was put (run
 * under ThreadSanitizer too). */
static atomic_int writer_stop;
static void *writer(void *arg)
{
    (void)arg;
    char key[64], val[256];
    for (unsigned i = 0; !atomic_load(&writer_stop); ++i) {
        snprintf(key, sizeof key, "plexus/w/%u", i % 50);
        int n = snprintf(val, sizeof val, "v%u", i);
        memset(val + n, 'a' + (int)(i % 26), 100);
        px_registry_p2p_table_put(&table, key, val, (size_t)n + 100, 0);
        if (i % 3 == 0) {
            pthread_mutex_lock(&table.lock);
            void *v = NULL;
            if (px_hash_table_get_value_str(&table.entries, key, &v) == PX_SUCCESS) {
                px_hash_table_remove_value_str(&table.entries, key);
                free(v);
            }
            pthread_mutex_unlock(&table.lock);
        }
    }
    return NULL;
}

START_TEST(table_concurrent)
{
    start(5, 16);
    pthread_t t;
    atomic_store(&writer_stop, 0);
    ck_assert_int_eq(pthread_create(&t, NULL, writer, NULL), 0);
    int found = 0;
    for (int i = 0; i < 300; ++i) {
        px_registry_p2p_answer_t a;
        uint8_t *body = NULL;
        char why[512] = "", key[32];
        snprintf(key, sizeof key, "w/%d", i % 50);
        int op = i % 10 == 0 ? PX_REGISTRY_P2P_LIST : PX_REGISTRY_P2P_GET;
        ck_assert_msg(ask(op, "plexus", op == PX_REGISTRY_P2P_LIST ? "w/" : key, 5, &a, &body,
                          why) == PX_SUCCESS,
                      "%s", why);
        if (op == PX_REGISTRY_P2P_GET && a.status == PX_REGISTRY_P2P_OK) {
            /* "v<i>" then 100 times one letter */
            ck_assert(a.body_len > 100 && body[0] == 'v');
            uint8_t c = body[a.body_len - 1];
            for (size_t j = a.body_len - 100; j < a.body_len; ++j)
                ck_assert_int_eq(body[j], c);
            ++found;
        }
        free(body);
    }
    atomic_store(&writer_stop, 1);
    pthread_join(t, NULL);
    ck_assert_int_gt(found, 0);
    stop();
}
END_TEST

/* A hostile owner's answer through a socketpair: what the client makes of it. */
static int answer_of(const void *bytes, size_t n, bool close_after, int op, char *why)
{
    int sv[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    if (n)
        ck_assert_int_eq(write(sv[0], bytes, n), (ssize_t)n);
    if (close_after)
        close(sv[0]);
    px_registry_p2p_answer_t a;
    uint8_t *body = NULL;
    int rc = px_registry_p2p_read_answer(sv[1], "fake:1", op, px_registry_p2p_now() + 0.5, 1 << 20,
                                         &a, &body, why, 512);
    free(body);
    if (!close_after)
        close(sv[0]);
    close(sv[1]);
    return rc;
}

START_TEST(hostile_owner)
{
    char why[512];
    uint8_t h[40];
    px_registry_p2p_answer_header(h, PX_REGISTRY_P2P_OK, 0, 0xffffffffu);
    ck_assert_int_eq(answer_of(h, 12, true, PX_REGISTRY_P2P_GET, why), PX_ERR_BAD_PARAM);
    ck_assert_msg(strstr(why, "more than the 65536 accepted"), "%s", why);
    px_registry_p2p_answer_header(h, PX_REGISTRY_P2P_OK, 0, 100);
    ck_assert_int_eq(answer_of(h, 22, true, PX_REGISTRY_P2P_GET, why), PX_ERR_NOT_AVAILABLE);
    ck_assert_msg(strstr(why, "after 10 of its answer's 100 bytes"), "%s", why);
    ck_assert_int_eq(answer_of("HTTP/1.1 400 Bad", 16, true, PX_REGISTRY_P2P_GET, why),
                     PX_ERR_BAD_PARAM);
    ck_assert_msg(strstr(why, "not a registry/p2p answer"), "%s", why);
    ck_assert_int_eq(answer_of(h, 5, true, PX_REGISTRY_P2P_GET, why), PX_ERR_NOT_AVAILABLE);
    ck_assert_msg(strstr(why, "in the middle of its answer"), "%s", why);
    ck_assert_int_eq(answer_of(NULL, 0, false, PX_REGISTRY_P2P_GET, why), PX_ERR_TIMEOUT);
    ck_assert_msg(strstr(why, "did not answer within registry_timeout"), "%s", why);
    ck_assert_int_eq(answer_of(h, 20, false, PX_REGISTRY_P2P_GET, why), PX_ERR_TIMEOUT);
    ck_assert_msg(strstr(why, "then stalled"), "%s", why);
}
END_TEST

PX_CHECK_MAIN("registry_p2p", NULL, NULL, 60, request_roundtrip, request_malformed, answer_checks,
              hostport, listener_answers, closes_after_answer, table_concurrent, hostile_clients,
              hostile_owner)
