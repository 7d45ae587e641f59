/*
 * repository.c: where components come from. Built-in components are the
 * configure-generated px_mca_static_components[] plus those added with
 * px_mca_repository_add_static; plugins are files plexus_<fw>_<comp>.so on
 * mca_component_path, loaded with libltdl after checks (file and folder not
 * world-writable, every symbol resolvable, ABI, names, framework API). Every
 * refusal is recorded for px_info --show-failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <ltdl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include "core/class/object.h"
#include "core/mca/mca_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"

extern const px_mca_component_t *const px_mca_static_components[];

static const px_mca_component_t **added;
static int n_added, cap_added;
static px_mca_failed_component_t *failed;
static int n_failed, cap_failed;
static int lt_inited;
static char *component_path; /* storage of mca_component_path */
static char *path_prepend;   /* storage of mca_component_path_prepend */
static char **bad_folders;   /* folders already reported as unusable */
static int path_var = -1, prepend_var = -1;

static char *default_path(void)
{
    const char *home = getenv("HOME");
    char *p = NULL;
    if (home && *home) {
        if (asprintf(&p, "%s:%s/.plexus/components", PX_PLUGIN_DIR, home) < 0)
            p = NULL;
    } else {
        p = strdup(PX_PLUGIN_DIR);
    }
    return p;
}

static char *path_default_storage;

int px_mca_repository_init(void)
{
    if (!lt_inited) {
        if (lt_dlinit() != 0)
            return PX_ERROR;
        lt_inited = 1;
    }
    if (path_var < 0 || px_mca_var_find("mca_component_path") < 0) {
        if (!path_default_storage)
            path_default_storage = default_path();
        component_path = path_default_storage;
        path_var = px_mca_var_register(
            "mca", NULL, "component_path",
            "Folders searched for plugins plexus_<framework>_<component>.so, colon-separated "
            "(earlier folders win); setting it replaces the default, so to add a folder use "
            "mca_component_path_prepend",
            PX_MCA_VAR_TYPE_STRING, NULL, 5, PX_MCA_VAR_SCOPE_READONLY, 0, &component_path);
    }
    if (prepend_var < 0 || px_mca_var_find("mca_component_path_prepend") < 0) {
        path_prepend = NULL;
        prepend_var = px_mca_var_register(
            "mca", NULL, "component_path_prepend",
            "Folders searched for plugins before those of mca_component_path, colon-separated: "
            "add your own plugins' folder here and keep the default path",
            PX_MCA_VAR_TYPE_STRING, NULL, 5, PX_MCA_VAR_SCOPE_READONLY, 0, &path_prepend);
    }
    return PX_SUCCESS;
}

void px_mca_repository_finalize(void)
{
    for (int i = 0; i < n_failed; i++) {
        free((char *)failed[i].framework);
        free((char *)failed[i].component);
        free((char *)failed[i].path);
        free((char *)failed[i].reason);
    }
    free(failed);
    failed = NULL;
    n_failed = cap_failed = 0;
    px_argv_free(bad_folders);
    bad_folders = NULL;
    path_var = prepend_var = -1;
    /* libltdl stays initialised: plugins of frameworks still open keep
     * their handles. */
}

int px_mca_repository_add_static(const px_mca_component_t *component)
{
    if (!component || !component->framework_name || !component->component_name)
        return PX_ERR_BAD_PARAM;
    for (int i = 0; i < n_added; i++)
        if (added[i] == component)
            return PX_SUCCESS;
    if (n_added == cap_added) {
        int cap = cap_added ? cap_added * 2 : 8;
        const px_mca_component_t **na = realloc(added, (size_t)cap * sizeof(*na));
        if (!na)
            return PX_ERR_OUT_OF_RESOURCE;
        added = na;
        cap_added = cap;
    }
    added[n_added++] = component;
    return PX_SUCCESS;
}

int px_mca_repository_static_for(const char *framework, const px_mca_component_t **out, int max)
{
    int n = 0;
    for (int i = 0; px_mca_static_components[i]; i++) {
        const px_mca_component_t *c = px_mca_static_components[i];
        if (0 == strcmp(c->framework_name, framework)) {
            if (n < max)
                out[n] = c;
            n++;
        }
    }
    for (int i = 0; i < n_added; i++) {
        if (0 == strcmp(added[i]->framework_name, framework)) {
            if (n < max)
                out[n] = added[i];
            n++;
        }
    }
    return n;
}

