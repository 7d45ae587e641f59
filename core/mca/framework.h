/*
 * framework.h: a framework (btl, boot, ...) and its component lifecycle.
 * A framework's base defines one px_mca_framework_t and calls
 * px_mca_framework_register/open/close; the MCA layer finds its components
 * (built in, then plugins on mca_component_path), filters them through the
 * selection variable <fw> ("self,shm" or "^ofi"), and runs register and open.
 * Selection proper (init / query) is the framework's business; two helpers
 * are offered below for the two usual styles.
 *
 * Every framework automatically gets the variables <fw> (selection list) and
 * <fw>_base_verbose (verbosity of its output stream: 1 says why a component
 * was refused, failed to open or was dropped; 10 says every step).
 * Not thread-safe: frameworks are opened and closed by one thread at a time.
 */
#ifndef PX_MCA_FRAMEWORK_H
#define PX_MCA_FRAMEWORK_H

#include <stdbool.h>
#include "core/util/compiler.h"
#include "core/class/list.h"
#include "core/mca/component.h"

/* An entry in a framework's component list. */
typedef struct px_mca_component_item {
    px_list_item_t super;
    const px_mca_component_t *component;
    void *dl_handle;  /* lt_dlhandle for plugins, NULL for built-in */
    const char *path; /* file a plugin came from, NULL for built-in */
} px_mca_component_item_t;
PX_EXPORT PX_CLASS_DECLARATION(px_mca_component_item_t);

typedef struct px_mca_framework {
    const char *name;        /* "btl" */
    const char *description; /* one line, shown by px_info */
    /* Components must have the same major and a minor no newer than this
     * (docs/writing-a-component.md, "Compatibility"). */
    px_mca_version_t api_version;
    int (*register_fn)(void); /* the framework's own variables; may be NULL */
    int (*open_fn)(void);     /* after components are opened; may be NULL */
    int (*close_fn)(void);    /* before components are closed; may be NULL */
    /* The framework's own sizes in a component's build fingerprint
     * (fingerprint.fw_sizes[k]): fp_size_names[k] says what each is (a struct
     * name, for messages; up to PX_MCA_FINGERPRINT_FW_SIZES, NULL ends) and
     * fp_sizes[m][k] is what a component built for API minor m records, for m
     * from 0 to api_version.minor. NULL: the framework checks none. */
    const char *const *fp_size_names;
    const uint32_t (*fp_sizes)[PX_MCA_FINGERPRINT_FW_SIZES];
    /* State, managed by the MCA layer: */
    int refcount; /* open count: tools may open without selecting */
    bool registered;
    int output;      /* stream for <fw>_base_verbose */
    int verbose;     /* value of <fw>_base_verbose */
    char *selection; /* value of <fw> */
    /* px_mca_component_item_t: after register the candidates, after open
     * those that opened; built-ins in list order, then plugins by file name. */
    px_list_t components;
} px_mca_framework_t;

/* Register the framework's variables and every candidate component's
 * variables (those the selection list allows). Idempotent. */
PX_EXPORT int px_mca_framework_register(px_mca_framework_t *fw);
/* Register if needed, then open every allowed component; those whose open
 * fails are closed and unloaded, saying why at <fw>_base_verbose. An include
 * list naming unknown components fails with every unknown name and its reason.
 * Refcounted: a second open only counts. */
PX_EXPORT int px_mca_framework_open(px_mca_framework_t *fw);
/* Drop one open; at zero close every component (reverse order) and unload. */
PX_EXPORT int px_mca_framework_close(px_mca_framework_t *fw);

/* "highest priority" selection: call query(component, &priority, &module) on
 * each open component; keep the highest non-negative priority, close and
 * remove the others. Returns PX_ERR_NOT_FOUND when none accepts. */
typedef int (*px_mca_query_fn)(const px_mca_component_t *component, int *priority, void **module);
PX_EXPORT int px_mca_select_highest(px_mca_framework_t *fw, px_mca_query_fn query,
                                    const px_mca_component_t **best, void **module);

/* After register: the error an open would report for an include list that
 * names unusable components (every name with its reason), or NULL. For tools
 * that register without opening (px_info). */
PX_EXPORT const char *px_mca_framework_selection_error(px_mca_framework_t *fw);

/* Whether the framework's selection list allows `component_name`. */
PX_EXPORT bool px_mca_framework_allows(px_mca_framework_t *fw, const char *component_name);

/* Close one component and remove it from the framework's list (after it
 * declined in init/query). */
PX_EXPORT void px_mca_framework_drop(px_mca_framework_t *fw, px_mca_component_item_t *item);

/* ---- repository: where components come from ---- */

/* Add a built-in component at run time (used by the test suite for its own
 * test framework); the configure-generated list is added automatically. */
PX_EXPORT int px_mca_repository_add_static(const px_mca_component_t *component);

/* Whether `component` may be used with `fw` (NULL: only what needs no
 * framework): the MCA ABI version, the names (`framework`/`component` as the
 * file name says; NULL: not checked), the framework API version (same major,
 * minor not newer) and the build fingerprint. Returns PX_SUCCESS, or an
 * error with *reason (caller frees) saying what differs in both builds. */
PX_EXPORT int px_mca_component_check(const px_mca_component_t *c, const px_mca_framework_t *fw,
                                     const char *framework, const char *component, char **reason);

/* This library's own fingerprint (framework sizes 0), for px_info. */
PX_EXPORT const px_mca_fingerprint_t *px_mca_library_fingerprint(void);

/* A plugin that was refused, and why; kept for px_info --show-failed. */
typedef struct px_mca_failed_component {
    const char *framework; /* may be "?" when the file name does not parse */
    const char *component;
    const char *path;
    const char *reason;
} px_mca_failed_component_t;
PX_EXPORT int px_mca_repository_failed_count(void);
PX_EXPORT const px_mca_failed_component_t *px_mca_repository_failed(int i);

/* Every component known for a framework (built in and plugins found), for
 * px_info: fills up to `max` entries, returns the total. */
PX_EXPORT int px_mca_repository_list(const char *framework, const px_mca_component_t **out,
                                     int max);

/* Frameworks known to the process (registered at least once), for px_info. */
PX_EXPORT int px_mca_framework_count(void);
PX_EXPORT px_mca_framework_t *px_mca_framework_get(int i);
PX_EXPORT px_mca_framework_t *px_mca_framework_find(const char *name);

/* True when `name` ("<fw>_<comp>_...") names a variable of a component that
 * exists (built in or a plugin file) in a registered framework but whose
 * variables were not registered (excluded by a selection list, or not
 * loaded): such a name is not "unknown". px_mca_framework_register installs
 * it as the variable system's unknown-name filter. */
PX_EXPORT bool px_mca_framework_unregistered_component_var(const char *name);

#endif
