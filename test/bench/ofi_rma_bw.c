/*
 * ofi_rma_bw: raw libfabric one-sided bandwidth, the floor for btl/ofi's
 * one-sided rate (test/bench/compare-named.sh, docs/measurements/named.md).
 * fabtests' fi_rma_bw is not packaged in Debian, so this is a small one of
 * our own with px_xfer_bench's access pattern: a reader keeps batches of
 * `-b` reads (or writes) of `-s` bytes in flight against a target process,
 * request i of a batch on block i of both sides (`-m cold`, what
 * px_xfer_bench and Mooncake's transfer_engine_bench do) or every request on
 * block 0 (`-m hot`, what px_perf --xfer's streaming test does), for `-d`
 * seconds; `-l N` spreads the requests round-robin over N endpoints per
 * side (N TCP connections under tcp;ofi_rxm), as a striped transport would,
 * each endpoint with a completion queue of its own (two rxm endpoints of
 * libfabric 1.17 bound to one queue ran 10x fewer reads than one).
 *
 *   ofi_rma_bw [-p PROV] [-s BYTES] [-b BATCH] [-d SECONDS] [-l LANES]
 *              [-m cold|hot] [-o read|write] [-c CHUNK]
 *
 * One process forks the target; the two exchange addresses and the key over
 * a socket pair. `-c` cuts each request into operations of at most CHUNK
 * bytes (btl_ofi_get_limit's effect). Prints one line of key=value fields.
 * Not part of the test suite (it asserts nothing); FI_TCP_IFACE=lo keeps
 * tcp on loopback.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define MAX_LANES 16

typedef struct side {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq[MAX_LANES]; /* one per endpoint */
    struct fid_av *av;
    struct fid_ep *ep[MAX_LANES];
    fi_addr_t peer[MAX_LANES];
    struct fid_mr *mr;
    char *buf;
    size_t len;
} side_t;

typedef struct wire {
    uint64_t key, base;
    size_t addrlen;
    char addr[MAX_LANES][128];
} wire_t;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "ofi_rma_bw: %s: %s (%d)\n", what, fi_strerror(rc < 0 ? -rc : rc), rc);
    exit(1);
}

static void xwrite(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n) {
        perror("ofi_rma_bw: write");
        exit(1);
    }
}

static void xread(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r <= 0) {
            fprintf(stderr, "ofi_rma_bw: the other side went away\n");
            exit(1);
        }
        got += (size_t)r;
    }
}

static void setup(side_t *s, const char *prov, int lanes, size_t len, wire_t *mine)
{
    struct fi_info *hints = fi_allocinfo();
    hints->caps = FI_MSG | FI_RMA;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(prov);
    int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &s->info);
    if (rc)
        die("fi_getinfo", rc);
    fi_freeinfo(hints);
    if ((rc = fi_fabric(s->info->fabric_attr, &s->fabric, NULL)))
        die("fi_fabric", rc);
    if ((rc = fi_domain(s->fabric, s->info, &s->domain, NULL)))
        die("fi_domain", rc);
    struct fi_av_attr ava = {.type = s->info->domain_attr->av_type};
    if ((rc = fi_av_open(s->domain, &ava, &s->av, NULL)))
        die("fi_av_open", rc);
    mine->addrlen = 0;
    for (int l = 0; l < lanes; l++) {
        struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
        if ((rc = fi_cq_open(s->domain, &cqa, &s->cq[l], NULL)))
            die("fi_cq_open", rc);
        if ((rc = fi_endpoint(s->domain, s->info, &s->ep[l], NULL)))
            die("fi_endpoint", rc);
        if ((rc = fi_ep_bind(s->ep[l], &s->av->fid, 0)) ||
            (rc = fi_ep_bind(s->ep[l], &s->cq[l]->fid, FI_TRANSMIT | FI_RECV)) ||
            (rc = fi_enable(s->ep[l])))
            die("fi_ep_bind/fi_enable", rc);
        size_t al = sizeof(mine->addr[l]);
        if ((rc = fi_getname(&s->ep[l]->fid, mine->addr[l], &al)))
            die("fi_getname", rc);
        mine->addrlen = al;
    }
    s->len = len;
    if (posix_memalign((void **)&s->buf, 4096, len))
        die("posix_memalign", -FI_ENOMEM);
    memset(s->buf, 0x5a, len);
    if ((rc = fi_mr_reg(s->domain, s->buf, len,
                        FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1, 0, &s->mr,
                        NULL)))
        die("fi_mr_reg", rc);
    mine->key = fi_mr_key(s->mr);
    mine->base =
        (s->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)s->buf : 0;
}

static void connect_peer(side_t *s, int lanes, const wire_t *theirs)
{
    for (int l = 0; l < lanes; l++)
        if (fi_av_insert(s->av, theirs->addr[l], 1, &s->peer[l], 0, NULL) != 1)
            die("fi_av_insert", -FI_EINVAL);
}

