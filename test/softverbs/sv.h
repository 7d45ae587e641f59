/* softverbs: a software stand-in for libibverbs.so.1, for tests only.
 *
 * Internal declarations shared by sv_verbs.c (devices, PD/MR, CQ, QP verbs),
 * sv_wire.c (progress thread, QP registry, the RC protocol between processes)
 * and sv_misc.c (strings, rates, sysfs, private-symbol stubs).
 *
 * Model: every process that opens a device runs one progress thread. It listens
 * on a filesystem UNIX socket under the registry folder (default
 * /dev/shm/softverbs-<uid>, or PX_SOFTVERBS_DIR); a QP's number is a file in that
 * folder naming the socket of the process that owns it. A requester QP connects to
 * its destination's process and sends requests (SEND, RDMA WRITE/READ, atomics)
 * with the payload; the responder's progress thread checks keys, bounds and access
 * flags, writes or reads its own memory and answers ACK/NAK/read data. So a target
 * that never calls into the library still has its memory written. */
#ifndef SV_H
#define SV_H

#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define SV_EXPORT        __attribute__((visibility("default")))
#define SV_MAX_DEVICES   8
#define SV_MAX_PORTS     4
#define SV_MAX_SGE       16
#define SV_MAX_INLINE    512
#define SV_MAX_WR        16384
#define SV_MAX_CQE       (1 << 20)
#define SV_PSN_MASK      0xffffffu
#define SV_VENDOR_ID     0x1af4 /* not a real HCA vendor: clients treat it as unknown */
#define SV_VENDOR_PART   0x5356
#define SV_GID_TABLE_IB  1
#define SV_GID_TABLE_ETH 2

struct sv_device {
    struct ibv_device dev; /* first: ibv_device pointers are sv_device pointers */
    int index;
    int nports;
    int eth; /* link layer Ethernet (RoCE) instead of InfiniBand */
    uint64_t guid;
};

struct sv_context {
    struct verbs_context vctx; /* its last member is the ibv_context clients see */
    struct sv_device *dev;
    int async_pipe[2];
};

struct sv_mr {
    struct ibv_mr mr;
    uint64_t iova;
    int access;
    struct sv_mr *next;
};

struct sv_channel {
    struct ibv_comp_channel ch;
    int wfd;
};

struct sv_cq {
    struct ibv_cq cq;
    struct ibv_wc *ring;
    unsigned cap, head, count;
    int armed, solicited_only, overrun_reported;
    long delay_us;
    struct sv_cq *next;
};

struct sv_wqe {
    uint64_t wr_id;
    enum ibv_wr_opcode opcode;
    unsigned send_flags;
    uint32_t imm;
    int num_sge;
    struct ibv_sge sge[SV_MAX_SGE];
    uint64_t raddr;
    uint32_t rkey;
    uint64_t compare_add, swap;
    uint32_t len;      /* total bytes */
    char *inline_data; /* IBV_SEND_INLINE: copied at post time */
    uint32_t psn;
    int signaled;
    int fail; /* PX_SOFTVERBS_FAIL_WR chose this one */
    int rnr_tries, retries;
};

struct sv_rwqe {
    uint64_t wr_id;
    int num_sge;
    struct ibv_sge sge[SV_MAX_SGE];
};

struct sv_conn;

struct sv_qp {
    struct ibv_qp qp;
    struct sv_context *ctx;
    struct ibv_qp_cap cap;
    int sq_sig_all;
    struct ibv_qp_attr attr; /* attributes set so far (ibv_query_qp) */
    int attr_mask_set;
    /* send queue: [head, next_tx) sent and unacknowledged, [next_tx, tail) not sent */
    struct sv_wqe *sq;
    char *inline_buf;
    unsigned sq_cap, sq_head, sq_next_tx, sq_tail;
    uint32_t next_psn;
    /* receive queue */
    struct sv_rwqe *rq;
    unsigned rq_cap, rq_head, rq_count;
    uint32_t expected_psn;
    /* requester connection to the destination QP's process */
    struct sv_conn *conn;
    int conn_failed;
    uint64_t retry_at_ns; /* waiting for an RNR or transport retry */
    /* fault injection */
    long fail_wr, error_after, posted, completed;
    int fail_status;
    int dest_dev; /* device the destination address names, -1 if none */
    struct sv_qp *next;
};

/* global state, protected by sv_g.lock */
struct sv_global {
    pthread_mutex_t lock;
    int ndev;
    int devs_ready;
    struct sv_device devs[SV_MAX_DEVICES];
    int eth;
    struct sv_mr *mrs;
    struct sv_qp *qps;
    struct sv_cq *cqs;
    uint32_t next_key;
};
extern struct sv_global sv_g;

/* PX_SOFTVERBS_STATS=1: the client's turnaround, from the ibv_poll_cq call that
 * returned a receive completion to the next ibv_post_send, printed at exit. It is
 * the time the client itself spends between a message arriving and its answer
 * leaving (the device's own time is not in it), the same measure for any client. */
#define SV_STATS_BUCKETS 8192 /* of 10 ns: up to 81.92 us */
struct sv_stats {
    int on;
    uint64_t recv_ns; /* 0: no receive completion since the last send */
    uint64_t count, sum_ns, min_ns, hist[SV_STATS_BUCKETS + 1];
};
extern struct sv_stats sv_stats;
void sv_stats_send(void);

/* sv_verbs.c */
int sv_devices_init(void);
struct sv_mr *sv_mr_find(uint32_t key);
void sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, int solicited);
void sv_cq_deliver(struct sv_cq *cq, const struct ibv_wc *wc, int solicited);
void sv_qp_complete(struct sv_qp *qp, struct sv_wqe *w, enum ibv_wc_status st);
void sv_qp_to_error(struct sv_qp *qp);
void sv_async_event(struct sv_context *ctx, enum ibv_event_type type, struct ibv_qp *qp);
struct sv_qp *sv_qp_find(int dev, uint32_t qpn);
void sv_port_lid_gid(struct sv_device *d, int port, uint16_t *lid, union ibv_gid *gid, int idx);
long sv_env_long(const char *name, long dflt, long min, long max, int *bad);
uint64_t sv_now_ns(void);

/* sv_qp.c */
struct ibv_qp *sv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* sv_wire.c */
int sv_wire_start(void);
int sv_registry_add(struct sv_qp *qp, uint32_t *qpn);
void sv_registry_remove(int dev, uint32_t qpn);
void sv_kick(struct sv_qp *qp);
void sv_conn_release(struct sv_conn *c);
void sv_wake(void);
void sv_pending_add(struct sv_cq *cq, const struct ibv_wc *wc, int solicited, uint64_t when);
void sv_pending_drop_cq(struct sv_cq *cq);

#endif
