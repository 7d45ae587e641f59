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
    snprintf(h->jobid, sizeof h->jobid, "%s", jobid);
    px_btl_shm_fifo_t *f = (px_btl_shm_fifo_t *)((char *)p + px_btl_shm_off_fifo());
    atomic_store_explicit(&f->tail, PX_BTL_SHM_EMPTY, memory_order_relaxed);
    atomic_store_explicit(&f->head, PX_BTL_SHM_EMPTY, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    h->magic = PX_BTL_SHM_MAGIC; /* last: the header is complete */
    *base = p;
    return PX_SUCCESS;
}

int px_btl_shm_segment_attach(const char *path, size_t size, const char *jobid, uint64_t key,
                              char **base, int *lockfd)
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
    px_btl_shm_seg_hdr_t *h = p;
    const char *why = NULL;
    if (h->magic != PX_BTL_SHM_MAGIC || h->version != PX_BTL_SHM_VERSION)
        why = "not a Plexus shm segment of this version";
    else if (strncmp(h->jobid, jobid, sizeof h->jobid) != 0)
        why = "it belongs to another job";
    else if (h->key != key)
        why = "its job key differs from the one in the modex";
    else if (h->size != size)
        why = "its size differs from the one in the modex";
    if (why) {
        px_show_error("btl shm: refusing to attach segment %s: %s (segment job '%.64s', this "
                      "job '%s')",
                      path, why, h->magic == PX_BTL_SHM_MAGIC ? h->jobid : "?", jobid);
        munmap(p, size);
        close(fd);
        return PX_ERR_BAD_PARAM;
    }
    /* Keep the descriptor to test the owner's lock (px_btl_shm_peer_gone). */
    if (lockfd && h->locked)
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
