/*
 * pml.c: tagged point-to-point messaging over the BTL (px_send, px_recv and
 * their non-blocking forms).
 *
 * Matching: one queue of posted receives (post order) and one of unexpected
 * messages (arrival order). Every matched message carries a per-pair sequence
 * number; one that arrives ahead of its turn waits on its peer's out-of-order
 * list, so messages between a pair are never reordered even over several rails.
 *
 * Protocols (thresholds are variables, see px_rt_pml_register_params):
 *  - tiny (<= runtime_tiny_limit): btl_sendi, nothing allocated;
 *  - eager (header + data <= the peer's eager limit): btl_prepare_src + send;
 *  - rendezvous (RDMA get, RDMA put, pipelined fragments): pml_rndv.c.
 * A receive buffer too small takes what fits, flags PX_ERR_TRUNCATE, and
 * consumes the whole message, so the next one is unaffected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/mca/var.h"
#include "runtime/pml.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"

px_runtime_t px_rt;

static void px_request_construct(px_request_t *r)
{
    PX_OBJ_CONSTRUCT(&r->pend_link, px_list_item_t);
    r->complete = true;
}
static void px_request_destruct(px_request_t *r)
{
    PX_OBJ_DESTRUCT(&r->pend_link);
}
PX_CLASS_INSTANCE(px_request_t, px_free_list_item_t, px_request_construct, px_request_destruct);
PX_CLASS_INSTANCE(px_rt_ux_t, px_free_list_item_t, NULL, NULL);

/* ------------------------------------------------------------------ variables */

static const px_mca_var_enum_value_t rndv_values[] = {
    {PX_RT_RNDV_AUTO, "auto"},
    {PX_RT_RNDV_GET, "get"},
    {PX_RT_RNDV_PIPELINE, "pipeline"},
    {PX_RT_RNDV_PUT, "put"},
    {0, NULL},
};

#define PX_RT_AT(field) .offset = PX_MCA_VAR_AT(px_runtime_t, field)
static const px_mca_var_field_t px_rt_vars[] = {
    {.name = "tiny_limit",
     .help = "Largest message (bytes of data) sent with the transport's immediate path (btl "
             "sendi); 0 disables it",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "256",
     .min = "0",
     PX_RT_AT(tiny_limit)},
    {.name = "eager_limit",
     .help = "Largest message (bytes of data) sent eagerly; 0: as large as the peer's eager "
             "transport allows (btl_<name>_eager_limit minus the 16-byte header); larger "
             "messages use the rendezvous protocol",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     PX_RT_AT(eager_limit)},
    {.name = "rndv_protocol",
     .help = "How rendezvous data moves: auto (RDMA get when the peer's heaviest RDMA transport "
             "offers it, else RDMA put, else pipelined fragments), get (get or fragments), put "
             "(put or fragments), pipeline (always fragments of btl_<name>_max_send_size)",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = rndv_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "auto",
     PX_RT_AT(rndv_protocol)},
    {.name = "wait_timeout",
     .help = "Seconds a blocking call (px_wait, px_recv, px_barrier, ...) waits before failing "
             "with PX_ERR_TIMEOUT; 0: no limit",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     PX_RT_AT(wait_timeout)},
    {.name = "verbose",
     .help = "Verbosity of the messaging layer: 0 quiet, 1 what px_finalize discards (messages "
             "never received, from each rank, and receives never matched)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 8,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "100",
     PX_RT_AT(verbose)},
    {.name = NULL},
};
#undef PX_RT_AT

int px_rt_pml_register_params(void)
{
    int rc = px_mca_var_register_table("runtime", NULL, px_rt_vars, -1, &px_rt);
    return rc < 0 ? rc : PX_SUCCESS;
}

void px_rt_active_add(px_request_t *r)
{
    if (!r->on_active) {
        px_list_append(&px_rt.active, &r->super.super);
        r->on_active = true;
    }
}

void px_rt_active_remove(px_request_t *r)
{
    if (r->on_active) {
        px_list_remove_item(&px_rt.active, &r->super.super);
        r->on_active = false;
    }
}

/* A request id from the wire, checked against the requests in a rendezvous. */
px_request_t *px_rt_active_find(uint64_t id, int type)
{
    px_request_t *r;
    PX_LIST_FOREACH(r, &px_rt.active, px_request_t)
    {
        if ((uint64_t)(uintptr_t)r == id && r->type == type)
            return r;
    }
    return NULL;
}

void px_rt_pending_add(px_request_t *r, int what)
{
    if (PX_RT_PEND_NONE == r->pending)
        px_list_append(&px_rt.pending, &r->pend_link);
    r->pending = (uint8_t)what;
}

void px_rt_pending_remove(px_request_t *r)
{
    if (r->pending != PX_RT_PEND_NONE) {
        px_list_remove_item(&px_rt.pending, &r->pend_link);
        r->pending = PX_RT_PEND_NONE;
    }
}

/* Drop every memory registration the request holds (one per RDMA rail). */
void px_rt_req_release_regs(px_request_t *r)
{
    for (int k = 0; k < r->nrails; ++k) {
        px_btl_module_t *m = r->rails[k].pm->module;
        if (r->rails[k].reg && m->btl_deregister_mem)
            m->btl_deregister_mem(m, r->rails[k].reg);
        r->rails[k].reg = NULL;
    }
    r->nrails = 0;
}

