/*
 * xfer.h: the transfer engine's internal state (runtime/plexus_xfer.h is its
 * public face), shared by the files of runtime/xfer/ and the runtime. One
 * concern per file:
 *  - engine.c: variables, px_init/px_finalize hooks, a peer's failure, the
 *    thread's batch of one;
 *  - error.c: the thread's last error (the progress lock, which the
 *    messaging API takes too, is the process table's: runtime/proc/proc_lock.c);
 *  - region.c: regions (registered or allocated) and the validity table;
 *  - remote.c: imports of peers' regions (keys read, mappings cached);
 *  - key.c: the key's wire format (a pure parser, also fuzzed) and export;
 *  - batch.c: batches, submission, and the request's state machine (the only
 *    code that moves a request between states; its table is at its top);
 *  - progress.c: progress, waits, the queue into progress and the run queue;
 *  - path.c: the choice of a request's path (one ops table per request);
 *  - path_inline.c, path_rails.c, path_stage.c: the paths (a mapping copied
 *    by the submitting thread; put/get or mappings striped over rails;
 *    staged through active messages with bounce buffers);
 *  - stage_target.c: the receiving side of staged requests (and the small
 *    send every message of the engine goes through);
 *  - revoke.c: withdrawing a region peers hold a network key of;
 *  - notify.c: notifications.
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
#include <stdarg.h>
#include <stdint.h>
#include "core/class/hash_table.h"
#include "core/class/list.h"
#include "core/class/mpsc.h"
#include "runtime/plexus_xfer.h"
#include "runtime/proc/proc.h"

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

/* ---- the key (key.c) ---- */

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
    px_list_item_t link; /* on px_xfer.regions_list */
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

typedef struct px_xfer_peer px_xfer_peer_t;

struct px_xfer_remote {
    px_list_item_t link; /* on px_xfer.remotes */
    uint64_t magic;
    int peer;
    px_xfer_peer_t *pp; /* the engine's state for that peer (a dynamic peer's lives while a
                         * remote names it) */
    uint64_t id;        /* the owner's region id */
    uint64_t addr;      /* the data's address in the owner */
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
};

/* ---- requests ---- */

enum { PX_XFER_Q_SLOT = 1, PX_XFER_Q_NOTE = 2 };

/* What goes through the queue into progress: a run of slots or a note. */
typedef struct px_xfer_qnode {
    px_mpsc_node_t node;
    uint8_t kind;
} px_xfer_qnode_t;

/* A request's state; only batch.c moves a slot between them (the table of
 * transitions is at the top of batch.c). */
typedef enum px_xfer_sstate {
    PX_XFER_S_QUEUED = 0, /* checked, on its way to progress (or not yet started) */
    PX_XFER_S_HELD,       /* behind a notification to its peer (the peer's held list) */
    PX_XFER_S_RUNNING,    /* inside its path's start or resume (the peer's active list) */
    PX_XFER_S_ACTIVE,     /* its operations are out; events drive it (the peer's active list) */
    PX_XFER_S_BLOCKED,    /* the path had no resources: on the run queue for resume */
    PX_XFER_S_DRAINING,   /* final (failed peer) but a transport still holds operations */
    PX_XFER_S_DONE,       /* final; nothing holds it */
} px_xfer_sstate_t;

/* What a path's call says about its request. */
typedef enum px_xfer_pstatus {
    PX_XFER_P_DONE = 0,     /* every byte moved: complete it */
    PX_XFER_P_IN_PROGRESS,  /* operations are out: their events come */
    PX_XFER_P_NO_RESOURCES, /* nothing (more) could go now: resume it from progress */
    PX_XFER_P_ERROR,        /* failed (s->error): complete it once nothing is out */
} px_xfer_pstatus_t;

typedef struct px_xfer_slot px_xfer_slot_t;

/* A path: how a request's bytes move. Chosen once per request
 * (px_xfer_path_choose); batch.c calls it and acts on what it returns. */
