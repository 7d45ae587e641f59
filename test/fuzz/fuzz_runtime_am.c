/*
 * fuzz_runtime_am.c: the runtime's wire headers: the active-message
 * callbacks of runtime (pml.c, pml_rndv.c) for tags 1..7 (MATCH, RNDV,
 * ACK, FRAG, FIN, PUT-ACK, PUT-FIN), called through
 * px_btl_base_active_message_trigger with arbitrary segments, as a transport
 * would after receiving them from rank 0, in a singleton (boot/singleton,
 * btl/self) between px_init and px_finalize. The harness also posts receives
 * and starts sends to itself, so that messages can match and rendezvous be
 * in flight.
 *
 * Input: a list of operations, each one byte then its arguments:
 *   0x00-0x7f  inject: tag 1 + op % 7, u16 length (little-endian, at most
 *              1024), u8 split (two segments when 0 < split < length), then
 *              the bytes. A request id field (ACK/FIN/PUT-ACK: sreq at 0;
 *              ACK: rreq at 8; FRAG: rreq at 0; PUT-FIN: rreq at 8) holding
 *              a value below 8 is replaced by the id of the harness's own
 *              send (sreq) or receive (rreq) number value, so that messages
 *              can name requests in flight.
 *   0x80-0x8f  px_irecv: from rank 0 (op bit 0) or PX_ANY_SOURCE, u8 tag
 *              (0xff: PX_ANY_TAG), u16 buffer length
 *   0x90-0x9f  px_isend to rank 0: u8 tag, u16 length
 *   0xa0-0xaf  px_progress
 *   0xb0-0xbf  RDMA get/put outside the harness's buffers fail (op bit 0)
 *   0xc0-0xff  px_test on every request
 * Each segment is its own exact-size allocation, so reading past what a
 * message holds is caught by AddressSanitizer. The RDMA get and put of
 * btl/self are replaced: they copy only within buffers the harness owns
 * (the real ones would copy from any address a header names, which a
 * process sending to itself may do).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/runtime.h"
#include "frameworks/btl/btl.h"
#include "test/fuzz/fuzz.h"

#define MAX_REQS 8

typedef struct {
    px_request_t *req;
    char *buf;
    size_t len;
} slot_t;

static slot_t sends[MAX_REQS], recvs[MAX_REQS];
static int nsends, nrecvs;
static int rdma_fail;

/* Whether [addr, addr+len) lies in a buffer of the harness. */
static bool owned(uint64_t addr, size_t len)
{
    for (int k = 0; k < MAX_REQS; k++) {
        slot_t *s[2] = {&sends[k], &recvs[k]};
        for (int j = 0; j < 2; j++) {
            uint64_t b = (uint64_t)(uintptr_t)s[j]->buf;
            if (s[j]->buf && addr >= b && len <= s[j]->len && addr - b <= s[j]->len - len)
                return true;
        }
    }
    return false;
}

static int fake_rdma(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local, uint64_t remote,
                     px_btl_registration_handle_t *lh, size_t size, px_btl_rdma_completion_fn cb,
                     void *ctx, void *cbdata, bool get)
{
    int st = PX_SUCCESS;
    if (owned(remote, size) && owned((uint64_t)(uintptr_t)local, size)) {
        if (get)
            memmove(local, (void *)(uintptr_t)remote, size);
        else
            memmove((void *)(uintptr_t)remote, local, size);
    } else if (rdma_fail) {
        return PX_ERR_COMM;
    } else {
        st = PX_ERR_COMM; /* completes, with an error */
    }
    if (cb)
        cb(btl, ep, local, lh, ctx, cbdata, st);
    return PX_SUCCESS;
}

static int fake_get(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local, uint64_t remote,
                    px_btl_registration_handle_t *lh, px_btl_registration_handle_t *rh, size_t size,
                    int flags, int order, px_btl_rdma_completion_fn cb, void *ctx, void *cbdata)
{
    (void)rh, (void)flags, (void)order;
    return fake_rdma(btl, ep, local, remote, lh, size, cb, ctx, cbdata, true);
}

static int fake_put(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local, uint64_t remote,
                    px_btl_registration_handle_t *lh, px_btl_registration_handle_t *rh, size_t size,
                    int flags, int order, px_btl_rdma_completion_fn cb, void *ctx, void *cbdata)
{
    (void)rh, (void)flags, (void)order;
    return fake_rdma(btl, ep, local, remote, lh, size, cb, ctx, cbdata, false);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    px_fuzz_singleton_env();
    /* Small limits so that short inputs reach the rendezvous and fragments. */
    setenv("PX_MCA_btl_self_eager_limit", "128", 1);
    setenv("PX_MCA_btl_self_max_send_size", "256", 1);
    setenv("PX_MCA_runtime_tiny_limit", "16", 1);
    setenv("PX_MCA_runtime_wait_timeout", "2", 1);
    return 0;
}

static uint64_t id_of(slot_t *s, uint64_t v)
{
    return s[v].req ? (uint64_t)(uintptr_t)s[v].req : 0;
}

