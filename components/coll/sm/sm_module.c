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
 *
 * With single copy (sm.h) the same operations are transfers straight between
 * the members' buffers (d's receive buffer <- s's buffer), each step taken
 * by whichever of d and s comes first:
 *
 *   bcast           root -> every other member, the whole vector.
 *   allgather       s's block -> block s of every other member's result.
 *   alltoall        s's block for d -> block s of d's result.
 *   reduce_scatter  no transfer: member r reads block r of every other
 *                   member's input, a step at a time, and reduces it into its
 *                   result (own input first, then the others in rank order).
 *   allreduce       the same for block r of the vector (p near-equal blocks),
 *                   then s's reduced block -> every other member's result,
 *                   once s's record says it is reduced.
 *
 * Which calls go through single copy is agreed at setup (every member must
 * reach every other), so the streams' counters and the records never mix.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define SM_HAVE_NT 1
#endif
#include "components/coll/sm/sm.h"
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

/* A setup message: description length, flags (bit 0: single copy reaches
 * every member from here), the description. */
#define SM_DESC_MSG (8 + PX_BTL_MEM_DESC_MAX)

enum { SM_COPY = 1, SM_REDUCE = 2 };

/* What a member takes from one stream: up to two ranges of its chunks. */
typedef struct sm_range {
    uint64_t first, n; /* chunks [first, first + n) of the stream in this call */
    size_t last;       /* bytes of its last chunk */
    int kind;          /* SM_COPY or SM_REDUCE */
    bool nt;           /* copy: the block is large (sm_use_nt) */
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

/* One single-copy transfer this member takes part in: d's receive buffer +
 * doff <- s's buffer (its receive buffer when src_r, else its send buffer) +
 * soff, len bytes in n steps of ch bytes, steps [base, base + n) of the
 * counters claim[s] / comp[s] in d's segment. */
typedef struct sm_xf {
    int d, s;
    bool src_r, gated; /* gated: s's block must be reduced first (allreduce) */
    bool done;
    size_t doff, soff, len, ch;
    uint64_t base, n;
} sm_xf_t;

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
    int err_pending; /* a single-copy step failed with this (see sm_progress) */
    double err_since;
    bool ticketed, counted;
    px_coll_args_t a;
    bool planned;
    bool sc; /* this call goes by single copy (the group's cma and sc_min) */
    /* streams: this member's own block into its result (allgather,
     * alltoall), a chunk after each chunk it publishes */
    const char *own_src;
    char *own_dst;
    size_t own_len, own_at;
    bool own_nt;
    /* single copy */
    uint64_t seq; /* this call's record number */
    sm_xf_t *xf;  /* transfers with this member as d or s */
    int nxf;
    uint64_t *psb, *prb;      /* [p]: each member's buffers, from its record */
    uint8_t *peer;            /* [p]: 0 record not seen, 1 seen, 2 past this call */
    size_t red_soff;          /* where block r is in every member's input */
    size_t red_ch;            /* bytes of a reduction step */
    uint64_t red_next, red_n; /* reduction steps done / in all */
    bool red_pub;             /* `reduced` published */
} sm_call_t;

static char sm_watch_byte;

/* Whether a block of this many bytes is copied into a result with
 * non-temporal stores (coll_sm_nt_min; 0: never). */
static inline bool sm_use_nt(size_t block)
{
    return px_coll_sm_nt_min && block >= px_coll_sm_nt_min;
}

/* Copy n bytes into a user's result buffer (the two ranges do not overlap
 * unless equal). With `nt` (the block this is part of passes sm_use_nt),
 * by non-temporal stores: the block is larger than the caches near a core
 * hold, and a cached copy would read every destination line before writing
 * it and evict the lines the copies that follow need (the process_vm_readv
 * of the peers' blocks); glibc's memcpy switches to such stores only above
 * a share of the (often misreported) last-level cache, 192 MiB on the
 * development VM, where a memcpy then a process_vm_readv of 2-16 MiB took
 * 1.1-1.6x as long as with them (docs/measurements/coll.md). Returns true
 * when the streaming stores were used. */
