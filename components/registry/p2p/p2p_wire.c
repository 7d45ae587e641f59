/*
 * p2p_wire.c: registry/p2p's request and answer framing (p2p_wire.h). Pure
 * functions over buffers: the listener, the client and the fuzz harnesses
 * (test/fuzz/fuzz_registry_p2p_*.c) share them.
 */
#include "components/registry/p2p/p2p_wire.h"
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include "core/util/error.h"

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}
static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v;
}

bool px_registry_p2p_key_bytes_ok(const char *text, size_t len)
{
    for (size_t i = 0; i < len; ++i)
        if ((unsigned char)text[i] < 0x21 || (unsigned char)text[i] > 0x7e)
            return false;
    return true;
}

int px_registry_p2p_request_parse(const uint8_t *buf, size_t have, px_registry_p2p_request_t *req,
                                  char *why, size_t cap)
{
    if (have < 4)
        return PX_REGISTRY_P2P_HDR_LEN;
    uint32_t magic = get32(buf);
    if (magic != PX_REGISTRY_P2P_REQ_MAGIC) {
        snprintf(why, cap,
                 "not a registry/p2p request: its first 4 bytes are 0x%08x, a request starts "
                 "with \"PXRQ\" (0x%08x)",
                 (unsigned)magic, PX_REGISTRY_P2P_REQ_MAGIC);
        return PX_ERR_BAD_PARAM;
    }
    if (have < PX_REGISTRY_P2P_HDR_LEN)
        return PX_REGISTRY_P2P_HDR_LEN;
    int version = buf[4], op = buf[5];
    size_t ns_len = get16(buf + 6), key_len = get16(buf + 8), ext_len = get16(buf + 10);
    if (version < 1) {
        snprintf(why, cap, "request version 0: versions start at 1");
        return PX_ERR_BAD_PARAM;
    }
    if (op != PX_REGISTRY_P2P_GET && op != PX_REGISTRY_P2P_LIST) {
        snprintf(why, cap, "unknown operation %d (1 GET, 2 LIST)", op);
        return PX_ERR_BAD_PARAM;
    }
    if (ns_len < 1 || ns_len + 1 + key_len > PX_REGISTRY_KEY_MAX) {
        snprintf(why, cap,
                 "namespace of %zu and name of %zu bytes: a namespace has 1 or more, and both "
                 "with the '/' between them at most %d",
                 ns_len, key_len, PX_REGISTRY_KEY_MAX);
        return PX_ERR_BAD_PARAM;
    }
    if (op == PX_REGISTRY_P2P_GET && key_len < 1) {
        snprintf(why, cap, "GET of an empty name");
        return PX_ERR_BAD_PARAM;
    }
    if (ext_len > PX_REGISTRY_P2P_EXT_MAX) {
        snprintf(why, cap, "extension of %zu bytes, at most %d accepted", ext_len,
                 PX_REGISTRY_P2P_EXT_MAX);
        return PX_ERR_BAD_PARAM;
    }
    size_t total = PX_REGISTRY_P2P_HDR_LEN + ns_len + key_len + ext_len;
    if (have < total)
        return (int)total;
    const char *ns = (const char *)buf + PX_REGISTRY_P2P_HDR_LEN;
    const char *key = ns + ns_len;
    if (!px_registry_p2p_key_bytes_ok(ns, ns_len) || !px_registry_p2p_key_bytes_ok(key, key_len)) {
        snprintf(why, cap,
                 "namespace or name holds a byte outside printable ASCII ('!' to '~', no "
                 "space)");
        return PX_ERR_BAD_PARAM;
    }
    req->version = version;
    req->op = op;
    req->ns = ns;
    req->ns_len = ns_len;
    req->key = key;
    req->key_len = key_len;
    req->total = total;
    return 0;
}

