/*
 * ofi_wire.h: what btl/ofi reads from its peers, and the checks on it: the
 * header of every message (px_btl_ofi_hdr_decode, inline: it runs for every
 * receive) and the modex blob a peer publishes (px_btl_ofi_modex_parse, in
 * ofi_wire.c). Both take the bytes, their length and the bounds they must
 * respect, and need neither a module nor libfabric, so test/fuzz compiles
 * them into its harnesses (fuzz_ofi_recv, fuzz_ofi_modex).
 */
#ifndef PX_BTL_OFI_WIRE_H
#define PX_BTL_OFI_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "core/util/compiler.h"

#define PX_BTL_OFI_NAME_MAX 64

/* Every message starts with this header. */
typedef struct px_btl_ofi_hdr {
    uint8_t tag;
    uint8_t flags; /* PX_BTL_OFI_HDR_* */
    uint8_t pad[2];
    int32_t src_rank;
} px_btl_ofi_hdr_t;
/* A dynamic peer (BTL API 3.3) is no rank: its messages carry, as
 * src_rank, -2 minus the number the receiver gave it in the connection
 * exchange (ofi_dyn.c), so a receive tells its sender, as for a rank. */
#define PX_BTL_OFI_DYN_SRC(id) ((int32_t)(-2 - (int32_t)(id)))
#define PX_BTL_OFI_DYN_ID(src) ((uint32_t)(-2 - (src)))
#define PX_BTL_OFI_DYN_ID_MAX  0x3fffffffu
/* Sent at teardown behind everything else; the receiver drops it. */
#define PX_BTL_OFI_HDR_DRAIN 0x1
#define PX_BTL_OFI_HDR_KNOWN PX_BTL_OFI_HDR_DRAIN /* every flag a sender may set */

/* Modex blob (key "btl.ofi"): provider name, address format, then the
 * fi_getname bytes of the main endpoint (lane 0: messages and RDMA), and
 * nothing after: the blob every Plexus since btl/ofi's first has published
 * and read (an older parser refuses bytes after the address).
 *
 * The other RDMA lanes' addresses (btl_ofi_rdma_lanes, ofi_rdma.c) travel
 * apart, where an older Plexus never looks: under the modex key
 * "btl.ofi.lanes" and, for a dynamic peer, in the extension of the connect
 * part (PX_BTL_FLAGS_DYN_EXT: the base sends it as a part of its own, which
 * an older base skips). That lanes blob: the magic PX_BTL_OFI_LANES_MAGIC,
 * the number of lanes n (lane 0 included, 1 to PX_BTL_OFI_LANES_MAX), then
 * for lanes 1..n-1 a 32-bit length and the address bytes; all in host
 * order, like the header. No lanes blob (an older Plexus) means one lane. */
typedef struct px_btl_ofi_modex {
    char prov[PX_BTL_OFI_NAME_MAX];
    uint32_t addr_format;
    uint32_t addrlen;
    char addr[];
} px_btl_ofi_modex_t;
#define PX_BTL_OFI_LANES_MAGIC 0x6e616c6fu /* "olan" */
#define PX_BTL_OFI_LANES_MAX   8
#define PX_BTL_OFI_LANES_KEY   "lanes" /* the modex key is "btl.ofi." this */

/* ---- receive header ---- */

/* What px_btl_ofi_hdr_decode found. Negative: the header is bad. */
enum {
    PX_BTL_OFI_RX_DELIVER = 0, /* a message for the tag's callback */
    PX_BTL_OFI_RX_DRAIN = 1,   /* a teardown drain: nothing to deliver */
    PX_BTL_OFI_RX_DYN = 2,     /* a message from a dynamic peer: PX_BTL_OFI_DYN_ID(src_rank) */
    PX_BTL_OFI_RX_SHORT = -1,  /* shorter than the header: no sender known */
    PX_BTL_OFI_RX_LONG = -2,   /* longer than a receive buffer */
    PX_BTL_OFI_RX_RANK = -3,   /* the sender's rank is not one of the job's */
    PX_BTL_OFI_RX_FLAGS = -4,  /* flags this version never sends */
};

/* A received message, decoded. */
typedef struct px_btl_ofi_rx {
    uint8_t tag;
    uint8_t flags;
    int32_t src_rank;
    const char *payload; /* after the header */
    size_t payload_len;
} px_btl_ofi_rx_t;

/* Decode the `len` bytes received at `buf` (a receive buffer of `max_len`
 * bytes) in a job of `nranks` ranks. Returns a PX_BTL_OFI_RX_* code; *rx is
 * filled as far as the bytes go (src_rank is -1 when shorter than the
 * header). buf must be aligned for the header (receive buffers are). */
