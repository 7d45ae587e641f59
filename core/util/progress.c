/*
 * progress.c: the table of progress callbacks (see progress.h).
 */
#define _GNU_SOURCE
#include "core/util/progress.h"
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "core/util/error.h"
#include "core/util/progress_internal.h"

px_progress_entry_t *px_progress_entries = NULL;
int px_progress_nentries = 0;
static int px_progress_capacity = 0;
static px_progress_waiter_t *px_progress_waiters = NULL;
static int px_progress_nwaiters = 0;

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
    free(px_progress_waiters); /* their owners removed them; nothing may be left */
    px_progress_waiters = NULL;
    px_progress_nwaiters = 0;
    px_progress_idle_reset();
}

/* ---- idle policy ---- */

static px_progress_idle_policy_t px_progress_policy = {
    .yield_when_idle = PX_PROGRESS_YIELD_AUTO,
    .idle_spins = 32,
    .idle_sleep_us = 0,
    .idle_wait_ms = 100,
};

px_progress_idle_policy_t *px_progress_policy_storage(void)
{
    return &px_progress_policy;
}

int px_progress_policy_get(px_progress_idle_policy_t *out, size_t size)
{
    if (NULL == out)
        return PX_ERR_BAD_PARAM;
    memcpy(out, &px_progress_policy, size < sizeof(*out) ? size : sizeof(*out));
    return PX_SUCCESS;
}

int px_progress_policy_set(const px_progress_idle_policy_t *p, size_t size)
{
    if (NULL == p)
        return PX_ERR_BAD_PARAM;
    memcpy(&px_progress_policy, p, size < sizeof(*p) ? size : sizeof(*p));
    return PX_SUCCESS;
}

#if PX_HAVE_SYMVER
/* ABI compatibility (docs/abi.md). Programs and plugins built against 0.1
 * read the exported variable px_progress_policy, four ints. It is still
 * exported with that size, as px_progress_policy@PLEXUS_0.1 only (a new
 * program cannot link to it), and the policy is published into it by
 * px_progress_idle_setup. A program that reads it (position-independent or
 * not) holds its own copy of it, sized by the program's headers (a copy
 * relocation), which the library finds through the dynamic linker; neither
 * is ever written past these 16 bytes, whatever the policy grows to. Writes
 * to it are ignored. */
typedef struct px_progress_policy_0_1 {
    int yield_when_idle, idle_spins, idle_sleep_us, idle_wait_ms;
} px_progress_policy_0_1_t;
PX_EXPORT px_progress_policy_0_1_t px_compat_progress_policy_0_1 = {PX_PROGRESS_YIELD_AUTO, 32, 0,
                                                                    100};
__asm__(".symver px_compat_progress_policy_0_1, px_progress_policy@PLEXUS_0.1");

static void px_progress_policy_publish(void)
{
    const px_progress_idle_policy_t *p = &px_progress_policy;
    px_progress_policy_0_1_t v = {p->yield_when_idle, p->idle_spins, p->idle_sleep_us,
                                  p->idle_wait_ms};
    px_compat_progress_policy_0_1 = v;
    /* An unversioned lookup finds a program's copy (it comes first in the
     * global scope) and nothing else: the library's own definition is a
     * non-default version, which dlsym does not return. */
    void *copy = dlsym(RTLD_DEFAULT, "px_progress_policy");
    if (copy && copy != (void *)&px_compat_progress_policy_0_1)
        memcpy(copy, &v, sizeof(v));
}
#else
static void px_progress_policy_publish(void) {}
#endif
unsigned px_progress_idle_limit = 0;
unsigned px_progress_idle_calls = 0;
static unsigned long px_progress_idle_yields = 0;
static unsigned long px_progress_blocks = 0;
static bool px_progress_yield_on = false; /* the policy yields (setup) */

/* Idle calls are counted when the policy yields or a waiter may block. */
static void px_progress_update_limit(void)
{
    const px_progress_idle_policy_t *p = &px_progress_policy;
    bool on = px_progress_yield_on ||
              (px_progress_nwaiters > 0 && PX_PROGRESS_YIELD_NEVER != p->yield_when_idle);
    px_progress_idle_limit = on ? (unsigned)(p->idle_spins > 0 ? p->idle_spins : 1) : 0;
}

bool px_progress_idle_setup(int local_ranks, long cores)
{
    px_progress_idle_calls = 0;
    px_progress_idle_yields = 0;
    px_progress_blocks = 0;
    return px_progress_idle_local(local_ranks, cores);
}