static bool sm_copy_out(void *dst, const void *src, size_t n, bool nt)
{
    if (dst == src || 0 == n)
        return false;
#ifdef SM_HAVE_NT
    char *d = dst;
    const char *s = src;
    uintptr_t da = (uintptr_t)dst, sa = (uintptr_t)src;
    if (nt && (da + n <= sa || sa + n <= da)) {
        size_t head = (size_t)(-(uintptr_t)d & 15), i = 0;
        if (head > n)
            head = n; /* a chunk of a large block may be a few bytes */
        memcpy(d, s, head);
        d += head;
        s += head;
        n -= head;
        for (; i + 64 <= n; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
            _mm_stream_si128((__m128i *)(void *)(d + i), a);
            _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
            _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
            _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
        }
        _mm_sfence(); /* the stores are visible before anything that follows */
        memcpy(d + i, s + i, n - i);
        return true;
    }
#else
    (void)nt;
#endif
    memmove(dst, src, n);
    return false;
}

/* A member's own block into its result (allgather, alltoall). */
static void sm_copy_own(const sm_call_t *c, void *dst, const void *src, size_t n)
{
    if (sm_copy_out(dst, src, n, sm_use_nt(n)))
        PX_OUTPUT_VERBOSE(30, px_coll_base_framework.output,
                          "coll/sm: %s: own block of %zu bytes copied with non-temporal stores",
                          px_coll_op_name(c->opid), n);
}

/* ---- the group's segments ---- */

static px_coll_sm_group_t *sm_of(px_coll_group_t *g)
{
    for (int k = 0; k < g->nmodules; ++k)
        if (g->modules[k] && g->modules[k]->group_free == px_coll_sm_group_free)
            return (px_coll_sm_group_t *)g->modules[k];
    return NULL;
}

/* Header, posted, acked[p], the record, claim[p], comp[p]: one line each. */
static size_t data_off(int p)
{
    size_t ctl = (3 + 3 * (size_t)p) * PX_COLL_SM_LINE;
    return (ctl + 4095) & ~(size_t)4095;
}

/* Whether btl_get/btl_put of the module reaching member j copy straight
 * between the two processes' memory (no registration). */
