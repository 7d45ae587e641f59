/* softverbs: the rest of libibverbs' exported surface: strings, rate conversions,
 * sysfs reads for the fake devices, verbs softverbs does not model (they fail with
 * EOPNOTSUPP, as a device without the capability does), the IBVERBS_PRIVATE_34
 * provider interface (present so provider libraries such as libmlx5.so.1, which
 * perftest links, load; never called). */
#include "sv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

/* ---- strings ---- */

SV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const s[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_MW_BIND_ERR] = "memory management operation error",
        [IBV_WC_BAD_RESP_ERR] = "bad response error",
        [IBV_WC_LOC_ACCESS_ERR] = "local access error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR] = "aborted error",
        [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IBV_WC_FATAL_ERR] = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IBV_WC_GENERAL_ERR] = "general error",
        [IBV_WC_TM_ERR] = "TM error",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
    };
    if ((unsigned)status < sizeof(s) / sizeof(s[0]) && s[status])
        return s[status];
    return "unknown";
}

SV_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
    switch (t) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
        return "unspecified";
    default:
        return "unknown";
    }
}

SV_EXPORT const char *ibv_port_state_str(enum ibv_port_state s)
{
    static const char *const n[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                    "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
    return (unsigned)s < 6 ? n[s] : "unknown";
}

SV_EXPORT const char *ibv_event_type_str(enum ibv_event_type e)
{
    switch (e) {
    case IBV_EVENT_CQ_ERR:
        return "CQ error";
    case IBV_EVENT_QP_FATAL:
        return "local work queue catastrophic error";
    case IBV_EVENT_QP_REQ_ERR:
        return "invalid request local work queue error";
    case IBV_EVENT_QP_ACCESS_ERR:
        return "local access violation work queue error";
    case IBV_EVENT_COMM_EST:
        return "communication established";
    case IBV_EVENT_SQ_DRAINED:
        return "send queue drained";
    case IBV_EVENT_PORT_ACTIVE:
        return "port active";
    case IBV_EVENT_PORT_ERR:
        return "port error";
    case IBV_EVENT_DEVICE_FATAL:
        return "local catastrophic error";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return "last WQE reached";
    default:
        return "unknown";
    }
}

/* ---- rates ---- */

static const struct {
    enum ibv_rate rate;
    int mult, mbps;
} sv_rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 5, 14062},
    {IBV_RATE_56_GBPS, 22, 56250},    {IBV_RATE_112_GBPS, 45, 112500},
    {IBV_RATE_168_GBPS, 67, 168750},  {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
};
#define SV_NRATES (sizeof(sv_rates) / sizeof(sv_rates[0]))

SV_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
    for (size_t i = 0; i < SV_NRATES; i++)
        if (sv_rates[i].rate == rate)
            return sv_rates[i].mult;
    return -1;
}

SV_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
    for (size_t i = 0; i < SV_NRATES; i++)
        if (sv_rates[i].mult == mult)
            return sv_rates[i].rate;
    return IBV_RATE_MAX;
}

SV_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
    for (size_t i = 0; i < SV_NRATES; i++)
        if (sv_rates[i].rate == rate)
            return sv_rates[i].mbps;
    return -1;
}

SV_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    for (size_t i = 0; i < SV_NRATES; i++)
        if (sv_rates[i].mbps == mbps)
            return sv_rates[i].rate;
    return IBV_RATE_MAX;
}

/* ---- sysfs ---- */

SV_EXPORT const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

/* Files of the fake devices come from here; any other path is read from the system. */
SV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    static const char pre[] = "/sys/class/infiniband/softverbs";
    if (!strncmp(dir, pre, sizeof(pre) - 1)) {
        const char *v = !strcmp(file, "board_id")    ? "SOFTVERBS_0001"
                        : !strcmp(file, "node_desc") ? "softverbs test device"
                        : !strcmp(file, "fw_ver")    ? "44.0.softverbs"
                        : !strcmp(file, "hw_rev")    ? "1"
                        : !strcmp(file, "hca_type")  ? "softverbs"
                                                     : NULL;
        if (!v || !size) {
            errno = ENOENT;
            return -1;
        }
        int n = snprintf(buf, size, "%s", v);
        return n >= (int)size ? (int)size - 1 : n;
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size);
    close(fd);
    if (n <= 0)
        return -1;
    if ((size_t)n < size)
        buf[n] = 0;
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = 0;
    return (int)n;
}

