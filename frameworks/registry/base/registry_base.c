/*
 * registry_base.c: the registry framework object, its variables (namespace,
 * lease, heartbeat, timeout, cache and watch periods), selection of one
 * module by priority with a clear error naming every component and why it
 * declined, and the locked wrappers through which the names layer calls the
 * module (docs/registry.md).
 */
#include "config.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "frameworks/registry/base/base.h"
#include "frameworks/registry/registry.h"

static char *px_registry_base_namespace_var = "plexus";
static double px_registry_base_lease_var = 10.0;
static double px_registry_base_heartbeat_var = 0.0; /* 0: a third of the lease */
static double px_registry_base_timeout_var = 2.0;
static double px_registry_base_cache_ttl_var = 1.0;
static double px_registry_base_watch_interval_var = 0.5;

static px_registry_module_t *px_registry_selected = NULL;
static pthread_mutex_t px_registry_lock_mx;
static pthread_once_t px_registry_lock_once = PTHREAD_ONCE_INIT;

static const char *const px_registry_base_fp_names[] = {"px_registry_component_t",
                                                        "px_registry_module_t", NULL};
static const uint32_t
    px_registry_base_fp_sizes[PX_REGISTRY_API_MINOR + 1][PX_MCA_FINGERPRINT_FW_SIZES] = {
        [0] = {sizeof(px_registry_component_t), sizeof(px_registry_module_t)},
};

static const px_mca_var_field_t px_registry_base_vars[] = {
    {.name = "namespace",
     .help = "Namespace (tenant) prefix of every name in the registry: keys are "
             "\"<namespace>/<name>\"; processes see each other's names only with the same "
             "namespace. 1-200 characters from [A-Za-z0-9._:/-], not starting or ending with '/'",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 2,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .storage = &px_registry_base_namespace_var},
    {.name = "lease",
     .help = "Seconds a published name outlives its owner's last renewal: the names of a process "
             "that ended without unpublishing (a crash) vanish this long after its last heartbeat",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "10",
     .min = "0.5",
     .max = "86400",
     .storage = &px_registry_base_lease_var},
    {.name = "heartbeat",
     .help = "Seconds between two renewals of this process's names (and refills of a registry "
             "that restarted empty); 0: a third of registry_lease. Must be below registry_lease",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "0",
     .min = "0",
     .max = "86400",
     .storage = &px_registry_base_heartbeat_var},
    {.name = "timeout",
     .help = "Bound in seconds on every call to the registry's store: a store that is down or "
             "slow gives an error naming it within this time",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "2",
     .min = "0.01",
     .max = "3600",
     .storage = &px_registry_base_timeout_var},
    {.name = "cache_ttl",
     .help = "Seconds an opened name's description is used without reading the registry again "
             "(opening it again or a failed request reads it once this is over); 0: always read",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "1",
     .min = "0",
     .max = "86400",
     .storage = &px_registry_base_cache_ttl_var},
    {.name = "watch_interval",
     .help = "Seconds between two looks at the registry while px_name_watch waits for a name to "
             "move or go away",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0.5",
     .min = "0.001",
     .max = "3600",
     .storage = &px_registry_base_watch_interval_var},
    {.name = NULL},
};

static int px_registry_base_register(void)
{
    return px_mca_var_register_table("registry", NULL, px_registry_base_vars, -1, NULL);
}

struct px_mca_framework px_registry_base_framework = {
    .name = "registry",
    .description = "Key-value stores where processes started separately find each other's "
                   "named segments and contacts (p2p, redis, etcd, pmix)",
    .api_version = {PX_REGISTRY_API_MAJOR, PX_REGISTRY_API_MINOR, PX_REGISTRY_API_RELEASE},
    .register_fn = px_registry_base_register,
    .open_fn = NULL,
    .close_fn = NULL,
    .fp_size_names = px_registry_base_fp_names,
    .fp_sizes = px_registry_base_fp_sizes,
};

struct px_mca_framework *px_registry_base_framework_get(void)
{
    return &px_registry_base_framework;
}

const char *px_registry_base_namespace(void)
{
    return px_registry_base_namespace_var ? px_registry_base_namespace_var : "plexus";
}

