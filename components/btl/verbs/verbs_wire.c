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
                 "published a %zu-byte btl/verbs modex blob, less than its %zu-byte header", len,
                 sizeof(h));
        return PX_ERR_BAD_PARAM;
    }
    memcpy(&h, b, sizeof(h));
    /* Each record holds a QP number per rank: more ranks than fit in the
     * blob, or a size that overflows, is malformed before anything else. */
    size_t body = len - sizeof(h);
    if (0 == h.nmodules || (size_t)h.nranks > body / sizeof(uint32_t)) {
        snprintf(why, whylen,
                 "published a btl/verbs modex blob (%zu bytes) of %u port(s) and %u rank(s), which "
                 "do not fit in it",
                 len, h.nmodules, h.nranks);
        return PX_ERR_BAD_PARAM;
    }
    size_t per = px_btl_verbs_modex_stride(h.nranks);
    if ((size_t)h.nmodules > body / per || body != (size_t)h.nmodules * per) {
        snprintf(why, whylen,
                 "published a %zu-byte btl/verbs modex blob, but %u port(s) of %u rank(s) make %zu "
                 "bytes",
                 len, h.nmodules, h.nranks,
                 (size_t)h.nmodules <= body / per ? sizeof(h) + (size_t)h.nmodules * per : 0);
        return PX_ERR_BAD_PARAM;
    }
    out->nmodules = h.nmodules;
    if ((size_t)h.nranks != nranks || my_rank < 0 || (size_t)my_rank >= nranks) {
        snprintf(why, whylen,
                 "made its btl/verbs queue pairs for a job of %u rank(s), this process's job has "
                 "%zu: it belongs to another job",
                 h.nranks, nranks);
        return PX_ERR_NOT_AVAILABLE;
    }
    if (index < 0 || (uint32_t)index >= h.nmodules) {
        snprintf(why, whylen,
                 "has %u btl/verbs port(s) and this process uses port %d: ranks must see the "
                 "same number of active ports (btl_verbs_device_include)",
                 h.nmodules, index + 1);
        return PX_ERR_NOT_AVAILABLE;
    }
    px_btl_verbs_modex_port_t p;
    const unsigned char *rec = b + sizeof(h) + (size_t)index * per;
    memcpy(&p, rec, sizeof(p));
    uint32_t qpn;
    memcpy(&qpn, rec + sizeof(p) + (size_t)my_rank * sizeof(uint32_t), sizeof(qpn));
    if (0 == qpn || qpn > 0xffffffu) {
        snprintf(why, whylen,
                 "published QP number %u for this rank (btl/verbs modex); a QP number is "
                 "1..16777215",
                 qpn);
        return PX_ERR_BAD_PARAM;
    }
    if (p.psn > 0xffffffu) {
        snprintf(why, whylen,
                 "published PSN %u (btl/verbs modex); a packet sequence number is 24 bits", p.psn);
        return PX_ERR_BAD_PARAM;
    }
    if (p.mtu > IBV_MTU_4096) {
        snprintf(why, whylen,
                 "published MTU code %u (btl/verbs modex); accepted are 0 (unknown) and "
                 "%d..%d (256..4096 bytes)",
                 (unsigned)p.mtu, (int)IBV_MTU_256, (int)IBV_MTU_4096);
        return PX_ERR_BAD_PARAM;
    }
    if (p.link_layer > IBV_LINK_LAYER_ETHERNET) {
        snprintf(why, whylen,
                 "published link layer %u (btl/verbs modex); accepted are %d (unspecified), "
                 "%d (InfiniBand) and %d (Ethernet)",
                 (unsigned)p.link_layer, IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND,
                 IBV_LINK_LAYER_ETHERNET);
        return PX_ERR_BAD_PARAM;
    }
    if (IBV_LINK_LAYER_ETHERNET != p.link_layer && p.lid >= 0xc000) {
        snprintf(why, whylen,
                 "published LID 0x%x (btl/verbs modex), a multicast or permissive LID; a "
                 "port's LID is 0x1..0xbfff (or 0: route by GID)",
                 (unsigned)p.lid);
        return PX_ERR_BAD_PARAM;
    }
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

/* ---- dynamic peers ---- */

static void px_btl_verbs_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void px_btl_verbs_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t px_btl_verbs_get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t px_btl_verbs_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

void px_btl_verbs_dyn_write(const px_btl_verbs_dyn_addr_t *a, void *buf)
{
    unsigned char *p = buf;
    memset(p, 0, PX_BTL_VERBS_DYN_LEN);
    px_btl_verbs_put32(p, PX_BTL_VERBS_DYN_MAGIC);
    p[4] = PX_BTL_VERBS_DYN_VERSION;
    p[5] = a->link_layer;
    p[6] = a->port;
    p[7] = a->mtu;
    px_btl_verbs_put16(p + 8, a->lid);
    px_btl_verbs_put32(p + 12, a->qpn);
    px_btl_verbs_put32(p + 16, a->psn);
    px_btl_verbs_put16(p + 20, a->num_recvs);
    px_btl_verbs_put16(p + 22, a->ctl_recvs);
    px_btl_verbs_put32(p + 24, a->recv_size);
    px_btl_verbs_put32(p + 28, a->ka_rkey);
    px_btl_verbs_put32(p + 32, (uint32_t)a->ka_addr);
    px_btl_verbs_put32(p + 36, (uint32_t)(a->ka_addr >> 32));
    memcpy(p + 40, a->gid, 16);
}

