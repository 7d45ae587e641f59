/*
 * kv_common.h: what the kvcache example's writers (kv_prefill) and readers
 * (kv_decode) share (examples/kvcache/README.md): the names, a block's
 * layout, the pattern and the checksum.
 *
 * A KV block is one region (px_xfer_alloc) published under
 * "kv/<model>/<writer>/<block>". It starts with a header, then the payload:
 * a pattern derived from (writer, block, generation), so a reader checks
 * both that the header matches the name it opened and that the payload is
 * the one the header's generation gives.
 */
#ifndef KV_COMMON_H
#define KV_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define KV_MAGIC  0x4b56424c4f434b31ull /* "KVBLOCK1" */
#define KV_HEADER 64                    /* bytes before the payload */

typedef struct kv_header {
    uint64_t magic;
    uint64_t writer;     /* the writer's id */
    uint64_t block;      /* the block's index */
    uint64_t generation; /* the writer's generation (a restarted writer takes another) */
    uint64_t length;     /* payload bytes after the header */
    uint64_t sum;        /* the payload's checksum */
    uint64_t pad[2];
} kv_header_t;

static inline uint64_t kv_checksum(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, 8 bytes at a time */
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* n bytes of the pattern of (writer, block, generation) (xorshift) */
static inline void kv_fill(unsigned char *b, size_t n, uint64_t writer, uint64_t block,
                           uint64_t generation)
{
    uint64_t x = (writer * 0x9e3779b97f4a7c15ull) ^ (block * 0xc2b2ae3d27d4eb4full) ^
                 (generation * 0x165667b19e3779f9ull) ^ 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(b + i, &x, 8);
    }
    for (; i < n; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)x;
    }
}

/* Split "kv/<model>/<writer>/<block>" (possibly after "host:port/" under
 * p2p) into writer and block; 0 when it is not such a name. */
static inline int kv_parse_name(const char *name, uint64_t *writer, uint64_t *block)
{
    const char *p = strstr(name, "kv/");
    while (p && p != name && p[-1] != '/')
        p = strstr(p + 1, "kv/");
    if (!p)
        return 0;
    const char *model = p + 3, *w = strchr(model, '/');
    if (!w || w == model)
        return 0;
    unsigned long long a, b;
    char tail;
    if (sscanf(w + 1, "%llu/%llu%c", &a, &b, &tail) != 2)
        return 0;
    *writer = a;
    *block = b;
    return 1;
}

#endif
