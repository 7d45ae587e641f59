/*
 * verbs_wire.c: checks on what btl/verbs reads from peers (verbs_wire.h): the
 * text for a bad message header, and the modex blob's parser. No module, no
 * device: test/fuzz compiles this file into its harnesses.
 */
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "components/btl/verbs/verbs_wire.h"
#include "core/util/error.h"

const char *px_btl_verbs_hdr_why(int code, const px_btl_verbs_rx_t *rx, size_t len, size_t max_len,
                                 int room, int ctl_room, char *out, size_t outlen)
{
    switch (code) {
    case PX_BTL_VERBS_RX_SHORT:
        snprintf(out, outlen, "a %zu-byte message, shorter than the %zu-byte header", len,
                 sizeof(px_btl_verbs_hdr_t));
        break;
    case PX_BTL_VERBS_RX_LONG:
        snprintf(out, outlen, "a %zu-byte message, longer than a %zu-byte receive buffer", len,
                 max_len);
        break;
    case PX_BTL_VERBS_RX_FLAGS:
        snprintf(out, outlen,
                 "a message with header flags 0x%02x (tag %u), of which 0x%02x are unknown; the "
                 "only flag is 0x%02x (credit update)",
                 (unsigned)rx->flags, (unsigned)rx->tag,
                 (unsigned)(rx->flags & ~PX_BTL_VERBS_HDR_KNOWN), (unsigned)PX_BTL_VERBS_HDR_KNOWN);
        break;
    case PX_BTL_VERBS_RX_CREDITS:
        snprintf(out, outlen,
                 "a header returning %u send credits when at most %d of the credits this process "
                 "spent on it are outstanding",
                 (unsigned)rx->credits, room);
        break;
    case PX_BTL_VERBS_RX_CTL_CREDITS:
        snprintf(out, outlen,
                 "a header returning %u control credits when at most %d of the control credits "
                 "this process spent on it are outstanding",
                 (unsigned)rx->ctl_credits, ctl_room);
        break;
    case PX_BTL_VERBS_RX_UPDATE_LEN:
        snprintf(out, outlen,
                 "a %zu-byte credit update; a credit update is the %zu-byte header alone", len,
                 sizeof(px_btl_verbs_hdr_t));
        break;
    default:
        snprintf(out, outlen, "a message with a bad header (code %d)", code);
    }
    return out;
}

int px_btl_verbs_modex_parse(const void *blob, size_t len, int index, int my_rank, size_t nranks,
                             px_btl_verbs_peer_addr_t *out, char *why, size_t whylen)
{
    const unsigned char *b = blob;
    px_btl_verbs_modex_hdr_t h;
    if (NULL == blob || len < sizeof(h)) {
        snprintf(why, whylen,
                 "its btl/verbs modex blob is %zu bytes, less than the %zu-byte header", len,
                 sizeof(h));
        return PX_ERR_BAD_PARAM;
    }
    memcpy(&h, b, sizeof(h));
    size_t per = px_btl_verbs_modex_stride(h.nranks);
    out->nmodules = h.nmodules;
    if (index < 0 || (uint32_t)index >= h.nmodules || len < sizeof(h) + h.nmodules * per ||
        my_rank < 0 || (uint32_t)my_rank >= h.nranks) {
        snprintf(why, whylen,
                 "it has %u btl/verbs port(s) and this process uses port %d: ranks must see the "
                 "same number of active ports (btl_verbs_device_include)",
                 h.nmodules, index + 1);
        return PX_ERR_NOT_AVAILABLE;
    }
    (void)nranks;
    px_btl_verbs_modex_port_t p;
    const unsigned char *rec = b + sizeof(h) + (size_t)index * per;
    memcpy(&p, rec, sizeof(p));
    uint32_t qpn;
    memcpy(&qpn, rec + sizeof(p) + (size_t)my_rank * sizeof(uint32_t), sizeof(qpn));
    memcpy(out->gid, p.gid, sizeof(out->gid));
    out->lid = p.lid;
    out->port = p.port;
    out->link_layer = p.link_layer;
    out->mtu = p.mtu;
    out->psn = p.psn;
    out->ka_rkey = p.ka_rkey;
    out->ka_addr = p.ka_addr;
    out->qpn = qpn;
    return PX_SUCCESS;
}
