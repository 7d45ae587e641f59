/*
 * var.c: MCA variables: the registry (registration, synonyms, ranges, plugin
 * detach), lookup, unknown names and the read view for px_info. Values come
 * from var_source.c (files, environment, command line, API), are weighed in
 * var_resolve.c and parsed and formatted in var_value.c; var_internal.h holds
 * what these files share.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/class/hash_table.h"
#include "core/mca/mca_internal.h"
#include "core/mca/var.h"
#include "core/mca/var_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "core/util/suggest.h"

pthread_mutex_t px_mca_var_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
var_t **px_mca_vars;
int px_mca_n_vars;
static int cap_vars;
static int init_count;
int px_mca_var_n_value_errors; /* values that did not parse, reported */

static px_mca_var_unknown_filter_fn unknown_filter; /* px_mca_var_set_unknown_filter */

/* ------------------------------------------------------------ small helpers */

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

/* The variables by full name, in core/class's hash table (a value is the
 * variable's index + 1). Every registration looks its name up first: with a
 * scan of all variables, those registered at px_init cost 0.45M of its 2.18M
 * instructions per rank (docs/measurements/startup.md). Variables are only
 * added (all dropped at finalize), so nothing is ever removed from it. If
 * an insertion fails (no memory), the index is dropped and lookups scan. */
static px_hash_table_t name_index;
static int name_index_state; /* 0: not made, 1: in use, -1: dropped (scan) */

static void name_index_drop(void)
{
    if (1 == name_index_state)
        PX_OBJ_DESTRUCT(&name_index);
    name_index_state = -1;
}

/* Index variable `idx`, making the index (with every variable before it) at
 * the first call. */
static void name_index_add(int idx)
{
    if (0 == name_index_state) {
        PX_OBJ_CONSTRUCT(&name_index, px_hash_table_t);
        name_index_state = 1;
        if (PX_SUCCESS != px_hash_table_init(&name_index, 1024)) {
            name_index_drop();
            return;
        }
        for (int i = 0; i < idx; i++)
            if (PX_SUCCESS != px_hash_table_set_value_str(&name_index, px_mca_vars[i]->full_name,
                                                          (void *)(intptr_t)(i + 1))) {
                name_index_drop();
                return;
            }
    }
    if (1 == name_index_state &&
        PX_SUCCESS != px_hash_table_set_value_str(&name_index, px_mca_vars[idx]->full_name,
                                                  (void *)(intptr_t)(idx + 1)))
        name_index_drop();
}

int px_mca_var_find_unlocked(const char *full_name)
{
    if (1 == name_index_state) {
        void *v;
        if (PX_SUCCESS != px_hash_table_get_value_str(&name_index, full_name, &v))
            return PX_ERR_NOT_FOUND;
        return (int)(intptr_t)v - 1;
    }
    for (int i = 0; i < px_mca_n_vars; i++)
        if (0 == strcmp(px_mca_vars[i]->full_name, full_name))
            return i;
    return PX_ERR_NOT_FOUND;
}

var_t *px_mca_var_primary_of(int index)
{
    var_t *v = px_mca_vars[index];
    return v->synonym_for >= 0 ? px_mca_vars[v->synonym_for] : v;
}

/* ------------------------------------------------------------ registration */

static int add_var(var_t *v)
{
    if (px_mca_n_vars == cap_vars) {
        int cap = cap_vars ? cap_vars * 2 : 64;
        var_t **nv = realloc(px_mca_vars, (size_t)cap * sizeof(*nv));
        if (!nv)
            return PX_ERR_OUT_OF_RESOURCE;
        px_mca_vars = nv;
        cap_vars = cap;
    }
    px_mca_vars[px_mca_n_vars] = v;
    name_index_add(px_mca_n_vars);
    return px_mca_n_vars++;
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

int px_mca_var_set_range(int index, const char *min, const char *max)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (index < 0 || index >= px_mca_n_vars) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *p = px_mca_var_primary_of(index);
    int rc = px_mca_var_set_range_unlocked(p, min, max);
    if (rc == PX_SUCCESS)
        rc = px_mca_var_resolve(p); /* the current value is checked against the range */
    pthread_mutex_unlock(&px_mca_var_lock);
    return rc;
}

