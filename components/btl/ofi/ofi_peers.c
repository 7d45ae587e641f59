/*
 * ofi_peers.c: btl/ofi peers: add_procs reads each peer's modex blob (provider,
 * address format, fi_getname bytes), checks it (px_btl_ofi_modex_parse: the
 * same provider, an address libfabric can read whole), reads its RDMA lanes
 * under their own key when this process has lanes (px_btl_ofi_lanes_parse;
 * none from an older Plexus: one lane) and inserts the addresses into the
 * address vector, or says why it cannot reach it; del_procs drains what was
 * sent to the peers, then forgets them.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/ofi/ofi.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "frameworks/boot/boot.h"

size_t px_btl_ofi_own_blob(px_btl_ofi_module_t *m, void *buf, size_t cap)
{
    return px_btl_ofi_modex_build(buf, cap, px_btl_ofi_prov(m), m->info->addr_format, m->addr,
                                  m->addrlen);
}

size_t px_btl_ofi_own_lanes(px_btl_ofi_module_t *m, void *buf, size_t cap)
{
    const void *addrs[PX_BTL_OFI_LANES_MAX];
    unsigned n = m->nlanes ? m->nlanes : 1;
    for (unsigned l = 0; l < n; ++l)
        addrs[l] = m->lane_name[l];
    return px_btl_ofi_lanes_build(buf, cap, addrs, m->lane_namelen, n);
}

int px_btl_ofi_lanes_key(char *key, size_t len)
{
    const px_mca_component_t *c = &px_btl_ofi_component.base;
    int n =
        snprintf(key, len, "%s.%s.%s", c->framework_name, c->component_name, PX_BTL_OFI_LANES_KEY);
    return (n < 0 || (size_t)n >= len) ? PX_ERR_BAD_PARAM : PX_SUCCESS;
}

void px_btl_ofi_lanes_add(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep,
                          const px_btl_ofi_peer_addr_t *pa)
{
    unsigned want = pa->nlanes < m->nlanes ? pa->nlanes : m->nlanes;
    unsigned had = ep->nlanes;
    for (unsigned l = ep->nlanes; l < want; ++l) {
        fi_addr_t fa = FI_ADDR_NOTAVAIL;
        int n = fi_av_insert(m->av, pa->lane_addr[l], 1, &fa, 0, NULL);
        if (1 != n) {
            PX_OUTPUT_VERBOSE(1, px_btl_ofi_output,
                              "btl/ofi (%s): fi_av_insert of the address of lane %u of rank %d "
                              "failed (%s): %u lane(s) with it",
                              px_btl_ofi_prov(m), l, ep->rank,
                              px_btl_ofi_strerror(n < 0 ? n : -FI_EINVAL), l);
            break;
        }
        ep->lane_addr[l] = fa;
        ep->nlanes = l + 1;
    }
    if (had <= 1 && ep->nlanes > 1)
        m->lane_peers++;
    PX_OUTPUT_VERBOSE(20, px_btl_ofi_output,
                      "btl/ofi (%s): rank %d: %u RDMA lane(s) (it publishes %u, this process %u)",
                      px_btl_ofi_prov(m), ep->rank, ep->nlanes, pa->nlanes, m->nlanes);
}

int px_btl_ofi_lanes_insert(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep,
                            const px_btl_ofi_peer_addr_t *pa, int *fi_rc)
{
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    int n = fi_av_insert(m->av, pa->addr, 1, &fa, 0, NULL);
    if (1 != n) {
        *fi_rc = n < 0 ? n : -FI_EINVAL;
        return PX_ERR_UNREACH;
    }
    ep->addr = fa;
    ep->lane_addr[0] = fa;
    ep->nlanes = 1;
    ep->next_lane = 0;
    px_btl_ofi_lanes_add(m, ep, pa);
    return PX_SUCCESS;
}

void px_btl_ofi_lanes_remove(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep)
{
    px_btl_ofi_rdma_fail_blocked(m, ep, PX_ERR_UNREACH);
    for (unsigned l = 1; l < ep->nlanes; ++l)
        fi_av_remove(m->av, &ep->lane_addr[l], 1, 0);
    fi_av_remove(m->av, &ep->addr, 1, 0);
    if (ep->nlanes > 1)
        m->lane_peers--;
    ep->nlanes = 0;
}

/* A reason add_procs hands out, kept until the module goes. */
#define px_btl_ofi_reason(m, ...) px_btl_base_reason(&(m)->reasons, __VA_ARGS__)

