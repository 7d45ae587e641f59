/* softverbs: the QP registry, the progress thread and the RC protocol between processes.
 *
 * Registry folder (PX_SOFTVERBS_DIR, default /dev/shm/softverbs-<uid>):
 *   p<pid>.sock          the listening UNIX socket of a process's progress thread
 *   <dev>.next           next QP number of device <dev> (flock'ed counter)
 *   <dev>.qp<qpn>        the socket path of the process owning QP <qpn> of <dev>
 * Filesystem sockets and /dev/shm are shared by network namespaces, so processes in
 * different namespaces of one machine reach each other.
 *
 * Protocol: a requester QP opens one stream connection to the process owning its
 * destination QP and sends requests in order, each with a PSN; the responder answers
 * each with ACK, NAK (RNR, access, invalid request, operation error, "dropped") or the
 * read/atomic data. After an RNR NAK the responder drops requests until the one it
 * NAKed comes again (go-back-N, as RC does); the requester resends from its oldest
 * unacknowledged WQE after the RNR timer.
 *
 * One concern past 800 lines: the device's wire, whose requester and responder
 * halves share the connection state and the go-back-N rules and read best side
 * by side. */
#include "sv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

enum { SV_REQ = 1, SV_ACK, SV_NAK, SV_READ_RESP, SV_ATOMIC_RESP };
enum { SV_NAK_RNR = 1, SV_NAK_DROP, SV_NAK_ACCESS, SV_NAK_INV_REQ, SV_NAK_OP_ERR };

struct sv_msg {
    uint8_t type, opcode, flags, status;
    uint32_t psn;
    uint32_t src_qpn, dst_qpn;
    uint16_t dst_dev, slid;
    uint32_t imm;
    uint32_t rkey;
    uint32_t len;  /* operation length */
    uint32_t plen; /* payload bytes following the header */
    uint32_t rnr_timer;
    uint64_t raddr;
    uint64_t cmp, swap;
};
#define SV_F_IMM 1
#define SV_F_SOL 2

struct sv_buf {
    char *p;
    size_t len, cap;
};

struct sv_conn {
    int fd;
    int dead, released;
    int incoming;     /* responder side, accepted from another QP's process */
    struct sv_qp *qp; /* requester side: the QP this connection serves */
    struct sv_buf in, out;
    size_t out_off;
    struct sv_conn *next;
};

struct sv_pend {
    struct sv_cq *cq;
    struct ibv_wc wc;
    int sol;
    uint64_t when;
    struct sv_pend *next;
};

static struct {
    int started;
    pid_t pid;
    int wake_fd, listen_fd;
    char dir[200];
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct sv_conn *conns;
    struct sv_pend *pend;
    int atexit_done;
} W = {.wake_fd = -1, .listen_fd = -1};

/* ---- buffers ---- */

static void *sv_buf_reserve(struct sv_buf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + n)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "softverbs: out of memory for a %zu-byte message buffer\n", cap);
            abort();
        }
        b->p = p;
        b->cap = cap;
    }
    void *r = b->p + b->len;
    b->len += n;
    return r;
}

