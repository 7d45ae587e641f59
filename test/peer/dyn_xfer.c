/*
 * dyn_xfer: the transfer engine (runtime/plexus_xfer.h) with connected peers
 * (px_contact, px_connect, px_accept, px_disconnect), through the public API
 * only, for test/peer/t_dyn_xfer.sh, which starts each side separately (no
 * launcher: px_init alone; the secret from PX_MCA_peer_secret_file).
 *
 *   dyn_xfer server FILE SESSIONS
 *       open the listener, write the contact to FILE, then serve SESSIONS
 *       connections one after another. Each session answers the peer's
 *       commands (tag 1) until BYE or a failure: KEYS (allocate a region and
 *       register one, 4 MiB + 64 KiB each, filled with a pattern; send both
 *       keys), CHECK (the checksum of a range, after the peer wrote it), NOTE
 *       (take a notification; the writes before it must be there), PULL
 *       (import the peer's key, read it and write it back changed, flush,
 *       notify), FREE (free the allocated region while the peer reads it),
 *       HAMMER (import the peer's key and run batches of 16 reads and writes
 *       on it until one fails). A session ends with px_disconnect; the line
 *       "session N: done, fds F" gives the open descriptors then.
 *   dyn_xfer client FILE
 *       connect; reads and writes of 8 B .. 4 MiB on both regions (each
 *       checked against the pattern or the server's checksum), a batch of 16,
 *       flush, a notification after writes, the server's reads and writes of
 *       this process's region and its notification, the allocated region
 *       freed by the server during reads (that request fails, the rest goes
 *       on), disconnect
 *   dyn_xfer cycles FILE N
 *       N connections in a row (import, one write and read, release,
 *       disconnect); prints the open descriptors after the first and the last
 *   dyn_xfer hold FILE
 *       connect, export a region, ask the server to HAMMER it, print
 *       "hammered", then progress forever (the test kills it)
 */
#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"
#include "test/peer/dyn_util.h"

#define RLEN ((4u << 20) + (64u << 10))

enum { C_KEYS = 1, C_CHECK, C_NOTE, C_PULL, C_FREE, C_HAMMER, C_BYE };

typedef struct cmd {
    int32_t op, region; /* region: 0 allocated, 1 registered */
    uint64_t off, len, sum;
    uint32_t klen;
    unsigned char key[PX_XFER_KEY_MAX];
} cmd_t;

static int fail(const char *what, int rc)
{
    printf("FAIL %s: %s (%d): %s\n", what, px_strerror(rc), rc, px_xfer_last_error());
    fflush(stdout);
    return 1;
}

static int send_cmd(int peer, cmd_t *c)
{
    return px_send(c, offsetof(cmd_t, key) + c->klen, peer, 1);
}

/* ------------------------------------------------------------ server */

/* Batches of 16 reads and writes of 256 KiB on the peer's region until one
 * fails; prints its reason (the peer is killed meanwhile). */
