/*
 * btl_check_more.c: px_btl_check's RDMA, flush, many-peer, finalize,
 * messaging-layer and peer-death checks.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/class/object.h"
#include "core/util/error.h"
#include "runtime/plexus.h"
#include "runtime/runtime.h"
#include "tools/px_btl_check/btl_check.h"

int bc_current_tag(void);

/* ---- put and get ---- */

typedef struct rdma_done {
    int count, status;
} rdma_done_t;
static void rdma_cb(px_btl_module_t *m, px_btl_endpoint_t *ep, void *local,
                    px_btl_registration_handle_t *lh, void *context, void *cbdata, int status)
{
    (void)m, (void)ep, (void)local, (void)lh, (void)context;
    rdma_done_t *d = cbdata;
    d->count++;
    d->status = status;
}

/* What a rank exposes: its buffer's address and the handle bytes. */
typedef struct exposed {
    uint64_t addr;
    uint32_t hsize;
    unsigned char handle[256];
} exposed_t;

static int rdma(bc_ctx_t *c, bool put)
{
    px_btl_module_t *m = c->m;
    uint32_t flag = put ? PX_BTL_FLAGS_PUT : PX_BTL_FLAGS_GET;
    const char *op = put ? "btl_put" : "btl_get";
    if (!(m->btl_flags & flag))
        return bc_skip(c, "the module does not offer %s (btl_flags 0x%x)", put ? "PUT" : "GET",
                       m->btl_flags);
    if ((put ? m->btl_put : m->btl_get) == NULL)
        return bc_fail(c, "btl_flags has %s but %s is NULL", put ? "PUT" : "GET", op);
    if ((m->btl_flags & PX_BTL_FLAGS_NEEDS_REG) && NULL == m->btl_register_mem)
        return bc_fail(c, "btl_flags has NEEDS_REG but btl_register_mem is NULL");
    if (m->btl_registration_handle_size > sizeof(((exposed_t *)0)->handle))
        return bc_fail(c,
                       "btl_registration_handle_size %zu is more than px_btl_check carries "
                       "(%zu)",
                       m->btl_registration_handle_size, sizeof(((exposed_t *)0)->handle));
    size_t limit = put ? m->btl_put_limit : m->btl_get_limit;
    size_t align = put ? m->btl_put_alignment : m->btl_get_alignment;
    size_t big = limit && limit < (1u << 20) ? limit : (1u << 20);
    size_t sizes[] = {align > 1 ? align : 1, 4096 + (align > 1 ? 0 : 3), big};
    if (align > 1)
        for (int i = 0; i < 3; i++)
            sizes[i] -= sizes[i] % align;
    unsigned char *mine = aligned_alloc(4096, big + 4096), *local = aligned_alloc(4096, big + 4096);
    int tag = bc_current_tag();
    /* Mine: the target of the predecessor's put, or the source of its get. */
    if (put)
        memset(mine, 0, big);
    else
        bc_fill(mine, big, 0, tag, c->rank, 0);
    px_btl_registration_handle_t *hmine = NULL, *hlocal = NULL;
    int rc = BC_OK;
    if (m->btl_register_mem) {
        hmine = m->btl_register_mem(m, c->ep[c->from], mine, big, 0);
        hlocal = m->btl_register_mem(m, c->ep[c->to], local, big, 0);
        if (!hmine || !hlocal)
            rc = bc_fail(c, "btl_register_mem of %zu bytes returned NULL", big);
    }
    exposed_t ex = {.addr = (uint64_t)(uintptr_t)mine,
                    .hsize = (uint32_t)(hmine ? m->btl_registration_handle_size : 0)},
              peer;
    if (hmine)
        memcpy(ex.handle, hmine, ex.hsize);
    px_request_t *rq;
    px_irecv(&peer, sizeof peer, c->to, 9000 + tag, &rq);
    px_send(&ex, sizeof ex, c->from, 9000 + tag);
    px_wait(&rq, NULL);
    if (put)
        bc_fill(local, big, 0, tag, c->rank, 0);
    for (int i = 0; i < 3 && rc == BC_OK; i++) {
        rdma_done_t d = {0, 0};
        px_btl_registration_handle_t *rh = peer.hsize ? (void *)peer.handle : NULL;
        if (!put)
            memset(local, 0, big);
        double end = bc_now() + c->timeout;
        int s;
        do {
            s = (put ? m->btl_put : m->btl_get)(m, c->ep[c->to], local, peer.addr, hlocal, rh,
                                                sizes[i], 0, PX_BTL_NO_ORDER, rdma_cb, NULL, &d);
            if (s == PX_ERR_TEMP_OUT_OF_RESOURCE)
                bc_progress(c);
        } while (s == PX_ERR_TEMP_OUT_OF_RESOURCE && bc_now() < end);
        if (s < 0) {
            rc = bc_fail(c, "%s of %zu bytes to rank %d returned %s", op, sizes[i], c->to,
                         px_strerror(s));
            break;
        }
        while (d.count == 0 && bc_now() < end)
            bc_progress(c);
        if (d.count != 1 || d.status != PX_SUCCESS)
            rc = bc_fail(c,
                         "%s of %zu bytes: its callback ran %d times (status %s) within %.0f s, "
                         "once with success expected",
                         op, sizes[i], d.count, px_strerror(d.status), c->timeout);
        else if (!put)
            for (size_t j = 0; j < sizes[i]; j++)
                if (local[j] != bc_pattern(tag, c->to, 0, j)) {
                    rc = bc_fail(c,
                                 "%s of %zu bytes from rank %d: byte %zu is 0x%02x, 0x%02x "
                                 "expected",
                                 op, sizes[i], c->to, j, local[j], bc_pattern(tag, c->to, 0, j));
                    break;
                }
    }
    /* Put: the predecessor wrote into mine; tell the target we are done. */
    int ok = rc, pok;
    px_irecv(&pok, sizeof pok, c->from, 9100 + tag, &rq);
    px_send(&ok, sizeof ok, c->to, 9100 + tag);
    px_wait(&rq, NULL);
    if (put && rc == BC_OK && pok == BC_OK)
        for (size_t j = 0; j < big; j++)
            if (mine[j] != bc_pattern(tag, c->from, 0, j)) {
                rc = bc_fail(c, "put of %zu bytes from rank %d: byte %zu is 0x%02x, 0x%02x sent",
                             big, c->from, j, mine[j], bc_pattern(tag, c->from, 0, j));
                break;
            }
    bc_barrier(c);
    if (hmine)
        m->btl_deregister_mem(m, hmine);
    if (hlocal)
        m->btl_deregister_mem(m, hlocal);
    free(mine);
    free(local);
    return rc;
}

