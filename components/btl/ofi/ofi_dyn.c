/*
 * ofi_dyn.c: btl/ofi's dynamic peers (BTL API 3.3): a process that is not
 * a rank of the job. Each side gives the other a number (a slot in
 * m->dyn and a generation, so a number of a removed peer is not taken for
 * the next one in that slot); the peer puts it, as PX_BTL_OFI_DYN_SRC(n),
 * where a rank's message carries the rank, which is how a receive tells its
 * sender apart although libfabric does not say who sent (FI_ADDR_UNSPEC,
 * no FI_SOURCE). The part of the payload is that number and the endpoint's
 * address in the modex blob's format (checked by px_btl_ofi_modex_parse:
 * same provider, an address libfabric can read whole); the other RDMA
 * lanes' addresses travel in the part's extension (write_part), which an
 * older Plexus never sees. The addresses go into the address vector at
 * accept (acceptor) and complete (connector) and out again with
 * fi_av_remove at remove.
 *
 * Like the ranks' traffic, the number is a claim, not a proof: anybody who
 * can send to the endpoint can use it; the connection channel authenticates
 * the peer, btl/ofi trusts what arrives as it does for ranks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/ofi/ofi.h"
#include "core/util/error.h"
#include "core/util/output.h"

#define PX_BTL_OFI_DYN_MAGIC 0x6f666964u /* "ofid" */
#define DYN_SLOTS_MAX        65536

#define REASON(...) snprintf(reason, PX_BTL_DYN_REASON_MAX, __VA_ARGS__)

/* The part: magic, number, then the modex blob. */
typedef struct {
    uint32_t magic;
    uint32_t id;
} dyn_head_t;

px_btl_endpoint_t *px_btl_ofi_dyn_lookup(px_btl_ofi_module_t *m, uint32_t id)
{
    uint32_t slot = id & 0xffff;
    if (slot >= m->dyn_cap || NULL == m->dyn[slot] || m->dyn[slot]->dyn_id != id)
        return NULL;
    return m->dyn[slot];
}

static px_btl_endpoint_t *dyn_new(px_btl_ofi_module_t *m)
{
    uint32_t slot = 0;
    while (slot < m->dyn_cap && m->dyn[slot])
        slot++;
    if (slot == m->dyn_cap) {
        if (m->dyn_cap >= DYN_SLOTS_MAX)
            return NULL;
        uint32_t cap = m->dyn_cap ? 2 * m->dyn_cap : 16;
        px_btl_endpoint_t **d = realloc(m->dyn, cap * sizeof(*d));
        if (NULL == d)
            return NULL;
        memset(d + m->dyn_cap, 0, (cap - m->dyn_cap) * sizeof(*d));
        m->dyn = d;
        m->dyn_cap = cap;
    }
    px_btl_endpoint_t *ep = calloc(1, sizeof(*ep));
    if (NULL == ep)
        return NULL;
    m->dyn_gen = (m->dyn_gen + 1) & 0x3fff;
    ep->module = m;
    ep->addr = FI_ADDR_NOTAVAIL;
    ep->rank = PX_BTL_RANK_DYNAMIC;
    ep->hostname = "dynamic peer";
    ep->probe_fd = -1;
    ep->dyn = true;
    ep->dyn_id = slot | (m->dyn_gen << 16);
    ep->failed = true; /* no sends until its address is known */
    m->dyn[slot] = ep;
    return ep;
}

/* With PX_BTL_FLAGS_DYN_EXT (the default) the part is "u16 n | the part
 * proper (n bytes) | the extension": the part proper is magic, number and
 * the modex blob (lane 0's address: byte for byte what an older Plexus
 * writes and reads), the extension this process's lanes blob when it has
 * more than one lane. The base sends the extension where an older Plexus
 * never looks (frameworks/btl/btl.h). */
static bool with_ext(const px_btl_ofi_module_t *m)
{
    return 0 != (m->super.btl_flags & PX_BTL_FLAGS_DYN_EXT);
}

static int write_part(px_btl_ofi_module_t *m, const px_btl_endpoint_t *ep, void *part,
                      size_t *part_len, char *reason)
{
    unsigned char *p = part;
    size_t at = with_ext(m) ? 2 : 0;
    size_t blen = px_btl_ofi_own_blob(m, NULL, 0);
    size_t main_len = sizeof(dyn_head_t) + blen;
    size_t elen = (at && m->nlanes > 1) ? px_btl_ofi_own_lanes(m, NULL, 0) : 0;
    if (at + main_len + elen > *part_len || main_len > PX_BTL_DYN_PART_MAX ||
        elen > PX_BTL_DYN_PART_MAX) {
        REASON("its addresses (%u lane(s), %zu + %zu bytes) do not fit a part of %zu bytes",
               m->nlanes, main_len, elen, *part_len);
        return PX_ERR_NOT_SUPPORTED;
    }
    dyn_head_t h = {PX_BTL_OFI_DYN_MAGIC, ep->dyn_id};
    memcpy(p + at, &h, sizeof h);
    px_btl_ofi_own_blob(m, p + at + sizeof h, blen);
    if (elen)
        px_btl_ofi_own_lanes(m, p + at + main_len, elen);
    if (at) {
        p[0] = (unsigned char)(main_len & 0xff);
        p[1] = (unsigned char)(main_len >> 8);
    }
    *part_len = at + main_len + elen;
    return PX_SUCCESS;
}

