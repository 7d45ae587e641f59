/*
 * coll.h: the collectives framework (coll). A coll component offers, per
 * group of ranks, a module: one function pointer per collective operation
 * (NULL: not provided). For each operation the base stacks the modules that
 * provide it by priority; the decision rules (variables and an optional rules
 * file, frameworks/coll/base/coll_base_rules.c) pick one per call by message
 * size and group size, else the top of the stack serves.
 *
 * A module's function does not move data itself: it BUILDS a schedule
 * (px_coll_sched_t): rounds of non-blocking sends and receives followed by
 * local reductions and copies, or a progress function of its own (ring's
 * pipeline). The base runs the schedule, blocking (px_allreduce) or as a
 * request the application completes with px_wait/px_test (px_iallreduce),
 * progressed from the runtime's progress.
 *
 * Collectives sit above point-to-point messaging, which lives in the runtime
 * layer above this framework. So the runtime hands the base a table of
 * point-to-point operations (px_coll_p2p_t below) at px_init, and schedules
 * reach messaging only through it: no coll file includes the runtime.
 *
 * A module may also give, per operation, a blocking shortcut (API 1.1,
 * px_coll_module_t.run): the same messages as its schedule, sent and awaited
 * directly (px_coll_run_*), with nothing built or interpreted. Blocking calls
 * take it; non-blocking ones always build the schedule.
 *
 * Who calls what: the runtime (runtime/coll/coll.c) calls the px_coll_base_*
 * functions; components fill px_coll_component_t / px_coll_module_t and call
 * the schedule builders (px_coll_sched_*) and the reductions (px_coll_reduce).
 */
#ifndef PX_COLL_H
#define PX_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"
#include "core/mca/component.h"
#include "frameworks/coll/coll_types.h"

#define PX_COLL_API_MAJOR   1
#define PX_COLL_API_MINOR   1
#define PX_COLL_API_RELEASE 0

/* The operations, as indices into a module's op[] table. */
typedef enum px_coll_opid {
    PX_COLL_BARRIER = 0,
    PX_COLL_BCAST,
    PX_COLL_SCATTER,
    PX_COLL_GATHER,
    PX_COLL_REDUCE,
    PX_COLL_ALLREDUCE,
    PX_COLL_ALLGATHER,
    PX_COLL_REDUCE_SCATTER,
    PX_COLL_ALLTOALL,
    PX_COLL_NOPS
} px_coll_opid_t;

/* The operation's name ("allreduce"), NULL out of range. */
PX_EXPORT const char *px_coll_op_name(int opid);
/* Datatype and reduction names ("double", "sum") and element size. */
PX_EXPORT const char *px_coll_dtype_name(int dtype);
PX_EXPORT const char *px_coll_rop_name(int rop);
PX_EXPORT size_t px_coll_dtype_size(int dtype);
/* The same for a dtype already known to be valid, inline (hot paths). */
static inline size_t px_coll_dtype_bytes(int dtype)
{
    return dtype < 8 ? (size_t)1 << (dtype >> 1) : (size_t)4 << (dtype - 8);
}

struct px_request;
typedef struct px_coll_group px_coll_group_t;
typedef struct px_coll_sched px_coll_sched_t;
typedef struct px_coll_module px_coll_module_t;
typedef struct px_coll_args px_coll_args_t;

/* ---- point-to-point, as the runtime gives it ---- */
typedef struct px_coll_p2p {
    /* Non-blocking send / receive between world ranks; any tag (collectives
     * use negative ones, which user receives never match). As px_isend. */
    int (*isend)(const void *buf, size_t len, int world_dest, int tag, struct px_request **req);
    int (*irecv)(void *buf, size_t len, int world_src, int tag, struct px_request **req);
    /* 1 when `req` is complete (its error, 0 or negative, in *error), else
     * 0. Does not progress and does not free. */
    int (*test)(struct px_request *req, int *error);
    /* Let go of `req`: a completed one is freed; a receive no message has
     * matched is cancelled; anything a transport still holds is handed to it
     * (freed when it lets go). *req becomes NULL. */
    void (*release)(struct px_request **req);
    /* Drive the transports (and the outstanding non-blocking collectives). */
    int (*progress)(void);
    /* runtime_wait_timeout in seconds (0: none). */
    double (*wait_timeout)(void);
    /* Send now without a request when the message can leave at once (small
     * enough for the transport's inline send, room for it): PX_SUCCESS, the
     * buffer may be reused. Anything else (PX_ERR_NOT_SUPPORTED): nothing was
     * sent, use isend. */
    int (*send_now)(const void *buf, size_t len, int world_dest, int tag);
} px_coll_p2p_t;

