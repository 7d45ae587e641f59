/*
 * fs.c: file-system helpers (fs.h). Every removal goes through descriptors:
 * the folder is opened without following a link and checked, and each name
 * inside is removed with unlinkat relative to it, each subfolder opened with
 * openat(O_NOFOLLOW | O_DIRECTORY) and checked to be the entry just looked
 * at (device, inode, owner) before anything in it is touched. A folder
 * swapped for a symbolic link halfway makes unlinkat remove the link, never
 * what it points to.
 */
#define _GNU_SOURCE
#include "core/util/fs.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* Deeper than any folder a job makes; what is deeper stays. */
#define PX_FS_MAX_DEPTH 32

int px_fs_private_dir_open(const char *path, bool create, struct stat *st, bool *made)
{
    bool m = false;
    if (made)
        *made = false;
    if (create) {
        if (mkdir(path, 0700) == 0)
            m = true;
        else if (errno != EEXIST)
            return -1;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            errno = EPERM; /* a link or a file where the folder should be */
        return -1;
    }
    struct stat s;
    if (fstat(fd, &s) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISDIR(s.st_mode) || s.st_uid != geteuid() || (s.st_mode & 077)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    if (st)
        *st = s;
    if (made)
        *made = m;
    return fd;
}

/* Remove what is inside the folder open at fd (on device dev). */
static void empty_dir(int fd, dev_t dev, int depth)
{
    int dfd = dup(fd);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    uid_t me = geteuid();
    /* Removing while reading may skip names: read again while that helps. */
    for (int pass = 0; pass < 8; pass++) {
        rewinddir(d);
        int seen = 0, removed = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            const char *n = e->d_name;
            if (!strcmp(n, ".") || !strcmp(n, ".."))
                continue;
            seen++;
            struct stat st;
            if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            if (!S_ISDIR(st.st_mode)) {
                if (unlinkat(fd, n, 0) == 0)
                    removed++;
                continue;
            }
            /* A folder: only ours, on this file system, not too deep. */
            if (st.st_dev != dev || st.st_uid != me || depth >= PX_FS_MAX_DEPTH)
                continue;
            int sub = openat(fd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue; /* swapped for a link or a file: the next pass sees what it is */
            struct stat now;
            if (fstat(sub, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino &&
                now.st_uid == me)
                empty_dir(sub, dev, depth + 1);
            close(sub);
            /* Removes an empty folder only; a link put there meanwhile is ENOTDIR. */
            if (unlinkat(fd, n, AT_REMOVEDIR) == 0)
                removed++;
        }
        if (seen == 0 || removed == 0)
            break;
    }
    closedir(d);
}

/* Split `path` into its folder (opened, following links: the caller's
 * trusted parent such as /dev/shm) and its last component. */
static int open_parent(const char *path, char *base, size_t blen)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    char *slash = strrchr(buf, '/');
    const char *dir = ".", *name = buf;
    if (slash) {
        *slash = '\0';
        name = slash + 1;
        dir = slash == buf ? "/" : buf;
    }
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) >= blen)
        return -1;
    snprintf(base, blen, "%s", name);
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Remove the name base in the folder pfd when it still is the folder st. */
static void remove_name(int pfd, const char *base, const struct stat *st)
{
    struct stat now;
    if (fstatat(pfd, base, &now, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(now.st_mode) &&
        now.st_dev == st->st_dev && now.st_ino == st->st_ino)
        unlinkat(pfd, base, AT_REMOVEDIR);
}

void px_fs_remove_tree(const char *dir)
{
    char base[NAME_MAX + 1];
    int pfd = open_parent(dir, base, sizeof base);
    if (pfd < 0)
        return;
    int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
        empty_dir(fd, st.st_dev, 0);
        remove_name(pfd, base, &st);
    }
    if (fd >= 0)
        close(fd);
    close(pfd);
}

void px_fs_remove_tree_fd(int dirfd, const char *path)
{
    struct stat st;
    if (dirfd < 0 || fstat(dirfd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return;
    empty_dir(dirfd, st.st_dev, 0);
    if (!path)
        return;
    char base[NAME_MAX + 1];
    int pfd = open_parent(path, base, sizeof base);
    if (pfd < 0)
        return;
    remove_name(pfd, base, &st);
    close(pfd);
}

void px_fs_reap_ended_jobs(const char *dir, void (*removed)(const char *path))
{
    char parent[PATH_MAX], prefix[32];
    if (snprintf(parent, sizeof parent, "%s", dir) >= (int)sizeof parent)
        return;
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return;
    *slash = '\0';
    const char *own = slash + 1;
    snprintf(prefix, sizeof prefix, "plexus-%u-", (unsigned)geteuid());
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return;
    int lfd = dup(pfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        close(pfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || !strcmp(e->d_name, own))
            continue;
        int fd = openat(pfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        char path[PATH_MAX + 256];
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
            !(st.st_mode & 077) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            snprintf(path, sizeof path, "%s/%s", parent, e->d_name) < (int)sizeof path) {
            px_fs_remove_tree_fd(fd, path);
            if (removed)
                removed(path);
        }
        close(fd);
    }
    closedir(d);
    close(pfd);
}
