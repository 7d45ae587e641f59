/*
 * tool_launch.h: what the conformance tools (px_btl_check, px_coll_check)
 * share before they start a job: finding pxrun, and refusing a component
 * name the framework does not have. Linked into each tool; not part of
 * libplexus.
 */
#ifndef PX_TOOL_LAUNCH_H
#define PX_TOOL_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

/* The options both tools take: -n RANKS, --timeout SECONDS, --mca NAME
 * VALUE (pairs appended to *mca), --pxrun PATH. */
typedef struct px_tool_opts {
    int n;          /* -n, 1..8; left as it was when not given */
    double timeout; /* --timeout, 1..3600 s */
    char **mca;     /* NAME, VALUE, ... (px_argv_free) */
    int nmca;
    const char *pxrun;
} px_tool_opts_t;

/* If argv[*i] is one of those options, take it (and its values, moving *i
 * past them) and return true; a missing or bad value calls usage_exit with a
 * message saying what would be accepted (it does not return). */
bool px_tool_common_option(int argc, char **argv, int *i, px_tool_opts_t *o,
                           void (*usage_exit)(const char *fmt, const char *arg));

/* The pxrun beside this program, else the installed one, else "pxrun" (found
 * through PATH); written into buf when found there. */
const char *px_tool_find_pxrun(char *buf, size_t len);

/* Exit with status 2 and a message listing the framework's components (built
 * in and plugins, with `mca` = name, value pairs applied first, so a folder
 * added with mca_component_path_prepend counts) when none is named `name`.
 * `tool` names the program in the message. */
void px_tool_check_known(const char *tool, const char *framework, const char *name, char **mca);

#endif
