/*
 * stage_target.c: the receiving side of staged requests (path_stage.c is
 * the initiator). Its proxy runs in the active-message callbacks: a WRITE
 * chunk is copied into the region named by id and answered WACK; a READ is
 * answered RDATA straight from the region into the transport's descriptor.
 * The target never waits for a buffer of its own: an answer the transport
 * cannot take now waits on the job list (in order, the region looked up
 * again when it runs), which progress retries. Also the wire header's reader
 * and the small send every message of the engine goes through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/xfer/xfer.h"

int px_xfer_send(int peer, px_btl_tag_t am, const void *hdr, size_t hlen, const void *data,
                 size_t dlen)
{
    int failed = px_xfer_peer_error(peer);
    if (failed)
        return failed;
    px_rt_peer_t *rp = px_rt_peer_find(peer);
    px_btl_module_t *m = rp ? rp->eager_btl : NULL;
    if (!m)
        return PX_ERR_UNREACH;
    if (m->btl_sendi) {
        int rc = m->btl_sendi(m, rp->eager_ep, hdr, hlen, data, dlen, PX_BTL_NO_ORDER, 0, am, NULL);
        if (PX_SUCCESS == rc || PX_ERR_TEMP_OUT_OF_RESOURCE != rc)
            return rc;
    }
    if (hlen + dlen > m->btl_max_send_size)
        return PX_ERR_BAD_PARAM;
    px_btl_descriptor_t *des =
        m->btl_alloc(m, rp->eager_ep, PX_BTL_NO_ORDER, hlen + dlen, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (!des)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    char *p = des->des_segments[0].seg_addr;
    memcpy(p, hdr, hlen);
    if (dlen)
        memcpy(p + hlen, data, dlen);
    des->des_segments[0].seg_len = hlen + dlen;
    des->des_cbfunc = NULL;
    int rc = m->btl_send(m, rp->eager_ep, des, am);
    if (rc < 0) {
        m->btl_free(m, des);
        return rc;
    }
    return PX_SUCCESS;
}

/* The header of a staged message (NULL, after saying why, when short). */
bool px_xfer_stage_hdr(const px_btl_receive_descriptor_t *d, px_xfer_stage_hdr_t *h,
                       size_t *data_len, const char *what)
{
    size_t total = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i)
        total += d->des_segments[i].seg_len;
    if (d->des_segment_count < 1 || d->des_segments[0].seg_len < sizeof *h) {
        px_show_error("a staged %s from rank %d has %zu bytes, %zu in its first segment: less "
                      "than its %zu-byte header (which a transport delivers whole, first); "
                      "dropped",
                      what, d->src_rank, total,
                      d->des_segment_count ? d->des_segments[0].seg_len : 0, sizeof *h);
        return false;
    }
    memcpy(h, d->des_segments[0].seg_addr, sizeof *h);
    *data_len = total - sizeof *h;
    return true;
}

/* Copy `len` bytes after the header out of the segments. memmove: a
 * transport that delivers in place (btl/self) hands over the sender's own
 * bytes, which a staged request of a process to itself may take from the
 * same region it writes (a write sends straight from its region). */
void px_xfer_stage_copy_out(const px_btl_receive_descriptor_t *d, char *dst, size_t len)
{
    size_t skip = sizeof(px_xfer_stage_hdr_t);
    for (size_t i = 0; i < d->des_segment_count && len; ++i) {
        const char *a = d->des_segments[i].seg_addr;
        size_t l = d->des_segments[i].seg_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        size_t c = l - skip < len ? l - skip : len;
        memmove(dst, a + skip, c);
        dst += c;
        len -= c;
        skip = 0;
    }
}

/* ------------------------------------------------------------ the proxy */

static void job_queue(px_xfer_job_t *j)
{
    px_xfer_need_progress();
    px_list_append(&px_xfer.jobs, &j->link);
    atomic_fetch_add(&px_xfer.work, 1);
}

static void job_free(px_xfer_job_t *j)
{
    atomic_fetch_sub(&px_xfer.work, 1);
    PX_OBJ_DESTRUCT(&j->link);
    free(j);
}

void px_xfer_jobs_finalize(void)
{
    px_list_item_t *it;
    while ((it = px_list_remove_first(&px_xfer.jobs)) != NULL)
        job_free(px_container_of(it, px_xfer_job_t, link));
}

