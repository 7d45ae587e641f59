/*
 * shm_corrupt: a rank that writes corrupt entries into btl/shm's shared
 * memory, for test/shm/t_shm.sh, run under pxrun with 2 ranks.
 *
 *   pxrun -n 2 shm_corrupt MODE
 *
 * Both ranks first exchange a message (so each has the other's segment
 * mapped and in use). Then rank 1 writes, into memory rank 0 reads, what
 * MODE says, through its own mapping of rank 0's segment (the state of its
 * btl/shm, linked statically):
 *   fbox-len    a fast box entry whose data length is 0xffffff (a 64-byte entry)
 *   fbox-size   a fast box entry whose entry size runs past the ring's end
 *   split-slot  a split single copy's offer naming a slot in the segment's header
 *   queue-rel   a queue entry (relative pointer) naming local index 7 of 2
 *   frag-len    a fragment of its own heap with a data length of 4 GiB - 1
 *   frag-return a fragment of rank 0's heap "handed back" that rank 0 never sent
 * and then waits for rank 0's verdict on a pipe-like message that never
 * comes (pxrun ends it). Rank 0 waits in px_recv for a message from rank 1,
 * which btl/shm must fail with an error naming rank 1 instead of crashing
 * or delivering garbage; it prints "rank 0: recv from rank 1: <error>" and
 * exits 3 (1 when the bad entry was delivered as a message).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "runtime/plexus.h"
#include "runtime/runtime.h"

static void push_rel(px_btl_shm_fifo_t *fifo, uint64_t rel)
{
    uint64_t prev = atomic_exchange(&fifo->tail, rel);
    if (prev == PX_BTL_SHM_EMPTY)
        atomic_store(&fifo->head, rel);
    else
        fprintf(stderr, "shm_corrupt: rank 0's queue was not empty\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: shm_corrupt fbox-len|fbox-size|split-slot|queue-rel|frag-len|"
                        "frag-return\n");
        return 2;
    }
    const char *mode = argv[1];
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "shm_corrupt: px_init: %s\n", px_strerror(rc));
        return 1;
    }
    if (px_size() != 2 || strcmp(px_transport_name(1 - px_rank()), "shm") != 0) {
        fprintf(stderr, "shm_corrupt: needs 2 ranks on one host over shm\n");
        return 2;
    }
    int rank = px_rank(), peer = 1 - rank;
    char b = 'a', got = 0;
    px_status_t st;
    if ((rc = px_send(&b, 1, peer, 1)) != PX_SUCCESS ||
        (rc = px_recv(&got, 1, peer, 1, &st)) != PX_SUCCESS) {
        fprintf(stderr, "shm_corrupt: warm-up exchange: %s\n", px_strerror(rc));
        return 1;
    }
    if (rank == 1) {
        px_btl_shm_state_t *s = &px_btl_shm_state;
        struct px_btl_endpoint *ep = s->by_idx[0];
        char *seg0 = ep->seg;
        px_btl_shm_fifo_t *fifo0 = (px_btl_shm_fifo_t *)(seg0 + px_btl_shm_off_fifo());
        size_t off = ep->fb_wpos & (s->fbox_size - 1);
        _Atomic uint64_t *slot = (_Atomic uint64_t *)(ep->fb_out + off);
        if (!strcmp(mode, "fbox-len")) {
            atomic_store(slot, PX_BTL_SHM_FB_VALID | (1ULL << 32) |
                                   ((uint64_t)PX_RT_AM_MATCH << 24) | 0xffffffULL);
        } else if (!strcmp(mode, "fbox-size")) {
            atomic_store(slot, PX_BTL_SHM_FB_VALID | (0xffffULL << 32) |
                                   ((uint64_t)PX_RT_AM_MATCH << 24) | 8);
        } else if (!strcmp(mode, "split-slot")) {
            /* A split single copy's offer whose slot is the segment's header. */
            px_btl_shm_split_msg_t m = {8, 1, 0, 0, 1 << 20, 1 << 16};
            memcpy(ep->fb_out + off + 8, &m, sizeof m);
            atomic_store(slot, PX_BTL_SHM_FB_VALID | PX_BTL_SHM_FB_CTL | (1ULL << 32) | sizeof m);
        } else if (!strcmp(mode, "queue-rel")) {
            push_rel(fifo0, (7ULL << 48) | s->heap_off);
        } else if (!strcmp(mode, "frag-len")) {
            /* A header of its own, past the fragments it carved. */
            size_t at = (s->seg_size - 4096) & ~(size_t)63;
            px_btl_shm_frag_hdr_t *h = (px_btl_shm_frag_hdr_t *)(s->seg + at);
            atomic_store(&h->next, PX_BTL_SHM_EMPTY);
            h->len = 0xffffffffu;
            h->off = PX_BTL_SHM_FRAG_HDR;
            h->tag = PX_RT_AM_MATCH;
            h->flags = 0;
            h->src = (uint16_t)s->my_idx;
            push_rel(fifo0, ((uint64_t)s->my_idx << 48) | at);
        } else if (!strcmp(mode, "frag-return")) {
            size_t at = (ep->seg_size - 4096) & ~(size_t)63;
            px_btl_shm_frag_hdr_t *h = (px_btl_shm_frag_hdr_t *)(seg0 + at);
            atomic_store(&h->next, PX_BTL_SHM_EMPTY);
            h->des = 0x4141414141414141ULL; /* once followed as a pointer */
            h->flags = PX_BTL_SHM_FRAG_RETURNED;
            h->src = 0;
            push_rel(fifo0, ((uint64_t)0 << 48) | at);
        } else {
            fprintf(stderr, "shm_corrupt: unknown mode %s\n", mode);
            return 2;
        }
        /* Wait to be ended by pxrun once rank 0 has its verdict. */
        rc = px_recv(&got, 1, 0, 2, &st);
        fprintf(stderr, "shm_corrupt: rank 1: recv from rank 0: %s\n", px_strerror(rc));
        /* Rank 0 closed the connection when it saw the corruption, which
         * can end this receive before rank 0 printed its verdict: exiting
         * now would make pxrun end rank 0 first. pxrun ends this rank when
         * rank 0 exits. */
        sleep(60);
        return 0;
    }
    rc = px_recv(&got, 1, 1, 7, &st);
    printf("rank 0: recv from rank 1: %s\n", rc == PX_SUCCESS ? "delivered" : px_strerror(rc));
    fflush(stdout);
    return rc == PX_SUCCESS ? 1 : 3;
}
