/*
 * fuzz_xfer_am.c: the transfer engine's wire messages: notifications (tag
 * 16, px_xfer_am_notify), the staged path's messages (17 WRITE, 18 WACK,
 * 19 READ, 20 RDATA; runtime/xfer/path_stage.c, stage_target.c) and region
 * revocations (21 REVOKE, 22 RVACK: a singleton has no peer to revoke from,
 * so these end at their checks), called through
 * px_btl_base_active_message_trigger with arbitrary segments, as a transport
 * would after receiving them from rank 0, in a singleton (boot/singleton,
 * btl/self) between px_init and px_finalize. The harness has a region of its
 * own (the target of WRITE and READ) and submits staged requests to itself,
 * so that replies can name requests in flight.
 *
 * Input: a list of operations, each one byte then its arguments:
 *   0x00-0x7f  inject: tag 16 + op % 7, u16 length (little-endian, at most
 *              1024), u8 split (two segments when 0 < split < length), then
 *              the bytes. In a staged header (tags 17-22) a region id below
 *              4 is replaced by the harness's region's id, and a token below
 *              8 by the request that holds bounce buffer `cookie` (when one
 *              does), so that messages can reach a region and a request.
 *   0x80-0x8f  submit a staged read (op bit 0) or write of the harness's
 *              region to itself: u16 offset, u16 length (cut to the region)
 *   0x90-0x9f  px_xfer_progress
 *   0xa0-0xaf  px_xfer_notify_recv without waiting: u16 capacity
 *   0xb0-0xbf  px_xfer_notify to itself: u16 length
 *   0xc0-0xcf  free the harness's region and register a new one (requests in
 *              flight on it make the free fail; then nothing changes)
 *   0xd0-0xff  px_xfer_batch_test of every request
 * Checks, beyond "no crash, no sanitizer report, no leak": every final
 * request that failed has a reason and a code; every notification taken is
 * at most PX_XFER_NOTIFY_MAX bytes and fits what was asked; at the end every
 * request is final after a bounded wait.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"
#include "runtime/runtime.h"
#include "runtime/xfer/xfer.h"
#include "frameworks/btl/btl.h"
#include "test/fuzz/fuzz.h"

#define REGION   4096
#define MAX_REQS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    px_fuzz_singleton_env();
    /* Small bounce buffers and few of them: chunks, waits for a buffer. */
    setenv("PX_MCA_xfer_stage_size", "256", 1);
    setenv("PX_MCA_xfer_stage_count", "4", 1);
    setenv("PX_MCA_runtime_wait_timeout", "2", 1);
    return 0;
}

static px_xfer_region_t *target, *local;
static char *target_mem, *local_mem;
static px_xfer_remote_t *remote;

static int make_target(void)
{
    target_mem = calloc(1, REGION);
    if (!target_mem || px_xfer_register(target_mem, REGION, &target) != PX_SUCCESS)
        return -1;
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen;
    if (px_xfer_key_export(target, key, sizeof key, &klen) != PX_SUCCESS ||
        px_xfer_key_import(0, key, klen, &remote) != PX_SUCCESS)
        return -1;
    return 0;
}

static void inject(int tag, unsigned char *msg, size_t len, size_t split)
{
    if (tag != PX_XFER_AM_NOTIFY) {
        px_xfer_stage_hdr_t h;
        if (len >= sizeof h) {
            memcpy(&h, msg, sizeof h);
            if (h.region < 4 && target)
                h.region = target->id;
            if (h.token < 8 && px_xfer.pool_owner && px_xfer.pool_count > 0) {
                px_xfer_slot_t *o = px_xfer.pool_owner[h.cookie % px_xfer.pool_count];
                if (o) {
                    h.cookie = (uint16_t)(h.cookie % px_xfer.pool_count);
                    h.token = (uint64_t)(uintptr_t)o;
                }
            }
            memcpy(msg, &h, sizeof h);
        }
    }
    px_btl_segment_t seg[2];
    size_t nseg = (split > 0 && split < len) ? 2 : 1;
    size_t lens[2] = {nseg == 2 ? split : len, nseg == 2 ? len - split : 0};
    for (size_t i = 0; i < nseg; i++) {
        seg[i].seg_len = lens[i];
        seg[i].seg_addr = malloc(lens[i] ? lens[i] : 1);
        if (!seg[i].seg_addr)
            abort();
        memcpy(seg[i].seg_addr, msg + (i ? split : 0), lens[i]);
    }
    px_rt_peer_t *peer = &px_rt.peers[0];
    px_btl_receive_descriptor_t d = {
        .endpoint = peer->eager_ep,
        .src_rank = 0,
        .des_segments = seg,
        .des_segment_count = nseg,
        .tag = (px_btl_tag_t)tag,
        .cbdata = px_btl_base_active_message_trigger[tag].cbdata,
    };
    if (px_btl_base_active_message_trigger[tag].cbfunc)
        px_btl_base_active_message_trigger[tag].cbfunc(peer->eager_btl, &d);
    for (size_t i = 0; i < nseg; i++)
        free(seg[i].seg_addr);
}