/* ---- groups ---- */
#define PX_COLL_MAX_MODULES 8
#define PX_COLL_ANY_SOURCE  (-1) /* as PX_ANY_SOURCE */
#define PX_COLL_MAX_CHOICES 8

/* A module's blocking shortcut for one operation (API 1.1; see
 * px_coll_module_t.run). */
typedef int (*px_coll_run_fn)(px_coll_group_t *g, const px_coll_args_t *a, int tag);

/* What the decision rules say for one operation on one group, resolved when
 * the group is made: messages of [bmin, bmax] bytes go to `module` (its
 * blocking shortcut `run`, NULL when it has none). */
typedef struct px_coll_choice {
    size_t bmin, bmax;
    px_coll_module_t *module;
    px_coll_run_fn run;
} px_coll_choice_t;
/* Tags: INT32_MIN + ctx * 4096 + seq; seq 4095 is the group's failure notice. */
#define PX_COLL_SEQ_SPAN  4096
#define PX_COLL_SEQ_ALERT (PX_COLL_SEQ_SPAN - 1)
#define PX_COLL_MAX_CTX   ((1u << 19) - 2)

struct px_coll_group {
    int rank, size;               /* this process's rank in the group, the group's size */
    int *world;                   /* [size]: group rank -> world rank */
    uint32_t ctx;                 /* context id: the group's own tag space */
    uint32_t seq;                 /* sequence number of the next collective */
    int failed;                   /* 0, or the error that broke the group (no more collectives) */
    int failed_rank;              /* the group rank that reported it (-1: this one / unknown) */
    struct px_request *alert_req; /* posted: another member reports a failure */
    char alert_byte;
    /* Modules queried for this group, by priority (highest first). */
    px_coll_module_t *modules[PX_COLL_MAX_MODULES];
    int priorities[PX_COLL_MAX_MODULES];
    int nmodules;
    /* Per operation: the modules that provide it, highest priority first. */
    px_coll_module_t *stack[PX_COLL_NOPS][PX_COLL_MAX_MODULES];
    int nstack[PX_COLL_NOPS];
    /* Per operation: the rules that apply to this group's size, in order. */
    px_coll_choice_t choice[PX_COLL_NOPS][PX_COLL_MAX_CHOICES];
    int nchoice[PX_COLL_NOPS];
    /* Per operation: the blocking shortcut of stack[op][0] (NULL: none). */
    px_coll_run_fn stack_run[PX_COLL_NOPS];
    /* Per module: its component was built for API 1.1 or later (run[] exists). */
    bool module_has_run[PX_COLL_MAX_MODULES];
    void *runtime_link; /* the runtime's own bookkeeping (its list of groups) */
};

/* ---- what a collective call asks for ---- */
struct px_coll_args {
    int opid;         /* PX_COLL_* */
    const void *sbuf; /* send data; never PX_IN_PLACE here (the base resolves it) */
    void *rbuf;       /* result */
    size_t count;     /* elements: the vector (bcast, reduce, allreduce) or one rank's
                       * block (scatter, gather, allgather, reduce_scatter, alltoall) */
    px_dtype_t dtype;
    px_op_t rop; /* never PX_AVG here: the base reduces with SUM, then divides */
    int root;    /* group rank (bcast, scatter, gather, reduce) */
    /* In-place: sbuf == rbuf (allreduce, reduce at the root), or sbuf is this
     * rank's block inside rbuf (allgather, gather at the root); scatter's root
     * keeps its block in sbuf when rbuf points into it. */
};

/* A module's operation: build `s` for `a` on `g` (post nothing yet); return
 * PX_SUCCESS or an error (PX_ERR_NOT_SUPPORTED: let the next module of the
 * stack serve this call). */
typedef int (*px_coll_build_fn)(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s);

