/*
 * btl_base_frame.c: the btl framework object, component initialisation
 * (px_btl_base_select), module variables, the active-message table, module
 * progress registration, and teardown in reverse order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"
#include "frameworks/btl/base/base_runtime.h"

px_btl_module_t **px_btl_base_modules = NULL;
int px_btl_base_num_modules = 0;

static void px_btl_base_am_unhandled(px_btl_module_t *btl, const px_btl_receive_descriptor_t *desc)
{
    px_show_warning("btl %s: a message with active-message tag %d arrived from rank %d but no "
                    "callback is registered for that tag; it was dropped",
                    btl && btl->btl_component ? btl->btl_component->base.component_name : "?",
                    (int)desc->tag, desc->src_rank);
}

px_btl_active_message_callback_t px_btl_base_active_message_trigger[256] = {
    [0 ... 255] = {px_btl_base_am_unhandled, NULL},
};

static int px_btl_base_frame_register(void)
{
    return PX_SUCCESS;
}

/* The BTL structs a component's fingerprint records (PX_BTL_COMPONENT_HEADER),
 * and their sizes for a component built for each minor of this major. */
static const char *const px_btl_base_fp_names[] = {"px_btl_component_t", "px_btl_module_t",
                                                   "px_btl_descriptor_t",
                                                   "px_btl_active_message_callback_t", NULL};
static const uint32_t px_btl_base_fp_sizes[PX_BTL_API_MINOR + 1][PX_MCA_FINGERPRINT_FW_SIZES] = {
    [0] = {PX_BTL_COMPONENT_SIZE_3_3, PX_BTL_MODULE_SIZE_3_0, sizeof(px_btl_descriptor_t),
           sizeof(px_btl_active_message_callback_t)},
    [1] = {PX_BTL_COMPONENT_SIZE_3_3, PX_BTL_MODULE_SIZE_3_1, sizeof(px_btl_descriptor_t),
           sizeof(px_btl_active_message_callback_t)},
    [2] = {PX_BTL_COMPONENT_SIZE_3_3, PX_BTL_MODULE_SIZE_3_2, sizeof(px_btl_descriptor_t),
           sizeof(px_btl_active_message_callback_t)},
    [3] = {PX_BTL_COMPONENT_SIZE_3_3, PX_BTL_MODULE_SIZE_3_3, sizeof(px_btl_descriptor_t),
           sizeof(px_btl_active_message_callback_t)},
    [4] = {sizeof(px_btl_component_t), sizeof(px_btl_module_t), sizeof(px_btl_descriptor_t),
           sizeof(px_btl_active_message_callback_t)},
    /* 3.5: a flag only (PX_BTL_FLAGS_DYN_EXT); the structures are 3.4's */
    [5] = {sizeof(px_btl_component_t), sizeof(px_btl_module_t), sizeof(px_btl_descriptor_t),
           sizeof(px_btl_active_message_callback_t)},
};

/* The btl_size of a module built for BTL API <this major>.`minor` (0 when
 * this library has no such minor). */
static size_t px_btl_base_module_size_for_minor(int minor)
{
    if (minor < 0 || minor > PX_BTL_API_MINOR)
        return 0;
    return px_btl_base_fp_sizes[minor][1];
}

px_mca_framework_t px_btl_base_framework = {
    .name = "btl",
    .description = "Byte transfer layer: active-message sends and RDMA between processes",
    .api_version = {PX_BTL_API_MAJOR, PX_BTL_API_MINOR, PX_BTL_API_RELEASE},
    .register_fn = px_btl_base_frame_register,
    .open_fn = NULL,
    .close_fn = NULL,
    .fp_size_names = px_btl_base_fp_names,
    .fp_sizes = px_btl_base_fp_sizes,
};

/* Names of components whose init returned no module (for the unreachable
 * message); copies, since a plugin's strings go away when it is unloaded. */
static char **px_btl_base_declined = NULL;
static int px_btl_base_num_declined = 0;

int px_btl_base_declined_count(void)
{
    return px_btl_base_num_declined;
}
const char *px_btl_base_declined_name(int i)
{
    return (i >= 0 && i < px_btl_base_num_declined) ? px_btl_base_declined[i] : NULL;
}

