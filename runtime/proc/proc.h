/*
 * proc.h: the process table, the runtime's floor (docs/architecture.md,
 * "The runtime's sub-layers"). Who each rank is and what this process keeps
 * about it (px_rt, px_rt_peer_t), the API lock every entry point of
 * messaging, collectives and the transfer engine takes once threads share
 * the library, the progress hooks of the layers above messaging, and a
 * peer's failure as a notice the layers subscribe to.
 *
 * Everything in runtime/ may include this; it includes nothing of runtime/
 * but the installed API header. Not installed.
 */
#ifndef PX_RUNTIME_PROC_PROC_H
#define PX_RUNTIME_PROC_PROC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/class/free_list.h"
#include "core/class/list.h"
#include "core/class/mpsc.h"
#include "core/util/bias_lock.h"
#include "core/util/proc.h"
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"

/* Largest registration handle a wire header carries (a rendezvous rail, a
 * transfer-engine key). */
#define PX_RT_MAX_HANDLE 128

/* runtime_thread_locks's values (px_rt.thread_locks, docs/threads.md): at
 * PX_THREAD_MULTIPLE, every call under the API lock, or point-to-point under
 * the matching lock and the transports' own locks, or auto: the API lock
 * until a second thread calls, then fine when the process may run two of its
 * threads at once (two CPUs or more in its affinity mask). */
enum { PX_RT_THREAD_LOCKS_API = 0, PX_RT_THREAD_LOCKS_FINE = 1, PX_RT_THREAD_LOCKS_AUTO = 2 };

/* runtime_rndv_protocol's values (px_rt.rndv_protocol). */
enum { PX_RT_RNDV_AUTO = 0, PX_RT_RNDV_GET = 1, PX_RT_RNDV_PIPELINE = 2, PX_RT_RNDV_PUT = 3 };
/* runtime_rndv_first_frag's values (px_rt.rndv_first_frag): whether an RNDV
 * carries the message's first bytes (pml_rndv.c). */
enum { PX_RT_FIRST_FRAG_AUTO = 0, PX_RT_FIRST_FRAG_ON = 1, PX_RT_FIRST_FRAG_OFF = 2 };

typedef struct px_rt_peer {
    px_btl_base_peer_t *btl;
    /* Cached immediate path (first eager module): */
    px_btl_module_t *eager_btl;
    px_btl_endpoint_t *eager_ep;
    size_t tiny_below; /* data shorter than this goes through sendi; 0: never */
    size_t eager_data; /* largest data bytes of an eager message */
    uint32_t send_seq; /* next sequence number to send to it */
    uint32_t recv_seq; /* next sequence number expected from it */
    int failed;        /* PX_SUCCESS or the error that ended it */
    bool failed_here;  /* failed by this process's decision (timeout, queueing), not by
                        * its transport: px_finalize's barrier still sends to it */
    bool failed_said;  /* a message naming it and its failure was printed (atomic) */
    size_t dropped;    /* messages from it discarded because it had failed */
    px_list_t ooo;     /* px_rt_ux_t that arrived ahead of their turn */
    int32_t wire_src;  /* the source a match header to it names: this process's rank for a
                        * rank, PX_BTL_RANK_DYNAMIC for a dynamic peer (which knows this
                        * process by the transport's endpoint, not by a rank) */
} px_rt_peer_t;

/* Dynamic peers (issue 23, docs/peers.md): processes connected after px_init
 * (px_connect / px_accept). Their ids start at PX_RT_DYN_BASE, which no rank
 * reaches, and are never reused within a process. Nothing is sized for them
 * at px_init: the table grows per connection. */
#define PX_RT_DYN_BASE (1 << 24)
#define PX_RT_DYN_MAX  (INT32_MAX - 1)

typedef struct px_rt_dyn {
    int id;
    px_rt_peer_t peer;
    px_btl_base_dyn_peer_t *dp; /* its transports (px_btl_base_dyn_remove) */
    void *conn;                 /* the connection exchange's (runtime/peer), owned by pml */
    bool connected;             /* handed to the application (px_connect / px_accept) */
    bool gone;                  /* its connection closed: it left or died */
    bool local;                 /* on this host (its host name): the idle policy counts it */
    char name[256];             /* "peer N (host H, pid P, contact C)" for messages */
} px_rt_dyn_t;

/* A layer's progress step (its return: how many things it completed). */
typedef int (*px_rt_progress_fn_t)(void);
#define PX_RT_MAX_PROGRESS 8

