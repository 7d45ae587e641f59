/*
 * verbs_wire.h: what btl/verbs reads from its peers, and the checks on it:
 * the header of every message (px_btl_verbs_hdr_decode, inline: it runs for
 * every receive) and the modex blob a peer publishes (px_btl_verbs_modex_parse,
 * in verbs_wire.c). Both take the bytes, their length and the bounds they must
 * respect, and need neither a module nor a device, so test/fuzz compiles them
 * into its harnesses (fuzz_verbs_recv, fuzz_verbs_modex).
 */
#ifndef PX_BTL_VERBS_WIRE_H
#define PX_BTL_VERBS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"

/* Every send starts with this header. */
typedef struct px_btl_verbs_hdr {
    uint8_t tag;
    uint8_t flags;       /* PX_BTL_VERBS_HDR_* */
    uint8_t ctl_credits; /* control receives the sender reposted for us */
    uint8_t pad;
    uint16_t credits; /* data receives the sender reposted for us */
    uint16_t pad2;
} px_btl_verbs_hdr_t;
#define PX_BTL_VERBS_HDR_CREDIT 0x1                     /* credit update only: not delivered */
#define PX_BTL_VERBS_HDR_KNOWN  PX_BTL_VERBS_HDR_CREDIT /* every flag a sender may set */

/* Modex: a header, then per module one port record followed by the QP
 * number it created for each rank. */
typedef struct px_btl_verbs_modex_hdr {
    uint32_t nmodules;
    uint32_t nranks;
} px_btl_verbs_modex_hdr_t;
typedef struct px_btl_verbs_modex_port {
    uint8_t gid[16];
    uint16_t lid;
    uint8_t port;
    uint8_t link_layer;
    uint8_t mtu; /* enum ibv_mtu */
    uint8_t pad[3];
    uint32_t psn;
    uint32_t ka_rkey; /* the keepalive word peers read */
    uint64_t ka_addr;
    uint32_t qpn[]; /* [nranks] */
} px_btl_verbs_modex_port_t;
/* Bytes per module record, a multiple of 8 so every record is aligned. */
static inline size_t px_btl_verbs_modex_stride(uint32_t nranks)
{
    return (sizeof(px_btl_verbs_modex_port_t) + (size_t)nranks * sizeof(uint32_t) + 7) & ~(size_t)7;
}

/* ---- receive header ---- */

/* What px_btl_verbs_hdr_decode found. Negative: the header is bad. */
enum {
    PX_BTL_VERBS_RX_DELIVER = 0,      /* a message for the tag's callback */
    PX_BTL_VERBS_RX_CREDIT = 1,       /* a credit update: nothing to deliver */
    PX_BTL_VERBS_RX_SHORT = -1,       /* shorter than the header */
    PX_BTL_VERBS_RX_LONG = -2,        /* longer than a receive buffer */
    PX_BTL_VERBS_RX_FLAGS = -3,       /* flags this version never sends */
    PX_BTL_VERBS_RX_CREDITS = -4,     /* returns more data credits than we spent */
    PX_BTL_VERBS_RX_CTL_CREDITS = -5, /* returns more control credits than we spent */
    PX_BTL_VERBS_RX_UPDATE_LEN = -6,  /* a credit update that carries data */
};

/* A received message, decoded. */
typedef struct px_btl_verbs_rx {
    uint8_t tag;
    uint8_t flags;
    uint8_t ctl_credits;
    uint16_t credits;
    const char *payload; /* after the header */
    size_t payload_len;
} px_btl_verbs_rx_t;

/* Decode the `len` bytes received at `buf` (a receive buffer of `max_len`
 * bytes) from a peer that may return at most `room` data credits and
 * `ctl_room` control credits (those we spent on it and it has not returned:
 * btl_verbs_num_recvs - credits, btl_verbs_ctl_recvs - ctl_credits). Returns
 * a PX_BTL_VERBS_RX_* code; *rx is filled as far as the bytes go. buf must
 * be aligned for the header (receive buffers are). */
static inline int px_btl_verbs_hdr_decode(const void *buf, size_t len, size_t max_len, int room,
                                          int ctl_room, px_btl_verbs_rx_t *rx)
{
    const px_btl_verbs_hdr_t *hdr = (const px_btl_verbs_hdr_t *)buf;
    if (PX_UNLIKELY(len < sizeof(*hdr))) {
        rx->tag = rx->flags = rx->ctl_credits = 0;
        rx->credits = 0;
        rx->payload = NULL;
        rx->payload_len = 0;
        return PX_BTL_VERBS_RX_SHORT;
    }
    rx->tag = hdr->tag;
    rx->flags = hdr->flags;
    rx->ctl_credits = hdr->ctl_credits;
    rx->credits = hdr->credits;
    rx->payload = (const char *)buf + sizeof(*hdr);
    rx->payload_len = len - sizeof(*hdr);
    if (PX_UNLIKELY(len > max_len))
        return PX_BTL_VERBS_RX_LONG;
    if (PX_UNLIKELY((int)hdr->credits > room))
        return PX_BTL_VERBS_RX_CREDITS;
    if (PX_UNLIKELY((int)hdr->ctl_credits > ctl_room))
        return PX_BTL_VERBS_RX_CTL_CREDITS;
    if (PX_UNLIKELY(0 != hdr->flags)) {
        if (0 != (hdr->flags & ~PX_BTL_VERBS_HDR_KNOWN))
            return PX_BTL_VERBS_RX_FLAGS;
        if (len != sizeof(*hdr))
            return PX_BTL_VERBS_RX_UPDATE_LEN;
        return PX_BTL_VERBS_RX_CREDIT;
    }
    return PX_BTL_VERBS_RX_DELIVER;
}