/* Components whose init returned modules, in init order (for modex_send). */
static const px_btl_component_t **px_btl_base_components = NULL;
static int px_btl_base_num_components = 0;

int px_btl_base_register_am(px_btl_tag_t tag, px_btl_active_message_fn cbfunc, void *cbdata)
{
    if (NULL == cbfunc) {
        px_btl_base_active_message_trigger[tag].cbfunc = px_btl_base_am_unhandled;
        px_btl_base_active_message_trigger[tag].cbdata = NULL;
        return PX_SUCCESS;
    }
    px_btl_base_active_message_trigger[tag].cbfunc = cbfunc;
    px_btl_base_active_message_trigger[tag].cbdata = cbdata;
    return PX_SUCCESS;
}

size_t px_btl_convertor_pack(px_btl_convertor_t *c, void *dst, size_t max)
{
    size_t left = c->total - c->position;
    size_t want = max < left ? max : left;
    if (0 == want)
        return 0;
    if (c->iovcnt <= 1) {
        memcpy(dst, (const char *)c->single.iov_base + c->position, want);
        c->position += want;
        return want;
    }
    /* Find the iovec holding `position`, then copy across entries. */
    size_t skip = c->position, done = 0;
    for (size_t i = 0; i < c->iovcnt && done < want; ++i) {
        size_t len = c->iov[i].iov_len;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        size_t n = len - skip;
        if (n > want - done)
            n = want - done;
        memcpy((char *)dst + done, (const char *)c->iov[i].iov_base + skip, n);
        done += n;
        skip = 0;
    }
    c->position += done;
    return done;
}

/* ---- module variables ---- */

static void take_pending_range(const char *component, const char *param, const char **min,
                               const char **max);

#define PX_BTL_BASE_AT(field) .offset = PX_MCA_VAR_AT(px_btl_module_t, field)
/* The figures of every module, registered as btl_<component>_<name>. */
static const px_mca_var_field_t px_btl_base_module_vars[] = {
    {.name = "exclusivity",
     .help = "Priority of this transport for a peer: the highest exclusivity that reaches a peer "
             "serves all its sends (self 65536, shm above the network transports, network 1024)",
     .type = PX_MCA_VAR_TYPE_UNSIGNED,
     .info_level = 7,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     PX_BTL_BASE_AT(btl_exclusivity)},
    {.name = "latency",
     .help = "Latency in ns; among the send modules of a peer, the lowest latency carries eager "
             "messages",
     .type = PX_MCA_VAR_TYPE_UNSIGNED,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     PX_BTL_BASE_AT(btl_latency)},
    {.name = "bandwidth",
     .help = "Bandwidth in MB/s; RDMA transfers are weighted across modules by it",
     .type = PX_MCA_VAR_TYPE_UNSIGNED,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     PX_BTL_BASE_AT(btl_bandwidth)},
    {.name = "eager_limit",
     .help = "Largest message (bytes, including the runtime's header) sent eagerly; larger "
             "messages use the rendezvous protocol",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "64",
     .max = "64M",
     PX_BTL_BASE_AT(btl_eager_limit)},
    {.name = "max_send_size",
     .help = "Largest fragment (bytes) of a pipelined rendezvous send; at least 600, which holds "
             "the runtime's largest control message (592 bytes)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "600",
     .max = "64M",
     PX_BTL_BASE_AT(btl_max_send_size)},
    {.name = "put_limit",
     .help = "Largest single RDMA put (bytes); at least 4k, as smaller pieces make a large "
             "transfer take very many operations",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "4k",
     PX_BTL_BASE_AT(btl_put_limit)},
    {.name = "put_alignment",
     .help = "Alignment (bytes) required for RDMA put",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "4k",
     PX_BTL_BASE_AT(btl_put_alignment)},
    {.name = "get_limit",
     .help = "Largest single RDMA get (bytes); at least 4k, as smaller pieces make a large "
             "transfer take very many operations",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "4k",
     PX_BTL_BASE_AT(btl_get_limit)},
    {.name = "get_alignment",
     .help = "Alignment (bytes) required for RDMA get",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "4k",
     PX_BTL_BASE_AT(btl_get_alignment)},
    {.name = "flags",
     .help = "Capabilities, OR of: 0x1 send, 0x2 put, 0x4 get, 0x8 send in place, 0x10 single "
             "copy, 0x20 needs registration, 0x40 shareable memory a same-host peer maps (the "
             "transfer engine), 0x80 put/get for one-sided transfers only, 0x100 dynamic peer "
             "parts with an extension an older peer never reads (clear it to send only the part "
             "every version reads); a user may clear bits (e.g. to disable RDMA) but not add "
             "ones the transport lacks; without 0x1 the transport cannot be used",
     .type = PX_MCA_VAR_TYPE_UNSIGNED,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "0x1ff",
     PX_BTL_BASE_AT(btl_flags)},
};
#undef PX_BTL_BASE_AT
#define PX_BTL_BASE_N_VARS (sizeof(px_btl_base_module_vars) / sizeof(px_btl_base_module_vars[0]))

