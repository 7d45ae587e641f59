/*
 * etcd.h: registry/etcd, the registry component for etcd v3 through its
 * HTTP/JSON gateway (libcurl, json-c). Internal to the component:
 * etcd_component.c (variables, query) and etcd_module.c (the store's calls)
 * share it; etcd_wire.h reads etcd's answers. docs/registry.md "## etcd".
 */
#ifndef PX_REGISTRY_ETCD_H
#define PX_REGISTRY_ETCD_H

#include "frameworks/registry/registry.h"

/* Variables (registry_etcd_*). */
extern char *px_registry_etcd_endpoints; /* "http://host:port[,...]"; empty: not used */
extern int px_registry_etcd_priority;

extern const px_registry_component_t px_registry_etcd_component;

/* A module talking to the comma-separated `endpoints` (checked: each
 * http:// or https://host:port, without a path), with a lease granted
 * already, in *module; or an error printed saying what was wrong or which
 * endpoint did not answer and why. */
int px_registry_etcd_module_create(const char *endpoints, px_registry_module_t **module);

/* The lease this module holds (0: none), for tests. */
long long px_registry_etcd_module_lease(px_registry_module_t *m);

#endif
