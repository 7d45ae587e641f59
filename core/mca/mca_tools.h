/*
 * mca_tools.h: what the project's tools (px_info) read of the MCA internals
 * beyond the public framework.h and var.h: the components on disk, the
 * folder of the system parameter files. (Name suggestions are in
 * core/util/suggest.h.) Not installed:
 * tools built with the library include it; core/mca's own helpers stay in
 * mca_internal.h.
 */
#ifndef PX_MCA_TOOLS_H
#define PX_MCA_TOOLS_H

#include "core/util/compiler.h"
#include "core/mca/component.h"
#include "core/util/argv.h" /* px_argv_free for what these return */

/* The folder of the system parameter files: $PX_SYSCONFDIR or the
 * compiled-in one. */
PX_EXPORT const char *px_mca_sysconfdir(void);

/* Split `s` at `sep`, trimming blanks around each part and dropping empty
 * ones: "self, shm," -> {"self", "shm"}. NULL when there is no part; free
 * with px_argv_free (core/util/argv.h). */
PX_EXPORT char **px_mca_split_trimmed(const char *s, char sep);

/* Built-in components of a framework, in list order. */
PX_EXPORT int px_mca_repository_static_for(const char *framework, const px_mca_component_t **out,
                                           int max);
/* Plugin files on mca_component_path for a framework: component names and
 * paths, as parallel argv vectors (the first folder with a name wins).
 * Returns the count; the caller frees both with px_argv_free. */
PX_EXPORT int px_mca_repository_plugin_files(const char *framework, char ***names, char ***paths);
/* The plugin search path as searched: mca_component_path_prepend's folders,
 * then mca_component_path's, colon-separated (caller frees). */
PX_EXPORT char *px_mca_repository_search_path(void);
/* The same folders for a message inside the library: "A, B (does not
 * exist)", "~" expanded (caller frees). Not exported. */
char *px_mca_repository_search_report(void);
/* px_init's window (nested): from hold to the last release each plugin
 * folder is read once, its listing shared by every framework opened and by
 * the folder check of each plugin loaded; outside it every search reads the
 * folders again. Not exported. */
void px_mca_repository_hold_listings(void);
void px_mca_repository_release_listings(void);

/* Register a framework's own variables (and its register_fn's) without
 * looking for or loading any component: px_init does this for a framework it
 * opens only on first use (the registry), so a program that never uses it
 * does not load its plugins and their libraries. A variable of one of its
 * components counts as known while the component is not loaded (its plugin
 * file exists); px_mca_framework_register/open later do the rest, and then
 * look for unknown variables again (px_mca_var_check_unknown), which finds a
 * misspelled variable of one of its components. Internal to libplexus (not
 * exported). */
#include "core/mca/framework.h"
int px_mca_framework_register_deferred(px_mca_framework_t *fw);

#endif
