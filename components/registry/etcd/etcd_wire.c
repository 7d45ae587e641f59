/*
 * etcd_wire.c: parsing etcd's gateway answers (untrusted) and base64.
 * See etcd_wire.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "components/registry/etcd/etcd_wire.h"
#include "core/util/error.h"
#include "frameworks/registry/registry.h"

/* Deepest JSON nesting an answer may have (a nested txn's range is 8). */
#define ETCD_JSON_DEPTH 16

static int fail(char *why, size_t cap, const char *fmt, ...) PX_PRINTF(3, 4);
static int fail(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return PX_ERR_BAD_PARAM;
}

void px_registry_etcd_printable(const void *s, size_t n, char *buf, size_t cap)
{
    const unsigned char *p = s;
    size_t o = 0;
    if (0 == cap)
        return;
    for (size_t i = 0; i < n; i++) {
        if (o + 8 >= cap) {
            if (cap >= 4) {
                o = o < cap - 4 ? o : cap - 4;
                memcpy(buf + o, "...", 3);
                o += 3;
            }
            break;
        }
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
            buf[o++] = (char)p[i];
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", p[i]);
    }
    buf[o] = '\0';
}

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t px_registry_etcd_b64_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

void px_registry_etcd_b64_encode(const void *in, size_t n, char *out)
{
    const unsigned char *p = in;
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = '=';
    }
    out[o] = '\0';
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if ('+' == c)
        return 62;
    if ('/' == c)
        return 63;
    return -1;
}

/* The decoded length of canonical base64 text of n bytes, or -1. */
static long b64_decoded_len(const char *in, size_t n)
{
    if (n % 4)
        return -1;
    if (0 == n)
        return 0;
    size_t pad = ('=' == in[n - 1]) + ('=' == in[n - 1] && '=' == in[n - 2]);
    return (long)(n / 4 * 3 - pad);
}

long px_registry_etcd_b64_decode(const char *in, size_t n, unsigned char *out)
{
    long len = b64_decoded_len(in, n);
    if (len < 0)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        bool last = i + 4 == n;
        for (int j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)in[i + j];
            if ('=' == c && last && j >= 2 && (j == 3 || '=' == in[i + 3]))
                v[j] = 0;
            else if ((v[j] = b64_val(c)) < 0)
                return -1;
        }
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (unsigned char)(w >> 16);
        if (o < (size_t)len)
            out[o++] = (unsigned char)(w >> 8);
        else if (w & 0xffff)
            return -1; /* bits set under the padding: not canonical */
        if (o < (size_t)len)
            out[o++] = (unsigned char)w;
        else if (w & 0xff)
            return -1;
    }
    return len;
}

size_t px_registry_etcd_range_end(const void *prefix, size_t n, unsigned char *out)
{
    const unsigned char *p = prefix;
    size_t k = n;
    while (k > 0 && 0xff == p[k - 1])
        k--;
    if (0 == k) {
        out[0] = 0;
        return 1;
    }
    memcpy(out, p, k);
    out[k - 1]++;
    return k;
}

/* ---- JSON ---- */

/* An int64 field: a JSON string of decimal digits (how the gateway writes
 * int64) or a JSON integer; absent: dflt. */
static int get_i64(json_object *o, const char *name, int64_t dflt, int64_t *out, char *why,
                   size_t cap)
{
    json_object *f;
    *out = dflt;
    if (!json_object_object_get_ex(o, name, &f) || NULL == f)
        return PX_SUCCESS;
    if (json_type_int == json_object_get_type(f)) {
        errno = 0;
        *out = json_object_get_int64(f);
        if (errno)
            return fail(why, cap, "\"%s\" is out of range", name);
        return PX_SUCCESS;
    }
    if (json_type_string != json_object_get_type(f))
        return fail(why, cap, "\"%s\" is a %s, not an integer or a string of digits", name,
                    json_type_to_name(json_object_get_type(f)));
    const char *s = json_object_get_string(f);
    int n = json_object_get_string_len(f);
    char *end;
    if (n < 1 || n > 20 || (int)strlen(s) != n || !((s[0] >= '0' && s[0] <= '9') || '-' == s[0]))
        return fail(why, cap, "\"%s\" is not a string of digits", name);
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return fail(why, cap, "\"%s\" (\"%.24s\") is not a 64-bit integer", name, s);
    *out = v;
    return PX_SUCCESS;
}

