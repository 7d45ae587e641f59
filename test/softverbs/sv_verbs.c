/* softverbs: devices, ports, contexts, PD/MR, CQs and completion channels, RC QPs. */
#include "sv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>

struct sv_global sv_g = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_key = 0x1000};
struct sv_stats sv_stats;

/* Called by the posting thread: one turnaround ends. */
void sv_stats_send(void)
{
    if (!sv_stats.recv_ns)
        return;
    uint64_t d = sv_now_ns() - sv_stats.recv_ns;
    sv_stats.recv_ns = 0;
    sv_stats.count++;
    sv_stats.sum_ns += d;
    if (!sv_stats.min_ns || d < sv_stats.min_ns)
        sv_stats.min_ns = d;
    sv_stats.hist[d / 10 < SV_STATS_BUCKETS ? d / 10 : SV_STATS_BUCKETS]++;
}

static void sv_stats_print(void)
{
    if (!sv_stats.count)
        return;
    uint64_t half = (sv_stats.count + 1) / 2, seen = 0;
    unsigned med = 0;
    while (med < SV_STATS_BUCKETS && (seen += sv_stats.hist[med]) < half)
        med++;
    fprintf(stderr,
            "softverbs: pid %d: %llu receive-to-send turnarounds: min %.3f us, median %.3f us, "
            "mean %.3f us\n",
            (int)getpid(), (unsigned long long)sv_stats.count, sv_stats.min_ns / 1e3,
            (med + 0.5) * 0.01, (double)sv_stats.sum_ns / (double)sv_stats.count / 1e3);
}

__attribute__((constructor)) static void sv_stats_init(void)
{
    const char *e = getenv("PX_SOFTVERBS_STATS");
    if (e && *e && strcmp(e, "0")) {
        sv_stats.on = 1;
        atexit(sv_stats_print);
    }
}

uint64_t sv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An integer from the environment; a malformed or out-of-range value is reported
 * (variable, value, accepted range) and *bad is set. */
long sv_env_long(const char *name, long dflt, long min, long max, int *bad)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno || *end || v < min || v > max) {
        fprintf(stderr,
                "softverbs: environment variable %s=\"%s\" is not valid: expected an integer "
                "from %ld to %ld\n",
                name, s, min, max);
        if (bad)
            *bad = 1;
        return dflt;
    }
    return v;
}

/* ---- devices and ports ---- */

int sv_devices_init(void)
{
    if (sv_g.devs_ready)
        return sv_g.ndev >= 0 ? 0 : -1;
    int bad = 0;
    long n = sv_env_long("PX_SOFTVERBS_DEVICES", 1, 0, SV_MAX_DEVICES, &bad);
    long ports = sv_env_long("PX_SOFTVERBS_PORTS", 1, 1, SV_MAX_PORTS, &bad);
    const char *ll = getenv("PX_SOFTVERBS_LINK_LAYER");
    int eth = 0;
    if (ll && *ll) {
        if (!strcasecmp(ll, "ib") || !strcasecmp(ll, "infiniband"))
            eth = 0;
        else if (!strcasecmp(ll, "eth") || !strcasecmp(ll, "ethernet") || !strcasecmp(ll, "roce"))
            eth = 1;
        else {
            fprintf(stderr,
                    "softverbs: environment variable PX_SOFTVERBS_LINK_LAYER=\"%s\" is not "
                    "valid: expected ib (InfiniBand, LIDs) or eth (RoCE, GIDs)\n",
                    ll);
            bad = 1;
        }
    }
    sv_g.devs_ready = 1;
    if (bad) {
        sv_g.ndev = -1;
        return -1;
    }
    sv_g.ndev = (int)n;
    sv_g.eth = eth;
    for (int i = 0; i < n; i++) {
        struct sv_device *d = &sv_g.devs[i];
        memset(d, 0, sizeof(*d));
        d->index = i;
        d->nports = (int)ports;
        d->eth = eth;
        d->guid = 0x0253564552420000ull | (uint64_t)(i + 1); /* "SVERB" + index */
        d->dev.node_type = IBV_NODE_CA;
        d->dev.transport_type = IBV_TRANSPORT_IB;
        snprintf(d->dev.name, sizeof(d->dev.name), "softverbs%d", i);
        snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", 100 + i);
        snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d",
                 100 + i);
        snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/softverbs%d",
                 i);
    }
    return 0;
}