typedef struct px_runtime {
    bool initialized;
    int rank, size;
    /* The process table: who each rank is (from boot) and what this process
     * keeps about it. */
    px_proc_t *procs;               /* [size] */
    px_proc_t **proc_ptrs;          /* [size] */
    px_btl_base_peer_t **btl_peers; /* [size], from px_btl_base_add_procs */
    px_rt_peer_t *peers;            /* [size] */
    px_btl_base_table_t table;
    bool table_valid;
    /* Dynamic peers (proc.c, px_rt_dyn_*): live ones, any order. */
    px_rt_dyn_t **dyn;
    int ndyn, dyn_cap;
    int nlocal;   /* the job's ranks on this host (this one included) */
    int dyn_next; /* the next id (from PX_RT_DYN_BASE) */
    /* Messaging's queues (runtime/pml/). */
    px_list_t posted;     /* px_request_t (receives), in post order */
    px_list_t unexpected; /* px_rt_ux_t, in arrival order */
    px_list_t pending;    /* requests with work to retry (via pend_link) */
    px_list_t active;     /* requests in a rendezvous */
    px_free_list_t requests;
    px_free_list_t ux_items;
    size_t ooo_arrivals; /* messages that arrived ahead of their turn (stats, tests) */
    size_t bad_headers;  /* matched-message headers dropped: a source the transport
                          * contradicts, or a sequence number behind (pml.c, hdr_bad) */
    /* Progress steps of the layers above messaging (px_rt_progress_register):
     * messaging's progress runs them after its own while nprogress > 0. */
    int nprogress;
    px_rt_progress_fn_t progress[PX_RT_MAX_PROGRESS];
    /* variables */
    size_t tiny_limit;
    size_t eager_limit;
    int rndv_protocol;
    int rndv_first_frag; /* runtime_rndv_first_frag: PX_RT_FIRST_FRAG_* */
    double wait_timeout;
    int thread_max;   /* runtime_thread_max */
    int thread_level; /* the level px_init / px_init_thread provided */
    int thread_locks; /* runtime_thread_locks: PX_RT_THREAD_LOCKS_* */
    int verbose;      /* runtime_verbose */
    int output;       /* its output stream */
    /* Test hook (PX_RT_TEST_UX_FAIL=N, read at init): the Nth unexpected-message
     * record cannot be allocated. 0: off. */
    unsigned long ux_fail_countdown;
} px_runtime_t;

extern px_runtime_t px_rt;

/* ---- the table (proc.c) ---- */

/* Build the table for px_rt.size ranks from boot (hosts, locality, local
 * ranks); free it (also a partial one). */
int px_rt_procs_build(void);
void px_rt_procs_free(void);

/* ---- the API lock (proc_lock.c) ---- */

/* Once px_xfer_enable_threads was called (it sets px_rt_api_shared), every
 * messaging, collective and transfer-engine call takes this lock: the
 * transports are driven by one thread at a time. */
extern bool px_rt_api_shared;
/* Try (true: taken or already held by this thread; *took says whether this
 * call took it), take, release what this thread took, ask. */
bool px_rt_lock_try(bool *took);
void px_rt_lock_take(bool *took);
void px_rt_lock_drop(bool took);
bool px_rt_lock_held(void);
/* Take the lock unless this thread holds it; returns whether it took it. */
bool px_rt_api_lock(void);
void px_rt_api_unlock(bool took);
/* A long wait lets other threads take the lock for a moment. */
void px_rt_api_pause(void);
/* runtime_thread_locks=auto (px_init_thread): `hook` runs once, as the
 * holder of the API lock (through its mutex, with no thread inside it through
 * the bias), when a thread other than the caller of this function, or than
 * the last one that took the mutex, takes the lock: a second thread calls
 * Plexus. It may switch the process to fine mode (pml_peer.c). NULL: none.
 * Called while no other thread is in Plexus (px_init_thread, px_finalize). */
void px_rt_lock_on_second_thread(void (*hook)(void));
/* The lock's bias (proc_lock.c): a thread that takes the lock again and
 * again with nobody else taking it is given it, and then enters and leaves
 * with plain loads and stores. Inline here so that an entry point's fast
 * path is a few instructions and no call. */
enum { PX_RT_HELD_NOT = 0, PX_RT_HELD_MUTEX = 1, PX_RT_HELD_BIAS = 2 };
extern _Thread_local int px_rt_tl_held __attribute__((tls_model("initial-exec")));
extern _Atomic uintptr_t px_rt_bias_owner; /* the owner's px_bias_thread_t, or 0 */
/* Enter through the bias if this thread owns it and does not hold the lock
 * (core/util/bias_lock.h: px_bias_enter; the lock's slot is 0, its id the
 * bias word). */