int px_btl_verbs_dyn_parse(const void *part, size_t len, px_btl_verbs_dyn_addr_t *out, char *why,
                           size_t whylen)
{
    const unsigned char *p = part;
#define PX_DYN_BAD(...)                                                                            \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return PX_ERR_BAD_PARAM;                                                                   \
    } while (0)
    if (NULL == part || len != PX_BTL_VERBS_DYN_LEN)
        PX_DYN_BAD("its btl/verbs part is %zu bytes; version %d's is exactly %d bytes", len,
                   PX_BTL_VERBS_DYN_VERSION, PX_BTL_VERBS_DYN_LEN);
    uint32_t magic = px_btl_verbs_get32(p);
    if (PX_BTL_VERBS_DYN_MAGIC != magic)
        PX_DYN_BAD("its btl/verbs part starts with 0x%08x, not the magic 0x%08x (\"PXVB\")", magic,
                   PX_BTL_VERBS_DYN_MAGIC);
    if (PX_BTL_VERBS_DYN_VERSION != p[4])
        PX_DYN_BAD("its btl/verbs part is version %u; this process reads version %d", p[4],
                   PX_BTL_VERBS_DYN_VERSION);
    uint16_t flags = px_btl_verbs_get16(p + 10);
    if (0 != flags)
        PX_DYN_BAD("its btl/verbs part has flags 0x%04x; version %d defines none (0 accepted)",
                   (unsigned)flags, PX_BTL_VERBS_DYN_VERSION);
    out->link_layer = p[5];
    out->port = p[6];
    out->mtu = p[7];
    out->lid = px_btl_verbs_get16(p + 8);
    out->qpn = px_btl_verbs_get32(p + 12);
    out->psn = px_btl_verbs_get32(p + 16);
    out->num_recvs = px_btl_verbs_get16(p + 20);
    out->ctl_recvs = px_btl_verbs_get16(p + 22);
    out->recv_size = px_btl_verbs_get32(p + 24);
    out->ka_rkey = px_btl_verbs_get32(p + 28);
    out->ka_addr =
        (uint64_t)px_btl_verbs_get32(p + 32) | ((uint64_t)px_btl_verbs_get32(p + 36) << 32);
    memcpy(out->gid, p + 40, 16);
    if (out->link_layer > IBV_LINK_LAYER_ETHERNET)
        PX_DYN_BAD("its btl/verbs part names link layer %u; accepted are %d (unspecified), %d "
                   "(InfiniBand) and %d (Ethernet)",
                   (unsigned)out->link_layer, IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND,
                   IBV_LINK_LAYER_ETHERNET);
    if (0 == out->port)
        PX_DYN_BAD("its btl/verbs part names port 0; ports are numbered from 1");
    if (out->mtu < IBV_MTU_256 || out->mtu > IBV_MTU_4096)
        PX_DYN_BAD("its btl/verbs part names MTU code %u; accepted are %d..%d (256..4096 bytes)",
                   (unsigned)out->mtu, (int)IBV_MTU_256, (int)IBV_MTU_4096);
    if (IBV_LINK_LAYER_ETHERNET != out->link_layer && out->lid >= 0xc000)
        PX_DYN_BAD("its btl/verbs part names LID 0x%x, a multicast or permissive LID; a port's "
                   "LID is 0x1..0xbfff (or 0: route by GID)",
                   (unsigned)out->lid);
    if (IBV_LINK_LAYER_ETHERNET == out->link_layer || 0 == out->lid) {
        static const uint8_t zero[16];
        if (0 == memcmp(out->gid, zero, sizeof(zero)))
            PX_DYN_BAD("its btl/verbs part has %s and a GID of zeros: nothing to route to (a "
                       "RoCE port, or an InfiniBand port without a LID, needs its GID)",
                       IBV_LINK_LAYER_ETHERNET == out->link_layer ? "link layer Ethernet"
                                                                  : "LID 0");
    }
    if (0 == out->qpn || out->qpn > 0xffffffu)
        PX_DYN_BAD("its btl/verbs part names QP number %u; a QP number is 1..16777215", out->qpn);
    if (out->psn > 0xffffffu)
        PX_DYN_BAD("its btl/verbs part names PSN %u; a packet sequence number is 24 bits (0..%u)",
                   out->psn, 0xffffffu);
    if (out->num_recvs < 1 || out->num_recvs > PX_BTL_VERBS_DYN_RECVS_MAX)
        PX_DYN_BAD("its btl/verbs part says %u data receives are posted; accepted are 1..%d "
                   "(btl_verbs_num_recvs)",
                   (unsigned)out->num_recvs, PX_BTL_VERBS_DYN_RECVS_MAX);
    if (out->ctl_recvs < 1 || out->ctl_recvs > PX_BTL_VERBS_DYN_CTL_MAX)
        PX_DYN_BAD("its btl/verbs part says %u control receives are posted; accepted are 1..%d "
                   "(btl_verbs_ctl_recvs)",
                   (unsigned)out->ctl_recvs, PX_BTL_VERBS_DYN_CTL_MAX);
    if (out->recv_size <= sizeof(px_btl_verbs_hdr_t) || out->recv_size > (1u << 30))
        PX_DYN_BAD("its btl/verbs part says its receive buffers are %u bytes; accepted are %zu "
                   "(the header and a byte) to %u",
                   out->recv_size, sizeof(px_btl_verbs_hdr_t) + 1, 1u << 30);
#undef PX_DYN_BAD
    return PX_SUCCESS;
}
