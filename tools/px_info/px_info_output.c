/*
 * px_info_output.c: how px_info prints: aligned "label: text" lines wrapped
 * at 80 columns, colon-separated lines (--parsable), or one JSON document
 * (--json, schema "plexus.px_info/1" described in docs/px_info.md).
 * One concern past 800 lines: the three formats print the same records
 * (components, variables, paths, coll rules) and stay side by side so that
 * what one shows the others show.
 */
#define _GNU_SOURCE
#include "config.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/mca_tools.h"
#include "core/util/error.h"
#include "core/util/printf.h"
#include "frameworks/btl/base/base.h"
#include "frameworks/coll/coll.h"
#include "tools/px_info/px_info.h"

/* ------------------------------------------------------------------ text */

/* Print `text` after a right-aligned `label` and ": ", wrapped so that no
 * line passes PX_INFO_WIDTH; continuation lines are indented under the text.
 * A NULL label continues the previous entry. */
static void wrap(const char *label, const char *text)
{
    int lw = label ? (int)strlen(label) : 0;
    int indent = (lw > PX_INFO_LABEL ? lw : PX_INFO_LABEL) + 2;
    int width = PX_INFO_WIDTH - indent;
    if (label)
        printf("%*s: ", indent - 2, label);
    else
        printf("%*s", indent, "");
    if (!text || !*text) {
        printf("\n");
        return;
    }
    const char *p = text;
    int col = 0;
    while (*p) {
        if (*p == '\n') {
            printf("\n%*s", indent, "");
            col = 0;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        int wl = 0;
        while (p[wl] && p[wl] != ' ' && p[wl] != '\n')
            wl++;
        if (col > 0 && col + 1 + wl > width) {
            printf("\n%*s", indent, "");
            col = 0;
        } else if (col > 0) {
            putchar(' ');
            col++;
        }
        while (wl > width - col) { /* a word longer than a line: split it, */
            int take = width - col;
            /* after a '/' when there is one (paths), else anywhere */
            int slash = take;
            while (slash > take / 2 && p[slash - 1] != '/')
                slash--;
            if (slash > take / 2)
                take = slash;
            fwrite(p, 1, (size_t)take, stdout);
            p += take;
            wl -= take;
            printf("\n%*s", indent, "");
            col = 0;
        }
        fwrite(p, 1, (size_t)wl, stdout);
        col += wl;
        p += wl;
    }
    printf("\n");
}

/* Parsable values stay on one line. */
static void one_line(const char *prefix, const char *value)
{
    printf("%s", prefix);
    for (const char *p = value ? value : ""; *p; p++)
        putchar(*p == '\n' ? ' ' : *p);
    putchar('\n');
}

const char *px_info_level_name(int level)
{
    static const char *names[] = {
        "",          "user/basic", "user/detail", "user/all", "tuner/basic", "tuner/detail",
        "tuner/all", "dev/basic",  "dev/detail",  "dev/all"};
    return (level >= 1 && level <= 9) ? names[level] : "?";
}

const char *px_info_scope_name(px_mca_var_scope_t scope)
{
    switch (scope) {
    case PX_MCA_VAR_SCOPE_CONSTANT:
        return "constant";
    case PX_MCA_VAR_SCOPE_READONLY:
        /* Read when its framework opens; a file, PX_MCA_ or --mca sets it
         * (docs/px_info.md, "Scopes"). Not "read-only": that is a flag. */
        return "startup";
    case PX_MCA_VAR_SCOPE_LOCAL:
        return "local";
    case PX_MCA_VAR_SCOPE_ALL:
        return "all";
    }
    return "?";
}

static char *version_string(px_mca_version_t v)
{
    return px_asprintf("%d.%d.%d", v.major, v.minor, v.release);
}

/* A build fingerprint (core/mca/component.h) in one line; the framework's
 * own sizes only when recorded. */
static char *fingerprint_string(const px_mca_fingerprint_t *fp)
{
    char *fw = NULL;
    if (fp->fw_sizes[0] || fp->fw_sizes[1] || fp->fw_sizes[2] || fp->fw_sizes[3])
        fw = px_asprintf(" framework=%u/%u/%u/%u", (unsigned)fp->fw_sizes[0],
                         (unsigned)fp->fw_sizes[1], (unsigned)fp->fw_sizes[2],
                         (unsigned)fp->fw_sizes[3]);
    char *s =
        px_asprintf("debug=%u component=%u object=%u class=%u tcache=%u/%u free_list=%u "
                    "progress=%u%s",
                    (unsigned)fp->debug, (unsigned)fp->component_size, (unsigned)fp->object_size,
                    (unsigned)fp->class_size, (unsigned)fp->tcache_size, (unsigned)fp->tcache_slots,
                    (unsigned)fp->free_list_size, (unsigned)fp->progress_size, fw ? fw : "");
    free(fw);
    return s;
}

/* ----------------------------------------------------------------- paths */

static char *var_value(const char *name)
{
    int i = px_mca_var_find(name);
    return i >= 0 ? px_mca_var_value_string(i) : strdup("");
}

const px_info_path_t *px_info_paths(void)
{
    static px_info_path_t paths[] = {
        {"prefix", "Prefix", NULL},
        {"bindir", "Bindir", NULL},
        {"libdir", "Libdir", NULL},
        {"incdir", "Incdir", NULL},
        {"pkglibdir", "Plugin dir", NULL},
        {"sysconfdir", "Sysconfdir", NULL},
        {"component_path", "Component path", NULL},
        {"param_files", "Parameter files", NULL},
        {"override_file", "Override file", NULL},
        {NULL, NULL, NULL},
    };
    if (paths[0].value)
        return paths;
    paths[0].value = strdup(PX_PREFIX);
    paths[1].value = strdup(PX_BINDIR);
    paths[2].value = strdup(PX_LIBDIR);
    paths[3].value = strdup(PX_INCLUDEDIR);
    paths[4].value = strdup(PX_PLUGIN_DIR);
    paths[5].value = strdup(px_mca_sysconfdir());
    paths[6].value = px_mca_repository_search_path(); /* _prepend's folders first */
    char *extra = var_value("mca_param_files");
    const char *home = getenv("HOME");
    paths[7].value =
        px_asprintf("%s%s%s/.plexus/mca-params.conf:%s/plexus-mca-params.conf", extra ? extra : "",
                    extra && *extra ? ":" : "", home ? home : "~", px_mca_sysconfdir());
    free(extra);
    paths[8].value = px_asprintf("%s/plexus-mca-params-override.conf", px_mca_sysconfdir());
    return paths;
}

void px_info_print_path(const px_info_t *info, const char *what)
{
    const px_info_path_t *p = px_info_paths();
    for (; p->name; p++) {
        if (strcmp(what, "all") != 0 && strcmp(what, p->name) != 0)
            continue;
        if (info->format == PX_INFO_PARSABLE) {
            char *pre = px_asprintf("path:%s:", p->name);
            one_line(pre, p->value);
            free(pre);
        } else {
            /* Colon-separated lists read better one entry a line. */
            char *v = strdup(p->value ? p->value : "");
            char *save = NULL;
            bool first = true;
            bool list =
                0 == strcmp(p->name, "component_path") || 0 == strcmp(p->name, "param_files");
            if (list) {
                for (char *t = strtok_r(v, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
                    wrap(first ? p->label : NULL, t);
                    first = false;
                }
                if (first)
                    wrap(p->label, "");
            } else {
                wrap(p->label, v);
            }
            free(v);
        }
    }
}

/* ---------------------------------------------------------------- header */

static const char *trimmed(const char *s)
{
    while (*s == ' ')
        s++;
    return s;
}

typedef struct {
    const char *key, *label, *value;
} config_item_t;

static int config_items(config_item_t *out)
{
    int n = 0;
    out[n++] =
        (config_item_t){"configure_args", "Configure command line", trimmed(PX_CONFIGURE_ARGS)};
    out[n++] = (config_item_t){"host", "Build host", PX_BUILD_HOST};
    out[n++] = (config_item_t){"cc", "C compiler", PX_BUILD_CC};
    out[n++] = (config_item_t){"cflags", "C compiler flags", PX_BUILD_CFLAGS};
    out[n++] = (config_item_t){"debug", "Debug checks", PX_ENABLE_DEBUG ? "yes" : "no"};
#ifdef PX_HAVE_HWLOC
    out[n++] = (config_item_t){"hwloc", "hwloc support", "yes"};
#else
    out[n++] = (config_item_t){"hwloc", "hwloc support", "no"};
#endif
    out[n++] = (config_item_t){"builtin_components", "Built-in components",
                               trimmed(PX_STATIC_COMPONENTS_STR)};
    out[n++] = (config_item_t){
        "plugin_components", "Plugin components",
        *trimmed(PX_PLUGIN_COMPONENTS_STR) ? trimmed(PX_PLUGIN_COMPONENTS_STR) : "none"};
    return n;
}

void px_info_print_header(const px_info_t *info, bool version, bool config, bool paths)
{
    bool parsable = info->format == PX_INFO_PARSABLE;
    if (version) {
        if (parsable) {
            printf("package:Plexus %s\n", PX_VERSION_STRING);
            printf("version:full:%s\n", PX_VERSION_STRING);
            printf("version:mca_abi:%d\n", PX_MCA_ABI_VERSION_CURRENT);
            char *fp = fingerprint_string(px_mca_library_fingerprint());
            printf("version:fingerprint:%s\n", fp ? fp : "?");
            free(fp);
        } else {
            wrap("Package", "Plexus");
            wrap("Plexus", PX_VERSION_STRING);
            char *abi = px_asprintf("%d", PX_MCA_ABI_VERSION_CURRENT);
            wrap("MCA ABI version", abi);
            free(abi);
            char *fp = fingerprint_string(px_mca_library_fingerprint());
            wrap("Build fingerprint", fp ? fp : "?");
            free(fp);
        }
    }
    if (config) {
        config_item_t items[16];
        int n = config_items(items);
        for (int i = 0; i < n; i++) {
            if (parsable) {
                char *pre = px_asprintf("config:%s:", items[i].key);
                one_line(pre, items[i].value);
                free(pre);
            } else {
                wrap(items[i].label, items[i].value);
            }
        }
    }
    if (paths)
        px_info_print_path(info, "all");
}

/* ------------------------------------------------------------ components */

/* A loaded BTL component's thread support (BTL API 3.4): "multiple" or
 * "serialized"; NULL for another framework or a component not loaded. */
static const char *btl_threads(const px_info_component_t *c)
{
    if (NULL == c->component || strcmp(c->framework, "btl") != 0)
        return NULL;
    return px_btl_base_thread_support_name((const px_btl_component_t *)c->component);
}

/* The pretty line under a BTL component: what a user at PX_THREAD_MULTIPLE
 * gets from it. */
static char *btl_threads_text(const px_info_component_t *c)
{
    const px_mca_component_t *mc = c->component;
    if (PX_BTL_THREADS_MULTIPLE == px_btl_base_thread_support((const px_btl_component_t *)mc))
        return strdup("threads: multiple (thread-safe: called from any thread at once)");
    if (mc->framework_version.minor < 4)
        return px_asprintf("threads: serialized at PX_THREAD_MULTIPLE (built for "
                           "btl API %d.%d, before components declared thread support)",
                           mc->framework_version.major, mc->framework_version.minor);
    return strdup("threads: serialized at PX_THREAD_MULTIPLE (not thread-safe)");
}

static bool component_shown(const px_info_t *info, const px_info_component_t *c)
{
    return !info->selected_only || 0 == strcmp(c->state, "registered");
}

void px_info_print_components(const px_info_t *info)
{
    for (int i = 0; i < info->nframeworks; i++) {
        const px_info_framework_t *f = &info->frameworks[i];
        char *label = px_asprintf("MCA %s", f->fw->name);
        for (int k = 0; k < f->ncomponents; k++) {
            const px_info_component_t *c = &f->components[k];
            if (!component_shown(info, c))
                continue;
            if (info->format == PX_INFO_PARSABLE) {
                char *pre = px_asprintf("mca:%s:%s:", c->framework, c->name);
                if (c->component) {
                    char *api = version_string(c->component->framework_version);
                    char *ver = version_string(c->component->component_version);
                    printf("%sversion:mca:%d\n", pre, c->component->mca_abi_version);
                    printf("%sversion:api:%s\n", pre, api);
                    printf("%sversion:component:%s\n", pre, ver);
                    char *fp = fingerprint_string(&c->component->fingerprint);
                    printf("%sfingerprint:%s\n", pre, fp ? fp : "?");
                    free(fp);
                    free(api);
                    free(ver);
                }
                printf("%sorigin:%s\n", pre, c->origin);
                printf("%sstate:%s\n", pre, c->state);
                if (btl_threads(c))
                    printf("%sthreads:%s\n", pre, btl_threads(c));
                if (c->path)
                    printf("%spath:%s\n", pre, c->path);
                free(pre);
                continue;
            }
            char *text;
            if (c->component) {
                char *api = version_string(c->component->framework_version);
                char *ver = version_string(c->component->component_version);
                text = px_asprintf("%s (MCA ABI %d, API %s, component %s, %s%s%s%s)", c->name,
                                   c->component->mca_abi_version, api, ver, c->origin,
                                   strcmp(c->state, "registered") ? ", " : "",
                                   strcmp(c->state, "registered") ? c->state : "", "");
                free(api);
                free(ver);
            } else if (0 == strcmp(c->state, "excluded")) {
                text = px_asprintf("%s (%s, not loaded: excluded by %s=\"%s\")", c->name, c->origin,
                                   f->fw->name, f->fw->selection ? f->fw->selection : "");
            } else if (0 == strcmp(c->state, "failed")) {
                text = px_asprintf("%s (%s, open failed: see px_info --show-failed)", c->name,
                                   c->origin);
            } else {
                text = px_asprintf("%s (%s, %s: see px_info --show-failed)", c->name, c->origin,
                                   c->state);
            }
            wrap(label, text);
            free(text);
            if (btl_threads(c)) {
                char *threads = btl_threads_text(c);
                wrap(NULL, threads);
                free(threads);
            }
            if (c->path && info->all) {
                char *from = px_asprintf("from %s", c->path);
                wrap(NULL, from);
                free(from);
            }
            if (c->component && info->all) {
                char *fp = fingerprint_string(&c->component->fingerprint);
                char *line = px_asprintf("built with %s", fp ? fp : "?");
                wrap(NULL, line);
                free(line);
                free(fp);
            }
        }
        free(label);
    }
}

/* ------------------------------------------------------------- variables */

static char *valid_values(const px_mca_var_info_t *vi)
{
    if (vi->type == PX_MCA_VAR_TYPE_ENUM) {
        size_t len = 16;
        for (const px_mca_var_enum_value_t *e = vi->enum_values; e && e->name; e++)
            len += strlen(e->name) + 24;
        char *out = malloc(len);
        if (!out)
            return NULL;
        out[0] = '\0';
        for (const px_mca_var_enum_value_t *e = vi->enum_values; e && e->name; e++) {
            char buf[256];
            snprintf(buf, sizeof(buf), "%s%d:\"%s\"", e == vi->enum_values ? "" : ", ", e->value,
                     e->name);
            strcat(out, buf);
        }
        return out;
    }
    /* Sizes take k, M and G suffixes (docs/parameters.md); not repeated
     * under every size variable. */
    if (vi->type == PX_MCA_VAR_TYPE_BOOL)
        return px_mca_var_accepted_forms(vi->type, NULL);
    return NULL;
}

static char *flags_text(unsigned flags, const char *sep)
{
    char buf[128] = "";
    const char *names[] = {"read-only", "settable", "deprecated", "internal"};
    for (int b = 0; b < 4; b++) {
        if (flags & (1u << b)) {
            if (buf[0])
                strcat(buf, sep);
            strcat(buf, names[b]);
        }
    }
    return strdup(buf);
}

static char *var_label(const px_info_t *info, const px_mca_var_info_t *vi)
{
    bool real = false;
    for (int i = 0; i < info->nframeworks; i++)
        if (0 == strcmp(info->frameworks[i].fw->name, vi->framework))
            real = true;
    if (vi->component[0] && strcmp(vi->component, "base") != 0)
        return px_asprintf("%s%s %s", real ? "MCA " : "", vi->framework, vi->component);
    return px_asprintf("%s%s", real ? "MCA " : "", vi->framework[0] ? vi->framework : "base");
}

/* The value, or NULL when it would need a probe px_info was not asked to run. */
static char *shown_value(const px_info_t *info, int idx, const px_mca_var_info_t *vi)
{
    if (vi->probe_pending && !info->run_probes)
        return NULL;
    return px_mca_var_value_string(idx);
}

static char *not_probed_text(const px_mca_var_info_t *vi)
{
    return px_asprintf("(not probed: px_info --param %s %s shows it)", vi->framework,
                       vi->component[0] ? vi->component : "base");
}

static void print_var_pretty(const px_info_t *info, int idx)
{
    px_mca_var_info_t vi;
    if (px_mca_var_get_info(idx, &vi) != PX_SUCCESS)
        return;
    char *value = shown_value(info, idx, &vi);
    char *dflt = px_mca_var_default_string(idx);
    char *label = var_label(info, &vi);
    char *fl = flags_text(vi.flags, ", ");
    char *src;
    if (vi.source_where &&
        (vi.source == PX_MCA_VAR_SOURCE_FILE || vi.source == PX_MCA_VAR_SOURCE_OVERRIDE ||
         vi.source == PX_MCA_VAR_SOURCE_ENV || vi.source == PX_MCA_VAR_SOURCE_COMMAND_LINE))
        src = px_asprintf("%s (%s)", px_mca_var_source_name(vi.source), vi.source_where);
    else
        src = strdup(px_mca_var_source_name(vi.source));
    char *dpart = vi.source != PX_MCA_VAR_SOURCE_DEFAULT ? px_asprintf(", default: \"%s\"", dflt)
                                                         : strdup("");
    char *np = value ? NULL : not_probed_text(&vi);
    char *quoted = value ? px_asprintf("\"%s\"", value) : np;
    const char *rmin = NULL, *rmax = NULL;
    px_mca_var_get_range(idx, &rmin, &rmax);
    char *range = rmin || rmax ? px_asprintf(", range: %s..%s", rmin ? rmin : "", rmax ? rmax : "")
                               : strdup("");
    char *head =
        px_asprintf("%s \"%s\" (current value: %s%s, source: %s, level: %d %s, type: %s%s, "
                    "scope: %s%s%s)",
                    (vi.flags & PX_MCA_VAR_FLAG_READONLY) || vi.scope == PX_MCA_VAR_SCOPE_CONSTANT
                        ? "informational"
                        : "parameter",
                    vi.full_name, quoted ? quoted : "", dpart, src, vi.info_level,
                    px_info_level_name(vi.info_level), px_mca_var_type_name(vi.type),
                    range ? range : "", px_info_scope_name(vi.scope), fl[0] ? ", " : "", fl);
    free(range);
    wrap(label, head);
    if (vi.help && vi.help[0])
        wrap(NULL, vi.help);
    char *valid = valid_values(&vi);
    if (valid) {
        char *t = px_asprintf("Valid values: %s", valid);
        wrap(NULL, t);
        free(t);
        free(valid);
    }
    if (vi.synonyms && vi.synonyms[0]) {
        size_t len = 16;
        for (int k = 0; vi.synonyms[k]; k++)
            len += strlen(vi.synonyms[k]) + 16;
        char *syn = calloc(1, len);
        for (int k = 0; syn && vi.synonyms[k]; k++) {
            px_mca_var_info_t si;
            int sidx = px_mca_var_find(vi.synonyms[k]);
            bool dep = sidx >= 0 && px_mca_var_get_info(sidx, &si) == PX_SUCCESS &&
                       (si.flags & PX_MCA_VAR_FLAG_DEPRECATED);
            if (k)
                strcat(syn, ", ");
            strcat(syn, vi.synonyms[k]);
            if (dep)
                strcat(syn, " (deprecated)");
        }
        char *t = px_asprintf("Synonyms: %s", syn ? syn : "");
        wrap(NULL, t);
        free(t);
        free(syn);
    }
    free(head);
    if (quoted != np)
        free(quoted);
    free(np);
    free(dpart);
    free(src);
    free(fl);
    free(label);
    free(value);
    free(dflt);
}

static void print_var_parsable(const px_info_t *info, int idx)
{
    px_mca_var_info_t vi;
    if (px_mca_var_get_info(idx, &vi) != PX_SUCCESS)
        return;
    char *pre = px_asprintf("mca:%s:%s:param:%s:", vi.framework[0] ? vi.framework : "base",
                            vi.component[0] ? vi.component : "base", vi.full_name);
    char *value = shown_value(info, idx, &vi);
    if (!value) {
        printf("%sprobe_pending:yes\n", pre);
        value = not_probed_text(&vi);
    }
    char *dflt = px_mca_var_default_string(idx);
    char *p;
    p = px_asprintf("%svalue:", pre);
    one_line(p, value);
    free(p);
    p = px_asprintf("%sdefault:", pre);
    one_line(p, dflt);
    free(p);
    printf("%ssource:%s\n", pre, px_mca_var_source_name(vi.source));
    if (vi.source_where) {
        p = px_asprintf("%ssource_where:", pre);
        one_line(p, vi.source_where);
        free(p);
    }
    printf("%sstatus:%s\n", pre,
           (vi.flags & PX_MCA_VAR_FLAG_READONLY) || vi.scope == PX_MCA_VAR_SCOPE_CONSTANT ||
                   vi.source == PX_MCA_VAR_SOURCE_OVERRIDE
               ? "read-only"
               : "writeable");
    printf("%slevel:%d\n", pre, vi.info_level);
    p = px_asprintf("%shelp:", pre);
    one_line(p, vi.help);
    free(p);
    printf("%sdeprecated:%s\n", pre, (vi.flags & PX_MCA_VAR_FLAG_DEPRECATED) ? "yes" : "no");
    printf("%stype:%s\n", pre, px_mca_var_type_name(vi.type));
    const char *rmin = NULL, *rmax = NULL;
    px_mca_var_get_range(idx, &rmin, &rmax);
    if (rmin)
        printf("%srange:min:%s\n", pre, rmin);
    if (rmax)
        printf("%srange:max:%s\n", pre, rmax);
    printf("%sscope:%s\n", pre, px_info_scope_name(vi.scope));
    char *fl = flags_text(vi.flags, ",");
    printf("%sflags:%s\n", pre, fl);
    free(fl);
    for (const px_mca_var_enum_value_t *e = vi.enum_values; e && e->name; e++)
        printf("%senumerator:value:%d:%s\n", pre, e->value, e->name);
    for (int k = 0; vi.synonyms && vi.synonyms[k]; k++)
        printf("%ssynonym:name:%s\n", pre, vi.synonyms[k]);
    free(value);
    free(dflt);
    free(pre);
}

void px_info_print_vars(const px_info_t *info, const int *indices, int n)
{
    for (int i = 0; i < n; i++) {
        if (info->format == PX_INFO_PARSABLE)
            print_var_parsable(info, indices[i]);
        else
            print_var_pretty(info, indices[i]);
    }
}

/* ---------------------------------------------------------------- failed */

void px_info_print_failed(const px_info_t *info)
{
    int n = px_mca_repository_failed_count();
    if (info->format == PX_INFO_PRETTY && n == 0) {
        wrap("Failed components", "none");
        return;
    }
    for (int i = 0; i < n; i++) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (info->format == PX_INFO_PARSABLE) {
            char *pre = px_asprintf("failed:%s:%s:", f->framework, f->component);
            char *p = px_asprintf("%spath:", pre);
            one_line(p, f->path);
            free(p);
            p = px_asprintf("%sreason:", pre);
            one_line(p, f->reason);
            free(p);
            free(pre);
            continue;
        }
        char *label = px_asprintf("Failed %s %s", f->framework, f->component);
        wrap(label, f->reason);
        char *from = px_asprintf("file: %s", f->path);
        wrap(NULL, from);
        free(from);
        free(label);
    }
}

/* ------------------------------------------------------------------ JSON */

static void json_str(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", stdout);
            break;
        case '\\':
            fputs("\\\\", stdout);
            break;
        case '\n':
            fputs("\\n", stdout);
            break;
        case '\t':
            fputs("\\t", stdout);
            break;
        case '\r':
            fputs("\\r", stdout);
            break;
        default:
            if (*p < 0x20)
                printf("\\u%04x", *p);
            else
                putchar(*p);
        }
    }
    putchar('"');
}

