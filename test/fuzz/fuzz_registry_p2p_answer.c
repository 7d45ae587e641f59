/*
 * fuzz_registry_p2p_answer: registry/p2p's client reading an answer from an
 * owner that may be hostile (components/registry/p2p/p2p_client.c). Byte 0
 * chooses the request the answer is to (bit 0: LIST, else GET) and whether
 * the owner then closes (bit 1 clear) or stays silent (bit 1 set); the rest
 * goes through a socketpair to px_registry_p2p_read_answer, as from a TCP
 * connection. It must return within its deadline, accept only bodies within
 * their bounds, and a listing it accepts must read to its end or be refused
 * by px_registry_p2p_list_next.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "components/registry/p2p/p2p.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int op = (data[0] & 1) ? PX_REGISTRY_P2P_LIST : PX_REGISTRY_P2P_GET;
    int silent = data[0] & 2;
    data++, size--;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(sv[0], data + off, size - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (!silent)
        close(sv[0]);
    px_registry_p2p_answer_t a;
    uint8_t *body = NULL;
    char why[512];
    /* a short deadline: a silent owner is the timeout path */
    int rc = px_registry_p2p_read_answer(sv[1], "fuzz:1", op, px_registry_p2p_now() + 0.02,
                                         64 * 1024, &a, &body, why, sizeof why);
    if (rc == PX_SUCCESS) {
        size_t max = a.status != PX_REGISTRY_P2P_OK ? PX_REGISTRY_P2P_MSG_MAX
                     : op == PX_REGISTRY_P2P_GET    ? PX_REGISTRY_VALUE_MAX
                                                    : 64 * 1024;
        if (a.body_len > max || body[a.body_len] != 0)
            abort();
        if (op == PX_REGISTRY_P2P_LIST && a.status == PX_REGISTRY_P2P_OK) {
            const uint8_t *p = body, *end = body + a.body_len;
            const char *name;
            const uint8_t *value;
            size_t nl, vl;
            while (px_registry_p2p_list_next(&p, end, &name, &nl, &value, &vl, why, sizeof why) ==
                   1)
                if (value + vl > end || nl == 0)
                    abort();
        }
        free(body);
    } else if (!why[0])
        abort(); /* every failure says why */
    if (silent)
        close(sv[0]);
    close(sv[1]);
    return 0;
}
