/*
 * shm_segment.c: btl/shm's segment files: create (folder 0700, file 0600,
 * placed on this process's NUMA node with hwloc when the host has several)
 * and attach (header checked against the job id and the modex key).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "config.h"
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "core/util/fs.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"
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

/* The job's folder, held from its creation (or first use) to module
 * cleanup: files are made and removed relative to this descriptor, and the
 * shared flock on it tells the last process of the job (pxrun holds one too
 * for the whole job) that it may remove the folder. */
static struct {
    int fd, refs;
    struct stat st;
    char path[200];
} px_btl_shm_dir = {.fd = -1};

/* The name `path` still is the folder held at `st`. */
static bool dir_is(const char *path, const struct stat *st)
{
    struct stat now;
    return lstat(path, &now) == 0 && S_ISDIR(now.st_mode) && now.st_dev == st->st_dev &&
           now.st_ino == st->st_ino;
}

static void reaped(const char *path)
{
    PX_OUTPUT_VERBOSE(1, 0, "btl shm: removed %s, the folder of an ended job", path);
}

int px_btl_shm_dir_ensure(const char *dir)
{
    if (px_btl_shm_dir.fd >= 0 && !strcmp(px_btl_shm_dir.path, dir)) {
        if (!dir_is(dir, &px_btl_shm_dir.st)) {
            px_show_error("btl shm: the job's segment folder %s was removed or replaced while "
                          "this process used it",
                          dir);
            return PX_ERR_BAD_PARAM;
        }
        px_btl_shm_dir.refs++;
        return PX_SUCCESS;
    }
    if (px_btl_shm_dir.fd >= 0 || strlen(dir) >= sizeof px_btl_shm_dir.path) {
        px_show_error("btl shm: segment folder %s: %s", dir,
                      px_btl_shm_dir.fd >= 0 ? "this process already uses another one"
                                             : "path too long");
        return PX_ERR_BAD_PARAM;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        struct stat st;
        bool made = false;
        int fd = px_fs_private_dir_open(dir, true, &st, &made);
        if (fd < 0 && errno == ENOENT)
            continue; /* removed by its last user between our mkdir and open */
        if (fd < 0 && errno == EPERM) {
            px_show_error("btl shm: refusing segment folder %s: it must be a directory owned by "
                          "uid %u with mode 0700 (another user may have made that name; "
                          "btl_shm_backing_dir names its parent)",
                          dir, (unsigned)geteuid());
            return PX_ERR_BAD_PARAM;
        }
        if (fd < 0) {
            px_show_error("btl shm: cannot create the job's segment folder %s: %s (variable "
                          "btl_shm_backing_dir names its parent)",
                          dir, strerror(errno));
            return PX_ERR_IN_ERRNO;
        }
        int rc;
        do
            rc = flock(fd, LOCK_SH);
        while (rc != 0 && errno == EINTR);
        if (dir_is(dir, &st)) {
            /* The process that makes the job's folder (pxrun, or the first
             * process of the job on this host under another launcher) removes
             * the folders of this user's ended jobs beside it; the others
             * (every rank under pxrun) do not scan the parent again. */
            if (made)
                px_fs_reap_ended_jobs(dir, reaped);
            /* Made here (not by pxrun): should every process die without
             * removing it, a launcher that offers it removes the folder when
             * the job has ended, if empty (the segments are registered each). */
            if (made)
                (void)px_boot_register_cleanup(dir, PX_BOOT_CLEANUP_EMPTY_DIR);
            px_btl_shm_dir.fd = fd;
            px_btl_shm_dir.refs = 1;
            px_btl_shm_dir.st = st;
            snprintf(px_btl_shm_dir.path, sizeof px_btl_shm_dir.path, "%s", dir);
            return PX_SUCCESS;
        }
        close(fd); /* its last user removed it meanwhile: make it again */
    }
    px_show_error("btl shm: the job's segment folder %s keeps disappearing", dir);
    return PX_ERR_IN_ERRNO;
}

int px_btl_shm_dir_fd(void)
{
    return px_btl_shm_dir.fd;
}

void px_btl_shm_dir_release(void)
{
    if (px_btl_shm_dir.fd < 0 || --px_btl_shm_dir.refs > 0)
        return;
    /* The last process of the job that holds the folder removes it. */
    if (flock(px_btl_shm_dir.fd, LOCK_EX | LOCK_NB) == 0)
        px_fs_remove_tree_fd(px_btl_shm_dir.fd, px_btl_shm_dir.path);
    close(px_btl_shm_dir.fd);
    px_btl_shm_dir.fd = -1;
    px_btl_shm_dir.refs = 0;
    px_btl_shm_dir.path[0] = '\0';
}

/* `path` as a name inside `dir` (no further slash), or NULL. */
static const char *name_in(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (strncmp(path, dir, n) != 0 || path[n] != '/' || !path[n + 1] || strchr(path + n + 1, '/'))
        return NULL;
    return path + n + 1;
}

/* A segment of the same name is there already (a crashed job with this job
 * id and rank). Remove it when its owner is gone: it held the liveness lock
 * (its header says so) and the lock is free now. PX_SUCCESS when removed,
 * otherwise an error after saying why. */
