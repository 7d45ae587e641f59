/*
 * dyn_peer.c: one side of a dynamic peer connection between two processes
 * started separately (not a job: no launcher, no PMIx), for
 * test/btl/t_dyn_peer.sh. The payloads travel through two pipes the script
 * gives (length-prefixed messages).
 *
 *   dyn_peer connect|accept OUT_FIFO IN_FIFO CYCLES
 *
 * Each cycle: the connector offers, the acceptor first tries damaged copies
 * of the offer (truncated, a byte of every module's part flipped, oversized:
 * each must be refused with a message, nothing may crash or leak), then
 * accepts the real one; the connector completes; both send 8 checksummed
 * active messages each way (small and of the peer's largest size), the
 * connector gets and puts 4 KiB of the acceptor's memory when the peer's
 * modules offer RDMA; both remove the peer. Descriptors (/proc/self/fd),
 * mappings (/proc/self/maps), /dev/shm entries and resident memory are
 * counted after cycle 10 and at the end, once both sides removed the peer and the
 * descriptors settled: no growth is allowed (memory:
 * under 1 MiB). With no module reaching the peer (e.g. PX_MCA_btl=self,
 * where the peer is another process) both sides print the error and exit 3.
 * Output: "ok"/"not ok" lines; exit 0 when all pass.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/progress.h"
#include "frameworks/btl/base/base_runtime.h"

/* Built with a sanitizer (ASan or TSan: their allocators keep freed memory
 * and map regions of their own as they go), or run in CI's sanitizer stage. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BUILT_WITH_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BUILT_WITH_SANITIZER 1
#endif
#endif
#ifndef BUILT_WITH_SANITIZER
#define BUILT_WITH_SANITIZER 0
#endif

#define TAG     200
#define NMSG    8
#define RDMA_SZ 4096

static const char *side;
static int out_fd = -1, in_fd = -1, failures;

static void check(int cond, const char *what)
{
    if (!cond) {
        printf("not ok - %s: %s\n", side, what);
        failures++;
    }
    fflush(stdout);
}

static void die(const char *what)
{
    printf("not ok - %s: %s\n", side, what);
    fflush(stdout);
    exit(1);
}

/* ------------------------------------------------------------ the channel */

static void ch_write(const void *buf, uint32_t len)
{
    if (write(out_fd, &len, 4) != 4 || (len && write(out_fd, buf, len) != (ssize_t)len))
        die("channel write failed");
}

static void read_all(void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(in_fd, (char *)buf + got, len - got);
        if (n <= 0)
            die("channel closed by the peer");
        got += (size_t)n;
    }
}

static void progress(void);

static void *ch_read(uint32_t *len)
{
    /* Progress while waiting: a software provider (tcp;ofi_rxm) moves the
     * peer's RDMA only when this side polls. */
    for (;;) {
        struct pollfd pf = {in_fd, POLLIN, 0};
        if (poll(&pf, 1, 1) != 0)
            break;
        if (px_btl_base_num_modules > 0)
            progress();
    }
    read_all(len, 4);
    if (*len > (1u << 20))
        die("channel message too long");
    void *buf = malloc(*len ? *len : 1);
    read_all(buf, *len);
    return buf;
}

static void ch_write_u64(uint64_t v)
{
    ch_write(&v, 8);
}
static uint64_t ch_read_u64(void)
{
    uint32_t len;
    uint64_t v = 0;
    void *b = ch_read(&len);
    if (len != 8)
        die("channel: expected 8 bytes");
    memcpy(&v, b, 8);
    free(b);
    return v;
}

/* ------------------------------------------------------------ counting */

