/*
 * px_info.c: what this Plexus installation is and how it is set up: version,
 * build configuration, paths, every framework and component, every variable
 * with its value and where that value came from, and the components that
 * could not be used. Options follow ompi_info; see docs/px_info.md.
 *
 * px_info registers the frameworks (which loads the plugins the selection
 * lists allow and registers every variable). Only when failures are asked
 * for (--show-failed, --all, --json) does it also open each framework's
 * components, so that one whose open fails is listed, and close them again.
 */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/mca_tools.h"
#include "runtime/runtime.h"
#include "core/util/error.h"
#include "core/util/suggest.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"
#include "frameworks/coll/coll.h"
#include "frameworks/registry/registry.h"
#include "tools/px_info/px_info.h"

/* The frameworks px_info shows (core/ never names them; tools may). */
static px_mca_framework_t *all_frameworks[] = {
    &px_btl_base_framework,
    &px_boot_base_framework,
    &px_coll_base_framework,
    NULL, /* registry: px_registry_base_framework_get() (not exported as data) */
    NULL,
};

static int exit_code = 0;

static void usage(FILE *out)
{
    fprintf(out, "Usage: px_info [options]\n"
                 "Show how this Plexus was built and how it is set up.\n"
                 "\n"
                 "With no option: version, build configuration, paths, and every framework\n"
                 "and component with its versions.\n"
                 "\n"
                 "  -a, --all               everything: also every variable (level 9,\n"
                 "                          internal ones too) and the failed components\n"
                 "      --param FW COMP     variables of framework FW (or all) and\n"
                 "                          component COMP (or all, or base)\n"
                 "      --level N           with --param: variables of info level <= N\n"
                 "                          (1-9; 1-3 users, 4-6 tuners, 7-9 developers;\n"
                 "                          default 1)\n"
                 "      --var NAME          one variable, whatever its level\n"
                 "      --mca NAME VALUE    set a variable as a launcher's --mca does\n"
                 "                          (source \"command line\") before showing\n"
                 "      --selected-only     only components the selection lists allow\n"
                 "      --show-failed       components that were refused or failed, and why\n"
                 "      --coll-rules        the collectives' decision table: which coll\n"
                 "                          component serves which operation, message size\n"
                 "                          and group size (docs/coll.md)\n"
                 "      --path WHAT         one path: prefix, bindir, libdir, incdir,\n"
                 "                          pkglibdir, sysconfdir, component_path,\n"
                 "                          param_files, override_file, or all\n"
                 "      --config            the build configuration only\n"
                 "      --parsable          colon-separated lines for scripts\n"
                 "      --json              one JSON document (schema: docs/px_info.md)\n"
                 "  -V, --version           the version only\n"
                 "  -h, --help              this text\n"
                 "\n"
                 "Exit status: 0 on success, 1 for an unknown framework, component or\n"
                 "variable (the nearest names are suggested), 2 for a usage error.\n");
}

static const char *const option_names[] = {
    "--all",         "--param",   "--level",  "--var",      "--mca",        "--selected-only",
    "--show-failed", "--path",    "--config", "--parsable", "--coll-rules", "--parseable",
    "--json",        "--version", "--help",   NULL,
};

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "px_info: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nRun px_info --help for the options.\n");
    exit(2);
}

/* Print "nearest: a, b" for `name` among `cands` to stderr. */
static void suggest(const char *name, const char *const *cands, int n)
{
    const char *best[3];
    int nb = px_suggest_nearest(name, cands, n, best, 3);
    if (nb)
        fprintf(stderr, "; nearest: %s%s%s%s%s", best[0], nb > 1 ? ", " : "", nb > 1 ? best[1] : "",
                nb > 2 ? ", " : "", nb > 2 ? best[2] : "");
    fprintf(stderr, "\n");
}

static void list_add(const char ***list, int *n, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (0 == strcmp((*list)[i], s))
            return;
    const char **nl = realloc(*list, (size_t)(*n + 1) * sizeof(char *));
    if (!nl)
        return;
    *list = nl;
    nl[(*n)++] = s;
}

