/*
 * verbs.h: btl/verbs, the BTL over libibverbs reliable-connected (RC) queue
 * pairs (InfiniBand, RoCE). Internal to the component:
 *  - verbs_component.c: variables, device and port discovery and choice
 *    (include/exclude lists, port state, NUMA distance), init, modex;
 *  - verbs_module.c: one module per active port: its context, PD, CQ,
 *    fragment lists; eager sends with credits, receives, progress, errors;
 *  - verbs_peers.c: one RC QP per peer, created at init (so its number can go
 *    through the modex) and connected at add_procs; del_procs;
 *  - verbs_dyn.c: dynamic peers (BTL API 3.3): an RC QP per connection,
 *    brought up through offer/accept/complete, destroyed at remove;
 *  - verbs_rdma.c: registration (free-list chunks, the BTL base's rcache)
 *    and put/get as IBV_WR_RDMA_WRITE / IBV_WR_RDMA_READ;
 *  - verbs_lib.c: libibverbs loaded on first use (the plugin is not linked
 *    with it), and its functions forwarded;
 *  - verbs_wire.c, verbs_wire.h: the message header and the modex blob, and
 *    the checks on what peers send (test/fuzz compiles them into harnesses).
 *
 * Wire format: every send starts with px_btl_verbs_hdr_t. Each QP has
 * btl_verbs_num_recvs data receives and btl_verbs_ctl_recvs control receives
 * posted ahead; a sender spends one credit per data message and one control
 * credit per credit update, and the receiver returns credits piggybacked on
 * its own messages, or in a credit update once half of them are owed. So no
 * send ever finds the peer's receive queue empty (no RNR on the eager path).
 */
#ifndef PX_BTL_VERBS_H
#define PX_BTL_VERBS_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/class/free_list.h"
#include "frameworks/btl/btl.h"
#include "frameworks/btl/base/frag.h"
#include "frameworks/btl/base/net.h"
#include "frameworks/btl/base/rcache.h"
#include "components/btl/verbs/verbs_wire.h"

extern const px_btl_component_t px_btl_verbs_component;

/* Variables. */
extern char *px_btl_verbs_device_include; /* "mlx5_0,mlx5_1:2" */
extern char *px_btl_verbs_device_exclude;
extern int px_btl_verbs_num_recvs;
extern int px_btl_verbs_ctl_recvs;
extern int px_btl_verbs_sq_size;
extern int px_btl_verbs_max_inline;
extern int px_btl_verbs_gid_index;
extern int px_btl_verbs_timeout;
extern int px_btl_verbs_retry_count;
extern int px_btl_verbs_rnr_retry;
extern int px_btl_verbs_min_rnr_timer;
extern bool px_btl_verbs_numa;
/* rcache_max_entries, rcache_max_bytes, flush_timeout (frameworks/btl/base/net.h). */
extern px_btl_base_net_vars_t px_btl_verbs_net;
extern double px_btl_verbs_keepalive;
enum { PX_BTL_VERBS_PROGRESS_POLL = 0, PX_BTL_VERBS_PROGRESS_EVENT = 1 };
extern int px_btl_verbs_progress_mode; /* PX_BTL_VERBS_PROGRESS_* */
extern int px_btl_verbs_verbose;
extern int px_btl_verbs_output;

/* One candidate port found by discovery. */
typedef struct px_btl_verbs_port {
    char dev_name[IBV_SYSFS_NAME_MAX];
    int dev_index; /* in ibv_get_device_list */
    uint8_t port;
    struct ibv_port_attr pattr;
    struct ibv_device_attr dattr;
    int numa_distance; /* 0: near (or unknown), 1: another NUMA node */
} px_btl_verbs_port_t;

/* Discover the usable ports with the current variables: fill `ports` (up to
 * `max`, may be NULL), describe what was found and why ports were skipped in
 * `out` ("none" when there is no device) and return how many are usable. */
int px_btl_verbs_discover(px_btl_verbs_port_t *ports, int max, char *out, size_t len);

/* verbs_lib.c: load libibverbs (the plugin is not linked with it) and resolve
 * the functions the component calls; true when done (at once after the first
 * success), false with *why naming the library and the failure. */
bool px_btl_verbs_lib_load(const char **why);
/* Does a device_include/exclude list name device `dev` port `port` ("dev" or
 * "dev:port")? Exposed for tests. */
bool px_btl_verbs_list_matches(const char *list, const char *dev, int port);

/* Why init declined (valid after init returned no module). */
extern char px_btl_verbs_decline_reason[1400];

/* ---- wire ---- */

/* The message header, the modex blob, and their checks: verbs_wire.h. */

/* ---- completion contexts (wr_id points at one) ---- */

