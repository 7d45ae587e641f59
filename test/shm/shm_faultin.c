/*
 * shm_faultin: the rings' fault-in and the path chosen by size, for
 * test/shm/t_shm_faultin.sh, run under pxrun with an even number of ranks
 * (linked statically: it reads btl/shm's state).
 *
 *   pxrun -n 2 shm_faultin [--passes P | --cycles C] [--sizes LIST] [--seed S]
 *
 * Right after px_init each rank counts the pages of its rings that are in
 * its page table (/proc/self/pagemap, "present"): the rings its peers write
 * in its own segment and the rings it writes in theirs, and prints
 *   rank R: init ring pages present: in I of T, out O of T
 * and what its segment file has reserved (tmpfs pages given to it):
 *   rank R: segment S bytes, reserved B, heap at H, ring F
 * Then ranks 2k and 2k+1 play ping-pong with messages of the sizes in LIST
 * (default: around every line, page, the 64 KiB fault-in chunk, the eager
 * limit and the single-copy threshold), over and over until P times the
 * ring size has gone each way (so the rings wrap P times), or through the
 * list C times with --cycles; every byte of
 * every message is checked against what its sender wrote. Then it prints
 *   rank R: after ring pages present: in I of T, out O of T; lazy fault-in
 *   done: yes|no; cma CALLS declined DECLINED; split SPLITS helped CHUNKS
 * (SPLITS: CMA reads it split with its sender, CHUNKS: chunks it wrote for
 * its receiver, btl_shm_cma_split)
 * and "rank R: faultin ok: N messages, B bytes through each ring", or the first bad
 * byte (message, offset, expected, got) and exit 1.
 *
 *   pxrun -n 2 shm_faultin --stream W [--cycles C] [--sizes LIST]
 * instead streams: for each size, C times (default 4), rank 2k posts W
 * px_isend of that size to rank 2k+1 (each its own data, checked there,
 * received by W px_irecv) and waits for a 0-byte reply; then each rank prints
 *   rank R: stream sent: fbox F frag Q full U
 * (its messages through the fast box, as fragments, and the times its fast
 * box had no room; the replies count too) and "rank R: stream ok: N
 * messages".
 *
 *   pxrun -n 2 shm_faultin --xfer 1 [--sizes LIST] [--coll BYTES]
 * instead reads one-sided (px_xfer_read, registered memory): rank 2k reads
 * each size from rank 2k+1's region, which waits in px_barrier meanwhile;
 * every byte is checked, then the same lines (the split counters say who
 * copied), "rank R: chunks read ourselves C, one-sided splits X" and
 * "rank R: xfer ok: N reads". With --coll BYTES (and coll/sm chosen for
 * that size) the ranks then run px_allgather of BYTES each, checked, and
 * print "rank R: coll ok: cma C split S" (C, S: the single copies and splits
 * during it): coll/sm's gets carry no PX_BTL_RDMA_FLAG_ASYNC, so they must
 * complete at once, never split.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#include "runtime/plexus_xfer.h"

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static void fill(unsigned char *p, size_t n, uint64_t key)
{
    uint64_t x = mix(key);
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0)
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (unsigned char)(x >> (8 * (i % 8)));
    }
}

/* Pages of [a, a + len) present in this process's page table. */
static size_t present(int pm, const char *a, size_t len)
{
    size_t n = 0, pages = len / 4096;
    uint64_t e[512];
    for (size_t i = 0; i < pages; i += 512) {
        size_t k = pages - i < 512 ? pages - i : 512;
        off_t off = (off_t)(((uintptr_t)a / 4096 + i) * 8);
        if (pread(pm, e, k * 8, off) != (ssize_t)(k * 8))
            return (size_t)-1;
        for (size_t j = 0; j < k; j++)
            n += (e[j] >> 63) & 1;
    }
    return n;
}

static void rings(const char *when, int rank)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    int pm = open("/proc/self/pagemap", O_RDONLY);
    size_t in = 0, out = 0, total = 0;
    bool done = true;
    for (int i = 0; i < s->nlocal; i++) {
        if (i == s->my_idx || !s->by_idx || !s->by_idx[i])
            continue;
        in += present(pm, s->seg + px_btl_shm_off_fbox(s->nlocal, s->fbox_size, i), s->fbox_size);
        out += present(pm, s->by_idx[i]->fb_out, s->fbox_size);
        total += s->fbox_size / 4096;
        done &= s->by_idx[i]->fb_out_pop == UINT64_MAX && s->by_idx[i]->fb_in_pop == UINT64_MAX;
    }
    if (pm >= 0)
        close(pm);
    printf("rank %d: %s ring pages present: in %zu of %zu, out %zu of %zu; lazy fault-in done: %s; "
           "cma %llu declined %llu; split %llu helped %llu\n",
           rank, when, in, total, out, total, done ? "yes" : "no", (unsigned long long)s->cma_calls,
           (unsigned long long)s->cma_declined, (unsigned long long)s->cma_splits,
           (unsigned long long)s->cma_helped);
    fflush(stdout);
}

