/*
 * shm.h: btl/shm, the shared-memory transport between processes of one job
 * on one host. Included by the shm component's own files and by its tests.
 *
 * Each process creates one segment, a file <btl_shm_backing_dir>/
 * plexus-<uid>-<jobid>/seg-<rank> (folder 0700, file 0600), and publishes its
 * path, size, pid and a random key in the modex. add_procs maps every local
 * peer's segment after checking its header (magic, version, job id, key),
 * and the peer that completes the set of attachments unlinks the file, so a
 * crash leaves nothing behind (the folder stays until the job ends). Layout of a segment (owner =
 * receiver):
 *
 *   header line | fifo line (MPSC queue tail+head) | ack line per sender |
 *   fast box ring per sender (btl_shm_fbox_size each) | fragment heap
 *
 * Small messages go through the per-pair fast box (single producer, single
 * consumer ring in the receiver's segment, entries cache-line aligned, the
 * 8-byte header written last with a release store, no syscalls); while a
 * sender streams to a peer, those above btl_shm_fbox_stream_max go as
 * fragments (PX_BTL_SHM_STREAM_RUN). Others go as fragments, carved from
 * the sender's segment through the free list's allocator hook, pushed on
 * the receiver's lock-free multi-producer queue (relative pointers), and
 * pushed back on the sender's queue when consumed.
 * Large transfers: btl_get/btl_put with process_vm_readv/writev when
 * btl_shm_single_copy allows it and the kernel does, else the runtime's
 * pipelined fragments (copied in by the sender, out by the receiver). The
 * transfer engine may use btl_get/btl_put whenever the kernel allows
 * (PX_BTL_FLAGS_XFER_RDMA), and maps memory allocated through it
 * (shm_xfer.c, PX_BTL_FLAGS_MEM_MAP).
 */
#ifndef PX_BTL_SHM_H
#define PX_BTL_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include "frameworks/btl/btl.h"

#define PX_BTL_SHM_MAGIC 0x706c78736d656d31ULL /* "plxsmem1" */
#define PX_BTL_SHM_VERSION                                                                         \
    3 /* 2: job hash and length instead of a 64-byte job id;                                       \
         3: fast box entries in 32-byte slots */
#define PX_BTL_SHM_EMPTY    (~(uint64_t)0)
#define PX_BTL_SHM_FRAG_HDR 64 /* bytes before a fragment's data */

enum { PX_BTL_SHM_SC_NONE = 0, PX_BTL_SHM_SC_CMA = 1, PX_BTL_SHM_SC_AUTO = 2 };
/* auto keeps a CMA cost per size class: 32 KiB and less, 64 KiB, ..., 4 MiB and more. */
#define PX_BTL_SHM_SC_CLASSES 8
static inline int px_btl_shm_sc_class(size_t size)
{
    int k = 0;
    while (k + 1 < PX_BTL_SHM_SC_CLASSES && size > ((size_t)32 << 10 << k))
        k++;
    return k;
}
/* auto's rule for a rendezvous of `size` bytes, from the receiver's
 * estimates in ns per KiB: CMA (one copy, a system call that pins the
 * pages) against the pipeline, whose time is about one fragment copied in
 * and then a fragment per period of its slower side (the sender's copy-in
 * overlaps the receiver's copy-out). CMA's estimate is what one process
 * spends per KiB it copies (its processor time, not the clock's); a split
 * read has `copiers` 2 (the sender copies half while the receiver copies
 * the other half), one read alone 1. */
static inline bool px_btl_shm_sc_prefers_cma(double cma_ns_kb, double frag_ns_kb, size_t size,
                                             int copiers)
{
    double kb = (double)size / 1024, first = kb < 64 ? kb : 64;
    return cma_ns_kb * kb < frag_ns_kb * (kb + first) * copiers;
}
/* btl_shm_fault_in: when the pages of rings larger than 64 KiB are faulted
 * in (a ring of 64 KiB or less is left to the kernel, page by page). */
enum { PX_BTL_SHM_FAULT_LAZY = 0, PX_BTL_SHM_FAULT_SETUP = 1, PX_BTL_SHM_FAULT_NONE = 2 };

/* First two cache lines of a segment. */
typedef struct px_btl_shm_seg_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t nlocal;
    uint64_t key;
    uint64_t size;
    int32_t owner_rank;
    int32_t owner_pid;
    uint64_t fbox_size;
    _Atomic uint32_t attached; /* peers that mapped it */
    uint32_t job_len;          /* strlen of the job id */
    uint64_t job_hash;         /* px_btl_shm_job_hash of the whole job id */
    uint64_t heap_off;         /* where the fragment heap starts */
    char job_head[40];         /* the job id's first 39 bytes, for messages only */
    uint8_t locked;            /* the owner holds flock(LOCK_EX) on the file while it lives */
    _Atomic uint8_t departed;  /* the owner tore btl/shm down (px_finalize): not a failure */
} px_btl_shm_seg_hdr_t;
_Static_assert(sizeof(px_btl_shm_seg_hdr_t) <= 128, "the segment header fits before the fifo");

/* The receive queue: producers swap the tail, the owner pops the head. */
typedef struct px_btl_shm_fifo {
    _Atomic uint64_t tail;
    char pad0[56];
    _Atomic uint64_t head;
    char pad1[56];
} px_btl_shm_fifo_t;

