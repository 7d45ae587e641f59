/*
 * ofi_wire.c: checks on what btl/ofi reads from peers (ofi_wire.h): the
 * text for a bad message header, and the modex blob's parser. No module, no
 * libfabric call: test/fuzz compiles this file into its harnesses.
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <rdma/fabric.h>
#include "components/btl/ofi/ofi_wire.h"
#include "core/util/error.h"

const char *px_btl_ofi_hdr_why(int code, const px_btl_ofi_rx_t *rx, size_t len, size_t max_len,
                               size_t nranks, char *out, size_t outlen)
{
    switch (code) {
    case PX_BTL_OFI_RX_SHORT:
        snprintf(out, outlen, "a %zu-byte message, shorter than the %zu-byte header", len,
                 sizeof(px_btl_ofi_hdr_t));
        break;
    case PX_BTL_OFI_RX_LONG:
        snprintf(out, outlen, "a %zu-byte message, longer than a %zu-byte receive buffer", len,
                 max_len);
        break;
    case PX_BTL_OFI_RX_RANK:
        snprintf(out, outlen,
                 "a message whose header names sender rank %d, not a rank of this job of %zu "
                 "(0..%zu)",
                 (int)rx->src_rank, nranks, nranks ? nranks - 1 : 0);
        break;
    case PX_BTL_OFI_RX_FLAGS:
        snprintf(out, outlen,
                 "a message with header flags 0x%02x (tag %u), of which 0x%02x are unknown; the "
                 "only flag is 0x%02x (drain)",
                 (unsigned)rx->flags, (unsigned)rx->tag,
                 (unsigned)(rx->flags & ~PX_BTL_OFI_HDR_KNOWN), (unsigned)PX_BTL_OFI_HDR_KNOWN);
        break;
    default:
        snprintf(out, outlen, "a message with a bad header (code %d)", code);
    }
    return out;
}

/* How many bytes an address of `format` needs and the address family it
 * must hold (0, 0 when the format has no fixed size: then it must be as
 * long as this process's own address). For FI_SOCKADDR the family inside
 * the address decides; one that is neither AF_INET nor AF_INET6 is refused
 * (as an AF_INET address whose family is wrong). */
static size_t px_btl_ofi_addr_need(uint32_t format, const unsigned char *addr, size_t addrlen,
                                   sa_family_t *want)
{
    sa_family_t family = 0;
    switch (format) {
    case FI_SOCKADDR_IN:
        *want = AF_INET;
        return sizeof(struct sockaddr_in);
    case FI_SOCKADDR_IN6:
        *want = AF_INET6;
        return sizeof(struct sockaddr_in6);
    case FI_SOCKADDR:
        if (addrlen >= sizeof(family))
            memcpy(&family, addr, sizeof(family));
        /* libfabric sizes a struct sockaddr by its family: only these two
         * have a size it and this parser agree on */
        *want = AF_INET6 == family ? AF_INET6 : AF_INET;
        return AF_INET6 == family ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    default:
        *want = 0;
        return 0;
    }
}

/* Check one lane's address (`lane`: its number, for the text): one that
 * libfabric can read whole. */
