/*
 * proc.h: one entry of the process table. The boot framework fills it
 * (rank, host, locality), the BTL base attaches per-peer endpoints to it.
 * Read by frameworks and the runtime; components see it in add_procs.
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
    void *btl_peer;       /* owned by the BTL base: the per-peer endpoint table */
} px_proc_t;

#endif