void px_rt_req_fail(px_request_t *r, int error)
{
    px_rt_pending_remove(r);
    px_rt_active_remove(r);
    if (r->on_posted) {
        px_list_remove_item(&px_rt.posted, &r->super.super);
        r->on_posted = false;
    }
    px_rt_req_release_regs(r);
    if (PX_SUCCESS == r->status.error || PX_ERR_TRUNCATE == r->status.error)
        r->status.error = error;
    req_complete(r);
}

void px_rt_req_unhold(px_request_t *r)
{
    if (r->released && !req_held(r)) {
        px_rt_req_release_regs(r);
        r->released = false;
        req_free(r);
    }
}

uint32_t px_rt_rdma_id(const px_btl_module_t *m)
{
    const char *s = m->btl_component ? m->btl_component->base.component_name : "?";
    uint32_t h = 2166136261u;
    for (; *s; ++s)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h ? h : 1;
}

/* A small control message (ACK, FIN, PUT-ACK, PUT-FIN) to `rank`. */
int px_rt_send_ctl_buf(int rank, px_btl_tag_t am, const void *buf, size_t len)
{
    px_rt_peer_t *peer = &px_rt.peers[rank];
    if (peer->failed)
        return peer->failed;
    px_btl_base_peer_module_t *pm = px_btl_base_peer_eager(peer->btl);
    px_btl_module_t *m = pm->module;
    if (m->btl_sendi) {
        int rc = m->btl_sendi(m, pm->endpoint, buf, len, NULL, 0, PX_BTL_NO_ORDER, 0, am, NULL);
        if (PX_SUCCESS == rc)
            return rc;
        if (rc != PX_ERR_TEMP_OUT_OF_RESOURCE)
            return rc;
    }
    px_btl_descriptor_t *des =
        m->btl_alloc(m, pm->endpoint, PX_BTL_NO_ORDER, len, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    memcpy(des->des_segments[0].seg_addr, buf, len);
    des->des_segments[0].seg_len = len;
    des->des_cbfunc = NULL;
    int rc = m->btl_send(m, pm->endpoint, des, am);
    if (rc < 0) {
        m->btl_free(m, des);
        return rc;
    }
    return PX_SUCCESS;
}

int px_rt_send_ctl(int rank, px_btl_tag_t am, uint64_t sreq, uint64_t rreq)
{
    px_rt_ctl_hdr_t h = {sreq, rreq};
    return px_rt_send_ctl_buf(rank, am, &h, sizeof(h));
}

/* Deliver an eager message to the first matching posted receive, or queue it. */
static inline px_request_t *posted_match(int src, int tag)
{
    px_request_t *r;
    PX_LIST_FOREACH(r, &px_rt.posted, px_request_t)
    {
        if (tag_matches(r->peer, r->tag, src, tag)) {
            px_list_remove_item(&px_rt.posted, &r->super.super);
            r->on_posted = false;
            return r;
        }
    }
    return NULL;
}

static inline void recv_eager_into(px_request_t *r, int src, int tag, const px_btl_segment_t *segs,
                                   size_t nseg, size_t skip, size_t len)
{
    size_t n = len <= r->len ? len : r->len;
    seg_copy(r->buf, n, segs, nseg, skip);
    r->status.source = src;
    r->status.tag = tag;
    r->status.length = n;
    r->status.error = len <= r->len ? PX_SUCCESS : PX_ERR_TRUNCATE;
    req_complete(r);
}

/* Copy a message into a new unexpected/out-of-order item. */
static px_rt_ux_t *ux_make(int src, int tag, uint32_t seq, int kind, const px_btl_segment_t *segs,
                           size_t nseg, size_t skip, size_t len)
{
    px_rt_ux_t *u = ux_alloc();
    if (PX_UNLIKELY(NULL == u))
        return NULL;
    u->src = src;
    u->tag = tag;
    u->seq = seq;
    u->kind = kind;
    u->len = len;
    u->data = u->inline_buf;
    if (PX_UNLIKELY(len > PX_RT_UX_INLINE)) {
        u->data = malloc(len);
        if (NULL == u->data) {
            u->data = u->inline_buf;
            ux_free(u);
            return NULL;
        }
    }
    seg_copy(u->data, len, segs, nseg, skip);
    return u;
}

static void deliver_rndv(const px_rt_rndv_hdr_t *h, const unsigned char *blob);

static void ooo_drain(px_rt_peer_t *peer)
{
    for (;;) {
        px_rt_ux_t *u, *found = NULL;
        PX_LIST_FOREACH(u, &peer->ooo, px_rt_ux_t)
        {
            if (u->seq == peer->recv_seq) {
                found = u;
                break;
            }
        }
        if (NULL == found)
            return;
        if (peer->failed)
            return;
        px_list_remove_item(&peer->ooo, &found->super.super);
        peer->recv_seq++;
        px_request_t *r = posted_match(found->src, found->tag);
        if (PX_RT_KIND_EAGER == found->kind) {
            if (r) {
                px_btl_segment_t s = {found->data, found->len};
                recv_eager_into(r, found->src, found->tag, &s, 1, 0, found->len);
                ux_free(found);
            } else {
                px_list_append(&px_rt.unexpected, &found->super.super);
            }
        } else {
            if (r) {
                px_rt_recv_start_rndv(r, &found->rndv, found->data);
                ux_free(found);
            } else {
                px_list_append(&px_rt.unexpected, &found->super.super);
            }
        }
    }
}

/* A message from `src` could not be queued: it is lost, and with it the
 * ordering of everything after it from that rank, so the peer is failed. */
static PX_COLD void ux_lost(const char *what, int src)
{
    char why[256];
    snprintf(why, sizeof(why),
             "could not queue a message from rank %d (%s: no memory for its record), so it is "
             "lost",
             src, what);
    px_rt_fail_peer(src, PX_ERR_PEER_FAILED, why);
}

/* A message from a peer that has failed: counted, then discarded. */
static PX_COLD void drop_from_failed(px_rt_peer_t *peer)
{
    peer->dropped++;
}

/* AM callback: tiny and eager messages. */
static void am_match(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    const px_rt_match_hdr_t *h = d->des_segments[0].seg_addr;
    /* The length first: a shorter segment has no header to read. */
    if (PX_UNLIKELY(d->des_segments[0].seg_len < sizeof(*h))) {
        px_show_error("runtime: dropped a malformed message from rank %d (%zu bytes, less than "
                      "its %zu-byte header)",
                      d->src_rank, d->des_segments[0].seg_len, sizeof(*h));
        return;
    }
    const int src = h->src, tag = h->tag;
    if (PX_UNLIKELY(src < 0 || src >= px_rt.size)) {
        px_show_error("runtime: dropped a malformed message from rank %d (source %d in its header; "
                      "valid: 0..%d)",
                      d->src_rank, src, px_rt.size - 1);
        return;
    }
    px_rt_peer_t *peer = &px_rt.peers[src];
    size_t len = seg_data_len(d->des_segments, d->des_segment_count, sizeof(*h));
    if (PX_UNLIKELY(h->seq != peer->recv_seq || peer->failed)) {
        if (peer->failed) {
            drop_from_failed(peer);
            return;
        }
        px_rt_ux_t *u = ux_make(src, tag, h->seq, PX_RT_KIND_EAGER, d->des_segments,
                                d->des_segment_count, sizeof(*h), len);
        px_rt.ooo_arrivals++;
        if (u)
            px_list_append(&peer->ooo, &u->super.super);
        else
            ux_lost("an out-of-order message", src);
        return;
    }
    peer->recv_seq++;
    px_request_t *r = px_list_is_empty(&px_rt.posted) ? NULL : posted_match(src, tag);
    if (r) {
        recv_eager_into(r, src, tag, d->des_segments, d->des_segment_count, sizeof(*h), len);
    } else {
        px_rt_ux_t *u = ux_make(src, tag, h->seq, PX_RT_KIND_EAGER, d->des_segments,
                                d->des_segment_count, sizeof(*h), len);
        if (PX_LIKELY(u != NULL))
            px_list_append(&px_rt.unexpected, &u->super.super);
        else
            ux_lost("an unexpected message", src);
    }
    if (PX_UNLIKELY(!px_list_is_empty(&peer->ooo)) && !peer->failed)
        ooo_drain(peer);
}

static void deliver_rndv(const px_rt_rndv_hdr_t *h, const unsigned char *blob)
{
    px_request_t *r = posted_match(h->m.src, h->m.tag);
    if (r) {
        px_rt_recv_start_rndv(r, h, blob);
        return;
    }
    /* Queue the header; the rail entries go in the item's data. */
    px_btl_segment_t s = {(void *)blob, h->blob};
    px_rt_ux_t *u = ux_make(h->m.src, h->m.tag, h->m.seq, PX_RT_KIND_RNDV, &s, 1, 0, h->blob);
    if (NULL == u) {
        ux_lost("an unexpected rendezvous request", h->m.src);
        return;
    }
    u->len = h->len;
    u->rndv = *h;
    px_list_append(&px_rt.unexpected, &u->super.super);
}

/* AM callback: rendezvous request. */
static void am_rndv(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_rt_rndv_hdr_t h;
    unsigned char blob[PX_RT_MAX_BLOB];
    size_t total = seg_data_len(d->des_segments, d->des_segment_count, 0);
    if (total < sizeof(h)) {
        px_show_error("runtime: dropped a malformed rendezvous header (%zu bytes)", total);
        return;
    }
    seg_copy(&h, sizeof(h), d->des_segments, d->des_segment_count, 0);
    if (h.m.src < 0 || h.m.src >= px_rt.size || h.blob > PX_RT_MAX_BLOB ||
        h.nrails > PX_RT_MAX_RAILS || total < sizeof(h) + h.blob) {
        px_show_error("runtime: dropped a malformed rendezvous header (source %d, %u rails in "
                      "%u bytes, %zu bytes received)",
                      h.m.src, h.nrails, h.blob, total);
        return;
    }
    if (h.blob)
        seg_copy(blob, h.blob, d->des_segments, d->des_segment_count, sizeof(h));
    px_rt_peer_t *peer = &px_rt.peers[h.m.src];
    if (peer->failed) {
        drop_from_failed(peer);
        return;
    }
    if (h.m.seq != peer->recv_seq) {
        px_btl_segment_t s = {blob, h.blob};
        px_rt_ux_t *u = ux_make(h.m.src, h.m.tag, h.m.seq, PX_RT_KIND_RNDV, &s, 1, 0, h.blob);
        px_rt.ooo_arrivals++;
        if (NULL == u) {
            ux_lost("an out-of-order rendezvous request", h.m.src);
            return;
        }
        u->len = h.len;
        u->rndv = h;
        px_list_append(&peer->ooo, &u->super.super);
        return;
    }
    peer->recv_seq++;
    deliver_rndv(&h, blob);
    if (!px_list_is_empty(&peer->ooo) && !peer->failed)
        ooo_drain(peer);
}

/* ------------------------------------------------------------------ send side */

static void send_eager_done(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                            int status)
{
    (void)btl;
    (void)ep;
    px_request_t *r = des->des_cbdata;
    r->des_held = false;
    if (PX_UNLIKELY(r->released)) { /* its wait gave up: only the hold goes */
        px_rt_req_unhold(r);
        return;
    }
    if (status != PX_SUCCESS)
        r->status.error = status;
    req_complete(r);
}

/* Start a send request's first message: eager data or the RNDV header. */
static void send_start(px_request_t *r)
{
    px_rt_peer_t *peer = &px_rt.peers[r->peer];
    px_btl_base_peer_module_t *pm = px_btl_base_peer_eager(peer->btl);
    px_btl_module_t *m = pm->module;
    px_rt_match_hdr_t mh = {px_rt.rank, r->tag, r->seq, 0};
    int rc;
    if (r->len > peer->eager_data) {
        px_rt_send_start_rndv(r);
        return;
    }
    px_btl_convertor_t conv;
    px_btl_convertor_init_contig(&conv, r->buf, r->len);
    size_t size = r->len;
    px_btl_descriptor_t *des = m->btl_prepare_src(
        m, pm->endpoint, &conv, PX_BTL_NO_ORDER, sizeof(mh), &size, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des) {
        px_rt_pending_add(r, PX_RT_PEND_START);
        return;
    }
    if (size != r->len) {
        m->btl_free(m, des);
        px_rt_req_fail(r, PX_ERR_FATAL);
        px_show_error("runtime: btl %s took %zu of a %zu-byte eager message",
                      m->btl_component->base.component_name, size, r->len);
        return;
    }
    memcpy(des->des_segments[0].seg_addr, &mh, sizeof(mh));
    des->des_cbfunc = send_eager_done;
    des->des_cbdata = r;
    px_rt_pending_remove(r);
    r->des_held = true; /* until send_eager_done, which may run inside btl_send */
    rc = m->btl_send(m, pm->endpoint, des, PX_RT_AM_MATCH);
    if (1 == rc) {
        r->des_held = false;
        req_complete(r);
        return;
    }
    if (0 == rc)
        return;
    r->des_held = false;
    m->btl_free(m, des);
    if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc) {
        px_rt_pending_add(r, PX_RT_PEND_START);
        return;
    }
    px_rt_req_fail(r, rc);
}