/* ---------------------------------------------------------------- refusals */

static void record_failure(const char *framework, const char *component, const char *path,
                           const char *fmt, ...) PX_PRINTF(4, 5);
static void record_failure(const char *framework, const char *component, const char *path,
                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *reason = px_vasprintf(fmt, ap);
    va_end(ap);
    /* The same file refused again (a framework opened twice): update. */
    for (int i = 0; i < n_failed; i++) {
        if (0 == strcmp(failed[i].framework, framework) &&
            0 == strcmp(failed[i].component, component) &&
            0 == strcmp(failed[i].path, path ? path : "(built-in)")) {
            free((char *)failed[i].reason);
            failed[i].reason = reason ? reason : strdup("?");
            return;
        }
    }
    if (n_failed == cap_failed) {
        int cap = cap_failed ? cap_failed * 2 : 8;
        px_mca_failed_component_t *nf = realloc(failed, (size_t)cap * sizeof(*nf));
        if (!nf) {
            free(reason);
            return;
        }
        failed = nf;
        cap_failed = cap;
    }
    failed[n_failed].framework = strdup(framework);
    failed[n_failed].component = strdup(component);
    failed[n_failed].path = strdup(path ? path : "(built-in)");
    failed[n_failed].reason = reason ? reason : strdup("?");
    n_failed++;
}

void px_mca_repository_record_failure(const char *framework, const char *component,
                                      const char *path, const char *reason)
{
    record_failure(framework, component, path, "%s", reason);
}

int px_mca_repository_failed_count(void)
{
    return n_failed;
}

const px_mca_failed_component_t *px_mca_repository_failed(int i)
{
    return (i >= 0 && i < n_failed) ? &failed[i] : NULL;
}

const px_mca_failed_component_t *px_mca_repository_failure_for(const char *framework,
                                                               const char *component)
{
    for (int i = n_failed - 1; i >= 0; i--)
        if (0 == strcmp(failed[i].framework, framework) &&
            0 == strcmp(failed[i].component, component))
            return &failed[i];
    return NULL;
}

/* ------------------------------------------------------------ plugin files */

static char *expand_home(const char *dir)
{
    const char *home = getenv("HOME");
    char *out = NULL;
    if (dir[0] == '~' && (dir[1] == '/' || dir[1] == '\0') && home) {
        if (asprintf(&out, "%s%s", home, dir + 1) < 0)
            out = NULL;
        return out;
    }
    return strdup(dir);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder of the search path that cannot be opened. One of the default
 * path's own folders (the install's plugin folder, ~/.plexus/components) may
 * well not exist: that is quiet. A folder the user named is a mistake: warn
 * once, naming it, the variable and where that was set, and list it for
 * px_info --show-failed. */
static void report_bad_folder(const char *named, const char *dir, int err, int var,
                              const char *varname)
{
    bool quiet = false;
    if (var == path_var) {
        char **defaults = px_mca_split_trimmed(path_default_storage, ':');
        for (int i = 0; defaults && defaults[i]; i++)
            quiet |= (0 == strcmp(defaults[i], named) || 0 == strcmp(defaults[i], dir));
        px_argv_free(defaults);
    }
    for (int i = 0; !quiet && bad_folders && bad_folders[i]; i++)
        quiet = (0 == strcmp(bad_folders[i], dir)); /* reported already */
    if (quiet)
        return;
    px_argv_append_nosize(&bad_folders, dir);
    char *src = var >= 0 ? px_mca_var_source_string(var) : NULL;
    const char *why = err == ENOENT    ? "does not exist"
                      : err == ENOTDIR ? "is not a folder"
                                       : strerror(err);
    px_show_warning("plugin folder %s (in %s, set by %s) %s; no plugins are loaded from it (%s "
                    "is a colon-separated list of existing folders)",
                    dir, varname, src ? src : "?",
                    err == ENOENT || err == ENOTDIR ? why : "cannot be read", varname);
    record_failure("mca", "component_path", dir, "plugin folder %s named in %s (set by %s) %s", dir,
                   varname, src ? src : "?", why);
    free(src);
}

