/*
 * boot_base.c: the boot framework object, selection of the boot module by
 * priority, and the modex helpers keyed "<framework>.<component>".
 */
#include "config.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/mca/mca_tools.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "frameworks/boot/boot.h"

px_boot_module_t *px_boot = NULL;
static const px_mca_component_t *px_boot_component; /* the selected one */

px_mca_framework_t px_boot_base_framework = {
    .name = "boot",
    .description = "How a process learns its rank, size, peers' hosts and addresses (modex)",
    .api_version = {PX_BOOT_API_MAJOR, PX_BOOT_API_MINOR, PX_BOOT_API_RELEASE},
    .register_fn = NULL,
    .open_fn = NULL,
    .close_fn = NULL,
};

static int px_boot_base_query(const px_mca_component_t *component, int *priority, void **module)
{
    const px_boot_component_t *c = (const px_boot_component_t *)component;
    *priority = -1;
    *module = NULL;
    if (NULL == c->query)
        return PX_ERR_NOT_AVAILABLE;
    px_boot_module_t *m = NULL;
    int rc = c->query(priority, &m);
    *module = m;
    return rc;
}

extern char **environ;

/* Does the environment say a PMIx launcher (mpirun, srun --mpi=pmix, prterun)
 * or a launcher of several processes started this one? Then the evidence,
 * "NAME=value", in buf; else false. */
static bool px_boot_base_launcher_evidence(char *buf, size_t len)
{
    static const char *const pmix[] = {"PMIX_NAMESPACE", "PMIX_RANK", NULL};
    for (int i = 0; pmix[i]; ++i) {
        const char *v = getenv(pmix[i]);
        if (v && *v) {
            snprintf(buf, len, "%s=%.64s", pmix[i], v);
            return true;
        }
    }
    for (char **e = environ; e && *e; ++e) {
        if (0 == strncmp(*e, "PMIX_SERVER_URI", 15) && strchr(*e, '=') && strchr(*e, '=')[1]) {
            snprintf(buf, len, "%.96s", *e);
            return true;
        }
    }
    /* Launchers that imply a PMIx server when they start several processes. */
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", NULL};
    for (int i = 0; sizes[i]; ++i) {
        const char *v = getenv(sizes[i]);
        if (v && atoi(v) > 1) {
            snprintf(buf, len, "%s=%.16s", sizes[i], v);
            return true;
        }
    }
    return false;
}

/* Why boot/pmix cannot serve this process (caller frees), and in *fix what
 * to do about it. */
static char *px_boot_base_pmix_missing_reason(bool listed, const char **fix)
{
    px_mca_framework_t *fw = &px_boot_base_framework;
    *fix = "Check the launcher: it must give each process PMIX_NAMESPACE and PMIX_RANK";
    if (listed)
        return strdup("boot/pmix declined: PMIX_NAMESPACE and PMIX_RANK are not both set "
                      "(PX_MCA_boot_base_verbose=10 shows its answer)");
    char *out = NULL;
    if (!px_mca_framework_allows(fw, "pmix")) {
        *fix = "Allow pmix in the selection variable boot (or leave it unset)";
        int idx = px_mca_var_find("boot");
        char *src = idx >= 0 ? px_mca_var_source_string(idx) : NULL;
        out = px_asprintf("boot/pmix is excluded by the selection variable boot = \"%s\" (from "
                          "%s)",
                          fw->selection ? fw->selection : "", src ? src : "?");
        free(src);
        return out;
    }
    for (int i = px_mca_repository_failed_count() - 1; i >= 0; --i) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (0 == strcmp(f->framework, "boot") && 0 == strcmp(f->component, "pmix")) {
            *fix = "Fix what the reason says (px_info --show-failed lists it too)";
            return px_asprintf("boot/pmix could not be used: %s (%s)", f->reason, f->path);
        }
    }
    char *folders = px_mca_repository_search_report();
    bool plugin = NULL != strstr(" " PX_PLUGIN_COMPONENTS_STR " ", " boot:pmix ");
#ifdef PX_NOT_BUILT_COMPONENTS_STR
    *fix = "Install PMIx's development files and rebuild Plexus";
    if (NULL != strstr(" " PX_NOT_BUILT_COMPONENTS_STR " ", " boot:pmix "))
        out = strdup("this Plexus was built without boot/pmix (configure did not find PMIx; "
                     "see its summary)");
#endif
    if (NULL == out) {
        *fix = "Put the folder of plexus_boot_pmix.so on PX_MCA_mca_component_path_prepend "
               "(with mpirun: -x PX_MCA_mca_component_path_prepend=<folder>), or restore "
               "PX_MCA_mca_component_path to include the install's plugin folder";
        out = px_asprintf("%splexus_boot_pmix.so is not in any plugin folder searched "
                          "(mca_component_path_prepend, then mca_component_path): %s",
                          plugin ? "boot/pmix was built as a plugin, but " : "",
                          folders ? folders : "?");
    }
    free(folders);
    return out;
}

