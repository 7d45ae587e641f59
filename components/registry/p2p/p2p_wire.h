/*
 * p2p_wire.h: registry/p2p's wire protocol between a process that looks a
 * name up (the client) and the process that owns it (its listener). One
 * request and one answer per TCP connection; every integer big-endian.
 *
 *   request (client -> owner), 12-byte header then its bytes:
 *     u32 magic "PXRQ"   u8 version   u8 op (1 GET, 2 LIST)
 *     u16 ns_len         u16 key_len  u16 ext_len
 *     ns[ns_len] key[key_len] ext[ext_len]
 *   ns is the asker's namespace (registry_namespace), key the name relative
 *   to it (GET) or a prefix of names (LIST, may be empty). ext is what a
 *   later version appends; version 1 sends none and skips what it gets.
 *
 *   answer (owner -> client), 12-byte header then body_len bytes:
 *     u32 magic "PXRA"   u8 version   u8 status   u16 flags   u32 body_len
 *   status OK: GET's body is the value (at most PX_REGISTRY_VALUE_MAX bytes);
 *   LIST's is entries { u16 name_len, u32 value_len, name, value } (names
 *   relative to the namespace), flag TRUNCATED when the owner left some out
 *   (registry_p2p_list_max). Any other status: the body is a message (text,
 *   at most PX_REGISTRY_P2P_MSG_MAX bytes) saying what was wrong.
 *
 * Both sides treat every byte as untrusted: the parsers below check each
 * length against its bound before anything is allocated or read for it.
 */
#ifndef PX_REGISTRY_P2P_WIRE_H
#define PX_REGISTRY_P2P_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "frameworks/registry/registry.h"

#define PX_REGISTRY_P2P_REQ_MAGIC 0x50585251u /* "PXRQ" */
#define PX_REGISTRY_P2P_ANS_MAGIC 0x50585241u /* "PXRA" */
#define PX_REGISTRY_P2P_VERSION   1
#define PX_REGISTRY_P2P_HDR_LEN   12
/* Longest extension a request may carry (skipped by version 1). */
#define PX_REGISTRY_P2P_EXT_MAX 1024
/* Longest request: header, namespace and key within PX_REGISTRY_KEY_MAX, extension. */
#define PX_REGISTRY_P2P_REQ_MAX                                                                    \
    (PX_REGISTRY_P2P_HDR_LEN + PX_REGISTRY_KEY_MAX + PX_REGISTRY_P2P_EXT_MAX)
/* Longest message of an error answer. */
#define PX_REGISTRY_P2P_MSG_MAX 1024
/* Hard bound of a LIST answer's body, whatever registry_p2p_list_max says. */
#define PX_REGISTRY_P2P_LIST_HARD_MAX (256u * 1024 * 1024)
/* Bytes of a LIST entry's own header. */
#define PX_REGISTRY_P2P_ENTRY_HDR 6

enum { PX_REGISTRY_P2P_GET = 1, PX_REGISTRY_P2P_LIST = 2 };
enum {
    PX_REGISTRY_P2P_OK = 0,
    PX_REGISTRY_P2P_NOT_FOUND = 1,   /* GET: the owner has no such name */
    PX_REGISTRY_P2P_BAD_REQUEST = 2, /* the owner refused the request (the message says why) */
    PX_REGISTRY_P2P_NAMESPACE = 3,   /* the asker's namespace is not the owner's */
    PX_REGISTRY_P2P_STATUS_MAX = 3,
};
enum { PX_REGISTRY_P2P_TRUNCATED = 1 }; /* answer flag (LIST) */

/* A parsed request; ns and key point into the parsed buffer. */
typedef struct {
    int version, op;
    const char *ns, *key;
    size_t ns_len, key_len;
    size_t total; /* bytes the request took */
} px_registry_p2p_request_t;

/* Parse the first `have` bytes of a request. Returns 0 when it is complete
 * (*req filled), a positive count of bytes it needs in all when it is not
 * yet (never more than PX_REGISTRY_P2P_REQ_MAX), or PX_ERR_BAD_PARAM with
 * why (what was wrong and what is accepted) in why[0..cap). */
int px_registry_p2p_request_parse(const uint8_t *buf, size_t have, px_registry_p2p_request_t *req,
                                  char *why, size_t cap);
/* Write a version-1 request into out (at least PX_REGISTRY_P2P_REQ_MAX
 * bytes); its length, or PX_ERR_BAD_PARAM when ns or key is out of bounds. */
int px_registry_p2p_request_encode(uint8_t *out, int op, const char *ns, size_t ns_len,
                                   const char *key, size_t key_len);

/* A parsed answer header. */
typedef struct {
    int version, status, flags;
    size_t body_len;
} px_registry_p2p_answer_t;

/* Check an answer header to a request of `op`: magic, a version this side
 * reads, a known status, no unknown flag, and a body within its bound (GET's
 * value PX_REGISTRY_VALUE_MAX, LIST's list_max, a message
 * PX_REGISTRY_P2P_MSG_MAX). PX_SUCCESS or PX_ERR_BAD_PARAM with why. */
int px_registry_p2p_answer_check(const uint8_t hdr[PX_REGISTRY_P2P_HDR_LEN], int op,
                                 size_t list_max, px_registry_p2p_answer_t *a, char *why,
                                 size_t cap);
void px_registry_p2p_answer_header(uint8_t hdr[PX_REGISTRY_P2P_HDR_LEN], int status, int flags,
                                   size_t body_len);

/* One entry of a LIST body: *p advanced past it. 1 with the entry, 0 at the
 * end of the body, PX_ERR_BAD_PARAM (why) for an entry that overruns the
 * body, an empty or over-long name, a name with bytes outside [!-~], or a
 * value over PX_REGISTRY_VALUE_MAX. */
int px_registry_p2p_list_next(const uint8_t **p, const uint8_t *end, const char **name,
                              size_t *name_len, const uint8_t **value, size_t *value_len, char *why,
                              size_t cap);
/* Append a LIST entry at out (PX_REGISTRY_P2P_ENTRY_HDR + name_len +
 * value_len bytes). */
size_t px_registry_p2p_list_put(uint8_t *out, const char *name, size_t name_len, const void *value,
                                size_t value_len);

/* Does text[0..len) hold only bytes a key may have (printable ASCII, no
 * space)? */
bool px_registry_p2p_key_bytes_ok(const char *text, size_t len);

/* Parse "a.b.c.d:port" (the whole of text[0..len)) into a numeric IPv4
 * address (network order) and a port 1..65535. 1: it is one; 0: it does not
 * look like an address (no ':' after digits and dots); PX_ERR_BAD_PARAM
 * (why): it looks like one but is out of range. */
int px_registry_p2p_parse_hostport(const char *text, size_t len, uint32_t *addr, int *port,
                                   char *why, size_t cap);

#endif
