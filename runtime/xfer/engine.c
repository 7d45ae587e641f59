/*
 * engine.c: the transfer engine's variables, its px_init/px_finalize hooks,
 * a peer's failure (from the runtime) and the thread's batch of one. The
 * rest of runtime/xfer/ is listed in xfer.h; docs/transfer.md describes the
 * whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "core/util/progress.h"
#include "frameworks/boot/boot.h"
#include "runtime/peer/peer.h"
#include "runtime/xfer/xfer.h"

px_xfer_engine_t px_xfer = {
    .inbox_lock = PTHREAD_MUTEX_INITIALIZER,
    .chunk_size = 1 << 20,
    .stage_size = 64 * 1024,
    .stage_count = 32,
    .stage_below = {PX_XFER_STAGE_AUTO_READ, PX_XFER_STAGE_AUTO_WRITE},
    .stage_auto = true,
};

/* ------------------------------------------------------------ variables */

#define PX_XFER_AT(field) .offset = PX_MCA_VAR_AT(px_xfer_engine_t, field)
static const px_mca_var_field_t px_xfer_vars[] = {
    {.name = "priority",
     .help = "Order in which one-sided transfers choose transports, best first: names of BTL "
             "components separated by commas, '+' joining names of equal priority, whose "
             "requests are striped over both (e.g. \"ofi\", \"shm+ofi,verbs\"); transports not "
             "named come after, by exclusivity. Empty: by exclusivity (self, shm, verbs, ofi)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "",
     PX_XFER_AT(priority)},
    {.name = "chunk_size",
     .help = "Bytes a one-sided request moves per transport operation; a request larger than "
             "this is striped over every rail of the best priority, weighted by their bandwidth",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "1M",
     .min = "4k",
     .max = "1G",
     PX_XFER_AT(chunk_size)},
    {.name = "stage_size",
     .help = "Bytes of each chunk of the staged path (one-sided transfers over active "
             "messages when no transport has a direct path); capped by the transport's "
             "fragment size",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "64k",
     .min = "256",
     .max = "16M",
     PX_XFER_AT(stage_size)},
    {.name = "stage_count",
     .help = "Credits of the staged path in this process: how many staged chunks may be in "
             "flight at once",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "32",
     .min = "1",
     .max = "4096",
     PX_XFER_AT(stage_count)},
    {.name = "stage_below",
     .help = "Requests smaller than this (bytes) that have no mapped path go by the staged path "
             "(the target's CPU copies, when it next progresses) rather than a transport's "
             "put/get: a round trip of messages beats a system call (CMA) for small requests, "
             "but only while the target calls into Plexus. \"auto\" (the default): writes "
             "smaller than " PX_XFER_STAGE_AUTO_WRITE_TEXT
             " and reads smaller than " PX_XFER_STAGE_AUTO_READ_TEXT
             " are staged when their path would be a same-host "
             "put/get that addresses the peer's memory directly (CMA: a system call per "
             "request); put/get over transports that register memory (ofi, verbs) is kept. "
             "A byte count (0..16M, k/M suffixes) applies to every put/get path; 0: never stage",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "auto",
     PX_XFER_AT(stage_below_text)},
    {.name = "verbose",
     .help = "Verbosity of the transfer engine: 1 setup (transports and priorities), 10 every "
             "request with the path, transports and bytes per rail it took",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "100",
     PX_XFER_AT(verbose)},
    {.name = NULL},
};
#undef PX_XFER_AT

/* xfer_stage_below as text: "auto", or a byte count of 0..16M with an
 * optional k/M suffix. Returns false for anything else. */
bool px_xfer_parse_stage_below(const char *text, bool *is_auto, size_t below[2])
{
    if (NULL == text)
        return false;
    while (' ' == *text || '\t' == *text)
        text++;
    size_t n = strlen(text);
    while (n && (' ' == text[n - 1] || '\t' == text[n - 1]))
        n--;
    if (4 == n && 0 == strncasecmp(text, "auto", 4)) {
        *is_auto = true;
        below[PX_XFER_READ] = PX_XFER_STAGE_AUTO_READ;
        below[PX_XFER_WRITE] = PX_XFER_STAGE_AUTO_WRITE;
        return true;
    }
    if (0 == n || n > 20 || text[0] < '0' || text[0] > '9')
        return false;
    char buf[24], *end;
    memcpy(buf, text, n);
    buf[n] = '\0';
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno)
        return false;
    unsigned shift = 0;
    if ('k' == *end || 'K' == *end)
        shift = 10, end++;
    else if ('m' == *end || 'M' == *end)
        shift = 20, end++;
    if (*end || v > (16ull << 20) >> shift)
        return false;
    *is_auto = false;
    below[PX_XFER_READ] = below[PX_XFER_WRITE] = (size_t)(v << shift);
    return true;
}

