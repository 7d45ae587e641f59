/*
 * error_test.c: px_strerror gives distinct, non-empty text for every code and
 * a fallback for unknown ones.
 */
#include "test/lib/px_check.h"
#include <string.h>
#include "core/util/error.h"

START_TEST(every_code_has_distinct_text)
{
    const char *seen[-PX_ERR_MAX];
    for (int code = PX_SUCCESS; code > PX_ERR_MAX; code--) {
        const char *s = px_strerror(code);
        ck_assert_ptr_nonnull(s);
        ck_assert_msg(strlen(s) > 0, "code %d has empty text", code);
        ck_assert_msg(strcmp(s, "unknown error code") != 0, "code %d is not described", code);
        for (int j = 0; j < -code; j++)
            ck_assert_msg(strcmp(seen[j], s) != 0, "codes %d and %d share the text '%s'", -j, code,
                          s);
        seen[-code] = s;
    }
    ck_assert_str_eq(px_strerror(PX_SUCCESS), "success");
    ck_assert_ptr_nonnull(strstr(px_strerror(PX_ERR_NOT_INITIALIZED), "px_init"));
}
END_TEST

START_TEST(unknown_codes)
{
    ck_assert_str_eq(px_strerror(PX_ERR_MAX), "unknown error code");
    ck_assert_str_eq(px_strerror(1), "unknown error code");
    ck_assert_str_eq(px_strerror(-1000), "unknown error code");
}
END_TEST

PX_CHECK_MAIN("error", NULL, NULL, 0, every_code_has_distinct_text, unknown_codes)
