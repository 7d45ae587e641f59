/*
 * fuzz_util.c: helpers for the harnesses (fuzz.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test/fuzz/fuzz.h"

static char dir[64];

static void remove_dir(void)
{
    if (dir[0])
        rmdir(dir);
}

const char *px_fuzz_empty_dir(void)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/px_fuzzXXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    return dir;
}

char *px_fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return NULL;
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

void px_fuzz_singleton_env(void)
{
    unsetenv("PX_PXRUN_URI");
    unsetenv("PMIX_RANK");
    setenv("HOME", px_fuzz_empty_dir(), 1);
    setenv("PX_SYSCONFDIR", px_fuzz_empty_dir(), 1);
    setenv("PX_MCA_mca_component_path", px_fuzz_empty_dir(), 1);
    setenv("PX_MCA_btl", "self", 1);
    setenv("PX_MCA_boot", "singleton", 1);
}

size_t px_fuzz_take(const uint8_t **p, const uint8_t *end, void *out, size_t n)
{
    size_t k = (size_t)(end - *p) < n ? (size_t)(end - *p) : n;
    memset(out, 0, n);
    memcpy(out, *p, k);
    *p += k;
    return k;
}
