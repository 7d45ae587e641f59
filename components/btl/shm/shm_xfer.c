/*
 * shm_xfer.c: btl/shm's shareable memory (BTL API 3.2, PX_BTL_FLAGS_MEM_MAP)
 * for the transfer engine. An allocation is a file
 * <btl_shm_backing_dir>/plexus-<uid>-<jobid>/xfer-<rank>-<n> (folder 0700,
 * file 0600, as the segments): one page of header (magic, job id, a random
 * key, size, owner rank), then the memory. A same-host peer maps it from
 * the description (owner rank, n, key, size) after checking the file's owner,
 * mode and size and the header against its own job and the description, so a
 * process of another job, or a stale or forged description, is refused.
 *
 * The name stays until the owner frees the memory (peers map it at any
 * time after the description reaches them); a peer that sees the owner die
 * removes the dead owner's files (px_btl_shm_xfer_forget), and pxrun (or the
 * last process of the job) removes the whole folder at the end of the job.
 * Files are made and removed relative to the folder's descriptor, held from
 * the segment's creation (px_btl_shm_dir_fd); the folder is never removed
 * while the job runs, so its name cannot be taken by another user.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"

#define PX_BTL_SHM_XFER_MAGIC 0x706c787366723032ULL /* "plxsfr02": job hash and length */
#define PX_BTL_SHM_XFER_HDR   4096

/* The first page of an allocation. */
typedef struct px_btl_shm_xfer_hdr {
    uint64_t magic;
    uint64_t key;
    uint64_t size; /* bytes after the header page */
    int32_t owner_rank;
    uint32_t id;
    uint32_t job_len;  /* the job id: its length and px_btl_shm_job_hash (a 255-character */
    uint64_t job_hash; /* PMIx namespace counts whole, not its first 64 bytes) */
} px_btl_shm_xfer_hdr_t;

/* What a peer needs (the desc of px_btl_mem_t). */
typedef struct px_btl_shm_xfer_desc {
    uint64_t key;
    uint64_t size;
    int32_t owner_rank;
    uint32_t id;
} px_btl_shm_xfer_desc_t;

/* An allocation or a mapping (px_btl_mem_t.priv). */
typedef struct px_btl_shm_xfer_map {
    struct px_btl_shm_xfer_map *next; /* allocations: the module's list */
    void *addr;                       /* the whole file, header included */
    size_t len;
    bool owner;
    char path[256];
} px_btl_shm_xfer_map_t;

static px_btl_shm_xfer_map_t *px_btl_shm_xfer_allocs;
static uint32_t px_btl_shm_xfer_next_id;

static int xfer_path(char *buf, size_t len, int rank, uint32_t id)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    int n = snprintf(buf, len, "%s/xfer-%d-%u", s->dir, rank, id);
    return n > 0 && (size_t)n < len ? PX_SUCCESS : PX_ERR_BAD_PARAM;
}

/* The file's name inside the job's folder. */
static const char *xfer_name(const px_btl_shm_xfer_map_t *m)
{
    const char *slash = strrchr(m->path, '/');
    return slash ? slash + 1 : m->path;
}