SV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt,
                                        ...)
{
    (void)buf;
    (void)size;
    (void)sysfs_dev;
    (void)fnfmt;
    errno = ENOENT;
    return -1;
}

/* ---- fork, kernel ABI copies ---- */

SV_EXPORT int ibv_fork_init(void)
{
    return 0;
}
SV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}
SV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}
SV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}
SV_EXPORT void ibv_copy_ah_attr_from_kern(void *dst, void *src)
{
    (void)dst, (void)src;
}
SV_EXPORT void ibv_copy_qp_attr_from_kern(void *dst, void *src)
{
    (void)dst, (void)src;
}
SV_EXPORT void ibv_copy_path_rec_from_kern(void *dst, void *src)
{
    (void)dst, (void)src;
}
SV_EXPORT void ibv_copy_path_rec_to_kern(void *dst, void *src)
{
    (void)dst, (void)src;
}

#pragma GCC diagnostic ignored "-Wunused-parameter"

/* ---- not modelled: UD address handles, SRQ, multicast, imports, ECE, dmabuf ---- */

#define SV_NULL(decl)                                                                              \
    SV_EXPORT decl                                                                                 \
    {                                                                                              \
        errno = EOPNOTSUPP;                                                                        \
        return NULL;                                                                               \
    }
#define SV_NOTSUP(decl)                                                                            \
    SV_EXPORT decl                                                                                 \
    {                                                                                              \
        return EOPNOTSUPP;                                                                         \
    }

SV_NULL(struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr))
SV_NULL(struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
                                             struct ibv_grh *grh, uint8_t port))
SV_NULL(struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr))
SV_NULL(struct ibv_context *ibv_import_device(int cmd_fd))
SV_NULL(struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t handle))
SV_NULL(struct ibv_pd *ibv_import_pd(struct ibv_context *ctx, uint32_t handle))
SV_NULL(struct ibv_dm *ibv_import_dm(struct ibv_context *ctx, uint32_t handle))
SV_NULL(struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                         uint64_t iova, int fd, int access))
SV_NULL(struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp))
SV_NOTSUP(int ibv_destroy_ah(struct ibv_ah *ah))
SV_NOTSUP(int ibv_destroy_srq(struct ibv_srq *srq))
SV_NOTSUP(int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *a, int mask))
SV_NOTSUP(int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *a))
SV_NOTSUP(int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))
SV_NOTSUP(int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))
SV_NOTSUP(int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, struct ibv_wc *wc,
                                  struct ibv_grh *grh, struct ibv_ah_attr *ah))
SV_NOTSUP(int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece))
SV_NOTSUP(int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece))
SV_NOTSUP(int ibv_resolve_eth_l2_from_gid(struct ibv_context *ctx, struct ibv_ah_attr *attr,
                                          uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid))
SV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
                           size_t length, int access)
{
    (void)mr, (void)flags, (void)pd, (void)addr, (void)length, (void)access;
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
}
SV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
    (void)mr;
}
SV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
    (void)pd;
}
SV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
    (void)dm;
}

/* ---- IBVERBS_PRIVATE_34: the provider interface (no provider is ever loaded) ---- */

#define SV_PRIV(name)                                                                              \
    SV_EXPORT int name(void);                                                                      \
    SV_EXPORT int name(void)                                                                       \
    {                                                                                              \
        return EOPNOTSUPP;                                                                         \
    }
#define SV_PRIV_NULL(name)                                                                         \
    SV_EXPORT void *name(void);                                                                    \
    SV_EXPORT void *name(void)                                                                     \
    {                                                                                              \
        return NULL;                                                                               \
    }
