/*
 * fuzz_shm_fbox.c: btl/shm's fast box reader (px_btl_shm_fbox_take in
 * components/btl/shm/shm.h, the step fbox_poll takes for each entry) over a
 * ring whose every byte another process could have written.
 *
 * Input: byte 0 picks the ring size (4 KiB << (bits 0-1)), byte 1 the
 * reader's start (in lines), the rest is the ring's content (zero after the
 * input ends). Checks, beyond "no crash, no sanitizer report": every message
 * taken lies inside the ring, every step moves the reader forward, and a
 * refused header is one that px_btl_shm_fbox_entry_ok refuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/shm/shm.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t fbs = (size_t)4096 << (data[0] & 3);
    /* Exactly the ring, so ASan sees any read past it. */
    char *ring = aligned_alloc(64, fbs);
    if (!ring)
        return 0;
    size_t n = size - 2 < fbs ? size - 2 : fbs;
    memset(ring, 0, fbs);
    memcpy(ring, data + 2, n);
    uint64_t rpos = (uint64_t)data[1] * 64 % fbs;
    unsigned sum = 0;
    /* A ring full of stale but well-formed entries can be read forever (as
     * a sender could send forever): bounded here by laps. */
    for (size_t step = 0; step < 4 * (fbs / PX_BTL_SHM_FB_SLOT) + 4; step++) {
        uint64_t before = rpos, h = 0;
        char *d = NULL;
        size_t len = 0;
        uint8_t tag = 0;
        int r = px_btl_shm_fbox_take(ring, fbs, &rpos, &h, &d, &len, &tag);
        if (r == 0)
            break;
        if (r < 0) {
            if (rpos != before || px_btl_shm_fbox_entry_ok(h, before & (fbs - 1), fbs))
                abort();
            break;
        }
        if (rpos <= before || rpos - before > fbs)
            abort();
        if (r == 1 || r == 4) { /* a message, or a control entry (a split copy's offer) */
            px_btl_shm_split_msg_t m;
            if (r == 4 && len == sizeof m) { /* what split_help checks before using it */
                memcpy(&m, d, sizeof m);
                sum += px_btl_shm_split_msg_ok(&m, 4096, fbs);
                /* a connected peer's offer: the slot is one of its lines */
                if (px_btl_shm_split_msg_ok(&m, PX_BTL_SHM_DYN_SLOT_OFF, PX_BTL_SHM_DYN_SLOT_END) &&
                    (m.slot < PX_BTL_SHM_DYN_SLOT_OFF || (m.slot & 63) ||
                     m.slot + sizeof(px_btl_shm_split_slot_t) > PX_BTL_SHM_DYN_SLOT_END))
                    abort();
            }
            if (d < ring || len > fbs || d + len > ring + fbs)
                abort();
            for (size_t i = 0; i < len; i++) /* the whole message is readable */
                sum += (unsigned char)d[i];
        }
    }
    free(ring);
    return (int)(sum & 0); /* keep the reads */
}
