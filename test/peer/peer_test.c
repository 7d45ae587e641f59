/*
 * px-test: waits (mostly timeouts running out: run-tests.sh runs it in the waiting lane)
 * peer_test: runtime/peer's contact string parser and its authentication,
 * in one process: a listener driven by px_peer_accept, a connector (real, or
 * one that writes frames by hand) in a thread.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/util/error.h"
#include "runtime/peer/peer_internal.h"
#include "test/lib/px_check.h"

/* ------------------------------------------------------------ contact */

START_TEST(contact_good)
{
    static const char *good[] = {
        "px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5",
        "px-peer:1:10.211.3.2:1:a:1:0000000000000000",
        "px-peer:1:192.168.100.254:65535:host-1.example_org:4294967295:ffffffffffffffff",
    };
    for (size_t i = 0; i < PX_CHECK_COUNT(good); i++) {
        px_peer_contact_t c;
        char why[1024] = "";
        ck_assert_msg(px_peer_contact_parse(good[i], &c, why, sizeof why) == PX_SUCCESS, "%s: %s",
                      good[i], why);
        char back[PX_PEER_CONTACT_MAX + 1];
        ck_assert_int_eq(px_peer_contact_format(&c, back, sizeof back), PX_SUCCESS);
        ck_assert_str_eq(back, good[i]); /* one text per contact */
    }
    px_peer_contact_t c;
    px_peer_contact_parse(good[0], &c, NULL, 0);
    ck_assert_uint_eq(c.port, 40123);
    ck_assert_uint_eq(c.pid, 12345);
    ck_assert_str_eq(c.host, "node7");
    ck_assert(c.instance == 0x9f3a2c1b7e60d4a5ull);
    ck_assert_uint_eq(c.addr[0], 127);
    ck_assert_uint_eq(c.addr[3], 1);
}
END_TEST

START_TEST(contact_bad)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"", "empty"},
        {"px-peer:1:127.0.0.1:40123:node7:12345", "6 fields"},
        {"px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5:x", "more than 7 fields"},
        {"px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5\n", "a newline"},
        {" px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5", "a blank"},
        {"px-pear:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5", "field 1 (prefix) at byte 0"},
        {"px-peer:2:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5", "does not speak"},
        {"px-peer:01:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5", "field 2 (version)"},
        {"px-peer:1:127.0.0:40123:node7:12345:9f3a2c1b7e60d4a5", "field 3 (address) at byte 10"},
        {"px-peer:1:127.0.0.256:40123:node7:12345:9f3a2c1b7e60d4a5", "dotted IPv4"},
        {"px-peer:1:127.0.0.01:40123:node7:12345:9f3a2c1b7e60d4a5", "dotted IPv4"},
        {"px-peer:1:127.0.0.1.5:40123:node7:12345:9f3a2c1b7e60d4a5", "dotted IPv4"},
        {"px-peer:1:localhost:40123:node7:12345:9f3a2c1b7e60d4a5", "dotted IPv4"},
        {"px-peer:1:0.0.0.0:40123:node7:12345:9f3a2c1b7e60d4a5", "unicast"},
        {"px-peer:1:224.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5", "unicast"},
        {"px-peer:1:127.0.0.1:0:node7:12345:9f3a2c1b7e60d4a5", "port 1-65535"},
        {"px-peer:1:127.0.0.1:65536:node7:12345:9f3a2c1b7e60d4a5", "field 4 (port)"},
        {"px-peer:1:127.0.0.1:-1:node7:12345:9f3a2c1b7e60d4a5", "field 4 (port)"},
        {"px-peer:1:127.0.0.1:40123::12345:9f3a2c1b7e60d4a5", "field 5 (host)"},
        {"px-peer:1:127.0.0.1:40123:no/de:12345:9f3a2c1b7e60d4a5", "A-Z a-z 0-9"},
        {"px-peer:1:127.0.0.1:40123:node7:0:9f3a2c1b7e60d4a5", "field 6 (pid)"},
        {"px-peer:1:127.0.0.1:40123:node7:4294967296:9f3a2c1b7e60d4a5", "field 6 (pid)"},
        {"px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a", "16 hex digits"},
        {"px-peer:1:127.0.0.1:40123:node7:12345:9F3A2C1B7E60D4A5", "lower-case"},
        {"px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4ag", "lower-case"},
    };
    for (size_t i = 0; i < PX_CHECK_COUNT(bad); i++) {
        char why[1024] = "";
        int rc = px_peer_contact_parse(bad[i].text, NULL, why, sizeof why);
        ck_assert_msg(rc == PX_ERR_BAD_PARAM, "accepted: %s", bad[i].text);
        ck_assert_msg(strstr(why, bad[i].says), "%s: said \"%s\", expected \"%s\"", bad[i].text,
                      why, bad[i].says);
        ck_assert_msg(strstr(why, "accepted: px-peer:1:"), "no accepted form in: %s", why);
    }
    char why[1024];
    ck_assert_int_eq(px_peer_contact_parse(NULL, NULL, why, sizeof why), PX_ERR_BAD_PARAM);
    char longer[400];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    ck_assert_int_eq(px_peer_contact_parse(longer, NULL, why, sizeof why), PX_ERR_BAD_PARAM);
    ck_assert(strstr(why, "longer than 160"));
}
END_TEST

