/*
 * progress.c: the table of progress callbacks (see progress.h).
 */
#include "core/util/progress.h"
#include <stdlib.h>
#include "core/util/error.h"

px_progress_entry_t *px_progress_entries = NULL;
int px_progress_nentries = 0;
static int px_progress_capacity = 0;

int px_progress_register(px_progress_fn fn, void *ctx)
{
    if (NULL == fn)
        return PX_ERR_BAD_PARAM;
    for (int i = 0; i < px_progress_nentries; ++i)
        if (px_progress_entries[i].fn == fn && px_progress_entries[i].ctx == ctx)
            return PX_ERR_EXISTS;
    if (px_progress_nentries == px_progress_capacity) {
        int cap = px_progress_capacity ? 2 * px_progress_capacity : 8;
        px_progress_entry_t *n = realloc(px_progress_entries, cap * sizeof(*n));
        if (NULL == n)
            return PX_ERR_OUT_OF_RESOURCE;
        px_progress_entries = n;
        px_progress_capacity = cap;
    }
    px_progress_entries[px_progress_nentries].fn = fn;
    px_progress_entries[px_progress_nentries].ctx = ctx;
    px_progress_nentries++;
    return PX_SUCCESS;
}

int px_progress_unregister(px_progress_fn fn, void *ctx)
{
    for (int i = 0; i < px_progress_nentries; ++i) {
        if (px_progress_entries[i].fn == fn && px_progress_entries[i].ctx == ctx) {
            for (int j = i + 1; j < px_progress_nentries; ++j)
                px_progress_entries[j - 1] = px_progress_entries[j];
            px_progress_nentries--;
            return PX_SUCCESS;
        }
    }
    return PX_ERR_NOT_FOUND;
}

int px_progress_count(void)
{
    return px_progress_nentries;
}

void px_progress_finalize(void)
{
    free(px_progress_entries);
    px_progress_entries = NULL;
    px_progress_nentries = 0;
    px_progress_capacity = 0;
}
