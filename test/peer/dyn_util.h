/*
 * dyn_util.h: small helpers shared by the test programs whose processes are
 * started separately and meet through a contact file (test/peer/dyn_app.c,
 * dyn_xfer.c, dyn_group.c, dyn_hdr_probe.c, peer_probe.c,
 * test/multihost/dyn_mesh.c): reading a contact another process writes,
 * filling and checksumming payloads, counting open descriptors.
 */
#ifndef PX_TEST_DYN_UTIL_H
#define PX_TEST_DYN_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* A pseudo-random pattern of n bytes from `seed`: what a sender writes and a
 * receiver regenerates to check, in every program that includes this. */
static inline void dyn_fill(unsigned char *b, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
}

/* FNV-1a over b[0..n): the payload checksums both sides compare. */
static inline uint64_t dyn_sum(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The first line of `file` (a contact written by another process), waiting
 * up to `seconds` for the file and a complete line; NULL if none came. */
static inline const char *dyn_read_contact(const char *file, char *buf, size_t len, double seconds)
{
    for (double waited = 0; waited <= seconds; waited += 0.05) {
        FILE *f = fopen(file, "r");
        if (f) {
            size_t n = fread(buf, 1, len - 1, f);
            fclose(f);
            buf[n] = 0;
            char *nl = strchr(buf, '\n');
            if (nl) {
                *nl = 0;
                return buf;
            }
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* This process's open descriptors (not counting the one reading them). */
static inline int dyn_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (NULL == d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;
}

#endif