double px_registry_base_lease(void)
{
    return px_registry_base_lease_var;
}

double px_registry_base_heartbeat(void)
{
    double hb = px_registry_base_heartbeat_var;
    if (hb <= 0 || hb >= px_registry_base_lease_var)
        hb = px_registry_base_lease_var / 3;
    return hb;
}

double px_registry_base_timeout(void)
{
    return px_registry_base_timeout_var;
}

double px_registry_base_cache_ttl(void)
{
    return px_registry_base_cache_ttl_var;
}

double px_registry_base_watch_interval(void)
{
    return px_registry_base_watch_interval_var;
}

px_registry_module_t *px_registry_base_module(void)
{
    return px_registry_selected;
}

/* The namespace's rules (those of a name, plexus_name.h); NULL when valid,
 * else what is wrong. */
static const char *namespace_problem(const char *ns)
{
    size_t n = strlen(ns);
    if (0 == n)
        return "it is empty";
    if (n > 200)
        return "it is longer than 200 bytes";
    if ('/' == ns[0] || '/' == ns[n - 1])
        return "it starts or ends with '/'";
    if (strstr(ns, "//"))
        return "it contains \"//\"";
    for (size_t i = 0; i < n; ++i) {
        char c = ns[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              '.' == c || '_' == c || ':' == c || '/' == c || '-' == c))
            return "it has a character outside [A-Za-z0-9._:/-]";
    }
    return NULL;
}

/* The settings, checked together: NULL when usable, else the error (caller
 * frees). */
static char *settings_problem(void)
{
    const char *why = namespace_problem(px_registry_base_namespace());
    if (why)
        return px_asprintf("the variable registry_namespace = \"%s\" is not usable: %s (accepted: "
                           "1-200 characters from [A-Za-z0-9._:/-], not starting or ending with "
                           "'/', without \"//\")",
                           px_registry_base_namespace(), why);
    if (px_registry_base_heartbeat_var > 0 &&
        px_registry_base_heartbeat_var >= px_registry_base_lease_var)
        return px_asprintf("registry_heartbeat = %g s is not below registry_lease = %g s: names "
                           "would expire between two renewals (set a heartbeat below the lease, "
                           "or 0 for a third of it)",
                           px_registry_base_heartbeat_var, px_registry_base_lease_var);
    return NULL;
}

/* What each component answered, for the error when none is left, and the
 * module that leads so far: px_mca_select_highest keeps the first of the
 * highest priority and unloads the other components after the last query,
 * so a module that can no longer win is closed here, while its component's
 * code is still loaded (a redis module queried with a lower priority than
 * p2p's held its connection to the end of the process). */
typedef struct {
    char text[1024];
    int best_prio;
    px_registry_module_t *best;
} answers_t;
static answers_t *px_registry_answers;

static int px_registry_base_query(const px_mca_component_t *component, int *priority, void **module)
{
    const px_registry_component_t *c = (const px_registry_component_t *)component;
    *priority = -1;
    *module = NULL;
    int rc = PX_ERR_NOT_AVAILABLE;
    px_registry_module_t *m = NULL;
    if (c->query)
        rc = c->query(priority, &m);
    if (PX_SUCCESS == rc && *priority >= 0 && NULL == m)
        rc = PX_ERR_NOT_AVAILABLE;
    if (px_registry_answers) {
        answers_t *a = px_registry_answers;
        size_t used = strlen(a->text);
        const char *why = NULL == c->query   ? "it has no query function"
                          : rc != PX_SUCCESS ? px_strerror(rc)
                          : *priority < 0    ? "negative priority (not configured for this "
                                               "process)"
                                             : NULL;
        snprintf(a->text + used, sizeof(a->text) - used, "%s%s %s", used ? "; " : "",
                 component->component_name, why ? "declined: " : "offered priority");
        used = strlen(a->text);
        if (why)
            snprintf(a->text + used, sizeof(a->text) - used, "%s", why);
        else
            snprintf(a->text + used, sizeof(a->text) - used, " %d", *priority);
        if (PX_SUCCESS == rc && *priority >= 0 && m) {
            px_registry_module_t *loser = m;
            if (*priority > a->best_prio) { /* the rule of px_mca_select_highest */
                loser = a->best;
                a->best = m;
                a->best_prio = *priority;
            } else {
                m = NULL; /* it cannot win: its priority is still counted */
            }
            if (loser && loser->close)
                loser->close(loser);
        }
    }
    *module = m;
    return rc;
}