/* A fragment's header in the sender's segment, then its data. */
typedef struct px_btl_shm_frag_hdr {
    _Atomic uint64_t next; /* relative pointer on a queue */
    uint64_t des;          /* the owner's descriptor (meaningful to the owner only) */
    uint32_t len;
    uint8_t tag;
    uint8_t flags; /* PX_BTL_SHM_FRAG_RETURNED */
    uint16_t src;  /* sender's local index */
    uint16_t off;  /* where the data starts, from the header (64..127) */
} px_btl_shm_frag_hdr_t;
#define PX_BTL_SHM_FRAG_RETURNED 0x1

/* What a process publishes in the modex. */
typedef struct px_btl_shm_modex {
    uint64_t key;
    uint64_t size;
    uint64_t vaddr; /* where the owner mapped it (for the single-copy probe) */
    int32_t pid;
    int32_t local_index;
    char path[256];
} px_btl_shm_modex_t;

/* Per-peer state. */
struct px_btl_endpoint {
    int rank;
    int idx; /* local index */
    pid_t pid;
    char *seg; /* the peer's segment, mapped */
    size_t seg_size;
    /* send side: our fast box in the peer's segment */
    char *fb_out;
    _Atomic uint64_t *fb_out_ack; /* the peer's read position (peer writes) */
    uint64_t fb_wpos, fb_rpos_cache;
    uint64_t fb_zeroed;      /* every slot start in [fb_wpos, fb_zeroed) is zero */
    uint64_t fb_out_pop;     /* our pages of the ring below this are faulted in (lazy fault-in;
                                UINT64_MAX: all, or never asked) */
    px_btl_shm_fifo_t *fifo; /* the peer's receive queue */
    uint32_t inflight;       /* fragments sent, not yet returned */
    bool fb_reserved;        /* a descriptor holds fast box space (in-place send) */
    /* receive side: its fast box in our segment */
    char *fb_in;
    _Atomic uint64_t *fb_in_ack;
    uint64_t fb_rpos;
    uint64_t fb_in_pop; /* as fb_out_pop, for our mapping of the ring it writes */
    /* liveness: a descriptor of the peer's segment file (-1: no check) */
    int lockfd;
    bool gone;            /* seen dead or cut off (reported once) */
    bool corrupt;         /* it wrote something out of bounds: no longer read */
    bool exiting;         /* a copy from or to it found no process (ESRCH): reported in progress */
    size_t fbs;           /* bytes of each ring with this peer (a power of two) */
    size_t fb_max;        /* largest message (with its 8-byte header) through them */
    size_t fb_stream_max; /* ... while we stream to it (btl_shm_fbox_stream_max, <= fb_max) */
    uint32_t stream_run;  /* our sends to it since its last message to us (saturating) */
    /* A dynamic peer (BTL API 3.3, shm_dyn.c): rank PX_BTL_RANK_DYNAMIC, no
     * local index, a connection segment of each side (rings only). */
    bool dyn;
    int memfd; /* our connection segment (-1: none), open until remove */
    int pidfd; /* the peer process, for its liveness (-1: none) */
    char *own; /* our connection segment, mapped: the ring the peer writes */
    size_t own_size;
    uint64_t key; /* the random key of our segment */
    struct px_btl_endpoint *dyn_next, *dyn_prev;
    uint32_t split_slots; /* dynamic: the split slots in our segment in use (a bit each) */
};

typedef struct px_btl_shm_frag {
    px_btl_descriptor_t base;
    px_btl_segment_t segment;
    px_btl_shm_frag_hdr_t *hdr;
    uint64_t rel; /* relative pointer of hdr */
    struct px_btl_endpoint *ep;
    px_free_list_t *list;
    size_t capacity;
    size_t fb_off, fb_esz, fb_lead; /* in-place fast box descriptor: its entry (fb_esz 0: none) */
    bool queued;                    /* on a peer's queue, until it hands it back */
    uint32_t index;                 /* in frag_table (heap fragments) */
} px_btl_shm_frag_t;
PX_CLASS_DECLARATION(px_btl_shm_frag_t);

/* ------------------------------------------------------------ split single copy
 * A rendezvous read by CMA (btl_shm_cma_split bytes and more) is copied by
 * both processes at once: the receiver offers the copy in a slot of its own
 * segment (a line in one of its eager fragments) and tells the sender with a
 * control entry in the sender's fast box (PX_BTL_SHM_FB_CTL); both then claim
 * chunks of the message from the slot's `next` with an atomic add, the
 * receiver reading its chunks (process_vm_readv), the sender writing its
 * chunks into the receiver's buffer (process_vm_writev). A sender that does
 * not come (busy elsewhere, descheduled) is shut out: the receiver, having
 * claimed every chunk itself, closes the slot (OPEN -> CLOSED) and the
 * sender's late join fails. A sender that joined sets LEFT after its last
 * access, and only then may the receiver reuse the slot.
 * The transfer engine's gets (PX_BTL_RDMA_FLAG_ASYNC) are split the same
 * way with the region's owner. With a dynamic peer (no fragment heap) the
 * slot is one of PX_BTL_SHM_DYN_SLOTS lines in the header page of the
 * reader's connection segment, which the owner maps, and the offer goes
 * through the connection's ring; only to an owner whose connection
 * segment says it takes offers (PX_BTL_SHM_DYN_FEAT_SPLIT: older ones do
 * not know control entries). */
