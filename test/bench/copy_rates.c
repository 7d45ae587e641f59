/*
 * copy_rates.c: what one copy of N bytes costs on this machine, three ways:
 * glibc's memcpy, a copy with SSE2 non-temporal (streaming) stores (the one
 * coll/sm uses from coll_sm_nt_min), and process_vm_readv from another
 * process (CMA: btl/shm's and coll/sm's single copy, Open MPI's vader). Each
 * figure is the best of REPS back-to-back copies between the same two
 * buffers, so it shows the copy's own cost even on a loaded machine
 * (docs/measurements/coll.md). Buffers are mmapped, 16 bytes past a page (as
 * malloc's large blocks are) unless SRC_OFF / DST_OFF say otherwise: a
 * difference of 16 or 32 modulo 64 shows the `rep movsb` trap of some VMs.
 * x86-64 only. Built by hand, not by `make`:
 *
 *   cc -O2 -o copy_rates test/bench/copy_rates.c
 *   ./copy_rates 65536 1048576 16777216 [REPS=20 SRC_OFF=16 DST_OFF=16 in the environment]
 */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void copy_nt(char *d, const char *s, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)d & 15), i = 0;
    if (head > n)
        head = n;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 64; k += 16)
            _mm_stream_si128((__m128i *)(void *)(d + i + k),
                             _mm_loadu_si128((const __m128i *)(const void *)(s + i + k)));
    _mm_sfence();
    memcpy(d + i, s + i, n - i);
}

static char *buf(size_t n, size_t off, int shared)
{
    char *p = mmap(NULL, n + 8192, PROT_READ | PROT_WRITE,
                   (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == p) {
        perror("copy_rates: mmap");
        exit(1);
    }
    memset(p, 1, n + 8192);
    return p + off;
}

int main(int argc, char **argv)
{
    int reps = getenv("REPS") ? atoi(getenv("REPS")) : 20;
    size_t so = getenv("SRC_OFF") ? strtoull(getenv("SRC_OFF"), NULL, 0) : 16;
    size_t dof = getenv("DST_OFF") ? strtoull(getenv("DST_OFF"), NULL, 0) : 16;
    if (argc < 2 || reps < 1) {
        fprintf(stderr, "usage: copy_rates BYTES... (REPS, SRC_OFF, DST_OFF in the environment)\n");
        return 2;
    }
    printf("%10s %12s %12s %12s   (best of %d; us, GB/s)\n", "bytes", "memcpy", "nt_stores",
           "cma_readv", reps);
    for (int a = 1; a < argc; ++a) {
        size_t n = strtoull(argv[a], NULL, 0);
        /* The source is shared with a child that only waits: CMA reads it
         * from the child's address space. */
        char *src = buf(n, so, 1), *dst = buf(n, dof, 0);
        int go[2];
        if (pipe(go) != 0)
            return 1;
        pid_t ch = fork();
        if (0 == ch) {
            char c;
            close(go[1]);
            ssize_t k = read(go[0], &c, 1);
            _exit(k < 0);
        }
        double best[3] = {1e30, 1e30, 1e30};
        for (int r = 0; r < reps; ++r) {
            double t = now();
            memcpy(dst, src, n);
            t = now() - t;
            best[0] = t < best[0] ? t : best[0];
            t = now();
            copy_nt(dst, src, n);
            t = now() - t;
            best[1] = t < best[1] ? t : best[1];
            struct iovec l = {dst, n}, rm = {src, n};
            t = now();
            ssize_t got = process_vm_readv(ch, &l, 1, &rm, 1, 0);
            t = now() - t;
            if (got != (ssize_t)n) {
                perror("copy_rates: process_vm_readv");
                best[2] = 0;
                break;
            }
            best[2] = t < best[2] ? t : best[2];
        }
        close(go[1]);
        waitpid(ch, NULL, 0);
        printf("%10zu", n);
        for (int k = 0; k < 3; ++k)
            printf(" %7.1f %4.1f", best[k] * 1e6, best[k] > 0 ? (double)n / best[k] / 1e9 : 0.0);
        printf("\n");
        munmap(src - so, n + 8192);
        munmap(dst - dof, n + 8192);
    }
    return 0;
}
