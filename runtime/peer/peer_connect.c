/*
 * peer_connect.c: the connector (peer.h): one handshake with a listener named
 * by its contact string, every step bounded by one deadline (docs/peers.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/peer/peer_internal.h"
/* ------------------------------------------------------------ connector */

/* Wait until fd has `events` or the deadline passed: true when it has (or
 * poll failed: the caller's next call says why). With o->serve, the wait is
 * cut into slices of a millisecond with a call of serve before each. */
static bool wait_fd(const px_peer_opts_t *o, int fd, short events, double deadline)
{
    for (;;) {
        int ms = px_peer_ms_until(deadline);
        if (ms == 0)
            return false;
        if (o->serve) {
            o->serve(o->serve_arg);
            ms = ms > 1 ? 1 : ms;
        }
        struct pollfd pfd = {.fd = fd, .events = events};
        int r = poll(&pfd, 1, ms);
        if (r > 0 || (r < 0 && errno != EINTR))
            return true;
    }
}

/* Write all of buf before the deadline. */
static int send_all(const px_peer_opts_t *o, int fd, const uint8_t *buf, size_t len,
                    double deadline, const char *peer)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return px_peer_fail(PX_ERR_COMM, "connecting to %s: sending failed: %s", peer,
                                strerror(errno));
        if (!wait_fd(o, fd, POLLOUT, deadline))
            return PX_ERR_TIMEOUT;
    }
    return PX_SUCCESS;
}

/* Read exactly len bytes before the deadline. */
static int recv_all(const px_peer_opts_t *o, int fd, uint8_t *buf, size_t len, double deadline,
                    const char *peer)
{
    size_t off = 0;
    while (off < len) {
        ssize_t r = recv(fd, buf + off, len - off, MSG_DONTWAIT);
        if (r > 0) {
            off += (size_t)r;
            continue;
        }
        if (r == 0)
            return px_peer_fail(PX_ERR_PEER_FAILED,
                                "connecting to %s: the listener closed the connection in the "
                                "middle of the handshake",
                                peer);
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return px_peer_fail(PX_ERR_COMM, "connecting to %s: receiving failed: %s", peer,
                                strerror(errno));
        if (!wait_fd(o, fd, POLLIN, deadline))
            return PX_ERR_TIMEOUT;
    }
    return PX_SUCCESS;
}

/* Read one frame of a type in `types` (REFUSE always allowed): header into
 * *h, body (at most max_len bytes, allocated once checked) into *body. */
static int recv_frame(const px_peer_opts_t *o, int fd, unsigned types, uint32_t min_len,
                      uint32_t max_len, double deadline, const char *peer, px_peer_hdr_t *h,
                      uint8_t **body)
{
    uint8_t hb[PX_PEER_HDR_LEN];
    *body = NULL;
    int rc = recv_all(o, fd, hb, sizeof hb, deadline, peer);
    if (rc != PX_SUCCESS)
        return rc;
    const char *bad = px_peer_hdr_check(hb, types | 1u << PX_PEER_T_REFUSE, 0, max_len, h);
    if (NULL == bad && h->type == PX_PEER_T_REFUSE && h->len != 4)
        bad = "a REFUSE frame of a length other than 4";
    if (NULL == bad && h->type != PX_PEER_T_REFUSE && h->len < min_len)
        bad = "a frame shorter than its type";
    if (bad)
        return px_peer_fail(PX_ERR_COMM,
                            "connecting to %s: the listener answered with %s: is it a Plexus "
                            "peer listener of this version?",
                            peer, bad);
    *body = malloc(h->len ? h->len : 1);
    if (NULL == *body)
        return px_peer_fail(PX_ERR_OUT_OF_RESOURCE, "connecting to %s: out of memory", peer);
    rc = recv_all(o, fd, *body, h->len, deadline, peer);
    if (rc != PX_SUCCESS) {
        free(*body);
        *body = NULL;
        return rc;
    }
    if (h->type == PX_PEER_T_REFUSE) {
        uint32_t reason =
            (uint32_t)(*body)[0] << 24 | (uint32_t)(*body)[1] << 16 | (*body)[2] << 8 | (*body)[3];
        free(*body);
        *body = NULL;
        return px_peer_fail(reason == PX_PEER_R_AUTH ? PX_ERR_FATAL : PX_ERR_UNREACH,
                            "connecting to %s: the listener refused: %s", peer,
                            px_peer_reason_str(reason));
    }
    return PX_SUCCESS;
}

