/*
 * hash_table.h: a hash table mapping uint64 keys or string keys to pointers.
 * For lookups by id or by name (ranks, job ids, variable names, endpoint
 * caches); any layer above core/class may use it. Not thread-safe: callers
 * lock around it when several threads use one table.
 *
 *   px_hash_table_t h; PX_OBJ_CONSTRUCT(&h, px_hash_table_t);
 *   px_hash_table_init(&h, 64);
 *   px_hash_table_set_value_uint64(&h, 42, ep);
 *   px_hash_table_set_value_str(&h, "btl_shm_eager", var);   // key is copied
 *   void *v; if (PX_SUCCESS == px_hash_table_get_value_str(&h, "btl_shm_eager", &v)) ...
 *   px_hash_table_iter_t it = PX_HASH_TABLE_ITER_INIT;
 *   while (px_hash_table_next(&h, &it)) use(it.key_str or it.key_u64, it.value);
 *
 * The two key kinds live side by side: uint64 key 5 and string key "5" are
 * different entries. Separate chaining; the bucket count doubles when the
 * table is 3/4 full, so set/get/remove are O(1) on average. The table does not
 * own references to its values; string keys are copied and freed by it.
 */
#ifndef PX_CLASS_HASH_TABLE_H
#define PX_CLASS_HASH_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"
#include "core/class/object.h"

typedef struct px_hash_entry px_hash_entry_t;

typedef struct px_hash_table {
    px_object_t super;
    px_hash_entry_t **buckets;
    size_t num_buckets; /* a power of two */
    size_t count;       /* entries stored */
} px_hash_table_t;
PX_EXPORT PX_CLASS_DECLARATION(px_hash_table_t);

/* Iteration cursor. After px_hash_table_next returns true, exactly one of
 * key_str (string key) or key_u64 (when key_str is NULL) names the entry. */
typedef struct px_hash_table_iter {
    size_t bucket;
    px_hash_entry_t *entry;
    const char *key_str;
    uint64_t key_u64;
    void *value;
} px_hash_table_iter_t;
#define PX_HASH_TABLE_ITER_INIT                                                                    \
    {                                                                                              \
        0, NULL, NULL, 0, NULL                                                                     \
    }

/* Allocate about `initial_size` buckets (rounded up to a power of two, min 8). */
PX_EXPORT int px_hash_table_init(px_hash_table_t *ht, size_t initial_size);
PX_EXPORT size_t px_hash_table_get_size(const px_hash_table_t *ht); /* entries stored */
/* Drop every entry (values are not touched). */
PX_EXPORT void px_hash_table_remove_all(px_hash_table_t *ht);

/* set inserts or replaces; get returns PX_ERR_NOT_FOUND when absent; remove
 * returns PX_ERR_NOT_FOUND when absent. */
PX_EXPORT int px_hash_table_set_value_uint64(px_hash_table_t *ht, uint64_t key, void *value);
PX_EXPORT int px_hash_table_get_value_uint64(const px_hash_table_t *ht, uint64_t key, void **value);
PX_EXPORT int px_hash_table_remove_value_uint64(px_hash_table_t *ht, uint64_t key);

PX_EXPORT int px_hash_table_set_value_str(px_hash_table_t *ht, const char *key, void *value);
PX_EXPORT int px_hash_table_get_value_str(const px_hash_table_t *ht, const char *key, void **value);
PX_EXPORT int px_hash_table_remove_value_str(px_hash_table_t *ht, const char *key);

/* Advance the cursor; false when every entry has been visited. Do not change
 * the table while iterating. */
PX_EXPORT bool px_hash_table_next(const px_hash_table_t *ht, px_hash_table_iter_t *it);

#endif
