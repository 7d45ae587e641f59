/*
 * objstore.c: a small object store on Plexus, after the Plasma and Mooncake
 * store designs: rank 0 owns the objects in one region allocated through the
 * transfer engine and publishes a table of their offsets, sizes and
 * checksums; every other rank fetches each object, a small one by a
 * two-sided request (px_send / px_recv: one round trip, no registration) and
 * a large one by a one-sided read of the owner's region (px_xfer_read: the
 * owner's CPU does nothing), switching at the variable objstore_threshold
 * (32 KiB by default, Plasma's choice). A checksum checks every fetch.
 *
 *   pxrun -n 3 ./objstore                            # 48 objects, 16 B .. 1 MiB
 *   pxrun -n 3 --mca objstore_threshold 4k ./objstore
 *   pxrun -n 2 ./objstore --objects 200 --max 4M
 *
 * Build against an installed Plexus: make PXCC=<prefix>/bin/pxcc (Makefile).
 * docs/transfer.md walks through it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <plexus.h> /* messaging, collectives, the transfer engine and settings */

enum { TAG_TABLE = 1, TAG_REQ = 2, TAG_DATA = 3 };

typedef struct object {
    uint64_t offset; /* in the owner's region */
    uint64_t size;
    uint64_t checksum;
} object_t;

/* The setting: registered before px_init (px_var_register), so
 * PX_MCA_objstore_threshold, a parameter file or pxrun --mca set it, with
 * range checks and the variable system's error messages. */
static size_t threshold = 32 * 1024; /* the default */

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "objstore rank %d: %s: %s %s\n", px_rank(), what, px_strerror(rc),
            px_xfer_last_error());
    px_abort(1, "objstore failed");
    return 1;
}

/* Rank 0: make the objects, publish the table and the key, serve requests. */
static int owner(int nobj, size_t max)
{
    object_t *table = calloc((size_t)nobj, sizeof *table);
    uint64_t seed = 42, total = 0;
    for (int i = 0; i < nobj; i++) {
        /* Sizes spread from 16 B to max on a log scale, not all powers of 2. */
        int bits = 0;
        while (((size_t)16 << (bits + 1)) <= max)
            bits++;
        int step = nobj > 1 ? i * bits / (nobj - 1) : bits;
        size_t size = (size_t)16 << step;
        size += (size_t)(i * 37) % size;
        if (size > max)
            size = max;
        table[i].offset = total;
        table[i].size = size;
        total += (size + 63) & ~(uint64_t)63;
    }
    px_xfer_region_t *store;
    int rc = px_xfer_alloc(total ? total : 1, &store);
    if (rc != PX_SUCCESS)
        return fail("px_xfer_alloc", rc);
    unsigned char *base = px_xfer_region_base(store);
    for (int i = 0; i < nobj; i++) {
        unsigned char *o = base + table[i].offset;
        for (size_t k = 0; k < table[i].size; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            o[k] = (unsigned char)(seed >> 56);
        }
        table[i].checksum = fnv1a(o, table[i].size);
    }
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen;
    if ((rc = px_xfer_key_export(store, key, sizeof key, &klen)) != PX_SUCCESS)
        return fail("px_xfer_key_export", rc);
    int n = px_size();
    for (int r = 1; r < n; r++) {
        if ((rc = px_send(key, klen, r, TAG_TABLE)) != PX_SUCCESS ||
            (rc = px_send(table, (size_t)nobj * sizeof *table, r, TAG_TABLE)) != PX_SUCCESS)
            return fail("publishing the table", rc);
    }
    /* Serve small objects until every client says it is done (id -1). */
    int done = 0;
    long served = 0;
    while (done < n - 1) {
        int32_t id;
        px_status_t st;
        if ((rc = px_recv(&id, sizeof id, PX_ANY_SOURCE, TAG_REQ, &st)) != PX_SUCCESS)
            return fail("px_recv", rc);
        if (id < 0 || id >= nobj) {
            done++;
            continue;
        }
        rc = px_send(base + table[id].offset, table[id].size, st.source, TAG_DATA);
        if (rc != PX_SUCCESS)
            return fail("px_send", rc);
        served++;
    }
    printf("objstore owner: %d objects (%llu bytes in one region), served %ld small ones by "
           "two-sided messages\n",
           nobj, (unsigned long long)total, served);
    px_barrier();
    px_xfer_free(&store);
    free(table);
    return 0;
}