/* ------------------------------------------------------------------ public-ish API */

static int pending_progress(void)
{
    /* Each request is taken off the list, then its step re-adds it when it
     * still cannot proceed; at most the current length is visited. */
    size_t n = px_list_get_size(&px_rt.pending);
    int done = 0;
    for (size_t i = 0; i < n; ++i) {
        px_list_item_t *it = px_list_remove_first(&px_rt.pending);
        if (NULL == it)
            break;
        px_request_t *r = px_container_of(it, px_request_t, pend_link);
        int what = r->pending;
        r->pending = PX_RT_PEND_NONE;
        switch (what) {
        case PX_RT_PEND_START:
            send_start(r);
            break;
        case PX_RT_PEND_FRAGS:
            px_rt_send_schedule_frags(r);
            break;
        case PX_RT_PEND_ACK:
            px_rt_recv_send_ack(r);
            break;
        case PX_RT_PEND_RDMA:
            px_rt_rdma_schedule(r);
            break;
        case PX_RT_PEND_FIN:
            px_rt_rdma_send_fin(r);
            break;
        case PX_RT_PEND_PUTACK:
            px_rt_recv_send_putack(r);
            break;
        default:
            break;
        }
        if (PX_RT_PEND_NONE == r->pending)
            done++;
    }
    return done;
}

