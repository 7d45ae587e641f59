/*
 * error.h: Plexus return codes and px_strerror.
 * Every function that can fail returns PX_SUCCESS (0) or one of the negative
 * codes; callers turn them into text with px_strerror(). The codes are
 * defined once, in the application API's types header plexus_types.h (the
 * lowest layer; applications get them through <plexus.h>); this header is
 * the library's and components' way to them.
 */
#ifndef PX_UTIL_ERROR_H
#define PX_UTIL_ERROR_H

#include "core/util/compiler.h"
#include "plexus_types.h"

#endif