static inline int px_btl_ofi_hdr_decode(const void *buf, size_t len, size_t max_len, size_t nranks,
                                        px_btl_ofi_rx_t *rx)
{
    const px_btl_ofi_hdr_t *hdr = (const px_btl_ofi_hdr_t *)buf;
    if (PX_UNLIKELY(len < sizeof(*hdr))) {
        rx->tag = 0;
        rx->flags = 0;
        rx->src_rank = -1;
        rx->payload = NULL;
        rx->payload_len = 0;
        return PX_BTL_OFI_RX_SHORT;
    }
    rx->tag = hdr->tag;
    rx->flags = hdr->flags;
    rx->src_rank = hdr->src_rank;
    rx->payload = (const char *)buf + sizeof(*hdr);
    rx->payload_len = len - sizeof(*hdr);
    if (PX_UNLIKELY(len > max_len))
        return PX_BTL_OFI_RX_LONG;
    bool dyn = hdr->src_rank <= PX_BTL_OFI_DYN_SRC(0);
    if (PX_UNLIKELY(!dyn && (hdr->src_rank < 0 || (size_t)hdr->src_rank >= nranks)))
        return PX_BTL_OFI_RX_RANK;
    if (PX_UNLIKELY(0 != hdr->flags)) {
        if (0 != (hdr->flags & ~PX_BTL_OFI_HDR_KNOWN))
            return PX_BTL_OFI_RX_FLAGS;
        return PX_BTL_OFI_RX_DRAIN;
    }
    return PX_UNLIKELY(dyn) ? PX_BTL_OFI_RX_DYN : PX_BTL_OFI_RX_DELIVER;
}

/* Describe a bad header (code < 0 from px_btl_ofi_hdr_decode) in `out`: what
 * was wrong and what would be accepted. Returns out. */
const char *px_btl_ofi_hdr_why(int code, const px_btl_ofi_rx_t *rx, size_t len, size_t max_len,
                               size_t nranks, char *out, size_t outlen);

/* ---- modex ---- */

/* A peer's modex blob, checked: the addresses point into the blob. */
typedef struct px_btl_ofi_peer_addr {
    char prov[PX_BTL_OFI_NAME_MAX];
    uint32_t addr_format;
    uint32_t addrlen; /* lane 0's (= lane_len[0]) */
    const void *addr; /* lane 0's (= lane_addr[0]) */
    uint32_t nlanes;  /* 1..PX_BTL_OFI_LANES_MAX */
    const void *lane_addr[PX_BTL_OFI_LANES_MAX];
    uint32_t lane_len[PX_BTL_OFI_LANES_MAX];
} px_btl_ofi_peer_addr_t;

/* Write the modex blob of a process on provider `prov` whose main endpoint
 * (lane 0) has the address `addr` of `addrlen` bytes, format `addr_format`,
 * into `buf` when it has `cap` bytes; returns the blob's length (nothing is
 * written when it exceeds cap). Byte for byte an older Plexus's blob. */
size_t px_btl_ofi_modex_build(void *buf, size_t cap, const char *prov, uint32_t addr_format,
                              const void *addr, size_t addrlen);

/* Write the lanes blob of a process whose `nlanes` endpoints
 * (1..PX_BTL_OFI_LANES_MAX) have addresses addrs[i] of lens[i] bytes (lane
 * 0's is not in it: the modex blob has it) into `buf` of `cap` bytes;
 * returns its length (nothing written when it exceeds cap). */
size_t px_btl_ofi_lanes_build(void *buf, size_t cap, const void *const *addrs, const size_t *lens,
                              unsigned nlanes);

/* Read the `len`-byte modex blob a peer published, for a process on
 * provider `prov` whose own address has format `addr_format` and is
 * `own_addrlen` bytes. PX_SUCCESS: *out holds the peer's lane 0 address
 * (nlanes 1), which libfabric can read whole (its length suits its format).
 * Otherwise `why` says what is wrong, and the result is PX_ERR_BAD_PARAM
 * for a blob that is malformed (truncated, a provider name without its end,
 * an address length beyond the blob or too short for its format, bytes
 * after the address) or PX_ERR_NOT_AVAILABLE for a well-formed blob of
 * another provider or address format. */
int px_btl_ofi_modex_parse(const void *blob, size_t len, const char *prov, uint32_t addr_format,
                           size_t own_addrlen, px_btl_ofi_peer_addr_t *out, char *why,
                           size_t whylen);

/* Read the `len`-byte lanes blob of the peer whose modex blob gave *out
 * (px_btl_ofi_modex_parse: its provider and format are this process's).
 * PX_SUCCESS: out->nlanes and lanes 1.. of *out are the peer's (each
 * address one libfabric can read whole). PX_ERR_BAD_PARAM, with `why`, for
 * a blob that is malformed (shorter than its 8-byte head, another magic, a
 * lane count outside 1..PX_BTL_OFI_LANES_MAX, a list cut short, a lane's
 * length beyond the blob or too short for its format, bytes left after the
 * last lane); *out keeps one lane then. */
int px_btl_ofi_lanes_parse(const void *blob, size_t len, const char *prov, uint32_t addr_format,
                           size_t own_addrlen, px_btl_ofi_peer_addr_t *out, char *why,
                           size_t whylen);

#endif