static inline int rt_progress(void)
{
    int n = px_progress_engine();
    if (PX_UNLIKELY(!px_list_is_empty(&px_rt.pending)))
        n += pending_progress();
    return n;
}

int px_progress(void)
{
    if (!px_rt.initialized)
        return 0;
    return rt_progress();
}

static int rt_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request);

int px_rt_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    px_rt_peer_t *peer = &px_rt.peers[dest];
    if (PX_UNLIKELY(peer->failed))
        return peer->failed;
    return rt_isend(buf, len, dest, tag, request);
}

int px_rt_isend_failed_ok(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    px_rt_peer_t *peer = &px_rt.peers[dest];
    if (peer->failed && !peer->failed_here)
        return peer->failed; /* its transport is gone */
    return rt_isend(buf, len, dest, tag, request);
}

static inline int rt_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    px_rt_peer_t *peer = &px_rt.peers[dest];
    px_request_t *r = req_alloc(PX_RT_REQ_SEND);
    if (PX_UNLIKELY(NULL == r))
        return PX_ERR_OUT_OF_RESOURCE;
    r->peer = dest;
    r->tag = tag;
    r->buf = (void *)buf;
    r->len = len;
    r->status.source = dest;
    r->status.tag = tag;
    r->status.length = len;
    r->seq = peer->send_seq++;
    *request = r;
    if (len < peer->tiny_below) {
        px_rt_match_hdr_t h = {px_rt.rank, tag, r->seq, 0};
        int rc = peer->eager_btl->btl_sendi(peer->eager_btl, peer->eager_ep, &h, sizeof(h), buf,
                                            len, PX_BTL_NO_ORDER, 0, PX_RT_AM_MATCH, NULL);
        if (PX_LIKELY(PX_SUCCESS == rc)) {
            req_complete(r);
            return PX_SUCCESS;
        }
    }
    send_start(r);
    return PX_SUCCESS;
}