int bc_check_put(bc_ctx_t *c)
{
    return rdma(c, true);
}
int bc_check_get(bc_ctx_t *c)
{
    return rdma(c, false);
}

/* ---- flush ---- */

int bc_check_flush(bc_ctx_t *c)
{
    px_btl_module_t *m = c->m;
    if (NULL == m->btl_flush)
        return bc_fail(c, "btl_flush is NULL (btl.h: it waits until every operation to the "
                          "endpoint is complete)");
    enum { N = 64 };
    static bc_sent_t sent[N]; /* static: see check_callbacks */
    static int ret[N];
    static size_t sizes[N];
    memset(sent, 0, sizeof sent);
    int tag = bc_current_tag();
    for (int k = 0; k < N; k++)
        sizes[k] = (k & 1) ? m->btl_eager_limit : 64;
    bc_rx_expect_sizes(sizes, N);
    bc_rx_begin(c, tag, bc_rx_sized);
    int rc = BC_OK, started = 0;
    for (int k = 0; k < N && rc == BC_OK; k++) {
        px_btl_descriptor_t *des = NULL;
        double end = bc_now() + c->timeout;
        while (!(des = m->btl_alloc(m, c->ep[c->to], PX_BTL_NO_ORDER, sizes[k],
                                    PX_BTL_DES_SEND_ALWAYS_CALLBACK)) &&
               bc_now() < end)
            bc_progress(c);
        if (!des) {
            rc = bc_fail(c, "btl_alloc(%zu) returned NULL for longer than %.0f s", sizes[k],
                         c->timeout);
            break;
        }
        bc_fill(des->des_segments[0].seg_addr, sizes[k], 0, tag, c->rank, (unsigned long)k);
        des->des_segments[0].seg_len = sizes[k];
        des->des_flags = PX_BTL_DES_SEND_ALWAYS_CALLBACK;
        des->des_cbfunc = bc_send_cb;
        des->des_cbdata = &sent[k];
        sent[k].des = des;
        ret[k] = m->btl_send(m, c->ep[c->to], des, (px_btl_tag_t)tag);
        if (ret[k] == PX_ERR_TEMP_OUT_OF_RESOURCE) {
            /* Flush what is under way, then send this one again. */
            int f = m->btl_flush(m, c->ep[c->to]);
            if (f != PX_SUCCESS) {
                rc = bc_fail(c, "btl_flush returned %s", px_strerror(f));
                m->btl_free(m, des);
                break;
            }
            ret[k] = m->btl_send(m, c->ep[c->to], des, (px_btl_tag_t)tag);
        }
        if (ret[k] < 0) {
            m->btl_free(m, des);
            rc = bc_fail(c, "btl_send of message %d returned %s", k, px_strerror(ret[k]));
        }
        started += ret[k] == 0;
    }
    if (rc == BC_OK) {
        int f = m->btl_flush(m, c->ep[c->to]);
        if (f != PX_SUCCESS)
            rc = bc_fail(c, "btl_flush returned %s", px_strerror(f));
        for (int k = 0; k < N && rc == BC_OK; k++)
            if (sent[k].callbacks != 1)
                rc = bc_fail(c,
                             "after btl_flush returned, send %d (btl_send returned %d) had had "
                             "%d completion callbacks, 1 expected (%d of %d sends were still "
                             "under way before the flush)",
                             k, ret[k], sent[k].callbacks, started, N);
    }
    if (rc == BC_OK && !bc_rx_wait(c, c->from, N))
        rc = bc_fail(c, "%lu of %d messages from rank %d arrived within %.0f s",
                     bc_rx_count(c->from), N, c->from, c->timeout);
    if (rc == BC_OK && bc_rx_error()[0])
        rc = bc_fail(c, "%s", bc_rx_error());
    bc_rx_end();
    return rc;
}