static bool sc_reaches(px_coll_sm_group_t *sg, int j)
{
    const px_btl_module_t *b = sg->map_btl[j];
    return b && b->btl_get && b->btl_put && !(b->btl_flags & PX_BTL_FLAGS_NEEDS_REG) &&
           (b->btl_flags & (PX_BTL_FLAGS_GET | PX_BTL_FLAGS_XFER_RDMA));
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
    h->step = sg->step;
    h->sc_min = px_coll_sm_single_copy_min;
    h->sc_red_min = px_coll_sm_single_copy_red_min;
    __atomic_store_n(&h->magic, PX_COLL_SM_MAGIC, __ATOMIC_RELEASE);
    sg->base[r] = sg->own.base;
    uint32_t dl = sg->own.desc_len, flags = 0;
    if (PX_COLL_SM_SC_AUTO == px_coll_sm_single_copy) {
        flags = 1;
        for (int j = 0; j < p; ++j)
            if (j != r && !sc_reaches(sg, j))
                flags = 0;
    }
    memset(c->desc_out, 0, sizeof c->desc_out);
    memcpy(c->desc_out, &dl, 4);
    memcpy(c->desc_out + 4, &flags, 4);
    memcpy(c->desc_out + 8, sg->own.desc, dl <= PX_BTL_MEM_DESC_MAX ? dl : PX_BTL_MEM_DESC_MAX);
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
        px_btl_base_mem_map(sg->map_btl[j], sg->map_ep[j], c->desc_in[j] + 8, dl, &sg->maps[j]);
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
    else if (h->nslots != sg->nslots || h->slot != sg->slot || h->data_off != data_off(sg->p) ||
             h->step != sg->step)
        why = "its coll_sm_chunk / coll_sm_slots / coll_sm_step differ from this member's (set "
              "them alike on every rank)";
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
    uint32_t all = 0;
    memcpy(&all, c->desc_out + 4, 4);
    for (int j = 0; j < p; ++j) {
        if (j == r)
            continue;
        int rc = map_peer(c, j);
        if (rc != PX_SUCCESS)
            return rc;
        uint32_t f;
        memcpy(&f, c->desc_in[j] + 4, 4);
        all &= f;
    }
    /* Every member sees every member's flags: all agree. The size from
     * which a call goes by single copy is group rank 0's (its header). */
    c->sg->cma = all & 1;
    const px_coll_sm_hdr_t *h0 = (const void *)c->sg->base[0];
    c->sg->sc_min = 0 == r ? px_coll_sm_single_copy_min : h0->sc_min;
    c->sg->sc_red_min = 0 == r ? px_coll_sm_single_copy_red_min : h0->sc_red_min;
    if (c->sg->cma)
        PX_OUTPUT_VERBOSE(10, px_coll_base_framework.output,
                          "coll/sm: group of %d (context %u): single copy (btl_get/btl_put between "
                          "the buffers) from %zu bytes (allreduce, reduce_scatter from %zu), "
                          "streams below",
                          p, c->g->ctx, c->sg->sc_min, c->sg->sc_red_min);
    else
        PX_OUTPUT_VERBOSE(10, px_coll_base_framework.output,
                          "coll/sm: group of %d (context %u): streams through the shared segments",
                          p, c->g->ctx);
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
            rg.nt = sm_use_nt(len[k]);
            if (rg.kind && n > 0 && st->nrg < 2)
                st->rg[st->nrg++] = rg;
            at += n;
        }
        st->n = at;
        c->pending += st->nrg;
    }
    free(len);
    /* The own block where the result holds it: a chunk after each chunk
     * this member publishes (write_some), so the copy runs while the
     * others copy out what it published, from a source just read into the
     * cache (a copy of the whole block first left the others waiting for
     * the first chunk: 1 MiB allgather 1.3x as long, docs/measurements/coll.md). */
    if (PX_COLL_ALLGATHER == c->opid || PX_COLL_ALLTOALL == c->opid) {
        c->own_src = (const char *)a->sbuf + (PX_COLL_ALLTOALL == c->opid ? (size_t)r * blk : 0);
        c->own_dst = (char *)a->rbuf + (size_t)r * blk;
        c->own_len = c->own_src == c->own_dst ? 0 : blk;
        c->own_nt = sm_use_nt(blk);
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

/* The next chunk of this member's own block into its result (streams). */
static void own_some(sm_call_t *c)
{
    if (c->own_at >= c->own_len)
        return;
    size_t n = c->own_len - c->own_at < c->ch ? c->own_len - c->own_at : c->ch;
    bool nt = sm_copy_out(c->own_dst + c->own_at, c->own_src + c->own_at, n, c->own_nt);
    if (nt && 0 == c->own_at)
        PX_OUTPUT_VERBOSE(30, px_coll_base_framework.output,
                          "coll/sm: %s: own block of %zu bytes copied with non-temporal stores",
                          px_coll_op_name(c->opid), c->own_len);
    c->own_at += n;
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
        own_some(c);
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
            sm_copy_out(rg->dst + at, src, n, rg->nt);
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

/* ---- single copy ---- */

/* Bytes of a step of a transfer (or reduction) of `len` bytes: coll_sm_step,
 * or for up to 2 steps a half (at least 16 KiB, or the whole when smaller),
 * so the two members of a bcast share even a 64 KiB transfer. Whole lines,
 * so whole elements; the same on every member. How many steps a member
 * takes at once (one process_vm_readv/writev) is its own choice: see
 * sc_xf_work. */
static size_t sc_step(const px_coll_sm_group_t *sg, size_t len)
{
    size_t st = sg->step, ch = st;
    if (len <= 2 * st) {
        ch = (len + 1) / 2;
        if (ch < 16384)
            ch = len < 16384 ? len : 16384;
    }
    ch = (ch + 63) & ~(size_t)63;
    return ch < st ? ch : st;
}

#define SC_WRITING (1ULL << 63)

/* Add the transfer d <- s when this member is one of the two. */
static void sc_add(sm_call_t *c, int d, int s, size_t doff, size_t soff, size_t len, bool src_r,
                   bool gated)
{
    px_coll_sm_group_t *sg = c->sg;
    int r = sg->r;
    if (d == s || (d != r && s != r))
        return;
    sm_xf_t *x = &c->xf[c->nxf++];
    *x = (sm_xf_t){
        .d = d, .s = s, .src_r = src_r, .gated = gated, .doff = doff, .soff = soff, .len = len};
    x->ch = sc_step(sg, len);
    x->n = len ? (len + x->ch - 1) / x->ch : 0;
    uint64_t *cum = d == r ? &sg->cin[s] : &sg->cout[d];
    x->base = *cum;
    *cum += x->n;
    x->done = 0 == x->n;
}

/* Lay out the call and publish this member's record. */
static int sc_plan(sm_call_t *c)
{
    px_coll_sm_group_t *sg = c->sg;
    const px_coll_args_t *a = &c->a;
    int p = sg->p, r = sg->r;
    size_t es = c->es, blk = a->count * es;
    c->xf = malloc(2 * (size_t)p * sizeof *c->xf);
    if (NULL == c->xf)
        return PX_ERR_OUT_OF_RESOURCE;
    c->seq = c->ticket + 1;
    c->nxf = 0;
    for (int j = 0; j < p; ++j) {
        if (j == r)
            continue;
        /* Transfers into this member first (it reads them), then out. */
        for (int pass = 0; pass < 2; ++pass) {
            int d = pass ? j : r, s = pass ? r : j;
            switch (c->opid) {
            case PX_COLL_BCAST:
                if (s == a->root)
                    sc_add(c, d, s, 0, 0, blk, false, false);
                break;
            case PX_COLL_ALLGATHER:
                sc_add(c, d, s, (size_t)s * blk, 0, blk, false, false);
                break;
            case PX_COLL_ALLTOALL:
                sc_add(c, d, s, (size_t)s * blk, (size_t)d * blk, blk, false, false);
                break;
            case PX_COLL_ALLREDUCE:
                sc_add(c, d, s, vblk_off(a, p, s, es), vblk_off(a, p, s, es), vblk_len(a, p, s, es),
                       true, true);
                break;
            default:
                break;
            }
        }
    }
    if (PX_COLL_REDUCE_SCATTER == c->opid) {
        c->red_in = (const char *)a->sbuf + (size_t)r * blk;
        c->red_out = a->rbuf;
        c->red_len = blk;
        c->red_soff = (size_t)r * blk;
    } else if (PX_COLL_ALLREDUCE == c->opid) {
        c->red_soff = vblk_off(a, p, r, es);
        c->red_in = (const char *)a->sbuf + c->red_soff;
        c->red_out = (char *)a->rbuf + c->red_soff;
        c->red_len = vblk_len(a, p, r, es);
    }
    c->red_ch = sc_step(sg, c->red_len);
    c->red_n = c->red_len ? (c->red_len + c->red_ch - 1) / c->red_ch : 0;
    if (c->red_n && NULL == sg->tmp) {
        sg->tmp = aligned_alloc(64, sg->step);
        if (NULL == sg->tmp)
            return PX_ERR_OUT_OF_RESOURCE;
    }
    /* seq: "writing call seq" while the fields change (a member still in the
     * call before, reading them, sees it and knows this one is past it). */
    px_coll_sm_rec_t *rec = px_coll_sm_rec(sg->base[r], p);
    atomic_store_explicit(&rec->seq, c->seq | SC_WRITING, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    __atomic_store_n(&rec->sbuf, (uint64_t)(uintptr_t)a->sbuf, __ATOMIC_RELAXED);
    __atomic_store_n(&rec->rbuf, (uint64_t)(uintptr_t)a->rbuf, __ATOMIC_RELAXED);
    __atomic_store_n(&rec->bytes, (uint64_t)blk, __ATOMIC_RELAXED);
    __atomic_store_n(&rec->opid, (int32_t)c->opid, __ATOMIC_RELAXED);
    __atomic_store_n(&rec->root, (int32_t)(PX_COLL_BCAST == c->opid ? a->root : 0),
                     __ATOMIC_RELAXED);
    atomic_store_explicit(&rec->seq, c->seq, memory_order_release);
    /* The own block where the result holds it: after the record, so the
     * others may read this member's block meanwhile (nobody reads or
     * writes the own block of the result). */
    if (PX_COLL_ALLGATHER == c->opid || PX_COLL_ALLTOALL == c->opid) {
        sm_copy_own(c, (char *)a->rbuf + (size_t)r * blk,
                    (const char *)a->sbuf + (PX_COLL_ALLTOALL == c->opid ? (size_t)r * blk : 0),
                    blk);
    }
    return PX_SUCCESS;
}

/* Member j's record: 1 when read (or j is past this call), 0 not yet, or an
 * error when it describes another call than this member's. */
static int sc_record(sm_call_t *c, int j)
{
    px_coll_sm_group_t *sg = c->sg;
    px_coll_sm_rec_t *rec = px_coll_sm_rec(sg->base[j], sg->p);
    uint64_t q = atomic_load_explicit(&rec->seq, memory_order_acquire);
    if (q & SC_WRITING)
        q = (q & ~SC_WRITING) > c->seq ? q & ~SC_WRITING : 0; /* past, or not there yet */
    if (q < c->seq)
        return 0;
    if (q == c->seq) {
        uint64_t sb = __atomic_load_n(&rec->sbuf, __ATOMIC_RELAXED);
        uint64_t rb = __atomic_load_n(&rec->rbuf, __ATOMIC_RELAXED);
        uint64_t by = __atomic_load_n(&rec->bytes, __ATOMIC_RELAXED);
        int32_t op = __atomic_load_n(&rec->opid, __ATOMIC_RELAXED);
        int32_t root = __atomic_load_n(&rec->root, __ATOMIC_RELAXED);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&rec->seq, memory_order_relaxed) == q) {
            size_t blk = c->a.count * c->es;
            int myroot = PX_COLL_BCAST == c->opid ? c->a.root : 0;
            if (op != c->opid || by != blk || root != myroot) {
                const char *name = px_coll_op_name(op);
                px_show_error("coll/sm: group rank %d's call number %llu through coll/sm is %s%s "
                              "of %llu bytes (root %d), this member's %s of %zu bytes (root %d): "
                              "every member must make the same collective calls, with the same "
                              "sizes, in the same order",
                              j, (unsigned long long)q, name ? name : "an unknown operation",
                              name ? "" : " (not a coll/sm record?)", (unsigned long long)by,
                              (int)root, px_coll_op_name(c->opid), blk, myroot);
                return PX_ERR_BAD_PARAM;
            }
            c->psb[j] = sb;
            c->prb[j] = rb;
            c->peer[j] = 1;
            return 1;
        }
    }
    /* Past this call: it finished it, so every transfer with it is done. */
    c->peer[j] = 2;
    return 1;
}

static void sc_cb(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                  px_btl_registration_handle_t *h, void *context, void *cbdata, int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)h;
    (void)context;
    *(int *)cbdata = PX_SUCCESS == status ? 1 : (status < 0 ? status : PX_ERR_COMM);
}

