/*
 * dyn_clock: how often a process with a dynamic-peer listener reads the
 * clock per progress pass (t_dyn_cost.sh). The listener's progress hook
 * (runtime/pml/pml_dyn.c) used to read it on every pass; it is meant to read
 * it only every so many passes. Counts the calls of clock_gettime made
 * through the dynamic symbol (this executable's definition comes first) and
 * prints "passes N clock_reads M" after px_contact and N calls of
 * px_progress.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "runtime/plexus.h"

static long reads;

int clock_gettime(clockid_t id, struct timespec *ts)
{
    reads++;
    return (int)syscall(SYS_clock_gettime, id, ts);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    if (px_init(&argc, &argv) != PX_SUCCESS) {
        fprintf(stderr, "dyn_clock: px_init failed\n");
        return 2;
    }
    const char *contact = NULL;
    if (px_contact(&contact) != PX_SUCCESS) {
        fprintf(stderr, "dyn_clock: px_contact failed\n");
        px_finalize();
        return 2;
    }
    for (int i = 0; i < 100; i++) /* the hook settles */
        px_progress();
    long before = reads;
    for (long i = 0; i < n; i++)
        px_progress();
    printf("passes %ld clock_reads %ld\n", n, reads - before);
    px_finalize();
    return 0;
}
