/*
 * peer_contact.c: the contact string (docs/peers.md, "The contact string"):
 *   px-peer:<version>:<IPv4 a.b.c.d>:<port>:<host>:<pid>:<instance>
 * parsed strictly: exactly seven fields, each in its one canonical form, so
 * that one listener has one text and a mistake is named with its place.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "core/util/error.h"
#include "runtime/peer/peer_internal.h"

#define ACCEPTED                                                                                   \
    "accepted: px-peer:1:<IPv4 a.b.c.d>:<port 1-65535>:<host [A-Za-z0-9._-], 1-64>:<pid "          \
    "1-4294967295>:<instance, 16 lower-case hex digits>"

static const char *const field_names[7] = {"prefix", "version", "address", "port",
                                           "host",   "pid",     "instance"};

/* The text shown in an error: printable ASCII, others as \xNN, cut. */
static void show(const char *s, size_t n, char *out, size_t out_len)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < out_len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i >= 100) {
            o += (size_t)snprintf(out + o, out_len - o, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '"')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, out_len - o, "\\x%02x", c);
    }
    out[o < out_len ? o : out_len - 1] = '\0';
}

static int bad(char *why, size_t why_len, const char *text, int field, size_t at, const char *f,
               size_t flen, const char *what)
{
    if (why && why_len) {
        char t[420], v[420];
        show(text, strlen(text), t, sizeof t);
        show(f, flen, v, sizeof v);
        if (field >= 0)
            snprintf(why, why_len, "contact \"%s\": field %d (%s) at byte %zu, \"%s\", %s; %s", t,
                     field + 1, field_names[field], at, v, what, ACCEPTED);
        else
            snprintf(why, why_len, "contact \"%s\": %s; %s", t, what, ACCEPTED);
    }
    return PX_ERR_BAD_PARAM;
}

/* A decimal number of `f` (flen bytes) without sign, leading zeros or
 * anything else, at most `max`. */
