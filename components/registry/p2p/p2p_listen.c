/*
 * p2p_listen.c: registry/p2p's listener, a thread that answers other
 * processes' GET and LIST requests from this process's entry table.
 *
 * Everything that arrives is untrusted. The thread never blocks on a client:
 * sockets are non-blocking and one poll() serves them all. A request is at
 * most PX_REGISTRY_P2P_REQ_MAX bytes, read into a fixed buffer; each
 * connection must have sent its request and taken its answer within the
 * timeout (registry_timeout) from its accept, else it is dropped (a slow or
 * stalled client, slowloris). At most max_clients connections hold a
 * descriptor: a new one beyond them replaces the oldest (a real asker sends
 * its request at once and is answered within a poll round, so a crowd of
 * stalled connections cannot keep it out). When accept() finds no
 * descriptor (EMFILE) the oldest connection is closed too.
 */
#define _GNU_SOURCE /* accept4, pipe2, pthread_setname_np */
#include "components/registry/p2p/p2p.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"

typedef struct {
    int fd;          /* -1: free */
    double deadline; /* monotonic seconds */
    uint64_t seq;    /* order of accept: the lowest is the oldest */
    bool draining;   /* answered: reading what is left until the client closes */
    bool refused;    /* its request was malformed: the rest may still come */
    char from[24];
    uint8_t in[PX_REGISTRY_P2P_REQ_MAX];
    size_t have, need;
    uint8_t *out; /* the answer, once built */
    size_t out_len, out_off;
} p2p_conn_t;

struct px_registry_p2p_listener {
    int fd;
    int wake[2];
    pthread_t thread;
    bool started;
    px_registry_p2p_table_t *table;
    char *ns;
    int max_clients;
    double timeout;
    size_t list_max;
    int output;
    p2p_conn_t *conns;
    pthread_mutex_t stats_lock;
    px_registry_p2p_stats_t stats;
    double accept_paused_until; /* after EMFILE with nothing to close */
    uint64_t seq;
};

static void conn_close(px_registry_p2p_listener_t *l, p2p_conn_t *c)
{
    (void)l;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->draining = false;
    free(c->out);
    c->out = NULL;
}

static void count(px_registry_p2p_listener_t *l, uint64_t *field)
{
    pthread_mutex_lock(&l->stats_lock);
    ++*field;
    pthread_mutex_unlock(&l->stats_lock);
}

void px_registry_p2p_listen_stats(px_registry_p2p_listener_t *l, px_registry_p2p_stats_t *s)
{
    pthread_mutex_lock(&l->stats_lock);
    *s = l->stats;
    pthread_mutex_unlock(&l->stats_lock);
}

/* An error answer with message msg. */
static int error_answer(int status, const char *msg, uint8_t **out, size_t *out_len)
{
    size_t n = strlen(msg);
    if (n > PX_REGISTRY_P2P_MSG_MAX)
        n = PX_REGISTRY_P2P_MSG_MAX;
    uint8_t *b = malloc(PX_REGISTRY_P2P_HDR_LEN + n);
    if (!b)
        return PX_ERR_OUT_OF_RESOURCE;
    px_registry_p2p_answer_header(b, status, 0, n);
    memcpy(b + PX_REGISTRY_P2P_HDR_LEN, msg, n);
    *out = b;
    *out_len = PX_REGISTRY_P2P_HDR_LEN + n;
    return PX_SUCCESS;
}

