/*
 * pml_dyn.c: dynamic peers (issue 23, docs/peers.md): processes that were not
 * launched together connect after px_init (px_contact, px_connect,
 * px_accept) and talk through messaging like ranks, by a peer id; they leave
 * (px_disconnect, or their connection closes) without ending anything else.
 *
 * The pieces: the connection exchange (runtime/peer: listener, contact,
 * authenticated handshake, one payload each way), the transports' dynamic
 * peers (px_btl_base_dyn_*: the offer travels in the connector's payload,
 * the reply in the listener's ACCEPT, made per connection by dyn_reply) and
 * the process table's dynamic entries (runtime/proc: px_rt_dyn_*, ids from
 * PX_RT_DYN_BASE, never reused). A progress hook (registered while a
 * listener is open or a peer is connected) advances the listener's
 * handshakes and watches each peer's connection: its closing is how a peer
 * that left or died is noticed on every transport. A watcher thread sleeps in
 * epoll_wait() on the listener's descriptor (edge-triggered) and raises a
 * flag when a connector knocks or a handshake message arrives; the next
 * progress pass serves it,
 * so a handshake step costs one pass rather than the hook's 1 ms timer,
 * without a system call on the messaging fast path. The thread never touches
 * the listener itself.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress_internal.h"
#include "runtime/peer/peer.h"
#include "runtime/pml/pml_internal.h"

static px_peer_listener_t *listener;
static const char *my_contact;
/* Peers accepted by the listener, not yet handed out by px_accept (ids). */
static int *accq;
static int naccq, accq_cap;
static bool hooked;
static double next_poll;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int dyn_progress(void);

static void hook_update(void)
{
    bool want = listener || px_rt.ndyn > 0;
    if (want && !hooked)
        hooked = PX_SUCCESS == px_rt_progress_register(dyn_progress);
    else if (!want && hooked) {
        px_rt_progress_unregister(dyn_progress);
        hooked = false;
    }
}

static void dyn_name(px_rt_dyn_t *d, const px_peer_ident_t *id, const char *contact)
{
    if (contact)
        snprintf(d->name, sizeof d->name, "peer %d (host %s, pid %u, contact %s)", d->id, id->host,
                 (unsigned)id->pid, contact);
    else
        snprintf(d->name, sizeof d->name, "peer %d (host %s, pid %u, from %s)", d->id, id->host,
                 (unsigned)id->pid, id->address);
}

/* The idle policy's "auto" yields when this node runs more processes than it
 * has cores: the job's ranks here, and the dynamic peers connected from this
 * host. A server and its clients started apart are each a job of one, and
 * would otherwise all spin when they outnumber the cores (each wait holding
 * a core the process that would answer it needs). The peer's host name is
 * what it said in the handshake: wrong, it changes only when this process
 * yields. */
static int dyn_local;
static void dyn_locality(px_rt_dyn_t *d, const px_peer_ident_t *id)
{
    d->local = px_peer_ident_same_host(id);
    if (d->local)
        px_progress_idle_local(px_rt.nlocal + ++dyn_local, 0);
}

/* A new entry for a peer whose transports are set up in dp. */
static px_rt_dyn_t *dyn_make(px_btl_base_dyn_peer_t *dp)
{
    px_rt_dyn_t *d = px_rt_dyn_add();
    if (NULL == d)
        return NULL;
    d->dp = dp;
    px_pml_peer_setup(&d->peer, dp->peer);
    d->peer.wire_src = PX_BTL_RANK_DYNAMIC;
    return d;
}

/* How many operations of messaging name peer `id`. */
static size_t ops_with(int id)
{
    size_t n = 0;
    px_request_t *r;
    ml_lock(px_pml_fine);
    PX_LIST_FOREACH(r, &px_rt.posted, px_request_t)
    {
        n += r->peer == id;
    }
    ml_unlock(px_pml_fine);
    PX_LIST_FOREACH(r, &px_rt.active, px_request_t)
    {
        n += px_pml_req_of_rank(r, id) && !r->released;
    }
    for (px_list_item_t *it = px_list_get_first(&px_rt.pending);
         it != px_list_get_end(&px_rt.pending); it = it->px_list_next)
        n += px_pml_req_of_rank(px_container_of(it, px_request_t, pend_link), id);
    return n;
}

/* Release everything of `d`: its pending operations fail (named, when there
 * are any), its transports' endpoints go, its connection closes. */
