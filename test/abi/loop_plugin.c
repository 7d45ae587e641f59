/*
 * loop_plugin.c: a loopback BTL plugin for the ABI tests (test/abi). It
 * reaches only the calling process, like btl/self: a send runs the tag's
 * active-message callback at once, put/get are memcpy. Fragments come from a
 * free list of a class of its own, so the plugin's code lays out objects and
 * runs the inline free-list paths (what the build fingerprint protects).
 *
 * Built by test/abi/Makefile.inc, each time with other -D settings:
 *   LOOP_NAME        file-name component (symbol px_btl_<LOOP_NAME>_component)
 *   LOOP_FLIP_DEBUG  compile with the other PX_ENABLE_DEBUG than the library
 *   LOOP_NEWER_MINOR claim one BTL API minor more than the headers have
 *   LOOP_FROZEN      the include path has test/abi/btl-3.0 first: assert that
 *                    the frozen 3.0 headers are the ones compiled against
 *   LOOP_FROZEN_MINOR with LOOP_FROZEN: the frozen minor instead of 0
 *                    (abi33: test/abi/btl-3.3, before thread support)
 * It includes nothing of frameworks/btl/base (a plugin of 3.0 knows only the
 * 3.0 btl.h), and counts its own put/get calls in px_btl_<LOOP_NAME>_rdma_calls.
 */
#include "core/px_config.h"
#ifdef LOOP_FLIP_DEBUG /* before any header that lays out objects */
#if PX_ENABLE_DEBUG
#undef PX_ENABLE_DEBUG
#define PX_ENABLE_DEBUG 0
#else
#undef PX_ENABLE_DEBUG
#define PX_ENABLE_DEBUG 1
#endif
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/class/free_list.h"
#include "core/util/error.h"
#include "frameworks/btl/btl.h"

#ifdef LOOP_FROZEN
#ifndef LOOP_FROZEN_MINOR
#define LOOP_FROZEN_MINOR 0
#endif
_Static_assert(PX_BTL_API_MAJOR == 3 && PX_BTL_API_MINOR == LOOP_FROZEN_MINOR,
               "the frozen headers (test/abi/btl-3.<LOOP_FROZEN_MINOR>) must come first on the "
               "include path");
#endif
#ifdef LOOP_NEWER_MINOR
static const int loop_api_minor = PX_BTL_API_MINOR + 1;
#undef PX_BTL_API_MINOR
#define PX_BTL_API_MINOR loop_api_minor
#endif

#define STR2(x)         #x
#define STR(x)          STR2(x)
#define CAT3(a, b, c)   a##b##c
#define SYM(a, b, c)    CAT3(a, b, c)
#define LOOP_COMPONENT  SYM(px_btl_, LOOP_NAME, _component)
#define LOOP_RDMA_CALLS SYM(px_btl_, LOOP_NAME, _rdma_calls)

extern const px_btl_component_t LOOP_COMPONENT;
/* How many times btl_put/btl_get ran (the test reads it with dlsym). */
__attribute__((visibility("default"))) int LOOP_RDMA_CALLS;

#define LOOP_MAX_SEND 65536

typedef struct {
    px_btl_descriptor_t base;
    px_btl_segment_t segment;
} loop_frag_t;
static void loop_frag_construct(loop_frag_t *f)
{
    f->base.des_segments = &f->segment;
    f->base.des_segment_count = 1;
}
PX_CLASS_INSTANCE(loop_frag_t, px_btl_descriptor_t, loop_frag_construct, NULL);

static px_free_list_t loop_frags;
static bool loop_frags_made;
static int loop_rank = -1;
static px_btl_module_t loop_module;

static int loop_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                          px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                          const char **reasons)
{
    for (size_t i = 0; i < nprocs; ++i) {
        if (procs[i]->locality & PX_PROC_LOCAL_SELF) {
            int rc = px_bitmap_set_bit(reachable, (int)i);
            if (rc != PX_SUCCESS)
                return rc;
            endpoints[i] = (px_btl_endpoint_t *)btl; /* a non-NULL token */
            loop_rank = procs[i]->rank;
        } else if (reasons) {
            reasons[i] = "the ABI test's loopback plugin reaches only the calling process";
        }
    }
    return PX_SUCCESS;
}

static int loop_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                          px_btl_endpoint_t **endpoints)
{
    (void)btl;
    (void)nprocs;
    (void)procs;
    (void)endpoints;
    return PX_SUCCESS;
}

static int loop_finalize(px_btl_module_t *btl)
{
    (void)btl;
    if (loop_frags_made)
        PX_OBJ_DESTRUCT(&loop_frags);
    loop_frags_made = false;
    return PX_SUCCESS;
}

static px_btl_descriptor_t *loop_alloc(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                       uint8_t order, size_t size, uint32_t flags)
{
    (void)btl;
    (void)endpoint;
    if (size > LOOP_MAX_SEND)
        return NULL;
    loop_frag_t *f = (loop_frag_t *)px_free_list_get(&loop_frags);
    if (NULL == f)
        return NULL;
    f->segment.seg_addr = f->base.super.payload;
    f->segment.seg_len = size;
    f->base.des_segments = &f->segment;
    f->base.des_segment_count = 1;
    f->base.des_flags = flags;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.order = order;
    return &f->base;
}

static int loop_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    (void)btl;
    px_free_list_return(&loop_frags, &des->super);
    return PX_SUCCESS;
}

