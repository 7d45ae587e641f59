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

int px_btl_ofi_modex_parse(const void *blob, size_t len, const char *prov, uint32_t addr_format,
                           size_t own_addrlen, px_btl_ofi_peer_addr_t *out, char *why,
                           size_t whylen)
{
    const unsigned char *b = blob;
    px_btl_ofi_modex_t h;
    if (NULL == blob || len < sizeof(h)) {
        snprintf(why, whylen, "its btl/ofi modex blob is %zu bytes, less than the %zu-byte header",
                 len, sizeof(h));
        return PX_ERR_BAD_PARAM;
    }
    memcpy(&h, b, sizeof(h));
    (void)own_addrlen;
    h.prov[sizeof(h.prov) - 1] = '\0';
    memcpy(out->prov, h.prov, sizeof(out->prov));
    out->addr_format = h.addr_format;
    out->addrlen = h.addrlen;
    out->addr = b + sizeof(h);
    if (0 != strcmp(h.prov, prov) || h.addr_format != addr_format || len < sizeof(h) + h.addrlen) {
        snprintf(why, whylen,
                 "it uses libfabric provider %s (address format %u), this process %s (address "
                 "format %u): set btl_ofi_provider_include alike on all hosts",
                 h.prov, h.addr_format, prov, addr_format);
        return PX_ERR_NOT_AVAILABLE;
    }
    return PX_SUCCESS;
}