typedef struct px_xfer_path {
    const char *name;
    /* Its start runs on the submitting thread, without the lock, and ends
     * the request there (a mapping copied in place). */
    bool at_submit;
    /* Its operations are the transports' (px_finalize lets them finish, a
     * failed peer's stay held until their callbacks come). */
    bool transport_ops;
    px_xfer_pstatus_t (*start)(px_xfer_slot_t *s);
    px_xfer_pstatus_t (*resume)(px_xfer_slot_t *s);
    /* The request ends before its path did (its peer failed, px_finalize):
     * give back what the path holds. DONE when nothing is held any more,
     * IN_PROGRESS while a transport still holds operations. */
    px_xfer_pstatus_t (*release)(px_xfer_slot_t *s);
} px_xfer_path_t;

extern const px_xfer_path_t px_xfer_path_inline, px_xfer_path_rails, px_xfer_path_stage;

struct px_xfer_slot {
    px_xfer_qnode_t q;
    uint32_t qcount; /* slots queued with this one (the run's first slot) */
    uint8_t op, nrails;
    /* The one flag beside the state: the request is in its regions', peer's,
     * engine's and batch's counts (count_slot). A request started and ended
     * inside submit, under the lock, is seen by nobody else and skips those
     * ten atomic operations (the small-request rate depends on it). */
    bool counted;
    _Atomic int state; /* px_xfer_sstate_t; DRAINING/DONE published with release */
    const px_xfer_path_t *path;
    px_list_item_t link; /* the peer's held or active list, or the run queue */
    int peer;
    px_xfer_batch_t *batch;
    px_xfer_region_t *local;
    px_xfer_remote_t *remote;
    size_t loff, roff, len;
    char *why;
    const char *tlabel; /* the path taken (status.transport) */
    char tbuf[32];      /* tlabel of a striped request */
    int error;          /* the first error (the result once final) */
    /* progress side, the path's */
    int outstanding; /* operations (or staged chunks) in flight */
    size_t done;     /* bytes complete */
    uint8_t rail[PX_XFER_MAX_STRIPE];
    size_t rcur[PX_XFER_MAX_STRIPE], rend[PX_XFER_MAX_STRIPE], rbytes[PX_XFER_MAX_STRIPE];
    uint32_t rops[PX_XFER_MAX_STRIPE]; /* per-rail operations in flight */
    size_t scur;                       /* staged: next byte to ask for / send */
    double t0;
};

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
    px_list_item_t link; /* the peer's notes */
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

struct px_xfer_peer {
    _Atomic int failed; /* 0, or the error that ended it */
    int stage_mod;      /* the module its staged messages take (-1: none) */
    char *why;          /* set before failed */
    _Atomic long inflight;
    /* progress side */
    int active;      /* started, not complete (RUNNING, ACTIVE, BLOCKED) */
    px_list_t alist; /* RUNNING and ACTIVE slots */
    px_list_t held;  /* HELD slots: waiting behind a notification */
    px_list_t notes; /* notes waiting for the writes before them */
    px_xfer_map_t *maps;
    px_btl_mem_t vtab; /* its validity table, mapped (vtab_mod >= 0) */
    int vtab_mod;
    uint64_t *revoked; /* ids of its regions it revoked (imports of them are revoked) */
    size_t nrevoked, revoked_cap;
    /* A dynamic peer's (px_connect / px_accept; docs/peers.md): made at first
     * use, released when its connection goes (px_disconnect, or it left or
     * died), freed once no remote names it any more. */
    int id;         /* its rank, or its dynamic peer id */
    bool dynamic;   /* id >= PX_RT_DYN_BASE: in px_xfer.dyn, not px_xfer.peers */
    bool released;  /* its transports are gone: nothing may be sent to it */
    int refs;       /* remotes that name it (dynamic) */
    char name[256]; /* "peer N (host H, pid P, contact C)" (dynamic) */
};

/* A staged-path reply or chunk the target could not send yet. */
typedef struct px_xfer_job {
    px_list_item_t link; /* px_xfer.jobs */
    int peer;
    uint8_t am;
    int buf; /* bounce buffer held (-1: none yet) */
    px_xfer_stage_hdr_t hdr;
} px_xfer_job_t;

typedef struct px_xfer_inbox_item {
    px_list_item_t link; /* px_xfer.inbox */
    int peer;
    size_t len;
    unsigned char data[];
} px_xfer_inbox_item_t;