void sv_wake(void)
{
    uint64_t one = 1;
    if (W.wake_fd >= 0 && write(W.wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        fprintf(stderr, "softverbs: waking the progress thread failed: %s\n", strerror(errno));
}

static void sv_conn_dead(struct sv_conn *c);

static void sv_conn_flush(struct sv_conn *c)
{
    while (!c->dead && c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            sv_wake(); /* the progress thread waits for POLLOUT */
            return;
        }
        sv_conn_dead(c);
        return;
    }
    if (c->out_off == c->out.len)
        c->out_off = c->out.len = 0;
}

static struct sv_msg *sv_conn_msg(struct sv_conn *c, uint32_t plen, char **payload)
{
    struct sv_msg *m = sv_buf_reserve(&c->out, sizeof(*m) + plen);
    memset(m, 0, sizeof(*m));
    m->plen = plen;
    if (payload)
        *payload = (char *)(m + 1);
    return m;
}

/* caller holds sv_g.lock: the connection's owner lets go; the progress thread frees it */
void sv_conn_release(struct sv_conn *c)
{
    c->qp = NULL;
    c->released = 1;
    sv_wake();
}

/* ---- registry ---- */

static int sv_registry_dir(void)
{
    const char *d = getenv("PX_SOFTVERBS_DIR");
    if (d && *d)
        snprintf(W.dir, sizeof(W.dir), "%s", d);
    else
        snprintf(W.dir, sizeof(W.dir), "/dev/shm/softverbs-%u", (unsigned)getuid());
    if (mkdir(W.dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr,
                "softverbs: cannot create the QP registry folder %s: %s (set PX_SOFTVERBS_DIR "
                "to a writable folder)\n",
                W.dir, strerror(errno));
        return -1;
    }
    return 0;
}

int sv_registry_add(struct sv_qp *qp, uint32_t *qpn)
{
    char path[300];
    const char *dev = qp->ctx->dev->dev.name;
    snprintf(path, sizeof(path), "%s/%s.next", W.dir, dev);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        fprintf(stderr, "softverbs: cannot use the QP number file %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        errno = EIO;
        return -1;
    }
    char num[32] = {0};
    ssize_t n = pread(fd, num, sizeof(num) - 1, 0);
    unsigned long v = n > 0 ? strtoul(num, NULL, 0) : 0;
    if (v < 0x100 || v > SV_PSN_MASK)
        v = 0x100;
    *qpn = (uint32_t)v;
    int len = snprintf(num, sizeof(num), "%lu\n", v + 1 > SV_PSN_MASK ? 0x100ul : v + 1);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, num, (size_t)len, 0) != len) {
        fprintf(stderr, "softverbs: cannot update %s: %s\n", path, strerror(errno));
        close(fd);
        errno = EIO;
        return -1;
    }
    close(fd);
    char tmp[320];
    snprintf(path, sizeof(path), "%s/%s.qp%u", W.dir, dev, *qpn);
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", W.sock) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "softverbs: cannot write the QP registry entry %s: %s\n", path,
                strerror(errno));
        errno = EIO;
        return -1;
    }
    return 0;
}

void sv_registry_remove(int dev, uint32_t qpn)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/%s.qp%u", W.dir, sv_g.devs[dev].dev.name, qpn);
    unlink(path);
}

