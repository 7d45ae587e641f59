/*
 * redis_probe.c: drives the selected registry module (registry/redis in
 * t_registry_redis.sh) through the framework's interface, one command per
 * argument, in order:
 *
 *   "put KEY VALUE"     put PX_REGISTRY_PUT_ANY
 *   "create KEY VALUE"  put PX_REGISTRY_PUT_CREATE
 *   "big KEY BYTES"     put PX_REGISTRY_PUT_ANY of BYTES bytes ('x')
 *   "get KEY"           get
 *   "del KEY [VALUE]"   del (without VALUE: whatever is there)
 *   "list PREFIX"       list ("-" for the empty prefix), sorted
 *   "wait FILE"         wait (30 s at most) until FILE exists
 *   "sleep SECONDS"
 *   "touch FILE"        create FILE (tells the test a step is done)
 *   "time KEY N"        get N times; prints the median and the 90th percentile
 *
 * Each command prints one line "<command> <key>: <result>", the result being
 * "ok", "value=<bytes>" or the error's name (NOT_FOUND, EXISTS, ...). The
 * module's own messages go to stderr. Exit status 0 unless selecting failed.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "frameworks/registry/registry.h"

static const char *code(int rc)
{
    switch (rc) {
    case PX_SUCCESS:
        return "ok";
    case PX_ERR_NOT_FOUND:
        return "NOT_FOUND";
    case PX_ERR_EXISTS:
        return "EXISTS";
    case PX_ERR_BAD_PARAM:
        return "BAD_PARAM";
    case PX_ERR_TIMEOUT:
        return "TIMEOUT";
    case PX_ERR_NOT_AVAILABLE:
        return "NOT_AVAILABLE";
    case PX_ERR_OUT_OF_RESOURCE:
        return "OUT_OF_RESOURCE";
    default:
        return "OTHER";
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    char **lines;
    size_t n, cap;
} lines_t;

static int list_cb(const char *key, const void *value, size_t len, void *arg)
{
    lines_t *l = arg;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->lines = realloc(l->lines, l->cap * sizeof *l->lines);
        if (NULL == l->lines)
            return PX_ERR_OUT_OF_RESOURCE;
    }
    char *s = malloc(strlen(key) + len + 2);
    if (NULL == s)
        return PX_ERR_OUT_OF_RESOURCE;
    sprintf(s, "%s=%.*s", key, (int)len, (const char *)value);
    l->lines[l->n++] = s;
    return PX_SUCCESS;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(px_registry_module_t *m, char *cmd)
{
    char *words[4] = {NULL};
    int n = 0;
    for (char *save = NULL, *w = strtok_r(cmd, " ", &save); w && n < 4;
         w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    const char *op = words[0] ? words[0] : "";
    const char *key = words[1] ? words[1] : "";
    double t0 = now_s();
    int rc = PX_SUCCESS;
    if (0 == strcmp(op, "put") || 0 == strcmp(op, "create")) {
        const char *v = words[2] ? words[2] : "";
        rc = m->put(m, key, v, strlen(v),
                    0 == strcmp(op, "put") ? PX_REGISTRY_PUT_ANY : PX_REGISTRY_PUT_CREATE);
    } else if (0 == strcmp(op, "big")) {
        size_t len = words[2] ? strtoul(words[2], NULL, 10) : 0;
        char *v = malloc(len + 1);
        memset(v, 'x', len);
        rc = m->put(m, key, v, len, PX_REGISTRY_PUT_ANY);
        free(v);
    } else if (0 == strcmp(op, "get")) {
        void *v = NULL;
        size_t len = 0;
        rc = m->get(m, key, &v, &len);
        if (PX_SUCCESS == rc) {
            if (((char *)v)[len] != '\0')
                printf("get %s: the value is not NUL-terminated\n", key);
            printf("get %s: value=%.*s (%zu bytes, %.3f s)\n", key, len > 200 ? 200 : (int)len,
                   (char *)v, len, now_s() - t0);
            free(v);
            fflush(stdout);
            return;
        }
    } else if (0 == strcmp(op, "del")) {
        rc = m->del(m, key, words[2], words[2] ? strlen(words[2]) : 0);
    } else if (0 == strcmp(op, "list")) {
        lines_t l = {NULL, 0, 0};
        rc = m->list(m, 0 == strcmp(key, "-") ? "" : key, list_cb, &l);
        if (l.n > 0)
            qsort(l.lines, l.n, sizeof *l.lines, cmp_line);
        printf("list %s: %s %zu\n", key, code(rc), l.n);
        for (size_t i = 0; i < l.n; i++) {
            printf("  %s\n", l.lines[i]);
            free(l.lines[i]);
        }
        free(l.lines);
        fflush(stdout);
        return;
    } else if (0 == strcmp(op, "wait")) {
        for (int i = 0; i < 3000 && access(key, F_OK) != 0; i++)
            usleep(10000);
        rc = access(key, F_OK) == 0 ? PX_SUCCESS : PX_ERR_TIMEOUT;
    } else if (0 == strcmp(op, "sleep")) {
        double s = atof(key);
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&ts, NULL);
    } else if (0 == strcmp(op, "touch")) {
        FILE *f = fopen(key, "w");
        rc = f ? PX_SUCCESS : PX_ERR_IN_ERRNO;
        if (f)
            fclose(f);
    } else if (0 == strcmp(op, "time")) {
        int count = words[2] ? atoi(words[2]) : 100;
        if (count < 1)
            count = 1;
        double *t = calloc((size_t)count, sizeof *t);
        for (int i = 0; i < count && PX_SUCCESS == rc; i++) {
            void *v = NULL;
            size_t len = 0;
            double a = now_s();
            rc = m->get(m, key, &v, &len);
            t[i] = now_s() - a;
            free(v);
        }
        if (PX_SUCCESS == rc) {
            qsort(t, (size_t)count, sizeof *t, cmp_double);
            printf("time %s: median %.1f us, p90 %.1f us over %d gets\n", key, t[count / 2] * 1e6,
                   t[count * 9 / 10] * 1e6, count);
            free(t);
            fflush(stdout);
            return;
        }
        free(t);
    } else {
        printf("%s: unknown command\n", op);
        fflush(stdout);
        return;
    }
    printf("%s %s: %s (%.3f s)\n", op, key, code(rc), now_s() - t0);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    px_registry_module_t *m = NULL;
    double t0 = now_s();
    int rc = px_registry_base_select(&m);
    if (PX_SUCCESS != rc || NULL == m) {
        printf("select: %s (%.3f s)\n", code(rc ? rc : PX_ERR_NOT_AVAILABLE), now_s() - t0);
        px_registry_base_close();
        return 1;
    }
    printf("select: %s (%.3f s)\n", m->name, now_s() - t0);
    for (int i = 1; i < argc; i++) {
        char *cmd = strdup(argv[i]);
        run(m, cmd);
        free(cmd);
    }
    px_registry_base_close();
    return 0;
}