int px_mca_var_get_range(int index, const char **min, const char **max)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (index < 0 || index >= px_mca_n_vars) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *p = px_mca_var_primary_of(index);
    px_mca_var_range_texts(p);
    if (min)
        *min = p->range_min;
    if (max)
        *max = p->range_max;
    pthread_mutex_unlock(&px_mca_var_lock);
    return PX_SUCCESS;
}

char *px_mca_var_accepted_string(int index)
{
    pthread_mutex_lock(&px_mca_var_lock);
    char *s = NULL;
    if (index >= 0 && index < px_mca_n_vars)
        s = px_mca_var_accepted_for(px_mca_var_primary_of(index));
    pthread_mutex_unlock(&px_mca_var_lock);
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
    pthread_mutex_lock(&px_mca_var_lock);
    px_mca_var_load();
    int idx = px_mca_var_find_unlocked(full);
    if (idx >= 0) {
        var_t *v = px_mca_vars[idx];
        free(full);
        if (v->synonym_for >= 0 || v->type != type) {
            pthread_mutex_unlock(&px_mca_var_lock);
            return PX_ERR_EXISTS;
        }
        if (v->storage != storage) {
            /* New storage (e.g. a component registered again): give the old
             * one back its default and fill the new one. */
            value_t cur;
            px_mca_var_read_storage(v, &cur);
            if (type == PX_MCA_VAR_TYPE_STRING) {
                char *keep = cur.s ? strdup(cur.s) : NULL;
                free(v->owned);
                v->owned = NULL;
                *(char **)v->storage = v->dflt.s;
                v->storage = storage;
                cur.s = keep;
                px_mca_var_write_storage(v, &cur);
                free(keep);
            } else {
                v->storage = storage;
                px_mca_var_write_storage(v, &cur);
            }
        }
        int rc = PX_SUCCESS;
        if (ranged && (rc = px_mca_var_set_range_unlocked(v, min, max)) == PX_SUCCESS)
            rc = px_mca_var_resolve(v);
        pthread_mutex_unlock(&px_mca_var_lock);
        return rc == PX_SUCCESS ? idx : rc;
    }
    var_t *v = calloc(1, sizeof(*v));
    if (!v) {
        free(full);
        pthread_mutex_unlock(&px_mca_var_lock);
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
    px_mca_var_read_storage(v, &v->dflt);
    idx = add_var(v);
    if (idx < 0) {
        free_var(v);
        pthread_mutex_unlock(&px_mca_var_lock);
        return idx;
    }
    /* The range is in place before the first resolution, so a value out of
     * it is reported once, as such. */
    int rc = ranged ? px_mca_var_set_range_unlocked(v, min, max) : PX_SUCCESS;
    if (rc == PX_SUCCESS)
        rc = px_mca_var_resolve(v);
    else
        px_mca_var_resolve(v);
    pthread_mutex_unlock(&px_mca_var_lock);
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
    if (!px_mca_var_has_range_type(type))
        return PX_ERR_BAD_PARAM;
    return register_var(framework, component, name, help, type, NULL, info_level, scope, flags,
                        true, min, max, storage);
}

/* A row of a registration table that cannot be registered: say which. */
static int bad_field(const char *framework, const char *component, int row,
                     const px_mca_var_field_t *f, const char *why)
{
    char *full = join_name(framework, component, f->name ? f->name : "");
    px_show_error("registration table of %s%s%s, row %d (variable %s): %s; the variable is not "
                  "registered",
                  framework ? framework : "", component ? "/" : "", component ? component : "", row,
                  full && full[0] ? full : "with no name", why);
    free(full);
    return PX_ERR_BAD_PARAM;
}

/* Check row `row` and write its default; returns its storage or NULL (after
 * a message). */
static void *field_storage(const char *framework, const char *component, int row,
                           const px_mca_var_field_t *f, void *base)
{
    char why[256];
    void *storage = f->storage ? f->storage : base ? (char *)base + f->offset : NULL;
    bool ranged = f->min || f->max;
    if (!f->name || !f->name[0])
        snprintf(why, sizeof(why), "the row has no name");
    else if (f->type > PX_MCA_VAR_TYPE_ENUM)
        snprintf(why, sizeof(why), "type %d is not a px_mca_var_type_t", (int)f->type);
    else if (!storage)
        snprintf(why, sizeof(why), "no storage (give .storage, or .offset with a base pointer)");
    else if ((f->type == PX_MCA_VAR_TYPE_ENUM) != (f->enum_values != NULL))
        snprintf(why, sizeof(why), "%s",
                 f->enum_values ? "an enum table is given for a variable that is not an enum"
                                : "an enum variable needs its table of names (.enum_values)");
    else if (ranged && !px_mca_var_has_range_type(f->type))
        snprintf(why, sizeof(why),
                 "a range is given for a %s variable; only int, unsigned, size and double "
                 "variables have one",
                 px_mca_var_type_name(f->type));
    else
        why[0] = '\0';
    if (why[0]) {
        bad_field(framework, component, row, f, why);
        return NULL;
    }
    if (f->dflt) {
        if (f->type == PX_MCA_VAR_TYPE_STRING) {
            *(const char **)storage = f->dflt;
            return storage;
        }
        var_t tmp = {.type = f->type, .enum_values = f->enum_values, .storage = storage};
        value_t val;
        if (!px_mca_var_parse(&tmp, f->dflt, &val)) {
            char *forms = px_mca_var_accepted_forms(f->type, f->enum_values);
            snprintf(why, sizeof(why), "the default \"%s\" is not a %s value (accepted: %s)",
                     f->dflt, px_mca_var_type_name(f->type), forms ? forms : "?");
            free(forms);
            bad_field(framework, component, row, f, why);
            return NULL;
        }
        px_mca_var_write_storage(&tmp, &val);
    }
    return storage;
}

int px_mca_var_register_table(const char *framework, const char *component,
                              const px_mca_var_field_t *table, int n, void *base)
{
    if (!table)
        return PX_ERR_BAD_PARAM;
    int first = PX_SUCCESS;
    for (int i = 0; n < 0 ? table[i].name != NULL : i < n; i++) {
        const px_mca_var_field_t *f = &table[i];
        void *storage = field_storage(framework, component, i, f, base);
        int rc;
        if (!storage)
            rc = PX_ERR_BAD_PARAM;
        else if (f->min || f->max)
            rc = register_var(framework, component, f->name, f->help, f->type, NULL, f->info_level,
                              f->scope, f->flags, true, f->min, f->max, storage);
        else
            rc = register_var(framework, component, f->name, f->help, f->type, f->enum_values,
                              f->info_level, f->scope, f->flags, false, NULL, NULL, storage);
        if (rc >= 0 && f->probe)
            rc = px_mca_var_set_probe(rc, f->probe);
        if (rc < 0 && first == PX_SUCCESS)
            first = rc;
    }
    return first;
}

int px_mca_var_register_synonym(int index, const char *framework, const char *component,
                                const char *name, unsigned flags)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (index < 0 || index >= px_mca_n_vars) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_BAD_PARAM;
    }
    var_t *p = px_mca_var_primary_of(index);
    int pidx = px_mca_var_find_unlocked(p->full_name);
    char *full = join_name(framework, component, name);
    if (!full || !full[0]) {
        free(full);
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_BAD_PARAM;
    }
    int existing = px_mca_var_find_unlocked(full);
    if (existing >= 0) {
        free(full);
        pthread_mutex_unlock(&px_mca_var_lock);
        return px_mca_vars[existing]->synonym_for == pidx ? existing : PX_ERR_EXISTS;
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
        pthread_mutex_unlock(&px_mca_var_lock);
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
        pthread_mutex_unlock(&px_mca_var_lock);
        return sidx;
    }
    p->syns[p->n_syns] = sidx;
    p->syn_names[p->n_syns] = s->full_name;
    p->n_syns++;
    p->syn_names[p->n_syns] = NULL;
    int rc = px_mca_var_resolve(p);
    pthread_mutex_unlock(&px_mca_var_lock);
    return rc == PX_SUCCESS ? sidx : rc;
}

