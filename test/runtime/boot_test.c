/*
 * boot_test.c: the boot framework's selection and modex helpers with
 * boot/singleton, and the progress engine (core/util/progress.h).
 */
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/proc.h"
#include "core/util/progress.h"
#include "frameworks/boot/boot.h"

START_TEST(singleton_selected)
{
    unsetenv("PX_MCA_boot");
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
    ck_assert_ptr_null(px_boot);
    ck_assert_int_eq(px_boot_base_select(), PX_SUCCESS);
    ck_assert_ptr_nonnull(px_boot);
    ck_assert_str_eq(px_boot->name, "singleton");
    ck_assert_int_eq(px_boot->rank, 0);
    ck_assert_int_eq(px_boot->size, 1);
    ck_assert_ptr_nonnull(px_boot->jobid);
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    ck_assert_str_eq(px_boot->hostname(0), host);
    ck_assert(px_boot->locality(0) & PX_PROC_LOCAL_SELF);
    ck_assert_ptr_null(px_boot->hostname(1));
    ck_assert_int_eq(px_boot_base_select(), PX_SUCCESS); /* idempotent */
    ck_assert_int_eq(px_boot_base_close(), PX_SUCCESS);
    ck_assert_ptr_null(px_boot);
    px_mca_var_finalize();
}
END_TEST

static const px_mca_component_t fake =
    PX_MCA_COMPONENT_HEADER("btl", 1, 0, 0, "fake", 1, 0, 0, NULL, NULL, NULL);

START_TEST(modex_roundtrip)
{
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(px_boot_modex_send(&fake, "x", 1), PX_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
    ck_assert_int_eq(px_boot_base_select(), PX_SUCCESS);
    const char blob[] = "address-of-rank-0";
    ck_assert_int_eq(px_boot_modex_send(&fake, blob, sizeof(blob)), PX_SUCCESS);
    ck_assert_int_eq(px_boot->commit(), PX_SUCCESS);
    ck_assert_int_eq(px_boot->fence(), PX_SUCCESS);
    ck_assert_int_eq(px_boot_modex_recv(&fake, 0, &data, &len), PX_SUCCESS);
    ck_assert_uint_eq(len, sizeof(blob));
    ck_assert_str_eq(data, blob);
    free(data);
    /* the key is "<fw>.<component>" */
    ck_assert_int_eq(px_boot->get(0, "btl.fake", &data, &len), PX_SUCCESS);
    free(data);
    /* a second put replaces the first */
    ck_assert_int_eq(px_boot_modex_send(&fake, "new", 4), PX_SUCCESS);
    ck_assert_int_eq(px_boot_modex_recv(&fake, 0, &data, &len), PX_SUCCESS);
    ck_assert_str_eq(data, "new");
    free(data);
    ck_assert_int_eq(px_boot->get(0, "btl.none", &data, &len), PX_ERR_NOT_FOUND);
    ck_assert_ptr_null(data);
    ck_assert_int_eq(px_boot_modex_recv(&fake, 1, &data, &len), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_boot_base_close(), PX_SUCCESS);
    px_mca_var_finalize();
}
END_TEST

START_TEST(no_boot_component)
{
    /* pxrun declines outside pxrun; without singleton nothing serves. */
    setenv("PX_MCA_boot", "^singleton", 1);
    unsetenv("PX_PXRUN_URI");
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
    ck_assert_int_lt(px_boot_base_select(), 0);
    ck_assert_ptr_null(px_boot);
    px_mca_var_finalize();
}
END_TEST

static int calls_a, calls_b;
static int prog_a(void *ctx)
{
    (void)ctx;
    calls_a++;
    return 2;
}
static int prog_b(void *ctx)
{
    calls_b += *(int *)ctx;
    return 1;
}

START_TEST(progress_engine)
{
    int inc = 10;
    ck_assert_int_eq(px_progress_count(), 0);
    ck_assert_int_eq(px_progress_engine(), 0);
    ck_assert_int_eq(px_progress_register(prog_a, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_progress_register(prog_a, NULL), PX_ERR_EXISTS);
    ck_assert_int_eq(px_progress_register(prog_b, &inc), PX_SUCCESS);
    ck_assert_int_eq(px_progress_register(NULL, NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_progress_count(), 2);
    ck_assert_int_eq(px_progress_engine(), 3);
    ck_assert_int_eq(calls_a, 1);
    ck_assert_int_eq(calls_b, 10);
    ck_assert_int_eq(px_progress_unregister(prog_a, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_progress_unregister(prog_a, NULL), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_progress_engine(), 1);
    ck_assert_int_eq(calls_a, 1);
    for (int i = 0; i < 100; ++i) /* growth */
        ck_assert_int_eq(px_progress_register(prog_a, (void *)(intptr_t)(i + 1)), PX_SUCCESS);
    ck_assert_int_eq(px_progress_engine(), 201);
    px_progress_finalize();
    ck_assert_int_eq(px_progress_count(), 0);
}
END_TEST

PX_CHECK_MAIN("boot", NULL, NULL, 0, singleton_selected, modex_roundtrip, no_boot_component,
              progress_engine)
