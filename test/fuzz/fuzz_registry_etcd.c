/*
 * fuzz_registry_etcd.c: registry/etcd's reading of what an etcd endpoint
 * answers (components/registry/etcd/etcd_wire.c px_registry_etcd_parse,
 * compiled in), and its base64 and range-end helpers.
 *
 * Input: byte 0 picks the request kind the answer is for (modulo the
 * kinds: range, put, delete, txn, grant, keepalive, revoke); the rest is the
 * answer, copied to a buffer of its exact length (a read past it is a
 * sanitizer report). Checks beyond that: an accepted answer's pairs hold
 * what their lengths say (a NUL after each), an unusable pair has no value
 * and a reason, a usable one fits the registry's limits; a refusal has a
 * reason. The rest of the input is also decoded as base64: what decodes
 * must encode back to the same text, and the range end of it as a prefix
 * must sort after every key with that prefix.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "components/registry/etcd/etcd_wire.h"
#include "core/util/error.h"
#include "frameworks/registry/registry.h"
#include "test/fuzz/fuzz.h"

PX_FUZZ_NO_INIT

static void check_b64(const uint8_t *data, size_t size)
{
    unsigned char *out = malloc(size / 4 * 3 + 1);
    if (NULL == out)
        return;
    long n = px_registry_etcd_b64_decode((const char *)data, size, out);
    if (n >= 0) {
        char *back = malloc(px_registry_etcd_b64_len((size_t)n) + 1);
        if (back) {
            px_registry_etcd_b64_encode(out, (size_t)n, back);
            if (strlen(back) != size || memcmp(back, data, size))
                abort(); /* decoded text that is not the one canonical form */
            free(back);
        }
    }
    free(out);
    /* range end: every key starting with the prefix sorts below it
     * (bytewise, a shorter key before its extensions) */
    if (size > 0 && size <= 600) {
        unsigned char end[600];
        size_t el = px_registry_etcd_range_end(data, size, end);
        if (el > size || el < 1)
            abort();
        size_t k = size;
        while (k > 0 && 0xff == data[k - 1])
            k--;
        if (0 == k) {
            if (1 != el || 0 != end[0])
                abort();
        } else {
            /* the prefix itself (any extension compares the same on the
             * first el bytes) must sort below end */
            int c = memcmp(data, end, el);
            if (c >= 0)
                abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int kind = data[0] % PX_REGISTRY_ETCD_KINDS;
    size_t n = size - 1;
    char *body = malloc(n ? n : 1);
    if (NULL == body)
        return 0;
    memcpy(body, data + 1, n);
    px_registry_etcd_answer_t a;
    char why[256];
    int rc = px_registry_etcd_parse(kind, body, n, &a, why, sizeof why);
    if (PX_SUCCESS == rc) {
        if (a.is_error && '\0' == a.message[0])
            abort(); /* an error answer always carries a message */
        if (a.n_kvs > PX_REGISTRY_ETCD_KVS_MAX)
            abort();
        for (size_t i = 0; i < a.n_kvs; i++) {
            px_registry_etcd_kv_t *kv = &a.kvs[i];
            if (NULL == kv->key || '\0' != kv->key[kv->key_len])
                abort();
            if (kv->error) {
                if (kv->value)
                    abort();
            } else {
                if (NULL == kv->value || '\0' != kv->value[kv->value_len] ||
                    kv->key_len > PX_REGISTRY_KEY_MAX || kv->value_len > PX_REGISTRY_VALUE_MAX ||
                    strlen(kv->key) != kv->key_len)
                    abort();
            }
        }
    } else if (PX_ERR_BAD_PARAM != rc || '\0' == why[0]) {
        abort(); /* a refusal without a reason */
    }
    px_registry_etcd_answer_free(&a);
    free(body);
    check_b64(data + 1, n);
    return 0;
}