int px_mca_var_detach_component(const char *framework, const char *component)
{
    if (!framework || !component)
        return PX_ERR_BAD_PARAM;
    pthread_mutex_lock(&px_mca_var_lock);
    int n = 0;
    for (int i = 0; i < px_mca_n_vars; i++) {
        var_t *v = px_mca_vars[i];
        if (strcmp(v->framework, framework) != 0 || strcmp(v->component, component) != 0)
            continue;
        var_t *p = px_mca_var_primary_of(i);
        if (p->storage != &p->internal) {
            px_mca_var_read_storage(p, &p->internal);
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
    pthread_mutex_unlock(&px_mca_var_lock);
    return n;
}

int px_mca_var_init(void)
{
    pthread_mutex_lock(&px_mca_var_lock);
    init_count++;
    int rc = px_mca_var_load();
    pthread_mutex_unlock(&px_mca_var_lock);
    return rc;
}

int px_mca_var_finalize(void)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (init_count > 0 && --init_count > 0) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_SUCCESS;
    }
    for (int i = 0; i < px_mca_n_vars; i++) {
        var_t *v = px_mca_vars[i];
        if (v->synonym_for < 0) {
            /* Give the caller's storage its default back, so that a later
             * registration starts from the same state. */
            if (v->type == PX_MCA_VAR_TYPE_STRING) {
                free(v->owned);
                *(char **)v->storage = v->dflt.s;
            } else {
                px_mca_var_write_storage(v, &v->dflt);
            }
        }
        free_var(v);
    }
    free(px_mca_vars);
    px_mca_vars = NULL;
    px_mca_n_vars = cap_vars = 0;
    name_index_drop();
    name_index_state = 0; /* made again at the next registration */
    px_mca_var_sources_reset();
    init_count = 0;
    px_mca_var_n_value_errors = 0;
    px_mca_repository_finalize();
    pthread_mutex_unlock(&px_mca_var_lock);
    return PX_SUCCESS;
}

