/*
 * px_names: the names in a registry (docs/px_names.md), like
 * `etcdctl get --prefix`: list them, show one entry decoded (or its raw
 * bytes and why it is not a Plexus entry), remove one (operator cleanup).
 * The registry is the one PX_MCA_* variables select, as for any Plexus
 * process (PX_MCA_registry, PX_MCA_registry_namespace, the component's
 * endpoints variable).
 */
#include "config.h"
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frameworks/registry/registry.h"
#include "runtime/plexus.h"
#include "runtime/plexus_name.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: px_names list [PREFIX]   every name (starting with PREFIX), one a line\n"
                 "       px_names get NAME        one entry, decoded (or its raw bytes and why it\n"
                 "                                is not a Plexus entry)\n"
                 "       px_names del NAME        remove NAME whoever owns it (operator cleanup)\n"
                 "The registry is chosen by the PX_MCA_* variables, as for any Plexus process:\n"
                 "PX_MCA_registry (component), PX_MCA_registry_namespace (tenant prefix, default\n"
                 "\"plexus\"), and the component's own variables (its endpoints). Exit status:\n"
                 "0 done, 1 a name not found or the registry not usable, 2 a usage error.\n"
                 "See docs/px_names.md and docs/registry.md.\n");
}

static const char *kind_name(int kind)
{
    return PX_NAME_REGION == kind ? "region" : PX_NAME_CONTACT == kind ? "contact" : "?";
}

static int print_one(const px_name_info_t *i, void *arg)
{
    int *n = arg;
    ++*n;
    if (i->error)
        printf("%-40s  (not a Plexus entry: %s)\n", i->name, i->error);
    else if (PX_NAME_REGION == i->kind)
        printf("%-40s  region   %12zu B  host %s pid %ld  (format %d)\n", i->name, i->length,
               i->host, i->pid, i->version);
    else
        printf("%-40s  contact  %14s  host %s pid %ld  (format %d)\n", i->name, "", i->host, i->pid,
               i->version);
    return 0;
}

typedef struct {
    const char *name;
    px_name_info_t info;
    char error[400], host[300];
    int found;
} find_t;

static int find_one(const px_name_info_t *i, void *arg)
{
    find_t *f = arg;
    if (strcmp(i->name, f->name) != 0)
        return 0;
    f->found = 1;
    f->info = *i;
    snprintf(f->error, sizeof f->error, "%s", i->error ? i->error : "");
    snprintf(f->host, sizeof f->host, "%s", i->host ? i->host : "");
    return 0;
}

static void print_raw(const unsigned char *v, size_t n)
{
    printf("raw (%zu bytes): ", n);
    for (size_t i = 0; i < n && i < 4096; ++i) {
        if (isprint(v[i]) && v[i] != '\\')
            putchar(v[i]);
        else
            printf("\\x%02x", v[i]);
    }
    printf("%s\n", n > 4096 ? "..." : "");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "--version")) {
        printf("px_names (Plexus) %s\n", PACKAGE_VERSION);
        return 0;
    }
    const char *cmd = argc >= 2 ? argv[1] : "";
    bool ok = (!strcmp(cmd, "list") && argc <= 3) ||
              ((!strcmp(cmd, "get") || !strcmp(cmd, "del")) && 3 == argc);
    if (!ok) {
        fprintf(stderr, "px_names: %s\n", argc < 2 ? "no command given" : "bad arguments");
        usage(stderr);
        return 2;
    }
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    int ret = 0;
    const char *reg = px_name_registry();
    if (NULL == reg) {
        px_finalize();
        return 1; /* the base said why */
    }
    if (!strcmp(cmd, "list")) {
        int n = 0;
        int rc = px_name_list(argc > 2 ? argv[2] : "", print_one, &n);
        if (rc < 0)
            ret = 1;
        else
            fprintf(stderr, "px_names: %d name(s) under \"%s/%s\" in registry %s\n", n,
                    px_registry_base_namespace(), argc > 2 ? argv[2] : "", reg);
    } else {
        const char *name = argv[2];
        find_t f = {.name = name};
        /* A bad name is refused here, before any store call. */
        int rc = px_name_list(name, find_one, &f);
        px_registry_module_t *m = NULL;
        if (rc >= 0)
            rc = px_registry_base_select(&m);
        char key[PX_REGISTRY_KEY_MAX + 2];
        snprintf(key, sizeof key, "%s/%s", px_registry_base_namespace(), name);
        void *v = NULL;
        size_t len = 0;
        if (rc >= 0)
            rc = m->get(m, key, &v, &len);
        if (PX_ERR_NOT_FOUND == rc) {
            fprintf(stderr,
                    "px_names: no name \"%s\" in registry %s (key \"%s\"; namespace \"%s\" from "
                    "registry_namespace): `px_names list` shows the names there\n",
                    name, reg, key, px_registry_base_namespace());
            ret = 1;
        } else if (rc < 0) {
            fprintf(stderr, "px_names: reading \"%s\" from registry %s failed: %s\n", key, reg,
                    px_strerror(rc));
            ret = 1;
        } else if (!strcmp(cmd, "get")) {
            printf("name: %s\nkey: %s (registry %s)\n", name, key, reg);
            if (f.found && !f.error[0]) {
                printf("kind: %s\n", kind_name(f.info.kind));
                if (PX_NAME_REGION == f.info.kind)
                    printf("length: %zu\n", f.info.length);
                printf("owner: host %s, pid %ld\nformat version: %d\n", f.host, f.info.pid,
                       f.info.version);
                printf("entry: %.*s\n", (int)len, (const char *)v);
            } else {
                printf("not a Plexus entry: %s\n",
                       f.found ? f.error : "it changed or went while it was read");
                print_raw(v, len);
            }
        } else {
            rc = m->del(m, key, NULL, 0);
            if (rc != PX_SUCCESS) {
                fprintf(stderr, "px_names: removing \"%s\" from registry %s failed: %s\n", key, reg,
                        px_strerror(rc));
                ret = 1;
            } else if (f.found && !f.error[0]) {
                printf("removed %s (key %s in registry %s): a %s of host %s, pid %ld\n", name, key,
                       reg, kind_name(f.info.kind), f.host, f.info.pid);
            } else {
                printf("removed %s (key %s in registry %s): %zu bytes that were not a Plexus "
                       "entry\n",
                       name, key, reg, len);
            }
        }
        free(v);
    }
    px_finalize();
    return ret;
}
