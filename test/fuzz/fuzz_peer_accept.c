/*
 * fuzz_peer_accept: runtime/peer's listener reading what a stranger sends
 * (docs/peers.md, "Wire format"): the input goes, through a socketpair
 * adopted as an accepted connection (px_peer_listener_adopt), to a listener
 * whose secret the harness knows. Byte 0 is a flags byte:
 *   bit 0   first send a well-formed HELLO naming this listener's instance
 *   bit 1   (with bit 0) then read the CHALLENGE and send an AUTH frame with
 *           the right HMAC over the rest of the input as payload
 * otherwise the rest of the input is sent as it is. The harness then closes
 * its end. The handshake must end (refused, or delivered with the payload
 * sent) without the listener holding it: no handshake is left pending.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/peer/peer_internal.h"
#include "test/fuzz/fuzz.h"

static px_peer_listener_t *listener;
static px_peer_contact_t me;
static px_peer_secret_t secret;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const char key[] = "the fuzz harness's secret, 32 b.";
    secret.len = sizeof key - 1;
    secret.bytes = malloc(secret.len);
    memcpy(secret.bytes, key, secret.len);
    px_peer_opts_t o = {.secret = &secret,
                        .listen_address = "127.0.0.1",
                        .timeout = 5,
                        .max_payload = 1024,
                        .max_pending = 4};
    const char *contact;
    px_output_set_verbosity(px_peer_output(), 0); /* refusals are the norm here */
    if (px_peer_listen_opts(&o, "listener payload", 16, &listener, &contact) != PX_SUCCESS) {
        fprintf(stderr, "fuzz_peer_accept: no listener: %s\n", px_peer_last_error());
        exit(1);
    }
    px_peer_contact_parse(contact, &me, NULL, 0);
    return 0;
}

static void send_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the listener closed: it refused */
        p += w;
        n -= (size_t)w;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (size == 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    uint8_t flags = data[0];
    data++, size--;
    if (px_peer_listener_adopt(listener, sv[1], "fuzz") != PX_SUCCESS) {
        close(sv[0]);
        return 0;
    }
    px_peer_conn_t *c = NULL;
    bool authed = false;
    if (flags & 1) {
        uint8_t hello[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN];
        px_peer_hello_t h;
        memset(&h, 0, sizeof h);
        h.instance = me.instance;
        h.pid = 1;
        strcpy(h.host, "fuzz");
        px_peer_hdr_write(hello, PX_PEER_T_HELLO, PX_PEER_HELLO_LEN);
        px_peer_hello_write(hello + PX_PEER_HDR_LEN, &h);
        send_all(sv[0], hello, sizeof hello);
        px_peer_accept_progress(listener, &c);
        uint8_t ch[PX_PEER_HDR_LEN + PX_PEER_HELLO_LEN];
        if ((flags & 2) && recv(sv[0], ch, sizeof ch, MSG_WAITALL | MSG_DONTWAIT) == sizeof ch &&
            ch[5] == PX_PEER_T_CHALLENGE) {
            uint8_t *auth = malloc(PX_PEER_HDR_LEN + PX_PEER_MAC_LEN + size);
            px_peer_hdr_write(auth, PX_PEER_T_AUTH, (uint32_t)(PX_PEER_MAC_LEN + size));
            px_peer_mac(&secret, false, hello + PX_PEER_HDR_LEN, ch + PX_PEER_HDR_LEN, data, size,
                        NULL, 0, auth + PX_PEER_HDR_LEN);
            memcpy(auth + PX_PEER_HDR_LEN + PX_PEER_MAC_LEN, data, size);
            send_all(sv[0], auth, PX_PEER_HDR_LEN + PX_PEER_MAC_LEN + size);
            free(auth);
            authed = true;
        }
    }
    if (!authed)
        send_all(sv[0], data, size);
    shutdown(sv[0], SHUT_WR);
    for (int i = 0; i < 1000 && px_peer_listener_pending(listener) > 0; i++) {
        if (px_peer_accept_progress(listener, &c) == 1) {
            size_t len;
            const uint8_t *p = px_peer_conn_payload(c, &len);
            /* only a connector that proved the secret is delivered, with what it sent */
            if (!authed || len != size || (len && memcmp(p, data, len) != 0))
                abort();
            px_peer_conn_close(c);
            c = NULL;
        }
    }
    if (px_peer_accept_progress(listener, &c) == 1) {
        if (!authed)
            abort();
        px_peer_conn_close(c);
    }
    if (px_peer_listener_pending(listener) != 0)
        abort(); /* a handshake held past its connector's end */
    close(sv[0]);
    return 0;
}