/* ---- many peers ---- */

int bc_check_peers(bc_ctx_t *c)
{
    if (c->size < 3)
        return bc_skip(c, "%d rank(s): the checks above covered every peer (run -n 3 to 8)",
                       c->size);
    enum { PER = 40 };
    size_t sizes[PER];
    for (int k = 0; k < PER; k++)
        sizes[k] = (size_t)(k * 97) % (c->m->btl_eager_limit + 1);
    int tag = bc_current_tag();
    bc_rx_expect_sizes(sizes, PER);
    bc_rx_begin(c, tag, bc_rx_sized);
    int rc = BC_OK;
    for (int k = 0; k < PER && rc == BC_OK; k++)
        for (int i = 1; i < c->size && rc == BC_OK; i++) {
            int dest = (c->rank + i) % c->size;
            rc = bc_send_alloc(c, dest, tag, (unsigned long)k, sizes[k]);
        }
    for (int i = 1; i < c->size && rc == BC_OK; i++) {
        int src = (c->rank + c->size - i) % c->size;
        if (!bc_rx_wait(c, src, PER))
            rc = bc_fail(c, "%lu of %d messages from rank %d arrived within %.0f s%s%s",
                         bc_rx_count(src), PER, src, c->timeout, bc_rx_error()[0] ? "; " : "",
                         bc_rx_error());
    }
    if (rc == BC_OK && bc_rx_error()[0])
        rc = bc_fail(c, "%s", bc_rx_error());
    bc_rx_end();
    return rc;
}

/* ---- finalize (the worker calls it last, after its last barrier) ---- */