static void json_key(const char *k, int indent, bool first)
{
    printf("%s\n%*s", first ? "" : ",", indent, "");
    json_str(k);
    fputs(": ", stdout);
}

static void json_kv(const char *k, const char *v, int indent, bool first)
{
    json_key(k, indent, first);
    json_str(v);
}

static void json_list(const char *s, char sep)
{
    char **v = px_mca_split_trimmed(s, sep);
    putchar('[');
    for (int i = 0; v && v[i]; i++) {
        if (i)
            fputs(", ", stdout);
        json_str(v[i]);
    }
    putchar(']');
    px_argv_free(v);
}

/* "4096", "16k", "1M": a byte count with a suffix when it is a round multiple. */
static void size_text(char *buf, size_t len, size_t v)
{
    if (v && 0 == v % (1u << 20))
        snprintf(buf, len, "%zuM", v >> 20);
    else if (v && 0 == v % 1024)
        snprintf(buf, len, "%zuk", v >> 10);
    else
        snprintf(buf, len, "%zu", v);
}

/* "any", "N", "LO-HI", "LO-" */
static void range_text(char *buf, size_t len, size_t lo, size_t hi, bool any_hi, bool sizes)
{
    char a[32], b[32];
    if (sizes) {
        size_text(a, sizeof(a), lo);
        size_text(b, sizeof(b), hi);
    } else {
        snprintf(a, sizeof(a), "%zu", lo);
        snprintf(b, sizeof(b), "%zu", hi);
    }
    if (0 == lo && any_hi)
        snprintf(buf, len, "any");
    else if (any_hi)
        snprintf(buf, len, "%s-", a);
    else if (lo == hi)
        snprintf(buf, len, "%s", a);
    else
        snprintf(buf, len, "%s-%s", a, b);
}