int px_registry_p2p_answer_build(px_registry_p2p_table_t *table, const char *own_ns,
                                 size_t list_max, const px_registry_p2p_request_t *req,
                                 uint8_t **out, size_t *out_len)
{
    char msg[PX_REGISTRY_P2P_MSG_MAX];
    size_t own = strlen(own_ns);
    if (req->ns_len != own || memcmp(req->ns, own_ns, own) != 0) {
        snprintf(msg, sizeof msg,
                 "this owner's names live in namespace \"%s\", not \"%.*s\" (set "
                 "registry_namespace alike on both sides)",
                 own_ns, (int)req->ns_len, req->ns);
        return error_answer(PX_REGISTRY_P2P_NAMESPACE, msg, out, out_len);
    }
    /* the full key: "<ns>/<key>" */
    char key[PX_REGISTRY_KEY_MAX + 1];
    memcpy(key, req->ns, req->ns_len);
    key[req->ns_len] = '/';
    memcpy(key + req->ns_len + 1, req->key, req->key_len);
    size_t klen = req->ns_len + 1 + req->key_len;
    key[klen] = '\0';
    if (req->op == PX_REGISTRY_P2P_GET) {
        pthread_mutex_lock(&table->lock);
        void *v = NULL;
        int rc = px_hash_table_get_value_str(&table->entries, key, &v);
        uint8_t *b = NULL;
        size_t n = 0;
        if (rc == PX_SUCCESS) {
            px_registry_p2p_entry_t *e = v;
            n = PX_REGISTRY_P2P_HDR_LEN + e->len;
            b = malloc(n);
            if (b) {
                px_registry_p2p_answer_header(b, PX_REGISTRY_P2P_OK, 0, e->len);
                memcpy(b + PX_REGISTRY_P2P_HDR_LEN, e->value, e->len);
            }
        }
        pthread_mutex_unlock(&table->lock);
        if (rc != PX_SUCCESS) {
            snprintf(msg, sizeof msg, "no name \"%.*s\" here (namespace \"%s\")", (int)req->key_len,
                     req->key, own_ns);
            return error_answer(PX_REGISTRY_P2P_NOT_FOUND, msg, out, out_len);
        }
        if (!b)
            return PX_ERR_OUT_OF_RESOURCE;
        *out = b;
        *out_len = n;
        return PX_SUCCESS;
    }
    /* LIST: every name under ns/ that starts with the prefix, until list_max. */
    if (list_max > PX_REGISTRY_P2P_LIST_HARD_MAX)
        list_max = PX_REGISTRY_P2P_LIST_HARD_MAX;
    size_t cap = PX_REGISTRY_P2P_HDR_LEN + 4096, used = PX_REGISTRY_P2P_HDR_LEN;
    uint8_t *b = malloc(cap);
    int flags = 0;
    if (!b)
        return PX_ERR_OUT_OF_RESOURCE;
    pthread_mutex_lock(&table->lock);
    px_hash_table_iter_t it = PX_HASH_TABLE_ITER_INIT;
    while (px_hash_table_next(&table->entries, &it)) {
        if (!it.key_str || strncmp(it.key_str, key, klen) != 0)
            continue;
        px_registry_p2p_entry_t *e = it.value;
        const char *name = it.key_str + req->ns_len + 1;
        size_t nl = strlen(name);
        if (nl < 1 || nl > PX_REGISTRY_KEY_MAX)
            continue;
        size_t need = PX_REGISTRY_P2P_ENTRY_HDR + nl + e->len;
        if (used - PX_REGISTRY_P2P_HDR_LEN + need > list_max) {
            flags |= PX_REGISTRY_P2P_TRUNCATED;
            continue;
        }
        if (used + need > cap) {
            size_t ncap = cap * 2 > used + need ? cap * 2 : used + need;
            uint8_t *nb = realloc(b, ncap);
            if (!nb) {
                flags |= PX_REGISTRY_P2P_TRUNCATED;
                break;
            }
            b = nb, cap = ncap;
        }
        used += px_registry_p2p_list_put(b + used, name, nl, e->value, e->len);
    }
    pthread_mutex_unlock(&table->lock);
    px_registry_p2p_answer_header(b, PX_REGISTRY_P2P_OK, flags, used - PX_REGISTRY_P2P_HDR_LEN);
    *out = b;
    *out_len = used;
    return PX_SUCCESS;
}

