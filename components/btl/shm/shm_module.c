/*
 * shm_module.c: btl/shm's operations: the fast box and the fragment queue on the send
 * and receive paths, progress, and the module's operations table (single copy in
 * shm_rdma.c, the end of a peer in shm_peers.c, teardown in shm_component.c).
 *
 * Fast box entry (64-byte aligned in the ring): an 8-byte header
 *   bit 63 valid, 62 skip to the ring's start, 61 pad (step over),
 *   bits 48..54 lead (bytes between the header and the data, to align it),
 *   bits 32..47 entry size / 64, 24..31 tag, 0..23 data length
 * then the data. The sender keeps the header slots ahead of its write
 * position zeroed (in batches, after a publish; so the receiver never takes
 * stale bytes for a header), writes the data, and stores the header last
 * with release order. The receiver publishes how far it has read in its ack
 * line for that sender.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

#define FB_VALID PX_BTL_SHM_FB_VALID
#define FB_SKIP  PX_BTL_SHM_FB_SKIP
#define FB_PAD   PX_BTL_SHM_FB_PAD

PX_CLASS_INSTANCE(px_btl_shm_frag_t, px_btl_descriptor_t, NULL, NULL);

/* ------------------------------------------------------------ helpers */

static inline void *rel_ptr(uint64_t rel)
{
    return px_btl_shm_state.bases[rel >> 48] + (rel & 0xffffffffffffULL);
}

/* A relative pointer read from shared memory points into a mapped segment's
 * fragment heap (px_btl_shm_rel_ok). */
static inline bool rel_ok(uint64_t rel)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    return px_btl_shm_rel_ok(rel, s->nlocal, s->sizes, s->heap_off);
}

/* Push onto a peer's queue; false (after ending that peer's connection) when
 * its tail held a bad pointer. */
static inline bool fifo_push(px_btl_endpoint_t *ep, px_btl_shm_fifo_t *fifo,
                             px_btl_shm_frag_hdr_t *hdr, uint64_t rel)
{
    atomic_store_explicit(&hdr->next, PX_BTL_SHM_EMPTY, memory_order_relaxed);
    uint64_t prev = atomic_exchange_explicit(&fifo->tail, rel, memory_order_acq_rel);
    if (PX_LIKELY(prev == PX_BTL_SHM_EMPTY))
        atomic_store_explicit(&fifo->head, rel, memory_order_release);
    else if (PX_LIKELY(rel_ok(prev)))
        atomic_store_explicit(&((px_btl_shm_frag_hdr_t *)rel_ptr(prev))->next, rel,
                              memory_order_release);
    else {
        px_btl_shm_corrupt(ep, "its receive queue's tail 0x%016llx names no fragment",
                           (unsigned long long)prev);
        return false;
    }
    return true;
}

static inline px_btl_shm_frag_hdr_t *fifo_pop(px_btl_shm_fifo_t *fifo, uint64_t *relp)
{
    uint64_t head = atomic_load_explicit(&fifo->head, memory_order_acquire);
    if (PX_LIKELY(head == PX_BTL_SHM_EMPTY))
        return NULL;
    if (PX_UNLIKELY(!rel_ok(head))) {
        px_btl_shm_queue_corrupt(head, "the entry");
        return NULL;
    }
    *relp = head;
    px_btl_shm_frag_hdr_t *h = rel_ptr(head);
    uint64_t next = atomic_load_explicit(&h->next, memory_order_acquire);
    if (next == PX_BTL_SHM_EMPTY) {
        atomic_store_explicit(&fifo->head, PX_BTL_SHM_EMPTY, memory_order_relaxed);
        uint64_t expect = head;
        if (!atomic_compare_exchange_strong_explicit(&fifo->tail, &expect, PX_BTL_SHM_EMPTY,
                                                     memory_order_acq_rel, memory_order_relaxed)) {
            /* A producer swapped the tail after us; wait for its link (a few
             * instructions away, unless it was preempted in between: then
             * let it run). */
            unsigned spins = 0;
            while ((next = atomic_load_explicit(&h->next, memory_order_acquire)) ==
                   PX_BTL_SHM_EMPTY) {
                if (++spins < 1024)
                    __builtin_ia32_pause();
                else
                    sched_yield();
            }
            atomic_store_explicit(&fifo->head, next, memory_order_relaxed);
        }
    } else {
        atomic_store_explicit(&fifo->head, next, memory_order_relaxed);
    }
    return h;
}

static inline void deliver(px_btl_endpoint_t *ep, px_btl_tag_t tag, void *data, size_t len)
{
    ep->stream_run = 0; /* a message from it: our sends to it are no stream (yet) */
    const px_btl_active_message_callback_t *reg = &px_btl_base_active_message_trigger[tag];
    px_btl_segment_t seg = {data, len};
    px_btl_receive_descriptor_t rd = {
        .endpoint = ep,
        .src_rank = ep->rank,
        .des_segments = &seg,
        .des_segment_count = 1,
        .tag = tag,
        .cbdata = reg->cbdata,
    };
    if (PX_LIKELY(reg->cbfunc != NULL))
        reg->cbfunc(&px_btl_shm_module.super, &rd);
}

/* ------------------------------------------------------------ fast box */

/* Zero the header slots (first 8 bytes of each 32-byte slot) from fb_zeroed
 * up to `upto`, but only slots that are free (not holding unread entries).
 * The invariant: every slot start in [fb_wpos, fb_zeroed) is zero, so the
 * slot after a published entry never shows stale bytes as a header. Zeroing
 * runs ahead in batches after a publish, which keeps a second line's
 * ownership transfer off the path of each message. */
#define FB_SLOT       PX_BTL_SHM_FB_SLOT
#define FB_ZERO_LOW   1024
#define FB_ZERO_AHEAD 4096
static PX_NOINLINE void fbox_zero(px_btl_endpoint_t *ep, uint64_t from, uint64_t upto)
{
    const size_t fbs = ep->fbs;
    uint64_t z = ep->fb_zeroed;
    if (z < from) /* never inside an entry being written */
        z = from;
    for (; z < upto && z + FB_SLOT <= ep->fb_rpos_cache + fbs; z += FB_SLOT)
        *(volatile uint64_t *)(ep->fb_out + (z & (fbs - 1))) = 0;
    if (z > ep->fb_zeroed)
        ep->fb_zeroed = z;
}

/* Lazy fault-in (btl_shm_fault_in=lazy): during a ring's first pass, fault
 * in our mapping of it up to the chunk boundary past `upto` (an absolute
 * ring position) in one madvise, instead of a page fault per 4 KiB page
 * while a message waits; *pop is how far it is done (UINT64_MAX: the whole
 * ring, nothing more to do). Faulting every ring in at px_init instead
 * (setup) cost `pxrun -n 8` startup 2-3 times over (docs/shm.md). */
static PX_NOINLINE void fbox_fault_ahead(char *ring, size_t fbs, uint64_t *pop, uint64_t upto)
{
    uint64_t from = *pop,
             to = (upto + PX_BTL_SHM_FAULT_CHUNK) & ~(uint64_t)(PX_BTL_SHM_FAULT_CHUNK - 1);
    if (to > fbs)
        to = fbs;
    if (to > from)
        px_btl_shm_populate(ring + from, (size_t)(to - from));
    *pop = to >= fbs ? UINT64_MAX : to;
}
/* The reader faults in this far ahead of its position (more than the
 * largest entry of the default btl_shm_fbox_max_send). */
#define FB_FAULT_LOOKAHEAD ((uint64_t)32 << 10)

/* Reserve room for an entry of `total` bytes (header included, whole slots);
 * returns the ring offset to write at, or -1 when full. An entry of more than
 * one slot starts on a cache line (a one-slot pad entry before it when the
 * last entry ended mid-line), so the layout of large entries (prepare_src's
 * lead) holds. Writes a skip entry when the entry does not fit before the
 * end of the ring. */
