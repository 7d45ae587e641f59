/*
 * error.c: text for Plexus return codes.
 */
#include "core/util/error.h"

const char *px_strerror(int code)
{
    switch (code) {
    case PX_SUCCESS:
        return "success";
    case PX_ERROR:
        return "error";
    case PX_ERR_OUT_OF_RESOURCE:
        return "out of resources";
    case PX_ERR_TEMP_OUT_OF_RESOURCE:
        return "temporarily out of resources (retry after progress)";
    case PX_ERR_BAD_PARAM:
        return "bad parameter";
    case PX_ERR_NOT_FOUND:
        return "not found";
    case PX_ERR_NOT_SUPPORTED:
        return "not supported";
    case PX_ERR_UNREACH:
        return "peer unreachable: no transport reaches it";
    case PX_ERR_TRUNCATE:
        return "message truncated: receive buffer too small";
    case PX_ERR_NOT_AVAILABLE:
        return "not available";
    case PX_ERR_VALUE_OUT_OF_BOUNDS:
        return "value out of bounds";
    case PX_ERR_EXISTS:
        return "already exists";
    case PX_ERR_TIMEOUT:
        return "timed out";
    case PX_ERR_IN_ERRNO:
        return "system error (see errno)";
    case PX_ERR_PEER_FAILED:
        return "peer process failed or disconnected";
    case PX_ERR_NOT_INITIALIZED:
        return "not initialized (call px_init first)";
    case PX_ERR_COMM:
        return "transport error";
    case PX_ERR_VERSION:
        return "version mismatch";
    case PX_ERR_FATAL:
        return "fatal error";
    case PX_ERR_GROUP_FAILED:
        return "the group failed: a member gave up on a collective";
    default:
        return "unknown error code";
    }
}