/* ------------------------------------------------------------ pairs */

static px_peer_secret_t secret(const char *s)
{
    px_peer_secret_t x = {.bytes = malloc(strlen(s)), .len = strlen(s)};
    memcpy(x.bytes, s, x.len);
    return x;
}

static px_peer_opts_t opts(const px_peer_secret_t *s)
{
    px_peer_opts_t o = {.secret = s,
                        .listen_address = "127.0.0.1",
                        .timeout = 5,
                        .max_payload = 65536,
                        .max_pending = 4};
    return o;
}

typedef struct {
    px_peer_opts_t o;
    const char *contact;
    const char *payload;
    int rc;
    px_peer_conn_t *conn;
    char err[1024];
} connector_t;

static void *connector(void *arg)
{
    connector_t *c = arg;
    c->rc = px_peer_connect_opts(&c->o, c->contact, c->payload, strlen(c->payload), &c->conn);
    snprintf(c->err, sizeof c->err, "%s", px_peer_last_error());
    return NULL;
}

/* Listen with secret ls, connect with secret cs; the listener waits up to
 * `wait` seconds. Returns accept's code; *cc holds the connector's result. */
static int pair(const char *ls, const char *cs, connector_t *cc, px_peer_conn_t **accepted,
                double wait)
{
    px_peer_secret_t a = secret(ls), b = secret(cs);
    px_peer_opts_t lo = opts(&a);
    px_peer_listener_t *l;
    const char *contact;
    ck_assert_int_eq(px_peer_listen_opts(&lo, "from-listener", 13, &l, &contact), PX_SUCCESS);
    memset(cc, 0, sizeof *cc);
    cc->o = opts(&b);
    cc->contact = contact;
    cc->payload = "from-connector";
    pthread_t t;
    pthread_create(&t, NULL, connector, cc);
    int rc = px_peer_accept(l, wait, accepted);
    pthread_join(t, NULL);
    ck_assert_int_eq(px_peer_listener_pending(l), 0);
    px_peer_listener_close(l);
    px_peer_secret_free(&a);
    px_peer_secret_free(&b);
    return rc;
}

START_TEST(right_secret_accepted)
{
    connector_t cc;
    px_peer_conn_t *in = NULL;
    int rc =
        pair("the same secret, 32 bytes long..", "the same secret, 32 bytes long..", &cc, &in, 5);
    ck_assert_msg(rc == PX_SUCCESS, "accept: %s", px_peer_last_error());
    ck_assert_msg(cc.rc == PX_SUCCESS, "connect: %s", cc.err);
    size_t len;
    const char *p = px_peer_conn_payload(in, &len);
    ck_assert_uint_eq(len, 14);
    ck_assert(0 == memcmp(p, "from-connector", 14));
    p = px_peer_conn_payload(cc.conn, &len);
    ck_assert_uint_eq(len, 13);
    ck_assert(0 == memcmp(p, "from-listener", 13));
    ck_assert_uint_eq(px_peer_conn_ident(in)->pid, (unsigned)getpid());
    ck_assert_uint_eq(px_peer_conn_ident(cc.conn)->pid, (unsigned)getpid());
    /* the sockets stay connected: a byte goes through */
    ck_assert_int_eq(write(px_peer_conn_fd(cc.conn), "!", 1), 1);
    char x = 0;
    ck_assert_int_eq(recv(px_peer_conn_fd(in), &x, 1, MSG_WAITALL), 1);
    ck_assert_int_eq(x, '!');
    px_peer_conn_close(in);
    px_peer_conn_close(cc.conn);
}
END_TEST