int px_xfer_register_params(void)
{
    int rc = px_mca_var_register_table("xfer", NULL, px_xfer_vars, -1, &px_xfer);
    const char *t = px_xfer.stage_below_text;
    if (!px_xfer_parse_stage_below(t, &px_xfer.stage_auto, px_xfer.stage_below)) {
        px_show_error("xfer_stage_below: \"%s\" is not accepted: the variable takes \"auto\" "
                      "or a byte count from 0 to 16M (suffixes k and M); using \"auto\"",
                      t ? t : "(null)");
        px_xfer.stage_auto = true;
        px_xfer.stage_below[PX_XFER_READ] = PX_XFER_STAGE_AUTO_READ;
        px_xfer.stage_below[PX_XFER_WRITE] = PX_XFER_STAGE_AUTO_WRITE;
        if (PX_SUCCESS == rc)
            rc = PX_ERR_BAD_PARAM;
    }
    return rc;
}

/* ------------------------------------------------------------ init */

/* Rank modules by xfer_priority: each group (comma-separated) gets one
 * priority above every exclusivity, in order; names not listed keep their
 * exclusivity. */
static void px_xfer_apply_priority(void)
{
    for (int i = 0; i < px_xfer.nmods; ++i)
        px_xfer.mods[i].priority = (long)px_xfer.mods[i].btl->btl_exclusivity;
    const char *spec = px_xfer.priority;
    if (NULL == spec || '\0' == *spec)
        return;
    char *copy = strdup(spec), *save = NULL;
    if (!copy)
        return;
    long group = 0;
    for (char *g = strtok_r(copy, ",", &save); g; g = strtok_r(NULL, ",", &save), ++group) {
        char *save2 = NULL;
        for (char *name = strtok_r(g, "+", &save2); name; name = strtok_r(NULL, "+", &save2)) {
            while (*name == ' ')
                name++;
            size_t n = strlen(name);
            while (n && name[n - 1] == ' ')
                name[--n] = '\0';
            bool found = false;
            for (int i = 0; i < px_xfer.nmods; ++i) {
                if (0 == strcmp(px_xfer.mods[i].name, name)) {
                    px_xfer.mods[i].priority = (1L << 40) - group;
                    found = true;
                }
            }
            if (!found)
                PX_OUTPUT_VERBOSE(1, px_xfer.output,
                                  "xfer_priority names \"%s\", which is not a transport of this "
                                  "process (transports: see btl_base_verbose)",
                                  name);
        }
    }
    free(copy);
}

/* Every message of the engine is attributed by the transport that carried
 * it: a rank's by its rank, a dynamic peer's (src_rank PX_BTL_RANK_DYNAMIC)
 * by the endpoint it came through (px_rt_am_source), never by its header.
 * Handlers see the sender's rank or peer id in src_rank; a message from
 * nobody this process knows (a peer already disconnected, a forged sender)
 * is dropped before a handler looks anything up by it. */
