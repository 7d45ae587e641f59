/*
 * hash_table_test.c: px_hash_table_t with uint64 keys and string keys:
 * set/replace/get/remove, growth past many entries, the two key kinds side by
 * side, iteration, remove_all, and errors.
 */
#include "test/lib/px_check.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/class/hash_table.h"
#include "core/util/error.h"

static px_hash_table_t ht;
static void setup(void)
{
    PX_OBJ_CONSTRUCT(&ht, px_hash_table_t);
    ck_assert_int_eq(px_hash_table_init(&ht, 4), PX_SUCCESS);
}
static void teardown(void)
{
    PX_OBJ_DESTRUCT(&ht);
}

START_TEST(uint64_set_get_replace_remove)
{
    void *v = NULL;
    ck_assert_int_eq(px_hash_table_get_value_uint64(&ht, 1, &v), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_hash_table_set_value_uint64(&ht, 1, (void *)0x10), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_set_value_uint64(&ht, UINT64_MAX, (void *)0x20), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_set_value_uint64(&ht, 0, NULL), PX_SUCCESS); /* NULL value ok */
    ck_assert_uint_eq(px_hash_table_get_size(&ht), 3);
    ck_assert_int_eq(px_hash_table_get_value_uint64(&ht, 1, &v), PX_SUCCESS);
    ck_assert_ptr_eq(v, (void *)0x10);
    ck_assert_int_eq(px_hash_table_get_value_uint64(&ht, UINT64_MAX, &v), PX_SUCCESS);
    ck_assert_ptr_eq(v, (void *)0x20);
    v = (void *)1;
    ck_assert_int_eq(px_hash_table_get_value_uint64(&ht, 0, &v), PX_SUCCESS);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(px_hash_table_set_value_uint64(&ht, 1, (void *)0x11), PX_SUCCESS);
    ck_assert_uint_eq(px_hash_table_get_size(&ht), 3); /* replaced, not added */
    ck_assert_int_eq(px_hash_table_get_value_uint64(&ht, 1, &v), PX_SUCCESS);
    ck_assert_ptr_eq(v, (void *)0x11);
    ck_assert_int_eq(px_hash_table_remove_value_uint64(&ht, 1), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_remove_value_uint64(&ht, 1), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_hash_table_get_value_uint64(&ht, 1, &v), PX_ERR_NOT_FOUND);
    ck_assert_uint_eq(px_hash_table_get_size(&ht), 2);
}
END_TEST

START_TEST(uint64_growth_and_removal)
{
    enum { N = 20000 };
    for (uint64_t k = 0; k < N; k++)
        ck_assert_int_eq(px_hash_table_set_value_uint64(&ht, k * 4096, (void *)(uintptr_t)(k + 1)),
                         PX_SUCCESS);
    ck_assert_uint_eq(px_hash_table_get_size(&ht), N);
    ck_assert_uint_ge(ht.num_buckets, N * 4 / 3); /* it grew */
    for (uint64_t k = 0; k < N; k += 2)
        ck_assert_int_eq(px_hash_table_remove_value_uint64(&ht, k * 4096), PX_SUCCESS);
    ck_assert_uint_eq(px_hash_table_get_size(&ht), N / 2);
    for (uint64_t k = 0; k < N; k++) {
        void *v = NULL;
        int rc = px_hash_table_get_value_uint64(&ht, k * 4096, &v);
        if (k % 2) {
            ck_assert_int_eq(rc, PX_SUCCESS);
            ck_assert_ptr_eq(v, (void *)(uintptr_t)(k + 1));
        } else {
            ck_assert_int_eq(rc, PX_ERR_NOT_FOUND);
        }
    }
}
END_TEST

