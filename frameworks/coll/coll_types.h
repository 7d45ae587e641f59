/*
 * coll_types.h: the datatypes and reduction operations of the collectives
 * (px_dtype_t, px_op_t, PX_IN_PLACE). Part of the public API: included by
 * runtime/plexus_coll.h, which applications use, and by frameworks/coll/coll.h,
 * which coll components use; kept here so the framework needs nothing from the
 * runtime layer above it.
 */
#ifndef PX_COLL_TYPES_H
#define PX_COLL_TYPES_H

#include <stddef.h>

/* Element types of a collective's buffers. */
typedef enum px_dtype {
    PX_INT8 = 0,
    PX_UINT8,
    PX_INT16,
    PX_UINT16,
    PX_INT32,
    PX_UINT32,
    PX_INT64,
    PX_UINT64,
    PX_FLOAT,
    PX_DOUBLE,
    PX_DTYPE_COUNT
} px_dtype_t;

/* Reductions. AVG is for PX_FLOAT and PX_DOUBLE only (the sum divided by the
 * group's size); BAND, BOR and BXOR for the integer types only. Integer SUM
 * and PROD wrap around (two's complement), as unsigned arithmetic does. */
typedef enum px_op {
    PX_SUM = 0,
    PX_PROD,
    PX_MIN,
    PX_MAX,
    PX_AVG,
    PX_BAND,
    PX_BOR,
    PX_BXOR,
    PX_OP_COUNT
} px_op_t;

/* Pass as the send buffer (the receive buffer for a scatter's root) for the
 * in-place form of a collective, as MPI_IN_PLACE (docs/coll.md says where). */
#define PX_IN_PLACE ((void *)1)

/* color for px_group_split: this rank joins no new group. */
#define PX_UNDEFINED (-32766)

#endif
