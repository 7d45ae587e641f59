/*
 * tcache.c: slot registry and per-thread cache lifetime for tcache.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include "core/class/tcache.h"

__thread px_tcache_t *px_tcache_tls[PX_TCACHE_SLOTS] __attribute__((tls_model("initial-exec")));

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static px_tcache_owner_t *owners[PX_TCACHE_SLOTS]; /* guarded by registry_lock */
static uint64_t owner_gen[PX_TCACHE_SLOTS];        /* owners[s]->gen, readable without it */
static uint64_t next_gen = 1;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* Empty a cache. Heap blocks (classes) are freed without touching the owner,
 * which may live in a plugin that has been unloaded; items (free lists) go
 * back to their owner if it is still the slot's owner, and are dropped if it
 * is gone (its chunks were freed with it). Caller holds registry_lock. */
static void drain_locked(uint32_t slot, px_tcache_t *c)
{
    if (c->kind == PX_TCACHE_KIND_MALLOC) {
        for (uint32_t i = 0; i < c->count; i++)
            free(c->items[i]);
    } else if (owners[slot] && owner_gen[slot] == c->gen && c->count) {
        owners[slot]->flush(owners[slot], c->items, c->count);
    }
    c->count = 0;
}

static void thread_exit(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&registry_lock);
    for (uint32_t s = 1; s < PX_TCACHE_SLOTS; s++) {
        px_tcache_t *c = px_tcache_tls[s];
        if (c) {
            drain_locked(s, c);
            free(c);
            px_tcache_tls[s] = NULL;
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

static void make_exit_key(void)
{
    pthread_key_create(&exit_key, thread_exit);
}

void px_tcache_owner_register(px_tcache_owner_t *owner)
{
    pthread_mutex_lock(&registry_lock);
    owner->slot = 0;
    owner->gen = next_gen++;
    for (uint32_t s = 1; s < PX_TCACHE_SLOTS; s++) {
        if (NULL == owners[s]) {
            owners[s] = owner;
            owner_gen[s] = owner->gen;
            owner->slot = s;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

void px_tcache_owner_unregister(px_tcache_owner_t *owner)
{
    if (0 == owner->slot)
        return;
    pthread_mutex_lock(&registry_lock);
    px_tcache_t *c = px_tcache_tls[owner->slot];
    if (c && c->gen == owner->gen)
        drain_locked(owner->slot, c);
    owners[owner->slot] = NULL;
    owner_gen[owner->slot] = 0;
    pthread_mutex_unlock(&registry_lock);
    owner->slot = 0;
}

px_tcache_t *px_tcache_bind(px_tcache_owner_t *owner)
{
    uint32_t slot = owner->slot;
    if (0 == slot)
        return NULL;
    px_tcache_t *c = px_tcache_tls[slot];
    if (c && c->gen == owner->gen)
        return c;
    if (NULL == c) {
        pthread_once(&exit_key_once, make_exit_key);
        c = calloc(1, sizeof(*c));
        if (NULL == c)
            return NULL;
        /* Any non-NULL value makes the key's destructor run at thread exit. */
        pthread_setspecific(exit_key, (void *)1);
        px_tcache_tls[slot] = c;
    } else {
        pthread_mutex_lock(&registry_lock);
        drain_locked(slot, c); /* stale: from an earlier owner of the slot */
        pthread_mutex_unlock(&registry_lock);
    }
    c->gen = owner->gen;
    c->kind = owner->kind;
    c->count = 0;
    return c;
}