typedef struct px_xfer_engine {
    bool ready;
    bool shared; /* messaging calls take the lock (px_xfer_enable_threads) */
    px_mpsc_t queue;
    _Atomic long work; /* queued and unfinished items: progress has something to do */
    int nmods;
    px_xfer_mod_t mods[PX_XFER_MAX_MODULES];
    px_xfer_peer_t *peers; /* [npeers]: the job's ranks */
    int npeers;
    /* Dynamic peers the engine has state for, any order (lock held). */
    px_xfer_peer_t **dyn;
    int ndyn, dyn_cap;
    uint64_t job_hash;
    uint64_t next_id;
    px_hash_table_t regions; /* id -> region */
    px_list_t regions_list;  /* live regions */
    px_list_t remotes;       /* live imports */
    /* this process's validity table (shareable memory), made on first use */
    int vtab_mod; /* -1: none (no transport shares memory) */
    bool vtab_tried;
    px_btl_mem_t vtab;
    _Atomic uint64_t *vwords;
    int *vfree, vnfree;
    px_list_t runq; /* BLOCKED slots, resumed by progress */
    bool in_work;
    _Atomic bool cb_registered; /* px_xfer_progress_cb is in the progress engine */
    int notes_waiting;
    /* staged path */
    int pool_count, pool_nfree; /* credits, one per chunk in flight */
    size_t pool_size;
    int *pool_free;
    px_xfer_slot_t **pool_owner;
    px_list_t jobs; /* staged answers the target could not send yet */
    /* notifications received */
    pthread_mutex_t inbox_lock;
    px_list_t inbox;
    _Atomic long inbox_count;
    /* variables */
    char *priority;
    size_t chunk_size, stage_size;
    /* xfer_stage_below: the text, and what it says. stage_below[op]
     * (PX_XFER_READ, PX_XFER_WRITE): requests of that op smaller than it are
     * staged instead of a put/get. stage_auto: only on same-host put/get
     * rails that need no registration (CMA), with a bound per op; else on
     * every put/get rail, the same bound for both. */
    char *stage_below_text;
    size_t stage_below[2];
    bool stage_auto;
    int stage_count;
    int verbose;
    int output;
    /* counts (tests, verbose) */
    _Atomic unsigned long n_striped;
} px_xfer_engine_t;

extern px_xfer_engine_t px_xfer;

/* engine.c */
/* xfer_stage_below "auto": per operation, the size (bytes) from which a
 * CMA system call beats staging through the messaging layer; smaller
 * requests are staged (docs/transfer.md, "Small requests to registered
 * memory", and docs/measurements/transfer.md for the runs). */
#define PX_XFER_STAGE_AUTO_WRITE      (3 * 1024)
#define PX_XFER_STAGE_AUTO_READ       (3 * 1024)
#define PX_XFER_STAGE_AUTO_WRITE_TEXT "3k"
#define PX_XFER_STAGE_AUTO_READ_TEXT  "3k"
int px_xfer_register_params(void);
/* "auto" (*is_auto, below[] per op from the constants above) or a byte
 * count (both ops); false for anything else. */
bool px_xfer_parse_stage_below(const char *text, bool *is_auto, size_t below[2]);
int px_xfer_init(void);
void px_xfer_finalize(void);
/* A layer above (the names layer, runtime/name) is told when a region is
 * about to be freed (px_xfer_free, before anything is taken down; without
 * the engine's lock), so its names go with it. NULL: none. */
typedef void (*px_xfer_free_hook_t)(px_xfer_region_t *region);
void px_xfer_set_free_hook(px_xfer_free_hook_t hook);
/* Peer `rank` (or dynamic peer id) failed (from the runtime's failure
 * paths). A dynamic peer's state is then released: what was sent to it
 * fails, its remotes lose their paths, and its record goes with its last
 * remote (it disconnected, left or died; a later connection is a new peer). */
void px_xfer_peer_failed(int rank, int error, const char *why);
/* The engine's state for a rank or a dynamic peer id: NULL for a dynamic peer
 * the engine has no state for (`make`: create it for a live connected peer;
 * takes the lock unless held). */