struct px_coll_module {
    const char *name; /* the component's name (rules name components) */
    px_coll_build_fn op[PX_COLL_NOPS];
    /* Optional: the group goes away (free per-group state kept in `m`). */
    void (*group_free)(px_coll_group_t *g, px_coll_module_t *m);
    /* API 1.1 (the base reads it only from components built for 1.1 or
     * later). Optional, per operation: run a BLOCKING call of it to completion
     * now, its messages carrying `tag`, with the px_coll_run_* calls below
     * instead of building a schedule. It must move exactly the messages op[]'s
     * schedule moves (so a blocking call matches a non-blocking one on another
     * rank). PX_ERR_NOT_SUPPORTED, returned before anything was posted, hands
     * the call to op[] (same tag). Other errors: as a failed schedule (the
     * px_coll_run_* calls have failed the group and told its members). */
    px_coll_run_fn run[PX_COLL_NOPS];
};
/* The size of a module built for API 1.0 (no run[]). */
#define PX_COLL_MODULE_SIZE_1_0 offsetof(px_coll_module_t, run)

typedef struct px_coll_component {
    px_mca_component_t base;
    /* May this component serve group `g`? Its module and priority (negative:
     * declines). A module may be static (shared by every group) or made per
     * group and freed by group_free. */
    int (*query)(px_coll_group_t *g, int *priority, px_coll_module_t **module);
} px_coll_component_t;

/* The "priority" row of a coll component's variable table (registered as
 * coll_<comp>_priority, 0-100; needs core/mca/var.h):
 *   static const px_mca_var_field_t vars[] = {
 *       PX_COLL_PRIORITY_VAR("mine", px_coll_mine_priority), ..., {.name = NULL}}; */
#define PX_COLL_PRIORITY_VAR(comp, var)                                                            \
    {                                                                                              \
        .name = "priority",                                                                        \
        .help =                                                                                    \
            "Priority of coll/" comp " in each operation's stack (higher serves first when no "    \
            "decision rule names a component)",                                                    \
        .type = PX_MCA_VAR_TYPE_INT, .info_level = 6, .scope = PX_MCA_VAR_SCOPE_READONLY,          \
        .min = "0", .max = "100", .storage = &(var)                                                \
    }

#define PX_COLL_COMPONENT_HEADER(name, maj, min, rel, reg, opn, cls)                               \
    PX_MCA_COMPONENT_HEADER_FP("coll", PX_COLL_API_MAJOR, PX_COLL_API_MINOR, PX_COLL_API_RELEASE,  \
                               (name), (maj), (min), (rel), (reg), (opn), (cls),                   \
                               sizeof(px_coll_component_t), sizeof(px_coll_module_t),              \
                               sizeof(px_coll_sched_t), sizeof(px_coll_args_t))

/* ---- schedules ---- */
enum {
    PX_COLL_ACT_SEND = 1,
    PX_COLL_ACT_RECV,
    PX_COLL_ACT_REDUCE, /* dst = a (op) b, elementwise; dst may be a */
    PX_COLL_ACT_COPY,
    PX_COLL_ACT_ROUND /* end of a round */
};

typedef struct px_coll_action {
    uint8_t kind;
    uint8_t dtype, rop;
    int peer; /* group rank (send, recv) */
    const void *a, *b;
    void *dst;  /* recv buffer, copy/reduce destination */
    size_t len; /* bytes (send, recv, copy) or elements (reduce) */
} px_coll_action_t;

#define PX_COLL_SCHED_INLINE_ACTS 40
#define PX_COLL_SCHED_INLINE_REQS 16
#define PX_COLL_SCHED_MAX_TMP     4
#define PX_COLL_SCHED_INLINE_TMP  512 /* scratch bytes inside the schedule (small messages) */

struct px_coll_sched {
    px_coll_group_t *group;
    int opid;
    int tag; /* every message of this collective */
    int error;
    bool started, done;
    bool settling; /* finished here (error: its result); completes at the next step */
    /* A module may replace the round engine: progress returns 1 when done, 0
     * when not yet, or a negative error (then abort lets go of every request
     * it still holds); cleanup frees `priv` (also after an error). */
    int (*progress)(px_coll_sched_t *s);
    void (*abort)(px_coll_sched_t *s);
    void (*cleanup)(px_coll_sched_t *s);
    void *priv;
    /* The round engine: actions, the current round [cur, round_end). */
    px_coll_action_t *acts;
    size_t nacts, cap, cur, round_end;
    struct px_request **reqs;
    size_t nreqs, reqcap;
    void *tmp[PX_COLL_SCHED_MAX_TMP];
    int ntmp;
    size_t inline_tmp_used; /* bytes of inline_tmp handed out */
    /* PX_AVG: divide `scale_count` elements at scale_buf by scale_div at the end. */
    void *scale_buf;
    size_t scale_count;
    int scale_dtype;
    double scale_div;
    bool heap; /* the schedule itself was malloc'ed (non-blocking) */
    px_coll_action_t inline_acts[PX_COLL_SCHED_INLINE_ACTS];
    struct px_request *inline_reqs[PX_COLL_SCHED_INLINE_REQS];
    _Alignas(64) unsigned char inline_tmp[PX_COLL_SCHED_INLINE_TMP];
};

