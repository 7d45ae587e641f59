/*
 * peer_listen.c: the listener (peer.h): a listening socket and its contact
 * string, handshakes driven without blocking (px_peer_accept_progress, or
 * px_peer_accept with a deadline), each bounded by its own deadline and by
 * peer_max_pending, and refusals logged (docs/peers.md).
 */
#define _GNU_SOURCE /* accept4 */
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
/* ------------------------------------------------------------ listener */

enum { ST_HELLO, ST_AUTH_HDR, ST_AUTH_BODY, ST_SEND_ACCEPT };

typedef struct pending {
    int fd;
    int state;
    double deadline;
    char from[48];
    bool named;                                         /* p->peer holds a well-formed HELLO */
    uint8_t hello[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN]; /* header + HELLO body */
    uint8_t challenge[PX_PEER_HELLO_LEN];
    px_peer_hello_t peer;
    uint8_t hdr[PX_PEER_HDR_LEN];
    uint8_t *body; /* the AUTH body, once its length was checked */
    size_t need, got;
    uint8_t *out; /* what remains to be written */
    size_t out_len, out_off;
    bool want_out;
    bool in_ep;   /* in the listener's epoll set (after its first step) */
    void *cookie; /* the reply function's, until the connection is delivered */
} pending_t;

struct px_peer_listener {
    int fd, epfd;
    px_peer_contact_t me;
    char contact[PX_PEER_CONTACT_MAX + 1];
    px_peer_secret_t secret;
    uint8_t *payload;
    size_t len;
    double timeout;
    size_t max_payload;
    int max_pending;
    pending_t **pend;
    int npend;
    px_peer_conn_t *ready, *ready_tail;
    px_peer_listener_t *next;
    /* px_peer_listener_set_reply: a reply per connection instead of payload */
    px_peer_reply_fn reply_fn;
    px_peer_release_fn release_fn;
    void *reply_arg;
    /* Out of descriptors (EMFILE, ENFILE): a descriptor kept in reserve is
     * closed to accept and refuse the connection that waits (else the
     * listening socket stays readable and the progress loop spins); without
     * one, the listening socket leaves the epoll set until paused_until. */
    int spare_fd;
    bool fds_out; /* logged once per episode: cleared by an accept that works */
    bool paused;  /* the listening socket is out of the epoll set */
    double paused_until;
};

void px_peer_listener_set_reply(px_peer_listener_t *l, px_peer_reply_fn reply,
                                px_peer_release_fn release, void *arg)
{
    l->reply_fn = reply;
    l->release_fn = release;
    l->reply_arg = arg;
}

/* A cookie of the reply function whose connection is not delivered. */
static void cookie_release(px_peer_listener_t *l, void **cookie)
{
    if (*cookie && l->release_fn)
        l->release_fn(l->reply_arg, *cookie);
    *cookie = NULL;
}

/* The listeners of this process, to tell a connection to oneself. */
static px_peer_listener_t *listeners;

bool px_peer_own_instance(uint64_t instance)
{
    for (px_peer_listener_t *l = listeners; l; l = l->next)
        if (l->me.instance == instance)
            return true;
    return false;
}

int px_peer_listener_fd(const px_peer_listener_t *l)
{
    return l->epfd;
}

int px_peer_listener_pending(const px_peer_listener_t *l)
{
    return l->npend;
}

static void pending_free(px_peer_listener_t *l, int i)
{
    pending_t *p = l->pend[i];
    cookie_release(l, &p->cookie);
    if (p->in_ep)
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->fd, NULL);
    if (p->fd >= 0)
        close(p->fd);
    free(p->body);
    free(p->out);
    free(p);
    l->pend[i] = l->pend[--l->npend];
}

static int pending_index(px_peer_listener_t *l, pending_t *p)
{
    for (int i = 0; i < l->npend; i++)
        if (l->pend[i] == p)
            return i;
    return -1;
}

