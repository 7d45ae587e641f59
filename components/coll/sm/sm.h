/*
 * sm.h: coll/sm, large collectives for a group whose members all share this
 * host, with no message per chunk. Two ways to move the data:
 *
 * SINGLE COPY (when the transport's btl_get/btl_put reach every member
 * directly: btl/shm's process_vm_readv/writev, and coll_sm_single_copy is
 * auto): each member publishes, per call, a RECORD in its segment (the call
 * number, the operation, its size, its buffers' addresses); every byte then
 * moves once, from the member that holds it straight into the member that
 * needs it. A transfer (destination d, source s, a range of d's receive
 * buffer and of s's buffer) is cut into steps of coll_sm_step bytes that
 * either of the two may take: d reads (btl_get) or s writes (btl_put), so a
 * member that runs does the work of one that does not, and two running
 * members share it. A step is claimed by raising the counter claim[s] in d's
 * segment (compare-and-swap within the call's range), and counted done in
 * comp[s] there; both counters are cumulative over the group's calls, each
 * side knowing the call's range from the arguments. A reduction (allreduce,
 * reduce_scatter) is done by the owner of each block, reading the others'
 * inputs step by step into a buffer of one step (it stays in the cache); its
 * record's `reduced` then lets the others take the block.
 *
 * STREAMS (otherwise): data is copied once into a shared segment and once
 * out of it, pipelined in chunks sized to the cache.
 *
 * Each member owns one segment (BTL shareable memory, px_btl_base_mem_alloc;
 * the others map it with px_btl_base_mem_map), made at the group's first
 * collective through coll/sm. A segment is a ring of coll_sm_slots slots of
 * coll_sm_chunk bytes: its owner's output STREAM. The owner copies a chunk
 * into slot k % slots and publishes it by raising its `posted` counter; a
 * reader copies (or reduces) it out and raises, in ITS OWN segment, its
 * counter `acked[owner]` (chunks of that stream it is done with). The owner
 * reuses a slot once every reader's acked has passed the chunk in it. Every
 * member writes only its own segment.
 *
 * Counters are cumulative over the group's collectives: which chunks each
 * member publishes in a collective follows from the call's arguments, so all
 * members know where every stream stands without reading it from the
 * segment. What a member reads from a peer's segment is counters only
 * (compared, never used as an offset or a size): a wrong or hostile value can
 * make a result wrong, never make this process read or write outside its
 * mappings. Mapped segments are checked (magic, context, owner, geometry,
 * size) before use.
 *
 * Failures: while it runs, a collective keeps one empty receive posted from
 * each peer (nothing is ever sent to it): when the runtime finds a peer dead
 * (btl/shm notices a peer's process ended) the receive fails with
 * PX_ERR_PEER_FAILED and so does the collective, which fails the group and
 * tells the others, as any other component's. runtime_wait_timeout and the
 * group's failure notices apply as to every schedule (the base runs it).
 */
#ifndef PX_COLL_SM_H
#define PX_COLL_SM_H

#include <stdatomic.h>
#include <stdint.h>
#include "frameworks/btl/btl.h"
#include "frameworks/coll/coll.h"

extern const px_coll_component_t px_coll_sm_component;
extern int px_coll_sm_priority;
extern size_t px_coll_sm_chunk;
extern int px_coll_sm_slots;
extern size_t px_coll_sm_step;
extern int px_coll_sm_single_copy;
extern size_t px_coll_sm_nt_min;
extern size_t px_coll_sm_single_copy_min;
extern size_t px_coll_sm_single_copy_red_min;
enum { PX_COLL_SM_SC_NONE = 0, PX_COLL_SM_SC_AUTO = 1 };

#define PX_COLL_SM_MAGIC 0x706c78636f6c6c33ULL /* "plxcoll3" */
#define PX_COLL_SM_LINE  64

/* The first bytes of a segment (written once by its owner before it sends
 * the segment's description). */
typedef struct px_coll_sm_hdr {
    uint64_t magic;
    uint32_t ctx;        /* the group's context id */
    int32_t owner;       /* the owner's group rank */
    uint32_t size;       /* the group's size */
    uint32_t nslots;     /* slots in the ring */
    uint64_t slot;       /* bytes a slot */
    uint64_t data_off;   /* where slot 0 starts */
    uint64_t step;       /* bytes of a single-copy step */
    uint64_t sc_min;     /* the owner's coll_sm_single_copy_min (group rank 0's rules) */
    uint64_t sc_red_min; /* its coll_sm_single_copy_red_min */
} px_coll_sm_hdr_t;

