/*
 * btl_failopen.c: a BTL plugin whose open fails (t_failed_components.sh):
 * the framework closes and unloads it, px_info --show-failed lists it, and
 * px_init's "no transport reaches" error names it with the reason.
 */
#include <stddef.h>
#include "core/util/error.h"
#include "frameworks/btl/btl.h"

static int px_btl_failopen_open(void)
{
    return PX_ERR_NOT_AVAILABLE; /* as a transport whose device is missing */
}

static px_btl_module_t **px_btl_failopen_init(int *num_modules, bool enable_progress_threads)
{
    (void)enable_progress_threads;
    *num_modules = 0;
    return NULL;
}

const px_btl_component_t px_btl_failopen_component = {
    .base = PX_BTL_COMPONENT_HEADER("failopen", 1, 0, 0, NULL, px_btl_failopen_open, NULL),
    .btl_init = px_btl_failopen_init,
};
