/*
 * fuzz_registry_p2p_request: registry/p2p's listener reading a request from
 * anyone on the network (components/registry/p2p/p2p_wire.h). Byte 0 is a
 * chunk size (1 + its value mod 64): the rest of the input is fed in chunks
 * of it, as recv() would deliver it, to px_registry_p2p_request_parse the
 * way the listener calls it (only the bytes it asked for). A whole request
 * is answered from a small table (px_registry_p2p_answer_build), and the
 * answer must be one the client accepts: a header px_registry_p2p_answer_check
 * passes and, for a listing, entries px_registry_p2p_list_next reads to the
 * end. The parser never asks for more than PX_REGISTRY_P2P_REQ_MAX bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/registry/p2p/p2p.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"

static px_registry_p2p_table_t table;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    px_registry_p2p_table_init(&table);
    px_registry_p2p_table_put(&table, "plexus/kv/a", "alpha", 5, 0);
    px_registry_p2p_table_put(&table, "plexus/kv/b", "", 0, 0);
    px_registry_p2p_table_put(&table, "plexus/x", "xx", 2, 0);
    return 0;
}

static void check_answer(const px_registry_p2p_request_t *req)
{
    uint8_t *out = NULL;
    size_t n = 0;
    if (px_registry_p2p_answer_build(&table, "plexus", 1 << 20, req, &out, &n) != PX_SUCCESS)
        return;
    px_registry_p2p_answer_t a;
    char why[512];
    if (n < PX_REGISTRY_P2P_HDR_LEN ||
        px_registry_p2p_answer_check(out, req->op, 1 << 20, &a, why, sizeof why) != PX_SUCCESS ||
        a.body_len != n - PX_REGISTRY_P2P_HDR_LEN) {
        fprintf(stderr, "fuzz_registry_p2p_request: the listener's answer is not one a client "
                        "accepts\n");
        abort();
    }
    if (req->op == PX_REGISTRY_P2P_LIST && a.status == PX_REGISTRY_P2P_OK) {
        const uint8_t *p = out + PX_REGISTRY_P2P_HDR_LEN, *end = out + n;
        const char *name;
        const uint8_t *value;
        size_t nl, vl;
        int r;
        while ((r = px_registry_p2p_list_next(&p, end, &name, &nl, &value, &vl, why, sizeof why)) ==
               1) {
            if (nl < req->key_len || memcmp(name, req->key, req->key_len) != 0)
                abort(); /* listed a name outside the prefix asked for */
        }
        if (r != 0)
            abort();
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = 1 + data[0] % 64;
    data++, size--;
    uint8_t in[PX_REGISTRY_P2P_REQ_MAX];
    size_t have = 0, need = PX_REGISTRY_P2P_HDR_LEN, off = 0;
    while (off < size) {
        size_t take = need - have;
        if (take > chunk)
            take = chunk;
        if (take > size - off)
            take = size - off;
        memcpy(in + have, data + off, take);
        have += take, off += take;
        px_registry_p2p_request_t req;
        char why[256];
        int rc = px_registry_p2p_request_parse(in, have, &req, why, sizeof why);
        if (rc < 0) {
            if (!why[0])
                abort(); /* a refusal says why */
            return 0;
        }
        if (rc == 0) {
            if (req.total != have)
                abort();
            check_answer(&req);
            return 0;
        }
        if ((size_t)rc <= have || (size_t)rc > PX_REGISTRY_P2P_REQ_MAX)
            abort(); /* asks for less than it has, or more than the bound */
        need = (size_t)rc;
    }
    return 0;
}
