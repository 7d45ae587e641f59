/*
 * first_frag_probe.c: a rendezvous request (RNDV) that carries the message's
 * first bytes (runtime_rndv_first_frag, runtime/pml/pml_rndv.c), driven by
 * t_first_frag.sh under pxrun -n 2 over each transport and protocol.
 *
 *  1. Rank 0 sends rank 1 messages of sizes around the peer's eager limit E
 *     (E+1 .. E+3: the RNDV carries all but the last bytes), around the
 *     fragment and read sizes (64 KiB, 128 KiB, 512 KiB, each +-1) and 1 MiB +
 *     3, each with a pattern of its own; rank 1 checks every byte. Each size
 *     goes three ways: the receive posted before the RNDV arrives, posted
 *     after it (unexpected: the carried bytes are queued with the header),
 *     and into a buffer shorter than the message (truncated: PX_ERR_TRUNCATE,
 *     the bytes that fit). Then the same from rank 1 to rank 0.
 *  2. Built as first_frag_inject (-DFIRST_FRAG_INJECT, libpxcore.la linked
 *     in to reach px_rt; so no plugin such as btl/ofi) and run with
 *     "inject": rank 0 injects RNDV headers that claim carried data
 *     they do not hold (a length beyond the bytes that follow, a length not
 *     less than the message, no room for the length), as a transport would
 *     deliver them (px_btl_base_active_message_trigger). Each must be
 *     refused with an error and never matched: a later real message with the
 *     same tag is what the receive gets.
 * Prints "rank R: N errors" and, with inject, "inject: recv value V".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "runtime/runtime.h"
#include "runtime/pml/pml_wire.h"
#include "frameworks/btl/btl.h"

static unsigned char pattern(size_t k, int src, int i, int way)
{
    return (unsigned char)(k * 131 + (k >> 8) + (size_t)src * 7 + (size_t)i * 3 + (size_t)way * 5);
}

/* One message of `len` bytes from `from` to `to`, received `way`: 0 posted
 * first, 1 unexpected, 2 truncated to len - 7. Returns the errors seen. */
static int one(int me, int from, int to, size_t len, int i, int way, unsigned char *s,
               unsigned char *r)
{
    int errors = 0, tag = 100 + i * 3 + way;
    size_t want = 2 == way ? len - 7 : len;
    if (me == from) {
        for (size_t k = 0; k < len; ++k)
            s[k] = pattern(k, from, i, way);
        if (1 == way) { /* the receiver posts after this has arrived */
            px_request_t *q;
            if (px_isend(s, len, to, tag, &q) != PX_SUCCESS)
                return 1;
            if (px_barrier() != PX_SUCCESS || px_wait(&q, NULL) != PX_SUCCESS)
                errors++;
        } else if (px_send(s, len, to, tag) != PX_SUCCESS) {
            errors++;
        }
    } else if (me == to) {
        memset(r, 0xee, len + 16);
        px_status_t st;
        if (1 == way) {
            px_barrier();
            usleep(20000); /* the RNDV is in by now (progress in the barrier) */
        }
        int rc = px_recv(r, want, from, tag, &st);
        int expect = 2 == way ? PX_ERR_TRUNCATE : PX_SUCCESS;
        if (rc != expect || st.length != want) {
            printf("rank %d: size %zu way %d: rc %d length %zu (want %zu)\n", me, len, way, rc,
                   st.length, want);
            errors++;
        }
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < want; ++k)
            if (r[k] != pattern(k, from, i, way) && 0 == bad++)
                first = k;
        for (size_t k = want; k < want + 16; ++k)
            if (r[k] != 0xee && 0 == bad++)
                first = k;
        if (bad) {
            printf("rank %d: size %zu way %d: %zu bad bytes, the first at %zu\n", me, len, way, bad,
                   first);
            errors++;
        }
    } else if (1 == way) {
        px_barrier();
    }
    return errors;
}

#ifdef FIRST_FRAG_INJECT
static void inject(const void *msg, size_t len)
{
    px_btl_segment_t seg = {(void *)msg, len};
    px_rt_peer_t *peer = &px_rt.peers[0];
    px_btl_receive_descriptor_t d = {
        .endpoint = peer->eager_ep,
        .src_rank = 0,
        .des_segments = &seg,
        .des_segment_count = 1,
        .tag = PX_RT_AM_RNDV,
        .cbdata = px_btl_base_active_message_trigger[PX_RT_AM_RNDV].cbdata,
    };
    px_btl_base_active_message_trigger[PX_RT_AM_RNDV].cbfunc(peer->eager_btl, &d);
}

/* Rank 0 to itself: RNDV headers whose carried length lies, tag 7, the next
 * sequence number (so a header taken would be matched). */
static int inject_bad(void)
{
    px_rt_peer_t *self = &px_rt.peers[0];
    struct {
        px_rt_rndv_hdr_t h;
        px_rt_rndv_data_t d;
        unsigned char data[64];
    } m;
    memset(&m, 0, sizeof(m));
    m.h.m = (px_rt_match_hdr_t){0, 7, self->recv_seq, PX_RT_RNDV_FLAG_DATA};
    m.h.len = 1000;
    m.h.sreq = 0x1234;
    m.h.addr = 0;
    /* 1. says 1000000 bytes, 64 follow */
    m.d.len = 1000000;
    inject(&m, sizeof(m));
    /* 2. says 64 (all that follow), but the message is 64 bytes: not less */
    m.h.len = 64;
    m.d.len = 64;
    inject(&m, sizeof(m));
    /* 3. the flag, but not even room for the length */
    inject(&m, sizeof(m.h) + 4);
    /* 4. says fewer than follow */
    m.h.len = 1000;
    m.d.len = 10;
    inject(&m, sizeof(m));
    /* The real message of tag 7 from this rank: what the receive must get. */
    int v = 4242, got = 0;
    px_request_t *q;
    if (px_isend(&v, sizeof(v), 0, 7, &q) != PX_SUCCESS)
        return 1;
    px_status_t st;
    int rc = px_recv(&got, sizeof(got), 0, 7, &st);
    px_wait(&q, NULL);
    printf("inject: recv value %d (%s)\n", got, px_strerror(rc));
    return got != 4242 || rc != PX_SUCCESS;
}
#endif

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    int me = px_rank(), errors = 0;
    if (px_size() != 2) {
        printf("needs 2 ranks\n");
        return 2;
    }
    const size_t e = px_rt_tool_eager_data(1 - me); /* the largest eager message */
    const size_t sizes[] = {e + 1,         e + 2,
                            e + 3,         65535,
                            65536,         65537,
                            131071,        131072,
                            131073,        (512u << 10) - 1,
                            512u << 10,    (512u << 10) + 1,
                            (1u << 20) + 3};
    const int ns = sizeof(sizes) / sizeof(sizes[0]);
    unsigned char *s = malloc((2u << 20) + 64), *r = malloc((2u << 20) + 64);
    for (int dir = 0; dir < 2; ++dir)
        for (int i = 0; i < ns; ++i) {
            if (sizes[i] <= e || sizes[i] < 8)
                continue; /* eager: not this test's */
            for (int way = 0; way < 3; ++way)
                errors += one(me, dir, 1 - dir, sizes[i], i, way, s, r);
        }
#ifdef FIRST_FRAG_INJECT
    if (argc > 1 && 0 == strcmp(argv[1], "inject") && 0 == me)
        errors += inject_bad();
#endif
    px_barrier();
    printf("rank %d: %d errors\n", me, errors);
    free(s);
    free(r);
    px_finalize();
    return errors ? 1 : 0;
}
