/*
 * proc.h: the identity of one process of the job (rank, host, locality), as
 * the boot framework reports it. The runtime's process table (runtime/runtime.h)
 * holds one per rank; components see them in add_procs. Per-peer transport
 * state is not here: px_btl_base_add_procs returns it in a separate array that
 * the runtime keeps beside its table.
 */
#ifndef PX_UTIL_PROC_H
#define PX_UTIL_PROC_H

#include <stdint.h>

/* Locality bits of a peer relative to the calling process. */
#define PX_PROC_LOCAL_SELF 0x1u /* the calling process itself */
#define PX_PROC_LOCAL_HOST 0x2u /* same host (shared memory reachable) */
#define PX_PROC_LOCAL_NUMA 0x4u /* same NUMA node */

typedef struct px_proc {
    int rank;             /* rank in the job, 0..size-1 */
    const char *hostname; /* the peer's host as boot reports it */
    uint32_t locality;    /* PX_PROC_LOCAL_* bits relative to this process */
    uint32_t local_rank;  /* index among the processes on its host */
} px_proc_t;

#endif
