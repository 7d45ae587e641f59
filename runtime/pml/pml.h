/*
 * pml.h: what messaging (runtime/pml/) exports to the layers above it:
 * groups and collectives (runtime/coll/) and px_init (runtime.c). The
 * layers below (the process table) and beside it (the transfer engine) do
 * not include it. Messaging's own shared internals are in pml_internal.h.
 * Not installed.
 */
#ifndef PX_RUNTIME_PML_PML_H
#define PX_RUNTIME_PML_PML_H

#include <stddef.h>
#include "runtime/pml/pml_request.h"

/* ---- lifecycle (px_init, px_finalize) ---- */

/* Messaging's variables (runtime_*) and the progress engine's (progress_*). */
int px_pml_register_params(void);
/* Free lists, AM callbacks, its failure subscription. */
int px_pml_init(void);
void px_pml_peer_setup(px_rt_peer_t *peer, px_btl_base_peer_t *btl);
/* px_finalize, before the transports go: drop what requests still hold. */
void px_pml_quiesce(void);
/* px_finalize, before px_pml_quiesce: release every dynamic peer and close
 * the listener (pml_dyn.c). */
void px_pml_dyn_finalize(void);
int px_pml_finalize(void);
/* px_init_thread at PX_THREAD_MULTIPLE with runtime_thread_locks=fine, with no
 * other thread in Plexus: the BTL base's lock per module on every transport
 * that is not thread-safe, the matching lock, point-to-point calls without
 * the API lock (docs/threads.md). */
int px_pml_threads_fine(void);
/* runtime_thread_locks=auto at PX_THREAD_MULTIPLE (px_init_thread, no other
 * thread in Plexus): with `cpus` (the process's affinity mask) >= 2, the API
 * lock until a second thread calls, then px_pml_threads_fine; with one CPU,
 * the API lock throughout. */
int px_pml_threads_auto(int cpus);

/* ---- sends and receives of the runtime (any tag, including runtime tags < 0) ---- */

int px_pml_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request);
/* px_pml_isend to a peer this process failed itself (px_finalize's barrier). */
int px_pml_isend_failed_ok(const void *buf, size_t len, int dest, int tag, px_request_t **request);
/* Post a receive: it takes the first matching unexpected message at once,
 * else it waits on the posted list for one (matching by source and tag). */
int px_pml_irecv(void *buf, size_t len, int source, int tag, px_request_t **request);
/* Send with the match header inline, no request: the transport's immediate
 * path (sendi) for a small message to a live peer. PX_SUCCESS (sent, a
 * sequence number spent), or PX_ERR_NOT_SUPPORTED when that path cannot take
 * it now (too large, the peer failed, the transport is busy): nothing was
 * sent, use px_pml_isend. */
int px_pml_send_inline(const void *buf, size_t len, int dest, int tag);
/* Let go of a send or receive nobody will wait for: freed when complete; a
 * receive no message matched leaves the posted list (cancelled); anything a
 * transport or the peer still holds is freed by whoever finishes it last
 * (else px_finalize). Sets *request to NULL. */
void px_pml_release(px_request_t **request);
/* Has `r` completed? For the layers above (collectives, groups): in fine mode
 * a receive may complete in another thread's progress without the API lock
 * (docs/threads.md), so the flag is read with acquire (a plain load on x86):
 * its data and status are visible once it says so. */
static inline bool px_pml_done(const px_request_t *r)
{
    return __atomic_load_n(&r->complete, __ATOMIC_ACQUIRE);
}
/* Wait for `*request` as px_wait does; `who` names the operation in messages. */
int px_pml_wait(px_request_t **request, px_status_t *status, const char *who);
/* One round of the runtime's progress: the transports, messaging's pending
 * steps, the registered progress hooks (proc.h). */
int px_pml_progress_once(void);

/* ---- requests of the layers above (PX_PML_REQ_GENERIC) ---- */

/* A request whose hooks are `ops` (constant, outliving it) and whose
 * owner's state is `owner`; incomplete, status {any source, any tag, 0,
 * success}. NULL when out of memory. */
px_request_t *px_pml_request_alloc(const px_request_ops_t *ops, void *owner);
/* Complete it with `error` (px_wait returns that). */
void px_pml_request_complete(px_request_t *r, int error);
/* Give it back (its owner's state already dropped). */
void px_pml_request_free(px_request_t *r);

/* Counts for tests: unexpected messages queued, receives posted. */
size_t px_pml_unexpected_count(void);
size_t px_pml_posted_count(void);

#endif