/* ------------------------------------------------------------- gathering */

static void add_component(px_info_framework_t *f, const px_info_component_t *c)
{
    px_info_component_t *nc = realloc(f->components, (size_t)(f->ncomponents + 1) * sizeof(*nc));
    if (!nc)
        return;
    f->components = nc;
    nc[f->ncomponents++] = *c;
}

static bool in_framework_list(px_mca_framework_t *fw, const char *name,
                              px_mca_component_item_t **out)
{
    px_mca_component_item_t *it;
    PX_LIST_FOREACH(it, &fw->components, px_mca_component_item_t)
    {
        if (0 == strcmp(it->component->component_name, name)) {
            if (out)
                *out = it;
            return true;
        }
    }
    return false;
}

/* The failure recorded for a component, if any. */
static const px_mca_failed_component_t *failure_of(const char *framework, const char *name)
{
    for (int i = px_mca_repository_failed_count() - 1; i >= 0; i--) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (0 == strcmp(f->framework, framework) && 0 == strcmp(f->component, name))
            return f;
    }
    return NULL;
}

/* Not in the framework's list any more: its open failed, or it was refused. */
static const char *gone_state(const char *framework, const char *name)
{
    const px_mca_failed_component_t *f = failure_of(framework, name);
    return f && 0 == strncmp(f->reason, "open failed", 11) ? "failed" : "refused";
}

static void gather(px_info_t *info)
{
    all_frameworks[3] = px_registry_base_framework_get();
    int n = 0;
    while (all_frameworks[n])
        n++;
    info->frameworks = calloc((size_t)n, sizeof(*info->frameworks));
    info->nframeworks = n;
    for (int i = 0; i < n; i++) {
        px_mca_framework_t *fw = all_frameworks[i];
        px_info_framework_t *f = &info->frameworks[i];
        f->fw = fw;
        if (px_mca_framework_register(fw) != PX_SUCCESS)
            exit_code = 1; /* the reason was printed */
        const char *selerr = px_mca_framework_selection_error(fw);
        if (selerr) {
            fprintf(stderr, "plexus: error: %s\n", selerr);
            exit_code = 1;
        } else if (info->open_components && px_mca_framework_open(fw) != PX_SUCCESS) {
            exit_code = 1; /* the reason was printed */
        }
        const px_mca_component_t *builtin[128];
        int nb = px_mca_repository_static_for(fw->name, builtin, 128);
        for (int k = 0; k < nb && k < 128; k++) {
            px_info_component_t c = {.framework = fw->name,
                                     .name = builtin[k]->component_name,
                                     .component = builtin[k],
                                     .origin = "built-in",
                                     .allowed =
                                         px_mca_framework_allows(fw, builtin[k]->component_name)};
            c.state = !c.allowed                            ? "excluded"
                      : in_framework_list(fw, c.name, NULL) ? "registered"
                                                            : gone_state(fw->name, c.name);
            add_component(f, &c);
        }
        char **names, **paths;
        int np = px_mca_repository_plugin_files(fw->name, &names, &paths);
        for (int k = 0; k < np; k++) {
            bool shadowed = false;
            for (int b = 0; b < nb && b < 128; b++)
                if (0 == strcmp(builtin[b]->component_name, names[k]))
                    shadowed = true;
            if (shadowed)
                continue;
            px_mca_component_item_t *it = NULL;
            px_info_component_t c = {.framework = fw->name,
                                     .name = strdup(names[k]),
                                     .origin = "plugin",
                                     .path = strdup(paths[k]),
                                     .allowed = px_mca_framework_allows(fw, names[k])};
            if (in_framework_list(fw, names[k], &it)) {
                c.component = it->component;
                c.state = "registered";
            } else {
                c.state = c.allowed ? gone_state(fw->name, names[k]) : "excluded";
            }
            add_component(f, &c);
        }
        px_argv_free(names);
        px_argv_free(paths);
    }
}

