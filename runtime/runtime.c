/*
 * runtime.c: px_init / px_finalize and the calls around them.
 *
 * px_init: variables -> boot (select, rank/size/hosts) -> process table ->
 * btl framework open and component init -> address exchange (modex_send,
 * the job-wide variables' hash, commit, fence) -> job-wide variables agree
 * (job_vars.c) -> add_procs and per-peer selection -> messaging ready ->
 * fence. px_finalize undoes it in reverse order.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/mca/framework.h"
#include "core/mca/mca_tools.h"
#include "core/mca/var.h"
#include "runtime/runtime.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "core/util/progress.h"
#include "frameworks/boot/boot.h"
#include "frameworks/registry/registry.h"
#include "runtime/name/name.h"
#include "runtime/peer/peer.h"
#include "runtime/xfer/xfer.h"

static struct {
    bool var_init;
    bool boot;
    bool btl_open;
    bool btl_selected;
    bool pml;
    bool coll;
} px_rt_stage;

static void px_rt_teardown(void);

/* The runtime's variables: messaging's and the progress engine's, then the
 * transfer engine's (px_init, and px_info to list them). */
int px_rt_pml_register_params(void)
{
    int rc = px_pml_register_params();
    if (rc != PX_SUCCESS)
        return rc;
    /* A value the variable system refused was reported there and the
     * default kept: not an error of px_init (as in px_pml_register_params). */
    rc = px_xfer_register_params();
    if (rc < 0 && rc != PX_ERR_BAD_PARAM)
        return rc;
    rc = px_peer_register_params(); /* runtime/peer: peer_* */
    if (rc < 0 && rc != PX_ERR_BAD_PARAM)
        return rc;
    /* btl/shm had its own policy before the engine's: its variable now sets
     * the engine's. */
    int idx = px_mca_var_find("progress_yield_when_idle");
    if (idx >= 0)
        px_mca_var_register_synonym(idx, "btl", "shm", "yield_when_idle",
                                    PX_MCA_VAR_FLAG_DEPRECATED);
    return PX_SUCCESS;
}

/* The transfer engine's answer to the process table's failure notice. */
static void xfer_peer_failed(int rank, int error, const char *why, bool transport_gone)
{
    (void)transport_gone;
    px_xfer_peer_failed(rank, error, why);
}

/* The name of the operation a runtime-internal tag (< 0) belongs to. */
static const char *px_rt_tag_name(int tag)
{
    return PX_RT_TAG_BARRIER == tag  ? "px_barrier"
           : tag < PX_RT_TAG_BARRIER ? "a collective"
                                     : "a runtime-internal operation";
}

/* Append to `msg` the btl components that could not be used at all (a
 * refused plugin, a failed open or register_params) and unusable plugin
 * folders, each with its reason: the "no transport reaches" error would not
 * name them otherwise. Takes and returns msg. */
static char *px_rt_add_failed_components(char *msg)
{
    int n = px_mca_repository_failed_count(), listed = 0;
    for (int i = 0; i < n && msg; ++i) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        bool btl = 0 == strcmp(f->framework, "btl");
        if (!btl && 0 != strcmp(f->framework, "mca"))
            continue;
        char *next = px_asprintf(
            "%s%s\n    %s%s%s%s", msg,
            listed ? ""
                   : "\n  Components that could not be used (px_info --show-failed lists them):",
            btl ? "btl " : "", btl ? f->component : "", btl ? ": " : "", f->reason);
        if (next && btl) {
            char *with_path = px_asprintf("%s (%s)", next, f->path);
            free(next);
            next = with_path;
        }
        if (next) {
            free(msg);
            msg = next;
            listed++;
        }
    }
    return msg;
}

static int px_init_body(void);

/* Signals an application handles to shut down cleanly (unpublish its names,
 * px_finalize). A transport's library may install handlers of its own for
 * them while px_init loads it: libfabric's did for SIGTERM (cleanup, then
 * exit(1)), so an application's handler never ran and its names stayed in
 * the store for a lease. px_init gives back every handler, or SIG_IGN, the
 * application had set before it. */
static const int px_init_app_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define PX_INIT_NSIG (sizeof(px_init_app_signals) / sizeof(px_init_app_signals[0]))

