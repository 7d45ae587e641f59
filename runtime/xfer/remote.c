/*
 * remote.c: imports of peers' regions (px_xfer_key_import): the key is read
 * (key.c), checked against this job, peer and modules, and each entry this
 * process can use becomes a rail, best first; mappings of a peer's memory
 * are cached per peer and region and shared by every import of it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/xfer/xfer.h"

#define XFER_READY(fn)                                                                             \
    do {                                                                                           \
        if (PX_UNLIKELY(!px_xfer.ready))                                                           \
            return px_xfer_api_error(PX_ERR_NOT_INITIALIZED, fn,                                   \
                                     "Plexus is not initialised (px_init)");                       \
    } while (0)

static int rail_cmp(const void *a, const void *b)
{
    const px_xfer_rail_t *x = a, *y = b;
    long px = px_xfer.mods[x->mod].priority, py = px_xfer.mods[y->mod].priority;
    if (px != py)
        return px > py ? -1 : 1;
    if (x->mod != y->mod)
        return x->mod - y->mod;
    return x->kind - y->kind; /* the mapping before put/get */
}

/* Map (or find mapped) the peer's allocation described by `e`. */
static px_xfer_map_t *map_get(px_xfer_peer_t *p, int mod, const px_xfer_key_t *k,
                              const px_xfer_key_entry_t *e, px_btl_endpoint_t *ep)
{
    const int peer = p->id;
    for (px_xfer_map_t *m = p->maps; m; m = m->next)
        if (m->mod == mod && m->region_id == k->region_id) {
            m->refs++;
            return m;
        }
    px_xfer_map_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (PX_SUCCESS != px_btl_base_mem_map(px_xfer.mods[mod].btl, ep, e->data, e->len, &m->mem)) {
        free(m);
        return NULL;
    }
    const px_xfer_ctl_t *ctl = m->mem.base;
    if (m->mem.size < PX_XFER_CTL_PAGE + k->length || ctl->magic != PX_XFER_CTL_MAGIC ||
        ctl->region_id != k->region_id) {
        px_show_error("px_xfer_key_import: rank %d's memory mapped through %s is not the region "
                      "the key names (%zu bytes mapped, control id %llx, key id %llx): not "
                      "using the mapping",
                      peer, px_xfer.mods[mod].name, m->mem.size, (unsigned long long)ctl->region_id,
                      (unsigned long long)k->region_id);
        px_btl_base_mem_unmap(px_xfer.mods[mod].btl, &m->mem);
        free(m);
        return NULL;
    }
    m->mod = mod;
    m->region_id = k->region_id;
    m->refs = 1;
    m->next = p->maps;
    p->maps = m;
    return m;
}