/* Refuse pending i: log who and why, try once to send REFUSE, close. */
static void refuse(px_peer_listener_t *l, int i, uint32_t reason, const char *why)
{
    pending_t *p = l->pend[i];
    char who[PX_PEER_HOST_MAX + 40] = "";
    if (p->named)
        snprintf(who, sizeof who, " (host %s, pid %u)", p->peer.host, (unsigned)p->peer.pid);
    PX_OUTPUT_VERBOSE(1, px_peer_output(), "listener %s refused %s%s: %s", l->contact, p->from, who,
                      why);
    if (reason) {
        uint8_t f[PX_PEER_HDR_LEN + 4];
        px_peer_hdr_write(f, PX_PEER_T_REFUSE, 4);
        f[12] = (uint8_t)(reason >> 24), f[13] = (uint8_t)(reason >> 16);
        f[14] = (uint8_t)(reason >> 8), f[15] = (uint8_t)reason;
        ssize_t r = send(p->fd, f, sizeof f, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)r;
    }
    pending_free(l, i);
}

static void want_out(px_peer_listener_t *l, pending_t *p, bool on)
{
    if (p->want_out == on)
        return;
    if (!p->in_ep) { /* adopt adds it with this */
        p->want_out = on;
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = p};
    epoll_ctl(l->epfd, EPOLL_CTL_MOD, p->fd, &ev);
    p->want_out = on;
}

/* Write what remains of p->out; 1 when all is written, 0 not yet, -1 error. */
static int flush_out(px_peer_listener_t *l, pending_t *p)
{
    while (p->out_off < p->out_len) {
        ssize_t w =
            send(p->fd, p->out + p->out_off, p->out_len - p->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            want_out(l, p, true);
            return 0;
        }
        if (w <= 0)
            return -1;
        p->out_off += (size_t)w;
    }
    free(p->out);
    p->out = NULL;
    p->out_len = p->out_off = 0;
    want_out(l, p, false);
    return 1;
}

/* Read into buf until p->need bytes: 1 complete, 0 not yet, -1 closed/error. */
static int fill(pending_t *p, uint8_t *buf)
{
    while (p->got < p->need) {
        ssize_t r = recv(p->fd, buf + p->got, p->need - p->got, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (r <= 0)
            return -1;
        p->got += (size_t)r;
    }
    return 1;
}

static void deliver(px_peer_listener_t *l, int i)
{
    pending_t *p = l->pend[i];
    px_peer_conn_t *c = calloc(1, sizeof *c);
    if (NULL == c) {
        refuse(l, i, 0, "out of memory");
        return;
    }
    c->fd = p->fd;
    c->cookie = p->cookie;
    p->cookie = NULL;
    c->payload = p->body; /* the AUTH body: mac, then the payload */
    c->len = p->need - PX_PEER_MAC_LEN;
    if (c->len)
        memmove(c->payload, c->payload + PX_PEER_MAC_LEN, c->len);
    snprintf(c->ident.host, sizeof c->ident.host, "%s", p->peer.host);
    c->ident.pid = p->peer.pid;
    snprintf(c->ident.address, sizeof c->ident.address, "%s", p->from);
    if (p->in_ep)
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->fd, NULL);
    p->fd = -1;
    p->body = NULL;
    PX_OUTPUT_VERBOSE(10, px_peer_output(),
                      "listener %s accepted %s (%s pid %u), payload %zu bytes", l->contact,
                      c->ident.address, c->ident.host, (unsigned)c->ident.pid, c->len);
    free(p->out);
    free(p);
    l->pend[i] = l->pend[--l->npend];
    if (l->ready_tail)
        l->ready_tail->next = c;
    else
        l->ready = c;
    l->ready_tail = c;
}

