/*
 * xfer.h: the transfer engine's internal state (runtime/plexus_xfer.h is its
 * public face), shared by its files and the runtime:
 *  - xfer.c: variables, init/finalize, the progress lock, regions, keys
 *    exported and imported (mappings of peers' memory), peer failures;
 *  - xfer_key.c: the key's wire format (a pure parser, also fuzzed);
 *  - xfer_batch.c: batches, submission, path choice, the queue into
 *    progress, direct paths (mapped copies, put/get striped over rails),
 *    flush and notifications;
 *  - xfer_stage.c: the staged path over active messages (bounce buffers).
 * Not installed. Code inside the library (a collective component, say) may
 * use the public calls from any context, including an active-message
 * callback: submitting never waits, and a progress call made while this
 * thread already progresses does not re-enter.
 */
#ifndef PX_RUNTIME_XFER_H
#define PX_RUNTIME_XFER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/class/hash_table.h"
#include "core/class/mpsc.h"
#include "runtime/plexus_xfer.h"
#include "runtime/runtime.h"

#define PX_XFER_MAX_MODULES 16
#define PX_XFER_MAX_RAILS   8 /* rails of one remote region (a module may give two: map, put/get) */
#define PX_XFER_MAX_STRIPE  4 /* rails one request is striped over */
#define PX_XFER_MAX_HANDLE  PX_RT_MAX_HANDLE
#define PX_XFER_CTL_PAGE    4096 /* control page before memory allocated through the engine */

/* Active-message tags (runtime range; the messaging layer has 1..7). */
#define PX_XFER_AM_NOTIFY 16 /* a notification */
#define PX_XFER_AM_WRITE  17 /* staged write: a chunk for the target */
#define PX_XFER_AM_WACK   18 /* target -> initiator: that chunk is written */
#define PX_XFER_AM_READ   19 /* staged read: send me a chunk */
#define PX_XFER_AM_RDATA  20 /* target -> initiator: the chunk */
#define PX_XFER_AM_REVOKE 21 /* owner -> peers: a region is being freed (network keys) */
#define PX_XFER_AM_RVACK  22 /* peer -> owner: no request of mine uses it any more */

#define PX_XFER_REGION_MAGIC 0x5058524547494f4eULL /* "PXREGION" */
#define PX_XFER_REMOTE_MAGIC 0x505852454d4f5445ULL /* "PXREMOTE" */
#define PX_XFER_BATCH_MAGIC  0x5058424154434821ULL
#define PX_XFER_CTL_MAGIC    0x50584354524c3031ULL /* "PXCTRL01" */

/* ---- the key (xfer_key.c) ---- */

/* Key entries: a mapping description (allocated memory), a registration
 * handle (or none, for a transport that addresses memory by address), and
 * where the owner's validity word for the region is (u32 slot, then the
 * description of the owner's validity table). */
enum { PX_XFER_ENTRY_MAP = 1, PX_XFER_ENTRY_RDMA = 2, PX_XFER_ENTRY_VALID = 3 };
/* Validity words per process: a peer reading the word of a region in the
 * owner's table (mapped) sees the region's id while it lives, 0 once freed. */
#define PX_XFER_VTAB_SLOTS  8192
#define PX_XFER_KEY_MAGIC   0x314b5850u /* "PXK1" */
#define PX_XFER_KEY_VERSION 1
#define PX_XFER_KEY_HDR     64
#define PX_XFER_KEY_ENTRY   12
#define PX_XFER_KEY_ENTRIES 32

typedef struct px_xfer_key_entry {
    uint32_t comp_id;    /* hash of the module's component name */
    uint16_t comp_index; /* which module of that component (0, 1, ...) */
    uint8_t kind;        /* PX_XFER_ENTRY_* */
    uint32_t len;
    const unsigned char *data; /* into the key */
} px_xfer_key_entry_t;

typedef struct px_xfer_key {
    uint64_t job_hash;
    int32_t owner;
    uint32_t flags;
    uint64_t region_id;
    uint64_t addr; /* the data's address in the owner */
    uint64_t length;
    int nentries;
    px_xfer_key_entry_t entries[PX_XFER_KEY_ENTRIES];
} px_xfer_key_t;

/* Parse `len` bytes; PX_SUCCESS, or PX_ERR_BAD_PARAM with what is wrong in
 * why[0..whylen). Checks the form only (magic, version, length, checksum,
 * entries); the caller checks job, owner and modules. Pure: no state. */
