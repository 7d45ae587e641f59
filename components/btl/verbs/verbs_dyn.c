/*
 * verbs_dyn.c: btl/verbs's dynamic peers (BTL API 3.3): not served yet.
 */
#include <stdio.h>
#include "components/btl/verbs/verbs.h"
#include "core/util/error.h"

/* Not yet: every call declines with the reason, which the base reports. */
#define PX_BTL_VERBS_DYN_WHY                                                                       \
    "btl/verbs does not serve dynamic peers yet: bringing up an RC queue pair per connection "     \
    "through offer, accept and complete is not implemented"
int px_btl_verbs_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                           size_t *part_len, char *reason)
{
    (void)btl;
    (void)endpoint;
    (void)part;
    (void)part_len;
    snprintf(reason, PX_BTL_DYN_REASON_MAX, "%s", PX_BTL_VERBS_DYN_WHY);
    return PX_ERR_NOT_SUPPORTED;
}
int px_btl_verbs_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                            px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                            char *reason)
{
    (void)btl;
    (void)offer;
    (void)offer_len;
    (void)endpoint;
    (void)reply;
    (void)reply_len;
    snprintf(reason, PX_BTL_DYN_REASON_MAX, "%s", PX_BTL_VERBS_DYN_WHY);
    return PX_ERR_NOT_SUPPORTED;
}
int px_btl_verbs_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *endpoint, const void *reply,
                              size_t reply_len, char *reason)
{
    (void)btl;
    (void)endpoint;
    (void)reply;
    (void)reply_len;
    snprintf(reason, PX_BTL_DYN_REASON_MAX, "%s", PX_BTL_VERBS_DYN_WHY);
    return PX_ERR_NOT_SUPPORTED;
}
int px_btl_verbs_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *endpoint)
{
    (void)btl;
    (void)endpoint;
    return PX_ERR_BAD_PARAM; /* it never offers or accepts one */
}
