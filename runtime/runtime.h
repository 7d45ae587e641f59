/*
 * runtime.h: the runtime's internal state, shared by runtime.c (px_init,
 * px_finalize, the process table) and pml.c (matching and the protocols).
 * Not installed; tests include it to reach the hooks at the bottom (they link
 * libplexus statically, see test/runtime/Makefile.inc). px_rt_tool_peer_btl
 * and px_rt_pml_register_params are exported (PX_EXPORT) only because the
 * in-tree tools px_perf (--btl) and px_info use them; they are not API.
 */
#ifndef PX_RUNTIME_RUNTIME_H
#define PX_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include "core/class/free_list.h"
#include "core/class/list.h"
#include "runtime/plexus.h"
#include "core/util/proc.h"
#include "frameworks/btl/base/base_runtime.h"

/* Active-message tags the runtime uses (runtime range 0..127). */
#define PX_RT_AM_MATCH  1 /* tiny and eager: match header + data */
#define PX_RT_AM_RNDV   2 /* rendezvous request */
#define PX_RT_AM_ACK    3 /* receiver -> sender: send the data as fragments */
#define PX_RT_AM_FRAG   4 /* sender -> receiver: one pipelined fragment */
#define PX_RT_AM_FIN    5 /* receiver -> sender: RDMA get done */
#define PX_RT_AM_PUTACK 6 /* receiver -> sender: put the data here */
#define PX_RT_AM_PUTFIN 7 /* sender -> receiver: RDMA put done */

/* Runtime-internal message tags (below every user tag). */
#define PX_RT_TAG_BARRIER (-16)

/* Largest registration handle the rendezvous header carries. */
#define PX_RT_MAX_HANDLE 128
/* Eager data kept inside an unexpected-message item (larger is malloc'ed). */
#define PX_RT_UX_INLINE 256

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

/* A rail of an RDMA rendezvous: one module of the peer. Get: one per rail
 * offered and shared (the receiver reads a range over each); put: one. */
typedef struct px_rt_rail {
    px_btl_base_peer_module_t *pm;
    px_btl_registration_handle_t *reg; /* local registration */
    size_t cursor, end;                /* the side moving the data: its range still to move */
    uint32_t hsize;                    /* bytes of the handle (rhandle, or reg when offered) */
    unsigned char rhandle[PX_RT_MAX_HANDLE]; /* the side moving the data: the peer's handle */
} px_rt_rail_t;

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

enum { PX_RT_REQ_SEND = 1, PX_RT_REQ_RECV = 2, PX_RT_REQ_COLL = 3 /* a non-blocking collective */ };
enum { PX_RT_KIND_EAGER = 1, PX_RT_KIND_RNDV = 2 };
/* What a request on the pending list still has to do. */
enum {
    PX_RT_PEND_NONE = 0,
    PX_RT_PEND_START,  /* send: its first message */
    PX_RT_PEND_FRAGS,  /* send: more fragments */
    PX_RT_PEND_ACK,    /* recv: the ACK */
    PX_RT_PEND_RDMA,   /* recv (get) or send (put): more RDMA operations */
    PX_RT_PEND_FIN,    /* recv (get): the FIN; send (put): the PUT-FIN */
    PX_RT_PEND_PUTACK, /* recv: the PUT-ACK */
};