enum {
    PX_BTL_SHM_SPLIT_OPEN = 0,
    PX_BTL_SHM_SPLIT_JOINED = 1,
    PX_BTL_SHM_SPLIT_CLOSED = 2,
    PX_BTL_SHM_SPLIT_LEFT = 3,
};
typedef struct px_btl_shm_split_slot {
    _Atomic uint64_t state;              /* generation << 2 | PX_BTL_SHM_SPLIT_* */
    _Atomic uint64_t next;               /* the next byte of the message to claim */
    _Atomic uint64_t fail_off, fail_len; /* a chunk the sender could not write (before LEFT) */
    uint64_t pad[4];
} px_btl_shm_split_slot_t;
/* The offer, in the control entry. */
typedef struct px_btl_shm_split_msg {
    uint64_t slot;  /* the slot's offset in the receiver's segment */
    uint64_t gen;   /* its generation (the state's high bits) */
    uint64_t src;   /* the sender's buffer, in the sender */
    uint64_t dst;   /* the receiver's buffer, in the receiver */
    uint64_t total; /* bytes of the message */
    uint64_t chunk; /* bytes per claim */
} px_btl_shm_split_msg_t;
/* An offer read from a peer's control entry is usable when its slot lies in
 * the peer's fragment heap (from heap_off, 64-byte aligned, inside its
 * seg_size-byte segment; a dynamic peer's: its slot lines,
 * PX_BTL_SHM_DYN_SLOT_OFF .. PX_BTL_SHM_DYN_SLOT_END) and its sizes keep
 * the sender's loop short (a chunk of 4 KiB and more, at most 2^20
 * chunks). */
static inline bool px_btl_shm_split_msg_ok(const px_btl_shm_split_msg_t *m, size_t heap_off,
                                           size_t seg_size)
{
    const size_t ssz = sizeof(px_btl_shm_split_slot_t);
    return seg_size >= ssz && m->slot >= heap_off && !(m->slot & 63) && m->slot <= seg_size - ssz &&
           m->gen < (1ULL << 60) && m->total > 0 && m->chunk >= 4096 &&
           m->chunk <= ((uint64_t)1 << 40) && m->total / m->chunk < (1u << 20);
}
/* Bytes per claim for a message of `size`: a quarter (an eighth above
 * 1 MiB), whole pages, at least 32 KiB, so each side makes a few system
 * calls and a late side still finds chunks. */
static inline size_t px_btl_shm_split_chunk(size_t size)
{
    size_t c = size > ((size_t)1 << 20) ? size / 8 : size / 4;
    c = (c + 4095) & ~(size_t)4095;
    return c < ((size_t)32 << 10) ? (size_t)32 << 10 : c;
}
/* A split the receiver started and has not completed. */
typedef struct px_btl_shm_split {
    struct px_btl_endpoint *ep;
    px_btl_shm_frag_t *frag; /* holds the slot */
    px_btl_shm_split_slot_t *slot;
    uint64_t gen;
    char *local;
    uint64_t remote;
    size_t total;
    int status;
    bool timed;       /* auto: its time is a sample */
    uint64_t t0;      /* our processor time when it began (ns; timed only) */
    uint64_t t_own;   /* ... when we had read our chunks */
    size_t own_bytes; /* bytes of our chunks */
    int dslot;        /* a dynamic peer's: the slot's index in our connection segment (frag NULL) */
    px_btl_registration_handle_t *local_handle;
    px_btl_rdma_completion_fn cbfunc;
    void *cbcontext, *cbdata;
} px_btl_shm_split_t;
#define PX_BTL_SHM_SPLITS 16 /* splits in flight; more read alone */
/* A split completed while the reader started another (its slot free
 * again), whose callback waits for progress: a caller's btl_get never runs
 * another request's completion. */
typedef struct px_btl_shm_split_done {
    struct px_btl_endpoint *ep;
    char *local;
    px_btl_registration_handle_t *local_handle;
    px_btl_rdma_completion_fn cbfunc;
    void *cbcontext, *cbdata;
    int status;
} px_btl_shm_split_done_t;
#define PX_BTL_SHM_SPLIT_DONE 256
/* PX_BTL_SHM_TEST_SPLIT: the test suite's hooks (t_shm_faultin.sh). */
enum {
    PX_BTL_SHM_SPLIT_TEST_LEAVE = 1,  /* "leave": the receiver leaves every chunk to the sender */
    PX_BTL_SHM_SPLIT_TEST_IGNORE = 2, /* "ignore": a sender never takes an offer */
};

typedef struct px_btl_shm_module {
    px_btl_module_t super;
    px_btl_error_fn error_cb;
} px_btl_shm_module_t;