bool px_progress_idle_local(int local_ranks, long cores)
{
    const px_progress_idle_policy_t *p = &px_progress_policy;
    if (cores <= 0)
        cores = sysconf(_SC_NPROCESSORS_ONLN);
    bool yield = PX_PROGRESS_YIELD_ALWAYS == p->yield_when_idle ||
                 (PX_PROGRESS_YIELD_AUTO == p->yield_when_idle && cores > 0 && local_ranks > cores);
    px_progress_yield_on = yield;
    px_progress_update_limit();
    px_progress_policy_publish();
    return yield;
}

void px_progress_idle_reset(void)
{
    px_progress_yield_on = false;
    px_progress_idle_limit = 0;
    px_progress_idle_calls = 0;
}

int px_progress_waiter_register(const px_progress_waiter_t *w)
{
    if (NULL == w || w->fd < 0 || NULL == w->arm || NULL == w->drain)
        return PX_ERR_BAD_PARAM;
    for (int i = 0; i < px_progress_nwaiters; ++i)
        if (px_progress_waiters[i].ctx == w->ctx)
            return PX_ERR_EXISTS;
    px_progress_waiter_t *n =
        realloc(px_progress_waiters, (size_t)(px_progress_nwaiters + 1) * sizeof(*n));
    if (NULL == n)
        return PX_ERR_OUT_OF_RESOURCE;
    px_progress_waiters = n;
    px_progress_waiters[px_progress_nwaiters++] = *w;
    px_progress_update_limit();
    return PX_SUCCESS;
}

int px_progress_waiter_unregister(void *ctx)
{
    for (int i = 0; i < px_progress_nwaiters; ++i) {
        if (px_progress_waiters[i].ctx != ctx)
            continue;
        for (int j = i + 1; j < px_progress_nwaiters; ++j)
            px_progress_waiters[j - 1] = px_progress_waiters[j];
        if (0 == --px_progress_nwaiters) {
            free(px_progress_waiters);
            px_progress_waiters = NULL;
        }
        px_progress_update_limit();
        return PX_SUCCESS;
    }
    return PX_ERR_NOT_FOUND;
}

bool px_progress_can_block(void)
{
    if (0 == px_progress_nwaiters || PX_PROGRESS_YIELD_NEVER == px_progress_policy.yield_when_idle)
        return false;
    /* Every callback must be one a waiter wakes for: a callback that only
     * polling notices (shm's rings) would wait for the timeout. */
    for (int i = 0; i < px_progress_nentries; ++i) {
        bool covered = false;
        for (int j = 0; j < px_progress_nwaiters && !covered; ++j)
            covered = px_progress_waiters[j].ctx == px_progress_entries[i].ctx;
        if (!covered)
            return false;
    }
    return true;
}

/* Arm every waiter and sleep in poll() until one has work (or the
 * timeout); the next engine call handles it. */
static void px_progress_block(void)
{
    int n = px_progress_nwaiters;
    struct pollfd stack[8], *pfd = n <= 8 ? stack : malloc((size_t)n * sizeof(*pfd));
    if (NULL == pfd)
        return;
    int found = 0;
    for (int i = 0; i < n && 0 == found; ++i) {
        px_progress_waiter_t *w = &px_progress_waiters[i];
        found = w->arm(w->ctx);
        pfd[i] = (struct pollfd){.fd = w->fd, .events = POLLIN};
    }
    /* An arm handled work (whose callbacks may have added or removed
     * waiters): poll again instead of sleeping. */
    if (0 == found && n == px_progress_nwaiters) {
        px_progress_blocks++;
        int ms = px_progress_policy.idle_wait_ms > 0 ? px_progress_policy.idle_wait_ms : 1;
        int r;
        do
            r = poll(pfd, (nfds_t)n, ms);
        while (r < 0 && EINTR == errno);
        for (int i = 0; r > 0 && i < n && i < px_progress_nwaiters; ++i)
            if (pfd[i].revents & (POLLIN | POLLERR | POLLHUP))
                px_progress_waiters[i].drain(px_progress_waiters[i].ctx);
    }
    if (pfd != stack)
        free(pfd);
}

void px_progress_idle(void)
{
    if (px_progress_can_block()) {
        px_progress_idle_yields++;
        px_progress_block();
        return;
    }
    if (!px_progress_yield_on)
        return; /* counting only for waiters that cannot block now */
    px_progress_idle_yields++;
    px_progress_give_core();
}

void px_progress_give_core(void)
{
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

unsigned long px_progress_block_count(void)
{
    return px_progress_blocks;
}
