/*
 * pointer_array.c: px_pointer_array_t, an index table reusing freed slots.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "core/class/pointer_array.h"
#include "core/util/error.h"
#include "core/util/output.h"

static void pa_construct(px_pointer_array_t *pa)
{
    pthread_mutex_init(&pa->lock, NULL);
    pa->lowest_free = 0;
    pa->number_free = 0;
    pa->size = 0;
    pa->max_size = INT_MAX;
    pa->block_size = 16;
    pa->addr = NULL;
}

static void pa_destruct(px_pointer_array_t *pa)
{
    free(pa->addr);
    pa->addr = NULL;
    pa->size = pa->number_free = pa->lowest_free = 0;
    pthread_mutex_destroy(&pa->lock);
}

PX_CLASS_INSTANCE(px_pointer_array_t, px_object_t, pa_construct, pa_destruct);

/* Grow to hold at least `min_size` slots (caller holds the lock). */
static int grow(px_pointer_array_t *pa, int min_size)
{
    if (min_size <= pa->size)
        return PX_SUCCESS;
    if (min_size > pa->max_size)
        return PX_ERR_OUT_OF_RESOURCE;
    long n = (long)pa->size + pa->block_size;
    if (n < min_size)
        n = min_size;
    if (n > pa->max_size)
        n = pa->max_size;
    void **p = realloc(pa->addr, (size_t)n * sizeof(void *));
    if (NULL == p)
        return PX_ERR_OUT_OF_RESOURCE;
    memset(p + pa->size, 0, (size_t)(n - pa->size) * sizeof(void *));
    pa->number_free += (int)n - pa->size;
    pa->addr = p;
    pa->size = (int)n;
    return PX_SUCCESS;
}

/* Advance lowest_free past used slots (caller holds the lock). */
static void find_lowest_free(px_pointer_array_t *pa, int from)
{
    int i = from;
    while (i < pa->size && NULL != pa->addr[i])
        i++;
    pa->lowest_free = i;
}

int px_pointer_array_init(px_pointer_array_t *pa, int initial_size, int max_size, int block_size)
{
    if (max_size == 0)
        max_size = INT_MAX;
    if (block_size == 0)
        block_size = 16;
    if (initial_size < 0 || max_size < 0 || block_size < 0 || initial_size > max_size) {
        px_show_error("px_pointer_array_init: initial_size %d, max_size %d, block_size %d: "
                      "sizes must be >= 0 and initial_size <= max_size",
                      initial_size, max_size, block_size);
        return PX_ERR_BAD_PARAM;
    }
    pthread_mutex_lock(&pa->lock);
    pa->max_size = max_size;
    pa->block_size = block_size;
    int rc = grow(pa, initial_size);
    pthread_mutex_unlock(&pa->lock);
    return rc;
}

int px_pointer_array_add(px_pointer_array_t *pa, void *ptr)
{
    if (NULL == ptr) {
        px_show_error("px_pointer_array_add: cannot store NULL (NULL marks a free slot)");
        return PX_ERR_BAD_PARAM;
    }
    pthread_mutex_lock(&pa->lock);
    if (0 == pa->number_free) {
        int rc = grow(pa, pa->size + 1);
        if (PX_SUCCESS != rc) {
            pthread_mutex_unlock(&pa->lock);
            return rc;
        }
    }
    int index = pa->lowest_free;
    pa->addr[index] = ptr;
    pa->number_free--;
    find_lowest_free(pa, index + 1);
    pthread_mutex_unlock(&pa->lock);
    return index;
}

int px_pointer_array_set_item(px_pointer_array_t *pa, int index, void *ptr)
{
    pthread_mutex_lock(&pa->lock);
    if (index < 0 || index >= pa->max_size) {
        int max = pa->max_size;
        pthread_mutex_unlock(&pa->lock);
        px_show_error("px_pointer_array_set_item: index %d is out of range (accepted: 0..%d)",
                      index, max - 1);
        return PX_ERR_BAD_PARAM;
    }
    int rc = grow(pa, index + 1);
    if (PX_SUCCESS != rc) {
        pthread_mutex_unlock(&pa->lock);
        return rc;
    }
    void *old = pa->addr[index];
    pa->addr[index] = ptr;
    if (NULL == old && NULL != ptr) {
        pa->number_free--;
        if (index == pa->lowest_free)
            find_lowest_free(pa, index + 1);
    } else if (NULL != old && NULL == ptr) {
        pa->number_free++;
        if (index < pa->lowest_free)
            pa->lowest_free = index;
    }
    pthread_mutex_unlock(&pa->lock);
    return PX_SUCCESS;
}

void *px_pointer_array_get_item(px_pointer_array_t *pa, int index)
{
    void *p = NULL;
    pthread_mutex_lock(&pa->lock);
    if (index >= 0 && index < pa->size)
        p = pa->addr[index];
    pthread_mutex_unlock(&pa->lock);
    return p;
}

int px_pointer_array_remove(px_pointer_array_t *pa, int index)
{
    pthread_mutex_lock(&pa->lock);
    if (index < 0 || index >= pa->size) {
        int size = pa->size;
        pthread_mutex_unlock(&pa->lock);
        px_show_error("px_pointer_array_remove: index %d is outside the table (size %d)", index,
                      size);
        return PX_ERR_BAD_PARAM;
    }
    if (NULL == pa->addr[index]) {
        pthread_mutex_unlock(&pa->lock);
        return PX_ERR_NOT_FOUND;
    }
    pa->addr[index] = NULL;
    pa->number_free++;
    if (index < pa->lowest_free)
        pa->lowest_free = index;
    pthread_mutex_unlock(&pa->lock);
    return PX_SUCCESS;
}

int px_pointer_array_get_size(px_pointer_array_t *pa)
{
    pthread_mutex_lock(&pa->lock);
    int n = pa->size;
    pthread_mutex_unlock(&pa->lock);
    return n;
}

int px_pointer_array_get_count(px_pointer_array_t *pa)
{
    pthread_mutex_lock(&pa->lock);
    int n = pa->size - pa->number_free;
    pthread_mutex_unlock(&pa->lock);
    return n;
}