static inline bool px_rt_bias_enter(void)
{
    if (px_rt_tl_held != PX_RT_HELD_NOT)
        return false;
    if (!px_bias_enter(&px_rt_bias_owner, 0, &px_rt_bias_owner))
        return false;
    px_rt_tl_held = PX_RT_HELD_BIAS;
    return true;
}
/* Leave what px_rt_bias_enter took (a wait may have moved it to the mutex). */
static inline void px_rt_bias_leave(void)
{
    if (PX_LIKELY(PX_RT_HELD_BIAS == px_rt_tl_held)) {
        px_rt_tl_held = PX_RT_HELD_NOT;
        px_bias_leave(0);
    } else {
        px_rt_lock_drop(true);
    }
}
/* Run `call` (an int expression) under the lock when it is shared. */
#define PX_RT_API_CALL(call)                                                                       \
    do {                                                                                           \
        if (PX_LIKELY(!px_rt_api_shared))                                                          \
            return (call);                                                                         \
        if (PX_LIKELY(px_rt_bias_enter())) {                                                       \
            int px_rc_ = (call);                                                                   \
            px_rt_bias_leave();                                                                    \
            return px_rc_;                                                                         \
        }                                                                                          \
        bool px_took_ = px_rt_api_lock();                                                          \
        int px_rc_ = (call);                                                                       \
        px_rt_api_unlock(px_took_);                                                                \
        return px_rc_;                                                                             \
    } while (0)

/* ---- work for the API lock's holder (proc_lock.c, docs/threads.md) ----
 *
 * Fine mode polls each transport without the API lock (under the transport
 * module's own lock): a waiting thread that finds the API lock taken still
 * drives the transports. Callbacks such a poll runs that need the API lock
 * (a rendezvous's control messages and completions, the transfer engine's
 * messages and completions, a dynamic peer's message) take it with a *try*
 * (never a blocking take: the holder may be waiting for the module this
 * thread holds), and when another thread holds it they are queued, copied,
 * on a lock-free queue (core/class/mpsc.h) that the next holder of the API
 * lock runs, oldest first, before any such callback of its own (so they keep
 * their order). */
typedef struct px_rt_defer {
    px_mpsc_node_t node;
    void (*run)(struct px_rt_defer *);  /* under the API lock; frees the item */
    void (*drop)(struct px_rt_defer *); /* px_finalize: frees it without running it */
} px_rt_defer_t;
/* Queue `d` (any thread). */
void px_rt_defer_push(px_rt_defer_t *d);
/* Run what is queued (the API lock held): the number run. Registered as a
 * progress hook while fine mode is on; also run by px_rt_defer_enter. */
int px_rt_defer_drain(void);
/* The same when something is queued (one load otherwise): for the loops
 * that hold the API lock (a wait's pass, px_rt_api_pause; the transfer
 * engine's progress). */
extern px_mpsc_t px_rt_defer_q;
static inline int px_rt_defer_run(void)
{
    return PX_LIKELY(px_mpsc_empty(&px_rt_defer_q)) ? 0 : px_rt_defer_drain();
}
/* px_finalize: drop what nobody ran. */
void px_rt_defer_discard(void);
/* A callback that needs the API lock: a token for px_rt_defer_leave (the
 * lock held, by this thread already or taken now by a try, and the queue
 * run first unless this thread is already running it), or 0 when another
 * thread holds the lock: the caller queues its work. Without threads
 * (px_rt_api_shared off) it always says "run now" and takes nothing. */
int px_rt_defer_enter(void);
void px_rt_defer_leave(int token);
/* Items queued and run since the start (tests, verbose output). */
void px_rt_defer_counts(unsigned long *queued, unsigned long *ran);
/* An active-message callback that needs the API lock, run now (with it) or
 * queued with a copy of the message (its segments made one). A message that
 * cannot be kept (no memory) is reported as a transport error of `btl` for
 * its sender, made by the API lock's next holder. */
void px_rt_am_locked(px_btl_active_message_fn fn, px_btl_module_t *btl,
                     const px_btl_receive_descriptor_t *d);
/* The same for an RDMA-shaped completion (the arguments are copied; a
 * descriptor's completion passes what it needs of the descriptor in
 * `context`/`cbdata`). Without memory for the item the completion is lost:
 * reported as a transport error of `btl` for `rank` (its operations then
 * fail with the peer), made by the API lock's next holder. */
void px_rt_rdma_locked(px_btl_rdma_completion_fn fn, int rank, px_btl_module_t *btl,
                       px_btl_endpoint_t *endpoint, void *local_address,
                       px_btl_registration_handle_t *local_handle, void *context, void *cbdata,
                       int status);
/* Fine mode is engaged (pml_peer.c, API lock held): every active-message
 * callback registered now but `keep` (the matching callback, which runs
 * without the API lock) is run through px_rt_am_locked. */
void px_rt_defer_guard_ams(px_btl_active_message_fn keep);