static void dyn_destroy(px_rt_dyn_t *d, const char *why)
{
    /* Fine mode: messages of this peer that a progress without the API lock
     * queued (px_rt_defer_push) keep its endpoint's address; run them while
     * the endpoint is still this peer's, so none is later taken for a new
     * peer's endpoint made at the same address. (Called with the API lock.) */
    px_rt_defer_run();
    px_rt_peer_t *p = &d->peer;
    if (p->btl && (!p->failed || p->failed_here))
        px_rt_fail_peer_gone(d->id, PX_ERR_PEER_FAILED, why, 0 == ops_with(d->id));
    if (d->dp)
        px_btl_base_dyn_remove(d->dp);
    d->dp = NULL;
    p->btl = NULL;
    px_list_item_t *it;
    ml_lock(px_pml_fine);
    while ((it = px_list_remove_first(&p->ooo)))
        ux_free((px_rt_ux_t *)it);
    ml_unlock(px_pml_fine);
    if (d->conn)
        px_peer_conn_close(d->conn);
    d->conn = NULL;
    if (d->local) {
        d->local = false;
        px_progress_idle_local(px_rt.nlocal + --dyn_local, 0);
    }
    for (int i = 0; i < naccq; ++i)
        if (accq[i] == d->id) {
            memmove(accq + i, accq + i + 1, (size_t)(naccq - i - 1) * sizeof *accq);
            naccq--;
            break;
        }
    PX_OUTPUT_VERBOSE(10, px_peer_output(), "released %s: %s; %d dynamic peer(s) left", d->name,
                      why, px_rt.ndyn - 1);
    px_rt_dyn_free(d);
    hook_update();
}

/* ------------------------------------------------------------------ the accepting side */

/* The listener's reply to one authenticated connector: add it through the
 * transports (its payload is their offer) and answer with their reply. The
 * entry exists from here on, so its first messages find it. */
static int dyn_reply(void *arg, const void *payload, size_t len, const px_peer_ident_t *ident,
                     void **reply, size_t *reply_len, void **cookie)
{
    (void)arg;
    px_btl_base_dyn_peer_t *dp = NULL;
    char *err = NULL;
    *reply = NULL;
    *reply_len = 0;
    *cookie = NULL;
    int rc = px_btl_base_dyn_accept(px_btl_base_modules, px_btl_base_num_modules, payload, len, &dp,
                                    reply, reply_len, &err);
    if (rc != PX_SUCCESS) {
        px_show_error("px_accept: the process at %s (host %s, pid %u) connected with the secret, "
                      "but no transport of this process reaches it: %s",
                      ident->address, ident->host, (unsigned)ident->pid,
                      err ? err : px_strerror(rc));
        free(err);
        /* The declining reply goes back so that it learns why; its
         * connection is closed when it is delivered (no cookie). */
        return *reply ? PX_SUCCESS : rc;
    }
    free(err);
    px_rt_dyn_t *d = dyn_make(dp);
    if (NULL == d) {
        px_btl_base_dyn_remove(dp);
        free(*reply);
        *reply = NULL;
        return PX_ERR_OUT_OF_RESOURCE;
    }
    dyn_name(d, ident, NULL);
    dyn_locality(d, ident);
    *cookie = d;
    hook_update();
    return PX_SUCCESS;
}

/* Its connection was not delivered (it left mid-handshake, the listener closed). */
static void dyn_release(void *arg, void *cookie)
{
    (void)arg;
    px_rt_dyn_t *d = cookie;
    d->peer.failed = PX_ERR_PEER_FAILED; /* quietly: nobody knew it */
    d->peer.failed_here = false;
    dyn_destroy(d, "its connection closed before it was accepted");
}

static void delivered(px_peer_conn_t *c)
{
    px_rt_dyn_t *d = px_peer_conn_cookie(c);
    if (NULL == d) { /* the transports declined it; it has their reasons */
        px_peer_conn_close(c);
        return;
    }
    d->conn = c;
    PX_OUTPUT_VERBOSE(10, px_peer_output(), "accepted %s: %d dynamic peer(s)", d->name, px_rt.ndyn);
    if (naccq == accq_cap) {
        int cap = accq_cap ? 2 * accq_cap : 8;
        int *n = realloc(accq, (size_t)cap * sizeof *n);
        if (NULL == n) {
            dyn_destroy(d, "out of memory accepting it");
            return;
        }
        accq = n;
        accq_cap = cap;
    }
    accq[naccq++] = d->id;
}

static int listener_progress(void)
{
    int n = 0;
    px_peer_conn_t *c;
    while (listener && 1 == px_peer_accept_progress(listener, &c)) {
        delivered(c);
        n++;
    }
    return n;
}

/* px_connect's wait: the listener's handshakes go on (px_peer_connect_serving). */
static void serve_listener(void *arg)
{
    (void)arg;
    listener_progress();
}