START_TEST(wrong_secret_refused)
{
    connector_t cc;
    px_peer_conn_t *in = NULL;
    int rc =
        pair("the listener's secret, 32 bytes.", "another secret of 32 bytes......", &cc, &in, 1.5);
    ck_assert_int_eq(rc, PX_ERR_TIMEOUT); /* nothing delivered */
    ck_assert_ptr_null(in);
    ck_assert_int_ne(cc.rc, PX_SUCCESS);
    ck_assert_ptr_null(cc.conn);
    ck_assert_msg(strstr(cc.err, "authentication failed"), "said: %s", cc.err);
}
END_TEST

START_TEST(no_secret_refused)
{
    px_peer_opts_t o = opts(NULL);
    px_peer_listener_t *l;
    const char *contact;
    ck_assert_int_eq(px_peer_listen_opts(&o, "x", 1, &l, &contact), PX_ERR_NOT_AVAILABLE);
    ck_assert_ptr_null(l);
    ck_assert(strstr(px_peer_last_error(), "no secret"));
    px_peer_conn_t *c;
    ck_assert_int_eq(
        px_peer_connect_opts(&o, "px-peer:1:127.0.0.1:9:h:1:0123456789abcdef", "x", 1, &c),
        PX_ERR_NOT_AVAILABLE);
    ck_assert(strstr(px_peer_last_error(), "no secret"));
    px_peer_secret_t s;
    char why[600];
    ck_assert_int_eq(px_peer_secret_load("", &s, why, sizeof why), PX_ERR_NOT_AVAILABLE);
    ck_assert(strstr(why, "peer_secret_file"));
}
END_TEST

START_TEST(secret_file_checked)
{
    char dir[] = "/tmp/px_peer_test.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char f[256];
    snprintf(f, sizeof f, "%s/secret", dir);
    FILE *fp = fopen(f, "w");
    fputs("a secret of enough bytes\n", fp);
    fclose(fp);
    px_peer_secret_t s;
    char why[600];
    chmod(f, 0644);
    ck_assert_int_eq(px_peer_secret_load(f, &s, why, sizeof why), PX_ERR_BAD_PARAM);
    ck_assert_msg(strstr(why, "mode 0644") && strstr(why, "chmod 600"), "said: %s", why);
    chmod(f, 0640);
    ck_assert_int_eq(px_peer_secret_load(f, &s, why, sizeof why), PX_ERR_BAD_PARAM);
    chmod(f, 0600);
    ck_assert_int_eq(px_peer_secret_load(f, &s, why, sizeof why), PX_SUCCESS);
    ck_assert_uint_eq(s.len, 24); /* the newline is not part of it */
    px_peer_secret_free(&s);
    fp = fopen(f, "w");
    fputs("short\n", fp);
    fclose(fp);
    ck_assert_int_eq(px_peer_secret_load(f, &s, why, sizeof why), PX_ERR_BAD_PARAM);
    ck_assert_msg(strstr(why, "too short"), "said: %s", why);
    ck_assert_int_eq(px_peer_secret_load(dir, &s, why, sizeof why), PX_ERR_BAD_PARAM);
    ck_assert(strstr(why, "not a regular file"));
    unlink(f);
    ck_assert_int_eq(px_peer_secret_load(f, &s, why, sizeof why), PX_ERR_NOT_FOUND);
    rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------ by hand */

static const char *key = "the shared secret for by-hand frames";

static int dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(0x7f000001)};
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

typedef struct {
    uint16_t port;
    uint64_t instance;
    int tamper; /* 0 none, 1 a payload byte after the MAC, 2 the HELLO after the MAC, 3 length */
    uint32_t answer_type, answer_reason;
} raw_t;

/* A connector that writes its frames by hand, with one thing changed after
 * the MAC was computed; records the listener's answer. */
