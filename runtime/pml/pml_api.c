/*
 * pml_api.c: the application's messaging calls (runtime/plexus.h: px_send,
 * px_recv, px_isend, px_irecv, px_wait, px_test, px_waitall, px_progress):
 * argument checks, the immediate paths that need no request, the fast path
 * of a wait, and the API lock around each (PX_RT_API_CALL). The protocols
 * are in pml.c and pml_rndv.c, the slow path of a wait in pml_wait.c.
 *
 * Each call has three paths: no lock (every level below MULTIPLE: one test
 * of px_rt_api_shared, then the code as it always was), the API lock around
 * the whole call (MULTIPLE with runtime_thread_locks=api), and fine mode
 * (MULTIPLE with runtime_thread_locks=fine, docs/threads.md): the matching
 * lock around the queues, the transports' own locks, the API lock only for a
 * send to this process itself (its transport runs the receive callback inside
 * the send), a dynamic peer, a rendezvous or a retry, and for progress, which
 * a waiter only tries.
 */
#include <sched.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/pml/pml_internal.h"

static inline int check_peer(int rank, bool any_ok)
{
    if (PX_LIKELY(rank >= 0 && rank < px_rt.size))
        return PX_SUCCESS;
    if (any_ok && PX_ANY_SOURCE == rank)
        return PX_SUCCESS;
    /* A dynamic peer's id, connected now or earlier (px_connect, px_accept):
     * one disconnected since fails its operations with PX_ERR_PEER_FAILED. */
    if (rank >= PX_RT_DYN_BASE && rank < px_rt.dyn_next)
        return PX_SUCCESS;
    return PX_ERR_BAD_PARAM;
}

static PX_COLD int arg_error(const char *fn, int rank, int tag, bool recv)
{
    if (!px_rt.initialized) {
        px_show_error("%s: called before px_init (or after px_finalize)", fn);
        return PX_ERR_NOT_INITIALIZED;
    }
    if (check_peer(rank, recv) != PX_SUCCESS)
        px_show_error("%s: rank %d is not in the job (valid: 0..%d%s, or a peer id px_connect "
                      "or px_accept gave)",
                      fn, rank, px_rt.size - 1, recv ? " or PX_ANY_SOURCE" : "");
    else
        px_show_error("%s: tag %d is invalid (valid: >= 0%s)", fn, tag,
                      recv ? " or PX_ANY_TAG" : "");
    return PX_ERR_BAD_PARAM;
}

#define ARGS_OK(rank, tag, recv)                                                                   \
    (PX_LIKELY(px_rt.initialized) && PX_LIKELY(PX_SUCCESS == check_peer((rank), (recv))) &&        \
     PX_LIKELY((tag) >= 0 || ((recv) && PX_ANY_TAG == (tag))))

static inline void status_set(px_status_t *s, const px_request_t *r)
{
    if (s)
        *s = r->status;
}

static int rt_progress_api(void)
{
    if (!px_rt.initialized)
        return 0;
    return pml_progress();
}

static inline int api_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    if (!ARGS_OK(dest, tag, false) || NULL == request)
        return request ? arg_error("px_isend", dest, tag, false) : PX_ERR_BAD_PARAM;
    return px_pml_isend_st(buf, len, dest, tag, request);
}

static inline int api_irecv(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    if (!ARGS_OK(source, tag, true) || NULL == request)
        return request ? arg_error("px_irecv", source, tag, true) : PX_ERR_BAD_PARAM;
    return px_pml_irecv_st(buf, len, source, tag, request);
}

static inline int rt_wait(px_request_t **request, px_status_t *status, const char *who);

static inline int api_send(const void *buf, size_t len, int dest, int tag)
{
    if (!ARGS_OK(dest, tag, false))
        return arg_error("px_send", dest, tag, false);
    /* Immediate path: no request, nothing allocated. */
    px_rt_peer_t *peer = px_rt_peer_find(dest);
    if (PX_LIKELY(peer != NULL) && PX_LIKELY(PX_SUCCESS == pml_send_now(peer, tag, buf, len)))
        return PX_SUCCESS;
    px_request_t *r;
    int rc = px_pml_isend_st(buf, len, dest, tag, &r);
    if (rc != PX_SUCCESS)
        return rc;
    return rt_wait(&r, NULL, "px_send");
}

