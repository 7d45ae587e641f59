/*
 * fake_boot.h: a boot module whose modex is an array in this one process, for
 * unit tests that drive a BTL's modex and add_procs as several ranks by
 * switching fake_boot.rank (test/ofi/ofi_module_test.c,
 * test/verbs/verbs_unit_test.c). Define NRANKS before including it; the test
 * sets px_boot = &fake_boot and frees blob[] when it is done.
 */
#ifndef PX_TEST_FAKE_BOOT_H
#define PX_TEST_FAKE_BOOT_H

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

static int fake_put(const char *key, const void *data, size_t len)
{
    (void)key;
    free(blob[fake_boot.rank]);
    blob[fake_boot.rank] = malloc(len);
    memcpy(blob[fake_boot.rank], data, len);
    blob_len[fake_boot.rank] = len;
    return PX_SUCCESS;
}

static int fake_get(int rank, const char *key, void **data, size_t *len)
{
    (void)key;
    if (rank < 0 || rank >= NRANKS || NULL == blob[rank])
        return PX_ERR_NOT_FOUND;
    *data = malloc(blob_len[rank]);
    memcpy(*data, blob[rank], blob_len[rank]);
    *len = blob_len[rank];
    return PX_SUCCESS;
}

static px_boot_module_t fake_boot = {
    .name = "fake", .rank = 0, .size = NRANKS, .jobid = "test", .put = fake_put, .get = fake_get};

#endif