static bool decimal(const char *f, size_t flen, uint64_t max, uint64_t *v)
{
    if (flen == 0 || flen > 20 || (flen > 1 && f[0] == '0'))
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < flen; i++) {
        if (f[i] < '0' || f[i] > '9')
            return false;
        unsigned d = (unsigned)(f[i] - '0');
        if (x > (max - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *v = x;
    return true;
}

static bool host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

void px_peer_host_sanitize(const char *in, char out[PX_PEER_HOST_MAX + 1])
{
    size_t n = 0;
    for (; in && in[n] && n < PX_PEER_HOST_MAX; n++)
        out[n] = host_char(in[n]) ? in[n] : '_';
    if (n == 0)
        out[n++] = '_';
    out[n] = '\0';
}

int px_peer_contact_parse(const char *text, px_peer_contact_t *c, char *why, size_t why_len)
{
    if (NULL == text)
        return bad(why, why_len, "", -1, 0, "", 0, "no contact string given (NULL)");
    size_t len = strnlen(text, PX_PEER_CONTACT_MAX + 1);
    if (len == 0)
        return bad(why, why_len, text, -1, 0, "", 0, "the contact string is empty");
    if (len > PX_PEER_CONTACT_MAX) {
        char what[96];
        snprintf(what, sizeof what, "longer than %d bytes", PX_PEER_CONTACT_MAX);
        return bad(why, why_len, text, -1, 0, "", 0, what);
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch <= 0x20 || ch >= 0x7f) {
            char what[96];
            snprintf(what, sizeof what, "byte %zu is %s (0x%02x)", i,
                     ch == '\n'   ? "a newline"
                     : ch == ' '  ? "a blank"
                     : ch == '\t' ? "a tab"
                                  : "not printable ASCII",
                     ch);
            return bad(why, why_len, text, -1, 0, "", 0, what);
        }
    }
    const char *f[7];
    size_t fl[7], at[7];
    size_t nf = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || text[i] == ':') {
            if (nf == 7) {
                char what[96];
                snprintf(what, sizeof what,
                         "more than 7 fields separated by ':' (an 8th at byte %zu)", start);
                return bad(why, why_len, text, -1, 0, "", 0, what);
            }
            f[nf] = text + start;
            fl[nf] = i - start;
            at[nf] = start;
            nf++;
            start = i + 1;
        }
    }
    if (nf != 7) {
        char what[96];
        snprintf(what, sizeof what, "%zu field%s separated by ':', not 7", nf, nf == 1 ? "" : "s");
        return bad(why, why_len, text, -1, 0, "", 0, what);
    }
    px_peer_contact_t tmp;
    memset(&tmp, 0, sizeof tmp);
    if (fl[0] != strlen(PX_PEER_CONTACT_PREFIX) || memcmp(f[0], PX_PEER_CONTACT_PREFIX, fl[0]) != 0)
        return bad(why, why_len, text, 0, at[0], f[0], fl[0], "is not \"px-peer\"");
    uint64_t v;
    if (!decimal(f[1], fl[1], UINT32_MAX, &v))
        return bad(why, why_len, text, 1, at[1], f[1], fl[1], "is not a version number");
    if (v != PX_PEER_VERSION)
        return bad(why, why_len, text, 1, at[1], f[1], fl[1],
                   "is a version this Plexus does not speak (it speaks 1)");
    tmp.version = (unsigned)v;
    /* a.b.c.d: four decimal numbers 0..255 without leading zeros */
    {
        size_t p = 0;
        for (int k = 0; k < 4; k++) {
            size_t s = p;
            while (p < fl[2] && f[2][p] != '.')
                p++;
            if (!decimal(f[2] + s, p - s, 255, &v) || (k < 3) != (p < fl[2]))
                return bad(why, why_len, text, 2, at[2], f[2], fl[2],
                           "is not a dotted IPv4 address (four numbers 0-255 without leading "
                           "zeros, e.g. 127.0.0.1)");
            tmp.addr[k] = (uint8_t)v;
            p++;
        }
        if (tmp.addr[0] == 0 || (tmp.addr[0] >= 224 && tmp.addr[0] <= 239) || (tmp.addr[0] == 255))
            return bad(why, why_len, text, 2, at[2], f[2], fl[2],
                       "is not a unicast address a process can listen on (0.x, multicast and "
                       "broadcast are refused)");
    }
    if (!decimal(f[3], fl[3], 65535, &v) || v == 0)
        return bad(why, why_len, text, 3, at[3], f[3], fl[3], "is not a port 1-65535");
    tmp.port = (uint16_t)v;
    if (fl[4] == 0 || fl[4] > PX_PEER_HOST_MAX)
        return bad(why, why_len, text, 4, at[4], f[4], fl[4], "is not a host name of 1-64 bytes");
    for (size_t i = 0; i < fl[4]; i++)
        if (!host_char(f[4][i]))
            return bad(why, why_len, text, 4, at[4], f[4], fl[4],
                       "holds a byte other than A-Z a-z 0-9 . _ -");
    memcpy(tmp.host, f[4], fl[4]);
    if (!decimal(f[5], fl[5], UINT32_MAX, &v) || v == 0)
        return bad(why, why_len, text, 5, at[5], f[5], fl[5], "is not a process id 1-4294967295");
    tmp.pid = (uint32_t)v;
    if (fl[6] != 16)
        return bad(why, why_len, text, 6, at[6], f[6], fl[6], "is not 16 hex digits");
    for (size_t i = 0; i < 16; i++) {
        char ch = f[6][i];
        unsigned d;
        if (ch >= '0' && ch <= '9')
            d = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            d = (unsigned)(ch - 'a' + 10);
        else
            return bad(why, why_len, text, 6, at[6], f[6], fl[6],
                       "is not 16 lower-case hex digits (0-9 a-f)");
        tmp.instance = tmp.instance << 4 | d;
    }
    if (c)
        *c = tmp;
    return PX_SUCCESS;
}

int px_peer_contact_format(const px_peer_contact_t *c, char *out, size_t out_len)
{
    int n = snprintf(out, out_len, "%s:%u:%u.%u.%u.%u:%u:%s:%" PRIu32 ":%016" PRIx64,
                     PX_PEER_CONTACT_PREFIX, c->version, c->addr[0], c->addr[1], c->addr[2],
                     c->addr[3], c->port, c->host, c->pid, c->instance);
    return n < 0 || (size_t)n >= out_len ? PX_ERR_OUT_OF_RESOURCE : PX_SUCCESS;
}
