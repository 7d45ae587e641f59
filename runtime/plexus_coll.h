/*
 * plexus_coll.h: collective operations for applications (included by
 * <plexus.h>). Groups of ranks, and over a group: barrier, bcast, scatter,
 * gather, reduce, allreduce, allgather, reduce_scatter and alltoall, blocking
 * and non-blocking (px_i*: a px_request_t completed by px_wait / px_test /
 * px_waitall like a point-to-point one).
 *
 *   double v[4] = {...}, sum[4];
 *   px_allreduce(v, sum, 4, PX_DOUBLE, PX_SUM, px_group_world());
 *
 * Every member of a group calls the same collectives in the same order with
 * matching counts, types, operations and roots. Counts are elements; for
 * scatter, gather, allgather, reduce_scatter and alltoall `count` is one
 * rank's block (MPI's recvcount / Reduce_scatter_block). Ranks and roots are
 * group ranks. Returns PX_SUCCESS or a negative code (px_strerror); when a
 * member fails during a collective the others return an error (see
 * docs/coll.md, "Failures") and the group can no longer be used.
 * Thread support as for plexus.h (docs/threads.md): under PX_THREAD_MULTIPLE,
 * collectives on distinct groups may run from different threads at once; one
 * group's collectives are called by one thread at a time.
 */
#ifndef PLEXUS_COLL_H
#define PLEXUS_COLL_H

#include <stddef.h>
#include "plexus_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* px_group_t (an opaque handle), px_dtype_t, px_op_t, PX_IN_PLACE and
 * PX_UNDEFINED are in plexus_types.h. */

/* Every rank of the job; exists from px_init to px_finalize. */
PX_EXPORT px_group_t *px_group_world(void);
/* Collective over `parent`: ranks passing the same color (>= 0) form a new
 * group, ordered by key, then by rank in the parent. PX_UNDEFINED: this rank
 * gets *newgroup = NULL. Each new group has its own tag space: its
 * collectives never match another group's messages or point-to-point ones. */
PX_EXPORT int px_group_split(px_group_t *parent, int color, int key, px_group_t **newgroup);
/* Collective over the processes listed: form a group of connected peers
 * (docs/peers.md). Every member calls it with its own ids of the members:
 * px_rank() for itself, the peer ids px_connect / px_accept gave for the
 * others (ranks of its own job may be members too), in any order. The group
 * is ordered by `key`, then by a random identity each process draws at
 * px_init: the same order on every member (px_group_rank says where this one
 * is; px_group_world_rank gives this process's id of a member). Members whose
 * lists differ (another count, another process) get PX_ERR_BAD_PARAM with a
 * message naming the member that disagreed; a member that does not call it
 * leaves the others with PX_ERR_TIMEOUT after `timeout` seconds, naming it.
 * Collectives then run on it as on any group; a member that dies fails them
 * (PX_ERR_PEER_FAILED or PX_ERR_GROUP_FAILED, the message names it) and the
 * others may free the group and form a new one. */
PX_EXPORT int px_group_from_peers(const int *members, int n, int key, double timeout,
                                  px_group_t **group);
/* Free a group made by px_group_split or px_group_from_peers (*group becomes NULL). Not collective;
 * no collective on it may be in progress. */
PX_EXPORT int px_group_free(px_group_t **group);
PX_EXPORT int px_group_rank(const px_group_t *group);
PX_EXPORT int px_group_size(const px_group_t *group);
/* The world rank of group rank `rank` (negative: out of range); in a group of
 * connected peers, this process's id of that member (a rank or a peer id). */
PX_EXPORT int px_group_world_rank(const px_group_t *group, int rank);

/* Blocking collectives. sendbuf may be PX_IN_PLACE where MPI allows it:
 * allreduce, allgather, reduce_scatter, alltoall (the data is in recvbuf),
 * reduce and gather at the root; scatter's root passes PX_IN_PLACE as
 * recvbuf (it keeps its block in sendbuf). */
PX_EXPORT int px_group_barrier(px_group_t *group);
PX_EXPORT int px_bcast(void *buf, size_t count, px_dtype_t dtype, int root, px_group_t *group);
PX_EXPORT int px_scatter(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                         int root, px_group_t *group);
PX_EXPORT int px_gather(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                        int root, px_group_t *group);
PX_EXPORT int px_reduce(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                        px_op_t op, int root, px_group_t *group);
PX_EXPORT int px_allreduce(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                           px_op_t op, px_group_t *group);
PX_EXPORT int px_allgather(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                           px_group_t *group);
PX_EXPORT int px_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                                px_op_t op, px_group_t *group);
PX_EXPORT int px_alltoall(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                          px_group_t *group);

/* Non-blocking forms: same arguments, then the request. The buffers belong to
 * Plexus until the request completes. Progress happens in any Plexus call
 * (px_test, px_wait, px_progress, other messaging). */
PX_EXPORT int px_ibarrier(px_group_t *group, px_request_t **request);
PX_EXPORT int px_ibcast(void *buf, size_t count, px_dtype_t dtype, int root, px_group_t *group,
                        px_request_t **request);
PX_EXPORT int px_iscatter(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                          int root, px_group_t *group, px_request_t **request);
PX_EXPORT int px_igather(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                         int root, px_group_t *group, px_request_t **request);
PX_EXPORT int px_ireduce(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                         px_op_t op, int root, px_group_t *group, px_request_t **request);
PX_EXPORT int px_iallreduce(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                            px_op_t op, px_group_t *group, px_request_t **request);
PX_EXPORT int px_iallgather(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                            px_group_t *group, px_request_t **request);
PX_EXPORT int px_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                                 px_op_t op, px_group_t *group, px_request_t **request);
PX_EXPORT int px_ialltoall(const void *sendbuf, void *recvbuf, size_t count, px_dtype_t dtype,
                           px_group_t *group, px_request_t **request);

#ifdef __cplusplus
}
#endif
#endif