static inline int api_recv(void *buf, size_t len, int source, int tag, px_status_t *status)
{
    if (!ARGS_OK(source, tag, true))
        return arg_error("px_recv", source, tag, true);
    if (PX_LIKELY(!px_list_is_empty(&px_rt.unexpected))) {
        /* Already here and eager: copy out, no request. */
        px_rt_ux_t *u;
        PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
        {
            if (!tag_matches(source, tag, u->src, u->tag))
                continue;
            if (PX_PML_KIND_EAGER != u->kind)
                break;
            px_list_remove_item(&px_rt.unexpected, &u->super.super);
            size_t n = u->len <= len ? u->len : len;
            if (n) /* px_recv(NULL, 0, ...) is valid: memcpy's NULL is not */
                memcpy(buf, u->data, n);
            int rc = u->len <= len ? PX_SUCCESS : PX_ERR_TRUNCATE;
            if (status) {
                status->source = u->src;
                status->tag = u->tag;
                status->length = n;
                status->error = rc;
            }
            ux_free(u);
            return rc;
        }
    }
    px_request_t *r;
    int rc = px_pml_irecv_st(buf, len, source, tag, &r);
    if (rc != PX_SUCCESS)
        return rc;
    return rt_wait(&r, status, "px_recv");
}

static inline int rt_wait(px_request_t **request, px_status_t *status, const char *who)
{
    if (NULL == request)
        return PX_ERR_BAD_PARAM;
    px_request_t *r = *request;
    if (NULL == r) { /* a freed request: empty status */
        if (status)
            *status = (px_status_t){PX_ANY_SOURCE, PX_ANY_TAG, 0, PX_SUCCESS};
        return PX_SUCCESS;
    }
    if (PX_UNLIKELY(!req_done(r))) {
        px_status_t st = r->status;
        int rc = px_pml_wait_slow(r, who);
        if (rc != PX_SUCCESS) {
            /* r is gone or belongs to the transport now (req_give_up). */
            st.error = rc;
            if (status)
                *status = st;
            *request = NULL;
            return rc;
        }
    }
    status_set(status, r);
    int rc = r->status.error;
    if (PX_UNLIKELY(PX_PML_REQ_GENERIC == r->type))
        r->ops->free(r); /* its owner's state (a collective's schedule) */
    /* px_pml_fine, not false: with runtime_thread_locks=auto the process may
     * have turned to fine mode while this wait let the API lock go. */
    req_release_mt(r, px_pml_fine);
    *request = NULL;
    return rc;
}

/* ------------------------------------------------------------------ fine mode */

/* A wait in fine mode: the request's completion is an atomic flag, the wait
 * tries the API lock for progress (px_pml_wait_slow_fine), a collective's
 * request is freed under the API lock (its owner's state is), and the
 * release takes the matching lock. */
static int fine_wait(px_request_t **request, px_status_t *status, const char *who)
{
    if (NULL == request)
        return PX_ERR_BAD_PARAM;
    px_request_t *r = *request;
    if (NULL == r) {
        if (status)
            *status = (px_status_t){PX_ANY_SOURCE, PX_ANY_TAG, 0, PX_SUCCESS};
        return PX_SUCCESS;
    }
    if (!req_done(r)) {
        /* Not r->status: the thread that matches it writes it meanwhile. */
        px_status_t st = {r->peer, r->tag, PX_PML_REQ_SEND == r->type ? r->len : 0, PX_SUCCESS};
        if (PX_PML_REQ_GENERIC == r->type)
            st = (px_status_t){PX_ANY_SOURCE, PX_ANY_TAG, 0, PX_SUCCESS};
        int rc = px_pml_wait_slow_fine(r, who);
        if (rc != PX_SUCCESS) {
            st.error = rc;
            if (status)
                *status = st;
            *request = NULL;
            return rc;
        }
    }
    status_set(status, r);
    int rc = r->status.error;
    *request = NULL;
    if (PX_UNLIKELY(PX_PML_REQ_GENERIC == r->type)) {
        bool took = api_enter(true);
        r->ops->free(r);
        req_release_mt(r, true);
        api_leave(took);
        return rc;
    }
    req_release_mt(r, true);
    return rc;
}

/* A rank other than this process: the paths without the API lock. */
static inline bool fine_peer(int rank)
{
    return (unsigned)rank < (unsigned)px_rt.size && rank != px_rt.rank;
}

/* A source the matching lock alone covers (any, or a rank; a dynamic peer's
 * id is looked up in the API lock's table). */
static inline bool fine_source(int rank)
{
    return PX_ANY_SOURCE == rank || (unsigned)rank < (unsigned)px_rt.size;
}

#define FINE_LOCKED(call)                                                                          \
    do {                                                                                           \
        bool px_took_ = px_rt_api_lock();                                                          \
        int px_rc_ = (call);                                                                       \
        px_rt_api_unlock(px_took_);                                                                \
        return px_rc_;                                                                             \
    } while (0)

static int isend_fine(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    if (!ARGS_OK(dest, tag, false) || NULL == request)
        return request ? arg_error("px_isend", dest, tag, false) : PX_ERR_BAD_PARAM;
    return px_pml_isend_fine(buf, len, dest, tag, request);
}