/* Release what gather() made and what registration loaded. */
static void finish(px_info_t *info)
{
    for (int i = 0; i < info->nframeworks; i++) {
        px_info_framework_t *f = &info->frameworks[i];
        for (int k = 0; k < f->ncomponents; k++) {
            if (0 == strcmp(f->components[k].origin, "plugin")) {
                free((char *)f->components[k].name);
                free((char *)f->components[k].path);
            }
        }
        free(f->components);
        px_mca_framework_close(f->fw);
    }
    free(info->frameworks);
    info->frameworks = NULL;
    info->nframeworks = 0;
    px_mca_var_finalize();
}

/* ------------------------------------------------------------- filtering */

bool px_info_var_selected(const px_info_t *info, const px_mca_var_info_t *vi)
{
    (void)info;
    for (int i = 0; i < info->nframeworks; i++) {
        px_mca_framework_t *fw = info->frameworks[i].fw;
        if (strcmp(fw->name, vi->framework) != 0)
            continue;
        if (!vi->component[0] || 0 == strcmp(vi->component, "base"))
            return true;
        return px_mca_framework_allows(fw, vi->component);
    }
    return true;
}

/* Frameworks known by name: the real ones plus the variable groups "mca"
 * and "runtime". */
static void known_frameworks(const px_info_t *info, const char ***list, int *n)
{
    for (int i = 0; i < info->nframeworks; i++)
        list_add(list, n, info->frameworks[i].fw->name);
    int nv = px_mca_var_count();
    for (int i = 0; i < nv; i++) {
        px_mca_var_info_t vi;
        if (px_mca_var_get_info(i, &vi) == PX_SUCCESS && vi.framework[0])
            list_add(list, n, vi.framework);
    }
}

static const px_info_framework_t *find_framework(const px_info_t *info, const char *name)
{
    for (int i = 0; i < info->nframeworks; i++)
        if (0 == strcmp(info->frameworks[i].fw->name, name))
            return &info->frameworks[i];
    return NULL;
}

/* Check --param FW COMP; false (after suggestions) when unknown. */
static bool check_param_names(const px_info_t *info)
{
    const char *fwname = info->param_fw, *comp = info->param_comp;
    const char **fws = NULL;
    int nfw = 0;
    known_frameworks(info, &fws, &nfw);
    bool fw_all = 0 == strcmp(fwname, "all");
    bool found = fw_all;
    for (int i = 0; i < nfw; i++)
        if (0 == strcmp(fws[i], fwname))
            found = true;
    if (!found) {
        fprintf(stderr, "px_info: error: unknown framework \"%s\"", fwname);
        suggest(fwname, fws, nfw);
        fprintf(stderr, "Frameworks:");
        for (int i = 0; i < nfw; i++)
            fprintf(stderr, " %s", fws[i]);
        fprintf(stderr, " (or all)\n");
        free(fws);
        return false;
    }
    if (0 == strcmp(comp, "all") || 0 == strcmp(comp, "base")) {
        free(fws);
        return true;
    }
    /* Components: those of the framework(s), plus variable component parts. */
    const char **comps = NULL;
    int nc = 0;
    for (int i = 0; i < info->nframeworks; i++) {
        const px_info_framework_t *f = &info->frameworks[i];
        if (!fw_all && strcmp(f->fw->name, fwname) != 0)
            continue;
        for (int k = 0; k < f->ncomponents; k++)
            list_add(&comps, &nc, f->components[k].name);
    }
    int nv = px_mca_var_count();
    for (int i = 0; i < nv; i++) {
        px_mca_var_info_t vi;
        if (px_mca_var_get_info(i, &vi) == PX_SUCCESS && vi.component[0] &&
            (fw_all || 0 == strcmp(vi.framework, fwname)))
            list_add(&comps, &nc, vi.component);
    }
    for (int i = 0; i < px_mca_repository_failed_count(); i++) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (fw_all || 0 == strcmp(f->framework, fwname))
            list_add(&comps, &nc, f->component);
    }
    found = false;
    for (int i = 0; i < nc; i++)
        if (0 == strcmp(comps[i], comp))
            found = true;
    if (!found) {
        fprintf(stderr, "px_info: error: unknown %s component \"%s\"", fw_all ? "" : fwname, comp);
        suggest(comp, comps, nc);
        fprintf(stderr, "Components:");
        for (int i = 0; i < nc; i++)
            fprintf(stderr, " %s", comps[i]);
        fprintf(stderr, " (or all, base)\n");
        free(comps);
        free(fws);
        return false;
    }
    /* Known, but excluded: say why nothing shows. */
    const px_info_framework_t *f = fw_all ? NULL : find_framework(info, fwname);
    for (int k = 0; f && k < f->ncomponents; k++) {
        const px_info_component_t *c = &f->components[k];
        if (0 == strcmp(c->name, comp) && 0 == strcmp(c->state, "excluded") &&
            0 == strcmp(c->origin, "plugin"))
            fprintf(stderr,
                    "px_info: note: %s component %s is excluded by the selection list %s=\"%s\", "
                    "so its plugin was not loaded and its variables are not registered\n",
                    fwname, comp, fwname, f->fw->selection ? f->fw->selection : "");
    }
    free(comps);
    free(fws);
    return true;
}

