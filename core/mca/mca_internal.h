/*
 * mca_internal.h: helpers shared by the files of core/mca (var.c,
 * framework.c, repository.c). Not installed; nothing outside core/mca, the
 * MCA tests and px_info includes it. The few marked PX_EXPORT are exported
 * from libplexus.so only because the in-tree tool px_info calls them; they are
 * not API (no installed header declares them) and may change at any time.
 */
#ifndef PX_MCA_INTERNAL_H
#define PX_MCA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/argv.h"

/* Levenshtein distance (insert, delete, substitute cost 1). */
int px_mca_edit_distance(const char *a, const char *b);
/* Largest distance still worth suggesting for a name of this length. */
int px_mca_suggest_limit(const char *name);
/* Up to `max` (<= 16) of `cands` nearest to `name`, best first, within the
 * suggestion limit (a candidate containing `name` counts as near). `ncands`
 * < 0: `cands` is NULL-terminated. Returns how many were written. */
PX_EXPORT int px_mca_nearest_among(const char *name, const char *const *cands, int ncands,
                                   const char **out, int max);

/* The folder of the system parameter files: $PX_SYSCONFDIR or the
 * compiled-in one. */
PX_EXPORT const char *px_mca_sysconfdir(void);

/* Load parameter files and the environment once (no refcount). */
int px_mca_var_load(void);

/* Set by framework.c: true when `name` belongs to a component that exists
 * but whose variables were not registered (excluded by a selection list),
 * so px_mca_var_check_unknown must not call it unknown. */
PX_EXPORT extern bool (*px_mca_var_unregistered_component_filter)(const char *name);

/* Split `s` at `sep` (core/util/argv.h), trimming blanks around each part
 * and dropping empty ones: "self, shm," -> {"self", "shm"}. NULL when there
 * is no part; free with px_argv_free. */
PX_EXPORT char **px_mca_split_trimmed(const char *s, char sep);

/* Repository internals (repository.c) used by framework.c. */
int px_mca_repository_init(void);
void px_mca_repository_finalize(void);
/* Components of a framework, built-in first (in list order). */
PX_EXPORT int px_mca_repository_static_for(const char *framework, const px_mca_component_t **out,
                                           int max);
/* Plugin files on mca_component_path for a framework: component names and
 * paths, as parallel argv vectors (the first folder with a name wins).
 * Returns the count; the caller frees both with px_argv_free. */
PX_EXPORT int px_mca_repository_plugin_files(const char *framework, char ***names, char ***paths);
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