static PX_NOINLINE long fbox_reserve_slow(px_btl_endpoint_t *ep, size_t esz)
{
    const size_t fbs = ep->fbs;
    size_t off = ep->fb_wpos & (fbs - 1);
    size_t align = esz > FB_SLOT ? (size_t)(-off & 63) : 0;
    const bool skip = off + align + esz > fbs;
    size_t pad = skip ? fbs - off : align;
    uint64_t need = ep->fb_wpos + pad + esz + 64; /* +64: the zeroed next header */
    if (PX_UNLIKELY(need - ep->fb_rpos_cache > fbs)) {
        uint64_t r = atomic_load_explicit(ep->fb_out_ack, memory_order_acquire);
        /* The peer's read position only moves forward, never past what we wrote. */
        if (PX_UNLIKELY(r < ep->fb_rpos_cache || r > ep->fb_wpos)) {
            if (!ep->corrupt)
                px_btl_shm_corrupt(ep,
                                   "its read position %llu in our fast box is outside %llu..%llu",
                                   (unsigned long long)r, (unsigned long long)ep->fb_rpos_cache,
                                   (unsigned long long)ep->fb_wpos);
            return -1;
        }
        ep->fb_rpos_cache = r;
        if (need - ep->fb_rpos_cache > fbs) {
            px_btl_shm_state.fbox_full++;
            return -1;
        }
    }
    /* Lazy fault-in, first pass only, as far as the zeroing ahead reaches. */
    if (PX_UNLIKELY(need > ep->fb_out_pop))
        fbox_fault_ahead(ep->fb_out, fbs, &ep->fb_out_pop, need + FB_ZERO_AHEAD);
    if (PX_UNLIKELY(pad)) {
        if (ep->fb_zeroed <= ep->fb_wpos + pad)
            fbox_zero(ep, ep->fb_wpos + pad, ep->fb_wpos + pad + 64);
        /* To the ring's start, or over the rest of the line (a pad entry). */
        uint64_t h =
            skip ? FB_VALID | FB_SKIP : FB_VALID | FB_PAD | ((uint64_t)(pad / FB_SLOT) << 32);
        atomic_store_explicit((_Atomic uint64_t *)(ep->fb_out + off), h, memory_order_release);
        ep->fb_wpos += pad;
        off = ep->fb_wpos & (fbs - 1);
    }
    return (long)off;
}

/* The usual case inline: room known (the cached read position), no pad or
 * skip before the entry, the pages faulted in. */
static inline long fbox_reserve(px_btl_endpoint_t *ep, size_t esz)
{
    const size_t fbs = ep->fbs;
    size_t off = ep->fb_wpos & (fbs - 1);
    uint64_t need = ep->fb_wpos + esz + 64;
    if (PX_LIKELY((esz <= FB_SLOT || 0 == (off & 63)) && off + esz <= fbs &&
                  need - ep->fb_rpos_cache <= fbs && need <= ep->fb_out_pop))
        return (long)off;
    return fbox_reserve_slow(ep, esz);
}

static inline void fbox_publish(px_btl_endpoint_t *ep, size_t off, size_t esz, px_btl_tag_t tag,
                                size_t len, size_t lead, uint64_t flags)
{
    uint64_t end = ep->fb_wpos + esz;
    if (PX_UNLIKELY(ep->fb_zeroed <= end))
        fbox_zero(ep, end, end + 64); /* the slot after this entry, before its header */
    atomic_store_explicit((_Atomic uint64_t *)(ep->fb_out + off),
                          FB_VALID | flags | ((uint64_t)lead << 48) |
                              ((uint64_t)(esz / FB_SLOT) << 32) | ((uint64_t)tag << 24) |
                              (uint64_t)len,
                          memory_order_release);
    ep->fb_wpos = end;
    if (PX_UNLIKELY(ep->fb_zeroed < end + FB_ZERO_LOW))
        fbox_zero(ep, end, end + FB_ZERO_AHEAD);
}

static inline int fbox_send2(px_btl_endpoint_t *ep, px_btl_tag_t tag, const void *a, size_t alen,
                             const void *b, size_t blen)
{
    size_t len = alen + blen;
    size_t esz = (8 + len + FB_SLOT - 1) & ~(size_t)(FB_SLOT - 1);
    long off = fbox_reserve(ep, esz);
    if (PX_UNLIKELY(off < 0))
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    char *d = ep->fb_out + off + 8;
    if (alen)
        memcpy(d, a, alen);
    if (blen)
        memcpy(d + alen, b, blen);
    fbox_publish(ep, (size_t)off, esz, tag, len, 0, 0);
    return PX_SUCCESS;
}

/* A control entry of btl/shm's own (PX_BTL_SHM_FB_CTL) into the peer's fast box. */
static int fbox_send_ctl(px_btl_endpoint_t *ep, const void *a, size_t len)
{
    size_t esz = (8 + len + FB_SLOT - 1) & ~(size_t)(FB_SLOT - 1);
    long off = fbox_reserve(ep, esz);
    if (off < 0)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    memcpy(ep->fb_out + off + 8, a, len);
    fbox_publish(ep, (size_t)off, esz, 0, len, 0, PX_BTL_SHM_FB_CTL);
    return PX_SUCCESS;
}

static void split_help(px_btl_endpoint_t *ep, const char *data, size_t len);
static int split_progress(px_btl_shm_state_t *s);

/* Take up to `max` messages from one peer's fast box. */
static inline int fbox_poll(px_btl_endpoint_t *ep, int max)
{
    const size_t fbs = ep->fbs;
    int n = 0;
    while (n < max) {
        uint64_t h;
        char *data = NULL;
        size_t len = 0;
        uint8_t tag = 0;
        int r = px_btl_shm_fbox_take(ep->fb_in, fbs, &ep->fb_rpos, &h, &data, &len, &tag);
        if (r == 0)
            break;
        if (PX_UNLIKELY(r < 0)) {
            px_btl_shm_corrupt(ep,
                               "the fast box entry at ring offset %zu (header 0x%016llx: data "
                               "length %llu, lead %llu, entry size %llu) does not fit its entry or "
                               "the %zu-byte ring",
                               (size_t)(ep->fb_rpos & (fbs - 1)), (unsigned long long)h,
                               (unsigned long long)(h & 0xffffff),
                               (unsigned long long)((h >> 48) & 127),
                               (unsigned long long)(((h >> 32) & 0xffff) << 6), fbs);
            break;
        }
        if (PX_LIKELY(r == 1))
            deliver(ep, tag, data, len);
        else if (r == 4)
            split_help(ep, data, len);
        if (PX_UNLIKELY(ep->corrupt))
            break;
        atomic_store_explicit(ep->fb_in_ack, ep->fb_rpos, memory_order_release);
        /* Lazy fault-in of our mapping, after the entry was acknowledged
         * (the sender goes on meanwhile), not in the empty polls' loop. */
        if (PX_UNLIKELY(ep->fb_rpos + FB_FAULT_LOOKAHEAD > ep->fb_in_pop))
            fbox_fault_ahead(ep->fb_in, fbs, &ep->fb_in_pop, ep->fb_rpos + FB_FAULT_LOOKAHEAD);
        if (PX_LIKELY(r == 1 || r == 4)) /* a pad, or a skip to the ring's start, is no message */
            n++;
    }
    return n;
}

/* ------------------------------------------------------------ fragments */

static inline px_btl_shm_frag_t *frag_get(size_t size)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (size <= px_btl_shm_module.super.btl_eager_limit)
        return (px_btl_shm_frag_t *)px_free_list_get(&s->frags_eager);
    if (size > px_btl_shm_module.super.btl_max_send_size)
        return NULL;
    if (s->cool_count && s->cool_bytes >= s->frag_cool_bytes)
        return px_btl_shm_cool_pop(s);
    px_btl_shm_frag_t *f = (px_btl_shm_frag_t *)px_free_list_get(&s->frags_send);
    if (!f && s->cool_count)
        f = px_btl_shm_cool_pop(s);
    return f;
}