static PX_COLD void xfer_am_foreign(const px_btl_receive_descriptor_t *d, const char *what)
{
    PX_OUTPUT_VERBOSE(1, px_xfer.output,
                      "a transfer-engine message (%s) from sender %d, neither a rank of this job "
                      "nor a connected peer (disconnected already?); dropped",
                      what, d->src_rank);
}
#define XFER_AM_GUARD(fn)                                                                          \
    static void guard_##fn(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)             \
    {                                                                                              \
        if (PX_LIKELY(d->src_rank >= 0 && d->src_rank < px_xfer.npeers)) {                         \
            fn(btl, d);                                                                            \
            return;                                                                                \
        }                                                                                          \
        int src = d->src_rank < 0 ? px_rt_am_source(d) : -2;                                       \
        if (src < PX_RT_DYN_BASE) {                                                                \
            xfer_am_foreign(d, #fn);                                                               \
            return;                                                                                \
        }                                                                                          \
        px_btl_receive_descriptor_t dd = *d;                                                       \
        dd.src_rank = src;                                                                         \
        fn(btl, &dd);                                                                              \
    }
XFER_AM_GUARD(px_xfer_am_notify)
XFER_AM_GUARD(px_xfer_am_write)
XFER_AM_GUARD(px_xfer_am_wack)
XFER_AM_GUARD(px_xfer_am_read)
XFER_AM_GUARD(px_xfer_am_rdata)
XFER_AM_GUARD(px_xfer_am_revoke)
XFER_AM_GUARD(px_xfer_am_rvack)

int px_xfer_init(void)
{
    px_xfer.output = px_output_open("xfer", px_xfer.verbose);
    px_mpsc_init(&px_xfer.queue);
    atomic_store(&px_xfer.work, 0);
    atomic_store(&px_xfer.inbox_count, 0);
    px_xfer.shared = false;
    px_rt_api_shared = false;
    PX_OBJ_CONSTRUCT(&px_xfer.runq, px_list_t);
    PX_OBJ_CONSTRUCT(&px_xfer.regions_list, px_list_t);
    PX_OBJ_CONSTRUCT(&px_xfer.remotes, px_list_t);
    PX_OBJ_CONSTRUCT(&px_xfer.inbox, px_list_t);
    PX_OBJ_CONSTRUCT(&px_xfer.jobs, px_list_t);
    px_xfer.in_work = false;
    px_xfer.npeers = px_rt.size;
    px_xfer.peers = calloc((size_t)px_rt.size, sizeof *px_xfer.peers);
    if (!px_xfer.peers)
        return PX_ERR_OUT_OF_RESOURCE;
    const char *jobid = px_boot && px_boot->jobid ? px_boot->jobid : "";
    px_xfer.job_hash = px_xfer_hash64(jobid, strlen(jobid), 1469598103934665603ULL);
    if (getrandom(&px_xfer.next_id, sizeof px_xfer.next_id, 0) != sizeof px_xfer.next_id)
        px_xfer.next_id = (uint64_t)getpid() << 24;
    px_xfer.next_id = (px_xfer.next_id & ~0xffffffffULL) | 1;
    PX_OBJ_CONSTRUCT(&px_xfer.regions, px_hash_table_t);
    px_hash_table_init(&px_xfer.regions, 64);
    /* The engine's view of each module, in the runtime's table order. */
    const px_btl_base_table_t *t = &px_rt.table;
    px_xfer.nmods = t->nmodules < PX_XFER_MAX_MODULES ? t->nmodules : PX_XFER_MAX_MODULES;
    for (int i = 0; i < px_xfer.nmods; ++i) {
        px_xfer_mod_t *m = &px_xfer.mods[i];
        memset(m, 0, sizeof *m);
        m->btl = t->modules[i];
        const char *name = m->btl->btl_component ? m->btl->btl_component->base.component_name : "?";
        snprintf(m->name, sizeof m->name, "%s", name);
        snprintf(m->label_map, sizeof m->label_map, "%s:map", name);
        snprintf(m->label_put, sizeof m->label_put, "%s:put", name);
        snprintf(m->label_get, sizeof m->label_get, "%s:get", name);
        snprintf(m->label_stage, sizeof m->label_stage, "stage:%s", name);
        m->comp_id = px_xfer_name_id(m->name);
        for (int j = 0; j < i; ++j)
            m->comp_index += px_xfer.mods[j].comp_id == m->comp_id;
        m->put = px_btl_base_xfer_can_put(m->btl);
        m->get = px_btl_base_xfer_can_get(m->btl);
        m->reg = m->btl->btl_register_mem != NULL;
        m->hsize = m->reg ? (uint32_t)m->btl->btl_registration_handle_size : 0;
        if (m->hsize > PX_XFER_MAX_HANDLE)
            m->put = m->get = false;
        m->map = px_btl_base_has_mem_map(m->btl);
        for (size_t r = 0; r < t->nprocs; ++r)
            if ((int)r != px_rt.rank && px_bitmap_is_set_bit(&t->reach[i].reachable, (int)r))
                m->reaches_other = true;
        /* A network module that serves dynamic peers reaches other processes
         * once they connect: regions are registered with it (a singleton's
         * ofi, say). */
        if (m->reg && (m->put || m->get) && px_btl_base_dyn_capable(m->btl))
            m->reaches_other = true;
    }
    px_xfer_apply_priority();
    px_xfer.vtab_mod = -1;
    px_xfer.vtab_tried = false;
    px_xfer.dyn = NULL;
    px_xfer.ndyn = px_xfer.dyn_cap = 0;
    for (int r = 0; r < px_rt.size; ++r) {
        px_xfer.peers[r].id = r;
        PX_OBJ_CONSTRUCT(&px_xfer.peers[r].alist, px_list_t);
        PX_OBJ_CONSTRUCT(&px_xfer.peers[r].held, px_list_t);
        PX_OBJ_CONSTRUCT(&px_xfer.peers[r].notes, px_list_t);
        px_xfer.peers[r].vtab_mod = -1;
        px_xfer.peers[r].stage_mod = -1;
        for (int i = 0; i < px_xfer.nmods; ++i)
            if (px_xfer.mods[i].btl == px_rt.peers[r].eager_btl)
                px_xfer.peers[r].stage_mod = i;
    }
    for (int i = 0; i < px_xfer.nmods; ++i) {
        const px_xfer_mod_t *m = &px_xfer.mods[i];
        PX_OUTPUT_VERBOSE(1, px_xfer.output, "transport %s#%u priority %ld:%s%s%s%s%s", m->name,
                          m->comp_index, m->priority, m->map ? " map" : "", m->put ? " put" : "",
                          m->get ? " get" : "", m->reg ? " (registers memory)" : "",
                          m->reaches_other ? "" : " (reaches only this process)");
    }
    px_xfer.pool_free = NULL; /* the staged path's buffers (credits): made on first use */
    px_xfer.pool_owner = NULL;
    px_xfer.pool_count = px_xfer.pool_nfree = 0;
    px_xfer.pool_size = 0;
    px_btl_base_register_am(PX_XFER_AM_NOTIFY, guard_px_xfer_am_notify, NULL);
    px_btl_base_register_am(PX_XFER_AM_WRITE, guard_px_xfer_am_write, NULL);
    px_btl_base_register_am(PX_XFER_AM_WACK, guard_px_xfer_am_wack, NULL);
    px_btl_base_register_am(PX_XFER_AM_READ, guard_px_xfer_am_read, NULL);
    px_btl_base_register_am(PX_XFER_AM_RDATA, guard_px_xfer_am_rdata, NULL);
    px_btl_base_register_am(PX_XFER_AM_REVOKE, guard_px_xfer_am_revoke, NULL);
    px_btl_base_register_am(PX_XFER_AM_RVACK, guard_px_xfer_am_rvack, NULL);
    atomic_store(&px_xfer.cb_registered, false); /* px_xfer_need_progress */
    px_xfer.ready = true;
    return PX_SUCCESS;
}

void px_xfer_finalize(void)
{
    if (!px_xfer.peers)
        return;
    bool took;
    px_xfer_lock_take(&took);
    px_xfer_batch_finalize();
    px_xfer_jobs_finalize();
    px_xfer_stage_finalize();
    px_xfer_remotes_finalize();
    px_xfer_regions_finalize();
    px_xfer_inbox_finalize();
    for (int t = PX_XFER_AM_NOTIFY; t <= PX_XFER_AM_RVACK; ++t)
        px_btl_base_register_am((px_btl_tag_t)t, NULL, NULL);
    if (atomic_load(&px_xfer.cb_registered))
        px_progress_unregister(px_xfer_progress_cb, NULL);
    atomic_store(&px_xfer.cb_registered, false);
    for (int p = 0; p < px_xfer.npeers; ++p) {
        free(px_xfer.peers[p].why);
        free(px_xfer.peers[p].revoked);
        PX_OBJ_DESTRUCT(&px_xfer.peers[p].alist);
        PX_OBJ_DESTRUCT(&px_xfer.peers[p].held);
        PX_OBJ_DESTRUCT(&px_xfer.peers[p].notes);
    }
    free(px_xfer.peers);
    px_xfer.peers = NULL;
    px_xfer.npeers = 0;
    while (px_xfer.ndyn > 0) { /* the remotes went above: every one is unnamed */
        px_xfer_peer_t *p = px_xfer.dyn[px_xfer.ndyn - 1];
        p->released = true;
        p->refs = 0;
        px_xfer_peer_unref(p);
    }
    free(px_xfer.dyn);
    px_xfer.dyn = NULL;
    px_xfer.dyn_cap = 0;
    PX_OBJ_DESTRUCT(&px_xfer.regions);
    PX_OBJ_DESTRUCT(&px_xfer.runq);
    PX_OBJ_DESTRUCT(&px_xfer.regions_list);
    PX_OBJ_DESTRUCT(&px_xfer.remotes);
    PX_OBJ_DESTRUCT(&px_xfer.inbox);
    PX_OBJ_DESTRUCT(&px_xfer.jobs);
    px_xfer.ready = false;
    px_xfer.shared = false;
    px_rt_api_shared = false;
    px_xfer_forget_tl_batch();
    if (px_xfer.output > 0)
        px_output_close(px_xfer.output);
    px_xfer.output = -1;
    px_xfer_lock_drop(took);
}

int px_xfer_enable_threads(void)
{
    if (!px_xfer.ready)
        return px_xfer_fail(PX_ERR_NOT_INITIALIZED, "px_xfer_enable_threads: px_init first");
    px_xfer.shared = true;
    px_rt_api_shared = true;
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ failures */

static void peer_destroy(px_xfer_peer_t *p)
{
    free(p->why);
    free(p->revoked);
    PX_OBJ_DESTRUCT(&p->alist);
    PX_OBJ_DESTRUCT(&p->held);
    PX_OBJ_DESTRUCT(&p->notes);
    free(p);
}

px_xfer_peer_t *px_xfer_peer_dyn(int id, bool make)
{
    if (id < PX_RT_DYN_BASE || !px_xfer.ready)
        return NULL;
    bool took;
    px_xfer_lock_take(&took);
    px_xfer_peer_t *p = NULL;
    for (int i = 0; i < px_xfer.ndyn && !p; ++i)
        if (px_xfer.dyn[i]->id == id)
            p = px_xfer.dyn[i];
    px_rt_dyn_t *d = p || !make ? NULL : px_rt_dyn_find(id);
    if (d && d->peer.btl && !d->peer.failed && !d->gone) {
        p = calloc(1, sizeof *p);
        if (p && px_xfer.ndyn == px_xfer.dyn_cap) {
            int cap = px_xfer.dyn_cap ? 2 * px_xfer.dyn_cap : 8;
            px_xfer_peer_t **n = realloc(px_xfer.dyn, (size_t)cap * sizeof *n);
            if (n) {
                px_xfer.dyn = n;
                px_xfer.dyn_cap = cap;
            }
        }
        if (p && px_xfer.ndyn < px_xfer.dyn_cap) {
            p->id = id;
            p->dynamic = true;
            snprintf(p->name, sizeof p->name, "%s", d->name[0] ? d->name : "peer ?");
            PX_OBJ_CONSTRUCT(&p->alist, px_list_t);
            PX_OBJ_CONSTRUCT(&p->held, px_list_t);
            PX_OBJ_CONSTRUCT(&p->notes, px_list_t);
            p->vtab_mod = -1;
            p->stage_mod = -1;
            for (int i = 0; i < px_xfer.nmods; ++i)
                if (px_xfer.mods[i].btl == d->peer.eager_btl)
                    p->stage_mod = i;
            px_xfer.dyn[px_xfer.ndyn++] = p;
        } else {
            free(p);
            p = NULL;
        }
    }
    px_xfer_lock_drop(took);
    return p;
}

void px_xfer_peer_unref(px_xfer_peer_t *p)
{
    if (!p->dynamic || (p->refs > 0 && --p->refs > 0) || !p->released)
        return;
    for (int i = 0; i < px_xfer.ndyn; ++i)
        if (px_xfer.dyn[i] == p) {
            px_xfer.dyn[i] = px_xfer.dyn[--px_xfer.ndyn];
            break;
        }
    peer_destroy(p);
}

const char *px_xfer_peer_name(int id, char *buf, size_t len)
{
    if (id >= 0 && id < px_xfer.npeers) {
        snprintf(buf, len, "rank %d (host %s)", id, px_xfer_host(id));
        return buf;
    }
    px_xfer_peer_t *p = px_xfer_peer_get(id);
    if (p)
        snprintf(buf, len, "%s", p->name);
    else
        px_rt_peer_name(id, buf, len);
    return buf;
}

/* A dynamic peer is gone: nothing more goes to it (every request on it
 * fails at submission, before a transport endpoint of it is named). Its
 * remotes keep their handles (the application releases them); the regions
 * it revoked are forgotten; its record is freed with its last remote. */
static void peer_release(px_xfer_peer_t *p)
{
    p->released = true;
    free(p->revoked);
    p->revoked = NULL;
    p->nrevoked = p->revoked_cap = 0;
    p->refs++; /* px_xfer_peer_unref drops it and frees p when no remote names it */
    px_xfer_peer_unref(p);
}

int px_xfer_peer_check(px_xfer_peer_t *p)
{
    int failed = atomic_load(&p->failed);
    if (failed || !p->dynamic)
        return failed;
    px_rt_dyn_t *d = px_rt_dyn_find(p->id);
    if (!d || d->gone || !d->conn)
        return failed;
    /* A process that ended loses its memory (the transport's ESRCH) a moment
     * before its descriptors: a refusal waits up to 50 ms for the close. */
    struct pollfd pfd = {.fd = px_peer_conn_fd(d->conn), .events = POLLIN | POLLRDHUP};
    char c;
    if (poll(&pfd, 1, 50) <= 0 || (!(pfd.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) &&
                                   0 != recv(pfd.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT)))
        return failed;
    /* As messaging's watch of the connection would say within a millisecond. */
    px_rt_fail_peer_gone(p->id, PX_ERR_PEER_FAILED,
                         "its connection closed: it disconnected or exited", false);
    return atomic_load(&p->failed);
}

void px_xfer_peer_failed(int rank, int error, const char *why)
{
    if (!px_xfer.ready || rank < 0)
        return;
    bool took;
    px_xfer_lock_take(&took);
    px_xfer_peer_t *p = px_xfer_peer_get(rank);
    if (!p || atomic_load(&p->failed)) {
        if (p && p->dynamic && !p->released)
            peer_release(p);
        px_xfer_lock_drop(took);
        return;
    }
    if (p->dynamic) {
        /* A connected peer whose transport failed is gone (the runtime
         * released its messaging too): its requests fail as a dead peer's. */
        error = PX_ERR_PEER_FAILED;
        char name[300];
        p->why = px_asprintf("%s is gone: %s", px_xfer_peer_name(rank, name, sizeof name),
                             why ? why : "the peer failed");
    } else
        p->why = strdup(why ? why : "the peer failed");
    atomic_store_explicit(&p->failed, error ? error : PX_ERR_PEER_FAILED, memory_order_release);
    px_xfer_batch_peer_failed(p);
    if (p->dynamic)
        peer_release(p);
    px_xfer_lock_drop(took);
}

/* ------------------------------------------------------------ thread batch */

/* px_xfer_write/read use a batch of one per thread, freed when the thread
 * ends (or, for the thread that calls px_finalize, there). */
static _Thread_local px_xfer_batch_t *tl_one;
static pthread_key_t tl_key;
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;

static void tl_batch_destroy(void *b)
{
    px_xfer_batch_t *batch = b;
    if (batch && 0 == px_xfer_batch_pending(batch))
        px_xfer_batch_free(&batch);
}

static void tl_key_make(void)
{
    pthread_key_create(&tl_key, tl_batch_destroy);
}

px_xfer_batch_t *px_xfer_tl_batch(void)
{
    if (tl_one)
        return tl_one;
    pthread_once(&tl_once, tl_key_make);
    if (PX_SUCCESS != px_xfer_batch_alloc(1, &tl_one))
        return NULL;
    pthread_setspecific(tl_key, tl_one);
    return tl_one;
}

void px_xfer_forget_tl_batch(void)
{
    if (tl_one && 0 == px_xfer_batch_pending(tl_one)) {
        pthread_setspecific(tl_key, NULL);
        px_xfer_batch_free(&tl_one);
    }
    tl_one = NULL;
}