/* Read the peer's part and put its addresses in the address vector. */
static int take_part(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep, const void *part, size_t len,
                     char *reason)
{
    const unsigned char *ext = NULL;
    size_t elen = 0;
    if (NULL != part && with_ext(m)) {
        const unsigned char *b = part;
        size_t n = len >= 2 ? (size_t)(b[0] | (b[1] << 8)) : 0;
        if (len < 2 || n > len - 2) {
            REASON("its btl/ofi part of %zu bytes says its part proper is %zu bytes", len, n);
            return PX_ERR_BAD_PARAM;
        }
        ext = b + 2 + n;
        elen = len - 2 - n;
        part = b + 2;
        len = n;
    }
    dyn_head_t h;
    if (NULL == part || len < sizeof h) {
        REASON("its btl/ofi part of %zu bytes is shorter than its header", len);
        return PX_ERR_BAD_PARAM;
    }
    memcpy(&h, part, sizeof h);
    if (h.magic != PX_BTL_OFI_DYN_MAGIC || h.id > PX_BTL_OFI_DYN_ID_MAX) {
        REASON("its btl/ofi part has a bad magic number or peer number");
        return PX_ERR_BAD_PARAM;
    }
    px_btl_ofi_peer_addr_t pa;
    char why[400];
    int rc =
        px_btl_ofi_modex_parse((const char *)part + sizeof h, len - sizeof h, px_btl_ofi_prov(m),
                               m->info->addr_format, m->addrlen, &pa, why, sizeof why);
    if (PX_SUCCESS != rc) {
        REASON("%.250s", why);
        return PX_ERR_BAD_PARAM == rc ? PX_ERR_BAD_PARAM : PX_ERR_UNREACH;
    }
    if (0 == memcmp(pa.addr, m->addr, m->addrlen) && pa.addrlen == m->addrlen &&
        h.id == ep->dyn_id) {
        REASON("its btl/ofi part is this very connection's (a reflected offer)");
        return PX_ERR_BAD_PARAM;
    }
    /* The lanes, when it sent them and this process has lanes to pair
     * them with; checked either way. */
    if (elen) {
        rc = px_btl_ofi_lanes_parse(ext, elen, px_btl_ofi_prov(m), m->info->addr_format, m->addrlen,
                                    &pa, why, sizeof why);
        if (PX_SUCCESS != rc) {
            REASON("%.250s", why);
            return PX_ERR_BAD_PARAM;
        }
    }
    int fi_rc = 0;
    if (PX_SUCCESS != px_btl_ofi_lanes_insert(m, ep, &pa, &fi_rc)) {
        REASON("fi_av_insert of the peer's address failed: %s", px_btl_ofi_strerror(fi_rc));
        return PX_ERR_UNREACH;
    }
    ep->in_av = true;
    m->dyn_in_av++;
    ep->send_as = PX_BTL_OFI_DYN_SRC(h.id);
    ep->failed = false;
    return PX_SUCCESS;
}

static void dyn_free(px_btl_ofi_module_t *m, px_btl_endpoint_t *ep)
{
    uint32_t slot = ep->dyn_id & 0xffff;
    if (slot < m->dyn_cap && m->dyn[slot] == ep)
        m->dyn[slot] = NULL;
    px_btl_ofi_probe_close(ep);
    if (ep->in_av) {
        px_btl_ofi_lanes_remove(m, ep);
        m->dyn_in_av--;
    }
    PX_OUTPUT_VERBOSE(10, px_btl_ofi_output,
                      "btl/ofi: dynamic peer %08x removed; dynamic peers' addresses in the "
                      "address vector: %u",
                      (unsigned)ep->dyn_id, (unsigned)m->dyn_in_av);
    free(ep);
}

int px_btl_ofi_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                         size_t *part_len, char *reason)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    px_btl_endpoint_t *ep = dyn_new(m);
    if (NULL == ep) {
        REASON("out of memory, or %d dynamic peers already", DYN_SLOTS_MAX);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = write_part(m, ep, part, part_len, reason);
    if (PX_SUCCESS != rc) {
        dyn_free(m, ep);
        return rc;
    }
    *endpoint = ep;
    return PX_SUCCESS;
}

int px_btl_ofi_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                          px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                          char *reason)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    px_btl_endpoint_t *ep = dyn_new(m);
    if (NULL == ep) {
        REASON("out of memory, or %d dynamic peers already", DYN_SLOTS_MAX);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = take_part(m, ep, offer, offer_len, reason);
    if (PX_SUCCESS == rc)
        rc = write_part(m, ep, reply, reply_len, reason);
    if (PX_SUCCESS != rc) {
        dyn_free(m, ep);
        return rc;
    }
    *endpoint = ep;
    return PX_SUCCESS;
}

int px_btl_ofi_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *reply,
                            size_t reply_len, char *reason)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    if (NULL == ep || !ep->dyn || ep->in_av) {
        REASON("not an offered btl/ofi connection");
        return PX_ERR_BAD_PARAM;
    }
    return take_part(m, ep, reply, reply_len, reason);
}

int px_btl_ofi_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *ep)
{
    px_btl_ofi_module_t *m = (px_btl_ofi_module_t *)btl;
    if (NULL == ep || !ep->dyn)
        return PX_ERR_BAD_PARAM;
    /* What was sent to it completes (or is failed) before it goes. */
    px_btl_ofi_drain(m, &ep, 1);
    if (!px_btl_base_pending_empty(&ep->pending)) {
        px_btl_ofi_fail_pending(m, ep, PX_ERR_COMM);
        for (px_btl_endpoint_t **l = &m->blocked; *l; l = &(*l)->next_blocked)
            if (*l == ep) {
                *l = ep->next_blocked;
                break;
            }
    }
    dyn_free(m, ep);
    return PX_SUCCESS;
}

void px_btl_ofi_dyn_cleanup(px_btl_ofi_module_t *m)
{
    for (uint32_t i = 0; i < m->dyn_cap; i++)
        if (m->dyn[i])
            dyn_free(m, m->dyn[i]);
    free(m->dyn);
    m->dyn = NULL;
    m->dyn_cap = 0;
}
