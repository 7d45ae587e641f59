/*
 * var.c: MCA variables. Values come from sources (parameter files, the
 * environment, the command-line hand-off, the API, the override file), which
 * are kept as "entries" (name, value, source, where) and resolved against each
 * variable when it is registered or when a source changes. The highest
 * source that names the variable (or one of its synonyms) wins.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/mca/mca_internal.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"

extern char **environ;

#define ENV_PREFIX     "PX_MCA_"
#define CMDLINE_PREFIX "PX_CMDLINE_MCA_"

typedef union {
    int i;
    unsigned u;
    size_t z;
    bool b;
    double d;
    char *s;
} value_t;

typedef struct var {
    char *full_name, *framework, *component, *name, *help;
    px_mca_var_type_t type;
    const px_mca_var_enum_value_t *enum_values;
    int info_level;
    px_mca_var_scope_t scope;
    unsigned flags;
    void *storage;
    value_t dflt; /* for strings: the caller's original pointer */
    char *owned;  /* string we put in *storage */
    px_mca_var_source_t source;
    char *where;
    int synonym_for; /* -1 for a primary */
    int *syns;       /* synonym indices */
    int n_syns;
    const char **syn_names; /* NULL-terminated, for px_mca_var_get_info */
    bool warned_deprecated, warned_readonly, warned_override;
    px_mca_var_probe_fn probe; /* computes the value on first read */
    /* After px_mca_var_detach_component: the value lives here, and the
     * default and enum table are our own copies. */
    value_t internal;
    char *dflt_owned;
    px_mca_var_enum_value_t *enum_owned;
    /* Valid range (int, unsigned, size, double), set by px_mca_var_set_range.
     * The texts are ours and never change once set (a later set_range keeps
     * the old texts in `old_range` until finalize), so pointers handed out
     * by px_mca_var_get_range stay valid. */
    bool has_min, has_max;
    value_t rmin, rmax;
    char *range_min, *range_max;
    char **old_range;
    int n_old_range;
} var_t;

typedef struct entry {
    char *name, *value, *where;
    px_mca_var_source_t source;
    int file_seq; /* which file (0 = highest priority), for FILE entries */
    bool bad;     /* did not parse; ignored from then on */
    bool warned;  /* unknown-name warning given */
} entry_t;

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static var_t **vars;
static int n_vars, cap_vars;
static entry_t *entries;
static int n_entries, cap_entries;
static bool loaded;
static int init_count;
static int n_value_errors;      /* values that did not parse, reported */
static char *param_files_value; /* storage of mca_param_files */
static bool strict_value;       /* storage of mca_base_strict */

static px_mca_var_unknown_filter_fn unknown_filter; /* px_mca_var_set_unknown_filter */

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

int px_mca_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int stack[128];
    int *row = lb + 1 <= 128 ? stack : malloc((lb + 1) * sizeof(int));
    if (!row)
        return INT_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
            int best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    int d = row[lb];
    if (row != stack)
        free(row);
    return d;
}

int px_mca_suggest_limit(const char *name)
{
    int n = (int)strlen(name);
    return n < 6 ? 2 : n / 3 + 1;
}