/* ----------------------------------------------------------------- setting */

int px_mca_var_find(const char *full_name)
{
    if (!full_name)
        return PX_ERR_BAD_PARAM;
    pthread_mutex_lock(&px_mca_var_lock);
    int i = px_mca_var_find_unlocked(full_name);
    pthread_mutex_unlock(&px_mca_var_lock);
    return i;
}

/* --------------------------------------------------------- unknown names */

int px_mca_var_nearest(const char *name, const char **out, int max)
{
    if (!name || max <= 0)
        return 0;
    pthread_mutex_lock(&px_mca_var_lock);
    int n = 0;
    const char **names = malloc((size_t)(px_mca_n_vars + 1) * sizeof(*names));
    if (names) {
        for (int i = 0; i < px_mca_n_vars; i++)
            names[i] = px_mca_vars[i]->full_name;
        n = px_suggest_nearest(name, names, px_mca_n_vars, out, max);
        free(names);
    }
    pthread_mutex_unlock(&px_mca_var_lock);
    return n;
}

void px_mca_var_set_unknown_filter(px_mca_var_unknown_filter_fn filter)
{
    pthread_mutex_lock(&px_mca_var_lock);
    unknown_filter = filter;
    pthread_mutex_unlock(&px_mca_var_lock);
}

int px_mca_var_check_unknown(void)
{
    pthread_mutex_lock(&px_mca_var_lock);
    px_mca_var_load();
    int unknown = 0;
    for (int i = 0; i < px_mca_var_n_entries; i++) {
        entry_t *e = &px_mca_var_entries[i];
        if (e->source == PX_MCA_VAR_SOURCE_API || px_mca_var_find_unlocked(e->name) >= 0)
            continue;
        if (unknown_filter && unknown_filter(e->name))
            continue;
        unknown++;
        if (e->warned && !px_mca_var_strict_value)
            continue;
        e->warned = true;
        const char *near[3];
        int n = px_mca_var_nearest(e->name, near, 3);
        char *src = px_mca_var_describe_source(e->source, e->where);
        char hint[512];
        if (n)
            snprintf(hint, sizeof(hint), "nearest registered names: %s%s%s%s%s", near[0],
                     n > 1 ? ", " : "", n > 1 ? near[1] : "", n > 2 ? ", " : "",
                     n > 2 ? near[2] : "");
        else
            snprintf(hint, sizeof(hint), "no registered variable has a similar name");
        if (px_mca_var_strict_value)
            px_show_error("unknown variable \"%s\" in %s; %s (fatal because mca_base_strict is "
                          "set)",
                          e->name, src ? src : "?", hint);
        else
            px_show_warning("unknown variable \"%s\" in %s; %s", e->name, src ? src : "?", hint);
        free(src);
    }
    int rc = (unknown && px_mca_var_strict_value) ? PX_ERR_NOT_FOUND : PX_SUCCESS;
    pthread_mutex_unlock(&px_mca_var_lock);
    return rc;
}

