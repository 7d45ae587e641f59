/*
 * dirstore.c: a registry component kept OUT of the tree: test/registry/t_names.sh
 * builds it against the installed headers and plexus.pc alone (as a third
 * party would: docs/writing-a-component.md, "A registry component"), loads
 * it with PX_MCA_mca_component_path and tests the names layer over it.
 *
 * The store is a folder (variable registry_dirstore_dir), one file per key
 * (the key with every byte outside [A-Za-z0-9._:-] written %XX), a lock file
 * taken around every change so that PX_REGISTRY_PUT_CREATE is atomic between
 * processes. An entry's lease is its file's modification time plus
 * registry_lease (the reader's: every process of a test sets the same):
 * a put renews it by writing the file, an expired file counts as absent and
 * is removed when met. Deleting the folder is a store restarted empty.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <core/mca/var.h>
#include <core/util/error.h>
#include <core/util/output.h>
#include <frameworks/registry/registry.h>

static char *dir_var = "";

typedef struct {
    px_registry_module_t super;
    char dir[3072];
} dirstore_t;

static int file_of(dirstore_t *d, const char *key, char *path, size_t cap)
{
    size_t o = (size_t)snprintf(path, cap, "%s/", d->dir);
    for (const unsigned char *p = (const unsigned char *)key; *p; ++p) {
        if (o + 4 >= cap)
            return PX_ERR_BAD_PARAM;
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            '.' == *p || '_' == *p || ':' == *p || '-' == *p)
            path[o++] = (char)*p;
        else
            o += (size_t)snprintf(path + o, cap - o, "%%%02X", *p);
    }
    path[o] = 0;
    return PX_SUCCESS;
}

static void key_of(const char *file, char *key, size_t cap)
{
    size_t o = 0;
    for (const char *p = file; *p && o + 1 < cap; ++p) {
        unsigned v;
        if ('%' == *p && sscanf(p + 1, "%2X", &v) == 1) {
            key[o++] = (char)v;
            p += 2;
        } else
            key[o++] = *p;
    }
    key[o] = 0;
}

/* The folder (made when missing: a store restarted empty) and its lock. */
static int lock_store(dirstore_t *d)
{
    if (mkdir(d->dir, 0700) != 0 && errno != EEXIST) {
        px_show_error("registry dirstore: cannot make the folder %s: %s", d->dir, strerror(errno));
        return -1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/.lock", d->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        px_show_error("registry dirstore: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    flock(fd, LOCK_EX);
    return fd;
}

static void unlock_store(int fd)
{
    flock(fd, LOCK_UN);
    close(fd);
}

static int expired(const struct stat *st)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double age = (double)(now.tv_sec - st->st_mtim.tv_sec) +
                 (double)(now.tv_nsec - st->st_mtim.tv_nsec) * 1e-9;
    return age > px_registry_base_lease();
}

/* The file's bytes (absent or expired: PX_ERR_NOT_FOUND, the file removed). */
static int read_file(const char *path, void **value, size_t *len)
{
    *value = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ENOENT == errno ? PX_ERR_NOT_FOUND : PX_ERR_IN_ERRNO;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return PX_ERR_BAD_PARAM;
    }
    if (expired(&st)) {
        close(fd);
        unlink(path);
        return PX_ERR_NOT_FOUND;
    }
    if (st.st_size > PX_REGISTRY_VALUE_MAX) {
        close(fd);
        px_show_error("registry dirstore: %s holds %lld bytes, more than the %d a value may have",
                      path, (long long)st.st_size, PX_REGISTRY_VALUE_MAX);
        return PX_ERR_BAD_PARAM;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (n < 0) {
        free(buf);
        return PX_ERR_IN_ERRNO;
    }
    buf[n] = 0;
    *value = buf;
    *len = (size_t)n;
    return PX_SUCCESS;
}

static int write_file(const char *path, const void *value, size_t len)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return PX_ERR_IN_ERRNO;
    ssize_t n = len ? write(fd, value, len) : 0;
    close(fd);
    if (n != (ssize_t)len || rename(tmp, path) != 0) {
        unlink(tmp);
        return PX_ERR_IN_ERRNO;
    }
    return PX_SUCCESS;
}

