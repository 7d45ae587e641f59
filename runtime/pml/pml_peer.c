/*
 * pml_peer.c: the messaging layer's variables, per-peer setup and teardown,
 * and what messaging does when a peer fails (the process table's notice,
 * runtime/proc/proc.c: its pending operations complete with the error; see
 * docs/api.md, "When a peer fails"). The send and receive paths are in
 * pml.c, the application's calls in pml_api.c, rendezvous in pml_rndv.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"
#include "core/util/progress_internal.h"
#include "runtime/pml/pml_internal.h"

/* ------------------------------------------------------------------ variables */

static const px_mca_var_enum_value_t rndv_values[] = {
    {PX_RT_RNDV_AUTO, "auto"},
    {PX_RT_RNDV_GET, "get"},
    {PX_RT_RNDV_PIPELINE, "pipeline"},
    {PX_RT_RNDV_PUT, "put"},
    {0, NULL},
};

static const px_mca_var_enum_value_t first_frag_values[] = {
    {PX_RT_FIRST_FRAG_AUTO, "auto"},
    {PX_RT_FIRST_FRAG_ON, "on"},
    {PX_RT_FIRST_FRAG_OFF, "off"},
    {0, NULL},
};

static const px_mca_var_enum_value_t thread_values[] = {
    {PX_THREAD_SINGLE, "single"},
    {PX_THREAD_FUNNELED, "funneled"},
    {PX_THREAD_SERIALIZED, "serialized"},
    {PX_THREAD_MULTIPLE, "multiple"},
    {0, NULL},
};

static const px_mca_var_enum_value_t thread_locks_values[] = {
    {PX_RT_THREAD_LOCKS_API, "api"},
    {PX_RT_THREAD_LOCKS_FINE, "fine"},
    {PX_RT_THREAD_LOCKS_AUTO, "auto"},
    {0, NULL},
};

#define PX_RT_AT(field) .offset = PX_MCA_VAR_AT(px_runtime_t, field)
static const px_mca_var_field_t px_rt_vars[] = {
    {.name = "tiny_limit",
     .help = "Largest message (bytes of data) sent with the transport's immediate path (btl "
             "sendi); 0 disables it",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "256",
     .min = "0",
     PX_RT_AT(tiny_limit)},
    {.name = "eager_limit",
     .help = "Largest message (bytes of data) sent eagerly; 0: as large as the peer's eager "
             "transport allows (btl_<name>_eager_limit minus the 16-byte header); larger "
             "messages use the rendezvous protocol",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     PX_RT_AT(eager_limit)},
    {.name = "rndv_protocol",
     .help = "How rendezvous data moves: auto (RDMA get when the peer's heaviest RDMA transport "
             "offers it, else RDMA put, else pipelined fragments), get (get or fragments), put "
             "(put or fragments), pipeline (always fragments of btl_<name>_max_send_size)",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = rndv_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "auto",
     PX_RT_AT(rndv_protocol)},
    {.name = "rndv_first_frag",
     .help = "Whether a rendezvous request (RNDV) carries the message's first bytes, as many "
             "as fit in the eager transport's eager limit, so that the receiver copies them "
             "and reads (or is sent) only the rest, as Open MPI's ob1 does: off (the "
             "default: over one TCP stream it saves no trip nor system call and adds a copy "
             "on each side, docs/ofi.md), auto (over transports whose RDMA needs registered "
             "memory and is not single-copy, i.e. a network's: btl/ofi, btl/verbs; never "
             "btl/shm or btl/self), on (any transport). A receiver of an older release "
             "ignores them and moves the whole message (docs/api.md, \"Protocols and their "
             "variables\")",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = first_frag_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "off",
     PX_RT_AT(rndv_first_frag)},
    {.name = "wait_timeout",
     .help = "Seconds a blocking call (px_wait, px_recv, px_barrier, ...) waits before failing "
             "with PX_ERR_TIMEOUT; 0: no limit",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     PX_RT_AT(wait_timeout)},
    {.name = "thread_max",
     .help = "Highest thread level px_init_thread provides (single, funneled, serialized, "
             "multiple; docs/threads.md): a lower one makes px_init_thread report it in "
             "*provided and run at it",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = thread_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "multiple",
     PX_RT_AT(thread_max)},
    {.name = "thread_locks",
     .help = "How PX_THREAD_MULTIPLE serializes (docs/threads.md): api (every call under one "
             "API lock, biased to a thread that works alone), fine (point-to-point calls "
             "without the API lock: a matching lock around the queues, the BTL base's lock per "
             "module around each transport that is not thread-safe, progress by whichever "
             "waiting thread finds the API lock free) or auto (api while one thread calls; fine "
             "from the moment a second thread calls when the process has two CPUs or more to "
             "itself: its affinity mask, or the machine's CPUs per rank on this host when "
             "unbound; threads sharing one CPU gain nothing from finer locks)",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = thread_locks_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "api",
     PX_RT_AT(thread_locks)},
    {.name = "verbose",
     .help = "Verbosity of the messaging layer: 0 quiet, 1 what px_finalize discards (messages "
             "never received, from each rank, and receives never matched)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 8,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "100",
     PX_RT_AT(verbose)},
    {.name = NULL},
};
#undef PX_RT_AT