int px_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct sigaction before[PX_INIT_NSIG];
    bool saved[PX_INIT_NSIG];
    for (size_t i = 0; i < PX_INIT_NSIG; i++)
        saved[i] = 0 == sigaction(px_init_app_signals[i], NULL, &before[i]) &&
                   SIG_DFL != before[i].sa_handler;
    px_mca_repository_hold_listings(); /* each plugin folder read once */
    int rc = px_init_body();
    px_mca_repository_release_listings();
    for (size_t i = 0; i < PX_INIT_NSIG; i++) {
        struct sigaction now;
        if (!saved[i] || 0 != sigaction(px_init_app_signals[i], NULL, &now))
            continue;
        if (now.sa_handler != before[i].sa_handler || now.sa_flags != before[i].sa_flags)
            sigaction(px_init_app_signals[i], &before[i], NULL);
    }
    return rc;
}

static int px_init_body(void)
{
    if (px_rt.initialized) {
        px_show_error("px_init: Plexus is already initialised in this process");
        return PX_ERR_EXISTS;
    }
    memset(&px_rt_stage, 0, sizeof(px_rt_stage));
    int rc = px_mca_var_init();
    if (rc != PX_SUCCESS)
        return rc;
    px_rt_stage.var_init = true;

    rc = px_rt_pml_register_params();
    if (rc != PX_SUCCESS)
        goto fail;

    rc = px_boot_base_select();
    if (rc != PX_SUCCESS)
        goto fail;
    px_rt_stage.boot = true;
    px_rt.rank = px_boot->rank;
    px_rt.size = px_boot->size;
    if (px_rt.size < 1 || px_rt.rank < 0 || px_rt.rank >= px_rt.size) {
        px_show_error("px_init: boot %s reported rank %d of size %d", px_boot->name, px_rt.rank,
                      px_rt.size);
        rc = PX_ERR_BAD_PARAM;
        goto fail;
    }
    rc = px_rt_procs_build();
    if (rc != PX_SUCCESS)
        goto fail;

    /* Messaging state first: a peer's message may arrive as soon as the
     * transports are up. */
    rc = px_pml_init();
    if (rc != PX_SUCCESS)
        goto fail;
    px_rt_stage.pml = true;

    rc = px_mca_framework_open(&px_btl_base_framework);
    if (rc != PX_SUCCESS)
        goto fail;
    px_rt_stage.btl_open = true;
    rc = px_btl_base_select(false);
    px_rt_stage.btl_selected = true;
    if (rc != PX_SUCCESS)
        goto fail;

    /* Collectives: the coll framework (its components register their
     * variables; the rules file is read). */
    rc = px_rt_coll_open();
    px_rt_stage.coll = true;
    if (rc != PX_SUCCESS)
        goto fail;

    /* The registry framework's own variables only: its components (and
     * the libraries they need: libcurl, hiredis, PMIx) are loaded when the
     * framework opens, at the first px_name_* call. Loading them here cost
     * every process 13 ms at startup (pxrun -n 1: 24 -> 11 ms). */
    rc = px_mca_framework_register_deferred(&px_registry_base_framework);
    if (rc != PX_SUCCESS)
        goto fail;

    /* Every framework and allowed component has registered its variables:
     * warn about PX_MCA_* names and file entries that match none (fatal with
     * mca_base_strict). */
    rc = px_mca_var_check_unknown();
    if (rc != PX_SUCCESS)
        goto fail;

    rc = px_btl_base_modex_send();
    if (rc != PX_SUCCESS)
        goto fail;
    rc = px_rt_job_vars_publish();
    if (rc != PX_SUCCESS)
        goto fail;
    if ((rc = px_boot->commit()) != PX_SUCCESS || (rc = px_boot->fence()) != PX_SUCCESS) {
        px_show_error("px_init: boot %s: exchanging transport addresses failed: %s", px_boot->name,
                      px_strerror(rc));
        goto fail;
    }
    /* Before any transport attaches to a peer (a ring laid out with another
     * rank's btl_shm_fbox_size would land in the wrong place). */
    rc = px_rt_job_vars_check();
    if (rc != PX_SUCCESS)
        goto fail;

    char *why = NULL;
    rc = px_btl_base_add_procs(&px_rt.table, px_btl_base_modules, px_btl_base_num_modules,
                               px_rt.proc_ptrs, (size_t)px_rt.size, &px_rt.procs[px_rt.rank],
                               px_rt.btl_peers, &why);
    if (rc != PX_SUCCESS) {
        if (why)
            why = px_rt_add_failed_components(why);
        if (why)
            px_show_error("px_init: %s", why);
        else
            px_show_error("px_init: selecting transports failed: %s", px_strerror(rc));
        free(why);
        goto fail;
    }
    px_rt.table_valid = true;
    for (int r = 0; r < px_rt.size; ++r)
        px_pml_peer_setup(&px_rt.peers[r], px_rt.btl_peers[r]);
    px_btl_base_register_error(px_rt_btl_error);
    /* The transfer engine: its active messages may arrive once peers pass
     * the fence below; it hears of a peer's failure after messaging. */
    rc = px_xfer_init();
    if (PX_SUCCESS == rc)
        rc = px_rt_fail_subscribe(xfer_peer_failed);
    if (PX_SUCCESS == rc)
        px_name_init(); /* its hook on px_xfer_free */
    if (rc != PX_SUCCESS) {
        px_show_error("px_init: the transfer engine could not start: %s", px_strerror(rc));
        goto fail;
    }
    px_rt.initialized = true;
    rc = px_rt_coll_world();
    if (rc != PX_SUCCESS) {
        px_show_error("px_init: making the world group for collectives failed: %s",
                      px_strerror(rc));
        px_rt.initialized = false;
        goto fail;
    }

    /* Everyone has its endpoints before anyone sends. */
    if (px_rt.size > 1 && (rc = px_boot->fence()) != PX_SUCCESS) {
        px_show_error("px_init: boot %s: final fence failed: %s", px_boot->name, px_strerror(rc));
        px_rt.initialized = false;
        goto fail;
    }
    /* Today's level: one thread at a time, no lock taken. */
    px_rt.thread_level = PX_THREAD_SERIALIZED;
    return PX_SUCCESS;

fail:
    px_rt_teardown();
    return rc;
}