/* Check a chunk against the region; returns the status. */
static uint8_t target_check(const px_xfer_stage_hdr_t *h, px_xfer_region_t **out, int peer)
{
    px_xfer_region_t *r = px_xfer_region_find(h->region);
    *out = r;
    if (!r)
        return PX_XFER_ST_NOREGION;
    if (h->offset > r->len || h->len > r->len - h->offset)
        return PX_XFER_ST_BOUNDS;
    px_rt_peer_t *rp = px_rt_peer_find(peer);
    px_btl_module_t *m = rp ? rp->eager_btl : NULL;
    if (m && h->len + sizeof *h > m->btl_max_send_size)
        return PX_XFER_ST_BOUNDS;
    return PX_XFER_ST_OK;
}

/* Run a proxy's answer; PX_ERR_TEMP_OUT_OF_RESOURCE when it must wait. */
static int job_run(px_xfer_job_t *j)
{
    if (PX_XFER_AM_RVACK == j->am) {
        /* After every request of ours on the region has ended (1: not yet;
         * the jobs behind it go on meanwhile, they may be what those
         * requests wait for). */
        if (px_xfer_revoked_inflight(j->peer, j->hdr.region) > 0)
            return 1;
        return px_xfer_send(j->peer, PX_XFER_AM_RVACK, &j->hdr, sizeof j->hdr, NULL, 0);
    }
    if (PX_XFER_AM_WACK == j->am)
        return px_xfer_send(j->peer, PX_XFER_AM_WACK, &j->hdr, sizeof j->hdr, NULL, 0);
    px_xfer_region_t *r;
    px_xfer_stage_hdr_t h = j->hdr;
    h.status = target_check(&h, &r, j->peer);
    if (PX_XFER_ST_OK != h.status) {
        h.len = 0;
        return px_xfer_send(j->peer, PX_XFER_AM_RDATA, &h, sizeof h, NULL, 0);
    }
    return px_xfer_send(j->peer, PX_XFER_AM_RDATA, &h, sizeof h, r->base + h.offset, h.len);
}

int px_xfer_stage_jobs(void)
{
    int n = 0;
    px_list_item_t *it = px_list_get_first(&px_xfer.jobs);
    while (it != px_list_get_end(&px_xfer.jobs)) {
        px_xfer_job_t *j = px_container_of(it, px_xfer_job_t, link);
        int rc = job_run(j);
        if (rc > 0 && !px_xfer_peer_error(j->peer)) {
            it = px_list_get_next(it); /* a revocation answer that must wait: skip it */
            continue;
        }
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc && !px_xfer_peer_error(j->peer))
            break;
        it = px_list_remove_item(&px_xfer.jobs, it);
        job_free(j);
        n++;
    }
    return n;
}

/* Answer now, or queue the answer (behind earlier ones, keeping their order). */
void px_xfer_target_answer(int peer, uint8_t am, const px_xfer_stage_hdr_t *h)
{
    px_xfer_job_t tmp = {.peer = peer, .am = am, .buf = -1, .hdr = *h};
    if (px_list_is_empty(&px_xfer.jobs)) {
        int rc = job_run(&tmp);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc && rc <= 0)
            return;
    }
    px_xfer_job_t *j = malloc(sizeof *j);
    if (!j) {
        px_show_error("out of memory queueing a staged answer to rank %d; dropped", peer);
        return;
    }
    *j = tmp;
    PX_OBJ_CONSTRUCT(&j->link, px_list_item_t);
    job_queue(j);
}

void px_xfer_am_write(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    size_t dl;
    if (!px_xfer.ready || !px_xfer_stage_hdr(d, &h, &dl, "write"))
        return;
    px_xfer_region_t *r;
    h.status = target_check(&h, &r, d->src_rank);
    if (PX_XFER_ST_OK == h.status && dl != h.len)
        h.status = PX_XFER_ST_BOUNDS;
    if (PX_XFER_ST_OK == h.status)
        px_xfer_stage_copy_out(d, r->base + h.offset, dl);
    px_xfer_target_answer(d->src_rank, PX_XFER_AM_WACK, &h);
}

void px_xfer_am_read(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    px_xfer_stage_hdr_t h;
    size_t dl;
    if (!px_xfer.ready || !px_xfer_stage_hdr(d, &h, &dl, "read"))
        return;
    px_xfer_target_answer(d->src_rank, PX_XFER_AM_RDATA, &h);
}
