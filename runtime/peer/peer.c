/*
 * peer.c: the peer_* variables, the thread's last error, the clock helpers
 * and connections; the listener (accept side, driven without blocking) is in
 * peer_listen.c, the connector (bounded by a deadline) in peer_connect.c. The
 * handshake
 * (docs/peers.md, "Wire format"):
 *
 *   connector                               listener
 *   HELLO  nonce_c, expected instance  ->
 *                                      <-   CHALLENGE nonce_l, instance
 *   AUTH   HMAC(connector, T, p_c), p_c ->   checks it (constant time)
 *                                      <-   ACCEPT HMAC(listener, T, p_c, p_l), p_l
 *                                           (or REFUSE reason)
 *
 * T is both HELLO and CHALLENGE bodies; the secret never leaves the process.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/peer/peer_internal.h"

/* ------------------------------------------------------------ variables */

typedef struct {
    char *listen_address;
    int listen_port;
    char *contact_address;
    char *secret_file;
    double connect_timeout;
    size_t max_payload;
    int max_pending;
    int verbose;
} peer_vars_t;

static peer_vars_t vars = {.listen_address = "127.0.0.1",
                           .connect_timeout = 10,
                           .max_payload = 65536,
                           .max_pending = 16,
                           .verbose = 1};
static int output_stream = -1;

#define PV_AT(field) .offset = PX_MCA_VAR_AT(peer_vars_t, field)
static const px_mca_var_field_t peer_var_table[] = {
    {.name = "listen_address",
     .help = "Numeric IPv4 address a peer listener binds (px_peer_listen): 127.0.0.1 (default, "
             "this host only), an interface's address, or 0.0.0.0 for every interface (then "
             "set peer_contact_address)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "127.0.0.1",
     PV_AT(listen_address)},
    {.name = "listen_port",
     .help = "TCP port a peer listener binds; 0: any free port (the contact string says which)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "0",
     .min = "0",
     .max = "65535",
     PV_AT(listen_port)},
    {.name = "contact_address",
     .help = "Numeric IPv4 address the contact string names (how others reach the listener); "
             "empty: peer_listen_address, which must then not be 0.0.0.0",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "",
     PV_AT(contact_address)},
    {.name = "secret_file",
     .help = "File holding the secret every process that connects must share (16 to 4096 "
             "bytes, a trailing newline ignored); must belong to this user with no access for "
             "group or others (chmod 600). Without a secret no listener opens and no connection "
             "is made",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 2,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "",
     PV_AT(secret_file)},
    {.name = "connect_timeout",
     .help = "Seconds a connection exchange may take, on both sides: px_peer_connect fails "
             "after it (unreachable, stale or silent listener) and a listener drops a "
             "connector that has not finished its handshake by then",
     .type = PX_MCA_VAR_TYPE_DOUBLE,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "10",
     .min = "0.001",
     .max = "3600",
     PV_AT(connect_timeout)},
    {.name = "max_payload",
     .help = "Largest payload (bytes) a peer may send in the connection exchange; a larger "
             "one is refused before anything is allocated for it",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "64k",
     .min = "0",
     .max = "16M",
     PV_AT(max_payload)},
    {.name = "max_pending",
     .help = "Handshakes a listener runs at once; a connection beyond them is closed at once "
             "(and logged)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "16",
     .min = "1",
     .max = "1024",
     PV_AT(max_pending)},
    {.name = "verbose",
     .help = "Verbosity of the peer listener and connector: 1 (default) every connection a "
             "listener refused, who and why; 10 every connection made, and every dynamic peer "
             "connected, accepted or released with the number this process holds",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "1",
     .min = "0",
     .max = "100",
     PV_AT(verbose)},
    {.name = NULL},
};
#undef PV_AT

int px_peer_register_params(void)
{
    int rc = px_mca_var_register_table("peer", NULL, peer_var_table, -1, &vars);
    if (output_stream >= 0)
        px_output_set_verbosity(output_stream, vars.verbose);
    return rc;
}

int px_peer_output(void)
{
    if (output_stream < 0)
        output_stream = px_output_open("peer", vars.verbose);
    return output_stream < 0 ? 0 : output_stream;
}

/* ------------------------------------------------------------ errors */

/* This thread's last error text, on the heap: libplexus's thread-local
 * block must stay small (its initial-exec part has to fit in the static TLS
 * a dlopen'ed libplexus.so gets; see test/abi/t_one_library.sh). */
#define PX_PEER_ERR_LEN 1024
static pthread_key_t err_key;
static pthread_once_t err_once = PTHREAD_ONCE_INIT;

static void err_key_make(void)
{
    pthread_key_create(&err_key, free);
}

static char *err_buf(bool make)
{
    pthread_once(&err_once, err_key_make);
    char *b = pthread_getspecific(err_key);
    if (NULL == b && make) {
        b = calloc(1, PX_PEER_ERR_LEN);
        if (b && pthread_setspecific(err_key, b) != 0) {
            free(b);
            b = NULL;
        }
    }
    return b;
}

int px_peer_fail(int rc, const char *fmt, ...)
{
    char *b = err_buf(true);
    if (NULL == b)
        return rc;
    char tmp[PX_PEER_ERR_LEN]; /* the arguments may be the old text */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(b, tmp, sizeof tmp);
    return rc;
}

const char *px_peer_last_error(void)
{
    const char *b = err_buf(false);
    return b && b[0] ? b : "no error";
}

double px_peer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int px_peer_ms_until(double deadline)
{
    double left = deadline - px_peer_now();
    if (left <= 0)
        return 0;
    return left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
}

void px_peer_my_ident(char host[PX_PEER_HOST_MAX + 1])
{
    char h[256];
    if (gethostname(h, sizeof h) != 0)
        strcpy(h, "unknown");
    h[sizeof h - 1] = '\0';
    px_peer_host_sanitize(h, host);
}

bool px_peer_ident_same_host(const px_peer_ident_t *id)
{
    char host[PX_PEER_HOST_MAX + 1];
    px_peer_my_ident(host);
    return NULL != id && 0 == strncmp(host, id->host, sizeof id->host);
}

double px_peer_default_timeout(void)
{
    return vars.connect_timeout;
}

int px_peer_opts_from_vars(px_peer_opts_t *o, px_peer_secret_t *secret)
{
    memset(o, 0, sizeof *o);
    o->listen_address = vars.listen_address ? vars.listen_address : "127.0.0.1";
    o->listen_port = (unsigned)vars.listen_port;
    o->contact_address = vars.contact_address;
    o->timeout = vars.connect_timeout;
    o->max_payload = vars.max_payload;
    o->max_pending = vars.max_pending;
    char why[600];
    int rc = px_peer_secret_load(vars.secret_file, secret, why, sizeof why);
    if (rc != PX_SUCCESS)
        return px_peer_fail(rc, "%s", why);
    o->secret = secret;
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ connections */

const void *px_peer_conn_payload(const px_peer_conn_t *c, size_t *len)
{
    if (len)
        *len = c->len;
    return c->payload;
}

const px_peer_ident_t *px_peer_conn_ident(const px_peer_conn_t *c)
{
    return &c->ident;
}

int px_peer_conn_fd(const px_peer_conn_t *c)
{
    return c->fd;
}

void px_peer_conn_close(px_peer_conn_t *c)
{
    if (NULL == c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->payload);
    free(c);
}

void *px_peer_conn_cookie(const px_peer_conn_t *c)
{
    return c->cookie;
}