enum {
    PX_BTL_VERBS_OP_SEND = 1,
    PX_BTL_VERBS_OP_RECV,
    PX_BTL_VERBS_OP_RDMA,
    PX_BTL_VERBS_OP_INLINE,   /* an inline send: nothing to give back */
    PX_BTL_VERBS_OP_KEEPALIVE /* an 8-byte RDMA read probing an idle peer */
};
typedef struct px_btl_verbs_ctx {
    int type;
    px_btl_endpoint_t *endpoint;
} px_btl_verbs_ctx_t;

typedef struct px_btl_verbs_module px_btl_verbs_module_t;
typedef struct px_btl_verbs_frag px_btl_verbs_frag_t;

struct px_btl_endpoint {
    px_btl_verbs_module_t *module;
    int rank;
    const char *hostname;
    struct ibv_qp *qp;
    bool connected;
    bool failed;  /* a work completion failed: the peer is lost */
    bool flushed; /* its QP was moved to the error state */
    int credits;  /* data sends the peer can take */
    int ctl_credits;
    int max_credits;    /* the peer's data receives: credits it may return at most */
    int max_ctl;        /* its control receives */
    int posted_recvs;   /* receives posted on the QP, not completed */
    int return_credits; /* data receives reposted, not yet told to the peer */
    int return_ctl;
    int sq_free;                   /* send work requests we may still post */
    size_t outstanding;            /* posted, not completed */
    px_btl_base_pending_t pending; /* sends waiting for credits / SQ room */
    bool blocked;                  /* on the module's blocked list */
    struct px_btl_endpoint *next_blocked;
    px_btl_verbs_ctx_t inline_ctx;
    px_btl_verbs_ctx_t ka_ctx;
    uint64_t ka_addr; /* the peer's keepalive word */
    uint32_t ka_rkey;
    bool ka_outstanding;
    px_btl_verbs_frag_t **recvs; /* posted receives, for teardown */
    int num_recvs;
    /* Receives consumed and delivered, posted again at the start of the next
     * progress call (one chained ibv_post_recv), so that reposting is not
     * between a message's arrival and the answer the caller sends to it;
     * their credits are owed once they are posted. */
    px_btl_verbs_frag_t *repost_head;
    int repost_data, repost_ctl;
    bool repost_listed; /* on the module's reposts list */
    struct px_btl_endpoint *next_repost;
    /* Dynamic peers (verbs_dyn.c): a QP per connection, not per rank. */
    bool dyn;      /* made by btl_dyn_offer or btl_dyn_accept */
    bool removing; /* btl_dyn_remove began: no more reports */
    bool flushing; /* ...and its QP went to the error state: completions are only counted */
    struct px_btl_endpoint *next_dyn;
};

/* Registration: rkey and address go to the peer (16 bytes). */
struct px_btl_registration_handle {
    uint32_t rkey;
    uint32_t lkey; /* local only */
    uint64_t base;
};
#define PX_BTL_VERBS_HANDLE_WIRE_SIZE 16

typedef struct px_btl_verbs_reg {
    px_rcache_entry_t super;
    struct ibv_mr *mr;
    px_btl_registration_handle_t handle;
} px_btl_verbs_reg_t;

/* A send or receive fragment (frameworks/btl/base/frag.h): the payload is
 * px_btl_verbs_hdr_t, then up to btl_max_send_size bytes; a receive's
 * super.next_pending links it on its endpoint's repost list. */
struct px_btl_verbs_frag {
    px_btl_base_frag_t super; /* first */
    px_btl_verbs_ctx_t ctx;
    uint8_t hdr_flags;
};
PX_CLASS_DECLARATION(px_btl_verbs_frag_t);

typedef struct px_btl_verbs_rdma_op {
    px_free_list_item_t super;
    px_btl_verbs_ctx_t ctx;
    px_btl_base_rdma_req_t req;
} px_btl_verbs_rdma_op_t;
PX_CLASS_DECLARATION(px_btl_verbs_rdma_op_t);

struct px_btl_verbs_module {
    px_btl_module_t super;
    px_btl_verbs_port_t port;
    int index; /* among the modules of this process: the modex record it uses */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_comp_channel *channel; /* event mode only */
    bool waiter;                      /* registered with the progress engine */
    unsigned long cq_events;          /* completion events taken, not yet acked */
    union ibv_gid gid;
    uint32_t psn;
    int max_inline;
    int sq_size, rq_size;
    size_t frag_size; /* header + max_send_size */
    int my_rank;
    px_free_list_t send_frags, recv_frags, rdma_ops;
    bool lists_ready;
    px_free_list_allocator_t *payload_allocator;
    px_rcache_t *rcache;
    px_btl_error_fn error_cb;
    px_btl_endpoint_t *blocked;
    px_btl_endpoint_t *reposts; /* endpoints with receives to post again */
    bool draining;
    size_t outstanding;
    uint64_t *ka_buf; /* [0]: the word peers read, [1]: where our reads land */
    struct ibv_mr *ka_mr;
    unsigned long idle_polls; /* polls in a row that found nothing */
    double idle_since;
    px_btl_endpoint_t **peers; /* by rank, created at init */
    size_t num_peers;
    px_btl_endpoint_t *dyn; /* dynamic peers' endpoints (verbs_dyn.c) */
    size_t num_dyn;
    /* Removed dynamic peers whose QP did not flush in time: their memory
     * stays (a late completion may name it) until finalize. */
    px_btl_endpoint_t *dyn_zombies;
    px_btl_base_reasons_t reasons; /* strings handed out by add_procs */
};