static int get_bool(json_object *o, const char *name, bool *out, char *why, size_t cap)
{
    json_object *f;
    *out = false;
    if (!json_object_object_get_ex(o, name, &f) || NULL == f)
        return PX_SUCCESS;
    if (json_type_boolean != json_object_get_type(f))
        return fail(why, cap, "\"%s\" is a %s, not a boolean", name,
                    json_type_to_name(json_object_get_type(f)));
    *out = json_object_get_boolean(f);
    return PX_SUCCESS;
}

/* A field that must be an object when present: NULL when absent. */
static int get_obj(json_object *o, const char *name, json_object **out, char *why, size_t cap)
{
    json_object *f;
    *out = NULL;
    if (!json_object_object_get_ex(o, name, &f) || NULL == f)
        return PX_SUCCESS;
    if (json_type_object != json_object_get_type(f))
        return fail(why, cap, "\"%s\" is a %s, not an object", name,
                    json_type_to_name(json_object_get_type(f)));
    *out = f;
    return PX_SUCCESS;
}

static int get_array(json_object *o, const char *name, json_object **out, char *why, size_t cap)
{
    json_object *f;
    *out = NULL;
    if (!json_object_object_get_ex(o, name, &f) || NULL == f)
        return PX_SUCCESS;
    if (json_type_array != json_object_get_type(f))
        return fail(why, cap, "\"%s\" is a %s, not an array", name,
                    json_type_to_name(json_object_get_type(f)));
    *out = f;
    return PX_SUCCESS;
}

/* A base64 bytes field (absent: empty, as the gateway omits empty bytes). */
static int get_b64(json_object *o, const char *name, const char **s, size_t *n, char *why,
                   size_t cap)
{
    json_object *f;
    *s = "";
    *n = 0;
    if (!json_object_object_get_ex(o, name, &f) || NULL == f)
        return PX_SUCCESS;
    if (json_type_string != json_object_get_type(f))
        return fail(why, cap, "\"%s\" is a %s, not a base64 string", name,
                    json_type_to_name(json_object_get_type(f)));
    *s = json_object_get_string(f);
    *n = (size_t)json_object_get_string_len(f);
    if (b64_decoded_len(*s, *n) < 0)
        return fail(why, cap, "\"%s\" is not base64 (%zu characters, not a multiple of 4)", name,
                    *n);
    return PX_SUCCESS;
}

static int parse_kv(json_object *o, px_registry_etcd_kv_t *kv, char *why, size_t cap)
{
    const char *ks, *vs;
    size_t kn, vn;
    int rc;
    if (json_type_object != json_object_get_type(o))
        return fail(why, cap, "a \"kvs\" item is a %s, not an object",
                    json_type_to_name(json_object_get_type(o)));
    if ((rc = get_b64(o, "key", &ks, &kn, why, cap)) ||
        (rc = get_b64(o, "value", &vs, &vn, why, cap)))
        return rc;
    long klen = b64_decoded_len(ks, kn), vlen = b64_decoded_len(vs, vn);
    unsigned char *k = malloc((size_t)klen + 1);
    if (NULL == k)
        return fail(why, cap, "out of memory for a key of %ld bytes", klen);
    if (px_registry_etcd_b64_decode(ks, kn, k) != klen) {
        free(k);
        return fail(why, cap, "a \"key\" is not canonical base64");
    }
    k[klen] = '\0';
    kv->key = (char *)k;
    kv->key_len = (size_t)klen;
    if ((size_t)klen > PX_REGISTRY_KEY_MAX || memchr(k, '\0', (size_t)klen)) {
        kv->error = (size_t)klen > PX_REGISTRY_KEY_MAX ? "its key is longer than 512 bytes"
                                                       : "its key contains a NUL byte";
        return PX_SUCCESS;
    }
    if (vlen > PX_REGISTRY_VALUE_MAX) {
        kv->error = "its value is longer than 65536 bytes (PX_REGISTRY_VALUE_MAX)";
        return PX_SUCCESS;
    }
    kv->value = malloc((size_t)vlen + 1);
    if (NULL == kv->value)
        return fail(why, cap, "out of memory for a value of %ld bytes", vlen);
    if (px_registry_etcd_b64_decode(vs, vn, kv->value) != vlen)
        return fail(why, cap, "the value of a key is not canonical base64");
    kv->value[vlen] = '\0';
    kv->value_len = (size_t)vlen;
    return PX_SUCCESS;
}

