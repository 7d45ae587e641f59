/*
 * bitmap.h: a growable bitmap. The BTL's add_procs marks the peers a module
 * reaches in one of these, indexed by rank.
 */
#ifndef PX_CLASS_BITMAP_H
#define PX_CLASS_BITMAP_H

#include <stdbool.h>
#include <stdint.h>
#include "core/util/compiler.h"
#include "core/class/object.h"

typedef struct px_bitmap {
    px_object_t super;
    uint64_t *bitmap;
    int array_size; /* in 64-bit words */
    int max_size;   /* largest bit count it may grow to */
} px_bitmap_t;
PX_EXPORT PX_CLASS_DECLARATION(px_bitmap_t);

/* Size the bitmap for `size` bits (it grows on demand up to max_size). */
PX_EXPORT int px_bitmap_init(px_bitmap_t *bm, int size);
PX_EXPORT int px_bitmap_set_max_size(px_bitmap_t *bm, int max_size);
/* set/clear grow as needed; a negative bit or one past max_size is
 * PX_ERR_BAD_PARAM with a message naming the bit and the limit. */
PX_EXPORT int px_bitmap_set_bit(px_bitmap_t *bm, int bit);
PX_EXPORT int px_bitmap_clear_bit(px_bitmap_t *bm, int bit);
/* false for any bit beyond the current size. */
PX_EXPORT bool px_bitmap_is_set_bit(const px_bitmap_t *bm, int bit);
/* Index of the first set / unset bit, or -1 (find_first_unset grows by one word when full). */
PX_EXPORT int px_bitmap_find_first_set(const px_bitmap_t *bm);
PX_EXPORT int px_bitmap_find_and_set_first_unset_bit(px_bitmap_t *bm, int *position);
PX_EXPORT int px_bitmap_num_set_bits(const px_bitmap_t *bm, int len);
PX_EXPORT void px_bitmap_clear_all_bits(px_bitmap_t *bm);
PX_EXPORT int px_bitmap_size(const px_bitmap_t *bm); /* in bits */

#endif
