/*
 * shm_rdma.c: btl/shm's single copy (btl_put and btl_get, see shm_module.c)
 * with process_vm_readv / process_vm_writev, and btl_flush.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/base.h"

/* Copy `size` bytes between this process and the peer with
 * process_vm_readv (get) or process_vm_writev (put), looping over short
 * copies; PX_ERR_COMM after saying why (unless `quiet`) when the kernel
 * refuses or a page is missing. */
int px_btl_shm_cma_copy(px_btl_endpoint_t *ep, bool write, void *local_address,
                        uint64_t remote_address, size_t size, bool quiet)
{
    size_t done = 0;
    while (done < size) {
        struct iovec l = {(char *)local_address + done, size - done};
        struct iovec r = {(void *)(uintptr_t)(remote_address + done), size - done};
        ssize_t n = write ? process_vm_writev(ep->pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(ep->pid, &l, 1, &r, 1, 0);
        if (n <= 0) {
            /* No process (its memory already released: it is exiting,
             * before its descriptors close and its pidfd says so): a
             * dynamic peer is reported gone by the next progress call,
             * before the completion of this copy's operation. */
            if (n < 0 && ESRCH == errno && ep->dyn && !ep->gone) {
                ep->exiting = true;
                px_btl_shm_state.dyn_exiting = true;
            }
            if (!quiet)
                px_show_error("btl shm: %s of %zu bytes %s rank %d (pid %d) failed: %s",
                              write ? "process_vm_writev" : "process_vm_readv", size - done,
                              write ? "to" : "from", ep->rank, (int)ep->pid,
                              n < 0 ? strerror(errno) : "EOF");
            return PX_ERR_COMM;
        }
        done += (size_t)n;
    }
    return PX_SUCCESS;
}

/* One copy of `size` bytes (px_btl_shm_cma_copy); the completion callback
 * runs before returning. */
int px_btl_shm_cma(px_btl_module_t *btl, px_btl_endpoint_t *ep, bool write, void *local_address,
                   uint64_t remote_address, px_btl_registration_handle_t *local_handle, size_t size,
                   px_btl_rdma_completion_fn cbfunc, void *cbcontext, void *cbdata)
{
    px_btl_shm_state.cma_calls++;
    int rc = px_btl_shm_cma_copy(ep, write, local_address, remote_address, size, false);
    if (PX_SUCCESS != rc)
        return rc;
    if (cbfunc)
        cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata, PX_SUCCESS);
    return PX_SUCCESS;
}

/* get/put complete before they return; a queued send completes when the
 * peer hands its fragment back, so progress until the fragments to `ep`
 * (NULL: every peer) are back, or their peer is gone. */
int px_btl_shm_flush(px_btl_module_t *btl, px_btl_endpoint_t *ep)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (s->in_progress)
        return PX_ERR_TEMP_OUT_OF_RESOURCE; /* from a callback: progress cannot run here */
    for (;;) {
        bool busy = false, lost = false;
        for (int i = 0; i < s->nlocal; i++) {
            px_btl_endpoint_t *e = s->by_idx ? s->by_idx[i] : NULL;
            if (e && (NULL == ep || e == ep) && e->inflight)
                *(e->gone ? &lost : &busy) = true;
        }
        for (int i = 0; i < s->nsplits; i++) /* a split get completes in progress */
            if (NULL == ep || s->splits[i].ep == ep)
                busy = true;
        for (int i = 0; i < s->nsplit_done; i++) /* ... or its callback runs there */
            if (NULL == ep || s->split_done[i].ep == ep)
                busy = true;
        if (!busy)
            return lost ? PX_ERR_PEER_FAILED : PX_SUCCESS;
        px_btl_shm_progress(btl);
    }
}