static long count_dir(const char *path)
{
    DIR *d = opendir(path);
    long n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static long count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    long n = 0;
    if (!f)
        return -1;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (0 == strncmp(line, "VmRSS:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* The software RDMA device's objects of this process (test/softverbs:
 * px_softverbs_counts, looked up in the libibverbs.so.1 btl/verbs loaded);
 * false with another libibverbs or none. */
static bool sv_counts(int c[4])
{
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (NULL == h)
        return false;
    void (*fn)(int *, int *, int *, int *) = NULL;
    *(void **)&fn = dlsym(h, "px_softverbs_counts");
    if (fn)
        fn(&c[0], &c[1], &c[2], &c[3]);
    dlclose(h);
    return NULL != fn;
}

static double now(void);

static long settle_fds(void)
{
    long last = count_dir("/proc/self/fd");
    double t0 = now(), same_since = t0;
    while (now() - t0 < 2 && now() - same_since < 0.1) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        long n = count_dir("/proc/self/fd");
        if (n != last) {
            last = n;
            same_since = now();
        }
    }
    return last;
}

/* ------------------------------------------------------------ messages */

static int received, bad_received;
static px_btl_endpoint_t *expected_ep[64];
static int nexpected;
static uint32_t cycle_now;

static uint32_t sum(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* A message: cycle, sequence, length, checksum of the bytes after the 16-byte head. */
static void am_cb(px_btl_module_t *b, const px_btl_receive_descriptor_t *d)
{
    (void)b;
    const px_btl_segment_t *s = &d->des_segments[0];
    unsigned char head[16];
    size_t total = 0;
    for (size_t i = 0; i < d->des_segment_count; i++)
        total += d->des_segments[i].seg_len;
    int ok = d->src_rank == PX_BTL_RANK_DYNAMIC && s->seg_len >= 16;
    bool known = false;
    for (int i = 0; i < nexpected; i++)
        known |= expected_ep[i] == d->endpoint;
    ok = ok && known;
    if (ok) {
        memcpy(head, s->seg_addr, 16);
        uint32_t c, len, h;
        memcpy(&c, head, 4);
        memcpy(&len, head + 8, 4);
        memcpy(&h, head + 12, 4);
        ok = c == cycle_now && len == total - 16 && d->des_segment_count == 1 &&
             h == sum((const unsigned char *)s->seg_addr + 16, len);
    }
    received++;
    bad_received += !ok;
}

/* What the base and the modules registered with the progress engine (a
 * module serving dynamic peers only registers while it has one). */
static void progress(void)
{
    for (int i = 0; i < px_progress_nentries; i++)
        px_progress_entries[i].fn(px_progress_entries[i].ctx);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void send_msg(px_btl_base_peer_t *p, uint32_t seq, size_t len)
{
    px_btl_base_peer_module_t *pm = px_btl_base_peer_send(p);
    px_btl_module_t *m = pm->module;
    double t0 = now();
    for (;;) {
        px_btl_descriptor_t *des = m->btl_alloc(m, pm->endpoint, PX_BTL_NO_ORDER, 16 + len,
                                                PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
        if (des) {
            unsigned char *d = des->des_segments[0].seg_addr;
            for (size_t i = 0; i < len; i++)
                d[16 + i] = (unsigned char)(seq * 31 + i * 7 + cycle_now);
            uint32_t l32 = (uint32_t)len, h = sum(d + 16, len);
            memcpy(d, &cycle_now, 4);
            memcpy(d + 4, &seq, 4);
            memcpy(d + 8, &l32, 4);
            memcpy(d + 12, &h, 4);
            des->des_flags = PX_BTL_DES_FLAGS_BTL_OWNERSHIP;
            int rc = m->btl_send(m, pm->endpoint, des, TAG);
            if (rc >= 0)
                return;
            m->btl_free(m, des);
            if (rc != PX_ERR_TEMP_OUT_OF_RESOURCE)
                die("btl_send to the dynamic peer failed");
        }
        progress();
        if (now() - t0 > 20)
            die("could not send for 20 s (the peer's ring stays full)");
    }
}

static void wait_received(int n)
{
    double t0 = now();
    while (received < n) {
        progress();
        if (now() - t0 > 20)
            die("messages from the peer did not arrive within 20 s");
    }
}

/* ------------------------------------------------------------ one cycle */

static unsigned char rdma_buf[RDMA_SZ];
static volatile int rdma_done, rdma_status;

static void rdma_cb(px_btl_module_t *btl, px_btl_endpoint_t *ep, void *local,
                    px_btl_registration_handle_t *lh, void *ctx, void *data, int status)
{
    (void)btl;
    (void)ep;
    (void)local;
    (void)lh;
    (void)ctx;
    (void)data;
    rdma_status = status;
    rdma_done = 1;
}

static void wait_rdma(void)
{
    double t0 = now();
    while (!rdma_done) {
        progress();
        if (now() - t0 > 20)
            die("an RDMA operation did not complete within 20 s");
    }
    check(rdma_status == PX_SUCCESS, "the RDMA operation completes without error");
}

static int try_bad_offers(const unsigned char *offer, size_t len)
{
    px_btl_module_t **mods = px_btl_base_modules;
    int n = px_btl_base_num_modules, refused = 0, tries = 0;
    px_btl_dyn_payload_t *pl = malloc(sizeof *pl);
    char why[256];
    if (PX_SUCCESS != px_btl_base_dyn_parse(offer, len, pl, why, sizeof why))
        die(why);
    unsigned char *copy = malloc(len + 64);
    /* truncated, oversized, and one byte of each part flipped (its middle) */
    for (int k = -2; k < 2 * pl->nparts; k++) {
        size_t clen = len;
        memcpy(copy, offer, len);
        if (-2 == k)
            clen = len - 1;
        else if (-1 == k) {
            memset(copy + len, 0, 64);
            clen = len + 64;
        } else {
            /* Even k: the part's first byte (its magic); odd k: byte 24 (in
             * btl/shm's part, its segment's key: the segment then opens
             * but is refused). */
            const px_btl_dyn_part_t *part = &pl->parts[k / 2];
            size_t off = (k & 1) ? 24 : 0;
            if (part->len <= off)
                continue;
            copy[(size_t)(part->data - offer) + off] ^= 0xff;
        }
        px_btl_base_dyn_peer_t *dp = NULL;
        void *reply = NULL;
        size_t rlen = 0;
        char *err = NULL;
        int rc = px_btl_base_dyn_accept(mods, n, copy, clen, &dp, &reply, &rlen, &err);
        tries++;
        if (rc != PX_SUCCESS && err && *err)
            refused++;
        if (rc == PX_SUCCESS && k >= 0 && dp) /* another module may still reach it */
            refused++;
        if (dp)
            px_btl_base_dyn_remove(dp);
        free(reply);
        free(err);
    }
    free(copy);
    free(pl);
    return refused == tries;
}

static int run(int connector, int cycles)
{
    px_btl_module_t **mods = px_btl_base_modules;
    int n = px_btl_base_num_modules;
    long fds10 = 0, maps10 = 0, shm10 = 0, rss10 = 0;
    int sv10[4] = {0}, sv[4] = {0};
    bool have_sv = false;
    for (int c = 0; c < cycles; c++) {
        cycle_now = (uint32_t)c;
        /* Counted from here: the peer may send this cycle's messages while
         * this side still waits (progressing) for its RDMA address below,
         * and a reset after that wait lost them (20 s, then "did not
         * arrive": seen once in CI under load). */
        received = bad_received = 0;
        px_btl_base_dyn_peer_t *dp = NULL;
        char *err = NULL;
        uint32_t len;
        if (connector) {
            void *offer = NULL;
            size_t olen = 0;
            int rc = px_btl_base_dyn_offer(mods, n, &dp, &offer, &olen, &err);
            if (rc != PX_SUCCESS) {
                printf("# %s: %s\n", side, err ? err : "offer failed");
                free(err);
                ch_write("", 0);
                return 3;
            }
            ch_write(offer, (uint32_t)olen);
            free(offer);
            void *reply = ch_read(&len);
            if (0 == len) { /* the offer was malformed: no reply */
                char *why = ch_read(&len);
                printf("# %s: the acceptor refused: %.*s\n", side, (int)len, why);
                free(why);
                px_btl_base_dyn_remove(dp);
                free(reply);
                return 3;
            }
            rc = px_btl_base_dyn_complete(dp, reply, len, &err);
            free(reply);
            if (rc != PX_SUCCESS) {
                printf("# %s: %s\n", side, err ? err : "complete failed");
                free(err);
                px_btl_base_dyn_remove(dp);
                return 3;
            }
        } else {
            void *offer = ch_read(&len);
            if (0 == len) {
                free(offer);
                return 3;
            }
            if (0 == c)
                check(try_bad_offers(offer, len), "damaged offers are refused with a message");
            void *reply = NULL;
            size_t rlen = 0;
            int rc = px_btl_base_dyn_accept(mods, n, offer, len, &dp, &reply, &rlen, &err);
            free(offer);
            if (rc != PX_SUCCESS) {
                printf("# %s: %s\n", side, err ? err : "accept failed");
                if (reply) { /* the declining reply: the connector learns why */
                    ch_write(reply, (uint32_t)rlen);
                } else {
                    ch_write("", 0);
                    ch_write(err ? err : "?", err ? (uint32_t)strlen(err) : 1);
                }
                free(err);
                free(reply);
                return 3;
            }
            ch_write(reply, (uint32_t)rlen);
            free(reply);
        }
        px_btl_base_peer_t *p = dp->peer;
        if (0 == c) {
            printf("# %s: the peer is reached by", side);
            for (int i = 0; i < p->num_send; i++)
                printf(" %s", p->send[i].module->btl_component->base.component_name);
            printf(" (%d with RDMA)\n", p->num_rdma);
        }
        nexpected = 0;
        for (int m = 0; m < dp->nmodules && nexpected < 64; m++)
            if (dp->endpoints[m])
                expected_ep[nexpected++] = dp->endpoints[m];
        /* Addresses (and registration handles) for RDMA, and "ready". */
        memset(rdma_buf, connector ? 0 : (int)(0x40 + c % 64), RDMA_SZ);
        px_btl_module_t *rmod = p->num_rdma > 0 ? p->rdma[0].module : NULL;
        px_btl_endpoint_t *rep = p->num_rdma > 0 ? p->rdma[0].endpoint : NULL;
        size_t hsz = rmod && rmod->btl_register_mem ? rmod->btl_registration_handle_size : 0;
        static unsigned char got[RDMA_SZ];
        px_btl_registration_handle_t *mine = NULL, *local = NULL;
        if (hsz) {
            mine = rmod->btl_register_mem(rmod, rep, rdma_buf, RDMA_SZ, 0);
            local = rmod->btl_register_mem(rmod, rep, got, RDMA_SZ, 0);
            check(mine && local, "register memory for RDMA");
        }
        ch_write_u64((uint64_t)(uintptr_t)rdma_buf);
        ch_write(mine ? (const void *)mine : "", mine ? (uint32_t)hsz : 0);
        uint64_t peer_buf = ch_read_u64();
        uint32_t plen = 0;
        void *peer_handle = ch_read(&plen);
        size_t big = p->max_send_size > 16 ? p->max_send_size - 16 : 0;
        if (big > 60000)
            big = 60000;
        for (uint32_t i = 0; i < NMSG; i++)
            send_msg(p, i, (i & 1) ? big : 100 + i);
        wait_received(NMSG);
        check(bad_received == 0 && received == NMSG, "messages arrive whole, from the peer");
        if (connector && rmod && (!hsz || (plen == hsz && local))) {
            px_btl_registration_handle_t *rh = hsz ? peer_handle : NULL;
            memset(got, 0, sizeof got);
            rdma_done = 0;
            int rc = rmod->btl_get ? rmod->btl_get(rmod, rep, got, peer_buf, local, rh, RDMA_SZ, 0,
                                                   PX_BTL_NO_ORDER, rdma_cb, NULL, NULL)
                                   : PX_ERR_NOT_SUPPORTED;
            if (rc == PX_SUCCESS) {
                wait_rdma();
                int same = 1;
                for (int i = 0; i < RDMA_SZ; i++)
                    same &= got[i] == (unsigned char)(0x40 + c % 64);
                check(same, "get reads the peer's memory");
                memset(got, 0x21, sizeof got);
                rdma_done = 0;
                check(PX_SUCCESS == rmod->btl_put(rmod, rep, got, peer_buf, local, rh, RDMA_SZ, 0,
                                                  PX_BTL_NO_ORDER, rdma_cb, NULL, NULL),
                      "put to the peer");
                wait_rdma();
            } else {
                check(rc == PX_ERR_NOT_SUPPORTED, "get from the peer");
            }
            ch_write_u64(rc == PX_SUCCESS);
        } else if (!connector) {
            if (ch_read_u64()) {
                int same = 1;
                for (int i = 0; i < RDMA_SZ; i++)
                    same &= rdma_buf[i] == 0x21;
                check(same, "the peer's put arrived");
            }
        } else {
            ch_write_u64(0);
        }
        free(peer_handle);
        if (mine)
            rmod->btl_deregister_mem(rmod, mine);
        if (local)
            rmod->btl_deregister_mem(rmod, local);
        /* Both done with the connection before either removes it. */
        ch_write_u64(1);
        (void)ch_read_u64();
        px_btl_base_dyn_remove(dp);
        if (9 == c || c == cycles - 1) {
            /* Both sides removed the peer; what a transport's device closes
             * on its own time (softverbs: the socket of a connection the
             * peer closed) settles: the count stops changing for 100 ms
             * (within 2 s). A descriptor that stays is still counted. */
            ch_write_u64(2);
            (void)ch_read_u64();
            long fds_settled = settle_fds();
            long fds = fds_settled, maps = count_lines("/proc/self/maps"),
                 shm = count_dir("/dev/shm"), rss = rss_kib();
            bool sv_now = sv_counts(sv);
            if (9 == c) {
                have_sv = sv_now;
                memcpy(sv10, sv, sizeof sv10);
                fds10 = fds;
                maps10 = maps;
                shm10 = shm;
                rss10 = rss;
            } else if (c > 9) {
                char what[200];
                snprintf(what, sizeof what,
                         "after %d cycles: descriptors %ld -> %ld, mappings %ld -> %ld, rss %ld "
                         "-> %ld KiB",
                         cycles, fds10, fds, maps10, maps, rss10, rss);
                printf("# %s: %s; /dev/shm %ld -> %ld\n", side, what, shm10, shm);
                /* Our segments are memfds, removed with the last mapping. */
                FILE *f = fopen("/proc/self/maps", "r");
                char line[512];
                int devshm = 0, memfd = 0;
                while (f && fgets(line, sizeof line, f)) {
                    devshm += NULL != strstr(line, "/dev/shm/");
                    memfd += NULL != strstr(line, "memfd:plexus-shm-dyn");
                }
                if (f)
                    fclose(f);
                printf("# %s: /dev/shm mappings %d, memfd segments %d\n", side, devshm, memfd);
                /* Under a sanitizer freed memory sits in its quarantine and
                 * RSS grows; LeakSanitizer checks for leaks there instead. */
                bool san = BUILT_WITH_SANITIZER ||
                           (getenv("PX_TEST_SANITIZER") && *getenv("PX_TEST_SANITIZER"));
                if (san)
                    printf("# %s: rss not compared under a sanitizer (LeakSanitizer checks "
                           "leaks)\n",
                           side);
                /* The sanitizer's allocator also maps more of its own
                 * regions as its quarantine fills: a few more mappings
                 * there (a leaked segment per cycle would be hundreds). */
                check(fds <= fds10 && maps <= maps10 + (san ? 16 : 0) &&
                          (san || rss - rss10 < 1024),
                      what);
                if (have_sv && sv_now) {
                    /* Queue pairs, completion queues, memory regions and
                     * protection domains of the RDMA device (softverbs). */
                    snprintf(what, sizeof what,
                             "RDMA objects after %d cycles: QPs %d -> %d, CQs %d -> %d, MRs %d "
                             "-> %d, PDs %d -> %d",
                             cycles, sv10[0], sv[0], sv10[1], sv[1], sv10[2], sv[2], sv10[3],
                             sv[3]);
                    printf("# %s: %s\n", side, what);
                    check(sv[0] == sv10[0] && sv[1] == sv10[1] && sv[2] == sv10[2] &&
                              sv[3] == sv10[3],
                          what);
                }
            }
        }
    }
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "connect") && strcmp(argv[1], "accept"))) {
        fprintf(stderr, "usage: %s connect|accept OUT_FIFO IN_FIFO CYCLES\n", argv[0]);
        return 2;
    }
    side = argv[1];
    int connector = 0 == strcmp(side, "connect");
    /* Open in an order that cannot deadlock: the connector opens its out
     * first, the acceptor its in first. */
    if (connector) {
        out_fd = open(argv[2], O_WRONLY | O_CLOEXEC);
        in_fd = open(argv[3], O_RDONLY | O_CLOEXEC);
    } else {
        in_fd = open(argv[3], O_RDONLY | O_CLOEXEC);
        out_fd = open(argv[2], O_WRONLY | O_CLOEXEC);
    }
    if (out_fd < 0 || in_fd < 0)
        die("cannot open the channel");
    if (px_mca_var_init() != PX_SUCCESS ||
        px_mca_framework_open(&px_btl_base_framework) != PX_SUCCESS ||
        px_btl_base_select(false) != PX_SUCCESS)
        die("cannot open the btl framework");
    px_btl_base_register_am(TAG, am_cb, NULL);
    int rc = run(connector, atoi(argv[4]));
    if (0 == rc)
        printf("ok - %s: %d cycles\n", side, atoi(argv[4]));
    px_btl_base_finalize();
    px_mca_var_finalize();
    return rc;
}
