/*
 * framework.c: framework lifecycle (register -> open -> select -> close),
 * the selection list <fw> ("a,b" or "^a,b"), and the helpers for the two
 * selection styles. Components come from repository.c.
 */
#define _GNU_SOURCE
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/mca_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/suggest.h"

PX_CLASS_INSTANCE(px_mca_component_item_t, px_list_item_t, NULL, NULL);

/* Verbosity levels of this file's messages on <fw>_base_verbose. */
#define VERB_PROBLEM 1  /* refused, failed open, dropped */
#define VERB_ROUTINE 10 /* found, opened, closed, priorities, built-in wins */

#define MAX_FRAMEWORKS 64

typedef enum { SEL_ALL, SEL_INCLUDE, SEL_EXCLUDE } sel_mode_t;

typedef struct fw_state {
    px_mca_framework_t *fw;
    bool list_constructed;
    bool output_open;
    sel_mode_t mode;
    char **names;        /* names in the selection list (argv) */
    char *include_error; /* every unusable name of an include list */
    bool exclude_warned;
    /* Its own variables registered by px_mca_framework_register_deferred
     * after px_init's check for unknown variables: its components' are
     * checked when they load. */
    bool deferred;
} fw_state_t;

static fw_state_t states[MAX_FRAMEWORKS];
static int n_states;

static fw_state_t *state_of(px_mca_framework_t *fw, bool create)
{
    for (int i = 0; i < n_states; i++)
        if (states[i].fw == fw)
            return &states[i];
    if (!create || n_states == MAX_FRAMEWORKS)
        return NULL;
    fw_state_t *s = &states[n_states++];
    memset(s, 0, sizeof(*s));
    s->fw = fw;
    return s;
}

int px_mca_framework_count(void)
{
    return n_states;
}

px_mca_framework_t *px_mca_framework_get(int i)
{
    return (i >= 0 && i < n_states) ? states[i].fw : NULL;
}

px_mca_framework_t *px_mca_framework_find(const char *name)
{
    for (int i = 0; i < n_states; i++)
        if (0 == strcmp(states[i].fw->name, name))
            return states[i].fw;
    return NULL;
}

/* ------------------------------------------------------- selection lists */

/* "where the selection list came from", for messages. */
static char *selection_origin(px_mca_framework_t *fw)
{
    int idx = px_mca_var_find(fw->name);
    char *src = idx >= 0 ? px_mca_var_source_string(idx) : NULL;
    return src ? src : strdup("?");
}

static int parse_selection(px_mca_framework_t *fw, fw_state_t *st)
{
    px_argv_free(st->names);
    st->names = NULL;
    st->mode = SEL_ALL;
    const char *s = fw->selection;
    if (!s)
        return PX_SUCCESS;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return PX_SUCCESS;
    bool exclude = (*s == '^');
    st->names = px_mca_split_trimmed(exclude ? s + 1 : s, ',');
    for (int i = 0; st->names && st->names[i]; i++) {
        if (strchr(st->names[i], '^')) {
            char *src = selection_origin(fw);
            px_show_error("the %s selection list \"%s\" (from %s) mixes including and "
                          "excluding; use either \"a,b\" (only these) or \"^a,b\" (all but these)",
                          fw->name, fw->selection, src);
            free(src);
            px_argv_free(st->names);
            st->names = NULL;
            return PX_ERR_BAD_PARAM;
        }
    }
    if (!st->names) {
        if (exclude) {
            char *src = selection_origin(fw);
            px_show_error("the %s selection list \"%s\" (from %s) excludes nothing; write "
                          "\"^name\" or leave it empty for all components",
                          fw->name, fw->selection, src);
            free(src);
            return PX_ERR_BAD_PARAM;
        }
        return PX_SUCCESS;
    }
    st->mode = exclude ? SEL_EXCLUDE : SEL_INCLUDE;
    return PX_SUCCESS;
}

static bool in_list(char **v, const char *name)
{
    for (int i = 0; v && v[i]; i++)
        if (0 == strcmp(v[i], name))
            return true;
    return false;
}