int px_peer_connect_opts(const px_peer_opts_t *o, const char *contact, const void *payload,
                         size_t len, px_peer_conn_t **conn)
{
    *conn = NULL;
    double timeout = o->timeout > 0 ? o->timeout : 10;
    double deadline = px_peer_now() + timeout;
    px_peer_contact_t c;
    char why[900];
    if (px_peer_contact_parse(contact, &c, why, sizeof why) != PX_SUCCESS)
        return px_peer_fail(PX_ERR_BAD_PARAM, "px_peer_connect: %s", why);
    char peer[PX_PEER_CONTACT_MAX + 64];
    snprintf(peer, sizeof peer, "%u.%u.%u.%u:%u (host %s, pid %u)", c.addr[0], c.addr[1], c.addr[2],
             c.addr[3], c.port, c.host, (unsigned)c.pid);
    if (!px_peer_crypto_available())
        return px_peer_fail(PX_ERR_NOT_SUPPORTED,
                            "px_peer_connect: this Plexus was built without libsodium, which "
                            "authenticates peers (install libsodium-dev and configure again)");
    if (NULL == o->secret || NULL == o->secret->bytes)
        return px_peer_fail(PX_ERR_NOT_AVAILABLE,
                            "px_peer_connect: no secret: set peer_secret_file (chmod 600), the "
                            "file the listener has");
    if (len > o->max_payload)
        return px_peer_fail(PX_ERR_BAD_PARAM,
                            "px_peer_connect: payload of %zu bytes is above peer_max_payload %zu",
                            len, o->max_payload);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return px_peer_fail(PX_ERR_IN_ERRNO, "px_peer_connect: socket: %s", strerror(errno));
    uint8_t *body = NULL, *auth = NULL;
    int rc;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    px_peer_hello_t me;
    memset(&me, 0, sizeof me);
    px_peer_random(me.nonce, sizeof me.nonce);
    me.instance = c.instance;
    me.pid = (uint32_t)getpid();
    px_peer_my_ident(me.host);
    uint8_t hello[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN];
    px_peer_hdr_write(hello, PX_PEER_T_HELLO, PX_PEER_HELLO_LEN);
    px_peer_hello_write(hello + PX_PEER_HDR_LEN, &me);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c.port)};
    memcpy(&sa.sin_addr.s_addr, c.addr, 4);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno != EINPROGRESS) {
            rc = px_peer_fail(PX_ERR_UNREACH, "px_peer_connect: %s: %s", peer, strerror(errno));
            goto fail;
        }
        /* The HELLO goes at once: on one host the connection is made by
         * the time connect returns, so the listener finds the HELLO with
         * the connection and answers it in the same pass (waiting for the
         * connection to be reported first let it accept, find nothing, and
         * wait again). Elsewhere send says EAGAIN until it is made. */
        ssize_t w = send(fd, hello, sizeof hello, MSG_NOSIGNAL | MSG_DONTWAIT);
        int err = w < 0 ? errno : 0;
        if (w < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
            w = 0;
            if (!wait_fd(o, fd, POLLOUT, deadline)) {
                rc = px_peer_fail(PX_ERR_TIMEOUT,
                                  "px_peer_connect: %s did not answer within %g s "
                                  "(peer_connect_timeout): unreachable, or a host that drops "
                                  "connections",
                                  peer, timeout);
                goto fail;
            }
            socklen_t el = sizeof err;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
        } else if (w < 0 && err == EINTR) {
            w = 0, err = 0;
        }
        if (err) {
            rc = px_peer_fail(PX_ERR_UNREACH, "px_peer_connect: %s: %s%s", peer, strerror(err),
                              err == ECONNREFUSED ? ": nobody listens there (the listener is "
                                                    "gone: a stale contact?)"
                                                  : "");
            goto fail;
        }
        rc = send_all(o, fd, hello + w, sizeof hello - (size_t)w, deadline, peer);
    } else {
        rc = send_all(o, fd, hello, sizeof hello, deadline, peer);
    }
    px_peer_hdr_t h;
    if (rc == PX_SUCCESS)
        rc = recv_frame(o, fd, 1u << PX_PEER_T_CHALLENGE, PX_PEER_HELLO_LEN, PX_PEER_HELLO_LEN,
                        deadline, peer, &h, &body);
    if (rc != PX_SUCCESS)
        goto fail_io;
    px_peer_hello_t lh;
    const char *bad = px_peer_hello_read(body, &lh);
    if (bad) {
        rc = px_peer_fail(PX_ERR_COMM, "px_peer_connect: %s: its CHALLENGE holds %s", peer, bad);
        goto fail;
    }
    if (lh.instance != c.instance) {
        rc = px_peer_fail(PX_ERR_UNREACH,
                          "px_peer_connect: stale contact %s: the listener at that address is "
                          "instance %016llx of pid %u on %s, the contact names instance %016llx "
                          "of pid %u",
                          contact, (unsigned long long)lh.instance, (unsigned)lh.pid, lh.host,
                          (unsigned long long)c.instance, (unsigned)c.pid);
        goto fail;
    }
    uint8_t challenge[PX_PEER_HELLO_LEN];
    memcpy(challenge, body, sizeof challenge);
    free(body);
    body = NULL;
    size_t alen = PX_PEER_HDR_LEN + PX_PEER_MAC_LEN + len;
    auth = malloc(alen);
    if (NULL == auth) {
        rc = px_peer_fail(PX_ERR_OUT_OF_RESOURCE, "px_peer_connect: out of memory");
        goto fail;
    }
    px_peer_hdr_write(auth, PX_PEER_T_AUTH, (uint32_t)(PX_PEER_MAC_LEN + len));
    px_peer_mac(o->secret, false, hello + PX_PEER_HDR_LEN, challenge, payload, len, NULL, 0,
                auth + PX_PEER_HDR_LEN);
    if (len)
        memcpy(auth + PX_PEER_HDR_LEN + PX_PEER_MAC_LEN, payload, len);
    rc = send_all(o, fd, auth, alen, deadline, peer);
    if (rc == PX_SUCCESS)
        rc = recv_frame(o, fd, 1u << PX_PEER_T_ACCEPT, PX_PEER_MAC_LEN,
                        (uint32_t)(PX_PEER_MAC_LEN + o->max_payload), deadline, peer, &h, &body);
    if (rc != PX_SUCCESS)
        goto fail_io;
    uint8_t mac[PX_PEER_MAC_LEN];
    size_t plen = h.len - PX_PEER_MAC_LEN;
    px_peer_mac(o->secret, true, hello + PX_PEER_HDR_LEN, challenge, payload, len,
                body + PX_PEER_MAC_LEN, plen, mac);
    if (!px_peer_mac_equal(mac, body)) {
        rc = px_peer_fail(PX_ERR_FATAL,
                          "px_peer_connect: %s failed authentication: its proof does not match "
                          "this process's secret (it holds another secret, or the answer was "
                          "tampered with)",
                          peer);
        goto fail;
    }
    px_peer_conn_t *cn = calloc(1, sizeof *cn);
    if (NULL == cn) {
        rc = px_peer_fail(PX_ERR_OUT_OF_RESOURCE, "px_peer_connect: out of memory");
        goto fail;
    }
    cn->fd = fd;
    if (plen)
        memmove(body, body + PX_PEER_MAC_LEN, plen);
    cn->payload = body;
    cn->len = plen;
    snprintf(cn->ident.host, sizeof cn->ident.host, "%s", lh.host);
    cn->ident.pid = lh.pid;
    cn->ident.instance = lh.instance;
    snprintf(cn->ident.address, sizeof cn->ident.address, "%u.%u.%u.%u:%u", c.addr[0], c.addr[1],
             c.addr[2], c.addr[3], c.port);
    free(auth);
    PX_OUTPUT_VERBOSE(10, px_peer_output(), "connected to %s, payload %zu bytes", contact, plen);
    *conn = cn;
    return PX_SUCCESS;
