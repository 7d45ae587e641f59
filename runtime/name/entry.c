/*
 * entry.c: what a name's value in the registry is: a versioned JSON object
 * (docs/registry.md, "Entries"), written with json-c and read back strictly,
 * since anyone with write access to the store may have put anything there:
 *
 *   {"plexus":1,"kind":"region","contact":"...","key":"<base64>","length":N,
 *    "host":"...","pid":N,"owner":"<16 hex digits>"}
 *
 * "plexus" is the format's version. A reader takes every version up to its
 * own (unknown fields are ignored, so a later minor addition is read by an
 * older Plexus) and refuses a newer one, naming it.
 */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frameworks/registry/registry.h"
#include "runtime/name/name.h"
#if PX_HAVE_JSONC
#include <json-c/json.h>
#endif

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t px_name_b64_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

void px_name_b64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = 0;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

long px_name_b64_decode(const char *in, size_t n, unsigned char *out, size_t cap)
{
    if (n % 4 != 0)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int pad = 0, v[4];
        for (int k = 0; k < 4; ++k) {
            if ('=' == in[i + k] && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad) /* data after padding */
                return -1;
            v[k] = b64_val(in[i + k]);
            if (v[k] < 0)
                return -1;
        }
        /* Strict: the bits padding leaves unused are zero (one encoding per
         * byte string). */
        if ((2 == pad && (v[1] & 15) != 0) || (1 == pad && (v[2] & 3) != 0))
            return -1;
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        size_t take = 3 - (size_t)pad;
        if (o + take > cap)
            return -1;
        out[o++] = (unsigned char)(w >> 16);
        if (take > 1)
            out[o++] = (unsigned char)(w >> 8);
        if (take > 2)
            out[o++] = (unsigned char)w;
    }
    return (long)o;
}

const char *px_name_problem(const char *name, size_t max)
{
    if (NULL == name)
        return "it is NULL";
    size_t n = strnlen(name, max + 1);
    if (0 == n)
        return "it is empty";
    if (n > max)
        return "it is too long";
    if ('/' == name[0] || '/' == name[n - 1])
        return "it starts or ends with '/'";
    if (strstr(name, "//"))
        return "it contains \"//\"";
    for (size_t i = 0; i < n; ++i) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              '.' == c || '_' == c || ':' == c || '/' == c || '-' == c))
            return "it has a character outside [A-Za-z0-9._:/-]";
    }
    return NULL;
}

#if PX_HAVE_JSONC

bool px_name_entry_supported(void)
{
    return true;
}

int px_name_entry_encode(const px_name_entry_t *e, char **out, size_t *len)
{
    json_object *o = json_object_new_object();
    if (NULL == o)
        return PX_ERR_OUT_OF_RESOURCE;
    char owner[17];
    snprintf(owner, sizeof owner, "%016llx", (unsigned long long)e->owner);
    json_object_object_add(o, "plexus", json_object_new_int(PX_NAME_ENTRY_VERSION));
    json_object_object_add(
        o, "kind", json_object_new_string(PX_NAME_REGION == e->kind ? "region" : "contact"));
    json_object_object_add(o, "contact", json_object_new_string(e->contact));
    if (PX_NAME_REGION == e->kind) {
        char *k = malloc(px_name_b64_len(e->keylen) + 1);
        if (NULL == k) {
            json_object_put(o);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        px_name_b64_encode(e->key, e->keylen, k);
        json_object_object_add(o, "key", json_object_new_string(k));
        free(k);
        json_object_object_add(o, "length", json_object_new_int64((int64_t)e->length));
    }
    json_object_object_add(o, "host", json_object_new_string(e->host));
    json_object_object_add(o, "pid", json_object_new_int64(e->pid));
    json_object_object_add(o, "owner", json_object_new_string(owner));
    const char *s =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = PX_SUCCESS;
    *out = s ? strdup(s) : NULL;
    if (NULL == *out)
        rc = PX_ERR_OUT_OF_RESOURCE;
    else
        *len = strlen(*out);
    json_object_put(o);
    return rc;
}

/* A string field of 1..max-1 printable ASCII characters (no space) into
 * buf[0..max). */
static int get_text(json_object *o, const char *field, char *buf, size_t max, char *why, size_t cap)
{
    json_object *v;
    if (!json_object_object_get_ex(o, field, &v)) {
        snprintf(why, cap, "the field \"%s\" is missing", field);
        return PX_ERR_BAD_PARAM;
    }
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(why, cap, "the field \"%s\" is not a string", field);
        return PX_ERR_BAD_PARAM;
    }
    size_t n = (size_t)json_object_get_string_len(v);
    const char *s = json_object_get_string(v);
    if (0 == n || n >= max) {
        snprintf(why, cap, "the field \"%s\" has %zu bytes (accepted: 1 to %zu)", field, n,
                 max - 1);
        return PX_ERR_BAD_PARAM;
    }
    for (size_t i = 0; i < n; ++i)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) {
            snprintf(why, cap,
                     "the field \"%s\" has a byte 0x%02x at %zu (accepted: printable ASCII "
                     "without spaces)",
                     field, (unsigned char)s[i], i);
            return PX_ERR_BAD_PARAM;
        }
    memcpy(buf, s, n);
    buf[n] = 0;
    return PX_SUCCESS;
}