/* The folders searched, in order: mca_component_path_prepend's, then
 * mca_component_path's (not yet expanded), each with the variable naming it. */
static int search_folders(char ***dirs, int **vars)
{
    char **pre = px_mca_split_trimmed(path_prepend, ':');
    char **path = px_mca_split_trimmed(component_path, ':');
    int np = px_argv_count(pre), n = np + px_argv_count(path);
    *dirs = NULL;
    *vars = calloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++) {
        px_argv_append_nosize(dirs, i < np ? pre[i] : path[i - np]);
        if (*vars)
            (*vars)[i] = i < np ? prepend_var : path_var;
    }
    px_argv_free(pre);
    px_argv_free(path);
    return *vars ? n : 0;
}

char *px_mca_repository_search_path(void)
{
    px_mca_repository_init();
    char **dirs;
    int *vars;
    int n = search_folders(&dirs, &vars);
    char *out = strdup("");
    for (int i = 0; out && i < n; i++) {
        char *next = px_asprintf("%s%s%s", out, i ? ":" : "", dirs[i]);
        free(out);
        out = next;
    }
    px_argv_free(dirs);
    free(vars);
    return out;
}

char *px_mca_repository_search_report(void)
{
    px_mca_repository_init();
    char **dirs;
    int *vars;
    int n = search_folders(&dirs, &vars);
    char *out = strdup("");
    for (int i = 0; out && i < n; i++) {
        char *dir = expand_home(dirs[i]);
        struct stat st;
        const char *state = !dir                   ? ""
                            : stat(dir, &st) != 0  ? " (does not exist)"
                            : !S_ISDIR(st.st_mode) ? " (not a folder)"
                                                   : "";
        char *next = px_asprintf("%s%s%s%s", out, i ? ", " : "", dir ? dir : dirs[i], state);
        free(dir);
        free(out);
        out = next;
    }
    if (out && n == 0) {
        free(out);
        out = strdup("none (mca_component_path and mca_component_path_prepend are empty)");
    }
    px_argv_free(dirs);
    free(vars);
    return out;
}

/* One read of a plugin folder: its plexus_*.so names, sorted, or why it could
 * not be opened; and the folder's mode, for the check before a load. */
typedef struct {
    char *dir; /* expanded */
    char **files;
    int err; /* 0, or opendir's errno */
    bool have_mode;
    mode_t mode;
} listing_t;

/* Between px_mca_repository_hold_listings and its release (px_init), each
 * folder is read once and its listing kept for every framework that opens
 * (boot, btl and coll each looked for plugins: three reads of each folder
 * per process) and for the folder check of each plugin loaded from it.
 * Outside that window every search reads the folders again, so a plugin
 * copied in later is found. */
static int listing_holds;
static listing_t *listings;
static int n_listings;

static void listing_free(listing_t *l)
{
    free(l->dir);
    px_argv_free(l->files);
    memset(l, 0, sizeof(*l));
}

static void listing_read(listing_t *l, char *dir)
{
    memset(l, 0, sizeof(*l));
    l->dir = dir;
    DIR *dh = opendir(dir);
    if (!dh) {
        l->err = errno;
        return;
    }
    struct stat st;
    if (fstat(dirfd(dh), &st) == 0) {
        l->have_mode = true;
        l->mode = st.st_mode;
    }
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t len = strlen(de->d_name);
        if (len > 10 && 0 == strncmp(de->d_name, "plexus_", 7) &&
            0 == strcmp(de->d_name + len - 3, ".so"))
            px_argv_append_nosize(&l->files, de->d_name);
    }
    closedir(dh);
    int n = px_argv_count(l->files);
    if (n > 1)
        qsort(l->files, (size_t)n, sizeof(char *), cmp_str);
}

/* The listing of `dir` (expanded; taken) while held: the kept one, or a new
 * read kept. NULL when not held: the caller reads into its own. */
static const listing_t *listing_kept(char *dir)
{
    if (listing_holds <= 0)
        return NULL;
    for (int i = 0; i < n_listings; i++)
        if (0 == strcmp(listings[i].dir, dir)) {
            free(dir);
            return &listings[i];
        }
    listing_t *nl = realloc(listings, (size_t)(n_listings + 1) * sizeof(*nl));
    if (!nl)
        return NULL;
    listings = nl;
    listing_read(&listings[n_listings], dir);
    return &listings[n_listings++];
}