SV_PRIV(__ioctl_final_num_attrs)
SV_PRIV(execute_ioctl)
SV_PRIV(ibv_cmd_advise_mr)
SV_PRIV(ibv_cmd_alloc_dm)
SV_PRIV(ibv_cmd_alloc_mw)
SV_PRIV(ibv_cmd_alloc_pd)
SV_PRIV(ibv_cmd_attach_mcast)
SV_PRIV(ibv_cmd_close_xrcd)
SV_PRIV(ibv_cmd_create_ah)
SV_PRIV(ibv_cmd_create_counters)
SV_PRIV(ibv_cmd_create_cq)
SV_PRIV(ibv_cmd_create_cq_ex)
SV_PRIV(ibv_cmd_create_flow)
SV_PRIV(ibv_cmd_create_flow_action_esp)
SV_PRIV(ibv_cmd_create_qp)
SV_PRIV(ibv_cmd_create_qp_ex)
SV_PRIV(ibv_cmd_create_qp_ex2)
SV_PRIV(ibv_cmd_create_rwq_ind_table)
SV_PRIV(ibv_cmd_create_srq)
SV_PRIV(ibv_cmd_create_srq_ex)
SV_PRIV(ibv_cmd_create_wq)
SV_PRIV(ibv_cmd_dealloc_mw)
SV_PRIV(ibv_cmd_dealloc_pd)
SV_PRIV(ibv_cmd_dereg_mr)
SV_PRIV(ibv_cmd_destroy_ah)
SV_PRIV(ibv_cmd_destroy_counters)
SV_PRIV(ibv_cmd_destroy_cq)
SV_PRIV(ibv_cmd_destroy_flow)
SV_PRIV(ibv_cmd_destroy_flow_action)
SV_PRIV(ibv_cmd_destroy_qp)
SV_PRIV(ibv_cmd_destroy_rwq_ind_table)
SV_PRIV(ibv_cmd_destroy_srq)
SV_PRIV(ibv_cmd_destroy_wq)
SV_PRIV(ibv_cmd_detach_mcast)
SV_PRIV(ibv_cmd_free_dm)
SV_PRIV(ibv_cmd_get_context)
SV_PRIV(ibv_cmd_modify_cq)
SV_PRIV(ibv_cmd_modify_flow_action_esp)
SV_PRIV(ibv_cmd_modify_qp)
SV_PRIV(ibv_cmd_modify_qp_ex)
SV_PRIV(ibv_cmd_modify_srq)
SV_PRIV(ibv_cmd_modify_wq)
SV_PRIV(ibv_cmd_open_qp)
SV_PRIV(ibv_cmd_open_xrcd)
SV_PRIV(ibv_cmd_poll_cq)
SV_PRIV(ibv_cmd_post_recv)
SV_PRIV(ibv_cmd_post_send)
SV_PRIV(ibv_cmd_post_srq_recv)
SV_PRIV(ibv_cmd_query_context)
SV_PRIV(ibv_cmd_query_device_any)
SV_PRIV(ibv_cmd_query_mr)
SV_PRIV(ibv_cmd_query_port)
SV_PRIV(ibv_cmd_query_qp)
SV_PRIV(ibv_cmd_query_srq)
SV_PRIV(ibv_cmd_read_counters)
SV_PRIV(ibv_cmd_reg_dm_mr)
SV_PRIV(ibv_cmd_reg_dmabuf_mr)
SV_PRIV(ibv_cmd_reg_mr)
SV_PRIV(ibv_cmd_req_notify_cq)
SV_PRIV(ibv_cmd_rereg_mr)
SV_PRIV(ibv_cmd_resize_cq)
SV_PRIV(verbs_init_cq)
SV_PRIV_NULL(_verbs_init_and_alloc_context)
SV_PRIV_NULL(verbs_open_device)
SV_EXPORT void __verbs_log(void *ctx, const char *fmt, ...);
SV_EXPORT void __verbs_log(void *ctx, const char *fmt, ...)
{
    (void)ctx, (void)fmt;
}
SV_EXPORT void verbs_register_driver_34(const void *ops);
SV_EXPORT void verbs_register_driver_34(const void *ops)
{
    (void)ops;
} /* providers' ctor */
SV_EXPORT void verbs_set_ops(void *vctx, const void *ops);
SV_EXPORT void verbs_set_ops(void *vctx, const void *ops)
{
    (void)vctx, (void)ops;
}
SV_EXPORT void verbs_uninit_context(void *vctx);
SV_EXPORT void verbs_uninit_context(void *vctx)
{
    (void)vctx;
}
SV_EXPORT void verbs_allow_disassociate_destroy(void *vctx);
SV_EXPORT void verbs_allow_disassociate_destroy(void *vctx)
{
    (void)vctx;
}

/* Not provided: the IBVERBS_1.0 compat versions of the 1.1 names (ibv_alloc_pd@IBVERBS_1.0
 * etc.), which only binaries linked against libibverbs from before 2006 use. */
