/*
 * coll_types.h: the datatypes and reduction operations of the collectives
 * (px_dtype_t, px_op_t, PX_IN_PLACE, PX_UNDEFINED) for coll components,
 * through frameworks/coll/coll.h. They are defined once, in the application
 * API's types header plexus_types.h (applications get them through
 * <plexus.h>), so the framework needs nothing from the runtime layer above it.
 */
#ifndef PX_COLL_TYPES_H
#define PX_COLL_TYPES_H

#include <stddef.h>
#include "plexus_types.h"

#endif
