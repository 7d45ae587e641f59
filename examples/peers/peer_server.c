/*
 * peer_server: the server half of the connected-peers example
 * (examples/peers/README.md). Started on its own (no launcher), it opens its
 * listener, writes its contact string to CONTACT_FILE and serves clients one
 * session at a time: each client and the server form a group of two
 * (px_group_from_peers, the server first), the server broadcasts its pid,
 * then checks each tagged message's checksum and replies; now and then both
 * compare what they exchanged with an allreduce.
 *
 * One-sided: the server allocates a region (px_xfer_alloc) and sends its key
 * to each client after it connected. For every message it fills the region's
 * first part with a pattern for that round (its checksum goes in the reply);
 * the client reads it and writes a block back, one-sided, then sends a
 * notification (px_xfer_notify) with the block's checksum, which the server
 * checks against what is in its region. A client that leaves or dies ends
 * its session; the server waits for the next one.
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

/* The client's notification after it wrote its block for round `seq`: check
 * the block in our region against the checksum the client sent. */
static int check_block(int peer, int session, uint64_t seq, const unsigned char *region,
                       uint64_t *bad)
{
    block_note_t note;
    size_t len;
    int from;
    do { /* bounded: a client that died sends none (its next receive fails anyway) */
        int rc = px_xfer_notify_recv(&from, &note, sizeof note, &len, 10.0);
        if (rc != PX_SUCCESS) {
            printf("server: session %d: no notification for round %llu: %s\n", session,
                   (unsigned long long)seq, px_xfer_last_error());
            return rc;
        }
    } while (from != peer || len != sizeof note); /* not this client's: dropped */
    /* The notification arrives after the writes before it: the block is there. */
    uint64_t mine = checksum(region + BLOCK_OFF, BLOCK_LEN);
    if (note.seq != seq || note.sum != mine) {
        printf("server: session %d: round %llu: the client's block has checksum %016llx, it "
               "wrote %016llx (round %llu)\n",
               session, (unsigned long long)seq, (unsigned long long)mine,
               (unsigned long long)note.sum, (unsigned long long)note.seq);
        ++*bad;
    }
    return PX_SUCCESS;
}

static int serve(int peer, int session, unsigned char *buf, unsigned char *region,
                 const unsigned char *key, size_t klen)
{
    px_group_t *g = NULL;
    int members[2] = {px_rank(), peer};
    int rc = px_group_from_peers(members, 2, 0, 10, &g);
    if (rc != PX_SUCCESS) {
        printf("server: session %d: no group with peer %d: %s\n", session, peer, px_strerror(rc));
        return rc;
    }
    uint64_t pid = (uint64_t)getpid(), acc = 0, served = 0, blocks = 0, bad_blocks = 0;
    rc = px_bcast(&pid, 1, PX_UINT64, 0, g);
    if (PX_SUCCESS == rc) /* the key of our region: the client imports it */
        rc = px_send(key, klen, peer, TAG_KEY);
    while (PX_SUCCESS == rc) {
        px_status_t st;
        rc = px_recv(buf, sizeof(msg_hdr_t) + MAX_DATA, peer, PX_ANY_TAG, &st);
        if (rc != PX_SUCCESS)
            break;
        if (TAG_BYE == st.tag) {
            printf("server: session %d: the client said bye after %llu messages; one-sided: "
                   "%llu blocks checked, %llu errors\n",
                   session, (unsigned long long)served, (unsigned long long)blocks,
                   (unsigned long long)bad_blocks);
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
        /* This round's pattern in our region, for the client to read one-sided. */
        fill(region, PATTERN_LEN, ~h.seq);
        h.xsum = checksum(region, PATTERN_LEN);
        rc = px_send(&h, sizeof h, peer, TAG_REPLY);
        if (PX_SUCCESS == rc) /* the client reads, writes its block and notifies */
            rc = check_block(peer, session, h.seq, region, &bad_blocks);
        blocks += PX_SUCCESS == rc;
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
    /* The region clients read and write one-sided, and its key (the bytes a
     * client needs to reach it: sent to each client, px_xfer_key_import). */
    px_xfer_region_t *region = NULL;
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen = 0;
    rc = px_xfer_alloc(REGION_LEN, &region);
    if (PX_SUCCESS == rc)
        rc = px_xfer_key_export(region, key, sizeof key, &klen);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "server: no region for one-sided: %s\n", px_xfer_last_error());
        px_finalize();
        return 1;
    }
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
        serve(peer, s, buf, px_xfer_region_base(region), key, klen);
        px_disconnect(peer);
        fflush(stdout);
    }
    free(buf);
    px_xfer_free(&region);
    printf("server: done\n");
    return px_finalize() != PX_SUCCESS;
}
