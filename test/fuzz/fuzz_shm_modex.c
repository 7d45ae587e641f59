/*
 * fuzz_shm_modex.c: what btl/shm takes from a peer before it maps anything:
 * its modex blob (px_btl_shm_modex_check) and its segment header
 * (px_btl_shm_header_check: job hash and length, key, size, geometry).
 *
 * Input: byte 0: the blob's length (sizeof the modex entry, minus bits 0-2,
 * or plus them with bit 3), byte 1 the local index expected, bytes 2-3 the
 * geometry expected (rank, nlocal 1..16, ring 4 KiB << 0..12), byte 4 the
 * length of the job id that follows; then the blob, then the header
 * (zero-filled when the input is short). Checks, beyond "no crash, no
 * sanitizer report": an accepted blob names a file right in the job's folder
 * with its NUL; an accepted header has the expected geometry and rings that
 * fit the mapped size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    const char *dir = "/dev/shm/plexus-0-fuzz";
    size_t blen = sizeof(px_btl_shm_modex_t);
    blen = (data[0] & 8) ? blen + (data[0] & 7) : blen - (data[0] & 7);
    int idx = data[1] & 7;
    px_btl_shm_geom_t g = {data[2] & 15, 0, 1 + (data[3] & 15), (size_t)4096 << (data[3] >> 4)};
    size_t jl = data[4];
    const uint8_t *p = data + 5, *end = data + size;
    char jobid[256];
    size_t take = (size_t)(end - p) < jl ? (size_t)(end - p) : jl;
    memcpy(jobid, p, take);
    jobid[take] = '\0';
    p += take;
    /* The blob, exactly its length (ASan sees any read past it). */
    unsigned char *blob = malloc(blen);
    if (!blob)
        return 0;
    memset(blob, 0, blen);
    take = (size_t)(end - p) < blen ? (size_t)(end - p) : blen;
    memcpy(blob, p, take);
    p += take;
    px_btl_shm_modex_t mx;
    const char *why = px_btl_shm_modex_check(blob, blen, idx, dir, &mx);
    if (!why) {
        size_t dl = strlen(dir);
        if (blen != sizeof mx || mx.local_index != idx ||
            strnlen(mx.path, sizeof mx.path) >= sizeof mx.path || strncmp(mx.path, dir, dl) != 0 ||
            mx.path[dl] != '/' || strchr(mx.path + dl + 1, '/'))
            abort();
    }
    free(blob);
    px_btl_shm_seg_hdr_t h;
    memset(&h, 0, sizeof h);
    take = (size_t)(end - p) < sizeof h ? (size_t)(end - p) : sizeof h;
    memcpy(&h, p, take);
    size_t mapped = (size_t)h.size; /* the size the modex and the file agree on */
    const char *field = NULL;
    uint64_t theirs = 0, ours = 0;
    why = px_btl_shm_header_check(&h, mapped, jobid, h.key, &g, &field, &theirs, &ours);
    if (!why) {
        size_t heap = px_btl_shm_off_fbox(g.nlocal, g.fbox_size, g.nlocal);
        if (h.nlocal != (uint32_t)g.nlocal || h.fbox_size != g.fbox_size || h.heap_off != heap ||
            mapped < heap + PX_BTL_SHM_FRAG_HDR || h.job_hash != px_btl_shm_job_hash(jobid))
            abort();
    } else if (field && theirs == ours) {
        abort(); /* a geometry field refused must differ */
    }
    return 0;
}
