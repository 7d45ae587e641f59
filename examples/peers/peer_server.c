/*
 * peer_server: the server half of the connected-peers example
 * (examples/peers/README.md). Started on its own (no launcher), it opens its
 * listener, writes its contact string to CONTACT_FILE and serves clients one
 * session at a time: each client and the server form a group of two
 * (px_group_from_peers, the server first), the server broadcasts its pid,
 * then checks each tagged message's checksum and replies; now and then both
 * compare what they exchanged with an allreduce. A client that leaves or
 * dies ends its session; the server waits for the next one.
 *
 *   PX_MCA_peer_secret_file=SECRET ./peer_server CONTACT_FILE [SESSIONS]
 *
 * SESSIONS: end after that many sessions (default 0: serve forever).
 */
#include <plexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "peers_common.h"

static int serve(int peer, int session, unsigned char *buf)
{
    px_group_t *g = NULL;
    int members[2] = {px_rank(), peer};
    int rc = px_group_from_peers(members, 2, 0, 10, &g);
    if (rc != PX_SUCCESS) {
        printf("server: session %d: no group with peer %d: %s\n", session, peer, px_strerror(rc));
        return rc;
    }
    uint64_t pid = (uint64_t)getpid(), acc = 0, served = 0;
    rc = px_bcast(&pid, 1, PX_UINT64, 0, g);
    while (PX_SUCCESS == rc) {
        px_status_t st;
        rc = px_recv(buf, sizeof(msg_hdr_t) + MAX_DATA, peer, PX_ANY_TAG, &st);
        if (rc != PX_SUCCESS)
            break;
        if (TAG_BYE == st.tag) {
            printf("server: session %d: the client said bye after %llu messages\n", session,
                   (unsigned long long)served);
            break;
        }
        if (TAG_SYNC == st.tag) { /* both sides compare what they exchanged */
            uint64_t x = acc;
            rc = px_allreduce(PX_IN_PLACE, &x, 1, PX_UINT64, PX_BXOR, g);
            if (PX_SUCCESS == rc && x != 0)
                printf("server: session %d: the client's checksums differ from mine\n", session);
            continue;
        }
        msg_hdr_t h;
        memcpy(&h, buf, sizeof h);
        if (TAG_DATA != st.tag || st.length < sizeof h || h.len != st.length - sizeof h) {
            printf("server: session %d: unexpected message (tag %d, %zu bytes): ignored\n", session,
                   st.tag, st.length);
            continue;
        }
        uint64_t mine = checksum(buf + sizeof h, h.len);
        h.good = mine == h.sum;
        h.sum = mine;
        acc ^= mine;
        served++;
        rc = px_send(&h, sizeof h, peer, TAG_REPLY);
    }
    if (rc != PX_SUCCESS) /* the library printed which peer failed and why */
        printf("server: session %d: lost the client (peer %d): %s\n", session, peer,
               px_strerror(rc));
    px_group_free(&g);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: PX_MCA_peer_secret_file=SECRET %s CONTACT_FILE [SESSIONS]\n",
                argv[0]);
        return 2;
    }
    const char *file = argv[1];
    int sessions = argc > 2 ? atoi(argv[2]) : 0;
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    const char *contact;
    int rc = px_contact(&contact);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "server: cannot listen: %s (is peer_secret_file set?)\n", px_strerror(rc));
        px_finalize();
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", contact) < 0 || fclose(f) != 0 || rename(tmp, file) != 0) {
        perror(file);
        px_finalize();
        return 1;
    }
    printf("server: pid %d listening, contact %s (in %s)\n", (int)getpid(), contact, file);
    fflush(stdout);
    unsigned char *buf = malloc(sizeof(msg_hdr_t) + MAX_DATA);
    for (int s = 1; buf && (0 == sessions || s <= sessions); ++s) {
        int peer;
        while ((rc = px_accept(1.0, &peer)) == PX_ERR_TIMEOUT)
            ; /* nobody yet */
        if (rc != PX_SUCCESS) {
            fprintf(stderr, "server: px_accept: %s\n", px_strerror(rc));
            break;
        }
        printf("server: session %d: client connected as peer %d\n", s, peer);
        fflush(stdout);
        serve(peer, s, buf);
        px_disconnect(peer);
        fflush(stdout);
    }
    free(buf);
    printf("server: done\n");
    return px_finalize() != PX_SUCCESS;
}
