/*
 * etcd_drive.c: drives the selected registry module (registry/etcd in
 * t_registry_etcd.sh) call by call, as the registry base would, and prints
 * each call's result on a line of its own, so a shell test can start etcd
 * servers, stop, restart and wipe them between the calls.
 *
 *   etcd_drive CMD [ARGS] [CMD [ARGS]]...
 *   put NAME VALUE      put (PX_REGISTRY_PUT_ANY)      -> "put NAME: rc=N ms=T"
 *   create NAME VALUE   put (PX_REGISTRY_PUT_CREATE), remembered for hold
 *   get NAME            -> "get NAME: rc=N ms=T value=VALUE"
 *   del NAME VALUE      remove when it holds VALUE;  delany NAME: whatever it holds
 *   list PREFIX         -> "item KEY=VALUE" lines, then "list PREFIX: rc=N n=COUNT"
 *   hb                  the module's heartbeat
 *   hold SECONDS        for that long, every registry_heartbeat seconds: heartbeat,
 *                       then create again every name created (what the base does)
 *   sleep SECONDS
 *   touch FILE          create FILE (tells the test a point was reached)
 *   wait FILE           wait until FILE exists (at most 60 s), renewing as hold does
 * NAME is under the namespace (registry_namespace): the key is "<ns>/NAME".
 * Exit status 0 after the last command; 2 when no module was selected.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/util/error.h"
#include "frameworks/registry/registry.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && EINTR == errno)
        ;
}

static char *key_of(const char *name)
{
    static char key[PX_REGISTRY_KEY_MAX + 64];
    snprintf(key, sizeof key, "%s/%s", px_registry_base_namespace(), name);
    return key;
}

static int item(const char *key, const void *value, size_t len, void *arg)
{
    printf("item %s=%.*s\n", key, (int)len, (const char *)value);
    ++*(int *)arg;
    return PX_SUCCESS;
}

#define MAX_HELD 64
static char *held[MAX_HELD][2];
static int n_held;

/* What the base does every heartbeat: the module's heartbeat, then create
 * again every name this process created. */
static void renew(px_registry_module_t *m)
{
    int rc = m->heartbeat ? m->heartbeat(m) : PX_SUCCESS;
    for (int h = 0; h < n_held && PX_SUCCESS == rc; h++)
        rc = m->put(m, key_of(held[h][0]), held[h][1], strlen(held[h][1]), PX_REGISTRY_PUT_CREATE);
    if (PX_SUCCESS != rc)
        printf("renew: rc=%d\n", rc);
}

int main(int argc, char **argv)
{
    px_registry_module_t *m = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = px_registry_base_select(&m);
    if (PX_SUCCESS != rc || NULL == m) {
        printf("select: rc=%d\n", rc);
        return 2;
    }
    printf("select: %s\n", m->name);
    for (int i = 1; i < argc; i++) {
        const char *cmd = argv[i], *a = i + 1 < argc ? argv[i + 1] : "",
                   *b = i + 2 < argc ? argv[i + 2] : "";
        double t0 = now();
        if (!strcmp(cmd, "put") || !strcmp(cmd, "create")) {
            bool create = 'c' == cmd[0];
            rc = m->put(m, key_of(a), b, strlen(b),
                        create ? PX_REGISTRY_PUT_CREATE : PX_REGISTRY_PUT_ANY);
            if (create && PX_SUCCESS == rc && n_held < MAX_HELD) {
                held[n_held][0] = strdup(a);
                held[n_held++][1] = strdup(b);
            }
            printf("%s %s: rc=%d ms=%.0f\n", cmd, a, rc, (now() - t0) * 1e3);
            i += 2;
        } else if (!strcmp(cmd, "get")) {
            void *v = NULL;
            size_t len = 0;
            rc = m->get(m, key_of(a), &v, &len);
            printf("get %s: rc=%d ms=%.0f value=%.*s\n", a, rc, (now() - t0) * 1e3,
                   v ? (int)len : 0, v ? (const char *)v : "");
            if (v && '\0' != ((char *)v)[len])
                printf("get %s: the value lacks its NUL\n", a);
            free(v);
            i += 1;
        } else if (!strcmp(cmd, "del")) {
            rc = m->del(m, key_of(a), b, strlen(b));
            printf("del %s: rc=%d ms=%.0f\n", a, rc, (now() - t0) * 1e3);
            i += 2;
        } else if (!strcmp(cmd, "delany")) {
            rc = m->del(m, key_of(a), NULL, 0);
            printf("delany %s: rc=%d ms=%.0f\n", a, rc, (now() - t0) * 1e3);
            i += 1;
        } else if (!strcmp(cmd, "list")) {
            int n = 0;
            char prefix[PX_REGISTRY_KEY_MAX + 64];
            snprintf(prefix, sizeof prefix, "%s", key_of(a));
            rc = m->list(m, prefix, item, &n);
            printf("list %s: rc=%d n=%d ms=%.0f\n", a, rc, n, (now() - t0) * 1e3);
            i += 1;
        } else if (!strcmp(cmd, "hb")) {
            rc = m->heartbeat ? m->heartbeat(m) : PX_SUCCESS;
            printf("hb: rc=%d ms=%.0f\n", rc, (now() - t0) * 1e3);
        } else if (!strcmp(cmd, "hold")) {
            double end = t0 + atof(a);
            while (now() < end) {
                renew(m);
                nap(px_registry_base_heartbeat());
            }
            printf("hold: done\n");
            i += 1;
        } else if (!strcmp(cmd, "sleep")) {
            nap(atof(a));
            i += 1;
        } else if (!strcmp(cmd, "touch")) {
            FILE *f = fopen(a, "w");
            if (f)
                fclose(f);
            i += 1;
        } else if (!strcmp(cmd, "wait")) {
            double next = t0 + px_registry_base_heartbeat();
            int renewals = 0;
            while (access(a, F_OK) && now() < t0 + 60) {
                if (now() >= next) { /* a live process renews while it waits */
                    renew(m);
                    renewals++;
                    next = now() + px_registry_base_heartbeat();
                }
                nap(0.05);
            }
            printf("wait %s: renewed %d times in %.0f ms\n", a, renewals, (now() - t0) * 1e3);
            i += 1;
        } else {
            fprintf(stderr, "etcd_drive: unknown command \"%s\"\n", cmd);
            return 1;
        }
    }
    for (int h = 0; h < n_held; h++) {
        free(held[h][0]);
        free(held[h][1]);
    }
    px_registry_base_close();
    return 0;
}