int px_xfer_key_parse(const void *key, size_t len, px_xfer_key_t *out, char *why, size_t whylen);
/* Write a key; returns the bytes it takes (written only when <= cap). */
size_t px_xfer_key_write(const px_xfer_key_t *k, void *buf, size_t cap);
uint64_t px_xfer_hash64(const void *data, size_t len, uint64_t h);
uint32_t px_xfer_name_id(const char *name);

/* ---- modules ---- */

typedef struct px_xfer_mod {
    px_btl_module_t *btl;
    uint32_t comp_id;
    uint16_t comp_index;
    char name[24];
    /* status.transport of requests it carries: "shm:map", "ofi:put", "stage:shm" */
    char label_map[32], label_put[32], label_get[32], label_stage[32];
    long priority; /* higher first (xfer_priority, else exclusivity) */
    bool put, get; /* one-sided put/get usable */
    bool reg;      /* needs btl_register_mem handles */
    bool map;      /* shareable memory */
    uint32_t hsize;
    bool reaches_other; /* reaches a process other than this one */
} px_xfer_mod_t;

/* ---- regions ---- */

/* First bytes of memory allocated through the engine, shared with peers that
 * map it: `freed` tells them the owner let it go. */
typedef struct px_xfer_ctl {
    uint64_t magic;
    uint64_t region_id;
    _Atomic uint32_t freed;
} px_xfer_ctl_t;

struct px_xfer_region {
    uint64_t magic;
    uint64_t id;
    char *base;
    size_t len;
    bool allocated;
    int mem_mod;      /* module whose btl_mem_alloc made it (-1: none) */
    px_btl_mem_t mem; /* that allocation */
    void *raw;        /* fallback allocation (mmap), raw_len bytes */
    size_t raw_len;
    px_xfer_ctl_t *ctl;
    int vslot; /* its word in the validity table (-1: none) */
    px_btl_registration_handle_t *reg[PX_XFER_MAX_MODULES];
    _Atomic long inflight; /* queued requests using it */
    _Atomic bool exported; /* a key of it was written (peers may have imported it) */
    struct px_xfer_region *next, *prev;
};

/* A mapping of a peer's allocated memory, shared by every import of it. */
typedef struct px_xfer_map {
    struct px_xfer_map *next;
    int mod;
    uint64_t region_id;
    px_btl_mem_t mem;
    int refs; /* remotes using it */
} px_xfer_map_t;

enum { PX_XFER_RAIL_MAP = 1, PX_XFER_RAIL_RDMA = 2 };
typedef struct px_xfer_rail {
    int mod;
    int kind;
    px_btl_endpoint_t *ep;
    uint32_t hsize;
    unsigned char handle[PX_XFER_MAX_HANDLE] __attribute__((aligned(16)));
} px_xfer_rail_t;

struct px_xfer_remote {
    uint64_t magic;
    int peer;
    uint64_t id;   /* the owner's region id */
    uint64_t addr; /* the data's address in the owner */
    size_t len;
    char *mapped;                  /* the data in our mapping (NULL: not mapped) */
    const px_xfer_ctl_t *ctl;      /* the owner's control page, mapped */
    const _Atomic uint64_t *valid; /* the owner's validity word for it, mapped (NULL: none) */
    px_xfer_map_t *map;
    char *fast; /* == mapped when the best rail is that mapping alone: copied inline */
    int nrails; /* best first */
    px_xfer_rail_t rails[PX_XFER_MAX_RAILS];
    _Atomic long inflight;
    _Atomic bool revoked; /* its owner is freeing it (PX_XFER_AM_REVOKE) */
    struct px_xfer_remote *next, *prev;
};

/* ---- requests ---- */

enum { PX_XFER_Q_SLOT = 1, PX_XFER_Q_NOTE = 2 };
enum { PX_XFER_PATH_INLINE = 1, PX_XFER_PATH_RAILS = 2, PX_XFER_PATH_STAGE = 3 };

/* What goes through the queue into progress: a run of slots or a note. */
typedef struct px_xfer_qnode {
    px_mpsc_node_t node;
    uint8_t kind;
} px_xfer_qnode_t;

