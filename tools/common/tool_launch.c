/*
 * tool_launch.c: finding pxrun and checking a component name for the
 * conformance tools (tool_launch.h).
 */
#include "tools/common/tool_launch.h"
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/mca/mca_tools.h"
#include "core/mca/var.h"
#include "core/util/argv.h"

const char *px_tool_find_pxrun(char *buf, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(buf, len, "%s/pxrun", self) < (int)len && access(buf, X_OK) == 0)
                return buf;
        }
    }
    snprintf(buf, len, "%s/pxrun", PX_BINDIR);
    if (access(buf, X_OK) == 0)
        return buf;
    return "pxrun";
}

void px_tool_check_known(const char *tool, const char *framework, const char *name, char **mca)
{
    px_mca_var_init();
    for (int i = 0; mca && mca[i] && mca[i + 1]; i += 2)
        px_mca_var_set_cmdline(mca[i], mca[i + 1], false);
    const px_mca_component_t *builtin[64];
    int nb = px_mca_repository_static_for(framework, builtin, 64);
    char **names = NULL, **paths = NULL;
    int np = px_mca_repository_plugin_files(framework, &names, &paths);
    bool found = false;
    char list[2048] = "";
    for (int i = 0; i < nb && i < 64; i++) {
        found |= !strcmp(builtin[i]->component_name, name);
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s (built in)", l ? ", " : "",
                 builtin[i]->component_name);
    }
    for (int i = 0; i < np; i++) {
        found |= !strcmp(names[i], name);
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s (plugin %s)", l ? ", " : "", names[i], paths[i]);
    }
    px_argv_free(names);
    px_argv_free(paths);
    px_mca_var_finalize();
    if (!found) {
        fprintf(stderr,
                "%s: error: no %s component named \"%s\" here; available: %s\n"
                "(a plugin's folder is added with --mca mca_component_path_prepend DIR)\n",
                tool, framework, name, list[0] ? list : "none");
        exit(2);
    }
}

bool px_tool_common_option(int argc, char **argv, int *i, px_tool_opts_t *o,
                           void (*usage_exit)(const char *fmt, const char *arg))
{
    const char *a = argv[*i];
    if (!strcmp(a, "-n") || !strcmp(a, "--np")) {
        if (++*i >= argc)
            usage_exit("%s needs a number of ranks", a);
        char *end;
        long v = strtol(argv[*i], &end, 10);
        if (*end || v < 1 || v > 8)
            usage_exit("-n '%s': the number of ranks must be 1 to 8", argv[*i]);
        o->n = (int)v;
    } else if (!strcmp(a, "--timeout")) {
        if (++*i >= argc)
            usage_exit("%s needs seconds", a);
        char *end;
        double t = strtod(argv[*i], &end);
        if (*end || !(t >= 1 && t <= 3600))
            usage_exit("--timeout '%s': seconds from 1 to 3600", argv[*i]);
        o->timeout = t;
    } else if (!strcmp(a, "--mca")) {
        if (*i + 2 >= argc)
            usage_exit("%s needs a variable name and a value", a);
        px_argv_append(&o->nmca, &o->mca, argv[*i + 1]);
        px_argv_append(&o->nmca, &o->mca, argv[*i + 2]);
        *i += 2;
    } else if (!strcmp(a, "--pxrun")) {
        if (++*i >= argc)
            usage_exit("%s needs a path", a);
        o->pxrun = argv[*i];
    } else
        return false;
    return true;
}