static void *raw_connector(void *arg)
{
    raw_t *r = arg;
    px_peer_secret_t s = secret(key);
    int fd = dial(r->port);
    px_peer_hello_t h;
    memset(&h, 0, sizeof h);
    px_peer_random(h.nonce, sizeof h.nonce);
    h.instance = r->instance;
    h.pid = 42;
    strcpy(h.host, "raw");
    uint8_t hello[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN];
    px_peer_hdr_write(hello, PX_PEER_T_HELLO, PX_PEER_HELLO_LEN);
    px_peer_hello_write(hello + PX_PEER_HDR_LEN, &h);
    send(fd, hello, sizeof hello, MSG_NOSIGNAL);
    uint8_t ch[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN];
    if (recv(fd, ch, PX_PEER_HDR_LEN, MSG_WAITALL) != PX_PEER_HDR_LEN)
        goto out;
    if (ch[5] == PX_PEER_T_REFUSE) {
        uint8_t b[4];
        r->answer_type = ch[5];
        if (recv(fd, b, 4, MSG_WAITALL) == 4)
            r->answer_reason = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | b[2] << 8 | b[3];
        goto out;
    }
    if (recv(fd, ch + PX_PEER_HDR_LEN, PX_PEER_HELLO_LEN, MSG_WAITALL) != PX_PEER_HELLO_LEN)
        goto out;
    const char *payload = "payload";
    uint8_t auth[PX_PEER_HDR_LEN + PX_PEER_MAC_LEN + 7];
    px_peer_hdr_write(auth, PX_PEER_T_AUTH, PX_PEER_MAC_LEN + 7);
    if (r->tamper == 2)
        hello[PX_PEER_HDR_LEN + 40] ^= 1; /* the pid the MAC covers is not the one sent */
    px_peer_mac(&s, false, hello + PX_PEER_HDR_LEN, ch + PX_PEER_HDR_LEN, payload, 7, NULL, 0,
                auth + PX_PEER_HDR_LEN);
    memcpy(auth + PX_PEER_HDR_LEN + PX_PEER_MAC_LEN, payload, 7);
    if (r->tamper == 1)
        auth[sizeof auth - 1] ^= 0x20;
    if (r->tamper == 3)
        px_peer_hdr_write(auth, PX_PEER_T_AUTH, 0x7fffffff); /* a length never to allocate */
    send(fd, auth, sizeof auth, MSG_NOSIGNAL);
    uint8_t ans[PX_PEER_HDR_LEN];
    if (recv(fd, ans, sizeof ans, MSG_WAITALL) == (ssize_t)sizeof ans) {
        r->answer_type = ans[5];
        uint8_t b[4];
        if (ans[5] == PX_PEER_T_REFUSE && recv(fd, b, 4, MSG_WAITALL) == 4)
            r->answer_reason = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | b[2] << 8 | b[3];
    }
out:
    close(fd);
    px_peer_secret_free(&s);
    return NULL;
}

static void raw_case(int tamper, bool stale, uint32_t want_type, uint32_t want_reason)
{
    px_peer_secret_t s = secret(key);
    px_peer_opts_t o = opts(&s);
    px_peer_listener_t *l;
    const char *contact;
    ck_assert_int_eq(px_peer_listen_opts(&o, "L", 1, &l, &contact), PX_SUCCESS);
    px_peer_contact_t c;
    px_peer_contact_parse(contact, &c, NULL, 0);
    raw_t r = {.port = c.port, .instance = stale ? c.instance ^ 1 : c.instance, .tamper = tamper};
    pthread_t t;
    pthread_create(&t, NULL, raw_connector, &r);
    px_peer_conn_t *in = NULL;
    int rc = px_peer_accept(l, want_type == PX_PEER_T_ACCEPT ? 5 : 1.5, &in);
    pthread_join(t, NULL);
    ck_assert_msg(r.answer_type == want_type && r.answer_reason == want_reason,
                  "tamper %d stale %d: answered type %u reason %u, expected %u %u", tamper, stale,
                  r.answer_type, r.answer_reason, want_type, want_reason);
    if (want_type == PX_PEER_T_ACCEPT) {
        ck_assert_int_eq(rc, PX_SUCCESS);
        size_t len;
        ck_assert(0 == memcmp(px_peer_conn_payload(in, &len), "payload", 7));
        px_peer_conn_close(in);
    } else {
        ck_assert_int_eq(rc, PX_ERR_TIMEOUT);
        ck_assert_ptr_null(in);
    }
    ck_assert_int_eq(px_peer_listener_pending(l), 0);
    px_peer_listener_close(l);
    px_peer_secret_free(&s);
}

START_TEST(by_hand_untampered_accepted)
{
    raw_case(0, false, PX_PEER_T_ACCEPT, 0);
}
END_TEST