/* A member's record of its current call (single copy), one line after the
 * streams' counters; written by its owner only, `seq` last. */
typedef struct px_coll_sm_rec {
    _Atomic uint64_t seq;     /* the call the fields below describe (1, 2, ...) */
    _Atomic uint64_t reduced; /* the last call whose own block is reduced (allreduce,
                               * reduce_scatter): others may take it, and are done
                               * reading this member's input */
    uint64_t sbuf, rbuf;      /* the member's buffers, in its own address space */
    uint64_t bytes;           /* count x element size */
    int32_t opid, root;
} px_coll_sm_rec_t;

/* A member's view of the group's segments (per group, the module's). */
typedef struct px_coll_sm_group {
    px_coll_module_t module; /* first: the group's module points here */
    bool ready;              /* segments made and mapped */
    int failed;              /* setup failed: the error (every later call fails with it) */
    int p, r;
    size_t slot; /* bytes a slot */
    uint32_t nslots;
    size_t seg_bytes;
    px_btl_mem_t own;                /* this member's segment */
    struct px_btl_module *own_btl;   /* the module that allocated it */
    bool own_btl_valid;              /* own was allocated (free it) */
    bool *mapped;                    /* [p]: maps[j] holds a mapping (unmap it) */
    px_btl_mem_t *maps;              /* [p]: the peers' segments (own: unused) */
    struct px_btl_module **map_btl;  /* [p] */
    struct px_btl_endpoint **map_ep; /* [p] */
    unsigned char **base;            /* [p]: each segment as mapped here */
    uint64_t *pos;                   /* [p]: chunks each stream holds up to the last call built */
    bool setup_claimed;              /* a call was built to make the segments */
    bool cma;                        /* single copy with every member (agreed at setup) */
    size_t sc_min;                   /* calls of this many bytes or more go by single copy
                                      * (when cma): group rank 0's coll_sm_single_copy_min */
    size_t sc_red_min;               /* the same for allreduce and reduce_scatter */
    size_t step;                     /* bytes of a single-copy step */
    uint64_t *cin, *cout;            /* [p]: steps of transfers from / to each member, so far */
    void *tmp;                       /* one step: a peer's input to reduce */
    int rdma_error;                  /* a btl_get/btl_put completed with this error */
    uint64_t issued, finished;       /* calls built / finished: they run one at a time, in order */
} px_coll_sm_group_t;

/* Where the counters of a segment at `base` live. */
static inline _Atomic uint64_t *px_coll_sm_posted(unsigned char *base)
{
    return (_Atomic uint64_t *)(base + PX_COLL_SM_LINE);
}
static inline _Atomic uint64_t *px_coll_sm_acked(unsigned char *base, int j)
{
    return (_Atomic uint64_t *)(base + 2 * PX_COLL_SM_LINE + (size_t)j * PX_COLL_SM_LINE);
}

static inline px_coll_sm_rec_t *px_coll_sm_rec(unsigned char *base, int p)
{
    return (px_coll_sm_rec_t *)(base + 2 * PX_COLL_SM_LINE + (size_t)p * PX_COLL_SM_LINE);
}
/* claim[s] / comp[s] in d's segment: steps of the transfers from s into d
 * claimed / done (cumulative). */
static inline _Atomic uint64_t *px_coll_sm_claim(unsigned char *base, int p, int s)
{
    return (_Atomic uint64_t *)(base + (3 + (size_t)p + (size_t)s) * PX_COLL_SM_LINE);
}
static inline _Atomic uint64_t *px_coll_sm_comp(unsigned char *base, int p, int s)
{
    return (_Atomic uint64_t *)(base + (3 + 2 * (size_t)p + (size_t)s) * PX_COLL_SM_LINE);
}

int px_coll_sm_query_group(px_coll_group_t *g, int *priority, px_coll_module_t **module);
void px_coll_sm_group_free(px_coll_group_t *g, px_coll_module_t *m);

#endif