/* The progress engine's idle policy (core/util/progress.h): one for every
 * component that polls. */
static const px_mca_var_enum_value_t yield_values[] = {
    {PX_PROGRESS_YIELD_AUTO, "auto"},
    {PX_PROGRESS_YIELD_ALWAYS, "always"},
    {PX_PROGRESS_YIELD_NEVER, "never"},
    {0, NULL},
};

#define PX_PG_AT(field) .offset = PX_MCA_VAR_AT(px_progress_idle_policy_t, field)
static const px_mca_var_field_t px_progress_vars[] = {
    {.name = "yield_when_idle",
     .help = "Give the core away (sched_yield, or progress_idle_sleep_us) after "
             "progress_idle_spins progress calls in a row that found nothing: never, always, or "
             "auto (when this node runs more processes than it has online cores: the job's ranks "
             "here and the dynamic peers connected from this host; at "
             "PX_THREAD_MULTIPLE a wait yields under auto too: its answer may come from another "
             "thread of the process)",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = yield_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "auto",
     PX_PG_AT(yield_when_idle)},
    {.name = "idle_spins",
     .help = "Progress calls in a row that found nothing before the engine yields (when "
             "progress_yield_when_idle says it yields)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "32",
     .min = "1",
     .max = "1000000000",
     PX_PG_AT(idle_spins)},
    {.name = "idle_sleep_us",
     .help = "How an idle rank yields: 0 calls sched_yield; N > 0 sleeps N microseconds "
             "(nanosleep), which leaves the core to other ranks even where sched_yield returns "
             "at once",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "100000",
     PX_PG_AT(idle_sleep_us)},
    {.name = "idle_wait_ms",
     .help = "Longest time an idle rank blocks in poll() on its transports' event sources "
             "before polling everything again, in milliseconds (only when every transport that "
             "needs progress can wake it, e.g. btl_verbs_progress_mode=event with btl=self,verbs)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "100",
     .min = "1",
     .max = "60000",
     PX_PG_AT(idle_wait_ms)},
    {.name = NULL},
};
#undef PX_PG_AT

/* A value the variable system refused (it does not parse, or is out of
 * range) was reported there, naming the variable, the value, its source and
 * what is accepted, and the default is kept: like the btl_* variables, that
 * is not an error of px_init (PX_ERR_BAD_PARAM). Any other error is. */
static int keep_default(int rc)
{
    return rc < 0 && rc != PX_ERR_BAD_PARAM ? rc : PX_SUCCESS;
}

