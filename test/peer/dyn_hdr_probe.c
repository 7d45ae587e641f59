/*
 * dyn_hdr_probe: the messaging layer never trusts the source a matched
 * message's header names when it comes from a dynamic peer (pml.c,
 * dyn_source), driven by t_dyn_headers.sh with two processes started
 * separately. The server accepts the client, then injects through
 * px_btl_base_active_message_trigger, as a transport would deliver them:
 *   1. MATCH through the peer's endpoint (src_rank PX_BTL_RANK_DYNAMIC)
 *      whose header names rank 0 (this process's own rank) as its sender;
 *   2. MATCH with src_rank PX_BTL_RANK_DYNAMIC through an endpoint no
 *      connection made;
 *   3. MATCH through the peer's endpoint naming PX_BTL_RANK_DYNAMIC but with
 *      the transport saying rank 5 (no such rank);
 *   4. RNDV through the peer's endpoint naming rank 0.
 * Each is tag 7 with value 666; then the client's real tag 7 message (4242)
 * must be the one a PX_ANY_SOURCE receive gets, from the peer's id.
 *   dyn_hdr_probe server FILE    dyn_hdr_probe client FILE
 * Links libpxcore.la (libplexus's objects) to reach px_rt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "runtime/runtime.h"
#include "frameworks/btl/btl.h"
#include "test/peer/dyn_util.h"

static void inject(int tag, int src_rank, px_btl_endpoint_t *ep, px_btl_module_t *btl,
                   const void *hdr, size_t hlen)
{
    unsigned char msg[512];
    int payload = 666;
    memcpy(msg, hdr, hlen);
    memcpy(msg + hlen, &payload, sizeof(payload));
    px_btl_segment_t seg = {msg, hlen + sizeof(payload)};
    px_btl_receive_descriptor_t d = {
        .endpoint = ep,
        .src_rank = src_rank,
        .des_segments = &seg,
        .des_segment_count = 1,
        .tag = (px_btl_tag_t)tag,
        .cbdata = px_btl_base_active_message_trigger[tag].cbdata,
    };
    px_btl_base_active_message_trigger[tag].cbfunc(btl, &d);
}

int main(int argc, char **argv)
{
    if (argc < 3 || px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    int p, rc, value = 0;
    if (0 == strcmp(argv[1], "client")) {
        char c[512];
        if (!dyn_read_contact(argv[2], c, sizeof c, 20) || (rc = px_connect(c, &p)) != PX_SUCCESS)
            return 3;
        /* wait for the server's go (its injections done), then the real one */
        rc = px_recv(&value, sizeof value, p, 8, NULL);
        value = 4242;
        if (PX_SUCCESS == rc)
            rc = px_send(&value, sizeof value, p, 7);
        if (PX_SUCCESS == rc)
            rc = px_recv(&value, sizeof value, p, 9, NULL);
        px_disconnect(p);
        px_finalize();
        return rc == PX_SUCCESS ? 0 : 4;
    }
    const char *contact;
    if (px_contact(&contact) != PX_SUCCESS)
        return 3;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "%s\n", contact);
    fclose(f);
    rename(tmp, argv[2]);
    if ((rc = px_accept(60, &p)) != PX_SUCCESS) {
        printf("px_accept: %s\n", px_strerror(rc));
        return 3;
    }
    px_rt_dyn_t *dy = px_rt_dyn_find(p);
    px_btl_endpoint_t *ep = dy->peer.eager_ep;
    px_btl_module_t *btl = dy->peer.eager_btl;
    size_t before = px_rt.bad_headers;
    px_rt_match_hdr_t h = {0, 7, 0, 0}; /* names rank 0, sequence 0: next expected */
    inject(PX_RT_AM_MATCH, PX_BTL_RANK_DYNAMIC, ep, btl, &h, sizeof h);
    px_rt_match_hdr_t hd = {PX_BTL_RANK_DYNAMIC, 7, 0, 0};
    inject(PX_RT_AM_MATCH, PX_BTL_RANK_DYNAMIC, (px_btl_endpoint_t *)&before, btl, &hd, sizeof hd);
    inject(PX_RT_AM_MATCH, 5, ep, btl, &hd, sizeof hd);
    px_rt_rndv_hdr_t rh = {.m = {0, 7, 0, 0}, .len = 4};
    inject(PX_RT_AM_RNDV, PX_BTL_RANK_DYNAMIC, ep, btl, &rh, sizeof rh);
    printf("bad_headers %zu\n", px_rt.bad_headers - before);
    printf("unexpected %zu\n", px_rt_unexpected_count());
    rc = px_send(&value, sizeof value, p, 8);
    px_status_t st;
    if (PX_SUCCESS == rc)
        rc = px_recv(&value, sizeof value, PX_ANY_SOURCE, 7, &st);
    printf("recv %s source %s value %d\n", px_strerror(rc), st.source == p ? "the peer" : "other",
           value);
    px_send(&value, sizeof value, p, 9);
    px_accept(0.5, &p); /* let its disconnect arrive; nobody else connects */
    px_finalize();
    return 0;
}
