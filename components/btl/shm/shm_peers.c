/*
 * shm_peers.c: btl/shm's add_procs and del_procs: attach each same-host
 * peer's segment (checking its job key), set up the endpoint's fast boxes
 * and queue, and unlink the segment files once every peer has attached; and
 * a peer's end: cutting its connection over corrupt shared memory, and
 * noticing (from progress) a peer whose process ended.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

/* ------------------------------------------------------------ peers */

const char *px_btl_shm_modex_check(const void *blob, size_t len, int idx, const char *dir,
                                   px_btl_shm_modex_t *out)
{
    if (NULL == blob || len != sizeof *out)
        return "its length is not that of a btl/shm modex entry";
    memcpy(out, blob, sizeof *out);
    out->path[sizeof out->path - 1] = '\0';
    if (out->local_index != idx)
        return "it names another local index than the one boot gives its rank";
    if (out->pid <= 0)
        return "its process id is not positive";
    if (out->size < 4096 || out->size > ((uint64_t)1 << 47))
        return "its segment size is out of range";
    /* The segment is a file of this job's folder, not any file this user owns. */
    size_t dl = strlen(dir);
    const char *name = out->path + dl + 1;
    if (strncmp(out->path, dir, dl) != 0 || out->path[dl] != '/' || !*name || *name == '.' ||
        strchr(name, '/'))
        return "its segment path is not a file of this job's segment folder";
    return NULL;
}