static void hammer(int peer, const cmd_t *c, int session)
{
    px_xfer_remote_t *rm;
    int rc = px_xfer_key_import(peer, c->key, c->klen, &rm);
    if (rc != PX_SUCCESS) {
        printf("session %d: hammer import: %s\n", session, px_xfer_last_error());
        px_disconnect(peer);
        return;
    }
    size_t n = px_xfer_remote_length(rm), chunk = 256u << 10;
    unsigned char *mem = malloc(n);
    px_xfer_region_t *loc;
    px_xfer_register(mem, n, &loc);
    px_xfer_batch_t *b;
    px_xfer_batch_alloc(16, &b);
    printf("session %d: hammering peer %d\n", session, peer);
    fflush(stdout);
    for (long round = 0; round < 1000000; ++round) {
        px_xfer_request_t r[16];
        for (int i = 0; i < 16; ++i)
            r[i] = (px_xfer_request_t){i & 1 ? PX_XFER_WRITE : PX_XFER_READ,
                                       loc,
                                       (size_t)(i % 8) * chunk,
                                       rm,
                                       (size_t)(i % 8) * chunk,
                                       chunk,
                                       NULL};
        px_xfer_batch_submit(b, r, 16, NULL);
        rc = px_xfer_batch_wait(b, 60);
        if (rc != PX_SUCCESS) {
            int nfail = 0;
            px_xfer_status_t st, first = {0};
            for (int i = 0; i < 16; ++i)
                if (px_xfer_batch_test(b, (size_t)i, &st) < 0 && nfail++ == 0)
                    first = st;
            printf("session %d: batch %ld failed: %d of 16 requests, %s (%d): %s\n", session, round,
                   nfail, px_strerror(first.error), first.error, first.reason ? first.reason : "?");
            /* later requests fail at once */
            px_xfer_batch_reset(b);
            px_xfer_batch_submit(b, r, 1, NULL);
            rc = px_xfer_batch_wait(b, 10);
            printf("session %d: a later request: %s\n", session, px_strerror(rc));
            rc = px_xfer_flush(peer);
            printf("session %d: flush: %s: %s\n", session, px_strerror(rc), px_xfer_last_error());
            fflush(stdout);
            break;
        }
        px_xfer_batch_reset(b);
    }
    px_xfer_batch_free(&b); /* freed by the last callback when a transport still holds some */
    /* Release the peer: its transports let go of what they held for it
     * (their callbacks come), after which its remote can be released. */
    rc = px_disconnect(peer);
    printf("session %d: disconnect %s\n", session, px_strerror(rc));
    int tries = 0;
    for (; tries < 500; ++tries) {
        px_xfer_progress();
        if (PX_SUCCESS == px_xfer_remote_release(&rm))
            break;
        usleep(10000);
    }
    printf("session %d: the dead peer's remote released %s\n", session,
           tries < 500 ? "ok" : "FAILED");
    px_xfer_free(&loc);
    free(mem);
}

/* The peer's region: read it whole and check, write it back changed, flush,
 * notify the checksum of what was written. */
static int pull(int peer, const cmd_t *c, int session)
{
    px_xfer_remote_t *rm;
    int rc = px_xfer_key_import(peer, c->key, c->klen, &rm);
    if (rc != PX_SUCCESS)
        return fail("server: px_xfer_key_import of the client's key", rc);
    size_t n = px_xfer_remote_length(rm);
    unsigned char *mem = malloc(n);
    px_xfer_region_t *loc;
    if ((rc = px_xfer_register(mem, n, &loc)) != PX_SUCCESS)
        return fail("server: px_xfer_register", rc);
    if ((rc = px_xfer_read(loc, 0, rm, 0, n)) != PX_SUCCESS)
        return fail("server: px_xfer_read of the client's region", rc);
    uint64_t got = dyn_sum(mem, n);
    for (size_t i = 0; i < n; ++i)
        mem[i] ^= 0x5a;
    uint64_t wrote = dyn_sum(mem, n);
    /* in pieces of several sizes, then flush */
    size_t off = 0;
    for (size_t sz = 8; off < n; sz = sz < (1u << 20) ? sz * 8 : sz) {
        size_t l = sz < n - off ? sz : n - off;
        if ((rc = px_xfer_write(loc, off, rm, off, l)) != PX_SUCCESS)
            return fail("server: px_xfer_write to the client's region", rc);
        off += l;
    }
    if ((rc = px_xfer_flush(peer)) != PX_SUCCESS)
        return fail("server: px_xfer_flush", rc);
    uint64_t msg[2] = {got, wrote};
    if ((rc = px_xfer_notify(peer, msg, sizeof msg)) != PX_SUCCESS)
        return fail("server: px_xfer_notify", rc);
    px_xfer_remote_release(&rm);
    px_xfer_free(&loc);
    free(mem);
    printf("session %d: pulled and wrote back %zu bytes\n", session, n);
    return 0;
}