/* Read what the connection sent; build its answer once its request is whole. */
static void conn_read(px_registry_p2p_listener_t *l, p2p_conn_t *c)
{
    for (;;) {
        size_t want = c->need > c->have ? c->need - c->have : 0;
        if (want == 0)
            break;
        ssize_t r = recv(c->fd, c->in + c->have, want, 0);
        if (r == 0) {
            PX_OUTPUT_VERBOSE(2, l->output,
                              "listener: %s closed after %zu bytes, before its request was whole",
                              c->from, c->have);
            count(l, &l->stats.refused);
            conn_close(l, c);
            return;
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                count(l, &l->stats.refused);
                conn_close(l, c);
            }
            return;
        }
        c->have += (size_t)r;
        px_registry_p2p_request_t req;
        char why[256];
        int rc = px_registry_p2p_request_parse(c->in, c->have, &req, why, sizeof why);
        if (rc > 0) {
            c->need = (size_t)rc;
            continue;
        }
        if (rc < 0) {
            PX_OUTPUT_VERBOSE(1, l->output, "listener: refused %s: %s", c->from, why);
            count(l, &l->stats.refused);
            char msg[400];
            snprintf(msg, sizeof msg, "request refused: %s", why);
            c->refused = true;
            if (error_answer(PX_REGISTRY_P2P_BAD_REQUEST, msg, &c->out, &c->out_len) !=
                PX_SUCCESS) {
                conn_close(l, c);
                return;
            }
        } else if (px_registry_p2p_answer_build(l->table, l->ns, l->list_max, &req, &c->out,
                                                &c->out_len) != PX_SUCCESS) {
            conn_close(l, c);
            return;
        }
        c->out_off = 0;
        return;
    }
}

static void conn_write(px_registry_p2p_listener_t *l, p2p_conn_t *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_close(l, c);
            return;
        }
        c->out_off += (size_t)w;
    }
    count(l, &l->stats.answered);
    /* A whole request answered, nothing more sent: close now. The answer
     * still reaches the client (a FIN follows it), and the thread does not
     * wake again for the client's close. */
    int unread = 0;
    if (!c->refused && ioctl(c->fd, FIONREAD, &unread) == 0 && unread == 0) {
        conn_close(l, c);
        return;
    }
    /* Closing with unread bytes (the rest of a refused request) would reset
     * the connection, and a reset may discard the answer before the client
     * reads it: send FIN, then read and drop what comes until the client
     * closes (or its deadline). */
    free(c->out);
    c->out = NULL;
    shutdown(c->fd, SHUT_WR);
    c->draining = true;
}

static void conn_drain(px_registry_p2p_listener_t *l, p2p_conn_t *c)
{
    char sink[512];
    for (int i = 0; i < 16; ++i) {
        ssize_t r = recv(c->fd, sink, sizeof sink, 0);
        if (r > 0)
            continue;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        break;
    }
    conn_close(l, c); /* closed by the client, or more than it should send */
}

/* The connection to drop for a new one, or NULL: one already answered (it
 * only waits for the client to close), else the oldest. */
static p2p_conn_t *oldest(px_registry_p2p_listener_t *l)
{
    p2p_conn_t *o = NULL;
    for (int i = 0; i < l->max_clients; ++i) {
        p2p_conn_t *c = &l->conns[i];
        if (c->fd < 0)
            continue;
        if (c->draining)
            return c;
        if (!o || c->seq < o->seq)
            o = c;
    }
    return o;
}