static void px_rt_teardown(void)
{
    if (px_rt_stage.coll) {
        px_rt_coll_finalize();
        px_rt_stage.coll = false;
    }
    px_xfer_finalize(); /* before the transports go */
    if (px_rt_stage.pml)
        px_pml_dyn_finalize();
    if (px_rt.table_valid) {
        px_btl_base_del_procs(&px_rt.table, px_rt.btl_peers);
        px_rt.table_valid = false;
    }
    if (px_rt_stage.btl_selected) {
        px_btl_base_finalize(); /* also closes the framework */
        px_rt_stage.btl_selected = px_rt_stage.btl_open = false;
    } else if (px_rt_stage.btl_open) {
        px_mca_framework_close(&px_btl_base_framework);
        px_rt_stage.btl_open = false;
    }
    if (px_rt_stage.pml) {
        px_pml_finalize();
        px_rt_stage.pml = false;
    }
    px_rt_fail_unsubscribe_all(); /* a transport may report until it is gone */
    px_rt_procs_free();
    if (px_rt_stage.boot) {
        px_boot_base_close();
        px_rt_stage.boot = false;
    }
    px_progress_finalize();
    if (px_rt_stage.var_init) {
        px_mca_var_finalize();
        px_rt_stage.var_init = false;
    }
    px_rt.initialized = false;
}

int px_finalize(void)
{
    if (!px_rt.initialized) {
        px_show_error("px_finalize: Plexus is not initialised");
        return PX_ERR_NOT_INITIALIZED;
    }
    int rc = PX_SUCCESS;
    /* This process's names first (within registry_timeout), so nobody opens
     * a name whose owner is going; then the heartbeat thread stops. */
    px_name_finalize();
    /* Nobody tears down a transport a peer still uses. When the barrier
     * fails (a failed peer, a timeout), this rank has still taken part in
     * every round it could (px_barrier), so no healthy rank waits for it, and
     * it goes on alone: no boot fence, which the other ranks would not enter. */
    if (px_rt.size > 1)
        rc = px_barrier();
    bool took = px_rt_api_lock(); /* no engine thread drives the transports from here on */
    px_rt_defer_drain();          /* fine mode: what progress queued for the API lock's holder */
    if (px_rt_stage.coll) {
        px_rt_coll_finalize(); /* groups, their posted receives, the coll framework */
        px_rt_stage.coll = false;
    }
    px_xfer_finalize();
    px_pml_dyn_finalize(); /* dynamic peers and the listener, before their transports go */
    px_pml_quiesce();
    px_rt.initialized = false;
    px_rt_teardown();
    px_rt_api_unlock(took);
#if PX_ENABLE_DEBUG
    /* Debug builds: list every object still alive, with where it was made. */
    if (px_class_finalize() > 0 && rc == PX_SUCCESS)
        px_show_warning("px_finalize: objects were still alive (listed above)");
#endif
    return rc;
}

