/*
 * peers_common.h: what the example's server and client share (examples/peers,
 * README.md): the message layout, the one-sided region's layout, the pattern,
 * the checksum, the tags.
 */
#ifndef PEERS_COMMON_H
#define PEERS_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TAG_DATA  1 /* client -> server: a header and its data */
#define TAG_REPLY 2 /* server -> client: the header with the server's checksum */
#define TAG_SYNC  3 /* client -> server: both call px_allreduce next */
#define TAG_BYE   4 /* client -> server: the session ends */
#define TAG_KEY   5 /* server -> client: the key of the server's region (px_xfer_key_export) */
#define MAX_DATA  (256 * 1024)

/* The server's region (px_xfer_alloc), read and written one-sided by the
 * client: the server fills [0, PATTERN_LEN) with a pattern for each round;
 * the client reads it with a batch of GETS reads and writes a block of
 * BLOCK_LEN bytes at BLOCK_OFF, then tells the server with px_xfer_notify. */
#define PATTERN_LEN (32 * 1024)
#define GETS        8
#define BLOCK_OFF   PATTERN_LEN
#define BLOCK_LEN   (8 * 1024)
#define REGION_LEN  (PATTERN_LEN + BLOCK_LEN)

typedef struct msg_hdr {
    uint64_t seq;  /* the client's round */
    uint64_t sum;  /* checksum of the data (the sender's; in a reply, the server's) */
    uint64_t xsum; /* reply: checksum of the pattern the server put in its region */
    uint32_t len;  /* bytes of data after the header */
    uint32_t good; /* reply: 1 when the server's checksum matched the client's */
} msg_hdr_t;

/* The client's px_xfer_notify after writing its block: which round, and the
 * checksum of what it wrote. */
typedef struct block_note {
    uint64_t seq;
    uint64_t sum;
} block_note_t;

static inline uint64_t checksum(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* n bytes of a pattern that depends on seed (xorshift) */
static inline void fill(unsigned char *b, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)x;
    }
}

#endif
