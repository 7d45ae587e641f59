/*
 * fullmesh.h: coll/fullmesh, algorithms where every rank talks to its peers
 * directly: dissemination barrier, bcast as direct sends from the root,
 * recursive-doubling allreduce (small messages; any group size, the ranks
 * beyond the largest power of two fold in first), allgather as one round of
 * direct exchanges, and pairwise-exchange alltoall (one peer a round).
 */
#ifndef PX_COLL_FULLMESH_H
#define PX_COLL_FULLMESH_H

#include "frameworks/coll/coll.h"

extern const px_coll_component_t px_coll_fullmesh_component;
extern px_coll_module_t px_coll_fullmesh_module;
extern int px_coll_fullmesh_priority;

#endif
