/*
 * btl_base_select.c: reachability and per-peer module selection.
 * px_btl_base_add_procs asks every module which processes it reaches, then
 * px_btl_base_select_peer (pure: no global state) picks each peer's send,
 * eager and RDMA modules. The rules are in base.h and docs/btl.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"

static const char *module_name(const px_btl_module_t *m)
{
    return (m->btl_component && m->btl_component->base.component_name)
               ? m->btl_component->base.component_name
               : "?";
}

int px_btl_base_select_peer(const px_btl_base_reach_t *reach, int nmodules, size_t proc_index,
                            int rank, px_btl_base_peer_t **peer)
{
    *peer = NULL;
    /* Highest exclusivity with a send-capable module reaching the peer. */
    int best = -1;
    uint32_t best_excl = 0;
    for (int m = 0; m < nmodules; ++m) {
        const px_btl_module_t *mod = reach[m].module;
        if (!(mod->btl_flags & PX_BTL_FLAGS_SEND) ||
            !px_bitmap_is_set_bit(&reach[m].reachable, (int)proc_index))
            continue;
        if (best < 0 || mod->btl_exclusivity > best_excl) {
            best = m;
            best_excl = mod->btl_exclusivity;
        }
    }
    if (best < 0)
        return PX_ERR_UNREACH;

    int nsend = 0;
    for (int m = 0; m < nmodules; ++m) {
        const px_btl_module_t *mod = reach[m].module;
        if ((mod->btl_flags & PX_BTL_FLAGS_SEND) && mod->btl_exclusivity == best_excl &&
            px_bitmap_is_set_bit(&reach[m].reachable, (int)proc_index))
            nsend++;
    }
    /* One allocation: the peer, then send[nsend], eager[<=nsend], rdma[<=nsend]. */
    px_btl_base_peer_t *p = calloc(1, sizeof(*p) + 3 * nsend * sizeof(px_btl_base_peer_module_t));
    if (NULL == p)
        return PX_ERR_OUT_OF_RESOURCE;
    p->rank = rank;
    p->send = (px_btl_base_peer_module_t *)(p + 1);
    p->eager = p->send + nsend;
    p->rdma = p->eager + nsend;
    uint32_t min_latency = UINT32_MAX;
    p->max_send_size = SIZE_MAX;
    for (int m = 0; m < nmodules; ++m) {
        px_btl_module_t *mod = reach[m].module;
        if (!(mod->btl_flags & PX_BTL_FLAGS_SEND) || mod->btl_exclusivity != best_excl ||
            !px_bitmap_is_set_bit(&reach[m].reachable, (int)proc_index))
            continue;
        px_btl_base_peer_module_t *pm = &p->send[p->num_send++];
        pm->module = mod;
        pm->endpoint = reach[m].endpoints ? reach[m].endpoints[proc_index] : NULL;
        pm->weight = 0;
        if (mod->btl_latency < min_latency)
            min_latency = mod->btl_latency;
        if (mod->btl_max_send_size < p->max_send_size)
            p->max_send_size = mod->btl_max_send_size;
    }
    /* Eager: the lowest latency (ties: all of them, used in turn). */
    p->eager_limit = SIZE_MAX;
    for (int i = 0; i < p->num_send; ++i) {
        if (p->send[i].module->btl_latency != min_latency)
            continue;
        p->eager[p->num_eager++] = p->send[i];
        if (p->send[i].module->btl_eager_limit < p->eager_limit)
            p->eager_limit = p->send[i].module->btl_eager_limit;
    }
    /* RDMA: weighted by bandwidth, highest weight first. */
    double total = 0;
    for (int i = 0; i < p->num_send; ++i) {
        if (!(p->send[i].module->btl_flags & PX_BTL_FLAGS_RDMA))
            continue;
        px_btl_base_peer_module_t pm = p->send[i];
        int j = p->num_rdma++;
        while (j > 0 && p->rdma[j - 1].module->btl_bandwidth < pm.module->btl_bandwidth) {
            p->rdma[j] = p->rdma[j - 1];
            --j;
        }
        p->rdma[j] = pm;
        total += pm.module->btl_bandwidth;
    }
    for (int i = 0; i < p->num_rdma; ++i)
        p->rdma[i].weight =
            total > 0 ? p->rdma[i].module->btl_bandwidth / total : 1.0 / p->num_rdma;
    *peer = p;
    return PX_SUCCESS;
}

