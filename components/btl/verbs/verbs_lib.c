/*
 * verbs_lib.c: libibverbs, loaded when btl/verbs first looks for a device.
 *
 * The plugin is not linked with libibverbs (nor, through it, libnl): a
 * process whose job is all on one host (btl_verbs_skip_single_host), or that
 * excludes verbs, never maps them; loading them cost every px_init about
 * 3 ms of CPU. Every libibverbs function the component calls, directly or
 * through an inline function of <infiniband/verbs.h> or hwloc's
 * <hwloc/openfabrics-verbs.h>, is defined here under its own name (hidden:
 * seen by this plugin only) and forwards to the library's, found with dlsym
 * by px_btl_verbs_lib_load. The component calls px_btl_verbs_lib_load before
 * its first libibverbs call (px_btl_verbs_discover); every other call needs a
 * device, so it comes after a successful load.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include "components/btl/verbs/verbs.h"

#define PX_VERBS_FUNCTIONS(X)                                                                      \
    X(ibv_get_device_list)                                                                         \
    X(ibv_free_device_list)                                                                        \
    X(ibv_get_device_name)                                                                         \
    X(ibv_open_device)                                                                             \
    X(ibv_close_device)                                                                            \
    X(ibv_query_device)                                                                            \
    X(ibv_query_port)                                                                              \
    X(ibv_query_gid)                                                                               \
    X(ibv_alloc_pd)                                                                                \
    X(ibv_dealloc_pd)                                                                              \
    X(ibv_reg_mr)                                                                                  \
    X(ibv_dereg_mr)                                                                                \
    X(ibv_create_comp_channel)                                                                     \
    X(ibv_destroy_comp_channel)                                                                    \
    X(ibv_create_cq)                                                                               \
    X(ibv_resize_cq)                                                                               \
    X(ibv_destroy_cq)                                                                              \
    X(ibv_get_cq_event)                                                                            \
    X(ibv_ack_cq_events)                                                                           \
    X(ibv_create_qp)                                                                               \
    X(ibv_modify_qp)                                                                               \
    X(ibv_destroy_qp)                                                                              \
    X(ibv_port_state_str)                                                                          \
    X(ibv_wc_status_str)

/* The library's functions (the parentheses keep verbs.h's function-like
 * macros ibv_reg_mr and ibv_query_port from expanding). */
static struct {
#define PX_VERBS_MEMBER(f) __typeof__(&(f)) f;
    PX_VERBS_FUNCTIONS(PX_VERBS_MEMBER)
#undef PX_VERBS_MEMBER
} lib;