static inline void frag_return(px_btl_shm_frag_t *f)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (f->list == &s->frags_send && s->cool_count < s->cool_cap) {
        s->cool[(s->cool_head + s->cool_count) % s->cool_cap] = f;
        s->cool_count++;
        s->cool_bytes += f->segment.seg_len;
        return;
    }
    px_free_list_return(f->list, &f->base.super);
}

static void frag_complete(px_btl_shm_frag_t *f)
{
    px_btl_descriptor_t *des = &f->base;
    f->queued = false;
    if (f->ep)
        f->ep->inflight--;
    if (des->des_cbfunc)
        des->des_cbfunc(&px_btl_shm_module.super, f->ep, des, PX_SUCCESS);
    if (des->des_flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
        frag_return(f);
}

/* False when the peer's queue is corrupt (its connection then ended, and
 * the fragment is ours again). */
static inline bool frag_push(px_btl_endpoint_t *ep, px_btl_shm_frag_t *f, px_btl_tag_t tag)
{
    px_btl_shm_frag_hdr_t *h = f->hdr;
    h->len = (uint32_t)f->segment.seg_len;
    h->off = (uint16_t)((char *)f->segment.seg_addr - (char *)h);
    h->tag = tag;
    h->flags = 0;
    h->src = (uint16_t)px_btl_shm_state.my_idx;
    h->des = f->index; /* again each time: the peer may have written over it */
    f->ep = ep;
    f->queued = true;
    ep->inflight++;
    if (PX_LIKELY(fifo_push(ep, ep->fifo, h, f->rel))) {
        px_btl_shm_state.sent_frag++;
        return true;
    }
    f->queued = false;
    ep->inflight--;
    return false;
}

/* A fragment of ours handed back: found by the index in its header, which
 * must name a fragment at that very place that is out on a queue. */
static inline void frag_returned(px_btl_shm_state_t *s, uint64_t rel, uint64_t i)
{
    px_btl_shm_frag_t *f = i < (uint64_t)s->frag_count ? s->frag_table[i] : NULL;
    if (PX_LIKELY(f && f->rel == rel && f->queued)) {
        frag_complete(f);
        return;
    }
    /* Who handed it back is not told by the queue; the fragment's last peer
     * is the one that had it (when it was out at all). */
    px_btl_endpoint_t *ep = f && f->rel == rel ? f->ep : NULL;
    if (!ep) {
        for (int k = 0; k < s->frag_count && !ep; k++)
            if (s->frag_table[k]->rel == rel)
                ep = s->frag_table[k]->ep;
    }
    if (!ep)
        ep = px_btl_shm_queue_culprit(rel);
    if (ep)
        px_btl_shm_corrupt(ep, "a fragment handed back (offset %llu, index %llu) is %s",
                           (unsigned long long)(rel & 0xffffffffffffULL), (unsigned long long)i,
                           f && f->rel == rel ? "not out on a queue" : "not a fragment it had");
    else /* harmless to skip: the queue goes on after it */
        px_show_error("btl/shm: a fragment handed back (offset %llu, index %llu) by an unknown "
                      "local peer is not one that was sent; skipped",
                      (unsigned long long)(rel & 0xffffffffffffULL), (unsigned long long)i);
}

/* Fragments of at least this many bytes are the rendezvous's pipelined
 * ones (eager fragments are at most the eager limit, 16 KiB and a header). */
#define SC_FRAG_TIMED ((size_t)32 << 10)

/* A sample of `ns` for `bytes` into the estimate *est (ns per KiB): a
 * moving average over about 4 samples; a sample more than 4 times the
 * estimate (the process was descheduled) counts as 4 times. */
static inline void sc_sample(double *est, uint64_t ns, size_t bytes)
{
    double v = (double)ns * 1024 / (double)bytes;
    if (*est <= 0) {
        *est = v;
        return;
    }
    if (v > 4 * *est)
        v = 4 * *est;
    *est += (v - *est) / 4;
}

static inline uint64_t sc_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* This thread's processor time (ns): what a CMA copy cost us, without the
 * time we were off the processor (a system call, not the vDSO: taken for
 * one CMA message in SC_TIME_EVERY once a size class has an estimate). */
static inline uint64_t sc_cpu_now(void)
{
    struct timespec t = {0, 0}; /* 0 if the clock is refused: no sample, CMA stays unpriced */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int fifo_poll(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    int n = 0;
    px_btl_shm_frag_hdr_t *h;
    uint64_t rel = 0;
    while (!s->queue_broken && (h = fifo_pop(s->my_fifo, &rel)) != NULL) {
        px_btl_shm_qentry_t e;
        int kind =
            px_btl_shm_queue_decode(rel, s->nlocal, s->my_idx, s->bases, s->sizes, s->heap_off, &e);
        if (kind == PX_BTL_SHM_Q_RETURNED) {
            frag_returned(s, rel, e.des);
        } else if (PX_LIKELY(kind == PX_BTL_SHM_Q_MSG)) {
            px_btl_endpoint_t *ep = s->by_idx[e.idx];
            if (PX_LIKELY(ep && !ep->corrupt)) { /* a cut peer's fragments stay with it */
                /* Messages from this peer still in its fast box came first. */
                fbox_poll(ep, 1 << 30);
                if (PX_UNLIKELY(ep->corrupt)) /* its ring was: nothing more of it is read */
                    continue;
                if (PX_UNLIKELY(s->sc_auto) && e.len >= SC_FRAG_TIMED && !s->sc_fixed) {
                    /* A pipelined fragment, for auto's choice: the pipeline
                     * moves a fragment per period of its slower side, the
                     * sender's copy in or our copy out. The time since the
                     * previous fragment began is that period while a
                     * message streams; a longer gap (a new message after
                     * a handshake) counts as our copy out alone. */
                    uint64_t t0 = sc_now();
                    deliver(ep, e.tag, e.data, e.len);
                    uint64_t t1 = sc_now(), out = t1 - t0, period = t0 - s->sc_frag_t;
                    sc_sample(&s->sc_frag_ns, period > out && period < 4 * out ? period : out,
                              e.len);
                    s->sc_frag_t = t0;
                } else {
                    deliver(ep, e.tag, e.data, e.len);
                }
                h->flags = PX_BTL_SHM_FRAG_RETURNED;
                fifo_push(ep, ep->fifo, h, rel);
            }
        } else if (kind == PX_BTL_SHM_Q_BAD_REL) { /* fifo_pop checked it: never */
            px_btl_shm_queue_corrupt(rel, "the entry");
        } else if (e.idx == s->my_idx) {
            px_btl_shm_queue_corrupt(rel, "a fragment of ours not marked as handed back");
        } else if (s->by_idx[e.idx]) {
            /* What it put in its fast box before came first: delivered
             * (rank 0's warm-up receive in t_shm.sh's frag-len case failed
             * under load when its progress had polled the ring just before
             * the entry was written and the queue just after). */
            if (!s->by_idx[e.idx]->corrupt)
                fbox_poll(s->by_idx[e.idx], 1 << 30);
            px_btl_shm_corrupt(s->by_idx[e.idx],
                               "its fragment at offset %llu (source %u, flags %u, data at +%u, "
                               "%u bytes) does not fit its %zu-byte segment",
                               (unsigned long long)e.off, (unsigned)e.src, (unsigned)e.flags,
                               (unsigned)e.doff, e.len, s->sizes[e.idx]);
        }
        n++;
    }
    return n;
}

/* ------------------------------------------------------------ liveness */

/* Every this many progress calls that found nothing, look at the clock; scan
 * the peers' locks at most every PX_BTL_SHM_CHECK_NS (px_btl_shm_check_peers,
 * shm_peers.c). A scan is one flock(LOCK_SH|LOCK_NB) per live peer (about a
 * microsecond each). */
#define PX_BTL_SHM_QUIET_POLLS 1024

int px_btl_shm_progress(px_btl_module_t *btl)
{
    (void)btl;
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (PX_UNLIKELY(s->in_progress))
        return 0; /* called again from a callback: the outer call delivers the rest */
    s->in_progress = true;
    int n = 0;
    for (int i = 0; i < s->nactive; i++)
        n += fbox_poll(s->active[i], s->poll_batch);
    for (px_btl_endpoint_t *d = s->dyn_head; d; d = d->dyn_next)
        if (PX_LIKELY(!d->corrupt) && d->seg) /* from accept / complete on */
            n += fbox_poll(d, s->poll_batch);
    if (s->my_fifo &&
        atomic_load_explicit(&s->my_fifo->head, memory_order_relaxed) != PX_BTL_SHM_EMPTY)
        n += fifo_poll();
    if (PX_UNLIKELY(s->nsplits | s->nsplit_done | s->dyn_exiting)) {
        if (s->dyn_exiting) { /* before the callbacks of its failed copies */
            s->dyn_exiting = false;
            px_btl_shm_dyn_check_peers();
        }
        n += split_progress(s);
    }
    if (n == 0 && PX_UNLIKELY(++s->quiet_polls >= PX_BTL_SHM_QUIET_POLLS)) {
        s->quiet_polls = 0;
        px_btl_shm_check_peers(s);
    }
    /* Yielding when idle is the progress engine's (progress_yield_when_idle),
     * from the events this returns. */
    s->in_progress = false;
    return n;
}

/* ------------------------------------------------------------ send */

/* May a message of `len` bytes (the caller's headers and data) go through
 * ep's fast box now? Not when it is too large, while fragments to that peer
 * are in flight (they would overtake it) or an in-place entry is reserved;
 * nor, larger than fb_stream_max, while we stream to that peer
 * (PX_BTL_SHM_STREAM_RUN sends in a row with no message from it): a
 * stream of such messages moves faster as eager fragments (docs/shm.md,
 * "Streaming"). */
static inline bool fbox_takes(const px_btl_endpoint_t *ep, size_t len)
{
    return len + 8 <= ep->fb_max && ep->inflight == 0 && !ep->fb_reserved &&
           (len + 8 <= ep->fb_stream_max || ep->stream_run < PX_BTL_SHM_STREAM_RUN);
}

/* A send to ep went out (fast box or queue). */
static inline void sent_to(px_btl_endpoint_t *ep)
{
    if (ep->stream_run < UINT32_MAX)
        ep->stream_run++;
}

/* A descriptor whose data is a reserved fast box entry of `size` bytes
 * starting `lead` bytes after the entry's header (so that the caller's data
 * after its own header can start on a cache line), or NULL when the fast box
 * cannot take it now. */
static inline px_btl_shm_frag_t *fbox_desc(px_btl_endpoint_t *ep, size_t size, size_t lead,
                                           uint8_t order, uint32_t flags)
{
    /* The lead is alignment, not message: it does not count against the
     * limit (an 8 KiB message with the runtime's header fits the default). */
    if (!ep || !fbox_takes(ep, size))
        return NULL;
    size_t esz = (8 + lead + size + FB_SLOT - 1) & ~(size_t)(FB_SLOT - 1);
    long off = fbox_reserve(ep, esz);
    if (off < 0)
        return NULL;
    px_btl_shm_frag_t *f = (px_btl_shm_frag_t *)px_free_list_get(&px_btl_shm_state.frags_fbox);
    if (PX_UNLIKELY(!f))
        return NULL; /* the reservation is only counted once published */
    ep->fb_reserved = true;
    f->fb_off = (size_t)off;
    f->fb_esz = esz;
    f->fb_lead = lead;
    f->ep = ep;
    f->segment.seg_addr = ep->fb_out + off + 8 + lead;
    f->segment.seg_len = size;
    f->base.des_segments = &f->segment;
    f->base.des_segment_count = 1;
    f->base.des_flags = flags;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.order = order;
    return f;
}

/* A fragment of the segment's heap (never a fast box descriptor), ready to fill. */
static inline px_btl_shm_frag_t *frag_alloc(size_t size, uint8_t order, uint32_t flags)
{
    px_btl_shm_frag_t *f = frag_get(size);
    if (PX_UNLIKELY(!f))
        return NULL;
    f->segment.seg_addr = (char *)f->hdr + PX_BTL_SHM_FRAG_HDR;
    f->segment.seg_len = size;
    f->base.des_segments = &f->segment;
    f->base.des_segment_count = 1;
    f->base.des_flags = flags;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.order = order;
    f->ep = NULL;
    return f;
}

static px_btl_descriptor_t *px_btl_shm_alloc(px_btl_module_t *btl, px_btl_endpoint_t *endpoint,
                                             uint8_t order, size_t size, uint32_t flags)
{
    (void)btl;
    px_btl_shm_frag_t *f = fbox_desc(endpoint, size, 0, order, flags);
    /* A dynamic peer maps no fragment heap of ours: its fast box only. */
    if (!f && (!endpoint || !endpoint->dyn) && px_btl_shm_state.seg)
        f = frag_alloc(size, order, flags);
    return f ? &f->base : NULL;
}

static int px_btl_shm_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    (void)btl;
    px_btl_shm_frag_t *f = (px_btl_shm_frag_t *)des;
    if (f->fb_esz) { /* never sent: the receiver steps over the entry */
        px_btl_endpoint_t *ep = f->ep;
        if (ep->fb_zeroed <= ep->fb_wpos + f->fb_esz)
            fbox_zero(ep, ep->fb_wpos + f->fb_esz, ep->fb_wpos + f->fb_esz + 64);
        atomic_store_explicit((_Atomic uint64_t *)(ep->fb_out + f->fb_off),
                              FB_VALID | FB_PAD | ((uint64_t)(f->fb_esz / FB_SLOT) << 32),
                              memory_order_release);
        ep->fb_wpos += f->fb_esz;
        ep->fb_reserved = false;
        f->fb_esz = 0;
    }
    frag_return(f);
    return PX_SUCCESS;
}

static px_btl_descriptor_t *px_btl_shm_prepare_src(px_btl_module_t *btl,
                                                   px_btl_endpoint_t *endpoint,
                                                   px_btl_convertor_t *conv, uint8_t order,
                                                   size_t reserve, size_t *size, uint32_t flags)
{
    size_t data = *size, left = conv->total - conv->position;
    if (data > left)
        data = left;
    if (reserve + data > btl->btl_max_send_size)
        data = btl->btl_max_send_size > reserve ? btl->btl_max_send_size - reserve : 0;
    /* Large enough to care: the caller's header goes at the end of the
     * entry's second line and its data from the third, so the copies in and
     * out run aligned with 64-byte-aligned user buffers, and the first line
     * holds only our header, which the receiver polls and we write once, at
     * the end (measured 4 KiB one-way 0.33 -> 0.28 us). */
    size_t lead = data >= 256 && reserve <= 64 ? 120 - reserve : 0;
    px_btl_shm_frag_t *fb = fbox_desc(endpoint, reserve + data, lead, order, flags);
    if (fb) { /* pack straight into the peer's fast box */
        size_t packed = px_btl_convertor_pack(conv, (char *)fb->segment.seg_addr + reserve, data);
        fb->segment.seg_len = reserve + packed;
        *size = packed;
        return &fb->base;
    }
    px_btl_descriptor_t *des = px_btl_shm_alloc(btl, endpoint, order, reserve + data, flags);
    if (PX_UNLIKELY(!des))
        return NULL;
    px_btl_shm_frag_t *f = (px_btl_shm_frag_t *)des;
    if (f->hdr && reserve < 64 && data >= 1024) {
        /* Start the data on a cache line: copies in and out then run aligned
         * (when the runtime's offsets are, see btl_shm_max_send_size). */
        f->segment.seg_addr = (char *)f->hdr + PX_BTL_SHM_FRAG_HDR + (64 - reserve) % 64;
    }
    size_t packed = px_btl_convertor_pack(conv, (char *)f->segment.seg_addr + reserve, data);
    f->segment.seg_len = reserve + packed;
    *size = packed;
    return des;
}

static int px_btl_shm_send(px_btl_module_t *btl, px_btl_endpoint_t *ep, px_btl_descriptor_t *des,
                           px_btl_tag_t tag)
{
    px_btl_shm_frag_t *f = (px_btl_shm_frag_t *)des;
    size_t len = f->segment.seg_len;
    /* A peer known to be gone would never hand the fragment back. */
    if (PX_UNLIKELY(ep->gone))
        return PX_ERR_PEER_FAILED;
    if (f->fb_esz) { /* in place: the data is already in the fast box */
        sent_to(ep);
        fbox_publish(ep, f->fb_off, f->fb_esz, tag, len, f->fb_lead, 0);
        ep->fb_reserved = false;
        f->fb_esz = 0;
        px_btl_shm_state.sent_fbox++;
        const uint32_t flags = des->des_flags;
        if ((flags & PX_BTL_DES_SEND_ALWAYS_CALLBACK) && des->des_cbfunc)
            des->des_cbfunc(btl, ep, des, PX_SUCCESS);
        if (flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
            frag_return(f);
        return 1;
    }
    if (fbox_takes(ep, len) &&
        fbox_send2(ep, tag, f->segment.seg_addr, len, NULL, 0) == PX_SUCCESS) {
        sent_to(ep);
        px_btl_shm_state.sent_fbox++;
        const uint32_t flags = des->des_flags;
        if ((flags & PX_BTL_DES_SEND_ALWAYS_CALLBACK) && des->des_cbfunc)
            des->des_cbfunc(btl, ep, des, PX_SUCCESS);
        if (flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
            frag_return(f);
        return 1;
    }
    if (PX_UNLIKELY(ep->dyn)) /* no queue to a dynamic peer: try again after progress */
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    if (PX_UNLIKELY(!frag_push(ep, f, tag)))
        return PX_ERR_PEER_FAILED; /* its queue is corrupt: the descriptor stays the caller's */
    sent_to(ep);
    return 0;
}

static int px_btl_shm_sendi(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *header,
                            size_t header_size, const void *payload, size_t payload_size,
                            uint8_t order, uint32_t flags, px_btl_tag_t tag,
                            px_btl_descriptor_t **descriptor)
{
    size_t len = header_size + payload_size;
    if (descriptor)
        *descriptor = NULL;
    if (PX_LIKELY(fbox_takes(ep, len)) &&
        PX_LIKELY(fbox_send2(ep, tag, header, header_size, payload, payload_size) == PX_SUCCESS)) {
        sent_to(ep);
        px_btl_shm_state.sent_fbox++;
        return PX_SUCCESS;
    }
    /* Through a fragment on the queue: a heap fragment, never a fast box
     * descriptor (the ring that was full a moment ago may have room now, if
     * the peer read meanwhile; an in-place descriptor pushed on the queue
     * would have no fragment header). */
    (void)btl;
    if (PX_UNLIKELY(ep->gone))
        return PX_ERR_PEER_FAILED;
    if (PX_UNLIKELY(ep->dyn)) /* its fast box only: full now */
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    px_btl_shm_frag_t *f = frag_alloc(len, order, flags | PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (!f)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    px_btl_descriptor_t *des = &f->base;
    if (header_size)
        memcpy(f->segment.seg_addr, header, header_size);
    if (payload_size)
        memcpy((char *)f->segment.seg_addr + header_size, payload, payload_size);
    des->des_flags = PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
    if (PX_UNLIKELY(!frag_push(ep, f, tag))) {
        frag_return(f);
        return PX_ERR_PEER_FAILED;
    }
    sent_to(ep);
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ single copy */

/* auto (btl_shm_single_copy=auto): should this rendezvous of `size` bytes
 * be read by CMA? Below btl_shm_single_copy_min, no. From it on, whichever
 * path the receiver measured cheaper for that size (px_btl_shm_sc_prefers_cma),
 * CMA priced per copier: `copiers` 2 when the read would be split with the
 * sender. A path not measured yet is tried first, and every 32nd rendezvous
 * of a size class takes the other path, so the estimates follow the machine
 * (this VM's copies through shared memory slow down 3-6 times in some
 * phases, when CMA wins; in others the pipeline is 2.4 times faster).
 * *timed: take this CMA read's time as a sample (every read while the class
 * has no estimate, every exploring one, else one in SC_TIME_EVERY). */
#define SC_EXPLORE    32
#define SC_TIME_EVERY 4
static PX_NOINLINE bool sc_choose_cma(px_btl_shm_state_t *s, size_t size, int copiers, bool *timed)
{
    *timed = false;
    if (size < s->sc_min)
        return false;
    int k = px_btl_shm_sc_class(size);
    double c = s->sc_cma_ns[k];
    if (c <= 0) {
        *timed = !s->sc_fixed;
        return true; /* measure CMA first */
    }
    if (s->sc_frag_ns <= 0)
        return false; /* then the pipeline */
    bool cma = px_btl_shm_sc_prefers_cma(c, s->sc_frag_ns, size, copiers);
    if (s->sc_fixed)
        return cma;
    uint32_t seen = ++s->sc_seen[k];
    if (seen % SC_EXPLORE == 0) {
        *timed = true;
        return !cma;
    }
    *timed = cma && seen % SC_TIME_EVERY == 0;
    return cma;
}

/* A get split with the peer (a rendezvous's sender, the owner of a
 * transfer engine's region): from btl_shm_cma_split bytes on. */
#define PX_RDMA_GET_SPLIT(s, a)                                                                    \
    (PX_BTL_RDMA_GET == (a)->dir && (s)->cma_split && (a)->size >= (s)->cma_split)

/* A dynamic peer takes offers: its connection segment (mapped, from accept
 * or complete on) says so. An older one leaves the bit 0 (it would not
 * know a control entry in its ring). */
static inline bool split_dyn_ok(const px_btl_endpoint_t *ep)
{
    return ep->seg && ep->own &&
           (atomic_load_explicit(&((px_btl_shm_dyn_hdr_t *)ep->seg)->features,
                                 memory_order_relaxed) &
            PX_BTL_SHM_DYN_FEAT_SPLIT);
}

/* ------------------------------------------------------------ split single copy
 * (shm.h explains the slot.) The sender's side: an offer from `ep` in our
 * fast box. Join unless the receiver has closed the slot, write the chunks
 * we claim into its buffer, say which one failed if one did, leave. */
static PX_NOINLINE void split_help(px_btl_endpoint_t *ep, const char *data, size_t len)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_shm_split_msg_t m;
    if (s->split_test & PX_BTL_SHM_SPLIT_TEST_IGNORE)
        return;
    /* A dynamic peer's slot lies in the header page of its connection
     * segment; an offer we did not invite (our segment says we take none)
     * is left alone: the reader reads it all. */
    size_t lo = s->heap_off, hi = ep->seg_size;
    if (ep->dyn) {
        if (!(atomic_load_explicit(&((px_btl_shm_dyn_hdr_t *)ep->own)->features,
                                   memory_order_relaxed) &
              PX_BTL_SHM_DYN_FEAT_SPLIT))
            return;
        lo = PX_BTL_SHM_DYN_SLOT_OFF;
        hi = PX_BTL_SHM_DYN_SLOT_END;
    }
    if (len != sizeof m) {
        px_btl_shm_corrupt(ep, "a single-copy offer in our fast box has %zu bytes, not %zu", len,
                           sizeof m);
        return;
    }
    memcpy(&m, data, sizeof m);
    if (!px_btl_shm_split_msg_ok(&m, lo, hi)) {
        px_btl_shm_corrupt(ep,
                           "a single-copy offer names slot offset %llu (its %s: %zu..%zu), "
                           "generation %llu, %llu bytes in chunks of %llu",
                           (unsigned long long)m.slot, ep->dyn ? "split slots" : "fragment heap",
                           lo, hi, (unsigned long long)m.gen, (unsigned long long)m.total,
                           (unsigned long long)m.chunk);
        return;
    }
    px_btl_shm_split_slot_t *slot = (px_btl_shm_split_slot_t *)(ep->seg + m.slot);
    uint64_t st = m.gen << 2 | PX_BTL_SHM_SPLIT_OPEN;
    if (!atomic_compare_exchange_strong_explicit(&slot->state, &st,
                                                 m.gen << 2 | PX_BTL_SHM_SPLIT_JOINED,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return; /* the receiver did it all and closed the slot (or reused it) */
    uint64_t fo = 0, fl = 0, claims = m.total / m.chunk + 1;
    while (claims--) {
        uint64_t c = atomic_fetch_add_explicit(&slot->next, m.chunk, memory_order_relaxed);
        if (c >= m.total)
            break;
        size_t n = (size_t)(m.total - c < m.chunk ? m.total - c : m.chunk);
        /* Quiet: the receiver reads a chunk we could not write, and says so
         * if it cannot either. */
        if (px_btl_shm_cma_copy(ep, true, (void *)(uintptr_t)(m.src + c), m.dst + c, n, true) !=
            PX_SUCCESS) {
            fo = c;
            fl = n;
            break;
        }
        s->cma_helped++;
    }
    atomic_store_explicit(&slot->fail_off, fo, memory_order_relaxed);
    atomic_store_explicit(&slot->fail_len, fl, memory_order_relaxed);
    atomic_store_explicit(&slot->state, m.gen << 2 | PX_BTL_SHM_SPLIT_LEFT, memory_order_release);
}

/* The receiver's side: read the chunks we claim until none is left;
 * returns the bytes read. The claims are bounded: the slot's `next` lies in
 * shared memory, and a peer that moved it back would keep us copying. */
static size_t split_read(px_btl_shm_split_t *sp, size_t chunk)
{
    size_t done = 0;
    for (uint64_t claims = sp->total / chunk + 2;; claims--) {
        if (0 == claims) {
            sp->status = PX_ERR_COMM; /* more claims than chunks: not the protocol */
            return done;
        }
        uint64_t c = atomic_fetch_add_explicit(&sp->slot->next, chunk, memory_order_relaxed);
        if (c >= sp->total)
            return done;
        size_t n = sp->total - c < chunk ? sp->total - c : chunk;
        if (px_btl_shm_cma_copy(sp->ep, false, sp->local + c, sp->remote + c, n, false) !=
            PX_SUCCESS) {
            sp->status = PX_ERR_COMM;
            /* claim the rest: the sender stops, nothing more is read */
            atomic_fetch_add_explicit(&sp->slot->next, sp->total, memory_order_relaxed);
            return done;
        }
        px_btl_shm_state.cma_own_chunks++;
        done += n;
    }
}

/* Complete split `i` when the sender has left it or never joined (true);
 * false while the sender is still copying its chunks. `defer`: its
 * callback waits in split_done for progress (the caller made room). */
static bool split_finish(px_btl_shm_state_t *s, int i, bool defer)
{
    px_btl_shm_split_t *sp = &s->splits[i];
    px_btl_shm_split_slot_t *slot = sp->slot;
    const uint64_t g = sp->gen << 2;
    uint64_t st = g | PX_BTL_SHM_SPLIT_OPEN;
    bool joined = true;
    bool leave = (s->split_test & PX_BTL_SHM_SPLIT_TEST_LEAVE) && !sp->ep->gone;
    if (st == atomic_load_explicit(&slot->state, memory_order_acquire) && leave)
        return false; /* the test waits for the sender to take every chunk */
    if (atomic_compare_exchange_strong_explicit(&slot->state, &st, g | PX_BTL_SHM_SPLIT_CLOSED,
                                                memory_order_acq_rel, memory_order_acquire)) {
        joined = false;
    } else {
        if (st == (g | PX_BTL_SHM_SPLIT_JOINED) && !sp->ep->gone)
            return false;
        if (st == (g | PX_BTL_SHM_SPLIT_LEFT)) {
            uint64_t fo = atomic_load_explicit(&slot->fail_off, memory_order_relaxed);
            uint64_t fl = atomic_load_explicit(&slot->fail_len, memory_order_relaxed);
            if (fl && PX_SUCCESS == sp->status) {
                if (fo > sp->total || fl > sp->total - fo)
                    sp->status = PX_ERR_COMM; /* nonsense: the read is not trusted */
                else if (px_btl_shm_cma_copy(sp->ep, false, sp->local + fo, sp->remote + fo, fl,
                                             false) != PX_SUCCESS)
                    sp->status = PX_ERR_COMM;
            }
        } else if (sp->ep->gone || sp->ep->exiting) {
            sp->status = PX_ERR_PEER_FAILED; /* it died holding chunks */
        } else {
            sp->status = PX_ERR_COMM; /* another state: not written by the protocol */
        }
    }
    if (PX_ERR_COMM == sp->status && sp->ep->exiting)
        sp->status = PX_ERR_PEER_FAILED; /* its process is exiting */
    /* Chunks nobody claimed (the sender stopped after a failed chunk while
     * we had stopped claiming): read now. */
    if (PX_SUCCESS == sp->status)
        split_read(sp, sp->total);
    /* auto's sample: the processor time we spent on our chunks per KiB
     * we read, i.e. per copier. Not the message's time: a sender busy
     * elsewhere (pushing the fragments of a stream auto sends by the
     * pipeline) leaves every chunk to us, and such a read took twice as
     * long per message as one in a stream by CMA, where the sender waits
     * and copies half (session 33: 300-560 ns per KiB read alone against
     * the pipeline's 110-200, while CMA streamed 1.24-1.40x faster). The
     * rule halves it for a split read (px_btl_shm_sc_prefers_cma). Not
     * the clock's time either: at a load of 20 a read of 1 MiB often
     * spans a time slice given to another process. */
    if (joined)
        s->cma_joined++;
    if (PX_SUCCESS == sp->status && sp->timed && sp->own_bytes >= 4096)
        sc_sample(&s->sc_cma_ns[px_btl_shm_sc_class(sp->total)], sp->t_own - sp->t0, sp->own_bytes);
    px_btl_shm_split_t done = *sp;
    s->splits[i] = s->splits[--s->nsplits];
    if (done.frag)
        px_free_list_return(done.frag->list, &done.frag->base.super);
    else
        done.ep->split_slots &= ~(1u << done.dslot);
    if (done.cbfunc && defer)
        s->split_done[s->nsplit_done++] =
            (px_btl_shm_split_done_t){done.ep,        done.local,  done.local_handle, done.cbfunc,
                                      done.cbcontext, done.cbdata, done.status};
    else if (done.cbfunc) {
        /* A copy found the owner's process exiting: the runtime learns that
         * it is gone before it learns that this get failed (a reader that
         * opens its names again must not take the connection for live). */
        if (done.ep->exiting && !done.ep->gone)
            px_btl_shm_dyn_check_peers();
        done.cbfunc(&px_btl_shm_module.super, done.ep, done.local, done.local_handle,
                    done.cbcontext, done.cbdata, done.status);
    }
    return true;
}

/* Run the callbacks of splits completed earlier (of `ep` only, or all). */
static int split_done_run(px_btl_shm_state_t *s, const px_btl_endpoint_t *ep)
{
    int n = 0;
    for (int i = s->nsplit_done - 1; i >= 0; i--) {
        if (i >= s->nsplit_done) /* a callback ran others' (it started a get) */
            continue;
        if (ep && s->split_done[i].ep != ep)
            continue;
        px_btl_shm_split_done_t d = s->split_done[i];
        s->split_done[i] = s->split_done[--s->nsplit_done];
        d.cbfunc(&px_btl_shm_module.super, d.ep, d.local, d.local_handle, d.cbcontext, d.cbdata,
                 d.status);
        n++;
    }
    return n;
}

/* Progress: run the callbacks of splits completed while others started,
 * complete the splits whose sender has left. */
static PX_NOINLINE int split_progress(px_btl_shm_state_t *s)
{
    int n = s->nsplit_done ? split_done_run(s, NULL) : 0;
    for (int i = 0; i < s->nsplits;)
        if (split_finish(s, i, false))
            n++;
        else
            i++;
    return n;
}

/* Start a split get of a->size bytes from `ep`: offer it, read our chunks,
 * complete now if the sender did not join or has left, else in progress.
 * PX_ERR_NOT_AVAILABLE when no split can be started (the caller reads alone). */
static int split_start(px_btl_endpoint_t *ep, const px_btl_rdma_args_t *a, bool timed, uint64_t t0)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    /* Splits whose owner has left since free their slots now (a batch
     * starts its gets back to back, with no progress between them); their
     * callbacks wait for progress. */
    if (s->nsplits && s->nsplit_done + s->nsplits <= PX_BTL_SHM_SPLIT_DONE)
        for (int i = 0; i < s->nsplits;)
            if (!split_finish(s, i, true))
                i++;
    if (s->nsplits >= PX_BTL_SHM_SPLITS || ep->gone || ep->corrupt || ep->fb_reserved)
        return PX_ERR_NOT_AVAILABLE;
    px_btl_shm_frag_t *f = NULL;
    px_btl_shm_split_slot_t *slot;
    uint64_t slot_off;
    int dslot = -1;
    if (ep->dyn) {
        /* A free line of our connection segment's header page, which the
         * owner maps; only to an owner that takes offers. */
        uint32_t busy = ep->split_slots;
        if (!split_dyn_ok(ep) || busy == (1u << PX_BTL_SHM_DYN_SLOTS) - 1)
            return PX_ERR_NOT_AVAILABLE;
        dslot = __builtin_ctz(~busy);
        slot_off = PX_BTL_SHM_DYN_SLOT_OFF + (uint64_t)dslot * sizeof *slot;
        slot = (px_btl_shm_split_slot_t *)(void *)(ep->own + slot_off);
    } else {
        f = (px_btl_shm_frag_t *)px_free_list_get(&s->frags_eager);
        if (!f)
            return PX_ERR_NOT_AVAILABLE;
        slot = (px_btl_shm_split_slot_t *)(void *)((char *)f->hdr + PX_BTL_SHM_FRAG_HDR);
        slot_off = (uint64_t)((char *)slot - s->seg);
    }
    uint64_t gen = ++s->split_gen & ((1ULL << 60) - 1);
    size_t chunk = px_btl_shm_split_chunk(a->size);
    atomic_store_explicit(&slot->next, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->fail_off, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->fail_len, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->state, gen << 2 | PX_BTL_SHM_SPLIT_OPEN, memory_order_release);
    px_btl_shm_split_msg_t m = {
        slot_off, gen, a->remote_address, (uint64_t)(uintptr_t)a->local_address, a->size, chunk};
    if (fbox_send_ctl(ep, &m, sizeof m) != PX_SUCCESS) {
        if (f)
            px_free_list_return(f->list, &f->base.super);
        return PX_ERR_NOT_AVAILABLE;
    }
    if (ep->dyn)
        ep->split_slots |= 1u << dslot;
    s->cma_calls++;
    s->cma_splits++;
    if (a->flags & PX_BTL_RDMA_FLAG_ASYNC)
        s->cma_xfer_splits++;
    px_btl_shm_split_t *sp = &s->splits[s->nsplits++];
    *sp = (px_btl_shm_split_t){.ep = ep,
                               .frag = f,
                               .dslot = dslot,
                               .slot = slot,
                               .gen = gen,
                               .local = a->local_address,
                               .remote = a->remote_address,
                               .total = a->size,
                               .status = PX_SUCCESS,
                               .timed = timed,
                               .t0 = t0,
                               .local_handle = a->local_handle,
                               .cbfunc = a->cbfunc,
                               .cbcontext = a->cbcontext,
                               .cbdata = a->cbdata};
    if (!(s->split_test & PX_BTL_SHM_SPLIT_TEST_LEAVE))
        sp->own_bytes = split_read(sp, chunk);
    if (timed)
        sp->t_own = sc_cpu_now();
    split_finish(s, s->nsplits - 1, false);
    return PX_SUCCESS;
}

/* btl_put and btl_get: the single copy of shm_rdma.c. A rendezvous
 * (PX_BTL_RDMA_FLAG_RNDV) that auto would rather pipeline is declined
 * before anything moves: the messaging layer then sends it by fragments.
 * A rendezvous get of btl_shm_cma_split bytes or more is split with the
 * sender (above), and so is a get whose caller takes its completion from
 * progress (PX_BTL_RDMA_FLAG_ASYNC: the transfer engine's), with the
 * region's owner, which copies the chunks it claims while it progresses
 * (one busy elsewhere or idle never joins: the reader reads it all and the
 * get completes before the call returns, as alone). Other requests (coll/sm's
 * reads) take CMA, alone, and complete before the call returns: coll/sm
 * relies on it (splitting them too, tried in session 34 before the flag,
 * failed its collectives with "the transport did not complete it at
 * once"). */
static inline int px_btl_shm_rdma(px_btl_module_t *btl, px_btl_endpoint_t *ep,
                                  const px_btl_rdma_args_t *a)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (a->flags & PX_BTL_RDMA_FLAG_RNDV) {
        const bool split = PX_RDMA_GET_SPLIT(s, a) && (!ep->dyn || split_dyn_ok(ep));
        bool timed = false;
        if (s->sc_auto && !sc_choose_cma(s, a->size, split ? 2 : 1, &timed)) {
            s->cma_declined++;
            return PX_ERR_NOT_SUPPORTED;
        }
        timed = timed && a->size;
        uint64_t t0 = timed ? sc_cpu_now() : 0;
        if (split && split_start(ep, a, timed, t0) == PX_SUCCESS)
            return PX_SUCCESS;
        if (!s->sc_auto)
            return px_btl_shm_cma(btl, ep, PX_BTL_RDMA_PUT == a->dir, a->local_address,
                                  a->remote_address, a->local_handle, a->size, a->cbfunc,
                                  a->cbcontext, a->cbdata);
        int rc = px_btl_shm_cma(btl, ep, PX_BTL_RDMA_PUT == a->dir, a->local_address,
                                a->remote_address, a->local_handle, a->size, NULL, NULL, NULL);
        if (PX_SUCCESS == rc && timed)
            sc_sample(&s->sc_cma_ns[px_btl_shm_sc_class(a->size)], sc_cpu_now() - t0, a->size);
        if (PX_SUCCESS == rc && a->cbfunc)
            a->cbfunc(btl, ep, a->local_address, a->local_handle, a->cbcontext, a->cbdata,
                      PX_SUCCESS);
        return rc;
    }
    if ((a->flags & PX_BTL_RDMA_FLAG_ASYNC) && PX_RDMA_GET_SPLIT(s, a) &&
        split_start(ep, a, false, 0) == PX_SUCCESS)
        return PX_SUCCESS;
    return px_btl_shm_cma(btl, ep, PX_BTL_RDMA_PUT == a->dir, a->local_address, a->remote_address,
                          a->local_handle, a->size, a->cbfunc, a->cbcontext, a->cbdata);
}

/* A dynamic peer's connection goes (shm_dyn.c, before its segments are
 * unmapped): its splits complete first. An owner that joined one is
 * copying into our buffer; it is waited for while it lives, up to a
 * second (a stopped process), then the get fails. */
void px_btl_shm_split_drop(px_btl_endpoint_t *ep)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    split_done_run(s, ep);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < s->nsplits;) {
        if (s->splits[i].ep != ep) {
            i++;
            continue;
        }
        if (split_finish(s, i, false))
            continue; /* the array moved: look at i again */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 1000000000L ||
            (ep->pidfd >= 0 && poll(&(struct pollfd){ep->pidfd, POLLIN, 0}, 1, 0) > 0)) {
            bool gone = ep->gone;
            ep->gone = true; /* completes it with PX_ERR_PEER_FAILED */
            split_finish(s, i, false);
            ep->gone = gone;
            continue;
        }
        sched_yield();
    }
}
PX_BTL_BASE_RDMA_PUT_GET(px_btl_shm, px_btl_shm_rdma)

static int px_btl_shm_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc)
{
    ((px_btl_shm_module_t *)btl)->error_cb = cbfunc;
    return PX_SUCCESS;
}

