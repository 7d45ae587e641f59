/*
 * error.h: Plexus return codes and px_strerror.
 * Every function that can fail returns PX_SUCCESS (0) or one of the negative
 * codes below; callers turn them into text with px_strerror().
 */
#ifndef PX_UTIL_ERROR_H
#define PX_UTIL_ERROR_H

#include "core/util/compiler.h"

enum {
    PX_SUCCESS = 0,
    PX_ERROR = -1,                    /* generic failure; a message was printed */
    PX_ERR_OUT_OF_RESOURCE = -2,      /* memory or another resource is exhausted */
    PX_ERR_TEMP_OUT_OF_RESOURCE = -3, /* try again after progress */
    PX_ERR_BAD_PARAM = -4,            /* an argument or value is invalid */
    PX_ERR_NOT_FOUND = -5,            /* no such name, key or item */
    PX_ERR_NOT_SUPPORTED = -6,        /* the operation is not offered here */
    PX_ERR_UNREACH = -7,              /* no transport reaches the peer */
    PX_ERR_TRUNCATE = -8,             /* the receive buffer was too small */
    PX_ERR_NOT_AVAILABLE = -9,        /* component or service not usable here */
    PX_ERR_VALUE_OUT_OF_BOUNDS = -10, /* index or value outside the valid range */
    PX_ERR_EXISTS = -11,              /* already present */
    PX_ERR_TIMEOUT = -12,             /* a deadline passed */
    PX_ERR_IN_ERRNO = -13,            /* see errno */
    PX_ERR_PEER_FAILED = -14,         /* the peer process died or disconnected */
    PX_ERR_NOT_INITIALIZED = -15,     /* px_init has not been called */
    PX_ERR_COMM = -16,                /* a transport reported an error */
    PX_ERR_VERSION = -17,             /* version or ABI mismatch */
    PX_ERR_FATAL = -18,               /* unrecoverable */
    PX_ERR_GROUP_FAILED = -19,        /* a member gave up on a collective: the group is failed */
    PX_ERR_MAX = -20
};

/* Text for a return code; never NULL. */
PX_EXPORT const char *px_strerror(int code);

#endif
