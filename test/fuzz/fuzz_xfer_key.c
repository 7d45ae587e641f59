/*
 * fuzz_xfer_key.c: the transfer engine's key import (runtime/xfer/key.c's
 * parser and px_xfer_key_import), in a singleton (boot/singleton,
 * btl/self) initialised once, with one region of its own.
 *
 * Input: one byte of flags, then the key.
 *   bit 0  recompute the key's checksum before importing (else random bytes
 *          almost never get past it, and the entries go unexplored)
 *   bit 1  put this job's hash and rank 0 in the header
 *   bit 2  put the harness's own region (id, address, length) in the header
 * Checks, beyond "no crash, no sanitizer report, no leak": a key the parser
 * accepts is written back byte for byte by px_xfer_key_write (its form is
 * canonical); an import that succeeds gives a remote of the key's length that
 * a read and a write of up to 64 bytes at its start either move or refuse
 * with a reason, and that can be released.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"
#include "runtime/xfer/xfer.h"
#include "test/fuzz/fuzz.h"

static px_xfer_region_t *own, *local;
static char *own_mem, *local_mem;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    px_fuzz_singleton_env();
    if (px_init(NULL, NULL) != PX_SUCCESS)
        abort();
    own_mem = calloc(1, 65536);
    local_mem = calloc(1, 65536);
    if (px_xfer_register(own_mem, 65536, &own) != PX_SUCCESS ||
        px_xfer_register(local_mem, 65536, &local) != PX_SUCCESS)
        abort();
    return 0;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    size_t n = size - 1;
    unsigned char *key = malloc(n ? n : 1);
    if (!key)
        abort();
    memcpy(key, data + 1, n);
    if ((flags & 2) && n >= PX_XFER_KEY_HDR) {
        put64(key + 24, px_xfer.job_hash);
        memset(key + 32, 0, 4);
    }
    if ((flags & 4) && n >= PX_XFER_KEY_HDR) {
        unsigned char exported[PX_XFER_KEY_MAX];
        size_t elen;
        if (px_xfer_key_export(own, exported, sizeof exported, &elen) == PX_SUCCESS)
            memcpy(key + 40, exported + 40, 24); /* region id, address, length */
    }
    if ((flags & 1) && n >= PX_XFER_KEY_HDR) {
        /* The checksum as the writer computes it: parse the rest, write it. */
        memset(key + 16, 0, 8);
        uint64_t h = px_xfer_hash64(key, 16, 1469598103934665603ULL);
        h = px_xfer_hash64(key + 16, 8, h);
        h = px_xfer_hash64(key + 24, n - 24, h);
        put64(key + 16, h);
    }
    px_xfer_key_t k;
    char why[200];
    if (px_xfer_key_parse(key, n, &k, why, sizeof why) == PX_SUCCESS) {
        unsigned char again[PX_XFER_KEY_MAX + 64];
        size_t m = px_xfer_key_write(&k, again, sizeof again);
        if (m != n || memcmp(again, key, n) != 0) {
            fprintf(stderr, "fuzz_xfer_key: an accepted key does not write back the same\n");
            abort();
        }
    } else if (why[0] == '\0') {
        fprintf(stderr, "fuzz_xfer_key: a refused key without a reason\n");
        abort();
    }
    px_xfer_remote_t *rm = NULL;
    if (px_xfer_key_import(0, key, n, &rm) == PX_SUCCESS) {
        if (px_xfer_remote_length(rm) != k.length)
            abort();
        size_t len = k.length < 64 ? (size_t)k.length : 64;
        int w = px_xfer_write(local, 0, rm, 0, len);
        int r = px_xfer_read(local, 0, rm, 0, len);
        if ((w < 0 && !px_xfer_last_error()[0]) || (r < 0 && !px_xfer_last_error()[0]))
            abort();
        if (px_xfer_remote_release(&rm) != PX_SUCCESS)
            abort();
    }
    free(key);
    return 0;
}
