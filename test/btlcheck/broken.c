/*
 * broken.c: a loopback BTL plugin (it reaches only its own process) with a
 * defect chosen by PX_BROKEN_BTL, for test/btlcheck/t_btl_check.sh: px_btl_check
 * must report the defect as "not ok" on the right check.
 *   corrupt     the byte at offset 1000 of every message longer than 1000
 *               bytes arrives flipped
 *   nocallback  btl_send never runs the completion callback
 */
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "frameworks/btl/base/base.h"

static int px_btl_broken_mode; /* 1 corrupt, 2 nocallback */

typedef struct px_btl_broken_des {
    px_btl_descriptor_t super;
    px_btl_segment_t seg;
    unsigned char data[];
} px_btl_broken_des_t;

static px_btl_descriptor_t *broken_new(size_t size, uint32_t flags)
{
    px_btl_broken_des_t *d = calloc(1, sizeof *d + size + 1);
    if (!d)
        return NULL;
    d->seg.seg_addr = d->data;
    d->seg.seg_len = size;
    d->super.des_segments = &d->seg;
    d->super.des_segment_count = 1;
    d->super.des_flags = flags;
    return &d->super;
}

static px_btl_descriptor_t *broken_alloc(px_btl_module_t *btl, px_btl_endpoint_t *ep, uint8_t order,
                                         size_t size, uint32_t flags)
{
    (void)ep, (void)order;
    return size > btl->btl_max_send_size ? NULL : broken_new(size, flags);
}

static int broken_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    (void)btl;
    free(des);
    return PX_SUCCESS;
}

static px_btl_descriptor_t *broken_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *ep,
                                               px_btl_convertor_t *conv, uint8_t order,
                                               size_t reserve, size_t *size, uint32_t flags)
{
    (void)ep, (void)order;
    if (*size > btl->btl_max_send_size)
        *size = btl->btl_max_send_size;
    px_btl_descriptor_t *d = broken_new(reserve + *size, flags);
    if (d)
        *size = px_btl_convertor_pack(conv, (char *)d->des_segments[0].seg_addr + reserve, *size);
    if (d)
        d->des_segments[0].seg_len = reserve + *size;
    return d;
}

static int broken_send(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                       px_btl_tag_t tag)
{
    if (px_btl_broken_mode == 1 && des->des_segments[0].seg_len > 1000)
        ((unsigned char *)des->des_segments[0].seg_addr)[1000] ^= 0x5a;
    px_btl_active_message_callback_t *cb = &px_btl_base_active_message_trigger[tag];
    px_btl_receive_descriptor_t r = {.endpoint = ep,
                                     .src_rank = (int)(intptr_t)ep - 1,
                                     .des_segments = des->des_segments,
                                     .des_segment_count = des->des_segment_count,
                                     .tag = tag,
                                     .cbdata = cb->cbdata};
    if (cb->cbfunc)
        cb->cbfunc(btl, &r);
    if (px_btl_broken_mode == 2) {
        /* The defect: report "started" and never complete it. */
        return 0;
    }
    /* Without BTL ownership the callback may free the descriptor. */
    const uint32_t flags = des->des_flags;
    if (flags & PX_BTL_DES_SEND_ALWAYS_CALLBACK && des->des_cbfunc)
        des->des_cbfunc(btl, ep, des, PX_SUCCESS);
    if (flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
        free(des);
    return 1;
}

static int broken_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                            px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                            const char **reasons)
{
    (void)btl;
    for (size_t i = 0; i < nprocs; i++) {
        if (procs[i]->locality & PX_PROC_LOCAL_SELF) {
            /* The endpoint is the rank + 1 (never NULL). */
            endpoints[i] = (px_btl_endpoint_t *)(intptr_t)(procs[i]->rank + 1);
            px_bitmap_set_bit(reachable, (int)i);
        } else
            reasons[i] = "the broken test component reaches only its own process";
    }
    return PX_SUCCESS;
}

static int broken_del_procs(px_btl_module_t *btl, size_t n, px_proc_t **p, px_btl_endpoint_t **e)
{
    (void)btl, (void)n, (void)p, (void)e;
    return PX_SUCCESS;
}

static int broken_flush(px_btl_module_t *btl, px_btl_endpoint_t *ep)
{
    (void)btl, (void)ep;
    return PX_SUCCESS;
}

static int broken_register_error(px_btl_module_t *btl, px_btl_error_fn fn)
{
    (void)btl, (void)fn;
    return PX_SUCCESS;
}

static int broken_finalize(px_btl_module_t *btl)
{
    (void)btl;
    return PX_SUCCESS;
}

extern const px_btl_component_t px_btl_broken_component;
static px_btl_module_t px_btl_broken_module = {
    .btl_size = PX_BTL_MODULE_SIZE,
    .btl_component = &px_btl_broken_component,
    .btl_exclusivity = PX_BTL_EXCLUSIVITY_LOW,
    .btl_latency = 1000,
    .btl_bandwidth = 1000,
    .btl_eager_limit = 4096,
    .btl_max_send_size = 16384,
    .btl_flags = PX_BTL_FLAGS_SEND,
    .btl_add_procs = broken_add_procs,
    .btl_del_procs = broken_del_procs,
    .btl_finalize = broken_finalize,
    .btl_alloc = broken_alloc,
    .btl_free = broken_free,
    .btl_prepare_src = broken_prepare_src,
    .btl_send = broken_send,
    .btl_flush = broken_flush,
    .btl_register_error = broken_register_error,
};

static px_btl_module_t **broken_init(int *num_modules, bool progress_threads)
{
    (void)progress_threads;
    const char *m = getenv("PX_BROKEN_BTL");
    px_btl_broken_mode = !m ? 0 : !strcmp(m, "corrupt") ? 1 : !strcmp(m, "nocallback") ? 2 : 0;
    px_btl_module_t **mods = malloc(sizeof *mods);
    if (!mods) {
        *num_modules = 0;
        return NULL;
    }
    mods[0] = &px_btl_broken_module;
    *num_modules = 1;
    return mods;
}

const px_btl_component_t px_btl_broken_component = {
    .base = PX_BTL_COMPONENT_HEADER("broken", 1, 0, 0, NULL, NULL, NULL),
    .btl_init = broken_init,
};