static void accept_all(px_registry_p2p_listener_t *l, double now)
{
    /* at most max_clients per round, so the connections already open are read
     * between two bursts of new ones */
    for (int n = 0; n < l->max_clients; ++n) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(l->fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                p2p_conn_t *o = oldest(l);
                PX_OUTPUT_VERBOSE(1, l->output, "listener: cannot accept (%s); %s", strerror(errno),
                                  o ? "dropping the oldest connection" : "pausing 100 ms");
                if (o) {
                    count(l, &l->stats.dropped_evicted);
                    conn_close(l, o);
                    continue;
                }
                l->accept_paused_until = now + 0.1;
            }
            return;
        }
        count(l, &l->stats.accepted);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        p2p_conn_t *c = NULL;
        for (int i = 0; i < l->max_clients && !c; ++i)
            if (l->conns[i].fd < 0)
                c = &l->conns[i];
        if (!c) {
            c = oldest(l);
            if (!c->draining) {
                PX_OUTPUT_VERBOSE(1, l->output,
                                  "listener: %d connections at once (registry_p2p_max_clients): "
                                  "dropping the oldest, %s, for a new one",
                                  l->max_clients, c->from);
                count(l, &l->stats.dropped_evicted);
            }
            conn_close(l, c);
        }
        c->fd = fd;
        c->seq = ++l->seq;
        c->draining = false;
        c->refused = false;
        c->deadline = now + l->timeout;
        c->have = 0;
        c->need = PX_REGISTRY_P2P_HDR_LEN;
        c->out = NULL;
        c->out_len = c->out_off = 0;
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
        snprintf(c->from, sizeof c->from, "%s:%u", ip, (unsigned)ntohs(sa.sin_port));
        /* an asker sends its request with the connection: serve it now,
         * before a burst of other connections could push it out */
        conn_read(l, c);
        if (c->fd >= 0 && c->out)
            conn_write(l, c);
    }
}

static void *listen_thread(void *arg)
{
    px_registry_p2p_listener_t *l = arg;
    pthread_setname_np(pthread_self(), "px-p2p-lookup"); /* top -H, /proc, its test */
    int n = l->max_clients + 2;
    struct pollfd *pfd = calloc((size_t)n, sizeof *pfd);
    int *which = calloc((size_t)n, sizeof *which);
    if (!pfd || !which) {
        px_show_error("registry/p2p: the listener has no memory for its poll set; lookups of "
                      "this process's names will time out");
        free(pfd);
        free(which);
        return NULL;
    }
    for (;;) {
        double now = px_registry_p2p_now();
        int k = 0, wait_ms = -1;
        pfd[k].fd = l->wake[0], pfd[k].events = POLLIN, which[k++] = -1;
        if (now >= l->accept_paused_until)
            pfd[k].fd = l->fd, pfd[k].events = POLLIN, which[k++] = -2;
        else
            wait_ms = 100;
        for (int i = 0; i < l->max_clients; ++i) {
            p2p_conn_t *c = &l->conns[i];
            if (c->fd < 0)
                continue;
            if (now >= c->deadline && c->draining) {
                conn_close(l, c); /* answered; the client just did not close */
                continue;
            }
            if (now >= c->deadline) {
                PX_OUTPUT_VERBOSE(
                    1, l->output, "listener: dropped %s: %s within %.3g s (registry_timeout)",
                    c->from,
                    c->out ? "it did not take its answer" : "it did not send a whole request",
                    l->timeout);
                count(l, &l->stats.dropped_deadline);
                conn_close(l, c);
                continue;
            }
            int ms = (int)((c->deadline - now) * 1000) + 1;
            if (wait_ms < 0 || ms < wait_ms)
                wait_ms = ms;
            pfd[k].fd = c->fd;
            pfd[k].events = c->out && !c->draining ? POLLOUT : POLLIN;
            which[k++] = i;
        }
        int r = poll(pfd, (nfds_t)k, wait_ms);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        now = px_registry_p2p_now();
        if (pfd[0].revents) {
            char b;
            if (read(l->wake[0], &b, 1) >= 0 || errno != EAGAIN)
                break; /* told to stop */
        }
        for (int j = 1; j < k; ++j) {
            if (!pfd[j].revents)
                continue;
            if (which[j] == -2) {
                accept_all(l, now);
                continue;
            }
            p2p_conn_t *c = &l->conns[which[j]];
            if (c->fd != pfd[j].fd)
                continue; /* replaced by accept_all meanwhile */
            if (c->draining) {
                conn_drain(l, c);
                continue;
            }
            if (!c->out)
                conn_read(l, c);
            if (c->fd >= 0 && c->out)
                conn_write(l, c);
        }
    }
    free(pfd);
    free(which);
    return NULL;
}