static void check_final(px_xfer_batch_t *b)
{
    for (size_t i = 0; i < px_xfer_batch_count(b); i++) {
        px_xfer_status_t st;
        int e = px_xfer_batch_test(b, i, &st);
        if (e != st.error || !st.transport)
            abort();
        if (e < 0 && (!st.reason || !st.reason[0])) {
            fprintf(stderr, "fuzz_xfer_am: request %zu failed (%s) without a reason\n", i,
                    px_strerror(e));
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int argc = 1;
    char *args[] = {"fuzz_xfer_am", NULL}, **argv = args;
    if (px_init(&argc, &argv) != PX_SUCCESS)
        abort();
    if (px_size() != 1 || px_rank() != 0)
        abort();
    local_mem = calloc(1, REGION);
    if (!local_mem || px_xfer_register(local_mem, REGION, &local) != PX_SUCCESS ||
        make_target() != 0)
        abort();
    px_xfer_batch_t *b;
    if (px_xfer_batch_alloc(MAX_REQS, &b) != PX_SUCCESS)
        abort();
    const uint8_t *p = data, *end = data + size;
    unsigned char msg[1024];
    char *old_mem[16];
    int nold = 0;
    while (p < end) {
        uint8_t op = *p++;
        if (op < 0x80) {
            uint16_t len;
            uint8_t split;
            px_fuzz_take(&p, end, &len, 2);
            px_fuzz_take(&p, end, &split, 1);
            if (len > sizeof msg)
                len = sizeof msg;
            size_t got = px_fuzz_take(&p, end, msg, len);
            inject(PX_XFER_AM_NOTIFY + op % 7, msg, got, split);
        } else if (op < 0x90) {
            uint16_t off, len;
            px_fuzz_take(&p, end, &off, 2);
            px_fuzz_take(&p, end, &len, 2);
            off %= REGION;
            if (len > REGION - off)
                len = (uint16_t)(REGION - off);
            if (px_xfer_batch_count(b) == MAX_REQS)
                continue;
            px_xfer_request_t q = {
                (op & 1) ? PX_XFER_READ : PX_XFER_WRITE, local, off, remote, off, len, "stage"};
            if (px_xfer_batch_submit(b, &q, 1, NULL) != PX_SUCCESS)
                abort();
        } else if (op < 0xa0) {
            px_xfer_progress();
        } else if (op < 0xb0) {
            uint16_t cap;
            px_fuzz_take(&p, end, &cap, 2);
            cap %= 2 * PX_XFER_NOTIFY_MAX;
            char *buf = malloc(cap ? cap : 1);
            if (!buf)
                abort();
            int from = -1;
            size_t n = 0;
            int rc = px_xfer_notify_recv(&from, buf, cap, &n, 0);
            if ((PX_SUCCESS == rc || PX_ERR_TRUNCATE == rc) &&
                (from != 0 || n > PX_XFER_NOTIFY_MAX || (PX_SUCCESS == rc && n > cap))) {
                fprintf(stderr, "fuzz_xfer_am: a notification of %zu bytes from rank %d\n", n,
                        from);
                abort();
            }
            free(buf);
        } else if (op < 0xc0) {
            uint16_t len;
            px_fuzz_take(&p, end, &len, 2);
            len %= PX_XFER_NOTIFY_MAX + 1;
            memset(msg, op, len);
            if (px_xfer_notify(0, msg, len) != PX_SUCCESS)
                abort();
        } else if (op < 0xd0) {
            if (nold == 16)
                continue;
            px_xfer_region_t *t = target;
            if (px_xfer_free(&t) != PX_SUCCESS)
                continue; /* requests in flight on it */
            px_xfer_remote_release(&remote);
            old_mem[nold++] = target_mem; /* an injected message may still name it */
            target = NULL;
            if (make_target() != 0)
                abort();
        } else {
            for (size_t i = 0; i < px_xfer_batch_count(b); i++)
                px_xfer_batch_test(b, i, NULL);
        }
    }
    /* Every request ends (a staged request to ourselves completes in our
     * own progress, or fails with a reason). */
    int rc = px_xfer_batch_wait(b, 5);
    if (PX_ERR_TIMEOUT == rc) {
        fprintf(stderr, "fuzz_xfer_am: %zu request(s) still pending after 5 s\n",
                px_xfer_batch_pending(b));
        abort();
    }
    check_final(b);
    if (px_xfer_batch_free(&b) != PX_SUCCESS)
        abort();
    px_xfer_remote_release(&remote);
    px_xfer_free(&target);
    px_xfer_free(&local);
    px_finalize();
    free(target_mem);
    free(local_mem);
    for (int i = 0; i < nold; i++)
        free(old_mem[i]);
    target_mem = local_mem = NULL;
    return 0;
}