/* Builders (a module's op functions call these). Peers are group ranks.
 * Each returns PX_SUCCESS or PX_ERR_OUT_OF_RESOURCE (then the base fails the
 * call cleanly). Sends and receives of a round are posted together; its
 * reductions and copies run, in order, once all of them completed. */
PX_EXPORT int px_coll_sched_send(px_coll_sched_t *s, int peer, const void *buf, size_t bytes);
PX_EXPORT int px_coll_sched_recv(px_coll_sched_t *s, int peer, void *buf, size_t bytes);
PX_EXPORT int px_coll_sched_reduce(px_coll_sched_t *s, void *dst, const void *a, const void *b,
                                   size_t count, int dtype, int rop);
PX_EXPORT int px_coll_sched_copy(px_coll_sched_t *s, void *dst, const void *src, size_t bytes);
PX_EXPORT int px_coll_sched_round(px_coll_sched_t *s);
/* Scratch memory freed with the schedule (64-byte aligned; small blocks come
 * from inside the schedule, larger ones, up to PX_COLL_SCHED_MAX_TMP of
 * them, from malloc); NULL when out of memory. */
PX_EXPORT void *px_coll_sched_tmp(px_coll_sched_t *s, size_t bytes);

/* The point-to-point table (for modules with a progress function of their own). */
PX_EXPORT const px_coll_p2p_t *px_coll_p2p(void);

/* ---- blocking shortcuts (px_coll_module_t.run) ----
 * A run function sends and receives directly: px_coll_run_send / _recv post
 * (peers are group ranks, the collective's tag), px_coll_run_wait waits for
 * everything posted (progressing, yielding when the ranks outnumber the
 * cores, checking the group's failure notices and runtime_wait_timeout) and
 * lets the requests go. On any failure every request is let go, the group is
 * failed and its other members told (as a failed schedule); the error is
 * returned, and sticks: later calls on the same px_coll_run_t return it.
 * At most PX_COLL_RUN_MAXREQ messages may be outstanding (a run function for
 * a larger group passes it to its schedule: PX_ERR_NOT_SUPPORTED). */
#define PX_COLL_RUN_MAXREQ 64
typedef struct px_coll_run {
    px_coll_group_t *g;
    int opid, tag;
    int n;     /* requests outstanding in req[0..n) */
    int error; /* sticky */
    struct px_request *req[PX_COLL_RUN_MAXREQ];
} px_coll_run_t;
static inline void px_coll_run_init(px_coll_run_t *r, px_coll_group_t *g, int opid, int tag)
{
    r->g = g;
    r->opid = opid;
    r->tag = tag;
    r->n = 0;
    r->error = 0;
}
PX_EXPORT int px_coll_run_send(px_coll_run_t *r, int peer, const void *buf, size_t bytes);
PX_EXPORT int px_coll_run_recv(px_coll_run_t *r, int peer, void *buf, size_t bytes);
PX_EXPORT int px_coll_run_wait(px_coll_run_t *r);

/* ---- reductions (frameworks/coll/base/coll_base_op.c) ---- */
/* dst[i] = a[i] (op) b[i] for i < count; dst may equal a or b. Plain loops
 * the compiler vectorises. PX_ERR_NOT_SUPPORTED for a pair that has no
 * meaning (band on float, avg: the base turns it into sum). */
PX_EXPORT int px_coll_reduce(void *dst, const void *a, const void *b, size_t count, int dtype,
                             int rop);
