/*
 * argv.c: NULL-terminated string vectors.
 */
#include <stdlib.h>
#include <string.h>
#include "core/util/argv.h"
#include "core/util/error.h"

int px_argv_count(char **argv)
{
    int n = 0;
    if (argv)
        while (argv[n])
            n++;
    return n;
}

/* Insert a copy of arg at position `at` (0..count). */
static int insert(char ***argv, int at, const char *arg, int *argc)
{
    if (NULL == argv || NULL == arg)
        return PX_ERR_BAD_PARAM;
    int n = px_argv_count(*argv);
    char *copy = strdup(arg);
    if (NULL == copy)
        return PX_ERR_OUT_OF_RESOURCE;
    char **v = realloc(*argv, sizeof(char *) * (size_t)(n + 2));
    if (NULL == v) {
        free(copy);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    memmove(v + at + 1, v + at, sizeof(char *) * (size_t)(n - at));
    v[at] = copy;
    v[n + 1] = NULL;
    *argv = v;
    if (argc)
        *argc = n + 1;
    return PX_SUCCESS;
}

int px_argv_append(int *argc, char ***argv, const char *arg)
{
    return insert(argv, argv ? px_argv_count(*argv) : 0, arg, argc);
}

int px_argv_append_nosize(char ***argv, const char *arg)
{
    return insert(argv, argv ? px_argv_count(*argv) : 0, arg, NULL);
}

int px_argv_prepend_nosize(char ***argv, const char *arg)
{
    return insert(argv, 0, arg, NULL);
}

static char **split(const char *src, int delimiter, int keep_empty)
{
    char **v = calloc(1, sizeof(char *));
    if (NULL == v || NULL == src)
        return v;
    const char *p = src;
    for (;;) {
        const char *end = delimiter ? strchr(p, delimiter) : NULL;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 || keep_empty) {
            char *tok = strndup(p, len);
            if (NULL == tok || PX_SUCCESS != px_argv_append_nosize(&v, tok)) {
                free(tok);
                px_argv_free(v);
                return NULL;
            }
            free(tok);
        }
        if (NULL == end)
            break;
        p = end + 1;
    }
    return v;
}

char **px_argv_split(const char *src, int delimiter)
{
    return split(src, delimiter, 0);
}

char **px_argv_split_with_empty(const char *src, int delimiter)
{
    /* "" has no tokens, even when empty ones are kept. */
    return split(src && *src ? src : NULL, delimiter, 1);
}

char *px_argv_join(char **argv, int delimiter)
{
    size_t len = 1;
    int n = px_argv_count(argv);
    for (int i = 0; i < n; i++)
        len += strlen(argv[i]) + 1;
    char *s = malloc(len), *p = s;
    if (NULL == s)
        return NULL;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(argv[i]);
        memcpy(p, argv[i], l);
        p += l;
        if (i + 1 < n)
            *p++ = (char)delimiter;
    }
    *p = '\0';
    return s;
}

char **px_argv_copy(char **argv)
{
    if (NULL == argv)
        return NULL;
    int n = px_argv_count(argv);
    char **v = calloc((size_t)n + 1, sizeof(char *));
    if (NULL == v)
        return NULL;
    for (int i = 0; i < n; i++) {
        if (NULL == (v[i] = strdup(argv[i]))) {
            px_argv_free(v);
            return NULL;
        }
    }
    return v;
}

void px_argv_free(char **argv)
{
    if (NULL == argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}