static void unknown_variable(const char *name, const char *how)
{
    const char *near[3];
    int n = px_mca_var_nearest(name, near, 3);
    fprintf(stderr, "px_info: error: unknown variable \"%s\"%s", name, how);
    if (n)
        fprintf(stderr, "; nearest: %s%s%s%s%s", near[0], n > 1 ? ", " : "", n > 1 ? near[1] : "",
                n > 2 ? ", " : "", n > 2 ? near[2] : "");
    fprintf(stderr, "\n");
}

/* Indices of the variables to show, of info level <= `level`; *max_level
 * (when not NULL) gets the highest level among them. */
static int *select_vars_at(const px_info_t *info, int level, int *count, int *max_level)
{
    int nv = px_mca_var_count();
    int *out = calloc((size_t)nv + 1, sizeof(int));
    int n = 0;
    for (int i = 0; out && i < nv; i++) {
        px_mca_var_info_t vi;
        if (px_mca_var_get_info(i, &vi) != PX_SUCCESS || vi.is_synonym_of_other)
            continue;
        if (info->one_var) {
            if (0 == strcmp(vi.full_name, info->one_var))
                out[n++] = i;
            continue;
        }
        if (vi.info_level > level)
            continue;
        if ((vi.flags & PX_MCA_VAR_FLAG_INTERNAL) && !info->all)
            continue;
        const char *fw = info->param_fw ? info->param_fw : "all";
        const char *comp = info->param_comp ? info->param_comp : "all";
        if (strcmp(fw, "all") != 0 && strcmp(vi.framework, fw) != 0)
            continue;
        if (strcmp(comp, "all") != 0) {
            const char *vc = vi.component[0] ? vi.component : "base";
            if (strcmp(vc, comp) != 0)
                continue;
        }
        if (info->selected_only && !px_info_var_selected(info, &vi))
            continue;
        if (max_level && vi.info_level > *max_level)
            *max_level = vi.info_level;
        out[n++] = i;
    }
    *count = n;
    return out;
}

static int *select_vars(const px_info_t *info, int *count)
{
    return select_vars_at(info, info->level, count, NULL);
}

/* --param at a level that hides some of the variables asked for: say how
 * many there are and the exact option that shows them. */
static void note_hidden_vars(const px_info_t *info, int shown)
{
    int all = 0, max_level = 0;
    free(select_vars_at(info, 9, &all, &max_level));
    if (all <= shown)
        return;
    const char *fw = info->param_fw, *comp = info->param_comp;
    bool fw_all = 0 == strcmp(fw, "all"), comp_all = 0 == strcmp(comp, "all");
    char what[256];
    snprintf(what, sizeof(what), "%s%s%s%s", fw_all ? "" : fw, fw_all || comp_all ? "" : " ",
             comp_all ? "" : comp, fw_all && comp_all ? "" : " ");
    if (shown == 0)
        fprintf(stderr,
                "px_info: note: no %svariable is at info level %d or below; %d %s at levels up "
                "to %d: px_info --param %s %s --level %d shows %s\n",
                what, info->level, all, all == 1 ? "is" : "are", max_level, fw, comp, max_level,
                all == 1 ? "it" : "them");
    else
        fprintf(stderr,
                "px_info: note: %d more %svariable%s %s at info levels above %d: px_info --param "
                "%s %s --level %d shows all %d\n",
                all - shown, what, all - shown == 1 ? "" : "s", all - shown == 1 ? "is" : "are",
                info->level, fw, comp, max_level, all);
}