static const char *thread_level_name(int level)
{
    static const char *const names[] = {"PX_THREAD_SINGLE", "PX_THREAD_FUNNELED",
                                        "PX_THREAD_SERIALIZED", "PX_THREAD_MULTIPLE"};
    return level >= PX_THREAD_SINGLE && level <= PX_THREAD_MULTIPLE ? names[level] : "?";
}

/* runtime_thread_locks=auto: the CPUs this process has to itself. A mask
 * narrower than the machine is taken as the process's own (a launcher bound
 * it: pxrun --bind-to core gives each rank its cores); an unbound process
 * shares the machine with the job's other ranks on this host. Test hook
 * PX_RT_TEST_CPUS=N (docs/testing.md): N instead. */
static int own_cpus(void)
{
    const char *hook = getenv("PX_RT_TEST_CPUS");
    if (hook && *hook) {
        char *end;
        long n = strtol(hook, &end, 10);
        if ('\0' == *end && n >= 1 && n <= 1 << 20)
            return (int)n;
        px_show_error("PX_RT_TEST_CPUS=%s (a test hook, docs/testing.md): expected a number of "
                      "CPUs from 1; ignored",
                      hook);
    }
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof(set), &set) != 0 || online < 1)
        return 1;
    int mask = CPU_COUNT(&set), nlocal = 0;
    if (mask < online)
        return mask;
    for (int r = 0; r < px_rt.size; ++r)
        nlocal += (px_rt.procs[r].locality & PX_PROC_LOCAL_HOST) ? 1 : 0;
    return (int)(online / (nlocal > 1 ? nlocal : 1));
}

int px_init_thread(int required, int *provided)
{
    if (required < PX_THREAD_SINGLE || required > PX_THREAD_MULTIPLE) {
        px_show_error("px_init_thread: required thread level %d is invalid (valid: "
                      "PX_THREAD_SINGLE %d, PX_THREAD_FUNNELED %d, PX_THREAD_SERIALIZED %d, "
                      "PX_THREAD_MULTIPLE %d)",
                      required, PX_THREAD_SINGLE, PX_THREAD_FUNNELED, PX_THREAD_SERIALIZED,
                      PX_THREAD_MULTIPLE);
        return PX_ERR_BAD_PARAM;
    }
    if (NULL == provided) {
        px_show_error("px_init_thread: provided is NULL (it receives the level given)");
        return PX_ERR_BAD_PARAM;
    }
    int rc = px_init(NULL, NULL);
    if (rc != PX_SUCCESS)
        return rc;
    /* The build always has threads; every transport runs threaded, those that
     * do not say they are thread-safe serialized (today by the API lock,
     * below; docs/threads.md), so only runtime_thread_max lowers the level. */
    int level = required < px_rt.thread_max ? required : px_rt.thread_max;
    if (PX_THREAD_MULTIPLE == level && (rc = px_xfer_enable_threads()) != PX_SUCCESS) {
        px_show_error("px_init_thread: turning on the API lock failed: %s", px_strerror(rc));
        px_finalize();
        return rc;
    }
    /* runtime_thread_locks=api: transports that are not thread-safe are
     * serialized by the API lock, under which every transport call at
     * MULTIPLE is made, so the BTL base's lock per module would be a second
     * uncontended mutex per call for nothing. fine: point-to-point calls run
     * without the API lock, so the base's lock per module serializes each
     * transport that is not thread-safe, and a matching lock the queues
     * (docs/threads.md). */
    if (PX_THREAD_MULTIPLE == level && PX_RT_THREAD_LOCKS_AUTO == px_rt.thread_locks) {
        /* auto: the API lock while one thread calls (a lone thread's cheapest),
         * fine from a second thread on when two of them can run at once. */
        px_pml_threads_auto(own_cpus());
    }
    if (PX_THREAD_MULTIPLE == level && PX_RT_THREAD_LOCKS_FINE == px_rt.thread_locks &&
        (rc = px_pml_threads_fine()) != PX_SUCCESS) {
        px_show_error("px_init_thread: turning on the fine-grained locks "
                      "(runtime_thread_locks=fine) failed: %s",
                      px_strerror(rc));
        px_finalize();
        return rc;
    }
    if (level < required && px_rt.verbose > 0)
        px_output(px_rt.output, "px_init_thread: %s asked, %s given (runtime_thread_max)",
                  thread_level_name(required), thread_level_name(level));
    px_rt.thread_level = level;
    *provided = level;
    return PX_SUCCESS;
}

