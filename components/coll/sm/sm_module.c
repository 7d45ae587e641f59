/*
 * sm_module.c: coll/sm's algorithms (the segments and streams: sm.h).
 *
 * Every operation is written as what each member publishes in its stream,
 * block by block (each block cut into chunks of coll_sm_chunk bytes, whole
 * elements), and what each member takes from the others' streams:
 *
 *   bcast           the root publishes the vector; the others copy it out.
 *   allgather       each member publishes its block; each copies every other
 *                   member's block out.
 *   alltoall        member j publishes its blocks for j+1, j+2, ... (mod p);
 *                   member r copies the block for r out of each stream and
 *                   skips the others (its counter passes them at once).
 *   reduce_scatter  member j publishes its blocks for j+1, j+2, ...; member r
 *                   reduces the block for r from every stream into its result
 *                   as chunks arrive (own input op the first arrival, then the
 *                   result op the next).
 *   allreduce       reduce_scatter over the vector cut in p near-equal blocks,
 *                   then member r publishes its reduced block (each chunk as
 *                   soon as every peer's contribution is in) and copies every
 *                   other member's reduced block out.
 *
 * A member never waits for one stream to progress another: a stream's chunks
 * are taken as they come, so the rings cannot deadlock however small.
 * Floating-point reductions are done in arrival order by the block's owner,
 * which gives its result to all: every member gets the same vector.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "components/coll/sm/sm.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

#define SM_DESC_MSG (4 + PX_BTL_MEM_DESC_MAX)

enum { SM_COPY = 1, SM_REDUCE = 2 };

/* What a member takes from one stream: up to two ranges of its chunks. */
typedef struct sm_range {
    uint64_t first, n; /* chunks [first, first + n) of the stream in this call */
    size_t last;       /* bytes of its last chunk */
    int kind;          /* SM_COPY or SM_REDUCE */
    char *dst;         /* copy: where chunk 0 of the range goes */
} sm_range_t;

typedef struct sm_stream {
    uint64_t n; /* chunks the stream has in this call */
    sm_range_t rg[2];
    int nrg, ri;
    uint64_t ci;   /* next chunk inside rg[ri] */
    uint64_t seen; /* posted value last read (cumulative) */
} sm_stream_t;

/* One block of this member's own stream. */
typedef struct sm_wblock {
    const char *src;
    size_t len;
    bool reduced; /* allreduce's second phase: a chunk leaves once reduced */
} sm_wblock_t;

typedef struct sm_call {
    px_coll_sm_group_t *sg;
    px_coll_group_t *g;
    px_coll_sched_t *s;
    int opid, dtype, rop;
    size_t es, ch; /* element size, bytes a chunk (whole elements) */
    /* setup (the group's first call through coll/sm) */
    bool setup, needs_setup;
    unsigned char (*desc_in)[SM_DESC_MSG];
    unsigned char desc_out[SM_DESC_MSG];
    struct px_request **sreq, **rreq; /* [p]: setup messages, then the failure watch */
    bool watching;
    /* this member's stream */
    sm_wblock_t *wb;
    int nwb, wk;
    uint64_t wc, w, nw; /* chunk in block wk, chunks published, chunks in all */
    uint64_t free_upto; /* every reader has acked below this (cumulative) */
    /* the reduction of this member's own block */
    const char *red_in;
    char *red_out;
    size_t red_len;
    uint32_t *got;   /* [chunks of the own block]: contributions reduced */
    sm_stream_t *st; /* [p] */
    int pending;     /* ranges not finished */
    uint64_t *pos;   /* [p]: chunks each stream held before this call */
    uint64_t ticket; /* this call's place among the group's coll/sm calls */
    bool ticketed, counted;
    unsigned idle; /* progress calls in a row that moved nothing */
} sm_call_t;

static char sm_watch_byte;

/* ---- the group's segments ---- */

static px_coll_sm_group_t *sm_of(px_coll_group_t *g)
{
    for (int k = 0; k < g->nmodules; ++k)
        if (g->modules[k] && g->modules[k]->group_free == px_coll_sm_group_free)
            return (px_coll_sm_group_t *)g->modules[k];
    return NULL;
}

static size_t data_off(int p)
{
    size_t ctl = 2 * PX_COLL_SM_LINE + (size_t)p * PX_COLL_SM_LINE;
    return (ctl + 4095) & ~(size_t)4095;
}