/* "a, b, c" for messages (caller frees). */
static char *join_for_message(char **v)
{
    char *out = strdup("");
    for (int i = 0; out && v && v[i]; i++) {
        char *next = NULL;
        if (asprintf(&next, "%s%s%s", out, i ? ", " : "", v[i]) < 0)
            next = NULL;
        free(out);
        out = next;
    }
    return out;
}

static bool allows(fw_state_t *st, const char *name)
{
    switch (st->mode) {
    case SEL_INCLUDE:
        return in_list(st->names, name);
    case SEL_EXCLUDE:
        return !in_list(st->names, name);
    default:
        return true;
    }
}

const char *px_mca_framework_selection_error(px_mca_framework_t *fw)
{
    fw_state_t *st = state_of(fw, false);
    return st ? st->include_error : NULL;
}

bool px_mca_framework_allows(px_mca_framework_t *fw, const char *component_name)
{
    fw_state_t *st = state_of(fw, false);
    if (!st) {
        fw_state_t tmp = {0};
        tmp.fw = fw;
        if (parse_selection(fw, &tmp) != PX_SUCCESS)
            return false;
        bool ok = allows(&tmp, component_name);
        px_argv_free(tmp.names);
        return ok;
    }
    return allows(st, component_name);
}

/* Is `name` listed among configure's components of `fw` in list `str`
 * ("btl:self boot:pxrun ...")? */
static bool in_config_list(const char *str, const char *fw, const char *name)
{
    char want[256];
    snprintf(want, sizeof(want), "%s:%s", fw, name);
    char **v = px_mca_split_trimmed(str, ' ');
    bool found = in_list(v, want);
    px_argv_free(v);
    return found;
}

/* Append to `msg` one line per include-list name that no usable component
 * has, with the reason. Returns how many. */
static int explain_unknown(px_mca_framework_t *fw, fw_state_t *st, char **known, char **msg)
{
    int count = 0;
    for (int i = 0; st->names && st->names[i]; i++) {
        const char *name = st->names[i];
        bool usable = false;
        px_mca_component_item_t *it;
        PX_LIST_FOREACH(it, &fw->components, px_mca_component_item_t)
        {
            if (0 == strcmp(it->component->component_name, name))
                usable = true;
        }
        if (usable)
            continue;
        count++;
        char *reason = NULL;
        const px_mca_failed_component_t *f = px_mca_repository_failure_for(fw->name, name);
        if (f) {
            if (asprintf(&reason, "refused: %s (%s)", f->reason, f->path) < 0)
                reason = NULL;
        } else if (in_config_list(PX_PLUGIN_COMPONENTS_STR, fw->name, name)) {
            if (asprintf(&reason,
                         "not found: it was built as a plugin, but plexus_%s_%s.so is not in "
                         "any folder searched (below)",
                         fw->name, name) < 0)
                reason = NULL;
        }
#ifdef PX_NOT_BUILT_COMPONENTS_STR
        else if (in_config_list(PX_NOT_BUILT_COMPONENTS_STR, fw->name, name)) {
            reason = strdup("not built: configure did not find what it needs (see configure's "
                            "summary)");
        }
#endif
        if (!reason) {
            const char *best = NULL;
            px_suggest_nearest(name, (const char *const *)known, -1, &best, 1);
            if (best) {
                if (asprintf(&reason, "probably a misspelling of \"%s\"", best) < 0)
                    reason = NULL;
            } else if (asprintf(&reason,
                                "not found: no built-in component of that name, and no file "
                                "plexus_%s_%s.so in the plugin folders searched (below)",
                                fw->name, name) < 0) {
                reason = NULL;
            }
        }
        char *next = NULL;
        if (asprintf(&next, "%s\n  %s: %s", *msg ? *msg : "", name, reason ? reason : "?") >= 0) {
            free(*msg);
            *msg = next;
        }
        free(reason);
    }
    return count;
}

/* -------------------------------------------------------------- lifecycle */

static void item_unload(px_mca_component_item_t *it)
{
    if (it->dl_handle) {
        px_mca_var_detach_component(it->component->framework_name, it->component->component_name);
        px_mca_repository_unload(it->dl_handle, it->component, it->path);
    }
    free((char *)it->path);
    it->dl_handle = NULL;
    it->path = NULL;
    PX_OBJ_RELEASE(it);
}