/* Component state. */
typedef struct px_btl_shm_state {
    /* variables */
    char *backing_dir;
    size_t fbox_size_var;   /* btl_shm_fbox_size (0: auto) */
    size_t fbox_size;       /* bytes of each per-pair ring (power of two), from init on */
    size_t fbox_max_send;   /* largest message through a fast box */
    size_t fbox_stream_max; /* ... while the sender streams (0: fbox_max_send) */
    int single_copy;        /* PX_BTL_SHM_SC_* */
    size_t single_copy_min; /* btl_shm_single_copy_min: auto's smallest rendezvous by CMA */
    size_t sc_min;          /* from setup on: a rendezvous get/put below it is declined */
    int free_list_eager_max, free_list_send_max;
    size_t frag_cool_bytes; /* btl_shm_frag_cool_bytes */
    int poll_batch;
    int fault_in;   /* btl_shm_fault_in: PX_BTL_SHM_FAULT_* */
    bool dynamic;   /* btl_shm_dynamic */
    bool dyn_split; /* btl_shm_dyn_split: take split offers from connected peers */
    /* runtime */
    bool in_progress;
    bool dyn_exiting;       /* a dynamic peer is `exiting`: progress reports it first */
    unsigned quiet_polls;   /* progress calls that found nothing, towards a liveness check */
    uint64_t next_check_ns; /* earliest next liveness check (CLOCK_MONOTONIC_COARSE) */
    int seg_fd;             /* own segment, locked while this process lives (-1: none) */
    int my_idx, nlocal, my_rank;
    int *local_index; /* [size]: local index of each rank, -1 when remote */
    char dir[200], path[240];
    char *seg; /* own segment */
    size_t seg_size;
    size_t heap_off, heap_used;
    size_t reserved;     /* bytes of the segment reserved from offset 0 */
    bool reserve_warned; /* the heap could not grow for lack of room: said once */
    uint64_t key;
    bool unlinked;
    bool cma_ok;
    uint64_t cma_calls, cma_declined; /* single copies done, rendezvous ones declined (tests) */
    /* btl_shm_single_copy=auto: what the receiver measured (px_btl_shm_sc_*). */
    bool sc_auto;                            /* measure and choose (auto) */
    bool sc_fixed;                           /* PX_BTL_SHM_TEST_SC_COST: estimates fixed */
    double sc_cma_ns[PX_BTL_SHM_SC_CLASSES]; /* CMA: ns per KiB copied, per copier (0: unknown) */
    double sc_frag_ns;                       /* a pipelined fragment's period, ns per KiB */
    uint64_t sc_frag_t;                      /* when the last one was delivered (ns) */
    uint32_t sc_seen[PX_BTL_SHM_SC_CLASSES]; /* rendezvous of each class, for exploring */
    size_t cma_split;                        /* btl_shm_cma_split: smallest split (0: none) */
    int split_test;                          /* PX_BTL_SHM_SPLIT_TEST_* */
    uint64_t split_gen;
    px_btl_shm_split_t splits[PX_BTL_SHM_SPLITS];
    int nsplits;
    px_btl_shm_split_done_t split_done[PX_BTL_SHM_SPLIT_DONE]; /* callbacks for progress */
    int nsplit_done;
    uint64_t cma_splits, cma_helped; /* splits started, chunks written for peers (tests) */
    uint64_t cma_joined;             /* splits the sender joined */
    uint64_t cma_own_chunks;         /* chunks of splits read by us */
    uint64_t cma_xfer_splits;        /* splits of the transfer engine's gets (ASYNC) */
    /* Messages sent (tests, t_shm_faultin.sh): through a fast box, as
     * fragments on a queue (eager or pipeline), and the times the sender
     * found its fast box without room (the message then took the queue or
     * waited). */
    uint64_t sent_fbox, sent_frag, fbox_full;
    char **bases;                        /* [nlocal]: mapped segments by local index */
    size_t *sizes;                       /* [nlocal]: their sizes (0: not mapped) */
    struct px_btl_shm_frag **frag_table; /* heap fragments by the index in their des */
    int frag_count, frag_cap;
    bool queue_broken; /* a bad pointer was found in our receive queue: not read again */
    px_btl_shm_fifo_t *my_fifo;
    struct px_btl_endpoint **by_idx; /* [nlocal] */
    struct px_btl_endpoint **active; /* endpoints to poll */
    int nactive;
    px_free_list_t frags_eager, frags_send, frags_fbox;
    struct px_btl_shm_frag **cool; /* returned pipeline fragments, oldest first */
    int cool_cap, cool_count, cool_head;
    size_t cool_bytes; /* data bytes of the fragments cooling */
    bool lists_constructed, lists_initialized;
    /* dynamic peers (shm_dyn.c) */
    struct px_btl_endpoint *dyn_head;
    int dyn_count;
    bool dyn_only; /* no local rank of the job: the module serves dynamic peers only */
} px_btl_shm_state_t;

extern const px_btl_component_t px_btl_shm_component;
extern px_btl_shm_module_t px_btl_shm_module;
extern px_btl_shm_state_t px_btl_shm_state;

/* Pipeline fragments cool down in a FIFO before reuse: the one the receiver
 * has just read still sits in its cache, and overwriting it would cost an
 * invalidation per line; one followed by btl_shm_frag_cool_bytes of other
 * fragments' data (more than the receiver's L2 holds) has mostly left it.
 * Counted in bytes, not fragments: 32 KiB messages need twice as many
 * fragments cooling as 64 KiB ones (a count of 32 made 32 KiB latency 1.3x
 * that with 64). */
static inline px_btl_shm_frag_t *px_btl_shm_cool_pop(px_btl_shm_state_t *s)
{
    px_btl_shm_frag_t *f = s->cool[s->cool_head];
    s->cool_head = (s->cool_head + 1) % s->cool_cap;
    s->cool_count--;
    s->cool_bytes -= f->segment.seg_len;
    return f;
}

/* A sender streams to a peer when this many of its sends in a row went to
 * it with no message from it in between: its next messages larger than
 * btl_shm_fbox_stream_max then take eager fragments instead of the fast
 * box (docs/shm.md, "Streaming"). A ping-pong (a reply between sends)
 * never reaches it. */
#define PX_BTL_SHM_STREAM_RUN 2

/* The ring size btl_shm_fbox_size=0 (auto) picks for `nlocal` local
 * processes: 4 MiB, halved while the rings of a process's nlocal - 1 peers
 * would exceed 4 MiB (its own slot is never used nor faulted in), never below
 * 64 KiB. A ring larger than a core's L2 makes the sender write lines the
 * receiver read long ago (gone from its private caches) instead of lines it
 * still holds: with 2 local processes, 8 KiB one-way 0.75-0.87 us on 1 MiB
 * rings against 0.57-0.68 on 4 MiB ones, 16 KiB streaming 10-14 GB/s
 * against 30-40 (docs/measurements/shm.md). */
