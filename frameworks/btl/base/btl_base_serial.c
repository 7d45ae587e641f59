/*
 * btl_base_serial.c: thread support of BTL components (BTL API 3.4) and the
 * per-module lock the base puts around a module that is not thread-safe
 * when the process runs at PX_THREAD_MULTIPLE (btl.h, docs/threads.md).
 *
 * px_btl_base_serialize keeps a copy of the module's methods and points each
 * method it has at a wrapper here that takes the module's lock (recursive:
 * a callback the module runs may call back into it), counts the
 * acquisition, calls the component's own method and lets go. btl_progress
 * tries the lock instead: a thread that finds the module busy polls nothing
 * this time (another thread is inside it) rather than wait. Nothing is
 * wrapped until the runtime asks, so at SINGLE, FUNNELED and SERIALIZED the
 * methods are the component's own and no lock exists on any path;
 * px_btl_base_finalize puts the component's methods back before it
 * finalizes the modules.
 *
 * The wrappers find a module's lock by a linear look-up among the serialized
 * modules (a handful). The table changes only in px_btl_base_serialize and
 * px_btl_base_unserialize, which run with no other thread in Plexus
 * (px_init_thread, px_finalize).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/bias_lock.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/base_runtime.h"

typedef struct px_btl_base_serial {
    px_btl_module_t *module;
    px_btl_module_t orig; /* the component's methods (as far as btl_size covers) */
    px_bias_lock_t lock;  /* recursive, biased to a thread that calls alone */
    uint64_t locks;       /* acquisitions, counted under the lock */
} px_btl_base_serial_t;

static px_btl_base_serial_t **serial;
static int nserial;

uint32_t px_btl_base_thread_support(const px_btl_component_t *comp)
{
    if (NULL == comp || comp->base.framework_version.major != PX_BTL_API_MAJOR ||
        comp->base.framework_version.minor < 4)
        return PX_BTL_THREADS_SERIALIZED; /* built before 3.4: never promised it */
    return PX_BTL_THREADS_MULTIPLE == comp->btl_thread_support ? PX_BTL_THREADS_MULTIPLE
                                                               : PX_BTL_THREADS_SERIALIZED;
}

const char *px_btl_base_thread_support_name(const px_btl_component_t *comp)
{
    return PX_BTL_THREADS_MULTIPLE == px_btl_base_thread_support(comp) ? "multiple" : "serialized";
}

static px_btl_base_serial_t *serial_find(const px_btl_module_t *btl)
{
    for (int i = 0; i < nserial; ++i)
        if (serial[i]->module == btl)
            return serial[i];
    return NULL;
}

/* A wrapper runs only on a module px_btl_base_serialize wrapped, which stays
 * in the table until its methods are put back: not finding it is a bug of
 * the base (or a component that copied a wrapped module), never input. */
static px_btl_base_serial_t *serial_enter(const px_btl_module_t *btl)
{
    px_btl_base_serial_t *s = serial_find(btl);
    if (PX_UNLIKELY(NULL == s)) {
        px_show_error("btl base: a serialized method was called on module %p (btl/%s), which the "
                      "base does not serialize: its methods were copied from a serialized module",
                      (const void *)btl,
                      btl && btl->btl_component ? btl->btl_component->base.component_name : "?");
        abort();
    }
    px_bias_lock(&s->lock);
    s->locks++;
    return s;
}

static void serial_leave(px_btl_base_serial_t *s)
{
    px_bias_unlock(&s->lock);
}

/* The wrappers: one per method, same signature, first argument the module. */
#define SERIAL_WRAP(ret, f, params, args)                                                          \
    static ret serial_##f params                                                                   \
    {                                                                                              \
        px_btl_base_serial_t *s = serial_enter(btl);                                               \
        ret r = s->orig.f args;                                                                    \
        serial_leave(s);                                                                           \
        return r;                                                                                  \
    }

SERIAL_WRAP(int, btl_add_procs,
            (px_btl_module_t * btl, size_t nprocs, px_proc_t **procs, px_btl_endpoint_t **endpoints,
             px_bitmap_t *reachable, const char **reasons),
            (btl, nprocs, procs, endpoints, reachable, reasons))
SERIAL_WRAP(int, btl_del_procs,
            (px_btl_module_t * btl, size_t nprocs, px_proc_t **procs,
             px_btl_endpoint_t **endpoints),
            (btl, nprocs, procs, endpoints))
SERIAL_WRAP(px_btl_descriptor_t *, btl_alloc,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, uint8_t order, size_t size,
             uint32_t flags),
            (btl, endpoint, order, size, flags))
