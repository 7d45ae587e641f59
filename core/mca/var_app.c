/*
 * var_app.c: px_var_register, the application's own settings (declared in
 * plexus_types.h, the application API's base): a thin door to the variable
 * system for programs that include only <plexus.h>.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"

/* One reference on the variable system for all application settings, taken
 * at the first registration and kept until the process ends, so px_finalize
 * (which drops the runtime's reference) leaves the values in place. The
 * names registered here: a name the variable system knows that is not one of
 * them is Plexus's own, which an application must not take over (the
 * variable system would write the application's storage instead of the
 * library's). */
static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;
static bool app_ref;
static char **app_names;
static size_t app_nnames;

static bool app_has(const char *name)
{
    for (size_t i = 0; i < app_nnames; i++)
        if (!strcmp(app_names[i], name))
            return true;
    return false;
}

static int app_add(const char *name)
{
    char **n = realloc(app_names, (app_nnames + 1) * sizeof *n);
    if (!n)
        return PX_ERR_OUT_OF_RESOURCE;
    app_names = n;
    if (!(app_names[app_nnames] = strdup(name)))
        return PX_ERR_OUT_OF_RESOURCE;
    app_nnames++;
    return PX_SUCCESS;
}

static bool name_ok(const char *name)
{
    if (!name || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

int px_var_register(const char *name, px_var_type_t type, const char *help, const char *min,
                    const char *max, void *storage)
{
    static const px_mca_var_type_t types[] = {
        [PX_VAR_INT] = PX_MCA_VAR_TYPE_INT,       [PX_VAR_SIZE] = PX_MCA_VAR_TYPE_SIZE,
        [PX_VAR_BOOL] = PX_MCA_VAR_TYPE_BOOL,     [PX_VAR_DOUBLE] = PX_MCA_VAR_TYPE_DOUBLE,
        [PX_VAR_STRING] = PX_MCA_VAR_TYPE_STRING,
    };
    if (!name_ok(name)) {
        px_show_error("px_var_register: the name \"%s\" is not accepted: a letter, then letters, "
                      "digits and '_' (as \"myapp_threshold\")",
                      name ? name : "(null)");
        return PX_ERR_BAD_PARAM;
    }
    if ((unsigned)type > PX_VAR_STRING) {
        px_show_error("px_var_register(%s): type %d is not a px_var_type_t (PX_VAR_INT, "
                      "PX_VAR_SIZE, PX_VAR_BOOL, PX_VAR_DOUBLE or PX_VAR_STRING)",
                      name, (int)type);
        return PX_ERR_BAD_PARAM;
    }
    if (!storage) {
        px_show_error("px_var_register(%s): storage is NULL; pass the address of the variable "
                      "that holds the default and receives the value",
                      name);
        return PX_ERR_BAD_PARAM;
    }
    bool ranged = min || max;
    if (ranged && type != PX_VAR_INT && type != PX_VAR_SIZE && type != PX_VAR_DOUBLE) {
        px_show_error("px_var_register(%s): a range (min, max) is for PX_VAR_INT, PX_VAR_SIZE and "
                      "PX_VAR_DOUBLE only; pass NULL for both",
                      name);
        return PX_ERR_BAD_PARAM;
    }
    pthread_mutex_lock(&app_lock);
    if (!app_ref) {
        px_mca_var_init();
        app_ref = true;
    }
    bool mine = app_has(name);
    if (!mine && px_mca_var_find(name) >= 0) {
        pthread_mutex_unlock(&app_lock);
        px_show_error("px_var_register(%s): that is a variable of Plexus itself (px_info --param "
                      "all all --level 9 lists them); choose another name, with the "
                      "application's prefix",
                      name);
        return PX_ERR_EXISTS;
    }
    int rc = ranged ? px_mca_var_register_range(NULL, NULL, name, help, types[type], 3,
                                                PX_MCA_VAR_SCOPE_LOCAL, 0, min, max, storage)
                    : px_mca_var_register(NULL, NULL, name, help, types[type], NULL, 3,
                                          PX_MCA_VAR_SCOPE_LOCAL, 0, storage);
    /* A value that does not parse still registers the setting (PX_ERR_BAD_PARAM). */
    if (!mine && (rc >= 0 || rc == PX_ERR_BAD_PARAM) && px_mca_var_find(name) >= 0) {
        int arc = app_add(name);
        if (arc != PX_SUCCESS)
            rc = arc;
    }
    pthread_mutex_unlock(&app_lock);
    if (rc == PX_ERR_EXISTS)
        px_show_error("px_var_register(%s): registered before with another type; register a "
                      "setting with one type",
                      name);
    return rc >= 0 ? PX_SUCCESS : rc;
}
