/*
 * peer_internal.h: the pieces of runtime/peer shared by its files, its unit
 * test (test/peer/peer_test.c) and its fuzz harnesses: the contact string's
 * parser, the wire format, the secret and the explicit-options entry points.
 * Not installed; nothing outside runtime/peer and its tests includes it.
 */
#ifndef PX_RUNTIME_PEER_INTERNAL_H
#define PX_RUNTIME_PEER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime/peer/peer.h"

/* ------------------------------------------------------------ contact string
 * px-peer:<version>:<IPv4 a.b.c.d>:<port>:<host>:<pid>:<instance>
 * e.g. px-peer:1:127.0.0.1:40123:node7:12345:9f3a2c1b7e60d4a5 */
#define PX_PEER_CONTACT_PREFIX "px-peer"
#define PX_PEER_VERSION        1
#define PX_PEER_HOST_MAX       64
#define PX_PEER_CONTACT_MAX    160

typedef struct px_peer_contact {
    unsigned version;
    uint8_t addr[4]; /* network order */
    uint16_t port;
    char host[PX_PEER_HOST_MAX + 1];
    uint32_t pid;
    uint64_t instance;
} px_peer_contact_t;

/* Parse `text` strictly. PX_SUCCESS, or PX_ERR_BAD_PARAM with `why` (of
 * `why_len` bytes) saying which field, at which byte, and what is accepted. */
int px_peer_contact_parse(const char *text, px_peer_contact_t *c, char *why, size_t why_len);
/* Write the contact's text (at most PX_PEER_CONTACT_MAX bytes with its NUL). */
int px_peer_contact_format(const px_peer_contact_t *c, char *out, size_t out_len);
/* A host name as it may appear in a contact: [A-Za-z0-9._-], 1..64 bytes;
 * other bytes become '_', longer names are cut. */
void px_peer_host_sanitize(const char *in, char out[PX_PEER_HOST_MAX + 1]);

/* ------------------------------------------------------------ wire format
 * Every frame: a 12-byte header in network byte order, then `len` bytes.
 *   u32 magic "PXPR", u8 version (1), u8 type, u16 flags (0), u32 len
 * HELLO (connector -> listener) and CHALLENGE (listener -> connector) have a
 * fixed body of PX_PEER_HELLO_LEN bytes:
 *   nonce[32], u64 instance (HELLO: the listener it expects; CHALLENGE: its
 *   own), u32 pid, host[64] (NUL-padded, printable)
 * AUTH (connector) and ACCEPT (listener): mac[32] then the payload
 * (0..peer_max_payload bytes). REFUSE (listener): u32 reason. */
#define PX_PEER_MAGIC            0x50585052u /* "PXPR" */
#define PX_PEER_HDR_LEN          12
#define PX_PEER_NONCE_LEN        32
#define PX_PEER_MAC_LEN          32
#define PX_PEER_HELLO_LEN        (PX_PEER_NONCE_LEN + 8 + 4 + PX_PEER_HOST_MAX)
#define PX_PEER_PAYLOAD_HARD_MAX (16u * 1024 * 1024)
#define PX_PEER_SECRET_MIN       16
#define PX_PEER_SECRET_MAX       4096

enum {
    PX_PEER_T_HELLO = 1,
    PX_PEER_T_CHALLENGE = 2,
    PX_PEER_T_AUTH = 3,
    PX_PEER_T_ACCEPT = 4,
    PX_PEER_T_REFUSE = 5,
};

enum {
    PX_PEER_R_AUTH = 1,      /* the connector's proof did not match: another secret */
    PX_PEER_R_STALE = 2,     /* the connector expects another listener instance */
    PX_PEER_R_BUSY = 3,      /* too many handshakes in progress */
    PX_PEER_R_PROTOCOL = 4,  /* a malformed frame */
    PX_PEER_R_TOO_LARGE = 5, /* a payload above the listener's peer_max_payload */
    PX_PEER_R_VERSION = 6,   /* a protocol version the listener does not speak */
    PX_PEER_R_NO_FDS = 7,    /* the listener's process is out of descriptors */
};

typedef struct px_peer_hdr {
    uint32_t magic;
    uint8_t version, type;
    uint16_t flags;
    uint32_t len;
} px_peer_hdr_t;

typedef struct px_peer_hello {
    uint8_t nonce[PX_PEER_NONCE_LEN];
    uint64_t instance;
    uint32_t pid;
    char host[PX_PEER_HOST_MAX + 1];
} px_peer_hello_t;

void px_peer_hdr_write(uint8_t out[PX_PEER_HDR_LEN], uint8_t type, uint32_t len);
/* Decode and check a header: magic, version, flags, a type in `types` (a
 * bit per type), a length within [min_len, max_len]. NULL when good, else
 * why not. */