static int px_btl_ofi_addr_check(const unsigned char *addr, uint32_t addrlen, const char *prov,
                                 uint32_t addr_format, size_t own_addrlen, unsigned lane, char *why,
                                 size_t whylen)
{
    char which[32] = "";
    if (lane)
        snprintf(which, sizeof(which), " for lane %u", lane);
    if (FI_ADDR_STR == addr_format) {
        if (0 == addrlen || NULL == memchr(addr, '\0', addrlen)) {
            snprintf(why, whylen,
                     "published a btl/ofi address%s (format FI_ADDR_STR, %u bytes) that is not a "
                     "string ending within its length",
                     which, addrlen);
            return PX_ERR_BAD_PARAM;
        }
        return PX_SUCCESS;
    }
    sa_family_t want;
    size_t need = px_btl_ofi_addr_need(addr_format, addr, addrlen, &want);
    if (need ? addrlen < need : addrlen != own_addrlen) {
        snprintf(why, whylen,
                 "published a btl/ofi address%s of %u bytes, but provider %s's addresses of "
                 "format %u are %s%zu bytes",
                 which, addrlen, prov, addr_format, need ? "at least " : "",
                 need ? need : own_addrlen);
        return PX_ERR_BAD_PARAM;
    }
    if (want) {
        sa_family_t family;
        memcpy(&family, addr, sizeof(family));
        if (family != want) {
            snprintf(why, whylen,
                     "published a btl/ofi address%s (format %u) of address family %u, not %u "
                     "(%s)",
                     which, addr_format, (unsigned)family, (unsigned)want,
                     AF_INET6 == want ? "AF_INET6" : "AF_INET");
            return PX_ERR_BAD_PARAM;
        }
    }
    return PX_SUCCESS;
}

size_t px_btl_ofi_modex_build(void *buf, size_t cap, const char *prov, uint32_t addr_format,
                              const void *addr, size_t addrlen)
{
    size_t need = sizeof(px_btl_ofi_modex_t) + addrlen;
    if (need > cap)
        return need;
    px_btl_ofi_modex_t h;
    memset(&h, 0, sizeof(h));
    snprintf(h.prov, sizeof(h.prov), "%s", prov);
    h.addr_format = addr_format;
    h.addrlen = (uint32_t)addrlen;
    memcpy(buf, &h, sizeof(h));
    memcpy((unsigned char *)buf + sizeof(h), addr, addrlen);
    return need;
}

size_t px_btl_ofi_lanes_build(void *buf, size_t cap, const void *const *addrs, const size_t *lens,
                              unsigned nlanes)
{
    size_t need = 2 * sizeof(uint32_t);
    for (unsigned i = 1; i < nlanes; ++i)
        need += sizeof(uint32_t) + lens[i];
    if (need > cap)
        return need;
    unsigned char *p = buf;
    uint32_t w[2] = {PX_BTL_OFI_LANES_MAGIC, nlanes};
    memcpy(p, w, sizeof(w));
    p += sizeof(w);
    for (unsigned i = 1; i < nlanes; ++i) {
        uint32_t l = (uint32_t)lens[i];
        memcpy(p, &l, sizeof(l));
        p += sizeof(l);
        memcpy(p, addrs[i], lens[i]);
        p += lens[i];
    }
    return need;
}

int px_btl_ofi_modex_parse(const void *blob, size_t len, const char *prov, uint32_t addr_format,
                           size_t own_addrlen, px_btl_ofi_peer_addr_t *out, char *why,
                           size_t whylen)
{
    const unsigned char *b = blob;
    px_btl_ofi_modex_t h;
    out->nlanes = 0;
    if (NULL == blob || len < sizeof(h)) {
        snprintf(why, whylen,
                 "published a %zu-byte btl/ofi modex blob, less than its %zu-byte header", len,
                 sizeof(h));
        return PX_ERR_BAD_PARAM;
    }
    memcpy(&h, b, sizeof(h));
    if (NULL == memchr(h.prov, '\0', sizeof(h.prov))) {
        snprintf(why, whylen,
                 "published a btl/ofi provider name without an end within its %d bytes",
                 PX_BTL_OFI_NAME_MAX);
        return PX_ERR_BAD_PARAM;
    }
    memcpy(out->prov, h.prov, sizeof(out->prov));
    out->addr_format = h.addr_format;
    out->addrlen = h.addrlen;
    out->addr = b + sizeof(h);
    if (0 != strcmp(h.prov, prov)) {
        snprintf(why, whylen,
                 "uses libfabric provider %s, this process %s: set btl_ofi_provider_include alike "
                 "on all hosts",
                 h.prov, prov);
        return PX_ERR_NOT_AVAILABLE;
    }
    if (h.addr_format != addr_format) {
        snprintf(why, whylen,
                 "uses address format %u of libfabric provider %s, this process format %u: set "
                 "btl_ofi_provider_include and the FI_ variables alike on all hosts",
                 h.addr_format, prov, addr_format);
        return PX_ERR_NOT_AVAILABLE;
    }
    size_t room = len - sizeof(h);
    if (h.addrlen != room) {
        snprintf(why, whylen,
                 "published a btl/ofi address of %u bytes, but %zu bytes follow the header (the "
                 "blob ends with the address; other lanes' addresses are never in it)",
                 h.addrlen, room);
        return PX_ERR_BAD_PARAM;
    }
    int rc =
        px_btl_ofi_addr_check(out->addr, h.addrlen, prov, addr_format, own_addrlen, 0, why, whylen);
    if (PX_SUCCESS != rc)
        return rc;
    out->nlanes = 1;
    out->lane_addr[0] = out->addr;
    out->lane_len[0] = h.addrlen;
    return PX_SUCCESS;
}