/* ---- progress hooks (proc.c) ---- */

/* A layer above messaging (non-blocking collectives) adds its progress step
 * while it has work and removes it when done; a step may remove itself.
 * PX_ERR_OUT_OF_RESOURCE when PX_RT_MAX_PROGRESS steps are registered. */
int px_rt_progress_register(px_rt_progress_fn_t fn);
void px_rt_progress_unregister(px_rt_progress_fn_t fn);
/* Run every registered step once (messaging's progress calls it). */
int px_rt_progress_hooks(void);

/* ---- a peer's failure (proc.c) ---- */

/* A subscriber learns that `rank` failed with `error` (`why` says why, for
 * messages). `transport_gone`: its transport reported the failure, so
 * nothing more comes from it; else this process decided it (a timeout, a
 * lost message) and the transport may still work. Subscribers run in the
 * order they subscribed (px_init: messaging, then the transfer engine). */
typedef void (*px_rt_fail_fn_t)(int rank, int error, const char *why, bool transport_gone);
#define PX_RT_MAX_FAIL_SUBSCRIBERS 8
int px_rt_fail_subscribe(px_rt_fail_fn_t fn);
/* px_finalize: forget every subscriber. */
void px_rt_fail_unsubscribe_all(void);
/* Fail peer `rank` with `error` by this process's decision (`why` is printed).
 * Its pending operations complete with `error`, later ones fail at once and
 * its messages are discarded from now on. */
void px_rt_fail_peer(int rank, int error, const char *why);
/* A dynamic peer left (px_disconnect, or its connection closed: it left or
 * died): its transport is gone; its pending operations fail with `error`,
 * and a message names it unless `quiet` (it had no operation pending). */
void px_rt_fail_peer_gone(int id, int error, const char *why, bool quiet);
/* An operation with failed peer `p` (id `id`) is refused: returns its error
 * and, when no message named it yet (it failed quietly: it left with nothing
 * pending), prints one now, once. */
int px_rt_peer_refused(px_rt_peer_t *p, int id);
/* The BTL error callback: fails `rank` (or the peers the module serves when
 * rank < 0). Exposed for tests. */
void px_rt_btl_error(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, int rank, int error,
                     const char *description);

/* Fine mode (runtime_thread_locks=fine, docs/threads.md): the error callback
 * every transport gets. With the API lock held it is px_rt_btl_error; without
 * (a send made outside it) the report is kept and made by the next holder of
 * the API lock, which calls px_rt_btl_errors_drain (progress, a wait's pass). */
void px_rt_btl_error_threads(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, int rank, int error,
                             const char *description);
void px_rt_btl_errors_drain(void);
/* px_finalize: forget reports nobody made. */
void px_rt_btl_errors_free(void);

/* ---- dynamic peers (proc.c) ---- */

/* A new dynamic peer with the next id (NULL when out of memory or ids). */
px_rt_dyn_t *px_rt_dyn_add(void);
/* Forget it (its ooo list and the record; its transports and connection are
 * the caller's to release first). */
void px_rt_dyn_free(px_rt_dyn_t *d);
px_rt_dyn_t *px_rt_dyn_find(int id);
/* The dynamic peer whose transport endpoint is `ep` (a message's sender). */
px_rt_dyn_t *px_rt_dyn_by_endpoint(const px_btl_endpoint_t *ep);

/* The process-table entry of a rank or a live dynamic peer id, else NULL. */
PX_NOINLINE px_rt_peer_t *px_rt_peer_find_slow(int id);
static inline px_rt_peer_t *px_rt_peer_find(int id)
{
    if (PX_LIKELY((unsigned)id < (unsigned)px_rt.size))
        return &px_rt.peers[id];
    return px_rt_peer_find_slow(id);
}
/* Who sent an active message: its rank, the id of the dynamic peer whose
 * endpoint it came through, or -2 (nobody this process knows). */
static inline int px_rt_am_source(const px_btl_receive_descriptor_t *d)
{
    if (PX_LIKELY(d->src_rank >= 0))
        return d->src_rank;
    if (PX_BTL_RANK_DYNAMIC == d->src_rank && d->endpoint) {
        px_rt_dyn_t *dy = px_rt_dyn_by_endpoint(d->endpoint);
        if (dy)
            return dy->id;
    }
    return -2;
}
/* A name for messages: "rank R (host H)" or the dynamic peer's name. */
const char *px_rt_peer_name(int id, char *buf, size_t len);

/* Has `rank` (or dynamic peer id) failed (its late control messages are
 * dropped quietly)? */
static inline bool px_rt_rank_failed(int rank)
{
    px_rt_peer_t *p = px_rt_peer_find(rank);
    return p && p->failed;
}

#endif
