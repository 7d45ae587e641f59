/*
 * etcd_wire.h: registry/etcd's reading and writing of etcd v3's HTTP/JSON
 * gateway messages, apart from the HTTP client so that test/fuzz can compile
 * it alone (PX_REGISTRY_ETCD_WIRE_SOURCES). Everything an endpoint answers is
 * untrusted: the parser checks every type, field and size and says what was
 * wrong instead of trusting it.
 */
#ifndef PX_REGISTRY_ETCD_WIRE_H
#define PX_REGISTRY_ETCD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest answer the module reads (bytes of JSON); a larger one is refused. */
#define PX_REGISTRY_ETCD_ANSWER_MAX (4u << 20)
/* Most key-value pairs one answer may carry. */
#define PX_REGISTRY_ETCD_KVS_MAX 1000

/* What was asked, so the parser knows which fields the answer must carry. */
enum {
    PX_REGISTRY_ETCD_RANGE = 0,     /* /v3/kv/range */
    PX_REGISTRY_ETCD_PUT = 1,       /* /v3/kv/put */
    PX_REGISTRY_ETCD_DELETE = 2,    /* /v3/kv/deleterange */
    PX_REGISTRY_ETCD_TXN = 3,       /* /v3/kv/txn (create-or-same, delete-if-same) */
    PX_REGISTRY_ETCD_GRANT = 4,     /* /v3/lease/grant */
    PX_REGISTRY_ETCD_KEEPALIVE = 5, /* /v3/lease/keepalive (a stream: {"result":...}) */
    PX_REGISTRY_ETCD_REVOKE = 6,    /* /v3/lease/revoke */
    PX_REGISTRY_ETCD_KINDS = 7
};

/* One key-value pair of a range answer. key holds key_len bytes and a NUL
 * after them, value value_len bytes and a NUL. When the pair cannot be used
 * (a key with a NUL byte or longer than PX_REGISTRY_KEY_MAX, a value longer
 * than PX_REGISTRY_VALUE_MAX), `error` says why and value is NULL. */
typedef struct px_registry_etcd_kv {
    char *key;
    size_t key_len;
    unsigned char *value;
    size_t value_len;
    const char *error;
} px_registry_etcd_kv_t;

typedef struct px_registry_etcd_answer {
    /* an error answer ({"error": ..., "message": ..., "code": N}) */
    bool is_error;
    int code; /* gRPC code (5 not found, 14 unavailable, ...); -1 unknown */
    char message[256];
    int64_t revision; /* header.revision; -1 when absent */
    /* range, and the failure branch of a txn */
    px_registry_etcd_kv_t *kvs;
    size_t n_kvs;
    bool more;
    /* txn: the outer compare held; inner: -1 no nested txn, else whether
     * the nested one's compare held */
    bool succeeded;
    int inner;
    int64_t deleted; /* deleterange, or the txn's delete */
    /* lease grant and keepalive: TTL 0 (or absent) means the lease is gone */
    int64_t lease_id;
    int64_t ttl;
} px_registry_etcd_answer_t;

/* Parse `len` bytes of JSON answering a request of `kind` into *a (freed
 * with px_registry_etcd_answer_free, also after a failure). PX_SUCCESS (an
 * error answer too: a->is_error) or PX_ERR_BAD_PARAM with why[0..cap) saying
 * what was wrong. */
int px_registry_etcd_parse(int kind, const char *body, size_t len, px_registry_etcd_answer_t *a,
                           char *why, size_t cap);
void px_registry_etcd_answer_free(px_registry_etcd_answer_t *a);

/* Standard base64 with padding (what the gateway uses for bytes). encode
 * writes a NUL-terminated text into out, which needs
 * px_registry_etcd_b64_len(n) + 1 bytes. decode accepts only the canonical
 * form; out needs n / 4 * 3 bytes; returns the decoded length or -1. */
size_t px_registry_etcd_b64_len(size_t n);
void px_registry_etcd_b64_encode(const void *in, size_t n, char *out);
long px_registry_etcd_b64_decode(const char *in, size_t n, unsigned char *out);

/* The end of the range of every key starting with prefix[0..n): the prefix
 * with its last byte below 0xff raised by one and the 0xff bytes after it
 * dropped; "\0" (one NUL byte: every key from the prefix on) when there is
 * no such byte. out needs n bytes (at least 1); returns its length. */
size_t px_registry_etcd_range_end(const void *prefix, size_t n, unsigned char *out);

/* Copy s[0..n) into buf[0..cap) printable (other bytes as \xNN), cut with
 * "..." when long. */
void px_registry_etcd_printable(const void *s, size_t n, char *buf, size_t cap);

#endif
