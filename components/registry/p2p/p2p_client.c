/*
 * p2p_client.c: registry/p2p's side that asks another process's listener
 * (p2p_listen.c) for a name or a listing. One connection per question,
 * bounded as a whole by registry_timeout; the answer is untrusted (an owner
 * may be hostile, or not an owner at all): its header is checked before its
 * body is read, and a body is read only up to the length the header gave,
 * itself bounded (p2p_wire.h).
 */
#include "components/registry/p2p/p2p.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "core/util/error.h"

double px_registry_p2p_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait for `events` on fd until deadline: 1 ready, 0 deadline passed. */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - px_registry_p2p_now();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return 1; /* let the call that follows report it */
    }
}

/* Read exactly n bytes; PX_SUCCESS, PX_ERR_TIMEOUT, or PX_ERR_NOT_AVAILABLE
 * (closed or reset; *got says how far it came). */
static int read_full(int fd, uint8_t *buf, size_t n, double deadline, size_t *got, int *err)
{
    *got = 0;
    *err = 0;
    while (*got < n) {
        ssize_t r = recv(fd, buf + *got, n - *got, MSG_DONTWAIT);
        if (r > 0) {
            *got += (size_t)r;
            continue;
        }
        if (r == 0)
            return PX_ERR_NOT_AVAILABLE;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            *err = errno;
            return PX_ERR_NOT_AVAILABLE;
        }
        if (!wait_fd(fd, POLLIN, deadline))
            return PX_ERR_TIMEOUT;
    }
    return PX_SUCCESS;
}

int px_registry_p2p_read_answer(int fd, const char *contact, int op, double deadline,
                                size_t list_max, px_registry_p2p_answer_t *a, uint8_t **body,
                                char *why, size_t cap)
{
    uint8_t hdr[PX_REGISTRY_P2P_HDR_LEN];
    size_t got;
    int err;
    char what[256];
    int rc = read_full(fd, hdr, sizeof hdr, deadline, &got, &err);
    if (rc == PX_ERR_TIMEOUT) {
        snprintf(why, cap,
                 "the owner at %s accepted the connection but did not answer within "
                 "registry_timeout (stopped, overloaded, or not a registry/p2p owner?)",
                 contact);
        return rc;
    }
    if (rc != PX_SUCCESS) {
        snprintf(why, cap, "the owner at %s closed the connection %s (%zu of %d header bytes%s%s)",
                 contact, got ? "in the middle of its answer" : "without answering", got,
                 PX_REGISTRY_P2P_HDR_LEN, err ? "; " : "", err ? strerror(err) : "");
        return PX_ERR_NOT_AVAILABLE;
    }
    rc = px_registry_p2p_answer_check(hdr, op, list_max, a, what, sizeof what);
    if (rc != PX_SUCCESS) {
        snprintf(why, cap, "the owner at %s sent a malformed answer: %s", contact, what);
        return rc;
    }
    uint8_t *b = malloc(a->body_len + 1);
    if (!b) {
        snprintf(why, cap, "no memory for an answer of %zu bytes from %s", a->body_len, contact);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    rc = read_full(fd, b, a->body_len, deadline, &got, &err);
    if (rc != PX_SUCCESS) {
        free(b);
        if (rc == PX_ERR_TIMEOUT)
            snprintf(why, cap,
                     "the owner at %s sent %zu of its answer's %zu bytes within "
                     "registry_timeout, then stalled",
                     contact, got, a->body_len);
        else
            snprintf(why, cap,
                     "the owner at %s closed the connection after %zu of its answer's %zu "
                     "bytes (a truncated answer)",
                     contact, got, a->body_len);
        return rc;
    }
    b[a->body_len] = 0;
    *body = b;
    return PX_SUCCESS;
}

int px_registry_p2p_ask(uint32_t addr, int port, const char *contact, int op, const char *ns,
                        size_t ns_len, const char *key, size_t key_len, double timeout,
                        size_t list_max, px_registry_p2p_answer_t *a, uint8_t **body, char *why,
                        size_t cap)
{
    double deadline = px_registry_p2p_now() + timeout;
    uint8_t req[PX_REGISTRY_P2P_REQ_MAX];
    int n = px_registry_p2p_request_encode(req, op, ns, ns_len, key, key_len);
    if (n < 0) {
        snprintf(why, cap, "namespace and name of %zu bytes: at most %d", ns_len + 1 + key_len,
                 PX_REGISTRY_KEY_MAX);
        return PX_ERR_BAD_PARAM;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, cap, "no socket to reach %s: %s", contact, strerror(errno));
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr;
    sa.sin_port = htons((uint16_t)port);
    int rc = PX_SUCCESS;
    int e = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : errno;
    if (e != 0 && e != EINPROGRESS)
        goto refused;
    /* Send the request at once, without waiting for the connection to be
     * reported: on one host the kernel has made it by the time connect
     * returns, so the request is in the owner's socket when its listener
     * thread wakes to accept it, and that one wake answers it (waiting first
     * let the thread accept, find nothing, and sleep again: two wakes).
     * Elsewhere send says EAGAIN until the connection is made. */
    for (int off = 0; off < n;) {
        ssize_t w = send(fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w > 0) {
            off += (int)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(fd, POLLOUT, deadline)) {
                if (off == 0)
                    snprintf(why, cap,
                             "no answer from %s within registry_timeout (%.3g s) while "
                             "connecting: a host that is down or a firewall dropping the "
                             "connection?",
                             contact, timeout);
                else
                    snprintf(why, cap,
                             "the owner at %s did not take the request within registry_timeout",
                             contact);
                rc = PX_ERR_TIMEOUT;
                goto out;
            }
            socklen_t sl = sizeof e;
            e = 0;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl);
            if (e != 0)
                goto refused;
            continue;
        }
        e = w < 0 ? errno : EPIPE;
        if (off == 0 && (e == ECONNREFUSED || e == ECONNRESET || e == EHOSTUNREACH ||
                         e == ENETUNREACH || e == ETIMEDOUT || e == EPIPE))
            goto refused;
        snprintf(why, cap, "the connection to %s failed while sending: %s", contact, strerror(e));
        rc = PX_ERR_NOT_AVAILABLE;
        goto out;
    }
    rc = px_registry_p2p_read_answer(fd, contact, op, deadline, list_max, a, body, why, cap);
out:
    close(fd);
    return rc;
refused:
    if (e == ECONNREFUSED)
        snprintf(why, cap,
                 "nobody listens at %s: the owner of the name ended (or the name is wrong)?",
                 contact);
    else
        snprintf(why, cap, "cannot connect to %s: %s", contact, strerror(e));
    close(fd);
    return PX_ERR_NOT_AVAILABLE;
}
