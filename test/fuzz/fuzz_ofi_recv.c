/*
 * fuzz_ofi_recv.c: btl/ofi's decoding of a received message's header
 * (components/btl/ofi/ofi_wire.h px_btl_ofi_hdr_decode, what the receive
 * completion handler runs on every message, and ofi_wire.c's
 * px_btl_ofi_hdr_why for the error it reports).
 *
 * Input: a list of messages, each: one byte of job size (0 means 1), two
 * bytes (little endian) of receive-buffer length, two bytes of message
 * length, then that many bytes (fewer at the end of the input). Each message
 * is copied to an aligned buffer of its exact length. Checks: a message
 * delivered to a tag's callback fits the receive buffer, names a rank of the
 * job and no flag; its payload is the bytes after the header (the harness
 * reads them all); a drain carries the drain flag alone; a refused one has
 * a reason that names what was wrong.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/ofi/ofi_wire.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    while (at + 5 <= size) {
        size_t nranks = data[at] ? data[at] : 1;
        size_t max_len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
        size_t len = (size_t)data[at + 3] | (size_t)data[at + 4] << 8;
        at += 5;
        if (len > size - at)
            len = size - at;
        char *buf = malloc(len ? len : 1);
        if (!buf)
            abort();
        memcpy(buf, data + at, len);
        at += len;
        px_btl_ofi_rx_t rx;
        int code = px_btl_ofi_hdr_decode(buf, len, max_len, nranks, &rx);
        if (PX_BTL_OFI_RX_DELIVER == code || PX_BTL_OFI_RX_DRAIN == code ||
            PX_BTL_OFI_RX_DYN == code) {
            /* A dynamic peer's number (BTL API 3.3) in place of a rank: only
             * for RX_DYN and drains, never for a rank's message. */
            bool dyn_src = rx.src_rank <= PX_BTL_OFI_DYN_SRC(0);
            if (len < sizeof(px_btl_ofi_hdr_t) || len > max_len) {
                fprintf(stderr,
                        "fuzz_ofi_recv: a %zu-byte message accepted for a %zu-byte "
                        "buffer\n",
                        len, max_len);
                abort();
            }
            if (PX_BTL_OFI_RX_DYN == code
                    ? !dyn_src
                    : !(PX_BTL_OFI_RX_DRAIN == code && dyn_src) &&
                          (rx.src_rank < 0 || (size_t)rx.src_rank >= nranks)) {
                fprintf(stderr, "fuzz_ofi_recv: a message of rank %d accepted in a job of %zu\n",
                        (int)rx.src_rank, nranks);
                abort();
            }
            if (rx.flags != (PX_BTL_OFI_RX_DRAIN == code ? PX_BTL_OFI_HDR_DRAIN : 0)) {
                fprintf(stderr, "fuzz_ofi_recv: flags 0x%x accepted (code %d)\n", rx.flags, code);
                abort();
            }
            if (rx.payload != buf + sizeof(px_btl_ofi_hdr_t) ||
                rx.payload_len != len - sizeof(px_btl_ofi_hdr_t))
                abort();
            volatile unsigned sum = 0;
            for (size_t i = 0; i < rx.payload_len; ++i)
                sum += (unsigned char)rx.payload[i];
            (void)sum;
        } else if (code < 0) {
            char why[300] = "";
            px_btl_ofi_hdr_why(code, &rx, len, max_len, nranks, why, sizeof(why));
            if ('\0' == why[0] || strstr(why, "(code "))
                abort(); /* every refusal has its own text */
        } else {
            abort();
        }
        free(buf);
    }
    return 0;
}