const char *px_peer_hdr_check(const uint8_t in[PX_PEER_HDR_LEN], unsigned types, uint32_t min_len,
                              uint32_t max_len, px_peer_hdr_t *h);
void px_peer_hello_write(uint8_t out[PX_PEER_HELLO_LEN], const px_peer_hello_t *h);
/* NULL when the body is a well-formed HELLO/CHALLENGE, else why not. */
const char *px_peer_hello_read(const uint8_t in[PX_PEER_HELLO_LEN], px_peer_hello_t *h);
const char *px_peer_reason_str(uint32_t reason);

/* ------------------------------------------------------------ authentication */
typedef struct px_peer_secret {
    uint8_t *bytes;
    size_t len;
} px_peer_secret_t;

/* The secret from `file` (peer_secret_file; checked: a regular file of this
 * user, not readable or writable by group or others, 16..4096 bytes).
 * PX_SUCCESS, PX_ERR_NOT_AVAILABLE when no file is set, another error with
 * the reason in `why`. */
int px_peer_secret_load(const char *file, px_peer_secret_t *s, char *why, size_t why_len);
void px_peer_secret_free(px_peer_secret_t *s);
/* Whether a HMAC-SHA256 library was built in (libsodium). */
bool px_peer_crypto_available(void);
int px_peer_random(void *out, size_t len);
/* mac = HMAC-SHA256(secret, label || hello || challenge || u32 len_c ||
 * payload_c [|| u32 len_l || payload_l when payload_l != NULL]). */
int px_peer_mac(const px_peer_secret_t *s, bool listener, const uint8_t hello[PX_PEER_HELLO_LEN],
                const uint8_t challenge[PX_PEER_HELLO_LEN], const void *payload_c, size_t len_c,
                const void *payload_l, size_t len_l, uint8_t mac[PX_PEER_MAC_LEN]);
/* Constant-time comparison: true when equal. */
bool px_peer_mac_equal(const uint8_t a[PX_PEER_MAC_LEN], const uint8_t b[PX_PEER_MAC_LEN]);

/* ------------------------------------------------------------ explicit options
 * What the variables give, as arguments (tests pass their own secret). */
typedef struct px_peer_opts {
    const px_peer_secret_t *secret; /* NULL: refused */
    const char *listen_address;     /* numeric IPv4, "0.0.0.0" for all */
    unsigned listen_port;           /* 0: any free port */
    const char *contact_address;    /* what the contact names; NULL or "": the listen address */
    double timeout;                 /* seconds; a handshake's bound on both sides */
    size_t max_payload;
    int max_pending;
    /* The connector's wait: called at least every millisecond while it
     * waits for its socket (NULL: it only waits). */
    px_peer_serve_fn serve;
    void *serve_arg;
} px_peer_opts_t;

/* The options from the peer_* variables; the secret is loaded into *secret
 * (freed by the caller with px_peer_secret_free). */
int px_peer_opts_from_vars(px_peer_opts_t *o, px_peer_secret_t *secret);
int px_peer_listen_opts(const px_peer_opts_t *o, const void *payload, size_t len,
                        px_peer_listener_t **listener, const char **contact);
int px_peer_connect_opts(const px_peer_opts_t *o, const char *contact, const void *payload,
                         size_t len, px_peer_conn_t **conn);
/* Take `fd` (a connected stream socket, any kind) as a connector in its
 * handshake, as accept() would: what the fuzz harness feeds. */
int px_peer_listener_adopt(px_peer_listener_t *l, int fd, const char *from);
/* Handshakes in progress (the fuzz harness waits for 0). */
int px_peer_listener_pending(const px_peer_listener_t *l);
/* Set this thread's error text (printf-like); returns `rc`. */
int px_peer_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A connection, from the listener (px_peer_accept*) or the connector. */
struct px_peer_conn {
    int fd;
    px_peer_ident_t ident;
    uint8_t *payload;
    size_t len;
    void *cookie;         /* the listener's reply function's (px_peer_conn_cookie) */
    px_peer_conn_t *next; /* a listener's ready queue */
};
/* The monotonic clock in seconds; milliseconds left until `deadline` (0 when
 * past), for poll. */
double px_peer_now(void);
int px_peer_ms_until(double deadline);
/* This host's name as a HELLO carries it. */
void px_peer_my_ident(char host[PX_PEER_HOST_MAX + 1]);
/* Whether `instance` is one of this process's listeners (a contact naming
 * it is this process). */
bool px_peer_own_instance(uint64_t instance);
/* peer_connect_timeout, the default bound of a handshake. */
double px_peer_default_timeout(void);

#endif
