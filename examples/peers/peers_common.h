/*
 * peers_common.h: what the example's server and client share (examples/peers,
 * README.md): the message layout, the checksum, the tags.
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
#define MAX_DATA  (256 * 1024)

typedef struct msg_hdr {
    uint64_t seq;  /* the client's round */
    uint64_t sum;  /* checksum of the data (the sender's; in a reply, the server's) */
    uint32_t len;  /* bytes of data after the header */
    uint32_t good; /* reply: 1 when the server's checksum matched the client's */
} msg_hdr_t;

static inline uint64_t checksum(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

#endif