static int parse_range(json_object *o, px_registry_etcd_answer_t *a, char *why, size_t cap)
{
    json_object *kvs;
    int rc;
    if ((rc = get_array(o, "kvs", &kvs, why, cap)) ||
        (rc = get_bool(o, "more", &a->more, why, cap)))
        return rc;
    if (NULL == kvs)
        return PX_SUCCESS;
    size_t n = json_object_array_length(kvs);
    if (n > PX_REGISTRY_ETCD_KVS_MAX)
        return fail(why, cap, "%zu key-value pairs, more than the %d asked for at most", n,
                    PX_REGISTRY_ETCD_KVS_MAX);
    if (a->kvs)
        return fail(why, cap, "more than one range in a transaction's answer");
    a->kvs = calloc(n ? n : 1, sizeof *a->kvs);
    if (NULL == a->kvs)
        return fail(why, cap, "out of memory");
    for (size_t i = 0; i < n; i++) {
        a->n_kvs = i + 1;
        if ((rc = parse_kv(json_object_array_get_idx(kvs, i), &a->kvs[i], why, cap)))
            return rc;
    }
    return PX_SUCCESS;
}

static int parse_txn(json_object *o, int depth, px_registry_etcd_answer_t *a, char *why, size_t cap)
{
    json_object *resps;
    bool ok;
    int rc;
    if ((rc = get_bool(o, "succeeded", &ok, why, cap)) ||
        (rc = get_array(o, "responses", &resps, why, cap)))
        return rc;
    if (0 == depth)
        a->succeeded = ok;
    else
        a->inner = ok;
    size_t n = resps ? json_object_array_length(resps) : 0;
    if (n > 4)
        return fail(why, cap, "%zu responses in a transaction that asked for at most 2", n);
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(resps, i), *f;
        if (json_type_object != json_object_get_type(r))
            return fail(why, cap, "a transaction's response is a %s, not an object",
                        json_type_to_name(json_object_get_type(r)));
        if ((rc = get_obj(r, "response_range", &f, why, cap)))
            return rc;
        if (f && (rc = parse_range(f, a, why, cap)))
            return rc;
        if ((rc = get_obj(r, "response_delete_range", &f, why, cap)))
            return rc;
        if (f && (rc = get_i64(f, "deleted", 0, &a->deleted, why, cap)))
            return rc;
        if ((rc = get_obj(r, "response_txn", &f, why, cap)))
            return rc;
        if (f) {
            if (depth > 0)
                return fail(why, cap, "a transaction nested deeper than the one asked for");
            if ((rc = parse_txn(f, depth + 1, a, why, cap)))
                return rc;
        }
    }
    return PX_SUCCESS;
}

/* {"error": "text" or {...}, "message": "text", "code": N} */
static void parse_error(json_object *o, json_object *err, px_registry_etcd_answer_t *a)
{
    json_object *f, *c = NULL;
    const char *msg = NULL;
    a->is_error = true;
    a->code = -1;
    if (json_object_object_get_ex(o, "message", &f) && json_type_string == json_object_get_type(f))
        msg = json_object_get_string(f);
    if (json_type_object == json_object_get_type(err)) {
        if (!msg && json_object_object_get_ex(err, "message", &f) &&
            json_type_string == json_object_get_type(f))
            msg = json_object_get_string(f);
        json_object_object_get_ex(err, "grpc_code", &c);
    } else if (!msg && json_type_string == json_object_get_type(err)) {
        msg = json_object_get_string(err);
    }
    if (NULL == c)
        json_object_object_get_ex(o, "code", &c);
    if (c && json_type_int == json_object_get_type(c)) {
        int64_t v = json_object_get_int64(c);
        a->code = v >= 0 && v < 100 ? (int)v : -1;
    }
    if (NULL == msg || '\0' == msg[0])
        msg = "(no message)";
    px_registry_etcd_printable(msg, strlen(msg), a->message, sizeof a->message);
}