static void remote_unmap(px_xfer_remote_t *rm)
{
    px_xfer_map_t *m = rm->map;
    rm->map = NULL;
    rm->mapped = rm->fast = NULL;
    rm->ctl = NULL;
    if (!m || --m->refs > 0)
        return;
    px_xfer_peer_t *p = rm->pp;
    for (px_xfer_map_t **pp = &p->maps; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    px_btl_base_mem_unmap(px_xfer.mods[m->mod].btl, &m->mem);
    free(m);
}

int px_xfer_key_import(int peer, const void *key, size_t length, px_xfer_remote_t **remote)
{
    XFER_READY("px_xfer_key_import");
    const bool dyn = peer >= PX_RT_DYN_BASE;
    if (!remote || peer < 0 || (peer >= px_rt.size && !dyn))
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_key_import",
            "peer %d, remote %p: expected a rank from 0 to %d or a connected peer's id, and a "
            "place for the remote",
            peer, (void *)remote, px_rt.size - 1);
    char pname[300];
    px_xfer_peer_t *pp = dyn ? px_xfer_peer_dyn(peer, true) : &px_xfer.peers[peer];
    if (!pp)
        return px_xfer_fail(PX_ERR_PEER_FAILED,
                            "px_xfer_key_import: peer %d is not connected (disconnected, gone, or "
                            "never an id px_connect or px_accept gave)",
                            peer);
    px_xfer_peer_name(peer, pname, sizeof pname);
    int failed = atomic_load(&pp->failed);
    if (failed)
        return px_xfer_api_error(failed, "px_xfer_key_import", "%s failed: %s", pname,
                                 pp->why ? pp->why : "?");
    px_xfer_key_t k;
    char why[200];
    if (PX_SUCCESS != px_xfer_key_parse(key, length, &k, why, sizeof why))
        return px_xfer_api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                                 "the key from %s is refused: %s", pname, why);
    /* A connected peer is another job (or none): its key names its own job
     * and rank, which this process cannot check; the channel it came by
     * vouches for it, and its regions are reached only through its
     * transports' endpoints. */
    if (dyn) {
        if (k.job_hash == px_xfer.job_hash && k.owner == px_rt.rank)
            return px_xfer_api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                                     "the key given as %s's is this process's own (job hash "
                                     "%016llx, rank %d)",
                                     pname, (unsigned long long)k.job_hash, (int)k.owner);
    } else if (k.job_hash != px_xfer.job_hash)
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_key_import",
            "the key from rank %d is refused: it was exported by another job (job "
            "hash %016llx, this job's %016llx)",
            peer, (unsigned long long)k.job_hash, (unsigned long long)px_xfer.job_hash);
    else if (k.owner != peer)
        return px_xfer_api_error(PX_ERR_BAD_PARAM, "px_xfer_key_import",
                                 "the key is refused: it was exported by rank %d, not by rank %d",
                                 (int)k.owner, peer);
    if (peer == px_rt.rank) {
        /* Our own region: it must exist, as the key says. */
        bool took0;
        px_xfer_lock_take(&took0);
        px_xfer_region_t *own = px_xfer_region_find(k.region_id);
        bool ok = own && (uint64_t)(uintptr_t)own->base == k.addr && own->len == k.length;
        px_xfer_lock_drop(took0);
        if (!ok)
            return px_xfer_api_error(
                PX_ERR_BAD_PARAM, "px_xfer_key_import",
                "the key names region %llx of this process (%llu bytes at 0x%llx), "
                "which %s",
                (unsigned long long)k.region_id, (unsigned long long)k.length,
                (unsigned long long)k.addr,
                own ? "has another address or length" : "does not exist (freed?)");
    }
    px_xfer_remote_t *rm = calloc(1, sizeof *rm);
    if (!rm)
        return px_xfer_fail(PX_ERR_OUT_OF_RESOURCE, "out of memory");
    PX_OBJ_CONSTRUCT(&rm->link, px_list_item_t);
    rm->magic = PX_XFER_REMOTE_MAGIC;
    rm->peer = peer;
    rm->pp = pp;
    rm->id = k.region_id;
    rm->addr = k.addr;
    rm->len = (size_t)k.length;
    atomic_init(&rm->inflight, 0);
    bool took;
    px_xfer_lock_take(&took);
    if (dyn && atomic_load(&pp->failed)) { /* it went meanwhile */
        px_xfer_lock_drop(took);
        PX_OBJ_DESTRUCT(&rm->link);
        free(rm);
        return px_xfer_fail(PX_ERR_PEER_FAILED, "px_xfer_key_import: %s failed: %s", pname,
                            pp->why ? pp->why : "?");
    }
    pp->refs += dyn;
    px_rt_dyn_t *dy = dyn ? px_rt_dyn_find(peer) : NULL;
    /* Its owner withdrew it already: requests fail as for a freed region. */
    atomic_init(&rm->revoked, peer != px_rt.rank && px_xfer_is_revoked(peer, k.region_id));
    const px_btl_base_table_t *t = &px_rt.table;
    for (int e = 0; e < k.nentries && rm->nrails < PX_XFER_MAX_RAILS; ++e) {
        const px_xfer_key_entry_t *en = &k.entries[e];
        if (PX_XFER_ENTRY_VALID == en->kind && peer == px_rt.rank && en->len >= 4) {
            uint32_t slot; /* our own table */
            memcpy(&slot, en->data, 4);
            if (px_xfer.vwords && slot < PX_XFER_VTAB_SLOTS)
                rm->valid = &px_xfer.vwords[slot];
            continue;
        }
        int mi = -1;
        for (int i = 0; i < px_xfer.nmods; ++i)
            if (px_xfer.mods[i].comp_id == en->comp_id &&
                px_xfer.mods[i].comp_index == en->comp_index)
                mi = i;
        px_btl_endpoint_t *ep = NULL;
        if (mi >= 0 && dy && dy->dp) {
            /* A connected peer: the endpoint its connection made on that
             * module. Shareable memory and validity tables are mapped for
             * ranks of the job only (btl/shm): its regions are reached by
             * put/get (CMA on this host) or staged. */
            for (int j = 0; j < dy->dp->nmodules; ++j)
                if (dy->dp->modules[j] == px_xfer.mods[mi].btl)
                    ep = dy->dp->endpoints[j];
            if (PX_XFER_ENTRY_RDMA != en->kind)
                ep = NULL;
        } else if (mi >= 0 && !dyn && px_bitmap_is_set_bit(&t->reach[mi].reachable, peer))
            ep = t->reach[mi].endpoints[peer];
        if (!ep)
            continue; /* a transport this process lacks, or one that does not reach the peer */
        px_xfer_mod_t *m = &px_xfer.mods[mi];
        px_xfer_rail_t *rl = &rm->rails[rm->nrails];
        memset(rl, 0, sizeof *rl);
        rl->mod = mi;
        rl->ep = ep;
        if (PX_XFER_ENTRY_VALID == en->kind) {
            px_xfer_peer_t *p = pp;
            uint32_t slot;
            if (!m->map || en->len < 4)
                continue;
            memcpy(&slot, en->data, 4);
            if (p->vtab_mod < 0 &&
                PX_SUCCESS == px_btl_base_mem_map(m->btl, ep, en->data + 4, en->len - 4, &p->vtab))
                p->vtab_mod = mi;
            if (p->vtab_mod == mi && (size_t)slot < p->vtab.size / 8)
                rm->valid = (const _Atomic uint64_t *)p->vtab.base + slot;
            continue;
        }
        if (PX_XFER_ENTRY_MAP == en->kind) {
            if (!m->map || rm->map)
                continue;
            px_xfer_map_t *map = map_get(pp, mi, &k, en, ep);
            if (!map) {
                PX_OUTPUT_VERBOSE(1, px_xfer.output,
                                  "rank %d's region %llx could not be mapped through %s: "
                                  "using its other paths",
                                  peer, (unsigned long long)k.region_id, m->name);
                continue;
            }
            rm->map = map;
            rm->ctl = map->mem.base;
            rm->mapped = (char *)map->mem.base + PX_XFER_CTL_PAGE;
            rl->kind = PX_XFER_RAIL_MAP;
        } else {
            if (!(m->put || m->get))
                continue;
            if (en->len != m->hsize) {
                PX_OUTPUT_VERBOSE(1, px_xfer.output,
                                  "rank %d's key holds %u handle bytes for %s, which uses "
                                  "%u: that transport is not used for it",
                                  peer, en->len, m->name, m->hsize);
                continue;
            }
            rl->kind = PX_XFER_RAIL_RDMA;
            rl->hsize = en->len;
            if (en->len)
                memcpy(rl->handle, en->data, en->len);
        }
        rm->nrails++;
    }
    qsort(rm->rails, (size_t)rm->nrails, sizeof rm->rails[0], rail_cmp);
    /* The inline path: the best priority is one module, and its best rail is
     * the mapping. */
    if (rm->nrails && PX_XFER_RAIL_MAP == rm->rails[0].kind) {
        bool alone = true;
        for (int i = 1; i < rm->nrails; ++i)
            if (rm->rails[i].mod != rm->rails[0].mod &&
                px_xfer.mods[rm->rails[i].mod].priority == px_xfer.mods[rm->rails[0].mod].priority)
                alone = false;
        if (alone)
            rm->fast = rm->mapped;
    }
    px_list_append(&px_xfer.remotes, &rm->link);
    if (px_output_check(px_xfer.output, 1)) {
        char list[256] = "";
        size_t pos = 0;
        for (int i = 0; i < rm->nrails && pos < sizeof list; ++i)
            pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s#%u(%s)", i ? " " : "",
                                    px_xfer.mods[rm->rails[i].mod].name,
                                    px_xfer.mods[rm->rails[i].mod].comp_index,
                                    PX_XFER_RAIL_MAP == rm->rails[i].kind ? "mapped" : "put/get");
        px_output(px_xfer.output,
                  "imported %s's region %llx (%zu bytes): direct paths, best first: "
                  "%s%s",
                  pname, (unsigned long long)rm->id, rm->len, rm->nrails ? list : "none",
                  rm->fast ? "; copied by the submitting thread" : "");
    }
    px_xfer_lock_drop(took);
    *remote = rm;
    return PX_SUCCESS;
}