SERIAL_WRAP(int, btl_free, (px_btl_module_t * btl, px_btl_descriptor_t *des), (btl, des))
SERIAL_WRAP(px_btl_descriptor_t *, btl_prepare_src,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, px_btl_convertor_t *conv,
             uint8_t order, size_t reserve, size_t *size, uint32_t flags),
            (btl, endpoint, conv, order, reserve, size, flags))
SERIAL_WRAP(int, btl_send,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, px_btl_descriptor_t *des,
             px_btl_tag_t tag),
            (btl, endpoint, des, tag))
SERIAL_WRAP(int, btl_sendi,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, const void *header,
             size_t header_size, const void *payload, size_t payload_size, uint8_t order,
             uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor),
            (btl, endpoint, header, header_size, payload, payload_size, order, flags, tag,
             descriptor))
SERIAL_WRAP(int, btl_put,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, void *local_address,
             uint64_t remote_address, px_btl_registration_handle_t *local_handle,
             px_btl_registration_handle_t *remote_handle, size_t size, int flags, int order,
             px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata),
            (btl, endpoint, local_address, remote_address, local_handle, remote_handle, size, flags,
             order, cbfunc, cbcontext, cbdata))
SERIAL_WRAP(int, btl_get,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, void *local_address,
             uint64_t remote_address, px_btl_registration_handle_t *local_handle,
             px_btl_registration_handle_t *remote_handle, size_t size, int flags, int order,
             px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata),
            (btl, endpoint, local_address, remote_address, local_handle, remote_handle, size, flags,
             order, cbfunc, cbcontext, cbdata))
SERIAL_WRAP(px_btl_registration_handle_t *, btl_register_mem,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, void *base, size_t size,
             uint32_t flags),
            (btl, endpoint, base, size, flags))
SERIAL_WRAP(int, btl_deregister_mem, (px_btl_module_t * btl, px_btl_registration_handle_t *handle),
            (btl, handle))
SERIAL_WRAP(int, btl_flush, (px_btl_module_t * btl, px_btl_endpoint_t *endpoint), (btl, endpoint))
SERIAL_WRAP(int, btl_register_error, (px_btl_module_t * btl, px_btl_error_fn cbfunc), (btl, cbfunc))
SERIAL_WRAP(int, btl_put_v,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, const px_btl_rdma_segment_t *segs,
             size_t count, px_btl_registration_handle_t *local_handle,
             px_btl_registration_handle_t *remote_handle, int flags, int order,
             px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata),
            (btl, endpoint, segs, count, local_handle, remote_handle, flags, order, cbfunc,
             cbcontext, cbdata))
SERIAL_WRAP(int, btl_get_v,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, const px_btl_rdma_segment_t *segs,
             size_t count, px_btl_registration_handle_t *local_handle,
             px_btl_registration_handle_t *remote_handle, int flags, int order,
             px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata),
            (btl, endpoint, segs, count, local_handle, remote_handle, flags, order, cbfunc,
             cbcontext, cbdata))
SERIAL_WRAP(int, btl_mem_alloc, (px_btl_module_t * btl, size_t size, px_btl_mem_t *mem),
            (btl, size, mem))
SERIAL_WRAP(int, btl_mem_free, (px_btl_module_t * btl, px_btl_mem_t *mem), (btl, mem))
SERIAL_WRAP(int, btl_mem_map,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, const void *desc, size_t desc_len,
             px_btl_mem_t *map),
            (btl, endpoint, desc, desc_len, map))
SERIAL_WRAP(int, btl_mem_unmap, (px_btl_module_t * btl, px_btl_mem_t *map), (btl, map))
SERIAL_WRAP(int, btl_dyn_offer,
            (px_btl_module_t * btl, px_btl_endpoint_t **endpoint, void *part, size_t *part_len,
             char *reason),
            (btl, endpoint, part, part_len, reason))
SERIAL_WRAP(int, btl_dyn_accept,
            (px_btl_module_t * btl, const void *offer, size_t offer_len,
             px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len, char *reason),
            (btl, offer, offer_len, endpoint, reply, reply_len, reason))
SERIAL_WRAP(int, btl_dyn_complete,
            (px_btl_module_t * btl, px_btl_endpoint_t *endpoint, const void *reply,
             size_t reply_len, char *reason),
            (btl, endpoint, reply, reply_len, reason))
SERIAL_WRAP(int, btl_dyn_remove, (px_btl_module_t * btl, px_btl_endpoint_t *endpoint),
            (btl, endpoint))