int px_query_thread(int *provided)
{
    if (NULL == provided)
        return PX_ERR_BAD_PARAM;
    if (!px_rt.initialized) {
        px_show_error("px_query_thread: called before px_init (or after px_finalize)");
        return PX_ERR_NOT_INITIALIZED;
    }
    *provided = px_rt.thread_level;
    return PX_SUCCESS;
}

int px_initialized(void)
{
    return px_rt.initialized ? 1 : 0;
}

int px_rank(void)
{
    return px_rt.initialized ? px_rt.rank : PX_ERR_NOT_INITIALIZED;
}

int px_size(void)
{
    return px_rt.initialized ? px_rt.size : PX_ERR_NOT_INITIALIZED;
}

int px_rt_tool_peer_btl(int peer, px_btl_module_t **btl, px_btl_endpoint_t **ep)
{
    if (!px_rt.initialized)
        return PX_ERR_NOT_INITIALIZED;
    if (peer < 0 || peer >= px_rt.size || !btl || !ep)
        return PX_ERR_BAD_PARAM;
    *btl = px_rt.peers[peer].eager_btl;
    *ep = px_rt.peers[peer].eager_ep;
    return *btl ? PX_SUCCESS : PX_ERR_UNREACH;
}

const px_btl_base_table_t *px_rt_tool_btl_table(void)
{
    return px_rt.initialized && px_rt.table_valid ? &px_rt.table : NULL;
}

size_t px_rt_tool_eager_data(int peer)
{
    if (!px_rt.initialized || peer < 0 || peer >= px_rt.size)
        return 0;
    return px_rt.peers[peer].eager_data;
}

static int rt_barrier(void);
int px_barrier(void)
{
    PX_RT_API_CALL(rt_barrier());
}

static int rt_barrier(void)
{
    if (!px_rt.initialized)
        return PX_ERR_NOT_INITIALIZED;
    /* Dissemination: round k signals rank+2^k and waits for rank-2^k. A
     * failed round does not end the barrier: the later rounds still run, so
     * the ranks that expect this one's signal get it; a peer this process
     * failed itself (its transport still works) is still signalled, and a
     * receive from a failed peer fails at once. The first error is returned. */
    const char *who = px_rt_tag_name(PX_RT_TAG_BARRIER);
    int first = PX_SUCCESS;
    for (int k = 1; k < px_rt.size; k <<= 1) {
        int to = (px_rt.rank + k) % px_rt.size;
        int from = (px_rt.rank - k + px_rt.size) % px_rt.size;
        px_request_t *sr = NULL, *rr = NULL;
        int r0 = px_pml_irecv(NULL, 0, from, PX_RT_TAG_BARRIER, &rr);
        int r1 = px_pml_isend_failed_ok(NULL, 0, to, PX_RT_TAG_BARRIER, &sr);
        if (PX_SUCCESS == r1)
            r1 = px_pml_wait(&sr, NULL, who);
        int r2 = PX_SUCCESS == r0 ? px_pml_wait(&rr, NULL, who) : r0;
        if (PX_SUCCESS == r1 && px_rt.peers[to].failed)
            r1 = px_rt.peers[to].failed;
        if (PX_SUCCESS == first)
            first = r2 != PX_SUCCESS ? r2 : r1;
    }
    return first;
}

const char *px_transport_name(int peer)
{
    px_rt_peer_t *p = px_rt.initialized ? px_rt_peer_find(peer) : NULL; /* a rank or a peer id */
    if (NULL == p || NULL == p->btl)
        return NULL;
    const px_btl_module_t *m = p->btl->eager[0].module;
    return m->btl_component ? m->btl_component->base.component_name : "?";
}

void px_abort(int code, const char *msg)
{
    if (px_boot && px_boot->abort)
        px_boot->abort(code, msg ? msg : "px_abort called");
    fprintf(stderr, "plexus: px_abort(%d): %s\n", code, msg ? msg : "");
    fflush(stderr);
    exit(code ? code : 1);
}