/* What px_init reserved of this process's segment file (tmpfs pages given
 * to it, st_blocks): "rank R: segment S bytes, reserved B, heap at H, ring
 * F". */
static void reserved(int rank)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    struct stat st;
    if (s->seg_fd < 0 || fstat(s->seg_fd, &st) != 0) {
        printf("rank %d: segment reservation unknown (no descriptor)\n", rank);
        return;
    }
    printf("rank %d: segment %zu bytes, reserved %llu, heap at %zu, ring %zu\n", rank, s->seg_size,
           (unsigned long long)st.st_blocks * 512, s->heap_off, s->fbox_size);
    fflush(stdout);
}

static const size_t default_sizes[] = {
    0,     1,      7,      8,      55,     56,     57,     63,      64,      65,
    119,   120,    121,    255,    256,    257,    1000,   4031,    4032,    4095,
    4096,  4097,   8191,   8192,   8193,   16311,  16312,  16368,   16383,   16384,
    16385, 16432,  16433,  16448,  32767,  32768,  32769,  65535,   65536,   65537,
    65552, 131071, 131072, 131073, 262143, 262144, 262145, 1048575, 1048576, 1048577,
};

/* --xfer: rank 2k reads each size one-sided from rank 2k+1's registered
 * region, which waits in px_barrier (progress runs there: it may help). */
static int coll_check(int rank, size_t bytes, uint64_t seed)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    int size = px_size();
    unsigned char *mine = malloc(bytes), *all = malloc(bytes * (size_t)size), *want = malloc(bytes);
    if (!mine || !all || !want) {
        fprintf(stderr, "rank %d: out of memory for the collective\n", rank);
        return 1;
    }
    fill(mine, bytes, seed ^ 77 ^ (uint64_t)rank);
    uint64_t c0 = s->cma_calls, s0 = s->cma_splits;
    int rc = px_allgather(mine, all, bytes, PX_UINT8, px_group_world());
    int bad = rc != PX_SUCCESS;
    if (bad)
        fprintf(stderr, "rank %d: px_allgather of %zu bytes: %s\n", rank, bytes, px_strerror(rc));
    for (int r = 0; r < size && !bad; r++) {
        fill(want, bytes, seed ^ 77 ^ (uint64_t)r);
        if (memcmp(all + (size_t)r * bytes, want, bytes)) {
            fprintf(stderr, "rank %d: px_allgather: rank %d's block differs\n", rank, r);
            bad = 1;
        }
    }
    if (!bad)
        printf("rank %d: coll ok: cma %llu split %llu\n", rank,
               (unsigned long long)(s->cma_calls - c0), (unsigned long long)(s->cma_splits - s0));
    free(mine);
    free(all);
    free(want);
    return bad;
}

static int xfer_reads(int rank, int peer, const size_t *sizes, size_t nsizes, uint64_t seed,
                      size_t coll)
{
    size_t max = 0;
    for (size_t i = 0; i < nsizes; i++)
        max = sizes[i] > max ? sizes[i] : max;
    unsigned char *mine = malloc(max + 1), *want = malloc(max + 1);
    px_xfer_region_t *reg = NULL;
    px_xfer_remote_t *rem = NULL;
    unsigned char key[4096];
    size_t klen = 0;
    int bad = !mine || !want;
    if (!bad) {
        fill(mine, max, seed ^ (uint64_t)rank);
        bad = px_xfer_register(mine, max + 1, &reg) != PX_SUCCESS ||
              px_xfer_key_export(reg, key, sizeof key, &klen) != PX_SUCCESS;
    }
    px_status_t st;
    unsigned char pkey[4096];
    if (!bad && rank % 2)
        bad = px_send(key, klen, peer, 9) != PX_SUCCESS;
    else if (!bad)
        bad = px_recv(pkey, sizeof pkey, peer, 9, &st) != PX_SUCCESS ||
              px_xfer_key_import(peer, pkey, st.length, &rem) != PX_SUCCESS;
    if (!bad && rank % 2 == 0) {
        unsigned char *got = malloc(max + 1);
        px_xfer_region_t *greg = NULL;
        fill(want, max, seed ^ (uint64_t)peer);
        bad = !got || px_xfer_register(got, max + 1, &greg) != PX_SUCCESS;
        for (size_t i = 0; i < nsizes && !bad; i++) {
            memset(got, 0xee, sizes[i] + 1);
            int rc = px_xfer_read(greg, 0, rem, 0, sizes[i]);
            if (rc != PX_SUCCESS) {
                fprintf(stderr, "rank %d: read of %zu bytes: %s\n", rank, sizes[i],
                        px_xfer_last_error());
                bad = 1;
            } else if (memcmp(got, want, sizes[i]) || got[sizes[i]] != 0xee) {
                fprintf(stderr, "rank %d: read of %zu bytes: the data differs\n", rank, sizes[i]);
                bad = 1;
            }
        }
        if (greg)
            px_xfer_free(&greg);
        free(got);
    }
    if (px_barrier() != PX_SUCCESS)
        bad = 1;
    rings("after", rank);
    printf("rank %d: chunks read ourselves %llu, one-sided splits %llu\n", rank,
           (unsigned long long)px_btl_shm_state.cma_own_chunks,
           (unsigned long long)px_btl_shm_state.cma_xfer_splits);
    if (!bad)
        printf("rank %d: xfer ok: %zu reads\n", rank, rank % 2 ? (size_t)0 : nsizes);
    if (!bad && coll)
        bad = coll_check(rank, coll, seed);
    if (rem)
        px_xfer_remote_release(&rem);
    if (px_barrier() != PX_SUCCESS)
        bad = 1;
    if (reg)
        px_xfer_free(&reg);
    free(mine);
    free(want);
    px_finalize();
    return bad;
}

