/*
 * fuzz_verbs_recv.c: btl/verbs's decoding of a received message's header
 * (components/btl/verbs/verbs_wire.h px_btl_verbs_hdr_decode, what the
 * receive completion handler runs on every message, and verbs_wire.c's
 * px_btl_verbs_hdr_why for the error it reports), with the credit accounting
 * the handler does around it.
 *
 * Input: four bytes of setup (data receives per peer 1..64, control receives
 * 1..8, receive-buffer length, two bytes little endian), then operations:
 *   0        spend a data credit (a send to the peer), if one is left
 *   1        spend a control credit (a credit update to the peer), if one is left
 *   2 L L .. receive a message of L bytes (little endian; fewer at the end)
 * Messages are copied to aligned buffers of their exact length. Checks: a
 * peer never brings this process more credits than it spent on the peer (its
 * receives are all it has: more would overrun them, and the counters would
 * overflow); a delivered message fits the buffer and has no flag; a credit
 * update is the header alone; a refused message has a reason, and the
 * handler stops there (the peer is failed), as the harness does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/verbs/verbs_wire.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int num_recvs = 1 + data[0] % 64, ctl_recvs = 1 + data[1] % 8;
    size_t max_len = (size_t)data[2] | (size_t)data[3] << 8;
    int credits = num_recvs, ctl_credits = ctl_recvs;
    size_t at = 4;
    while (at < size) {
        uint8_t op = data[at++] % 3;
        if (0 == op) {
            if (credits > 0)
                credits--;
            continue;
        }
        if (1 == op) {
            if (ctl_credits > 0)
                ctl_credits--;
            continue;
        }
        if (at + 2 > size)
            break;
        size_t len = (size_t)data[at] | (size_t)data[at + 1] << 8;
        at += 2;
        if (len > size - at)
            len = size - at;
        char *buf = malloc(len ? len : 1);
        if (!buf)
            abort();
        memcpy(buf, data + at, len);
        at += len;
        px_btl_verbs_rx_t rx;
        int room = num_recvs - credits, ctl_room = ctl_recvs - ctl_credits;
        int code = px_btl_verbs_hdr_decode(buf, len, max_len, room, ctl_room, &rx);
        if (code >= 0) {
            credits += rx.credits;
            ctl_credits += rx.ctl_credits;
            if (credits > num_recvs || ctl_credits > ctl_recvs) {
                fprintf(stderr,
                        "fuzz_verbs_recv: the peer brought credits beyond those spent on it: "
                        "%d of %d data, %d of %d control\n",
                        credits, num_recvs, ctl_credits, ctl_recvs);
                abort();
            }
            if (len < sizeof(px_btl_verbs_hdr_t) || len > max_len) {
                fprintf(stderr,
                        "fuzz_verbs_recv: a %zu-byte message accepted for a %zu-byte "
                        "buffer\n",
                        len, max_len);
                abort();
            }
            if (PX_BTL_VERBS_RX_CREDIT == code &&
                (rx.flags != PX_BTL_VERBS_HDR_CREDIT || len != sizeof(px_btl_verbs_hdr_t))) {
                fprintf(stderr,
                        "fuzz_verbs_recv: a %zu-byte credit update with flags 0x%x "
                        "accepted\n",
                        len, rx.flags);
                abort();
            }
            if (PX_BTL_VERBS_RX_DELIVER == code) {
                if (0 != rx.flags) {
                    fprintf(stderr, "fuzz_verbs_recv: flags 0x%x delivered\n", rx.flags);
                    abort();
                }
                if (rx.payload != buf + sizeof(px_btl_verbs_hdr_t) ||
                    rx.payload_len != len - sizeof(px_btl_verbs_hdr_t))
                    abort();
                volatile unsigned sum = 0;
                for (size_t i = 0; i < rx.payload_len; ++i)
                    sum += (unsigned char)rx.payload[i];
                (void)sum;
            }
        } else {
            char why[300] = "";
            px_btl_verbs_hdr_why(code, &rx, len, max_len, room, ctl_room, why, sizeof(why));
            if ('\0' == why[0] || strstr(why, "(code "))
                abort();
            free(buf);
            break; /* the peer is failed: nothing more comes from it */
        }
        free(buf);
    }
    return 0;
}
