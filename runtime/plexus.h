/*
 * plexus.h: the Plexus messaging API for applications.
 *
 *   px_init(&argc, &argv);
 *   if (px_rank() == 0) px_send(buf, n, 1, 42);
 *   else px_recv(buf, n, 0, 42, &status);
 *   px_finalize();
 *
 * Messages are matched by (source, tag) in the order they were sent between
 * one pair of processes; PX_ANY_SOURCE and PX_ANY_TAG match anything. Tags
 * are >= 0. Every call returns PX_SUCCESS or a negative code (px_strerror).
 * Thread support (docs/threads.md): px_init gives PX_THREAD_SERIALIZED (one
 * thread at a time calls into Plexus); px_init_thread asks for a level.
 */
#ifndef PLEXUS_H
#define PLEXUS_H

#include <stddef.h>
#include "plexus_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PX_ANY_SOURCE (-1)
#define PX_ANY_TAG    (-1)

typedef struct px_status {
    int source;    /* rank (or dynamic peer id) the message came from */
    int tag;       /* its tag */
    size_t length; /* bytes received (the sent length unless truncated) */
    int error;     /* PX_SUCCESS, PX_ERR_TRUNCATE, PX_ERR_PEER_FAILED, ... */
} px_status_t;

/* px_request_t, an opaque handle, and the return codes are in plexus_types.h. */

/* Thread levels (docs/threads.md), in increasing order as in MPI:
 *  SINGLE: one thread in the process; FUNNELED: several, only the one that
 *  called px_init_thread calls Plexus; SERIALIZED: any thread, one at a time
 *  (what px_init gives); MULTIPLE: any thread, any call, at any time. */
#define PX_THREAD_SINGLE     0
#define PX_THREAD_FUNNELED   1
#define PX_THREAD_SERIALIZED 2
#define PX_THREAD_MULTIPLE   3

PX_EXPORT int px_init(int *argc, char ***argv);
/* px_init (no arguments to parse) asking for thread level `required`;
 * *provided is the level given:
 * the highest this build and runtime_thread_max allow, up to `required`
 * (check it: a lower level is not an error). PX_ERR_BAD_PARAM when
 * `required` is not one of PX_THREAD_*. */
PX_EXPORT int px_init_thread(int required, int *provided);
/* The level px_init / px_init_thread provided. */
PX_EXPORT int px_query_thread(int *provided);
PX_EXPORT int px_finalize(void);
PX_EXPORT int px_initialized(void);

PX_EXPORT int px_rank(void);
PX_EXPORT int px_size(void);

PX_EXPORT int px_send(const void *buf, size_t len, int dest, int tag);
PX_EXPORT int px_recv(void *buf, size_t len, int source, int tag, px_status_t *status);
PX_EXPORT int px_isend(const void *buf, size_t len, int dest, int tag, px_request_t **request);
PX_EXPORT int px_irecv(void *buf, size_t len, int source, int tag, px_request_t **request);

/* Complete a request and free it (*request becomes NULL). status may be NULL. */
PX_EXPORT int px_wait(px_request_t **request, px_status_t *status);
/* *flag = 1 and the request freed when complete; 0 otherwise. */
PX_EXPORT int px_test(px_request_t **request, int *flag, px_status_t *status);
/* Wait for all; returns the first error, with each status filled. */
PX_EXPORT int px_waitall(size_t count, px_request_t **requests, px_status_t *statuses);

/* Drive the transports once; returns the number of events handled. */
PX_EXPORT int px_progress(void);
/* A barrier over all ranks (for benchmarks and tests). */
PX_EXPORT int px_barrier(void);
/* Seconds since an arbitrary point (monotonic clock). */
PX_EXPORT double px_wtime(void);
/* Name of the transport that serves sends to `peer` (a rank or a connected
 * peer id: "self", "shm", "ofi"); NULL for neither. */
PX_EXPORT const char *px_transport_name(int peer);
/* ---- Dynamic peers (docs/peers.md): processes not launched together ----
 * A process started by pxrun, a PMIx launcher or alone connects to another
 * after px_init; both get a peer id usable as dest/source wherever a rank is
 * (px_send, px_recv, px_isend, px_irecv). Ids are >= 1<<24 (no rank has
 * one) and never reused within a process: a later connection, even from the
 * same process, is a new peer. PX_ANY_SOURCE matches connected peers too
 * (status.source says which). Both sides need the operator's secret
 * (variable peer_secret_file: a 0600 file of this user).
 *
 * px_contact: open this process's listener (first call; peer_listen_address,
 * peer_listen_port) and give its contact string (valid until px_finalize).
 * px_connect: connect to a contact (within peer_connect_timeout seconds).
 * px_accept: the next process that connected, waiting up to `timeout`
 * seconds (0: do not wait); PX_ERR_TIMEOUT when none did.
 * px_disconnect: release a peer: its pending operations fail with
 * PX_ERR_PEER_FAILED, its transport resources go. A peer that leaves or dies
 * fails only the operations that involve it (PX_ERR_PEER_FAILED, with a
 * message naming its host, pid and contact); call px_disconnect to release
 * it then. */
PX_EXPORT int px_contact(const char **contact);
PX_EXPORT int px_connect(const char *contact, int *peer);
PX_EXPORT int px_accept(double timeout, int *peer);
PX_EXPORT int px_disconnect(int peer);

/* End the whole job with `code`, printing msg. Does not return. */
PX_EXPORT void px_abort(int code, const char *msg);

#ifdef __cplusplus
}
#endif
#endif
