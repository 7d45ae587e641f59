/*
 * ring_move.c: the mover of coll/ring's pipeline: how one chunk of a ring
 * step travels. This one uses the messaging layer (non-blocking send and
 * receive with the collective's tag), so a chunk above the eager limit goes
 * by the runtime's rendezvous (RDMA get or pipelined fragments). The seam
 * for a zero-copy mover: see ring.h.
 */
#include "components/coll/ring/ring.h"

static int p2p_send(px_coll_ring_state_t *st, const void *buf, size_t bytes,
                    struct px_request **req)
{
    return px_coll_p2p()->isend(buf, bytes, st->right_world, st->tag, req);
}

static int p2p_recv(px_coll_ring_state_t *st, void *buf, size_t bytes, struct px_request **req)
{
    return px_coll_p2p()->irecv(buf, bytes, st->left_world, st->tag, req);
}

const px_coll_ring_mover_t px_coll_ring_mover_p2p = {
    .name = "p2p",
    .send = p2p_send,
    .recv = p2p_recv,
};