/* Advance pending p as far as its socket allows. */
static void step(px_peer_listener_t *l, pending_t *p)
{
    int i = pending_index(l, p);
    if (i < 0)
        return;
    char why[200];
    for (;;) {
        if (p->out) {
            int w = flush_out(l, p);
            if (w < 0) {
                refuse(l, i, 0, "the connection failed while the listener wrote to it");
                return;
            }
            if (w == 0)
                return;
            if (p->state == ST_SEND_ACCEPT) {
                deliver(l, i);
                return;
            }
        }
        int r;
        switch (p->state) {
        case ST_HELLO: {
            r = fill(p, p->hello);
            if (r < 0) {
                refuse(l, i, 0,
                       p->got ? "it closed the connection in the middle of its HELLO"
                              : "it closed the connection before saying anything");
                return;
            }
            /* check the header as soon as it is in, before waiting for more */
            px_peer_hdr_t h;
            if (p->got >= PX_PEER_HDR_LEN) {
                const char *bad = px_peer_hdr_check(p->hello, 1u << PX_PEER_T_HELLO,
                                                    PX_PEER_HELLO_LEN, PX_PEER_HELLO_LEN, &h);
                if (bad) {
                    snprintf(why, sizeof why, "its first frame is %s", bad);
                    refuse(l, i,
                           h.magic == PX_PEER_MAGIC && h.version != PX_PEER_VERSION
                               ? PX_PEER_R_VERSION
                               : PX_PEER_R_PROTOCOL,
                           why);
                    return;
                }
            }
            if (r == 0)
                return;
            const char *bad = px_peer_hello_read(p->hello + PX_PEER_HDR_LEN, &p->peer);
            if (bad) {
                snprintf(why, sizeof why, "its HELLO holds %s", bad);
                refuse(l, i, PX_PEER_R_PROTOCOL, why);
                return;
            }
            p->named = true;
            if (p->peer.instance != l->me.instance) {
                snprintf(why, sizeof why,
                         "it asked for listener instance %016llx, this one is %016llx (a stale "
                         "contact)",
                         (unsigned long long)p->peer.instance, (unsigned long long)l->me.instance);
                refuse(l, i, PX_PEER_R_STALE, why);
                return;
            }
            px_peer_hello_t me;
            memset(&me, 0, sizeof me);
            if (px_peer_random(me.nonce, sizeof me.nonce) != PX_SUCCESS) {
                refuse(l, i, 0, "no random numbers");
                return;
            }
            me.instance = l->me.instance;
            me.pid = l->me.pid;
            memcpy(me.host, l->me.host, sizeof me.host);
            px_peer_hello_write(p->challenge, &me);
            p->out = malloc(PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN);
            if (NULL == p->out) {
                refuse(l, i, 0, "out of memory");
                return;
            }
            px_peer_hdr_write(p->out, PX_PEER_T_CHALLENGE, PX_PEER_HELLO_LEN);
            memcpy(p->out + PX_PEER_HDR_LEN, p->challenge, PX_PEER_HELLO_LEN);
            p->out_len = PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN;
            p->out_off = 0;
            p->state = ST_AUTH_HDR;
            p->need = PX_PEER_HDR_LEN;
            p->got = 0;
            continue;
        }
        case ST_AUTH_HDR: {
            r = fill(p, p->hdr);
            if (r < 0) {
                refuse(l, i, 0, "it closed the connection before proving it holds the secret");
                return;
            }
            if (r == 0)
                return;
            px_peer_hdr_t h;
            const char *bad =
                px_peer_hdr_check(p->hdr, 1u << PX_PEER_T_AUTH, PX_PEER_MAC_LEN, UINT32_MAX, &h);
            if (bad) {
                snprintf(why, sizeof why, "its AUTH frame is %s", bad);
                refuse(l, i, PX_PEER_R_PROTOCOL, why);
                return;
            }
            if (h.len - PX_PEER_MAC_LEN > l->max_payload) {
                snprintf(why, sizeof why, "its payload of %u bytes is above peer_max_payload %zu",
                         (unsigned)(h.len - PX_PEER_MAC_LEN), l->max_payload);
                refuse(l, i, PX_PEER_R_TOO_LARGE, why);
                return;
            }
            p->body = malloc(h.len); /* bounded just above */
            if (NULL == p->body) {
                refuse(l, i, 0, "out of memory");
                return;
            }
            p->need = h.len;
            p->got = 0;
            p->state = ST_AUTH_BODY;
            continue;
        }
        case ST_AUTH_BODY: {
            r = fill(p, p->body);
            if (r < 0) {
                refuse(l, i, 0, "it closed the connection in the middle of its AUTH frame");
                return;
            }
            if (r == 0)
                return;
            uint8_t mac[PX_PEER_MAC_LEN];
            const uint8_t *hello = p->hello + PX_PEER_HDR_LEN;
            size_t plen = p->need - PX_PEER_MAC_LEN;
            if (px_peer_mac(&l->secret, false, hello, p->challenge, p->body + PX_PEER_MAC_LEN, plen,
                            NULL, 0, mac) != PX_SUCCESS) {
                refuse(l, i, 0, "the HMAC could not be computed");
                return;
            }
            if (!px_peer_mac_equal(mac, p->body)) {
                refuse(l, i, PX_PEER_R_AUTH,
                       "authentication failed: its proof does not match this listener's secret");
                return;
            }
            /* The answer: the listener's payload, or the reply function's
             * to this connector's payload (set_reply). */
            const uint8_t *ans = l->payload;
            size_t alen = l->len;
            void *reply = NULL;
            if (l->reply_fn) {
                px_peer_ident_t id = {.pid = p->peer.pid};
                snprintf(id.host, sizeof id.host, "%s", p->peer.host);
                snprintf(id.address, sizeof id.address, "%s", p->from);
                size_t rlen = 0;
                int rrc = l->reply_fn(l->reply_arg, p->body + PX_PEER_MAC_LEN, plen, &id, &reply,
                                      &rlen, &p->cookie);
                if (rrc != PX_SUCCESS || (NULL == reply && rlen > 0) ||
                    rlen > PX_PEER_PAYLOAD_HARD_MAX) {
                    free(reply);
                    char why[200];
                    snprintf(why, sizeof why, "this process could not answer its payload (%s)",
                             px_strerror(rrc != PX_SUCCESS ? rrc : PX_ERR_BAD_PARAM));
                    refuse(l, i, 0, why);
                    return;
                }
                ans = reply;
                alen = rlen;
            }
            p->out = malloc(PX_PEER_HDR_LEN + PX_PEER_MAC_LEN + alen);
            if (NULL == p->out) {
                free(reply);
                refuse(l, i, 0, "out of memory");
                return;
            }
            px_peer_hdr_write(p->out, PX_PEER_T_ACCEPT, (uint32_t)(PX_PEER_MAC_LEN + alen));
            px_peer_mac(&l->secret, true, hello, p->challenge, p->body + PX_PEER_MAC_LEN, plen, ans,
                        alen, p->out + PX_PEER_HDR_LEN);
            if (alen)
                memcpy(p->out + PX_PEER_HDR_LEN + PX_PEER_MAC_LEN, ans, alen);
            free(reply);
            p->out_len = PX_PEER_HDR_LEN + PX_PEER_MAC_LEN + alen;
            p->out_off = 0;
            p->state = ST_SEND_ACCEPT;
            continue;
        }
        default:
            return;
        }
    }
}