PX_NOINLINE px_xfer_peer_t *px_xfer_peer_dyn(int id, bool make);
static inline px_xfer_peer_t *px_xfer_peer_get(int id)
{
    if (PX_LIKELY((unsigned)id < (unsigned)px_xfer.npeers))
        return &px_xfer.peers[id];
    return px_xfer_peer_dyn(id, false);
}
/* A transport refused an operation to p: when p is a connected peer whose
 * connection closed (it died before its transport noticed), fail it now
 * (the runtime's notice). Returns p's failure, or 0. Lock held. */
int px_xfer_peer_check(px_xfer_peer_t *p);
/* A remote naming dynamic peer p went (lock held): frees p once released
 * and unnamed. */
void px_xfer_peer_unref(px_xfer_peer_t *p);
/* "rank R (host H)" or a dynamic peer's name, for messages. */
const char *px_xfer_peer_name(int id, char *buf, size_t len);
/* This thread's batch of one (px_xfer_write/read). */
px_xfer_batch_t *px_xfer_tl_batch(void);
void px_xfer_forget_tl_batch(void);

/* The progress lock, runtime/proc/proc_lock.c: try (true: taken or already
 * held by this thread; *took says whether this call took it), take, release
 * what this thread took. */
bool px_xfer_lock_try(bool *took);
void px_xfer_lock_take(bool *took);
void px_xfer_lock_drop(bool took);
bool px_xfer_lock_held(void);
/* error.c. Set this thread's last error text (printf-like); returns `rc`. */
int px_xfer_fail(int rc, const char *fmt, ...) PX_PRINTF(2, 3);
const char *px_xfer_host(int rank);

/* region.c */
px_xfer_region_t *px_xfer_region_find(uint64_t id);
void px_xfer_regions_finalize(void);
/* Misuse of a call: the thread's last error and a message; returns `rc`. */
int px_xfer_api_error(int rc, const char *fn, const char *fmt, ...) PX_PRINTF(3, 4);
static inline bool px_xfer_region_ok(const px_xfer_region_t *r)
{
    return r && PX_XFER_REGION_MAGIC == r->magic;
}

/* remote.c */
void px_xfer_remotes_finalize(void);
static inline bool px_xfer_remote_ok(const px_xfer_remote_t *r)
{
    return r && PX_XFER_REMOTE_MAGIC == r->magic;
}
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

/* progress.c */
/* Thread-local: this thread is inside a round of the engine's progress. */
extern _Thread_local bool px_xfer_tl_progressing;
/* One round of progress if no other thread is progressing: -1 when one is. */
int px_xfer_progress_try(void);
/* Progress until done(arg), or `timeout` seconds (< 0: no limit). */
int px_xfer_wait_loop(bool (*done)(const void *), const void *arg, double timeout);
double px_xfer_wait_limit(void);
/* Drive the engine's own work (queue, run queue, notes, jobs); the lock is held. */
int px_xfer_work(void);
/* The callback the progress engine runs, and its registration: on the first
 * work queued (a job of 2+ ranks; a process alone runs the work from its own
 * waits), so a process that never queues work pays nothing. */
int px_xfer_progress_cb(void *ctx);
void px_xfer_need_progress(void);

/* batch.c: the request's state machine */
/* Record the first error of a running request (`replace`: a failed peer's
 * error replaces an earlier one); the reason names peer and transport. */
void px_xfer_slot_error(px_xfer_slot_t *s, int rc, bool replace, const char *what);
/* What a path says after an event of its request (an operation's callback,
 * a staged reply): the batch code completes, queues or leaves the request. */
void px_xfer_slot_event(px_xfer_slot_t *s, px_xfer_pstatus_t st);
/* Start a queued request (progress, lock held). */
void px_xfer_slot_start(px_xfer_slot_t *s);
/* Resume a BLOCKED request taken off the run queue (progress, lock held). */
void px_xfer_slot_resume(px_xfer_slot_t *s);
/* End a queued request that never started (px_finalize). */
void px_xfer_slot_abort(px_xfer_slot_t *s, int rc, const char *what);
/* Whether the request is final for the application. */
static inline bool px_xfer_slot_final(const px_xfer_slot_t *s)
{
    return atomic_load_explicit(&((px_xfer_slot_t *)s)->state, memory_order_acquire) >=
           PX_XFER_S_DRAINING;
}
/* Start the peer's held requests (its notifications went out; progress). */
void px_xfer_held_start(int peer);
/* Fail what is queued, blocked, held or active for peer p (lock held). */
void px_xfer_batch_peer_failed(px_xfer_peer_t *p);
/* Finalize: fail everything still in flight. */
void px_xfer_batch_finalize(void);