struct px_request {
    px_free_list_item_t super; /* super.super links it on a queue */
    uint8_t type;
    uint8_t pending; /* PX_RT_PEND_* */
    bool complete;
    bool on_active;     /* on px_rt.active (can be failed by a peer error) */
    bool on_posted;     /* on px_rt.posted */
    bool finishing;     /* the RDMA part is done, FIN (PUT-FIN) under way */
    bool des_held;      /* send: an eager descriptor naming it is still in the BTL */
    bool released;      /* the application let go (px_wait returned) while a transport
                         * still held it: freed by the last callback (req_unhold) */
    uint32_t seq;       /* send: its sequence number */
    uint8_t rdma_mode;  /* PX_RT_RDMA_*: how the rendezvous data moves */
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
    uint64_t raddr;   /* the peer's buffer (get: the sender's, put: the receiver's) */
    px_btl_convertor_t conv;
    int nrails; /* RDMA rails in use (get: up to PX_RT_MAX_RAILS, put: 1) */
    px_rt_rail_t rails[PX_RT_MAX_RAILS];
    px_list_item_t pend_link; /* on px_rt.pending */
    /* PX_RT_REQ_COLL: the collective's schedule (runtime/coll.c); the request
     * sits on px_rt.colls (through super.super) until it completes. */
    struct px_rt_coll_op *coll;
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
    unsigned char inline_buf[PX_RT_UX_INLINE];
} px_rt_ux_t;
PX_CLASS_DECLARATION(px_rt_ux_t);

typedef struct px_rt_peer {
    px_btl_base_peer_t *btl;
    /* Cached immediate path (first eager module): */
    px_btl_module_t *eager_btl;
    px_btl_endpoint_t *eager_ep;
    size_t tiny_below; /* data shorter than this goes through sendi; 0: never */
    size_t eager_data; /* largest data bytes of an eager message */
    uint32_t send_seq; /* next sequence number to send to it */
    uint32_t recv_seq; /* next sequence number expected from it */
    int failed;        /* PX_SUCCESS or the error that ended it */
    bool failed_here;  /* failed by this process's decision (timeout, queueing), not by
                        * its transport: px_finalize's barrier still sends to it */
    size_t dropped;    /* messages from it discarded because it had failed */
    px_list_t ooo;     /* px_rt_ux_t that arrived ahead of their turn */
} px_rt_peer_t;

typedef struct px_runtime {
    bool initialized;
    int rank, size;
    /* The process table: who each rank is (from boot) and what this process
     * keeps about it. */
    px_proc_t *procs;               /* [size] */
    px_proc_t **proc_ptrs;          /* [size] */
    px_btl_base_peer_t **btl_peers; /* [size], from px_btl_base_add_procs */
    px_rt_peer_t *peers;            /* [size] */
    px_btl_base_table_t table;
    bool table_valid;
    px_list_t posted;     /* px_request_t (receives), in post order */
    px_list_t unexpected; /* px_rt_ux_t, in arrival order */
    px_list_t pending;    /* requests with work to retry (via pend_link) */
    px_list_t active;     /* requests in a rendezvous */
    px_list_t colls;      /* non-blocking collectives in progress (runtime/coll.c) */
    px_free_list_t requests;
    px_free_list_t ux_items;
    size_t ooo_arrivals; /* messages that arrived ahead of their turn (stats, tests) */
    size_t bad_headers;  /* matched-message headers dropped: a source the transport
                          * contradicts, or a sequence number behind (pml.c, hdr_bad) */
    /* variables */
    size_t tiny_limit;
    size_t eager_limit;
    int rndv_protocol;
    double wait_timeout;
    int verbose; /* runtime_verbose */
    int output;  /* its output stream */
    /* Test hook (PX_RT_TEST_UX_FAIL=N, read at init): the Nth unexpected-message
     * record cannot be allocated. 0: off. */
    unsigned long ux_fail_countdown;
} px_runtime_t;

extern px_runtime_t px_rt;

/* For the in-tree tools only (px_perf --btl drives a BTL module directly): the
 * eager BTL module and endpoint the runtime chose for `peer`. PX_SUCCESS, or
 * PX_ERR_BAD_PARAM before px_init or for a rank out of range, or
 * PX_ERR_UNREACH when no BTL reaches it. Exported, not API. */
PX_EXPORT int px_rt_tool_peer_btl(int peer, px_btl_module_t **btl, px_btl_endpoint_t **ep);
/* For px_btl_check: the BTL reachability table px_init built (every module,
 * its endpoints and its reasons per process), NULL before px_init; and the
 * largest eager data size to `peer` (0 before px_init or out of range). */