START_TEST(tampered_payload_refused)
{
    raw_case(1, false, PX_PEER_T_REFUSE, PX_PEER_R_AUTH);
}
END_TEST

START_TEST(tampered_hello_refused)
{
    raw_case(2, false, PX_PEER_T_REFUSE, PX_PEER_R_AUTH);
}
END_TEST

START_TEST(huge_length_refused)
{
    raw_case(3, false, PX_PEER_T_REFUSE, PX_PEER_R_TOO_LARGE);
}
END_TEST

START_TEST(stale_instance_refused)
{
    raw_case(0, true, PX_PEER_T_REFUSE, PX_PEER_R_STALE);
}
END_TEST

/* A listener that answers with a MAC over another payload than it sends:
 * the connector refuses it. */
typedef struct {
    int lfd;
} fake_t;

static void *fake_listener(void *arg)
{
    fake_t *f = arg;
    int fd = accept(f->lfd, NULL, NULL);
    px_peer_secret_t s = secret(key);
    uint8_t hello[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN];
    if (recv(fd, hello, sizeof hello, MSG_WAITALL) == (ssize_t)sizeof hello) {
        px_peer_hello_t me;
        memset(&me, 0, sizeof me);
        px_peer_hello_t peer;
        px_peer_hello_read(hello + PX_PEER_HDR_LEN, &peer);
        me.instance = peer.instance;
        me.pid = 7;
        strcpy(me.host, "fake");
        uint8_t ch[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN];
        px_peer_hdr_write(ch, PX_PEER_T_CHALLENGE, PX_PEER_HELLO_LEN);
        px_peer_hello_write(ch + PX_PEER_HDR_LEN, &me);
        send(fd, ch, sizeof ch, MSG_NOSIGNAL);
        uint8_t ah[PX_PEER_HDR_LEN];
        recv(fd, ah, sizeof ah, MSG_WAITALL);
        uint32_t alen = (uint32_t)ah[8] << 24 | (uint32_t)ah[9] << 16 | ah[10] << 8 | ah[11];
        uint8_t body[256];
        if (alen <= sizeof body && recv(fd, body, alen, MSG_WAITALL) == (ssize_t)alen) {
            uint8_t acc[PX_PEER_HDR_LEN + PX_PEER_MAC_LEN + 4];
            px_peer_hdr_write(acc, PX_PEER_T_ACCEPT, PX_PEER_MAC_LEN + 4);
            px_peer_mac(&s, true, hello + PX_PEER_HDR_LEN, ch + PX_PEER_HDR_LEN,
                        body + PX_PEER_MAC_LEN, alen - PX_PEER_MAC_LEN, "good", 4,
                        acc + PX_PEER_HDR_LEN);
            memcpy(acc + PX_PEER_HDR_LEN + PX_PEER_MAC_LEN, "evil", 4);
            send(fd, acc, sizeof acc, MSG_NOSIGNAL);
        }
    }
    px_peer_secret_free(&s);
    close(fd);
    return NULL;
}