size_t px_xfer_remote_length(const px_xfer_remote_t *remote)
{
    return px_xfer_remote_ok(remote) ? remote->len : 0;
}

int px_xfer_remote_peer(const px_xfer_remote_t *remote)
{
    return px_xfer_remote_ok(remote) ? remote->peer : PX_ERR_BAD_PARAM;
}

int px_xfer_remote_release(px_xfer_remote_t **remote)
{
    XFER_READY("px_xfer_remote_release");
    if (!remote || !px_xfer_remote_ok(*remote))
        return px_xfer_api_error(PX_ERR_BAD_PARAM, "px_xfer_remote_release",
                                 "%p is not an imported region (released already, or never one)",
                                 remote ? (void *)*remote : NULL);
    px_xfer_remote_t *rm = *remote;
    bool took;
    px_xfer_lock_take(&took);
    long n = atomic_load(&rm->inflight);
    if (n > 0) {
        px_xfer_lock_drop(took);
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_remote_release",
            "rank %d's region %llx still has %ld request(s) in flight: wait for "
            "them first",
            rm->peer, (unsigned long long)rm->id, n);
    }
    px_list_remove_item(&px_xfer.remotes, &rm->link);
    remote_unmap(rm);
    rm->magic = 0;
    px_xfer_peer_unref(rm->pp);
    px_xfer_lock_drop(took);
    PX_OBJ_DESTRUCT(&rm->link);
    free(rm);
    *remote = NULL;
    return PX_SUCCESS;
}

/* px_finalize: the imports never released. */
void px_xfer_remotes_finalize(void)
{
    px_list_item_t *it;
    while ((it = px_list_remove_first(&px_xfer.remotes)) != NULL) {
        px_xfer_remote_t *rm = px_container_of(it, px_xfer_remote_t, link);
        remote_unmap(rm);
        rm->magic = 0;
        PX_OBJ_DESTRUCT(&rm->link);
        free(rm);
    }
}
