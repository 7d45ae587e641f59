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
