/*
 * peer_wire.c: the frames of the connection exchange, the secret and the
 * HMAC (libsodium's crypto_auth_hmacsha256, sodium_memcmp, randombytes_buf).
 * Everything read here came from a socket: each check says what was wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "core/util/error.h"
#include "runtime/peer/peer_internal.h"
#ifdef PX_HAVE_SODIUM
#include <sodium.h>
#endif

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void px_peer_hdr_write(uint8_t out[PX_PEER_HDR_LEN], uint8_t type, uint32_t len)
{
    put32(out, PX_PEER_MAGIC);
    out[4] = PX_PEER_VERSION;
    out[5] = type;
    out[6] = out[7] = 0;
    put32(out + 8, len);
}

const char *px_peer_hdr_check(const uint8_t in[PX_PEER_HDR_LEN], unsigned types, uint32_t min_len,
                              uint32_t max_len, px_peer_hdr_t *h)
{
    h->magic = get32(in);
    h->version = in[4];
    h->type = in[5];
    h->flags = (uint16_t)(in[6] << 8 | in[7]);
    h->len = get32(in + 8);
    if (h->magic != PX_PEER_MAGIC)
        return "not a Plexus peer frame (bad magic)";
    if (h->version != PX_PEER_VERSION)
        return "a protocol version other than 1";
    if (h->flags != 0)
        return "flags this version does not define";
    if (h->type >= 32 || !(types & (1u << h->type)))
        return "a frame of a type not expected here";
    if (h->len < min_len || h->len > max_len)
        return "a frame length out of bounds";
    return NULL;
}

void px_peer_hello_write(uint8_t out[PX_PEER_HELLO_LEN], const px_peer_hello_t *h)
{
    memcpy(out, h->nonce, PX_PEER_NONCE_LEN);
    put32(out + 32, (uint32_t)(h->instance >> 32));
    put32(out + 36, (uint32_t)h->instance);
    put32(out + 40, h->pid);
    memset(out + 44, 0, PX_PEER_HOST_MAX);
    memcpy(out + 44, h->host, strnlen(h->host, PX_PEER_HOST_MAX));
}

const char *px_peer_hello_read(const uint8_t in[PX_PEER_HELLO_LEN], px_peer_hello_t *h)
{
    memcpy(h->nonce, in, PX_PEER_NONCE_LEN);
    h->instance = (uint64_t)get32(in + 32) << 32 | get32(in + 36);
    h->pid = get32(in + 40);
    const uint8_t *host = in + 44;
    size_t n = 0;
    while (n < PX_PEER_HOST_MAX && host[n])
        n++;
    if (n == 0)
        return "an empty host name";
    for (size_t i = 0; i < n; i++)
        if (host[i] < 0x21 || host[i] > 0x7e || host[i] == ':')
            return "a host name with a byte that is not printable";
    for (size_t i = n; i < PX_PEER_HOST_MAX; i++)
        if (host[i])
            return "a host name not padded with zero bytes";
    memcpy(h->host, host, n);
    h->host[n] = '\0';
    return NULL;
}

const char *px_peer_reason_str(uint32_t reason)
{
    switch (reason) {
    case PX_PEER_R_AUTH:
        return "authentication failed: this process does not hold the listener's secret "
               "(the files of peer_secret_file differ)";
    case PX_PEER_R_STALE:
        return "stale contact: the listener at that address is another instance than the "
               "contact names (the process restarted or another took its port)";
    case PX_PEER_R_BUSY:
        return "the listener has too many handshakes in progress (peer_max_pending)";
    case PX_PEER_R_PROTOCOL:
        return "the listener found a malformed frame";
    case PX_PEER_R_TOO_LARGE:
        return "the payload is larger than the listener's peer_max_payload";
    case PX_PEER_R_VERSION:
        return "the listener speaks another protocol version";
    case PX_PEER_R_NO_FDS:
        return "the listener's process is out of file descriptors (its ulimit -n): it takes "
               "connections again once some close";
    default:
        return "an unknown reason";
    }
}

/* ------------------------------------------------------------ secret */

