/*
 * ofi.h: btl/ofi, the BTL over libfabric RDM endpoints (any provider that
 * offers FI_EP_RDM with FI_MSG and FI_RMA: verbs;ofi_rxm, efa, psm3, cxi,
 * tcp;ofi_rxm, sockets, shm). Internal to the component:
 *  - ofi_component.c: variables, provider discovery and choice, init, modex;
 *  - ofi_module.c: endpoint setup and teardown, sends, receives, progress,
 *    errors;
 *  - ofi_peers.c: peers in the address vector (add/del procs);
 *  - ofi_rdma.c: memory registration (free-list chunks, the registration
 *    cache, register_mem) and RDMA (put/get and their completions, striped
 *    over the lanes: btl_ofi_rdma_lanes endpoints per process, each its own
 *    connection to the peer's lane of the same number);
 *  - ofi_wire.c, ofi_wire.h: the message header and the modex blob, and the
 *    checks on what peers send (test/fuzz compiles them into harnesses).
 *
 * Wire format: every message starts with px_btl_ofi_hdr_t (tag, sender's
 * rank); the receiver posts buffers of hdr + max_send_size bytes ahead of
 * time from a free list and reposts each after its callback returns.
 */
#ifndef PX_BTL_OFI_H
#define PX_BTL_OFI_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_errno.h>
#include <sys/socket.h>
#include "core/class/free_list.h"
#include "core/util/output.h"
#include "frameworks/btl/btl.h"
#include "frameworks/btl/base/frag.h"
#include "frameworks/btl/base/net.h"
#include "frameworks/btl/base/rcache.h"
#include "components/btl/ofi/ofi_wire.h"

/* libfabric itself is loaded on first use, not with the plugin: loading it
 * runs its providers' constructors (about 0.3 s here, mostly libinfinipath
 * sleeping), which every process that opens the btl framework would pay.
 * The plugin calls its five exported functions through this table; the
 * rest of the API is inline calls through the objects' ops. */
typedef struct px_btl_ofi_lib {
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
} px_btl_ofi_lib_t;
extern px_btl_ofi_lib_t px_btl_ofi_lib;
/* Load libfabric and resolve the table once; false (with the reason in
 * *why) when it cannot. */
bool px_btl_ofi_lib_load(const char **why);
#define fi_getinfo  px_btl_ofi_lib.getinfo
#define fi_freeinfo px_btl_ofi_lib.freeinfo
#define fi_dupinfo  px_btl_ofi_lib.dupinfo
#define fi_fabric   px_btl_ofi_lib.fabric
#define fi_strerror px_btl_ofi_lib.strerror

/* The message header and the modex blob, and their checks: ofi_wire.h. */

/* What is posted to libfabric as the operation context. */
enum { PX_BTL_OFI_OP_SEND = 1, PX_BTL_OFI_OP_RECV, PX_BTL_OFI_OP_RDMA };
typedef struct px_btl_ofi_context {
    struct fi_context2 fi; /* first: FI_CONTEXT/FI_CONTEXT2 providers write here */
    int type;
} px_btl_ofi_context_t;

typedef struct px_btl_ofi_module px_btl_ofi_module_t;

struct px_btl_endpoint {
    px_btl_ofi_module_t *module;
    fi_addr_t addr;
    int rank;
    const char *hostname;
    size_t outstanding; /* sends and RDMA operations not yet completed */
    bool failed;        /* a connection-level error was reported */
    /* Sends libfabric refused with EAGAIN, retried in order from progress. */
    px_btl_base_pending_t pending;
    struct px_btl_endpoint *next_blocked; /* on the module's list while pending */
    double stuck_since;                   /* when libfabric began refusing (0: it is not) */
    bool sent;                            /* something was sent since the last drain */
    /* The peer's published TCP address (tcp-based providers only; len 0:
     * none), probed with a plain connect while libfabric keeps answering
     * EAGAIN: a refused probe means nothing listens there any more. */
    struct sockaddr_storage probe_addr;
    socklen_t probe_len;
    int probe_fd;    /* a connect in progress, or -1 */
    double probe_at; /* when the next probe may start */
    bool refused;    /* a probe was refused: the peer's process is gone */
    /* What a send to this peer puts in the header's src_rank: this
     * process's rank, or for a dynamic peer (ofi_dyn.c) the number it gave
     * us, as PX_BTL_OFI_DYN_SRC(id). */
    int32_t send_as;
    bool dyn;        /* a dynamic peer (BTL API 3.3) */
    bool in_av;      /* its address is in the address vector */
    uint32_t dyn_id; /* our number for it: slot (bits 0..15) and generation */
    /* RDMA lanes with this peer: the smaller of the two processes' counts;
     * lane_addr[0] == addr, lane i's from our lane i to the peer's. */
    unsigned nlanes;
    unsigned next_lane; /* where the next RDMA operation starts */
    fi_addr_t lane_addr[PX_BTL_OFI_LANES_MAX];
};