int px_pml_register_params(void)
{
    int rc = keep_default(px_mca_var_register_table("runtime", NULL, px_rt_vars, -1, &px_rt));
    if (rc != PX_SUCCESS)
        return rc;
    rc = keep_default(px_mca_var_register_table("progress", NULL, px_progress_vars, -1,
                                                px_progress_policy_storage()));
    return rc;
}

/* ------------------------------------------------------------------ errors */

/* Complete every pending operation with `rank` with `error`. Requests the
 * application has let go of ("released") are not failed again: when the
 * transport is gone (`transport_gone`) nothing will come for them, so they
 * leave px_rt.active and are freed once their local operations end. */
static void fail_rank(int rank, int error, bool transport_gone)
{
    px_request_t *r, *n;
    ml_lock(px_pml_fine); /* recursive: px_pml_req_fail takes it again */
    PX_LIST_FOREACH_SAFE(r, n, &px_rt.posted, px_request_t)
    {
        if (r->peer == rank)
            px_pml_req_fail(r, error);
    }
    ml_unlock(px_pml_fine);
    PX_LIST_FOREACH_SAFE(r, n, &px_rt.active, px_request_t)
    {
        int who = PX_PML_REQ_SEND == r->type ? r->peer : r->status.source;
        if (who != rank)
            continue;
        if (!r->released) {
            px_pml_req_fail(r, error);
        } else if (transport_gone) {
            px_pml_active_remove(r);
            px_pml_req_unhold(r);
        }
    }
    px_list_item_t *it = px_list_get_first(&px_rt.pending), *next;
    for (; it != px_list_get_end(&px_rt.pending); it = next) {
        next = it->px_list_next;
        px_request_t *q = px_container_of(it, px_request_t, pend_link);
        int who = PX_PML_REQ_SEND == q->type ? q->peer : q->status.source;
        if (who == rank)
            px_pml_req_fail(q, error);
    }
}

/* The process table's failure notice (proc.c): px_rt_fail_peer or
 * px_rt_btl_error marked `rank` failed; the immediate path to it closes and
 * its pending operations complete with `error`. */
void px_pml_peer_failed(int rank, int error, const char *why, bool transport_gone)
{
    (void)why;
    px_rt_peer_t *p = px_rt_peer_find(rank);
    if (p)
        __atomic_store_n(&p->tiny_below, 0, __ATOMIC_RELAXED); /* fine mode's senders read it */
    fail_rank(rank, error, transport_gone);
}

void px_pml_quiesce(void)
{
    /* Released requests still waiting for a peer (a FIN that will not come
     * now): their registrations must go before the transports do. */
    px_request_t *r, *n;
    PX_LIST_FOREACH_SAFE(r, n, &px_rt.active, px_request_t)
    {
        if (r->released) {
            px_pml_active_remove(r);
            px_pml_req_unhold(r);
        }
    }
}

size_t px_pml_unexpected_count(void)
{
    return px_list_get_size(&px_rt.unexpected);
}
size_t px_pml_posted_count(void)
{
    return px_list_get_size(&px_rt.posted);
}

/* ------------------------------------------------------------------ setup */

void px_pml_peer_setup(px_rt_peer_t *peer, px_btl_base_peer_t *btl)
{
    peer->btl = btl;
    peer->send_seq = 0;
    peer->recv_seq = 0;
    peer->failed = PX_SUCCESS;
    peer->failed_here = false;
    peer->failed_said = false;
    peer->dropped = 0;
    px_btl_base_peer_module_t *pm = &btl->eager[0];
    peer->eager_btl = pm->module;
    peer->eager_ep = pm->endpoint;
    size_t limit = btl->eager_limit;
    size_t data = limit > sizeof(px_rt_match_hdr_t) ? limit - sizeof(px_rt_match_hdr_t) : 0;
    if (px_rt.eager_limit && px_rt.eager_limit < data)
        data = px_rt.eager_limit;
    peer->eager_data = data;
    /* The immediate path needs one eager module with sendi (several rotate,
     * which the slow path handles). */
    peer->tiny_below = 0;
    if (1 == btl->num_eager && pm->module->btl_sendi && px_rt.tiny_limit > 0)
        peer->tiny_below = (px_rt.tiny_limit < data ? px_rt.tiny_limit : data) + 1;
}