int px_rt_irecv(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    px_request_t *r = req_alloc(PX_RT_REQ_RECV);
    if (PX_UNLIKELY(NULL == r))
        return PX_ERR_OUT_OF_RESOURCE;
    r->peer = source;
    r->tag = tag;
    r->buf = buf;
    r->len = len;
    r->status.source = source;
    r->status.tag = tag;
    r->status.length = 0;
    *request = r;
    px_rt_ux_t *u;
    PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
    {
        if (!tag_matches(source, tag, u->src, u->tag))
            continue;
        px_list_remove_item(&px_rt.unexpected, &u->super.super);
        if (PX_RT_KIND_EAGER == u->kind) {
            px_btl_segment_t s = {u->data, u->len};
            recv_eager_into(r, u->src, u->tag, &s, 1, 0, u->len);
        } else {
            px_rt_recv_start_rndv(r, &u->rndv, u->data);
        }
        ux_free(u);
        return PX_SUCCESS;
    }
    if (source != PX_ANY_SOURCE && px_rt.peers[source].failed) {
        r->status.error = px_rt.peers[source].failed;
        req_complete(r);
        return PX_SUCCESS;
    }
    px_list_append(&px_rt.posted, &r->super.super);
    r->on_posted = true;
    return PX_SUCCESS;
}

const char *px_rt_tag_name(int tag)
{
    return PX_RT_TAG_BARRIER == tag ? "px_barrier" : "a runtime-internal operation";
}

/* A send to ourselves whose RNDV header still waits in our own unexpected
 * queue: nothing outside this process knows of it. Removes that header. */
static bool self_rndv_unqueue(px_request_t *r)
{
    if (PX_RT_REQ_SEND != r->type || r->peer != px_rt.rank)
        return false;
    uint64_t id = (uint64_t)(uintptr_t)r;
    px_rt_ux_t *u, *n;
    PX_LIST_FOREACH_SAFE(u, n, &px_rt.unexpected, px_rt_ux_t)
    {
        if (PX_RT_KIND_RNDV == u->kind && u->rndv.sreq == id && u->src == px_rt.rank) {
            px_list_remove_item(&px_rt.unexpected, &u->super.super);
            ux_free(u);
            return true;
        }
    }
    return false;
}

/* A wait gave up on `r` (`what` says which operation and why). The request
 * leaves the application either way; what becomes of it depends on how far
 * it got, and the message printed says which:
 *  - nothing outside this process knows of it (a receive no message matched,
 *    a send to ourselves not yet matched): cancelled and freed, the buffer is
 *    the application's again;
 *  - a transport or the peer may still use it (an eager send whose descriptor
 *    the transport has not handed back, a rendezvous under way, a send that
 *    spent its sequence number): it is "released" and freed by the last
 *    callback that names it (req_held), never before; a rendezvous (or a send
 *    that never left) also fails the peer, since that pair's stream of
 *    messages can no longer be completed in order. The buffer belongs to
 *    Plexus until px_finalize. */
