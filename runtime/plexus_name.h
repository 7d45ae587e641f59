/*
 * plexus_name.h: named segments and contacts. A process publishes a region
 * of its memory (or its contact) under a name in a registry; any other
 * process, started separately, opens the name and reads or writes the region
 * with the transfer engine (plexus_xfer.h). The connection to the owner is
 * made on demand (px_connect, plexus.h). For applications; docs/registry.md
 * explains the stores (p2p, redis, etcd, pmix: the registry framework),
 * leases, tenants and failover.
 *
 *   // owner (a "prefill" writer)
 *   px_xfer_region_t *r; px_xfer_alloc(1 << 20, &r);
 *   px_name_publish("kv/block-7", r);       // lives while this process does
 *   ... keep calling Plexus (px_progress, a wait): peers connect through it
 *   // reader, another process
 *   px_name_t *h; px_name_open("kv/block-7", &h);   // registry + connect + import
 *   px_xfer_read(mine, 0, px_name_remote(h), 0, 4096);
 *   px_name_close(&h);
 *
 * Names are strings of 1-200 bytes from [A-Za-z0-9._:/-], not starting or
 * ending with '/', without "//". Every name lives under the namespace
 * (tenant) prefix of the variable registry_namespace; two processes see each
 * other's names only with the same namespace. Under registry p2p a name
 * others open is "host:port/name" (px_name_qualify says which).
 *
 * Entries are renewed by a heartbeat thread of the library: a process that
 * ends without unpublishing (it crashed) loses its names registry_lease
 * seconds later; a store that restarted empty is filled again by the live
 * processes within one heartbeat. The owner's memory is read and written by
 * the transports; its connections are accepted by its own progress (any
 * Plexus call that waits or polls), as with px_accept.
 *
 * Every call returns PX_SUCCESS or a negative code (px_strerror) and prints
 * what went wrong: the name, the store and endpoint, and what would be
 * accepted. A missing name is PX_ERR_NOT_FOUND; a store that is down or does
 * not answer within registry_timeout seconds PX_ERR_NOT_AVAILABLE or
 * PX_ERR_TIMEOUT; an entry that is not Plexus's (malformed, oversized,
 * written by someone else) PX_ERR_BAD_PARAM. All need px_init; they follow
 * the messaging API's thread rule (one thread at a time).
 */
#ifndef PLEXUS_NAME_H
#define PLEXUS_NAME_H

#include <stddef.h>
#include "plexus_types.h"
#include "plexus_xfer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A name this process opened. */
typedef struct px_name px_name_t;

/* Longest name (bytes, without the namespace prefix or the p2p address). */
#define PX_NAME_MAX 200

/* What a name stands for. */
enum { PX_NAME_REGION = 1, PX_NAME_CONTACT = 2 };

/* ---- publishing (the owner) ---- */

/* Publish `region` (px_xfer_alloc'd or px_xfer_register'ed) under `name`.
 * The entry carries this process's contact (px_contact is opened if it was
 * not), the region's key and length. PX_ERR_EXISTS (naming the holder's host
 * and pid) when another live process holds the name; publishing the same
 * name again from this process replaces its entry (a moved segment: openers
 * see the new one at their next refresh). */
PX_EXPORT int px_name_publish(const char *name, px_xfer_region_t *region);
/* Publish this process's contact under `name` (px_name_connect's target). */
PX_EXPORT int px_name_publish_contact(const char *name);
/* Remove this process's entry `name` (PX_ERR_NOT_FOUND when it published no
 * such name). px_xfer_free of a published region and px_finalize unpublish
 * too. */
PX_EXPORT int px_name_unpublish(const char *name);
/* The name other processes open for this process's `name` into buf[0..cap):
 * the same string for a central store, "host:port/name" under p2p. */
PX_EXPORT int px_name_qualify(const char *name, char *buf, size_t cap);

/* ---- opening (anyone) ---- */

/* Look `name` up, connect to its owner (unless already connected) and import
 * its region. The description is cached: opening a name again, or a
 * request on it, reads the registry again only once the cache is older than
 * registry_cache_ttl seconds or after a request on it failed. */
PX_EXPORT int px_name_open(const char *name, px_name_t **name_handle);
/* PX_NAME_REGION or PX_NAME_CONTACT. */
PX_EXPORT int px_name_kind(const px_name_t *name_handle);
/* The imported region (NULL for a contact), valid until px_name_close or a
 * px_name_refresh that found the name moved. */
PX_EXPORT px_xfer_remote_t *px_name_remote(const px_name_t *name_handle);
/* The owner's peer id (px_connect's), or this process's rank when it owns
 * the name itself. The connection is the names layer's: usable while the
 * owner lives (docs/registry.md, "Connections to owners"). */
PX_EXPORT int px_name_peer(const px_name_t *name_handle);
/* Read the entry again: PX_SUCCESS when unchanged; 1 when it moved (a new
 * owner or region: the handle now points at it and px_name_remote returns the
 * new remote); PX_ERR_NOT_FOUND when the name is gone (its owner
 * unpublished, ended or its lease expired). */
PX_EXPORT int px_name_refresh(px_name_t *name_handle);
/* Wait up to `timeout` seconds (0: just look; < 0: no bound) until the name
 * moves (returns 1) or goes away (PX_ERR_NOT_FOUND); PX_ERR_TIMEOUT when
 * neither happened. Polls the registry every registry_watch_interval
 * seconds and progresses Plexus meanwhile. */
PX_EXPORT int px_name_watch(px_name_t *name_handle, double timeout);
/* Release the handle (and its imported region); *name_handle becomes NULL.
 * The connection to the owner stays for other names of the same owner while
 * it is live; once the owner left or died (or this process failed it), the
 * last handle's close releases it (px_disconnect). */
PX_EXPORT int px_name_close(px_name_t **name_handle);
/* Open a name published with px_name_publish_contact (or a region's name)
 * and return its owner's peer id, connecting on demand. The peer belongs to
 * the names layer as px_name_peer's does: released by it once the owner is
 * gone (at a later px_name_* call), or by the application's px_disconnect. */
PX_EXPORT int px_name_connect(const char *name, int *peer);

/* ---- listing ---- */

/* One listed name: valid during the callback. */
typedef struct px_name_info {
    const char *name; /* without the namespace prefix */
    int kind;         /* PX_NAME_REGION or PX_NAME_CONTACT; 0: not a Plexus entry */
    size_t length;    /* the region's length (0 for a contact) */
    const char *host; /* the owner's host and pid */
    long pid;
    int version;       /* the entry format's version */
    const char *error; /* NULL, or why the entry could not be read */
} px_name_info_t;
typedef int (*px_name_list_fn_t)(const px_name_info_t *info, void *arg);
/* Call fn for every name that starts with `prefix` ("" for all), malformed
 * entries included (with info->error set); stops when fn returns non-zero
 * and returns that. */
PX_EXPORT int px_name_list(const char *prefix, px_name_list_fn_t fn, void *arg);
/* The selected registry component's name ("p2p", "redis", ...), selecting it
 * if needed; NULL when none could be selected. */
PX_EXPORT const char *px_name_registry(void);

#ifdef __cplusplus
}
#endif

#endif