/* Take fd as a connector; `nonblocking`: accept4 made it so already (no
 * fcntl on the way to the answer). */
static int adopt(px_peer_listener_t *l, int fd, const char *from, bool nonblocking)
{
    if (l->npend >= l->max_pending) {
        PX_OUTPUT_VERBOSE(1, px_peer_output(),
                          "listener %s refused %s: %d handshakes already in progress "
                          "(peer_max_pending)",
                          l->contact, from, l->npend);
        uint8_t f[PX_PEER_HDR_LEN + 4];
        px_peer_hdr_write(f, PX_PEER_T_REFUSE, 4);
        f[12] = f[13] = f[14] = 0, f[15] = PX_PEER_R_BUSY;
        ssize_t r = send(fd, f, sizeof f, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)r;
        close(fd);
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    }
    int fl = nonblocking ? 0 : fcntl(fd, F_GETFL);
    if (!nonblocking && (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)) {
        close(fd);
        return PX_ERR_IN_ERRNO;
    }
    pending_t *p = calloc(1, sizeof *p);
    if (NULL == p) {
        close(fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    p->fd = fd;
    p->state = ST_HELLO;
    p->need = sizeof p->hello;
    p->deadline = px_peer_now() + l->timeout;
    snprintf(p->from, sizeof p->from, "%s", from);
    /* Its first step before it joins the epoll set: a connector sends its
     * HELLO with the connection, and a socket added while data waits in it
     * is reported at once, a wake of the process's watcher thread for what
     * this step reads anyway. */
    l->pend[l->npend++] = p;
    step(l, p);
    int i = pending_index(l, p); /* refused or delivered by its step: gone */
    if (i < 0)
        return PX_SUCCESS;
    struct epoll_event ev = {.events = EPOLLIN | (p->want_out ? EPOLLOUT : 0), .data.ptr = p};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        refuse(l, i, 0, "its socket could not join the listener's epoll set");
        return PX_ERR_IN_ERRNO;
    }
    p->in_ep = true;
    return PX_SUCCESS;
}

int px_peer_listener_adopt(px_peer_listener_t *l, int fd, const char *from)
{
    return adopt(l, fd, from, false);
}

/* accept() failed with err (not EAGAIN): out of descriptors (EMFILE,
 * ENFILE) or kernel memory (ENOBUFS, ENOMEM). The connection that waits is
 * taken with the spare descriptor and refused, so the listening socket is
 * not left readable (the progress loop would spin on it); without a spare
 * the listening socket pauses for 100 ms. Logged once until an accept works. */
static void accept_failed(px_peer_listener_t *l, int err)
{
    bool fds = err == EMFILE || err == ENFILE;
    if (!l->fds_out)
        PX_OUTPUT_VERBOSE(1, px_peer_output(),
                          "listener %s cannot accept connections: %s%s; connectors are "
                          "refused until it can (logged once until an accept works)",
                          l->contact, strerror(err),
                          fds ? " (this process is at its descriptor limit: raise ulimit -n or "
                                "close descriptors)"
                              : "");
    l->fds_out = true;
    if (fds && l->spare_fd >= 0) {
        close(l->spare_fd);
        l->spare_fd = -1;
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            uint8_t f[PX_PEER_HDR_LEN + 4];
            px_peer_hdr_write(f, PX_PEER_T_REFUSE, 4);
            f[12] = f[13] = f[14] = 0, f[15] = PX_PEER_R_NO_FDS;
            ssize_t r = send(fd, f, sizeof f, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)r;
            close(fd);
        }
        l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            return;
    }
    if (!l->paused && 0 == epoll_ctl(l->epfd, EPOLL_CTL_DEL, l->fd, NULL)) {
        l->paused = true;
        l->paused_until = px_peer_now() + 0.1;
    }
}