/* LID of (device, port): unique across the fake subnet, never 0. GID index 0 is the
 * link-local GID from the port GUID; on Ethernet index 1 is an IPv4-mapped RoCE v2 GID. */
void sv_port_lid_gid(struct sv_device *d, int port, uint16_t *lid, union ibv_gid *gid, int idx)
{
    if (lid)
        *lid = d->eth ? 0 : (uint16_t)(1 + d->index * SV_MAX_PORTS + (port - 1));
    if (gid) {
        memset(gid, 0, sizeof(*gid));
        if (idx == 0) {
            gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
            gid->global.interface_id = htobe64(d->guid + (uint64_t)(port - 1) * 0x10000);
        } else {
            gid->raw[10] = 0xff;
            gid->raw[11] = 0xff;
            gid->raw[12] = 10;
            gid->raw[13] = 83;
            gid->raw[14] = (uint8_t)d->index;
            gid->raw[15] = (uint8_t)port;
        }
    }
}

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
    pthread_mutex_lock(&sv_g.lock);
    int rc = sv_devices_init();
    int n = rc ? 0 : sv_g.ndev;
    pthread_mutex_unlock(&sv_g.lock);
    if (num)
        *num = 0;
    if (rc) {
        errno = EINVAL;
        return NULL;
    }
    struct ibv_device **list = calloc((size_t)n + 1, sizeof(*list));
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < n; i++)
        list[i] = &sv_g.devs[i].dev;
    if (num)
        *num = n;
    return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return htobe64(((struct sv_device *)device)->guid);
}

SV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    return ((struct sv_device *)device)->index;
}

/* ---- context ---- */

static int sv_query_port_ex(struct ibv_context *context, uint8_t port, struct ibv_port_attr *a,
                            size_t len);
static int sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
static int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
static int sv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    (void)srq;
    *bad = wr;
    return EOPNOTSUPP;
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct sv_device *d = (struct sv_device *)device;
    struct sv_context *c = calloc(1, sizeof(*c));
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    if (sv_wire_start() != 0) {
        free(c);
        return NULL;
    }
    if (pipe2(c->async_pipe, O_CLOEXEC) != 0) {
        free(c);
        return NULL;
    }
    c->dev = d;
    struct ibv_context *ctx = &c->vctx.context;
    c->vctx.sz = sizeof(struct verbs_context);
    c->vctx.query_port = sv_query_port_ex;
    c->vctx.create_qp_ex = sv_create_qp_ex;
    ctx->device = device;
    ctx->ops.post_send = sv_post_send;
    ctx->ops.post_recv = sv_post_recv;
    ctx->ops.poll_cq = sv_poll_cq;
    ctx->ops.req_notify_cq = sv_req_notify_cq;
    ctx->ops.post_srq_recv = sv_post_srq_recv;
    ctx->cmd_fd = -1;
    ctx->async_fd = c->async_pipe[0];
    ctx->num_comp_vectors = 1;
    pthread_mutex_init(&ctx->mutex, NULL);
    ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
    return ctx;
}

SV_EXPORT int ibv_close_device(struct ibv_context *ctx)
{
    struct sv_context *c = (struct sv_context *)verbs_get_ctx(ctx);
    close(c->async_pipe[0]);
    close(c->async_pipe[1]);
    free(c);
    return 0;
}