/* Whether `rop` is defined for `dtype` (avg included). */
PX_EXPORT bool px_coll_rop_valid(int dtype, int rop);
/* x[i] /= div for a float or double vector (PX_AVG). */
void px_coll_scale(void *x, size_t count, int dtype, double div);

/* Elements [first, end) of block b when `count` elements are cut into
 * `nblocks` near-equal blocks (the first count % nblocks get one more). */
static inline size_t px_coll_block_start(size_t count, int nblocks, int b)
{
    size_t q = count / (size_t)nblocks, r = count % (size_t)nblocks, ub = (size_t)b;
    return ub * q + (ub < r ? ub : r);
}

/* ---- the base: used by the runtime (inside libplexus, not exported) and
 * px_info (the framework object and the rules, exported) ---- */
PX_EXPORT extern struct px_mca_framework px_coll_base_framework;
/* Open the framework (components register and open; the rules file is
 * read) with the runtime's point-to-point table. */
int px_coll_base_open(const px_coll_p2p_t *p2p);
int px_coll_base_close(void);
/* Query every component for `g` and build its stacks; PX_ERR_NOT_FOUND when
 * no module serves some operation. */
int px_coll_base_group_init(px_coll_group_t *g);
void px_coll_base_group_fini(px_coll_group_t *g);
/* The module the rules choose for a call (NULL: none provides it), and its
 * blocking shortcut (NULL: none) in *run when run is not NULL. */
px_coll_module_t *px_coll_base_choose(px_coll_group_t *g, int opid, size_t bytes,
                                      px_coll_run_fn *run);
/* Run a blocking call to completion: the chosen module's shortcut, else its
 * schedule (falling back down the stack on PX_ERR_NOT_SUPPORTED). */
int px_coll_base_blocking(px_coll_group_t *g, const px_coll_args_t *a);
/* Build `s` for `a` (chosen module, falling back down the stack on
 * PX_ERR_NOT_SUPPORTED). `s` must have been px_coll_sched_init'ed. */
int px_coll_base_build(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s);
void px_coll_sched_init(px_coll_sched_t *s, px_coll_group_t *g, int opid, bool heap);
/* Advance: 1 done, 0 not yet, negative: failed (the group is failed and the
 * other members told; every request let go). Sticky once finished. */
int px_coll_sched_step(px_coll_sched_t *s);
/* Run to completion (blocking), bounded by runtime_wait_timeout. */
int px_coll_sched_run(px_coll_sched_t *s);
/* Give up on an unfinished schedule with `error` (a wait timed out). */
void px_coll_sched_fail(px_coll_sched_t *s, int error);
/* Free what the schedule holds (not the schedule itself). */
void px_coll_sched_fini(px_coll_sched_t *s);
/* Fail group `g` with `error` and tell its other members (once). */
void px_coll_base_group_failed(px_coll_group_t *g, int error, int by);
/* Take another member's failure notice if one arrived; the group's failure
 * (0 when it has not failed): the error this member saw first, or
 * PX_ERR_GROUP_FAILED when another member reported it. */
int px_coll_base_group_check(px_coll_group_t *g);
/* A collective of `opid` finished on this member with `rc`. When rc is
 * PX_SUCCESS or PX_ERR_TRUNCATE but the group has failed (a member gave up on
 * it: the messages this member matched may be all it will ever get), prints
 * why and returns PX_ERR_GROUP_FAILED; else rc. `poll`: drive progress once
 * first (not from within a progress callback). */
int px_coll_base_settle(px_coll_group_t *g, int opid, int rc, bool poll);

/* The decision table, for px_info: one row per rule in the order they are
 * tried (rules file first, then the built-in rules from the variables). */
typedef struct px_coll_rule {
    int opid;
    int gmin, gmax;     /* group sizes (gmax -1: no limit) */
    size_t bmin, bmax;  /* bytes (bmax SIZE_MAX: no limit) */
    char component[32]; /* who serves */
    const char *source; /* "rules file FILE:LINE" or the variable(s) */
} px_coll_rule_t;
PX_EXPORT int px_coll_base_rules(const px_coll_rule_t **rules);
/* Read a rules file (NULL: the one coll_base_rules_file names, if any):
 * PX_SUCCESS, or PX_ERR_BAD_PARAM after printing "FILE:LINE: what is wrong;
 * accepted: ...". Used at open and by px_info. */
PX_EXPORT int px_coll_base_rules_load(const char *path);

#endif
