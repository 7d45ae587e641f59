/*
 * plexus_xfer.h: the one-sided transfer engine (after Mooncake TENT): read
 * and write between a registered region of this process and a region another
 * process exported, in batches, from any thread. For applications and for
 * code inside the library; docs/transfer.md explains the model and the path
 * each request takes.
 *
 *   px_xfer_region_t *mine;  px_xfer_alloc(1 << 20, &mine);   // or px_xfer_register(buf, n, &mine)
 *   unsigned char key[PX_XFER_KEY_MAX]; size_t klen;
 *   px_xfer_key_export(mine, key, sizeof key, &klen);        // send it: px_send, a file, ...
 *   ...
 *   px_xfer_remote_t *theirs;  px_xfer_key_import(owner, key, klen, &theirs);
 *   px_xfer_write(local, 0, theirs, 4096, 512);              // one request, waits
 *   px_xfer_batch_t *b;  px_xfer_batch_alloc(64, &b);
 *   px_xfer_request_t r[2] = {{PX_XFER_READ, local, 0, theirs, 0, 8192, NULL}, ...};
 *   px_xfer_batch_submit(b, r, 2, NULL);  px_xfer_batch_wait(b, -1);  px_xfer_batch_free(&b);
 *   px_xfer_notify(owner, "done", 5);                        // after the writes before it
 *
 * Every call returns PX_SUCCESS or a negative code (px_strerror); all of them
 * need px_init. A request that fails says why in its status: the peer, the
 * transport and the reason (an out-of-bounds offset is refused before
 * anything is sent).
 *
 * Threads (the engine's own rules; for the messaging API of plexus.h see
 * px_init_thread and docs/threads.md):
 *  - Any thread may call any px_xfer function, several at once.
 *  - A batch belongs to the thread that uses it: one thread at a time submits
 *    to it, resets or frees it; any thread may read its statuses
 *    (px_xfer_batch_test) and wait for it.
 *  - Submitting takes no lock: requests go to the progress engine through a
 *    lock-free queue, and a same-host write or read of memory allocated by
 *    px_xfer_alloc is done by the submitting thread itself (one memcpy).
 *    Whichever thread waits, polls or calls px_xfer_progress drives the
 *    transports, one thread at a time (a try-lock: the others return at once
 *    or keep polling their own statuses).
 *  - Registering, allocating, freeing, importing and releasing take that
 *    lock (they are not the fast path).
 *  - A region or remote must not be freed or released while another thread
 *    submits requests on it; one with queued requests is refused
 *    (PX_ERR_BAD_PARAM, saying how many).
 *  - When some threads use px_xfer while another is inside a messaging call
 *    (px_send, px_recv, px_wait, px_barrier, a collective, ...), call px_xfer_enable_threads()
 *    once first (px_init_thread(PX_THREAD_MULTIPLE) does it): from then on the
 *    messaging calls take the same progress lock (an uncontended mutex each),
 *    so the transports are never driven by two threads at once. Without it,
 *    messaging calls and px_xfer calls must not overlap in time.
 */
#ifndef PLEXUS_XFER_H
#define PLEXUS_XFER_H

#include <stddef.h>
#include "plexus_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A region of this process's memory that peers may read and write: registered
 * user memory or memory allocated through the engine. */
typedef struct px_xfer_region px_xfer_region_t;
/* A peer's region, imported from its key. */
typedef struct px_xfer_remote px_xfer_remote_t;
/* A set of requests submitted and completed together. */
typedef struct px_xfer_batch px_xfer_batch_t;

/* Largest key px_xfer_key_export writes. */
#define PX_XFER_KEY_MAX 4096
/* Largest notification (bytes). */
#define PX_XFER_NOTIFY_MAX 1024
/* A status that is not final yet. */
#define PX_XFER_PENDING 1

enum { PX_XFER_READ = 0 /* remote -> local */, PX_XFER_WRITE = 1 /* local -> remote */ };

typedef struct px_xfer_request {
    int op;                  /* PX_XFER_READ or PX_XFER_WRITE */
    px_xfer_region_t *local; /* where the bytes come from (write) or go (read) */
    size_t local_offset;
    px_xfer_remote_t *remote;
    size_t remote_offset;
    size_t length;
    /* NULL: the path chosen by priority (xfer_priority); else the name of a
     * transport ("shm", "verbs", "ofi", "self", ...) whose direct path this
     * request must take, or "stage" for the staged path over messages. */
    const char *transport;
} px_xfer_request_t;

typedef struct px_xfer_status {
    int error; /* PX_SUCCESS, PX_XFER_PENDING, or a negative code */
    int peer;  /* the remote region's owner */
    /* The path taken: "shm:map" (a copy between the two mappings), "ofi:put",
     * "shm:get" (that transport's put or get), "ofi:put+verbs:put" (striped),
     * "stage:shm" (staged over that transport's messages); "none" for a
     * zero-byte request that succeeded (nothing to move); "" when it failed
     * before one was chosen. Valid until px_finalize. */
    const char *transport;
    /* When error < 0: what went wrong, naming peer, transport and reason.
     * Valid until the batch is reset or freed. */
    const char *reason;
} px_xfer_status_t;

/* ---- memory ---- */

/* Register [base, base+length) with every transport that can move it
 * one-sided (through their registration caches). */
PX_EXPORT int px_xfer_register(void *base, size_t length, px_xfer_region_t **region);
/* Allocate `length` bytes (zeroed, page-aligned) that a peer on this host can
 * map at import, so that its reads and writes are one memcpy; registered with
 * the network transports too. */
