/*
 * fuzz_xfer_map.c: shareable-memory descriptions, the bytes a same-host peer
 * gets (inside a transfer key) to map a region that btl/shm allocated
 * (px_btl_mem_t.desc: owner rank, allocation number, random key, size;
 * components/btl/shm/shm_xfer.c), given to px_btl_shm_mem_map as if they
 * came from rank 0 or rank 1, in a singleton whose btl/shm state points at a
 * private folder holding two real allocations of rank 0 (and, when the input
 * says so, a planted file with a forged header).
 *
 * Input: one byte of flags, then the description.
 *   bit 0  XOR the description over a real one (allocation bit 1), so that
 *          near-valid descriptions are explored; else the bytes as they are
 *   bit 2  the description comes from rank 1 (else rank 0)
 *   bit 3  plant xfer-0-<id> for the description's id (when no allocation
 *          has it): a header page made of the input again (its magic, job
 *          id, key, id and owner fixed to match when bit 4 is set), sized as
 *          the description says when bit 5 is set (capped at 1 MiB)
 * Checks, beyond "no crash, no sanitizer report, no leak": a refused
 * description returns an error code; one that is accepted names a real
 * allocation of rank 0 (the mapping shows what the owner wrote there, and its
 * size is the allocation's) or a planted file whose header matches it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "components/btl/shm/shm.h"
#include "frameworks/boot/boot.h"
#include "test/fuzz/fuzz.h"

#define NALLOC 2
static px_btl_mem_t allocs[NALLOC];
static char dir[64];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb, (void)flag, (void)f;
    return remove(p);
}

static void cleanup(void)
{
    for (int i = 0; i < NALLOC; i++)
        if (allocs[i].priv)
            px_btl_shm_mem_free(NULL, &allocs[i]);
    px_btl_shm_dir_release();
    if (dir[0])
        nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    px_fuzz_singleton_env();
    if (px_init(NULL, NULL) != PX_SUCCESS)
        abort();
    snprintf(dir, sizeof dir, "/tmp/px_fuzz_mapXXXXXX");
    if (!mkdtemp(dir))
        abort();
    atexit(cleanup);
    /* btl/shm is not in use in a singleton: give its allocator a folder. */
    px_btl_shm_state_t *s = &px_btl_shm_state;
    snprintf(s->dir, sizeof s->dir, "%s/job", dir);
    s->my_rank = 0;
    /* Files are made relative to the job's folder, held open (as at add_procs). */
    if (px_btl_shm_dir_ensure(s->dir) != PX_SUCCESS)
        abort();
    for (int i = 0; i < NALLOC; i++) {
        if (px_btl_shm_mem_alloc(NULL, (size_t)(i + 1) * 4096, &allocs[i]) != PX_SUCCESS)
            abort();
        memset(allocs[i].base, 'A' + i, allocs[i].size);
    }
    return 0;
}

typedef struct {
    uint64_t key;
    uint64_t size;
    int32_t owner_rank;
    uint32_t id;
} desc_t; /* as px_btl_shm_xfer_desc_t */

typedef struct {
    uint64_t magic;
    uint64_t key;
    uint64_t size;
    int32_t owner_rank;
    uint32_t id;
    uint32_t job_len;
    uint64_t job_hash;
} hdr_t; /* as px_btl_shm_xfer_hdr_t */

/* Plant a file for description `d` (unless it names a real allocation). */
static bool plant(const desc_t *d, const uint8_t *data, size_t size, bool fix, bool sized)
{
    for (int i = 0; i < NALLOC; i++) {
        desc_t r;
        memcpy(&r, allocs[i].desc, sizeof r);
        if (r.id == d->id)
            return false;
    }
    char path[300];
    snprintf(path, sizeof path, "%s/xfer-0-%u", px_btl_shm_state.dir, d->id);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    unsigned char page[4096] = {0};
    memcpy(page, data, size < sizeof page ? size : sizeof page);
    if (fix) {
        hdr_t h;
        memcpy(&h, page, sizeof h);
        h.magic = 0x706c787366723031ULL;
        h.key = d->key;
        h.size = d->size;
        h.owner_rank = d->owner_rank;
        h.id = d->id;
        h.job_len = (uint32_t)strlen(px_boot->jobid);
        h.job_hash = px_btl_shm_job_hash(px_boot->jobid);
        memcpy(page, &h, sizeof h);
    }
    bool ok = write(fd, page, sizeof page) == (ssize_t)sizeof page;
    if (ok && sized && d->size <= (1u << 20))
        ok = ftruncate(fd, (off_t)(sizeof page + d->size)) == 0;
    close(fd);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    const uint8_t *in = data + 1;
    size_t n = size - 1;
    if (n > PX_BTL_MEM_DESC_MAX)
        n = PX_BTL_MEM_DESC_MAX;
    unsigned char desc[PX_BTL_MEM_DESC_MAX] = {0};
    const px_btl_mem_t *base = &allocs[(flags >> 1) & 1];
    if (flags & 1) {
        memcpy(desc, base->desc, base->desc_len);
        for (size_t i = 0; i < n; i++)
            desc[i] ^= in[i];
        if (n < base->desc_len)
            n = base->desc_len;
    } else {
        memcpy(desc, in, n);
    }
    desc_t d = {0};
    memcpy(&d, desc, n < sizeof d ? n : sizeof d);
    bool planted = false;
    if ((flags & 8) && n == sizeof d)
        planted = plant(&d, in, size - 1, flags & 16, flags & 32);
    struct px_btl_endpoint ep;
    memset(&ep, 0, sizeof ep);
    ep.rank = (flags & 4) ? 1 : 0;
    px_btl_mem_t map;
    memset(&map, 0, sizeof map);
    int rc = px_btl_shm_mem_map(NULL, &ep, desc, n, &map);
    if (PX_SUCCESS == rc) {
        int which = -1;
        for (int i = 0; i < NALLOC; i++)
            if (allocs[i].desc_len == n && !memcmp(allocs[i].desc, desc, n))
                which = i;
        if (which >= 0) {
            const unsigned char *m = map.base;
            if (map.size != allocs[which].size || m[0] != 'A' + which ||
                m[map.size - 1] != 'A' + which) {
                fprintf(stderr, "fuzz_xfer_map: the mapping of allocation %d is not its memory\n",
                        which);
                abort();
            }
        } else if (!planted) {
            fprintf(stderr, "fuzz_xfer_map: a description of no allocation was mapped\n");
            abort();
        }
        if (px_btl_shm_mem_unmap(NULL, &map) != PX_SUCCESS)
            abort();
    } else if (rc >= 0) {
        abort();
    }
    if (planted) {
        char path[300];
        snprintf(path, sizeof path, "%s/xfer-0-%u", px_btl_shm_state.dir, d.id);
        unlink(path);
    }
    return 0;
}
