/*
 * hdr_probe.c: the messaging layer's checks of a matched message's header
 * (runtime/pml/pml.c, hdr_bad), driven by t_pml_headers.sh under pxrun -n 2.
 * Rank 0 injects headers through px_btl_base_active_message_trigger, as a
 * transport would deliver them:
 *   1. MATCH naming rank 1 as its sender, delivered by the transport as from
 *      rank 0 (btl/self's endpoint);
 *   2. MATCH naming rank 0, delivered as from rank 1 (rank 1's endpoint);
 *   3. MATCH from rank 0 whose sequence number lies behind the one expected;
 *   4. RNDV from rank 0 likewise behind;
 *   5. 100 more of 3 (the error is rate-limited, every one is counted).
 * Each is tag 7, never sent for real by rank 0. Then rank 1 sends a real tag 7
 * message (value 4242) and rank 0's receive from any source must get exactly
 * that one. Prints "bad_headers N", "ooo N" (out-of-order items left),
 * "recv source S value V" and "self recv_seq N". Links libpxcore.la (libplexus's objects)
 * to reach px_rt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/runtime.h"
#include "frameworks/btl/btl.h"

static void inject(int tag, int transport_rank, const void *hdr, size_t hlen, int payload)
{
    unsigned char msg[256];
    memcpy(msg, hdr, hlen);
    memcpy(msg + hlen, &payload, sizeof(payload));
    px_btl_segment_t seg = {msg, hlen + sizeof(payload)};
    px_rt_peer_t *peer = &px_rt.peers[transport_rank];
    px_btl_receive_descriptor_t d = {
        .endpoint = peer->eager_ep,
        .src_rank = transport_rank,
        .des_segments = &seg,
        .des_segment_count = 1,
        .tag = (px_btl_tag_t)tag,
        .cbdata = px_btl_base_active_message_trigger[tag].cbdata,
    };
    px_btl_base_active_message_trigger[tag].cbfunc(peer->eager_btl, &d);
}

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        printf("px_init failed: %s\n", px_strerror(rc));
        return 2;
    }
    if (px_size() != 2) {
        printf("needs 2 ranks\n");
        return 2;
    }
    int me = px_rank(), v = 0;
    if (0 == me) {
        /* Move our own sequence on, so that a number behind it exists. */
        for (int i = 0; i < 3; i++) {
            v = i;
            if (px_send(&v, sizeof(v), 0, 5) != PX_SUCCESS ||
                px_recv(&v, sizeof(v), 0, 5, NULL) != PX_SUCCESS) {
                printf("self message failed\n");
                return 1;
            }
        }
        px_rt_match_hdr_t h = {1, 7, px_rt.peers[1].recv_seq, 0};
        inject(PX_RT_AM_MATCH, 0, &h, sizeof(h), 1111); /* 1: names 1, self says 0 */
        h = (px_rt_match_hdr_t){0, 7, px_rt.peers[0].recv_seq, 0};
        inject(PX_RT_AM_MATCH, 1, &h, sizeof(h), 2222); /* 2: names 0, rank 1's endpoint */
        h = (px_rt_match_hdr_t){0, 7, px_rt.peers[0].recv_seq - 1, 0};
        inject(PX_RT_AM_MATCH, 0, &h, sizeof(h), 3333); /* 3: behind */
        px_rt_rndv_hdr_t r = {{0, 7, px_rt.peers[0].recv_seq - 2, 0}, 4, 0, 0, 0, 0};
        inject(PX_RT_AM_RNDV, 0, &r, sizeof(r), 0); /* 4: rendezvous, behind */
        for (int i = 0; i < 100; i++) {
            h = (px_rt_match_hdr_t){0, 7, px_rt.peers[0].recv_seq - 1 - (uint32_t)i, 0};
            inject(PX_RT_AM_MATCH, 0, &h, sizeof(h), 5555); /* 5 */
        }
        fflush(stderr);
        printf("bad_headers %zu\n", px_rt.bad_headers);
        printf("ooo %zu\n",
               px_list_get_size(&px_rt.peers[0].ooo) + px_list_get_size(&px_rt.peers[1].ooo));
        printf("self recv_seq %u\n", (unsigned)px_rt.peers[0].recv_seq);
        px_status_t st;
        v = 0;
        rc = px_recv(&v, sizeof(v), PX_ANY_SOURCE, 7, &st);
        printf("recv source %d value %d (%s)\n", st.source, v, px_strerror(rc));
        /* Our own messages still flow in order afterwards. */
        v = 77;
        int w = 0;
        if (px_send(&v, sizeof(v), 0, 5) != PX_SUCCESS ||
            px_recv(&w, sizeof(w), 0, 5, NULL) != PX_SUCCESS || w != 77)
            printf("self message after the injections failed\n");
        else
            printf("self message after the injections ok\n");
    } else {
        v = 4242;
        if (px_send(&v, sizeof(v), 0, 7) != PX_SUCCESS)
            printf("send failed\n");
    }
    fflush(stdout);
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}