void sv_async_event(struct sv_context *ctx, enum ibv_event_type type, struct ibv_qp *qp)
{
    struct ibv_async_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.event_type = type;
    ev.element.qp = qp;
    if (write(ctx->async_pipe[1], &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
        fprintf(stderr, "softverbs: could not queue async event %d\n", (int)type);
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
    ssize_t n = read(ctx->async_fd, ev, sizeof(*ev));
    return n == (ssize_t)sizeof(*ev) ? 0 : -1;
}

SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *ev)
{
    (void)ev;
}

SV_EXPORT int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
    struct sv_device *d = (struct sv_device *)ctx->device;
    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "44.0.softverbs");
    a->node_guid = htobe64(d->guid);
    a->sys_image_guid = htobe64(d->guid);
    a->max_mr_size = UINT64_MAX;
    a->page_size_cap = 0xfffff000;
    a->vendor_id = SV_VENDOR_ID;
    a->vendor_part_id = SV_VENDOR_PART;
    a->hw_ver = 1;
    a->max_qp = 65536;
    a->max_qp_wr = SV_MAX_WR;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
    a->max_sge = SV_MAX_SGE;
    a->max_cq = 65536;
    a->max_cqe = SV_MAX_CQE;
    a->max_mr = 1 << 20;
    a->max_pd = 1 << 16;
    a->max_qp_rd_atom = 16;
    a->max_ee_rd_atom = 0;
    a->max_res_rd_atom = 16 * 65536;
    a->max_qp_init_rd_atom = 16;
    a->atomic_cap = IBV_ATOMIC_HCA;
    a->max_pkeys = 1;
    a->local_ca_ack_delay = 16;
    a->phys_port_cnt = (uint8_t)d->nports;
    return 0;
}

static int sv_fill_port(struct sv_device *d, uint8_t port, struct ibv_port_attr *a)
{
    if (port < 1 || port > d->nports)
        return EINVAL;
    uint16_t lid;
    sv_port_lid_gid(d, port, &lid, NULL, 0);
    a->state = IBV_PORT_ACTIVE;
    a->max_mtu = IBV_MTU_4096;
    a->active_mtu = d->eth ? IBV_MTU_1024 : IBV_MTU_4096;
    a->gid_tbl_len = d->eth ? SV_GID_TABLE_ETH : SV_GID_TABLE_IB;
    a->port_cap_flags = d->eth ? IBV_PORT_CM_SUP : (IBV_PORT_CM_SUP | IBV_PORT_SM);
    a->max_msg_sz = 1u << 31;
    a->bad_pkey_cntr = 0;
    a->qkey_viol_cntr = 0;
    a->pkey_tbl_len = 1;
    a->lid = lid;
    a->sm_lid = d->eth ? 0 : 1;
    a->lmc = 0;
    a->max_vl_num = 1;
    a->sm_sl = 0;
    a->subnet_timeout = 18;
    a->init_type_reply = 0;
    a->active_width = 2;  /* 4x */
    a->active_speed = 32; /* EDR */
    a->phys_state = 5;    /* LinkUp */
    a->link_layer = d->eth ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    a->flags = 0;
    return 0;
}

static int sv_query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a,
                            size_t len)
{
    struct ibv_port_attr tmp;
    memset(&tmp, 0, sizeof(tmp));
    int rc = sv_fill_port((struct sv_device *)ctx->device, port, &tmp);
    if (rc)
        return rc;
    memcpy(a, &tmp, len < sizeof(tmp) ? len : sizeof(tmp));
    return 0;
}

/* The exported symbol takes the older, shorter port attribute layout: fill only the
 * fields up to link_layer/flags (the inline wrapper zeroed the rest). */
SV_EXPORT int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *a)
{
    return sv_query_port_ex(ctx, port, (struct ibv_port_attr *)a,
                            offsetof(struct ibv_port_attr, port_cap_flags2));
}

SV_EXPORT int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
    struct sv_device *d = (struct sv_device *)ctx->device;
    int len = d->eth ? SV_GID_TABLE_ETH : SV_GID_TABLE_IB;
    if (port < 1 || port > d->nports || index < 0 || index >= len) {
        errno = EINVAL;
        return -1;
    }
    sv_port_lid_gid(d, port, NULL, gid, index);
    return 0;
}

static uint32_t sv_gid_type(struct sv_device *d, unsigned index)
{
    if (!d->eth)
        return IBV_GID_TYPE_IB;
    return index == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
}

/* private in rdma-core (driver.h): 0 = IB/RoCE v1, 1 = RoCE v2 */
SV_EXPORT int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
                                 int *type)
{
    struct sv_device *d = (struct sv_device *)ctx->device;
    if (port < 1 || port > d->nports || index >= (unsigned)(d->eth ? 2 : 1)) {
        errno = EINVAL;
        return -1;
    }
    *type = sv_gid_type(d, index) == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
    return 0;
}