/* --stream W: windows of W messages from rank 2k to 2k+1, a 0-byte reply each. */
static int stream(int rank, int peer, const size_t *sizes, size_t nsizes, long cycles, int w,
                  uint64_t seed)
{
    size_t max = 0;
    for (size_t i = 0; i < nsizes; i++)
        max = sizes[i] > max ? sizes[i] : max;
    unsigned char *bufs = malloc((size_t)w * (max + 1)), *want = malloc(max + 1);
    px_request_t **req = calloc((size_t)w, sizeof *req);
    px_status_t *st = calloc((size_t)w, sizeof *st);
    if (!bufs || !want || !req || !st) {
        fprintf(stderr, "shm_faultin: out of memory for the stream\n");
        return 2;
    }
    const px_btl_shm_state_t *s = &px_btl_shm_state;
    uint64_t f0 = s->sent_fbox, q0 = s->sent_frag, u0 = s->fbox_full;
    long n = 0;
    int bad = 0;
    for (size_t k = 0; k < nsizes && !bad; k++) {
        size_t len = sizes[k];
        for (long c = 0; c < cycles && !bad; c++) {
            for (int m = 0; m < w && !bad; m++) {
                unsigned char *b = bufs + (size_t)m * (max + 1);
                uint64_t key = seed ^ (k << 8) ^ ((uint64_t)c << 24) ^ ((uint64_t)m << 40) ^
                               (uint64_t)(rank & ~1) << 56;
                if (rank % 2 == 0) {
                    fill(b, len, key);
                    bad = px_isend(b, len, peer, 5, &req[m]) != PX_SUCCESS;
                } else {
                    memset(b, 0xee, len + 1);
                    bad = px_irecv(b, max + 1, peer, 5, &req[m]) != PX_SUCCESS;
                }
            }
            if (!bad && px_waitall((size_t)w, req, st) != PX_SUCCESS) {
                fprintf(stderr, "rank %d: a stream of %zu-byte messages failed\n", rank, len);
                bad = 1;
            }
            for (int m = 0; m < w && !bad && rank % 2; m++) {
                const unsigned char *b = bufs + (size_t)m * (max + 1);
                fill(want, len,
                     seed ^ (k << 8) ^ ((uint64_t)c << 24) ^ ((uint64_t)m << 40) ^
                         (uint64_t)(rank & ~1) << 56);
                if (st[m].length != len || memcmp(b, want, len) || b[len] != 0xee) {
                    fprintf(stderr, "rank %d: stream message %d of %zu bytes differs\n", rank, m,
                            len);
                    bad = 1;
                }
            }
            if (!bad && rank % 2)
                bad = px_send(NULL, 0, peer, 6) != PX_SUCCESS;
            else if (!bad)
                bad = px_recv(NULL, 0, peer, 6, NULL) != PX_SUCCESS;
            n += w;
        }
    }
    printf("rank %d: stream sent: fbox %llu frag %llu full %llu\n", rank,
           (unsigned long long)(s->sent_fbox - f0), (unsigned long long)(s->sent_frag - q0),
           (unsigned long long)(s->fbox_full - u0));
    if (px_barrier() != PX_SUCCESS)
        bad = 1;
    if (!bad)
        printf("rank %d: stream ok: %ld messages\n", rank, n);
    fflush(stdout);
    free(bufs);
    free(want);
    free(req);
    free(st);
    return bad;
}

