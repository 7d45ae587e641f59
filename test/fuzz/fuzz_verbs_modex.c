/*
 * fuzz_verbs_modex.c: btl/verbs's reading of a peer's modex blob
 * (components/btl/verbs/verbs_wire.c px_btl_verbs_modex_parse, compiled in):
 * a header (ports, ranks), then per port a record (GID, LID, port, link
 * layer, MTU, PSN, keepalive key and address) and a QP number per rank.
 *
 * Input: four bytes, then the blob.
 *   byte 0  this process's port index (0..3)
 *   byte 1  this process's rank (modulo the job size)
 *   byte 2  the job size (0 means 256)
 *   byte 3  bit 0: write the job size as the blob's rank count
 *           bit 1: write as the blob's port count what its length holds
 * The blob is copied to a buffer of its exact length, so a read past it is
 * a sanitizer report. Checks: an accepted record is one a port could have
 * published (QP number 1..2^24-1, a 24-bit PSN, a known MTU and link layer,
 * on InfiniBand a unicast LID);
 * a refusal has a reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "components/btl/verbs/verbs_wire.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int index = data[0] % 4;
    size_t nranks = data[2] ? data[2] : 256;
    int my_rank = (int)(data[1] % nranks);
    uint8_t flags = data[3];
    size_t n = size - 4;
    unsigned char *blob = malloc(n ? n : 1);
    if (!blob)
        abort();
    memcpy(blob, data + 4, n);
    px_btl_verbs_modex_hdr_t h;
    if (n >= sizeof(h)) {
        memcpy(&h, blob, sizeof(h));
        if (flags & 1)
            h.nranks = (uint32_t)nranks;
        if (flags & 2)
            h.nmodules = (uint32_t)((n - sizeof(h)) / px_btl_verbs_modex_stride(h.nranks));
        memcpy(blob, &h, sizeof(h));
    }
    px_btl_verbs_peer_addr_t pa;
    char why[400] = "";
    int rc =
        px_btl_verbs_modex_parse(n ? blob : NULL, n, index, my_rank, nranks, &pa, why, sizeof(why));
    if (PX_SUCCESS == rc) {
        if (0 == pa.qpn || pa.qpn > 0xffffffu || pa.psn > 0xffffffu || pa.mtu > IBV_MTU_4096 ||
            pa.link_layer > IBV_LINK_LAYER_ETHERNET || (uint32_t)index >= pa.nmodules ||
            (IBV_LINK_LAYER_ETHERNET != pa.link_layer && pa.lid >= 0xc000)) {
            fprintf(stderr,
                    "fuzz_verbs_modex: accepted a record no port publishes: QP %u, PSN %u, "
                    "MTU %u, link layer %u, LID 0x%x, port %d of %u\n",
                    pa.qpn, pa.psn, pa.mtu, pa.link_layer, pa.lid, index, pa.nmodules);
            abort();
        }
    } else if ('\0' == why[0]) {
        fprintf(stderr, "fuzz_verbs_modex: a refused blob without a reason\n");
        abort();
    }
    free(blob);
    return 0;
}