bool px_btl_verbs_lib_load(const char **why)
{
    static int state; /* 0: not tried, 1: loaded, -1: failed */
    static char reason[300];
    if (0 == state) {
        state = -1;
        /* Never closed, and kept past the plugin's unload: libibverbs and its
         * providers start threads and keep state for the process's life. */
        void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (NULL == h) {
            snprintf(reason, sizeof(reason), "cannot load libibverbs: %s", dlerror());
        } else {
            const char *missing = NULL;
#define PX_VERBS_RESOLVE(f)                                                                        \
    *(void **)&lib.f = dlsym(h, #f);                                                               \
    if (NULL == lib.f && NULL == missing)                                                          \
        missing = #f;
            PX_VERBS_FUNCTIONS(PX_VERBS_RESOLVE)
#undef PX_VERBS_RESOLVE
            if (missing)
                snprintf(reason, sizeof(reason), "the libibverbs.so.1 found lacks %s", missing);
            else
                state = 1;
        }
    }
    if (why)
        *why = reason;
    return 1 == state;
}

#define PX_VERBS_STUB __attribute__((visibility("hidden")))

PX_VERBS_STUB struct ibv_device **(ibv_get_device_list)(int *num_devices)
{
    if (!px_btl_verbs_lib_load(NULL)) {
        if (num_devices)
            *num_devices = 0;
        errno = ENOSYS;
        return NULL;
    }
    return lib.ibv_get_device_list(num_devices);
}
PX_VERBS_STUB void(ibv_free_device_list)(struct ibv_device **list)
{
    lib.ibv_free_device_list(list);
}
PX_VERBS_STUB const char *(ibv_get_device_name)(struct ibv_device *device)
{
    return lib.ibv_get_device_name(device);
}
PX_VERBS_STUB struct ibv_context *(ibv_open_device)(struct ibv_device *device)
{
    return lib.ibv_open_device(device);
}
PX_VERBS_STUB int(ibv_close_device)(struct ibv_context *context)
{
    return lib.ibv_close_device(context);
}
PX_VERBS_STUB int(ibv_query_device)(struct ibv_context *context, struct ibv_device_attr *attr)
{
    return lib.ibv_query_device(context, attr);
}
PX_VERBS_STUB int(ibv_query_port)(struct ibv_context *context, uint8_t port_num,
                                  struct _compat_ibv_port_attr *port_attr)
{
    return (lib.ibv_query_port)(context, port_num, port_attr);
}
PX_VERBS_STUB int(ibv_query_gid)(struct ibv_context *context, uint8_t port_num, int index,
                                 union ibv_gid *gid)
{
    return lib.ibv_query_gid(context, port_num, index, gid);
}
PX_VERBS_STUB struct ibv_pd *(ibv_alloc_pd)(struct ibv_context *context)
{
    return lib.ibv_alloc_pd(context);
}
PX_VERBS_STUB int(ibv_dealloc_pd)(struct ibv_pd *pd)
{
    return lib.ibv_dealloc_pd(pd);
}
PX_VERBS_STUB struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return (lib.ibv_reg_mr)(pd, addr, length, access);
}
PX_VERBS_STUB int(ibv_dereg_mr)(struct ibv_mr *mr)
{
    return lib.ibv_dereg_mr(mr);
}
PX_VERBS_STUB struct ibv_comp_channel *(ibv_create_comp_channel)(struct ibv_context *context)
{
    return lib.ibv_create_comp_channel(context);
}
PX_VERBS_STUB int(ibv_destroy_comp_channel)(struct ibv_comp_channel *channel)
{
    return lib.ibv_destroy_comp_channel(channel);
}
PX_VERBS_STUB struct ibv_cq *(ibv_create_cq)(struct ibv_context *context, int cqe, void *cq_context,
                                             struct ibv_comp_channel *channel, int comp_vector)
{
    return lib.ibv_create_cq(context, cqe, cq_context, channel, comp_vector);
}
PX_VERBS_STUB int(ibv_resize_cq)(struct ibv_cq *cq, int cqe)
{
    return lib.ibv_resize_cq(cq, cqe);
}
PX_VERBS_STUB int(ibv_destroy_cq)(struct ibv_cq *cq)
{
    return lib.ibv_destroy_cq(cq);
}
PX_VERBS_STUB int(ibv_get_cq_event)(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                                    void **cq_context)
{
    return lib.ibv_get_cq_event(channel, cq, cq_context);
}
PX_VERBS_STUB void(ibv_ack_cq_events)(struct ibv_cq *cq, unsigned int nevents)
{
    lib.ibv_ack_cq_events(cq, nevents);
}
PX_VERBS_STUB struct ibv_qp *(ibv_create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    return lib.ibv_create_qp(pd, attr);
}
PX_VERBS_STUB int(ibv_modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    return lib.ibv_modify_qp(qp, attr, attr_mask);
}
PX_VERBS_STUB int(ibv_destroy_qp)(struct ibv_qp *qp)
{
    return lib.ibv_destroy_qp(qp);
}
PX_VERBS_STUB const char *(ibv_port_state_str)(enum ibv_port_state port_state)
{
    return lib.ibv_port_state_str ? lib.ibv_port_state_str(port_state) : "?";
}
PX_VERBS_STUB const char *(ibv_wc_status_str)(enum ibv_wc_status status)
{
    return lib.ibv_wc_status_str ? lib.ibv_wc_status_str(status) : "?";
}