int px_peer_accept_progress(px_peer_listener_t *l, px_peer_conn_t **conn)
{
    *conn = NULL;
    if (l->paused && px_peer_now() >= l->paused_until) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        if (0 == epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->fd, &ev))
            l->paused = false;
        else
            l->paused_until = px_peer_now() + 0.1;
    }
    if (NULL == l->ready) {
        struct epoll_event ev[32];
        int n = epoll_wait(l->epfd, ev, 32, 0);
        for (int k = 0; k < n; k++) {
            if (ev[k].data.ptr == NULL) {
                for (int m = 0; m < 64; m++) {
                    struct sockaddr_in sa;
                    socklen_t sl = sizeof sa;
                    int fd =
                        accept4(l->fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0 && errno == EINTR)
                        continue;
                    if (fd < 0 && errno == ECONNABORTED)
                        continue; /* that one left the queue; others may wait */
                    if (fd < 0) {
                        if (errno != EAGAIN && errno != EWOULDBLOCK)
                            accept_failed(l, errno);
                        break;
                    }
                    l->fds_out = false;
                    char from[48], a[INET_ADDRSTRLEN] = "?";
                    inet_ntop(AF_INET, &sa.sin_addr, a, sizeof a);
                    snprintf(from, sizeof from, "%s:%u", a, (unsigned)ntohs(sa.sin_port));
                    adopt(l, fd, from, true);
                }
            } else {
                step(l, ev[k].data.ptr);
            }
        }
        double t = px_peer_now();
        for (int i = l->npend - 1; i >= 0; i--) {
            if (i < l->npend && l->pend[i]->deadline <= t) {
                char why[160];
                snprintf(why, sizeof why,
                         "its handshake did not finish within peer_connect_timeout (%g s)",
                         l->timeout);
                refuse(l, i, 0, why);
            }
        }
    }
    if (l->ready) {
        *conn = l->ready;
        l->ready = l->ready->next;
        if (NULL == l->ready)
            l->ready_tail = NULL;
        (*conn)->next = NULL;
        return 1;
    }
    return 0;
}