int px_btl_base_register_module_params(const px_btl_component_t *component, px_btl_module_t *module)
{
    const char *c = component->base.component_name;
    const uint32_t supported = module->btl_flags;
    /* The limits and alignments of an operation the module does not offer
     * are not variables: nothing reads them, and a module without put/get
     * that leaves them 0 must not be told its default is out of range. The
     * component's own ranges (px_btl_base_module_param_range) replace the
     * shared ones. */
    px_mca_var_field_t v[PX_BTL_BASE_N_VARS];
    int n = 0;
    for (size_t i = 0; i < PX_BTL_BASE_N_VARS; ++i) {
        const char *name = px_btl_base_module_vars[i].name;
        if ((!(supported & PX_BTL_FLAGS_PUT) && strncmp(name, "put_", 4) == 0) ||
            (!(supported & PX_BTL_FLAGS_GET) && strncmp(name, "get_", 4) == 0))
            continue;
        v[n] = px_btl_base_module_vars[i];
        take_pending_range(c, v[n].name, &v[n].min, &v[n].max);
        n++;
    }
    int rc = px_mca_var_register_table("btl", c, v, n, module);
    if (module->btl_eager_limit > module->btl_max_send_size) {
        char n_eager[96], n_max[96];
        snprintf(n_eager, sizeof(n_eager), "btl_%s_eager_limit", c);
        snprintf(n_max, sizeof(n_max), "btl_%s_max_send_size", c);
        char *s_eager = px_mca_var_source_string(px_mca_var_find(n_eager));
        char *s_max = px_mca_var_source_string(px_mca_var_find(n_max));
        px_show_warning("%s = %zu (from %s) is above %s = %zu (from %s); an eager message must "
                        "fit one fragment, so %s = %zu is used",
                        n_eager, module->btl_eager_limit, s_eager ? s_eager : "?", n_max,
                        module->btl_max_send_size, s_max ? s_max : "?", n_eager,
                        module->btl_max_send_size);
        free(s_eager);
        free(s_max);
        module->btl_eager_limit = module->btl_max_send_size;
    }
    if (module->btl_flags & ~supported) {
        px_show_warning("btl_%s_flags = 0x%x asks for capabilities 0x%x that btl/%s does not "
                        "have; using 0x%x (accepted: any subset of 0x%x)",
                        c, module->btl_flags, module->btl_flags & ~supported, c,
                        module->btl_flags & supported, supported);
        module->btl_flags &= supported;
    }
    return rc < 0 ? rc : PX_SUCCESS;
}

/* Ranges a component gave before its module variables exist: applied by
 * px_btl_base_register_module_params, so the first report of a bad value
 * already names the component's own range. */
static struct {
    char name[96];
    char min[32], max[32];
    bool has_min, has_max;
} pending_range[32];
static int n_pending_range;