/* ------------------------------------------------------------------ leaving */

/* Has peer d's connection closed? (Nothing is sent on it after the
 * handshake: bytes a peer writes anyway are read and ignored.) */
static bool conn_closed(px_rt_dyn_t *d)
{
    int fd = px_peer_conn_fd(d->conn);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, 0) <= 0)
        return false;
    if (pfd.revents & (POLLERR | POLLNVAL))
        return true;
    char buf[256];
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    return 0 == r || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Does a message of peer `id` wait to be received (unexpected or out of order)? */
static bool ux_from(int id)
{
    px_rt_dyn_t *d = px_rt_dyn_find(id);
    px_rt_ux_t *u;
    ml_lock(px_pml_fine);
    bool found = d && !px_list_is_empty(&d->peer.ooo);
    PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
    {
        if (found)
            break;
        found = u->src == id;
    }
    ml_unlock(px_pml_fine);
    return found;
}

static int watch_conns(void)
{
    int n = 0;
    for (int i = 0; i < px_rt.ndyn; ++i) {
        px_rt_dyn_t *d = px_rt.dyn[i];
        if (NULL == d->conn || d->gone || !conn_closed(d))
            continue;
        d->gone = true;
        n++;
        /* What it sent before it left is in the transports: take it in
         * before its operations fail (a bounded number of passes). */
        for (int k = 0; k < 64 && px_progress_engine() > 0; ++k)
            ;
        px_rt_fail_peer_gone(d->id, PX_ERR_PEER_FAILED,
                             "its connection closed: it disconnected or exited",
                             0 == ops_with(d->id));
        /* Never handed out by px_accept, nothing of it to receive, no
         * operation on it: nobody can ask for it any more (a server that
         * only serves its memory never calls px_accept), so release it now
         * rather than at px_finalize: its descriptors and transports' state
         * would pile up, one per visitor. Its id stays spent; an operation
         * naming it fails with PX_ERR_PEER_FAILED, as after px_disconnect. */
        if (!d->connected && 0 == ops_with(d->id) && !ux_from(d->id)) {
            dyn_destroy(d, "it left before px_accept took it");
            i--; /* px_rt_dyn_free moved the last entry here */
        }
    }
    return n;
}

/* The hook runs on every progress pass, where a clock read was up to 30% of
 * a spinning process's time (perf, docs/measurements/peers.md). So the clock
 * is read only every `stride` passes: the stride doubles (to at most
 * DYN_STRIDE_MAX) while `stride` passes took under DYN_STRIDE_GROW s and
 * drops back to 1 when they took over DYN_STRIDE_SHRINK s or the hook found
 * work. The clock is thus read about every 0.05-0.25 ms, and the listener and
 * the connections are still served within about 1.25 ms, unless passes become
 * over 5 times slower from one window to the next (then once, later). */
#define DYN_STRIDE_MAX    4096u
#define DYN_STRIDE_GROW   0.0001
#define DYN_STRIDE_SHRINK 0.00025
static unsigned stride = 1, passes;
static double last_read;

/* ------------------------------------------------------------------ the watcher */

static pthread_t watcher;
static bool watching;
static int watch_stop = -1; /* eventfd: px_finalize asks the watcher to end */
static int watch_ep = -1;   /* the watcher's epoll: the listener's, edge-triggered, and stop */
static atomic_int knock;    /* set by the watcher, cleared by progress */

/* The listener's descriptor (an epoll set) is in watch_ep edge-triggered:
 * each new event on one of its sockets (a connection with its HELLO, an
 * AUTH) wakes the watcher once, whether or not a pass has served the
 * previous one, so the watcher needs no word back from the pass (before
 * 2026-11-28 it waited for one: a second wake of this thread per event,
 * competing for a core with the connector it answers). An event that comes
 * while a pass serves sets the flag again; the pass clears it before it
 * looks, so none is lost. */
static void *watch_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "px-peer-watch"); /* top -H, /proc, its test */
    for (;;) {
        struct epoll_event ev[2];
        int n = epoll_wait(watch_ep, ev, 2, -1);
        if (n < 0 && EINTR == errno)
            continue;
        if (n <= 0)
            break;
        bool stop = false;
        for (int k = 0; k < n; ++k)
            stop |= ev[k].data.fd == watch_stop;
        if (stop)
            break;
        atomic_store_explicit(&knock, 1, memory_order_release);
    }
    return NULL;
}

/* Start the watcher of the listener just opened. Without it (no thread or
 * descriptor to spare) the hook's timer still serves the listener. */
