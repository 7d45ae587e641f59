/*
 * path_inline.c: the inline path. The best transport for the peer mapped
 * the remote memory (a region allocated through a same-host transport, or
 * this process's own): the submitting thread copies at once, without the
 * engine's lock, and the request ends inside submit. (px_xfer_write/read
 * take the same copy before any batch when they can: batch.c.)
 */
#include <string.h>
#include "core/util/error.h"
#include "runtime/xfer/xfer.h"

static px_xfer_pstatus_t inline_start(px_xfer_slot_t *s)
{
    const px_xfer_remote_t *rm = s->remote;
    const px_xfer_region_t *lr = s->local;
    if (PX_UNLIKELY(px_xfer_remote_freed(rm))) {
        px_xfer_slot_error(s, PX_ERR_NOT_FOUND, false,
                           "the region was deregistered by its owner (px_xfer_free)");
        return PX_XFER_P_ERROR;
    }
    if (PX_XFER_WRITE == s->op)
        memcpy(rm->mapped + s->roff, lr->base + s->loff, s->len);
    else
        memcpy(lr->base + s->loff, rm->mapped + s->roff, s->len);
    return PX_XFER_P_DONE;
}

/* Never queued: nothing to resume or give back. */
static px_xfer_pstatus_t inline_none(px_xfer_slot_t *s)
{
    (void)s;
    return PX_XFER_P_DONE;
}

const px_xfer_path_t px_xfer_path_inline = {
    .name = "inline",
    .at_submit = true,
    .transport_ops = false,
    .start = inline_start,
    .resume = inline_none,
    .release = inline_none,
};