int px_pml_init(void)
{
    PX_OBJ_CONSTRUCT(&px_rt.posted, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.unexpected, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.pending, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.active, px_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.requests, px_free_list_t);
    PX_OBJ_CONSTRUCT(&px_rt.ux_items, px_free_list_t);
    px_free_list_params_t p = {
        .item_class = PX_CLASS(px_request_t),
        .num_initial = 32,
        .num_per_grow = 64,
        .thread_safe = false,
    };
    int rc = px_free_list_init(&px_rt.requests, &p);
    if (rc != PX_SUCCESS)
        return rc;
    p.item_class = PX_CLASS(px_rt_ux_t);
    rc = px_free_list_init(&px_rt.ux_items, &p);
    if (rc != PX_SUCCESS)
        return rc;
    px_rt.output = px_output_open("runtime", px_rt.verbose);
    /* Test hook (docs/testing.md): the Nth unexpected-message record fails. */
    const char *hook = getenv("PX_RT_TEST_UX_FAIL");
    px_rt.ux_fail_countdown = hook ? strtoul(hook, NULL, 10) : 0;
    px_rt.bad_headers = 0;
    px_btl_base_register_am(PX_RT_AM_MATCH, px_pml_am_match, NULL);
    px_btl_base_register_am(PX_RT_AM_RNDV, px_pml_am_rndv, NULL);
    px_btl_base_register_am(PX_RT_AM_ACK, px_pml_am_ack, NULL);
    px_btl_base_register_am(PX_RT_AM_FRAG, px_pml_am_frag, NULL);
    px_btl_base_register_am(PX_RT_AM_FIN, px_pml_am_fin, NULL);
    px_btl_base_register_am(PX_RT_AM_PUTACK, px_pml_am_putack, NULL);
    px_btl_base_register_am(PX_RT_AM_PUTFIN, px_pml_am_putfin, NULL);
    return px_rt_fail_subscribe(px_pml_peer_failed);
}

int px_pml_threads_fine(void)
{
    static bool made; /* the matching lock outlives a px_finalize (re-init) */
    if (!made) {
        if (px_bias_lock_init(&px_pml_match_lock, true) != PX_SUCCESS)
            return PX_ERR_OUT_OF_RESOURCE;
        made = true;
    }
    int rc = px_btl_base_serialize(px_btl_base_modules, px_btl_base_num_modules);
    if (rc != PX_SUCCESS)
        return rc;
    px_btl_base_register_am(PX_RT_AM_MATCH, px_pml_am_match_fine, NULL);
    rc = px_btl_base_register_error(px_rt_btl_error_threads);
    if (rc != PX_SUCCESS)
        return rc;
    /* Progress polls the transports without the API lock: every other
     * active-message callback runs with it (taken by a try) or is queued for
     * its holder, whose progress runs the queue (a hook). */
    rc = px_rt_progress_register(px_rt_defer_drain);
    if (rc != PX_SUCCESS)
        return rc;
    px_rt_defer_guard_ams(px_pml_am_match_fine);
    /* Release: a thread that sees it set (px_pml_fine_now) without the API
     * lock sees the wrapped methods and the lock made above. */
    __atomic_store_n(&px_pml_fine, true, __ATOMIC_RELEASE);
    return PX_SUCCESS;
}

/* runtime_thread_locks=auto: a second thread called (proc_lock.c runs this as
 * the API lock's holder, with nobody else inside it). A thread paused in a
 * wait of the API lock's mode goes on with the calls of fine mode that may run
 * under the API lock. */