static void watch_start(void)
{
    watch_stop = eventfd(0, EFD_CLOEXEC);
    watch_ep = epoll_create1(EPOLL_CLOEXEC);
    int fd = px_peer_listener_fd(listener);
    struct epoll_event in = {.events = EPOLLIN | EPOLLET, .data.fd = fd};
    struct epoll_event st = {.events = EPOLLIN, .data.fd = watch_stop};
    if (watch_stop >= 0 && watch_ep >= 0 && fd >= 0 &&
        0 == epoll_ctl(watch_ep, EPOLL_CTL_ADD, fd, &in) &&
        0 == epoll_ctl(watch_ep, EPOLL_CTL_ADD, watch_stop, &st) &&
        0 == pthread_create(&watcher, NULL, watch_main, NULL)) {
        watching = true;
        return;
    }
    PX_OUTPUT_VERBOSE(1, px_rt.output,
                      "px_contact: no watcher thread for the listener (%s); handshakes are "
                      "served by the progress timer (every 1 ms)",
                      strerror(errno));
    if (watch_stop >= 0)
        close(watch_stop);
    if (watch_ep >= 0)
        close(watch_ep);
    watch_stop = watch_ep = -1;
}

static void watch_end(void)
{
    if (watching) {
        uint64_t one = 1;
        if (write(watch_stop, &one, sizeof one) == sizeof one)
            pthread_join(watcher, NULL);
        else
            pthread_detach(watcher); /* cannot happen with an eventfd */
        watching = false;
    }
    if (watch_stop >= 0)
        close(watch_stop);
    if (watch_ep >= 0)
        close(watch_ep);
    watch_stop = watch_ep = -1;
    atomic_store_explicit(&knock, 0, memory_order_relaxed);
}

