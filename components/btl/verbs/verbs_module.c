/*
 * verbs_module.c: btl/verbs module template. Its figures are registered as
 * btl_verbs_* variables so px_info shows what the transport will offer; the
 * operations are not written yet (see verbs.h), and init never hands out a
 * module, so none of these pointers is reached.
 */
#include "components/btl/verbs/verbs.h"

px_btl_module_t px_btl_verbs_module_template = {
    .btl_size = PX_BTL_MODULE_SIZE,
    .btl_component = &px_btl_verbs_component,
    .btl_exclusivity = PX_BTL_EXCLUSIVITY_DEFAULT + 0x100, /* above ofi, below shm */
    .btl_latency = 2000,
    .btl_bandwidth = 10000,
    .btl_eager_limit = 12 * 1024,
    .btl_max_send_size = 64 * 1024,
    .btl_put_limit = (size_t)1 << 30,
    .btl_get_limit = (size_t)1 << 30,
    .btl_flags = PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT | PX_BTL_FLAGS_GET | PX_BTL_FLAGS_NEEDS_REG,
    .btl_registration_handle_size = 16,
};
