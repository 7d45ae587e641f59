/*
 * btl_base_rdma_v.c: vector put/get (BTL API 3.1). A module that has
 * btl_put_v/btl_get_v (its btl_size covers them and they are set) gets the
 * call; for any other module (one built for 3.0, or one that left them NULL)
 * the base issues one btl_put/btl_get per segment and calls the caller's
 * callback once, when the last of them completes.
 */
#include <stdlib.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/base_runtime.h"

static uint64_t px_btl_base_vector_fallback_calls;

uint64_t px_btl_base_vector_fallbacks(void)
{
    return px_btl_base_vector_fallback_calls;
}

/* One vector operation the base runs as single ones. */
typedef struct px_btl_base_rdma_v {
    size_t pending; /* single operations not complete, +1 while issuing */
    int status;     /* the first error */
    px_btl_endpoint_t *endpoint;
    void *local_address; /* segs[0]'s, for the callback */
    px_btl_registration_handle_t *local_handle;
    px_btl_rdma_completion_fn cbfunc;
    void *cbcontext, *cbdata;
} px_btl_base_rdma_v_t;

static void px_btl_base_rdma_v_release(px_btl_module_t *btl, px_btl_base_rdma_v_t *v)
{
    if (--v->pending > 0)
        return;
    if (v->cbfunc)
        v->cbfunc(btl, v->endpoint, v->local_address, v->local_handle, v->cbcontext, v->cbdata,
                  v->status);
    free(v);
}

static void px_btl_base_rdma_v_one_done(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                        void *local_address,
                                        px_btl_registration_handle_t *local_handle, void *context,
                                        void *cbdata, int status)
{
    (void)endpoint;
    (void)local_address;
    (void)local_handle;
    (void)context;
    px_btl_base_rdma_v_t *v = cbdata;
    if (status != PX_SUCCESS && PX_SUCCESS == v->status)
        v->status = status;
    px_btl_base_rdma_v_release(btl, v);
}

static const char *px_btl_base_module_name(const px_btl_module_t *m)
{
    return (m->btl_component && m->btl_component->base.component_name)
               ? m->btl_component->base.component_name
               : "?";
}

static int px_btl_base_rdma_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                              const px_btl_rdma_segment_t *segs, size_t count,
                              px_btl_registration_handle_t *local_handle,
                              px_btl_registration_handle_t *remote_handle, int flags, int order,
                              px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata,
                              px_btl_rdma_dir_t dir)
{
    if (NULL == btl || (count > 0 && NULL == segs) || 0 == count)
        return PX_ERR_BAD_PARAM;
    if (PX_BTL_RDMA_PUT == dir && PX_BTL_MODULE_HAS(btl, btl_put_v))
        return btl->btl_put_v(btl, endpoint, segs, count, local_handle, remote_handle, flags, order,
                              cbfunc, cbcontext, cbdata);
    if (PX_BTL_RDMA_GET == dir && PX_BTL_MODULE_HAS(btl, btl_get_v))
        return btl->btl_get_v(btl, endpoint, segs, count, local_handle, remote_handle, flags, order,
                              cbfunc, cbcontext, cbdata);
    int (*single)(px_btl_module_t *, px_btl_endpoint_t *, void *, uint64_t,
                  px_btl_registration_handle_t *, px_btl_registration_handle_t *, size_t, int, int,
                  px_btl_rdma_completion_fn, void *, void *) =
        PX_BTL_RDMA_PUT == dir ? btl->btl_put : btl->btl_get;
    if (NULL == single)
        return PX_ERR_NOT_SUPPORTED;
    px_btl_base_vector_fallback_calls++;
    PX_OUTPUT_VERBOSE(10, px_btl_base_framework.output,
                      "btl %s: module (btl API %d.%d, btl_size %zu) has no %s: the base issues "
                      "%zu %s",
                      px_btl_base_module_name(btl),
                      btl->btl_component ? btl->btl_component->base.framework_version.major : -1,
                      btl->btl_component ? btl->btl_component->base.framework_version.minor : -1,
                      btl->btl_size, PX_BTL_RDMA_PUT == dir ? "btl_put_v" : "btl_get_v", count,
                      PX_BTL_RDMA_PUT == dir ? "btl_put" : "btl_get");
    px_btl_base_rdma_v_t *v = malloc(sizeof(*v));
    if (NULL == v)
        return PX_ERR_OUT_OF_RESOURCE;
    *v = (px_btl_base_rdma_v_t){.pending = 1, /* held while issuing */
                                .status = PX_SUCCESS,
                                .endpoint = endpoint,
                                .local_address = segs[0].local_address,
                                .local_handle = local_handle,
                                .cbfunc = cbfunc,
                                .cbcontext = cbcontext,
                                .cbdata = cbdata};
    for (size_t i = 0; i < count; ++i) {
        v->pending++;
        int rc =
            single(btl, endpoint, segs[i].local_address, segs[i].remote_address, local_handle,
                   remote_handle, segs[i].size, flags, order, px_btl_base_rdma_v_one_done, NULL, v);
        if (rc != PX_SUCCESS) {
            v->pending--; /* that one will not complete */
            if (0 == i) { /* nothing started: the caller's error, no callback */
                free(v);
                return rc;
            }
            v->status = rc; /* the started ones finish, then cbfunc reports it */
            break;
        }
    }
    px_btl_base_rdma_v_release(btl, v);
    return PX_SUCCESS;
}

int px_btl_base_put_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                      const px_btl_rdma_segment_t *segs, size_t count,
                      px_btl_registration_handle_t *local_handle,
                      px_btl_registration_handle_t *remote_handle, int flags, int order,
                      px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    return px_btl_base_rdma_v(btl, endpoint, segs, count, local_handle, remote_handle, flags, order,
                              cbfunc, cbcontext, cbdata, PX_BTL_RDMA_PUT);
}

int px_btl_base_get_v(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                      const px_btl_rdma_segment_t *segs, size_t count,
                      px_btl_registration_handle_t *local_handle,
                      px_btl_registration_handle_t *remote_handle, int flags, int order,
                      px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    return px_btl_base_rdma_v(btl, endpoint, segs, count, local_handle, remote_handle, flags, order,
                              cbfunc, cbcontext, cbdata, PX_BTL_RDMA_GET);
}