typedef struct px_xfer_slot {
    px_xfer_qnode_t q;
    uint32_t qcount; /* slots queued with this one (the run's first slot) */
    uint8_t op, path, nrails;
    bool started, orphan, scheduling, pend, held;
    bool counted;      /* in its regions', peer's, engine's and batch's counts (count_slot) */
    _Atomic int state; /* PX_XFER_PENDING or final */
    int peer;
    px_xfer_batch_t *batch;
    px_xfer_region_t *local;
    px_xfer_remote_t *remote;
    size_t loff, roff, len;
    char *why;
    const char *tlabel; /* the path taken (status.transport) */
    char tbuf[32];      /* tlabel of a striped request */
    /* progress side */
    int error;       /* first error while it runs */
    int outstanding; /* transport operations in flight */
    size_t done;     /* bytes complete */
    uint8_t rail[PX_XFER_MAX_STRIPE];
    size_t rcur[PX_XFER_MAX_STRIPE], rend[PX_XFER_MAX_STRIPE], rbytes[PX_XFER_MAX_STRIPE];
    uint32_t rops[PX_XFER_MAX_STRIPE]; /* per-rail operations in flight */
    size_t scur;                       /* staged: next byte to ask for / send */
    double t0;
    struct px_xfer_slot *anext, *aprev; /* the peer's active list */
    struct px_xfer_slot *pnext;         /* pending (waiting for resources) or held list */
} px_xfer_slot_t;

struct px_xfer_batch {
    uint64_t magic;
    size_t cap, used;
    _Atomic size_t pending; /* queued slots not final */
    _Atomic int holds;      /* final slots a transport still holds (a failed peer's) */
    _Atomic int released;   /* the application freed it while held */
    _Atomic int claimed;    /* whoever frees it last */
    px_xfer_slot_t slots[];
};

typedef struct px_xfer_note {
    px_xfer_qnode_t q;
    struct px_xfer_note *next;
    int peer;
    size_t len;
    unsigned char data[];
} px_xfer_note_t;

/* The staged path's wire header. */
typedef struct px_xfer_stage_hdr {
    uint64_t token;  /* the initiator's request */
    uint64_t region; /* the target's region id */
    uint64_t offset; /* in the target region */
    uint32_t len;
    uint16_t cookie; /* the initiator's bounce buffer */
    uint8_t status;  /* replies: PX_XFER_ST_* */
    uint8_t pad;
} px_xfer_stage_hdr_t;
enum { PX_XFER_ST_OK = 0, PX_XFER_ST_NOREGION = 1, PX_XFER_ST_BOUNDS = 2 };

typedef struct px_xfer_peer {
    _Atomic int failed; /* 0, or the error that ended it */
    int stage_mod;      /* the module its staged messages take (-1: none) */
    char *why;          /* set before failed */
    _Atomic long inflight;
    /* progress side */
    int active;                         /* started, not complete */
    px_xfer_slot_t *alist;              /* started slots */
    px_xfer_slot_t *held, *held_tail;   /* waiting behind a notification */
    px_xfer_note_t *notes, *notes_tail; /* waiting for the writes before them */
    px_xfer_map_t *maps;
    px_btl_mem_t vtab; /* its validity table, mapped (vtab_mod >= 0) */
    int vtab_mod;
    uint64_t *revoked; /* ids of its regions it revoked (imports of them are revoked) */
    size_t nrevoked, revoked_cap;
} px_xfer_peer_t;

/* A staged-path reply or chunk the target could not send yet. */
typedef struct px_xfer_job {
    struct px_xfer_job *next;
    int peer;
    uint8_t am;
    int buf; /* bounce buffer held (-1: none yet) */
    px_xfer_stage_hdr_t hdr;
} px_xfer_job_t;

typedef struct px_xfer_inbox_item {
    struct px_xfer_inbox_item *next;
    int peer;
    size_t len;
    unsigned char data[];
} px_xfer_inbox_item_t;

typedef struct px_xfer_engine {
    bool ready;
    bool shared; /* messaging calls take the lock (px_xfer_enable_threads) */
    pthread_mutex_t lock;
    px_mpsc_t queue;
    _Atomic long work; /* queued and unfinished items: progress has something to do */
    int nmods;
    px_xfer_mod_t mods[PX_XFER_MAX_MODULES];
    px_xfer_peer_t *peers;
    int npeers;
    uint64_t job_hash;
    uint64_t next_id;
    px_hash_table_t regions; /* id -> region */
    px_xfer_region_t *region_list;
    px_xfer_remote_t *remote_list;
    /* this process's validity table (shareable memory), made on first use */
    int vtab_mod; /* -1: none (no transport shares memory) */
    bool vtab_tried;
    px_btl_mem_t vtab;
    _Atomic uint64_t *vwords;
    int *vfree, vnfree;
    px_xfer_slot_t *pending, *pending_tail;
    bool in_work;
    _Atomic bool cb_registered; /* px_xfer_progress_cb is in the progress engine */
    int notes_waiting;
    /* staged path */
    char *pool;
    int pool_count, pool_nfree;
    size_t pool_size;
    int *pool_free;
    px_xfer_slot_t **pool_owner;
    px_xfer_job_t *jobs, *jobs_tail;
    /* notifications received */
    pthread_mutex_t inbox_lock;
    px_xfer_inbox_item_t *inbox, *inbox_tail;
    _Atomic long inbox_count;
    /* variables */
    char *priority;
    size_t chunk_size, stage_size, stage_below;
    int stage_count;
    int verbose;
    int output;
    /* counts (tests, verbose) */
    _Atomic unsigned long n_striped;
} px_xfer_engine_t;