static char *xasprintf(const char *fmt, ...) PX_PRINTF(1, 2);
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static char *join_name(const char *fw, const char *comp, const char *name)
{
    const char *parts[3] = {fw, comp, name};
    size_t len = 1;
    for (int i = 0; i < 3; i++)
        if (parts[i] && parts[i][0])
            len += strlen(parts[i]) + 1;
    char *out = malloc(len);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (int i = 0; i < 3; i++) {
        if (parts[i] && parts[i][0]) {
            if (out[0])
                strcat(out, "_");
            strcat(out, parts[i]);
        }
    }
    return out;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* ------------------------------------------------------------------ lookup */

static int find_unlocked(const char *full_name)
{
    for (int i = 0; i < n_vars; i++)
        if (0 == strcmp(vars[i]->full_name, full_name))
            return i;
    return PX_ERR_NOT_FOUND;
}

static var_t *primary_of(int index)
{
    var_t *v = vars[index];
    return v->synonym_for >= 0 ? vars[v->synonym_for] : v;
}

static entry_t *find_entry(const char *name, px_mca_var_source_t source)
{
    for (int i = 0; i < n_entries; i++)
        if (entries[i].source == source && 0 == strcmp(entries[i].name, name))
            return &entries[i];
    return NULL;
}

static entry_t *add_entry(const char *name, const char *value, px_mca_var_source_t source,
                          const char *where, int file_seq)
{
    entry_t *e = find_entry(name, source);
    if (e) {
        free(e->value);
        free(e->where);
    } else {
        if (n_entries == cap_entries) {
            int cap = cap_entries ? cap_entries * 2 : 32;
            entry_t *ne = realloc(entries, (size_t)cap * sizeof(*ne));
            if (!ne)
                return NULL;
            entries = ne;
            cap_entries = cap;
        }
        e = &entries[n_entries++];
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
    size_t i = (size_t)(e - entries);
    memmove(e, e + 1, (size_t)(n_entries - (int)i - 1) * sizeof(*e));
    n_entries--;
}

/* --------------------------------------------------------- types and text */

const char *px_mca_var_type_name(px_mca_var_type_t type)
{
    switch (type) {
    case PX_MCA_VAR_TYPE_INT:
        return "int";
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return "unsigned";
    case PX_MCA_VAR_TYPE_SIZE:
        return "size";
    case PX_MCA_VAR_TYPE_BOOL:
        return "bool";
    case PX_MCA_VAR_TYPE_DOUBLE:
        return "double";
    case PX_MCA_VAR_TYPE_STRING:
        return "string";
    case PX_MCA_VAR_TYPE_ENUM:
        return "enum";
    }
    return "?";
}

char *px_mca_var_accepted_forms(px_mca_var_type_t type, const px_mca_var_enum_value_t *ev)
{
    switch (type) {
    case PX_MCA_VAR_TYPE_INT:
        return strdup("an integer, e.g. 42, -1 or 0x10");
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return strdup("a non-negative integer, e.g. 0, 42 or 0x10");
    case PX_MCA_VAR_TYPE_SIZE:
        return strdup("a byte count with an optional k, M or G suffix (powers of 1024), "
                      "e.g. 4096, 64k, 2M, 1G");
    case PX_MCA_VAR_TYPE_BOOL:
        return strdup("1/0, true/false, yes/no, on/off");
    case PX_MCA_VAR_TYPE_DOUBLE:
        return strdup("a number, e.g. 0.5, 3 or 1e-3");
    case PX_MCA_VAR_TYPE_STRING:
        return strdup("any text");
    case PX_MCA_VAR_TYPE_ENUM: {
        size_t len = 32;
        for (const px_mca_var_enum_value_t *e = ev; e && e->name; e++)
            len += strlen(e->name) + 16;
        char *out = malloc(len);
        if (!out)
            return NULL;
        strcpy(out, "one of ");
        for (const px_mca_var_enum_value_t *e = ev; e && e->name; e++) {
            char buf[64];
            snprintf(buf, sizeof(buf), " (%d)", e->value);
            if (e != ev)
                strcat(out, ", ");
            strcat(out, e->name);
            strcat(out, buf);
        }
        return out;
    }
    }
    return strdup("?");
}

static bool parse_u64(const char *s, unsigned long long *out)
{
    errno = 0;
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || *s == '\0')
        return false;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

/* Only blanks from s to its end (reads; never writes into the value). */
static bool only_blanks(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/* `text`, without the blanks around it, is `word` (any case). Compares the
 * whole text, however long. */
static bool is_word(const char *text, const char *word)
{
    while (isspace((unsigned char)*text))
        text++;
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    return n == strlen(word) && 0 == strncasecmp(text, word, n);
}

/* Parse `text` for variable `v` into *out (strings are strdup'ed). `text` is
 * not modified (it may be the caller's constant). */
static bool parse_value(const var_t *v, const char *text, value_t *out)
{
    char *end;
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT: {
        errno = 0;
        long x = strtol(text, &end, 0);
        if (errno || end == text || !only_blanks(end) || x < INT_MIN || x > INT_MAX)
            return false;
        out->i = (int)x;
        return true;
    }
    case PX_MCA_VAR_TYPE_UNSIGNED: {
        unsigned long long x;
        if (!parse_u64(text, &x) || x > UINT_MAX)
            return false;
        out->u = (unsigned)x;
        return true;
    }
    case PX_MCA_VAR_TYPE_SIZE: {
        const char *s = text;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '-' || !isdigit((unsigned char)*s))
            return false;
        errno = 0;
        unsigned long long x = strtoull(s, &end, 0);
        if (errno || end == s)
            return false;
        unsigned shift = 0;
        switch (*end) {
        case 'k':
        case 'K':
            shift = 10;
            end++;
            break;
        case 'm':
        case 'M':
            shift = 20;
            end++;
            break;
        case 'g':
        case 'G':
            shift = 30;
            end++;
            break;
        default:
            break;
        }
        while (isspace((unsigned char)*end))
            end++;
        if (*end)
            return false;
        if (shift && x > (SIZE_MAX >> shift))
            return false;
        if (x > SIZE_MAX)
            return false;
        out->z = (size_t)(x << shift);
        return true;
    }
    case PX_MCA_VAR_TYPE_BOOL: {
        static const char *yes[] = {"1", "true", "yes", "on", "y", "t"};
        static const char *no[] = {"0", "false", "no", "off", "n", "f"};
        for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
            if (is_word(text, yes[i])) {
                out->b = true;
                return true;
            }
            if (is_word(text, no[i])) {
                out->b = false;
                return true;
            }
        }
        return false;
    }
    case PX_MCA_VAR_TYPE_DOUBLE: {
        errno = 0;
        double d = strtod(text, &end);
        if (errno || end == text || !only_blanks(end) || isnan(d))
            return false;
        out->d = d;
        return true;
    }
    case PX_MCA_VAR_TYPE_STRING:
        out->s = strdup(text);
        return out->s != NULL;
    case PX_MCA_VAR_TYPE_ENUM: {
        for (const px_mca_var_enum_value_t *e = v->enum_values; e && e->name; e++)
            if (is_word(text, e->name)) {
                out->i = e->value;
                return true;
            }
        const char *t = text;
        while (isspace((unsigned char)*t))
            t++;
        errno = 0;
        long x = strtol(t, &end, 0);
        if (errno || end == t || !only_blanks(end))
            return false;
        for (const px_mca_var_enum_value_t *e = v->enum_values; e && e->name; e++)
            if (e->value == x) {
                out->i = e->value;
                return true;
            }
        return false;
    }
    }
    return false;
}

static char *format_value(const var_t *v, const value_t *val)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
        return xasprintf("%d", val->i);
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return xasprintf("%u", val->u);
    case PX_MCA_VAR_TYPE_SIZE:
        return xasprintf("%zu", val->z);
    case PX_MCA_VAR_TYPE_BOOL:
        return strdup(val->b ? "true" : "false");
    case PX_MCA_VAR_TYPE_DOUBLE:
        return xasprintf("%g", val->d);
    case PX_MCA_VAR_TYPE_STRING:
        return dup_or_empty(val->s);
    case PX_MCA_VAR_TYPE_ENUM:
        for (const px_mca_var_enum_value_t *e = v->enum_values; e && e->name; e++)
            if (e->value == val->i)
                return strdup(e->name);
        return xasprintf("%d", val->i);
    }
    return strdup("?");
}