/* path.c */
/* Pick the path of a checked request (s->path, s->tlabel, its rails).
 * PX_SUCCESS, or an error (s->why says it) when the transport it names has
 * no path. */
int px_xfer_path_choose_any(px_xfer_slot_t *s, const char *tname);
static inline int px_xfer_path_choose(px_xfer_slot_t *s, const char *tname)
{
    /* The common case first, without a call: a mapping copied in place. */
    if (PX_LIKELY(!tname && s->remote->fast)) {
        s->path = &px_xfer_path_inline;
        s->tlabel = px_xfer.mods[s->remote->rails[0].mod].label_map;
        return PX_SUCCESS;
    }
    return px_xfer_path_choose_any(s, tname);
}
/* The reason of a failure: "rank R (host H), transport T: what". */
char *px_xfer_reason(const px_xfer_slot_t *s, const char *fmt, va_list ap);

/* notify.c */
void px_xfer_am_notify(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* A note arrived through the queue (progress). */
void px_xfer_note_arrive(px_xfer_note_t *n);
/* Send the waiting notifications of peers with no request active, then
 * start what was held behind them (progress). */
int px_xfer_notes_run(void);
/* Drop a failed peer's notifications. */
void px_xfer_notes_drop(px_xfer_peer_t *p);
void px_xfer_inbox_finalize(void);

/* Whether peer `id` (a rank, or a dynamic peer the engine may have no
 * state for) failed or is gone: its error, else 0. */
static inline int px_xfer_peer_error(int id)
{
    px_xfer_peer_t *p = px_xfer_peer_get(id);
    if (PX_LIKELY(p != NULL))
        return atomic_load_explicit(&p->failed, memory_order_acquire);
    if (id >= PX_RT_DYN_BASE) { /* its connection may have closed quietly (no failure code) */
        px_rt_dyn_t *d = px_rt_dyn_find(id);
        return !d || d->gone || !d->peer.btl ? PX_ERR_PEER_FAILED : d->peer.failed;
    }
    px_rt_peer_t *rp = px_rt_peer_find(id);
    return !rp || !rp->btl ? PX_ERR_PEER_FAILED : rp->failed;
}

/* path_stage.c */
void px_xfer_stage_finalize(void);
void px_xfer_am_wack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_rdata(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* stage_target.c */
int px_xfer_stage_jobs(void);
void px_xfer_jobs_finalize(void);
void px_xfer_am_write(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_read(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* Answer a staged message or revocation now, or queue the answer. */
void px_xfer_target_answer(int peer, uint8_t am, const px_xfer_stage_hdr_t *h);
/* The header of a staged message (false, after saying why, when short). */
bool px_xfer_stage_hdr(const px_btl_receive_descriptor_t *d, px_xfer_stage_hdr_t *h,
                       size_t *data_len, const char *what);
/* Copy `len` bytes after the header out of the segments. */
void px_xfer_stage_copy_out(const px_btl_receive_descriptor_t *d, char *dst, size_t len);
/* A small control message or chunk to `peer` over its send module: sendi,
 * else alloc + send. PX_ERR_TEMP_OUT_OF_RESOURCE when the transport has no
 * room now. */
int px_xfer_send(int peer, px_btl_tag_t am, const void *hdr, size_t hlen, const void *data,
                 size_t dlen);

/* revoke.c */
void px_xfer_am_revoke(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
void px_xfer_am_rvack(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d);
/* Before a region whose key went out is deregistered from a network
 * transport: tell every live peer and wait (lock not held) until each
 * answered that no request of its uses the region, failed, or the wait
 * passed its limit. */
void px_xfer_revoke(uint64_t region_id);
/* Whether `peer` revoked its region `id` (lock held). */
bool px_xfer_is_revoked(int peer, uint64_t id);
/* Requests of this process on `peer`'s region `id` still in flight. */
long px_xfer_revoked_inflight(int peer, uint64_t id);

#endif