/* Every other rank: fetch every object, in an order of its own, and check it. */
static int client(int nobj, size_t max)
{
    unsigned char key[PX_XFER_KEY_MAX];
    px_status_t st;
    int rc;
    if ((rc = px_recv(key, sizeof key, 0, TAG_TABLE, &st)) != PX_SUCCESS)
        return fail("px_recv key", rc);
    px_xfer_remote_t *store;
    if ((rc = px_xfer_key_import(0, key, st.length, &store)) != PX_SUCCESS)
        return fail("px_xfer_key_import", rc);
    object_t *table = calloc((size_t)nobj, sizeof *table);
    if ((rc = px_recv(table, (size_t)nobj * sizeof *table, 0, TAG_TABLE, NULL)) != PX_SUCCESS)
        return fail("px_recv table", rc);
    /* One registered buffer receives every fetch. */
    unsigned char *buf = malloc(max);
    px_xfer_region_t *landing;
    if ((rc = px_xfer_register(buf, max, &landing)) != PX_SUCCESS)
        return fail("px_xfer_register", rc);
    int two_sided = 0, one_sided = 0, bad = 0;
    const char *path = "";
    for (int k = 0; k < nobj; k++) {
        int32_t id = (int32_t)((k * 7 + px_rank()) % nobj);
        size_t size = table[id].size;
        if (size < threshold) {
            if ((rc = px_send(&id, sizeof id, 0, TAG_REQ)) != PX_SUCCESS ||
                (rc = px_recv(buf, max, 0, TAG_DATA, NULL)) != PX_SUCCESS)
                return fail("two-sided fetch", rc);
            two_sided++;
        } else {
            px_xfer_batch_t *b; /* a batch of one, to see the path its status names */
            px_xfer_request_t q = {PX_XFER_READ, landing, 0, store, table[id].offset, size, NULL};
            px_xfer_status_t s;
            if ((rc = px_xfer_batch_alloc(1, &b)) != PX_SUCCESS ||
                (rc = px_xfer_batch_submit(b, &q, 1, NULL)) != PX_SUCCESS ||
                (rc = px_xfer_batch_wait(b, -1)) != PX_SUCCESS)
                return fail("one-sided fetch", rc);
            px_xfer_batch_test(b, 0, &s);
            path = s.transport;
            px_xfer_batch_free(&b);
            one_sided++;
        }
        if (fnv1a(buf, size) != table[id].checksum) {
            fprintf(stderr, "objstore rank %d: object %d (%zu bytes): checksum mismatch\n",
                    px_rank(), id, size);
            bad++;
        }
    }
    int32_t bye = -1;
    px_send(&bye, sizeof bye, 0, TAG_REQ);
    printf("objstore rank %d: fetched %d objects: %d two-sided (below %zu bytes), %d one-sided "
           "reads (via %s); %s\n",
           px_rank(), nobj, two_sided, threshold, one_sided, path,
           bad ? "CHECKSUM MISMATCH" : "every checksum matches");
    px_barrier();
    px_xfer_free(&landing);
    px_xfer_remote_release(&store);
    free(buf);
    free(table);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    int nobj = 48;
    size_t max = 1 << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--objects"))
            nobj = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max"))
            max = strtoull(argv[i + 1], NULL, 0) * (strchr(argv[i + 1], 'M') ? 1 << 20 : 1);
    }
    if (nobj < 1 || max < 16) {
        fprintf(stderr, "objstore: --objects N (>= 1) --max BYTES (>= 16)\n");
        return 2;
    }
    /* A value that does not parse is reported, naming where it came from,
     * and the default is kept (PX_ERR_BAD_PARAM); anything else is fatal. */
    int vrc = px_var_register("objstore_threshold", PX_VAR_SIZE,
                              "objstore: objects smaller than this (bytes) are fetched by a "
                              "two-sided request, the others by a one-sided read of the owner's "
                              "region",
                              "0", NULL, &threshold);
    if (vrc != PX_SUCCESS && vrc != PX_ERR_BAD_PARAM)
        return 2;
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    int rc = 0;
    if (px_size() < 2) {
        fprintf(stderr, "objstore: run it with 2 or more ranks (pxrun -n 3 ./objstore)\n");
        rc = 2;
    } else {
        rc = px_rank() == 0 ? owner(nobj, max) : client(nobj, max);
    }
    px_finalize();
    return rc;
}
