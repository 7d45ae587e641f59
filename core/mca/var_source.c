/*
 * var_source.c: where values come from. Parameter files, the environment,
 * the command-line hand-off and the API are kept as "entries" (name, value,
 * source, where), which var_resolve.c weighs against each variable.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/mca/mca_internal.h"
#include "core/mca/var_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"

extern char **environ;

#define ENV_PREFIX     "PX_MCA_"
#define CMDLINE_PREFIX "PX_CMDLINE_MCA_"

entry_t *px_mca_var_entries;
int px_mca_var_n_entries;
static int cap_entries;
static bool loaded;
static char *param_files_value; /* storage of mca_param_files */
bool px_mca_var_strict_value;   /* storage of mca_base_strict */

/* ------------------------------------------------------------ small helpers */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

char **px_mca_split_trimmed(const char *s, char sep)
{
    char **parts = px_argv_split(s ? s : "", sep);
    char **out = NULL;
    for (int i = 0; parts && parts[i]; i++) {
        char *t = trim(parts[i]);
        if (*t)
            px_argv_append_nosize(&out, t);
    }
    px_argv_free(parts);
    return out;
}

entry_t *px_mca_var_find_entry(const char *name, px_mca_var_source_t source)
{
    for (int i = 0; i < px_mca_var_n_entries; i++)
        if (px_mca_var_entries[i].source == source && 0 == strcmp(px_mca_var_entries[i].name, name))
            return &px_mca_var_entries[i];
    return NULL;
}

entry_t *px_mca_var_add_entry(const char *name, const char *value, px_mca_var_source_t source,
                              const char *where, int file_seq)
{
    entry_t *e = px_mca_var_find_entry(name, source);
    if (e) {
        free(e->value);
        free(e->where);
    } else {
        if (px_mca_var_n_entries == cap_entries) {
            int cap = cap_entries ? cap_entries * 2 : 32;
            entry_t *ne = realloc(px_mca_var_entries, (size_t)cap * sizeof(*ne));
            if (!ne)
                return NULL;
            px_mca_var_entries = ne;
            cap_entries = cap;
        }
        e = &px_mca_var_entries[px_mca_var_n_entries++];
        memset(e, 0, sizeof(*e));
        e->name = strdup(name);
        e->source = source;
    }
    e->value = strdup(value ? value : "");
    e->where = where ? strdup(where) : NULL;
    e->file_seq = file_seq;
    e->bad = false;
    return e;
}

static void remove_entry(entry_t *e)
{
    free(e->name);
    free(e->value);
    free(e->where);
    size_t i = (size_t)(e - px_mca_var_entries);
    memmove(e, e + 1, (size_t)(px_mca_var_n_entries - (int)i - 1) * sizeof(*e));
    px_mca_var_n_entries--;
}

/* --------------------------------------------------------- types and text */
/* ------------------------------------------------------------- the sources */

const char *px_mca_sysconfdir(void)
{
    const char *e = getenv("PX_SYSCONFDIR");
    return (e && *e) ? e : PX_SYSCONFDIR;
}

/* The largest parameter file read; a larger one is refused as a whole (half
 * of a file's settings would be worse than none). */
#define PX_MCA_PARAM_FILE_MAX (1024 * 1024)

/* Read a whole parameter file into a NUL-terminated buffer. Only a regular
 * file of at most PX_MCA_PARAM_FILE_MAX bytes is read; it is opened with
 * O_NONBLOCK so that a FIFO (or a device) never blocks, then checked with
 * fstat. `role` says where the name came from, for the warnings. Returns NULL
 * (after a warning, except for a missing file that need not exist). */