SV_EXPORT int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
                                struct ibv_gid_entry *e, uint32_t flags, size_t esize)
{
    struct sv_device *d = (struct sv_device *)ctx->device;
    if (flags || esize < sizeof(*e))
        return EINVAL;
    if (port < 1 || port > (uint32_t)d->nports || index >= (uint32_t)(d->eth ? 2 : 1))
        return ENODATA;
    memset(e, 0, esize);
    sv_port_lid_gid(d, (int)port, NULL, &e->gid, (int)index);
    e->gid_index = index;
    e->port_num = port;
    e->gid_type = sv_gid_type(d, index);
    e->ndev_ifindex = d->eth ? 1 : 0; /* lo */
    return 0;
}

SV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
                                       size_t max, uint32_t flags, size_t esize)
{
    struct sv_device *d = (struct sv_device *)ctx->device;
    size_t n = 0;
    for (int p = 1; p <= d->nports; p++)
        for (uint32_t i = 0; i < (uint32_t)(d->eth ? 2 : 1); i++) {
            if (n >= max)
                return -ENOMEM;
            int rc = _ibv_query_gid_ex(ctx, (uint32_t)p, i,
                                       (struct ibv_gid_entry *)((char *)entries + n * esize), flags,
                                       esize);
            if (rc)
                return -rc;
            n++;
        }
    return (ssize_t)n;
}

SV_EXPORT int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
    struct sv_device *d = (struct sv_device *)ctx->device;
    if (port < 1 || port > d->nports || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htobe16(0xffff);
    return 0;
}

SV_EXPORT int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
    (void)ctx;
    (void)port;
    if (be16toh(pkey) == 0xffff || be16toh(pkey) == 0x7fff)
        return 0;
    errno = EINVAL;
    return -1;
}

/* ---- protection domains and memory regions ---- */

static int sv_num_pds; /* PDs allocated and not deallocated */

/* Not a verbs call: how many QPs, CQs, MRs and PDs this process holds now, so
 * that a test can check that a client releases what it made (exported in the
 * version node PX_SOFTVERBS_1.0, found with dlsym; the real library has no
 * such symbol). Any pointer may be NULL. */
SV_EXPORT void px_softverbs_counts(int *qps, int *cqs, int *mrs, int *pds)
{
    int nq = 0, nc = 0, nm = 0;
    pthread_mutex_lock(&sv_g.lock);
    for (struct sv_qp *q = sv_g.qps; q; q = q->next)
        nq++;
    for (struct sv_cq *c = sv_g.cqs; c; c = c->next)
        nc++;
    for (struct sv_mr *m = sv_g.mrs; m; m = m->next)
        nm++;
    pthread_mutex_unlock(&sv_g.lock);
    if (qps)
        *qps = nq;
    if (cqs)
        *cqs = nc;
    if (mrs)
        *mrs = nm;
    if (pds)
        *pds = __atomic_load_n(&sv_num_pds, __ATOMIC_RELAXED);
}

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = calloc(1, sizeof(*pd));
    if (!pd) {
        errno = ENOMEM;
        return NULL;
    }
    static uint32_t handles;
    pd->context = ctx;
    pd->handle = __atomic_add_fetch(&handles, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sv_num_pds, 1, __ATOMIC_RELAXED);
    return pd;
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    pthread_mutex_lock(&sv_g.lock);
    for (struct sv_mr *m = sv_g.mrs; m; m = m->next)
        if (m->mr.pd == pd) {
            pthread_mutex_unlock(&sv_g.lock);
            return EBUSY;
        }
    for (struct sv_qp *q = sv_g.qps; q; q = q->next)
        if (q->qp.pd == pd) {
            pthread_mutex_unlock(&sv_g.lock);
            return EBUSY;
        }
    pthread_mutex_unlock(&sv_g.lock);
    __atomic_sub_fetch(&sv_num_pds, 1, __ATOMIC_RELAXED);
    free(pd);
    return 0;
}

#define SV_ACCESS_ALL                                                                              \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                   \
     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING)

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                          uint64_t iova, unsigned int access)
{
    if ((access & ~(unsigned)SV_ACCESS_ALL) ||
        /* remote write or atomic without local write: hardware refuses it too */
        ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
         !(access & IBV_ACCESS_LOCAL_WRITE)) ||
        (!addr && length)) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_mr *m = calloc(1, sizeof(*m));
    if (!m) {
        errno = ENOMEM;
        return NULL;
    }
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->iova = iova;
    m->access = (int)access;
    pthread_mutex_lock(&sv_g.lock);
    /* keys: an index in the high 24 bits, a per-registration "tag" byte below */
    uint32_t k = sv_g.next_key++;
    m->mr.lkey = m->mr.rkey = (k << 8) | ((k * 37u + 0x5a) & 0xff);
    m->mr.handle = k;
    m->next = sv_g.mrs;
    sv_g.mrs = m;
    pthread_mutex_unlock(&sv_g.lock);
    return &m->mr;
}

