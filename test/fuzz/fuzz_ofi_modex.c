/*
 * fuzz_ofi_modex.c: btl/ofi's reading of a peer's modex blob and lanes
 * list (components/btl/ofi/ofi_wire.c px_btl_ofi_modex_parse and
 * px_btl_ofi_lanes_parse, compiled in).
 *
 * Input: two bytes, then the blob.
 *   byte 0  bits 0-2: this process's address format (FI_SOCKADDR_IN,
 *           FI_SOCKADDR_IN6, FI_SOCKADDR, FI_ADDR_STR, FI_ADDR_PSMX3,
 *           FI_SOCKADDR_IB, FI_ADDR_EFA, FI_FORMAT_UNSPEC)
 *           bit 3: write this process's provider name into the blob
 *           bit 4: write this process's address format into the blob
 *           bit 5: set the blob's address length to the bytes that follow
 *           bit 6: the blob ends with its address (when the length fits);
 *           what follows is the lanes list (modex key btl.ofi.lanes, or a
 *           dynamic peer part's extension), read after the blob
 *   byte 1  this process's own address length
 * The blob and the lanes list are each copied to a buffer of their exact
 * length, so a read past one is a sanitizer report. Checks beyond that: an accepted blob's address
 * lies in the blob, and every byte libfabric reads for its format (a sockaddr of its family, a
 * string up to its NUL, else as many bytes as this process's own address) is in the blob (the
 * harness reads them); a refusal has a reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <rdma/fabric.h>
#include "components/btl/ofi/ofi_wire.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

static const uint32_t formats[8] = {FI_SOCKADDR_IN, FI_SOCKADDR_IN6, FI_SOCKADDR, FI_ADDR_STR,
                                    FI_ADDR_PSMX3,  FI_SOCKADDR_IB,  FI_ADDR_EFA, FI_FORMAT_UNSPEC};
static const char prov[] = "tcp;ofi_rxm";

/* How many bytes libfabric reads of an address of `format` at `a`, which
 * has `room` bytes before the blob's end: the sockaddr of its family, the
 * string with its NUL, or as much as this process's own address (SIZE_MAX:
 * a string without its NUL in the blob). */
static size_t libfabric_reads(uint32_t format, const unsigned char *a, size_t room, size_t own)
{
    sa_family_t fam = 0;
    const unsigned char *nul;
    switch (format) {
    case FI_SOCKADDR_IN:
        return sizeof(struct sockaddr_in);
    case FI_SOCKADDR_IN6:
        return sizeof(struct sockaddr_in6);
    case FI_SOCKADDR:
        if (room < sizeof(fam))
            return sizeof(fam);
        memcpy(&fam, a, sizeof(fam));
        return AF_INET6 == fam ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    case FI_ADDR_STR:
        nul = memchr(a, '\0', room);
        return nul ? (size_t)(nul - a) + 1 : SIZE_MAX;
    default:
        return own;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0];
    uint32_t format = formats[flags & 7];
    size_t own = data[1];
    size_t n = size - 2;
    unsigned char *blob = malloc(n ? n : 1);
    if (!blob)
        abort();
    memcpy(blob, data + 2, n);
    px_btl_ofi_modex_t h;
    if (n >= sizeof(h)) {
        memcpy(&h, blob, sizeof(h));
        if (flags & 8) {
            memset(h.prov, 0, sizeof(h.prov));
            memcpy(h.prov, prov, sizeof(prov));
        }
        if (flags & 16)
            h.addr_format = format;
        if (flags & 32)
            h.addrlen = (uint32_t)(n - sizeof(h));
        memcpy(blob, &h, sizeof(h));
    }
    /* bit 6: split off the lanes list */
    unsigned char *lanes = NULL;
    size_t nl = 0;
    if ((flags & 64) && n >= sizeof(h)) {
        memcpy(&h, blob, sizeof(h));
        if (h.addrlen <= n - sizeof(h)) {
            nl = n - sizeof(h) - h.addrlen;
            n -= nl;
            lanes = malloc(nl ? nl : 1);
            if (!lanes)
                abort();
            memcpy(lanes, blob + n, nl);
            unsigned char *exact = malloc(n);
            if (!exact)
                abort();
            memcpy(exact, blob, n);
            free(blob);
            blob = exact;
        }
    }
    px_btl_ofi_peer_addr_t pa;
    char why[400] = "";
    int rc = px_btl_ofi_modex_parse(n ? blob : NULL, n, prov, format, own, &pa, why, sizeof(why));
    if (PX_SUCCESS == rc && lanes) {
        rc = px_btl_ofi_lanes_parse(lanes, nl, prov, format, own, &pa, why, sizeof(why));
        if (PX_SUCCESS != rc && 1 != pa.nlanes) {
            fprintf(stderr, "fuzz_ofi_modex: a refused lanes list left %u lanes\n", pa.nlanes);
            abort();
        }
    }
    if (PX_SUCCESS == rc) {
        const unsigned char *a = pa.addr;
        if (a < blob || a > blob + n || pa.addrlen > (size_t)(blob + n - a)) {
            fprintf(stderr, "fuzz_ofi_modex: an accepted address lies outside the blob\n");
            abort();
        }
        if (0 != strcmp(pa.prov, prov) || pa.addr_format != format)
            abort();
        /* What libfabric would read (fi_av_insert) must be in the blob;
         * the harness reads it, byte by byte. */
        size_t room = (size_t)(blob + n - a);
        size_t reads = libfabric_reads(format, a, room, own);
        if (reads > room) {
            fprintf(stderr,
                    "fuzz_ofi_modex: an accepted address of format %u is %u bytes and has %zu "
                    "in the blob, but libfabric reads %zu\n",
                    format, pa.addrlen, room, reads);
            abort();
        }
        volatile unsigned sum = 0;
        for (size_t i = 0; i < reads; ++i)
            sum += a[i];
        /* every lane's address as well (btl_ofi_rdma_lanes) */
        if (pa.nlanes < 1 || pa.nlanes > PX_BTL_OFI_LANES_MAX || pa.lane_addr[0] != pa.addr) {
            fprintf(stderr, "fuzz_ofi_modex: an accepted blob with %u lanes\n", pa.nlanes);
            abort();
        }
        if (pa.nlanes > 1 && !lanes) {
            fprintf(stderr, "fuzz_ofi_modex: %u lanes from a blob without a lanes list\n",
                    pa.nlanes);
            abort();
        }
        for (uint32_t l = 1; l < pa.nlanes; ++l) {
            const unsigned char *la = pa.lane_addr[l];
            if (la < lanes || la > lanes + nl || pa.lane_len[l] > (size_t)(lanes + nl - la)) {
                fprintf(stderr, "fuzz_ofi_modex: lane %u's address lies outside the list\n", l);
                abort();
            }
            size_t lroom = (size_t)(lanes + nl - la);
            size_t lreads = libfabric_reads(format, la, pa.lane_len[l], own);
            if (lreads > lroom) {
                fprintf(stderr,
                        "fuzz_ofi_modex: libfabric would read %zu bytes of lane %u's "
                        "%u-byte address\n",
                        lreads, l, pa.lane_len[l]);
                abort();
            }
            for (size_t i = 0; i < lreads; ++i)
                sum += la[i];
        }
        (void)sum;
    } else if ('\0' == why[0]) {
        fprintf(stderr, "fuzz_ofi_modex: a refused blob without a reason\n");
        abort();
    }
    free(blob);
    free(lanes);
    return 0;
}