/* Fast box entries are whole slots of PX_BTL_SHM_FB_SLOT bytes, two to a
 * cache line: the header (8 bytes), the runtime's match header (16) and an
 * 8-byte message fill one, so a stream of small messages moves half as many
 * lines between the cores as with an entry per line (docs/shm.md). */
#define PX_BTL_SHM_FB_SLOT       32
#define PX_BTL_SHM_FB_SLOT_SHIFT 5
/* The entry size field has 16 bits, in slots. */
#define PX_BTL_SHM_FBOX_MAX_ENTRY   ((size_t)0xffff * PX_BTL_SHM_FB_SLOT)
#define PX_BTL_SHM_FBOX_AUTO_MAX    (4u << 20)
#define PX_BTL_SHM_FBOX_AUTO_MIN    (64u << 10)
#define PX_BTL_SHM_FBOX_AUTO_BUDGET (4u << 20)
static inline size_t px_btl_shm_auto_fbox_size(int nlocal)
{
    size_t f = PX_BTL_SHM_FBOX_AUTO_MAX;
    while (f > PX_BTL_SHM_FBOX_AUTO_MIN &&
           (size_t)(nlocal > 1 ? nlocal - 1 : 1) * f > PX_BTL_SHM_FBOX_AUTO_BUDGET)
        f >>= 1;
    return f;
}

/* Fault in the pages of [addr, addr + len) now, writable (rings larger than
 * the old 64 KiB default: the first pass through a 1 MiB ring would
 * otherwise take 256 page faults on each side while messages wait, 0 B
 * one-way 0.09 -> 0.22-0.29 us in the median block of the first size
 * px_perf runs). Best effort: a kernel without MADV_POPULATE_WRITE (before
 * 5.14) faults them in on first use, as before. With btl_shm_fault_in=lazy
 * (the default) a ring is faulted in a chunk at a time, ahead of the
 * position that writes or reads it (PX_BTL_SHM_FAULT_CHUNK), during its first
 * pass; setup faulted every ring in at px_init, which made `pxrun -n 8`
 * start 2-3 times slower (docs/shm.md). */
#define PX_BTL_SHM_FAULT_CHUNK ((size_t)64 << 10)
static inline void px_btl_shm_populate(char *addr, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t a = (uintptr_t)addr & ~(uintptr_t)4095;
    (void)madvise((void *)a, len + ((uintptr_t)addr - a), MADV_POPULATE_WRITE);
#else
    (void)addr;
    (void)len;
#endif
}

/* Offsets inside a segment of `nlocal` processes with rings of fbox_size. */
static inline size_t px_btl_shm_off_fifo(void)
{
    return 128;
}
static inline size_t px_btl_shm_off_ack(int idx)
{
    return 256 + (size_t)idx * 64;
}
static inline size_t px_btl_shm_off_fbox(int nlocal, size_t fbox_size, int idx)
{
    size_t base = (256 + (size_t)nlocal * 64 + 4095) & ~(size_t)4095;
    return base + (size_t)idx * fbox_size;
}

/* The job id as a segment header keeps it: FNV-1a over every byte (a PMIx
 * namespace may be 255 characters, and ids that differ only at the end are
 * different jobs), compared with the length. */
static inline uint64_t px_btl_shm_job_hash(const char *jobid)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)jobid; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

/* ------------------------------------------------------------ what peers write
 * Everything below checks a value another process wrote, against bounds this
 * process knows; none reads shared memory itself, so the fuzz harnesses
 * (test/fuzz/fuzz_shm_*.c) reach them with any bytes. */

/* A fast box entry's header at ring offset `off` (< fbs) of a ring of `fbs`
 * bytes (FB_SKIP entries aside): its entry size (bits 32..47, in 32-byte
 * slots, PX_BTL_SHM_FB_SLOT) must
 * hold the 8-byte header, the lead (bits 48..54) and the data length (bits
 * 0..23), and end inside the ring (a sender never wraps an entry; it writes a
 * skip entry instead). */
#define PX_BTL_SHM_FB_VALID (1ULL << 63)
#define PX_BTL_SHM_FB_SKIP  (1ULL << 62) /* go to the ring's start */
#define PX_BTL_SHM_FB_PAD   (1ULL << 61) /* an entry to step over (a descriptor freed unsent) */
#define PX_BTL_SHM_FB_CTL   (1ULL << 60) /* btl/shm's own entry (a split single copy's offer) */
static inline bool px_btl_shm_fbox_entry_ok(uint64_t h, size_t off, size_t fbs)
{
    size_t esz = (size_t)((h >> 32) & 0xffff) << PX_BTL_SHM_FB_SLOT_SHIFT;
    size_t used = 8 + (size_t)((h >> 48) & 127) + (size_t)(h & 0xffffff);
    return used <= esz && esz <= fbs - off;
}

/* A queue entry (a relative pointer: local index in bits 48..63, offset in
 * that process's segment below) names a fragment header when the index is a
 * process of `nlocal` whose segment is mapped (sizes[idx] > 0: its size) and
 * the offset is a 64-byte aligned place in the fragment heap, from heap_off,
 * with room for the header. */
static inline bool px_btl_shm_rel_ok(uint64_t rel, int nlocal, const size_t *sizes, size_t heap_off)
{
    uint64_t idx = rel >> 48, off = rel & 0xffffffffffffULL;
    return idx < (uint64_t)nlocal && sizes[idx] >= heap_off + PX_BTL_SHM_FRAG_HDR &&
           off >= heap_off && !(off & 63) && off <= sizes[idx] - PX_BTL_SHM_FRAG_HDR;
}

/* A fragment header at offset `rel_off` (px_btl_shm_rel_ok) of a segment of
 * seg_size bytes: its data (from `off` 64..127 bytes after the header, `len`
 * bytes) lies inside the segment. */
