/*
 * progress.c: the table of progress callbacks (see progress.h).
 */
#include "core/util/progress.h"
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
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
    px_progress_idle_reset();
}

/* ---- idle policy ---- */

px_progress_idle_policy_t px_progress_policy = {
    .yield_when_idle = PX_PROGRESS_YIELD_AUTO,
    .idle_spins = 32,
    .idle_sleep_us = 0,
};
unsigned px_progress_idle_limit = 0;
unsigned px_progress_idle_calls = 0;
static unsigned long px_progress_idle_yields = 0;

bool px_progress_idle_setup(int local_ranks, long cores)
{
    const px_progress_idle_policy_t *p = &px_progress_policy;
    if (cores <= 0)
        cores = sysconf(_SC_NPROCESSORS_ONLN);
    bool yield = PX_PROGRESS_YIELD_ALWAYS == p->yield_when_idle ||
                 (PX_PROGRESS_YIELD_AUTO == p->yield_when_idle && cores > 0 && local_ranks > cores);
    px_progress_idle_calls = 0;
    px_progress_idle_yields = 0;
    px_progress_idle_limit = yield ? (unsigned)(p->idle_spins > 0 ? p->idle_spins : 1) : 0;
    return yield;
}

void px_progress_idle_reset(void)
{
    px_progress_idle_limit = 0;
    px_progress_idle_calls = 0;
}

void px_progress_idle(void)
{
    px_progress_idle_yields++;
    int us = px_progress_policy.idle_sleep_us;
    if (us > 0) {
        struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
}

unsigned long px_progress_idle_count(void)
{
    return px_progress_idle_yields;
}