int px_registry_p2p_listen(px_registry_p2p_table_t *table, const px_registry_p2p_listen_opts_t *o,
                           px_registry_p2p_listener_t **lp, int *port_out, char *why, size_t cap)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    if (inet_pton(AF_INET, o->address, &sa.sin_addr) != 1) {
        snprintf(why, cap,
                 "registry_p2p_address \"%s\" is not a numeric IPv4 address (127.0.0.1, an "
                 "interface's address, or 0.0.0.0)",
                 o->address);
        return PX_ERR_BAD_PARAM;
    }
    px_registry_p2p_listener_t *l = calloc(1, sizeof *l);
    if (!l)
        return PX_ERR_OUT_OF_RESOURCE;
    l->fd = l->wake[0] = l->wake[1] = -1;
    l->table = table;
    l->ns = strdup(o->ns);
    l->max_clients = o->max_clients > 0 ? o->max_clients : 1;
    l->timeout = o->timeout > 0 ? o->timeout : 1;
    l->list_max = o->list_max;
    l->output = o->output;
    l->conns = calloc((size_t)l->max_clients, sizeof *l->conns);
    pthread_mutex_init(&l->stats_lock, NULL);
    int rc = PX_ERR_OUT_OF_RESOURCE;
    if (!l->ns || !l->conns)
        goto fail;
    for (int i = 0; i < l->max_clients; ++i)
        l->conns[i].fd = -1;
    l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (l->fd >= 0)
        setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(l->fd, 512) != 0) {
        snprintf(why, cap, "cannot listen on %s:%d (registry_p2p_address, registry_p2p_port): %s",
                 o->address, o->port, strerror(errno));
        rc = PX_ERR_NOT_AVAILABLE;
        goto fail;
    }
    /* Wake the thread when a connection's request has come, not when the
     * connection is made (an asker sends its request with it): one wake per
     * lookup rather than two. A connection that sends nothing is handed over
     * by the kernel a second or so later and then bound by the timeout. */
    int defer = 1;
    setsockopt(l->fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
    socklen_t sl = sizeof sa;
    getsockname(l->fd, (struct sockaddr *)&sa, &sl);
    *port_out = ntohs(sa.sin_port);
    if (pipe2(l->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(why, cap, "registry/p2p listener: pipe: %s", strerror(errno));
        goto fail;
    }
    /* the thread takes no signal: they stay the application's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&l->thread, NULL, listen_thread, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        snprintf(why, cap, "registry/p2p listener: no thread: %s", strerror(e));
        goto fail;
    }
    l->started = true;
    *lp = l;
    return PX_SUCCESS;
fail:
    px_registry_p2p_listen_stop(l);
    return rc;
}

void px_registry_p2p_listen_stop(px_registry_p2p_listener_t *l)
{
    if (!l)
        return;
    if (l->started) {
        char b = 1;
        while (write(l->wake[1], &b, 1) < 0 && errno == EINTR)
            ;
        pthread_join(l->thread, NULL);
    }
    for (int i = 0; l->conns && i < l->max_clients; ++i)
        conn_close(l, &l->conns[i]);
    if (l->fd >= 0)
        close(l->fd);
    if (l->wake[0] >= 0)
        close(l->wake[0]), close(l->wake[1]);
    pthread_mutex_destroy(&l->stats_lock);
    free(l->conns);
    free(l->ns);
    free(l);
}