static PX_COLD void req_give_up(px_request_t *r, const char *what)
{
    px_rt_pending_remove(r);
    if (r->on_posted) {
        px_list_remove_item(&px_rt.posted, &r->super.super);
        r->on_posted = false;
        px_show_error("%s; the receive was cancelled (its buffer is free again)", what);
        req_free(r);
        return;
    }
    if (self_rndv_unqueue(r)) {
        px_rt_active_remove(r);
        px_rt_req_release_regs(r);
        px_show_error("%s; the send was cancelled (its buffer is free again)", what);
        req_free(r);
        return;
    }
    const bool send = PX_RT_REQ_SEND == r->type;
    const int peer = send ? r->peer : r->status.source;
    /* An eager send whose data the transport has taken arrives whole: the
     * peer's stream is intact. Anything else leaves a hole in it. */
    const bool eager_out = send && r->des_held && !r->on_active;
    /* The peer may still read a buffer offered for RDMA get: keep it
     * registered, and the request findable for the FIN, until it says so. */
    const bool peer_reads = send && r->on_active && PX_RT_RDMA_GET == r->rdma_mode;
    if (!peer_reads)
        px_rt_active_remove(r);
    r->released = true;
    r->status.error = PX_ERR_TIMEOUT;
    const bool held = req_held(r);
    if (held)
        px_show_error("%s; the %s is still held by the transport%s, so Plexus frees it when that "
                      "lets go: do not reuse or free its buffer before px_finalize",
                      what, send ? "send" : "receive",
                      peer_reads ? " (the receiver may still read the buffer)" : "");
    else
        px_show_error("%s; the %s was abandoned (no transport holds it: its buffer is free again)",
                      what, send ? "send" : "receive");
    if (!eager_out && peer >= 0 && peer < px_rt.size && !px_rt.peers[peer].failed) {
        char why[256];
        snprintf(why, sizeof(why), "a %s %s it timed out after its transfer had begun",
                 send ? "send" : "receive", send ? "to" : "from");
        px_rt_fail_peer(peer, PX_ERR_PEER_FAILED, why);
    }
    px_rt_req_unhold(r); /* frees it now when nothing holds it */
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void describe(char *buf, size_t n, const px_request_t *r, const char *who, const char *tail)
{
    const bool send = PX_RT_REQ_SEND == r->type;
    int peer = send ? r->peer : r->status.source;
    char rank[32], tag[48];
    if (PX_ANY_SOURCE == peer)
        snprintf(rank, sizeof(rank), "any rank");
    else
        snprintf(rank, sizeof(rank), "rank %d", peer);
    if (r->tag >= 0)
        snprintf(tag, sizeof(tag), " with tag %d", r->tag);
    else if (PX_ANY_TAG == r->tag)
        snprintf(tag, sizeof(tag), " with any tag");
    else
        tag[0] = '\0'; /* runtime-internal: `who` names the operation */
    snprintf(buf, n, "%s: the %s of %zu bytes %s %s%s %s", who, send ? "send" : "receive", r->len,
             send ? "to" : "from", rank, tag, tail);
}

/* Progress until `r` completes; PX_ERR_TIMEOUT (after giving it up) when it
 * can never complete or runtime_wait_timeout passes. */
static PX_NOINLINE int wait_slow(px_request_t *r, const char *who)
{
    double start = 0;
    unsigned spins = 0;
    char what[512];
    while (!r->complete) {
        int n = rt_progress();
        if (r->complete)
            break;
        if (0 == n && 1 == px_rt.size && 0 == px_progress_nentries &&
            px_list_is_empty(&px_rt.pending)) {
            describe(what, sizeof(what), r, who,
                     PX_RT_REQ_SEND == r->type
                         ? "can never complete: this process is alone in the job and no "
                           "matching receive is queued"
                         : "can never complete: this process is alone in the job and no "
                           "matching message is queued");
            req_give_up(r, what);
            return PX_ERR_TIMEOUT;
        }
        if (px_rt.wait_timeout > 0 && 0 == (++spins & 1023)) {
            double t = now();
            if (0 == start)
                start = t;
            else if (t - start > px_rt.wait_timeout) {
                char tail[96];
                snprintf(tail, sizeof(tail), "did not complete within runtime_wait_timeout = %g s",
                         px_rt.wait_timeout);
                describe(what, sizeof(what), r, who, tail);
                req_give_up(r, what);
                return PX_ERR_TIMEOUT;
            }
        }
    }
    return PX_SUCCESS;
}

static inline int check_peer(int rank, bool any_ok)
{
    if (PX_LIKELY(rank >= 0 && rank < px_rt.size))
        return PX_SUCCESS;
    if (any_ok && PX_ANY_SOURCE == rank)
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
        px_show_error("%s: rank %d is not in the job (valid: 0..%d%s)", fn, rank, px_rt.size - 1,
                      recv ? " or PX_ANY_SOURCE" : "");
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

int px_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request)
{
    if (!ARGS_OK(dest, tag, false) || NULL == request)
        return request ? arg_error("px_isend", dest, tag, false) : PX_ERR_BAD_PARAM;
    return px_rt_isend(buf, len, dest, tag, request);
}

int px_irecv(void *buf, size_t len, int source, int tag, px_request_t **request)
{
    if (!ARGS_OK(source, tag, true) || NULL == request)
        return request ? arg_error("px_irecv", source, tag, true) : PX_ERR_BAD_PARAM;
    return px_rt_irecv(buf, len, source, tag, request);
}

static inline int rt_wait(px_request_t **request, px_status_t *status, const char *who);

int px_send(const void *buf, size_t len, int dest, int tag)
{
    if (!ARGS_OK(dest, tag, false))
        return arg_error("px_send", dest, tag, false);
    px_rt_peer_t *peer = &px_rt.peers[dest];
    if (PX_LIKELY(len < peer->tiny_below)) {
        /* Immediate path: no request, nothing allocated. */
        px_rt_match_hdr_t h = {px_rt.rank, tag, peer->send_seq++, 0};
        int rc = peer->eager_btl->btl_sendi(peer->eager_btl, peer->eager_ep, &h, sizeof(h), buf,
                                            len, PX_BTL_NO_ORDER, 0, PX_RT_AM_MATCH, NULL);
        if (PX_LIKELY(PX_SUCCESS == rc))
            return PX_SUCCESS;
        peer->send_seq--;
    }
    px_request_t *r;
    int rc = px_rt_isend(buf, len, dest, tag, &r);
    if (rc != PX_SUCCESS)
        return rc;
    return rt_wait(&r, NULL, "px_send");
}

int px_recv(void *buf, size_t len, int source, int tag, px_status_t *status)
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
            if (PX_RT_KIND_EAGER != u->kind)
                break;
            px_list_remove_item(&px_rt.unexpected, &u->super.super);
            size_t n = u->len <= len ? u->len : len;
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
    int rc = px_rt_irecv(buf, len, source, tag, &r);
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
    if (PX_UNLIKELY(!r->complete)) {
        px_status_t st = r->status;
        int rc = wait_slow(r, who);
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
    req_release(r);
    *request = NULL;
    return rc;
}

int px_rt_wait(px_request_t **request, px_status_t *status, const char *who)
{
    return rt_wait(request, status, who);
}

int px_wait(px_request_t **request, px_status_t *status)
{
    return rt_wait(request, status, "px_wait");
}

int px_test(px_request_t **request, int *flag, px_status_t *status)
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
    if (!r->complete)
        rt_progress();
    if (!r->complete) {
        *flag = 0;
        return PX_SUCCESS;
    }
    *flag = 1;
    return px_wait(request, status);
}