static void px_registry_lock_init(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&px_registry_lock_mx, &a);
    pthread_mutexattr_destroy(&a);
}

void px_registry_base_lock(void)
{
    pthread_once(&px_registry_lock_once, px_registry_lock_init);
    pthread_mutex_lock(&px_registry_lock_mx);
}

void px_registry_base_unlock(void)
{
    pthread_mutex_unlock(&px_registry_lock_mx);
}

int px_registry_base_select(px_registry_module_t **module)
{
    if (module)
        *module = NULL;
    px_registry_base_lock();
    if (px_registry_selected) {
        if (module)
            *module = px_registry_selected;
        px_registry_base_unlock();
        return PX_SUCCESS;
    }
    int rc = px_mca_framework_open(&px_registry_base_framework);
    if (rc != PX_SUCCESS) {
        px_registry_base_unlock();
        return rc;
    }
    char *bad = settings_problem();
    if (bad) {
        px_show_error("registry: %s", bad);
        free(bad);
        px_mca_framework_close(&px_registry_base_framework);
        px_registry_base_unlock();
        return PX_ERR_BAD_PARAM;
    }
    answers_t answers = {.text = "", .best_prio = -1};
    px_registry_answers = &answers;
    const px_mca_component_t *best = NULL;
    void *m = NULL;
    rc = px_mca_select_highest(&px_registry_base_framework, px_registry_base_query, &best, &m);
    px_registry_answers = NULL;
    if (rc != PX_SUCCESS || NULL == m) {
        char known[512] = "";
        const px_mca_component_t *list[32];
        int n = px_mca_repository_list("registry", list, 32);
        for (int i = 0; i < n && i < 32; ++i) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                     list[i]->component_name);
        }
        char failed[512] = "";
        for (int i = 0; i < px_mca_repository_failed_count(); ++i) {
            const px_mca_failed_component_t *f = px_mca_repository_failed(i);
            if (0 != strcmp(f->framework, "registry"))
                continue;
            size_t used = strlen(failed);
            snprintf(failed + used, sizeof(failed) - used, "%s%s could not be loaded: %s",
                     used ? "; " : "", f->component, f->reason);
        }
        const char *sel = px_registry_base_framework.selection;
        px_show_error(
            "registry: no component can serve this process (selection variable \"registry\" = "
            "%s). %s%s%s%s. Components known: %s. Each store's component needs its endpoints "
            "(docs/registry.md: p2p needs nothing, redis and etcd their endpoints variables, pmix "
            "a launcher with publish/lookup); PX_MCA_registry_base_verbose=10 shows each answer",
            sel && *sel ? sel : "(all)",
            answers.text[0] ? "Answers: " : "No component was left to ask", answers.text,
            failed[0] ? ". " : "", failed, n > 0 ? known : "none");
        px_mca_framework_close(&px_registry_base_framework);
        px_registry_base_unlock();
        return rc != PX_SUCCESS ? rc : PX_ERR_NOT_FOUND;
    }
    px_registry_selected = m;
    PX_OUTPUT_VERBOSE(10, px_registry_base_framework.output, "registry: selected %s",
                      best ? best->component_name : px_registry_selected->name);
    if (module)
        *module = px_registry_selected;
    px_registry_base_unlock();
    return PX_SUCCESS;
}

int px_registry_base_close(void)
{
    px_registry_base_lock();
    if (px_registry_selected) {
        if (px_registry_selected->close)
            px_registry_selected->close(px_registry_selected);
        px_registry_selected = NULL;
        px_mca_framework_close(&px_registry_base_framework);
    }
    px_registry_base_unlock();
    return PX_SUCCESS;
}

int px_registry_base_key(const char *name, char *key, size_t cap)
{
    const char *ns = px_registry_base_namespace();
    size_t need = strlen(ns) + 1 + strlen(name);
    if (need > PX_REGISTRY_KEY_MAX || need + 1 > cap) {
        px_show_error("registry: the key \"%s/%s\" is %zu bytes, more than the %d a store "
                      "accepts (shorten registry_namespace or the name)",
                      ns, name, need, PX_REGISTRY_KEY_MAX);
        return PX_ERR_BAD_PARAM;
    }
    snprintf(key, cap, "%s/%s", ns, name);
    return PX_SUCCESS;
}

