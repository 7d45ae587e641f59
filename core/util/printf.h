/*
 * printf.h: formatting into a freshly allocated string.
 */
#ifndef PX_UTIL_PRINTF_H
#define PX_UTIL_PRINTF_H

#include <stdarg.h>
#include "core/util/compiler.h"

/* The formatted text in a buffer the caller frees, or NULL when memory (or
 * the format) fails. */
PX_EXPORT char *px_asprintf(const char *fmt, ...) PX_PRINTF(1, 2);
PX_EXPORT char *px_vasprintf(const char *fmt, va_list ap) PX_PRINTF(1, 0);

#endif