/* ------------------------------------------------------------------ main */

typedef struct {
    const char *name, *value;
} mca_arg_t;

static int parse_level(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > 9)
        usage_error("--level takes a number from 1 to 9, not \"%s\"", s);
    return (int)v;
}

int main(int argc, char **argv)
{
    px_info_t info = {.format = PX_INFO_PRETTY, .level = 1};
    mca_arg_t *mca = calloc((size_t)argc, sizeof(*mca));
    int nmca = 0;
    bool any_section = false, level_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        /* Accept -option as well as --option, like ompi_info. */
        char opt[64];
        if (a[0] == '-' && a[1] != '-' && strlen(a) > 2)
            snprintf(opt, sizeof(opt), "-%s", a);
        else
            snprintf(opt, sizeof(opt), "%s", a);
        if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
            usage(stdout);
            free(mca);
            return 0;
        } else if (!strcmp(opt, "-V") || !strcmp(opt, "--version")) {
            info.show_version_only = true;
            any_section = true;
        } else if (!strcmp(opt, "-a") || !strcmp(opt, "--all")) {
            info.all = true;
            any_section = true;
        } else if (!strcmp(opt, "--param") || !strcmp(opt, "--params")) {
            if (i + 2 >= argc)
                usage_error("%s needs two arguments: a framework (or all) and a component (or "
                            "all)",
                            opt);
            info.param_fw = argv[++i];
            info.param_comp = argv[++i];
            info.show_params = true;
            any_section = true;
        } else if (!strcmp(opt, "--level")) {
            if (i + 1 >= argc)
                usage_error("%s needs a number from 1 to 9", opt);
            info.level = parse_level(argv[++i]);
            level_given = true;
        } else if (!strcmp(opt, "--var")) {
            if (i + 1 >= argc)
                usage_error("%s needs a variable name", opt);
            info.one_var = argv[++i];
            info.show_params = true;
            any_section = true;
        } else if (!strcmp(opt, "--mca") || !strcmp(opt, "--gmca")) {
            if (i + 2 >= argc)
                usage_error("%s needs two arguments: a variable name and a value", opt);
            mca[nmca].name = argv[i + 1];
            mca[nmca].value = argv[i + 2];
            nmca++;
            i += 2;
        } else if (!strcmp(opt, "--selected-only")) {
            info.selected_only = true;
        } else if (!strcmp(opt, "--show-failed")) {
            info.show_failed = true;
            any_section = true;
        } else if (!strcmp(opt, "--coll-rules")) {
            info.show_coll_rules = true;
            any_section = true;
        } else if (!strcmp(opt, "--path")) {
            if (i + 1 >= argc)
                usage_error("%s needs what to show (prefix, libdir, ..., or all)", opt);
            info.path_what = argv[++i];
            any_section = true;
        } else if (!strcmp(opt, "--config")) {
            info.show_config = true;
            any_section = true;
        } else if (!strcmp(opt, "--parsable") || !strcmp(opt, "--parseable")) {
            info.format = PX_INFO_PARSABLE;
        } else if (!strcmp(opt, "--json")) {
            info.format = PX_INFO_JSON;
        } else if (!strcmp(opt, "--pretty")) {
            info.format = PX_INFO_PRETTY;
        } else {
            fprintf(stderr, "px_info: error: unknown option \"%s\"", a);
            int n = 0;
            while (option_names[n])
                n++;
            suggest(opt, option_names, n);
            fprintf(stderr, "Run px_info --help for the options.\n");
            free(mca);
            return 2;
        }
    }
    (void)level_given;
    if (info.all) {
        info.level = 9;
        info.show_params = true;
        info.show_failed = true;
        info.show_coll_rules = true;
    }
    if (!any_section) {
        info.show_header = true;
        info.show_components = true;
    }
    if (info.all) {
        info.show_header = true;
        info.show_components = true;
    }

    if (info.show_version_only && info.format == PX_INFO_PRETTY && !info.show_header &&
        !info.show_params && !info.path_what && !info.show_config && !info.show_failed) {
        printf("px_info (Plexus) %s\n", PX_VERSION_STRING);
        free(mca);
        return 0;
    }

    /* Settings first, then registration, so their effect shows. */
    px_mca_var_init();
    for (int i = 0; i < nmca; i++) {
        int rc = px_mca_var_set_cmdline(mca[i].name, mca[i].value, false);
        if (rc != PX_SUCCESS && rc != PX_ERR_NOT_FOUND)
            exit_code = 1; /* the reason was printed */
    }
    px_rt_pml_register_params();
    info.open_components = info.show_failed || info.format == PX_INFO_JSON;
    gather(&info);
    for (int i = 0; i < nmca; i++) {
        if (px_mca_var_find(mca[i].name) < 0 &&
            !px_mca_framework_unregistered_component_var(mca[i].name)) {
            unknown_variable(mca[i].name, " given with --mca");
            exit_code = 1;
            goto out;
        }
    }
    if (px_mca_var_check_unknown() != PX_SUCCESS || px_mca_var_error_count() > 0)
        exit_code = 1;
    /* The collectives' rules file, if one is set: its mistakes are reported here too. */
    if ((info.show_coll_rules || info.format == PX_INFO_JSON) &&
        px_coll_base_rules_load(NULL) != PX_SUCCESS)
        exit_code = 1;
    if (info.param_fw && !check_param_names(&info)) {
        exit_code = 1;
        goto out;
    }
    if (info.one_var && px_mca_var_find(info.one_var) < 0) {
        unknown_variable(info.one_var, "");
        exit_code = 1;
        goto out;
    }
    if (info.path_what) {
        bool ok = 0 == strcmp(info.path_what, "all");
        const px_info_path_t *p = px_info_paths();
        const char *names[32];
        int n = 0;
        for (; p[n].name && n < 32; n++) {
            names[n] = p[n].name;
            if (0 == strcmp(p[n].name, info.path_what))
                ok = true;
        }
        if (!ok) {
            fprintf(stderr, "px_info: error: unknown path \"%s\"", info.path_what);
            suggest(info.path_what, names, n);
            fprintf(stderr, "Paths:");
            for (int k = 0; k < n; k++)
                fprintf(stderr, " %s", names[k]);
            fprintf(stderr, " (or all)\n");
            exit_code = 1;
            goto out;
        }
    }

    info.run_probes = info.one_var || (info.param_comp && strcmp(info.param_comp, "all") != 0);
    int nvars = 0;
    int *vars = info.show_params || info.format == PX_INFO_JSON ? select_vars(&info, &nvars) : NULL;
    if (info.param_fw && !info.one_var)
        note_hidden_vars(&info, nvars);

    if (info.format == PX_INFO_JSON) {
        px_info_print_json(&info, vars, nvars, true, true, true);
    } else {
        if (info.show_version_only)
            px_info_print_header(&info, true, false, false);
        if (info.show_header)
            px_info_print_header(&info, true, true, true);
        else if (info.show_config)
            px_info_print_header(&info, false, true, false);
        if (info.path_what)
            px_info_print_path(&info, info.path_what);
        if (info.show_components)
            px_info_print_components(&info);
        if (info.show_params)
            px_info_print_vars(&info, vars, nvars);
        if (info.show_failed)
            px_info_print_failed(&info);
        if (info.show_coll_rules)
            px_info_print_coll_rules(&info);
    }
    free(vars);
out:
    finish(&info);
    free(mca);
    fflush(stdout);
    return exit_code;
}
