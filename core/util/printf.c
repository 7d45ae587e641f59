/*
 * printf.c: px_asprintf and px_vasprintf.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include "core/util/printf.h"

char *px_vasprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

char *px_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = px_vasprintf(fmt, ap);
    va_end(ap);
    return s;
}