START_TEST(tampered_listener_answer_refused)
{
    fake_t f;
    f.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t sl = sizeof sa;
    ck_assert_int_eq(bind(f.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    listen(f.lfd, 1);
    getsockname(f.lfd, (struct sockaddr *)&sa, &sl);
    char contact[128];
    snprintf(contact, sizeof contact, "px-peer:1:127.0.0.1:%u:fake:7:00000000000000ab",
             (unsigned)ntohs(sa.sin_port));
    pthread_t t;
    pthread_create(&t, NULL, fake_listener, &f);
    px_peer_secret_t s = secret(key);
    px_peer_opts_t o = opts(&s);
    px_peer_conn_t *c = NULL;
    int rc = px_peer_connect_opts(&o, contact, "me", 2, &c);
    pthread_join(t, NULL);
    ck_assert_int_ne(rc, PX_SUCCESS);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(px_peer_last_error(), "failed authentication"), "said: %s",
                  px_peer_last_error());
    close(f.lfd);
    px_peer_secret_free(&s);
}
END_TEST

START_TEST(unreachable_is_quick_and_clear)
{
    /* a port nobody listens on: bind one, close it */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t sl = sizeof sa;
    bind(fd, (struct sockaddr *)&sa, sizeof sa);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    close(fd);
    char contact[128];
    snprintf(contact, sizeof contact, "px-peer:1:127.0.0.1:%u:gone:7:00000000000000ab",
             (unsigned)ntohs(sa.sin_port));
    px_peer_secret_t s = secret(key);
    px_peer_opts_t o = opts(&s);
    px_peer_conn_t *c = NULL;
    ck_assert_int_eq(px_peer_connect_opts(&o, contact, "me", 2, &c), PX_ERR_UNREACH);
    ck_assert_msg(strstr(px_peer_last_error(), "nobody listens there"), "said: %s",
                  px_peer_last_error());
    px_peer_secret_free(&s);
}
END_TEST

/* set_reply: each connector gets an answer made from its own payload, the
 * delivered connection carries the cookie, and a cookie whose connector
 * left before delivery is released. */
static int reply_calls, released;
static int echo_reply(void *arg, const void *payload, size_t len, const px_peer_ident_t *ident,
                      void **reply, size_t *reply_len, void **cookie)
{
    ck_assert_ptr_eq(arg, &reply_calls);
    ck_assert_uint_eq(ident->pid, (unsigned)getpid());
    reply_calls++;
    char *r = malloc(len + 6);
    memcpy(r, "reply:", 6);
    memcpy(r + 6, payload, len);
    *reply = r;
    *reply_len = len + 6;
    *cookie = (void *)(uintptr_t)(0x1000 + reply_calls);
    return PX_SUCCESS;
}
static void echo_release(void *arg, void *cookie)
{
    (void)arg;
    (void)cookie;
    released++;
}

START_TEST(reply_per_connection)
{
    px_peer_secret_t a = secret("the same secret, 32 bytes long.."),
                     b = secret("the same secret, 32 bytes long..");
    px_peer_opts_t lo = opts(&a);
    px_peer_listener_t *l;
    const char *contact;
    ck_assert_int_eq(px_peer_listen_opts(&lo, "fixed", 5, &l, &contact), PX_SUCCESS);
    px_peer_listener_set_reply(l, echo_reply, echo_release, &reply_calls);
    reply_calls = released = 0;
    const char *payloads[2] = {"first-connector", "second"};
    for (int k = 0; k < 2; ++k) {
        connector_t cc;
        memset(&cc, 0, sizeof cc);
        cc.o = opts(&b);
        cc.contact = contact;
        cc.payload = payloads[k];
        pthread_t t;
        pthread_create(&t, NULL, connector, &cc);
        px_peer_conn_t *in = NULL;
        ck_assert_int_eq(px_peer_accept(l, 5, &in), PX_SUCCESS);
        pthread_join(t, NULL);
        ck_assert_msg(cc.rc == PX_SUCCESS, "connect: %s", cc.err);
        size_t len;
        const char *p = px_peer_conn_payload(cc.conn, &len);
        ck_assert_uint_eq(len, 6 + strlen(payloads[k]));
        ck_assert(0 == memcmp(p, "reply:", 6));
        ck_assert(0 == memcmp(p + 6, payloads[k], strlen(payloads[k])));
        ck_assert_ptr_eq(px_peer_conn_cookie(in), (void *)(uintptr_t)(0x1001 + k));
        px_peer_conn_close(in);
        px_peer_conn_close(cc.conn);
    }
    ck_assert_int_eq(reply_calls, 2);
    ck_assert_int_eq(released, 0);
    px_peer_listener_close(l);
    px_peer_secret_free(&a);
    px_peer_secret_free(&b);
}
END_TEST

int main(void)
{
    if (!px_peer_crypto_available()) {
        printf("peer_test: built without libsodium, authentication cannot be tested (install "
               "libsodium-dev, configure again); contact parsing only\n");
    }
    Suite *s = suite_create("peer");
    const TTest *parse[] = {contact_good, contact_bad};
    suite_add_tcase(s, px_check_tcase("contact", NULL, NULL, 0, parse, PX_CHECK_COUNT(parse)));
    if (px_peer_crypto_available()) {
        const TTest *auth[] = {right_secret_accepted,
                               wrong_secret_refused,
                               no_secret_refused,
                               secret_file_checked,
                               by_hand_untampered_accepted,
                               tampered_payload_refused,
                               tampered_hello_refused,
                               huge_length_refused,
                               stale_instance_refused,
                               tampered_listener_answer_refused,
                               unreachable_is_quick_and_clear,
                               reply_per_connection};
        suite_add_tcase(s, px_check_tcase("auth", NULL, NULL, 30, auth, PX_CHECK_COUNT(auth)));
    }
    return px_check_run(s);
}