/* Memory registration: key and base travel to the peer (16 bytes). */
struct px_btl_registration_handle {
    uint64_t key;
    uint64_t base; /* registered base: remote offsets without FI_MR_VIRT_ADDR */
    void *desc;    /* local only: fi_mr_desc */
};
#define PX_BTL_OFI_HANDLE_WIRE_SIZE 16

typedef struct px_btl_ofi_reg {
    px_rcache_entry_t super;
    struct fid_mr *mr;
    px_btl_registration_handle_t handle;
} px_btl_ofi_reg_t;

/* A send (or receive) fragment (frameworks/btl/base/frag.h): payload = hdr
 * followed by the data. */
typedef struct px_btl_ofi_frag {
    px_btl_base_frag_t super; /* first */
    px_btl_ofi_context_t ctx;
    px_btl_endpoint_t *endpoint;
} px_btl_ofi_frag_t;
PX_CLASS_DECLARATION(px_btl_ofi_frag_t);

/* An RDMA operation, or one piece of an operation striped over lanes. The
 * first piece is the parent: it holds the caller's request, counts the
 * pieces not yet completed (left) and, when libfabric refused a piece, what
 * remains to post (retried from progress). */
typedef struct px_btl_ofi_rdma_op px_btl_ofi_rdma_op_t;
struct px_btl_ofi_rdma_op {
    px_free_list_item_t super;
    px_btl_ofi_context_t ctx;
    px_btl_endpoint_t *endpoint;
    px_btl_base_rdma_req_t req;
    px_btl_ofi_rdma_op_t *parent; /* NULL: a whole operation on one lane */
    /* The parent's: */
    int left, status;
    uint8_t npieces, next_piece, lane0;
    char *local;
    void *desc;
    uint64_t raddr, rkey;
    size_t size, piece;
    px_btl_ofi_rdma_op_t *next_blocked; /* on the module's rdma_blocked list */
};
PX_CLASS_DECLARATION(px_btl_ofi_rdma_op_t);

struct px_btl_ofi_module {
    px_btl_module_t super;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    char addr[256];
    size_t addrlen;
    /* RDMA lanes: [0] is ep and cq above; each other one an endpoint of its
     * own (its own connections) with its own completion queue (two rxm
     * endpoints on one queue ran 10x fewer reads: test/bench/ofi_rma_bw). */
    unsigned nlanes;
    struct fid_ep *lane_ep[PX_BTL_OFI_LANES_MAX];
    struct fid_cq *lane_cq[PX_BTL_OFI_LANES_MAX];
    char lane_name[PX_BTL_OFI_LANES_MAX][256];
    size_t lane_namelen[PX_BTL_OFI_LANES_MAX];
    size_t lane_peers; /* peers with more than one lane: lanes 1.. are polled */
    uint64_t lane_ops[PX_BTL_OFI_LANES_MAX]; /* RDMA operations (pieces) posted per lane */
    size_t rdma_lane_min;                    /* the smallest piece of a striped operation */
    px_btl_ofi_rdma_op_t *rdma_blocked;      /* striped operations with pieces to post */
    bool mr_local, mr_virt_addr, mr_prov_key, mr_endpoint;
    uint64_t next_key;
    size_t inject_size;
    size_t frag_size; /* header + max_send_size */
    int my_rank;
    size_t job_size;         /* ranks in the job: a header naming another is refused */
    unsigned long bad_recvs; /* messages dropped for a bad header, sender unknown */
    px_free_list_t send_frags, recv_frags, rdma_ops;
    bool lists_ready;
    px_free_list_allocator_t *payload_allocator; /* registers chunks under FI_MR_LOCAL */
    px_btl_ofi_frag_t **posted;                  /* receives handed to libfabric */
    int num_posted;
    px_rcache_t *rcache;
    px_btl_error_fn error_cb;
    px_btl_endpoint_t *blocked; /* endpoints with pending sends */
    bool draining;              /* del_procs is draining: errors are expected */
    size_t outstanding;
    px_btl_endpoint_t **peers; /* by rank */
    size_t num_peers;
    px_btl_base_reasons_t reasons; /* strings handed out by add_procs */
    px_btl_endpoint_t **dyn;       /* dynamic peers by slot (ofi_dyn.c) */
    uint32_t dyn_cap, dyn_gen;
    uint32_t dyn_in_av; /* dynamic peers' addresses in the address vector */
};