static int px_btl_shm_finalize(px_btl_module_t *btl)
{
    (void)btl;
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (s->sc_auto || s->cma_splits || s->cma_helped) {
        char est[256];
        int o = 0;
        for (int k = 0; k < PX_BTL_SHM_SC_CLASSES && o < (int)sizeof est - 24; k++)
            o += snprintf(est + o, sizeof est - (size_t)o, " %.0f", s->sc_cma_ns[k]);
        PX_OUTPUT_VERBOSE(5, px_btl_base_framework.output,
                          "btl shm: single copies %llu (split %llu, of them one-sided %llu, "
                          "joined by the sender %llu, chunks read ourselves %llu, chunks "
                          "written for peers %llu), declined %llu; auto's estimates (ns per "
                          "KiB): CMA per copier by size class (32 KiB .. 4 MiB):%s, pipeline %.0f",
                          (unsigned long long)s->cma_calls, (unsigned long long)s->cma_splits,
                          (unsigned long long)s->cma_xfer_splits, (unsigned long long)s->cma_joined,
                          (unsigned long long)s->cma_own_chunks, (unsigned long long)s->cma_helped,
                          (unsigned long long)s->cma_declined, est, s->sc_frag_ns);
    }
    px_btl_shm_module_cleanup();
    return PX_SUCCESS;
}