fail_io:
    if (rc == PX_ERR_TIMEOUT)
        px_peer_fail(PX_ERR_TIMEOUT,
                     "px_peer_connect: %s accepted the connection but did not finish the "
                     "handshake within %g s (peer_connect_timeout): not a Plexus peer "
                     "listener, or one that is not progressing",
                     peer, timeout);
fail:
    free(body);
    free(auth);
    close(fd);
    return rc;
}

int px_peer_connect(const char *contact, const void *payload, size_t len, double timeout,
                    px_peer_conn_t **conn)
{
    return px_peer_connect_serving(contact, payload, len, timeout, NULL, NULL, conn);
}

int px_peer_connect_serving(const char *contact, const void *payload, size_t len, double timeout,
                            px_peer_serve_fn serve, void *arg, px_peer_conn_t **conn)
{
    px_peer_opts_t o;
    px_peer_secret_t s;
    *conn = NULL;
    /* a malformed contact is reported before anything else */
    char why[900];
    px_peer_contact_t c;
    if (px_peer_contact_parse(contact, &c, why, sizeof why) != PX_SUCCESS)
        return px_peer_fail(PX_ERR_BAD_PARAM, "px_peer_connect: %s", why);
    /* In one thread, connecting to one's own listener could only time out
     * (nobody progresses the accept side while connect waits): refused. */
    if (px_peer_own_instance(c.instance))
        return px_peer_fail(PX_ERR_BAD_PARAM,
                            "px_peer_connect: %s is this process's own listener: a process "
                            "does not connect to itself (btl/self reaches it)",
                            contact);
    int rc = px_peer_opts_from_vars(&o, &s);
    if (rc != PX_SUCCESS) {
        char w[1024];
        snprintf(w, sizeof w, "%s", px_peer_last_error());
        return px_peer_fail(rc, "px_peer_connect: %s", w);
    }
    if (timeout > 0)
        o.timeout = timeout;
    o.serve = serve;
    o.serve_arg = arg;
    rc = px_peer_connect_opts(&o, contact, payload, len, conn);
    px_peer_secret_free(&s);
    return rc;
}
