/*
 * shm_segment.c: btl/shm's segment files: create (folder 0700, file 0600,
 * placed on this process's NUMA node with hwloc when the host has several)
 * and attach (header checked against the job id and the modex key).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "core/util/output.h"
#if PX_HAVE_HWLOC
#include <hwloc.h>
#endif

/* Bind the pages of [base, base+size) to the NUMA node(s) this process runs
 * on. Skipped on a single-node host, where there is nothing to choose. */
static void px_btl_shm_place(void *base, size_t size)
{
#if PX_HAVE_HWLOC
    if (access("/sys/devices/system/node/node1", F_OK) != 0)
        return;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) == 0) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
            hwloc_set_area_membind(topo, base, size, set, HWLOC_MEMBIND_BIND, 0);
        hwloc_bitmap_free(set);
    }
    hwloc_topology_destroy(topo);
#else
    (void)base;
    (void)size;
#endif
}

int px_btl_shm_dir_ensure(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        px_show_error("btl shm: cannot create the job's segment folder %s: %s (variable "
                      "btl_shm_backing_dir names its parent)",
                      dir, strerror(errno));
        return PX_ERR_IN_ERRNO;
    }
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 077)) {
        px_show_error("btl shm: refusing segment folder %s: it must be a directory owned by uid "
                      "%u with mode 0700",
                      dir, (unsigned)getuid());
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

int px_btl_shm_segment_create(const char *dir, const char *path, size_t size, const char *jobid,
                              uint64_t key, int rank, int nlocal, size_t fbox_size, char **base,
                              int *lockfd)
{
    *base = NULL;
    if (lockfd)
        *lockfd = -1;
    int rc = px_btl_shm_dir_ensure(dir);
    if (rc != PX_SUCCESS)
        return rc;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        px_show_error("btl shm: cannot create segment %s: %s", path, strerror(errno));
        rmdir(dir); /* the folder this call may have made; kept when others use it */
        return PX_ERR_IN_ERRNO;
    }
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        px_show_error("btl shm: cannot size segment %s to %zu bytes: %s (is %s full?)", path, size,
                      strerror(errno), dir);
        close(fd);
        unlink(path);
        rmdir(dir);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        px_show_error("btl shm: cannot map segment %s (%zu bytes): %s", path, size,
                      strerror(errno));
        close(fd);
        unlink(path);
        rmdir(dir);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    /* Liveness: this process holds an exclusive lock on the segment for as
     * long as it lives (the kernel drops it when the process ends, however it
     * ends); a peer that can take a shared lock knows it is gone. */
    bool locked = lockfd && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (locked)
        *lockfd = fd;
    else
        close(fd);
    px_btl_shm_place(p, size);
    px_btl_shm_seg_hdr_t *h = p;
    h->version = PX_BTL_SHM_VERSION;
    h->nlocal = (uint32_t)nlocal;
    h->key = key;
    h->size = size;
    h->owner_rank = rank;
    h->owner_pid = (int32_t)getpid();
    h->fbox_size = fbox_size;
    h->locked = locked ? 1 : 0;
    atomic_store_explicit(&h->departed, 0, memory_order_relaxed);
    atomic_store_explicit(&h->attached, 0, memory_order_relaxed);
    h->job_len = (uint32_t)strlen(jobid);
    h->job_hash = px_btl_shm_job_hash(jobid);
    h->heap_off = px_btl_shm_off_fbox(nlocal, fbox_size, nlocal);
    snprintf(h->job_head, sizeof h->job_head, "%s", jobid);
    px_btl_shm_fifo_t *f = (px_btl_shm_fifo_t *)((char *)p + px_btl_shm_off_fifo());
    atomic_store_explicit(&f->tail, PX_BTL_SHM_EMPTY, memory_order_relaxed);
    atomic_store_explicit(&f->head, PX_BTL_SHM_EMPTY, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    h->magic = PX_BTL_SHM_MAGIC; /* last: the header is complete */
    *base = p;
    return PX_SUCCESS;
}

/* The first field of a peer's header that disagrees with what this process
 * expects: its name into *field, the two values into *theirs and *ours. */
static const char *px_btl_shm_geom_diff(const px_btl_shm_seg_hdr_t *h, size_t size,
                                        const px_btl_shm_geom_t *g, uint64_t *theirs,
                                        uint64_t *ours)
{
    size_t heap_off = px_btl_shm_off_fbox(g->nlocal, g->fbox_size, g->nlocal);
#define PX_SHM_GEOM(name, a, b)                                                                    \
    do {                                                                                           \
        *theirs = (uint64_t)(a);                                                                   \
        *ours = (uint64_t)(b);                                                                     \
        if (*theirs != *ours)                                                                      \
            return name;                                                                           \
    } while (0)
    PX_SHM_GEOM("owner rank", (uint64_t)(uint32_t)h->owner_rank, (uint32_t)g->rank);
    PX_SHM_GEOM("local process count (nlocal)", h->nlocal, g->nlocal);
    PX_SHM_GEOM("btl_shm_fbox_size (bytes of each ring)", h->fbox_size, g->fbox_size);
    PX_SHM_GEOM("fragment heap offset", h->heap_off, heap_off);
    /* The rings and at least one fragment header lie inside the mapping. */
    if (size < heap_off + PX_BTL_SHM_FRAG_HDR || size < px_btl_shm_off_ack(g->nlocal))
        PX_SHM_GEOM("size (too small for its rings)", size, heap_off + PX_BTL_SHM_FRAG_HDR);
#undef PX_SHM_GEOM
    return NULL;
}

const char *px_btl_shm_header_check(const px_btl_shm_seg_hdr_t *h, size_t size, const char *jobid,
                                    uint64_t key, const px_btl_shm_geom_t *geom, const char **field,
                                    uint64_t *theirs, uint64_t *ours)
{
    *field = NULL;
    if (h->magic != PX_BTL_SHM_MAGIC || h->version != PX_BTL_SHM_VERSION)
        return "not a Plexus shm segment of this version";
    if (h->job_len != strlen(jobid) || h->job_hash != px_btl_shm_job_hash(jobid))
        return "it belongs to another job";
    if (h->key != key)
        return "its job key differs from the one in the modex";
    if (h->size != size)
        return "its size differs from the one in the modex";
    if (geom && (*field = px_btl_shm_geom_diff(h, size, geom, theirs, ours)) != NULL)
        return "geometry";
    return NULL;
}

int px_btl_shm_segment_attach(const char *path, size_t size, const char *jobid, uint64_t key,
                              const px_btl_shm_geom_t *geom, char **base, int *lockfd)
{
    *base = NULL;
    if (lockfd)
        *lockfd = -1;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        px_show_error("btl shm: cannot open a peer's segment %s: %s", path, strerror(errno));
        return PX_ERR_IN_ERRNO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 077) ||
        (size_t)st.st_size != size || size < 4096) {
        px_show_error("btl shm: refusing segment %s: owner uid %u, mode %o, %zu bytes (expected "
                      "uid %u, mode 600, %zu bytes as published in the modex)",
                      path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (size_t)st.st_size,
                      (unsigned)getuid(), size);
        close(fd);
        return PX_ERR_BAD_PARAM;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        px_show_error("btl shm: cannot map segment %s: %s", path, strerror(errno));
        close(fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    /* The owner may still rewrite its header: take one copy and judge that. */
    px_btl_shm_seg_hdr_t h;
    memcpy(&h, p, sizeof h);
    h.job_head[sizeof h.job_head - 1] = '\0';
    const char *field = NULL;
    uint64_t theirs = 0, ours = 0;
    const char *why = px_btl_shm_header_check(&h, size, jobid, key, geom, &field, &theirs, &ours);
    if (why && field) {
        px_show_error("btl shm: rank %d refuses rank %d's segment %s: its %s is %llu, rank %d "
                      "expects %llu (btl_shm_fbox_size and the job's ranks must be the same on "
                      "every process of the job)",
                      geom->my_rank, geom->rank, path, field, (unsigned long long)theirs,
                      geom->my_rank, (unsigned long long)ours);
    } else if (why) {
        bool plx = h.magic == PX_BTL_SHM_MAGIC;
        px_show_error("btl shm: refusing to attach segment %s: %s (segment job '%s%s', %u "
                      "characters, hash %016llx; this job '%.39s%s', %zu characters, hash %016llx)",
                      path, why, plx ? h.job_head : "?",
                      plx && h.job_len >= sizeof h.job_head ? "..." : "", plx ? h.job_len : 0,
                      plx ? (unsigned long long)h.job_hash : 0ULL, jobid,
                      strlen(jobid) >= sizeof h.job_head ? "..." : "", strlen(jobid),
                      (unsigned long long)px_btl_shm_job_hash(jobid));
    }
    if (why) {
        munmap(p, size);
        close(fd);
        return PX_ERR_BAD_PARAM;
    }
    /* Keep the descriptor to test the owner's lock (px_btl_shm_peer_gone). */
    if (lockfd && h.locked)
        *lockfd = fd;
    else
        close(fd);
    *base = p;
    return PX_SUCCESS;
}

int px_btl_shm_peer_gone(int lockfd)
{
    if (lockfd < 0)
        return 0;
    if (flock(lockfd, LOCK_SH | LOCK_NB) != 0)
        return 0; /* EWOULDBLOCK: the owner holds it; any other error: no verdict */
    flock(lockfd, LOCK_UN);
    return 1;
}