static int server(const char *file, int sessions)
{
    const char *contact;
    int rc = px_contact(&contact);
    if (rc != PX_SUCCESS)
        return fail("px_contact", rc);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "%s\n", contact);
    fclose(f);
    rename(tmp, file);
    cmd_t *c = malloc(sizeof *c);
    for (int s = 0; s < sessions; ++s) {
        int p;
        if ((rc = px_accept(60, &p)) != PX_SUCCESS)
            return fail("px_accept", rc);
        printf("session %d: accepted peer %d\n", s, p);
        fflush(stdout);
        unsigned char *mem[2] = {NULL, malloc(RLEN)};
        px_xfer_region_t *reg[2] = {NULL, NULL};
        for (;;) {
            px_status_t st;
            rc = px_recv(c, sizeof *c, p, 1, &st);
            if (rc != PX_SUCCESS) {
                printf("session %d: receive from peer %d failed: %s\n", s, p, px_strerror(rc));
                break;
            }
            cmd_t r = {.op = c->op};
            if (C_KEYS == c->op) {
                if (PX_SUCCESS != (rc = px_xfer_alloc(RLEN, &reg[0])) ||
                    PX_SUCCESS != (rc = px_xfer_register(mem[1], RLEN, &reg[1])))
                    return fail("server: regions", rc);
                mem[0] = px_xfer_region_base(reg[0]);
                dyn_fill(mem[0], RLEN, 1);
                dyn_fill(mem[1], RLEN, 2);
                size_t kl[2];
                unsigned char keys[2 * PX_XFER_KEY_MAX];
                px_xfer_key_export(reg[0], keys, PX_XFER_KEY_MAX, &kl[0]);
                px_xfer_key_export(reg[1], keys + PX_XFER_KEY_MAX, PX_XFER_KEY_MAX, &kl[1]);
                px_send(kl, sizeof kl, p, 2);
                px_send(keys, sizeof keys, p, 2);
                continue;
            }
            if (C_CHECK == c->op) {
                r.sum = c->off + c->len <= RLEN && mem[c->region & 1]
                            ? dyn_sum(mem[c->region & 1] + c->off, c->len)
                            : 0;
            } else if (C_NOTE == c->op) {
                int from = -1;
                size_t len = 0;
                uint64_t msg[3] = {0};
                rc = px_xfer_notify_recv(&from, msg, sizeof msg, &len, 30);
                r.sum = PX_SUCCESS == rc && from == p && len == sizeof msg &&
                        msg[2] + msg[1] <= RLEN && dyn_sum(mem[1] + msg[2], msg[1]) == msg[0];
                printf("session %d: notification from %d (%s): the writes before it are %s\n", s,
                       from, px_strerror(rc), r.sum ? "there" : "NOT there");
            } else if (C_PULL == c->op) {
                if (pull(p, c, s))
                    return 1;
                continue;
            } else if (C_FREE == c->op) {
                usleep(200000); /* the peer reads meanwhile */
                rc = px_xfer_free(&reg[0]);
                printf("session %d: freed the allocated region while the peer reads it: %s\n", s,
                       px_strerror(rc));
                r.sum = (uint64_t)rc;
            } else if (C_HAMMER == c->op) {
                hammer(p, c, s);
                p = -1; /* disconnected */
                break;
            } else if (C_BYE == c->op)
                break;
            px_send(&r, offsetof(cmd_t, key), p, 3);
        }
        for (int i = 0; i < 2; ++i)
            if (reg[i])
                px_xfer_free(&reg[i]);
        free(mem[1]);
        rc = p >= 0 ? px_disconnect(p) : PX_SUCCESS;
        printf("session %d: done, disconnect %s, fds %d\n", s, px_strerror(rc), dyn_count_fds());
        fflush(stdout);
    }
    free(c);
    printf("server done\n");
    return 0;
}

/* ------------------------------------------------------------ client */

typedef struct conn {
    int peer;
    px_xfer_remote_t *rm[2];
} conn_t;

static int open_conn(const char *file, conn_t *k)
{
    char buf[512];
    const char *contact = dyn_read_contact(file, buf, sizeof buf, 20);
    if (!contact)
        return fail("no contact", PX_ERR_TIMEOUT);
    int rc = px_connect(contact, &k->peer);
    if (rc != PX_SUCCESS)
        return fail("px_connect", rc);
    cmd_t c = {.op = C_KEYS};
    send_cmd(k->peer, &c);
    size_t kl[2];
    static unsigned char keys[2 * PX_XFER_KEY_MAX];
    px_status_t st;
    if ((rc = px_recv(kl, sizeof kl, k->peer, 2, &st)) != PX_SUCCESS ||
        (rc = px_recv(keys, sizeof keys, k->peer, 2, &st)) != PX_SUCCESS)
        return fail("receive the keys", rc);
    for (int i = 0; i < 2; ++i)
        if ((rc = px_xfer_key_import(k->peer, keys + i * PX_XFER_KEY_MAX, kl[i], &k->rm[i])) !=
            PX_SUCCESS)
            return fail("px_xfer_key_import of a connected peer's key", rc);
    return 0;
}

