/*
 * var_resolve.c: precedence. A variable's value is the one from the highest
 * source that names it (or one of its synonyms): default < file <
 * environment < command line < API < override file.
 */
#include <stdlib.h>
#include <string.h>
#include "core/mca/var_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"

/* The highest-precedence usable entry for primary `v`: checks the primary
 * name, then each synonym, per source. */
static entry_t *best_entry(var_t *v, const char **via)
{
    for (int s = PX_MCA_VAR_SOURCE_OVERRIDE; s > PX_MCA_VAR_SOURCE_DEFAULT; s--) {
        entry_t *e = px_mca_var_find_entry(v->full_name, (px_mca_var_source_t)s);
        if (e && !e->bad) {
            *via = v->full_name;
            return e;
        }
        for (int k = 0; k < v->n_syns; k++) {
            var_t *syn = px_mca_vars[v->syns[k]];
            e = px_mca_var_find_entry(syn->full_name, (px_mca_var_source_t)s);
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
    int si = px_mca_var_find_unlocked(via);
    var_t *named = si >= 0 ? px_mca_vars[si] : v;
    if (!(named->flags & PX_MCA_VAR_FLAG_DEPRECATED) || named->warned_deprecated)
        return;
    named->warned_deprecated = true;
    char *src = px_mca_var_describe_source(e->source, e->where);
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
        entry_t *e = px_mca_var_find_entry(v->full_name, (px_mca_var_source_t)s);
        for (int k = 0; !e && k < v->n_syns; k++)
            e = px_mca_var_find_entry(px_mca_vars[v->syns[k]]->full_name, (px_mca_var_source_t)s);
        if (!e)
            continue;
        v->warned_override = true;
        char *src = px_mca_var_describe_source(e->source, e->where);
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
int px_mca_var_resolve(var_t *v)
{
    const char *via = NULL;
    entry_t *e = best_entry(v, &via);
    value_t val;
    bool fixed = (v->flags & PX_MCA_VAR_FLAG_READONLY) || v->scope == PX_MCA_VAR_SCOPE_CONSTANT;
    if (e && fixed) {
        if (!v->warned_readonly) {
            v->warned_readonly = true;
            char *src = px_mca_var_describe_source(e->source, e->where);
            px_show_warning("variable %s is read-only; the value \"%s\" from %s is ignored",
                            v->full_name, e->value, src ? src : "?");
            free(src);
        }
        e = NULL;
    }
    if (e) {
        bool parsed = px_mca_var_parse(v, e->value, &val);
        if (!parsed || !px_mca_var_in_range(v, &val)) {
            px_mca_var_report_bad_value(v, via, e->value, e->source, e->where, NULL, parsed);
            if (parsed && v->type == PX_MCA_VAR_TYPE_STRING)
                free(val.s);
            e->bad = true;
            px_mca_var_write_storage(v, &v->dflt);
            v->source = PX_MCA_VAR_SOURCE_DEFAULT;
            free(v->where);
            v->where = NULL;
            return PX_ERR_BAD_PARAM;
        }
        warn_deprecated(v, via, e);
        if (e->source == PX_MCA_VAR_SOURCE_OVERRIDE)
            warn_overridden(v, e);
        px_mca_var_write_storage(v, &val);
        if (v->type == PX_MCA_VAR_TYPE_STRING)
            free(val.s);
        v->source = e->source;
        free(v->where);
        v->where = e->where ? strdup(e->where) : NULL;
        return PX_SUCCESS;
    }
    px_mca_var_write_storage(v, &v->dflt);
    v->source = PX_MCA_VAR_SOURCE_DEFAULT;
    free(v->where);
    v->where = NULL;
    return PX_SUCCESS;
}