/* Copy n bytes between `local` and member j's `remote` (get: from j). */
static int sc_move(sm_call_t *c, int j, bool get, void *local, uint64_t remote, size_t n)
{
    px_coll_sm_group_t *sg = c->sg;
    px_btl_module_t *b = sg->map_btl[j];
    size_t lim = get ? b->btl_get_limit : b->btl_put_limit;
    if (0 == lim)
        lim = SIZE_MAX;
    for (size_t at = 0; at < n;) {
        size_t k = n - at < lim ? n - at : lim;
        int st = 0;
        int rc =
            (get ? b->btl_get : b->btl_put)(b, sg->map_ep[j], (char *)local + at, remote + at, NULL,
                                            NULL, k, 0, PX_BTL_NO_ORDER, sc_cb, NULL, &st);
        bool late = PX_SUCCESS == rc && 0 == st;
        if (PX_SUCCESS == rc && st < 0)
            rc = st;
        if (late || rc != PX_SUCCESS) {
            px_show_error("coll/sm: %s: %s %zu bytes %s group rank %d (job rank %d) at 0x%llx "
                          "failed: %s",
                          px_coll_op_name(c->opid), get ? "reading" : "writing", k,
                          get ? "from" : "into", j, c->g->world[j],
                          (unsigned long long)(remote + at),
                          late ? "the transport did not complete it at once (set "
                                 "coll_sm_single_copy=none)"
                               : "the member is gone, or the address it published is not in its "
                                 "memory");
            c->err_pending = late ? PX_ERR_COMM : rc;
            return c->err_pending;
        }
        at += k;
    }
    return PX_SUCCESS;
}