static int irecv_fine(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    if (!ARGS_OK(source, tag, true) || NULL == request)
        return request ? arg_error("px_irecv", source, tag, true) : PX_ERR_BAD_PARAM;
    return px_pml_irecv_fine(buf, len, source, tag, request);
}

static int send_fine(const void *buf, size_t len, int dest, int tag)
{
    if (!ARGS_OK(dest, tag, false))
        return arg_error("px_send", dest, tag, false);
    px_rt_peer_t *peer = px_rt_peer_find(dest);
    px_request_t *r;
    int rc;
    if (PX_LIKELY(peer != NULL) &&
        PX_LIKELY(len < __atomic_load_n(&peer->tiny_below, __ATOMIC_RELAXED))) {
        /* Immediate path: the number first (another thread may send to the
         * same peer meanwhile: the receiver's out-of-order list puts them
         * back in order), then the transport under its own lock. */
        uint32_t seq = __atomic_fetch_add(&peer->send_seq, 1, __ATOMIC_RELAXED);
        if (PX_LIKELY(PX_SUCCESS == pml_sendi_match(peer, tag, seq, buf, len)))
            return PX_SUCCESS;
        rc = px_pml_isend_fine_seq(buf, len, dest, tag, seq, true, &r);
    } else {
        rc = px_pml_isend_fine(buf, len, dest, tag, &r);
    }
    if (rc != PX_SUCCESS)
        return rc;
    return fine_wait(&r, NULL, "px_send");
}

static int recv_fine(void *buf, size_t len, int source, int tag, px_status_t *status)
{
    if (!ARGS_OK(source, tag, true))
        return arg_error("px_recv", source, tag, true);
    ml_lock(true);
    px_rt_ux_t *u;
    PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
    {
        if (!tag_matches(source, tag, u->src, u->tag))
            continue;
        if (PX_PML_KIND_EAGER != u->kind)
            break;
        px_list_remove_item(&px_rt.unexpected, &u->super.super);
        size_t n = u->len <= len ? u->len : len;
        if (n)
            memcpy(buf, u->data, n);
        int rc = u->len <= len ? PX_SUCCESS : PX_ERR_TRUNCATE;
        if (status) {
            status->source = u->src;
            status->tag = u->tag;
            status->length = n;
            status->error = rc;
        }
        ux_free(u);
        ml_unlock(true);
        return rc;
    }
    px_request_t *r;
    int rc;
    if (PX_LIKELY((px_list_item_t *)u == px_list_get_end(&px_rt.unexpected))) {
        /* Nothing matches under this hold: post the receive in it. */
        rc = px_pml_irecv_fine_nomatch(buf, len, source, tag, &r);
    } else {
        /* A rendezvous header matches: started outside the matching lock. */
        ml_unlock(true);
        rc = px_pml_irecv_fine(buf, len, source, tag, &r);
    }
    if (rc != PX_SUCCESS)
        return rc;
    return fine_wait(&r, status, "px_recv");
}

static int test_fine(px_request_t **request, int *flag, px_status_t *status)
{
    if (NULL == request || NULL == flag)
        return PX_ERR_BAD_PARAM;
    px_request_t *r = *request;
    if (NULL == r) {
        *flag = 1;
        if (status)
            *status = (px_status_t){PX_ANY_SOURCE, PX_ANY_TAG, 0, PX_SUCCESS};
        return PX_SUCCESS;
    }
    if (!req_done(r))
        px_pml_progress_fine(NULL);
    if (!req_done(r)) {
        *flag = 0;
        return PX_SUCCESS;
    }
    *flag = 1;
    return fine_wait(request, status, "px_wait");
}

static int waitall_fine(size_t count, px_request_t **requests, px_status_t *statuses)
{
    if (count && NULL == requests)
        return PX_ERR_BAD_PARAM;
    int first = PX_SUCCESS;
    for (size_t i = 0; i < count; ++i) {
        int rc = fine_wait(&requests[i], statuses ? &statuses[i] : NULL, "px_wait");
        if (rc != PX_SUCCESS && PX_SUCCESS == first)
            first = rc;
    }
    return first;
}

/* ------------------------------------------------------------------ the API */

/* Is the process in fine mode? Set once (px_init_thread, or with
 * runtime_thread_locks=auto when a second thread calls: a release store after
 * the transports' locks are in place), never cleared while threads call. */
static inline bool fine_now(void)
{
    return __atomic_load_n(&px_pml_fine, __ATOMIC_ACQUIRE);
}

/* A point-to-point entry point: `api` (an int expression) with no lock below
 * MULTIPLE, under the API lock at MULTIPLE outside fine mode; else the code
 * after it (fine mode) runs. With runtime_thread_locks=auto the thread that
 * takes the API lock's mutex may be the second thread, whose taking switches
 * the process to fine mode (proc_lock.c): a caller that decided on the API
 * lock's path before then runs `fine` (the fine-mode call, which may run under
 * the API lock) instead, as every later call does. */
