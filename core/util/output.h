/*
 * output.h: output streams with per-stream verbosity.
 * Frameworks open one stream each (prefix "btl", verbosity from
 * btl_base_verbose) and log through PX_OUTPUT_VERBOSE; messages go to stderr
 * with the stream's prefix, host and pid. Thread-safe.
 */
#ifndef PX_UTIL_OUTPUT_H
#define PX_UTIL_OUTPUT_H

#include <stdarg.h>
#include <stdbool.h>
#include "core/util/compiler.h"

#define PX_OUTPUT_MAX_STREAMS 64

/* Open a stream whose lines start with "[host:pid] prefix: ". Returns its id
 * (>= 0) or a negative error code. Stream 0 is always open, prefix "plexus". */
PX_EXPORT int px_output_open(const char *prefix, int verbosity);
PX_EXPORT void px_output_close(int stream);
PX_EXPORT void px_output_set_verbosity(int stream, int level);
PX_EXPORT int px_output_get_verbosity(int stream);

/* Print unconditionally on the stream (a trailing newline is added if missing). */
PX_EXPORT void px_output(int stream, const char *fmt, ...) PX_PRINTF(2, 3);
PX_EXPORT void px_output_vprint(int stream, const char *fmt, va_list ap);

/* True when a message at `level` would be printed on `stream`. */
PX_EXPORT bool px_output_check(int stream, int level);

/* Print only when the stream's verbosity is >= level; the arguments are not
 * evaluated otherwise. */
#define PX_OUTPUT_VERBOSE(level, stream, ...)                                                      \
    do {                                                                                           \
        if (PX_UNLIKELY(px_output_check((stream), (level))))                                       \
            px_output((stream), __VA_ARGS__);                                                      \
    } while (0)

/* Errors meant for a user: printed to stderr regardless of verbosity as
 * "plexus: error: ..." plus the text. */
PX_EXPORT void px_show_error(const char *fmt, ...) PX_PRINTF(1, 2);
PX_EXPORT void px_show_warning(const char *fmt, ...) PX_PRINTF(1, 2);

#endif