int main(int argc, char **argv)
{
    int window = 0;
    double passes = 3;
    long cycles = 0;
    bool xfer = false;
    size_t coll = 0;
    uint64_t seed = 2611;
    size_t *sizes = (size_t *)default_sizes, nsizes = sizeof default_sizes / sizeof *default_sizes;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--passes"))
            passes = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--cycles"))
            cycles = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--stream"))
            window = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--xfer"))
            xfer = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--coll"))
            coll = (size_t)atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = (uint64_t)atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--sizes")) {
            nsizes = 0;
            if (sizes != default_sizes)
                free(sizes);
            sizes = calloc(256, sizeof *sizes);
            if (!sizes) {
                fprintf(stderr, "shm_faultin: out of memory\n");
                return 2;
            }
            for (char *t = strtok(argv[i + 1], ","); t && nsizes < 256; t = strtok(NULL, ","))
                sizes[nsizes++] = (size_t)atoll(t);
        } else {
            fprintf(stderr, "shm_faultin: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "shm_faultin: px_init: %s\n", px_strerror(rc));
        return 1;
    }
    int rank = px_rank(), size = px_size(), peer = rank ^ 1;
    if (size % 2 || strcmp(px_transport_name(peer), "shm") != 0) {
        fprintf(stderr, "shm_faultin: needs an even number of ranks on one host over shm\n");
        return 2;
    }
    rings("init", rank);
    reserved(rank);
    if (window > 0) {
        int bad = stream(rank, peer, sizes, nsizes, cycles ? cycles : 4, window, seed);
        if (sizes != default_sizes)
            free(sizes);
        px_finalize();
        return bad;
    }
    if (xfer) {
        int bad = xfer_reads(rank, peer, sizes, nsizes, seed, coll);
        if (sizes != default_sizes)
            free(sizes);
        return bad;
    }
    size_t max = 0;
    for (size_t i = 0; i < nsizes; i++)
        max = sizes[i] > max ? sizes[i] : max;
    unsigned char *buf = malloc(max + 1), *want = malloc(max + 1);
    if (!buf || !want) {
        fprintf(stderr, "shm_faultin: out of memory for %zu-byte buffers\n", max + 1);
        return 2;
    }
    size_t goal = (size_t)(passes * (double)px_btl_shm_state.fbox_size), moved = 0;
    long n = 0;
    int bad = 0;
    /* Bytes through the ring count towards the passes (entries of up to
     * btl_shm_fbox_max_send with the runtime's header and the alignment lead);
     * the larger sizes go by rendezvous, in the first two cycles only. */
    const size_t fb_max = px_btl_shm_state.fbox_max_send;
    for (long i = 0; (cycles ? i < cycles * (long)nsizes : moved < goal) && !bad; i++) {
        size_t len = sizes[i % (long)nsizes];
        bool ring = len + 16 + 8 <= fb_max;
        if (!ring && !cycles && i / (long)nsizes >= 2)
            continue;
        for (int leg = 0; leg < 2 && !bad; leg++) { /* rank 2k sends first, then 2k+1 */
            int me_send = (leg == 0) == (rank % 2 == 0);
            uint64_t key = seed ^ ((uint64_t)i << 8) ^ (uint64_t)(rank & ~1) << 40 ^ (uint64_t)leg;
            if (me_send) {
                fill(buf, len, key);
                rc = px_send(buf, len, peer, 7);
            } else {
                px_status_t st;
                memset(buf, 0xee, len + 1);
                rc = px_recv(buf, max + 1, peer, 7, &st);
                if (rc == PX_SUCCESS && st.length != len) {
                    fprintf(stderr, "rank %d: message %ld: %zu bytes, expected %zu\n", rank, i,
                            (size_t)st.length, len);
                    bad = 1;
                }
                fill(want, len, key);
                for (size_t b = 0; b < len && !bad; b++)
                    if (buf[b] != want[b]) {
                        fprintf(stderr,
                                "rank %d: message %ld (%zu bytes): byte %zu is 0x%02x, expected "
                                "0x%02x\n",
                                rank, i, len, b, buf[b], want[b]);
                        bad = 1;
                    }
                if (!bad && buf[len] != 0xee) {
                    fprintf(stderr, "rank %d: message %ld (%zu bytes): written past its end\n",
                            rank, i, len);
                    bad = 1;
                }
            }
            if (rc != PX_SUCCESS) {
                fprintf(stderr, "rank %d: message %ld: %s\n", rank, i, px_strerror(rc));
                bad = 1;
            }
        }
        if (ring)
            moved += (8 + 120 + len + 63) & ~(size_t)63;
        n++;
    }
    rings("after", rank);
    if (!bad)
        printf("rank %d: faultin ok: %ld messages, %zu bytes through each ring\n", rank, n, moved);
    free(buf);
    free(want);
    if (sizes != default_sizes)
        free(sizes);
    px_finalize();
    return bad;
}