/* The module template: figures registered as btl_verbs_* variables. */
extern px_btl_verbs_module_t px_btl_verbs_module_template;

/* verbs_setup.c */
/* Open the port's device and set the module up, with QPs for `nranks` ranks
 * (in INIT, receives posted); prints why and returns an error on failure. */
int px_btl_verbs_module_init(px_btl_verbs_module_t *m, int nranks);
int px_btl_verbs_module_finalize(px_btl_module_t *btl);

/* verbs_dyn.c: the dynamic peer calls (BTL API 3.3): an RC QP per
 * connection, brought up from the parts the connection exchange carries. */
int px_btl_verbs_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                           size_t *part_len, char *reason);
int px_btl_verbs_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                            px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                            char *reason);
int px_btl_verbs_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *reply,
                              size_t reply_len, char *reason);
int px_btl_verbs_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *endpoint);
/* Release every dynamic peer of the module (teardown). */
void px_btl_verbs_dyn_cleanup(px_btl_verbs_module_t *m);
/* Free an endpoint's QP, its receive buffers and the endpoint. */
void px_btl_verbs_ep_free(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep);

/* verbs_module.c */
/* The module's operations, installed by verbs_setup.c. */
px_btl_descriptor_t *px_btl_verbs_alloc(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                        uint8_t order, size_t size, uint32_t flags);
int px_btl_verbs_free(px_btl_module_t *btl, px_btl_descriptor_t *des);
px_btl_descriptor_t *px_btl_verbs_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                              px_btl_convertor_t *conv, uint8_t order,
                                              size_t reserve, size_t *size, uint32_t flags);
int px_btl_verbs_send(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, px_btl_descriptor_t *des,
                      px_btl_tag_t tag);
int px_btl_verbs_sendi(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *header,
                       size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                       uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor);
int px_btl_verbs_flush(px_btl_module_t *btl, px_btl_endpoint_t *endpoint);
int px_btl_verbs_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc);
/* A transport error on `ep` (NULL: the module) to the runtime's callback. */
void px_btl_verbs_report(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep, int error,
                         const char *what, const char *detail);
/* Fail the pending sends of `ep`. */
void px_btl_verbs_fail_pending(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep, int status);
int px_btl_verbs_progress(px_btl_module_t *btl);
/* Post every receive of `ep` (QP in INIT or later). */
int px_btl_verbs_post_recvs(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep);
const char *px_btl_verbs_mtu_str(int mtu);

/* verbs_peers.c */
int px_btl_verbs_create_qp(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep);
/* Connect ep's QP (INIT -> RTR -> RTS) to the peer's; NULL or the reason
 * (kept by the module). */
const char *px_btl_verbs_connect(px_btl_verbs_module_t *m, px_btl_endpoint_t *ep,
                                 const px_btl_verbs_peer_addr_t *p);
/* "rank N" or "dynamic peer (QP n)", for messages. */
const char *px_btl_verbs_who(const px_btl_endpoint_t *ep, char *buf, size_t len);
int px_btl_verbs_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                           px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                           const char **reasons);
int px_btl_verbs_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                           px_btl_endpoint_t **endpoints);
/* Modules made by the last init (for the modex), in order. */
extern px_btl_verbs_module_t **px_btl_verbs_modules;
extern int px_btl_verbs_num_modules;

/* verbs_rdma.c */
void *px_btl_verbs_payload_alloc(void *ctx, size_t size, size_t align, void **cookie);
void px_btl_verbs_payload_free(void *ctx, void *ptr, size_t size, void *cookie);
int px_btl_verbs_rcache_reg(void *ctx, px_rcache_entry_t *e);
int px_btl_verbs_rcache_dereg(void *ctx, px_rcache_entry_t *e);
void px_btl_verbs_rdma_install(px_btl_module_t *btl);
void px_btl_verbs_rdma_done(px_btl_verbs_module_t *m, px_btl_verbs_rdma_op_t *op, int status);

#endif
