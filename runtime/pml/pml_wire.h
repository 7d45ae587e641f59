/*
 * pml_wire.h: messaging's wire format: its active-message tags and the
 * headers they carry (docs/hacking.md, "A new wire message"). Everything
 * here crosses between processes: a receiver checks every field it reads
 * (pml.c, pml_rndv.c; fuzzed by test/fuzz/fuzz_runtime_am.c). Not installed.
 */
#ifndef PX_RUNTIME_PML_PML_WIRE_H
#define PX_RUNTIME_PML_PML_WIRE_H

#include <stdint.h>
#include "runtime/proc/proc.h"

/* Active-message tags messaging uses (runtime range 0..127). */
#define PX_RT_AM_MATCH  1 /* tiny and eager: match header + data */
#define PX_RT_AM_RNDV   2 /* rendezvous request */
#define PX_RT_AM_ACK    3 /* receiver -> sender: send the data as fragments */
#define PX_RT_AM_FRAG   4 /* sender -> receiver: one pipelined fragment */
#define PX_RT_AM_FIN    5 /* receiver -> sender: RDMA get done */
#define PX_RT_AM_PUTACK 6 /* receiver -> sender: put the data here */
#define PX_RT_AM_PUTFIN 7 /* sender -> receiver: RDMA put done */

/* Runtime-internal message tags (below every user tag). */
#define PX_RT_TAG_BARRIER (-16)

typedef struct px_rt_match_hdr {
    int32_t src;
    int32_t tag;
    uint32_t seq;
    uint32_t flags;
} px_rt_match_hdr_t;

typedef struct px_rt_rndv_hdr {
    px_rt_match_hdr_t m;
    uint64_t len;    /* message length */
    uint64_t sreq;   /* the sender's request */
    uint64_t addr;   /* the sender's buffer, for RDMA get */
    uint32_t nrails; /* RDMA rails offered: px_rt_rail_wire_t + handle each, following */
    uint32_t blob;   /* bytes of those entries */
} px_rt_rndv_hdr_t;

/* One RDMA rail offered in an RNDV header, followed by `hsize` handle bytes. */
typedef struct px_rt_rail_wire {
    uint32_t rdma_id; /* hash of the module's component name */
    uint32_t hsize;   /* registration handle bytes (0: none needed) */
} px_rt_rail_wire_t;

/* Most rails one rendezvous stripes over, and the largest rail area. */
#define PX_RT_MAX_RAILS 4
#define PX_RT_MAX_BLOB  (PX_RT_MAX_RAILS * (sizeof(px_rt_rail_wire_t) + PX_RT_MAX_HANDLE))

typedef struct px_rt_ctl_hdr {
    uint64_t sreq;
    uint64_t rreq;
} px_rt_ctl_hdr_t;

typedef struct px_rt_frag_hdr {
    uint64_t rreq;
    uint64_t offset;
} px_rt_frag_hdr_t;

/* Receiver -> sender for RDMA put; `hsize` handle bytes follow. */
typedef struct px_rt_putack_hdr {
    uint64_t sreq;
    uint64_t rreq;
    uint64_t addr; /* the receiver's buffer */
    uint64_t len;  /* bytes it takes (less than the message when truncated) */
    uint32_t rdma_id;
    uint32_t hsize;
} px_rt_putack_hdr_t;

/* px_rt_match_hdr_t.flags of an RNDV header */
#define PX_RT_RNDV_FLAG_GET 0x1u /* the sender's buffer may be read (addr, handle) */
#define PX_RT_RNDV_FLAG_PUT 0x2u /* the sender can write into the receiver's buffer */
/* The message's first bytes follow the rail entries: a px_rt_rndv_data_t,
 * then exactly `len` bytes (all that is left of the RNDV message). A
 * receiver that takes them reads (get) or asks for (ACK with a
 * px_rt_ack_data_t) only the rest; one that does not (a release before this
 * flag, which never reads past the rail entries nor looks at unknown flags)
 * moves the whole message as before, so the sender still offers all of it. */
#define PX_RT_RNDV_FLAG_DATA 0x4u

typedef struct px_rt_rndv_data {
    uint64_t len; /* bytes of the message carried (from offset 0) */
} px_rt_rndv_data_t;

/* Optional tail of an ACK (a px_rt_ctl_hdr_t): the receiver already holds
 * the message's first `offset` bytes (carried by the RNDV), so fragments
 * start there. A sender before it reads only the px_rt_ctl_hdr_t and sends
 * from 0; the receiver counts what arrives, so either works. */
typedef struct px_rt_ack_data {
    uint64_t offset;
} px_rt_ack_data_t;

#endif