void px_mca_repository_hold_listings(void)
{
    listing_holds++;
}

void px_mca_repository_release_listings(void)
{
    if (listing_holds > 0 && --listing_holds > 0)
        return;
    for (int i = 0; i < n_listings; i++)
        listing_free(&listings[i]);
    free(listings);
    listings = NULL;
    n_listings = 0;
}

int px_mca_repository_plugin_files(const char *framework, char ***names, char ***paths)
{
    px_mca_repository_init();
    *names = *paths = NULL;
    int count = 0;
    char **dirs;
    int *vars;
    int ndirs = search_folders(&dirs, &vars);
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "plexus_%s_", framework);
    size_t plen = strlen(prefix);
    for (int d = 0; d < ndirs; d++) {
        char *dir = expand_home(dirs[d]);
        if (!dir)
            continue;
        listing_t own;
        const listing_t *l = listing_kept(dir);
        if (!l) { /* not held, or no memory to keep it: dir was not taken */
            listing_read(&own, dir);
            l = &own;
        }
        dir = l->dir;
        if (l->err) {
            report_bad_folder(dirs[d], dir, l->err, vars[d],
                              vars[d] == prepend_var ? "mca_component_path_prepend"
                                                     : "mca_component_path");
            if (l == &own)
                listing_free(&own);
            continue;
        }
        char **found = NULL;
        for (int i = 0; l->files && l->files[i]; i++) {
            size_t len = strlen(l->files[i]);
            if (len > plen + 3 && 0 == strncmp(l->files[i], prefix, plen))
                px_argv_append_nosize(&found, l->files[i]);
        }
        int nfound = px_argv_count(found);
        for (int i = 0; i < nfound; i++) {
            size_t len = strlen(found[i]);
            char *comp = strndup(found[i] + plen, len - plen - 3);
            bool dup = false;
            for (int k = 0; comp && k < count; k++)
                if (0 == strcmp((*names)[k], comp))
                    dup = true; /* an earlier folder wins */
            char *full = NULL;
            if (comp && !dup && asprintf(&full, "%s/%s", dir, found[i]) >= 0) {
                px_argv_append_nosize(names, comp);
                px_argv_append_nosize(paths, full);
                count++;
                free(full);
            }
            free(comp);
        }
        px_argv_free(found);
        if (l == &own)
            listing_free(&own);
    }
    px_argv_free(dirs);
    free(vars);
    return count;
}

/* ------------------------------------------------------------------ loading */

/* ------------------------------------------------------------ compatibility */

static const px_mca_fingerprint_t library_fp = PX_MCA_FINGERPRINT(0, 0, 0, 0);

const px_mca_fingerprint_t *px_mca_library_fingerprint(void)
{
    return &library_fp;
}

/* The generic sizes of a fingerprint, with what each measures. */
#define FP_FIELD(field, what)                                                                      \
    {                                                                                              \
        offsetof(px_mca_fingerprint_t, field), what                                                \
    }
static const struct {
    size_t offset;
    const char *what;
} fp_fields[] = {
    FP_FIELD(component_size, "sizeof(px_mca_component_t)"),
    FP_FIELD(object_size, "sizeof(px_object_t)"),
    FP_FIELD(class_size, "sizeof(px_class_t)"),
    FP_FIELD(tcache_size, "sizeof(px_tcache_t)"),
    FP_FIELD(tcache_slots, "PX_TCACHE_SLOTS"),
    FP_FIELD(free_list_size, "sizeof(px_free_list_t)"),
    FP_FIELD(progress_size, "sizeof(px_progress_entry_t)"),
};

static uint32_t fp_get(const px_mca_fingerprint_t *fp, size_t offset)
{
    uint32_t v;
    memcpy(&v, (const char *)fp + offset, sizeof(v));
    return v;
}

/* Append ", <what>=<value>" to *s (grows; NULL on no memory stays NULL). */
static void append(char **s, const char *what, uint32_t value)
{
    if (!*s)
        return;
    char *n = px_asprintf("%s, %s=%u", *s, what, (unsigned)value);
    free(*s);
    *s = n;
}