PX_EXPORT int px_xfer_alloc(size_t length, px_xfer_region_t **region);
/* Where the region starts in this process, and its length. */
PX_EXPORT void *px_xfer_region_base(const px_xfer_region_t *region);
PX_EXPORT size_t px_xfer_region_length(const px_xfer_region_t *region);
/* Deregister (or free) the region; *region becomes NULL. Peers' later
 * requests on it fail with PX_ERR_NOT_FOUND ("deregistered by its owner").
 * When its key went out and a network transport (ofi, verbs) registered it,
 * the peers are told first and the call waits for their answers (they answer
 * in any Plexus call; docs/transfer.md, "Over a network transport"). */
PX_EXPORT int px_xfer_free(px_xfer_region_t **region);

/* ---- keys ---- */

/* Write the region's key (self-contained bytes: each transport's
 * registration, what a same-host peer needs to map it, a checksum and this
 * job's identity) into key[0..capacity); *length gets its size.
 * PX_ERR_TRUNCATE (with *length set) when capacity is too small. */
PX_EXPORT int px_xfer_key_export(const px_xfer_region_t *region, void *key, size_t capacity,
                                 size_t *length);
/* Import a key that rank `peer` exported. A corrupt, truncated or foreign-job
 * key, or one of another rank, is refused with PX_ERR_BAD_PARAM and a message
 * saying what is wrong. Importing the same region twice maps it once. */
PX_EXPORT int px_xfer_key_import(int peer, const void *key, size_t length,
                                 px_xfer_remote_t **remote);
PX_EXPORT size_t px_xfer_remote_length(const px_xfer_remote_t *remote);
PX_EXPORT int px_xfer_remote_peer(const px_xfer_remote_t *remote);
/* Drop an imported region; *remote becomes NULL. */
PX_EXPORT int px_xfer_remote_release(px_xfer_remote_t **remote);

/* ---- batches ---- */

/* A batch with room for `capacity` requests (1 .. 1048576). */
PX_EXPORT int px_xfer_batch_alloc(size_t capacity, px_xfer_batch_t **batch);
/* Submit `count` requests; they take the next indices of the batch (*first,
 * when not NULL, gets the first). Requests that fail at once (bounds, a dead
 * peer, no path) are submitted with their error status; the call fails only
 * for a bad batch or a batch without room (nothing submitted then). */
PX_EXPORT int px_xfer_batch_submit(px_xfer_batch_t *batch, const px_xfer_request_t *requests,
                                   size_t count, size_t *first);
/* The status of request `index` (status may be NULL); returns status.error:
 * PX_XFER_PENDING while it runs. Drives progress once when pending. */
PX_EXPORT int px_xfer_batch_test(px_xfer_batch_t *batch, size_t index, px_xfer_status_t *status);
/* Wait until every submitted request is final or `timeout` seconds passed
 * (< 0: no limit; PX_ERR_TIMEOUT then). Returns the first error among the
 * requests (by index), PX_SUCCESS when all succeeded. */
PX_EXPORT int px_xfer_batch_wait(px_xfer_batch_t *batch, double timeout);
/* Requests submitted / not final yet. */
PX_EXPORT size_t px_xfer_batch_count(const px_xfer_batch_t *batch);
PX_EXPORT size_t px_xfer_batch_pending(const px_xfer_batch_t *batch);
/* Empty a batch whose requests are all final, to submit again. */
PX_EXPORT int px_xfer_batch_reset(px_xfer_batch_t *batch);
/* Free a batch whose requests are all final (else PX_ERR_BAD_PARAM: wait
 * first); *batch becomes NULL. */
PX_EXPORT int px_xfer_batch_free(px_xfer_batch_t **batch);

/* ---- single requests (a batch of one, kept per thread) ---- */

/* Write / read and wait; the reason of a failure is px_xfer_last_error(). */
PX_EXPORT int px_xfer_write(px_xfer_region_t *local, size_t local_offset, px_xfer_remote_t *remote,
                            size_t remote_offset, size_t length);
PX_EXPORT int px_xfer_read(px_xfer_region_t *local, size_t local_offset, px_xfer_remote_t *remote,
                           size_t remote_offset, size_t length);
/* The reason of this thread's last failed px_xfer call ("" when none). */
PX_EXPORT const char *px_xfer_last_error(void);

/* ---- ordering ---- */

/* Wait until every request to `peer` (-1: to every peer) queued before the
 * call is final; then this thread's later stores and messages are ordered
 * after the data. With other threads submitting to the same peer meanwhile,
 * it may wait for theirs too. PX_ERR_PEER_FAILED when the peer failed. */
PX_EXPORT int px_xfer_flush(int peer);
/* Send `length` bytes (<= PX_XFER_NOTIFY_MAX) to `peer`, delivered after
 * every write to it that this thread submitted before (and every write any
 * thread completed before): a consumer that receives it sees the data. The
 * message is copied; returns without waiting. */
PX_EXPORT int px_xfer_notify(int peer, const void *message, size_t length);
/* Take the oldest notification that arrived: *peer and *length set, the
 * bytes in buffer (PX_ERR_TRUNCATE when longer than capacity: the rest is
 * dropped). Waits up to `timeout` seconds (0: just look; < 0: no limit);
 * PX_ERR_TIMEOUT when none came. */
PX_EXPORT int px_xfer_notify_recv(int *peer, void *buffer, size_t capacity, size_t *length,
                                  double timeout);

/* ---- progress and threads ---- */

/* Drive the transports and the engine once (when no other thread is);
 * returns the events handled. */
PX_EXPORT int px_xfer_progress(void);
/* Make messaging calls share the engine's progress lock (see above). Call it
 * from the thread that calls the messaging API, before other threads start
 * using px_xfer. */
PX_EXPORT int px_xfer_enable_threads(void);

#ifdef __cplusplus
}
#endif
#endif