static int dyn_progress(void)
{
    if (atomic_load_explicit(&knock, memory_order_relaxed)) {
        atomic_store_explicit(&knock, 0, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        int n = listener_progress();
        if (n > 0)
            stride = 1;
        return n;
    }
    if (++passes < stride)
        return 0;
    passes = 0;
    double t = now();
    double took = t - last_read;
    last_read = t;
    if (took > DYN_STRIDE_SHRINK)
        stride = 1;
    else if (took < DYN_STRIDE_GROW && stride < DYN_STRIDE_MAX)
        stride *= 2;
    if (t < next_poll)
        return 0;
    next_poll = t + 0.001;
    int n = listener_progress() + watch_conns();
    if (n > 0)
        stride = 1;
    return n;
}

/* ------------------------------------------------------------------ the API */

static int rt_contact(const char **contact)
{
    if (!px_rt.initialized) {
        px_show_error("px_contact: called before px_init (or after px_finalize)");
        return PX_ERR_NOT_INITIALIZED;
    }
    if (NULL == contact)
        return PX_ERR_BAD_PARAM;
    if (NULL == listener) {
        int rc = px_peer_listen(NULL, 0, &listener, &my_contact);
        if (rc != PX_SUCCESS) {
            px_show_error("px_contact: %s", px_peer_last_error());
            listener = NULL;
            return rc;
        }
        px_peer_listener_set_reply(listener, dyn_reply, dyn_release, NULL);
        watch_start();
        hook_update();
    }
    *contact = my_contact;
    return PX_SUCCESS;
}

static int rt_accept(double timeout, int *peer)
{
    if (!px_rt.initialized) {
        px_show_error("px_accept: called before px_init (or after px_finalize)");
        return PX_ERR_NOT_INITIALIZED;
    }
    if (NULL == peer || timeout != timeout) {
        px_show_error("px_accept: %s", NULL == peer ? "peer is NULL" : "timeout is not a number");
        return PX_ERR_BAD_PARAM;
    }
    if (NULL == listener) {
        px_show_error("px_accept: this process has no listener: call px_contact first (it opens "
                      "one and gives the contact string to hand to the connecting process)");
        return PX_ERR_BAD_PARAM;
    }
    double end = now() + (timeout > 0 ? timeout : 0);
    for (;;) {
        listener_progress();
        if (naccq > 0) {
            *peer = accq[0];
            memmove(accq, accq + 1, (size_t)(naccq - 1) * sizeof *accq);
            naccq--;
            px_rt_dyn_t *d = px_rt_dyn_find(*peer);
            if (d)
                d->connected = true;
            return PX_SUCCESS;
        }
        if (now() >= end)
            return PX_ERR_TIMEOUT;
        if (0 == pml_progress()) {
            /* Idle: wait a moment for socket work on the listener. */
            struct pollfd pfd = {.fd = px_peer_listener_fd(listener), .events = POLLIN};
            (void)poll(&pfd, 1, 1);
        }
        if (px_rt_api_shared)
            px_rt_api_pause();
    }
}

static int rt_connect(const char *contact, int *peer)
{
    if (!px_rt.initialized) {
        px_show_error("px_connect: called before px_init (or after px_finalize)");
        return PX_ERR_NOT_INITIALIZED;
    }
    if (NULL == contact || NULL == peer) {
        px_show_error("px_connect: %s is NULL", NULL == contact ? "contact" : "peer");
        return PX_ERR_BAD_PARAM;
    }
    px_btl_base_dyn_peer_t *dp = NULL;
    void *offer = NULL;
    size_t olen = 0;
    char *err = NULL;
    int rc = px_btl_base_dyn_offer(px_btl_base_modules, px_btl_base_num_modules, &dp, &offer, &olen,
                                   &err);
    if (rc != PX_SUCCESS) {
        px_show_error("px_connect %s: no transport of this process can add a peer: %s", contact,
                      err ? err : px_strerror(rc));
        free(err);
        return rc;
    }
    px_peer_conn_t *conn = NULL;
    /* While it waits, this process's own listener (if it has one) keeps
     * accepting: two processes connecting to each other at once both
     * finish. Without one, the wait is a plain poll. */
    rc = px_peer_connect_serving(contact, offer, olen, 0, listener ? serve_listener : NULL, NULL,
                                 &conn);
    free(offer);
    if (rc != PX_SUCCESS) {
        px_show_error("px_connect: %s", px_peer_last_error());
        px_btl_base_dyn_remove(dp);
        return rc;
    }
    size_t rlen = 0;
    const void *reply = px_peer_conn_payload(conn, &rlen);
    const px_peer_ident_t *id = px_peer_conn_ident(conn);
    rc = px_btl_base_dyn_complete(dp, reply, rlen, &err);
    if (rc != PX_SUCCESS) {
        px_show_error("px_connect %s (host %s, pid %u): no transport reaches it: %s", contact,
                      id->host, (unsigned)id->pid, err ? err : px_strerror(rc));
        free(err);
        px_btl_base_dyn_remove(dp);
        px_peer_conn_close(conn);
        return rc;
    }
    free(err);
    px_rt_dyn_t *d = dyn_make(dp);
    if (NULL == d) {
        px_btl_base_dyn_remove(dp);
        px_peer_conn_close(conn);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    d->conn = conn;
    d->connected = true;
    dyn_name(d, id, contact);
    dyn_locality(d, id);
    hook_update();
    PX_OUTPUT_VERBOSE(10, px_peer_output(), "connected %s: %d dynamic peer(s)", d->name,
                      px_rt.ndyn);
    *peer = d->id;
    return PX_SUCCESS;
}

static int rt_disconnect(int peer)
{
    if (!px_rt.initialized) {
        px_show_error("px_disconnect: called before px_init (or after px_finalize)");
        return PX_ERR_NOT_INITIALIZED;
    }
    px_rt_dyn_t *d = peer >= PX_RT_DYN_BASE ? px_rt_dyn_find(peer) : NULL;
    if (NULL == d || !d->connected) {
        px_show_error("px_disconnect: %d is not a connected peer (an id px_connect or px_accept "
                      "gave and no px_disconnect released yet)",
                      peer);
        return PX_ERR_BAD_PARAM;
    }
    dyn_destroy(d, "disconnected by this process (px_disconnect)");
    return PX_SUCCESS;
}

int px_contact(const char **contact)
{
    PX_RT_API_CALL(rt_contact(contact));
}
int px_accept(double timeout, int *peer)
{
    PX_RT_API_CALL(rt_accept(timeout, peer));
}
int px_connect(const char *contact, int *peer)
{
    PX_RT_API_CALL(rt_connect(contact, peer));
}
int px_disconnect(int peer)
{
    PX_RT_API_CALL(rt_disconnect(peer));
}

void px_pml_dyn_finalize(void)
{
    while (px_rt.ndyn > 0) {
        px_rt_dyn_t *d = px_rt.dyn[px_rt.ndyn - 1];
        d->peer.failed = d->peer.failed ? d->peer.failed : PX_ERR_PEER_FAILED;
        d->peer.failed_here = false;
        dyn_destroy(d, "px_finalize");
    }
    watch_end(); /* before the descriptor it polls is closed */
    if (listener)
        px_peer_listener_close(listener); /* releases what it had not delivered */
    listener = NULL;
    my_contact = NULL;
    free(accq);
    accq = NULL;
    naccq = accq_cap = 0;
    dyn_local = 0;
    hook_update();
}