int px_btl_shm_module_setup(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    px_btl_module_t *m = &px_btl_shm_module.super;
    s->cma_ok = s->single_copy != PX_BTL_SHM_SC_NONE;
    s->sc_min = s->single_copy_min;
    s->sc_auto = s->single_copy == PX_BTL_SHM_SC_AUTO;
    /* PX_BTL_SHM_TEST_SC_COST="CMA:FRAG" (ns per KiB): the test suite's
     * fixed estimates, so auto's choice by size is the same on every run. */
    const char *fixed = getenv("PX_BTL_SHM_TEST_SC_COST");
    double c = 0, f = 0;
    s->sc_fixed = fixed && sscanf(fixed, "%lf:%lf", &c, &f) == 2 && c > 0 && f > 0;
    for (int k = 0; k < PX_BTL_SHM_SC_CLASSES; k++) {
        s->sc_cma_ns[k] = s->sc_fixed ? c : 0;
        s->sc_seen[k] = 0;
    }
    s->sc_frag_ns = s->sc_fixed ? f : 0;
    /* PX_BTL_SHM_TEST_SPLIT=leave|ignore: the test suite's split hooks. */
    const char *st = getenv("PX_BTL_SHM_TEST_SPLIT");
    s->split_test = !st                     ? 0
                    : !strcmp(st, "leave")  ? PX_BTL_SHM_SPLIT_TEST_LEAVE
                    : !strcmp(st, "ignore") ? PX_BTL_SHM_SPLIT_TEST_IGNORE
                                            : 0;
    s->nsplits = s->nsplit_done = 0;
    s->cma_splits = s->cma_helped = s->cma_joined = s->cma_own_chunks = s->cma_xfer_splits = 0;
    if (!s->cma_ok) /* the messaging layer's rendezvous pipelines */
        m->btl_flags &= ~(PX_BTL_FLAGS_RDMA | PX_BTL_FLAGS_SINGLE_COPY);
    /* put/get stay for the transfer engine while XFER_RDMA is set (the
     * probe in add_procs clears both when the kernel refuses). */
    bool rdma = (m->btl_flags & (PX_BTL_FLAGS_RDMA | PX_BTL_FLAGS_XFER_RDMA)) != 0;
    m->btl_get = rdma ? px_btl_shm_get : NULL;
    m->btl_put = rdma ? px_btl_shm_put : NULL;
    px_btl_shm_module.error_cb = NULL;
    m->btl_progress = px_btl_shm_progress; /* a dynamic-only module clears it */
    return PX_SUCCESS;
}