static char *slurp_param_file(const char *path, const char *role, bool must_exist, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (must_exist || errno != ENOENT)
            px_show_warning("cannot read parameter file %s (%s): %s", path, role, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        px_show_warning("cannot read parameter file %s (%s): %s", path, role, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        const char *kind = S_ISDIR(st.st_mode)    ? "a directory"
                           : S_ISFIFO(st.st_mode) ? "a FIFO"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : "not a regular file";
        px_show_warning("parameter file %s (%s) is %s; ignored (a parameter file must be a "
                        "regular file of at most %d bytes)",
                        path, role, kind, PX_MCA_PARAM_FILE_MAX);
        close(fd);
        return NULL;
    }
    if (st.st_size > PX_MCA_PARAM_FILE_MAX) {
        px_show_warning("parameter file %s (%s) is %lld bytes, more than the %d bytes (1 MiB) "
                        "a parameter file may have; ignored",
                        path, role, (long long)st.st_size, PX_MCA_PARAM_FILE_MAX);
        close(fd);
        return NULL;
    }
    /* Read at most one byte past the cap: a file that grew since fstat is
     * caught too. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (cap > PX_MCA_PARAM_FILE_MAX)
                break;
            size_t ncap = cap * 2 > PX_MCA_PARAM_FILE_MAX + 1 ? PX_MCA_PARAM_FILE_MAX + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            px_show_warning("cannot read parameter file %s (%s): %s", path, role, strerror(errno));
            free(buf);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    if (n > PX_MCA_PARAM_FILE_MAX) {
        px_show_warning("parameter file %s (%s) is more than the %d bytes (1 MiB) a parameter "
                        "file may have; ignored",
                        path, role, PX_MCA_PARAM_FILE_MAX);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Read one `name = value` file. Missing files are silent unless `must_exist`;
 * anything but a regular file of at most 1 MiB is refused with a warning. */
static void read_file(const char *path, px_mca_var_source_t source, int seq, bool must_exist,
                      const char *role)
{
    size_t len = 0;
    char *text = slurp_param_file(path, role, must_exist, &len);
    if (!text)
        return;
    int lineno = 0;
    char *next = text, *end = text + len;
    while (next < end) {
        char *line = next;
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (nl) {
            *nl = '\0';
            next = nl + 1;
        } else {
            next = end;
        }
        lineno++;
        char *t = trim(line);
        if (!*t || *t == '#')
            continue;
        char *eq = strchr(t, '=');
        if (!eq) {
            px_show_warning("%s:%d: expected \"name = value\", found \"%s\"; line ignored", path,
                            lineno, t);
            continue;
        }
        *eq = '\0';
        char *name = trim(t), *value = trim(eq + 1);
        size_t vl = strlen(value);
        if (vl >= 2 && (value[0] == '"' || value[0] == '\'') && value[vl - 1] == value[0]) {
            value[vl - 1] = '\0';
            value++;
        }
        if (!*name) {
            px_show_warning("%s:%d: no variable name before \"=\"; line ignored", path, lineno);
            continue;
        }
        entry_t *old = px_mca_var_find_entry(name, source);
        if (old && old->file_seq < seq)
            continue; /* a higher-priority file already set it */
        char where[PATH_MAX + 32];
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        px_mca_var_add_entry(name, value, source, where, seq);
    }
    free(text);
}

static void read_environment(void)
{
    for (char **e = environ; e && *e; e++) {
        const char *kv = *e;
        px_mca_var_source_t src;
        size_t plen;
        if (0 == strncmp(kv, CMDLINE_PREFIX, strlen(CMDLINE_PREFIX))) {
            src = PX_MCA_VAR_SOURCE_COMMAND_LINE;
            plen = strlen(CMDLINE_PREFIX);
        } else if (0 == strncmp(kv, ENV_PREFIX, strlen(ENV_PREFIX))) {
            src = PX_MCA_VAR_SOURCE_ENV;
            plen = strlen(ENV_PREFIX);
        } else {
            continue;
        }
        const char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        if ((size_t)(eq - kv) == plen) {
            px_show_warning("environment variable %.*s (\"%s\") names no variable; ignored "
                            "(expected %s<name>=value, e.g. %sbtl=self,shm)",
                            (int)plen, kv, kv,
                            src == PX_MCA_VAR_SOURCE_ENV ? ENV_PREFIX : CMDLINE_PREFIX,
                            src == PX_MCA_VAR_SOURCE_ENV ? ENV_PREFIX : CMDLINE_PREFIX);
            continue;
        }
        char *name = strndup(kv + plen, (size_t)(eq - kv) - plen);
        char *envname = strndup(kv, (size_t)(eq - kv));
        if (name && envname)
            px_mca_var_add_entry(name, eq + 1, src, envname, 0);
        free(name);
        free(envname);
    }
}

int px_mca_var_load(void)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (loaded) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_SUCCESS;
    }
    loaded = true;
    read_environment();
    /* mca_param_files comes from the environment or command-line hand-off. */
    param_files_value = NULL;
    px_mca_var_register("mca", NULL, "param_files",
                        "Extra parameter files, colon-separated; they take precedence over "
                        "~/.plexus/mca-params.conf and the system file (set in the environment "
                        "or on the command line only)",
                        PX_MCA_VAR_TYPE_STRING, NULL, 5, PX_MCA_VAR_SCOPE_READONLY, 0,
                        &param_files_value);
    int seq = 0;
    char **files = px_mca_split_trimmed(param_files_value, ':');
    for (int i = 0; files && files[i]; i++) {
        const char *p = files[i];
        char *expanded = NULL;
        if (p[0] == '~' && p[1] == '/' && getenv("HOME"))
            expanded = px_asprintf("%s%s", getenv("HOME"), p + 1);
        read_file(expanded ? expanded : p, PX_MCA_VAR_SOURCE_FILE, seq++, true,
                  "listed in mca_param_files");
        free(expanded);
    }
    px_argv_free(files);
    const char *home = getenv("HOME");
    if (home && *home) {
        char *p = px_asprintf("%s/.plexus/mca-params.conf", home);
        if (p)
            read_file(p, PX_MCA_VAR_SOURCE_FILE, seq++, false, "the user's parameter file");
        free(p);
    }
    char *sys = px_asprintf("%s/plexus-mca-params.conf", px_mca_sysconfdir());
    if (sys)
        read_file(sys, PX_MCA_VAR_SOURCE_FILE, seq++, false, "the system parameter file");
    free(sys);
    char *ovr = px_asprintf("%s/plexus-mca-params-override.conf", px_mca_sysconfdir());
    if (ovr)
        read_file(ovr, PX_MCA_VAR_SOURCE_OVERRIDE, 0, false, "the system override file");
    free(ovr);
    px_mca_var_strict_value = false;
    px_mca_var_register("mca", "base", "strict",
                        "Make warnings about unknown variable names (PX_MCA_* environment "
                        "variables and parameter-file entries) fatal errors",
                        PX_MCA_VAR_TYPE_BOOL, NULL, 4, PX_MCA_VAR_SCOPE_ALL, 0,
                        &px_mca_var_strict_value);
    pthread_mutex_unlock(&px_mca_var_lock);
    return PX_SUCCESS;
}

