/*
 * bitmap_test.c: px_bitmap_t: bits 0, 63, 64 (word edges), growth on demand,
 * find first set/unset, counting, max_size and out-of-range errors.
 */
#include "test/lib/px_check.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/class/bitmap.h"
#include "core/util/error.h"

/* Run an expression with stderr captured; the text goes to `out`. */
static char captured[2048];
#define CAPTURE_STDERR(expr)                                                                       \
    ({                                                                                             \
        int fds_[2], saved_ = dup(2);                                                              \
        ck_assert_int_eq(pipe(fds_), 0);                                                           \
        fflush(stderr);                                                                            \
        dup2(fds_[1], 2);                                                                          \
        __typeof__(expr) r_ = (expr);                                                              \
        fflush(stderr);                                                                            \
        dup2(saved_, 2);                                                                           \
        close(saved_);                                                                             \
        close(fds_[1]);                                                                            \
        ssize_t n_ = read(fds_[0], captured, sizeof(captured) - 1);                                \
        captured[n_ > 0 ? n_ : 0] = '\0';                                                          \
        close(fds_[0]);                                                                            \
        r_;                                                                                        \
    })

static px_bitmap_t bm;
static void setup(void)
{
    PX_OBJ_CONSTRUCT(&bm, px_bitmap_t);
}
static void teardown(void)
{
    PX_OBJ_DESTRUCT(&bm);
}

START_TEST(edges_0_63_64)
{
    ck_assert_int_eq(px_bitmap_init(&bm, 64), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_size(&bm), 64);
    ck_assert_int_eq(px_bitmap_find_first_set(&bm), -1);
    ck_assert_int_eq(px_bitmap_set_bit(&bm, 63), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_size(&bm), 64); /* no growth for bit 63 */
    ck_assert(px_bitmap_is_set_bit(&bm, 63));
    ck_assert(!px_bitmap_is_set_bit(&bm, 62));
    ck_assert(!px_bitmap_is_set_bit(&bm, 64));
    ck_assert_int_eq(px_bitmap_find_first_set(&bm), 63);
    ck_assert_int_eq(px_bitmap_set_bit(&bm, 0), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_find_first_set(&bm), 0);
    ck_assert_int_eq(px_bitmap_set_bit(&bm, 64), PX_SUCCESS); /* first bit of word 2: grows */
    ck_assert_int_ge(px_bitmap_size(&bm), 128);
    ck_assert(px_bitmap_is_set_bit(&bm, 64));
    ck_assert(!px_bitmap_is_set_bit(&bm, 65));
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, 65), 3);
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, 64), 2);
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, 63), 1);
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, 1), 1);
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, 0), 0);
    ck_assert_int_eq(px_bitmap_clear_bit(&bm, 0), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_find_first_set(&bm), 63);
    ck_assert_int_eq(px_bitmap_clear_bit(&bm, 63), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_find_first_set(&bm), 64);
    ck_assert_int_eq(px_bitmap_clear_bit(&bm, 64), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_find_first_set(&bm), -1);
}
END_TEST

START_TEST(growth_preserves_bits)
{
    ck_assert_int_eq(px_bitmap_init(&bm, 1), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_size(&bm), 64);
    for (int b = 0; b < 1000; b += 7)
        ck_assert_int_eq(px_bitmap_set_bit(&bm, b), PX_SUCCESS);
    ck_assert_int_ge(px_bitmap_size(&bm), 1000);
    for (int b = 0; b < 1000; b++)
        ck_assert_int_eq(px_bitmap_is_set_bit(&bm, b), b % 7 == 0);
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, 1000), 143);
    ck_assert_int_eq(px_bitmap_set_bit(&bm, 100000), PX_SUCCESS); /* a big jump */
    ck_assert(px_bitmap_is_set_bit(&bm, 100000));
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, px_bitmap_size(&bm)), 144);
    /* clearing a bit beyond the size is fine and grows nothing */
    int size = px_bitmap_size(&bm);
    ck_assert_int_eq(px_bitmap_clear_bit(&bm, size + 500), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_size(&bm), size);
    px_bitmap_clear_all_bits(&bm);
    ck_assert_int_eq(px_bitmap_find_first_set(&bm), -1);
    ck_assert_int_eq(px_bitmap_num_set_bits(&bm, px_bitmap_size(&bm)), 0);
}
END_TEST

START_TEST(find_and_set_first_unset)
{
    ck_assert_int_eq(px_bitmap_init(&bm, 64), PX_SUCCESS);
    int pos = -1;
    for (int i = 0; i < 64; i++) {
        ck_assert_int_eq(px_bitmap_find_and_set_first_unset_bit(&bm, &pos), PX_SUCCESS);
        ck_assert_int_eq(pos, i);
    }
    ck_assert_int_eq(px_bitmap_size(&bm), 64);
    /* full: grows by a word */
    ck_assert_int_eq(px_bitmap_find_and_set_first_unset_bit(&bm, &pos), PX_SUCCESS);
    ck_assert_int_eq(pos, 64);
    ck_assert_int_ge(px_bitmap_size(&bm), 128);
    ck_assert_int_eq(px_bitmap_clear_bit(&bm, 17), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_find_and_set_first_unset_bit(&bm, &pos), PX_SUCCESS);
    ck_assert_int_eq(pos, 17);
    ck_assert_int_eq(px_bitmap_find_and_set_first_unset_bit(&bm, &pos), PX_SUCCESS);
    ck_assert_int_eq(pos, 65);
}
END_TEST

START_TEST(out_of_range_errors)
{
    ck_assert_int_eq(px_bitmap_init(&bm, 10), PX_SUCCESS);
    ck_assert_int_eq(CAPTURE_STDERR(px_bitmap_set_bit(&bm, -1)), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(captured, "bit -1"));
    ck_assert_int_eq(CAPTURE_STDERR(px_bitmap_clear_bit(&bm, -5)), PX_ERR_BAD_PARAM);
    ck_assert(!px_bitmap_is_set_bit(&bm, -1));
    ck_assert_int_eq(px_bitmap_set_max_size(&bm, 100), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_set_bit(&bm, 99), PX_SUCCESS);
    ck_assert_int_eq(CAPTURE_STDERR(px_bitmap_set_bit(&bm, 100)), PX_ERR_BAD_PARAM);
    /* the message names the bit and the limit */
    ck_assert_msg(strstr(captured, "bit 100") && strstr(captured, "0..99"), "%s", captured);
    ck_assert(!px_bitmap_is_set_bit(&bm, 100));
    ck_assert_int_eq(CAPTURE_STDERR(px_bitmap_init(&bm, -3)), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(CAPTURE_STDERR(px_bitmap_set_max_size(&bm, 50)), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(captured, "bit 99"));
    ck_assert_int_eq(px_bitmap_clear_bit(&bm, 99), PX_SUCCESS);
    ck_assert_int_eq(px_bitmap_set_max_size(&bm, 64), PX_SUCCESS);
    /* find_and_set stops at max_size */
    int pos;
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(px_bitmap_find_and_set_first_unset_bit(&bm, &pos), PX_SUCCESS);
    ck_assert_int_eq(CAPTURE_STDERR(px_bitmap_find_and_set_first_unset_bit(&bm, &pos)),
                     PX_ERR_OUT_OF_RESOURCE);
    ck_assert_ptr_nonnull(strstr(captured, "64"));
}
END_TEST

PX_CHECK_MAIN("bitmap", setup, teardown, 0, edges_0_63_64, growth_preserves_bits,
              find_and_set_first_unset, out_of_range_errors)
