/*
 * tool_launch.h: what the conformance tools (px_btl_check, px_coll_check)
 * share before they start a job: finding pxrun, and refusing a component
 * name the framework does not have. Linked into each tool; not part of
 * libplexus.
 */
#ifndef PX_TOOL_LAUNCH_H
#define PX_TOOL_LAUNCH_H

#include <stddef.h>

/* The pxrun beside this program, else the installed one, else "pxrun" (found
 * through PATH); written into buf when found there. */
const char *px_tool_find_pxrun(char *buf, size_t len);

/* Exit with status 2 and a message listing the framework's components (built
 * in and plugins, with `mca` = name, value pairs applied first, so a folder
 * added with mca_component_path_prepend counts) when none is named `name`.
 * `tool` names the program in the message. */
void px_tool_check_known(const char *tool, const char *framework, const char *name, char **mca);

#endif
