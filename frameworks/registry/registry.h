/*
 * registry.h: the registry framework, a key-value store that processes which
 * were not launched together use to find each other by name (docs/registry.md).
 * One module is selected per process (by priority, or by the user with
 * PX_MCA_registry=<name>): p2p (no service: the owner answers), redis, etcd,
 * pmix (the launcher's publish/lookup), or a third party's plugin.
 *
 * A module only stores bytes under keys. What the bytes mean (an entry: a
 * region's key, a contact, a version), the tenant prefix, leases renewed by a
 * heartbeat thread and refilling a store that restarted empty all live in the
 * base (frameworks/registry/base) and the names API above it
 * (runtime/plexus_name.h). The base calls a module from one thread at a time
 * (it holds a lock around every call), so a module needs no lock of its own,
 * but it may be called from the base's heartbeat thread as well as from the
 * application's threads.
 *
 * Every call returns within px_registry_base_timeout() seconds: a store that
 * is down or slow gives PX_ERR_NOT_AVAILABLE or PX_ERR_TIMEOUT, with a
 * message (px_show_error or px_output) naming the store, the endpoint and
 * what happened. A module that was given several endpoints fails over to the
 * next on such an error and says so once.
 *
 * Who calls what: the base calls the module's functions; components call the
 * px_registry_base_* accessors for the settings every store shares.
 */
#ifndef PX_REGISTRY_H
#define PX_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"
#include "core/mca/component.h"

#define PX_REGISTRY_API_MAJOR   1
#define PX_REGISTRY_API_MINOR   0
#define PX_REGISTRY_API_RELEASE 0

/* Largest key (bytes, with the namespace prefix, no NUL) and value a module
 * must accept; the base refuses larger ones before calling the module, and a
 * module refuses (PX_ERR_BAD_PARAM) larger ones that a store returns. */
#define PX_REGISTRY_KEY_MAX   512
#define PX_REGISTRY_VALUE_MAX (64 * 1024)

/* put's `how`. */
enum {
    /* Store the value whatever is there. */
    PX_REGISTRY_PUT_ANY = 0,
    /* Store it only when the key is absent or already holds exactly these
     * bytes (then the lease is renewed); else PX_ERR_EXISTS and nothing
     * changes. Atomic in the store where it can be (redis: a script or
     * SET NX; etcd: a transaction). The base publishes and renews with it, so
     * a heartbeat never overwrites a name another process took. */
    PX_REGISTRY_PUT_CREATE = 1,
};

/* list's callback: one key (full, with the namespace prefix) and its value,
 * valid during the call. Return PX_SUCCESS to go on, anything else to stop
 * the listing (list then returns that code). */
typedef int (*px_registry_list_fn_t)(const char *key, const void *value, size_t len, void *arg);

typedef struct px_registry_module px_registry_module_t;
struct px_registry_module {
    const char *name; /* the component's name, for messages */
    /* Store `len` bytes under `key` with this process's lease (entries of a
     * process that stops renewing vanish px_registry_base_lease() seconds
     * after its last put or heartbeat; a store without leases says how it
     * ends entries in its docs). */
    int (*put)(px_registry_module_t *m, const char *key, const void *value, size_t len, int how);
    /* The value under `key`, in *value (malloc'd, the caller frees; one NUL
     * byte after the *len bytes). PX_ERR_NOT_FOUND when absent. */
    int (*get)(px_registry_module_t *m, const char *key, void **value, size_t *len);
    /* Remove `key` when it holds exactly `value` (so a process removes only
     * its own entry); PX_ERR_NOT_FOUND when absent, PX_ERR_EXISTS when it
     * holds other bytes. value NULL: remove whatever is there. */
    int (*del)(px_registry_module_t *m, const char *key, const void *value, size_t len);
    /* Every key that starts with `prefix` (and its value), in any order. */
    int (*list)(px_registry_module_t *m, const char *prefix, px_registry_list_fn_t fn, void *arg);
    /* Optional (NULL: nothing to do). Called by the base once per heartbeat
     * (px_registry_base_heartbeat() seconds), before it renews every entry of
     * this process with put(PX_REGISTRY_PUT_CREATE): renew the process's
     * lease (etcd's keepalive), reconnect, or grant a new lease when the
     * store lost the old one (a store restarted empty). */
    int (*heartbeat)(px_registry_module_t *m);
    /* Optional (NULL: names are used as given). The name other processes
     * pass to open what this process publishes as `name` (p2p:
     * "host:port/name", the owner's own address), into buf[0..cap). */
    int (*qualify)(px_registry_module_t *m, const char *name, char *buf, size_t cap);
    /* Disconnect and free the module. Entries this process put are not
     * removed here (the base unpublishes them first). */
    void (*close)(px_registry_module_t *m);
};

/* A registry component: query says whether it can serve this process
 * (its store is configured and reachable within the timeout) and with what
 * priority (higher wins; negative or an error declines, with a reason the
 * base prints when no component is left). The module belongs to the
 * component until close. */
typedef struct px_registry_component {
    px_mca_component_t base;
    int (*query)(int *priority, px_registry_module_t **module);
} px_registry_component_t;

/* Fill a registry component's px_mca_component_t header (.base) with this
 * framework's API version and its sizes in the build fingerprint (the base
 * refuses a plugin built with other sizes of these structs):
 *   const px_registry_component_t px_registry_mine_component = {
 *       .base = PX_REGISTRY_COMPONENT_HEADER("mine", 1, 0, 0, reg, NULL, NULL),
 *       .query = mine_query};
 */
#define PX_REGISTRY_COMPONENT_HEADER(name, maj, min, rel, reg, opn, cls)                           \
    PX_MCA_COMPONENT_HEADER_FP("registry", PX_REGISTRY_API_MAJOR, PX_REGISTRY_API_MINOR,           \
                               PX_REGISTRY_API_RELEASE, (name), (maj), (min), (rel), (reg), (opn), \
                               (cls), sizeof(px_registry_component_t),                             \
                               sizeof(px_registry_module_t), 0, 0)

/* ---- frameworks/registry/base: settings every store shares ---- */

/* Namespace (tenant) prefix every key starts with ("plexus" by default,
 * variable registry_namespace); keys are "<namespace>/<name>". */
PX_EXPORT const char *px_registry_base_namespace(void);
/* Seconds an entry outlives its owner's last renewal (registry_lease). */
PX_EXPORT double px_registry_base_lease(void);
/* Seconds between renewals (registry_heartbeat, below the lease). */
PX_EXPORT double px_registry_base_heartbeat(void);
/* Bound, in seconds, on every call to a store (registry_timeout). */
PX_EXPORT double px_registry_base_timeout(void);

/* Open the framework and select the module (first use of a px_name_*
 * call, or px_info); the selected module, or NULL with an error printed
 * naming each component and why it declined. */
PX_EXPORT int px_registry_base_select(px_registry_module_t **module);
PX_EXPORT int px_registry_base_close(void);
/* The framework object (for px_info and tools). Exported as a function, not
 * as data: exported variables are frozen (docs/abi.md, "No new exported
 * data"); the object itself is the library's own. */
PX_EXPORT struct px_mca_framework *px_registry_base_framework_get(void);
extern struct px_mca_framework px_registry_base_framework;

#endif