/* caller holds sv_g.lock */
static struct sv_conn *sv_connect(struct sv_qp *q)
{
    if (q->dest_dev < 0)
        return NULL;
    char path[300], sock[sizeof(W.sock)];
    snprintf(path, sizeof(path), "%s/%s.qp%u", W.dir, sv_g.devs[q->dest_dev].dev.name,
             q->attr.dest_qp_num);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *ok = fgets(sock, sizeof(sock), f);
    fclose(f);
    if (!ok)
        return NULL;
    sock[strcspn(sock, "\n")] = 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, sock, sizeof(sa.sun_path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    struct sv_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->qp = q;
    c->next = W.conns;
    W.conns = c;
    sv_wake();
    return c;
}

/* ---- delayed completions (PX_SOFTVERBS_DELAY_US) ---- */

void sv_pending_add(struct sv_cq *cq, const struct ibv_wc *wc, int sol, uint64_t when)
{
    struct sv_pend *p = calloc(1, sizeof(*p));
    if (!p) {
        sv_cq_deliver(cq, wc, sol);
        return;
    }
    p->cq = cq;
    p->wc = *wc;
    p->sol = sol;
    p->when = when;
    struct sv_pend **t = &W.pend;
    while (*t)
        t = &(*t)->next;
    *t = p;
    sv_wake();
}

void sv_pending_drop_cq(struct sv_cq *cq)
{
    for (struct sv_pend **p = &W.pend; *p;) {
        if ((*p)->cq == cq) {
            struct sv_pend *d = *p;
            *p = d->next;
            free(d);
        } else {
            p = &(*p)->next;
        }
    }
}

/* ---- memory checks (caller holds sv_g.lock) ---- */

/* A local SGE: the key names an MR of the QP's PD that covers it (and allows local
 * write when the device writes it). Returns its address or NULL. */
static char *sv_local(struct sv_qp *q, const struct ibv_sge *s, int write)
{
    struct sv_mr *m = sv_mr_find(s->lkey);
    if (!m || m->mr.pd != q->qp.pd || (write && !(m->access & IBV_ACCESS_LOCAL_WRITE)))
        return NULL;
    uintptr_t a = (uintptr_t)s->addr, lo = (uintptr_t)m->mr.addr;
    if (a < lo || a - lo > m->mr.length || s->length > m->mr.length - (a - lo))
        return NULL;
    return (char *)a;
}

/* A remote access: the rkey names an MR of the QP's PD allowing `need`, covering
 * [raddr, raddr+len) of its iova range. Returns the local address or NULL. */
static char *sv_remote(struct sv_qp *q, uint32_t rkey, uint64_t raddr, uint32_t len, int need)
{
    struct sv_mr *m = sv_mr_find(rkey);
    if (!m || m->mr.pd != q->qp.pd || !(m->access & need) || !(q->attr.qp_access_flags & need))
        return NULL;
    if (raddr < m->iova || raddr - m->iova > m->mr.length || len > m->mr.length - (raddr - m->iova))
        return NULL;
    return (char *)m->mr.addr + (raddr - m->iova);
}

/* Scatter len bytes into SGEs: an IBV_WC_* status. */
static enum ibv_wc_status sv_scatter(struct sv_qp *q, const struct ibv_sge *sge, int n,
                                     const char *src, uint32_t len)
{
    uint64_t room = 0;
    for (int i = 0; i < n; i++)
        room += sge[i].length;
    if (len > room)
        return IBV_WC_LOC_LEN_ERR;
    for (int i = 0; i < n && len; i++) {
        uint32_t k = sge[i].length < len ? sge[i].length : len;
        struct ibv_sge s = sge[i];
        s.length = k;
        char *dst = sv_local(q, &s, 1);
        if (!dst)
            return IBV_WC_LOC_PROT_ERR;
        memcpy(dst, src, k);
        src += k;
        len -= k;
    }
    return IBV_WC_SUCCESS;
}

/* ---- requester ---- */

static uint64_t sv_rnr_ns(unsigned t)
{
    /* IB minimum RNR NAK timer encoding, in units of 10 microseconds */
    static const uint32_t tens_us[32] = {65536, 1,    2,    3,     4,     6,     8,     12,
                                         16,    24,   32,   48,    64,    96,    128,   192,
                                         256,   384,  512,  768,   1024,  1536,  2048,  3072,
                                         4096,  6144, 8192, 12288, 16384, 24576, 32768, 49152};
    return (uint64_t)tens_us[t & 31] * 10000u;
}

static uint64_t sv_timeout_ns(unsigned t)
{
    /* 4.096 us * 2^t; 0 means "infinite": bounded here so a lost peer still errors */
    uint64_t ns = t ? 4096ull << (t > 24 ? 24 : t) : 100000000ull;
    return ns > 100000000ull ? 100000000ull : ns;
}

void sv_kick(struct sv_qp *q)
{
    if (q->qp.state != IBV_QPS_RTS || q->retry_at_ns)
        return;
    while (q->sq_next_tx != q->sq_tail) {
        struct sv_wqe *w = &q->sq[q->sq_next_tx % q->sq_cap];
        int at_head = q->sq_next_tx == q->sq_head;
        enum ibv_wc_status err = IBV_WC_SUCCESS;
        if (w->fail)
            err = (enum ibv_wc_status)q->fail_status;
        if (!err && !q->conn && !q->conn_failed) {
            q->conn = sv_connect(q);
            if (!q->conn)
                q->conn_failed = 1;
        }
        if (!err && (q->conn_failed || q->conn->dead))
            err = IBV_WC_RETRY_EXC_ERR;
        int out_data = w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM ||
                       w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        for (int i = 0; !err && !w->inline_data && i < w->num_sge; i++)
            if (w->sge[i].length && !sv_local(q, &w->sge[i], !out_data))
                err = IBV_WC_LOC_PROT_ERR;
        if (err) {
            if (at_head)
                sv_qp_complete(q, w, err); /* moves the QP to error, flushing the rest */
            return;                        /* else: once the earlier ones complete */
        }
        char *pl;
        struct sv_msg *m = sv_conn_msg(q->conn, out_data ? w->len : 0, &pl);
        m->type = SV_REQ;
        m->opcode = (uint8_t)w->opcode;
        m->flags = (uint8_t)(((w->opcode == IBV_WR_SEND_WITH_IMM ||
                               w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
                                  ? SV_F_IMM
                                  : 0) |
                             ((w->send_flags & IBV_SEND_SOLICITED) ? SV_F_SOL : 0));
        m->psn = w->psn;
        m->src_qpn = q->qp.qp_num;
        m->dst_qpn = q->attr.dest_qp_num;
        m->dst_dev = (uint16_t)q->dest_dev;
        sv_port_lid_gid(q->ctx->dev, q->attr.port_num ? q->attr.port_num : 1, &m->slid, NULL, 0);
        m->imm = w->imm;
        m->rkey = w->rkey;
        m->raddr = w->raddr;
        m->len = w->len;
        m->cmp = w->compare_add;
        m->swap = w->swap;
        if (out_data) {
            if (w->inline_data) {
                memcpy(pl, w->inline_data, w->len);
            } else {
                for (int i = 0; i < w->num_sge; i++) {
                    memcpy(pl, (void *)(uintptr_t)w->sge[i].addr, w->sge[i].length);
                    pl += w->sge[i].length;
                }
            }
        }
        q->sq_next_tx++;
    }
    if (q->conn)
        sv_conn_flush(q->conn);
}

static void sv_go_back(struct sv_qp *q, uint64_t delay_ns)
{
    q->sq_next_tx = q->sq_head;
    q->retry_at_ns = sv_now_ns() + delay_ns;
    sv_wake();
}

static void sv_on_response(struct sv_conn *c, const struct sv_msg *m, const char *pl)
{
    struct sv_qp *q = c->qp;
    if (!q || q->qp.state != IBV_QPS_RTS || q->sq_head == q->sq_next_tx)
        return;
    struct sv_wqe *w = &q->sq[q->sq_head % q->sq_cap];
    if (w->psn != m->psn)
        return; /* answer to a request sent before a go-back: superseded */
    switch (m->type) {
    case SV_ACK:
        sv_qp_complete(q, w, IBV_WC_SUCCESS);
        break;
    case SV_READ_RESP:
        sv_qp_complete(q, w,
                       sv_scatter(q, w->sge, w->num_sge, pl, m->plen) == IBV_WC_SUCCESS
                           ? IBV_WC_SUCCESS
                           : IBV_WC_LOC_PROT_ERR);
        break;
    case SV_ATOMIC_RESP: {
        char *dst = sv_local(q, &w->sge[0], 1);
        if (dst && m->plen == 8)
            memcpy(dst, pl, 8);
        sv_qp_complete(q, w, dst ? IBV_WC_SUCCESS : IBV_WC_LOC_PROT_ERR);
        break;
    }
    case SV_NAK:
        switch (m->status) {
        case SV_NAK_RNR:
            if (q->attr.rnr_retry != 7 && ++w->rnr_tries > q->attr.rnr_retry)
                sv_qp_complete(q, w, IBV_WC_RNR_RETRY_EXC_ERR);
            else
                sv_go_back(q, sv_rnr_ns(m->rnr_timer));
            return;
        case SV_NAK_DROP:
            if (++w->retries > q->attr.retry_cnt)
                sv_qp_complete(q, w, IBV_WC_RETRY_EXC_ERR);
            else
                sv_go_back(q, sv_timeout_ns(q->attr.timeout));
            return;
        case SV_NAK_ACCESS:
            sv_qp_complete(q, w, IBV_WC_REM_ACCESS_ERR);
            return;
        case SV_NAK_INV_REQ:
            sv_qp_complete(q, w, IBV_WC_REM_INV_REQ_ERR);
            return;
        default:
            sv_qp_complete(q, w, IBV_WC_REM_OP_ERR);
            return;
        }
    }
    sv_kick(q);
}

/* ---- responder ---- */

static void sv_reply(struct sv_conn *c, const struct sv_msg *req, int type, int status,
                     const void *data, uint32_t len)
{
    char *pl;
    struct sv_msg *m = sv_conn_msg(c, len, &pl);
    m->type = (uint8_t)type;
    m->status = (uint8_t)status;
    m->psn = req->psn;
    m->src_qpn = req->dst_qpn;
    m->dst_qpn = req->src_qpn;
    if (len)
        memcpy(pl, data, len);
    struct sv_qp *q = sv_qp_find(req->dst_dev, req->dst_qpn);
    m->rnr_timer = q ? q->attr.min_rnr_timer : 0;
}

static void sv_recv_wc(struct sv_qp *q, const struct sv_msg *m, enum ibv_wc_status st,
                       enum ibv_wc_opcode op, uint32_t len)
{
    struct sv_rwqe *r = &q->rq[q->rq_head];
    struct ibv_wc wc;
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = r->wr_id;
    wc.status = st;
    wc.opcode = op;
    wc.byte_len = len;
    wc.qp_num = q->qp.qp_num;
    wc.src_qp = m->src_qpn;
    wc.slid = m->slid;
    if (m->flags & SV_F_IMM) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = m->imm;
    }
    q->rq_head = (q->rq_head + 1) % q->rq_cap;
    q->rq_count--;
    sv_cq_push((struct sv_cq *)q->qp.recv_cq, &wc, (m->flags & SV_F_SOL) != 0);
}

static void sv_on_request(struct sv_conn *c, const struct sv_msg *m, const char *pl)
{
    struct sv_qp *q = m->dst_dev < sv_g.ndev ? sv_qp_find(m->dst_dev, m->dst_qpn) : NULL;
    if (!q || (q->qp.state != IBV_QPS_RTR && q->qp.state != IBV_QPS_RTS) ||
        q->attr.dest_qp_num != m->src_qpn) {
        /* hardware drops the packet; the requester's transport retries run out */
        sv_reply(c, m, SV_NAK, SV_NAK_DROP, NULL, 0);
        return;
    }
    if (m->psn != q->expected_psn)
        return; /* after a NAK: dropped until the NAKed request comes again */
    int nak = 0;
    switch (m->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: {
        if (!q->rq_count) {
            sv_reply(c, m, SV_NAK, SV_NAK_RNR, NULL, 0);
            return;
        }
        struct sv_rwqe *r = &q->rq[q->rq_head];
        enum ibv_wc_status st = sv_scatter(q, r->sge, r->num_sge, pl, m->plen);
        sv_recv_wc(q, m, st, IBV_WC_RECV, m->plen);
        if (st != IBV_WC_SUCCESS)
            nak = st == IBV_WC_LOC_LEN_ERR ? SV_NAK_INV_REQ : SV_NAK_OP_ERR;
        break;
    }
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: {
        int imm = m->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        if (imm && !q->rq_count) {
            sv_reply(c, m, SV_NAK, SV_NAK_RNR, NULL, 0);
            return;
        }
        if (m->len) {
            char *dst = sv_remote(q, m->rkey, m->raddr, m->len, IBV_ACCESS_REMOTE_WRITE);
            if (!dst || m->plen != m->len) {
                nak = SV_NAK_ACCESS;
                break;
            }
            memcpy(dst, pl, m->len);
        }
        if (imm)
            sv_recv_wc(q, m, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, m->len);
        break;
    }
    case IBV_WR_RDMA_READ: {
        char *src = m->len ? sv_remote(q, m->rkey, m->raddr, m->len, IBV_ACCESS_REMOTE_READ) : "";
        if (!src) {
            nak = SV_NAK_ACCESS;
            break;
        }
        sv_reply(c, m, SV_READ_RESP, 0, src, m->len);
        q->expected_psn = (q->expected_psn + 1) & SV_PSN_MASK;
        return;
    }
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD: {
        if (m->raddr % 8) {
            nak = SV_NAK_INV_REQ;
            break;
        }
        char *p = sv_remote(q, m->rkey, m->raddr, 8, IBV_ACCESS_REMOTE_ATOMIC);
        if (!p) {
            nak = SV_NAK_ACCESS;
            break;
        }
        uint64_t old;
        memcpy(&old, p, 8);
        uint64_t v = m->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? old + m->cmp
                     : old == m->cmp                          ? m->swap
                                                              : old;
        memcpy(p, &v, 8);
        sv_reply(c, m, SV_ATOMIC_RESP, 0, &old, 8);
        q->expected_psn = (q->expected_psn + 1) & SV_PSN_MASK;
        return;
    }
    default:
        nak = SV_NAK_INV_REQ;
    }
    if (nak) {
        /* the responder's QP goes to error as well (its receives are flushed) */
        sv_reply(c, m, SV_NAK, nak, NULL, 0);
        sv_qp_to_error(q);
        return;
    }
    q->expected_psn = (q->expected_psn + 1) & SV_PSN_MASK;
    sv_reply(c, m, SV_ACK, 0, NULL, 0);
}

/* ---- connections ---- */

static void sv_conn_dead(struct sv_conn *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    struct sv_qp *q = c->qp;
    /* the peer process is gone: what it had not answered fails as hardware's
     * transport retries would */
    if (q && q->qp.state == IBV_QPS_RTS && q->sq_head != q->sq_next_tx && !q->retry_at_ns)
        sv_qp_complete(q, &q->sq[q->sq_head % q->sq_cap], IBV_WC_RETRY_EXC_ERR);
    else if (q && q->qp.state == IBV_QPS_RTS && q->sq_head != q->sq_next_tx)
        q->retry_at_ns = 1; /* due now: the retry finds the connection dead */
}

static void sv_conn_read(struct sv_conn *c)
{
    int eof = 0;
    for (;;) {
        if (c->in.cap - c->in.len < 65536) {
            sv_buf_reserve(&c->in, 65536);
            c->in.len -= 65536;
        }
        ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            eof = 1; /* after the messages already received: an ACK may precede it */
            break;
        }
        c->in.len += (size_t)n;
    }
    size_t off = 0;
    while (c->in.len - off >= sizeof(struct sv_msg)) {
        struct sv_msg m;
        memcpy(&m, c->in.p + off, sizeof(m));
        if (c->in.len - off < sizeof(m) + m.plen)
            break;
        const char *pl = c->in.p + off + sizeof(m);
        if (m.type == SV_REQ && c->incoming)
            sv_on_request(c, &m, pl);
        else if (!c->incoming && !c->released)
            sv_on_response(c, &m, pl);
        off += sizeof(m) + m.plen;
    }
    memmove(c->in.p, c->in.p + off, c->in.len - off);
    c->in.len -= off;
    if (eof)
        sv_conn_dead(c);
    else
        sv_conn_flush(c);
}