SV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                                         uint64_t iova, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
    pthread_mutex_lock(&sv_g.lock);
    for (struct sv_mr **p = &sv_g.mrs; *p; p = &(*p)->next)
        if (&(*p)->mr == mr) {
            struct sv_mr *m = *p;
            *p = m->next;
            pthread_mutex_unlock(&sv_g.lock);
            free(m);
            return 0;
        }
    pthread_mutex_unlock(&sv_g.lock);
    return EINVAL;
}

/* caller holds sv_g.lock */
struct sv_mr *sv_mr_find(uint32_t key)
{
    for (struct sv_mr *m = sv_g.mrs; m; m = m->next)
        if (m->mr.lkey == key)
            return m;
    return NULL;
}

/* ---- completion channels and CQs ---- */

SV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
    struct sv_channel *c = calloc(1, sizeof(*c));
    int fds[2];
    if (!c || pipe2(fds, O_CLOEXEC) != 0) {
        free(c);
        return NULL;
    }
    c->ch.context = ctx;
    c->ch.fd = fds[0];
    c->ch.refcnt = 0;
    c->wfd = fds[1];
    return &c->ch;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
    struct sv_channel *c = (struct sv_channel *)ch;
    pthread_mutex_lock(&sv_g.lock);
    int busy = ch->refcnt;
    pthread_mutex_unlock(&sv_g.lock);
    if (busy)
        return EBUSY;
    close(c->ch.fd);
    close(c->wfd);
    free(c);
    return 0;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                                       struct ibv_comp_channel *channel, int comp_vector)
{
    if (cqe < 1 || cqe > SV_MAX_CQE || comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
        errno = EINVAL;
        return NULL;
    }
    int bad = 0;
    long delay = sv_env_long("PX_SOFTVERBS_DELAY_US", 0, 0, 60000000, &bad);
    if (bad) {
        errno = EINVAL;
        return NULL;
    }
    struct sv_cq *c = calloc(1, sizeof(*c));
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    c->cap = (unsigned)cqe + 1;
    c->ring = calloc(c->cap, sizeof(*c->ring));
    if (!c->ring) {
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    c->delay_us = delay;
    c->cq.context = ctx;
    c->cq.channel = channel;
    c->cq.cq_context = cq_context;
    c->cq.cqe = cqe;
    pthread_mutex_init(&c->cq.mutex, NULL);
    pthread_cond_init(&c->cq.cond, NULL);
    pthread_mutex_lock(&sv_g.lock);
    if (channel)
        channel->refcnt++;
    c->next = sv_g.cqs;
    sv_g.cqs = c;
    pthread_mutex_unlock(&sv_g.lock);
    return &c->cq;
}

SV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
    struct sv_cq *c = (struct sv_cq *)ibcq;
    if (cqe < 1 || cqe > SV_MAX_CQE)
        return EINVAL;
    pthread_mutex_lock(&sv_g.lock);
    if ((unsigned)cqe < c->count) {
        pthread_mutex_unlock(&sv_g.lock);
        return EINVAL;
    }
    struct ibv_wc *r = calloc((size_t)cqe + 1, sizeof(*r));
    if (!r) {
        pthread_mutex_unlock(&sv_g.lock);
        return ENOMEM;
    }
    for (unsigned i = 0; i < c->count; i++)
        r[i] = c->ring[(c->head + i) % c->cap];
    free(c->ring);
    c->ring = r;
    c->head = 0;
    c->cap = (unsigned)cqe + 1;
    c->cq.cqe = cqe;
    pthread_mutex_unlock(&sv_g.lock);
    return 0;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    struct sv_cq *c = (struct sv_cq *)ibcq;
    pthread_mutex_lock(&sv_g.lock);
    for (struct sv_qp *q = sv_g.qps; q; q = q->next)
        if (q->qp.send_cq == ibcq || q->qp.recv_cq == ibcq) {
            pthread_mutex_unlock(&sv_g.lock);
            return EBUSY;
        }
    for (struct sv_cq **p = &sv_g.cqs; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    sv_pending_drop_cq(c);
    if (ibcq->channel)
        ibcq->channel->refcnt--;
    pthread_mutex_unlock(&sv_g.lock);
    free(c->ring);
    free(c);
    return 0;
}

/* caller holds sv_g.lock: make a completion visible now */
void sv_cq_deliver(struct sv_cq *c, const struct ibv_wc *wc, int solicited)
{
    if (c->count + 1 >= c->cap) {
        /* Hardware would raise IBV_EVENT_CQ_ERR and lose entries; we keep them
         * (the ring grows) and say so once. */
        if (!c->overrun_reported) {
            fprintf(stderr,
                    "softverbs: CQ overrun: more than cqe=%d completions outstanding on CQ %p; "
                    "a hardware CQ would be in error now (create the CQ larger)\n",
                    c->cq.cqe, (void *)c);
            c->overrun_reported = 1;
        }
        unsigned ncap = c->cap * 2;
        struct ibv_wc *r = calloc(ncap, sizeof(*r));
        if (!r)
            abort();
        for (unsigned i = 0; i < c->count; i++)
            r[i] = c->ring[(c->head + i) % c->cap];
        free(c->ring);
        c->ring = r;
        c->head = 0;
        c->cap = ncap;
    }
    c->ring[(c->head + c->count) % c->cap] = *wc;
    __atomic_store_n(&c->count, c->count + 1, __ATOMIC_RELEASE); /* read unlocked by polls */
    if (c->armed && c->cq.channel &&
        (!c->solicited_only || solicited || wc->status != IBV_WC_SUCCESS)) {
        c->armed = 0;
        struct sv_channel *ch = (struct sv_channel *)c->cq.channel;
        struct ibv_cq *p = &c->cq;
        if (write(ch->wfd, &p, sizeof(p)) != (ssize_t)sizeof(p))
            fprintf(stderr, "softverbs: completion channel write failed\n");
    }
}

/* caller holds sv_g.lock */
void sv_cq_push(struct sv_cq *c, const struct ibv_wc *wc, int solicited)
{
    if (c->delay_us > 0)
        sv_pending_add(c, wc, solicited, sv_now_ns() + (uint64_t)c->delay_us * 1000u);
    else
        sv_cq_deliver(c, wc, solicited);
}

static int sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    struct sv_cq *c = (struct sv_cq *)ibcq;
    if (n < 0)
        return -1;
    /* An empty CQ is seen without the lock, as a client reads a hardware CQ
     * without the device: polling does not hold up the progress thread. */
    if (!__atomic_load_n(&c->count, __ATOMIC_ACQUIRE)) {
        sched_yield(); /* a client spinning here leaves the CPU to the progress threads */
        return 0;
    }
    pthread_mutex_lock(&sv_g.lock);
    int k = 0;
    while (k < n && c->count) {
        wc[k++] = c->ring[c->head];
        c->head = (c->head + 1) % c->cap;
        __atomic_store_n(&c->count, c->count - 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&sv_g.lock);
    if (!k)
        sched_yield(); /* a client spinning here leaves the CPU to the progress threads */
    else if (sv_stats.on)
        for (int i = 0; i < k; i++)
            if (wc[i].opcode & IBV_WC_RECV) {
                sv_stats.recv_ns = sv_now_ns();
                break;
            }
    return k;
}

static int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct sv_cq *c = (struct sv_cq *)ibcq;
    if (!ibcq->channel)
        return EINVAL;
    pthread_mutex_lock(&sv_g.lock);
    /* arming again for "any" widens an armed solicited-only request */
    if (!c->armed || !solicited_only)
        c->solicited_only = solicited_only;
    c->armed = 1;
    pthread_mutex_unlock(&sv_g.lock);
    return 0;
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
    struct ibv_cq *p;
    ssize_t n = read(ch->fd, &p, sizeof(p));
    if (n != (ssize_t)sizeof(p))
        return -1;
    *cq = p;
    *cq_context = p->cq_context;
    return 0;
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
