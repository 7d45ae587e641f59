/*
 * fullmesh.h: coll/fullmesh, algorithms where every rank talks to its peers
 * directly: dissemination barrier, bcast as direct sends from the root,
 * recursive-doubling allreduce (small messages; any group size, the ranks
 * beyond the largest power of two fold in first), allgather as one round of
 * direct exchanges, and pairwise-exchange alltoall (one peer a round).
 * When ranks outnumber cores, barrier and allreduce go through rank 0
 * instead (two passes over the ranks rather than log2(p) rounds, each of
 * which waits for the scheduler to run every rank).
 */
#ifndef PX_COLL_FULLMESH_H
#define PX_COLL_FULLMESH_H

#include <stdbool.h>
#include "core/util/progress.h"
#include "frameworks/coll/coll.h"

extern const px_coll_component_t px_coll_fullmesh_component;
extern px_coll_module_t px_coll_fullmesh_module;
extern int px_coll_fullmesh_priority;
/* coll_fullmesh_linear: 0 auto (linear barrier and allreduce when the ranks
 * outnumber the cores), 1 never, 2 always. */
extern int px_coll_fullmesh_linear_mode;
bool px_coll_fullmesh_linear(const px_coll_group_t *g);
/* coll_fullmesh_allreduce_halving_min: allreduces of at least this many
 * bytes use Rabenseifner's reduce-scatter + allgather. */
extern size_t px_coll_fullmesh_halving_min;
bool px_coll_fullmesh_halving(const px_coll_group_t *g, size_t bytes);

#endif
