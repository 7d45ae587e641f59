/*
 * mca_test_util.h: helpers for the core/mca Check tests: capture stderr
 * into a string, write temporary files and folders, reset the environment.
 * Each Check test runs in its own forked process, so state set here does not
 * leak between tests.
 */
#ifndef PX_TEST_MCA_UTIL_H
#define PX_TEST_MCA_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "test/lib/px_check.h"
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static int cap_saved_fd = -1;
static char cap_path[64];

/* Start sending stderr to a temporary file. */
static inline void capture_begin(void)
{
    fflush(stderr);
    snprintf(cap_path, sizeof(cap_path), "/tmp/px_mca_capXXXXXX");
    int fd = mkstemp(cap_path);
    ck_assert_int_ge(fd, 0);
    cap_saved_fd = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Stop capturing; returns what was written (static buffer). */
static inline const char *capture_end(void)
{
    static char buf[65536];
    fflush(stderr);
    dup2(cap_saved_fd, 2);
    close(cap_saved_fd);
    FILE *f = fopen(cap_path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    unlink(cap_path);
    return buf;
}

/* Count occurrences of `needle` in `hay`. */
static inline int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static char *tmpdirs[64];
static int n_tmpdirs;

static inline int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void remove_tmpdirs(void)
{
    for (int i = 0; i < n_tmpdirs; i++) {
        nftw(tmpdirs[i], rm_one, 8, FTW_DEPTH | FTW_PHYS);
        free(tmpdirs[i]);
    }
    n_tmpdirs = 0;
}

/* A fresh folder under /tmp (mode 0700), removed when the test process
 * exits; caller frees the returned copy. */
static inline char *make_tmpdir(void)
{
    char *d = strdup("/tmp/px_mca_testXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    if (n_tmpdirs == 0)
        atexit(remove_tmpdirs);
    if (n_tmpdirs < 64)
        tmpdirs[n_tmpdirs++] = strdup(d);
    return d;
}

/* Write `text` to dir/name; returns the path (caller frees). */
static inline char *write_file(const char *dir, const char *name, const char *text)
{
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return p;
}

/* Remove every PX_MCA_* and PX_CMDLINE_MCA_* variable, and point HOME and
 * PX_SYSCONFDIR at empty folders, so only what a test sets is seen. */
static inline void clean_env(void)
{
    for (;;) {
        char *name = NULL;
        for (char **e = environ; e && *e; e++) {
            if (!strncmp(*e, "PX_MCA_", 7) || !strncmp(*e, "PX_CMDLINE_MCA_", 15)) {
                name = strndup(*e, (size_t)(strchr(*e, '=') - *e));
                break;
            }
        }
        if (!name)
            break;
        unsetenv(name);
        free(name);
    }
    char *home = make_tmpdir();
    char *etc = make_tmpdir();
    setenv("HOME", home, 1);
    setenv("PX_SYSCONFDIR", etc, 1);
    free(home);
    free(etc);
}

#endif
