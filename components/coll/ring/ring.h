/*
 * ring.h: coll/ring, bandwidth-optimal algorithms for large messages: each
 * rank sends only to its right neighbour and receives only from its left.
 * allreduce is a reduce-scatter followed by an allgather, pipelined in chunks
 * of coll_ring_chunk bytes with up to coll_ring_window receives posted ahead;
 * reduce_scatter is the first half of it; allgather passes blocks around the
 * ring; bcast scatters the vector from the root then ring-allgathers it.
 *
 * Internal to the component: the pipeline's state and the "mover", the seam
 * through which every chunk of a ring step moves (ring_move.c). Today the
 * mover sends and receives through the runtime's point-to-point table; a
 * zero-copy mover (writing straight into the right neighbour's registered
 * receive chunk through the one-sided transfer engine) replaces those two
 * functions and nothing else.
 */
#ifndef PX_COLL_RING_H
#define PX_COLL_RING_H

#include "frameworks/coll/coll.h"

extern const px_coll_component_t px_coll_ring_component;
extern px_coll_module_t px_coll_ring_module;
extern int px_coll_ring_priority;
extern size_t px_coll_ring_chunk;
extern int px_coll_ring_window;

struct px_coll_ring_state;

/* How one chunk of a ring step moves from a rank to its right neighbour. */
typedef struct px_coll_ring_mover {
    const char *name;
    /* Start sending `bytes` at buf to the right neighbour / receiving from the
     * left one; the request completes (p2p test) when the buffer may be reused
     * (send) or holds the data (receive). */
    int (*send)(struct px_coll_ring_state *st, const void *buf, size_t bytes,
                struct px_request **req);
    int (*recv)(struct px_coll_ring_state *st, void *buf, size_t bytes, struct px_request **req);
} px_coll_ring_mover_t;

extern const px_coll_ring_mover_t px_coll_ring_mover_p2p;

typedef struct px_coll_ring_state {
    px_coll_sched_t *s;
    const px_coll_ring_mover_t *mover;
    int p, r;
    int left_world, right_world; /* world ranks of the neighbours */
    int tag;
    size_t es;      /* element size */
    size_t count;   /* elements of the whole vector (p blocks) */
    const char *in; /* this rank's input vector */
    char *work;     /* where blocks are reduced and gathered */
    char *out;      /* reduce_scatter: block r's destination (else NULL) */
    int dtype, rop;
    int nsteps;   /* p - 1 reduce-scatter steps, then p - 1 allgather steps (allreduce) */
    size_t chunk; /* elements a chunk */
    int window;
    /* The receive pipeline: items (step, chunk) in order. */
    int post_step;
    size_t post_chunk;
    int done_step;
    size_t done_chunk;
    int ahead;                /* receives posted, not yet processed */
    struct px_request **rreq; /* [window], slot = item number % window */
    unsigned long post_item, done_item;
    char *slots;              /* [window][chunk] reduce-scatter landing area */
    struct px_request **sreq; /* sends not yet complete */
    size_t nsreq, sreqcap;
} px_coll_ring_state_t;

#endif
