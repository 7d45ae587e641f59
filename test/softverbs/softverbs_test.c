/*
 * softverbs_test.c: the software libibverbs.so.1 (test/softverbs) behaves as a verbs
 * client expects hardware to: devices and ports, the RC QP state machine, send/recv
 * with immediate and inline data, RDMA write/read and atomics into a process that
 * never calls the library, completion channels, and the error paths (RNR retries
 * exhausted, bad rkey, bound violation, local length error, flush on error, peer
 * gone) plus the fault injection variables. Linked against the softverbs library
 * (rpath), not the system's libibverbs.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 20 /* bound for a completion on a loaded machine */

struct ep {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    char *buf;
    struct ibv_mr *mr;
    uint16_t lid;
};

struct ep_info {
    uint16_t lid;
    uint32_t qpn;
    uint64_t addr;
    uint32_t rkey;
};

static char regdir[64];

static void use_private_registry(void)
{
    snprintf(regdir, sizeof(regdir), "/tmp/svtest-%d-XXXXXX", (int)getpid());
    ck_assert_ptr_nonnull(mkdtemp(regdir));
    setenv("PX_SOFTVERBS_DIR", regdir, 1);
}

static void remove_registry(void)
{
    if (!regdir[0])
        return;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", regdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", regdir);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void ep_open(struct ep *e, size_t len, int access)
{
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    ck_assert_ptr_nonnull(l);
    ck_assert_int_ge(n, 1);
    e->ctx = ibv_open_device(l[0]);
    ibv_free_device_list(l);
    ck_assert_ptr_nonnull(e->ctx);
    e->pd = ibv_alloc_pd(e->ctx);
    e->ch = ibv_create_comp_channel(e->ctx);
    e->cq = ibv_create_cq(e->ctx, 64, e, e->ch, 0);
    ck_assert_ptr_nonnull(e->cq);
    struct ibv_qp_init_attr ia = {.send_cq = e->cq,
                                  .recv_cq = e->cq,
                                  .cap = {.max_send_wr = 16,
                                          .max_recv_wr = 16,
                                          .max_send_sge = 2,
                                          .max_recv_sge = 2,
                                          .max_inline_data = 64},
                                  .qp_type = IBV_QPT_RC};
    e->qp = ibv_create_qp(e->pd, &ia);
    ck_assert_ptr_nonnull(e->qp);
    e->buf = calloc(1, len);
    e->mr = ibv_reg_mr(e->pd, e->buf, len, access);
    ck_assert_ptr_nonnull(e->mr);
    struct ibv_port_attr pa;
    ck_assert_int_eq(ibv_query_port(e->ctx, 1, &pa), 0);
    e->lid = pa.lid;
}

static void ep_close(struct ep *e)
{
    ck_assert_int_eq(ibv_destroy_qp(e->qp), 0);
    ck_assert_int_eq(ibv_dereg_mr(e->mr), 0);
    ck_assert_int_eq(ibv_destroy_cq(e->cq), 0);
    ck_assert_int_eq(ibv_destroy_comp_channel(e->ch), 0);
    ck_assert_int_eq(ibv_dealloc_pd(e->pd), 0);
    ck_assert_int_eq(ibv_close_device(e->ctx), 0);
    free(e->buf);
}

static struct ep_info ep_info(struct ep *e)
{
    struct ep_info i = {e->lid, e->qp->qp_num, (uintptr_t)e->buf, e->mr->rkey};
    return i;
}