/* Allocate this member's segment and start the exchange of descriptions. */
static int setup_start(sm_call_t *c)
{
    px_coll_sm_group_t *sg = c->sg;
    px_coll_group_t *g = c->g;
    const px_coll_p2p_t *p2p = px_coll_p2p();
    int p = sg->p, r = sg->r;
    for (int j = 0; j < p; ++j) {
        if (j == r)
            continue;
        int rc = px_btl_base_mem_peer(g->world[j], &sg->map_btl[j], &sg->map_ep[j]);
        if (rc != PX_SUCCESS) {
            px_show_error("coll/sm: no transport offers shareable memory with group rank %d "
                          "(job rank %d); exclude coll/sm (PX_MCA_coll=^sm) or enable btl/shm",
                          j, g->world[j]);
            return rc;
        }
        if (NULL == sg->own_btl)
            sg->own_btl = sg->map_btl[j];
    }
    sg->seg_bytes = data_off(p) + (size_t)sg->nslots * sg->slot;
    int rc = px_btl_base_mem_alloc(sg->own_btl, sg->seg_bytes, &sg->own);
    if (rc != PX_SUCCESS) {
        px_show_error("coll/sm: cannot allocate a shared segment of %zu bytes (coll_sm_chunk %zu "
                      "x coll_sm_slots %u): %s",
                      sg->seg_bytes, sg->slot, sg->nslots, px_strerror(rc));
        return rc;
    }
    sg->own_btl_valid = true;
    px_coll_sm_hdr_t *h = sg->own.base;
    h->ctx = g->ctx;
    h->owner = r;
    h->size = (uint32_t)p;
    h->nslots = sg->nslots;
    h->slot = sg->slot;
    h->data_off = data_off(p);
    __atomic_store_n(&h->magic, PX_COLL_SM_MAGIC, __ATOMIC_RELEASE);
    sg->base[r] = sg->own.base;
    uint32_t dl = sg->own.desc_len;
    memset(c->desc_out, 0, sizeof c->desc_out);
    memcpy(c->desc_out, &dl, 4);
    memcpy(c->desc_out + 4, sg->own.desc, dl <= PX_BTL_MEM_DESC_MAX ? dl : PX_BTL_MEM_DESC_MAX);
    for (int j = 0; j < p; ++j) {
        if (j == r)
            continue;
        rc = p2p->irecv(c->desc_in[j], SM_DESC_MSG, g->world[j], c->s->tag, &c->rreq[j]);
        if (rc == PX_SUCCESS)
            rc = p2p->isend(c->desc_out, SM_DESC_MSG, g->world[j], c->s->tag, &c->sreq[j]);
        if (rc != PX_SUCCESS)
            return rc;
    }
    c->setup = true;
    return PX_SUCCESS;
}

/* Map peer j's segment from its description and check it. */
static int map_peer(sm_call_t *c, int j)
{
    px_coll_sm_group_t *sg = c->sg;
    uint32_t dl;
    memcpy(&dl, c->desc_in[j], 4);
    if (dl == 0 || dl > PX_BTL_MEM_DESC_MAX) {
        px_show_error("coll/sm: group rank %d sent a segment description of %u bytes (1 to %d "
                      "accepted)",
                      j, dl, PX_BTL_MEM_DESC_MAX);
        return PX_ERR_BAD_PARAM;
    }
    int rc =
        px_btl_base_mem_map(sg->map_btl[j], sg->map_ep[j], c->desc_in[j] + 4, dl, &sg->maps[j]);
    if (rc != PX_SUCCESS) {
        px_show_error("coll/sm: cannot map group rank %d's shared segment: %s", j, px_strerror(rc));
        return rc;
    }
    sg->mapped[j] = true;
    const px_coll_sm_hdr_t *h = sg->maps[j].base;
    const char *why = NULL;
    if (sg->maps[j].size < sizeof *h)
        why = "it is too small for a header";
    else if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != PX_COLL_SM_MAGIC)
        why = "it is not a coll/sm segment";
    else if (h->ctx != c->g->ctx || h->owner != j || h->size != (uint32_t)sg->p)
        why = "it belongs to another group or member";
    else if (h->nslots != sg->nslots || h->slot != sg->slot || h->data_off != data_off(sg->p))
        why = "its coll_sm_chunk / coll_sm_slots differ from this member's (set them alike on "
              "every rank)";
    else if (sg->maps[j].size < sg->seg_bytes)
        why = "it is smaller than its header says";
    if (why) {
        px_show_error("coll/sm: refusing group rank %d's shared segment (%zu bytes mapped, %zu "
                      "expected): %s",
                      j, sg->maps[j].size, sg->seg_bytes, why);
        return PX_ERR_BAD_PARAM;
    }
    sg->base[j] = sg->maps[j].base;
    return PX_SUCCESS;
}