static void fix_id(unsigned char *msg, size_t len, size_t at, slot_t *s)
{
    uint64_t v;
    if (len < at + 8)
        return;
    memcpy(&v, msg + at, 8);
    if (v < MAX_REQS) {
        v = id_of(s, v);
        memcpy(msg + at, &v, 8);
    }
}

static void inject(int tag, unsigned char *msg, size_t len, size_t split)
{
    switch (tag) {
    case PX_RT_AM_ACK:
        fix_id(msg, len, 0, sends);
        fix_id(msg, len, 8, recvs);
        break;
    case PX_RT_AM_FIN:
    case PX_RT_AM_PUTACK:
        fix_id(msg, len, 0, sends);
        break;
    case PX_RT_AM_FRAG:
        fix_id(msg, len, 0, recvs);
        break;
    case PX_RT_AM_PUTFIN:
        fix_id(msg, len, 8, recvs);
        break;
    default:
        break;
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

static void test_all(void)
{
    for (int k = 0; k < MAX_REQS; k++) {
        slot_t *s[2] = {&sends[k], &recvs[k]};
        for (int j = 0; j < 2; j++) {
            int flag = 0;
            px_status_t st;
            if (s[j]->req)
                px_test(&s[j]->req, &flag, &st);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int argc = 1;
    char *args[] = {"fuzz_runtime_am", NULL}, **argv = args;
    if (px_init(&argc, &argv) != PX_SUCCESS)
        abort();
    if (px_size() != 1 || px_rank() != 0)
        abort();
    px_rt_peer_t *peer = &px_rt.peers[0];
    px_btl_base_peer_t *pb = peer->btl;
    int nrdma = pb ? pb->num_rdma : 0;
    px_btl_module_t *mods[8];
    struct {
        __typeof__(((px_btl_module_t *)0)->btl_get) get;
        __typeof__(((px_btl_module_t *)0)->btl_put) put;
    } saved[8];
    for (int i = 0; i < nrdma && i < 8; i++) {
        mods[i] = pb->rdma[i].module;
        saved[i].get = mods[i]->btl_get;
        saved[i].put = mods[i]->btl_put;
        if (mods[i]->btl_get)
            mods[i]->btl_get = fake_get;
        if (mods[i]->btl_put)
            mods[i]->btl_put = fake_put;
    }
    rdma_fail = 0;
    const uint8_t *p = data, *end = data + size;
    unsigned char msg[1024];
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
            inject(1 + op % 7, msg, got, split);
        } else if (op < 0x90) {
            uint8_t tag;
            uint16_t len;
            px_fuzz_take(&p, end, &tag, 1);
            px_fuzz_take(&p, end, &len, 2);
            slot_t *s = &recvs[nrecvs % MAX_REQS];
            if (s->req)
                continue; /* still in use */
            free(s->buf); /* a request of this slot that has completed */
            s->len = len;
            s->buf = malloc(len ? len : 1);
            if (!s->buf)
                abort();
            if (px_irecv(s->buf, len, (op & 1) ? 0 : PX_ANY_SOURCE, tag == 0xff ? PX_ANY_TAG : tag,
                         &s->req) != PX_SUCCESS)
                abort();
            nrecvs++;
        } else if (op < 0xa0) {
            uint8_t tag;
            uint16_t len;
            px_fuzz_take(&p, end, &tag, 1);
            px_fuzz_take(&p, end, &len, 2);
            slot_t *s = &sends[nsends % MAX_REQS];
            if (s->req)
                continue; /* still in use */
            free(s->buf); /* a request of this slot that has completed */
            s->len = len;
            s->buf = malloc(len ? len : 1);
            if (!s->buf)
                abort();
            for (size_t i = 0; i < len; i++)
                s->buf[i] = (char)(i * 7 + tag);
            if (px_isend(s->buf, len, 0, tag, &s->req) != PX_SUCCESS)
                abort();
            nsends++;
        } else if (op < 0xb0) {
            px_progress();
        } else if (op < 0xc0) {
            rdma_fail = op & 1;
        } else {
            test_all();
        }
    }
    /* Complete or cancel everything (a request that can never complete is
     * cancelled by px_wait in a singleton). */
    for (int k = 0; k < MAX_REQS; k++) {
        px_status_t st;
        if (recvs[k].req)
            px_wait(&recvs[k].req, &st);
    }
    for (int k = 0; k < MAX_REQS; k++) {
        px_status_t st;
        if (sends[k].req)
            px_wait(&sends[k].req, &st);
    }
    for (int k = 0; k < MAX_REQS; k++) {
        free(sends[k].buf);
        free(recvs[k].buf);
    }
    memset(sends, 0, sizeof sends);
    memset(recvs, 0, sizeof recvs);
    nsends = nrecvs = 0;
    for (int i = 0; i < nrdma && i < 8; i++) {
        mods[i]->btl_get = saved[i].get;
        mods[i]->btl_put = saved[i].put;
    }
    px_finalize();
    return 0;
}
