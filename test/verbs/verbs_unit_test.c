/*
 * verbs_discovery_test.c: btl/verbs discovery and its decline. The devices
 * libibverbs lists are the truth: with none (this machine kind), the
 * informational variable btl_verbs_devices_found says "none" and init
 * declines with "no RDMA device found"; with some, both name the first one.
 * Either way init returns no module and its variables are registered.
 */
#include "test/lib/px_check.h"
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/verbs/verbs.h"
#include "core/mca/var.h"
#include "core/util/error.h"

START_TEST(discovery_and_decline)
{
    ck_assert_int_eq(px_btl_verbs_component.base.register_params(), PX_SUCCESS);
    ck_assert_int_eq(px_btl_verbs_component.base.open(), PX_SUCCESS);
    int idx = px_mca_var_find("btl_verbs_devices_found");
    ck_assert_int_ge(idx, 0);
    char *found = px_mca_var_value_string(idx);
    ck_assert_int_ge(px_mca_var_find("btl_verbs_device_include"), 0);
    ck_assert_int_ge(px_mca_var_find("btl_verbs_exclusivity"), 0);

    int ndev = 0;
    struct ibv_device **list = ibv_get_device_list(&ndev);
    int n = -1;
    px_btl_module_t **mods = px_btl_verbs_component.btl_init(&n, false);
    ck_assert_ptr_null(mods);
    ck_assert_int_eq(n, 0);
    if (0 == ndev) {
        ck_assert_str_eq(found, "none");
        ck_assert_msg(strstr(px_btl_verbs_decline_reason, "no RDMA device found"), "reason: %s",
                      px_btl_verbs_decline_reason);
    } else {
        const char *first = ibv_get_device_name(list[0]);
        ck_assert_msg(strstr(found, first), "found: %s", found);
        ck_assert_msg(strstr(px_btl_verbs_decline_reason, first), "reason: %s",
                      px_btl_verbs_decline_reason);
    }
    if (list)
        ibv_free_device_list(list);
    free(found);
    ck_assert_int_eq(px_btl_verbs_component.base.close(), PX_SUCCESS);
}
END_TEST

START_TEST(device_include_filters)
{
    ck_assert_int_eq(px_btl_verbs_component.base.register_params(), PX_SUCCESS);
    ck_assert_int_ge(px_mca_var_set("btl_verbs_device_include", "nosuchdev0"), 0);
    char text[1024];
    /* nothing usable when the only allowed device does not exist */
    ck_assert_int_eq(px_btl_verbs_discover(text, sizeof(text)), 0);
}
END_TEST

PX_CHECK_MAIN("btl_verbs", NULL, NULL, 0, discovery_and_decline, device_include_filters)
