/*
 * p2p.h: registry/p2p, the registry without a service (docs/registry.md,
 * "p2p"). A process keeps its own entries in memory and answers lookups of
 * them itself, on a small TCP listener of its own (a thread, so a lookup is
 * answered while the application computes); a name another process opens is
 * "host:port/name", the owner's listener address in front. Mooncake TENT's
 * P2PHANDSHAKE mode.
 *
 * Keys arrive from the base as "<namespace>/<name>". A name whose first part
 * is "a.b.c.d:port" is another process's: the module connects there, sends
 * the namespace and the rest of the name, and the owner answers from its
 * table after checking that the namespace is its own (p2p_wire.h).
 */
#ifndef PX_REGISTRY_P2P_H
#define PX_REGISTRY_P2P_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "core/class/hash_table.h"
#include "frameworks/registry/registry.h"
#include "components/registry/p2p/p2p_wire.h"

typedef struct px_registry_p2p_listener px_registry_p2p_listener_t;

/* The entry table, shared by the module's calls and the listener's thread. */
typedef struct {
    pthread_mutex_t lock;
    px_hash_table_t entries; /* full key "<ns>/<name>" -> px_registry_p2p_entry_t * */
} px_registry_p2p_table_t;

typedef struct {
    size_t len;
    uint8_t value[]; /* len bytes and a NUL */
} px_registry_p2p_entry_t;

typedef struct {
    px_registry_module_t super;
    px_registry_p2p_table_t table;
    bool table_ready;
    px_registry_p2p_listener_t *listener; /* started by the first put or qualify */
    char contact[32];                     /* "a.b.c.d:port" others reach it at */
    uint32_t contact_addr;                /* network order */
    int contact_port;
} px_registry_p2p_module_t;

/* Settings (variables registry_p2p_*). */
typedef struct {
    int priority;
    char *address;         /* bind address */
    int port;              /* 0: any */
    char *contact_address; /* empty: address */
    int max_clients;
    size_t list_max;
    int verbose;
} px_registry_p2p_vars_t;
extern px_registry_p2p_vars_t px_registry_p2p_vars;
extern const px_registry_component_t px_registry_p2p_component;
/* The component's output stream (registry_p2p_verbose). */
int px_registry_p2p_output(void);

/* ---- p2p_module.c ---- */
int px_registry_p2p_module_get(px_registry_module_t **module, char *why, size_t cap);
/* The table's value for a full key, copied (malloc'd with a NUL after it). */
int px_registry_p2p_table_get(px_registry_p2p_table_t *t, const char *key, size_t key_len,
                              void **value, size_t *len);
int px_registry_p2p_table_init(px_registry_p2p_table_t *t);
int px_registry_p2p_table_put(px_registry_p2p_table_t *t, const char *key, const void *value,
                              size_t len, int how);
void px_registry_p2p_table_fini(px_registry_p2p_table_t *t);

/* ---- p2p_listen.c ---- */
typedef struct {
    const char *address; /* numeric IPv4 to bind */
    int port;            /* 0: any */
    const char *ns;      /* this process's namespace (copied) */
    int max_clients;     /* connections served at once; the oldest is dropped for a new one */
    double timeout;      /* seconds a connection may take from accept to its answer sent */
    size_t list_max;     /* bytes of a LIST answer's body */
    int output;          /* stream for refusals (verbosity 1) */
} px_registry_p2p_listen_opts_t;

/* Bind and start the listener's thread; *port_out the port it listens on.
 * PX_ERR_NOT_AVAILABLE with why when it cannot bind. */
int px_registry_p2p_listen(px_registry_p2p_table_t *table, const px_registry_p2p_listen_opts_t *o,
                           px_registry_p2p_listener_t **l, int *port_out, char *why, size_t cap);
void px_registry_p2p_listen_stop(px_registry_p2p_listener_t *l);
/* Counters, for tests and logs. */
typedef struct {
    uint64_t accepted, answered, refused, dropped_deadline, dropped_evicted;
} px_registry_p2p_stats_t;
void px_registry_p2p_listen_stats(px_registry_p2p_listener_t *l, px_registry_p2p_stats_t *s);

/* The answer to a parsed request, as the listener sends it: header and body
 * in one malloc'd buffer (*out, *out_len). Reads the table under its lock. */
int px_registry_p2p_answer_build(px_registry_p2p_table_t *table, const char *own_ns,
                                 size_t list_max, const px_registry_p2p_request_t *req,
                                 uint8_t **out, size_t *out_len);

/* ---- p2p_client.c ---- */
/* Ask the owner at addr:port (contact "a.b.c.d:port", for messages) for op
 * on ns and key, within timeout seconds. PX_SUCCESS with the answer's header
 * in *a and its body in *body (malloc'd, one NUL after it); otherwise
 * PX_ERR_NOT_AVAILABLE (nobody listens, connection lost), PX_ERR_TIMEOUT,
 * PX_ERR_BAD_PARAM (a malformed answer), with why. */
int px_registry_p2p_ask(uint32_t addr, int port, const char *contact, int op, const char *ns,
                        size_t ns_len, const char *key, size_t key_len, double timeout,
                        size_t list_max, px_registry_p2p_answer_t *answer, uint8_t **body,
                        char *why, size_t cap);
/* Read an answer to op from a connected socket until deadline (monotonic
 * seconds): the part of px_registry_p2p_ask after the request is sent
 * (fuzz_registry_p2p_answer drives it over a socketpair). */
int px_registry_p2p_read_answer(int fd, const char *contact, int op, double deadline,
                                size_t list_max, px_registry_p2p_answer_t *answer, uint8_t **body,
                                char *why, size_t cap);
double px_registry_p2p_now(void);

#endif