static void read_storage(const var_t *v, value_t *out)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
    case PX_MCA_VAR_TYPE_ENUM:
        out->i = *(int *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_UNSIGNED:
        out->u = *(unsigned *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_SIZE:
        out->z = *(size_t *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_BOOL:
        out->b = *(bool *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_DOUBLE:
        out->d = *(double *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_STRING:
        out->s = *(char **)v->storage;
        break;
    }
}

/* Store `val` (strings: copied) into the variable's storage. */
static void write_storage(var_t *v, const value_t *val)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
    case PX_MCA_VAR_TYPE_ENUM:
        *(int *)v->storage = val->i;
        break;
    case PX_MCA_VAR_TYPE_UNSIGNED:
        *(unsigned *)v->storage = val->u;
        break;
    case PX_MCA_VAR_TYPE_SIZE:
        *(size_t *)v->storage = val->z;
        break;
    case PX_MCA_VAR_TYPE_BOOL:
        *(bool *)v->storage = val->b;
        break;
    case PX_MCA_VAR_TYPE_DOUBLE:
        *(double *)v->storage = val->d;
        break;
    case PX_MCA_VAR_TYPE_STRING: {
        char *copy = val->s ? strdup(val->s) : NULL;
        free(v->owned);
        v->owned = copy;
        *(char **)v->storage = copy;
        break;
    }
    }
}

const char *px_mca_var_source_name(px_mca_var_source_t s)
{
    switch (s) {
    case PX_MCA_VAR_SOURCE_DEFAULT:
        return "default";
    case PX_MCA_VAR_SOURCE_FILE:
        return "file";
    case PX_MCA_VAR_SOURCE_ENV:
        return "environment";
    case PX_MCA_VAR_SOURCE_COMMAND_LINE:
        return "command line";
    case PX_MCA_VAR_SOURCE_API:
        return "API";
    case PX_MCA_VAR_SOURCE_OVERRIDE:
        return "override file";
    }
    return "?";
}

/* "environment variable PX_MCA_x", "file /a/b.conf:3", "command line (--mca)". */
static char *describe_source(px_mca_var_source_t s, const char *where)
{
    switch (s) {
    case PX_MCA_VAR_SOURCE_ENV:
        return xasprintf("environment variable %s", where ? where : "?");
    case PX_MCA_VAR_SOURCE_FILE:
    case PX_MCA_VAR_SOURCE_OVERRIDE:
        return xasprintf("%s %s", px_mca_var_source_name(s), where ? where : "?");
    case PX_MCA_VAR_SOURCE_COMMAND_LINE:
        return where ? xasprintf("command line (%s)", where) : strdup("command line");
    default:
        return strdup(px_mca_var_source_name(s));
    }
}

static bool has_range_type(px_mca_var_type_t type)
{
    return type == PX_MCA_VAR_TYPE_INT || type == PX_MCA_VAR_TYPE_UNSIGNED ||
           type == PX_MCA_VAR_TYPE_SIZE || type == PX_MCA_VAR_TYPE_DOUBLE;
}

/* a < b (-1), a == b (0), a > b (1) for the variable's type. */
static int compare_value(const var_t *v, const value_t *a, const value_t *b)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
        return a->i < b->i ? -1 : a->i > b->i;
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return a->u < b->u ? -1 : a->u > b->u;
    case PX_MCA_VAR_TYPE_SIZE:
        return a->z < b->z ? -1 : a->z > b->z;
    case PX_MCA_VAR_TYPE_DOUBLE:
        return a->d < b->d ? -1 : a->d > b->d;
    default:
        return 0;
    }
}

static bool in_range(const var_t *v, const value_t *val)
{
    if (v->has_min && compare_value(v, val, &v->rmin) < 0)
        return false;
    if (v->has_max && compare_value(v, val, &v->rmax) > 0)
        return false;
    return true;
}

/* What the variable accepts, with its range when it has one. */
static char *accepted_for(const var_t *v)
{
    if (!v->has_min && !v->has_max)
        return px_mca_var_accepted_forms(v->type, v->enum_values);
    const char *what = v->type == PX_MCA_VAR_TYPE_SIZE     ? "a byte count"
                       : v->type == PX_MCA_VAR_TYPE_DOUBLE ? "a number"
                                                           : "an integer";
    const char *tail = v->type == PX_MCA_VAR_TYPE_SIZE
                           ? " (an optional k, M or G suffix multiplies by 1024, 1024^2, 1024^3)"
                           : "";
    if (v->has_min && v->has_max)
        return xasprintf("%s from %s to %s%s", what, v->range_min, v->range_max, tail);
    if (v->has_min)
        return xasprintf("%s of at least %s%s", what, v->range_min, tail);
    return xasprintf("%s of at most %s%s", what, v->range_max, tail);
}

/* `out_of_range`: the text parsed but is outside the variable's range. */
static void report_bad_value(const var_t *v, const char *name, const char *text,
                             px_mca_var_source_t s, const char *where, const char *keeping,
                             bool out_of_range)
{
    n_value_errors++;
    char *src = describe_source(s, where);
    char *forms = accepted_for(v);
    char *kept;
    if (keeping) {
        kept = strdup(keeping);
    } else {
        char *d = format_value(v, &v->dflt);
        kept = xasprintf("the default \"%s\" is kept", d ? d : "");
        free(d);
    }
    px_show_error("%s value \"%s\" for variable %s (%s)%s%s from %s; accepted: %s; %s",
                  out_of_range ? "out-of-range" : "invalid", text, v->full_name,
                  px_mca_var_type_name(v->type), strcmp(name, v->full_name) ? " via " : "",
                  strcmp(name, v->full_name) ? name : "", src ? src : "?", forms ? forms : "?",
                  kept ? kept : "");
    free(src);
    free(forms);
    free(kept);
}

/* --------------------------------------------------------------- resolving */

/* The highest-precedence usable entry for primary `v`: checks the primary
 * name, then each synonym, per source. */
static entry_t *best_entry(var_t *v, const char **via)
{
    for (int s = PX_MCA_VAR_SOURCE_OVERRIDE; s > PX_MCA_VAR_SOURCE_DEFAULT; s--) {
        entry_t *e = find_entry(v->full_name, (px_mca_var_source_t)s);
        if (e && !e->bad) {
            *via = v->full_name;
            return e;
        }
        for (int k = 0; k < v->n_syns; k++) {
            var_t *syn = vars[v->syns[k]];
            e = find_entry(syn->full_name, (px_mca_var_source_t)s);
            if (e && !e->bad) {
                *via = syn->full_name;
                return e;
            }
        }
    }
    return NULL;
}

static void warn_deprecated(var_t *v, const char *via, const entry_t *e)
{
    int si = find_unlocked(via);
    var_t *named = si >= 0 ? vars[si] : v;
    if (!(named->flags & PX_MCA_VAR_FLAG_DEPRECATED) || named->warned_deprecated)
        return;
    named->warned_deprecated = true;
    char *src = describe_source(e->source, e->where);
    if (named != v)
        px_show_warning("variable \"%s\" (set in %s) is deprecated; use \"%s\" instead", via,
                        src ? src : "?", v->full_name);
    else
        px_show_warning("variable \"%s\" (set in %s) is deprecated and may be removed", via,
                        src ? src : "?");
    free(src);
}