/* Claim steps of [base, base + n) on `ctr`: true with the first one's index
 * (*i) and how many (*k): every step left when `take` is 0, else half of
 * them (rounded up) when `take` is 2, else one. */
static bool sc_claim(_Atomic uint64_t *ctr, uint64_t base, uint64_t n, int take, uint64_t *i,
                     uint64_t *k)
{
    uint64_t v = atomic_load_explicit(ctr, memory_order_relaxed);
    while (v >= base && v - base < n) {
        uint64_t left = n - (v - base);
        uint64_t want = 0 == take ? left : 2 == take ? (left + 1) / 2 : 1;
        if (atomic_compare_exchange_weak_explicit(ctr, &v, v + want, memory_order_acq_rel,
                                                  memory_order_relaxed)) {
            *i = v - base;
            *k = want;
            return true;
        }
    }
    return false;
}

static uint64_t sc_reduced(sm_call_t *c, int j)
{
    return atomic_load_explicit(&px_coll_sm_rec(c->sg->base[j], c->sg->p)->reduced,
                                memory_order_acquire);
}

/* Take the steps of transfer x nobody took yet. */
static int sc_xf_work(sm_call_t *c, sm_xf_t *x, int *did)
{
    px_coll_sm_group_t *sg = c->sg;
    int p = sg->p, r = sg->r, j = x->d == r ? x->s : x->d;
    unsigned char *db = sg->base[x->d];
    _Atomic uint64_t *comp = px_coll_sm_comp(db, p, x->s);
    if (atomic_load_explicit(comp, memory_order_acquire) >= x->base + x->n)
        goto check;
    if (c->peer[j] != 1)
        return PX_SUCCESS; /* its record is not there yet */
    if (x->gated && (x->s == r ? !c->red_pub : sc_reduced(c, x->s) < c->seq))
        return PX_SUCCESS; /* the block is not reduced yet */
    /* How many steps a grab takes: the destination all that are left, in
     * one process_vm_readv (each member reads what it receives while the
     * others read theirs), except from a bcast's root, which has nothing
     * else to do: half of what is left, while the root writes the rest a
     * step at a time. A source takes one step at a time (it helps a
     * destination that is late, which takes the rest when it comes). */
    int take = x->d == r ? (PX_COLL_BCAST == c->opid ? 2 : 0) : 1;
    uint64_t i, k;
    while (sc_claim(px_coll_sm_claim(db, p, x->s), x->base, x->n, take, &i, &k)) {
        size_t at = (size_t)i * x->ch, end = (size_t)(i + k) * x->ch;
        size_t n = (end < x->len ? end : x->len) - at;
        int rc;
        if (x->d == r) {
            uint64_t src = (x->src_r ? c->prb[x->s] : c->psb[x->s]) + x->soff + at;
            rc = sc_move(c, x->s, true, (char *)c->a.rbuf + x->doff + at, src, n);
        } else {
            char *src = (char *)(x->src_r ? c->a.rbuf : (void *)c->a.sbuf) + x->soff + at;
            rc = sc_move(c, x->d, false, src, c->prb[x->d] + x->doff + at, n);
        }
        if (rc != PX_SUCCESS)
            return rc;
        atomic_fetch_add_explicit(comp, k, memory_order_release);
        (*did)++;
    }
check:
    if (atomic_load_explicit(comp, memory_order_acquire) >= x->base + x->n)
        x->done = true;
    return PX_SUCCESS;
}