void px_peer_secret_free(px_peer_secret_t *s)
{
    if (s->bytes) {
#ifdef PX_HAVE_SODIUM
        sodium_memzero(s->bytes, s->len);
#else
        volatile uint8_t *p = s->bytes;
        for (size_t i = 0; i < s->len; i++)
            p[i] = 0;
#endif
        free(s->bytes);
    }
    s->bytes = NULL;
    s->len = 0;
}

static int set_secret(px_peer_secret_t *s, const uint8_t *b, size_t n, const char *src, char *why,
                      size_t why_len)
{
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r'))
        n--; /* a trailing newline is not part of the secret */
    if (n < PX_PEER_SECRET_MIN) {
        snprintf(why, why_len,
                 "the secret from %s is %zu bytes: too short, at least %d are needed (e.g. "
                 "head -c 32 /dev/urandom | base64 > FILE)",
                 src, n, PX_PEER_SECRET_MIN);
        return PX_ERR_BAD_PARAM;
    }
    s->bytes = malloc(n);
    if (NULL == s->bytes)
        return PX_ERR_OUT_OF_RESOURCE;
    memcpy(s->bytes, b, n);
    s->len = n;
    return PX_SUCCESS;
}

int px_peer_secret_load(const char *file, px_peer_secret_t *s, char *why, size_t why_len)
{
    s->bytes = NULL;
    s->len = 0;
    if (file && file[0]) {
        int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
            snprintf(why, why_len, "peer_secret_file %s: cannot open it: %s", file,
                     strerror(errno));
            return PX_ERR_NOT_FOUND;
        }
        struct stat st;
        int rc = PX_SUCCESS;
        if (fstat(fd, &st) != 0) {
            snprintf(why, why_len, "peer_secret_file %s: %s", file, strerror(errno));
            rc = PX_ERR_IN_ERRNO;
        } else if (!S_ISREG(st.st_mode)) {
            snprintf(why, why_len, "peer_secret_file %s is not a regular file", file);
            rc = PX_ERR_BAD_PARAM;
        } else if (st.st_uid != geteuid()) {
            snprintf(why, why_len,
                     "peer_secret_file %s belongs to uid %u, not to this user (uid %u): another "
                     "user could have written it; refused",
                     file, (unsigned)st.st_uid, (unsigned)geteuid());
            rc = PX_ERR_BAD_PARAM;
        } else if (st.st_mode & 077) {
            snprintf(why, why_len,
                     "peer_secret_file %s has mode %04o: group or others may read or write it, "
                     "so it is no secret; refused (as ssh refuses such keys): chmod 600 %s",
                     file, (unsigned)(st.st_mode & 07777), file);
            rc = PX_ERR_BAD_PARAM;
        } else if (st.st_size > PX_PEER_SECRET_MAX) {
            snprintf(why, why_len, "peer_secret_file %s is %lld bytes, more than %d", file,
                     (long long)st.st_size, PX_PEER_SECRET_MAX);
            rc = PX_ERR_BAD_PARAM;
        }
        if (rc == PX_SUCCESS) {
            uint8_t buf[PX_PEER_SECRET_MAX + 1];
            size_t n = 0;
            for (;;) {
                ssize_t r = read(fd, buf + n, sizeof buf - n);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r < 0) {
                    snprintf(why, why_len, "peer_secret_file %s: %s", file, strerror(errno));
                    rc = PX_ERR_IN_ERRNO;
                    break;
                }
                if (r == 0)
                    break;
                n += (size_t)r;
                if (n > PX_PEER_SECRET_MAX) {
                    snprintf(why, why_len, "peer_secret_file %s is more than %d bytes", file,
                             PX_PEER_SECRET_MAX);
                    rc = PX_ERR_BAD_PARAM;
                    break;
                }
            }
            if (rc == PX_SUCCESS) {
                char src[300];
                snprintf(src, sizeof src, "peer_secret_file %s", file);
                rc = set_secret(s, buf, n, src, why, why_len);
            }
            memset(buf, 0, sizeof buf);
        }
        close(fd);
        return rc;
    }
    snprintf(why, why_len,
             "no secret: set peer_secret_file to a file only you can read (chmod 600) holding "
             "at least %d bytes, the same secret on both sides; processes connect only when "
             "both hold it",
             PX_PEER_SECRET_MIN);
    return PX_ERR_NOT_AVAILABLE;
}

