/*
 * pxrun_proto.h: the wire protocol between the pxrun launcher
 * (tools/pxrun) and its ranks (components/boot/pxrun, test clients).
 * Header-only so the launcher does not link libplexus.
 *
 * Transport: a Unix stream socket, path in the rank's PX_PXRUN_URI.
 * Every message is a frame: an 8-byte header {uint32 len, uint32 op} in host
 * byte order (one host only), then `len` payload bytes. Payload fields are
 * u32 / i32 (4 bytes) and byte strings (u32 length then the bytes, no NUL).
 * A reader checks every length against what it received; a frame longer
 * than PX_PXRUN_MAX_FRAME or a field that runs past its frame ends the
 * connection (never the launcher).
 *
 *   HELLO  i32 rank, i32 pid, u32 proto
 *          -> REPLY i32 status, i32 rank, i32 size, str jobid, str host,
 *             then size x i32 node index (ranks with equal index share a host)
 *   FENCE  u32 n, n x (str key, bytes value)   (this rank's committed puts)
 *          -> REPLY (when every rank has fenced) i32 status, u32 n,
 *             n x (i32 rank, str key, bytes value) (everything put this round)
 *   GET    i32 rank, str key -> REPLY i32 status, bytes value
 *   ABORT  i32 status, str message (no reply; the launcher ends the job)
 *   BYE    (no reply; the rank is finalizing)
 */
#ifndef PX_PXRUN_PROTO_H
#define PX_PXRUN_PROTO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PX_PXRUN_PROTO_VERSION 1
#define PX_PXRUN_MAX_FRAME     (64u << 20)
#define PX_PXRUN_MAX_KEY       256u
#define PX_PXRUN_URI_ENV       "PX_PXRUN_URI"

enum {
    PX_PXRUN_OP_HELLO = 1,
    PX_PXRUN_OP_FENCE = 2,
    PX_PXRUN_OP_GET = 3,
    PX_PXRUN_OP_ABORT = 4,
    PX_PXRUN_OP_BYE = 5,
    PX_PXRUN_OP_REPLY = 0x80,
};

typedef struct px_pxrun_frame_hdr {
    uint32_t len;
    uint32_t op;
} px_pxrun_frame_hdr_t;

/* A growable output buffer; `oom` sticks once an allocation failed. */
typedef struct px_pxrun_buf {
    char *data;
    size_t len, cap;
    int oom;
} px_pxrun_buf_t;

static inline void px_pxrun_buf_put(px_pxrun_buf_t *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        char *d = (char *)realloc(b->data, cap);
        if (!d) {
            b->oom = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}
static inline void px_pxrun_buf_u32(px_pxrun_buf_t *b, uint32_t v)
{
    px_pxrun_buf_put(b, &v, 4);
}
static inline void px_pxrun_buf_i32(px_pxrun_buf_t *b, int32_t v)
{
    px_pxrun_buf_put(b, &v, 4);
}
static inline void px_pxrun_buf_bytes(px_pxrun_buf_t *b, const void *p, size_t n)
{
    px_pxrun_buf_u32(b, (uint32_t)n);
    px_pxrun_buf_put(b, p, n);
}
static inline void px_pxrun_buf_str(px_pxrun_buf_t *b, const char *s)
{
    px_pxrun_buf_bytes(b, s, strlen(s));
}
/* Start a frame: reserve the header; px_pxrun_buf_end fills it. */
static inline size_t px_pxrun_buf_begin(px_pxrun_buf_t *b, uint32_t op)
{
    size_t at = b->len;
    px_pxrun_frame_hdr_t h = {0, op};
    px_pxrun_buf_put(b, &h, sizeof h);
    return at;
}
static inline void px_pxrun_buf_end(px_pxrun_buf_t *b, size_t at)
{
    if (b->oom)
        return;
    uint32_t len = (uint32_t)(b->len - at - sizeof(px_pxrun_frame_hdr_t));
    memcpy(b->data + at, &len, 4);
}
static inline void px_pxrun_buf_free(px_pxrun_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

/* A bounds-checked reader over one frame's payload; `bad` sticks once a
 * field ran past the end. */
typedef struct px_pxrun_cursor {
    const char *p;
    size_t left;
    int bad;
} px_pxrun_cursor_t;

static inline int px_pxrun_get(px_pxrun_cursor_t *c, void *out, size_t n)
{
    if (c->bad || c->left < n) {
        c->bad = 1;
        return -1;
    }
    memcpy(out, c->p, n);
    c->p += n;
    c->left -= n;
    return 0;
}
static inline uint32_t px_pxrun_get_u32(px_pxrun_cursor_t *c)
{
    uint32_t v = 0;
    px_pxrun_get(c, &v, 4);
    return v;
}
static inline int32_t px_pxrun_get_i32(px_pxrun_cursor_t *c)
{
    int32_t v = 0;
    px_pxrun_get(c, &v, 4);
    return v;
}
/* Points *data into the frame (not copied); returns the length, 0 when bad. */
static inline uint32_t px_pxrun_get_bytes(px_pxrun_cursor_t *c, const void **data)
{
    uint32_t n = px_pxrun_get_u32(c);
    if (c->bad || c->left < n) {
        c->bad = 1;
        *data = NULL;
        return 0;
    }
    *data = c->p;
    c->p += n;
    c->left -= n;
    return n;
}
/* Copy a string field into out[max] with a NUL; too long or bad: -1. */
static inline int px_pxrun_get_str(px_pxrun_cursor_t *c, char *out, size_t max)
{
    const void *d;
    uint32_t n = px_pxrun_get_bytes(c, &d);
    if (c->bad || n >= max) {
        c->bad = 1;
        out[0] = '\0';
        return -1;
    }
    memcpy(out, d, n);
    out[n] = '\0';
    return 0;
}

#endif