static px_mca_component_item_t *add_item(px_mca_framework_t *fw, const px_mca_component_t *c,
                                         void *handle, const char *path)
{
    px_mca_component_item_t *it = PX_OBJ_NEW(px_mca_component_item_t);
    if (!it)
        return NULL;
    it->component = c;
    it->dl_handle = handle;
    it->path = path ? strdup(path) : NULL;
    px_list_append(&fw->components, &it->super);
    return it;
}

static int register_vars(px_mca_framework_t *fw)
{
    char help[512];
    /* fw->selection and fw->verbose are not reset here: registering a
     * variable that exists with the same storage (the framework's own part
     * registered a second time: px_mca_framework_register_deferred, then
     * open) leaves its value in place, and a reset would lose it. */
    snprintf(help, sizeof(help),
             "Components of the %s framework (%s): \"a,b\" uses only these, \"^a,b\" all but "
             "these; empty means all",
             fw->name, fw->description ? fw->description : "");
    int rc = px_mca_var_register(fw->name, NULL, NULL, help, PX_MCA_VAR_TYPE_STRING, NULL, 2,
                                 PX_MCA_VAR_SCOPE_ALL, 0, &fw->selection);
    if (rc < 0 && rc != PX_ERR_BAD_PARAM)
        return rc;
    snprintf(help, sizeof(help),
             "Verbosity of the %s framework's messages: 0 quiet, 1 problems with components "
             "(refused, failed open), 10 every step, 100 everything",
             fw->name);
    rc = px_mca_var_register_range(fw->name, "base", "verbose", help, PX_MCA_VAR_TYPE_INT, 8,
                                   PX_MCA_VAR_SCOPE_LOCAL, PX_MCA_VAR_FLAG_SETTABLE, "0", "100",
                                   &fw->verbose);
    if (rc < 0 && rc != PX_ERR_BAD_PARAM)
        return rc;
    return PX_SUCCESS;
}

/* The framework's own half of registering: its variables, output, selection
 * list and register_fn; no component is looked for or loaded. Repeatable
 * (every variable registration is idempotent). */
static int register_framework_itself(px_mca_framework_t *fw, fw_state_t **stp)
{
    if (!fw || !fw->name)
        return PX_ERR_BAD_PARAM;
    px_mca_var_load();
    int rc = px_mca_repository_init();
    if (rc != PX_SUCCESS)
        return rc;
    /* From now on a variable of one of its components that is not registered
     * (excluded, or not loaded) is not "unknown". */
    px_mca_var_set_unknown_filter(px_mca_framework_unregistered_component_var);
    fw_state_t *st = state_of(fw, true);
    if (!st)
        return PX_ERR_OUT_OF_RESOURCE;
    if (!st->list_constructed) {
        PX_OBJ_CONSTRUCT(&fw->components, px_list_t);
        st->list_constructed = true;
    }
    free(st->include_error);
    st->include_error = NULL;
    rc = register_vars(fw);
    if (rc != PX_SUCCESS)
        return rc;
    if (!st->output_open) {
        int out = px_output_open(fw->name, fw->verbose);
        fw->output = out >= 0 ? out : 0;
        st->output_open = out >= 0;
    } else {
        px_output_set_verbosity(fw->output, fw->verbose);
    }
    rc = parse_selection(fw, st);
    if (rc != PX_SUCCESS)
        return rc;
    if (fw->register_fn) {
        rc = fw->register_fn();
        if (rc != PX_SUCCESS) {
            px_show_error("the %s framework could not register its variables: %s", fw->name,
                          px_strerror(rc));
            return rc;
        }
    }
    *stp = st;
    return PX_SUCCESS;
}

int px_mca_framework_register_deferred(px_mca_framework_t *fw)
{
    fw_state_t *st = NULL;
    int rc = fw && fw->registered ? PX_SUCCESS : register_framework_itself(fw, &st);
    if (st)
        st->deferred = true;
    return rc;
}