/* ------------------------------------------------------------ crypto */

#ifdef PX_HAVE_SODIUM
static int sodium_ready(void)
{
    static int state; /* 0 not tried, 1 ready, -1 failed */
    if (state == 0)
        state = sodium_init() >= 0 ? 1 : -1;
    return state;
}

bool px_peer_crypto_available(void)
{
    return sodium_ready() == 1;
}

int px_peer_random(void *out, size_t len)
{
    if (sodium_ready() != 1)
        return PX_ERR_NOT_AVAILABLE;
    randombytes_buf(out, len);
    return PX_SUCCESS;
}

int px_peer_mac(const px_peer_secret_t *s, bool listener, const uint8_t hello[PX_PEER_HELLO_LEN],
                const uint8_t challenge[PX_PEER_HELLO_LEN], const void *payload_c, size_t len_c,
                const void *payload_l, size_t len_l, uint8_t mac[PX_PEER_MAC_LEN])
{
    if (sodium_ready() != 1 || NULL == s || NULL == s->bytes)
        return PX_ERR_NOT_AVAILABLE;
    static const char lc[] = "px-peer/1 connector", ll[] = "px-peer/1 listener";
    crypto_auth_hmacsha256_state st;
    uint8_t n[4];
    crypto_auth_hmacsha256_init(&st, s->bytes, s->len);
    if (listener)
        crypto_auth_hmacsha256_update(&st, (const uint8_t *)ll, sizeof ll);
    else
        crypto_auth_hmacsha256_update(&st, (const uint8_t *)lc, sizeof lc);
    crypto_auth_hmacsha256_update(&st, hello, PX_PEER_HELLO_LEN);
    crypto_auth_hmacsha256_update(&st, challenge, PX_PEER_HELLO_LEN);
    put32(n, (uint32_t)len_c);
    crypto_auth_hmacsha256_update(&st, n, 4);
    if (len_c)
        crypto_auth_hmacsha256_update(&st, payload_c, len_c);
    if (payload_l || listener) {
        put32(n, (uint32_t)len_l);
        crypto_auth_hmacsha256_update(&st, n, 4);
        if (len_l)
            crypto_auth_hmacsha256_update(&st, payload_l, len_l);
    }
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_memzero(&st, sizeof st);
    return PX_SUCCESS;
}

bool px_peer_mac_equal(const uint8_t a[PX_PEER_MAC_LEN], const uint8_t b[PX_PEER_MAC_LEN])
{
    return sodium_memcmp(a, b, PX_PEER_MAC_LEN) == 0;
}
#else
bool px_peer_crypto_available(void)
{
    return false;
}

int px_peer_random(void *out, size_t len)
{
    (void)out;
    (void)len;
    return PX_ERR_NOT_AVAILABLE;
}

int px_peer_mac(const px_peer_secret_t *s, bool listener, const uint8_t hello[PX_PEER_HELLO_LEN],
                const uint8_t challenge[PX_PEER_HELLO_LEN], const void *payload_c, size_t len_c,
                const void *payload_l, size_t len_l, uint8_t mac[PX_PEER_MAC_LEN])
{
    (void)s, (void)listener, (void)hello, (void)challenge, (void)payload_c, (void)len_c;
    (void)payload_l, (void)len_l, (void)mac;
    return PX_ERR_NOT_AVAILABLE;
}

bool px_peer_mac_equal(const uint8_t a[PX_PEER_MAC_LEN], const uint8_t b[PX_PEER_MAC_LEN])
{
    uint8_t d = 0;
    for (int i = 0; i < PX_PEER_MAC_LEN; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}
#endif