/* 1 when the exchange is over and every peer mapped, 0 not yet, or an error. */
static int setup_progress(sm_call_t *c)
{
    const px_coll_p2p_t *p2p = px_coll_p2p();
    int p = c->sg->p, r = c->sg->r;
    for (int j = 0; j < p; ++j) {
        int err;
        if (j == r)
            continue;
        if (c->sreq[j]) {
            if (!p2p->test(c->sreq[j], &err))
                return 0;
            p2p->release(&c->sreq[j]);
            if (err != PX_SUCCESS)
                return err;
        }
        if (c->rreq[j]) {
            if (!p2p->test(c->rreq[j], &err))
                return 0;
            p2p->release(&c->rreq[j]);
            if (err != PX_SUCCESS)
                return err;
        }
    }
    for (int j = 0; j < p; ++j) {
        if (j == r)
            continue;
        int rc = map_peer(c, j);
        if (rc != PX_SUCCESS)
            return rc;
    }
    c->sg->ready = true;
    c->setup = false;
    return 1;
}

/* ---- the streams of one call ---- */

static inline uint64_t chunks_of(size_t len, size_t ch)
{
    return (len + ch - 1) / ch;
}

static inline unsigned char *slot_of(const px_coll_sm_group_t *sg, int j, uint64_t k)
{
    return sg->base[j] + data_off(sg->p) + (size_t)(k % sg->nslots) * sg->slot;
}

/* Block b of the vector (allreduce): byte offset and length. */
static inline size_t vblk_off(const px_coll_args_t *a, int p, int b, size_t es)
{
    return px_coll_block_start(a->count, p, b) * es;
}
static inline size_t vblk_len(const px_coll_args_t *a, int p, int b, size_t es)
{
    return (px_coll_block_start(a->count, p, b + 1) - px_coll_block_start(a->count, p, b)) * es;
}

/* The blocks stream j publishes in this call: fills len[k] (nb of them),
 * returns nb; for j == this member also the sources. */
static int stream_blocks(const sm_call_t *c, const px_coll_args_t *a, int j, size_t *len,
                         sm_wblock_t *wb)
{
    int p = c->sg->p, nb = 0;
    size_t es = c->es, blk = a->count * es;
    switch (c->opid) {
    case PX_COLL_BCAST:
        if (j == a->root) {
            len[nb] = blk;
            if (wb)
                wb[nb] = (sm_wblock_t){a->rbuf, blk, false};
            nb++;
        }
        break;
    case PX_COLL_ALLGATHER:
        len[nb] = blk;
        if (wb)
            wb[nb] = (sm_wblock_t){a->sbuf, blk, false};
        nb++;
        break;
    case PX_COLL_ALLTOALL:
    case PX_COLL_REDUCE_SCATTER:
        for (int k = 1; k < p; ++k) {
            int b = (j + k) % p;
            len[nb] = blk;
            if (wb)
                wb[nb] = (sm_wblock_t){(const char *)a->sbuf + (size_t)b * blk, blk, false};
            nb++;
        }
        break;
    case PX_COLL_ALLREDUCE:
        for (int k = 1; k < p; ++k) {
            int b = (j + k) % p;
            len[nb] = vblk_len(a, p, b, es);
            if (wb)
                wb[nb] =
                    (sm_wblock_t){(const char *)a->sbuf + vblk_off(a, p, b, es), len[nb], false};
            nb++;
        }
        len[nb] = vblk_len(a, p, j, es);
        if (wb)
            wb[nb] = (sm_wblock_t){(const char *)a->rbuf + vblk_off(a, p, j, es), len[nb], true};
        nb++;
        break;
    default:
        break;
    }
    return nb;
}

static int sm_progress(px_coll_sched_t *s);
static void sm_abort(px_coll_sched_t *s);
static void sm_cleanup(px_coll_sched_t *s);

