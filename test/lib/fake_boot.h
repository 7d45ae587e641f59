/*
 * fake_boot.h: a boot module whose modex is an array in this one process, for
 * unit tests that drive a BTL's modex and add_procs as several ranks by
 * switching fake_boot.rank (test/ofi/ofi_module_test.c,
 * test/verbs/verbs_unit_test.c). Define NRANKS before including it; the test
 * sets px_boot = &fake_boot and frees blob[] when it is done.
 */
#ifndef PX_TEST_FAKE_BOOT_H
#define PX_TEST_FAKE_BOOT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "frameworks/boot/boot.h"

#ifndef NRANKS
#error "define NRANKS (the ranks of the fake job) before including fake_boot.h"
#endif

static void *blob[NRANKS];
static size_t blob_len[NRANKS];
static px_boot_module_t fake_boot;

/* blob[] holds each rank's blob under its component key ("<fw>.<comp>");
 * a key with more to it ("btl.ofi.lanes") goes to xblob[] (one per rank,
 * with its key), so a test can drop it as an older release never put it. */
static char xkey[NRANKS][64];
static void *xblob[NRANKS];
static size_t xblob_len[NRANKS];

static bool fake_extra_key(const char *key)
{
    const char *dot = strchr(key, '.');
    return dot && strchr(dot + 1, '.');
}

static int fake_put(const char *key, const void *data, size_t len)
{
    void **b = fake_extra_key(key) ? &xblob[fake_boot.rank] : &blob[fake_boot.rank];
    size_t *l = fake_extra_key(key) ? &xblob_len[fake_boot.rank] : &blob_len[fake_boot.rank];
    if (fake_extra_key(key))
        snprintf(xkey[fake_boot.rank], sizeof(xkey[0]), "%s", key);
    free(*b);
    *b = malloc(len ? len : 1);
    memcpy(*b, data, len);
    *l = len;
    return PX_SUCCESS;
}

static int fake_get(int rank, const char *key, void **data, size_t *len)
{
    if (rank < 0 || rank >= NRANKS)
        return PX_ERR_NOT_FOUND;
    bool x = fake_extra_key(key);
    if (x && strcmp(key, xkey[rank]))
        return PX_ERR_NOT_FOUND;
    void *b = x ? xblob[rank] : blob[rank];
    size_t l = x ? xblob_len[rank] : blob_len[rank];
    if (NULL == b)
        return PX_ERR_NOT_FOUND;
    *data = malloc(l ? l : 1);
    memcpy(*data, b, l);
    *len = l;
    return PX_SUCCESS;
}

/* Forget what `rank` put under other keys (as a release that never put
 * them). */
static inline void fake_drop_extra(int rank)
{
    free(xblob[rank]);
    xblob[rank] = NULL;
    xblob_len[rank] = 0;
    xkey[rank][0] = '\0';
}

static px_boot_module_t fake_boot = {
    .name = "fake", .rank = 0, .size = NRANKS, .jobid = "test", .put = fake_put, .get = fake_get};

#endif
