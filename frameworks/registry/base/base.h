/*
 * base.h: the registry base's own calls, for the names layer
 * (runtime/name) and the in-tree tools; not installed. Every call on the
 * module goes through these wrappers, which hold the base's one lock (so a
 * module is called by one thread at a time: the application's or the
 * heartbeat thread) and refuse keys and values larger than the limits of
 * registry.h before the module sees them.
 */
#ifndef PX_REGISTRY_BASE_H
#define PX_REGISTRY_BASE_H

#include <stddef.h>
#include "frameworks/registry/registry.h"

/* The selected module (NULL before px_registry_base_select succeeded). */
px_registry_module_t *px_registry_base_module(void);
/* Seconds an opened name's description is trusted (registry_cache_ttl) and
 * between two looks of px_name_watch (registry_watch_interval). */
double px_registry_base_cache_ttl(void);
double px_registry_base_watch_interval(void);

/* "<namespace>/<name>" into key[0..cap): PX_ERR_BAD_PARAM (with a message)
 * when it would be longer than PX_REGISTRY_KEY_MAX. */
int px_registry_base_key(const char *name, char *key, size_t cap);

/* The module's calls under the base's lock (see registry.h). */
int px_registry_base_put(const char *key, const void *value, size_t len, int how);
int px_registry_base_get(const char *key, void **value, size_t *len);
int px_registry_base_del(const char *key, const void *value, size_t len);
int px_registry_base_list(const char *prefix, px_registry_list_fn_t fn, void *arg);
int px_registry_base_beat(void);
int px_registry_base_qualify(const char *name, char *buf, size_t cap);

/* The lock itself, for a caller that makes several calls in a row. It is
 * recursive: the wrappers above may be called with it held. */
void px_registry_base_lock(void);
void px_registry_base_unlock(void);

#endif
