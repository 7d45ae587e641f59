/*
 * pointer_array_test.c: px_pointer_array_t: lowest-free slot reuse, growth
 * by blocks, set_item past the end, the maximum, errors, and concurrent adds.
 */
#include "test/lib/px_check.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include "core/class/pointer_array.h"
#include "core/util/error.h"

static int quiet(void) /* silence the expected error messages */
{
    fflush(stderr);
    int saved = dup(2), fd = open("/dev/null", O_WRONLY);
    dup2(fd, 2);
    close(fd);
    return saved;
}
static void loud(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static int vals[100];
static px_pointer_array_t pa;
static void setup(void)
{
    PX_OBJ_CONSTRUCT(&pa, px_pointer_array_t);
}
static void teardown(void)
{
    PX_OBJ_DESTRUCT(&pa);
}

START_TEST(add_reuses_lowest_free_slot)
{
    ck_assert_int_eq(px_pointer_array_init(&pa, 4, 0, 4), PX_SUCCESS);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(px_pointer_array_add(&pa, &vals[i]), i);
    ck_assert_int_eq(px_pointer_array_get_size(&pa), 8); /* grew by one block */
    ck_assert_int_eq(px_pointer_array_get_count(&pa), 6);
    ck_assert_int_eq(px_pointer_array_remove(&pa, 3), PX_SUCCESS);
    ck_assert_int_eq(px_pointer_array_remove(&pa, 1), PX_SUCCESS);
    ck_assert_ptr_null(px_pointer_array_get_item(&pa, 1));
    ck_assert_int_eq(px_pointer_array_get_count(&pa), 4);
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[50]), 1); /* lowest free first */
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[51]), 3);
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[52]), 6);
    ck_assert_ptr_eq(px_pointer_array_get_item(&pa, 1), &vals[50]);
    ck_assert_ptr_eq(px_pointer_array_get_item(&pa, 3), &vals[51]);
    ck_assert_ptr_eq(px_pointer_array_get_item(&pa, 5), &vals[5]);
    ck_assert_ptr_null(px_pointer_array_get_item(&pa, 1000)); /* outside: NULL */
    ck_assert_ptr_null(px_pointer_array_get_item(&pa, -1));
    ck_assert_int_eq(px_pointer_array_remove(&pa, 3), PX_SUCCESS);
    ck_assert_int_eq(px_pointer_array_remove(&pa, 3), PX_ERR_NOT_FOUND);
}
END_TEST

START_TEST(set_item_grows_and_tracks_free)
{
    ck_assert_int_eq(px_pointer_array_init(&pa, 2, 0, 2), PX_SUCCESS);
    ck_assert_int_eq(px_pointer_array_set_item(&pa, 10, &vals[10]), PX_SUCCESS);
    ck_assert_int_ge(px_pointer_array_get_size(&pa), 11);
    ck_assert_ptr_eq(px_pointer_array_get_item(&pa, 10), &vals[10]);
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[0]), 0);
    ck_assert_int_eq(px_pointer_array_set_item(&pa, 1, &vals[1]), PX_SUCCESS);
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[2]), 2);              /* skips the set slot */
    ck_assert_int_eq(px_pointer_array_set_item(&pa, 0, NULL), PX_SUCCESS); /* frees 0 */
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[3]), 0);
    ck_assert_int_eq(px_pointer_array_get_count(&pa), 4);
}
END_TEST

START_TEST(max_size_and_errors)
{
    ck_assert_int_eq(px_pointer_array_init(&pa, 2, 5, 2), PX_SUCCESS);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(px_pointer_array_add(&pa, &vals[i]), i);
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[5]), PX_ERR_OUT_OF_RESOURCE);
    int s = quiet();
    int r1 = px_pointer_array_add(&pa, NULL);
    int r2 = px_pointer_array_set_item(&pa, 5, &vals[5]);
    int r3 = px_pointer_array_set_item(&pa, -1, &vals[5]);
    int r4 = px_pointer_array_remove(&pa, 7);
    px_pointer_array_t other;
    PX_OBJ_CONSTRUCT(&other, px_pointer_array_t);
    int r5 = px_pointer_array_init(&other, 10, 5, 1);
    PX_OBJ_DESTRUCT(&other);
    loud(s);
    ck_assert_int_eq(r1, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(r2, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(r3, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(r4, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(r5, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_pointer_array_remove(&pa, 2), PX_SUCCESS);
    ck_assert_int_eq(px_pointer_array_add(&pa, &vals[9]), 2);
}
END_TEST

static void *adder(void *arg)
{
    intptr_t base = (intptr_t)arg;
    for (intptr_t i = 0; i < 1000; i++) {
        int idx = px_pointer_array_add(&pa, (void *)(base + i + 1));
        if (idx < 0)
            return (void *)1;
        if (i % 2 && px_pointer_array_remove(&pa, idx) != PX_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

START_TEST(concurrent_adds_get_distinct_slots)
{
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, adder, (void *)(i * 100000));
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
    }
    ck_assert_int_eq(px_pointer_array_get_count(&pa), 2000);
    /* every kept value is present once */
    int found = 0;
    for (int i = 0; i < px_pointer_array_get_size(&pa); i++)
        found += px_pointer_array_get_item(&pa, i) != NULL;
    ck_assert_int_eq(found, 2000);
}
END_TEST

PX_CHECK_MAIN("pointer_array", setup, teardown, 0, add_reuses_lowest_free_slot,
              set_item_grows_and_tracks_free, max_size_and_errors,
              concurrent_adds_get_distinct_slots)