static inline bool px_btl_shm_frag_ok(uint64_t rel_off, size_t seg_size, uint16_t off, uint32_t len)
{
    return off >= PX_BTL_SHM_FRAG_HDR && off < 2 * PX_BTL_SHM_FRAG_HDR &&
           (uint64_t)off + len <= seg_size - rel_off;
}

/* One step of a fast box reader at *rpos of the ring at `ring` (fbs bytes,
 * a power of two), which another process writes: 0 nothing there yet; 1 a
 * message (*data, *len, *tag); 2 a pad entry stepped over; 3 a skip to the
 * ring's start; 4 a control entry of btl/shm's own (*data, *len: a split
 * single copy's offer); -1 a header that does not fit its entry or the ring (*hdr
 * holds it, *rpos is left alone). On 1..3 *rpos moves past the entry; the
 * caller publishes it once it is done with the data. */
static inline int px_btl_shm_fbox_take(char *ring, size_t fbs, uint64_t *rpos, uint64_t *hdr,
                                       char **data, size_t *len, uint8_t *tag)
{
    size_t off = *rpos & (fbs - 1);
    uint64_t h = atomic_load_explicit((_Atomic uint64_t *)(ring + off), memory_order_acquire);
    *hdr = h;
    if (!(h & PX_BTL_SHM_FB_VALID))
        return 0;
    if (__builtin_expect((h & PX_BTL_SHM_FB_SKIP) != 0, 0)) {
        *rpos += fbs - off;
        return 3;
    }
    if (__builtin_expect(!px_btl_shm_fbox_entry_ok(h, off, fbs), 0))
        return -1;
    *rpos += ((h >> 32) & 0xffff) << PX_BTL_SHM_FB_SLOT_SHIFT;
    if (__builtin_expect((h & PX_BTL_SHM_FB_PAD) != 0, 0))
        return 2;
    *data = ring + off + 8 + ((h >> 48) & 127);
    *len = (size_t)(h & 0xffffff);
    *tag = (uint8_t)(h >> 24);
    return __builtin_expect((h & PX_BTL_SHM_FB_CTL) != 0, 0) ? 4 : 1;
}

/* A popped queue entry, decoded (px_btl_shm_queue_decode). */
enum {
    PX_BTL_SHM_Q_MSG = 1,       /* a peer's fragment: data, len, tag */
    PX_BTL_SHM_Q_RETURNED = 2,  /* one of ours handed back: des (its index in our table) */
    PX_BTL_SHM_Q_BAD_REL = -1,  /* the pointer names no place in a fragment heap */
    PX_BTL_SHM_Q_BAD_FRAG = -2, /* the fragment's header does not fit its segment */
};
typedef struct px_btl_shm_qentry {
    int idx;      /* local index of the segment it lies in */
    uint64_t off; /* its offset there */
    px_btl_shm_frag_hdr_t *hdr;
    char *data;    /* PX_BTL_SHM_Q_MSG */
    uint32_t len;  /* as read, also when refused */
    uint16_t doff; /* data offset from the header, as read */
    uint16_t src;
    uint8_t tag, flags;
    uint64_t des; /* PX_BTL_SHM_Q_RETURNED */
} px_btl_shm_qentry_t;

/* Decode the queue entry `rel` of the process at local index my_idx: the
 * pointer is checked (px_btl_shm_rel_ok) before anything is read through
 * it, and each header field, which its writer may still change, is read
 * once and checked against the segment it lies in (bases[i] mapped, sizes[i]
 * bytes). */
static inline int px_btl_shm_queue_decode(uint64_t rel, int nlocal, int my_idx, char *const *bases,
                                          const size_t *sizes, size_t heap_off,
                                          px_btl_shm_qentry_t *e)
{
    if (!px_btl_shm_rel_ok(rel, nlocal, sizes, heap_off))
        return PX_BTL_SHM_Q_BAD_REL;
    e->idx = (int)(rel >> 48);
    e->off = rel & 0xffffffffffffULL;
    px_btl_shm_frag_hdr_t *h = (px_btl_shm_frag_hdr_t *)(bases[e->idx] + e->off);
    e->hdr = h;
    e->flags = *(volatile uint8_t *)&h->flags;
    if (e->idx == my_idx) {
        e->des = *(volatile uint64_t *)&h->des;
        return (e->flags & PX_BTL_SHM_FRAG_RETURNED) ? PX_BTL_SHM_Q_RETURNED
                                                     : PX_BTL_SHM_Q_BAD_FRAG;
    }
    e->src = *(volatile uint16_t *)&h->src;
    e->doff = *(volatile uint16_t *)&h->off;
    e->len = *(volatile uint32_t *)&h->len;
    e->tag = *(volatile uint8_t *)&h->tag;
    if (e->src != (uint16_t)e->idx || (e->flags & PX_BTL_SHM_FRAG_RETURNED) ||
        !px_btl_shm_frag_ok(e->off, sizes[e->idx], e->doff, e->len))
        return PX_BTL_SHM_Q_BAD_FRAG;
    e->data = (char *)h + e->doff;
    return PX_BTL_SHM_Q_MSG;
}

/* Check a peer's shm modex blob (`len` bytes) published by the rank at local
 * index `idx`, whose segment must lie in folder `dir`: on success copy it to
 * *out (path NUL-terminated) and return NULL, else say what is wrong. */
const char *px_btl_shm_modex_check(const void *blob, size_t len, int idx, const char *dir,
                                   px_btl_shm_modex_t *out);

/* What this process expects of a peer's segment (attach checks the header's
 * geometry against it and against the mapped size). */