int px_btl_shm_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                         const char **reasons)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    bool probed = false;
    for (size_t i = 0; i < nprocs; i++) {
        px_proc_t *p = procs[i];
        if (p->locality & PX_PROC_LOCAL_SELF) {
            if (reasons)
                reasons[i] = "self (the calling process is served by btl/self)";
            continue;
        }
        if (s->dyn_only) {
            if (reasons)
                reasons[i] = "no other rank of the job shares this host (btl/shm serves dynamic "
                             "peers only)";
            continue;
        }
        if (!(p->locality & PX_PROC_LOCAL_HOST) || p->rank < 0 || p->rank >= px_boot->size ||
            s->local_index[p->rank] < 0) {
            if (reasons)
                reasons[i] = "on another host";
            continue;
        }
        int idx = s->local_index[p->rank];
        if (s->by_idx[idx]) { /* already known */
            endpoints[i] = s->by_idx[idx];
            px_bitmap_set_bit(reachable, (int)i);
            continue;
        }
        void *blob = NULL;
        size_t mlen = 0;
        int rc = px_boot_modex_recv(&px_btl_shm_component.base, p->rank, &blob, &mlen);
        px_btl_shm_modex_t *mx = malloc(sizeof *mx);
        if (!mx) {
            free(blob);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        const char *bad = rc != PX_SUCCESS ? "it is missing"
                                           : px_btl_shm_modex_check(blob, mlen, idx, s->dir, mx);
        free(blob);
        if (bad) {
            if (rc == PX_SUCCESS)
                px_show_error("btl shm: rank %d's modex entry (%zu bytes) is refused: %s (its "
                              "segment '%.255s', this job's folder %s: a rank of another job, or "
                              "with another btl_shm_backing_dir?)",
                              p->rank, mlen, bad, mlen == sizeof *mx ? mx->path : "?", s->dir);
            if (reasons)
                reasons[i] = "its shm modex entry is missing or malformed";
            free(mx);
            continue;
        }
        char *base;
        int lockfd = -1;
        px_btl_shm_geom_t geom = {p->rank, s->my_rank, s->nlocal, s->fbox_size};
        rc = px_btl_shm_segment_attach(mx->path, mx->size, px_boot->jobid, mx->key, &geom, &base,
                                       &lockfd);
        if (rc != PX_SUCCESS) {
            if (reasons)
                reasons[i] = "its segment could not be attached (see the error above)";
            free(mx);
            continue;
        }
        px_btl_endpoint_t *ep = calloc(1, sizeof *ep);
        if (!ep) {
            munmap(base, mx->size);
            if (lockfd >= 0)
                close(lockfd);
            free(mx);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        ep->lockfd = lockfd;
        if (lockfd < 0)
            PX_OUTPUT_VERBOSE(1, 0,
                              "btl shm: rank %d's segment carries no liveness lock (flock refused "
                              "in %s): its death will not be noticed by btl/shm",
                              p->rank, mx->path);
        ep->rank = p->rank;
        ep->idx = idx;
        ep->pid = mx->pid;
        ep->seg = base;
        ep->seg_size = mx->size;
        ep->fbs = s->fbox_size;
        ep->fb_max = s->fbox_max_send;
        ep->fb_stream_max = s->fbox_stream_max;
        ep->fb_out = base + px_btl_shm_off_fbox(s->nlocal, s->fbox_size, s->my_idx);
        ep->fb_zeroed = s->fbox_size; /* a new ring is all zero */
        /* Rings larger than 64 KiB are faulted in ahead of use: at once
         * (setup: our ring there; its owner faulted in its side at init),
         * or a chunk at a time during the first pass (lazy, shm_module.c). */
        ep->fb_out_pop = ep->fb_in_pop = UINT64_MAX;
        if (s->fbox_size > PX_BTL_SHM_FBOX_AUTO_MIN && s->fault_in == PX_BTL_SHM_FAULT_SETUP)
            px_btl_shm_populate(ep->fb_out, s->fbox_size);
        else if (s->fbox_size > PX_BTL_SHM_FBOX_AUTO_MIN && s->fault_in == PX_BTL_SHM_FAULT_LAZY)
            ep->fb_out_pop = ep->fb_in_pop = 0;
        ep->fb_out_ack = (_Atomic uint64_t *)(base + px_btl_shm_off_ack(s->my_idx));
        ep->fifo = (px_btl_shm_fifo_t *)(base + px_btl_shm_off_fifo());
        ep->fb_in = s->seg + px_btl_shm_off_fbox(s->nlocal, s->fbox_size, idx);
        ep->fb_in_ack = (_Atomic uint64_t *)(s->seg + px_btl_shm_off_ack(idx));
        s->bases[idx] = base;
        s->sizes[idx] = mx->size;
        s->by_idx[idx] = ep;
        s->active[s->nactive++] = ep;
        px_btl_shm_seg_hdr_t *h = (px_btl_shm_seg_hdr_t *)base;
        uint32_t n = atomic_fetch_add_explicit(&h->attached, 1, memory_order_acq_rel) + 1;
        if (n == h->nlocal - 1) {
            /* Every peer has it mapped: the name is no longer needed. The
             * folder stays (its name is never given up while the job runs). */
            unlink(mx->path);
        }
        if (!probed && (btl->btl_flags & (PX_BTL_FLAGS_GET | PX_BTL_FLAGS_XFER_RDMA))) {
            probed = true;
            uint64_t magic = 0;
            struct iovec l = {&magic, sizeof magic}, r = {(void *)(uintptr_t)mx->vaddr, 8};
            /* PX_BTL_SHM_TEST_DENY_CMA: the test suite's stand-in for a kernel
             * that refuses (root passes the probe here). */
            const char *deny = getenv("PX_BTL_SHM_TEST_DENY_CMA");
            ssize_t got = deny && *deny == '1' ? (errno = EPERM, -1)
                                               : process_vm_readv(ep->pid, &l, 1, &r, 1, 0);
            if (got != 8 || magic != PX_BTL_SHM_MAGIC) {
                int e = got < 0 ? errno : EIO;
                btl->btl_flags &=
                    ~(PX_BTL_FLAGS_RDMA | PX_BTL_FLAGS_SINGLE_COPY | PX_BTL_FLAGS_XFER_RDMA);
                btl->btl_get = NULL;
                btl->btl_put = NULL;
                if (s->single_copy == PX_BTL_SHM_SC_CMA)
                    px_show_warning("btl shm: btl_shm_single_copy=cma but process_vm_readv from "
                                    "rank %d is refused (%s; ptrace rules or a container); "
                                    "using pipelined copies",
                                    p->rank, strerror(e));
                PX_OUTPUT_VERBOSE(1, 0,
                                  "btl shm: process_vm_readv from rank %d is refused (%s): "
                                  "one-sided transfers of registered memory are staged",
                                  p->rank, strerror(e));
            }
        }
        free(mx);
        endpoints[i] = ep;
        px_bitmap_set_bit(reachable, (int)i);
    }
    return PX_SUCCESS;
}

int px_btl_shm_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                         px_btl_endpoint_t **endpoints)
{
    (void)btl;
    (void)nprocs;
    (void)procs;
    (void)endpoints;
    return PX_SUCCESS; /* endpoints go away in finalize */
}

/* ------------------------------------------------------------ a peer's end */

/* End the connection to `ep` because of something found in shared memory:
 * stop reading anything it writes, fail what waits on it, say what and
 * where (`blamed`: it wrote it). Never returns to the corrupt data. */