int px_btl_base_module_param_range(const px_btl_component_t *component, const char *param,
                                   const char *min, const char *max)
{
    char name[96];
    snprintf(name, sizeof(name), "btl_%s_%s", component->base.component_name, param);
    int idx = px_mca_var_find(name);
    if (idx >= 0)
        return px_mca_var_set_range(idx, min, max);
    if ((min && strlen(min) >= sizeof(pending_range[0].min)) ||
        (max && strlen(max) >= sizeof(pending_range[0].max)))
        return PX_ERR_BAD_PARAM;
    int k = 0;
    while (k < n_pending_range && strcmp(pending_range[k].name, name) != 0)
        k++;
    if (k == n_pending_range) {
        if (n_pending_range == (int)(sizeof(pending_range) / sizeof(pending_range[0])))
            return PX_ERR_OUT_OF_RESOURCE;
        n_pending_range++;
    }
    snprintf(pending_range[k].name, sizeof(pending_range[k].name), "%s", name);
    snprintf(pending_range[k].min, sizeof(pending_range[k].min), "%s", min ? min : "");
    snprintf(pending_range[k].max, sizeof(pending_range[k].max), "%s", max ? max : "");
    pending_range[k].has_min = min != NULL;
    pending_range[k].has_max = max != NULL;
    return PX_SUCCESS;
}

/* The range a component asked for ahead of registration, if any. */
static void take_pending_range(const char *component, const char *param, const char **min,
                               const char **max)
{
    char name[96];
    snprintf(name, sizeof(name), "btl_%s_%s", component, param);
    for (int k = 0; k < n_pending_range; k++) {
        if (strcmp(pending_range[k].name, name) == 0) {
            *min = pending_range[k].has_min ? pending_range[k].min : NULL;
            *max = pending_range[k].has_max ? pending_range[k].max : NULL;
            return;
        }
    }
}

/* ---- selection of components, progress ---- */

int px_btl_base_progress_module(void *ctx)
{
    px_btl_module_t *m = ctx;
    return m->btl_progress(m);
}

void px_btl_base_sort_modules(px_btl_module_t **modules, int n)
{
    for (int i = 1; i < n; ++i) { /* insertion sort: stable, n is small */
        px_btl_module_t *m = modules[i];
        int j = i - 1;
        while (j >= 0 && modules[j]->btl_exclusivity < m->btl_exclusivity) {
            modules[j + 1] = modules[j];
            --j;
        }
        modules[j + 1] = m;
    }
}

/* A module's btl_size is what the base trusts to call methods added after
 * 3.0: 0 (not set) or more than its component's API minor has is that
 * minor's size; less than a 3.0 module is a 3.0 module (those fields are not
 * optional). */
static void px_btl_base_check_module_size(const px_btl_component_t *comp, px_btl_module_t *m,
                                          int index)
{
    int minor = comp->base.framework_version.minor;
    size_t want = px_btl_base_module_size_for_minor(minor);
    if (0 == want)
        want = PX_BTL_MODULE_SIZE; /* a built-in of another minor: trust the build */
    size_t have = m->btl_size;
    if (0 == have || have > want)
        m->btl_size = want;
    else if (have < PX_BTL_MODULE_SIZE_3_0)
        m->btl_size = PX_BTL_MODULE_SIZE_3_0;
    if (have && have != m->btl_size)
        PX_OUTPUT_VERBOSE(1, px_btl_base_framework.output,
                          "btl %s: module %d says btl_size %zu, which does not fit btl API %d.%d "
                          "that its component was built for; the base takes %zu",
                          comp->base.component_name, index, have, PX_BTL_API_MAJOR, minor,
                          m->btl_size);
    PX_OUTPUT_VERBOSE(10, px_btl_base_framework.output,
                      "btl %s: module %d: btl API %d.%d, btl_size %zu (this library's %zu)",
                      comp->base.component_name, index, comp->base.framework_version.major, minor,
                      m->btl_size, PX_BTL_MODULE_SIZE);
}

