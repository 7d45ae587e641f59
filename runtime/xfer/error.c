/*
 * error.c: the transfer engine's per-thread last error (px_xfer_fail,
 * px_xfer_last_error) and the host name a message gives for a rank.
 */
#include <stdarg.h>
#include <stdio.h>
#include "runtime/xfer/xfer.h"

static _Thread_local char tl_error[512]; /* px_xfer_last_error */

int px_xfer_fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_error, sizeof tl_error, fmt, ap);
    va_end(ap);
    return rc;
}

const char *px_xfer_last_error(void)
{
    return tl_error;
}

const char *px_xfer_host(int rank)
{
    if (rank < 0 || rank >= px_rt.size || !px_rt.procs || !px_rt.procs[rank].hostname)
        return "?";
    return px_rt.procs[rank].hostname;
}