int px_registry_p2p_request_encode(uint8_t *out, int op, const char *ns, size_t ns_len,
                                   const char *key, size_t key_len)
{
    if (ns_len < 1 || ns_len + 1 + key_len > PX_REGISTRY_KEY_MAX)
        return PX_ERR_BAD_PARAM;
    put32(out, PX_REGISTRY_P2P_REQ_MAGIC);
    out[4] = PX_REGISTRY_P2P_VERSION;
    out[5] = (uint8_t)op;
    put16(out + 6, (uint16_t)ns_len);
    put16(out + 8, (uint16_t)key_len);
    put16(out + 10, 0);
    memcpy(out + PX_REGISTRY_P2P_HDR_LEN, ns, ns_len);
    if (key_len)
        memcpy(out + PX_REGISTRY_P2P_HDR_LEN + ns_len, key, key_len);
    return (int)(PX_REGISTRY_P2P_HDR_LEN + ns_len + key_len);
}

int px_registry_p2p_answer_check(const uint8_t hdr[PX_REGISTRY_P2P_HDR_LEN], int op,
                                 size_t list_max, px_registry_p2p_answer_t *a, char *why,
                                 size_t cap)
{
    uint32_t magic = get32(hdr);
    if (magic != PX_REGISTRY_P2P_ANS_MAGIC) {
        snprintf(why, cap,
                 "not a registry/p2p answer: its first 4 bytes are 0x%08x, an answer starts "
                 "with \"PXRA\" (0x%08x); is a registry/p2p owner listening there?",
                 (unsigned)magic, PX_REGISTRY_P2P_ANS_MAGIC);
        return PX_ERR_BAD_PARAM;
    }
    a->version = hdr[4];
    a->status = hdr[5];
    a->flags = get16(hdr + 6);
    a->body_len = get32(hdr + 8);
    if (a->version < 1 || a->version > PX_REGISTRY_P2P_VERSION) {
        snprintf(why, cap, "answer of protocol version %d, this Plexus reads 1 to %d", a->version,
                 PX_REGISTRY_P2P_VERSION);
        return PX_ERR_BAD_PARAM;
    }
    if (a->status > PX_REGISTRY_P2P_STATUS_MAX) {
        snprintf(why, cap, "unknown answer status %d (0 to %d known)", a->status,
                 PX_REGISTRY_P2P_STATUS_MAX);
        return PX_ERR_BAD_PARAM;
    }
    if (a->flags & ~PX_REGISTRY_P2P_TRUNCATED) {
        snprintf(why, cap, "answer flags 0x%x: only 0x%x is known", (unsigned)a->flags,
                 PX_REGISTRY_P2P_TRUNCATED);
        return PX_ERR_BAD_PARAM;
    }
    size_t max;
    const char *what;
    if (a->status != PX_REGISTRY_P2P_OK)
        max = PX_REGISTRY_P2P_MSG_MAX, what = "an error message";
    else if (op == PX_REGISTRY_P2P_GET)
        max = PX_REGISTRY_VALUE_MAX, what = "a value (PX_REGISTRY_VALUE_MAX)";
    else
        max = list_max < PX_REGISTRY_P2P_LIST_HARD_MAX ? list_max : PX_REGISTRY_P2P_LIST_HARD_MAX,
        what = "a listing (registry_p2p_list_max)";
    if (a->body_len > max) {
        snprintf(why, cap, "answer of %zu bytes, more than the %zu accepted for %s", a->body_len,
                 max, what);
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

void px_registry_p2p_answer_header(uint8_t hdr[PX_REGISTRY_P2P_HDR_LEN], int status, int flags,
                                   size_t body_len)
{
    put32(hdr, PX_REGISTRY_P2P_ANS_MAGIC);
    hdr[4] = PX_REGISTRY_P2P_VERSION;
    hdr[5] = (uint8_t)status;
    put16(hdr + 6, (uint16_t)flags);
    put32(hdr + 8, (uint32_t)body_len);
}

int px_registry_p2p_list_next(const uint8_t **p, const uint8_t *end, const char **name,
                              size_t *name_len, const uint8_t **value, size_t *value_len, char *why,
                              size_t cap)
{
    const uint8_t *q = *p;
    if (q == end)
        return 0;
    size_t left = (size_t)(end - q);
    if (left < PX_REGISTRY_P2P_ENTRY_HDR) {
        snprintf(why, cap, "listing ends in the middle of an entry's header (%zu of %d bytes)",
                 left, PX_REGISTRY_P2P_ENTRY_HDR);
        return PX_ERR_BAD_PARAM;
    }
    size_t nl = get16(q), vl = get32(q + 2);
    if (nl < 1 || nl > PX_REGISTRY_KEY_MAX) {
        snprintf(why, cap, "listed name of %zu bytes (1 to %d accepted)", nl, PX_REGISTRY_KEY_MAX);
        return PX_ERR_BAD_PARAM;
    }
    if (vl > PX_REGISTRY_VALUE_MAX) {
        snprintf(why, cap, "listed value of %zu bytes, more than PX_REGISTRY_VALUE_MAX (%d)", vl,
                 PX_REGISTRY_VALUE_MAX);
        return PX_ERR_BAD_PARAM;
    }
    left -= PX_REGISTRY_P2P_ENTRY_HDR;
    if (nl + vl > left) {
        snprintf(why, cap, "listed entry of %zu bytes overruns the listing (%zu bytes left)",
                 nl + vl, left);
        return PX_ERR_BAD_PARAM;
    }
    const char *n = (const char *)q + PX_REGISTRY_P2P_ENTRY_HDR;
    if (!px_registry_p2p_key_bytes_ok(n, nl)) {
        snprintf(why, cap, "listed name holds a byte outside printable ASCII");
        return PX_ERR_BAD_PARAM;
    }
    *name = n;
    *name_len = nl;
    *value = (const uint8_t *)n + nl;
    *value_len = vl;
    *p = *value + vl;
    return 1;
}

size_t px_registry_p2p_list_put(uint8_t *out, const char *name, size_t name_len, const void *value,
                                size_t value_len)
{
    put16(out, (uint16_t)name_len);
    put32(out + 2, (uint32_t)value_len);
    memcpy(out + PX_REGISTRY_P2P_ENTRY_HDR, name, name_len);
    if (value_len)
        memcpy(out + PX_REGISTRY_P2P_ENTRY_HDR + name_len, value, value_len);
    return PX_REGISTRY_P2P_ENTRY_HDR + name_len + value_len;
}

int px_registry_p2p_parse_hostport(const char *text, size_t len, uint32_t *addr, int *port,
                                   char *why, size_t cap)
{
    size_t colon = len;
    for (size_t i = 0; i < len; ++i) {
        char c = text[i];
        if (c == ':' && colon == len)
            colon = i;
        else if (!((c >= '0' && c <= '9') || (c == '.' && colon == len)))
            return 0; /* not digits and dots ':' digits: a plain name */
    }
    if (colon == len || colon == 0 || colon + 1 == len)
        return 0;
    char host[16];
    if (colon >= sizeof host) {
        snprintf(why, cap, "\"%.*s\" is not a numeric IPv4 address and port", (int)len, text);
        return PX_ERR_BAD_PARAM;
    }
    memcpy(host, text, colon);
    host[colon] = '\0';
    struct in_addr in;
    if (inet_pton(AF_INET, host, &in) != 1) {
        snprintf(why, cap,
                 "\"%.*s\": %s is not a numeric IPv4 address (a p2p name is "
                 "a.b.c.d:port/name)",
                 (int)len, text, host);
        return PX_ERR_BAD_PARAM;
    }
    long p = 0;
    for (size_t i = colon + 1; i < len; ++i) {
        p = p * 10 + (text[i] - '0');
        if (p > 65535)
            break;
    }
    if (p < 1 || p > 65535) {
        snprintf(why, cap, "\"%.*s\": port out of range (1 to 65535)", (int)len, text);
        return PX_ERR_BAD_PARAM;
    }
    *addr = in.s_addr;
    *port = (int)p;
    return 1;
}