int px_btl_base_select(bool enable_progress_threads)
{
    px_mca_framework_t *fw = &px_btl_base_framework;
    px_mca_component_item_t *item, *next;
    PX_LIST_FOREACH_SAFE(item, next, &fw->components, px_mca_component_item_t)
    {
        const px_btl_component_t *comp = (const px_btl_component_t *)item->component;
        int n = 0;
        px_btl_module_t **mods = NULL;
        if (comp->btl_init)
            mods = comp->btl_init(&n, enable_progress_threads);
        if (NULL == mods || n <= 0) {
            PX_OUTPUT_VERBOSE(10, fw->output, "btl %s: init returned no module; closing it",
                              comp->base.component_name);
            free(mods);
            char **d = realloc(px_btl_base_declined, (px_btl_base_num_declined + 1) * sizeof(*d));
            if (d) {
                px_btl_base_declined = d;
                d[px_btl_base_num_declined] = strdup(comp->base.component_name);
                if (d[px_btl_base_num_declined])
                    px_btl_base_num_declined++;
            }
            px_mca_framework_drop(fw, item);
            continue;
        }
        px_btl_module_t **all =
            realloc(px_btl_base_modules, (px_btl_base_num_modules + n) * sizeof(*all));
        const px_btl_component_t **comps =
            realloc(px_btl_base_components, (px_btl_base_num_components + 1) * sizeof(*comps));
        if (comps)
            px_btl_base_components = comps;
        if (NULL == all || NULL == comps) {
            if (all)
                px_btl_base_modules = all;
            for (int i = 0; i < n; ++i)
                mods[i]->btl_finalize(mods[i]);
            free(mods);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        px_btl_base_modules = all;
        px_btl_base_components[px_btl_base_num_components++] = comp;
        for (int i = 0; i < n; ++i) {
            px_btl_base_check_module_size(comp, mods[i], i);
            px_btl_base_modules[px_btl_base_num_modules++] = mods[i];
            PX_OUTPUT_VERBOSE(10, fw->output,
                              "btl %s: module %d: exclusivity %u latency %u ns bandwidth %u MB/s "
                              "eager_limit %zu max_send_size %zu flags 0x%x",
                              comp->base.component_name, i, mods[i]->btl_exclusivity,
                              mods[i]->btl_latency, mods[i]->btl_bandwidth,
                              mods[i]->btl_eager_limit, mods[i]->btl_max_send_size,
                              mods[i]->btl_flags);
        }
        free(mods);
    }
    px_btl_base_sort_modules(px_btl_base_modules, px_btl_base_num_modules);
    for (int i = 0; i < px_btl_base_num_modules; ++i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        if (m->btl_progress) {
            int rc = px_progress_register(px_btl_base_progress_module, m);
            if (rc != PX_SUCCESS && rc != PX_ERR_EXISTS)
                return rc;
        }
    }
    return PX_SUCCESS;
}

int px_btl_base_modex_send(void)
{
    for (int i = 0; i < px_btl_base_num_components; ++i) {
        const px_btl_component_t *c = px_btl_base_components[i];
        if (c->btl_modex_send) {
            int rc = c->btl_modex_send();
            if (rc != PX_SUCCESS) {
                px_show_error("btl %s could not publish its address through the modex: %s",
                              c->base.component_name, px_strerror(rc));
                return rc;
            }
        }
    }
    return PX_SUCCESS;
}

int px_btl_base_register_error(px_btl_error_fn cbfunc)
{
    for (int i = 0; i < px_btl_base_num_modules; ++i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        if (m->btl_register_error) {
            int rc = m->btl_register_error(m, cbfunc);
            if (rc != PX_SUCCESS)
                return rc;
        }
    }
    return PX_SUCCESS;
}

int px_btl_base_finalize(void)
{
    px_btl_base_unserialize(); /* the component's own methods, for its finalize */
    for (int i = px_btl_base_num_modules - 1; i >= 0; --i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        if (m->btl_progress)
            px_progress_unregister(px_btl_base_progress_module, m);
    }
    for (int i = px_btl_base_num_modules - 1; i >= 0; --i) {
        px_btl_module_t *m = px_btl_base_modules[i];
        if (m->btl_finalize)
            m->btl_finalize(m);
    }
    free(px_btl_base_modules);
    px_btl_base_modules = NULL;
    px_btl_base_num_modules = 0;
    free(px_btl_base_components);
    px_btl_base_components = NULL;
    for (int i = 0; i < px_btl_base_num_declined; ++i)
        free(px_btl_base_declined[i]);
    free(px_btl_base_declined);
    px_btl_base_declined = NULL;
    px_btl_base_num_declined = 0;
    px_btl_base_num_components = 0;
    for (int t = 0; t < 256; ++t)
        px_btl_base_register_am((px_btl_tag_t)t, NULL, NULL);
    return px_mca_framework_close(&px_btl_base_framework);
}

PX_CLASS_INSTANCE(px_btl_descriptor_t, px_free_list_item_t, NULL, NULL);