/* Lay out the call: what this member publishes and takes (no data moves). */
static int sm_plan(sm_call_t *c, const px_coll_args_t *a)
{
    px_coll_sm_group_t *sg = c->sg;
    int p = sg->p, r = sg->r;
    size_t es = c->es, blk = a->count * es;
    size_t *len = malloc((size_t)p * sizeof *len);
    c->wb = malloc((size_t)p * sizeof *c->wb);
    if (!len || !c->wb) {
        free(len);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    c->nwb = stream_blocks(c, a, r, len, c->wb);
    c->nw = 0;
    for (int k = 0; k < c->nwb; ++k)
        c->nw += chunks_of(c->wb[k].len, c->ch);
    /* The reduction of the own block. */
    if (PX_COLL_REDUCE_SCATTER == c->opid) {
        c->red_in = (const char *)a->sbuf + (size_t)r * blk;
        c->red_out = a->rbuf;
        c->red_len = blk;
    } else if (PX_COLL_ALLREDUCE == c->opid) {
        c->red_in = (const char *)a->sbuf + vblk_off(a, p, r, es);
        c->red_out = (char *)a->rbuf + vblk_off(a, p, r, es);
        c->red_len = vblk_len(a, p, r, es);
    }
    if (c->red_len) {
        c->got = calloc(chunks_of(c->red_len, c->ch), sizeof *c->got);
        if (!c->got) {
            free(len);
            return PX_ERR_OUT_OF_RESOURCE;
        }
    }
    /* What this member takes from each stream. */
    for (int j = 0; j < p; ++j) {
        sm_stream_t *st = &c->st[j];
        if (j == r)
            continue;
        int nb = stream_blocks(c, a, j, len, NULL);
        uint64_t at = 0;
        for (int k = 0; k < nb; ++k) {
            uint64_t n = chunks_of(len[k], c->ch);
            sm_range_t rg = {.first = at, .n = n, .kind = 0, .dst = NULL};
            rg.last = n ? len[k] - (size_t)(n - 1) * c->ch : 0;
            switch (c->opid) {
            case PX_COLL_BCAST:
                rg.kind = SM_COPY;
                rg.dst = a->rbuf;
                break;
            case PX_COLL_ALLGATHER:
                rg.kind = SM_COPY;
                rg.dst = (char *)a->rbuf + (size_t)j * blk;
                break;
            case PX_COLL_ALLTOALL:
                if ((j + k + 1) % p == r) {
                    rg.kind = SM_COPY;
                    rg.dst = (char *)a->rbuf + (size_t)j * blk;
                }
                break;
            case PX_COLL_REDUCE_SCATTER:
                if ((j + k + 1) % p == r)
                    rg.kind = SM_REDUCE;
                break;
            case PX_COLL_ALLREDUCE:
                if (k < p - 1 && (j + k + 1) % p == r)
                    rg.kind = SM_REDUCE;
                else if (k == p - 1) {
                    rg.kind = SM_COPY;
                    rg.dst = (char *)a->rbuf + vblk_off(a, p, j, es);
                }
                break;
            default:
                break;
            }
            if (rg.kind && n > 0 && st->nrg < 2)
                st->rg[st->nrg++] = rg;
            at += n;
        }
        st->n = at;
        c->pending += st->nrg;
    }
    free(len);
    /* The own block where the result holds it. */
    if (PX_COLL_ALLGATHER == c->opid) {
        char *dst = (char *)a->rbuf + (size_t)r * blk;
        if (dst != (const char *)a->sbuf && blk)
            memmove(dst, a->sbuf, blk);
    } else if (PX_COLL_ALLTOALL == c->opid) {
        char *dst = (char *)a->rbuf + (size_t)r * blk;
        const char *src = (const char *)a->sbuf + (size_t)r * blk;
        if (dst != src && blk)
            memmove(dst, src, blk);
    }
    return PX_SUCCESS;
}

/* The acked value this member shows for stream j: every chunk before the
 * next one it needs (all of them when it needs no more). */
static void publish_ack(sm_call_t *c, int j)
{
    sm_stream_t *st = &c->st[j];
    uint64_t upto = st->ri < st->nrg ? st->rg[st->ri].first + st->ci : st->n;
    atomic_store_explicit(px_coll_sm_acked(c->sg->base[c->sg->r], j), c->pos[j] + upto,
                          memory_order_release);
}

/* Publish what can be: returns chunks published. */
static int write_some(sm_call_t *c)
{
    px_coll_sm_group_t *sg = c->sg;
    int p = sg->p, r = sg->r, did = 0;
    while (c->w < c->nw) {
        const sm_wblock_t *b = &c->wb[c->wk];
        uint64_t nc = chunks_of(b->len, c->ch);
        if (c->wc >= nc) {
            c->wk++;
            c->wc = 0;
            continue;
        }
        if (b->reduced && c->got[c->wc] != (uint32_t)(p - 1))
            break;                     /* not reduced yet */
        uint64_t k = c->pos[r] + c->w; /* cumulative chunk number */
        if (k >= sg->nslots && k + 1 - sg->nslots > c->free_upto) {
            /* Has every reader passed the chunk this slot holds? */
            uint64_t lo = UINT64_MAX;
            for (int j = 0; j < p; ++j) {
                if (j == r)
                    continue;
                uint64_t v =
                    atomic_load_explicit(px_coll_sm_acked(sg->base[j], r), memory_order_acquire);
                if (v < lo)
                    lo = v;
            }
            c->free_upto = lo;
            if (k + 1 - sg->nslots > lo)
                break;
        }
        size_t at = (size_t)c->wc * c->ch, n = b->len - at < c->ch ? b->len - at : c->ch;
        memcpy(slot_of(sg, r, k), b->src + at, n);
        atomic_store_explicit(px_coll_sm_posted(sg->base[r]), k + 1, memory_order_release);
        c->w++;
        c->wc++;
        did++;
    }
    return did;
}

/* Take what has arrived from stream j: returns chunks taken, or an error. */
static int read_some(sm_call_t *c, int j)
{
    px_coll_sm_group_t *sg = c->sg;
    sm_stream_t *st = &c->st[j];
    int did = 0;
    while (st->ri < st->nrg) {
        sm_range_t *rg = &st->rg[st->ri];
        uint64_t i = rg->first + st->ci, k = c->pos[j] + i;
        if (st->seen <= k) {
            st->seen = atomic_load_explicit(px_coll_sm_posted(sg->base[j]), memory_order_acquire);
            if (st->seen <= k)
                break;
        }
        const unsigned char *src = slot_of(sg, j, k);
        size_t at = (size_t)st->ci * c->ch;
        if (SM_COPY == rg->kind) {
            size_t n = st->ci + 1 < rg->n ? c->ch : rg->last;
            memcpy(rg->dst + at, src, n);
        } else {
            size_t n = at + c->ch <= c->red_len ? c->ch : c->red_len - at;
            uint32_t *got = &c->got[st->ci];
            int rc = px_coll_reduce(c->red_out + at, *got ? c->red_out + at : c->red_in + at, src,
                                    n / c->es, c->dtype, c->rop);
            if (rc != PX_SUCCESS)
                return rc;
            (*got)++;
        }
        did++;
        if (++st->ci == rg->n) {
            st->ci = 0;
            st->ri++;
            c->pending--;
        }
        publish_ack(c, j);
    }
    return did;
}

/* An empty receive from every peer with this call's tag, which nothing
 * matches: it fails when the runtime finds the peer dead. */
static int watch_start(sm_call_t *c)
{
    const px_coll_p2p_t *p2p = px_coll_p2p();
    for (int j = 0; j < c->sg->p; ++j) {
        if (j == c->sg->r)
            continue;
        int rc = p2p->irecv(&sm_watch_byte, 0, c->g->world[j], c->s->tag, &c->rreq[j]);
        if (rc != PX_SUCCESS)
            return rc;
    }
    c->watching = true;
    return PX_SUCCESS;
}

static int watch_check(sm_call_t *c)
{
    const px_coll_p2p_t *p2p = px_coll_p2p();
    for (int j = 0; j < c->sg->p; ++j) {
        int err;
        if (c->rreq[j] && p2p->test(c->rreq[j], &err)) {
            p2p->release(&c->rreq[j]);
            if (err != PX_SUCCESS) {
                PX_OUTPUT_VERBOSE(5, 0, "coll/sm: %s: group rank %d failed: %s",
                                  px_coll_op_name(c->opid), j, px_strerror(err));
                return err;
            }
            /* Something matched the watch (a peer that is not coll/sm?). */
            px_show_error("coll/sm: %s: group rank %d sent a message this collective does not "
                          "expect (is coll/sm selected alike on every rank?)",
                          px_coll_op_name(c->opid), j);
            return PX_ERR_BAD_PARAM;
        }
    }
    return PX_SUCCESS;
}

static void release_all(sm_call_t *c)
{
    const px_coll_p2p_t *p2p = px_coll_p2p();
    for (int j = 0; c->rreq && j < c->sg->p; ++j) {
        if (c->rreq[j])
            p2p->release(&c->rreq[j]);
        if (c->sreq[j])
            p2p->release(&c->sreq[j]);
    }
    c->watching = false;
}

static int sm_progress(px_coll_sched_t *s)
{
    sm_call_t *c = s->priv;
    px_coll_sm_group_t *sg = c->sg;
    int p = sg->p, r = sg->r, rc;
    if (!s->started) {
        if (sg->finished != c->ticket)
            return 0; /* an earlier call on the group is still moving its chunks */
        s->started = true;
        if (c->needs_setup) {
            rc = setup_start(c);
            if (rc != PX_SUCCESS) {
                sg->failed = rc;
                return rc;
            }
        }
    }
    if (c->setup) {
        rc = setup_progress(c);
        if (rc <= 0) {
            if (rc < 0)
                sg->failed = rc;
            return rc;
        }
    }
    if (!c->watching) {
        if ((rc = watch_start(c)) != PX_SUCCESS)
            return rc;
        for (int j = 0; j < p; ++j)
            if (j != r)
                publish_ack(c, j);
    }
    int moved = 0;
    for (int spin = 0; spin < 64; ++spin) {
        int did = write_some(c);
        for (int j = 0; j < p; ++j) {
            if (j == r || c->st[j].ri >= c->st[j].nrg)
                continue;
            rc = read_some(c, j);
            if (rc < 0)
                return rc;
            did += rc;
        }
        if (c->w == c->nw && 0 == c->pending) {
            release_all(c);
            c->counted = true;
            sg->finished++; /* the next call may start */
            return 1;
        }
        if (!did)
            break;
        moved += did;
    }
    /* A peer that does not move may not be running (more processes than
     * cores): after a while give it this core instead of spinning. */
    if (moved)
        c->idle = 0;
    else if (++c->idle > 64)
        sched_yield();
    rc = watch_check(c);
    return rc != PX_SUCCESS ? rc : 0;
}

static void sm_abort(px_coll_sched_t *s)
{
    sm_call_t *c = s->priv;
    if (c)
        release_all(c);
}

static void sm_cleanup(px_coll_sched_t *s)
{
    sm_call_t *c = s->priv;
    if (NULL == c)
        return;
    release_all(c);
    if (c->ticketed && !c->counted && c->sg->finished == c->ticket)
        c->sg->finished++; /* failed: the group is failed too, later calls fail at once */
    free(c->wb);
    free(c->got);
    free(c);
    s->priv = NULL;
}

/* Build one call: its state and progress function. */
static int sm_build(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    px_coll_sm_group_t *sg = sm_of(g);
    if (NULL == sg)
        return PX_ERR_NOT_SUPPORTED;
    if (sg->failed)
        return sg->failed;
    int p = sg->p;
    bool setup = !sg->setup_claimed;
    size_t sz = sizeof(sm_call_t) +
                (size_t)p * (sizeof(sm_stream_t) + 2 * sizeof(void *) + sizeof(uint64_t)) +
                (setup ? (size_t)p * SM_DESC_MSG : 0);
    sm_call_t *c = calloc(1, sz);
    if (NULL == c)
        return PX_ERR_OUT_OF_RESOURCE;
    s->priv = c;
    s->progress = sm_progress;
    s->abort = sm_abort;
    s->cleanup = sm_cleanup;
    c->sg = sg;
    c->g = g;
    c->s = s;
    c->opid = a->opid;
    c->dtype = a->dtype;
    c->rop = a->rop;
    c->es = px_coll_dtype_size(a->dtype);
    /* A chunk is a slot, or for a block of less than 4 slots a quarter of
     * it (at least 8 KiB), so even one slot's worth is pipelined: the
     * readers copy the first quarter out while the writer copies the
     * second in. The same on every member (from the arguments only). */
    size_t ch = sg->slot, blk = a->count * c->es;
    if (blk / 4 < ch)
        ch = blk / 4 > 8192 ? blk / 4 : 8192;
    if (ch > sg->slot)
        ch = sg->slot;
    c->ch = ch / c->es * c->es;
    c->st = (sm_stream_t *)(c + 1);
    c->sreq = (struct px_request **)(c->st + p);
    c->rreq = c->sreq + p;
    c->pos = (uint64_t *)(c->rreq + p);
    c->needs_setup = setup;
    if (setup)
        c->desc_in = (unsigned char(*)[SM_DESC_MSG])(c->pos + p);
    int rc = sm_plan(c, a);
    if (rc != PX_SUCCESS)
        return rc;
    /* Calls take the streams in the order they are built, which is the
     * same on every member (collectives on a group are called in order). */
    for (int j = 0; j < p; ++j) {
        c->pos[j] = sg->pos[j];
        sg->pos[j] += j == sg->r ? c->nw : c->st[j].n;
    }
    sg->setup_claimed = true;
    c->ticket = sg->issued++;
    c->ticketed = true;
    return PX_SUCCESS;
}

/* ---- query ---- */

int px_coll_sm_query_group(px_coll_group_t *g, int *priority, px_coll_module_t **module)
{
    *priority = -1;
    *module = NULL;
    if (g->size < 2 || NULL == px_boot || NULL == px_boot->locality)
        return PX_SUCCESS;
    for (int j = 0; j < g->size; ++j) {
        px_btl_module_t *b;
        px_btl_endpoint_t *e;
        if (j == g->rank)
            continue;
        if (!(px_boot->locality(g->world[j]) & PX_PROC_LOCAL_HOST) ||
            px_btl_base_mem_peer(g->world[j], &b, &e) != PX_SUCCESS)
            return PX_SUCCESS; /* another host, or no shareable memory with it */
    }
    int p = g->size;
    px_coll_sm_group_t *sg = calloc(1, sizeof *sg);
    if (sg) {
        sg->maps = calloc((size_t)p, sizeof *sg->maps);
        sg->map_btl = calloc((size_t)p, sizeof *sg->map_btl);
        sg->map_ep = calloc((size_t)p, sizeof *sg->map_ep);
        sg->base = calloc((size_t)p, sizeof *sg->base);
        sg->pos = calloc((size_t)p, sizeof *sg->pos);
        sg->mapped = calloc((size_t)p, sizeof *sg->mapped);
    }
    if (!sg || !sg->maps || !sg->map_btl || !sg->map_ep || !sg->base || !sg->pos || !sg->mapped) {
        if (sg)
            px_coll_sm_group_free(g, &sg->module);
        return PX_SUCCESS; /* decline: the other components serve */
    }
    sg->p = p;
    sg->r = g->rank;
    sg->slot = (px_coll_sm_chunk + 63) & ~(size_t)63;
    sg->nslots = (uint32_t)(px_coll_sm_slots >= 2 ? px_coll_sm_slots : 2);
    sg->module.name = "sm";
    sg->module.op[PX_COLL_BCAST] = sm_build;
    sg->module.op[PX_COLL_ALLGATHER] = sm_build;
    sg->module.op[PX_COLL_ALLTOALL] = sm_build;
    sg->module.op[PX_COLL_REDUCE_SCATTER] = sm_build;
    sg->module.op[PX_COLL_ALLREDUCE] = sm_build;
    sg->module.group_free = px_coll_sm_group_free;
    *priority = px_coll_sm_priority;
    *module = &sg->module;
    return PX_SUCCESS;
}

void px_coll_sm_group_free(px_coll_group_t *g, px_coll_module_t *m)
{
    (void)g;
    px_coll_sm_group_t *sg = (px_coll_sm_group_t *)m;
    if (NULL == sg)
        return;
    for (int j = 0; sg->mapped && j < sg->p; ++j)
        if (sg->mapped[j])
            px_btl_base_mem_unmap(sg->map_btl[j], &sg->maps[j]);
    if (sg->own_btl_valid)
        px_btl_base_mem_free(sg->own_btl, &sg->own);
    free(sg->maps);
    free(sg->map_btl);
    free(sg->map_ep);
    free(sg->base);
    free(sg->pos);
    free(sg->mapped);
    free(sg);
}