void px_btl_base_peer_free(px_btl_base_peer_t *peer)
{
    free(peer);
}

/* Growing string for the error text. */
typedef struct {
    char *s;
    size_t len, cap;
} strbuf_t;

static void sb_printf(strbuf_t *b, const char *fmt, ...) PX_PRINTF(2, 3);
static void sb_printf(strbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? 2 * b->cap : 256);
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (NULL == s)
            return;
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += n;
}

char *px_btl_base_unreachable_message(const px_btl_base_reach_t *reach, int nmodules,
                                      const px_proc_t *local, const px_proc_t *peer,
                                      size_t proc_index)
{
    strbuf_t b = {0};
    sb_printf(&b, "no transport reaches rank %d (host %s) from rank %d (host %s).", peer->rank,
              peer->hostname ? peer->hostname : "?", local->rank,
              local->hostname ? local->hostname : "?");
    if (0 == nmodules) {
        sb_printf(&b, "\n  No BTL module was available: every btl component was excluded by "
                      "the selection variable \"btl\" or declined in its init (set "
                      "PX_MCA_btl_base_verbose=10 to see why).");
    } else {
        sb_printf(&b, "\n  Modules tried (%d):", nmodules);
        for (int m = 0; m < nmodules; ++m) {
            const px_btl_module_t *mod = reach[m].module;
            const char *why;
            char nosend[160];
            if (px_bitmap_is_set_bit(&reach[m].reachable, (int)proc_index)) {
                snprintf(nosend, sizeof(nosend),
                         "reaches it but cannot send (btl_%s_flags = 0x%x lacks "
                         "PX_BTL_FLAGS_SEND 0x1)",
                         module_name(mod), mod->btl_flags);
                why = nosend;
            } else if (reach[m].reasons && reach[m].reasons[proc_index])
                why = reach[m].reasons[proc_index];
            else
                why = "declined without giving a reason";
            sb_printf(&b, "\n    %s (exclusivity %u): %s", module_name(mod), mod->btl_exclusivity,
                      why);
        }
    }
    return b.s;
}

/* Append what the framework knows beyond the modules: components that
 * declined in init, and the selection variable. Takes and returns msg. */
char *px_btl_base_unreachable_add_context(char *msg)
{
    strbuf_t b = {msg, msg ? strlen(msg) : 0, msg ? strlen(msg) + 1 : 0};
    int nd = px_btl_base_declined_count();
    if (nd > 0) {
        sb_printf(&b, "\n  Components that offered no module (their init declined; "
                      "PX_MCA_btl_base_verbose=10 says why):");
        for (int i = 0; i < nd; ++i)
            sb_printf(&b, " %s", px_btl_base_declined_name(i));
    }
    const char *sel = px_btl_base_framework.selection;
    sb_printf(&b, "\n  Selection variable btl = %s.", (sel && *sel) ? sel : "(unset: all)");
    sb_printf(&b, "\n  The transports come from the variable \"btl\" (e.g. PX_MCA_btl=self,shm); "
                  "px_info --param btl all lists them.");
    return b.s;
}

static void reach_release(px_btl_base_reach_t *r, int n)
{
    for (int m = 0; m < n; ++m) {
        PX_OBJ_DESTRUCT(&r[m].reachable);
        free(r[m].endpoints);
        free((void *)r[m].reasons);
    }
    free(r);
}