int px_waitall(size_t count, px_request_t **requests, px_status_t *statuses)
{
    if (count && NULL == requests)
        return PX_ERR_BAD_PARAM;
    int first = PX_SUCCESS;
    for (size_t i = 0; i < count; ++i) {
        int rc = px_wait(&requests[i], statuses ? &statuses[i] : NULL);
        if (rc != PX_SUCCESS && PX_SUCCESS == first)
            first = rc;
    }
    return first;
}

/* ------------------------------------------------------------------ errors */

/* Complete every pending operation with `rank` with `error`. Requests the
 * application has let go of ("released") are not failed again: when the
 * transport is gone (`transport_gone`) nothing will come for them, so they
 * leave px_rt.active and are freed once their local operations end. */
static void fail_rank(int rank, int error, bool transport_gone)
{
    px_request_t *r, *n;
    PX_LIST_FOREACH_SAFE(r, n, &px_rt.posted, px_request_t)
    {
        if (r->peer == rank)
            px_rt_req_fail(r, error);
    }
    PX_LIST_FOREACH_SAFE(r, n, &px_rt.active, px_request_t)
    {
        int who = PX_RT_REQ_SEND == r->type ? r->peer : r->status.source;
        if (who != rank)
            continue;
        if (!r->released) {
            px_rt_req_fail(r, error);
        } else if (transport_gone) {
            px_rt_active_remove(r);
            px_rt_req_unhold(r);
        }
    }
    px_list_item_t *it = px_list_get_first(&px_rt.pending), *next;
    for (; it != px_list_get_end(&px_rt.pending); it = next) {
        next = it->px_list_next;
        px_request_t *q = px_container_of(it, px_request_t, pend_link);
        int who = PX_RT_REQ_SEND == q->type ? q->peer : q->status.source;
        if (who == rank)
            px_rt_req_fail(q, error);
    }
}

static void peer_mark_failed(int rank, int code)
{
    px_rt_peer_t *p = &px_rt.peers[rank];
    p->failed = code;
    p->tiny_below = 0;
}

void px_rt_fail_peer(int rank, int error, const char *why)
{
    if (rank < 0 || rank >= px_rt.size || px_rt.peers[rank].failed)
        return;
    px_show_error("runtime: rank %d (host %s) is treated as failed by this process: %s; its "
                  "pending sends and receives fail with \"%s\", later ones fail at once, and its "
                  "messages are discarded",
                  rank, px_rt.procs[rank].hostname ? px_rt.procs[rank].hostname : "?", why,
                  px_strerror(error));
    peer_mark_failed(rank, error);
    px_rt.peers[rank].failed_here = true;
    fail_rank(rank, error, false);
}

void px_rt_btl_error(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, int rank, int error,
                     const char *description)
{
    const char *name = btl && btl->btl_component ? btl->btl_component->base.component_name : "?";
    int code = (PX_ERR_PEER_FAILED == error) ? PX_ERR_PEER_FAILED : PX_ERR_COMM;
    for (int r = 0; r < px_rt.size; ++r) {
        px_rt_peer_t *p = &px_rt.peers[r];
        /* A peer this process failed itself may still lose its transport:
         * then what waited on that transport is let go too. */
        if (NULL == p->btl || (p->failed && !p->failed_here))
            continue;
        bool hit = false;
        if (rank >= 0) {
            hit = (r == rank);
        } else {
            for (int i = 0; i < p->btl->num_send && !hit; ++i)
                hit = p->btl->send[i].module == btl &&
                      (NULL == endpoint || p->btl->send[i].endpoint == endpoint);
        }
        if (!hit)
            continue;
        if (!p->failed)
            px_show_error("btl %s: transport error with rank %d (host %s): %s (%s); its pending "
                          "sends and receives fail with \"%s\"",
                          name, r, px_rt.procs[r].hostname ? px_rt.procs[r].hostname : "?",
                          description ? description : "no description", px_strerror(error),
                          px_strerror(code));
        else
            code = p->failed;
        peer_mark_failed(r, code);
        p->failed_here = false;
        fail_rank(r, code, true);
    }
}

void px_rt_pml_quiesce(void)
{
    /* Released requests still waiting for a peer (a FIN that will not come
     * now): their registrations must go before the transports do. */
    px_request_t *r, *n;
    PX_LIST_FOREACH_SAFE(r, n, &px_rt.active, px_request_t)
    {
        if (r->released) {
            px_rt_active_remove(r);
            px_rt_req_unhold(r);
        }
    }
}

