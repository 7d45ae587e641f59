/*
 * pmix.h: registry/pmix, names stored with the PMIx launcher's
 * publish/lookup (docs/registry.md, "pmix"). Internal to the component:
 * pmix_component.c (variables, query) and pmix_module.c (put, get, del)
 * share it. Not PMIx's own <pmix.h>, which the .c files include with angle
 * brackets.
 */
#ifndef PX_REGISTRY_PMIX_H
#define PX_REGISTRY_PMIX_H

#include "frameworks/registry/registry.h"

/* Variables (registry_pmix_*). */
extern int px_registry_pmix_priority;
extern int px_registry_pmix_range; /* a pmix_data_range_t: session or global */

/* Why the component cannot serve this process, or NULL when it can: checks
 * that PMIx is initialized (boot/pmix selected) and that the server answers
 * a lookup, within px_registry_base_timeout(). On success fills the module. */
const char *px_registry_pmix_probe(px_registry_module_t **module);
/* The range's name ("session", "global"), for messages. */
const char *px_registry_pmix_range_name(void);

#endif
