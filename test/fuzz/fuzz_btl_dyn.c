/*
 * fuzz_btl_dyn.c: the dynamic peer payload (BTL API 3.3) as another process
 * sends it: px_btl_base_dyn_parse. Input: the payload, exactly its bytes
 * (ASan sees any read past it). Checks, beyond "no crash, no sanitizer
 * report": an accepted payload has a known kind, at most the parts allowed,
 * every part inside the input and within the part limit, names of a-z, 0-9
 * and _; a refused one says why.
 */
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"
#include "test/fuzz/fuzz.h"

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
        }
    } else if (PX_ERR_BAD_PARAM != rc || !why[0]) {
        abort();
    }
    free(buf);
    return 0;
}
