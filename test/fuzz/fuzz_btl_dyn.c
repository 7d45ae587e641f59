/*
 * fuzz_btl_dyn.c: the dynamic peer payload (BTL API 3.3) as another process
 * sends it: px_btl_base_dyn_parse. Input: the payload, exactly its bytes
 * (ASan sees any read past it). Checks, beyond "no crash, no sanitizer
 * report": an accepted payload has a known kind, at most the parts allowed,
 * every part inside the input and within the part limit, names of a-z, 0-9
 * and _; a refused one says why.
 * Built with btl/verbs's wire reader (PX_FUZZ_BTL_DYN_VERBS, where configure
 * found libibverbs), every part named "verbs" also goes through
 * px_btl_verbs_dyn_parse (components/btl/verbs/verbs_wire.c), as its own
 * exact-length copy: an accepted part has every field in its range and
 * writes back to the same bytes; a refused one says why.
 */
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"
#include "test/fuzz/fuzz.h"
#ifdef PX_FUZZ_BTL_DYN_VERBS
#include <infiniband/verbs.h>
#include "components/btl/verbs/verbs_wire.h"

static void verbs_part(const unsigned char *data, size_t len)
{
    unsigned char *p = malloc(len ? len : 1);
    if (!p)
        return;
    if (len)
        memcpy(p, data, len);
    px_btl_verbs_dyn_addr_t a;
    char why[256] = "";
    int rc = px_btl_verbs_dyn_parse(p, len, &a, why, sizeof why);
    if (PX_SUCCESS == rc) {
        if (len != PX_BTL_VERBS_DYN_LEN || 0 == a.qpn || a.qpn > 0xffffffu || a.psn > 0xffffffu ||
            a.mtu < IBV_MTU_256 || a.mtu > IBV_MTU_4096 || 0 == a.port ||
            a.link_layer > IBV_LINK_LAYER_ETHERNET || a.num_recvs < 1 ||
            a.num_recvs > PX_BTL_VERBS_DYN_RECVS_MAX || a.ctl_recvs < 1 ||
            a.ctl_recvs > PX_BTL_VERBS_DYN_CTL_MAX || a.recv_size <= 8 ||
            (IBV_LINK_LAYER_ETHERNET != a.link_layer && a.lid >= 0xc000))
            abort();
        unsigned char back[PX_BTL_VERBS_DYN_LEN];
        px_btl_verbs_dyn_write(&a, back);
        if (0 != memcmp(back, p, PX_BTL_VERBS_DYN_LEN))
            abort();
    } else if (PX_ERR_BAD_PARAM != rc || !why[0]) {
        abort();
    }
    free(p);
}
#endif

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    static px_btl_dyn_payload_t pl;
    char why[256] = "";
    int rc = px_btl_base_dyn_parse(buf, size, &pl, why, sizeof why);
    if (PX_SUCCESS == rc) {
        if (pl.kind != PX_BTL_DYN_OFFER && pl.kind != PX_BTL_DYN_REPLY)
            abort();
        if (pl.nparts < 0 || pl.nparts > PX_BTL_DYN_MAX_PARTS)
            abort();
        for (int i = 0; i < pl.nparts; i++) {
            const px_btl_dyn_part_t *p = &pl.parts[i];
            if (p->data < buf || p->data + p->len > buf + size || p->len > PX_BTL_DYN_PART_MAX)
                abort();
            size_t nl = strlen(p->component);
            if (nl < 1 || nl > PX_BTL_DYN_NAME_MAX ||
                strspn(p->component, "abcdefghijklmnopqrstuvwxyz0123456789_") != nl)
                abort();
#ifdef PX_FUZZ_BTL_DYN_VERBS
            if (0 == strcmp(p->component, "verbs"))
                verbs_part(p->data, p->len);
#endif
        }
    } else if (PX_ERR_BAD_PARAM != rc || !why[0]) {
        abort();
    }
    free(buf);
    return 0;
}