/* The differences between the component's fingerprint and this library's
 * (with the framework's sizes for the component's minor), as a refusal, or
 * NULL when they agree. */
static char *fingerprint_mismatch(const px_mca_fingerprint_t *fp, const px_mca_framework_t *fw,
                                  int minor)
{
    if (fp->size != sizeof(px_mca_fingerprint_t))
        return px_asprintf("build fingerprint of %u bytes, this library's has %zu; rebuild the "
                           "plugin against this Plexus",
                           (unsigned)fp->size, sizeof(px_mca_fingerprint_t));
    char *theirs = px_asprintf("debug=%u", (unsigned)fp->debug);
    char *ours = px_asprintf("debug=%u", (unsigned)library_fp.debug);
    bool differ = fp->debug != library_fp.debug;
    for (size_t i = 0; i < sizeof(fp_fields) / sizeof(fp_fields[0]); i++) {
        uint32_t a = fp_get(fp, fp_fields[i].offset), b = fp_get(&library_fp, fp_fields[i].offset);
        if (a != b) {
            append(&theirs, fp_fields[i].what, a);
            append(&ours, fp_fields[i].what, b);
            differ = true;
        }
    }
    bool unrecorded = false;
    for (int k = 0; fw && fw->fp_sizes && fw->fp_size_names && k < PX_MCA_FINGERPRINT_FW_SIZES &&
                    fw->fp_size_names[k];
         k++) {
        uint32_t a = fp->fw_sizes[k], b = fw->fp_sizes[minor][k];
        if (a != b) {
            char *what = px_asprintf("sizeof(%s)", fw->fp_size_names[k]);
            append(&theirs, what ? what : "?", a);
            append(&ours, what ? what : "?", b);
            free(what);
            differ = true;
            unrecorded |= (a == 0);
        }
    }
    char *out = NULL;
    if (differ)
        out = px_asprintf(
            "build fingerprint mismatch: the plugin was built with %s; this library with %s%s; "
            "rebuild the plugin against this library's installed headers (same configure "
            "--enable-debug setting)",
            theirs ? theirs : "?", ours ? ours : "?",
            unrecorded ? " (a size of 0: the plugin did not fill its component header with its "
                         "framework's header macro, docs/writing-a-component.md)"
                       : "");
    free(theirs);
    free(ours);
    return out;
}

int px_mca_component_check(const px_mca_component_t *c, const px_mca_framework_t *fw,
                           const char *framework, const char *component, char **reason)
{
    *reason = NULL;
    /* ABI first: nothing after mca_abi_version is read when it differs. */
    if (c->mca_abi_version != PX_MCA_ABI_VERSION_CURRENT) {
        *reason = px_asprintf("MCA ABI version mismatch: the plugin has %d, this library has %d; "
                              "rebuild the plugin against this Plexus",
                              c->mca_abi_version, PX_MCA_ABI_VERSION_CURRENT);
        return PX_ERR_VERSION;
    }
    if (!c->framework_name || !c->component_name ||
        (framework && strcmp(c->framework_name, framework) != 0) ||
        (component && strcmp(c->component_name, component) != 0)) {
        *reason =
            px_asprintf("name mismatch: the struct says framework \"%s\" component \"%s\" but the "
                        "file name says \"%s\" \"%s\"",
                        c->framework_name ? c->framework_name : "(null)",
                        c->component_name ? c->component_name : "(null)",
                        framework ? framework : "?", component ? component : "?");
        return PX_ERR_BAD_PARAM;
    }
    if (fw) {
        const px_mca_version_t *have = &c->framework_version, *lib = &fw->api_version;
        if (have->major != lib->major) {
            *reason = px_asprintf("framework API version mismatch: built for %s API %d.%d.%d, "
                                  "this library has %d.%d.%d (the major must be the same: "
                                  "rebuild the plugin against this Plexus)",
                                  c->framework_name, have->major, have->minor, have->release,
                                  lib->major, lib->minor, lib->release);
            return PX_ERR_VERSION;
        }
        if (have->minor > lib->minor || have->minor < 0) {
            *reason = px_asprintf(
                "framework API too new: built for %s API %d.%d.%d, this library has %d.%d.%d "
                "(a plugin loads into a library of the same major and the same or a newer "
                "minor: use a Plexus with %s API %d.%d or newer, or rebuild the plugin "
                "against this one)",
                c->framework_name, have->major, have->minor, have->release, lib->major, lib->minor,
                lib->release, c->framework_name, have->major, have->minor);
            return PX_ERR_VERSION;
        }
    }
    *reason = fingerprint_mismatch(&c->fingerprint, fw, fw ? c->framework_version.minor : 0);
    return *reason ? PX_ERR_VERSION : PX_SUCCESS;
}

