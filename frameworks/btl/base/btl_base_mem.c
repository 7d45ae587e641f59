/*
 * btl_base_mem.c: shareable memory and one-sided use (BTL API 3.2). The
 * transfer engine (runtime/xfer*.c) calls these, never the module members:
 * a module built for an older minor (its btl_size does not cover the
 * members) or one that leaves them NULL, or whose user cleared
 * PX_BTL_FLAGS_MEM_MAP, is answered PX_ERR_NOT_SUPPORTED here, and the engine
 * falls back to memory of its own registered with btl_register_mem.
 */
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"

bool px_btl_base_has_mem_map(const px_btl_module_t *btl)
{
    return btl && (btl->btl_flags & PX_BTL_FLAGS_MEM_MAP) &&
           PX_BTL_MODULE_HAS(btl, btl_mem_alloc) && PX_BTL_MODULE_HAS(btl, btl_mem_free) &&
           PX_BTL_MODULE_HAS(btl, btl_mem_map) && PX_BTL_MODULE_HAS(btl, btl_mem_unmap);
}

int px_btl_base_mem_alloc(px_btl_module_t *btl, size_t size, px_btl_mem_t *mem)
{
    if (NULL == mem || 0 == size)
        return PX_ERR_BAD_PARAM;
    if (!px_btl_base_has_mem_map(btl))
        return PX_ERR_NOT_SUPPORTED;
    return btl->btl_mem_alloc(btl, size, mem);
}

int px_btl_base_mem_free(px_btl_module_t *btl, px_btl_mem_t *mem)
{
    if (NULL == mem)
        return PX_ERR_BAD_PARAM;
    if (!btl || !PX_BTL_MODULE_HAS(btl, btl_mem_free))
        return PX_ERR_NOT_SUPPORTED;
    return btl->btl_mem_free(btl, mem);
}

int px_btl_base_mem_map(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *desc,
                        size_t desc_len, px_btl_mem_t *map)
{
    if (NULL == map || NULL == desc || 0 == desc_len || desc_len > PX_BTL_MEM_DESC_MAX)
        return PX_ERR_BAD_PARAM;
    if (!px_btl_base_has_mem_map(btl))
        return PX_ERR_NOT_SUPPORTED;
    return btl->btl_mem_map(btl, endpoint, desc, desc_len, map);
}

int px_btl_base_mem_unmap(px_btl_module_t *btl, px_btl_mem_t *map)
{
    if (NULL == map)
        return PX_ERR_BAD_PARAM;
    if (!btl || !PX_BTL_MODULE_HAS(btl, btl_mem_unmap))
        return PX_ERR_NOT_SUPPORTED;
    return btl->btl_mem_unmap(btl, map);
}

bool px_btl_base_xfer_can_put(const px_btl_module_t *btl)
{
    uint32_t f = btl->btl_flags;
    /* XFER_RDMA is a 3.2 bit: a module built for 3.0 or 3.1 never sets it. */
    return btl->btl_put && ((f & PX_BTL_FLAGS_PUT) || (f & PX_BTL_FLAGS_XFER_RDMA));
}

bool px_btl_base_xfer_can_get(const px_btl_module_t *btl)
{
    uint32_t f = btl->btl_flags;
    return btl->btl_get && ((f & PX_BTL_FLAGS_GET) || (f & PX_BTL_FLAGS_XFER_RDMA));
}

extern const px_btl_base_table_t *px_btl_base_current_table; /* btl_base_select.c */

int px_btl_base_mem_peer(int rank, px_btl_module_t **btl, px_btl_endpoint_t **ep)
{
    const px_btl_base_table_t *t = px_btl_base_current_table;
    if (NULL == t || NULL == t->reach || NULL == btl || NULL == ep)
        return PX_ERR_NOT_FOUND;
    for (size_t i = 0; i < t->nprocs; ++i) {
        if (NULL == t->procs[i] || t->procs[i]->rank != rank)
            continue;
        for (int m = 0; m < t->nmodules; ++m) {
            const px_btl_base_reach_t *r = &t->reach[m];
            if (px_btl_base_has_mem_map(r->module) && px_bitmap_is_set_bit(&r->reachable, (int)i) &&
                r->endpoints[i]) {
                *btl = r->module;
                *ep = r->endpoints[i];
                return PX_SUCCESS;
            }
        }
        break;
    }
    return PX_ERR_NOT_FOUND;
}
