/*
 * pmix.h: boot/pmix, the boot component for processes started by a PMIx
 * launcher (Open MPI's mpirun, Slurm's srun --mpi=pmix, PRRTE's prun).
 * Internal to the component: pmix_component.c (variables, query) and
 * pmix_module.c (rank, size, host and locality of peers, modex) share it.
 * Not to be confused with the PMIx library's own <pmix.h>, which the .c files
 * include with angle brackets.
 */
#ifndef PX_BOOT_PMIX_H
#define PX_BOOT_PMIX_H

#include "frameworks/boot/boot.h"

/* Variables (boot_pmix_*). */
extern int px_boot_pmix_priority;      /* priority when a PMIx launcher is detected */
extern int px_boot_pmix_fence_timeout; /* seconds a fence may take; 0: no limit */

/* The module; its init connects to the PMIx server. */
extern px_boot_module_t px_boot_pmix_module;

/* Whether the environment says a PMIx launcher started us, and if so a short
 * description of why ("PMIX_NAMESPACE=... PMIX_RANK=..."). */
bool px_boot_pmix_env_present(const char **why);

#endif