/* The table the last successful px_btl_base_add_procs built (the runtime's),
 * until px_btl_base_del_procs releases it: px_btl_base_mem_peer reads it. */
const px_btl_base_table_t *px_btl_base_current_table;

int px_btl_base_add_procs(px_btl_base_table_t *t, px_btl_module_t **modules, int nmodules,
                          px_proc_t **procs, size_t nprocs, const px_proc_t *local,
                          px_btl_base_peer_t **peers, char **error)
{
    memset(t, 0, sizeof(*t));
    if (error)
        *error = NULL;
    if (NULL == peers && nprocs > 0)
        return PX_ERR_BAD_PARAM;
    for (size_t i = 0; i < nprocs; ++i)
        peers[i] = NULL;
    t->nmodules = nmodules;
    t->modules = modules;
    t->nprocs = nprocs;
    t->procs = procs;
    t->reach = calloc(nmodules ? nmodules : 1, sizeof(*t->reach));
    if (NULL == t->reach)
        return PX_ERR_OUT_OF_RESOURCE;
    int rc = PX_SUCCESS;
    int m;
    for (m = 0; m < nmodules; ++m) {
        px_btl_base_reach_t *r = &t->reach[m];
        r->module = modules[m];
        PX_OBJ_CONSTRUCT(&r->reachable, px_bitmap_t);
        r->endpoints = calloc(nprocs ? nprocs : 1, sizeof(*r->endpoints));
        r->reasons = calloc(nprocs ? nprocs : 1, sizeof(*r->reasons));
        if (NULL == r->endpoints || NULL == r->reasons ||
            PX_SUCCESS != px_bitmap_init(&r->reachable, (int)(nprocs ? nprocs : 1))) {
            m++;
            rc = PX_ERR_OUT_OF_RESOURCE;
            break;
        }
        int arc = modules[m]->btl_add_procs(modules[m], nprocs, procs, r->endpoints, &r->reachable,
                                            r->reasons);
        if (arc != PX_SUCCESS) {
            /* A module that fails add_procs reaches nobody; say why for each. */
            px_bitmap_clear_all_bits(&r->reachable);
            for (size_t i = 0; i < nprocs; ++i)
                if (NULL == r->reasons[i])
                    r->reasons[i] = "add_procs failed";
        }
    }
    if (rc != PX_SUCCESS) {
        reach_release(t->reach, m);
        t->reach = NULL;
        return rc;
    }
    for (size_t i = 0; i < nprocs; ++i) {
        px_btl_base_peer_t *peer = NULL;
        rc = px_btl_base_select_peer(t->reach, nmodules, i, procs[i]->rank, &peer);
        if (PX_ERR_UNREACH == rc && error) {
            char *msg = px_btl_base_unreachable_message(t->reach, nmodules, local, procs[i], i);
            *error = px_btl_base_unreachable_add_context(msg);
        }
        if (rc != PX_SUCCESS) {
            px_btl_base_del_procs(t, peers);
            return rc;
        }
        peers[i] = peer;
    }
    px_btl_base_current_table = t;
    return PX_SUCCESS;
}

int px_btl_base_del_procs(px_btl_base_table_t *t, px_btl_base_peer_t **peers)
{
    if (px_btl_base_current_table == t)
        px_btl_base_current_table = NULL;
    if (NULL == t->reach)
        return PX_SUCCESS;
    for (int m = t->nmodules - 1; m >= 0; --m) {
        px_btl_module_t *mod = t->reach[m].module;
        if (mod->btl_del_procs && t->nprocs)
            mod->btl_del_procs(mod, t->nprocs, t->procs, t->reach[m].endpoints);
    }
    for (size_t i = 0; peers && i < t->nprocs; ++i) {
        px_btl_base_peer_free(peers[i]);
        peers[i] = NULL;
    }
    reach_release(t->reach, t->nmodules);
    t->reach = NULL;
    return PX_SUCCESS;
}