/* ---- progress thread ---- */

static void *sv_progress(void *arg)
{
    (void)arg;
    struct pollfd *pfd = NULL;
    struct sv_conn **pc = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&sv_g.lock);
    for (;;) {
        /* free what was released or died, and has nothing left to send */
        for (struct sv_conn **p = &W.conns; *p;) {
            struct sv_conn *c = *p;
            if (c->incoming ? c->dead : (c->released && (c->dead || c->out_off == c->out.len))) {
                *p = c->next;
                close(c->fd);
                free(c->in.p);
                free(c->out.p);
                free(c);
            } else {
                p = &c->next;
            }
        }
        size_t n = 2;
        for (struct sv_conn *c = W.conns; c; c = c->next)
            n++;
        if (n > cap) {
            cap = n * 2;
            pfd = realloc(pfd, cap * sizeof(*pfd));
            pc = realloc(pc, cap * sizeof(*pc));
            if (!pfd || !pc)
                abort();
        }
        pfd[0] = (struct pollfd){.fd = W.wake_fd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = W.listen_fd, .events = POLLIN};
        n = 2;
        for (struct sv_conn *c = W.conns; c; c = c->next) {
            if (c->dead)
                continue;
            pc[n] = c;
            pfd[n++] = (struct pollfd){
                .fd = c->fd, .events = (short)(POLLIN | (c->out_off < c->out.len ? POLLOUT : 0))};
        }
        uint64_t now = sv_now_ns(), next = UINT64_MAX;
        for (struct sv_qp *q = sv_g.qps; q; q = q->next)
            if (q->retry_at_ns && q->retry_at_ns < next)
                next = q->retry_at_ns;
        for (struct sv_pend *p = W.pend; p; p = p->next)
            if (p->when < next)
                next = p->when;
        int timeout = next == UINT64_MAX ? -1
                      : next <= now      ? 0
                                         : (int)((next - now + 999999) / 1000000);
        pthread_mutex_unlock(&sv_g.lock);
        int r = poll(pfd, n, timeout);
        pthread_mutex_lock(&sv_g.lock);
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "softverbs: progress thread poll failed: %s\n", strerror(errno));
            break;
        }
        if (r > 0 && (pfd[0].revents & POLLIN)) {
            uint64_t v;
            if (read(W.wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                break;
        }
        if (r > 0 && (pfd[1].revents & POLLIN)) {
            int fd;
            while ((fd = accept4(W.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                struct sv_conn *c = calloc(1, sizeof(*c));
                if (!c) {
                    close(fd);
                    continue;
                }
                c->fd = fd;
                c->incoming = 1;
                c->next = W.conns;
                W.conns = c;
            }
        }
        for (size_t i = 2; r > 0 && i < n; i++) {
            struct sv_conn *c = pc[i];
            if (c->dead)
                continue;
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                sv_conn_read(c);
            if (!c->dead && (pfd[i].revents & POLLOUT))
                sv_conn_flush(c);
        }
        now = sv_now_ns();
        for (struct sv_pend **p = &W.pend; *p;) {
            struct sv_pend *d = *p;
            if (d->when <= now) {
                *p = d->next;
                sv_cq_deliver(d->cq, &d->wc, d->sol);
                free(d);
            } else {
                p = &d->next;
            }
        }
        for (struct sv_qp *q = sv_g.qps; q; q = q->next)
            if (q->retry_at_ns && q->retry_at_ns <= now) {
                q->retry_at_ns = 0;
                if (q->conn && q->conn->dead && q->sq_head != q->sq_tail &&
                    q->qp.state == IBV_QPS_RTS)
                    sv_qp_complete(q, &q->sq[q->sq_head % q->sq_cap], IBV_WC_RETRY_EXC_ERR);
                else
                    sv_kick(q);
            }
    }
    pthread_mutex_unlock(&sv_g.lock);
    return NULL;
}

static void sv_atexit(void)
{
    if (!W.started || W.pid != getpid())
        return;
    unlink(W.sock);
    for (struct sv_qp *q = sv_g.qps; q; q = q->next)
        sv_registry_remove(q->ctx->dev->index, q->qp.qp_num);
}

static void sv_atfork_child(void)
{
    /* the child has no progress thread and must not share the parent's sockets */
    pthread_mutex_init(&sv_g.lock, NULL);
    for (struct sv_conn *c = W.conns; c; c = c->next)
        close(c->fd);
    if (W.listen_fd >= 0)
        close(W.listen_fd);
    if (W.wake_fd >= 0)
        close(W.wake_fd);
    W.conns = NULL;
    W.pend = NULL;
    W.listen_fd = W.wake_fd = -1;
    W.started = 0;
    sv_g.qps = NULL;
    sv_g.cqs = NULL;
    sv_g.mrs = NULL;
}

int sv_wire_start(void)
{
    pthread_mutex_lock(&sv_g.lock);
    if (W.started && W.pid == getpid()) {
        pthread_mutex_unlock(&sv_g.lock);
        return 0;
    }
    if (sv_devices_init() != 0 || sv_registry_dir() != 0)
        goto fail;
    W.pid = getpid();
    int len = snprintf(W.sock, sizeof(W.sock), "%s/p%d.sock", W.dir, (int)W.pid);
    if (len < 0 || (size_t)len >= sizeof(W.sock)) {
        fprintf(stderr,
                "softverbs: the socket path under PX_SOFTVERBS_DIR=%s is longer than %zu bytes; "
                "use a shorter folder\n",
                W.dir, sizeof(W.sock) - 1);
        goto fail;
    }
    unlink(W.sock);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, W.sock, (size_t)len + 1);
    W.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (W.listen_fd < 0 || bind(W.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(W.listen_fd, 1024) != 0) {
        fprintf(stderr, "softverbs: cannot listen on %s: %s\n", W.sock, strerror(errno));
        goto fail;
    }
    W.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (W.wake_fd < 0 || pthread_create(&t, &at, sv_progress, NULL) != 0) {
        pthread_attr_destroy(&at);
        fprintf(stderr, "softverbs: cannot start the progress thread: %s\n", strerror(errno));
        goto fail;
    }
    pthread_attr_destroy(&at);
    W.started = 1;
    if (!W.atexit_done) {
        W.atexit_done = 1;
        atexit(sv_atexit);
    }
    pthread_mutex_unlock(&sv_g.lock);
    return 0;
fail:
    if (W.listen_fd >= 0)
        close(W.listen_fd);
    W.listen_fd = -1;
    pthread_mutex_unlock(&sv_g.lock);
    errno = ENODEV;
    return -1;
}

__attribute__((constructor)) static void sv_init(void)
{
    pthread_atfork(NULL, NULL, sv_atfork_child);
}
