/*
 * peer.h: the connection exchange between processes that were not launched
 * together (issue 23, docs/peers.md). A process opens a listener and hands its
 * contact string to anyone; a process holding the same secret connects to it;
 * both sides prove they hold the secret (HMAC-SHA256 challenge-response, the
 * secret never sent) and hand each other an opaque payload (what the BTLs
 * will publish to reach this process). Nothing here knows messaging: the
 * runtime calls this to bring a new peer's payload to its transports.
 *
 * Called by the runtime (px_init registers the peer_* variables through
 * px_peer_register_params) and by its tests. Not thread-safe per object: one
 * thread at a time per listener or connection. Errors: a PX_ERR_* code, and
 * the text saying what was wrong in px_peer_last_error() (this thread's).
 */
#ifndef PX_RUNTIME_PEER_H
#define PX_RUNTIME_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct px_peer_listener px_peer_listener_t;
typedef struct px_peer_conn px_peer_conn_t;

/* Who is at the other end of a connection, as it said in the handshake
 * (authenticated once the connection is delivered). */
typedef struct px_peer_ident {
    char host[65];     /* its host name */
    uint32_t pid;      /* its process id */
    uint64_t instance; /* the listener's instance (a connector's: 0) */
    char address[48];  /* "a.b.c.d:port" of its socket */
} px_peer_ident_t;

/* Whether `id` names this host (its host name, as the handshake carries
 * it, is this process's). */
bool px_peer_ident_same_host(const px_peer_ident_t *id);

/* Register the peer_* variables (px_init does; safe to call again). */
int px_peer_register_params(void);
/* The output stream of the peer_verbose variable (the runtime's dynamic
 * peers report there too: each one connected, accepted and released). */
int px_peer_output(void);

/* Open a listener on peer_listen_address:peer_listen_port that answers every
 * authenticated connector with `payload` (copied). *contact is the listener's
 * contact string (owned by the listener). Refused without a secret. */
int px_peer_listen(const void *payload, size_t len, px_peer_listener_t **listener,
                   const char **contact);
/* Close the listener, its handshakes in progress and the connections not yet
 * taken with px_peer_accept. Connections already taken stay open. */
void px_peer_listener_close(px_peer_listener_t *listener);

/* Answer each connector with a reply of its own instead of the listen
 * payload: once a connector proved it holds the secret, `reply` gets its
 * payload (untrusted, of a process holding the secret) and its identity and
 * returns PX_SUCCESS with *reply (malloc'ed, *reply_len bytes, sent in ACCEPT
 * under the listener's proof, then freed) and a *cookie that the delivered
 * connection carries (px_peer_conn_cookie). Any other return refuses the
 * connector. A cookie whose connection is not delivered (the connector left
 * or timed out before its ACCEPT went, the listener closed) goes to
 * `release`. Used by the runtime: the transports' reply depends on the
 * offer (docs/peers.md). */
typedef int (*px_peer_reply_fn)(void *arg, const void *payload, size_t len,
                                const px_peer_ident_t *ident, void **reply, size_t *reply_len,
                                void **cookie);
typedef void (*px_peer_release_fn)(void *arg, void *cookie);
void px_peer_listener_set_reply(px_peer_listener_t *listener, px_peer_reply_fn reply,
                                px_peer_release_fn release, void *arg);

/* Progress the listener without blocking: accept new sockets, advance the
 * handshakes, close those past their deadline. Returns 1 and *conn when a
 * connection finished its handshake, 0 when none is ready yet, or a
 * negative error of the listener itself. A progress engine calls it on each
 * pass; px_peer_listener_fd() is readable when there is socket work. */
int px_peer_accept_progress(px_peer_listener_t *listener, px_peer_conn_t **conn);
int px_peer_listener_fd(const px_peer_listener_t *listener);
/* Block up to `timeout` seconds (<= 0: peer_connect_timeout) for a
 * connection: PX_SUCCESS and *conn, or PX_ERR_TIMEOUT when nobody connected. */
int px_peer_accept(px_peer_listener_t *listener, double timeout, px_peer_conn_t **conn);

/* Connect to the listener named by `contact`, send `payload`, receive the
 * listener's. Bounded by `timeout` seconds (<= 0: peer_connect_timeout). */
int px_peer_connect(const char *contact, const void *payload, size_t len, double timeout,
                    px_peer_conn_t **conn);

/* px_peer_connect that calls `serve(arg)` at least every millisecond while
 * it waits for the listener (NULL: as px_peer_connect), to progress this
 * process's own listener meanwhile: two processes that connect to each other
 * at the same moment then both finish (docs/peers.md). `serve` may accept
 * connections; it must not connect. */
typedef void (*px_peer_serve_fn)(void *arg);
int px_peer_connect_serving(const char *contact, const void *payload, size_t len, double timeout,
                            px_peer_serve_fn serve, void *arg, px_peer_conn_t **conn);

/* A connection: the peer's payload and identity, its socket (open until
 * px_peer_conn_close; the peer closing it is how it leaves). */
const void *px_peer_conn_payload(const px_peer_conn_t *conn, size_t *len);
const px_peer_ident_t *px_peer_conn_ident(const px_peer_conn_t *conn);
int px_peer_conn_fd(const px_peer_conn_t *conn);
/* The reply function's cookie for an accepted connection (else NULL). */
void *px_peer_conn_cookie(const px_peer_conn_t *conn);
void px_peer_conn_close(px_peer_conn_t *conn);

/* The text of this thread's last error of a px_peer_* call. */
const char *px_peer_last_error(void);

#endif
