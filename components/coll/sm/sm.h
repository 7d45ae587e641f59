/*
 * sm.h: coll/sm, large collectives for a group whose members all share this
 * host, through shared memory: data is copied once into a shared segment and
 * once out of it, pipelined in chunks sized to the cache, with no message per
 * chunk.
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

#define PX_COLL_SM_MAGIC 0x706c78636f6c6c31ULL /* "plxcoll1" */
#define PX_COLL_SM_LINE  64

/* The first bytes of a segment (written once by its owner before it sends
 * the segment's description). */
typedef struct px_coll_sm_hdr {
    uint64_t magic;
    uint32_t ctx;      /* the group's context id */
    int32_t owner;     /* the owner's group rank */
    uint32_t size;     /* the group's size */
    uint32_t nslots;   /* slots in the ring */
    uint64_t slot;     /* bytes a slot */
    uint64_t data_off; /* where slot 0 starts */
} px_coll_sm_hdr_t;

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

int px_coll_sm_query_group(px_coll_group_t *g, int *priority, px_coll_module_t **module);
void px_coll_sm_group_free(px_coll_group_t *g, px_coll_module_t *m);

#endif
