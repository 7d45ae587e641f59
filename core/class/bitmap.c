/*
 * bitmap.c: px_bitmap_t, a bitmap that grows on demand up to max_size bits.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "core/class/bitmap.h"
#include "core/util/error.h"
#include "core/util/output.h"

#define WORD_BITS 64

static void bitmap_construct(px_bitmap_t *bm)
{
    bm->bitmap = NULL;
    bm->array_size = 0;
    bm->max_size = INT_MAX;
}

static void bitmap_destruct(px_bitmap_t *bm)
{
    free(bm->bitmap);
    bm->bitmap = NULL;
    bm->array_size = 0;
}

PX_CLASS_INSTANCE(px_bitmap_t, px_object_t, bitmap_construct, bitmap_destruct);

/* Words needed to hold `bits` bits. */
static int words_for(int bits)
{
    return (int)(((long)bits + WORD_BITS - 1) / WORD_BITS);
}

/* Make room for at least `words` words (never more than max_size allows). */
static int ensure_words(px_bitmap_t *bm, int words)
{
    if (words <= bm->array_size)
        return PX_SUCCESS;
    int limit = words_for(bm->max_size);
    int n = bm->array_size ? bm->array_size : 1;
    while (n < words && n < limit)
        n = (n > limit / 2) ? limit : n * 2;
    if (n > limit)
        n = limit;
    if (n < words)
        n = words;
    uint64_t *p = realloc(bm->bitmap, (size_t)n * sizeof(uint64_t));
    if (NULL == p)
        return PX_ERR_OUT_OF_RESOURCE;
    memset(p + bm->array_size, 0, (size_t)(n - bm->array_size) * sizeof(uint64_t));
    bm->bitmap = p;
    bm->array_size = n;
    return PX_SUCCESS;
}

int px_bitmap_init(px_bitmap_t *bm, int size)
{
    if (size < 0 || size > bm->max_size) {
        px_show_error("px_bitmap_init: size %d is out of range (accepted: 0..%d bits)", size,
                      bm->max_size);
        return PX_ERR_BAD_PARAM;
    }
    return ensure_words(bm, words_for(size > 0 ? size : 1));
}

int px_bitmap_set_max_size(px_bitmap_t *bm, int max_size)
{
    if (max_size < 0 || max_size < px_bitmap_size(bm)) {
        /* The current size counts whole words; only refuse when a set bit
         * would fall outside the new limit. */
        if (max_size < 0) {
            px_show_error("px_bitmap_set_max_size: max_size %d is negative", max_size);
            return PX_ERR_BAD_PARAM;
        }
        for (int b = max_size; b < px_bitmap_size(bm); b++) {
            if (px_bitmap_is_set_bit(bm, b)) {
                px_show_error("px_bitmap_set_max_size: max_size %d is below bit %d, which is "
                              "set",
                              max_size, b);
                return PX_ERR_BAD_PARAM;
            }
        }
    }
    bm->max_size = max_size;
    return PX_SUCCESS;
}

static int check_bit(const px_bitmap_t *bm, int bit, const char *what)
{
    if (bit < 0 || bit >= bm->max_size) {
        px_show_error("%s: bit %d is out of range (accepted: 0..%d; max_size is %d)", what, bit,
                      bm->max_size - 1, bm->max_size);
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

int px_bitmap_set_bit(px_bitmap_t *bm, int bit)
{
    int rc = check_bit(bm, bit, "px_bitmap_set_bit");
    if (PX_SUCCESS != rc)
        return rc;
    rc = ensure_words(bm, bit / WORD_BITS + 1);
    if (PX_SUCCESS != rc)
        return rc;
    bm->bitmap[bit / WORD_BITS] |= (uint64_t)1 << (bit % WORD_BITS);
    return PX_SUCCESS;
}

int px_bitmap_clear_bit(px_bitmap_t *bm, int bit)
{
    int rc = check_bit(bm, bit, "px_bitmap_clear_bit");
    if (PX_SUCCESS != rc)
        return rc;
    if (bit / WORD_BITS < bm->array_size) /* beyond the size it is clear already */
        bm->bitmap[bit / WORD_BITS] &= ~((uint64_t)1 << (bit % WORD_BITS));
    return PX_SUCCESS;
}

bool px_bitmap_is_set_bit(const px_bitmap_t *bm, int bit)
{
    if (bit < 0 || bit / WORD_BITS >= bm->array_size)
        return false;
    return (bm->bitmap[bit / WORD_BITS] >> (bit % WORD_BITS)) & 1;
}

int px_bitmap_find_first_set(const px_bitmap_t *bm)
{
    for (int w = 0; w < bm->array_size; w++)
        if (bm->bitmap[w])
            return w * WORD_BITS + __builtin_ctzll(bm->bitmap[w]);
    return -1;
}

int px_bitmap_find_and_set_first_unset_bit(px_bitmap_t *bm, int *position)
{
    int w = 0;
    while (w < bm->array_size && bm->bitmap[w] == ~(uint64_t)0)
        w++;
    int bit = (w < bm->array_size) ? w * WORD_BITS + __builtin_ctzll(~bm->bitmap[w])
                                   : bm->array_size * WORD_BITS;
    if (bit >= bm->max_size) {
        px_show_error("px_bitmap_find_and_set_first_unset_bit: all %d bits are set (max_size)",
                      bm->max_size);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = px_bitmap_set_bit(bm, bit);
    if (PX_SUCCESS == rc && position)
        *position = bit;
    return rc;
}

int px_bitmap_num_set_bits(const px_bitmap_t *bm, int len)
{
    if (len <= 0)
        return 0;
    int count = 0, full = len / WORD_BITS;
    for (int w = 0; w < full && w < bm->array_size; w++)
        count += __builtin_popcountll(bm->bitmap[w]);
    if (len % WORD_BITS && full < bm->array_size)
        count += __builtin_popcountll(bm->bitmap[full] & (((uint64_t)1 << (len % WORD_BITS)) - 1));
    return count;
}

void px_bitmap_clear_all_bits(px_bitmap_t *bm)
{
    if (bm->bitmap)
        memset(bm->bitmap, 0, (size_t)bm->array_size * sizeof(uint64_t));
}

int px_bitmap_size(const px_bitmap_t *bm)
{
    long bits = (long)bm->array_size * WORD_BITS;
    return bits > INT_MAX ? INT_MAX : (int)bits;
}