int px_registry_etcd_parse(int kind, const char *body, size_t len, px_registry_etcd_answer_t *a,
                           char *why, size_t cap)
{
    memset(a, 0, sizeof *a);
    a->revision = -1;
    a->inner = -1;
    a->code = -1;
    if (why && cap)
        why[0] = '\0';
    if (kind < 0 || kind >= PX_REGISTRY_ETCD_KINDS)
        return fail(why, cap, "unknown request kind %d", kind);
    if (0 == len)
        return fail(why, cap, "an empty answer (JSON expected)");
    if (len > PX_REGISTRY_ETCD_ANSWER_MAX)
        return fail(why, cap, "an answer of %zu bytes, more than the %u accepted", len,
                    PX_REGISTRY_ETCD_ANSWER_MAX);
    if (memchr(body, '\0', len))
        return fail(why, cap, "a NUL byte in the answer (JSON text expected)");
    json_tokener *tok = json_tokener_new_ex(ETCD_JSON_DEPTH);
    if (NULL == tok)
        return fail(why, cap, "out of memory");
    json_object *root = json_tokener_parse_ex(tok, body, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = PX_SUCCESS;
    if (NULL == root || json_tokener_success != jerr) {
        char p[64];
        px_registry_etcd_printable(body, len < 40 ? len : 40, p, sizeof p);
        rc = fail(why, cap, "not JSON (%s) in an answer starting \"%s\"",
                  json_tokener_success == jerr ? "incomplete" : json_tokener_error_desc(jerr), p);
        goto out;
    }
    /* After the object only white space, except in a stream (keepalive),
     * whose first message is the one read. */
    for (size_t i = end; i < len && kind != PX_REGISTRY_ETCD_KEEPALIVE; i++)
        if (!strchr(" \t\r\n", body[i])) {
            rc = fail(why, cap, "text after the JSON object at byte %zu", i);
            goto out;
        }
    if (json_type_object != json_object_get_type(root)) {
        rc = fail(why, cap, "the answer is a JSON %s, not an object",
                  json_type_to_name(json_object_get_type(root)));
        goto out;
    }
    json_object *o = root, *f;
    if (json_object_object_get_ex(root, "error", &f) && f &&
        !(json_type_string == json_object_get_type(f) && 0 == json_object_get_string_len(f))) {
        parse_error(root, f, a);
        goto out;
    }
    if (PX_REGISTRY_ETCD_KEEPALIVE == kind) {
        if ((rc = get_obj(root, "result", &o, why, cap)))
            goto out;
        if (NULL == o) {
            rc = fail(why, cap, "a keepalive answer without \"result\"");
            goto out;
        }
    }
    json_object *hdr;
    if ((rc = get_obj(o, "header", &hdr, why, cap)) ||
        (hdr && (rc = get_i64(hdr, "revision", -1, &a->revision, why, cap))))
        goto out;
    switch (kind) {
    case PX_REGISTRY_ETCD_RANGE:
        rc = parse_range(o, a, why, cap);
        break;
    case PX_REGISTRY_ETCD_DELETE:
        rc = get_i64(o, "deleted", 0, &a->deleted, why, cap);
        break;
    case PX_REGISTRY_ETCD_TXN:
        rc = parse_txn(o, 0, a, why, cap);
        break;
    case PX_REGISTRY_ETCD_GRANT:
    case PX_REGISTRY_ETCD_KEEPALIVE:
        if ((rc = get_i64(o, "ID", 0, &a->lease_id, why, cap)) ||
            (rc = get_i64(o, "TTL", 0, &a->ttl, why, cap)))
            break;
        if (PX_REGISTRY_ETCD_GRANT == kind && (a->lease_id <= 0 || a->ttl <= 0))
            rc = fail(why, cap, "a lease grant without a positive \"ID\" and \"TTL\"");
        break;
    default: /* put, revoke: nothing to read beyond the header */
        break;
    }
out:
    json_object_put(root);
    return rc;
}

void px_registry_etcd_answer_free(px_registry_etcd_answer_t *a)
{
    for (size_t i = 0; i < a->n_kvs; i++) {
        free(a->kvs[i].key);
        free(a->kvs[i].value);
    }
    free(a->kvs);
    a->kvs = NULL;
    a->n_kvs = 0;
}