typedef struct px_btl_shm_geom {
    int rank;         /* the owner, for the header's owner_rank and messages */
    int my_rank;      /* this process, for messages */
    int nlocal;       /* processes on this host */
    size_t fbox_size; /* bytes of each ring (btl_shm_fbox_size) */
} px_btl_shm_geom_t;

/* Check a segment header `h` (a copy, taken once) of a mapping of `size`
 * bytes against this job's id, the key from the modex and, with geom, the
 * geometry this process expects: NULL when it is good, else why not; for a
 * geometry field, "geometry", with the field's name and both values. */
const char *px_btl_shm_header_check(const px_btl_shm_seg_hdr_t *h, size_t size, const char *jobid,
                                    uint64_t key, const px_btl_shm_geom_t *geom, const char **field,
                                    uint64_t *theirs, uint64_t *ours);

/* Segment files (shm_segment.c); exported for the tests. */
/* Create `path` (0600, O_EXCL; a name directly inside `dir`) of `size`
 * bytes in folder `dir` (made 0700 when missing and held, as
 * px_btl_shm_dir_ensure; refused when not owned by us or open to others),
 * reserve its first `reserve` bytes (posix_fallocate: ENOSPC is an error
 * naming the folder, not a SIGBUS later; all `size` without lockfd, or when
 * the lock cannot be taken: the caller reserves the rest with
 * px_btl_shm_segment_reserve on *lockfd before it touches it), map it and
 * write its header. A segment of that name
 * left by a process that has ended (its liveness lock is free) is taken
 * over; one whose owner lives is an error. */
int px_btl_shm_segment_create(const char *dir, const char *path, size_t size, size_t reserve,
                              const char *jobid, uint64_t key, int rank, int nlocal,
                              size_t fbox_size, char **base, int *lockfd);
/* Reserve [off, off + len) of the segment file at fd (posix_fallocate): 0, or
 * the errno when the file system has no room (ENOSPC, EFBIG, ENOMEM); a file
 * system that cannot reserve at all counts as done. */
int px_btl_shm_segment_reserve(int fd, size_t off, size_t len);
/* The error of a segment without room: `len` bytes of `path` could not be
 * reserved (errno `err`), with the folder's free space and the way out. */
void px_btl_shm_segment_no_room(const char *dir, const char *path, size_t len, int err, int nlocal);
/* Map a peer's segment after checking its header against the job id (hash and
 * length), the key and size from the modex, and with `geom`, its geometry
 * (owner rank, process count, ring size, heap offset, rings inside the mapped
 * size); PX_ERR_BAD_PARAM with a message naming the peer, the field and both
 * values.
 * With lockfd, the file stays open there when its owner holds the liveness
 * lock (else -1). On failure, create removes the folder when it is empty
 * (so no early failure leaves an empty plexus-* folder behind). */
int px_btl_shm_segment_attach(const char *path, size_t size, const char *jobid, uint64_t key,
                              const px_btl_shm_geom_t *geom, char **base, int *lockfd);
/* 1 when the owner of the segment open at lockfd has ended (its lock is
 * free), 0 while it lives or when it cannot be told. */
int px_btl_shm_peer_gone(int lockfd);

/* Make the job's segment folder `dir` (0700) when missing, check that it is
 * this user's and closed to others, and hold it open (one more reference
 * when held already); PX_SUCCESS or an error after saying why. The name is
 * never given up while the job runs: files inside come and go, the folder
 * stays until its last user (pxrun, or the last process of the job) leaves. */
int px_btl_shm_dir_ensure(const char *dir);
/* The held folder's descriptor (files are made and removed relative to
 * it), or -1. */
int px_btl_shm_dir_fd(void);
/* Drop a reference; at the last one, the process that is the folder's last
 * user (an exclusive flock succeeds) removes it and what is left inside,
 * through the descriptor. */
void px_btl_shm_dir_release(void);

/* Shareable memory for the transfer engine (shm_xfer.c, BTL API 3.2). */
int px_btl_shm_mem_alloc(px_btl_module_t *btl, size_t size, px_btl_mem_t *mem);
int px_btl_shm_mem_free(px_btl_module_t *btl, px_btl_mem_t *mem);
int px_btl_shm_mem_map(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *desc,
                       size_t desc_len, px_btl_mem_t *map);
int px_btl_shm_mem_unmap(px_btl_module_t *btl, px_btl_mem_t *map);
/* Remove the shareable-memory files of `rank`, which ended without freeing them. */
void px_btl_shm_xfer_forget(int rank);
/* Free every allocation still held (module cleanup). */
void px_btl_shm_xfer_cleanup(void);

/* Dynamic peers (shm_dyn.c, BTL API 3.3): a connection segment per side,
 * a memfd the peer opens through /proc/<pid>/fd/<n> (the kernel allows that
 * only to the same user, or a process allowed to ptrace it) after checking
 * that both run on the same boot of the same kernel in the same pid and IPC
 * namespaces; its header carries a random key the part names. */
#define PX_BTL_SHM_DYN_MAGIC 0x706c7864796e3031ULL /* "plxdyn01" */
/* 2: fast box entries in 32-byte slots; a peer of version 1 (an older
 * release) cannot read this ring nor write one we can read: it is unreachable
 * by btl/shm, and another transport (ofi) connects it. */
