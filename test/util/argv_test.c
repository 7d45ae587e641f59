/*
 * argv_test.c: argv helpers: append/prepend, split (with and without empty
 * tokens), join, count, copy, free.
 */
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include "core/util/argv.h"
#include "core/util/error.h"

START_TEST(append_count_prepend)
{
    char **v = NULL;
    int argc = -1;
    ck_assert_int_eq(px_argv_count(v), 0);
    ck_assert_int_eq(px_argv_append(&argc, &v, "pxrun"), PX_SUCCESS);
    ck_assert_int_eq(argc, 1);
    ck_assert_int_eq(px_argv_append(&argc, &v, "-n"), PX_SUCCESS);
    ck_assert_int_eq(px_argv_append_nosize(&v, "2"), PX_SUCCESS);
    ck_assert_int_eq(px_argv_count(v), 3);
    ck_assert_int_eq(px_argv_prepend_nosize(&v, "env"), PX_SUCCESS);
    ck_assert_int_eq(px_argv_count(v), 4);
    ck_assert_str_eq(v[0], "env");
    ck_assert_str_eq(v[1], "pxrun");
    ck_assert_str_eq(v[3], "2");
    ck_assert_ptr_null(v[4]);
    ck_assert_int_eq(px_argv_append_nosize(&v, NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_argv_count(v), 4);
    px_argv_free(v);
    px_argv_free(NULL);
}
END_TEST

START_TEST(split_drops_or_keeps_empty)
{
    char **v = px_argv_split("shm,,self,", ',');
    ck_assert_int_eq(px_argv_count(v), 2);
    ck_assert_str_eq(v[0], "shm");
    ck_assert_str_eq(v[1], "self");
    px_argv_free(v);
    v = px_argv_split_with_empty("shm,,self,", ',');
    ck_assert_int_eq(px_argv_count(v), 4);
    ck_assert_str_eq(v[1], "");
    ck_assert_str_eq(v[2], "self");
    ck_assert_str_eq(v[3], "");
    px_argv_free(v);
    v = px_argv_split("", ',');
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(px_argv_count(v), 0);
    px_argv_free(v);
    v = px_argv_split_with_empty("", ',');
    ck_assert_int_eq(px_argv_count(v), 0);
    px_argv_free(v);
    v = px_argv_split("one", ',');
    ck_assert_int_eq(px_argv_count(v), 1);
    ck_assert_str_eq(v[0], "one");
    px_argv_free(v);
    v = px_argv_split("a b", '\0'); /* no delimiter: one token */
    ck_assert_int_eq(px_argv_count(v), 1);
    ck_assert_str_eq(v[0], "a b");
    px_argv_free(v);
    v = px_argv_split(NULL, ',');
    ck_assert_int_eq(px_argv_count(v), 0);
    px_argv_free(v);
}
END_TEST

START_TEST(join_and_round_trip)
{
    char **v = px_argv_split("a:bb:ccc", ':');
    char *s = px_argv_join(v, ',');
    ck_assert_str_eq(s, "a,bb,ccc");
    free(s);
    s = px_argv_join(NULL, ',');
    ck_assert_str_eq(s, "");
    free(s);
    char *one[] = {"solo", NULL};
    s = px_argv_join(one, ' ');
    ck_assert_str_eq(s, "solo");
    free(s);
    px_argv_free(v);
    v = px_argv_split_with_empty(",x,,y,", ',');
    s = px_argv_join(v, ',');
    ck_assert_str_eq(s, ",x,,y,"); /* nothing lost */
    free(s);
    px_argv_free(v);
}
END_TEST

START_TEST(copy_is_deep)
{
    char **v = px_argv_split("x y z", ' ');
    char **c = px_argv_copy(v);
    ck_assert_int_eq(px_argv_count(c), 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(c[i], v[i]);
        ck_assert_ptr_ne(c[i], v[i]);
    }
    v[0][0] = 'Q';
    ck_assert_str_eq(c[0], "x");
    px_argv_free(v);
    ck_assert_str_eq(c[2], "z");
    px_argv_free(c);
    ck_assert_ptr_null(px_argv_copy(NULL));
}
END_TEST

PX_CHECK_MAIN("argv", NULL, NULL, 0, append_count_prepend, split_drops_or_keeps_empty,
              join_and_round_trip, copy_is_deep)