int px_mca_framework_register(px_mca_framework_t *fw)
{
    if (fw && fw->registered)
        return PX_SUCCESS;
    fw_state_t *st = NULL;
    int rc = register_framework_itself(fw, &st);
    if (rc != PX_SUCCESS)
        return rc;

    /* Candidates: built-in components, then plugins. */
    char **known = NULL;   /* every name that exists, for suggestions */
    char **refused = NULL; /* plugins refused, components dropped: not usable here */
    const px_mca_component_t *builtin[128];
    int nb = px_mca_repository_static_for(fw->name, builtin, 128);
    if (nb > 128)
        nb = 128;
    for (int i = 0; i < nb; i++) {
        const px_mca_component_t *c = builtin[i];
        px_argv_append_nosize(&known, c->component_name);
        if (!allows(st, c->component_name)) {
            PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output,
                              "component %s (built-in) not used: excluded by the selection list "
                              "\"%s\"",
                              c->component_name, fw->selection);
            continue;
        }
        add_item(fw, c, NULL, NULL);
    }
    char **pnames, **ppaths;
    int np = px_mca_repository_plugin_files(fw->name, &pnames, &ppaths);
    for (int i = 0; i < np; i++) {
        const char *name = pnames[i], *path = ppaths[i];
        if (in_list(known, name)) {
            PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output,
                              "plugin %s ignored: a built-in component %s exists and wins", path,
                              name);
            continue;
        }
        px_argv_append_nosize(&known, name);
        if (!allows(st, name)) {
            PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output,
                              "plugin %s not loaded: excluded by the selection list \"%s\"", path,
                              fw->selection);
            continue;
        }
        const px_mca_component_t *c;
        void *handle;
        if (px_mca_repository_load_plugin(fw->name, name, path, fw, &c, &handle) != PX_SUCCESS) {
            const px_mca_failed_component_t *f = px_mca_repository_failure_for(fw->name, name);
            PX_OUTPUT_VERBOSE(VERB_PROBLEM, fw->output, "plugin %s refused: %s", path,
                              f ? f->reason : "?");
            px_argv_append_nosize(&refused, name);
            continue;
        }
        PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output, "plugin %s loaded (component %s %d.%d.%d)",
                          path, name, c->component_version.major, c->component_version.minor,
                          c->component_version.release);
        add_item(fw, c, handle, path);
    }
    px_argv_free(pnames);
    px_argv_free(ppaths);

    /* Let the candidates register their variables. */
    px_mca_component_item_t *it, *next;
    PX_LIST_FOREACH_SAFE(it, next, &fw->components, px_mca_component_item_t)
    {
        const px_mca_component_t *c = it->component;
        if (!c->register_params)
            continue;
        int crc = c->register_params();
        /* PX_ERR_BAD_PARAM: a value did not parse; that was reported and the
         * default kept, so the component stays. */
        if (crc != PX_SUCCESS && crc != PX_ERR_BAD_PARAM) {
            char reason[256];
            snprintf(reason, sizeof(reason), "register_params failed: %s", px_strerror(crc));
            px_mca_repository_record_failure(fw->name, c->component_name, it->path, reason);
            PX_OUTPUT_VERBOSE(VERB_PROBLEM, fw->output, "component %s dropped: %s",
                              c->component_name, reason);
            px_argv_append_nosize(&refused, c->component_name);
            px_list_remove_item(&fw->components, &it->super);
            item_unload(it);
        }
    }

    /* Unknown names in the selection list. */
    if (st->mode == SEL_INCLUDE) {
        char *lines = NULL;
        if (explain_unknown(fw, st, known, &lines) > 0) {
            char *src = selection_origin(fw);
            char **usable = NULL; /* a refused plugin is not "here" */
            for (int i = 0; known && known[i]; i++)
                if (!in_list(refused, known[i]))
                    px_argv_append_nosize(&usable, known[i]);
            char *avail = join_for_message(usable);
            char *folders = px_mca_repository_search_report();
            if (asprintf(&st->include_error,
                         "the %s selection list \"%s\" (from %s) names components that cannot be "
                         "used:%s\n(%s components here: %s; plugin folders searched, "
                         "mca_component_path_prepend then mca_component_path: %s)",
                         fw->name, fw->selection, src, lines ? lines : "", fw->name,
                         avail && avail[0] ? avail : "none", folders ? folders : "?") < 0)
                st->include_error = NULL;
            free(src);
            free(avail);
            free(folders);
            px_argv_free(usable);
        }
        free(lines);
    } else if (st->mode == SEL_EXCLUDE && !st->exclude_warned) {
        for (int i = 0; st->names && st->names[i]; i++) {
            const char *name = st->names[i];
            if (in_list(known, name) || px_mca_repository_failure_for(fw->name, name))
                continue;
            const char *best = NULL;
            px_suggest_nearest(name, (const char *const *)known, -1, &best, 1);
            char *src = selection_origin(fw);
            px_show_warning(
                "the %s selection list \"%s\" (from %s) excludes \"%s\", which is not a "
                "%s component here%s%s%s",
                fw->name, fw->selection, src, name, fw->name, best ? "; did you mean \"" : "",
                best ? best : "", best ? "\"?" : "");
            free(src);
            st->exclude_warned = true;
        }
    }
    px_argv_free(known);
    px_argv_free(refused);
    fw->registered = true;
    if (st->deferred) {
        /* The check px_init made counted this framework's component
         * variables as known while the components were not loaded: a
         * misspelled one is found now (a warning; with mca_base_strict an
         * error, and the framework does not open). */
        st->deferred = false;
        return px_mca_var_check_unknown();
    }
    return PX_SUCCESS;
}