/* --------------------------------------------------------------- read view */

int px_mca_var_error_count(void)
{
    return px_mca_var_n_value_errors;
}

int px_mca_var_count(void)
{
    pthread_mutex_lock(&px_mca_var_lock);
    px_mca_var_load();
    int n = px_mca_n_vars;
    pthread_mutex_unlock(&px_mca_var_lock);
    return n;
}

int px_mca_var_get_info(int index, px_mca_var_info_t *info)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (index < 0 || index >= px_mca_n_vars || !info) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *v = px_mca_vars[index];
    var_t *p = px_mca_var_primary_of(index);
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
    pthread_mutex_unlock(&px_mca_var_lock);
    return PX_SUCCESS;
}

int px_mca_var_set_probe(int index, px_mca_var_probe_fn probe)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (index < 0 || index >= px_mca_n_vars) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_NOT_FOUND;
    }
    px_mca_var_primary_of(index)->probe = probe;
    pthread_mutex_unlock(&px_mca_var_lock);
    return PX_SUCCESS;
}

int px_mca_var_probe(int index)
{
    pthread_mutex_lock(&px_mca_var_lock);
    if (index < 0 || index >= px_mca_n_vars) {
        pthread_mutex_unlock(&px_mca_var_lock);
        return PX_ERR_NOT_FOUND;
    }
    var_t *p = px_mca_var_primary_of(index);
    px_mca_var_probe_fn probe = p->probe;
    p->probe = NULL; /* once, even if it fails */
    int rc = probe ? probe() : PX_SUCCESS;
    pthread_mutex_unlock(&px_mca_var_lock);
    return rc;
}

char *px_mca_var_value_string(int index)
{
    pthread_mutex_lock(&px_mca_var_lock);
    char *s = NULL;
    if (index >= 0 && index < px_mca_n_vars) {
        px_mca_var_probe(index);
        var_t *p = px_mca_var_primary_of(index);
        value_t val;
        px_mca_var_read_storage(p, &val);
        s = px_mca_var_format(p, &val);
    }
    pthread_mutex_unlock(&px_mca_var_lock);
    return s;
}

char *px_mca_var_default_string(int index)
{
    pthread_mutex_lock(&px_mca_var_lock);
    char *s = NULL;
    if (index >= 0 && index < px_mca_n_vars) {
        var_t *p = px_mca_var_primary_of(index);
        s = px_mca_var_format(p, &p->dflt);
    }
    pthread_mutex_unlock(&px_mca_var_lock);
    return s;
}

