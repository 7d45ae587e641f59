/*
 * px_perf_local.c: the modes that need neither the library nor a launcher:
 * --memcpy (memcpy bandwidth in one process) and --floor (the hardware's
 * floor: a cache line, or a copy-in/copy-out of BYTES, passed between two
 * processes through shared memory).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tools/px_perf/px_perf.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int px_perf_memcpy(size_t bytes)
{
    char *a = aligned_alloc(4096, bytes ? bytes : 4096),
         *b = aligned_alloc(4096, bytes ? bytes : 4096);
    memset(a, 1, bytes);
    memset(b, 0, bytes);
    int iters = bytes >= (1 << 20) ? 1000 : 100000;
    for (int i = 0; i < iters / 10; i++)
        memcpy(b, a, bytes);
    double t0 = now();
    for (int i = 0; i < iters; i++) {
        memcpy(b, a, bytes);
        __asm__ volatile("" ::"r"(b) : "memory");
    }
    double t = now() - t0;
    printf("memcpy %zu bytes: %.1f MB/s\n", bytes, (double)bytes * iters / t / 1e6);
    free(a);
    free(b);
    return 0;
}

/* The hardware floor: two processes (on two cores when the mask allows)
 * pass `bytes` back and forth through shared memory with the least work a
 * copy-in/copy-out transport can do: the sender copies from its private
 * buffer into a shared slot and sets a flag in the slot's last line, the
 * receiver waits for the flag and copies into its private buffer. With
 * bytes = 0 it is one cache line passed to and fro. No library involved. */
int px_perf_floor(size_t bytes)
{
    size_t slot = ((bytes + 64 + 63) & ~(size_t)63);
    char *shm = mmap(NULL, 2 * slot, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED)
        return 1;
    char *mine = aligned_alloc(4096, bytes + 4096), *theirs = aligned_alloc(4096, bytes + 4096);
    memset(mine, 1, bytes + 4096);
    memset(theirs, 0, bytes + 4096);
    cpu_set_t set;
    int cpus[2] = {-1, -1}, n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    const long iters = bytes > 65536 ? 20000 : 200000;
    /* slot 0: parent -> child, slot 1: child -> parent; flag = last 8 bytes */
    volatile uint64_t *flag[2] = {(volatile uint64_t *)(shm + slot - 8),
                                  (volatile uint64_t *)(shm + 2 * slot - 8)};
    pid_t pid = fork();
    int me = pid == 0 ? 1 : 0;
    if (cpus[me] >= 0) {
        CPU_ZERO(&set);
        CPU_SET(cpus[me], &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    double t0 = now();
    for (uint64_t v = 1; v <= (uint64_t)iters; v++) {
        if (me == 0) {
            memcpy(shm, mine, bytes);
            __atomic_store_n(flag[0], v, __ATOMIC_RELEASE);
            while (__atomic_load_n(flag[1], __ATOMIC_ACQUIRE) != v)
                __builtin_ia32_pause();
            memcpy(theirs, shm + slot, bytes);
        } else {
            while (__atomic_load_n(flag[0], __ATOMIC_ACQUIRE) != v)
                __builtin_ia32_pause();
            memcpy(theirs, shm, bytes);
            memcpy(shm + slot, mine, bytes);
            __atomic_store_n(flag[1], v, __ATOMIC_RELEASE);
        }
    }
    double t = now() - t0;
    if (me == 1)
        _exit(0);
    waitpid(pid, NULL, 0);
    if (bytes)
        printf("copy-in/copy-out ping-pong of %zu bytes between two processes: %.1f ns one-way\n",
               bytes, t / iters / 2 * 1e9);
    else
        printf("cache-line ping-pong between two processes: %.1f ns one-way\n",
               t / iters / 2 * 1e9);
    munmap(shm, 2 * slot);
    free(mine);
    free(theirs);
    return 0;
}