extern const px_btl_component_t px_btl_ofi_component;

/* Variables. */
extern char *px_btl_ofi_provider_include;
extern char *px_btl_ofi_provider_exclude;
extern char *px_btl_ofi_provider_order;
extern char *px_btl_ofi_domain;
extern int px_btl_ofi_num_recvs;
/* rcache_max_entries, rcache_max_bytes, flush_timeout (frameworks/btl/base/net.h). */
extern px_btl_base_net_vars_t px_btl_ofi_net;
extern int px_btl_ofi_connect_timeout;
extern int px_btl_ofi_connect_probe;
extern size_t px_btl_ofi_rxm_eager_limit;
extern int px_btl_ofi_rxm_cm_progress_interval;
extern size_t px_btl_ofi_rxm_buffer_size;
extern int px_btl_ofi_rdma_lanes;
extern size_t px_btl_ofi_rdma_lane_min;
extern int px_btl_ofi_verbose;
extern bool px_btl_ofi_skip_single_host;
extern int px_btl_ofi_output;

/* The module template: figures registered as btl_ofi_* variables. */
extern px_btl_ofi_module_t px_btl_ofi_module_template;

/* Set up the module on `info` (owned by it from now on); on failure prints
 * why and returns an error. */
int px_btl_ofi_module_init(px_btl_ofi_module_t *m, struct fi_info *info); /* ofi_setup.c */
/* The module's btl_finalize: tear down and free it. */
int px_btl_ofi_module_finalize(px_btl_module_t *btl);

/* Short text of a libfabric error: "fi_strerror (-code)". */
const char *px_btl_ofi_strerror(int fi_rc);

/* The module's provider name, for messages. */
static inline const char *px_btl_ofi_prov(const px_btl_ofi_module_t *m)
{
    return m->info ? m->info->fabric_attr->prov_name : "?";
}

/* Post receive fragment `f` (ofi_module.c's receive path and ofi_setup.c's
 * first posting). Static, not inline, as when it sat beside the receive path:
 * the compiler keeps the choice it made there (a call; inlining its retry
 * loop into progress would grow that by 416 bytes). */
static PX_UNUSED int px_btl_ofi_post_recv(px_btl_ofi_module_t *m, px_btl_ofi_frag_t *f)
{
    void *desc =
        f->super.base.super.registration ? fi_mr_desc(f->super.base.super.registration) : NULL;
    ssize_t rc = -FI_EAGAIN;
    /* A receive queue that is full for a moment drains with progress. */
    for (int tries = 0; tries < 100000; ++tries) {
        rc = fi_recv(m->ep, f->super.base.super.payload, m->frag_size, desc, FI_ADDR_UNSPEC,
                     &f->ctx.fi);
        if (-FI_EAGAIN != rc)
            break;
        (void)fi_cq_read(m->cq, NULL, 0);
    }
    if (0 != rc) {
        px_show_error("btl/ofi (%s): fi_recv failed: %s", px_btl_ofi_prov(m),
                      px_btl_ofi_strerror((int)rc));
        return PX_ERR_COMM;
    }
    return PX_SUCCESS;
}

/* The module's operations (ofi_module.c), installed by ofi_setup.c. */
px_btl_descriptor_t *px_btl_ofi_alloc(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                      uint8_t order, size_t size, uint32_t flags);
int px_btl_ofi_free(px_btl_module_t *btl, px_btl_descriptor_t *des);
px_btl_descriptor_t *px_btl_ofi_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                            px_btl_convertor_t *conv, uint8_t order, size_t reserve,
                                            size_t *size, uint32_t flags);
int px_btl_ofi_send(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, px_btl_descriptor_t *des,
                    px_btl_tag_t tag);
int px_btl_ofi_sendi(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *header,
                     size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                     uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor);
int px_btl_ofi_flush(px_btl_module_t *btl, px_btl_endpoint_t *endpoint);
int px_btl_ofi_progress(px_btl_module_t *btl);
int px_btl_ofi_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc);

/* ofi_module.c, for ofi_rdma.c and ofi_peers.c: */
/* A transport error on `ep` (NULL: the module) during `what`: to the
 * runtime's error callback, or printed when none is installed. */
void px_btl_ofi_report(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, int error, const char *what,
                       const char *detail);
/* libfabric refused an operation to `ep` with EAGAIN: true once it has
 * refused for longer than btl_ofi_connect_timeout, or once a probe of the
 * peer's TCP port was refused (ep->refused: its process is gone). */