int px_btl_ofi_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                         const char **reasons)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    const char *myprov = px_btl_ofi_prov(m);
    bool host_only = 0 == strcmp(myprov, "shm");
    /* Over tcp (or net) the published address is the peer's listening TCP
     * socket, which a plain connect can probe (ofi_module.c); other
     * providers' addresses are not TCP ports. */
    bool probe_tcp = (0 == strncmp(myprov, "tcp", 3) && ('\0' == myprov[3] || ';' == myprov[3])) ||
                     (0 == strncmp(myprov, "net", 3) && ('\0' == myprov[3] || ';' == myprov[3]));
    char lkey[64];
    for (size_t i = 0; i < nprocs; ++i) {
        px_proc_t *p = procs[i];
        endpoints[i] = NULL;
        if (p->rank < 0)
            continue;
        if ((size_t)p->rank >= m->num_peers) {
            size_t n = (size_t)p->rank + 1;
            px_btl_endpoint_t **np = realloc(m->peers, n * sizeof(*np));
            if (NULL == np)
                return PX_ERR_OUT_OF_RESOURCE;
            memset(np + m->num_peers, 0, (n - m->num_peers) * sizeof(*np));
            m->peers = np;
            m->num_peers = n;
        }
        if (m->peers[p->rank]) { /* already known */
            endpoints[i] = m->peers[p->rank];
            px_bitmap_set_bit(reachable, (int)i);
            continue;
        }
        if (host_only && !(p->locality & PX_PROC_LOCAL_HOST)) {
            reasons[i] = px_btl_ofi_reason(m,
                                           "the shm provider reaches only same-host peers "
                                           "and rank %d is on host %s",
                                           p->rank, p->hostname ? p->hostname : "?");
            continue;
        }
        void *blob = NULL;
        size_t len = 0;
        int rc = px_boot_modex_recv(&px_btl_ofi_component.base, p->rank, &blob, &len);
        if (PX_SUCCESS != rc) {
            reasons[i] = px_btl_ofi_reason(m,
                                           "rank %d published no btl/ofi address (its "
                                           "btl/ofi declined or is not in its btl list)",
                                           p->rank);
            free(blob);
            continue;
        }
        px_btl_ofi_peer_addr_t pa;
        char why[400];
        rc = px_btl_ofi_modex_parse(blob, len, myprov, m->info->addr_format, m->addrlen, &pa, why,
                                    sizeof(why));
        if (PX_SUCCESS != rc) {
            if (PX_ERR_BAD_PARAM == rc)
                px_show_error("btl/ofi (%s): rank %d%s%s %s; it is not reachable over btl/ofi",
                              myprov, p->rank, p->hostname ? " on host " : "",
                              p->hostname ? p->hostname : "", why);
            reasons[i] = px_btl_ofi_reason(m, "rank %d %s", p->rank, why);
            free(blob);
            continue;
        }
        /* The other lanes' addresses, under their own key (an older Plexus
         * publishes none: one lane with it); read only when this process
         * has lanes to pair them with. */
        void *lblob = NULL;
        size_t llen = 0;
        if (m->nlanes > 1 && PX_SUCCESS == px_btl_ofi_lanes_key(lkey, sizeof(lkey)) &&
            PX_SUCCESS == px_boot->get(p->rank, lkey, &lblob, &llen)) {
            rc = px_btl_ofi_lanes_parse(lblob, llen, myprov, m->info->addr_format, m->addrlen, &pa,
                                        why, sizeof(why));
            if (PX_SUCCESS != rc) {
                px_show_error("btl/ofi (%s): rank %d%s%s %s (modex key %s); it is not reachable "
                              "over btl/ofi",
                              myprov, p->rank, p->hostname ? " on host " : "",
                              p->hostname ? p->hostname : "", why, lkey);
                reasons[i] = px_btl_ofi_reason(m, "rank %d %s (modex key %s)", p->rank, why, lkey);
                free(lblob);
                free(blob);
                continue;
            }
        }
        px_btl_endpoint_t *ep = calloc(1, sizeof(*ep));
        if (NULL == ep) {
            free(lblob);
            free(blob);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        ep->rank = p->rank;
        int fi_rc = 0;
        rc = px_btl_ofi_lanes_insert(m, ep, &pa, &fi_rc);
        free(lblob);
        if (PX_SUCCESS != rc) {
            free(blob);
            free(ep);
            reasons[i] = px_btl_ofi_reason(m, "fi_av_insert of rank %d's address failed: %s",
                                           p->rank, px_btl_ofi_strerror(fi_rc));
            continue;
        }
        ep->module = m;
        ep->hostname = p->hostname;
        ep->probe_fd = -1;
        ep->send_as = m->my_rank;
        ep->in_av = true;
        if (probe_tcp && pa.addrlen <= sizeof(ep->probe_addr) &&
            (FI_SOCKADDR_IN == pa.addr_format || FI_SOCKADDR_IN6 == pa.addr_format)) {
            memcpy(&ep->probe_addr, pa.addr, pa.addrlen);
            ep->probe_len = (socklen_t)pa.addrlen;
        }
        free(blob);
        m->peers[p->rank] = ep;
        endpoints[i] = ep;
        px_bitmap_set_bit(reachable, (int)i);
    }
    return PX_SUCCESS;
}

int px_btl_ofi_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    px_btl_endpoint_t **eps = calloc(nprocs ? nprocs : 1, sizeof(*eps));
    if (NULL == eps)
        return PX_ERR_OUT_OF_RESOURCE;
    for (size_t i = 0; i < nprocs; ++i) {
        eps[i] = endpoints ? endpoints[i] : NULL;
        if (NULL == eps[i] && procs[i]->rank >= 0 && (size_t)procs[i]->rank < m->num_peers)
            eps[i] = m->peers[procs[i]->rank];
    }
    px_btl_ofi_drain(m, eps, nprocs);
    for (size_t i = 0; i < nprocs; ++i) {
        px_btl_endpoint_t *ep = eps[i];
        if (NULL == ep)
            continue;
        if (!px_btl_base_pending_empty(
                &ep->pending)) { /* the drain gave up: fail them, forget the endpoint */
            px_btl_ofi_fail_pending(m, ep, PX_ERR_COMM);
            for (px_btl_endpoint_t **l = &m->blocked; *l; l = &(*l)->next_blocked)
                if (*l == ep) {
                    *l = ep->next_blocked;
                    break;
                }
        }
        px_btl_ofi_probe_close(ep);
        px_btl_ofi_lanes_remove(m, ep);
        if ((size_t)ep->rank < m->num_peers && m->peers[ep->rank] == ep)
            m->peers[ep->rank] = NULL;
        free(ep);
        if (endpoints)
            endpoints[i] = NULL;
    }
    free(eps);
    return PX_SUCCESS;
}