/* An integer field from lo to hi. */
static int get_int(json_object *o, const char *field, int64_t lo, int64_t hi, int64_t *out,
                   char *why, size_t cap)
{
    json_object *v;
    if (!json_object_object_get_ex(o, field, &v)) {
        snprintf(why, cap, "the field \"%s\" is missing", field);
        return PX_ERR_BAD_PARAM;
    }
    if (!json_object_is_type(v, json_type_int)) {
        snprintf(why, cap, "the field \"%s\" is not an integer", field);
        return PX_ERR_BAD_PARAM;
    }
    errno = 0;
    int64_t x = json_object_get_int64(v);
    /* json-c saturates what does not fit (and says so in errno for a uint64). */
    if (x < lo || x > hi || (INT64_MAX == x && hi < INT64_MAX)) {
        snprintf(why, cap, "the field \"%s\" is out of range (accepted: %lld to %lld)", field,
                 (long long)lo, (long long)hi);
        return PX_ERR_BAD_PARAM;
    }
    *out = x;
    return PX_SUCCESS;
}

int px_name_entry_decode(const void *buf, size_t len, px_name_entry_t *e, char *why, size_t cap)
{
    memset(e, 0, sizeof *e);
    snprintf(why, cap, "?");
    if (len > PX_REGISTRY_VALUE_MAX) {
        snprintf(why, cap, "it is %zu bytes, more than the %d an entry may have", len,
                 PX_REGISTRY_VALUE_MAX);
        return PX_ERR_BAD_PARAM;
    }
    if (0 == len || NULL == buf) {
        snprintf(why, cap, "it is empty (a Plexus entry is a JSON object)");
        return PX_ERR_BAD_PARAM;
    }
    if (memchr(buf, 0, len)) {
        snprintf(why, cap, "it holds a NUL byte (a Plexus entry is JSON text)");
        return PX_ERR_BAD_PARAM;
    }
    json_tokener *tok = json_tokener_new_ex(8);
    if (NULL == tok)
        return PX_ERR_OUT_OF_RESOURCE;
    json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = PX_ERR_BAD_PARAM;
    if (NULL == o || jerr != json_tokener_success) {
        snprintf(why, cap, "it is not JSON: %s at byte %zu",
                 jerr == json_tokener_continue ? "it ends early" : json_tokener_error_desc(jerr),
                 used);
        goto out;
    }
    for (size_t i = used; i < len; ++i)
        if (!strchr(" \t\r\n", ((const char *)buf)[i])) {
            snprintf(why, cap, "bytes follow the JSON object (at byte %zu)", i);
            goto out;
        }
    if (!json_object_is_type(o, json_type_object)) {
        snprintf(why, cap, "it is JSON but not an object");
        goto out;
    }
    json_object *v;
    if (!json_object_object_get_ex(o, "plexus", &v)) {
        snprintf(why, cap,
                 "it has no \"plexus\" field (the entry format's version): not written "
                 "by Plexus");
        goto out;
    }
    int64_t x;
    if (get_int(o, "plexus", 1, INT_MAX, &x, why, cap) != PX_SUCCESS)
        goto out;
    e->version = (int)x;
    if (x > PX_NAME_ENTRY_VERSION) {
        snprintf(why, cap,
                 "it is an entry of format version %d, written by a newer Plexus; this one reads "
                 "versions 1 to %d",
                 e->version, PX_NAME_ENTRY_VERSION);
        rc = PX_ERR_VERSION;
        goto out;
    }
    char kind[16];
    if (get_text(o, "kind", kind, sizeof kind, why, cap) != PX_SUCCESS)
        goto out;
    if (0 == strcmp(kind, "region"))
        e->kind = PX_NAME_REGION;
    else if (0 == strcmp(kind, "contact"))
        e->kind = PX_NAME_CONTACT;
    else {
        snprintf(why, cap, "the field \"kind\" is \"%s\" (accepted: \"region\" or \"contact\")",
                 kind);
        goto out;
    }
    if (get_text(o, "contact", e->contact, sizeof e->contact, why, cap) != PX_SUCCESS ||
        get_text(o, "host", e->host, sizeof e->host, why, cap) != PX_SUCCESS ||
        get_int(o, "pid", 1, INT32_MAX, &x, why, cap) != PX_SUCCESS)
        goto out;
    e->pid = (long)x;
    char owner[20];
    if (get_text(o, "owner", owner, sizeof owner, why, cap) != PX_SUCCESS)
        goto out;
    if (strlen(owner) != 16 || strspn(owner, "0123456789abcdef") != 16) {
        snprintf(why, cap, "the field \"owner\" is \"%s\" (accepted: 16 lower-case hex digits)",
                 owner);
        goto out;
    }
    e->owner = strtoull(owner, NULL, 16);
    if (PX_NAME_REGION == e->kind) {
        if (get_int(o, "length", 1, INT64_MAX - 1, &x, why, cap) != PX_SUCCESS)
            goto out;
        e->length = (uint64_t)x;
        v = NULL;
        if (!json_object_object_get_ex(o, "key", &v) || !json_object_is_type(v, json_type_string)) {
            snprintf(why, cap, "the field \"key\" is %s", v ? "not a string" : "missing");
            goto out;
        }
        size_t n = (size_t)json_object_get_string_len(v);
        if (0 == n || n > px_name_b64_len(PX_XFER_KEY_MAX)) {
            snprintf(why, cap, "the field \"key\" has %zu characters (accepted: 1 to %zu)", n,
                     px_name_b64_len(PX_XFER_KEY_MAX));
            goto out;
        }
        long k = px_name_b64_decode(json_object_get_string(v), n, e->key, sizeof e->key);
        if (k <= 0) {
            snprintf(why, cap,
                     "the field \"key\" is not base64 (RFC 4648, padded) of at most %d "
                     "bytes",
                     PX_XFER_KEY_MAX);
            goto out;
        }
        e->keylen = (size_t)k;
    }
    rc = PX_SUCCESS;
    snprintf(why, cap, "ok");
out:
    if (o)
        json_object_put(o);
    return rc;
}

#else /* without json-c */

bool px_name_entry_supported(void)
{
    return false;
}

int px_name_entry_encode(const px_name_entry_t *e, char **out, size_t *len)
{
    (void)e;
    *out = NULL;
    *len = 0;
    return PX_ERR_NOT_SUPPORTED;
}

int px_name_entry_decode(const void *buf, size_t len, px_name_entry_t *e, char *why, size_t cap)
{
    (void)buf;
    (void)len;
    memset(e, 0, sizeof *e);
    snprintf(why, cap,
             "this Plexus was built without json-c (libjson-c-dev), which reads "
             "entries");
    return PX_ERR_NOT_SUPPORTED;
}

#endif