static px_btl_descriptor_t *loop_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                             px_btl_convertor_t *conv, uint8_t order,
                                             size_t reserve, size_t *size, uint32_t flags)
{
    size_t data = *size;
    if (reserve > LOOP_MAX_SEND)
        return NULL;
    if (reserve + data > LOOP_MAX_SEND)
        data = LOOP_MAX_SEND - reserve;
    px_btl_descriptor_t *des = loop_alloc(btl, endpoint, order, reserve + data, flags);
    if (NULL == des)
        return NULL;
    size_t packed =
        px_btl_convertor_pack(conv, (char *)des->des_segments[0].seg_addr + reserve, data);
    des->des_segments[0].seg_len = reserve + packed;
    *size = packed;
    return des;
}

static void loop_deliver(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                         const px_btl_segment_t *segs, size_t count, px_btl_tag_t tag)
{
    const px_btl_active_message_callback_t *reg = &px_btl_base_active_message_trigger[tag];
    px_btl_receive_descriptor_t recv = {.endpoint = endpoint,
                                        .src_rank = loop_rank,
                                        .des_segments = segs,
                                        .des_segment_count = count,
                                        .tag = tag,
                                        .cbdata = reg->cbdata};
    reg->cbfunc(btl, &recv);
}

static int loop_send(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, px_btl_descriptor_t *des,
                     px_btl_tag_t tag)
{
    loop_deliver(btl, endpoint, des->des_segments, des->des_segment_count, tag);
    const uint32_t flags = des->des_flags;
    if ((flags & PX_BTL_DES_SEND_ALWAYS_CALLBACK) && des->des_cbfunc)
        des->des_cbfunc(btl, endpoint, des, PX_SUCCESS);
    if (flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
        loop_free(btl, des);
    return 1;
}

static int loop_sendi(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *header,
                      size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                      uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor)
{
    (void)order;
    (void)flags;
    px_btl_segment_t segs[2] = {{(void *)header, header_size}, {(void *)payload, payload_size}};
    loop_deliver(btl, endpoint, segs, payload_size ? 2 : 1, tag);
    if (descriptor)
        *descriptor = NULL;
    return PX_SUCCESS;
}

static int loop_rdma(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, void *local_address,
                     uint64_t remote_address, px_btl_registration_handle_t *local_handle,
                     size_t size, px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata,
                     bool put)
{
    void *remote = (void *)(uintptr_t)remote_address;
    if (put)
        memcpy(remote, local_address, size);
    else
        memcpy(local_address, remote, size);
    LOOP_RDMA_CALLS++;
    if (cbfunc)
        cbfunc(btl, endpoint, local_address, local_handle, cbcontext, cbdata, PX_SUCCESS);
    return PX_SUCCESS;
}

static int loop_put(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, void *local_address,
                    uint64_t remote_address, px_btl_registration_handle_t *local_handle,
                    px_btl_registration_handle_t *remote_handle, size_t size, int flags, int order,
                    px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    (void)remote_handle;
    (void)flags;
    (void)order;
    return loop_rdma(btl, endpoint, local_address, remote_address, local_handle, size, cbfunc,
                     cbcontext, cbdata, true);
}

static int loop_get(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, void *local_address,
                    uint64_t remote_address, px_btl_registration_handle_t *local_handle,
                    px_btl_registration_handle_t *remote_handle, size_t size, int flags, int order,
                    px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    (void)remote_handle;
    (void)flags;
    (void)order;
    return loop_rdma(btl, endpoint, local_address, remote_address, local_handle, size, cbfunc,
                     cbcontext, cbdata, false);
}

static int loop_flush(px_btl_module_t *btl, px_btl_endpoint_t *endpoint)
{
    (void)btl;
    (void)endpoint;
    return PX_SUCCESS; /* everything completes before it returns */
}

static int loop_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc)
{
    (void)btl;
    (void)cbfunc; /* it never fails */
    return PX_SUCCESS;
}

static px_btl_module_t **loop_init(int *num_modules, bool progress_threads)
{
    (void)progress_threads;
    *num_modules = 0;
    px_btl_module_t **modules = malloc(sizeof(*modules));
    if (NULL == modules)
        return NULL;
    PX_OBJ_CONSTRUCT(&loop_frags, px_free_list_t);
    loop_frags_made = true;
    px_free_list_params_t params = {
        .item_class = PX_CLASS(loop_frag_t), .payload_size = LOOP_MAX_SEND, .num_initial = 4};
    if (px_free_list_init(&loop_frags, &params) != PX_SUCCESS) {
        loop_finalize(NULL);
        free(modules);
        return NULL;
    }
    loop_module = (px_btl_module_t){
        .btl_size = PX_BTL_MODULE_SIZE, /* a 3.0 module when built against the frozen header */
        .btl_component = &LOOP_COMPONENT,
        .btl_exclusivity = PX_BTL_EXCLUSIVITY_LOW,
        .btl_latency = 100,
        .btl_bandwidth = 1000,
        .btl_eager_limit = 4096,
        .btl_max_send_size = LOOP_MAX_SEND,
        .btl_put_limit = SIZE_MAX,
        .btl_get_limit = SIZE_MAX,
        .btl_flags = PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT | PX_BTL_FLAGS_GET,
        .btl_add_procs = loop_add_procs,
        .btl_del_procs = loop_del_procs,
        .btl_finalize = loop_finalize,
        .btl_alloc = loop_alloc,
        .btl_free = loop_free,
        .btl_prepare_src = loop_prepare_src,
        .btl_send = loop_send,
        .btl_sendi = loop_sendi,
        .btl_put = loop_put,
        .btl_get = loop_get,
        .btl_flush = loop_flush,
        .btl_register_error = loop_register_error,
    };
    modules[0] = &loop_module;
    *num_modules = 1;
    return modules;
}

const px_btl_component_t LOOP_COMPONENT = {
    .base = PX_BTL_COMPONENT_HEADER(STR(LOOP_NAME), 1, 0, 0, NULL, NULL, NULL),
    .btl_init = loop_init,
};