/* Reduce this member's block, a step at a time: own input, then every
 * other member's (read into the step buffer) in rank order. */
static int sc_reduce(sm_call_t *c, int *did)
{
    px_coll_sm_group_t *sg = c->sg;
    int p = sg->p, r = sg->r;
    if (c->red_pub)
        return PX_SUCCESS;
    for (int j = 0; j < p && c->red_next < c->red_n; ++j) {
        if (j == r)
            continue;
        if (0 == c->peer[j])
            return PX_SUCCESS;
        if (2 == c->peer[j]) {
            px_show_error("coll/sm: %s: group rank %d went on to its next call before this member "
                          "read its input (is every member calling the same collectives?)",
                          px_coll_op_name(c->opid), j);
            return PX_ERR_BAD_PARAM;
        }
    }
    while (c->red_next < c->red_n) {
        size_t at = (size_t)c->red_next * c->red_ch;
        size_t n = c->red_len - at < c->red_ch ? c->red_len - at : c->red_ch;
        bool first = true;
        for (int j = 0; j < p; ++j) {
            if (j == r)
                continue;
            int rc = sc_move(c, j, true, sg->tmp, c->psb[j] + c->red_soff + at, n);
            if (rc == PX_SUCCESS)
                rc = px_coll_reduce(c->red_out + at, first ? c->red_in + at : c->red_out + at,
                                    sg->tmp, n / c->es, c->dtype, c->rop);
            if (rc != PX_SUCCESS)
                return rc;
            first = false;
        }
        c->red_next++;
        (*did)++;
    }
    atomic_store_explicit(&px_coll_sm_rec(sg->base[r], p)->reduced, c->seq, memory_order_release);
    c->red_pub = true;
    (*did)++;
    return PX_SUCCESS;
}

