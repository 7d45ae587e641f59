/*
 * fuzz_shm_queue.c: btl/shm's receive queue entries (px_btl_shm_queue_decode
 * in components/btl/shm/shm.h, what fifo_poll does with each relative
 * pointer it pops, and the chain of next pointers fifo_pop follows), over
 * segments whose fragment heaps other processes write.
 *
 * Input: byte 0: bits 0-1 local processes - 2 (2..5), bit 2 the last one not
 * mapped; bytes 1..5 each segment's heap in lines; then 8-byte records, each
 * a queue entry: with bit 7 of its first byte, the other 7 bytes as the raw
 * relative pointer's low bytes (index in byte 0 & 7); else local index
 * (byte 0 & 7) and offset heap_off + 64 x (bytes 1-2) + (byte 3 & 63). The
 * bytes after the records fill the heaps. Checks, beyond "no crash, no
 * sanitizer report": a message lies inside the segment it came from; the
 * chain walk ends within its bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/shm/shm.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

#define HEAP_OFF 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    int nlocal = 2 + (data[0] & 3);
    char *bases[5] = {0};
    size_t sizes[5] = {0};
    for (int i = 0; i < nlocal; i++) {
        size_t sz = HEAP_OFF + 64 * (1 + (size_t)data[1 + i]);
        bases[i] = malloc(sz); /* exactly the segment, so ASan sees any read past it */
        if (!bases[i])
            goto out;
        memset(bases[i], 0, sz);
        sizes[i] = sz;
    }
    if (data[0] & 4)
        sizes[nlocal - 1] = 0; /* not mapped (its base stays, never to be read) */
    size_t nrec = (size - 6) / 8 > 16 ? 16 : (size - 6) / 8;
    const uint8_t *rec = data + 6, *fill = rec + nrec * 8;
    size_t nfill = size - 6 - nrec * 8;
    for (int i = 0, k = 0; i < nlocal && nfill; i++) /* the heaps, from the remaining input */
        for (size_t o = HEAP_OFF; o < sizes[i] && nfill; o++, nfill--)
            bases[i][o] = (char)fill[k++];
    unsigned sum = 0;
    for (size_t r = 0; r < nrec; r++) {
        const uint8_t *b = rec + 8 * r;
        uint64_t rel;
        if (b[0] & 0x80) {
            rel = (uint64_t)(b[0] & 7) << 48;
            for (int k = 1; k < 7; k++)
                rel |= (uint64_t)b[k] << (8 * (k - 1));
            rel |= (uint64_t)b[7] << 56;
        } else {
            rel = ((uint64_t)(b[0] & 7) << 48) |
                  (HEAP_OFF + 64 * (uint64_t)(b[1] | b[2] << 8) + (b[3] & 63));
        }
        /* Follow the chain as fifo_pop would: each next pointer is decoded
         * (checked) before anything is read through it. */
        for (int hop = 0; hop < 8 && rel != PX_BTL_SHM_EMPTY; hop++) {
            px_btl_shm_qentry_t e;
            int kind = px_btl_shm_queue_decode(rel, nlocal, 0, bases, sizes, HEAP_OFF, &e);
            if (kind == PX_BTL_SHM_Q_BAD_REL)
                break;
            if (e.idx < 0 || e.idx >= nlocal || sizes[e.idx] == 0)
                abort();
            if (kind == PX_BTL_SHM_Q_MSG) {
                if (e.data < bases[e.idx] || e.data + e.len > bases[e.idx] + sizes[e.idx])
                    abort();
                for (uint32_t i = 0; i < e.len; i++)
                    sum += (unsigned char)e.data[i];
            }
            rel = atomic_load_explicit(&e.hdr->next, memory_order_acquire);
        }
    }
out:
    for (int i = 0; i < nlocal; i++)
        free(bases[i]);
    return (int)(sum & 0);
}