/* The override file fixed `v`: say once which user setting lost. */
static void warn_overridden(var_t *v, const entry_t *ovr)
{
    if (v->warned_override)
        return;
    for (int s = PX_MCA_VAR_SOURCE_API; s > PX_MCA_VAR_SOURCE_DEFAULT; s--) {
        entry_t *e = find_entry(v->full_name, (px_mca_var_source_t)s);
        for (int k = 0; !e && k < v->n_syns; k++)
            e = find_entry(vars[v->syns[k]]->full_name, (px_mca_var_source_t)s);
        if (!e)
            continue;
        v->warned_override = true;
        char *src = describe_source(e->source, e->where);
        px_show_warning("variable %s is fixed to \"%s\" by the override file %s; the value \"%s\" "
                        "from %s is ignored",
                        v->full_name, ovr->value, ovr->where ? ovr->where : "?", e->value,
                        src ? src : "?");
        free(src);
        return;
    }
}

/* Recompute the value of primary `v` from its entries. Returns PX_SUCCESS or
 * PX_ERR_BAD_PARAM when the winning value did not parse (the default is then
 * used and the entry marked bad). */
static int resolve(var_t *v)
{
    const char *via = NULL;
    entry_t *e = best_entry(v, &via);
    value_t val;
    bool fixed = (v->flags & PX_MCA_VAR_FLAG_READONLY) || v->scope == PX_MCA_VAR_SCOPE_CONSTANT;
    if (e && fixed) {
        if (!v->warned_readonly) {
            v->warned_readonly = true;
            char *src = describe_source(e->source, e->where);
            px_show_warning("variable %s is read-only; the value \"%s\" from %s is ignored",
                            v->full_name, e->value, src ? src : "?");
            free(src);
        }
        e = NULL;
    }
    if (e) {
        bool parsed = parse_value(v, e->value, &val);
        if (!parsed || !in_range(v, &val)) {
            report_bad_value(v, via, e->value, e->source, e->where, NULL, parsed);
            if (parsed && v->type == PX_MCA_VAR_TYPE_STRING)
                free(val.s);
            e->bad = true;
            write_storage(v, &v->dflt);
            v->source = PX_MCA_VAR_SOURCE_DEFAULT;
            free(v->where);
            v->where = NULL;
            return PX_ERR_BAD_PARAM;
        }
        warn_deprecated(v, via, e);
        if (e->source == PX_MCA_VAR_SOURCE_OVERRIDE)
            warn_overridden(v, e);
        write_storage(v, &val);
        if (v->type == PX_MCA_VAR_TYPE_STRING)
            free(val.s);
        v->source = e->source;
        free(v->where);
        v->where = e->where ? strdup(e->where) : NULL;
        return PX_SUCCESS;
    }
    write_storage(v, &v->dflt);
    v->source = PX_MCA_VAR_SOURCE_DEFAULT;
    free(v->where);
    v->where = NULL;
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ registration */

static int add_var(var_t *v)
{
    if (n_vars == cap_vars) {
        int cap = cap_vars ? cap_vars * 2 : 64;
        var_t **nv = realloc(vars, (size_t)cap * sizeof(*nv));
        if (!nv)
            return PX_ERR_OUT_OF_RESOURCE;
        vars = nv;
        cap_vars = cap;
    }
    vars[n_vars] = v;
    return n_vars++;
}

static void free_var(var_t *v)
{
    free(v->full_name);
    free(v->framework);
    free(v->component);
    free(v->name);
    free(v->help);
    free(v->where);
    free(v->syns);
    free(v->syn_names);
    free(v->dflt_owned);
    free(v->range_min);
    free(v->range_max);
    for (int k = 0; k < v->n_old_range; k++)
        free(v->old_range[k]);
    free(v->old_range);
    if (v->enum_owned) {
        for (size_t j = 0; v->enum_owned[j].name; j++)
            free((char *)v->enum_owned[j].name);
        free(v->enum_owned);
    }
    free(v);
}

/* Install the range [min, max] (texts parsed as values of `p`; NULL: open)
 * on primary `p`. Does not re-resolve. */
static int set_range_unlocked(var_t *p, const char *min, const char *max)
{
    if (!has_range_type(p->type)) {
        px_show_error("px_mca_var_set_range: variable %s is of type %s; only int, unsigned, "
                      "size and double variables have a range",
                      p->full_name, px_mca_var_type_name(p->type));
        return PX_ERR_BAD_PARAM;
    }
    value_t lo = {0}, hi = {0};
    if ((min && !parse_value(p, min, &lo)) || (max && !parse_value(p, max, &hi))) {
        char *forms = px_mca_var_accepted_forms(p->type, NULL);
        px_show_error("px_mca_var_set_range: bound \"%s\" of variable %s (%s) does not parse; "
                      "accepted: %s",
                      (min && !parse_value(p, min, &lo)) ? min : max, p->full_name,
                      px_mca_var_type_name(p->type), forms ? forms : "?");
        free(forms);
        return PX_ERR_BAD_PARAM;
    }
    if (min && max && compare_value(p, &lo, &hi) > 0) {
        px_show_error("px_mca_var_set_range: variable %s: the minimum \"%s\" is above the "
                      "maximum \"%s\"",
                      p->full_name, min, max);
        return PX_ERR_BAD_PARAM;
    }
    if ((min && compare_value(p, &p->dflt, &lo) < 0) ||
        (max && compare_value(p, &p->dflt, &hi) > 0)) {
        char *d = format_value(p, &p->dflt);
        px_show_error("px_mca_var_set_range: the default \"%s\" of variable %s is outside its "
                      "own range %s..%s (a programming error in the code that registers it)",
                      d ? d : "?", p->full_name, min ? min : "", max ? max : "");
        free(d);
        return PX_ERR_BAD_PARAM;
    }
    char *tmin = min ? format_value(p, &lo) : NULL;
    char *tmax = max ? format_value(p, &hi) : NULL;
    if ((min && !tmin) || (max && !tmax)) {
        free(tmin);
        free(tmax);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    /* Texts handed out earlier stay valid until finalize. */
    char **old = realloc(p->old_range, (size_t)(p->n_old_range + 2) * sizeof(char *));
    if (!old) {
        free(tmin);
        free(tmax);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    p->old_range = old;
    if (p->range_min)
        p->old_range[p->n_old_range++] = p->range_min;
    if (p->range_max)
        p->old_range[p->n_old_range++] = p->range_max;
    p->range_min = tmin;
    p->range_max = tmax;
    p->has_min = min != NULL;
    p->has_max = max != NULL;
    p->rmin = lo;
    p->rmax = hi;
    return PX_SUCCESS;
}

int px_mca_var_set_range(int index, const char *min, const char *max)
{
    pthread_mutex_lock(&lock);
    if (index < 0 || index >= n_vars) {
        pthread_mutex_unlock(&lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *p = primary_of(index);
    int rc = set_range_unlocked(p, min, max);
    if (rc == PX_SUCCESS)
        rc = resolve(p); /* the current value is checked against the range */
    pthread_mutex_unlock(&lock);
    return rc;
}

int px_mca_var_get_range(int index, const char **min, const char **max)
{
    pthread_mutex_lock(&lock);
    if (index < 0 || index >= n_vars) {
        pthread_mutex_unlock(&lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *p = primary_of(index);
    if (min)
        *min = p->range_min;
    if (max)
        *max = p->range_max;
    pthread_mutex_unlock(&lock);
    return PX_SUCCESS;
}

char *px_mca_var_accepted_string(int index)
{
    pthread_mutex_lock(&lock);
    char *s = NULL;
    if (index >= 0 && index < n_vars)
        s = accepted_for(primary_of(index));
    pthread_mutex_unlock(&lock);
    return s;
}

static int register_var(const char *framework, const char *component, const char *name,
                        const char *help, px_mca_var_type_t type,
                        const px_mca_var_enum_value_t *enum_values, int info_level,
                        px_mca_var_scope_t scope, unsigned flags, bool ranged, const char *min,
                        const char *max, void *storage)
{
    if (!storage || type > PX_MCA_VAR_TYPE_ENUM || (type == PX_MCA_VAR_TYPE_ENUM && !enum_values))
        return PX_ERR_BAD_PARAM;
    char *full = join_name(framework, component, name);
    if (!full || !full[0]) {
        free(full);
        return PX_ERR_BAD_PARAM;
    }
    pthread_mutex_lock(&lock);
    px_mca_var_load();
    int idx = find_unlocked(full);
    if (idx >= 0) {
        var_t *v = vars[idx];
        free(full);
        if (v->synonym_for >= 0 || v->type != type) {
            pthread_mutex_unlock(&lock);
            return PX_ERR_EXISTS;
        }
        if (v->storage != storage) {
            /* New storage (e.g. a component registered again): give the old
             * one back its default and fill the new one. */
            value_t cur;
            read_storage(v, &cur);
            if (type == PX_MCA_VAR_TYPE_STRING) {
                char *keep = cur.s ? strdup(cur.s) : NULL;
                free(v->owned);
                v->owned = NULL;
                *(char **)v->storage = v->dflt.s;
                v->storage = storage;
                cur.s = keep;
                write_storage(v, &cur);
                free(keep);
            } else {
                v->storage = storage;
                write_storage(v, &cur);
            }
        }
        int rc = PX_SUCCESS;
        if (ranged && (rc = set_range_unlocked(v, min, max)) == PX_SUCCESS)
            rc = resolve(v);
        pthread_mutex_unlock(&lock);
        return rc == PX_SUCCESS ? idx : rc;
    }
    var_t *v = calloc(1, sizeof(*v));
    if (!v) {
        free(full);
        pthread_mutex_unlock(&lock);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    v->full_name = full;
    v->framework = dup_or_empty(framework);
    v->component = dup_or_empty(component);
    v->name = dup_or_empty(name);
    v->help = dup_or_empty(help);
    v->type = type;
    v->enum_values = enum_values;
    v->info_level = info_level < 1 ? 1 : info_level > 9 ? 9 : info_level;
    v->scope = scope;
    v->flags = flags;
    v->storage = storage;
    v->synonym_for = -1;
    v->syn_names = calloc(1, sizeof(char *));
    read_storage(v, &v->dflt);
    idx = add_var(v);
    if (idx < 0) {
        free_var(v);
        pthread_mutex_unlock(&lock);
        return idx;
    }
    /* The range is in place before the first resolution, so a value out of
     * it is reported once, as such. */
    int rc = ranged ? set_range_unlocked(v, min, max) : PX_SUCCESS;
    if (rc == PX_SUCCESS)
        rc = resolve(v);
    else
        resolve(v);
    pthread_mutex_unlock(&lock);
    return rc == PX_SUCCESS ? idx : rc;
}

int px_mca_var_register(const char *framework, const char *component, const char *name,
                        const char *help, px_mca_var_type_t type,
                        const px_mca_var_enum_value_t *enum_values, int info_level,
                        px_mca_var_scope_t scope, unsigned flags, void *storage)
{
    return register_var(framework, component, name, help, type, enum_values, info_level, scope,
                        flags, false, NULL, NULL, storage);
}

int px_mca_var_register_range(const char *framework, const char *component, const char *name,
                              const char *help, px_mca_var_type_t type, int info_level,
                              px_mca_var_scope_t scope, unsigned flags, const char *min,
                              const char *max, void *storage)
{
    if (!has_range_type(type))
        return PX_ERR_BAD_PARAM;
    return register_var(framework, component, name, help, type, NULL, info_level, scope, flags,
                        true, min, max, storage);
}

int px_mca_var_register_synonym(int index, const char *framework, const char *component,
                                const char *name, unsigned flags)
{
    pthread_mutex_lock(&lock);
    if (index < 0 || index >= n_vars) {
        pthread_mutex_unlock(&lock);
        return PX_ERR_BAD_PARAM;
    }
    var_t *p = primary_of(index);
    int pidx = find_unlocked(p->full_name);
    char *full = join_name(framework, component, name);
    if (!full || !full[0]) {
        free(full);
        pthread_mutex_unlock(&lock);
        return PX_ERR_BAD_PARAM;
    }
    int existing = find_unlocked(full);
    if (existing >= 0) {
        free(full);
        pthread_mutex_unlock(&lock);
        return vars[existing]->synonym_for == pidx ? existing : PX_ERR_EXISTS;
    }
    var_t *s = calloc(1, sizeof(*s));
    int *syns = realloc(p->syns, (size_t)(p->n_syns + 1) * sizeof(int));
    const char **names =
        syns ? realloc(p->syn_names, (size_t)(p->n_syns + 2) * sizeof(char *)) : NULL;
    if (syns)
        p->syns = syns;
    if (names)
        p->syn_names = names;
    if (!s || !syns || !names) {
        free(s);
        free(full);
        pthread_mutex_unlock(&lock);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    s->full_name = full;
    s->framework = dup_or_empty(framework);
    s->component = dup_or_empty(component);
    s->name = dup_or_empty(name);
    s->help = dup_or_empty(p->help);
    s->type = p->type;
    s->enum_values = p->enum_values;
    s->info_level = p->info_level;
    s->scope = p->scope;
    s->flags = flags | (p->flags & PX_MCA_VAR_FLAG_INTERNAL);
    s->storage = p->storage;
    s->synonym_for = pidx;
    s->syn_names = calloc(1, sizeof(char *));
    int sidx = add_var(s);
    if (sidx < 0) {
        free_var(s);
        pthread_mutex_unlock(&lock);
        return sidx;
    }
    p->syns[p->n_syns] = sidx;
    p->syn_names[p->n_syns] = s->full_name;
    p->n_syns++;
    p->syn_names[p->n_syns] = NULL;
    int rc = resolve(p);
    pthread_mutex_unlock(&lock);
    return rc == PX_SUCCESS ? sidx : rc;
}

int px_mca_var_detach_component(const char *framework, const char *component)
{
    if (!framework || !component)
        return PX_ERR_BAD_PARAM;
    pthread_mutex_lock(&lock);
    int n = 0;
    for (int i = 0; i < n_vars; i++) {
        var_t *v = vars[i];
        if (strcmp(v->framework, framework) != 0 || strcmp(v->component, component) != 0)
            continue;
        var_t *p = primary_of(i);
        if (p->storage != &p->internal) {
            read_storage(p, &p->internal);
            if (p->type == PX_MCA_VAR_TYPE_STRING && p->internal.s != p->owned) {
                /* The plugin put its own string there (e.g. a probe). */
                char *copy = p->internal.s ? strdup(p->internal.s) : NULL;
                free(p->owned);
                p->owned = copy;
                p->internal.s = copy;
            }
            p->storage = &p->internal;
            if (p->type == PX_MCA_VAR_TYPE_STRING && p->dflt.s && !p->dflt_owned) {
                p->dflt_owned = strdup(p->dflt.s);
                p->dflt.s = p->dflt_owned;
            }
            if (p->enum_values && !p->enum_owned) {
                size_t k = 0;
                while (p->enum_values[k].name)
                    k++;
                p->enum_owned = calloc(k + 1, sizeof(*p->enum_owned));
                for (size_t j = 0; p->enum_owned && j < k; j++) {
                    p->enum_owned[j].value = p->enum_values[j].value;
                    p->enum_owned[j].name = strdup(p->enum_values[j].name);
                }
                if (p->enum_owned)
                    p->enum_values = p->enum_owned;
            }
        }
        p->probe = NULL; /* its code is about to go away */
        /* Synonyms share the primary's table. */
        v->enum_values = p->enum_values;
        v->storage = p->storage;
        n++;
    }
    pthread_mutex_unlock(&lock);
    return n;
}

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
        entry_t *old = find_entry(name, source);
        if (old && old->file_seq < seq)
            continue; /* a higher-priority file already set it */
        char where[PATH_MAX + 32];
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        add_entry(name, value, source, where, seq);
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
            add_entry(name, eq + 1, src, envname, 0);
        free(name);
        free(envname);
    }
}

int px_mca_var_load(void)
{
    pthread_mutex_lock(&lock);
    if (loaded) {
        pthread_mutex_unlock(&lock);
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
            expanded = xasprintf("%s%s", getenv("HOME"), p + 1);
        read_file(expanded ? expanded : p, PX_MCA_VAR_SOURCE_FILE, seq++, true,
                  "listed in mca_param_files");
        free(expanded);
    }
    px_argv_free(files);
    const char *home = getenv("HOME");
    if (home && *home) {
        char *p = xasprintf("%s/.plexus/mca-params.conf", home);
        if (p)
            read_file(p, PX_MCA_VAR_SOURCE_FILE, seq++, false, "the user's parameter file");
        free(p);
    }
    char *sys = xasprintf("%s/plexus-mca-params.conf", px_mca_sysconfdir());
    if (sys)
        read_file(sys, PX_MCA_VAR_SOURCE_FILE, seq++, false, "the system parameter file");
    free(sys);
    char *ovr = xasprintf("%s/plexus-mca-params-override.conf", px_mca_sysconfdir());
    if (ovr)
        read_file(ovr, PX_MCA_VAR_SOURCE_OVERRIDE, 0, false, "the system override file");
    free(ovr);
    strict_value = false;
    px_mca_var_register("mca", "base", "strict",
                        "Make warnings about unknown variable names (PX_MCA_* environment "
                        "variables and parameter-file entries) fatal errors",
                        PX_MCA_VAR_TYPE_BOOL, NULL, 4, PX_MCA_VAR_SCOPE_ALL, 0, &strict_value);
    pthread_mutex_unlock(&lock);
    return PX_SUCCESS;
}

int px_mca_var_init(void)
{
    pthread_mutex_lock(&lock);
    init_count++;
    int rc = px_mca_var_load();
    pthread_mutex_unlock(&lock);
    return rc;
}

int px_mca_var_finalize(void)
{
    pthread_mutex_lock(&lock);
    if (init_count > 0 && --init_count > 0) {
        pthread_mutex_unlock(&lock);
        return PX_SUCCESS;
    }
    for (int i = 0; i < n_vars; i++) {
        var_t *v = vars[i];
        if (v->synonym_for < 0) {
            /* Give the caller's storage its default back, so that a later
             * registration starts from the same state. */
            if (v->type == PX_MCA_VAR_TYPE_STRING) {
                free(v->owned);
                *(char **)v->storage = v->dflt.s;
            } else {
                write_storage(v, &v->dflt);
            }
        }
        free_var(v);
    }
    free(vars);
    vars = NULL;
    n_vars = cap_vars = 0;
    for (int i = 0; i < n_entries; i++) {
        free(entries[i].name);
        free(entries[i].value);
        free(entries[i].where);
    }
    free(entries);
    entries = NULL;
    n_entries = cap_entries = 0;
    loaded = false;
    init_count = 0;
    n_value_errors = 0;
    px_mca_repository_finalize();
    pthread_mutex_unlock(&lock);
    return PX_SUCCESS;
}

/* ----------------------------------------------------------------- setting */

int px_mca_var_find(const char *full_name)
{
    if (!full_name)
        return PX_ERR_BAD_PARAM;
    pthread_mutex_lock(&lock);
    int i = find_unlocked(full_name);
    pthread_mutex_unlock(&lock);
    return i;
}

static void drop_other_names(var_t *v, const char *keep, px_mca_var_source_t source)
{
    entry_t *e;
    if (strcmp(v->full_name, keep) != 0 && (e = find_entry(v->full_name, source)))
        remove_entry(e);
    for (int k = 0; k < v->n_syns; k++) {
        const char *n = vars[v->syns[k]]->full_name;
        if (strcmp(n, keep) != 0 && (e = find_entry(n, source)))
            remove_entry(e);
    }
}

int px_mca_var_set_source(const char *full_name, const char *value, px_mca_var_source_t source,
                          const char *where)
{
    if (!full_name || !value || source == PX_MCA_VAR_SOURCE_DEFAULT)
        return PX_ERR_BAD_PARAM;
    pthread_mutex_lock(&lock);
    px_mca_var_load();
    int idx = find_unlocked(full_name);
    if (idx < 0) {
        if (source == PX_MCA_VAR_SOURCE_API) {
            const char *near[3];
            int n = px_mca_var_nearest(full_name, near, 3);
            px_show_error("cannot set unknown variable \"%s\"%s%s%s%s%s%s", full_name,
                          n ? "; nearest registered names: " : "", n > 0 ? near[0] : "",
                          n > 1 ? ", " : "", n > 1 ? near[1] : "", n > 2 ? ", " : "",
                          n > 2 ? near[2] : "");
            pthread_mutex_unlock(&lock);
            return PX_ERR_NOT_FOUND;
        }
        /* Kept for a later registration. */
        add_entry(full_name, value, source, where, -1);
        pthread_mutex_unlock(&lock);
        return PX_SUCCESS;
    }
    var_t *v = primary_of(idx);
    if ((v->flags & PX_MCA_VAR_FLAG_READONLY) || v->scope == PX_MCA_VAR_SCOPE_CONSTANT) {
        px_show_error("variable %s is read-only; cannot set it to \"%s\"", v->full_name, value);
        pthread_mutex_unlock(&lock);
        return PX_ERR_NOT_SUPPORTED;
    }
    if (v->source == PX_MCA_VAR_SOURCE_OVERRIDE && source < PX_MCA_VAR_SOURCE_OVERRIDE) {
        char *cur = px_mca_var_value_string(find_unlocked(v->full_name));
        px_show_error("variable %s is fixed to \"%s\" by the override file %s; cannot set it to "
                      "\"%s\" from the %s",
                      v->full_name, cur ? cur : "", v->where ? v->where : "?", value,
                      px_mca_var_source_name(source));
        free(cur);
        pthread_mutex_unlock(&lock);
        return PX_ERR_NOT_SUPPORTED;
    }
    value_t tmp;
    bool parsed = parse_value(v, value, &tmp);
    if (!parsed || !in_range(v, &tmp)) {
        if (parsed && v->type == PX_MCA_VAR_TYPE_STRING)
            free(tmp.s);
        char *cur = px_mca_var_value_string(find_unlocked(v->full_name));
        char *keep = xasprintf("the current value \"%s\" is kept", cur ? cur : "");
        report_bad_value(v, full_name, value, source, where, keep, parsed);
        free(cur);
        free(keep);
        pthread_mutex_unlock(&lock);
        return PX_ERR_BAD_PARAM;
    }
    if (v->type == PX_MCA_VAR_TYPE_STRING)
        free(tmp.s);
    /* Latest wins within a source: drop what the variable's other names
     * had at this source (a synonym set after the name, or the reverse). */
    drop_other_names(v, full_name, source);
    add_entry(full_name, value, source, where, -1);
    int rc = resolve(v);
    pthread_mutex_unlock(&lock);
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
        char *env = xasprintf(CMDLINE_PREFIX "%s", name);
        if (!env || setenv(env, value, 1) != 0)
            rc = PX_ERR_OUT_OF_RESOURCE;
        free(env);
    }
    return rc;
}

/* --------------------------------------------------------- unknown names */

/* Insert `cand` into the best-first list out/dist (n entries, at most max)
 * when it is close enough to `name`. */
static void rank_candidate(const char *name, const char *cand, int limit, const char **out,
                           int *dist, int *n, int max)
{
    int d = px_mca_edit_distance(name, cand);
    /* A name that is a part of a longer one is also a good hint. */
    if (d > limit && strlen(name) >= 4 && strstr(cand, name))
        d = limit;
    if (d > limit || 0 == strcmp(name, cand))
        return;
    int pos = *n;
    while (pos > 0 && dist[pos - 1] > d)
        pos--;
    if (pos >= max)
        return;
    int last = *n < max ? *n : max - 1;
    for (int k = last; k > pos; k--) {
        out[k] = out[k - 1];
        dist[k] = dist[k - 1];
    }
    out[pos] = cand;
    dist[pos] = d;
    if (*n < max)
        (*n)++;
}

int px_mca_nearest_among(const char *name, const char *const *cands, int ncands, const char **out,
                         int max)
{
    int dist[16], n = 0;
    if (!name || max <= 0)
        return 0;
    if (max > 16)
        max = 16;
    int limit = px_mca_suggest_limit(name);
    for (int i = 0; cands && (ncands < 0 ? cands[i] != NULL : i < ncands); i++)
        rank_candidate(name, cands[i], limit, out, dist, &n, max);
    return n;
}

int px_mca_var_nearest(const char *name, const char **out, int max)
{
    int dist[16], n = 0;
    if (!name || max <= 0)
        return 0;
    if (max > 16)
        max = 16;
    pthread_mutex_lock(&lock);
    int limit = px_mca_suggest_limit(name);
    for (int i = 0; i < n_vars; i++)
        rank_candidate(name, vars[i]->full_name, limit, out, dist, &n, max);
    pthread_mutex_unlock(&lock);
    return n;
}

void px_mca_var_set_unknown_filter(px_mca_var_unknown_filter_fn filter)
{
    pthread_mutex_lock(&lock);
    unknown_filter = filter;
    pthread_mutex_unlock(&lock);
}

int px_mca_var_check_unknown(void)
{
    pthread_mutex_lock(&lock);
    px_mca_var_load();
    int unknown = 0;
    for (int i = 0; i < n_entries; i++) {
        entry_t *e = &entries[i];
        if (e->source == PX_MCA_VAR_SOURCE_API || find_unlocked(e->name) >= 0)
            continue;
        if (unknown_filter && unknown_filter(e->name))
            continue;
        unknown++;
        if (e->warned && !strict_value)
            continue;
        e->warned = true;
        const char *near[3];
        int n = px_mca_var_nearest(e->name, near, 3);
        char *src = describe_source(e->source, e->where);
        char hint[512];
        if (n)
            snprintf(hint, sizeof(hint), "nearest registered names: %s%s%s%s%s", near[0],
                     n > 1 ? ", " : "", n > 1 ? near[1] : "", n > 2 ? ", " : "",
                     n > 2 ? near[2] : "");
        else
            snprintf(hint, sizeof(hint), "no registered variable has a similar name");
        if (strict_value)
            px_show_error("unknown variable \"%s\" in %s; %s (fatal because mca_base_strict is "
                          "set)",
                          e->name, src ? src : "?", hint);
        else
            px_show_warning("unknown variable \"%s\" in %s; %s", e->name, src ? src : "?", hint);
        free(src);
    }
    int rc = (unknown && strict_value) ? PX_ERR_NOT_FOUND : PX_SUCCESS;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* --------------------------------------------------------------- read view */

int px_mca_var_error_count(void)
{
    return n_value_errors;
}

int px_mca_var_count(void)
{
    pthread_mutex_lock(&lock);
    px_mca_var_load();
    int n = n_vars;
    pthread_mutex_unlock(&lock);
    return n;
}

int px_mca_var_get_info(int index, px_mca_var_info_t *info)
{
    pthread_mutex_lock(&lock);
    if (index < 0 || index >= n_vars || !info) {
        pthread_mutex_unlock(&lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *v = vars[index];
    var_t *p = primary_of(index);
    info->index = index;
    info->full_name = v->full_name;
    info->framework = v->framework;
    info->component = v->component;
    info->name = v->name;
    info->help = v->help;
    info->type = v->type;
    info->enum_values = v->enum_values;
    info->info_level = v->info_level;
    info->scope = v->scope;
    info->flags = v->flags;
    info->source = p->source;
    info->source_where = NULL;
    if (p->where) {
        /* resolve() frees and replaces p->where when the variable is set
         * again, possibly by another thread: hand out a copy. */
        size_t wl = strlen(p->where);
        if (wl < sizeof(info->source_where_buf)) {
            memcpy(info->source_where_buf, p->where, wl + 1);
        } else {
            size_t keep = sizeof(info->source_where_buf) - 4;
            memcpy(info->source_where_buf, p->where, keep);
            memcpy(info->source_where_buf + keep, "...", 4);
        }
        info->source_where = info->source_where_buf;
    }
    info->synonyms = (const char *const *)v->syn_names;
    info->is_synonym_of_other = v->synonym_for >= 0;
    info->synonym_for = v->synonym_for;
    info->probe_pending = p->probe != NULL;
    pthread_mutex_unlock(&lock);
    return PX_SUCCESS;
}

int px_mca_var_set_probe(int index, px_mca_var_probe_fn probe)
{
    pthread_mutex_lock(&lock);
    if (index < 0 || index >= n_vars) {
        pthread_mutex_unlock(&lock);
        return PX_ERR_NOT_FOUND;
    }
    primary_of(index)->probe = probe;
    pthread_mutex_unlock(&lock);
    return PX_SUCCESS;
}

int px_mca_var_probe(int index)
{
    pthread_mutex_lock(&lock);
    if (index < 0 || index >= n_vars) {
        pthread_mutex_unlock(&lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *p = primary_of(index);
    px_mca_var_probe_fn probe = p->probe;
    p->probe = NULL; /* once, even if it fails */
    int rc = probe ? probe() : PX_SUCCESS;
    pthread_mutex_unlock(&lock);
    return rc;
}

char *px_mca_var_value_string(int index)
{
    pthread_mutex_lock(&lock);
    char *s = NULL;
    if (index >= 0 && index < n_vars) {
        px_mca_var_probe(index);
        var_t *p = primary_of(index);
        value_t val;
        read_storage(p, &val);
        s = format_value(p, &val);
    }
    pthread_mutex_unlock(&lock);
    return s;
}

char *px_mca_var_default_string(int index)
{
    pthread_mutex_lock(&lock);
    char *s = NULL;
    if (index >= 0 && index < n_vars) {
        var_t *p = primary_of(index);
        s = format_value(p, &p->dflt);
    }
    pthread_mutex_unlock(&lock);
    return s;
}

char *px_mca_var_source_string(int index)
{
    pthread_mutex_lock(&lock);
    char *s = NULL;
    if (index >= 0 && index < n_vars) {
        var_t *p = primary_of(index);
        switch (p->source) {
        case PX_MCA_VAR_SOURCE_FILE:
        case PX_MCA_VAR_SOURCE_OVERRIDE:
            s = xasprintf("%s %s", px_mca_var_source_name(p->source), p->where ? p->where : "?");
            break;
        case PX_MCA_VAR_SOURCE_ENV:
            s = xasprintf("environment %s", p->where ? p->where : "?");
            break;
        default:
            s = strdup(px_mca_var_source_name(p->source));
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return s;
}