static uint64_t check(int peer, int region, size_t off, size_t len)
{
    cmd_t c = {.op = C_CHECK, .region = region, .off = off, .len = len};
    send_cmd(peer, &c);
    px_status_t st;
    if (PX_SUCCESS != px_recv(&c, sizeof c, peer, 3, &st))
        return 0;
    return c.sum;
}

static int bye(conn_t *k)
{
    for (int i = 0; i < 2; ++i)
        if (k->rm[i] && px_xfer_remote_release(&k->rm[i]) != PX_SUCCESS)
            return fail("px_xfer_remote_release", PX_ERR_BAD_PARAM);
    cmd_t c = {.op = C_BYE};
    send_cmd(k->peer, &c);
    int rc = px_disconnect(k->peer);
    return rc == PX_SUCCESS ? 0 : fail("px_disconnect", rc);
}

static int client(const char *file)
{
    conn_t k = {0};
    if (open_conn(file, &k))
        return 1;
    int p = k.peer, rc;
    printf("connected: peer %d over %s\n", p, px_transport_name(p));
    unsigned char *mem = malloc(RLEN), *want = malloc(RLEN);
    px_xfer_region_t *loc;
    if ((rc = px_xfer_register(mem, RLEN, &loc)) != PX_SUCCESS)
        return fail("px_xfer_register", rc);
    static const size_t sizes[] = {8, 64, 4096, 8192, 65536, 1u << 20, 4u << 20};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    px_xfer_batch_t *b;
    px_xfer_batch_alloc(16, &b);
    int bad = 0;
    for (int reg = 0; reg < 2; ++reg) {
        dyn_fill(want, RLEN, (unsigned)reg + 1);
        /* reads: the server's pattern */
        for (int i = 0; i < nsizes; ++i) {
            size_t off = (size_t)(i * 4099) % (RLEN - sizes[i]), n = sizes[i];
            memset(mem, 0, n);
            px_xfer_request_t r = {PX_XFER_READ, loc, 0, k.rm[reg], off, n, NULL};
            px_xfer_batch_reset(b);
            px_xfer_batch_submit(b, &r, 1, NULL);
            rc = px_xfer_batch_wait(b, 60);
            px_xfer_status_t st;
            px_xfer_batch_test(b, 0, &st);
            bool ok = PX_SUCCESS == rc && 0 == memcmp(mem, want + off, n);
            bad += !ok;
            printf("region %d: read %zu B via %s: %s\n", reg, n, st.transport,
                   ok ? "ok" : (rc ? px_xfer_last_error() : "WRONG DATA"));
        }
        /* writes, checked by the server's checksum */
        for (int i = 0; i < nsizes; ++i) {
            size_t off = (size_t)(i * 7919) % (RLEN - sizes[i]), n = sizes[i];
            dyn_fill(mem, n, 100u + (unsigned)i);
            px_xfer_request_t r = {PX_XFER_WRITE, loc, 0, k.rm[reg], off, n, NULL};
            px_xfer_batch_reset(b);
            px_xfer_batch_submit(b, &r, 1, NULL);
            rc = px_xfer_batch_wait(b, 60);
            if (PX_SUCCESS == rc)
                rc = px_xfer_flush(p);
            px_xfer_status_t st;
            px_xfer_batch_test(b, 0, &st);
            bool ok = PX_SUCCESS == rc && check(p, reg, off, n) == dyn_sum(mem, n);
            bad += !ok;
            printf("region %d: write %zu B via %s: %s\n", reg, n, st.transport,
                   ok ? "ok" : (rc ? px_xfer_last_error() : "WRONG DATA"));
        }
        /* a batch of 16: 8 writes of 64 KiB, 8 reads of 8 B .. 1 MiB */
        px_xfer_request_t r[16];
        dyn_fill(mem, 8u << 16, 300u + (unsigned)reg);
        memset(mem + (1u << 20), 0, 2u << 20);
        size_t roff[8];
        for (int i = 0; i < 8; ++i) {
            r[2 * i] = (px_xfer_request_t){
                PX_XFER_WRITE, loc, (size_t)i << 16, k.rm[reg], (size_t)i << 16, 1u << 16, NULL};
            size_t n = (size_t)8 << (2 * i); /* 8 B .. 128 KiB */
            roff[i] = (2u << 20) + (size_t)i * 1000;
            r[2 * i + 1] = (px_xfer_request_t){
                PX_XFER_READ, loc, (1u << 20) + ((size_t)i << 17), k.rm[reg], roff[i], n, NULL};
        }
        px_xfer_batch_reset(b);
        px_xfer_batch_submit(b, r, 16, NULL);
        rc = px_xfer_batch_wait(b, 60);
        if (PX_SUCCESS == rc)
            rc = px_xfer_flush(p);
        bool ok = PX_SUCCESS == rc;
        /* the reads: what the owner holds there now (earlier writes changed it) */
        for (int i = 0; i < 8 && ok; ++i)
            ok = check(p, reg, roff[i], r[2 * i + 1].length) ==
                 dyn_sum(mem + r[2 * i + 1].local_offset, r[2 * i + 1].length);
        ok = ok && check(p, reg, 0, 8u << 16) == dyn_sum(mem, 8u << 16);
        bad += !ok;
        printf("region %d: batch of 16 (8 writes, 8 reads), flush: %s\n", reg,
               ok ? "ok" : (rc ? px_xfer_last_error() : "WRONG DATA"));
    }
    /* a notification after writes: the server sees them when it gets it */
    {
        size_t off = 12345, n = 3u << 20;
        dyn_fill(mem, n, 77);
        px_xfer_request_t r = {PX_XFER_WRITE, loc, 0, k.rm[1], off, n, NULL};
        px_xfer_batch_reset(b);
        px_xfer_batch_submit(b, &r, 1, NULL);
        uint64_t msg[3] = {dyn_sum(mem, n), n, off};
        if ((rc = px_xfer_notify(p, msg, sizeof msg)) != PX_SUCCESS)
            return fail("px_xfer_notify", rc);
        cmd_t c = {.op = C_NOTE};
        send_cmd(p, &c);
        px_status_t st;
        px_recv(&c, sizeof c, p, 3, &st);
        rc = px_xfer_batch_wait(b, 60);
        bool ok = 1 == c.sum && PX_SUCCESS == rc;
        bad += !ok;
        printf("notify after a write of %zu B: %s\n", n, ok ? "ok" : "FAILED");
    }
    /* the server reads and writes this process's region, then notifies */
    {
        dyn_fill(mem, RLEN, 55);
        uint64_t before = dyn_sum(mem, RLEN);
        cmd_t c = {.op = C_PULL};
        size_t kl;
        px_xfer_key_export(loc, c.key, sizeof c.key, &kl);
        c.klen = (uint32_t)kl;
        send_cmd(p, &c);
        int from = -1;
        size_t len = 0;
        uint64_t msg[2] = {0};
        rc = px_xfer_notify_recv(&from, msg, sizeof msg, &len, 60);
        bool ok = PX_SUCCESS == rc && from == p && msg[0] == before && msg[1] == dyn_sum(mem, RLEN);
        bad += !ok;
        printf("the server read and wrote this region, then notified (from %d): %s\n", from,
               ok ? "ok" : "FAILED");
    }
    /* the allocated region freed by its owner while this process reads it */
    {
        cmd_t c = {.op = C_FREE};
        send_cmd(p, &c);
        int last = PX_SUCCESS;
        long reads = 0;
        /* A read CMA completes inside the call without progress: the loop
         * progresses too, so that the owner's revocation is answered. */
        for (; reads < 2000000 && PX_SUCCESS == last; ++reads) {
            last = px_xfer_read(loc, 0, k.rm[0], (size_t)(reads % 64) << 16, 1u << 16);
            px_xfer_progress();
        }
        printf("read the region until it was freed: %ld reads, the last: %s (%d): %s\n", reads,
               px_strerror(last), last, px_xfer_last_error());
        px_status_t st;
        rc = px_recv(&c, sizeof c, p, 3, &st);
        bool ok = PX_ERR_NOT_FOUND == last && PX_SUCCESS == rc && 0 == c.sum;
        /* the connection goes on: the other region still works */
        dyn_fill(mem, 4096, 9);
        ok = ok && PX_SUCCESS == px_xfer_write(loc, 0, k.rm[1], 100, 4096) &&
             PX_SUCCESS == px_xfer_flush(p) && check(p, 1, 100, 4096) == dyn_sum(mem, 4096);
        bad += !ok;
        printf("freed during reads: that request fails, the connection goes on: %s\n",
               ok ? "ok" : "FAILED");
    }
    px_xfer_batch_free(&b);
    if (bye(&k))
        return 1;
    /* the old id is gone for the engine too */
    px_xfer_remote_t *rm;
    unsigned char key[PX_XFER_KEY_MAX];
    size_t kl;
    px_xfer_key_export(loc, key, sizeof key, &kl);
    rc = px_xfer_key_import(p, key, kl, &rm);
    bool ok = PX_ERR_PEER_FAILED == rc && PX_ERR_PEER_FAILED == px_xfer_flush(p) &&
              PX_ERR_PEER_FAILED == px_xfer_notify(p, "x", 1);
    bad += !ok;
    printf("after px_disconnect, import, flush and notify on its id fail: %s\n",
           ok ? "ok" : "FAILED");
    px_xfer_free(&loc);
    free(mem);
    free(want);
    printf("client done: %d failed\n", bad);
    return bad ? 2 : 0;
}