static void ep_connect(struct ep *e, struct ep_info peer, int rnr_retry, int retry_cnt)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .pkey_index = 0,
                            .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                               IBV_ACCESS_REMOTE_ATOMIC};
    ck_assert_int_eq(
        ibv_modify_qp(e->qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        0);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = 7;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1; /* 10 us */
    a.ah_attr.dlid = peer.lid;
    a.ah_attr.port_num = 1;
    ck_assert_int_eq(ibv_modify_qp(e->qp, &a,
                                   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                       IBV_QP_MIN_RNR_TIMER),
                     0);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 10; /* 4 ms */
    a.retry_cnt = (uint8_t)retry_cnt;
    a.rnr_retry = (uint8_t)rnr_retry;
    a.sq_psn = 7;
    a.max_rd_atomic = 1;
    ck_assert_int_eq(ibv_modify_qp(e->qp, &a,
                                   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
                     0);
}

/* two QPs of this process connected to each other */
static void pair(struct ep *a, struct ep *b, size_t len, int rnr_retry)
{
    int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
              IBV_ACCESS_REMOTE_ATOMIC;
    ep_open(a, len, acc);
    ep_open(b, len, acc);
    ep_connect(a, ep_info(b), rnr_retry, 7);
    ep_connect(b, ep_info(a), rnr_retry, 7);
}

static struct ibv_wc wait_wc(struct ep *e)
{
    struct ibv_wc wc;
    double end = now_s() + WAIT_S;
    for (;;) {
        int n = ibv_poll_cq(e->cq, 1, &wc);
        ck_assert_int_ge(n, 0);
        if (n == 1)
            return wc;
        ck_assert_msg(now_s() < end, "no completion within %d s", WAIT_S);
        usleep(100);
    }
}

static int post(struct ep *e, enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
                uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned flags)
{
    struct ibv_sge s = {(uintptr_t)addr, len, lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id,
                             .sg_list = &s,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED | flags},
                       *bad;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    wr.imm_data = htonl(0x11223344);
    return ibv_post_send(e->qp, &wr, &bad);
}

static int post_recv(struct ep *e, uint64_t wr_id, void *addr, uint32_t len)
{
    struct ibv_sge s = {(uintptr_t)addr, len, e->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &s, .num_sge = 1}, *bad;
    return ibv_post_recv(e->qp, &wr, &bad);
}

static enum ibv_qp_state qp_state(struct ep *e)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    ck_assert_int_eq(ibv_query_qp(e->qp, &a, IBV_QP_STATE, &ia), 0);
    return a.qp_state;
}