/* After the loader refused `path` for a missing symbol: open it lazily (no
 * code of it runs but its constructors), and say what check its component
 * struct fails, or NULL. */
static char *lazy_check(const char *path, const char *framework, const char *component,
                        const px_mca_framework_t *fw)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        (void)dlerror();
        return NULL;
    }
    char sym[256];
    snprintf(sym, sizeof(sym), "px_%s_%s_component", framework, component);
    const px_mca_component_t *c = dlsym(h, sym);
    char *why = NULL;
    if (c && px_mca_component_check(c, fw, framework, component, &why) == PX_SUCCESS) {
        free(why);
        why = NULL;
    }
    dlclose(h);
    return why;
}

/* Does the plugin opened as `probe` bring a second libplexus into the
 * process? The plugin's own scope (it and the libraries it needs) is searched
 * for one of libplexus's exported functions: when it finds one that is not
 * ours, the plugin would run on a copy of the library that px_init never set
 * up (a program linked with libplexus.a loading a plugin linked with
 * libplexus.so, or two libplexus files of different SONAMEs). Returns the
 * reason to refuse it (to free), or NULL. */
static char *second_library(void *probe)
{
    const void *ours = (const void *)px_mca_library_fingerprint;
    const void *theirs = dlsym(probe, "px_mca_library_fingerprint");
    (void)dlerror();
    if (NULL == theirs || theirs == ours)
        return NULL; /* one library: the plugin's calls reach the program's */
    Dl_info in_ours = {0}, in_theirs = {0};
    const char *our_file = dladdr(ours, &in_ours) && in_ours.dli_fname ? in_ours.dli_fname : "?";
    const char *their_file =
        dladdr(theirs, &in_theirs) && in_theirs.dli_fname ? in_theirs.dli_fname : "?";
    /* A name without "libplexus" is the program itself: libplexus.a is in it. */
    bool is_static = !strstr(our_file, "libplexus");
    return px_asprintf(
        "it would load a second copy of libplexus (%s) beside the one this process runs on "
        "(%s%s); its calls would reach a library that px_init never initialised. %s",
        their_file, is_static ? "linked statically into " : "", our_file,
        is_static ? "Plugins need the program linked with the shared libplexus (not libplexus.a, "
                    "not -static), or the component built in (configure it as static)"
                  : "Rebuild the plugin against this libplexus");
}

static bool world_writable(const char *path, const char *what, const char *framework,
                           const char *component, const char *plugin)
{
    struct stat st;
    const listing_t *kept = NULL;
    for (int i = 0; listing_holds > 0 && i < n_listings && !kept; i++)
        if (listings[i].have_mode && 0 == strcmp(listings[i].dir, path))
            kept = &listings[i]; /* the folder read moments ago: its mode then */
    if (kept) {
        st.st_mode = kept->mode;
    } else if (stat(path, &st) != 0) {
        record_failure(framework, component, plugin, "cannot stat %s %s: %s", what, path,
                       strerror(errno));
        return true;
    }
    if (st.st_mode & S_IWOTH) {
        record_failure(framework, component, plugin,
                       "%s %s is world-writable (mode %04o); plugins are never loaded from a "
                       "file or folder anyone can change",
                       what, path, (unsigned)(st.st_mode & 07777));
        return true;
    }
    return false;
}

