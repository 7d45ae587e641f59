/*
 * peer_probe: one side of runtime/peer's connection exchange, for
 * test/peer/t_peer.sh, which starts two of them separately (no launcher).
 * Each runs px_init alone (boot/singleton) and takes the secret and the
 * other settings from the peer_* variables (PX_MCA_peer_*).
 *
 *   peer_probe listen FILE PAYLOAD COUNT [TIMEOUT]
 *       listen, write the contact to FILE, accept COUNT connections (each
 *       within TIMEOUT seconds, default peer_connect_timeout), print each
 *       peer's payload and the open descriptors before and after
 *   peer_probe connect CONTACT PAYLOAD COUNT
 *       connect COUNT times (closing each), print the listener's payload, the
 *       open descriptors and the heap in use before and after the cycles
 *   peer_probe twice CONTACT PAYLOAD     two connections at once to one listener
 *   peer_probe self                      connect to this process's own listener
 *   peer_probe accept-none TIMEOUT       listen, nobody connects
 *   peer_probe silent FILE               a TCP listener that accepts and never answers
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "core/util/error.h"
#include "runtime/peer/peer.h"
#include "runtime/plexus.h"
#include "test/peer/dyn_util.h"

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks;
}

static int write_contact(const char *file, const char *contact)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", contact) < 0 || fclose(f) != 0)
        return -1;
    return rename(tmp, file);
}

static int do_listen(const char *file, const char *payload, int count, double timeout)
{
    px_peer_listener_t *l;
    const char *contact;
    if (px_peer_listen(payload, strlen(payload), &l, &contact) != PX_SUCCESS) {
        printf("listen: %s\n", px_peer_last_error());
        return 1;
    }
    int fds0 = dyn_count_fds();
    write_contact(file, contact);
    printf("contact %s\n", contact);
    fflush(stdout);
    int rc = 0;
    size_t heap0 = 0;
    for (int i = 0; i < count; i++) {
        px_peer_conn_t *c;
        if (i == 10 || (i == 0 && count <= 10))
            heap0 = heap_in_use();
        if (px_peer_accept(l, timeout, &c) != PX_SUCCESS) {
            printf("accept %d: %s\n", i, px_peer_last_error());
            rc = 1;
            break;
        }
        size_t len;
        const char *p = px_peer_conn_payload(c, &len);
        const px_peer_ident_t *id = px_peer_conn_ident(c);
        if (count <= 10 || i == 0 || i == count - 1)
            printf("accepted %d from %s host %s pid %u payload %.*s\n", i, id->address, id->host,
                   (unsigned)id->pid, (int)len, p);
        px_peer_conn_close(c);
    }
    printf("listener fds before %d after %d heap after ten %zu after last %zu\n", fds0,
           dyn_count_fds(), heap0, heap_in_use());
    px_peer_listener_close(l);
    return rc;
}

static int do_connect(const char *contact, const char *payload, int count)
{
    int fds0 = dyn_count_fds();
    size_t heap0 = 0;
    for (int i = 0; i < count; i++) {
        px_peer_conn_t *c;
        if (px_peer_connect(contact, payload, strlen(payload), 0, &c) != PX_SUCCESS) {
            printf("connect %d: %s\n", i, px_peer_last_error());
            return 2;
        }
        if (i == 0) {
            size_t len;
            const char *p = px_peer_conn_payload(c, &len);
            const px_peer_ident_t *id = px_peer_conn_ident(c);
            printf("connected to %s host %s pid %u payload %.*s\n", id->address, id->host,
                   (unsigned)id->pid, (int)len, p);
        }
        px_peer_conn_close(c);
        if (i == 9 || (i == 0 && count < 10))
            heap0 = heap_in_use(); /* after ten: one-time setup is done (a constant 1 KiB
                                      more appears in the second cycle, whatever the count) */
    }
    printf("connector fds before %d after %d heap after ten %zu after last %zu\n", fds0,
           dyn_count_fds(), heap0, heap_in_use());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 64;
    if (0 == strcmp(argv[1], "silent") && argc == 3) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
        socklen_t sl = sizeof sa;
        if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) || listen(s, 4) ||
            getsockname(s, (struct sockaddr *)&sa, &sl))
            return 1;
        char c[128];
        snprintf(c, sizeof c, "px-peer:1:127.0.0.1:%u:silent:%u:0123456789abcdef",
                 (unsigned)ntohs(sa.sin_port), (unsigned)getpid());
        write_contact(argv[2], c);
        for (;;) {
            int a = accept(s, NULL, NULL);
            (void)a; /* held open, never answered */
        }
    }
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 3;
    int rc = 64;
    if (0 == strcmp(argv[1], "listen") && argc >= 5) {
        rc = do_listen(argv[2], argv[3], atoi(argv[4]), argc > 5 ? atof(argv[5]) : 0);
    } else if (0 == strcmp(argv[1], "connect") && argc == 5) {
        rc = do_connect(argv[2], argv[3], atoi(argv[4]));
    } else if (0 == strcmp(argv[1], "twice") && argc == 4) {
        px_peer_conn_t *a, *b;
        rc = 2;
        if (px_peer_connect(argv[2], argv[3], strlen(argv[3]), 0, &a) != PX_SUCCESS)
            printf("first: %s\n", px_peer_last_error());
        else if (px_peer_connect(argv[2], argv[3], strlen(argv[3]), 0, &b) != PX_SUCCESS)
            printf("second: %s\n", px_peer_last_error());
        else {
            printf("two connections: fds %d and %d, both to pid %u instance %016llx\n",
                   px_peer_conn_fd(a), px_peer_conn_fd(b), (unsigned)px_peer_conn_ident(b)->pid,
                   (unsigned long long)px_peer_conn_ident(b)->instance);
            rc = px_peer_conn_fd(a) != px_peer_conn_fd(b) ? 0 : 2;
            px_peer_conn_close(b);
        }
        if (rc == 0 || a)
            px_peer_conn_close(a);
    } else if (0 == strcmp(argv[1], "self") && argc == 2) {
        px_peer_listener_t *l;
        const char *contact;
        px_peer_conn_t *c;
        if (px_peer_listen("me", 2, &l, &contact) != PX_SUCCESS) {
            printf("listen: %s\n", px_peer_last_error());
            rc = 1;
        } else {
            int r = px_peer_connect(contact, "me", 2, 0, &c);
            printf("self: %s (%s)\n", px_strerror(r), px_peer_last_error());
            rc = r == PX_SUCCESS ? 1 : 0;
            px_peer_listener_close(l);
        }
    } else if (0 == strcmp(argv[1], "accept-none") && argc == 3) {
        px_peer_listener_t *l;
        const char *contact;
        px_peer_conn_t *c = NULL;
        if (px_peer_listen("x", 1, &l, &contact) != PX_SUCCESS) {
            printf("listen: %s\n", px_peer_last_error());
            rc = 1;
        } else {
            int p = px_peer_accept_progress(l, &c);
            int r = px_peer_accept(l, atof(argv[2]), &c);
            printf("progress: %d; accept: %s (%s)\n", p, px_strerror(r), px_peer_last_error());
            rc = p == 0 && r == PX_ERR_TIMEOUT && NULL == c ? 0 : 1;
            px_peer_listener_close(l);
        }
    }
    px_finalize();
    return rc;
}