void px_info_print_coll_rules(const px_info_t *info)
{
    const px_coll_rule_t *rules;
    int n = px_coll_base_rules(&rules);
    if (info->format == PX_INFO_PARSABLE) {
        for (int i = 0; i < n; i++) {
            const px_coll_rule_t *r = &rules[i];
            char bmax[32] = "-1";
            if (r->bmax != SIZE_MAX)
                snprintf(bmax, sizeof(bmax), "%zu", r->bmax);
            printf("coll:rule:%d:%s:%d:%d:%zu:%s:%s:%s\n", i, px_coll_op_name(r->opid), r->gmin,
                   r->gmax, r->bmin, bmax, r->component, r->source);
        }
        return;
    }
    printf("Coll decision rules (the first that matches serves; a rule naming a component\n"
           "that does not serve the group is skipped; no match: the highest priority):\n");
    printf("  %-14s %-5s %-11s %-9s %s\n", "operation", "group", "bytes", "component", "from");
    for (int i = 0; i < n; i++) {
        const px_coll_rule_t *r = &rules[i];
        char g[72], b[72];
        range_text(g, sizeof(g), (size_t)r->gmin, (size_t)(r->gmax < 0 ? 0 : r->gmax), r->gmax < 0,
                   false);
        range_text(b, sizeof(b), r->bmin, r->bmax, r->bmax == SIZE_MAX, true);
        printf("  %-14s %-5s %-11s %-9s %s\n", px_coll_op_name(r->opid), g, b, r->component,
               r->source);
    }
}

