/*
 * fuzz_name_entry.c: the decoder of registry entries (runtime/name/entry.c),
 * which reads what any process with write access to the store put there.
 * No px_init: the decoder is pure.
 * Checks, beyond "no crash, no sanitizer report, no leak": an entry the
 * decoder accepts has fields within their limits and is written back by the
 * encoder into an entry that decodes to the same fields; a refused one says
 * why; the strict base64 decoder round-trips what it accepts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/name/name.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static px_name_entry_t e, e2;
    char why[300];
    int rc = px_name_entry_decode(data, size, &e, why, sizeof why);
    if (rc != PX_SUCCESS) {
        if (!why[0] || 0 == strcmp(why, "?") || 0 == strcmp(why, "ok"))
            abort(); /* a refusal says why */
        if (rc != PX_ERR_BAD_PARAM && rc != PX_ERR_VERSION && rc != PX_ERR_NOT_SUPPORTED &&
            rc != PX_ERR_OUT_OF_RESOURCE)
            abort();
    } else {
        if (e.kind != PX_NAME_REGION && e.kind != PX_NAME_CONTACT)
            abort();
        if (e.version < 1 || e.version > PX_NAME_ENTRY_VERSION || e.pid < 1)
            abort();
        if (strlen(e.contact) >= sizeof e.contact || strlen(e.host) >= sizeof e.host)
            abort();
        if (PX_NAME_REGION == e.kind &&
            (0 == e.keylen || e.keylen > PX_XFER_KEY_MAX || 0 == e.length))
            abort();
        char *out;
        size_t len;
        if (px_name_entry_encode(&e, &out, &len) != PX_SUCCESS)
            abort();
        if (px_name_entry_decode(out, len, &e2, why, sizeof why) != PX_SUCCESS)
            abort();
        if (e2.kind != e.kind || e2.keylen != e.keylen || memcmp(e2.key, e.key, e.keylen) != 0 ||
            e2.length != e.length || e2.pid != e.pid || e2.owner != e.owner ||
            strcmp(e2.host, e.host) != 0 || strcmp(e2.contact, e.contact) != 0)
            abort();
        free(out);
    }
    /* The base64 decoder on the raw input: strict, one encoding per bytes. */
    static unsigned char raw[PX_XFER_KEY_MAX];
    long n = px_name_b64_decode((const char *)data, size, raw, sizeof raw);
    if (n >= 0) {
        char *enc = malloc(px_name_b64_len((size_t)n) + 1);
        if (NULL == enc)
            abort();
        px_name_b64_encode(raw, (size_t)n, enc);
        if (strlen(enc) != size || memcmp(enc, data, size) != 0)
            abort();
        free(enc);
    }
    /* The name rules on the input as a string. */
    char name[300];
    size_t m = size < sizeof name - 1 ? size : sizeof name - 1;
    memcpy(name, data, m);
    name[m] = 0;
    (void)px_name_problem(name, PX_NAME_MAX);
    return 0;
}