/* The selected module, or NULL with an error saying so. */
static px_registry_module_t *need_module(const char *what)
{
    if (px_registry_selected)
        return px_registry_selected;
    px_show_error("registry: %s before a registry component was selected "
                  "(px_registry_base_select)",
                  what);
    return NULL;
}

static int check_key(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (0 == n || n > PX_REGISTRY_KEY_MAX) {
        px_show_error("registry: a key of %zu bytes (accepted: 1 to %d)", n, PX_REGISTRY_KEY_MAX);
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

int px_registry_base_put(const char *key, const void *value, size_t len, int how)
{
    int rc = check_key(key);
    if (rc != PX_SUCCESS)
        return rc;
    if (len > PX_REGISTRY_VALUE_MAX) {
        px_show_error("registry: the value for \"%s\" is %zu bytes, more than the %d a store "
                      "accepts",
                      key, len, PX_REGISTRY_VALUE_MAX);
        return PX_ERR_BAD_PARAM;
    }
    if (how != PX_REGISTRY_PUT_ANY && how != PX_REGISTRY_PUT_CREATE)
        return PX_ERR_BAD_PARAM;
    px_registry_base_lock();
    px_registry_module_t *m = need_module("put");
    rc = m ? m->put(m, key, value, len, how) : PX_ERR_NOT_INITIALIZED;
    px_registry_base_unlock();
    return rc;
}

int px_registry_base_get(const char *key, void **value, size_t *len)
{
    *value = NULL;
    *len = 0;
    int rc = check_key(key);
    if (rc != PX_SUCCESS)
        return rc;
    px_registry_base_lock();
    px_registry_module_t *m = need_module("get");
    rc = m ? m->get(m, key, value, len) : PX_ERR_NOT_INITIALIZED;
    px_registry_base_unlock();
    if (PX_SUCCESS == rc && *len > PX_REGISTRY_VALUE_MAX) {
        px_show_error("registry %s: the value under \"%s\" is %zu bytes, more than the %d an "
                      "entry may have: not read",
                      m->name ? m->name : "?", key, *len, PX_REGISTRY_VALUE_MAX);
        free(*value);
        *value = NULL;
        *len = 0;
        return PX_ERR_BAD_PARAM;
    }
    return rc;
}

int px_registry_base_del(const char *key, const void *value, size_t len)
{
    int rc = check_key(key);
    if (rc != PX_SUCCESS)
        return rc;
    px_registry_base_lock();
    px_registry_module_t *m = need_module("del");
    rc = m ? m->del(m, key, value, len) : PX_ERR_NOT_INITIALIZED;
    px_registry_base_unlock();
    return rc;
}

int px_registry_base_list(const char *prefix, px_registry_list_fn_t fn, void *arg)
{
    px_registry_base_lock();
    px_registry_module_t *m = need_module("list");
    int rc = m ? m->list(m, prefix ? prefix : "", fn, arg) : PX_ERR_NOT_INITIALIZED;
    px_registry_base_unlock();
    return rc;
}

int px_registry_base_beat(void)
{
    px_registry_base_lock();
    px_registry_module_t *m = px_registry_selected;
    int rc = m && m->heartbeat ? m->heartbeat(m) : PX_SUCCESS;
    px_registry_base_unlock();
    return rc;
}

int px_registry_base_qualify(const char *name, char *buf, size_t cap)
{
    px_registry_base_lock();
    px_registry_module_t *m = need_module("qualify");
    int rc;
    if (NULL == m)
        rc = PX_ERR_NOT_INITIALIZED;
    else if (m->qualify)
        rc = m->qualify(m, name, buf, cap);
    else if (strlen(name) + 1 > cap)
        rc = PX_ERR_BAD_PARAM;
    else {
        memcpy(buf, name, strlen(name) + 1);
        rc = PX_SUCCESS;
    }
    px_registry_base_unlock();
    return rc;
}