bool px_btl_ofi_stuck_too_long(px_btl_endpoint_t *ep);
/* Declare `ep` unreachable (after btl_ofi_connect_timeout or a refused
 * probe); PX_ERR_UNREACH. */
int px_btl_ofi_give_up(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep);

/* Fail every pending send of `ep` with `status`. */
void px_btl_ofi_fail_pending(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, int status);
/* Before the endpoints `eps` (NULL entries skipped) go away: send a drain
 * message to each one sent to, and wait a little for their operations. */
void px_btl_ofi_drain(px_btl_ofi_module_t *m, px_btl_endpoint_t **eps, size_t n);

/* Close `ep`'s probe connection, if any. */
void px_btl_ofi_probe_close(px_btl_endpoint_t *ep);

/* ofi_dyn.c: dynamic peers (BTL API 3.3). */
int px_btl_ofi_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                         size_t *part_len, char *reason);
int px_btl_ofi_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                          px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                          char *reason);
int px_btl_ofi_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *reply,
                            size_t reply_len, char *reason);
int px_btl_ofi_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *endpoint);
/* The endpoint of the dynamic peer numbered `id`, or NULL. */
px_btl_endpoint_t *px_btl_ofi_dyn_lookup(px_btl_ofi_module_t *m, uint32_t id);
/* Release every dynamic peer (module teardown). */
void px_btl_ofi_dyn_cleanup(px_btl_ofi_module_t *m);

/* ofi_peers.c: the modex blob of this module (lane 0's address, the blob
 * an older Plexus reads) into `buf` of `cap` bytes; its length (nothing
 * written when larger than cap). */
size_t px_btl_ofi_own_blob(px_btl_ofi_module_t *m, void *buf, size_t cap);
/* ofi_peers.c: the lanes blob of this module (its lane count and lanes 1..'s
 * addresses), likewise. */
size_t px_btl_ofi_own_lanes(px_btl_ofi_module_t *m, void *buf, size_t cap);
/* ofi_peers.c: the modex key of the lanes blob ("btl.ofi.lanes"). */
int px_btl_ofi_lanes_key(char *key, size_t len);
/* ofi_peers.c: put the peer's addresses `pa` into the address vector and
 * `ep` (lane 0's, then as many more lanes as both sides have); PX_SUCCESS,
 * or an error with *why when lane 0's address cannot be inserted. A later
 * lane that cannot be inserted only lowers ep->nlanes. */
int px_btl_ofi_lanes_insert(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep,
                            const px_btl_ofi_peer_addr_t *pa, int *fi_rc);
/* ofi_peers.c: put lanes ep->nlanes.. of the peer's addresses `pa` into
 * the address vector and `ep`, as many as both sides have (lane 0 is in). */
void px_btl_ofi_lanes_add(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep,
                          const px_btl_ofi_peer_addr_t *pa);
/* ofi_peers.c: take the peer's addresses out of the address vector. */
void px_btl_ofi_lanes_remove(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep);

/* ofi_peers.c, for ofi_module.c: the module's btl_add_procs and btl_del_procs. */
int px_btl_ofi_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                         const char **reasons);
int px_btl_ofi_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints);

/* ofi_rdma.c, for ofi_module.c: */
/* The free lists' chunk allocator (registers each chunk under FI_MR_LOCAL);
 * ctx is the module. */
void *px_btl_ofi_payload_alloc(void *ctx, size_t size, size_t align, void **cookie);
void px_btl_ofi_payload_free(void *ctx, void *ptr, size_t size, void *cookie);
/* The registration cache's callbacks; ctx is the module. */
int px_btl_ofi_rcache_reg(void *ctx, px_rcache_entry_t *e);
int px_btl_ofi_rcache_dereg(void *ctx, px_rcache_entry_t *e);
/* Set the module's btl_put, btl_get, btl_register_mem and btl_deregister_mem. */
void px_btl_ofi_rdma_install(px_btl_module_t *btl);
/* Complete an RDMA operation (from progress): release its temporary
 * registration and the op, then run its callback with `status`. */
void px_btl_ofi_rdma_done(px_btl_ofi_module_t *m, px_btl_ofi_rdma_op_t *op, int status);
/* Post the pieces of striped operations libfabric refused before (from
 * progress); how many were posted. */
int px_btl_ofi_rdma_retry(px_btl_ofi_module_t *m);
/* Fail the pieces not yet posted of `ep`'s striped operations (NULL: every
 * endpoint's) with `status`. */
void px_btl_ofi_rdma_fail_blocked(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, int status);

#endif
