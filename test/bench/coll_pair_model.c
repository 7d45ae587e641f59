/*
 * coll_pair_model.c: a 2-rank allgather of N bytes modelled without Plexus
 * or MPI, to see what the copies cost on this host (docs/measurements/coll.md,
 * session 35). Two processes bound to cores 0 and 1, spinning on a flag in
 * shared memory between calls; per call:
 *   mode 0: memcpy the own block, then one process_vm_readv of the peer's
 *           block (coll/sm's single copy before session 35)
 *   mode 1: the readv first, then the memcpy (Open MPI's two-process order)
 *   mode 2: streams: each copies its block into its shared ring in chunks of
 *           CHUNK (8 slots) while copying the peer's chunks out; own block last
 *   mode 3: as 2, the own block a chunk after each chunk published
 * Prints the mean, median, 25th percentile and best time per call (rank 0).
 *
 *   cc -O2 -o coll_pair_model test/bench/coll_pair_model.c
 *   ./coll_pair_model BYTES MODE ITERS [CHUNK]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sched.h>
#include <time.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
typedef struct {
    _Atomic uint64_t bar[2];
    uint64_t sb[2], rb[2];
    pid_t pid[2];
    _Atomic uint64_t posted[2];
    _Atomic uint64_t acked[2];
    char pad[64];
} ctl_t;
static ctl_t *C;
static char *seg[2];
static void barrier(int me, uint64_t *gen)
{
    ++*gen;
    atomic_store(&C->bar[me], *gen);
    while (atomic_load(&C->bar[1 - me]) < *gen)
        ;
}
static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s BYTES MODE(0-3) ITERS [CHUNK]\n", argv[0]);
        return 2;
    }
    size_t n = strtoull(argv[1], 0, 0);
    int mode = atoi(argv[2]);
    int iters = atoi(argv[3]);
    size_t ch = argc > 4 ? strtoull(argv[4], 0, 0) : 262144;
    if (n == 0 || mode < 0 || mode > 3 || iters < 12 || ch == 0) {
        fprintf(stderr,
                "coll_pair_model: BYTES and CHUNK must be positive, MODE 0-3, ITERS 12 or more "
                "(got %s %s %s)\n",
                argv[1], argv[2], argv[3]);
        return 2;
    }
    uint64_t nslots = 8;
    C = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < 2; i++)
        seg[i] = mmap(0, ch * nslots, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(C, 0, 4096);
    int me = fork() == 0 ? 1 : 0;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(me, &cs);
    sched_setaffinity(0, sizeof cs, &cs);
    memset(seg[me], 0, ch * nslots);
    char *s = malloc(n), *r = malloc(2 * n);
    memset(s, me + 1, n);
    memset(r, 0, 2 * n);
    C->sb[me] = (uint64_t)s;
    C->rb[me] = (uint64_t)r;
    C->pid[me] = getpid();
    uint64_t gen = 0;
    barrier(me, &gen);
    int peer = 1 - me;
    double best = 1e9, sum = 0;
    static double ts[100000];
    if (iters > 90000)
        iters = 90000;
    int nts = 0;
    uint64_t cpos = 0; /* chunks so far per stream */
    for (int it = 0; it < iters + iters / 10 + 2; it++) {
        double t0 = now();
        if (mode == 0 || mode == 1) {
            struct iovec l = {r + peer * n, n}, rm = {(void *)C->sb[peer], n};
            if (mode == 0)
                memcpy(r + me * n, s, n);
            if (process_vm_readv(C->pid[peer], &l, 1, &rm, 1, 0) != (ssize_t)n) {
                perror("readv");
                return 1;
            }
            if (mode == 1)
                memcpy(r + me * n, s, n);
            barrier(me, &gen);
        } else { /* 2: two-copy pipeline: write own chunks to own seg, read peer's, own block
                  * copied at the end; 3: the same with the own copy of each chunk along */
            uint64_t nc = (n + ch - 1) / ch, w = 0, rd = 0;
            while (w < nc || rd < nc) {
                if (w < nc) {
                    uint64_t k = cpos + w;
                    if (k < nslots ||
                        k + 1 - nslots <=
                            atomic_load_explicit(&C->acked[peer], memory_order_acquire)) {
                        size_t at = w * ch, m = n - at < ch ? n - at : ch;
                        memcpy(seg[me] + (k % nslots) * ch, s + at, m);
                        atomic_store_explicit(&C->posted[me], k + 1, memory_order_release);
                        if (mode == 3)
                            memcpy(r + me * n + at, seg[me] + (k % nslots) * ch, m);
                        w++;
                        continue;
                    }
                }
                if (rd < nc) {
                    uint64_t k = cpos + rd;
                    if (atomic_load_explicit(&C->posted[peer], memory_order_acquire) > k) {
                        size_t at = rd * ch, m = n - at < ch ? n - at : ch;
                        memcpy(r + peer * n + at, seg[peer] + (k % nslots) * ch, m);
                        rd++;
                        atomic_store_explicit(&C->acked[me], cpos + rd, memory_order_release);
                        continue;
                    }
                }
            }
            cpos += nc;
            if (mode == 2)
                memcpy(r + me * n, s, n);
            barrier(me, &gen);
            barrier(me, &gen);
        }
        double t = now() - t0;
        if (it >= iters / 10 + 2) {
            sum += t;
            if (t < best)
                best = t;
            ts[nts++] = t;
        }
    }
    qsort(ts, nts, sizeof(double), cmp);
    if (me == 0) {
        printf("n=%zu mode=%d ch=%zu avg %.1f med %.1f p25 %.1f best %.1f us\n", n, mode, ch,
               sum / iters * 1e6, ts[nts / 2] * 1e6, ts[nts / 4] * 1e6, best * 1e6);
        wait(NULL);
    }
    return 0;
}
