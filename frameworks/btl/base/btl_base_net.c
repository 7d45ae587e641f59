/*
 * btl_base_net.c: the shared variables and the local-job test of the network
 * BTLs, and the reasons they hand out (net.h).
 */
#include "frameworks/btl/base/net.h"
#include <stdarg.h>
#include <stdlib.h>
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/printf.h"
#include "core/util/proc.h"
#include "frameworks/boot/boot.h"

static const px_mca_var_field_t px_btl_base_net_rows[] = {
    {.name = "rcache_max_entries",
     .help = "Registrations the cache keeps (unused ones are deregistered least recently used "
             "first beyond this); 0: no limit",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .offset = PX_MCA_VAR_AT(px_btl_base_net_vars_t, rcache_max_entries)},
    {.name = "rcache_max_bytes",
     .help = "Registered bytes the cache keeps; 0: no limit",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .offset = PX_MCA_VAR_AT(px_btl_base_net_vars_t, rcache_max_bytes)},
    {.name = "flush_timeout",
     .help = "Seconds btl_flush waits for outstanding operations before failing; 0: no limit",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .offset = PX_MCA_VAR_AT(px_btl_base_net_vars_t, flush_timeout)},
    {.name = NULL},
};

/* Register one table; keep the first error in *first. False: stop (an error
 * other than a refused value). */
static bool px_btl_base_net_table(const char *name, const px_mca_var_field_t *rows, void *base,
                                  int *first)
{
    if (NULL == rows)
        return true;
    int rc = px_mca_var_register_table("btl", name, rows, -1, base);
    if (rc < 0 && PX_SUCCESS == *first)
        *first = rc;
    return rc >= 0 || PX_ERR_BAD_PARAM == rc;
}

int px_btl_base_net_register(const px_btl_component_t *component, px_btl_module_t *module,
                             const px_mca_var_field_t *own, px_btl_base_net_vars_t *net,
                             const px_mca_var_field_t *own_tail, const px_mca_var_field_t *late)
{
    const char *name = component->base.component_name;
    int first = PX_SUCCESS;
    if (!px_btl_base_net_table(name, own, NULL, &first) ||
        !px_btl_base_net_table(name, px_btl_base_net_rows, net, &first) ||
        !px_btl_base_net_table(name, own_tail, NULL, &first))
        return first;
    int rc = px_btl_base_register_module_params(component, module);
    if (rc < 0 && PX_SUCCESS == first)
        first = rc;
    if (rc < 0 && PX_ERR_BAD_PARAM != rc)
        return rc;
    px_btl_base_net_table(name, late, NULL, &first);
    return first;
}

bool px_btl_base_job_is_local(const char *local_btl)
{
    if (NULL == px_boot || NULL == px_boot->locality ||
        !px_mca_framework_allows(&px_btl_base_framework, local_btl))
        return false;
    for (int r = 0; r < px_boot->size; ++r)
        if (!(px_boot->locality(r) & (PX_PROC_LOCAL_HOST | PX_PROC_LOCAL_SELF)))
            return false;
    return true;
}

const char *px_btl_base_reason(px_btl_base_reasons_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = px_vasprintf(fmt, ap);
    va_end(ap);
    if (NULL == text)
        return "out of memory";
    char **grown = realloc(r->texts, (r->count + 1) * sizeof(char *));
    if (NULL == grown) {
        free(text);
        return "out of memory";
    }
    r->texts = grown;
    r->texts[r->count++] = text;
    return text;
}

void px_btl_base_reasons_free(px_btl_base_reasons_t *r)
{
    for (size_t i = 0; i < r->count; ++i)
        free(r->texts[i]);
    free(r->texts);
    r->texts = NULL;
    r->count = 0;
}