int px_peer_accept(px_peer_listener_t *l, double timeout, px_peer_conn_t **conn)
{
    double deadline = px_peer_now() + (timeout > 0 ? timeout : px_peer_default_timeout());
    for (;;) {
        int rc = px_peer_accept_progress(l, conn);
        if (rc != 0)
            return rc > 0 ? PX_SUCCESS : rc;
        int ms = px_peer_ms_until(deadline);
        if (ms == 0)
            return px_peer_fail(PX_ERR_TIMEOUT,
                                "listener %s: no connection finished its handshake within %g s",
                                l->contact, timeout > 0 ? timeout : px_peer_default_timeout());
        double next = deadline; /* wake for the earliest handshake deadline too */
        for (int i = 0; i < l->npend; i++)
            if (l->pend[i]->deadline < next)
                next = l->pend[i]->deadline;
        if (l->paused && l->paused_until < next)
            next = l->paused_until;
        int wait = px_peer_ms_until(next);
        struct pollfd pfd = {.fd = l->epfd, .events = POLLIN};
        poll(&pfd, 1, wait < ms ? wait : ms);
    }
}

static bool parse_ipv4(const char *s, uint8_t out[4])
{
    struct in_addr a;
    if (NULL == s || inet_pton(AF_INET, s, &a) != 1)
        return false;
    memcpy(out, &a.s_addr, 4);
    return true;
}