/* Progress only tries: a busy module is being driven by the thread inside it. */
static int serial_btl_progress(px_btl_module_t *btl)
{
    px_btl_base_serial_t *s = serial_find(btl);
    if (PX_UNLIKELY(NULL == s)) {
        serial_enter(btl); /* reports and aborts */
        return 0;
    }
    if (!px_bias_trylock(&s->lock))
        return 0;
    s->locks++;
    int r = s->orig.btl_progress(btl);
    px_bias_unlock(&s->lock);
    return r;
}

int px_btl_base_progress_locked(px_btl_module_t *btl, int (*progress)(px_btl_module_t *))
{
    px_btl_base_serial_t *s = nserial > 0 ? serial_find(btl) : NULL;
    if (NULL == s)
        return progress(btl); /* not serialized: no lock, as the base's own progress */
    if (!px_bias_trylock(&s->lock))
        return 0;
    s->locks++;
    int r = progress(btl);
    px_bias_unlock(&s->lock);
    return r;
}

/* Every method the base wraps: all but btl_finalize, which the base calls
 * after putting the component's methods back. */
#define SERIAL_METHODS(X)                                                                          \
    X(btl_add_procs)                                                                               \
    X(btl_del_procs)                                                                               \
    X(btl_alloc)                                                                                   \
    X(btl_free)                                                                                    \
    X(btl_prepare_src)                                                                             \
    X(btl_send)                                                                                    \
    X(btl_sendi)                                                                                   \
    X(btl_put)                                                                                     \
    X(btl_get)                                                                                     \
    X(btl_register_mem)                                                                            \
    X(btl_deregister_mem)                                                                          \
    X(btl_flush)                                                                                   \
    X(btl_progress)                                                                                \
    X(btl_register_error)                                                                          \
    X(btl_put_v)                                                                                   \
    X(btl_get_v)                                                                                   \
    X(btl_mem_alloc)                                                                               \
    X(btl_mem_free)                                                                                \
    X(btl_mem_map)                                                                                 \
    X(btl_mem_unmap)                                                                               \
    X(btl_dyn_offer)                                                                               \
    X(btl_dyn_accept)                                                                              \
    X(btl_dyn_complete)                                                                            \
    X(btl_dyn_remove)

/* A method is touched only where the module's btl_size covers it (a module
 * of an older minor is never written past its end) and it is set (NULL
 * keeps meaning "not offered"). */
#define SERIAL_INSTALL(f)                                                                          \
    if (PX_BTL_MODULE_HAS(m, f))                                                                   \
        m->f = serial_##f;
#define SERIAL_RESTORE(f)                                                                          \
    if (PX_BTL_MODULE_HAS(m, f) && m->f == serial_##f)                                             \
        m->f = s->orig.f;

bool px_btl_base_serialized(const px_btl_module_t *btl)
{
    return NULL != serial_find(btl);
}

uint64_t px_btl_base_serial_locks(const px_btl_module_t *btl)
{
    px_btl_base_serial_t *s = serial_find(btl);
    return s ? s->locks : 0;
}

int px_btl_base_serialize(px_btl_module_t **modules, int nmodules)
{
    for (int i = 0; i < nmodules; ++i) {
        px_btl_module_t *m = modules[i];
        if (PX_BTL_THREADS_MULTIPLE == px_btl_base_thread_support(m->btl_component) ||
            serial_find(m))
            continue;
        px_btl_base_serial_t **grown = realloc(serial, (nserial + 1) * sizeof(*grown));
        if (NULL == grown)
            return PX_ERR_OUT_OF_RESOURCE;
        serial = grown;
        px_btl_base_serial_t *s = calloc(1, sizeof(*s));
        if (NULL == s)
            return PX_ERR_OUT_OF_RESOURCE;
        if (px_bias_lock_init(&s->lock, true) != PX_SUCCESS) {
            free(s);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        s->module = m;
        size_t have = m->btl_size < sizeof(*m) ? m->btl_size : sizeof(*m);
        memcpy(&s->orig, m, have);
        serial[nserial++] = s;
        SERIAL_METHODS(SERIAL_INSTALL)
        PX_OUTPUT_VERBOSE(10, px_btl_base_framework.output,
                          "btl %s: not thread-safe (btl API %d.%d): the base serializes its calls",
                          m->btl_component->base.component_name,
                          m->btl_component->base.framework_version.major,
                          m->btl_component->base.framework_version.minor);
    }
    return PX_SUCCESS;
}

void px_btl_base_unserialize(void)
{
    for (int i = 0; i < nserial; ++i) {
        px_btl_base_serial_t *s = serial[i];
        px_btl_module_t *m = s->module;
        SERIAL_METHODS(SERIAL_RESTORE)
        px_bias_lock_destroy(&s->lock);
        free(s);
    }
    free(serial);
    serial = NULL;
    nserial = 0;
}