static void drop_other_names(var_t *v, const char *keep, px_mca_var_source_t source)
{
    entry_t *e;
    if (strcmp(v->full_name, keep) != 0 && (e = px_mca_var_find_entry(v->full_name, source)))
        remove_entry(e);
    for (int k = 0; k < v->n_syns; k++) {
        const char *n = px_mca_vars[v->syns[k]]->full_name;
        if (strcmp(n, keep) != 0 && (e = px_mca_var_find_entry(n, source)))
            remove_entry(e);
    }
}

int px_mca_var_set_source(const char *full_name, const char *value, px_mca_var_source_t source,
                          const char *where)
{
    if (!full_name || !value || source == PX_MCA_VAR_SOURCE_DEFAULT)
        return PX_ERR_BAD_PARAM;
    pthread_mutex_lock(&px_mca_var_lock);
    px_mca_var_load();
    int idx = px_mca_var_find_unlocked(full_name);
    if (idx < 0) {
        if (source == PX_MCA_VAR_SOURCE_API) {
            const char *near[3];
            int n = px_mca_var_nearest(full_name, near, 3);
            px_show_error("cannot set unknown variable \"%s\"%s%s%s%s%s%s", full_name,
                          n ? "; nearest registered names: " : "", n > 0 ? near[0] : "",
                          n > 1 ? ", " : "", n > 1 ? near[1] : "", n > 2 ? ", " : "",
                          n > 2 ? near[2] : "");
            pthread_mutex_unlock(&px_mca_var_lock);
            return PX_ERR_NOT_FOUND;
        }
        /* Kept for a later registration. */
        px_mca_var_add_entry(full_name, value, source, where, -1);
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_SUCCESS;
    }
    var_t *v = px_mca_var_primary_of(idx);
    if ((v->flags & PX_MCA_VAR_FLAG_READONLY) || v->scope == PX_MCA_VAR_SCOPE_CONSTANT) {
        px_show_error("variable %s is read-only; cannot set it to \"%s\"", v->full_name, value);
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_NOT_SUPPORTED;
    }
    if (v->source == PX_MCA_VAR_SOURCE_OVERRIDE && source < PX_MCA_VAR_SOURCE_OVERRIDE) {
        char *cur = px_mca_var_value_string(px_mca_var_find_unlocked(v->full_name));
        px_show_error("variable %s is fixed to \"%s\" by the override file %s; cannot set it to "
                      "\"%s\" from the %s",
                      v->full_name, cur ? cur : "", v->where ? v->where : "?", value,
                      px_mca_var_source_name(source));
        free(cur);
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_NOT_SUPPORTED;
    }
    value_t tmp;
    bool parsed = px_mca_var_parse(v, value, &tmp);
    if (!parsed || !px_mca_var_in_range(v, &tmp)) {
        if (parsed && v->type == PX_MCA_VAR_TYPE_STRING)
            free(tmp.s);
        char *cur = px_mca_var_value_string(px_mca_var_find_unlocked(v->full_name));
        char *keep = px_asprintf("the current value \"%s\" is kept", cur ? cur : "");
        px_mca_var_report_bad_value(v, full_name, value, source, where, keep, parsed);
        free(cur);
        free(keep);
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_BAD_PARAM;
    }
    if (v->type == PX_MCA_VAR_TYPE_STRING)
        free(tmp.s);
    /* Latest wins within a source: drop what the variable's other names
     * had at this source (a synonym set after the name, or the reverse). */
    drop_other_names(v, full_name, source);
    px_mca_var_add_entry(full_name, value, source, where, -1);
    int rc = px_mca_var_resolve(v);
    pthread_mutex_unlock(&px_mca_var_lock);
    return rc;
}

int px_mca_var_set(const char *full_name, const char *value)
{
    return px_mca_var_set_source(full_name, value, PX_MCA_VAR_SOURCE_API, NULL);
}

int px_mca_var_set_cmdline(const char *name, const char *value, bool export_to_env)
{
    if (!name || !*name || !value)
        return PX_ERR_BAD_PARAM;
    int rc = px_mca_var_set_source(name, value, PX_MCA_VAR_SOURCE_COMMAND_LINE, "--mca");
    if (rc == PX_SUCCESS && export_to_env) {
        char *env = px_asprintf(CMDLINE_PREFIX "%s", name);
        if (!env || setenv(env, value, 1) != 0)
            rc = PX_ERR_OUT_OF_RESOURCE;
        free(env);
    }
    return rc;
}

void px_mca_var_sources_reset(void)
{
    for (int i = 0; i < px_mca_var_n_entries; i++) {
        free(px_mca_var_entries[i].name);
        free(px_mca_var_entries[i].value);
        free(px_mca_var_entries[i].where);
    }
    free(px_mca_var_entries);
    px_mca_var_entries = NULL;
    px_mca_var_n_entries = cap_entries = 0;
    loaded = false;
}