int px_mca_framework_open(px_mca_framework_t *fw)
{
    if (!fw)
        return PX_ERR_BAD_PARAM;
    if (fw->refcount > 0) {
        fw->refcount++;
        return PX_SUCCESS;
    }
    int rc = px_mca_framework_register(fw);
    if (rc != PX_SUCCESS)
        return rc;
    fw_state_t *st = state_of(fw, false);
    if (st && st->include_error) {
        px_show_error("%s", st->include_error);
        return PX_ERR_NOT_FOUND;
    }
    px_mca_component_item_t *it, *next;
    PX_LIST_FOREACH_SAFE(it, next, &fw->components, px_mca_component_item_t)
    {
        const px_mca_component_t *c = it->component;
        if (!c->open) {
            PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output, "component %s opened", c->component_name);
            continue;
        }
        int crc = c->open();
        if (crc == PX_SUCCESS) {
            PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output, "component %s opened", c->component_name);
            continue;
        }
        char reason[256];
        snprintf(reason, sizeof(reason), "open failed: %s", px_strerror(crc));
        PX_OUTPUT_VERBOSE(VERB_PROBLEM, fw->output, "component %s: %s; closing and unloading it",
                          c->component_name, reason);
        px_mca_repository_record_failure(fw->name, c->component_name, it->path, reason);
        if (c->close)
            c->close();
        px_list_remove_item(&fw->components, &it->super);
        item_unload(it);
    }
    if (fw->open_fn) {
        rc = fw->open_fn();
        if (rc != PX_SUCCESS) {
            px_show_error("the %s framework failed to open: %s", fw->name, px_strerror(rc));
            fw->refcount = 1;
            px_mca_framework_close(fw);
            return rc;
        }
    }
    fw->refcount = 1;
    return PX_SUCCESS;
}

int px_mca_framework_close(px_mca_framework_t *fw)
{
    if (!fw)
        return PX_ERR_BAD_PARAM;
    fw_state_t *st = state_of(fw, false);
    if (fw->refcount > 1) {
        fw->refcount--;
        return PX_SUCCESS;
    }
    bool was_open = fw->refcount == 1;
    fw->refcount = 0;
    if (was_open && fw->close_fn)
        fw->close_fn();
    if (st && st->list_constructed) {
        px_list_item_t *li;
        while ((li = px_list_remove_last(&fw->components))) {
            px_mca_component_item_t *it = (px_mca_component_item_t *)li;
            if (was_open && it->component->close)
                it->component->close();
            /* Registered only (px_info, a framework that failed to open):
             * nothing was opened, so nothing is said to be closed. */
            PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output,
                              was_open ? "component %s closed"
                                       : "component %s released (it was "
                                         "registered, never opened)",
                              it->component->component_name);
            item_unload(it);
        }
    }
    fw->registered = false;
    return PX_SUCCESS;
}