PX_EXPORT const px_btl_base_table_t *px_rt_tool_btl_table(void);
PX_EXPORT size_t px_rt_tool_eager_data(int peer);

/* The transfer engine (runtime/xfer.c): once px_xfer_enable_threads was
 * called, every messaging call takes the engine's progress lock (the
 * transports are driven by one thread at a time). */
extern bool px_rt_api_shared;
/* Take the lock unless this thread holds it; returns whether it took it. */
bool px_rt_api_lock(void);
void px_rt_api_unlock(bool took);
/* A long messaging wait lets other threads take the lock for a moment. */
void px_rt_api_pause(void);
/* Run `call` (an int expression) under the lock when it is shared. */
#define PX_RT_API_CALL(call)                                                                       \
    do {                                                                                           \
        if (PX_LIKELY(!px_rt_api_shared))                                                          \
            return (call);                                                                         \
        bool px_took_ = px_rt_api_lock();                                                          \
        int px_rc_ = (call);                                                                       \
        px_rt_api_unlock(px_took_);                                                                \
        return px_rc_;                                                                             \
    } while (0)

enum { PX_RT_RNDV_AUTO = 0, PX_RT_RNDV_GET = 1, PX_RT_RNDV_PIPELINE = 2, PX_RT_RNDV_PUT = 3 };
enum { PX_RT_RDMA_NONE = 0, PX_RT_RDMA_GET = 1, PX_RT_RDMA_PUT = 2 };

/* job_vars.c: every rank gives each job-wide variable (scope
 * PX_MCA_VAR_SCOPE_ALL) the same value. publish before the address exchange's
 * commit; check after its fence, before any transport attaches to a peer:
 * PX_ERR_BAD_PARAM (on every rank) when a variable differs, reported with the
 * ranks and their values. */
int px_rt_job_vars_publish(void);
int px_rt_job_vars_check(void);

/* pml.c */
PX_EXPORT int px_rt_pml_register_params(void);
int px_rt_pml_init(void); /* free lists, AM callbacks */
void px_rt_pml_peer_setup(px_rt_peer_t *peer, px_btl_base_peer_t *btl);
int px_rt_pml_finalize(void);
/* Internal sends and receives (any tag, including runtime tags < 0). */
int px_rt_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request);
int px_rt_irecv(void *buf, size_t len, int source, int tag, px_request_t **request);
/* The name of the operation a runtime-internal tag (< 0) belongs to. */
const char *px_rt_tag_name(int tag);
/* Wait for `*request` as px_wait does; `who` names the operation in messages. */
int px_rt_wait(px_request_t **request, px_status_t *status, const char *who);
/* px_rt_isend to a peer this process failed itself (px_finalize's barrier). */
int px_rt_isend_failed_ok(const void *buf, size_t len, int dest, int tag, px_request_t **request);
/* Fail peer `rank` with `error` by this process's decision (`why` is printed).
 * Its pending operations complete with `error`, later ones fail at once and
 * its messages are discarded from now on. */
void px_rt_fail_peer(int rank, int error, const char *why);
/* px_finalize, before the transports go: drop what requests still hold. */
void px_rt_pml_quiesce(void);
/* The BTL error callback: fails the requests of `rank` (or of the peers the
 * module serves when rank < 0). Exposed for tests. */
void px_rt_btl_error(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, int rank, int error,
                     const char *description);
/* coll.c: collectives. Open the coll framework (before the unknown-variable
 * check), make the world group (once messaging works), progress the
 * non-blocking collectives, free a completed one's schedule, give up on one
 * (a wait timed out), and tear it all down at px_finalize. */
int px_rt_coll_open(void);
int px_rt_coll_world(void);
int px_rt_coll_progress(void);
void px_rt_coll_req_free(px_request_t *r);
void px_rt_coll_req_give_up(px_request_t *r, int error);
void px_rt_coll_finalize(void);
/* Counts for tests: unexpected messages queued, receives posted, requests in use. */
size_t px_rt_unexpected_count(void);
size_t px_rt_posted_count(void);

#endif