/* Describe a bad header (code < 0 from px_btl_verbs_hdr_decode) in `out`:
 * what was wrong and what would be accepted. Returns out. */
const char *px_btl_verbs_hdr_why(int code, const px_btl_verbs_rx_t *rx, size_t len, size_t max_len,
                                 int room, int ctl_room, char *out, size_t outlen);

/* ---- modex ---- */

/* What this process needs from a peer's modex blob, checked. */
typedef struct px_btl_verbs_peer_addr {
    uint8_t gid[16];
    uint16_t lid;
    uint8_t port;
    uint8_t link_layer; /* IBV_LINK_LAYER_* */
    uint8_t mtu;        /* 0 (unknown) or an enum ibv_mtu */
    uint32_t psn;       /* 24 bits */
    uint32_t ka_rkey;
    uint64_t ka_addr;
    uint32_t qpn;      /* the QP the peer made for this rank (24 bits, not 0) */
    uint32_t nmodules; /* the peer's ports */
} px_btl_verbs_peer_addr_t;

/* Read the `len`-byte modex blob a peer published: the record of its port
 * `index` (this module's index) and the QP it made for rank `my_rank`, in a
 * job of `nranks` ranks. PX_SUCCESS: *out is filled. Otherwise `why` says what
 * is wrong, and the result is PX_ERR_BAD_PARAM for a malformed blob (truncated,
 * a length that is not what its counts make, counts whose size overflows, a
 * QP number, PSN, MTU, link layer or LID no port has) or PX_ERR_NOT_AVAILABLE
 * for a well-formed blob that does not match this process (fewer ports, a job
 * of another size). */
int px_btl_verbs_modex_parse(const void *blob, size_t len, int index, int my_rank, size_t nranks,
                             px_btl_verbs_peer_addr_t *out, char *why, size_t whylen);

/* ---- dynamic peers (BTL API 3.3) ---- */

/* A module's part of a dynamic-peer offer or reply (the base frames it in
 * its "PXDY" payload): the RC queue pair made for that one connection, in
 * PX_BTL_VERBS_DYN_LEN bytes, little-endian:
 *    0 magic "PXVB" (u32 0x42565850)   4 version u8 (1)   5 link layer u8
 *    6 port u8    7 active MTU u8 (enum ibv_mtu)    8 LID u16   10 flags u16 (0)
 *   12 QP number u32   16 PSN u32   20 data receives posted u16
 *   22 control receives posted u16   24 bytes per receive buffer u32
 *   28 keepalive rkey u32   32 keepalive address u64   40 GID[16] */
#define PX_BTL_VERBS_DYN_MAGIC     0x42565850u /* "PXVB" */
#define PX_BTL_VERBS_DYN_VERSION   1
#define PX_BTL_VERBS_DYN_LEN       56
#define PX_BTL_VERBS_DYN_RECVS_MAX 4096 /* btl_verbs_num_recvs' upper bound */
#define PX_BTL_VERBS_DYN_CTL_MAX   64   /* btl_verbs_ctl_recvs' upper bound */

typedef struct px_btl_verbs_dyn_addr {
    uint8_t gid[16];
    uint16_t lid;
    uint8_t port;
    uint8_t link_layer;
    uint8_t mtu;
    uint32_t qpn;
    uint32_t psn;
    uint16_t num_recvs; /* the credits this side may spend on the peer */
    uint16_t ctl_recvs;
    uint32_t recv_size; /* header + the peer's max_send_size */
    uint32_t ka_rkey;
    uint64_t ka_addr;
} px_btl_verbs_dyn_addr_t;

/* Write `a` as a part into `buf` (PX_BTL_VERBS_DYN_LEN bytes). */
void px_btl_verbs_dyn_write(const px_btl_verbs_dyn_addr_t *a, void *buf);
/* Read a peer's `len`-byte part (untrusted). PX_SUCCESS: *out is filled;
 * otherwise PX_ERR_BAD_PARAM and `why` says which field is wrong, its value
 * and what is accepted. Checks: the length, magic, version, reserved flags,
 * link layer, port, MTU code, a unicast LID on InfiniBand, a GID when routing
 * needs one, QP number 1..2^24-1, 24-bit PSN, receive counts and buffer size
 * within what a btl/verbs module posts. */
int px_btl_verbs_dyn_parse(const void *part, size_t len, px_btl_verbs_dyn_addr_t *out, char *why,
                           size_t whylen);

#endif
