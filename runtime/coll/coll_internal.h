/*
 * coll_internal.h: what the files of groups and collectives share
 * (runtime/coll/ only): group.c (groups, context ids) and coll.c (the
 * collectives, the point-to-point table, non-blocking collectives). Below
 * them: messaging's exported calls (runtime/pml/pml.h) and the process table.
 * Not installed.
 */
#ifndef PX_RUNTIME_COLL_COLL_INTERNAL_H
#define PX_RUNTIME_COLL_COLL_INTERNAL_H

#include <stdbool.h>
#include "frameworks/coll/coll.h"
#include "runtime/coll/coll_rt.h"
#include "runtime/plexus_coll.h"
#include "runtime/pml/pml.h"
#include "runtime/proc/proc.h"

/* group.c: the world group (NULL outside px_init .. px_finalize); is `g` a
 * live group (else reported for `fn`); destroy every group. */
extern px_coll_group_t *px_rt_coll_world_group;
bool px_rt_coll_group_ok(const px_coll_group_t *g, const char *fn);
void px_rt_coll_groups_fini(void);
/* A collective `fn` on `g` failed: when `g` has connected peers, name the
 * members that failed, giving progress up to `wait` seconds to notice one. */
void px_rt_coll_name_failed(const px_coll_group_t *g, const char *fn, double wait);
/* coll.c: is a non-blocking collective on `g` still in progress? */
bool px_rt_coll_group_busy(const px_coll_group_t *g);

#endif