static int take_over(int dfd, const char *name, const char *path, const char *jobid)
{
    int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    px_btl_shm_seg_hdr_t h;
    memset(&h, 0, sizeof h);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != PX_BTL_SHM_MAGIC ||
        !h.locked) {
        px_show_error("btl shm: cannot create segment %s: it exists and is not a segment whose "
                      "owner can be told to be gone (this job's id '%s' is in use, or another "
                      "program made that file); remove it or set btl_shm_backing_dir",
                      path, jobid);
        if (fd >= 0)
            close(fd);
        return PX_ERR_EXISTS;
    }
    h.job_head[sizeof h.job_head - 1] = '\0';
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        px_show_error("btl shm: cannot create segment %s: it belongs to a running process (pid "
                      "%d, rank %d of job '%s'); two jobs with the job id '%s' on one host?",
                      path, (int)h.owner_pid, (int)h.owner_rank, h.job_head, jobid);
        close(fd);
        return PX_ERR_EXISTS;
    }
    /* Ours while we hold its lock; the name must still be this file. */
    struct stat now;
    int rc = PX_ERR_EXISTS;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino &&
        now.st_dev == st.st_dev && unlinkat(dfd, name, 0) == 0) {
        PX_OUTPUT_VERBOSE(1, 0,
                          "btl shm: took over %s, left by pid %d (rank %d of job '%s'), which "
                          "has ended",
                          path, (int)h.owner_pid, (int)h.owner_rank, h.job_head);
        rc = PX_SUCCESS;
    } else {
        px_show_error("btl shm: cannot remove the stale segment %s: %s", path, strerror(errno));
    }
    close(fd);
    return rc;
}

/* Undo a failed create: the file this call made, the folder reference. */
static void create_failed(int dfd, const char *name, int fd)
{
    if (fd >= 0) {
        close(fd);
        unlinkat(dfd, name, 0);
    }
    px_btl_shm_dir_release(); /* removes the folder when no one else uses it */
}

void px_btl_shm_segment_no_room(const char *dir, const char *path, size_t len, int err, int nlocal)
{
    struct statvfs fs;
    unsigned long long avail =
        statvfs(dir, &fs) == 0 ? (unsigned long long)fs.f_bavail * fs.f_frsize : 0;
    px_show_error("btl shm: cannot reserve %zu bytes for segment %s: %s (%llu bytes free "
                  "there now; each of the %d processes of this job on this host needs "
                  "about as much): set btl_shm_backing_dir to a folder with more space, or "
                  "make the segment smaller (btl_shm_fbox_size, btl_shm_free_list_eager_max, "
                  "btl_shm_free_list_send_max)",
                  len, path, strerror(err), avail, nlocal);
}

int px_btl_shm_segment_reserve(int fd, size_t off, size_t len)
{
    int e = len ? posix_fallocate(fd, (off_t)off, (off_t)len) : 0;
    if (e == ENOSPC || e == EFBIG || e == ENOMEM)
        return e;
    return 0; /* done, or a file system that cannot reserve (EINVAL...) */
}

/* Reserve [off, off + len) or say why not: PX_SUCCESS or
 * PX_ERR_OUT_OF_RESOURCE. */
static int reserve_range(int fd, size_t off, size_t len, const char *dir, const char *path,
                         int nlocal)
{
    int e = px_btl_shm_segment_reserve(fd, off, len);
    if (e == 0)
        return PX_SUCCESS;
    px_btl_shm_segment_no_room(dir, path, len, e, nlocal);
    return PX_ERR_OUT_OF_RESOURCE;
}

int px_btl_shm_segment_create(const char *dir, const char *path, size_t size, size_t reserve,
                              const char *jobid, uint64_t key, int rank, int nlocal,
                              size_t fbox_size, char **base, int *lockfd)
{
    *base = NULL;
    if (lockfd)
        *lockfd = -1;
    int rc = px_btl_shm_dir_ensure(dir);
    if (rc != PX_SUCCESS)
        return rc;
    int dfd = px_btl_shm_dir.fd;
    const char *name = name_in(dir, path);
    if (!name) {
        px_show_error("btl shm: cannot create segment %s: not a file directly inside %s", path,
                      dir);
        create_failed(dfd, "", -1);
        return PX_ERR_BAD_PARAM;
    }
    int fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
        rc = take_over(dfd, name, path, jobid);
        if (rc != PX_SUCCESS) {
            create_failed(dfd, name, -1);
            return rc;
        }
        fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
        px_show_error("btl shm: cannot create segment %s: %s", path, strerror(errno));
        create_failed(dfd, name, -1);
        return PX_ERR_IN_ERRNO;
    }
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        px_show_error("btl shm: cannot size segment %s to %zu bytes: %s (is %s full?)", path, size,
                      strerror(errno), dir);
        create_failed(dfd, name, fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    /* Reserve the pages now: the file is sparse, and a page the file system
     * cannot give when it is first touched kills the process with SIGBUS.
     * The free space each process checked before may have been taken by the
     * other processes of the host since. Only [0, reserve) when the caller
     * keeps the file open to reserve the rest as it is used (lockfd); all of
     * it otherwise. */
    if (!lockfd || reserve > size)
        reserve = size;
    if (reserve_range(fd, 0, reserve, dir, path, nlocal) != PX_SUCCESS) {
        create_failed(dfd, name, fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        px_show_error("btl shm: cannot map segment %s (%zu bytes): %s", path, size,
                      strerror(errno));
        create_failed(dfd, name, fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    /* Liveness: this process holds an exclusive lock on the segment for as
     * long as it lives (the kernel drops it when the process ends, however it
     * ends); a peer that can take a shared lock knows it is gone. */
    bool locked = lockfd && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (!locked && reserve < size &&
        reserve_range(fd, reserve, size - reserve, dir, path, nlocal) != PX_SUCCESS) {
        munmap(p, size);
        create_failed(dfd, name, fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
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
    /* Should this process die before every peer attached (and unlinked
     * it), a launcher that offers it removes the file (PMIx). Only the
     * file: a launcher removes by path, and the folder's name must not be
     * given up while other processes of the job still use it. */
    (void)px_boot_register_cleanup(path, PX_BOOT_CLEANUP_FILE);
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