static int ds_put(px_registry_module_t *m, const char *key, const void *value, size_t len, int how)
{
    dirstore_t *d = (dirstore_t *)m;
    char path[4200];
    if (file_of(d, key, path, sizeof path) != PX_SUCCESS)
        return PX_ERR_BAD_PARAM;
    int fd = lock_store(d);
    if (fd < 0)
        return PX_ERR_NOT_AVAILABLE;
    int rc = PX_SUCCESS;
    if (PX_REGISTRY_PUT_CREATE == how) {
        void *old;
        size_t olen;
        rc = read_file(path, &old, &olen);
        if (PX_SUCCESS == rc) {
            bool same = olen == len && 0 == memcmp(old, value, len);
            free(old);
            rc = same ? PX_SUCCESS : PX_ERR_EXISTS;
        } else if (PX_ERR_NOT_FOUND == rc) {
            rc = PX_SUCCESS; /* absent or expired */
        } else if (PX_ERR_BAD_PARAM == rc) {
            rc = PX_ERR_EXISTS; /* something else is there */
        }
    }
    if (PX_SUCCESS == rc)
        rc = write_file(path, value, len); /* a new mtime: the lease renewed */
    unlock_store(fd);
    return rc;
}

static int ds_get(px_registry_module_t *m, const char *key, void **value, size_t *len)
{
    dirstore_t *d = (dirstore_t *)m;
    char path[4200];
    if (file_of(d, key, path, sizeof path) != PX_SUCCESS)
        return PX_ERR_BAD_PARAM;
    return read_file(path, value, len);
}

static int ds_del(px_registry_module_t *m, const char *key, const void *value, size_t len)
{
    dirstore_t *d = (dirstore_t *)m;
    char path[4200];
    if (file_of(d, key, path, sizeof path) != PX_SUCCESS)
        return PX_ERR_BAD_PARAM;
    int fd = lock_store(d);
    if (fd < 0)
        return PX_ERR_NOT_AVAILABLE;
    void *old;
    size_t olen;
    int rc = read_file(path, &old, &olen);
    if (PX_SUCCESS == rc || PX_ERR_BAD_PARAM == rc) {
        bool same = PX_SUCCESS == rc && olen == len && 0 == memcmp(old, value, len);
        free(old);
        if (NULL == value || same)
            rc = 0 == unlink(path) ? PX_SUCCESS : PX_ERR_IN_ERRNO;
        else
            rc = PX_ERR_EXISTS;
    }
    unlock_store(fd);
    return rc;
}

static int ds_list(px_registry_module_t *m, const char *prefix, px_registry_list_fn_t fn, void *arg)
{
    dirstore_t *d = (dirstore_t *)m;
    DIR *dh = opendir(d->dir);
    if (NULL == dh)
        return ENOENT == errno ? PX_SUCCESS : PX_ERR_NOT_AVAILABLE;
    int rc = PX_SUCCESS;
    struct dirent *de;
    while (PX_SUCCESS == rc && (de = readdir(dh)) != NULL) {
        if ('.' == de->d_name[0] || strstr(de->d_name, ".tmp."))
            continue;
        char key[PX_REGISTRY_KEY_MAX * 3 + 1];
        key_of(de->d_name, key, sizeof key);
        if (strncmp(key, prefix, strlen(prefix)) != 0)
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", d->dir, de->d_name);
        void *v;
        size_t n;
        if (read_file(path, &v, &n) != PX_SUCCESS)
            continue;
        rc = fn(key, v, n, arg);
        free(v);
    }
    closedir(dh);
    return rc;
}

static void ds_close(px_registry_module_t *m)
{
    free(m);
}

static int ds_register(void)
{
    int rc = px_mca_var_register("registry", "dirstore", "dir",
                                 "The folder that holds the entries, one file per key (a test "
                                 "store; empty: dirstore declines)",
                                 PX_MCA_VAR_TYPE_STRING, NULL, 3, PX_MCA_VAR_SCOPE_READONLY, 0,
                                 &dir_var);
    return rc < 0 ? rc : PX_SUCCESS;
}

static int ds_query(int *priority, px_registry_module_t **module)
{
    *priority = -1;
    *module = NULL;
    if (NULL == dir_var || !*dir_var)
        return PX_ERR_NOT_AVAILABLE; /* not configured: registry_dirstore_dir is empty */
    dirstore_t *d = calloc(1, sizeof *d);
    if (NULL == d)
        return PX_ERR_OUT_OF_RESOURCE;
    snprintf(d->dir, sizeof d->dir, "%s", dir_var);
    d->super = (px_registry_module_t){.name = "dirstore",
                                      .put = ds_put,
                                      .get = ds_get,
                                      .del = ds_del,
                                      .list = ds_list,
                                      .close = ds_close};
    *priority = 10;
    *module = &d->super;
    return PX_SUCCESS;
}

const px_registry_component_t px_registry_dirstore_component = {
    .base = PX_REGISTRY_COMPONENT_HEADER("dirstore", 1, 0, 0, ds_register, NULL, NULL),
    .query = ds_query,
};