#define P2P_CALL(api, fine)                                                                        \
    do {                                                                                           \
        if (PX_LIKELY(!px_rt_api_shared))                                                          \
            return (api);                                                                          \
        if (PX_LIKELY(!fine_now())) {                                                              \
            if (PX_LIKELY(px_rt_bias_enter())) {                                                   \
                int px_rc_ = (api);                                                                \
                px_rt_bias_leave();                                                                \
                return px_rc_;                                                                     \
            }                                                                                      \
            bool px_took_ = px_rt_api_lock();                                                      \
            int px_rc_ = PX_UNLIKELY(fine_now()) ? (fine) : (api);                                 \
            px_rt_api_unlock(px_took_);                                                            \
            return px_rc_;                                                                         \
        }                                                                                          \
    } while (0)

int px_pml_wait(px_request_t **request, px_status_t *status, const char *who)
{
    if (PX_UNLIKELY(px_pml_fine))
        return fine_wait(request, status, who);
    return rt_wait(request, status, who);
}

int px_progress(void)
{
    P2P_CALL(rt_progress_api(), px_rt.initialized ? px_pml_progress_fine(NULL) : 0);
    return px_rt.initialized ? px_pml_progress_fine(NULL) : 0;
}

int px_wait(px_request_t **request, px_status_t *status)
{
    P2P_CALL(rt_wait(request, status, "px_wait"), fine_wait(request, status, "px_wait"));
    return fine_wait(request, status, "px_wait");
}

static inline int api_test(px_request_t **request, int *flag, px_status_t *status)
{
    if (NULL == request || NULL == flag)
        return PX_ERR_BAD_PARAM;
    px_request_t *r = *request;
    if (NULL == r) {
        *flag = 1;
        if (status)
            *status = (px_status_t){PX_ANY_SOURCE, PX_ANY_TAG, 0, PX_SUCCESS};
        return PX_SUCCESS;
    }
    if (!req_done(r))
        pml_progress();
    if (!req_done(r)) {
        *flag = 0;
        return PX_SUCCESS;
    }
    *flag = 1;
    return px_wait(request, status);
}

static inline int api_waitall(size_t count, px_request_t **requests, px_status_t *statuses)
{
    if (count && NULL == requests)
        return PX_ERR_BAD_PARAM;
    int first = PX_SUCCESS;
    for (size_t i = 0; i < count; ++i) {
        /* The caller's lock (if any) is held: each wait as px_wait's would
         * run inside it, without entering it again per request (with
         * runtime_thread_locks=auto the process may turn to fine mode while
         * a wait lets the API lock go: px_pml_wait then waits as fine mode
         * does under the API lock). */
        int rc = px_pml_wait(&requests[i], statuses ? &statuses[i] : NULL, "px_wait");
        if (rc != PX_SUCCESS && PX_SUCCESS == first)
            first = rc;
    }
    return first;
}

int px_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    P2P_CALL(api_isend(buf, len, dest, tag, request), isend_fine(buf, len, dest, tag, request));
    if (PX_LIKELY(fine_peer(dest)))
        return isend_fine(buf, len, dest, tag, request);
    FINE_LOCKED(isend_fine(buf, len, dest, tag, request));
}

int px_irecv(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    P2P_CALL(api_irecv(buf, len, source, tag, request), irecv_fine(buf, len, source, tag, request));
    if (PX_LIKELY(fine_source(source)))
        return irecv_fine(buf, len, source, tag, request);
    FINE_LOCKED(irecv_fine(buf, len, source, tag, request));
}

int px_send(const void *buf, size_t len, int dest, int tag)
{
    P2P_CALL(api_send(buf, len, dest, tag), send_fine(buf, len, dest, tag));
    if (PX_LIKELY(fine_peer(dest)))
        return send_fine(buf, len, dest, tag);
    FINE_LOCKED(send_fine(buf, len, dest, tag));
}

int px_recv(void *buf, size_t len, int source, int tag, px_status_t *status)
{
    P2P_CALL(api_recv(buf, len, source, tag, status), recv_fine(buf, len, source, tag, status));
    if (PX_LIKELY(fine_source(source)))
        return recv_fine(buf, len, source, tag, status);
    FINE_LOCKED(recv_fine(buf, len, source, tag, status));
}

int px_test(px_request_t **request, int *flag, px_status_t *status)
{
    P2P_CALL(api_test(request, flag, status), test_fine(request, flag, status));
    return test_fine(request, flag, status);
}

int px_waitall(size_t count, px_request_t **requests, px_status_t *statuses)
{
    P2P_CALL(api_waitall(count, requests, statuses), waitall_fine(count, requests, statuses));
    return waitall_fine(count, requests, statuses);
}