int px_peer_listen_opts(const px_peer_opts_t *o, const void *payload, size_t len,
                        px_peer_listener_t **out, const char **contact)
{
    *out = NULL;
    if (!px_peer_crypto_available())
        return px_peer_fail(PX_ERR_NOT_SUPPORTED,
                            "px_peer_listen: this Plexus was built without libsodium, which "
                            "authenticates peers (install libsodium-dev and configure again)");
    if (NULL == o->secret || NULL == o->secret->bytes)
        return px_peer_fail(PX_ERR_NOT_AVAILABLE,
                            "px_peer_listen: no secret, so no listener: set peer_secret_file "
                            "(chmod 600, the same secret on both sides)");
    if (len > o->max_payload)
        return px_peer_fail(PX_ERR_BAD_PARAM,
                            "px_peer_listen: payload of %zu bytes is above peer_max_payload %zu",
                            len, o->max_payload);
    uint8_t laddr[4], caddr[4];
    if (!parse_ipv4(o->listen_address, laddr))
        return px_peer_fail(PX_ERR_BAD_PARAM,
                            "peer_listen_address \"%s\" is not a numeric IPv4 address (accepted: "
                            "a.b.c.d such as 127.0.0.1, an interface's address, or 0.0.0.0)",
                            o->listen_address ? o->listen_address : "");
    if (o->contact_address && o->contact_address[0]) {
        if (!parse_ipv4(o->contact_address, caddr) || caddr[0] == 0)
            return px_peer_fail(PX_ERR_BAD_PARAM,
                                "peer_contact_address \"%s\" is not a numeric unicast IPv4 "
                                "address (accepted: a.b.c.d, the address others reach)",
                                o->contact_address);
    } else if (laddr[0] == 0 && laddr[1] == 0 && laddr[2] == 0 && laddr[3] == 0) {
        return px_peer_fail(PX_ERR_BAD_PARAM,
                            "peer_listen_address is 0.0.0.0 (every interface): set "
                            "peer_contact_address to the address others reach this host by, "
                            "which the contact string names");
    } else {
        memcpy(caddr, laddr, 4);
    }
    if (o->listen_port > 65535)
        return px_peer_fail(PX_ERR_BAD_PARAM, "peer_listen_port %u is above 65535", o->listen_port);
    px_peer_listener_t *l = calloc(1, sizeof *l);
    if (NULL == l)
        return px_peer_fail(PX_ERR_OUT_OF_RESOURCE, "px_peer_listen: out of memory");
    l->fd = l->epfd = -1;
    l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    l->timeout = o->timeout > 0 ? o->timeout : 10;
    l->max_payload = o->max_payload;
    l->max_pending = o->max_pending > 0 ? o->max_pending : 16;
    l->pend = calloc((size_t)l->max_pending, sizeof *l->pend);
    l->secret.bytes = malloc(o->secret->len);
    l->payload = malloc(len ? len : 1);
    int rc = PX_ERR_OUT_OF_RESOURCE;
    if (!l->pend || !l->secret.bytes || !l->payload) {
        px_peer_fail(rc, "px_peer_listen: out of memory");
        goto fail;
    }
    memcpy(l->secret.bytes, o->secret->bytes, o->secret->len);
    l->secret.len = o->secret->len;
    if (len)
        memcpy(l->payload, payload, len);
    l->len = len;
    l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->fd < 0 || l->epfd < 0) {
        rc = px_peer_fail(PX_ERR_IN_ERRNO, "px_peer_listen: socket: %s", strerror(errno));
        goto fail;
    }
    int one = 1;
    setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->listen_port)};
    memcpy(&sa.sin_addr.s_addr, laddr, 4);
    if (bind(l->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        rc = px_peer_fail(PX_ERR_IN_ERRNO,
                          "px_peer_listen: cannot bind %s:%u (peer_listen_address, "
                          "peer_listen_port): %s",
                          o->listen_address, o->listen_port, strerror(errno));
        goto fail;
    }
    if (listen(l->fd, 64) != 0) {
        rc = px_peer_fail(PX_ERR_IN_ERRNO, "px_peer_listen: listen: %s", strerror(errno));
        goto fail;
    }
    /* Readable when a connector's HELLO has come, not when its connection
     * is made (it sends the HELLO at once): the accept and the CHALLENGE
     * take one pass, not two wakes. A connection that sends nothing is
     * handed over by the kernel a second or so later and then bound by its
     * handshake's deadline. */
    int defer = 1;
    setsockopt(l->fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
    socklen_t sl = sizeof sa;
    getsockname(l->fd, (struct sockaddr *)&sa, &sl);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->fd, &ev);
    l->me.version = PX_PEER_VERSION;
    memcpy(l->me.addr, caddr, 4);
    l->me.port = ntohs(sa.sin_port);
    px_peer_my_ident(l->me.host);
    l->me.pid = (uint32_t)getpid();
    do {
        px_peer_random(&l->me.instance, sizeof l->me.instance);
    } while (l->me.instance == 0);
    px_peer_contact_format(&l->me, l->contact, sizeof l->contact);
    l->next = listeners;
    listeners = l;
    PX_OUTPUT_VERBOSE(10, px_peer_output(), "listening on %s:%u, contact %s", o->listen_address,
                      (unsigned)l->me.port, l->contact);
    *out = l;
    if (contact)
        *contact = l->contact;
    return PX_SUCCESS;
fail:
    if (l->spare_fd >= 0)
        close(l->spare_fd);
    if (l->fd >= 0)
        close(l->fd);
    if (l->epfd >= 0)
        close(l->epfd);
    free(l->pend);
    px_peer_secret_free(&l->secret);
    free(l->payload);
    free(l);
    return rc;
}

int px_peer_listen(const void *payload, size_t len, px_peer_listener_t **listener,
                   const char **contact)
{
    px_peer_opts_t o;
    px_peer_secret_t s;
    *listener = NULL;
    int rc = px_peer_opts_from_vars(&o, &s);
    if (rc != PX_SUCCESS) {
        char why[1024];
        snprintf(why, sizeof why, "%s", px_peer_last_error());
        return px_peer_fail(rc, "px_peer_listen: %s", why);
    }
    rc = px_peer_listen_opts(&o, payload, len, listener, contact);
    px_peer_secret_free(&s);
    return rc;
}

void px_peer_listener_close(px_peer_listener_t *l)
{
    if (NULL == l)
        return;
    for (px_peer_listener_t **pp = &listeners; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    while (l->npend > 0)
        pending_free(l, l->npend - 1);
    while (l->ready) {
        px_peer_conn_t *c = l->ready;
        l->ready = c->next;
        cookie_release(l, &c->cookie);
        px_peer_conn_close(c);
    }
    close(l->fd);
    close(l->epfd);
    if (l->spare_fd >= 0)
        close(l->spare_fd);
    free(l->pend);
    px_peer_secret_free(&l->secret);
    free(l->payload);
    free(l);
}