extern px_xfer_engine_t px_xfer;

/* xfer.c */
int px_xfer_register_params(void);
int px_xfer_init(void);
void px_xfer_finalize(void);
/* Peer `rank` failed (from the runtime's failure paths). */
void px_xfer_peer_failed(int rank, int error, const char *why);
/* The progress lock: try (true: taken or already held by this thread; *took
 * says whether this call took it), take, release what this thread took. */
bool px_xfer_lock_try(bool *took);
void px_xfer_lock_take(bool *took);
void px_xfer_lock_drop(bool took);
bool px_xfer_lock_held(void);
/* Set this thread's last error text (printf-like); returns `rc`. */
int px_xfer_fail(int rc, const char *fmt, ...) PX_PRINTF(2, 3);
px_xfer_region_t *px_xfer_region_find(uint64_t id);
const char *px_xfer_host(int rank);
/* Whether the owner freed the region (its control page or validity word
 * says so); a relaxed read of a line the owner writes once. */
static inline bool px_xfer_remote_freed(const px_xfer_remote_t *rm)
{
    if (atomic_load_explicit(&rm->revoked, memory_order_acquire))
        return true;
    if (rm->ctl && atomic_load_explicit(&rm->ctl->freed, memory_order_acquire))
        return true;
    return rm->valid && atomic_load_explicit(rm->valid, memory_order_acquire) != rm->id;
}
/* This thread's batch of one (px_xfer_write/read). */
px_xfer_batch_t *px_xfer_tl_batch(void);

/* xfer_batch.c */
/* Drive the engine's own work (queue, pending, jobs); the lock is held. */
int px_xfer_work(void);
/* The callback the progress engine runs, and its registration: on the first
 * work queued (a job of 2+ ranks; a process alone runs the work from its own
 * waits), so a process that never queues work pays nothing. */
int px_xfer_progress_cb(void *ctx);
void px_xfer_need_progress(void);
/* Record the first error of a running request (`replace`: a failed peer's
 * error replaces an earlier one); the reason names peer and transport. */
void px_xfer_slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *what);
/* Retry `s` from progress (its transport or the bounce buffers had no room). */
void px_xfer_pend_add(px_xfer_slot_t *s);
/* Complete slot `s` with `error` (and a reason when < 0). */
void px_xfer_slot_complete(px_xfer_slot_t *s, int error, char *why);
/* A notification arrived (AM callback). */
void px_xfer_am_notify(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* Fail what is queued, pending or active for `rank` (lock held). */
void px_xfer_batch_peer_failed(int rank);
/* Finalize: fail everything still in flight. */
void px_xfer_batch_finalize(void);
/* Try the peer's waiting notifications (its writes are done). */
void px_xfer_notes_try(int peer);

/* xfer_stage.c */
int px_xfer_stage_init(void);
void px_xfer_stage_finalize(void);
void px_xfer_stage_start(px_xfer_slot_t *s);
/* Issue more chunks of a staged slot (more bounce buffers or transport room). */
void px_xfer_stage_schedule(px_xfer_slot_t *s);
int px_xfer_stage_jobs(void);
/* A staged slot leaves (completed or failed): its bounce buffers go back. */
void px_xfer_stage_release(px_xfer_slot_t *s);
void px_xfer_am_write(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_wack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_read(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_rdata(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_revoke(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_rvack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* Before a region whose key went out is deregistered from a network
 * transport: tell every live peer and wait (lock not held) until each
 * answered that no request of its uses the region, failed, or the wait
 * passed its limit. */
void px_xfer_revoke(uint64_t region_id);
/* Whether `peer` revoked its region `id` (lock held). */
bool px_xfer_is_revoked(int peer, uint64_t id);
/* A small control message or chunk to `peer` over its send module: sendi,
 * else alloc + send. PX_ERR_TEMP_OUT_OF_RESOURCE when the transport has no
 * room now. */
int px_xfer_send(int peer, px_btl_tag_t am, const void *hdr, size_t hlen, const void *data,
                 size_t dlen);

#endif