static int cycles(const char *file, int n)
{
    int first = -1;
    unsigned char buf[4096];
    px_xfer_region_t *loc;
    px_xfer_register(buf, sizeof buf, &loc);
    for (int i = 0; i < n; ++i) {
        conn_t k = {0};
        if (open_conn(file, &k))
            return 1;
        dyn_fill(buf, sizeof buf, (unsigned)i);
        int rc = px_xfer_write(loc, 0, k.rm[i & 1], 64, sizeof buf);
        if (PX_SUCCESS == rc)
            rc = px_xfer_flush(k.peer);
        if (PX_SUCCESS != rc || check(k.peer, i & 1, 64, sizeof buf) != dyn_sum(buf, sizeof buf))
            return fail("cycle write", rc);
        if ((rc = px_xfer_read(loc, 0, k.rm[(i + 1) & 1], 0, sizeof buf)) != PX_SUCCESS)
            return fail("cycle read", rc);
        if (bye(&k))
            return 1;
        if (0 == i)
            first = dyn_count_fds();
    }
    px_xfer_free(&loc);
    printf("cycles: %d, fds after the first %d, after the last %d\n", n, first, dyn_count_fds());
    return 0;
}

static int hold(const char *file)
{
    char buf[512];
    const char *contact = dyn_read_contact(file, buf, sizeof buf, 20);
    int p, rc;
    if (!contact || (rc = px_connect(contact, &p)) != PX_SUCCESS)
        return fail("px_connect", contact ? rc : PX_ERR_TIMEOUT);
    px_xfer_region_t *r;
    if ((rc = px_xfer_alloc(2u << 20, &r)) != PX_SUCCESS)
        return fail("px_xfer_alloc", rc);
    cmd_t c = {.op = C_HAMMER};
    size_t kl;
    px_xfer_key_export(r, c.key, sizeof c.key, &kl);
    c.klen = (uint32_t)kl;
    send_cmd(p, &c);
    printf("hammered: pid %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        px_xfer_progress();
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dyn_xfer server FILE SESSIONS | client FILE | cycles FILE N | "
                        "hold FILE\n");
        return 2;
    }
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS)
        return fail("px_init", rc);
    const char *mode = argv[1], *file = argv[2];
    int n = argc > 3 ? atoi(argv[3]) : 1;
    if (0 == strcmp(mode, "server"))
        rc = server(file, n);
    else if (0 == strcmp(mode, "client"))
        rc = client(file);
    else if (0 == strcmp(mode, "cycles"))
        rc = cycles(file, n);
    else if (0 == strcmp(mode, "hold"))
        rc = hold(file);
    else
        rc = 2;
    fflush(stdout);
    px_finalize();
    return rc;
}