/* Progress of a module serving dynamic peers only: registered with the
 * progress engine while it has one (shm_dyn.c), so a singleton without
 * any waits as before (the runtime tells "alone, nothing can arrive"
 * from an empty progress engine). */
int px_btl_shm_dyn_progress(void *ctx)
{
    (void)ctx;
    /* Through the base: at PX_THREAD_MULTIPLE it serializes this module
     * (btl/shm is not thread-safe), its own progress hook included. */
    return px_btl_base_progress_locked(&px_btl_shm_module.super, px_btl_shm_progress);
}

px_btl_shm_module_t px_btl_shm_module = {
    .super =
        {
            .btl_size = PX_BTL_MODULE_SIZE,
            .btl_component = &px_btl_shm_component,
            .btl_exclusivity = PX_BTL_EXCLUSIVITY_HIGH - 1,
            .btl_latency = 100,
            .btl_bandwidth = 20000,
            .btl_eager_limit = 16384 + 64,       /* 16 KiB of data after the runtime's header */
            .btl_max_send_size = 64 * 1024 + 16, /* 64 KiB of data after the runtime's header */
            .btl_put_limit = SIZE_MAX,
            .btl_put_alignment = 0,
            .btl_get_limit = SIZE_MAX,
            .btl_get_alignment = 0,
            .btl_flags = PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT | PX_BTL_FLAGS_GET |
                         PX_BTL_FLAGS_SINGLE_COPY | PX_BTL_FLAGS_MEM_MAP | PX_BTL_FLAGS_XFER_RDMA,
            .btl_registration_handle_size = 0,
            .btl_add_procs = px_btl_shm_add_procs,
            .btl_del_procs = px_btl_shm_del_procs,
            .btl_finalize = px_btl_shm_finalize,
            .btl_alloc = px_btl_shm_alloc,
            .btl_free = px_btl_shm_free,
            .btl_prepare_src = px_btl_shm_prepare_src,
            .btl_send = px_btl_shm_send,
            .btl_sendi = px_btl_shm_sendi,
            .btl_put = px_btl_shm_put,
            .btl_get = px_btl_shm_get,
            .btl_register_mem = NULL,
            .btl_deregister_mem = NULL,
            .btl_flush = px_btl_shm_flush,
            .btl_progress = px_btl_shm_progress,
            .btl_register_error = px_btl_shm_register_error,
            .btl_mem_alloc = px_btl_shm_mem_alloc,
            .btl_mem_free = px_btl_shm_mem_free,
            .btl_mem_map = px_btl_shm_mem_map,
            .btl_mem_unmap = px_btl_shm_mem_unmap,
            .btl_dyn_offer = px_btl_shm_dyn_offer,
            .btl_dyn_accept = px_btl_shm_dyn_accept,
            .btl_dyn_complete = px_btl_shm_dyn_complete,
            .btl_dyn_remove = px_btl_shm_dyn_remove,
        },
    .error_cb = NULL,
};
