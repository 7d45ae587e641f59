/*
 * pointer_array.h: an index table of pointers that reuses freed slots.
 * For naming objects by a small integer (request handles, endpoint indices);
 * any layer above core/class may use it: add() returns the lowest free
 * index, remove() frees it for the next add(). Thread-safe (one mutex per
 * table).
 *
 *   px_pointer_array_t t; PX_OBJ_CONSTRUCT(&t, px_pointer_array_t);
 *   px_pointer_array_init(&t, 16, 1024, 16);   // initial, max, growth step
 *   int idx = px_pointer_array_add(&t, req);     // >= 0, or a negative error
 *   void *r = px_pointer_array_get_item(&t, idx);
 *   px_pointer_array_remove(&t, idx);            // idx is reused by the next add
 *
 * A slot holding NULL is free; add() refuses NULL. The table does not own
 * references to what it stores.
 */
#ifndef PX_CLASS_POINTER_ARRAY_H
#define PX_CLASS_POINTER_ARRAY_H

#include <pthread.h>
#include "core/util/compiler.h"
#include "core/class/object.h"

typedef struct px_pointer_array {
    px_object_t super;
    pthread_mutex_t lock;
    int lowest_free; /* no free slot below this index */
    int number_free; /* free slots within size */
    int size;        /* slots allocated */
    int max_size;    /* slots it may grow to */
    int block_size;  /* growth step */
    void **addr;
} px_pointer_array_t;
PX_EXPORT PX_CLASS_DECLARATION(px_pointer_array_t);

/* Size the table: `initial_size` slots now, growing by `block_size` (0: 16)
 * up to `max_size` (0: INT_MAX). PX_ERR_BAD_PARAM for negative sizes or an
 * initial size above the maximum. */
PX_EXPORT int px_pointer_array_init(px_pointer_array_t *pa, int initial_size, int max_size,
                                    int block_size);
/* Store `ptr` in the lowest free slot, growing when full. Returns the index,
 * PX_ERR_BAD_PARAM for NULL, or PX_ERR_OUT_OF_RESOURCE at the maximum. */
PX_EXPORT int px_pointer_array_add(px_pointer_array_t *pa, void *ptr);
/* Store `ptr` (NULL frees the slot) at `index`, growing to reach it.
 * PX_ERR_BAD_PARAM for an index < 0 or >= max_size. */
PX_EXPORT int px_pointer_array_set_item(px_pointer_array_t *pa, int index, void *ptr);
/* The pointer at `index`, or NULL (free, or outside the table). */
PX_EXPORT void *px_pointer_array_get_item(px_pointer_array_t *pa, int index);
/* Free the slot at `index`. PX_ERR_BAD_PARAM when outside the table,
 * PX_ERR_NOT_FOUND when the slot is already free. */
PX_EXPORT int px_pointer_array_remove(px_pointer_array_t *pa, int index);
/* Number of slots (used or free) currently allocated. */
PX_EXPORT int px_pointer_array_get_size(px_pointer_array_t *pa);
/* Number of slots in use. */
PX_EXPORT int px_pointer_array_get_count(px_pointer_array_t *pa);

#endif