int bc_check_finalize(bc_ctx_t *c)
{
    int rc = px_finalize();
    if (rc != PX_SUCCESS)
        return bc_fail(c, "px_finalize returned %s", px_strerror(rc));
#if PX_ENABLE_DEBUG
    int alive = px_class_finalize();
    if (alive > 0)
        return bc_fail(c, "%d object(s) still alive after px_finalize (listed on stderr above)",
                       alive);
    snprintf(c->reason, sizeof c->reason, "no object alive after px_finalize (debug build)");
#else
    snprintf(c->reason, sizeof c->reason,
             "objects not counted: not a debug build (configure --enable-debug counts them)");
#endif
    return BC_OK;
}

/* ---- the messaging layer ---- */

int bc_check_proto_sizes(bc_ctx_t *c)
{
    size_t e = px_rt_tool_eager_data(c->to);
    size_t sizes[] = {0, 1, 8, 255, e ? e - 1 : 0, e, e + 1, 65536 + 3, 1u << 20, (4u << 20) + 5};
    size_t n = sizeof sizes / sizeof *sizes, big = (4u << 20) + 5;
    unsigned char *s = malloc(big), *r = malloc(big);
    int tag = bc_current_tag();
    for (size_t i = 0; i < n; i++) {
        bc_fill(s, sizes[i], 0, tag, c->rank, i);
        memset(r, 0, sizes[i]);
        px_request_t *rq;
        px_status_t st;
        int a = px_irecv(r, big, c->from, (int)i, &rq);
        int b = px_send(s, sizes[i], c->to, (int)i);
        int w = a == PX_SUCCESS ? px_wait(&rq, &st) : a;
        if (b != PX_SUCCESS || w != PX_SUCCESS) {
            bc_fail(c, "%zu bytes: px_send returned %s, px_irecv/px_wait %s", sizes[i],
                    px_strerror(b), px_strerror(w));
            break;
        }
        if (st.length != sizes[i] || st.source != c->from) {
            bc_fail(c, "%zu bytes from rank %d arrived as %zu bytes from rank %d", sizes[i],
                    c->from, st.length, st.source);
            break;
        }
        for (size_t j = 0; j < sizes[i]; j++)
            if (r[j] != bc_pattern(tag, c->from, i, j)) {
                bc_fail(c, "%zu bytes (eager data limit %zu): byte %zu is 0x%02x, 0x%02x sent",
                        sizes[i], e, j, r[j], bc_pattern(tag, c->from, i, j));
                break;
            }
        if (c->reason[0])
            break;
    }
    free(s);
    free(r);
    return c->reason[0] ? BC_FAIL : BC_OK;
}

int bc_check_proto_wild(bc_ctx_t *c)
{
    enum { PER = 3 };
    int tag = bc_current_tag();
    if (c->rank != 0) {
        for (int k = 0; k < PER; k++) {
            unsigned char b[100];
            bc_fill(b, sizeof b, 0, tag, c->rank, (unsigned long)k);
            int rc = px_send(b, (size_t)(10 * k + c->rank), 0, 100 * c->rank + k);
            if (rc != PX_SUCCESS)
                return bc_fail(c, "px_send to rank 0 returned %s", px_strerror(rc));
        }
        return BC_OK;
    }
    int got[64] = {0};
    for (int i = 0; i < PER * (c->size - 1); i++) {
        unsigned char b[100];
        px_status_t st;
        int rc = px_recv(b, sizeof b, PX_ANY_SOURCE, PX_ANY_TAG, &st);
        if (rc != PX_SUCCESS)
            return bc_fail(c, "px_recv(PX_ANY_SOURCE, PX_ANY_TAG) returned %s", px_strerror(rc));
        int k = st.tag - 100 * st.source;
        if (st.source <= 0 || st.source >= c->size || k != got[st.source] ||
            st.length != (size_t)(10 * k + st.source))
            return bc_fail(c,
                           "a wildcard receive gave source %d tag %d length %zu; message %d "
                           "of that rank (tag %d, %d bytes) expected",
                           st.source, st.tag, st.length, got[st.source > 0 ? st.source : 0],
                           100 * st.source + got[st.source > 0 ? st.source : 0],
                           10 * got[st.source > 0 ? st.source : 0] + st.source);
        for (size_t j = 0; j < st.length; j++)
            if (b[j] != bc_pattern(tag, st.source, (unsigned long)k, j))
                return bc_fail(c, "a wildcard receive from rank %d: byte %zu damaged", st.source,
                               j);
        got[st.source]++;
    }
    return BC_OK;
}

