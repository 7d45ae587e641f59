/*
 * hash_table.c: px_hash_table_t, separate chaining over a power-of-two bucket
 * array. uint64 keys are mixed with the splitmix64 finaliser; strings are
 * hashed with FNV-1a (64 bit).
 */
#include <stdlib.h>
#include <string.h>
#include "core/class/hash_table.h"
#include "core/util/error.h"
#include "core/util/output.h"

struct px_hash_entry {
    px_hash_entry_t *next;
    uint64_t hash;
    uint64_t key_u64;
    char *key_str; /* NULL for a uint64 key */
    void *value;
};

static void ht_construct(px_hash_table_t *ht)
{
    ht->buckets = NULL;
    ht->num_buckets = 0;
    ht->count = 0;
}

static void ht_destruct(px_hash_table_t *ht)
{
    px_hash_table_remove_all(ht);
    free(ht->buckets);
    ht->buckets = NULL;
    ht->num_buckets = 0;
}

PX_CLASS_INSTANCE(px_hash_table_t, px_object_t, ht_construct, ht_destruct);

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static int resize(px_hash_table_t *ht, size_t n)
{
    px_hash_entry_t **b = calloc(n, sizeof(*b));
    if (NULL == b)
        return PX_ERR_OUT_OF_RESOURCE;
    for (size_t i = 0; i < ht->num_buckets; i++) {
        px_hash_entry_t *e = ht->buckets[i];
        while (e) {
            px_hash_entry_t *next = e->next;
            size_t j = e->hash & (n - 1);
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(ht->buckets);
    ht->buckets = b;
    ht->num_buckets = n;
    return PX_SUCCESS;
}

int px_hash_table_init(px_hash_table_t *ht, size_t initial_size)
{
    size_t n = 8;
    while (n < initial_size && n < ((size_t)1 << 40))
        n *= 2;
    if (ht->num_buckets >= n)
        return PX_SUCCESS;
    return resize(ht, n);
}

size_t px_hash_table_get_size(const px_hash_table_t *ht)
{
    return ht->count;
}

void px_hash_table_remove_all(px_hash_table_t *ht)
{
    for (size_t i = 0; i < ht->num_buckets; i++) {
        px_hash_entry_t *e = ht->buckets[i];
        while (e) {
            px_hash_entry_t *next = e->next;
            free(e->key_str);
            free(e);
            e = next;
        }
        ht->buckets[i] = NULL;
    }
    ht->count = 0;
}

/* The link pointing at the entry with this key, or at the NULL ending its chain. */
static px_hash_entry_t **find(const px_hash_table_t *ht, uint64_t hash, const char *key_str,
                              uint64_t key_u64)
{
    px_hash_entry_t **link = &ht->buckets[hash & (ht->num_buckets - 1)];
    for (; *link; link = &(*link)->next) {
        px_hash_entry_t *e = *link;
        if (e->hash != hash)
            continue;
        if (key_str ? (e->key_str && 0 == strcmp(e->key_str, key_str))
                    : (NULL == e->key_str && e->key_u64 == key_u64))
            return link;
    }
    return link;
}

static int set_value(px_hash_table_t *ht, uint64_t hash, const char *key_str, uint64_t key_u64,
                     void *value)
{
    if (0 == ht->num_buckets) {
        int rc = resize(ht, 8);
        if (PX_SUCCESS != rc)
            return rc;
    }
    px_hash_entry_t **link = find(ht, hash, key_str, key_u64);
    if (*link) {
        (*link)->value = value;
        return PX_SUCCESS;
    }
    px_hash_entry_t *e = malloc(sizeof(*e));
    if (NULL == e)
        return PX_ERR_OUT_OF_RESOURCE;
    e->key_str = NULL;
    if (key_str && NULL == (e->key_str = strdup(key_str))) {
        free(e);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    e->hash = hash;
    e->key_u64 = key_u64;
    e->value = value;
    e->next = NULL;
    *link = e;
    ht->count++;
    if (ht->count > ht->num_buckets / 4 * 3)
        (void)resize(ht, ht->num_buckets * 2); /* on failure the table just stays denser */
    return PX_SUCCESS;
}

static int get_value(const px_hash_table_t *ht, uint64_t hash, const char *key_str,
                     uint64_t key_u64, void **value)
{
    if (0 == ht->num_buckets)
        return PX_ERR_NOT_FOUND;
    px_hash_entry_t *e = *find(ht, hash, key_str, key_u64);
    if (NULL == e)
        return PX_ERR_NOT_FOUND;
    if (value)
        *value = e->value;
    return PX_SUCCESS;
}

static int remove_value(px_hash_table_t *ht, uint64_t hash, const char *key_str, uint64_t key_u64)
{
    if (0 == ht->num_buckets)
        return PX_ERR_NOT_FOUND;
    px_hash_entry_t **link = find(ht, hash, key_str, key_u64);
    px_hash_entry_t *e = *link;
    if (NULL == e)
        return PX_ERR_NOT_FOUND;
    *link = e->next;
    free(e->key_str);
    free(e);
    ht->count--;
    return PX_SUCCESS;
}

int px_hash_table_set_value_uint64(px_hash_table_t *ht, uint64_t key, void *value)
{
    return set_value(ht, hash_u64(key), NULL, key, value);
}

int px_hash_table_get_value_uint64(const px_hash_table_t *ht, uint64_t key, void **value)
{
    return get_value(ht, hash_u64(key), NULL, key, value);
}

int px_hash_table_remove_value_uint64(px_hash_table_t *ht, uint64_t key)
{
    return remove_value(ht, hash_u64(key), NULL, key);
}

static int bad_str_key(const char *fn)
{
    px_show_error("%s: the key is NULL; pass a NUL-terminated string", fn);
    return PX_ERR_BAD_PARAM;
}

int px_hash_table_set_value_str(px_hash_table_t *ht, const char *key, void *value)
{
    if (NULL == key)
        return bad_str_key("px_hash_table_set_value_str");
    return set_value(ht, hash_str(key), key, 0, value);
}

int px_hash_table_get_value_str(const px_hash_table_t *ht, const char *key, void **value)
{
    if (NULL == key)
        return bad_str_key("px_hash_table_get_value_str");
    return get_value(ht, hash_str(key), key, 0, value);
}

int px_hash_table_remove_value_str(px_hash_table_t *ht, const char *key)
{
    if (NULL == key)
        return bad_str_key("px_hash_table_remove_value_str");
    return remove_value(ht, hash_str(key), key, 0);
}

bool px_hash_table_next(const px_hash_table_t *ht, px_hash_table_iter_t *it)
{
    px_hash_entry_t *e = it->entry ? it->entry->next : NULL;
    if (NULL == e) { /* first call, or the current chain is done: scan the buckets */
        size_t b = it->entry ? it->bucket + 1 : it->bucket;
        while (b < ht->num_buckets && NULL == (e = ht->buckets[b]))
            b++;
        it->bucket = b;
    }
    it->entry = e;
    if (NULL == e) {
        it->bucket = ht->num_buckets;
        return false;
    }
    it->key_str = e->key_str;
    it->key_u64 = e->key_u64;
    it->value = e->value;
    return true;
}