int px_btl_ofi_lanes_parse(const void *blob, size_t len, const char *prov, uint32_t addr_format,
                           size_t own_addrlen, px_btl_ofi_peer_addr_t *out, char *why,
                           size_t whylen)
{
    const unsigned char *b = blob;
    uint32_t w[2];
    size_t off = 0;
    out->nlanes = 1;
    if (NULL == blob || len < sizeof(w)) {
        snprintf(why, whylen,
                 "published a btl/ofi lanes list of %zu bytes, less than its %zu-byte head", len,
                 sizeof(w));
        return PX_ERR_BAD_PARAM;
    }
    memcpy(w, b, sizeof(w));
    off += sizeof(w);
    if (PX_BTL_OFI_LANES_MAGIC != w[0]) {
        snprintf(why, whylen,
                 "published a btl/ofi lanes list that does not start with its magic (0x%08x, "
                 "not 0x%08x)",
                 (unsigned)w[0], (unsigned)PX_BTL_OFI_LANES_MAGIC);
        return PX_ERR_BAD_PARAM;
    }
    if (w[1] < 1 || w[1] > PX_BTL_OFI_LANES_MAX) {
        snprintf(why, whylen,
                 "published a btl/ofi lane count of %u; this process accepts 1 to %d "
                 "(btl_ofi_rdma_lanes)",
                 (unsigned)w[1], PX_BTL_OFI_LANES_MAX);
        return PX_ERR_BAD_PARAM;
    }
    for (uint32_t i = 1; i < w[1]; ++i) {
        uint32_t l;
        if (len - off < sizeof(l)) {
            snprintf(why, whylen,
                     "published a btl/ofi lanes list of %u lanes that ends before lane %u's "
                     "length",
                     (unsigned)w[1], (unsigned)i);
            return PX_ERR_BAD_PARAM;
        }
        memcpy(&l, b + off, sizeof(l));
        off += sizeof(l);
        if (l > len - off) {
            snprintf(why, whylen,
                     "published a btl/ofi address of %u bytes for lane %u, but %zu bytes "
                     "follow",
                     (unsigned)l, (unsigned)i, len - off);
            return PX_ERR_BAD_PARAM;
        }
        int rc = px_btl_ofi_addr_check(b + off, l, prov, addr_format, own_addrlen, i, why, whylen);
        if (PX_SUCCESS != rc)
            return PX_ERR_BAD_PARAM;
        out->lane_addr[i] = b + off;
        out->lane_len[i] = l;
        off += l;
    }
    if (off != len) {
        snprintf(why, whylen, "published %zu bytes after the last of its %u btl/ofi lanes",
                 len - off, (unsigned)w[1]);
        return PX_ERR_BAD_PARAM;
    }
    out->nlanes = w[1];
    return PX_SUCCESS;
}
