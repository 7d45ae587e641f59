/*
 * pml_request.h: the request (px_request_t, opaque in the API) and the
 * unexpected-message record. Messaging owns both; a layer above messaging
 * that hands out requests of its own (non-blocking collectives) allocates
 * them of type PX_PML_REQ_GENERIC with hooks (px_request_ops_t, as
 * ompi_request_t's req_free / req_cancel) that say what to free when the
 * application's wait returns and what to do when a wait gives up, so
 * messaging never names its users. Not installed.
 */
#ifndef PX_RUNTIME_PML_PML_REQUEST_H
#define PX_RUNTIME_PML_PML_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include "runtime/pml/pml_wire.h"

/* Eager data kept inside an unexpected-message item (larger is malloc'ed). */
#define PX_RT_UX_INLINE 256

/* A rail of an RDMA rendezvous: one module of the peer. Get: one per rail
 * offered and shared (the receiver reads a range over each); put: one. */
typedef struct px_rt_rail {
    px_btl_base_peer_module_t *pm;
    px_btl_registration_handle_t *reg; /* local registration */
    size_t cursor, end;                /* the side moving the data: its range still to move */
    uint32_t hsize;                    /* bytes of the handle (rhandle, or reg when offered) */
    unsigned char rhandle[PX_RT_MAX_HANDLE]; /* the side moving the data: the peer's handle */
} px_rt_rail_t;

enum {
    PX_PML_REQ_SEND = 1,
    PX_PML_REQ_RECV = 2,
    PX_PML_REQ_GENERIC = 3 /* a layer above messaging owns it: r->ops */
};
enum { PX_PML_KIND_EAGER = 1, PX_PML_KIND_RNDV = 2 };
/* What a request on the pending list still has to do. */
enum {
    PX_PML_PEND_NONE = 0,
    PX_PML_PEND_START,  /* send: its first message */
    PX_PML_PEND_FRAGS,  /* send: more fragments */
    PX_PML_PEND_ACK,    /* recv: the ACK */
    PX_PML_PEND_RDMA,   /* recv (get) or send (put): more RDMA operations */
    PX_PML_PEND_FIN,    /* recv (get): the FIN; send (put): the PUT-FIN */
    PX_PML_PEND_PUTACK, /* recv: the PUT-ACK */
};
enum { PX_PML_RDMA_NONE = 0, PX_PML_RDMA_GET = 1, PX_PML_RDMA_PUT = 2 };

/* The hooks of a PX_PML_REQ_GENERIC request (its owner's, set at
 * px_pml_request_alloc and constant). */
typedef struct px_request_ops {
    /* Names it in a wait's messages ("a non-blocking collective"). */
    const char *what;
    /* px_wait/px_test returned it: drop what the owner attached to it
     * (r->owner); messaging frees the request itself after. */
    void (*free)(px_request_t *r);
    /* A wait gave up on it with `error` (`what` says which wait and why):
     * the owner reports, stops its work and frees the request
     * (px_pml_request_free). */
    void (*give_up)(px_request_t *r, int error, const char *what);
} px_request_ops_t;

struct px_request {
    px_free_list_item_t super; /* super.super links it on a queue */
    uint8_t type;
    uint8_t pending; /* PX_PML_PEND_* */
    bool complete;
    bool on_active;     /* on px_rt.active (can be failed by a peer error) */
    bool on_posted;     /* on px_rt.posted */
    bool finishing;     /* the RDMA part is done, FIN (PUT-FIN) under way */
    bool des_held;      /* send: an eager descriptor naming it is still in the BTL */
    bool released;      /* the application let go (px_wait returned) while a transport
                         * still held it: freed by the last callback (req_unhold) */
    bool rndv;          /* in a rendezvous (its state is the API lock's in fine mode) */
    uint32_t seq;       /* send: its sequence number */
    uint8_t rdma_mode;  /* PX_PML_RDMA_*: how the rendezvous data moves */
    bool rndv_prepared; /* send: RDMA chosen (and memory registered) */
    int peer;           /* dest, or requested source (may be PX_ANY_SOURCE) */
    int tag;            /* tag, or requested tag (may be PX_ANY_TAG) */
    void *buf;
    size_t len; /* buffer length */
    px_status_t status;
    /* rendezvous */
    size_t total;     /* message length */
    size_t done;      /* bytes delivered (recv) / acknowledged (send) */
    size_t scheduled; /* bytes handed to the BTL (send frags / RDMA gets or puts) */
    int outstanding;  /* BTL operations not yet completed */
    uint64_t remote;  /* the peer's request */
    size_t rlen;      /* RDMA: bytes to move (what the receive takes) */
    size_t carried;   /* recv: the message's first bytes its RNDV carried (the rest moves) */
    uint64_t raddr;   /* the peer's buffer (get: the sender's, put: the receiver's) */
    px_btl_convertor_t conv;
    int nrails; /* RDMA rails in use (get: up to PX_RT_MAX_RAILS, put: 1) */
    px_rt_rail_t rails[PX_RT_MAX_RAILS];
    px_list_item_t pend_link; /* on px_rt.pending */
    /* PX_PML_REQ_GENERIC: its owner's hooks and state (the owner may link
     * the request on a list of its own through super.super). */
    const px_request_ops_t *ops;
    void *owner;
};
PX_CLASS_DECLARATION(px_request_t);

/* An unexpected (or out-of-order) message. */
typedef struct px_rt_ux {
    px_free_list_item_t super;
    int src, tag;
    uint32_t seq;
    int kind;
    size_t len;          /* eager: data bytes; rndv: message length */
    unsigned char *data; /* eager data: inline_buf or malloc'ed */
    px_rt_rndv_hdr_t rndv;
    size_t carried;              /* rndv: bytes of the message it carried (after the rail
                                  * entries and the px_rt_rndv_data_t in data) */
    px_request_t *match;         /* fine mode: the receive a rendezvous header matched,
                                  * started once the matching lock is let go (pml.c) */
    struct px_rt_ux *next_start; /* ... and the next such header */
    px_rt_defer_t defer;         /* fine mode: that chain queued for the API lock's
                                  * holder when progress found it without the lock */
    unsigned char inline_buf[PX_RT_UX_INLINE];
} px_rt_ux_t;
PX_CLASS_DECLARATION(px_rt_ux_t);

#endif
