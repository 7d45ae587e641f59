/*
 * peer_client: the client half of the connected-peers example
 * (examples/peers/README.md). Started on its own (no launcher), it reads the
 * server's contact from CONTACT_FILE, connects, forms a group of two with
 * the server and sends ROUNDS tagged messages of 1 B to 256 KiB, checking
 * each reply's checksum; every 20 rounds both sides compare what they
 * exchanged with an allreduce.
 *
 * One-sided: after connecting, the client imports the key the server sends
 * (px_xfer_key_import). After each reply it reads the pattern the server put
 * in its region for that round with a batch of reads and checks its checksum
 * against the one in the reply, then writes a block to the region and sends
 * px_xfer_notify with the block's checksum, which the server checks.
 *
 * When the server dies or restarts, the call that was waiting for it fails
 * (the library's message names the server: host, pid, contact) and so do
 * one-sided requests to it (PX_ERR_PEER_FAILED, naming it). The client lets
 * the server go (px_disconnect, then px_xfer_remote_release), retries the
 * contact file until a server answers, imports the new server's key and
 * carries on from the round it was at.
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

/* The one-sided part of round `seq`: read the server's pattern with a batch
 * of GETS reads into [0, PATTERN_LEN) of `local` and check it against the
 * checksum in the server's reply (`xsum`); then write our block from
 * [BLOCK_OFF, REGION_LEN) of `local` to the same place in the server's region
 * and notify the server. Returns a failed request's code (after printing its
 * reason, which names the server); *bad counts checksum errors. */
static int one_sided(int server, px_xfer_remote_t *remote, px_xfer_region_t *local,
                     px_xfer_batch_t *batch, uint64_t seq, uint64_t xsum, int *bad)
{
    unsigned char *mem = px_xfer_region_base(local);
    px_xfer_request_t r[GETS];
    for (int i = 0; i < GETS; ++i) { /* each read a piece of the pattern */
        size_t off = (size_t)i * (PATTERN_LEN / GETS);
        r[i] = (px_xfer_request_t){.op = PX_XFER_READ,
                                   .local = local,
                                   .local_offset = off,
                                   .remote = remote,
                                   .remote_offset = off,
                                   .length = PATTERN_LEN / GETS};
    }
    px_xfer_batch_reset(batch); /* the previous round's requests are all final */
    int rc = px_xfer_batch_submit(batch, r, GETS, NULL);
    if (PX_SUCCESS == rc)
        rc = px_xfer_batch_wait(batch, -1); /* the first failed request's code */
    if (rc != PX_SUCCESS) {
        px_xfer_status_t st = {0};
        for (size_t i = 0; i < GETS; ++i) /* the first that failed says why */
            if (px_xfer_batch_test(batch, i, &st) < 0)
                break;
        printf("client: round %llu: one-sided read of the server's region failed: %s (%s)\n",
               (unsigned long long)seq, px_strerror(rc), st.reason ? st.reason : "");
        return rc;
    }
    if (checksum(mem, PATTERN_LEN) != xsum) {
        printf("client: round %llu: the server's region has checksum %016llx, the server "
               "says %016llx\n",
               (unsigned long long)seq, (unsigned long long)checksum(mem, PATTERN_LEN),
               (unsigned long long)xsum);
        ++*bad;
    }
    /* Our block: written, then announced. The notification reaches the server
     * after the write, so the server sees the block when it gets it. */
    fill(mem + BLOCK_OFF, BLOCK_LEN, seq + 0x5eed);
    block_note_t note = {.seq = seq, .sum = checksum(mem + BLOCK_OFF, BLOCK_LEN)};
    rc = px_xfer_write(local, BLOCK_OFF, remote, BLOCK_OFF, BLOCK_LEN);
    if (PX_SUCCESS == rc)
        rc = px_xfer_notify(server, &note, sizeof note);
    if (rc != PX_SUCCESS)
        printf("client: round %llu: one-sided write to the server failed: %s (%s)\n",
               (unsigned long long)seq, px_strerror(rc), px_xfer_last_error());
    return rc;
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
    /* Our side of the one-sided transfers: a region to read into and write
     * from, and a batch for the reads (both kept across reconnections). */
    px_xfer_region_t *local = NULL;
    px_xfer_batch_t *batch = NULL;
    if (px_xfer_alloc(REGION_LEN, &local) != PX_SUCCESS ||
        px_xfer_batch_alloc(GETS, &batch) != PX_SUCCESS) {
        fprintf(stderr, "client: no region or batch for one-sided: %s\n", px_xfer_last_error());
        px_finalize();
        return 1;
    }
    char contact[512];
    unsigned char key[PX_XFER_KEY_MAX];
    int reconnects = -1, bad = 0;
    long round = 0, checked = 0;
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
        px_xfer_remote_t *remote = NULL; /* the server's region */
        px_status_t st = {0};
        rc = px_group_from_peers(members, 2, 1, 10, &g);
        if (PX_SUCCESS == rc)
            rc = px_bcast(&server_pid, 1, PX_UINT64, 0, g);
        if (PX_SUCCESS == rc) /* this server's key: a restarted server has a new one */
            rc = px_recv(key, sizeof key, server, TAG_KEY, &st);
        if (PX_SUCCESS == rc)
            rc = px_xfer_key_import(server, key, st.length, &remote);
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
            /* one-sided: read this round's pattern, write our block, notify */
            rc = one_sided(server, remote, local, batch, h.seq, reply.xsum, &bad);
            if (rc != PX_SUCCESS)
                break;
            checked++;
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
            /* Whichever call noticed first, one-sided requests to the server
             * fail now too: px_xfer_flush (wait for those in flight) says so,
             * naming it, as would a read or write on its remote. */
            int xrc = remote ? px_xfer_flush(server) : PX_SUCCESS;
            if (xrc != PX_SUCCESS)
                printf("client: one-sided requests to the server fail too: %s (%s)\n",
                       px_strerror(xrc), px_xfer_last_error());
            fflush(stdout);
        }
        if (g)
            px_group_free(&g);
        /* Let the server go, then its remote (in that order: disconnecting
         * makes the transports drop what they still hold for it). */
        px_disconnect(server);
        if (remote && px_xfer_remote_release(&remote) != PX_SUCCESS)
            printf("client: px_xfer_remote_release: %s\n", px_xfer_last_error());
    }
    printf("client: done: %ld rounds, %d checksum errors, %d reconnects; one-sided: %ld rounds "
           "checked\n",
           round, bad, reconnects, checked);
    px_xfer_batch_free(&batch);
    px_xfer_free(&local);
    free(buf);
    return (px_finalize() != PX_SUCCESS) || bad != 0;
}
