/*
 * mca_internal.h: helpers shared by the files of core/mca (var.c,
 * framework.c, repository.c). Not installed; nothing outside core/mca
 * includes it (test/build/t_layers.sh checks). What the project's tools read
 * of these internals is in core/mca/mca_tools.h, which this includes.
 */
#ifndef PX_MCA_INTERNAL_H
#define PX_MCA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "core/mca/framework.h"
#include "core/mca/mca_tools.h"
#include "core/mca/var.h"
#include "core/util/argv.h"

/* Load parameter files and the environment once (no refcount). */
int px_mca_var_load(void);

/* Repository internals (repository.c) used by framework.c. */
int px_mca_repository_init(void);
void px_mca_repository_finalize(void);
/* Load and check one plugin file. On success fills *comp and *handle; on
 * refusal records the reason (px_mca_repository_failed) and returns an error. */
int px_mca_repository_load_plugin(const char *framework, const char *component, const char *path,
                                  const px_mca_framework_t *fw, const px_mca_component_t **comp,
                                  void **handle);
/* Unload a plugin: forget the classes it defined (px_class_unload_module,
 * `symbol` being any address in it, e.g. its component struct), then close it;
 * a debug build that finds objects of those classes alive keeps it loaded. */
void px_mca_repository_unload(void *handle, const void *symbol, const char *path);
/* The recorded refusal for fw/comp, or NULL. */
const px_mca_failed_component_t *px_mca_repository_failure_for(const char *framework,
                                                               const char *component);
/* Record a component that could not be used (e.g. its open failed). */
void px_mca_repository_record_failure(const char *framework, const char *component,
                                      const char *path, const char *reason);

#endif