int main(int argc, char **argv)
{
    const char *prov = "tcp;ofi_rxm";
    size_t size = 65536, chunk = 0;
    int batch = 128, lanes = 1, hot = 0, write_op = 0;
    double dur = 2;
    for (int c; (c = getopt(argc, argv, "p:s:b:d:l:m:o:c:")) != -1;) {
        switch (c) {
        case 'p':
            prov = optarg;
            break;
        case 's':
            size = strtoull(optarg, NULL, 0);
            break;
        case 'b':
            batch = atoi(optarg);
            break;
        case 'd':
            dur = atof(optarg);
            break;
        case 'l':
            lanes = atoi(optarg);
            break;
        case 'm':
            hot = !strcmp(optarg, "hot");
            break;
        case 'o':
            write_op = !strcmp(optarg, "write");
            break;
        case 'c':
            chunk = strtoull(optarg, NULL, 0);
            break;
        default:
            fprintf(stderr, "usage: ofi_rma_bw [-p PROV] [-s BYTES] [-b BATCH] [-d SECONDS] "
                            "[-l LANES] [-m cold|hot] [-o read|write] [-c CHUNK]\n");
            return 2;
        }
    }
    if (lanes < 1 || lanes > MAX_LANES || batch < 1 || size < 1) {
        fprintf(stderr, "ofi_rma_bw: -l 1..%d, -b >= 1, -s >= 1\n", MAX_LANES);
        return 2;
    }
    if (0 == chunk || chunk > size)
        chunk = size;
    size_t len = hot ? size : size * (size_t)batch;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror("socketpair");
        return 1;
    }
    pid_t pid = fork();
    side_t s = {0};
    wire_t mine, theirs;
    if (0 == pid) { /* the target: serve until told to stop */
        close(sv[0]);
        setup(&s, prov, lanes, len, &mine);
        xwrite(sv[1], &mine, sizeof mine);
        xread(sv[1], &theirs, sizeof theirs);
        connect_peer(&s, lanes, &theirs);
        struct fi_cq_entry ev[16];
        for (unsigned it = 0;; it++) {
            for (int l = 0; l < lanes; l++)
                (void)fi_cq_read(s.cq[l], ev, 16);
            if (0 == (it & 1023)) {
                struct pollfd p = {.fd = sv[1], .events = POLLIN};
                if (poll(&p, 1, 0) > 0)
                    break;
            }
        }
        _exit(0);
    }
    close(sv[1]);
    setup(&s, prov, lanes, len, &mine);
    xwrite(sv[0], &mine, sizeof mine);
    xread(sv[0], &theirs, sizeof theirs);
    connect_peer(&s, lanes, &theirs);
    void *desc = fi_mr_desc(s.mr);
    size_t per = (size + chunk - 1) / chunk;
    long ops = 0, posted_total = 0;
    double t0 = 0, t_end = 0;
    struct fi_context2 *ctx = calloc((size_t)batch * per, sizeof *ctx);
    /* round 0 is a warm-up (connections) and not counted */
    for (long round = 0;; round++) {
        if (1 == round) {
            t0 = now();
            t_end = t0 + dur;
        }
        if (round > 1 && now() >= t_end)
            break;
        size_t total = (size_t)batch * per, posted = 0, done = 0;
        int lane = 0;
        while (done < total) {
            while (posted < total) {
                size_t i = posted / per, k = posted % per;
                size_t off = (hot ? 0 : i * size) + k * chunk;
                size_t n = size - k * chunk < chunk ? size - k * chunk : chunk;
                ssize_t rc = write_op ? fi_write(s.ep[lane], s.buf + off, n, desc, s.peer[lane],
                                                 theirs.base + off, theirs.key, &ctx[posted])
                                      : fi_read(s.ep[lane], s.buf + off, n, desc, s.peer[lane],
                                                theirs.base + off, theirs.key, &ctx[posted]);
                if (-FI_EAGAIN == rc)
                    break;
                if (rc)
                    die(write_op ? "fi_write" : "fi_read", (int)rc);
                posted++;
                lane = (lane + 1) % lanes;
            }
            for (int l = 0; l < lanes; l++) {
                struct fi_cq_entry ev[16];
                ssize_t n = fi_cq_read(s.cq[l], ev, 16);
                if (n > 0)
                    done += (size_t)n;
                else if (n != -FI_EAGAIN) {
                    struct fi_cq_err_entry e = {0};
                    fi_cq_readerr(s.cq[l], &e, 0);
                    die("completion", -e.err);
                }
            }
        }
        if (round >= 1)
            ops += batch;
        posted_total += (long)total;
    }
    double dt = now() - t0;
    xwrite(sv[0], "x", 1);
    waitpid(pid, NULL, 0);
    printf("ofi_rma_bw: prov=%s op=%s block=%zu batch=%d lanes=%d mem=%s chunk=%zu duration=%.3f "
           "ops=%ld gbps=%.3f\n",
           prov, write_op ? "write" : "read", size, batch, lanes, hot ? "hot" : "cold", chunk, dt,
           ops, (double)ops * (double)size / dt / 1e9);
    (void)posted_total;
    return 0;
}
