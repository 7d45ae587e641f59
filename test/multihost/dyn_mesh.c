/*
 * dyn_mesh: one process of a mesh of dynamic peers (docs/peers.md), started
 * on its own (no launcher: px_init alone) by test/multihost/t_dyn_netns.sh
 * on a network-namespace "host". Public API only.
 *
 *   dyn_mesh DIR ME CONNECT ACCEPT ROUNDS LATE SEED
 *
 *   DIR      a folder every process reads: ME's contact goes to DIR/ME.contact
 *   ME       this process's name (one word)
 *   CONNECT  names to connect to, comma separated ("-": none), in the order
 *            shuffled by SEED; each contact is waited for in DIR (60 s)
 *   ACCEPT   how many processes connect to this one before the rounds
 *   ROUNDS   rounds of traffic: in each, every live peer gets one message
 *            and sends one (both ways at once, non-blocking), of a size and
 *            content drawn from (sender, receiver, round): 0 B to 1 MiB,
 *            eager and rendezvous; each received one is checked against the
 *            content it must have (a checksum of it)
 *   LATE     how many processes connect after the rounds (late joiners):
 *            each is accepted and gets 4 rounds of its own
 *   SEED     the shuffle's seed
 *
 * A process connecting first sends its name (tag 9), so each side knows its
 * peers by name. An operation with a peer that fails (the peer died or left)
 * prints "ME: FAILED with NAME (peer ID): ERROR" and the peer is dropped;
 * the others carry on. The end prints "ME: done: V messages verified, B bad,
 * failed peers: LIST" and exits 0 when no message was bad. "ME: pid P
 * listening at CONTACT" comes first. Lines "ME: round
 * R" after each round let the test time a kill; "ME: peer NAME is ID over
 * TRANSPORT" name each connection's transport.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "test/peer/dyn_util.h"

#define MAXP     16
#define MAXLEN   (1u << 20)
#define TAG_NAME 9
#define TAG_DATA 10
#define TAG_BYE  11

typedef struct peer {
    char name[32];
    int id, live;
    unsigned char *in, *out;
} peer_t;

static const char *me;
static peer_t peers[MAXP];
static int npeers;
static long verified, bad;

static uint32_t mix(const char *a, const char *b, uint32_t k)
{
    uint32_t h = 2166136261u ^ k * 0x9e3779b9u;
    for (const char *p = a; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ 0xff) * 16777619u;
    for (const char *p = b; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h ^ (h >> 15);
}

/* The size of the message from `from` to `to` in round r. */
static size_t msg_len(const char *from, const char *to, int r)
{
    uint32_t h = mix(from, to, (uint32_t)r);
    switch (h % 4) {
    case 0:
        return h % 64; /* small, 0 included */
    case 1:
        return h % 8192; /* eager */
    case 2:
        return h % 65536;
    default:
        return h % (MAXLEN + 1); /* rendezvous, up to 1 MiB */
    }
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s: ", me);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

static void failed(peer_t *p, const char *what, int rc)
{
    if (p->live)
        say("FAILED with %s (peer %d): %s: %s", p->name, p->id, what, px_strerror(rc));
    p->live = 0;
}

static peer_t *add_peer(const char *name, int id)
{
    if (npeers == MAXP) {
        say("too many peers (at most %d)", MAXP);
        exit(2);
    }
    peer_t *p = &peers[npeers++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->id = id;
    p->live = 1;
    p->in = malloc(MAXLEN);
    p->out = malloc(MAXLEN);
    if (!p->in || !p->out) {
        say("no memory");
        exit(2);
    }
    say("peer %s is %d over %s", p->name, id, px_transport_name(id));
    return p;
}

static int read_contact(const char *dir, const char *name, char *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.contact", dir, name);
    for (int i = 0; i < 1200; ++i) {
        FILE *f = fopen(path, "r");
        if (f) {
            char *ok = fgets(buf, (int)len, f);
            fclose(f);
            if (ok && strchr(buf, '\n')) {
                *strchr(buf, '\n') = 0;
                return 0;
            }
        }
        usleep(50000);
    }
    return -1;
}

/* One round with the peers in [first, last): a message each way with each. */
static void round_with(int r, int first, int last)
{
    px_request_t *rr[MAXP], *sr[MAXP];
    for (int i = first; i < last; i++) {
        peer_t *p = &peers[i];
        rr[i] = sr[i] = NULL;
        if (!p->live)
            continue;
        size_t n = msg_len(me, p->name, r);
        dyn_fill(p->out, n, mix(me, p->name, (uint32_t)r + 1000));
        int rc = px_irecv(p->in, MAXLEN, p->id, TAG_DATA, &rr[i]);
        if (rc == PX_SUCCESS)
            rc = px_isend(p->out, n, p->id, TAG_DATA, &sr[i]);
        if (rc != PX_SUCCESS)
            failed(p, "posting", rc);
    }
    for (int i = first; i < last; i++) {
        peer_t *p = &peers[i];
        px_status_t st;
        if (rr[i]) {
            int rc = px_wait(&rr[i], &st);
            if (rc != PX_SUCCESS || st.error != PX_SUCCESS) {
                failed(p, "receive", rc != PX_SUCCESS ? rc : st.error);
            } else {
                size_t n = msg_len(p->name, me, r);
                unsigned char *want = malloc(n ? n : 1);
                dyn_fill(want, n, mix(p->name, me, (uint32_t)r + 1000));
                if (st.length != n || st.source != p->id || dyn_sum(p->in, n) != dyn_sum(want, n)) {
                    say("BAD message from %s in round %d: %zu bytes (expected %zu) from %d, "
                        "checksum %s",
                        p->name, r, st.length, n, st.source,
                        dyn_sum(p->in, n) == dyn_sum(want, n) ? "ok" : "differs");
                    bad++;
                } else {
                    verified++;
                }
                free(want);
            }
        }
        if (sr[i]) {
            int rc = px_wait(&sr[i], &st);
            if (rc != PX_SUCCESS)
                failed(p, "send", rc);
        }
    }
}

static void shuffle(char **v, int n, unsigned seed)
{
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 16) % (unsigned)(i + 1));
        char *t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static int accept_one(void)
{
    int id, rc = px_accept(120, &id);
    if (rc != PX_SUCCESS) {
        say("px_accept: %s", px_strerror(rc));
        return -1;
    }
    char name[32] = "";
    px_status_t st;
    rc = px_recv(name, sizeof name - 1, id, TAG_NAME, &st);
    if (rc != PX_SUCCESS) {
        say("the name of peer %d: %s", id, px_strerror(rc));
        px_disconnect(id);
        return 0;
    }
    name[st.length < sizeof name ? st.length : sizeof name - 1] = 0;
    add_peer(name, id);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: dyn_mesh DIR ME CONNECT ACCEPT ROUNDS LATE SEED\n");
        return 2;
    }
    const char *dir = argv[1];
    me = argv[2];
    int naccept = atoi(argv[4]), rounds = atoi(argv[5]), late = atoi(argv[6]);
    unsigned seed = (unsigned)strtoul(argv[7], NULL, 10);
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "%s: px_init: %s\n", me, px_strerror(rc));
        return 2;
    }
    const char *contact;
    if ((rc = px_contact(&contact)) != PX_SUCCESS) {
        say("px_contact: %s", px_strerror(rc));
        return 2;
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s.contact", dir, me);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", contact) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        say("cannot write %s", path);
        return 2;
    }
    say("pid %ld listening at %s", (long)getpid(), contact);

    /* Connect to the CONNECT list in a shuffled order. */
    char *targets[MAXP];
    int nt = 0;
    char *list = strdup(argv[3]), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t && nt < MAXP; t = strtok_r(NULL, ",", &save))
        if (strcmp(t, "-"))
            targets[nt++] = t;
    shuffle(targets, nt, seed);
    for (int i = 0; i < nt; i++) {
        char c[1024];
        if (read_contact(dir, targets[i], c, sizeof c)) {
            say("no contact of %s in %s after 60 s", targets[i], dir);
            return 2;
        }
        int id;
        if ((rc = px_connect(c, &id)) != PX_SUCCESS) {
            say("px_connect to %s: %s", targets[i], px_strerror(rc));
            return 2;
        }
        if ((rc = px_send(me, strlen(me), id, TAG_NAME)) != PX_SUCCESS) {
            say("sending the name to %s: %s", targets[i], px_strerror(rc));
            return 2;
        }
        say("connected to %s", targets[i]);
        add_peer(targets[i], id);
    }
    for (int i = 0; i < naccept; i++)
        if (accept_one())
            return 2;
    say("mesh of %d peers", npeers);

    for (int r = 0; r < rounds; r++) {
        round_with(r, 0, npeers);
        say("round %d", r);
    }
    /* Late joiners: accepted now (their handshakes may have been progressed
     * already during the rounds), 4 rounds each. */
    for (int i = 0; i < late; i++) {
        int first = npeers;
        if (accept_one())
            return 2;
        for (int r = 0; r < 4; r++)
            round_with(r, first, npeers);
        say("late joiner %s served", peers[first].name);
    }
    /* A joiner itself (CONNECT given, no ACCEPT): 4 rounds were done above
     * when ROUNDS is 4. Bye to the live peers; wait for theirs. */
    for (int i = 0; i < npeers; i++)
        if (peers[i].live)
            px_send("", 0, peers[i].id, TAG_BYE);
    for (int i = 0; i < npeers; i++)
        if (peers[i].live && px_recv(NULL, 0, peers[i].id, TAG_BYE, NULL) != PX_SUCCESS)
            failed(&peers[i], "bye", PX_ERR_PEER_FAILED);
    char failed_list[512] = "";
    for (int i = 0; i < npeers; i++) {
        size_t used = strlen(failed_list);
        if (!peers[i].live && used + strlen(peers[i].name) + 2 < sizeof failed_list) {
            if (used)
                failed_list[used++] = ',';
            memcpy(failed_list + used, peers[i].name, strlen(peers[i].name) + 1);
        }
        px_disconnect(peers[i].id);
        free(peers[i].in);
        free(peers[i].out);
    }
    say("done: %ld messages verified, %ld bad, failed peers: %s", verified, bad,
        failed_list[0] ? failed_list : "none");
    free(list);
    px_finalize();
    return bad ? 1 : 0;
}