PX_NOINLINE void px_btl_shm_cut(px_btl_endpoint_t *ep, bool blamed, const char *fmt, ...)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (ep->corrupt)
        return;
    char what[256], text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    ep->corrupt = true;
    ep->gone = true;
    for (int i = 0; i < s->nactive; i++)
        if (s->active[i] == ep) { /* its fast box is no longer polled */
            s->active[i] = s->active[--s->nactive];
            break;
        }
    snprintf(text, sizeof text,
             "btl/shm: local peer rank %d (pid %d) %s: %s; its connection is closed", ep->rank,
             (int)ep->pid,
             blamed ? "wrote corrupt data into shared memory" : "can no longer be heard", what);
    if (px_btl_shm_module.error_cb)
        px_btl_shm_module.error_cb(&px_btl_shm_module.super, ep, ep->rank, PX_ERR_COMM, text);
    else
        px_show_error("%s", text);
}

/* Who wrote a bad entry of our queue: the process whose segment it names,
 * or, with a single peer, that peer (nobody else can write there); NULL
 * when it cannot be told. */
px_btl_endpoint_t *px_btl_shm_queue_culprit(uint64_t rel)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    uint64_t idx = rel >> 48;
    if (idx < (uint64_t)s->nlocal && (int)idx != s->my_idx && s->by_idx[idx])
        return s->by_idx[idx];
    return s->nlocal == 2 ? s->by_idx[1 - s->my_idx] : NULL;
}

/* The receive queue itself holds a bad pointer: nothing behind it can be
 * reached, so it is not read again and every peer's connection ends (their
 * fragments would otherwise wait forever); the writer is blamed when it can
 * be told. */
PX_NOINLINE void px_btl_shm_queue_corrupt(uint64_t rel, const char *where)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    s->queue_broken = true;
    uint64_t idx = rel >> 48;
    px_btl_endpoint_t *named = px_btl_shm_queue_culprit(rel);
    if (named)
        px_btl_shm_corrupt(named,
                           "%s 0x%016llx in this process's receive queue names no fragment "
                           "(local index %llu of %d, offset %llu; fragment heaps start at %zu)",
                           where, (unsigned long long)rel, (unsigned long long)idx, s->nlocal,
                           (unsigned long long)(rel & 0xffffffffffffULL), s->heap_off);
    for (int i = 0; i < s->nlocal; i++)
        if (s->by_idx[i] && !s->by_idx[i]->corrupt)
            px_btl_shm_cut(s->by_idx[i], false,
                           "%s 0x%016llx in this process's receive queue names no fragment "
                           "(written by %s): the queue can no longer be read",
                           where, (unsigned long long)rel,
                           named ? "another local peer" : "an unknown local peer");
}

/* Every so many quiet progress calls (PX_BTL_SHM_QUIET_POLLS, shm_module.c)
 * progress looks at the clock; scan the peers' locks at most every
 * PX_BTL_SHM_CHECK_NS. A scan is one flock(LOCK_SH|LOCK_NB) per live peer
 * (about a microsecond each). */
#define PX_BTL_SHM_CHECK_NS (5 * 1000 * 1000ULL)

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* A peer whose segment lock is free has ended. One that tore btl/shm down
 * (px_finalize, or a failed px_init) left in order; any other is reported
 * once to the runtime's error callback, which fails what waits on it. */
PX_NOINLINE void px_btl_shm_check_peers(px_btl_shm_state_t *s)
{
    uint64_t t = mono_ns();
    if (t < s->next_check_ns)
        return;
    s->next_check_ns = t + PX_BTL_SHM_CHECK_NS;
    px_btl_shm_dyn_check_peers();
    for (int i = 0; i < s->nactive; i++) {
        px_btl_endpoint_t *ep = s->active[i];
        if (ep->gone || !px_btl_shm_peer_gone(ep->lockfd))
            continue;
        ep->gone = true;
        px_btl_shm_seg_hdr_t *h = (px_btl_shm_seg_hdr_t *)ep->seg;
        if (atomic_load_explicit(&h->departed, memory_order_acquire)) {
            PX_OUTPUT_VERBOSE(10, 0, "btl shm: local peer rank %d (pid %d) finalized and left",
                              ep->rank, (int)ep->pid);
            continue;
        }
        char text[300];
        snprintf(text, sizeof text,
                 "btl/shm: local peer rank %d (pid %d) is gone: its process ended without "
                 "px_finalize (exited or was killed; its lock on its shared-memory segment was "
                 "released)",
                 ep->rank, (int)ep->pid);
        px_btl_shm_xfer_forget(ep->rank); /* its shareable memory will never be freed */
        if (px_btl_shm_module.error_cb)
            px_btl_shm_module.error_cb(&px_btl_shm_module.super, ep, ep->rank, PX_ERR_PEER_FAILED,
                                       text);
        else
            px_show_error("%s", text);
    }
}