#define PX_BTL_SHM_DYN_VERSION  2
#define PX_BTL_SHM_DYN_RING_OFF 4096 /* the ring starts on the second page */
typedef struct px_btl_shm_dyn_hdr {
    uint64_t magic;
    uint32_t version;
    int32_t owner_pid;
    uint64_t key;
    uint64_t size;             /* of the whole segment */
    uint64_t ring;             /* bytes of the ring at PX_BTL_SHM_DYN_RING_OFF */
    _Atomic uint8_t departed;  /* the owner removed the connection */
    _Atomic uint32_t features; /* PX_BTL_SHM_DYN_FEAT_* (0 in a segment of before session 35) */
} px_btl_shm_dyn_hdr_t;
#define PX_BTL_SHM_DYN_ACK_OFF 128 /* the owner's read position in the ring */
/* The owner of this segment takes split offers (control entries) in it. */
#define PX_BTL_SHM_DYN_FEAT_SPLIT 0x1u
/* Split slots of the owner's gets from the peer: lines of the header page. */
#define PX_BTL_SHM_DYN_SLOT_OFF 1024
#define PX_BTL_SHM_DYN_SLOTS    16
#define PX_BTL_SHM_DYN_SLOT_END                                                                    \
    (PX_BTL_SHM_DYN_SLOT_OFF + PX_BTL_SHM_DYN_SLOTS * sizeof(px_btl_shm_split_slot_t))
_Static_assert(sizeof(px_btl_shm_dyn_hdr_t) <= PX_BTL_SHM_DYN_ACK_OFF &&
                   PX_BTL_SHM_DYN_ACK_OFF + 64 <= PX_BTL_SHM_DYN_SLOT_OFF &&
                   PX_BTL_SHM_DYN_SLOT_END <= PX_BTL_SHM_DYN_RING_OFF,
               "a connection segment's header page holds the header, the read position and "
               "the split slots");
_Static_assert(PX_BTL_SHM_DYN_SLOTS <= 32, "a bit each in split_slots");

/* btl/shm's part of a dynamic peer payload. */
typedef struct px_btl_shm_dyn_part {
    uint64_t magic; /* PX_BTL_SHM_DYN_MAGIC */
    uint32_t version;
    uint32_t uid;
    int32_t pid;
    int32_t fd; /* the memfd's number in process pid */
    uint64_t key;
    uint64_t size, ring;
    uint64_t vaddr; /* where the owner mapped its segment */
    unsigned char boot_id[16];
    uint64_t pidns, ipcns; /* inode numbers of /proc/self/ns/pid and ipc */
} px_btl_shm_dyn_part_t;

/* Check a peer's part against this host (boot id and namespaces as
 * `mine`): NULL when it may be the same host, else why not, with
 * *unreach true when it is another host or namespace, or another release's
 * part (another PX_BTL_SHM_DYN_VERSION; not an error: another transport may
 * connect it) and false when the part is malformed. Pure (the fuzz harness
 * reaches it). */
const char *px_btl_shm_dyn_part_check(const void *buf, size_t len,
                                      const px_btl_shm_dyn_part_t *mine, px_btl_shm_dyn_part_t *out,
                                      bool *unreach);
int px_btl_shm_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                         size_t *part_len, char *reason);
int px_btl_shm_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                          px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                          char *reason);
int px_btl_shm_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *reply,
                            size_t reply_len, char *reason);
int px_btl_shm_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *endpoint);
void px_btl_shm_dyn_check_peers(void);  /* from progress, when quiet */
int px_btl_shm_dyn_progress(void *ctx); /* shm_module.c: progress of a dynamic-only module */
void px_btl_shm_dyn_cleanup(void);
/* shm_module.c: complete the splits of gets from `ep` before its connection goes. */
void px_btl_shm_split_drop(px_btl_endpoint_t *ep);

int px_btl_shm_module_setup(void);             /* shm_module.c: called by init */
void px_btl_shm_module_cleanup(void);          /* shm_component.c */
int px_btl_shm_progress(px_btl_module_t *btl); /* shm_module.c */

/* End the connection to `ep` because of something found in shared memory
 * (shm_peers.c): stop reading anything it writes, fail what waits on it,
 * say what and where (`blamed`: it wrote it). */
PX_NOINLINE void px_btl_shm_cut(px_btl_endpoint_t *ep, bool blamed, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define px_btl_shm_corrupt(ep, ...) px_btl_shm_cut(ep, true, __VA_ARGS__)
/* Who wrote the bad entry `rel` of our queue: the process whose segment it
 * names, or, with a single peer, that peer; NULL when it cannot be told
 * (shm_peers.c). */
px_btl_endpoint_t *px_btl_shm_queue_culprit(uint64_t rel);
/* The receive queue itself holds the bad pointer `rel` (shm_peers.c). */
PX_NOINLINE void px_btl_shm_queue_corrupt(uint64_t rel, const char *where);
/* Report peers whose segment lock is free, at most every
 * PX_BTL_SHM_CHECK_NS (shm_peers.c; from progress, when quiet). */
PX_NOINLINE void px_btl_shm_check_peers(px_btl_shm_state_t *s);

/* Single copy (shm_rdma.c): process_vm_readv / process_vm_writev of `size`
 * bytes; the completion callback runs before returning. */
int px_btl_shm_cma_copy(px_btl_endpoint_t *ep, bool write, void *local_address,
                        uint64_t remote_address, size_t size, bool quiet);
int px_btl_shm_cma(px_btl_module_t *btl, px_btl_endpoint_t *ep, bool write, void *local_address,
                   uint64_t remote_address, px_btl_registration_handle_t *local_handle, size_t size,
                   px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata);
int px_btl_shm_flush(px_btl_module_t *btl, px_btl_endpoint_t *ep);

/* add_procs and del_procs of the module (shm_peers.c). */
int px_btl_shm_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                         const char **reasons);
int px_btl_shm_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints);

#endif
