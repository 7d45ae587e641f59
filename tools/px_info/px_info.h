/*
 * px_info.h: shared state of the px_info tool. px_info.c parses the command
 * line and gathers what to show (frameworks, components, variables, failed
 * components); px_info_output.c prints it as aligned text (80 columns),
 * colon-separated lines (--parsable) or one JSON document (--json).
 */
#ifndef PX_INFO_H
#define PX_INFO_H

#include <stdbool.h>
#include <stdio.h>
#include "core/mca/framework.h"
#include "core/mca/var.h"

#define PX_INFO_WIDTH 80 /* pretty output never goes past this column */
#define PX_INFO_LABEL 22 /* right-aligned label width ("MCA btl self") */

typedef enum { PX_INFO_PRETTY, PX_INFO_PARSABLE, PX_INFO_JSON } px_info_format_t;

/* One component as px_info lists it. */
typedef struct px_info_component {
    const char *framework;
    const char *name;
    const px_mca_component_t *component; /* NULL when not loaded */
    const char *origin;                  /* "built-in" or "plugin" */
    const char *path;                    /* plugin file, or NULL */
    bool allowed;                        /* the selection list allows it */
    const char *state; /* "registered", "excluded", "refused", "failed" (open failed) */
} px_info_component_t;

typedef struct px_info_framework {
    px_mca_framework_t *fw;
    px_info_component_t *components;
    int ncomponents;
} px_info_framework_t;

typedef struct px_info {
    px_info_format_t format;
    /* What to show. */
    bool show_header; /* version, configuration, paths */
    bool show_version_only;
    bool show_config;
    bool show_components;
    bool show_params;
    bool show_failed;
    bool show_coll_rules; /* --coll-rules (and --all): the collectives' decision table */
    bool selected_only;
    bool all;
    const char *path_what; /* --path */
    const char *param_fw, *param_comp;
    const char *one_var; /* --var */
    int level;
    bool run_probes;      /* a component or variable was named: compute probed values */
    bool open_components; /* open (then close) each framework, so failed opens show */
    /* What was gathered. */
    px_info_framework_t *frameworks;
    int nframeworks;
} px_info_t;

/* Output (px_info_output.c). */
void px_info_print_header(const px_info_t *info, bool version, bool config, bool paths);
void px_info_print_path(const px_info_t *info, const char *what);
void px_info_print_components(const px_info_t *info);
void px_info_print_vars(const px_info_t *info, const int *indices, int n);
void px_info_print_failed(const px_info_t *info);
/* The coll framework's decision rules (rules file first, then the built-in
 * ones from the threshold variables); JSON: inside the document. */
void px_info_print_coll_rules(const px_info_t *info);
/* JSON: the whole document at once. */
void px_info_print_json(const px_info_t *info, const int *indices, int n, bool with_header,
                        bool with_components, bool with_failed);

/* Helpers shared by both files. */
const char *px_info_level_name(int level);
const char *px_info_scope_name(px_mca_var_scope_t scope);
/* The paths px_info knows: name, label, value (NULL-terminated table;
 * values computed at run time where they depend on the environment). */
typedef struct px_info_path {
    const char *name, *label;
    char *value;
} px_info_path_t;
const px_info_path_t *px_info_paths(void);
/* Whether the selection list of `fw` allows a variable's component. */
bool px_info_var_selected(const px_info_t *info, const px_mca_var_info_t *vi);

#endif
