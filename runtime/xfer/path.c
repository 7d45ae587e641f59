/*
 * path.c: the choice of a request's path, made once at submission:
 *  - inline (path_inline.c): the best transport for the peer mapped the
 *    remote memory (a region allocated through a same-host transport): the
 *    submitting thread copies at once;
 *  - rails (path_rails.c): one or more transports with put/get (or a
 *    mapping) of the best priority; a request larger than xfer_chunk_size is
 *    striped over up to PX_XFER_MAX_STRIPE of them, each a contiguous range
 *    sized by its bandwidth;
 *  - stage (path_stage.c): no direct path, or a request naming "stage", or
 *    one smaller than xfer_stage_below without a mapping (in "auto", the
 *    default: smaller than PX_XFER_STAGE_AUTO_WRITE or _READ by its op, and
 *    only instead of a put/get that is a system call per request, CMA).
 * A new path is an ops table (xfer.h's px_xfer_path_t) chosen here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/printf.h"
#include "runtime/xfer/xfer.h"

char *px_xfer_reason(const px_xfer_slot_t *s, const char *fmt, va_list ap)
{
    char what[400];
    vsnprintf(what, sizeof what, fmt, ap);
    char name[300];
    return px_asprintf("%s, transport %s: %s", px_xfer_peer_name(s->peer, name, sizeof name),
                       s->tlabel && *s->tlabel ? s->tlabel : "(none chosen)", what);
}

/* A request naming a transport without a path: s->error and s->why say so. */
static PX_COLD int refuse(px_xfer_slot_t *s, int rc, const char *fmt, ...) PX_PRINTF(3, 4);
static int refuse(px_xfer_slot_t *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s->why = px_xfer_reason(s, fmt, ap);
    va_end(ap);
    s->error = rc;
    return rc;
}

/* Pick the path of a checked request. Returns PX_SUCCESS, or an error (with
 * the request failed) when the transport it names has no path. */
int px_xfer_path_choose_any(px_xfer_slot_t *s, const char *tname)
{
    const px_xfer_remote_t *rm = s->remote;
    const bool write = PX_XFER_WRITE == s->op;
    if (tname && 0 == strcmp(tname, "stage"))
        goto stage;
    if (PX_LIKELY(!tname && rm->fast)) {
        s->path = &px_xfer_path_inline;
        s->tlabel = px_xfer.mods[rm->rails[0].mod].label_map;
        return PX_SUCCESS;
    }
    int cand[PX_XFER_MAX_RAILS], nc = 0;
    long best = 0;
    unsigned seen = 0;
    for (int i = 0; i < rm->nrails; ++i) {
        const px_xfer_rail_t *rl = &rm->rails[i];
        const px_xfer_mod_t *m = &px_xfer.mods[rl->mod];
        if (tname && 0 != strcmp(m->name, tname))
            continue;
        if (seen & (1u << rl->mod))
            continue; /* one rail per module: its best (the mapping first) */
        if (PX_XFER_RAIL_RDMA == rl->kind &&
            (!(write ? m->put : m->get) || (m->reg && !s->local->reg[rl->mod])))
            continue;
        if (nc && m->priority < best)
            break;
        seen |= 1u << rl->mod;
        best = m->priority;
        cand[nc++] = i;
    }
    if (0 == nc) {
        if (tname) {
            s->tlabel = "";
            return refuse(s, PX_ERR_NOT_AVAILABLE,
                          "the request names transport \"%s\", which has no direct path to "
                          "this region (%d path(s) in its key reach this process; \"stage\" "
                          "names the staged path)",
                          tname, rm->nrails);
        }
        goto stage;
    }
    if (nc > PX_XFER_MAX_STRIPE)
        nc = PX_XFER_MAX_STRIPE;
    if (1 == nc || s->len <= px_xfer.chunk_size) {
        int pick = cand[0];
        for (int k = 1; k < nc; ++k) /* the heaviest rail takes a small request */
            if (px_xfer.mods[rm->rails[cand[k]].mod].btl->btl_bandwidth >
                px_xfer.mods[rm->rails[pick].mod].btl->btl_bandwidth)
                pick = cand[k];
        const px_xfer_rail_t *rl = &rm->rails[pick];
        const px_xfer_mod_t *m = &px_xfer.mods[rl->mod];
        if (PX_XFER_RAIL_MAP == rl->kind) {
            s->path = &px_xfer_path_inline;
            s->tlabel = m->label_map;
            return PX_SUCCESS;
        }
        /* xfer_stage_below: small requests without a mapping are served by
         * the target's CPU (a round trip of messages beats a system call or
         * a put/get setup, when the target progresses). In "auto" only where
         * the put/get is a system call per request: a module that addresses
         * another process's memory without registering it (CMA on the same
         * host); put/get that registers memory (a network's RDMA) is kept. */
        if (!tname && s->len < px_xfer.stage_below[s->op] && s->peer != px_rt.rank &&
            (!px_xfer.stage_auto || (!m->reg && s->remote->pp->stage_mod >= 0)))
            goto stage;
        s->path = &px_xfer_path_rails;
        s->nrails = 1;
        s->rail[0] = (uint8_t)pick;
        s->rcur[0] = 0;
        s->rend[0] = s->len;
        s->tlabel = write ? m->label_put : m->label_get;
        return PX_SUCCESS;
    }
    /* Striped: contiguous ranges in whole chunks, by bandwidth. */
    double w[PX_XFER_MAX_STRIPE], wsum = 0;
    for (int k = 0; k < nc; ++k) {
        w[k] = (double)px_xfer.mods[rm->rails[cand[k]].mod].btl->btl_bandwidth;
        wsum += w[k];
    }
    size_t chunks = (s->len + px_xfer.chunk_size - 1) / px_xfer.chunk_size, given = 0;
    size_t pos = 0, lpos = 0;
    s->path = &px_xfer_path_rails;
    s->nrails = 0;
    for (int k = 0; k < nc && pos < s->len; ++k) {
        size_t c = k + 1 == nc ? chunks - given
                               : (size_t)((double)chunks * (wsum > 0 ? w[k] / wsum : 1.0 / nc));
        if (c > chunks - given)
            c = chunks - given;
        given += c;
        size_t end = k + 1 == nc ? s->len : pos + c * px_xfer.chunk_size;
        if (end > s->len)
            end = s->len;
        if (end == pos)
            continue;
        int r = s->nrails++;
        s->rail[r] = (uint8_t)cand[k];
        s->rcur[r] = pos;
        s->rend[r] = end;
        pos = end;
        const px_xfer_rail_t *rl = &rm->rails[cand[k]];
        const px_xfer_mod_t *m = &px_xfer.mods[rl->mod];
        const char *lab =
            PX_XFER_RAIL_MAP == rl->kind ? m->label_map : (write ? m->label_put : m->label_get);
        int n = snprintf(s->tbuf + lpos, sizeof s->tbuf - lpos, "%s%s", lpos ? "+" : "", lab);
        if (n > 0)
            lpos = lpos + (size_t)n < sizeof s->tbuf ? lpos + (size_t)n : sizeof s->tbuf - 1;
    }
    s->tlabel = s->tbuf;
    atomic_fetch_add_explicit(&px_xfer.n_striped, 1, memory_order_relaxed);
    return PX_SUCCESS;
stage : {
    int sm = s->remote->pp->stage_mod;
    s->path = &px_xfer_path_stage;
    s->tlabel = sm >= 0 ? px_xfer.mods[sm].label_stage : "stage";
    return PX_SUCCESS;
}
}