/* 1 when this member's part of the call is over. */
static int sc_step_all(sm_call_t *c, int *did)
{
    px_coll_sm_group_t *sg = c->sg;
    int p = sg->p, r = sg->r, rc;
    for (int j = 0; j < p; ++j) {
        if (j != r && 0 == c->peer[j]) {
            rc = sc_record(c, j);
            if (rc < 0)
                return rc;
            *did += rc;
        }
    }
    if ((rc = sc_reduce(c, did)) != PX_SUCCESS)
        return rc;
    bool all = c->red_pub;
    for (int k = 0; k < c->nxf; ++k) {
        sm_xf_t *x = &c->xf[k];
        if (x->done)
            continue;
        if ((rc = sc_xf_work(c, x, did)) != PX_SUCCESS)
            return rc;
        all = all && x->done;
    }
    /* reduce_scatter: the others read this member's input until they
     * published their reduction. */
    for (int j = 0; all && PX_COLL_REDUCE_SCATTER == c->opid && j < p; ++j)
        if (j != r && sc_reduced(c, j) < c->seq)
            all = false;
    return all ? 1 : 0;
}

static double sm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The stream plan of a call, when it starts (calls start in the order they
 * were built, the same on every member). */
static int stream_plan(sm_call_t *c)
{
    px_coll_sm_group_t *sg = c->sg;
    int rc = sm_plan(c, &c->a);
    if (rc != PX_SUCCESS)
        return rc;
    for (int j = 0; j < sg->p; ++j) {
        c->pos[j] = sg->pos[j];
        sg->pos[j] += j == sg->r ? c->nw : c->st[j].n;
    }
    return PX_SUCCESS;
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
    if (!c->planned) {
        /* Single copy or streams, by size: the same on every member (the
         * arguments and the group's agreed mode and threshold). */
        bool red = PX_COLL_ALLREDUCE == c->opid || PX_COLL_REDUCE_SCATTER == c->opid;
        c->sc = sg->cma && c->a.count * c->es >= (red ? sg->sc_red_min : sg->sc_min);
        PX_OUTPUT_VERBOSE(30, px_coll_base_framework.output, "coll/sm: %s of %zu bytes: %s",
                          px_coll_op_name(c->opid), c->a.count * c->es,
                          c->sc ? "single copy" : "streams");
        rc = c->sc ? sc_plan(c) : stream_plan(c);
        if (rc != PX_SUCCESS)
            return rc;
        c->planned = true;
    }
    if (!c->watching) {
        if ((rc = watch_start(c)) != PX_SUCCESS)
            return rc;
        for (int j = 0; j < p && !c->sc; ++j)
            if (j != r)
                publish_ack(c, j);
    }
    if (c->err_pending) {
        /* A copy failed: the runtime may be about to find the member dead
         * (its failure is the better error); else the copy's error. */
        rc = watch_check(c);
        if (rc != PX_SUCCESS)
            return rc;
        if (0 == c->err_since)
            c->err_since = sm_now();
        else if (sm_now() - c->err_since > 0.5)
            return c->err_pending;
        return 0;
    }
    int moved = 0;
    for (int spin = 0; spin < 64; ++spin) {
        int did = 0;
        if (c->sc) {
            rc = sc_step_all(c, &did);
            if (rc < 0)
                return c->err_pending ? 0 : rc;
            if (rc > 0) {
                release_all(c);
                c->counted = true;
                sg->finished++; /* the next call may start */
                return 1;
            }
            if (!did)
                break;
            moved += did;
            continue;
        }
        did = write_some(c);
        for (int j = 0; j < p; ++j) {
            if (j == r || c->st[j].ri >= c->st[j].nrg)
                continue;
            rc = read_some(c, j);
            if (rc < 0)
                return rc;
            did += rc;
        }
        if (c->w == c->nw && 0 == c->pending) {
            while (c->own_at < c->own_len)
                own_some(c);
            release_all(c);
            c->counted = true;
            sg->finished++; /* the next call may start */
            return 1;
        }
        if (!did)
            break;
        moved += did;
    }
    /* A peer that does not move may not be running: giving it the core is
     * the runtime's idle policy (progress_yield_when_idle: yield when more
     * ranks than cores), applied by the wait that calls this. Yielding here
     * too, with a core per rank, gave the core to other processes for a
     * whole time slice while the peer, on the other core, was about to
     * answer. */
    (void)moved;
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
    free(c->xf);
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
                (size_t)p * (sizeof(sm_stream_t) + 2 * sizeof(void *) + 3 * sizeof(uint64_t) + 1) +
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
    c->psb = c->pos + p;
    c->prb = c->psb + p;
    c->needs_setup = setup;
    if (setup)
        c->desc_in = (unsigned char(*)[SM_DESC_MSG])(c->prb + p);
    c->peer = (uint8_t *)(c->prb + p) + (setup ? (size_t)p * SM_DESC_MSG : 0);
    c->a = *a;
    /* Calls run in the order they are built, which is the same on every
     * member (collectives on a group are called in order): each is laid
     * out when it starts (the group's mode is known from then). */
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
        sg->cin = calloc((size_t)p, sizeof *sg->cin);
        sg->cout = calloc((size_t)p, sizeof *sg->cout);
    }
    if (!sg || !sg->maps || !sg->map_btl || !sg->map_ep || !sg->base || !sg->pos || !sg->mapped ||
        !sg->cin || !sg->cout) {
        if (sg)
            px_coll_sm_group_free(g, &sg->module);
        return PX_SUCCESS; /* decline: the other components serve */
    }
    sg->p = p;
    sg->r = g->rank;
    sg->slot = (px_coll_sm_chunk + 63) & ~(size_t)63;
    sg->nslots = (uint32_t)(px_coll_sm_slots >= 2 ? px_coll_sm_slots : 2);
    sg->step = px_coll_sm_step > 4096 ? px_coll_sm_step & ~(size_t)63 : 4096;
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
    free(sg->cin);
    free(sg->cout);
    free(sg->tmp);
    free(sg);
}
