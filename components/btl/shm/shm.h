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
 * 8-byte header written last with a release store, no syscalls). Others go
 * as fragments, carved from the sender's segment through the free list's
 * allocator hook, pushed on the receiver's lock-free multi-producer queue
 * (relative pointers), and pushed back on the sender's queue when consumed.
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

#define PX_BTL_SHM_MAGIC    0x706c78736d656d31ULL /* "plxsmem1" */
#define PX_BTL_SHM_VERSION  1
#define PX_BTL_SHM_EMPTY    (~(uint64_t)0)
#define PX_BTL_SHM_FRAG_HDR 64 /* bytes before a fragment's data */

enum { PX_BTL_SHM_SC_NONE = 0, PX_BTL_SHM_SC_CMA = 1, PX_BTL_SHM_SC_AUTO = 2 };

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
    char jobid[64];
    uint8_t locked;           /* the owner holds flock(LOCK_EX) on the file while it lives */
    _Atomic uint8_t departed; /* the owner tore btl/shm down (px_finalize): not a failure */
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
    uint64_t fb_zeroed;      /* every line start in [fb_wpos, fb_zeroed) is zero */
    px_btl_shm_fifo_t *fifo; /* the peer's receive queue */
    uint32_t inflight;       /* fragments sent, not yet returned */
    bool fb_reserved;        /* a descriptor holds fast box space (in-place send) */
    /* receive side: its fast box in our segment */
    char *fb_in;
    _Atomic uint64_t *fb_in_ack;
    uint64_t fb_rpos;
    /* liveness: a descriptor of the peer's segment file (-1: no check) */
    int lockfd;
    bool gone; /* seen dead (reported once) */
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
} px_btl_shm_frag_t;
PX_CLASS_DECLARATION(px_btl_shm_frag_t);

typedef struct px_btl_shm_module {
    px_btl_module_t super;
    px_btl_error_fn error_cb;
} px_btl_shm_module_t;

/* Component state. */
typedef struct px_btl_shm_state {
    /* variables */
    char *backing_dir;
    size_t fbox_size_var; /* btl_shm_fbox_size (0: auto) */
    size_t fbox_size;     /* bytes of each per-pair ring (power of two), from init on */
    size_t fbox_max_send; /* largest message through a fast box */
    int single_copy;      /* PX_BTL_SHM_SC_* */
    int free_list_eager_max, free_list_send_max;
    size_t frag_cool_bytes; /* btl_shm_frag_cool_bytes */
    int poll_batch;
    /* runtime */
    bool in_progress;
    unsigned quiet_polls;   /* progress calls that found nothing, towards a liveness check */
    uint64_t next_check_ns; /* earliest next liveness check (CLOCK_MONOTONIC_COARSE) */
    int seg_fd;             /* own segment, locked while this process lives (-1: none) */
    int my_idx, nlocal, my_rank;
    int *local_index; /* [size]: local index of each rank, -1 when remote */
    char dir[200], path[240];
    char *seg; /* own segment */
    size_t seg_size;
    size_t heap_off, heap_used;
    uint64_t key;
    bool unlinked;
    bool cma_ok;
    char **bases; /* [nlocal]: mapped segments by local index */
    px_btl_shm_fifo_t *my_fifo;
    struct px_btl_endpoint **by_idx; /* [nlocal] */
    struct px_btl_endpoint **active; /* endpoints to poll */
    int nactive;
    px_free_list_t frags_eager, frags_send, frags_fbox;
    struct px_btl_shm_frag **cool; /* returned pipeline fragments, oldest first */
    int cool_cap, cool_count, cool_head;
    size_t cool_bytes; /* data bytes of the fragments cooling */
    bool lists_constructed, lists_initialized;
} px_btl_shm_state_t;

extern const px_btl_component_t px_btl_shm_component;
extern px_btl_shm_module_t px_btl_shm_module;
extern px_btl_shm_state_t px_btl_shm_state;

/* The ring size btl_shm_fbox_size=0 (auto) picks for `nlocal` local
 * processes: 4 MiB, halved while the rings of a process's nlocal - 1 peers
 * would exceed 4 MiB (its own slot is never used nor faulted in), never below
 * 64 KiB. A ring larger than a core's L2 makes the sender write lines the
 * receiver read long ago (gone from its private caches) instead of lines it
 * still holds: with 2 local processes, 8 KiB one-way 0.75-0.87 us on 1 MiB
 * rings against 0.57-0.68 on 4 MiB ones, 16 KiB streaming 10-14 GB/s
 * against 30-40 (docs/shm.md). */
#define PX_BTL_SHM_FBOX_MAX_ENTRY   ((size_t)0xffff * 64) /* entry size / 64: 16 bits */
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
 * 5.14) faults them in on first use, as before. */
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

/* Segment files (shm_segment.c); exported for the tests. */
/* Create `path` (0600, O_EXCL; a name directly inside `dir`) of `size`
 * bytes in folder `dir` (made 0700 when missing and held, as
 * px_btl_shm_dir_ensure; refused when not owned by us or open to others),
 * reserve its pages (posix_fallocate: ENOSPC is an error naming the folder,
 * not a SIGBUS later), map it and write its header. A segment of that name
 * left by a process that has ended (its liveness lock is free) is taken
 * over; one whose owner lives is an error. */
int px_btl_shm_segment_create(const char *dir, const char *path, size_t size, const char *jobid,
                              uint64_t key, int rank, int nlocal, size_t fbox_size, char **base,
                              int *lockfd);
/* Map a peer's segment after checking its header against the job id and the
 * key from the modex; PX_ERR_BAD_PARAM with a message naming what differs.
 * With lockfd, the file stays open there when its owner holds the liveness
 * lock (else -1). On failure, create removes the folder when it is empty
 * (so no early failure leaves an empty plexus-* folder behind). */
int px_btl_shm_segment_attach(const char *path, size_t size, const char *jobid, uint64_t key,
                              char **base, int *lockfd);
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

int px_btl_shm_module_setup(void); /* shm_module.c: called by init */
void px_btl_shm_module_cleanup(void);

/* add_procs and del_procs of the module (shm_peers.c). */
int px_btl_shm_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                         const char **reasons);
int px_btl_shm_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints);

#endif