void px_mca_framework_drop(px_mca_framework_t *fw, px_mca_component_item_t *item)
{
    if (!fw || !item)
        return;
    PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output, "component %s dropped (declined)",
                      item->component->component_name);
    if (item->component->close)
        item->component->close();
    px_list_remove_item(&fw->components, &item->super);
    item_unload(item);
}

int px_mca_select_highest(px_mca_framework_t *fw, px_mca_query_fn query,
                          const px_mca_component_t **best, void **module)
{
    if (!fw || !query)
        return PX_ERR_BAD_PARAM;
    px_mca_component_item_t *winner = NULL, *it, *next;
    int best_prio = -1;
    void *best_mod = NULL;
    PX_LIST_FOREACH(it, &fw->components, px_mca_component_item_t)
    {
        int prio = -1;
        void *mod = NULL;
        int rc = query(it->component, &prio, &mod);
        if (rc != PX_SUCCESS || prio < 0) {
            PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output, "component %s declined (%s)",
                              it->component->component_name,
                              rc != PX_SUCCESS ? px_strerror(rc) : "negative priority");
            continue;
        }
        PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output, "component %s offers priority %d",
                          it->component->component_name, prio);
        if (prio > best_prio) {
            best_prio = prio;
            winner = it;
            best_mod = mod;
        }
    }
    PX_LIST_FOREACH_SAFE(it, next, &fw->components, px_mca_component_item_t)
    {
        if (it != winner)
            px_mca_framework_drop(fw, it);
    }
    if (!winner) {
        if (best)
            *best = NULL;
        if (module)
            *module = NULL;
        return PX_ERR_NOT_FOUND;
    }
    PX_OUTPUT_VERBOSE(VERB_ROUTINE, fw->output, "selected component %s (priority %d)",
                      winner->component->component_name, best_prio);
    if (best)
        *best = winner->component;
    if (module)
        *module = best_mod;
    return PX_SUCCESS;
}

int px_mca_repository_list(const char *framework, const px_mca_component_t **out, int max)
{
    int n = px_mca_repository_static_for(framework, out, max);
    px_mca_framework_t *fw = px_mca_framework_find(framework);
    fw_state_t *st = fw ? state_of(fw, false) : NULL;
    if (fw && st && st->list_constructed) {
        px_mca_component_item_t *it;
        PX_LIST_FOREACH(it, &fw->components, px_mca_component_item_t)
        {
            if (!it->dl_handle)
                continue;
            if (n < max)
                out[n] = it->component;
            n++;
        }
    }
    return n;
}

bool px_mca_framework_unregistered_component_var(const char *name)
{
    for (int i = 0; i < n_states; i++) {
        const char *fwn = states[i].fw->name;
        size_t l = strlen(fwn);
        if (strncmp(name, fwn, l) != 0 || name[l] != '_')
            continue;
        const char *rest = name + l + 1;
        /* A registered component's variables are all registered: a name
         * under it that no variable has is really unknown. */
        if (states[i].list_constructed) {
            px_mca_component_item_t *it;
            PX_LIST_FOREACH(it, &states[i].fw->components, px_mca_component_item_t)
            {
                size_t cl = strlen(it->component->component_name);
                if (0 == strncmp(rest, it->component->component_name, cl) && rest[cl] == '_')
                    return false;
            }
        }
        const px_mca_component_t *b[128];
        int nb = px_mca_repository_static_for(fwn, b, 128);
        for (int k = 0; k < nb && k < 128; k++) {
            size_t cl = strlen(b[k]->component_name);
            if (0 == strncmp(rest, b[k]->component_name, cl) && rest[cl] == '_')
                return true;
        }
        char **names, **paths;
        int n = px_mca_repository_plugin_files(fwn, &names, &paths);
        bool hit = false;
        for (int k = 0; k < n; k++) {
            size_t cl = strlen(names[k]);
            if (0 == strncmp(rest, names[k], cl) && rest[cl] == '_')
                hit = true;
        }
        px_argv_free(names);
        px_argv_free(paths);
        if (hit)
            return true;
    }
    return false;
}