static void json_coll_rules(void)
{
    const px_coll_rule_t *rules;
    int n = px_coll_base_rules(&rules);
    printf("[");
    for (int i = 0; i < n; i++) {
        const px_coll_rule_t *r = &rules[i];
        printf("%s\n    {\"operation\": \"%s\", \"group_min\": %d, \"group_max\": ", i ? "," : "",
               px_coll_op_name(r->opid), r->gmin);
        if (r->gmax < 0)
            fputs("null", stdout);
        else
            printf("%d", r->gmax);
        printf(", \"bytes_min\": %zu, \"bytes_max\": ", r->bmin);
        if (r->bmax == SIZE_MAX)
            fputs("null", stdout);
        else
            printf("%zu", r->bmax);
        printf(", \"component\": \"%s\", \"source\": ", r->component);
        json_str(r->source);
        printf("}");
    }
    printf("%s]", n ? "\n  " : "");
}

void px_info_print_json(const px_info_t *info, const int *indices, int n, bool with_header,
                        bool with_components, bool with_failed)
{
    printf("{");
    json_kv("schema", "plexus.px_info/1", 2, true);
    json_kv("version", PX_VERSION_STRING, 2, false);
    json_key("mca_abi_version", 2, false);
    printf("%d", PX_MCA_ABI_VERSION_CURRENT);
    if (with_header) {
        json_key("config", 2, false);
        printf("{");
        config_item_t items[16];
        int ni = config_items(items);
        for (int i = 0; i < ni; i++) {
            if (0 == strcmp(items[i].key, "builtin_components") ||
                0 == strcmp(items[i].key, "plugin_components")) {
                json_key(items[i].key, 4, i == 0);
                json_list(strcmp(items[i].value, "none") ? items[i].value : "", ' ');
            } else if (0 == strcmp(items[i].key, "debug") || 0 == strcmp(items[i].key, "hwloc")) {
                json_key(items[i].key, 4, i == 0);
                fputs(strcmp(items[i].value, "yes") ? "false" : "true", stdout);
            } else {
                json_kv(items[i].key, items[i].value, 4, i == 0);
            }
        }
        printf("\n  }");
        json_key("paths", 2, false);
        printf("{");
        const px_info_path_t *p = px_info_paths();
        for (int i = 0; p[i].name; i++) {
            if (0 == strcmp(p[i].name, "component_path") || 0 == strcmp(p[i].name, "param_files")) {
                json_key(p[i].name, 4, i == 0);
                json_list(p[i].value, ':');
            } else {
                json_kv(p[i].name, p[i].value, 4, i == 0);
            }
        }
        printf("\n  }");
    }
    if (with_components) {
        json_key("frameworks", 2, false);
        printf("[");
        bool firstf = true;
        for (int i = 0; i < info->nframeworks; i++) {
            const px_info_framework_t *f = &info->frameworks[i];
            printf("%s\n    {", firstf ? "" : ",");
            firstf = false;
            json_kv("name", f->fw->name, 6, true);
            json_kv("description", f->fw->description, 6, false);
            char *api = version_string(f->fw->api_version);
            json_kv("api_version", api, 6, false);
            free(api);
            json_kv("selection", f->fw->selection ? f->fw->selection : "", 6, false);
            json_key("components", 6, false);
            printf("[");
            bool firstc = true;
            for (int k = 0; k < f->ncomponents; k++) {
                const px_info_component_t *c = &f->components[k];
                if (!component_shown(info, c))
                    continue;
                printf("%s\n        {", firstc ? "" : ",");
                firstc = false;
                json_kv("name", c->name, 10, true);
                char *ver = c->component ? version_string(c->component->component_version) : NULL;
                char *capi = c->component ? version_string(c->component->framework_version) : NULL;
                json_kv("version", ver, 10, false);
                json_kv("api_version", capi, 10, false);
                json_key("mca_abi_version", 10, false);
                if (c->component)
                    printf("%d", c->component->mca_abi_version);
                else
                    fputs("null", stdout);
                json_kv("origin", c->origin, 10, false);
                json_kv("path", c->path, 10, false);
                json_kv("state", c->state, 10, false);
                json_kv("threads", btl_threads(c), 10, false);
                json_key("allowed", 10, false);
                fputs(c->allowed ? "true" : "false", stdout);
                printf("\n        }");
                free(ver);
                free(capi);
            }
            printf("%s]", firstc ? "" : "\n      ");
            printf("\n    }");
        }
        printf("\n  ]");
        json_key("coll_rules", 2, false);
        json_coll_rules();
    }
    json_key("variables", 2, false);
    printf("[");
    for (int i = 0; i < n; i++) {
        px_mca_var_info_t vi;
        if (px_mca_var_get_info(indices[i], &vi) != PX_SUCCESS)
            continue;
        printf("%s\n    {", i ? "," : "");
        char *value = shown_value(info, indices[i], &vi);
        char *dflt = px_mca_var_default_string(indices[i]);
        json_kv("name", vi.full_name, 6, true);
        json_kv("framework", vi.framework, 6, false);
        json_kv("component", vi.component, 6, false);
        json_kv("value", value, 6, false);
        json_kv("default", dflt, 6, false);
        json_kv("source", px_mca_var_source_name(vi.source), 6, false);
        json_kv("source_where", vi.source_where, 6, false);
        json_key("probe_pending", 6, false);
        fputs(value ? "false" : "true", stdout);
        json_key("level", 6, false);
        printf("%d", vi.info_level);
        json_kv("type", px_mca_var_type_name(vi.type), 6, false);
        const char *rmin = NULL, *rmax = NULL;
        px_mca_var_get_range(indices[i], &rmin, &rmax);
        json_kv("min", rmin, 6, false);
        json_kv("max", rmax, 6, false);
        json_kv("scope", px_info_scope_name(vi.scope), 6, false);
        json_key("flags", 6, false);
        char *fl = flags_text(vi.flags, ",");
        json_list(fl, ',');
        free(fl);
        json_key("enum_values", 6, false);
        if (vi.enum_values) {
            printf("[");
            for (const px_mca_var_enum_value_t *e = vi.enum_values; e->name; e++) {
                printf("%s{\"value\": %d, \"name\": ", e == vi.enum_values ? "" : ", ", e->value);
                json_str(e->name);
                printf("}");
            }
            printf("]");
        } else {
            fputs("null", stdout);
        }
        json_key("synonyms", 6, false);
        printf("[");
        for (int k = 0; vi.synonyms && vi.synonyms[k]; k++) {
            if (k)
                fputs(", ", stdout);
            json_str(vi.synonyms[k]);
        }
        printf("]");
        json_kv("help", vi.help, 6, false);
        printf("\n    }");
        free(value);
        free(dflt);
    }
    printf("%s]", n ? "\n  " : "");
    if (with_failed) {
        json_key("failed", 2, false);
        printf("[");
        int nf = px_mca_repository_failed_count();
        for (int i = 0; i < nf; i++) {
            const px_mca_failed_component_t *f = px_mca_repository_failed(i);
            printf("%s\n    {", i ? "," : "");
            json_kv("framework", f->framework, 6, true);
            json_kv("component", f->component, 6, false);
            json_kv("path", f->path, 6, false);
            json_kv("reason", f->reason, 6, false);
            printf("\n    }");
        }
        printf("%s]", nf ? "\n  " : "");
    }
    printf("\n}\n");
}