static size_t page_round(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

int px_btl_shm_mem_alloc(px_btl_module_t *btl, size_t size, px_btl_mem_t *mem)
{
    (void)btl;
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (size > SIZE_MAX / 2)
        return PX_ERR_BAD_PARAM;
    size_t len = PX_BTL_SHM_XFER_HDR + page_round(size);
    struct statvfs fs;
    const char *bdir = s->backing_dir && *s->backing_dir ? s->backing_dir : "/dev/shm";
    if (statvfs(bdir, &fs) == 0 && fs.f_frsize > 0 && len / fs.f_frsize > (size_t)fs.f_bavail) {
        /* Touching pages past what the file system holds would be SIGBUS. */
        px_show_error("btl shm: cannot allocate %zu bytes of shareable memory: %s "
                      "(btl_shm_backing_dir) has %llu bytes free",
                      size, bdir, (unsigned long long)fs.f_bavail * fs.f_frsize);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    px_btl_shm_xfer_map_t *m = calloc(1, sizeof *m);
    if (!m)
        return PX_ERR_OUT_OF_RESOURCE;
    uint32_t id = px_btl_shm_xfer_next_id++;
    int rc = xfer_path(m->path, sizeof m->path, s->my_rank, id);
    int dfd = px_btl_shm_dir_fd(); /* held since the segment was made */
    if (rc == PX_SUCCESS && dfd < 0) {
        px_show_error("btl shm: cannot create shareable memory: the job's folder %s is not open",
                      s->dir);
        rc = PX_ERR_NOT_INITIALIZED;
    }
    if (rc != PX_SUCCESS) {
        free(m);
        return rc;
    }
    int fd = openat(dfd, xfer_name(m), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        px_show_error("btl shm: cannot create shareable memory %s: %s", m->path, strerror(errno));
        free(m);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    void *p = MAP_FAILED;
    int err = 0;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)len) != 0)
        err = errno;
    else if ((err = posix_fallocate(fd, 0, (off_t)len)) == EINVAL || err == EOPNOTSUPP)
        err = 0; /* a file system that cannot reserve: as before, the check above only */
    if (!err && (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        /* Reserved up front: a page the file system cannot give when touched would be SIGBUS. */
        px_show_error("btl shm: cannot size, reserve or map shareable memory %s (%zu bytes): %s%s",
                      m->path, len, strerror(err),
                      err == ENOSPC ? " (set btl_shm_backing_dir to a folder with more space)"
                                    : "");
        unlinkat(dfd, xfer_name(m), 0);
        free(m);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    px_btl_shm_xfer_hdr_t *h = p;
    uint64_t key = 0;
    if (getrandom(&key, sizeof key, 0) != sizeof key)
        key = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p ^ 0x9e3779b97f4a7c15ULL;
    h->key = key;
    h->size = len - PX_BTL_SHM_XFER_HDR;
    h->owner_rank = s->my_rank;
    h->id = id;
    h->job_len = (uint32_t)strlen(px_boot->jobid);
    h->job_hash = px_btl_shm_job_hash(px_boot->jobid);
    __atomic_store_n(&h->magic, PX_BTL_SHM_XFER_MAGIC, __ATOMIC_RELEASE);
    m->addr = p;
    m->len = len;
    m->owner = true;
    m->next = px_btl_shm_xfer_allocs;
    px_btl_shm_xfer_allocs = m;
    px_btl_shm_xfer_desc_t d = {.key = key, .size = h->size, .owner_rank = s->my_rank, .id = id};
    memset(mem, 0, sizeof *mem);
    mem->base = (char *)p + PX_BTL_SHM_XFER_HDR;
    mem->size = h->size;
    mem->priv = m;
    mem->desc_len = sizeof d;
    memcpy(mem->desc, &d, sizeof d);
    return PX_SUCCESS;
}

static void xfer_release(px_btl_shm_xfer_map_t *m)
{
    munmap(m->addr, m->len);
    if (m->owner && px_btl_shm_dir_fd() >= 0)
        unlinkat(px_btl_shm_dir_fd(), xfer_name(m), 0); /* the folder stays until the job ends */
    free(m);
}

int px_btl_shm_mem_free(px_btl_module_t *btl, px_btl_mem_t *mem)
{
    (void)btl;
    px_btl_shm_xfer_map_t *m = mem->priv, **pp = &px_btl_shm_xfer_allocs;
    while (*pp && *pp != m)
        pp = &(*pp)->next;
    if (!m || !*pp)
        return PX_ERR_NOT_FOUND;
    *pp = m->next;
    xfer_release(m);
    mem->priv = NULL;
    mem->base = NULL;
    return PX_SUCCESS;
}

int px_btl_shm_mem_map(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *desc,
                       size_t desc_len, px_btl_mem_t *map)
{
    (void)btl;
    px_btl_shm_xfer_desc_t d;
    if (desc_len != sizeof d || !ep) {
        px_show_error("btl shm: a shareable-memory description of %zu bytes (expected %zu)",
                      desc_len, sizeof d);
        return PX_ERR_BAD_PARAM;
    }
    memcpy(&d, desc, sizeof d);
    if (d.owner_rank != ep->rank || d.size == 0 || d.size > SIZE_MAX / 2 ||
        d.size != page_round(d.size)) {
        px_show_error("btl shm: a shareable-memory description names owner rank %d and %llu "
                      "bytes; the peer is rank %d (sizes are whole pages)",
                      (int)d.owner_rank, (unsigned long long)d.size, ep->rank);
        return PX_ERR_BAD_PARAM;
    }
    px_btl_shm_xfer_map_t *m = calloc(1, sizeof *m);
    if (!m)
        return PX_ERR_OUT_OF_RESOURCE;
    if (xfer_path(m->path, sizeof m->path, ep->rank, d.id) != PX_SUCCESS) {
        free(m);
        return PX_ERR_BAD_PARAM;
    }
    size_t len = PX_BTL_SHM_XFER_HDR + (size_t)d.size;
    int fd = open(m->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        px_show_error("btl shm: cannot open rank %d's shareable memory %s: %s (freed by its "
                      "owner, or the owner ended)",
                      ep->rank, m->path, strerror(errno));
        free(m);
        return errno == ENOENT ? PX_ERR_NOT_FOUND : PX_ERR_IN_ERRNO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 077) ||
        (size_t)st.st_size != len) {
        px_show_error("btl shm: refusing rank %d's shareable memory %s: owner uid %u, mode %o, "
                      "%zu bytes (expected uid %u, mode 600, %zu bytes)",
                      ep->rank, m->path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777),
                      (size_t)st.st_size, (unsigned)getuid(), len);
        close(fd);
        free(m);
        return PX_ERR_BAD_PARAM;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        px_show_error("btl shm: cannot map rank %d's shareable memory %s: %s", ep->rank, m->path,
                      strerror(err));
        free(m);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    const px_btl_shm_xfer_hdr_t *h = p;
    const char *why = NULL;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != PX_BTL_SHM_XFER_MAGIC)
        why = "not Plexus shareable memory";
    else if (h->job_len != strlen(px_boot->jobid) ||
             h->job_hash != px_btl_shm_job_hash(px_boot->jobid))
        why = "it belongs to another job";
    else if (h->key != d.key || h->id != d.id || h->owner_rank != d.owner_rank)
        why = "its key differs from the description (a stale or forged description)";
    else if (h->size != d.size)
        why = "its size differs from the description";
    if (why) {
        px_show_error("btl shm: refusing to map rank %d's shareable memory %s: %s", ep->rank,
                      m->path, why);
        munmap(p, len);
        free(m);
        return PX_ERR_BAD_PARAM;
    }
    m->addr = p;
    m->len = len;
    m->owner = false;
    memset(map, 0, sizeof *map);
    map->base = (char *)p + PX_BTL_SHM_XFER_HDR;
    map->size = (size_t)d.size;
    map->priv = m;
    return PX_SUCCESS;
}

int px_btl_shm_mem_unmap(px_btl_module_t *btl, px_btl_mem_t *map)
{
    (void)btl;
    px_btl_shm_xfer_map_t *m = map->priv;
    if (!m || m->owner)
        return PX_ERR_BAD_PARAM;
    xfer_release(m);
    map->priv = NULL;
    map->base = NULL;
    return PX_SUCCESS;
}

void px_btl_shm_xfer_forget(int rank)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "xfer-%d-", rank);
    int dfd = px_btl_shm_dir_fd() >= 0 ? dup(px_btl_shm_dir_fd()) : -1;
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && e->d_name[strlen(prefix)])
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

void px_btl_shm_xfer_cleanup(void)
{
    while (px_btl_shm_xfer_allocs) {
        px_btl_shm_xfer_map_t *m = px_btl_shm_xfer_allocs;
        px_btl_shm_xfer_allocs = m->next;
        xfer_release(m);
    }
}