START_TEST(string_keys)
{
    char key[32];
    strcpy(key, "btl_shm_eager_limit");
    ck_assert_int_eq(px_hash_table_set_value_str(&ht, key, (void *)0x1), PX_SUCCESS);
    strcpy(key, "scribbled"); /* the table copied the key */
    void *v = NULL;
    ck_assert_int_eq(px_hash_table_get_value_str(&ht, "btl_shm_eager_limit", &v), PX_SUCCESS);
    ck_assert_ptr_eq(v, (void *)0x1);
    ck_assert_int_eq(px_hash_table_get_value_str(&ht, "scribbled", &v), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_hash_table_set_value_str(&ht, "", (void *)0x2), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_get_value_str(&ht, "", &v), PX_SUCCESS);
    ck_assert_ptr_eq(v, (void *)0x2);
    ck_assert_int_eq(px_hash_table_set_value_str(&ht, "btl_shm_eager_limit", (void *)0x3),
                     PX_SUCCESS);
    ck_assert_uint_eq(px_hash_table_get_size(&ht), 2);
    ck_assert_int_eq(px_hash_table_get_value_str(&ht, "btl_shm_eager_limi", &v), PX_ERR_NOT_FOUND);
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "var_%d", i);
        ck_assert_int_eq(px_hash_table_set_value_str(&ht, key, (void *)(intptr_t)(i + 100)),
                         PX_SUCCESS);
    }
    for (int i = 0; i < 5000; i += 3) {
        snprintf(key, sizeof(key), "var_%d", i);
        ck_assert_int_eq(px_hash_table_remove_value_str(&ht, key), PX_SUCCESS);
    }
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "var_%d", i);
        int rc = px_hash_table_get_value_str(&ht, key, &v);
        ck_assert_int_eq(rc, i % 3 ? PX_SUCCESS : PX_ERR_NOT_FOUND);
        if (i % 3)
            ck_assert_ptr_eq(v, (void *)(intptr_t)(i + 100));
    }
    ck_assert_int_eq(px_hash_table_remove_value_str(&ht, "btl_shm_eager_limit"), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_remove_value_str(&ht, "btl_shm_eager_limit"), PX_ERR_NOT_FOUND);
}
END_TEST

START_TEST(both_kinds_side_by_side_and_iteration)
{
    ck_assert_int_eq(px_hash_table_set_value_uint64(&ht, 5, (void *)0x5), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_set_value_str(&ht, "5", (void *)0x55), PX_SUCCESS);
    for (uint64_t k = 100; k < 140; k++)
        px_hash_table_set_value_uint64(&ht, k, (void *)(uintptr_t)k);
    void *v;
    ck_assert_int_eq(px_hash_table_get_value_uint64(&ht, 5, &v), PX_SUCCESS);
    ck_assert_ptr_eq(v, (void *)0x5);
    ck_assert_int_eq(px_hash_table_get_value_str(&ht, "5", &v), PX_SUCCESS);
    ck_assert_ptr_eq(v, (void *)0x55);
    int n_str = 0, n_u64 = 0;
    uint64_t sum = 0;
    px_hash_table_iter_t it = PX_HASH_TABLE_ITER_INIT;
    while (px_hash_table_next(&ht, &it)) {
        if (it.key_str) {
            ck_assert_str_eq(it.key_str, "5");
            ck_assert_ptr_eq(it.value, (void *)0x55);
            n_str++;
        } else {
            ck_assert_ptr_eq(it.value, (void *)(uintptr_t)it.key_u64);
            sum += it.key_u64;
            n_u64++;
        }
    }
    ck_assert_int_eq(n_str, 1);
    ck_assert_int_eq(n_u64, 41);
    ck_assert_uint_eq(sum, 5 + (100 + 139) * 40 / 2);
    ck_assert(!px_hash_table_next(&ht, &it)); /* stays finished */
    ck_assert_int_eq(px_hash_table_remove_value_uint64(&ht, 5), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_get_value_str(&ht, "5", &v), PX_SUCCESS); /* untouched */
    px_hash_table_remove_all(&ht);
    ck_assert_uint_eq(px_hash_table_get_size(&ht), 0);
    px_hash_table_iter_t it2 = PX_HASH_TABLE_ITER_INIT;
    ck_assert(!px_hash_table_next(&ht, &it2));
    ck_assert_int_eq(px_hash_table_set_value_str(&ht, "again", (void *)0x9), PX_SUCCESS);
    ck_assert_uint_eq(px_hash_table_get_size(&ht), 1);
}
END_TEST

START_TEST(uninitialised_table_and_null_key)
{
    px_hash_table_t h;
    PX_OBJ_CONSTRUCT(&h, px_hash_table_t); /* no init: still usable */
    void *v;
    ck_assert_int_eq(px_hash_table_get_value_uint64(&h, 3, &v), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_hash_table_remove_value_str(&h, "x"), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_hash_table_set_value_uint64(&h, 3, (void *)0x3), PX_SUCCESS);
    ck_assert_int_eq(px_hash_table_get_value_uint64(&h, 3, &v), PX_SUCCESS);
    fflush(stderr);
    int saved = dup(2), fd = open("/dev/null", O_WRONLY);
    dup2(fd, 2);
    close(fd);
    int rc = px_hash_table_set_value_str(&h, NULL, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    PX_OBJ_DESTRUCT(&h);
}
END_TEST

PX_CHECK_MAIN("hash_table", setup, teardown, 0, uint64_set_get_replace_remove,
              uint64_growth_and_removal, string_keys, both_kinds_side_by_side_and_iteration,
              uninitialised_table_and_null_key)