int px_mca_repository_load_plugin(const char *framework, const char *component, const char *path,
                                  const px_mca_framework_t *fw, const px_mca_component_t **comp,
                                  void **handle)
{
    *comp = NULL;
    *handle = NULL;
    px_mca_repository_init();
    /* 1. Ownership: neither the folder nor the file may be world-writable. */
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
        *slash = '\0';
    bool bad = (dir && slash &&
                world_writable(dir[0] ? dir : "/", "folder", framework, component, path)) ||
               world_writable(path, "file", framework, component, path);
    free(dir);
    if (bad)
        return PX_ERR_NOT_AVAILABLE;
    /* 2. Every symbol must resolve now: libltdl binds lazily, so probe with
     * RTLD_NOW first and report the loader's own message. */
    void *probe = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        const char *e = dlerror();
        char *err = strdup(e ? e : "?");
        /* A plugin of another build (debug on one side only) typically calls
         * functions only that build exports: its versions or fingerprint say
         * why, better than the loader's missing symbol. */
        char *why = err && strstr(err, "undefined symbol")
                        ? lazy_check(path, framework, component, fw)
                        : NULL;
        if (why)
            record_failure(framework, component, path, "%s (and so: unresolved symbol: %s)", why,
                           err);
        else if (err && strstr(err, "undefined symbol"))
            record_failure(framework, component, path, "unresolved symbol: %s", err);
        else
            record_failure(framework, component, path, "cannot be loaded: %s", err ? err : "?");
        free(why);
        free(err);
        return PX_ERR_NOT_AVAILABLE;
    }
    /* 3. One libplexus: the plugin must not bring its own. */
    char *dup = second_library(probe);
    if (dup) {
        record_failure(framework, component, path, "%s", dup);
        free(dup);
        dlclose(probe);
        return PX_ERR_NOT_AVAILABLE;
    }
    lt_dladvise advise;
    lt_dlhandle h = NULL;
    if (lt_dladvise_init(&advise) == 0) {
        lt_dladvise_local(&advise);
        h = lt_dlopenadvise(path, advise);
        lt_dladvise_destroy(&advise);
    }
    dlclose(probe);
    if (!h) {
        const char *err = lt_dlerror();
        record_failure(framework, component, path, "cannot be loaded: %s", err ? err : "?");
        return PX_ERR_NOT_AVAILABLE;
    }
    /* 4. The expected symbol. */
    char sym[256];
    snprintf(sym, sizeof(sym), "px_%s_%s_component", framework, component);
    const px_mca_component_t *c = lt_dlsym(h, sym);
    if (!c) {
        record_failure(framework, component, path,
                       "does not export the symbol %s that its file name promises", sym);
        lt_dlclose(h);
        return PX_ERR_NOT_FOUND;
    }
    /* 5. ABI, names, framework API version and build fingerprint. */
    char *why = NULL;
    int rc = px_mca_component_check(c, fw, framework, component, &why);
    if (rc != PX_SUCCESS) {
        record_failure(framework, component, path, "%s", why ? why : "?");
        free(why);
        lt_dlclose(h);
        return rc;
    }
    /* A refusal recorded earlier for this file (since fixed) is stale. */
    for (int i = n_failed - 1; i >= 0; i--) {
        if (0 == strcmp(failed[i].path, path) && 0 == strcmp(failed[i].framework, framework)) {
            free((char *)failed[i].framework);
            free((char *)failed[i].component);
            free((char *)failed[i].path);
            free((char *)failed[i].reason);
            memmove(&failed[i], &failed[i + 1], (size_t)(n_failed - i - 1) * sizeof(*failed));
            n_failed--;
        }
    }
    *comp = c;
    *handle = h;
    return PX_SUCCESS;
}

/* Before a plugin's code and data go away, the class registry forgets the
 * classes it defined (core/class/object.h). In debug builds, objects of those
 * classes still alive are a plugin bug: they are reported and the plugin stays
 * loaded, so a later release of one does not jump into unmapped memory. */
void px_mca_repository_unload(void *handle, const void *symbol, const char *path)
{
    if (!handle)
        return;
    const lt_dlinfo *info = lt_dlgetinfo((lt_dlhandle)handle);
    bool last = !info || info->ref_count <= 1; /* not opened again by another framework */
    if (last && symbol && px_class_unload_module(symbol, path ? path : "a plugin") > 0) {
        px_show_warning("%s stays loaded: objects of its classes are still alive (listed above)",
                        path ? path : "a plugin");
        return;
    }
    lt_dlclose((lt_dlhandle)handle);
}