/* ---- a peer that dies (job of 2 ranks; rank 1 SIGKILLs itself) ---- */

static struct {
    int fired, rank, error;
    double at;
    char desc[200];
    px_btl_endpoint_t *ep;
} death;

static void death_err(px_btl_module_t *m, px_btl_endpoint_t *ep, int rank, int error,
                      const char *description)
{
    (void)m;
    if (death.fired)
        return;
    if (rank == 1 || (ep && ep == death.ep) || (rank < 0 && !ep)) {
        death.fired = 1;
        death.rank = rank;
        death.error = error;
        death.at = bc_now();
        snprintf(death.desc, sizeof death.desc, "%s", description ? description : "");
    }
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = BC_REPORT "fatal 0 a call into the module did not return: hung "
                                        "(watchdog)\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(3);
    _exit(3);
}

static double died_at;
/* The sends tried after the death: each must fail, complete, or get its
 * callback; none may block or stay pending. */
enum { DEATH_SENDS = 600 };
static bc_sent_t dsent[DEATH_SENDS];
static int dret[DEATH_SENDS], dtried, dtemp, dnoalloc;
static bool dafter[DEATH_SENDS]; /* started after the error callback fired */
static size_t dlen[DEATH_SENDS];
static double first_error_at = -1;
static char first_error[160];

static void death_note(int k, int status, const char *how)
{
    if (first_error_at < 0) {
        first_error_at = bc_now() - died_at;
        snprintf(first_error, sizeof first_error, "send %d %s %s", k, how, px_strerror(status));
    }
}

/* Sends of 8 bytes and of the eager limit (past any small-message fast
 * path), one every few milliseconds, until the error callback fired and
 * every send tried is resolved, or the timeout. */
static void death_sends(bc_ctx_t *c, int tag)
{
    px_btl_module_t *m = c->m;
    double end = died_at + c->timeout;
    while (bc_now() < end) {
        bool pending = false;
        for (int k = 0; k < dtried; k++)
            if (dafter[k] && dret[k] == 0 && dsent[k].callbacks == 0)
                pending = true;
        int after = 0;
        for (int k = 0; k < dtried; k++)
            after += dafter[k];
        if (death.fired && after >= 32 && !pending)
            break;
        if (dtried < DEATH_SENDS) {
            int k = dtried;
            dafter[k] = death.fired;
            dlen[k] = (k & 1) ? m->btl_eager_limit : 8;
            px_btl_descriptor_t *des = m->btl_alloc(m, death.ep, PX_BTL_NO_ORDER, dlen[k],
                                                    PX_BTL_DES_SEND_ALWAYS_CALLBACK);
            if (!des)
                dnoalloc++;
            else {
                memset(des->des_segments[0].seg_addr, 0, dlen[k]);
                des->des_segments[0].seg_len = dlen[k];
                des->des_flags = PX_BTL_DES_SEND_ALWAYS_CALLBACK;
                des->des_cbfunc = bc_send_cb;
                des->des_cbdata = &dsent[k];
                dsent[k].des = des;
                dret[k] = m->btl_send(m, death.ep, des, (px_btl_tag_t)tag);
                if (dret[k] == PX_ERR_TEMP_OUT_OF_RESOURCE) {
                    dtemp++;
                    m->btl_free(m, des);
                } else {
                    if (dret[k] < 0) {
                        death_note(k, dret[k], "returned");
                        m->btl_free(m, des);
                    }
                    dtried++;
                }
            }
        }
        /* A connection-based transport may learn of the death only when a
         * send fails: keep sending, every 5 ms for the first 100 sends, then
         * every 40 ms. */
        double w = bc_now() + (dtried < 100 ? 0.005 : 0.04);
        while (bc_now() < w)
            bc_progress(c);
        for (int k = 0; k < dtried; k++)
            if (dsent[k].callbacks && dsent[k].status != PX_SUCCESS)
                death_note(k, dsent[k].status, "completed with");
    }
}

