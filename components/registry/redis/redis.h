/*
 * redis.h: registry/redis, the registry on a redis server (or several, for
 * failover) through hiredis (docs/registry.md, "redis"). Internal to the
 * component: redis_component.c (variables, query) and redis_module.c (the
 * connection, failover and the store's operations) share it.
 */
#ifndef PX_REGISTRY_REDIS_H
#define PX_REGISTRY_REDIS_H

#include "frameworks/registry/registry.h"

/* Variables (registry_redis_*). */
extern char *px_registry_redis_endpoints;     /* "host:port[,host:port...]" */
extern char *px_registry_redis_password_file; /* a 0600 file holding the password */
extern char *px_registry_redis_user;          /* ACL user (redis 6+), "" for AUTH <password> */
extern int px_registry_redis_db;              /* SELECT <db> */
extern int px_registry_redis_priority;        /* priority when endpoints are set */

/* The endpoints as given (parsed by px_registry_redis_parse_endpoints). */
typedef struct px_registry_redis_endpoint {
    char host[256];
    int port;
    char label[272]; /* "host:port", for messages */
} px_registry_redis_endpoint_t;

/* Parse "host:port[,host:port...]" ("[v6addr]:port" for IPv6; the port may
 * be left out: 6379). PX_SUCCESS with a malloc'ed array in *eps, or
 * PX_ERR_BAD_PARAM with why[] saying which item is wrong and what is
 * accepted. */
int px_registry_redis_parse_endpoints(const char *text, px_registry_redis_endpoint_t **eps, int *n,
                                      char *why, size_t why_len);

/* Read the password from `file` (owned by this user, mode 0600 or
 * stricter, one line; the final newline is dropped) into a malloc'ed string. */
int px_registry_redis_read_password(const char *file, char **password, char *why, size_t why_len);

/* A module on these endpoints (takes eps and password), connected to the
 * first one that answers within px_registry_base_timeout(); NULL with
 * why[] naming each endpoint and what went wrong when none answers. */
px_registry_module_t *px_registry_redis_module_create(px_registry_redis_endpoint_t *eps, int n,
                                                      char *password, int *rc, char *why,
                                                      size_t why_len);

#endif