START_TEST(devices_and_ports)
{
    use_private_registry();
    setenv("PX_SOFTVERBS_DEVICES", "2", 1);
    setenv("PX_SOFTVERBS_LINK_LAYER", "eth", 1);
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(ibv_get_device_name(l[1]), "softverbs1");
    struct ibv_context *c = ibv_open_device(l[1]);
    ck_assert_ptr_nonnull(c);
    struct ibv_device_attr da;
    ck_assert_int_eq(ibv_query_device(c, &da), 0);
    ck_assert_int_eq(da.phys_port_cnt, 1);
    struct ibv_port_attr pa;
    ck_assert_int_eq(ibv_query_port(c, 1, &pa), 0);
    ck_assert_int_eq(pa.state, IBV_PORT_ACTIVE);
    ck_assert_int_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
    ck_assert_int_ne(ibv_query_port(c, 2, &pa), 0);
    union ibv_gid g0, g1;
    ck_assert_int_eq(ibv_query_gid(c, 1, 0, &g0), 0);
    ck_assert_int_eq(ibv_query_gid(c, 1, 1, &g1), 0);
    ck_assert_int_eq(g0.raw[0], 0xfe);
    ck_assert_int_ne(memcmp(&g0, &g1, sizeof(g0)), 0);
    struct ibv_gid_entry ge;
    ck_assert_int_eq(ibv_query_gid_ex(c, 1, 1, &ge, 0), 0);
    ck_assert_int_eq(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
    ck_assert_int_eq(ibv_close_device(c), 0);
    ibv_free_device_list(l);
}
END_TEST

START_TEST(bad_device_variable)
{
    use_private_registry();
    setenv("PX_SOFTVERBS_DEVICES", "many", 1);
    int n = -1;
    errno = 0;
    ck_assert_ptr_null(ibv_get_device_list(&n));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(state_machine)
{
    use_private_registry();
    struct ep a;
    ep_open(&a, 64, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_qp_attr at = {.qp_state = IBV_QPS_RTR};
    ck_assert_int_eq(ibv_modify_qp(a.qp, &at, IBV_QP_STATE), EINVAL); /* RESET -> RTR */
    at.qp_state = IBV_QPS_INIT;
    ck_assert_int_eq(ibv_modify_qp(a.qp, &at, IBV_QP_STATE), EINVAL); /* no port/pkey/access */
    at.port_num = 3;
    ck_assert_int_eq(
        ibv_modify_qp(a.qp, &at,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        EINVAL); /* no port 3 */
    ck_assert_int_eq(qp_state(&a), IBV_QPS_RESET);
    ck_assert_int_eq(post_recv(&a, 1, a.buf, 8), EINVAL); /* RESET */
    at.port_num = 1;
    ck_assert_int_eq(
        ibv_modify_qp(a.qp, &at,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        0);
    ck_assert_int_eq(qp_state(&a), IBV_QPS_INIT);
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 1, a.buf, 8, a.mr->lkey, 0, 0, 0), EINVAL);
    at.qp_state = IBV_QPS_RTS;
    ck_assert_int_eq(ibv_modify_qp(a.qp, &at, IBV_QP_STATE), EINVAL); /* INIT -> RTS */
    at.qp_state = IBV_QPS_RTR;
    at.dest_qp_num = a.qp->qp_num;
    ck_assert_int_eq(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_DEST_QPN),
                     EINVAL); /* no AV, MTU, PSN... */
    at.qp_state = IBV_QPS_ERR;
    ck_assert_int_eq(ibv_modify_qp(a.qp, &at, IBV_QP_STATE), 0);
    ck_assert_int_eq(qp_state(&a), IBV_QPS_ERR);
    at.qp_state = IBV_QPS_RESET;
    ck_assert_int_eq(ibv_modify_qp(a.qp, &at, IBV_QP_STATE), 0);
    ep_connect(&a, ep_info(&a), 7, 7); /* the whole path, to itself */
    ck_assert_int_eq(qp_state(&a), IBV_QPS_RTS);
    ep_close(&a);
}
END_TEST

START_TEST(send_recv_imm_inline_and_channel)
{
    use_private_registry();
    struct ep a, b;
    pair(&a, &b, 4096, 7);
    ck_assert_int_eq(ibv_req_notify_cq(b.cq, 0), 0);
    ck_assert_int_eq(post_recv(&b, 41, b.buf, 100), 0);
    strcpy(a.buf, "hello over softverbs");
    ck_assert_int_eq(post(&a, IBV_WR_SEND_WITH_IMM, 7, a.buf, 21, a.mr->lkey, 0, 0,
                          IBV_SEND_INLINE | IBV_SEND_SOLICITED),
                     0);
    memset(a.buf, 0, 21); /* inline: the buffer may be reused at once */
    struct pollfd pfd = {.fd = b.ch->fd, .events = POLLIN};
    ck_assert_int_eq(poll(&pfd, 1, WAIT_S * 1000), 1);
    struct ibv_cq *ecq;
    void *ectx;
    ck_assert_int_eq(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
    ck_assert_ptr_eq(ecq, b.cq);
    ck_assert_ptr_eq(ectx, &b);
    ibv_ack_cq_events(ecq, 1);
    struct ibv_wc wc = wait_wc(&b);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
    ck_assert_int_eq(wc.wr_id, 41);
    ck_assert_int_eq(wc.byte_len, 21);
    ck_assert(wc.wc_flags & IBV_WC_WITH_IMM);
    ck_assert_int_eq(ntohl(wc.imm_data), 0x11223344);
    ck_assert_int_eq(wc.src_qp, a.qp->qp_num);
    ck_assert_str_eq(b.buf, "hello over softverbs");
    wc = wait_wc(&a);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
    ck_assert_int_eq(wc.wr_id, 7);
    /* not armed any more: the next completion writes no event */
    ck_assert_int_eq(post_recv(&b, 42, b.buf, 100), 0);
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 8, a.buf, 4, a.mr->lkey, 0, 0, 0), 0);
    wait_wc(&b);
    wait_wc(&a);
    ck_assert_int_eq(poll(&pfd, 1, 0), 0);
    ep_close(&a);
    ep_close(&b);
}
END_TEST

/* The target is another process that never calls into the library after connecting. */
START_TEST(rdma_into_a_sleeping_process)
{
    use_private_registry();
    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct ep t;
        ep_open(&t, 4096,
                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC);
        strcpy(t.buf + 1024, "read me");
        uint64_t *counter = (uint64_t *)(t.buf + 2048);
        *counter = 40;
        struct ep_info mine = ep_info(&t), peer;
        if (write(up[1], &mine, sizeof(mine)) != sizeof(mine) ||
            read(down[0], &peer, sizeof(peer)) != sizeof(peer))
            _exit(2);
        ep_connect(&t, peer, 7, 7);
        if (write(up[1], &mine, sizeof(mine)) != sizeof(mine))
            _exit(2);
        char go;
        if (read(down[0], &go, 1) != 1) /* blocks: no verbs call meanwhile */
            _exit(2);
        _exit(strcmp(t.buf, "written remotely") != 0 || *counter != 42 ? 1 : 0);
    }
    struct ep i;
    ep_open(&i, 4096, IBV_ACCESS_LOCAL_WRITE);
    struct ep_info peer, mine = ep_info(&i);
    ck_assert_int_eq(read(up[0], &peer, sizeof(peer)), sizeof(peer));
    ep_connect(&i, peer, 7, 7);
    ck_assert_int_eq(write(down[1], &mine, sizeof(mine)), sizeof(mine));
    ck_assert_int_eq(read(up[0], &peer, sizeof(peer)), sizeof(peer)); /* it is RTS too */
    strcpy(i.buf, "written remotely");
    ck_assert_int_eq(post(&i, IBV_WR_RDMA_WRITE, 1, i.buf, 17, i.mr->lkey, peer.addr, peer.rkey, 0),
                     0);
    ck_assert_int_eq(
        post(&i, IBV_WR_RDMA_READ, 2, i.buf + 100, 8, i.mr->lkey, peer.addr + 1024, peer.rkey, 0),
        0);
    struct ibv_sge s = {(uintptr_t)(i.buf + 200), 8, i.mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 3,
                             .sg_list = &s,
                             .num_sge = 1,
                             .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    wr.wr.atomic.remote_addr = peer.addr + 2048;
    wr.wr.atomic.rkey = peer.rkey;
    wr.wr.atomic.compare_add = 2;
    ck_assert_int_eq(ibv_post_send(i.qp, &wr, &bad), 0);
    for (uint64_t k = 1; k <= 3; k++) {
        struct ibv_wc wc = wait_wc(&i);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        ck_assert_int_eq(wc.wr_id, k);
    }
    ck_assert_str_eq(i.buf + 100, "read me");
    ck_assert_int_eq(*(uint64_t *)(i.buf + 200), 40);
    ck_assert_int_eq(write(down[1], "g", 1), 1);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target saw wrong memory (status %d)", st);
    ep_close(&i);
}
END_TEST

START_TEST(rnr_retries_exhausted)
{
    use_private_registry();
    struct ep a, b;
    pair(&a, &b, 4096, 2);
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 1, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 2, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
    struct ibv_wc wc = wait_wc(&a);
    ck_assert_int_eq(wc.wr_id, 1);
    ck_assert_msg(wc.status == IBV_WC_RNR_RETRY_EXC_ERR, "status %s", ibv_wc_status_str(wc.status));
    wc = wait_wc(&a);
    ck_assert_int_eq(wc.wr_id, 2);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(qp_state(&a), IBV_QPS_ERR);
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(rnr_then_receive_posted)
{
    use_private_registry();
    struct ep a, b;
    pair(&a, &b, 4096, 7); /* 7: retry forever */
    strcpy(a.buf, "late");
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 1, a.buf, 5, a.mr->lkey, 0, 0, 0), 0);
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 2, a.buf, 5, a.mr->lkey, 0, 0, 0), 0);
    usleep(20000); /* RNR NAKs meanwhile */
    ck_assert_int_eq(post_recv(&b, 10, b.buf, 64), 0);
    ck_assert_int_eq(post_recv(&b, 11, b.buf + 64, 64), 0);
    int got[3] = {0};
    for (int k = 0; k < 4; k++) {
        struct ibv_wc wc = wait_wc(k < 2 ? &b : &a);
        ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
        got[k < 2 ? 0 : 1] += (int)wc.wr_id;
    }
    ck_assert_int_eq(got[0], 21); /* 10 + 11, in order */
    ck_assert_int_eq(got[1], 3);
    ck_assert_str_eq(b.buf + 64, "late");
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(bad_rkey_and_bounds)
{
    use_private_registry();
    struct ep a, b;
    /* bad rkey: remote access error; the responder's QP fails too (its receive flushes) */
    pair(&a, &b, 4096, 7);
    ck_assert_int_eq(post_recv(&b, 5, b.buf, 64), 0);
    ck_assert_int_eq(post(&a, IBV_WR_RDMA_WRITE, 1, a.buf, 8, a.mr->lkey, (uintptr_t)b.buf,
                          b.mr->rkey ^ 0x100, 0),
                     0);
    struct ibv_wc wc = wait_wc(&a);
    ck_assert_msg(wc.status == IBV_WC_REM_ACCESS_ERR, "status %s", ibv_wc_status_str(wc.status));
    wc = wait_wc(&b);
    ck_assert_int_eq(wc.wr_id, 5);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    ep_close(&a);
    ep_close(&b);
    /* one byte past the end of the MR, and a read the MR does not allow */
    pair(&a, &b, 4096, 7);
    ck_assert_int_eq(post(&a, IBV_WR_RDMA_WRITE, 2, a.buf, 8, a.mr->lkey,
                          (uintptr_t)b.buf + 4096 - 7, b.mr->rkey, 0),
                     0);
    wc = wait_wc(&a);
    ck_assert_msg(wc.status == IBV_WC_REM_ACCESS_ERR, "status %s", ibv_wc_status_str(wc.status));
    ep_close(&a);
    ep_close(&b);
    pair(&a, &b, 4096, 7);
    struct ibv_mr *ro = ibv_reg_mr(b.pd, b.buf, 64, IBV_ACCESS_LOCAL_WRITE);
    ck_assert_int_eq(
        post(&a, IBV_WR_RDMA_READ, 3, a.buf, 8, a.mr->lkey, (uintptr_t)b.buf, ro->rkey, 0), 0);
    wc = wait_wc(&a);
    ck_assert_msg(wc.status == IBV_WC_REM_ACCESS_ERR, "status %s", ibv_wc_status_str(wc.status));
    ck_assert_int_eq(ibv_dereg_mr(ro), 0);
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(length_and_local_key_errors)
{
    use_private_registry();
    struct ep a, b;
    pair(&a, &b, 4096, 7);
    ck_assert_int_eq(post_recv(&b, 9, b.buf, 4), 0); /* too small for 16 bytes */
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 1, a.buf, 16, a.mr->lkey, 0, 0, 0), 0);
    struct ibv_wc wc = wait_wc(&b);
    ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
    wc = wait_wc(&a);
    ck_assert_msg(wc.status == IBV_WC_REM_INV_REQ_ERR, "status %s", ibv_wc_status_str(wc.status));
    ep_close(&a);
    ep_close(&b);
    pair(&a, &b, 4096, 7);
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 1, a.buf, 16, a.mr->lkey + 0x100, 0, 0, 0), 0);
    wc = wait_wc(&a);
    ck_assert_msg(wc.status == IBV_WC_LOC_PROT_ERR, "status %s", ibv_wc_status_str(wc.status));
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(flush_on_error)
{
    use_private_registry();
    struct ep a, b;
    pair(&a, &b, 4096, 7);
    ck_assert_int_eq(post_recv(&b, 1, b.buf, 64), 0);
    ck_assert_int_eq(post_recv(&b, 2, b.buf, 64), 0);
    struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
    ck_assert_int_eq(ibv_modify_qp(b.qp, &at, IBV_QP_STATE), 0);
    for (uint64_t k = 1; k <= 2; k++) {
        struct ibv_wc wc = wait_wc(&b);
        ck_assert_int_eq(wc.wr_id, k);
        ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    }
    /* posting to a QP in error: accepted, flushed */
    ck_assert_int_eq(post(&b, IBV_WR_SEND, 3, b.buf, 8, b.mr->lkey, 0, 0, 0), 0);
    ck_assert_int_eq(post_recv(&b, 4, b.buf, 64), 0);
    struct ibv_wc wc = wait_wc(&b);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    wc = wait_wc(&b);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    /* a send to a QP in error is dropped: transport retries run out */
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 5, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
    wc = wait_wc(&a);
    ck_assert_msg(wc.status == IBV_WC_RETRY_EXC_ERR, "status %s", ibv_wc_status_str(wc.status));
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(peer_gone)
{
    use_private_registry();
    int up[2], down[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(down), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct ep t;
        ep_open(&t, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        struct ep_info mine = ep_info(&t), peer;
        if (write(up[1], &mine, sizeof(mine)) != sizeof(mine) ||
            read(down[0], &peer, sizeof(peer)) != sizeof(peer))
            _exit(2);
        ep_connect(&t, peer, 7, 7);
        if (write(up[1], &mine, sizeof(mine)) != sizeof(mine))
            _exit(2);
        char go;
        if (read(down[0], &go, 1) != 1)
            _exit(2);
        _exit(0); /* gone, without cleaning up */
    }
    struct ep i;
    ep_open(&i, 4096, IBV_ACCESS_LOCAL_WRITE);
    struct ep_info peer, mine = ep_info(&i);
    ck_assert_int_eq(read(up[0], &peer, sizeof(peer)), sizeof(peer));
    ep_connect(&i, peer, 7, 7);
    ck_assert_int_eq(write(down[1], &mine, sizeof(mine)), sizeof(mine));
    ck_assert_int_eq(read(up[0], &peer, sizeof(peer)), sizeof(peer));
    ck_assert_int_eq(post(&i, IBV_WR_RDMA_WRITE, 1, i.buf, 8, i.mr->lkey, peer.addr, peer.rkey, 0),
                     0);
    struct ibv_wc wc = wait_wc(&i);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_int_eq(write(down[1], "g", 1), 1);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq(post(&i, IBV_WR_RDMA_WRITE, 2, i.buf, 8, i.mr->lkey, peer.addr, peer.rkey, 0),
                     0);
    ck_assert_int_eq(post(&i, IBV_WR_RDMA_WRITE, 3, i.buf, 8, i.mr->lkey, peer.addr, peer.rkey, 0),
                     0);
    wc = wait_wc(&i);
    ck_assert_int_eq(wc.wr_id, 2);
    ck_assert_msg(wc.status == IBV_WC_RETRY_EXC_ERR, "status %s", ibv_wc_status_str(wc.status));
    wc = wait_wc(&i);
    ck_assert_int_eq(wc.wr_id, 3);
    ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
    ep_close(&i);
}
END_TEST

START_TEST(fault_fail_wr)
{
    use_private_registry();
    setenv("PX_SOFTVERBS_FAIL_WR", "2", 1);
    struct ep a, b;
    pair(&a, &b, 4096, 7);
    for (int k = 1; k <= 3; k++)
        ck_assert_int_eq(post(&a, IBV_WR_RDMA_WRITE, (uint64_t)k, a.buf, 8, a.mr->lkey,
                              (uintptr_t)b.buf, b.mr->rkey, 0),
                         0);
    static const enum ibv_wc_status want[] = {IBV_WC_SUCCESS, IBV_WC_LOC_QP_OP_ERR,
                                              IBV_WC_WR_FLUSH_ERR};
    for (int k = 1; k <= 3; k++) {
        struct ibv_wc wc = wait_wc(&a);
        ck_assert_int_eq(wc.wr_id, k);
        ck_assert_msg(wc.status == want[k - 1], "wr %d: %s", k, ibv_wc_status_str(wc.status));
    }
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(fault_fail_status)
{
    use_private_registry();
    setenv("PX_SOFTVERBS_FAIL_WR", "1", 1);
    setenv("PX_SOFTVERBS_FAIL_STATUS", "10", 1); /* IBV_WC_REM_ACCESS_ERR */
    struct ep a, b;
    pair(&a, &b, 4096, 7);
    ck_assert_int_eq(post(&a, IBV_WR_SEND, 1, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
    struct ibv_wc wc = wait_wc(&a);
    ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(fault_qp_error_after)
{
    use_private_registry();
    setenv("PX_SOFTVERBS_QP_ERROR_AFTER", "2", 1);
    struct ep a, b;
    pair(&a, &b, 4096, 7);
    for (int k = 1; k <= 3; k++)
        ck_assert_int_eq(post(&a, IBV_WR_RDMA_WRITE, (uint64_t)k, a.buf, 8, a.mr->lkey,
                              (uintptr_t)b.buf, b.mr->rkey, 0),
                         0);
    for (int k = 1; k <= 3; k++) {
        struct ibv_wc wc = wait_wc(&a);
        ck_assert_int_eq(wc.wr_id, k);
        ck_assert_int_eq(wc.status, k <= 2 ? IBV_WC_SUCCESS : IBV_WC_WR_FLUSH_ERR);
    }
    ck_assert_int_eq(qp_state(&a), IBV_QPS_ERR);
    struct ibv_async_event ev;
    ck_assert_int_eq(ibv_get_async_event(a.ctx, &ev), 0);
    ck_assert_int_eq(ev.event_type, IBV_EVENT_QP_FATAL);
    ck_assert_ptr_eq(ev.element.qp, a.qp);
    ibv_ack_async_event(&ev);
    ep_close(&a);
    ep_close(&b);
}
END_TEST

START_TEST(fault_delay)
{
    use_private_registry();
    setenv("PX_SOFTVERBS_DELAY_US", "300000", 1);
    struct ep a, b;
    pair(&a, &b, 4096, 7);
    double t0 = now_s();
    ck_assert_int_eq(
        post(&a, IBV_WR_RDMA_WRITE, 1, a.buf, 8, a.mr->lkey, (uintptr_t)b.buf, b.mr->rkey, 0), 0);
    struct ibv_wc wc = wait_wc(&a);
    ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
    ck_assert_msg(now_s() - t0 >= 0.3, "completion after %.3f s, before the delay", now_s() - t0);
    ep_close(&a);
    ep_close(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("softverbs");
    TCase *tc = tcase_create("verbs");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, remove_registry);
    tcase_add_test(tc, devices_and_ports);
    tcase_add_test(tc, bad_device_variable);
    tcase_add_test(tc, state_machine);
    tcase_add_test(tc, send_recv_imm_inline_and_channel);
    tcase_add_test(tc, rdma_into_a_sleeping_process);
    tcase_add_test(tc, rnr_retries_exhausted);
    tcase_add_test(tc, rnr_then_receive_posted);
    tcase_add_test(tc, bad_rkey_and_bounds);
    tcase_add_test(tc, length_and_local_key_errors);
    tcase_add_test(tc, flush_on_error);
    tcase_add_test(tc, peer_gone);
    tcase_add_test(tc, fault_fail_wr);
    tcase_add_test(tc, fault_fail_status);
    tcase_add_test(tc, fault_qp_error_after);
    tcase_add_test(tc, fault_delay);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_set_fork_status(r, CK_FORK);
    srunner_run_all(r, CK_NORMAL);
    int nf = srunner_ntests_failed(r);
    srunner_free(r);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
