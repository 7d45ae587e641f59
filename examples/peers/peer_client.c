/*
 * peer_client: the client half of the connected-peers example
 * (examples/peers/README.md). Started on its own (no launcher), it reads the
 * server's contact from CONTACT_FILE, connects, forms a group of two with
 * the server and sends ROUNDS tagged messages of 1 B to 256 KiB, checking
 * each reply's checksum; every 20 rounds both sides compare what they
 * exchanged with an allreduce. When the server dies or restarts, the call
 * that was waiting for it fails (the library's message names the server:
 * host, pid, contact); the client releases the peer and retries the contact
 * file until a server answers, then carries on from the round it was at.
 *
 *   PX_MCA_peer_secret_file=SECRET ./peer_client CONTACT_FILE [ROUNDS [PAUSE_MS]]
 *
 * Default: 1000 rounds, 2 ms between them. Gives up when no server answers
 * for 60 s.
 */
#include <plexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "peers_common.h"

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void fill(unsigned char *b, size_t n, uint64_t seq)
{
    uint64_t x = seq * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)x;
    }
}

/* Connect to whatever contact CONTACT_FILE holds now, retrying for up to 60 s. */
static int connect_server(const char *file, int *peer, char *contact, size_t len)
{
    double until = px_wtime() + 60;
    int tries = 0, rc = PX_ERR_TIMEOUT;
    while (px_wtime() < until) {
        FILE *f = fopen(file, "r");
        contact[0] = 0;
        if (f) {
            if (!fgets(contact, (int)len, f))
                contact[0] = 0;
            fclose(f);
            contact[strcspn(contact, "\n")] = 0;
        }
        if (contact[0] && (rc = px_connect(contact, peer)) == PX_SUCCESS)
            return PX_SUCCESS;
        if (0 == tries++ % 10)
            printf("client: no server at %s yet (%s): retrying\n", contact[0] ? contact : file,
                   contact[0] ? px_strerror(rc) : "no contact file");
        fflush(stdout);
        pause_ms(200);
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: PX_MCA_peer_secret_file=SECRET %s CONTACT_FILE [ROUNDS [PAUSE_MS]]\n",
                argv[0]);
        return 2;
    }
    const char *file = argv[1];
    long rounds = argc > 2 ? atol(argv[2]) : 1000;
    int pause = argc > 3 ? atoi(argv[3]) : 2;
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    unsigned char *buf = malloc(sizeof(msg_hdr_t) + MAX_DATA);
    char contact[512];
    int reconnects = -1, bad = 0;
    long round = 0;
    while (buf && round < rounds) {
        int server;
        int rc = connect_server(file, &server, contact, sizeof contact);
        if (rc != PX_SUCCESS) {
            printf("client: gave up: no server answered for 60 s (%s)\n", px_strerror(rc));
            return 1;
        }
        reconnects++;
        px_group_t *g = NULL;
        int members[2] = {server, px_rank()};
        uint64_t server_pid = 0, acc = 0;
        rc = px_group_from_peers(members, 2, 1, 10, &g);
        if (PX_SUCCESS == rc)
            rc = px_bcast(&server_pid, 1, PX_UINT64, 0, g);
        if (PX_SUCCESS == rc)
            printf("client: connected to the server, pid %llu, as peer %d (group rank %d of "
                   "%d), at round %ld\n",
                   (unsigned long long)server_pid, server, px_group_rank(g), px_group_size(g),
                   round);
        fflush(stdout);
        while (PX_SUCCESS == rc && round < rounds) {
            msg_hdr_t h = {.seq = (uint64_t)round, .len = (uint32_t)(1u << (round % 19))};
            fill(buf + sizeof h, h.len, h.seq);
            h.sum = checksum(buf + sizeof h, h.len);
            memcpy(buf, &h, sizeof h);
            rc = px_send(buf, sizeof h + h.len, server, TAG_DATA);
            msg_hdr_t reply;
            if (PX_SUCCESS == rc)
                rc = px_recv(&reply, sizeof reply, server, TAG_REPLY, NULL);
            if (rc != PX_SUCCESS)
                break;
            if (reply.seq != h.seq || !reply.good || reply.sum != h.sum) {
                printf("client: round %ld: the server's checksum %016llx differs from mine "
                       "%016llx\n",
                       round, (unsigned long long)reply.sum, (unsigned long long)h.sum);
                bad++;
            }
            acc ^= h.sum;
            round++;
            if (0 == round % 20) { /* compare with the server what we exchanged */
                uint64_t x = acc;
                rc = px_send(NULL, 0, server, TAG_SYNC);
                if (PX_SUCCESS == rc)
                    rc = px_allreduce(PX_IN_PLACE, &x, 1, PX_UINT64, PX_BXOR, g);
                if (PX_SUCCESS == rc && x != 0) {
                    printf("client: round %ld: the server's checksums differ from mine\n", round);
                    bad++;
                }
            }
            if (0 == round % 100) {
                printf("client: round %ld\n", round);
                fflush(stdout);
            }
            pause_ms(pause);
        }
        if (PX_SUCCESS == rc) {
            px_send(NULL, 0, server, TAG_BYE);
        } else {
            /* The library printed a message naming the peer (host, pid, contact). */
            printf("client: lost the server (pid %llu, contact %s) at round %ld: %s; "
                   "reconnecting\n",
                   (unsigned long long)server_pid, contact, round, px_strerror(rc));
            fflush(stdout);
        }
        if (g)
            px_group_free(&g);
        px_disconnect(server);
    }
    printf("client: done: %ld rounds, %d checksum errors, %d reconnects\n", round, bad, reconnects);
    free(buf);
    return (px_finalize() != PX_SUCCESS) || bad != 0;
}