static void threads_auto_switch(void)
{
    int rc = px_pml_threads_fine();
    if (rc != PX_SUCCESS) {
        /* Whatever the base wrapped is biased and harmless under the API lock. */
        px_show_error("runtime_thread_locks=auto: a second thread calls Plexus, but turning on "
                      "the fine-grained locks failed (%s): every call stays under the API lock",
                      px_strerror(rc));
        return;
    }
    if (px_rt.verbose > 0)
        px_output(px_rt.output, "runtime_thread_locks=auto: a second thread calls Plexus: "
                                "fine-grained locks from now on");
}

int px_pml_threads_auto(int cpus)
{
    if (cpus >= 2) {
        px_rt_lock_on_second_thread(threads_auto_switch);
        if (px_rt.verbose > 0)
            px_output(px_rt.output,
                      "runtime_thread_locks=auto: %d CPUs in this process's affinity mask: the "
                      "API lock until a second thread calls, then fine-grained locks",
                      cpus);
    } else if (px_rt.verbose > 0) {
        px_output(px_rt.output,
                  "runtime_thread_locks=auto: one CPU in this process's affinity mask: its "
                  "threads never run at once, so the API lock (one hold per call) throughout");
    }
    return PX_SUCCESS;
}

int px_pml_finalize(void)
{
    if (px_pml_fine) { /* px_finalize ran the queue before the layers went */
        px_rt_progress_unregister(px_rt_defer_drain);
        px_rt_defer_discard();
    }
    px_pml_fine = false;
    px_rt_lock_on_second_thread(NULL); /* auto's hook, when no second thread came */
    px_rt_btl_errors_free();
    /* Requests the application never completed, queued messages nobody received. */
    if (px_output_check(px_rt.output, 1) && px_rt.peers) {
        for (int r = 0; r < px_rt.size; ++r) {
            size_t n = px_rt.peers[r].dropped + px_list_get_size(&px_rt.peers[r].ooo);
            px_rt_ux_t *u;
            PX_LIST_FOREACH(u, &px_rt.unexpected, px_rt_ux_t)
            {
                n += u->src == r;
            }
            if (n)
                px_output(px_rt.output,
                          "px_finalize: %zu message(s) from rank %d were never received; "
                          "discarded",
                          n, r);
        }
        size_t posted = px_list_get_size(&px_rt.posted);
        if (posted)
            px_output(px_rt.output, "px_finalize: %zu receive(s) never matched a message", posted);
    }
    px_list_item_t *it;
    while ((it = px_list_remove_first(&px_rt.unexpected)))
        ux_free((px_rt_ux_t *)it);
    for (int r = 0; px_rt.peers && r < px_rt.size; ++r)
        while ((it = px_list_remove_first(&px_rt.peers[r].ooo)))
            ux_free((px_rt_ux_t *)it);
    while ((it = px_list_remove_first(&px_rt.pending)))
        ;
    while ((it = px_list_remove_first(&px_rt.posted)))
        ;
    while ((it = px_list_remove_first(&px_rt.active)))
        ;
    for (int t = PX_RT_AM_MATCH; t <= PX_RT_AM_PUTFIN; ++t)
        px_btl_base_register_am((px_btl_tag_t)t, NULL, NULL);
    PX_OBJ_DESTRUCT(&px_rt.ux_items);
    PX_OBJ_DESTRUCT(&px_rt.requests);
    PX_OBJ_DESTRUCT(&px_rt.active);
    PX_OBJ_DESTRUCT(&px_rt.pending);
    PX_OBJ_DESTRUCT(&px_rt.unexpected);
    PX_OBJ_DESTRUCT(&px_rt.posted);
    if (px_rt.output > 0)
        px_output_close(px_rt.output);
    px_rt.output = -1;
    return PX_SUCCESS;
}