int px_boot_base_select(void)
{
    if (px_boot)
        return PX_SUCCESS;
    int rc = px_mca_framework_open(&px_boot_base_framework);
    if (rc != PX_SUCCESS)
        return rc;
    bool pmix_listed = false;
    px_mca_component_item_t *it;
    PX_LIST_FOREACH(it, &px_boot_base_framework.components, px_mca_component_item_t)
    {
        if (0 == strcmp(it->component->component_name, "pmix"))
            pmix_listed = true;
    }
    const px_mca_component_t *best = NULL;
    void *module = NULL;
    rc = px_mca_select_highest(&px_boot_base_framework, px_boot_base_query, &best, &module);
    if (rc != PX_SUCCESS || NULL == module) {
        char known[512] = "";
        const px_mca_component_t *list[32];
        int n = px_mca_repository_list("boot", list, 32);
        for (int i = 0; i < n && i < 32; ++i) {
            size_t used = strlen(known);
            snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                     list[i]->component_name);
        }
        px_show_error("no boot component can start this process (selection variable \"boot\" "
                      "= %s): each one declined. Components known: %s. A launcher's component "
                      "serves only processes its launcher started, singleton serves a process "
                      "started alone; set PX_MCA_boot_base_verbose=10 to see each one's answer",
                      px_boot_base_framework.selection && *px_boot_base_framework.selection
                          ? px_boot_base_framework.selection
                          : "(all)",
                      n > 0 ? known : "none");
        px_mca_framework_close(&px_boot_base_framework);
        return rc != PX_SUCCESS ? rc : PX_ERR_NOT_FOUND;
    }
    px_boot_module_t *m = module;
    PX_OUTPUT_VERBOSE(10, px_boot_base_framework.output, "boot: selected %s",
                      best ? best->component_name : m->name);
    /* A launcher started this process with others, but only the singleton
     * fallback is left: N one-process jobs instead of one job of N. That is
     * an error, unless the selection list asks for singleton by name. */
    char evidence[128];
    const char *sel = px_boot_base_framework.selection;
    bool asked = sel && '^' != sel[strspn(sel, " \t")] &&
                 px_mca_framework_allows(&px_boot_base_framework, "singleton") &&
                 !px_mca_framework_allows(&px_boot_base_framework, "pmix");
    if (best && 0 == strcmp(best->component_name, "singleton") && !asked &&
        px_boot_base_launcher_evidence(evidence, sizeof(evidence))) {
        const char *fix = NULL;
        char *why = px_boot_base_pmix_missing_reason(pmix_listed, &fix);
        px_show_error("a launcher started this process (%s), but boot/pmix cannot serve it: %s. "
                      "Only boot/singleton is left, which would run this process as a job of "
                      "its own instead of joining the others. %s; or set PX_MCA_boot=singleton "
                      "to run one-process jobs on purpose",
                      evidence, why ? why : "?", fix ? fix : "?");
        free(why);
        px_mca_framework_close(&px_boot_base_framework);
        return PX_ERR_NOT_AVAILABLE;
    }
    if (m->init) {
        rc = m->init();
        if (rc != PX_SUCCESS) {
            px_show_error("boot %s: init failed: %s", m->name ? m->name : "?", px_strerror(rc));
            px_mca_framework_close(&px_boot_base_framework);
            return rc;
        }
    }
    px_boot = m;
    px_boot_component = best;
    return PX_SUCCESS;
}

int px_boot_register_cleanup(const char *path, int what)
{
    /* A plugin built against boot API 1.0 has no such member. */
    if (NULL == px_boot || NULL == path || NULL == px_boot_component ||
        px_boot_component->framework_version.minor < 1 || NULL == px_boot->register_cleanup)
        return PX_ERR_NOT_AVAILABLE;
    if (what != PX_BOOT_CLEANUP_FILE && what != PX_BOOT_CLEANUP_EMPTY_DIR)
        return PX_ERR_BAD_PARAM;
    return px_boot->register_cleanup(path, what);
}

int px_boot_base_close(void)
{
    int rc = PX_SUCCESS;
    if (px_boot) {
        px_boot_base_session_close();
        if (px_boot->finalize)
            rc = px_boot->finalize();
        px_boot = NULL;
        px_boot_component = NULL;
        px_mca_framework_close(&px_boot_base_framework);
    }
    return rc;
}

static int modex_key(const px_mca_component_t *component, char *key, size_t len)
{
    int n = snprintf(key, len, "%s.%s", component->framework_name, component->component_name);
    return (n < 0 || (size_t)n >= len) ? PX_ERR_BAD_PARAM : PX_SUCCESS;
}

int px_boot_modex_send(const px_mca_component_t *component, const void *data, size_t len)
{
    char key[256];
    if (NULL == px_boot)
        return PX_ERR_NOT_INITIALIZED;
    int rc = modex_key(component, key, sizeof(key));
    if (rc != PX_SUCCESS)
        return rc;
    return px_boot->put(key, data, len);
}

int px_boot_modex_recv(const px_mca_component_t *component, int rank, void **data, size_t *len)
{
    char key[256];
    if (NULL == px_boot)
        return PX_ERR_NOT_INITIALIZED;
    int rc = modex_key(component, key, sizeof(key));
    if (rc != PX_SUCCESS)
        return rc;
    return px_boot->get(rank, key, data, len);
}