char *px_mca_var_source_string(int index)
{
    pthread_mutex_lock(&px_mca_var_lock);
    char *s = NULL;
    if (index >= 0 && index < px_mca_n_vars) {
        var_t *p = px_mca_var_primary_of(index);
        switch (p->source) {
        case PX_MCA_VAR_SOURCE_FILE:
        case PX_MCA_VAR_SOURCE_OVERRIDE:
            s = px_asprintf("%s %s", px_mca_var_source_name(p->source), p->where ? p->where : "?");
            break;
        case PX_MCA_VAR_SOURCE_ENV:
            s = px_asprintf("environment %s", p->where ? p->where : "?");
            break;
        default:
            s = strdup(px_mca_var_source_name(p->source));
            break;
        }
    }
    pthread_mutex_unlock(&px_mca_var_lock);
    return s;
}

/* ------------------------------------------------------- job-wide values */

typedef struct {
    const char *name;
    char *text[3]; /* canonical value, value as shown, source */
} scope_row_t;

static int scope_row_cmp(const void *a, const void *b)
{
    return strcmp(((const scope_row_t *)a)->name, ((const scope_row_t *)b)->name);
}

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int px_mca_var_scope_all_values(char **buf, size_t *len, uint64_t *hash)
{
    pthread_mutex_lock(&px_mca_var_lock);
    int rc = PX_SUCCESS, n = 0;
    scope_row_t *rows = calloc(px_mca_n_vars ? (size_t)px_mca_n_vars : 1, sizeof(*rows));
    if (!rows)
        rc = PX_ERR_OUT_OF_RESOURCE;
    for (int i = 0; PX_SUCCESS == rc && i < px_mca_n_vars; i++) {
        var_t *v = px_mca_vars[i];
        if (v->synonym_for >= 0 || v->scope != PX_MCA_VAR_SCOPE_ALL || v->probe)
            continue;
        value_t val;
        px_mca_var_read_storage(v, &val);
        scope_row_t *r = &rows[n++];
        r->name = v->full_name;
        r->text[0] = PX_MCA_VAR_TYPE_DOUBLE == v->type ? px_asprintf("%a", val.d)
                                                       : px_mca_var_format(v, &val);
        r->text[1] = px_mca_var_format(v, &val);
        r->text[2] = px_mca_var_source_string(i);
        if (!r->text[0] || !r->text[1] || !r->text[2])
            rc = PX_ERR_OUT_OF_RESOURCE;
    }
    pthread_mutex_unlock(&px_mca_var_lock);
    if (PX_SUCCESS == rc)
        qsort(rows, (size_t)n, sizeof(*rows), scope_row_cmp);
    uint64_t h = 0xcbf29ce484222325ull;
    size_t total = 0;
    for (int i = 0; PX_SUCCESS == rc && i < n; i++) {
        h = fnv1a(h, rows[i].name, strlen(rows[i].name) + 1);
        h = fnv1a(h, rows[i].text[0], strlen(rows[i].text[0]) + 1);
        total += strlen(rows[i].name) + 1;
        for (int k = 0; k < 3; k++)
            total += strlen(rows[i].text[k]) + 1;
    }
    char *out = NULL;
    if (PX_SUCCESS == rc && buf) {
        out = malloc(total ? total : 1);
        if (!out)
            rc = PX_ERR_OUT_OF_RESOURCE;
        size_t at = 0;
        for (int i = 0; out && i < n; i++) {
            const char *parts[4] = {rows[i].name, rows[i].text[0], rows[i].text[1],
                                    rows[i].text[2]};
            for (int k = 0; k < 4; k++) {
                size_t l = strlen(parts[k]) + 1;
                memcpy(out + at, parts[k], l);
                at += l;
            }
        }
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            free(rows[i].text[k]);
    free(rows);
    if (rc != PX_SUCCESS) {
        free(out);
        return rc;
    }
    if (buf) {
        *buf = out;
        if (len)
            *len = total;
    }
    if (hash)
        *hash = h;
    return PX_SUCCESS;
}