int bc_check_death_cb(bc_ctx_t *c)
{
    px_btl_module_t *m = c->m;
    if (c->size != 2)
        return bc_fail(c, "the death job runs with 2 ranks, not %d", c->size);
    death.ep = c->ep[1 - c->rank];
    if (m->btl_register_error(m, death_err) != PX_SUCCESS)
        return bc_fail(c, "btl_register_error failed");
    int tag = bc_current_tag();
    size_t one = 8;
    bc_rx_expect_sizes(&one, 1);
    bc_rx_begin(c, tag, bc_rx_sized);
    /* A round trip first, so the connection exists. */
    if (bc_send_alloc(c, 1 - c->rank, tag, 0, 8) != BC_OK)
        return BC_FAIL;
    if (!bc_rx_wait(c, 1 - c->rank, 1))
        return bc_fail(c, "the message of rank %d did not arrive within %.0f s", 1 - c->rank,
                       c->timeout);
    px_barrier();
    if (c->rank == 1)
        raise(SIGKILL);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)(3 * c->timeout + 10));
    died_at = bc_now();
    death_sends(c, tag);
    alarm(0);
    bc_rx_end();
    if (!death.fired) {
        int inplace = 0, okcb = 0, errcb = 0, pend = 0, err = 0;
        for (int k = 0; k < dtried; k++) {
            if (dret[k] < 0)
                err++;
            else if (dsent[k].callbacks == 0)
                pend++;
            else if (dsent[k].status != PX_SUCCESS)
                errcb++;
            else if (dret[k] == 1)
                inplace++;
            else
                okcb++;
        }
        return bc_fail(c,
                       "the module's error callback did not fire for rank 1 within %.0f s of its "
                       "death; of %d sends to it %d completed in place, %d completed later "
                       "without error, %d with an error, %d returned an error, %d are pending",
                       c->timeout, dtried, inplace, okcb, errcb, err, pend);
    }
    snprintf(c->reason, sizeof c->reason, "fired after %.3f s: rank %d, %s: %s", death.at - died_at,
             death.rank, px_strerror(death.error), death.desc);
    return BC_OK;
}

int bc_check_death_send(bc_ctx_t *c)
{
    int after = 0, failed = 0;
    for (int k = 0; k < dtried; k++) {
        if (!dafter[k])
            continue; /* lost with the peer: the error callback covers those */
        after++;
        if (dret[k] == 0 && dsent[k].callbacks == 0)
            return bc_fail(c,
                           "send %d (%zu bytes) to rank 1, after the error callback said it was "
                           "gone, started (btl_send returned 0) and had not completed %.0f s "
                           "after the death: whoever waits on it hangs",
                           k, dlen[k], c->timeout);
        if (dret[k] < 0 || (dsent[k].callbacks && dsent[k].status != PX_SUCCESS))
            failed++;
    }
    if (!death.fired)
        return bc_fail(c, "not judged: the error callback never fired (check above)");
    if (after == 0)
        return bc_fail(c,
                       "no send to the dead rank 1 could start within %.0f s (btl_alloc NULL "
                       "%d times, btl_send out of resources %d times): the runtime would "
                       "retry forever",
                       c->timeout, dnoalloc, dtemp);
    if (failed < after)
        return bc_fail(c,
                       "%d of %d sends to rank 1 after the error callback said it was gone "
                       "succeeded: the data went nowhere and nobody was told",
                       after - failed, after);
    snprintf(c->reason, sizeof c->reason,
             "%d sends after the error callback all failed; the "
             "first error after %.3f s: %s",
             after, first_error_at, first_error);
    return BC_OK;
}