size_t px_rt_unexpected_count(void)
{
    return px_list_get_size(&px_rt.unexpected);
}
size_t px_rt_posted_count(void)
{
    return px_list_get_size(&px_rt.posted);
}

/* ------------------------------------------------------------------ setup */

void px_rt_pml_peer_setup(px_rt_peer_t *peer, px_btl_base_peer_t *btl)
{
    peer->btl = btl;
    peer->send_seq = 0;
    peer->recv_seq = 0;
    peer->failed = PX_SUCCESS;
    peer->failed_here = false;
    peer->dropped = 0;
    px_btl_base_peer_module_t *pm = &btl->eager[0];
    peer->eager_btl = pm->module;
    peer->eager_ep = pm->endpoint;
    size_t limit = btl->eager_limit;
    size_t data = limit > sizeof(px_rt_match_hdr_t) ? limit - sizeof(px_rt_match_hdr_t) : 0;
    if (px_rt.eager_limit && px_rt.eager_limit < data)
        data = px_rt.eager_limit;
    peer->eager_data = data;
    /* The immediate path needs one eager module with sendi (several rotate,
     * which the slow path handles). */
    peer->tiny_below = 0;
    if (1 == btl->num_eager && pm->module->btl_sendi && px_rt.tiny_limit > 0)
        peer->tiny_below = (px_rt.tiny_limit < data ? px_rt.tiny_limit : data) + 1;
}

int px_rt_pml_init(void)
{
    PX_OBJ_CONSTRUCT(&px_rt.posted, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.unexpected, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.pending, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.active, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.requests, px_free_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.ux_items, px_free_list_t);
    px_free_list_params_t p = {
        .item_class = PX_CLASS(px_request_t),
        .num_initial = 32,
        .num_per_grow = 64,
        .thread_safe = false,
    };
    int rc = px_free_list_init(&px_rt.requests, &p);
    if (rc != PX_SUCCESS)
        return rc;
    p.item_class = PX_CLASS(px_rt_ux_t);
    rc = px_free_list_init(&px_rt.ux_items, &p);
    if (rc != PX_SUCCESS)
        return rc;
    px_rt.output = px_output_open("runtime", px_rt.verbose);
    /* Test hook (docs/testing.md): the Nth unexpected-message record fails. */
    const char *hook = getenv("PX_RT_TEST_UX_FAIL");
    px_rt.ux_fail_countdown = hook ? strtoul(hook, NULL, 10) : 0;
    px_btl_base_register_am(PX_RT_AM_MATCH, am_match, NULL);
    px_btl_base_register_am(PX_RT_AM_RNDV, am_rndv, NULL);
    px_btl_base_register_am(PX_RT_AM_ACK, px_rt_am_ack, NULL);
    px_btl_base_register_am(PX_RT_AM_FRAG, px_rt_am_frag, NULL);
    px_btl_base_register_am(PX_RT_AM_FIN, px_rt_am_fin, NULL);
    px_btl_base_register_am(PX_RT_AM_PUTACK, px_rt_am_putack, NULL);
    px_btl_base_register_am(PX_RT_AM_PUTFIN, px_rt_am_putfin, NULL);
    return PX_SUCCESS;
}

int px_rt_pml_finalize(void)
{
    /* Requests the application never completed, queued messages nobody received. */
    if (px_output_check(px_rt.output, 1) && px_rt.peers) {
        for (int r = 0; r < px_rt.size; ++r) {
            size_t n = px_rt.peers[r].dropped + px_list_get_size(&px_rt.peers[r].ooo);
            px_rt_ux_t *u;
            PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
            {
                n += u->src == r;
            }
            if (n)
                px_output(px_rt.output,
                          "px_finalize: %zu message(s) from rank %d were never received; "
                          "discarded",
                          n, r);
        }
        size_t posted = px_list_get_size(&px_rt.posted);
        if (posted)
            px_output(px_rt.output, "px_finalize: %zu receive(s) never matched a message", posted);
    }
    px_list_item_t *it;
    while ((it = px_list_remove_first(&px_rt.unexpected)))
        ux_free((px_rt_ux_t *)it);
    for (int r = 0; px_rt.peers && r < px_rt.size; ++r)
        while ((it = px_list_remove_first(&px_rt.peers[r].ooo)))
            ux_free((px_rt_ux_t *)it);
    while ((it = px_list_remove_first(&px_rt.pending)))
        ;
    while ((it = px_list_remove_first(&px_rt.posted)))
        ;
    while ((it = px_list_remove_first(&px_rt.active)))
        ;
    for (int t = PX_RT_AM_MATCH; t <= PX_RT_AM_PUTFIN; ++t)
        px_btl_base_register_am((px_btl_tag_t)t, NULL, NULL);
    PX_OBJ_DESTRUCT(&px_rt.ux_items);
    PX_OBJ_DESTRUCT(&px_rt.requests);
    PX_OBJ_DESTRUCT(&px_rt.active);
    PX_OBJ_DESTRUCT(&px_rt.pending);
    PX_OBJ_DESTRUCT(&px_rt.unexpected);
    PX_OBJ_DESTRUCT(&px_rt.posted);
    if (px_rt.output > 0)
        px_output_close(px_rt.output);
    px_rt.output = -1;
    return PX_SUCCESS;
}
