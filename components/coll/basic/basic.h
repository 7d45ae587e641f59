/*
 * basic.h: coll/basic, the fallback that provides every operation for every
 * group size: binomial trees (bcast, reduce, barrier), linear scatter and
 * gather from/to the root, allreduce as reduce + bcast, allgather as gather +
 * bcast, reduce_scatter as reduce + scatter, alltoall as one round of
 * sends and receives to and from everyone.
 */
#ifndef PX_COLL_BASIC_H
#define PX_COLL_BASIC_H

#include "frameworks/coll/coll.h"

extern const px_coll_component_t px_coll_basic_component;
extern px_coll_module_t px_coll_basic_module;
extern int px_coll_basic_priority;

#endif
