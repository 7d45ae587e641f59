/*
 * shm_segment_test: btl/shm's segment files: modes (folder 0700, file 0600),
 * attach with the right job id and key, refusal for another job's id, a
 * wrong key, a wrong size, and a folder open to other users; a creation
 * that fails after making the folder removes it; the liveness lock tells a
 * peer that the owner has ended (also while it is an unreaped zombie); a
 * segment left by a dead owner is taken over, a live owner's never; the
 * automatic ring size (btl_shm_fbox_size=0) for a range of local process counts.
 */
#include "test/lib/px_check.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"

static char top[64], dir[128], path[192];
static const size_t seg_size = 1 << 20;

static void setup(void)
{
    snprintf(top, sizeof top, "/dev/shm/plexus-segtest-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(top));
    snprintf(dir, sizeof dir, "%s/plexus-%u-jobA", top, (unsigned)getuid());
    snprintf(path, sizeof path, "%s/seg-0", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
    rmdir(top);
}

START_TEST(create_modes_and_attach)
{
    char *base = NULL, *peer = NULL;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 42, 0, 2,
                                               4096, &base, NULL),
                     PX_SUCCESS);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq((size_t)st.st_size, seg_size);
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 42, NULL, &peer, NULL),
                     PX_SUCCESS);
    /* The same memory through both mappings. */
    base[seg_size - 1] = 'x';
    ck_assert_int_eq(peer[seg_size - 1], 'x');
    munmap(peer, seg_size);
    munmap(base, seg_size);
}
END_TEST

START_TEST(other_job_cannot_attach)
{
    char *base = NULL, *peer = (char *)1;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 42, 0, 2,
                                               4096, &base, NULL),
                     PX_SUCCESS);
    /* A process of job B, even one that learnt the key, is refused. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobB", 42, NULL, &peer, NULL),
                     PX_ERR_BAD_PARAM);
    ck_assert_ptr_null(peer);
    /* The right job with a key that is not the one published. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 43, NULL, &peer, NULL),
                     PX_ERR_BAD_PARAM);
    /* A size that disagrees with the modex. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size / 2, "jobA", 42, NULL, &peer, NULL),
                     PX_ERR_BAD_PARAM);
    /* A job id that is a prefix of this one's. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "job", 42, NULL, &peer, NULL),
                     PX_ERR_BAD_PARAM);
    munmap(base, seg_size);
}
END_TEST

START_TEST(not_a_segment)
{
    mkdir(dir, 0700);
    int fd = open(path, O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)seg_size), 0);
    close(fd);
    char *peer = NULL;
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 0, NULL, &peer, NULL),
                     PX_ERR_BAD_PARAM);
}
END_TEST

START_TEST(open_folder_refused)
{
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(chmod(dir, 0777), 0);
    char *base = NULL;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 1, 0, 2, 4096,
                                               &base, NULL),
                     PX_ERR_BAD_PARAM);
    ck_assert_ptr_null(base);
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

START_TEST(exclusive_create)
{
    char *a = NULL, *b = NULL;
    ck_assert_int_eq(
        px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 1, 0, 2, 4096, &a, NULL),
        PX_SUCCESS);
    /* A second segment with the same name is an error, not a takeover. */
    ck_assert_int_ne(
        px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 2, 0, 2, 4096, &b, NULL),
        PX_SUCCESS);
    ck_assert_ptr_null(b);
    munmap(a, seg_size);
}
END_TEST

/* Early failures must not leave an empty plexus-<uid>-<job> folder behind. */
START_TEST(failed_create_removes_the_folder)
{
    char *a = NULL;
    int fd = 7;
    /* ftruncate refuses the size (negative as an off_t): after the folder was made. */
    ck_assert_int_ne(px_btl_shm_segment_create(dir, path, ~(size_t)4095, ~(size_t)4095, "jobA", 1,
                                               0, 2, 4096, &a, &fd),
                     PX_SUCCESS);
    ck_assert_ptr_null(a);
    ck_assert_int_eq(fd, -1);
    ck_assert_msg(access(dir, F_OK) != 0, "%s was left behind after a failed ftruncate", dir);
    /* open refuses the path: again after the folder was made. */
    char bad[256];
    snprintf(bad, sizeof bad, "%s/no/such/seg-0", dir);
    ck_assert_int_ne(
        px_btl_shm_segment_create(dir, bad, seg_size, seg_size, "jobA", 1, 0, 2, 4096, &a, NULL),
        PX_SUCCESS);
    ck_assert_msg(access(dir, F_OK) != 0, "%s was left behind after a failed open", dir);
    /* A folder that holds another segment is kept. */
    char *b = NULL;
    ck_assert_int_eq(
        px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 1, 0, 2, 4096, &b, NULL),
        PX_SUCCESS);
    snprintf(bad, sizeof bad, "%s/seg-1", dir);
    ck_assert_int_ne(px_btl_shm_segment_create(dir, bad, ~(size_t)4095, ~(size_t)4095, "jobA", 1, 1,
                                               2, 4096, &a, NULL),
                     PX_SUCCESS);
    ck_assert_int_eq(access(path, F_OK), 0);
    munmap(b, seg_size);
}
END_TEST

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The owner's lock: held while it lives, free once it ended, zombie or not. */
START_TEST(liveness_lock)
{
    int up[2], go[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *mine = NULL;
        int lfd = -1, rc = px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 5, 0, 2,
                                                     4096, &mine, &lfd);
        char c = (rc == PX_SUCCESS && lfd >= 0) ? 'y' : 'n';
        if (write(up[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
            _exit(3);
        _exit(0); /* no cleanup: as a crash would */
    }
    char c = 0;
    ck_assert_int_eq(read(up[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');
    char *peer = NULL;
    int lfd = -1;
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 5, NULL, &peer, &lfd),
                     PX_SUCCESS);
    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(((px_btl_shm_seg_hdr_t *)peer)->locked, 1);
    unlink(path); /* as the last attacher does: the lock lives on the open file */
    ck_assert_int_eq(px_btl_shm_peer_gone(lfd), 0);
    ck_assert_int_eq(px_btl_shm_peer_gone(lfd), 0); /* a check does not take it over */
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    /* Not reaped yet: the child is a zombie once it has exited. */
    double end = mono() + 10;
    int gone = 0;
    while (!(gone = px_btl_shm_peer_gone(lfd)) && mono() < end)
        usleep(1000);
    ck_assert_int_eq(gone, 1);
    int ws;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    ck_assert_int_eq(px_btl_shm_peer_gone(lfd), 1);
    close(lfd);
    munmap(peer, seg_size);
    ck_assert_int_eq(px_btl_shm_peer_gone(-1), 0);
}
END_TEST

/* A child that makes the segment (holding its liveness lock) and either
 * ends at once without cleaning up (as a crash would) or waits for a byte
 * on `go` first. Returns its pid once the segment is made. */
static pid_t plant_segment(const char *job, int go_fd)
{
    int up[2];
    ck_assert_int_eq(pipe(up), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *mine = NULL, c;
        int lfd = -1, rc = px_btl_shm_segment_create(dir, path, seg_size, seg_size, job, 9, 0, 2,
                                                     4096, &mine, &lfd);
        c = (rc == PX_SUCCESS && lfd >= 0) ? 'y' : 'n';
        if (write(up[1], &c, 1) != 1 || (go_fd >= 0 && read(go_fd, &c, 1) < 0))
            _exit(3);
        _exit(0); /* no cleanup */
    }
    char c = 0;
    ck_assert_int_eq(read(up[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');
    close(up[0]);
    close(up[1]);
    return pid;
}

/* A segment left by a crashed process of a job with the same id and rank
 * (its lock is free) is taken over: the new one is made in its place. */
START_TEST(takeover_of_a_dead_owner)
{
    pid_t pid = plant_segment("jobA", -1);
    int ws;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    struct stat old;
    ck_assert_int_eq(stat(path, &old), 0);
    char *base = NULL;
    int lfd = -1;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 11, 0, 2,
                                               4096, &base, &lfd),
                     PX_SUCCESS);
    ck_assert_ptr_nonnull(base);
    ck_assert_int_ge(lfd, 0);
    px_btl_shm_seg_hdr_t *h = (px_btl_shm_seg_hdr_t *)base;
    ck_assert_int_eq(h->owner_pid, (int32_t)getpid());
    ck_assert(h->key == 11);
    struct stat now;
    ck_assert_int_eq(stat(path, &now), 0);
    ck_assert(now.st_ino != old.st_ino); /* a new file, not the dead one reused */
    /* Its pages are reserved: the file system holds all of it now. */
    ck_assert_int_ge((long long)now.st_blocks * 512, (long long)seg_size);
    close(lfd);
    munmap(base, seg_size);
}
END_TEST

/* A segment whose owner lives is never taken, whatever job asks. */
START_TEST(no_takeover_of_a_live_owner)
{
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = plant_segment("jobA", go[0]);
    struct stat before, after;
    ck_assert_int_eq(stat(path, &before), 0);
    char *base = NULL;
    int lfd = -1;
    ck_assert_int_ne(px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 12, 0, 2,
                                               4096, &base, &lfd),
                     PX_SUCCESS);
    ck_assert_ptr_null(base);
    ck_assert_int_eq(lfd, -1);
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert(after.st_ino == before.st_ino);
    char *peer = NULL;
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 9, NULL, &peer, NULL),
                     PX_SUCCESS);
    ck_assert_int_eq(((px_btl_shm_seg_hdr_t *)peer)->owner_pid, (int32_t)pid);
    munmap(peer, seg_size);
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    int ws;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
}
END_TEST

/* btl_shm_fbox_size=0 (auto): 4 MiB rings, halved while the rings of a
 * process's peers (nlocal - 1) exceed 4 MiB, never below 64 KiB; always a
 * power of two (the ring arithmetic masks with size - 1). */
START_TEST(auto_ring_size)
{
    static const struct {
        int nlocal;
        size_t ring;
    } want[] = {{1, 4 << 20},    {2, 4 << 20},     {3, 2 << 20},     {4, 1 << 20},
                {5, 1 << 20},    {6, 512 << 10},   {9, 512 << 10},   {10, 256 << 10},
                {17, 256 << 10}, {18, 128 << 10},  {33, 128 << 10},  {34, 64 << 10},
                {64, 64 << 10},  {1000, 64 << 10}, {65535, 64 << 10}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        size_t f = px_btl_shm_auto_fbox_size(want[i].nlocal);
        ck_assert_msg(f == want[i].ring, "nlocal %d: ring %zu, want %zu", want[i].nlocal, f,
                      want[i].ring);
        ck_assert(f && !(f & (f - 1)));
    }
}
END_TEST

/* What px_show_error printed while `stmt` ran. */
static char captured[4096];
#define CAPTURE_STDERR(stmt)                                                                       \
    do {                                                                                           \
        fflush(stderr);                                                                            \
        FILE *cap_ = tmpfile();                                                                    \
        ck_assert_ptr_nonnull(cap_);                                                               \
        int save_ = dup(2);                                                                        \
        dup2(fileno(cap_), 2);                                                                     \
        stmt;                                                                                      \
        fflush(stderr);                                                                            \
        dup2(save_, 2);                                                                            \
        close(save_);                                                                              \
        rewind(cap_);                                                                              \
        size_t n_ = fread(captured, 1, sizeof captured - 1, cap_);                                 \
        captured[n_] = '\0';                                                                       \
        fclose(cap_);                                                                              \
    } while (0)

/* Job ids of any length up to PMIx's 255: the whole id counts, not its
 * first 64 bytes (which once made every peer of a long id refuse the others,
 * and would have taken two ids alike up to byte 64 for one job). */
START_TEST(long_job_ids)
{
    char a[256], b[256];
    memset(a, 'n', 255);
    a[255] = '\0';
    memcpy(b, a, sizeof b);
    b[200] = 'X'; /* differs only after byte 64 */
    char *base = NULL, *peer = NULL;
    ck_assert_int_eq(
        px_btl_shm_segment_create(dir, path, seg_size, seg_size, a, 42, 0, 2, 4096, &base, NULL),
        PX_SUCCESS);
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, a, 42, NULL, &peer, NULL),
                     PX_SUCCESS);
    munmap(peer, seg_size);
    peer = NULL;
    CAPTURE_STDERR(ck_assert_int_eq(
        px_btl_shm_segment_attach(path, seg_size, b, 42, NULL, &peer, NULL), PX_ERR_BAD_PARAM));
    ck_assert_ptr_null(peer);
    ck_assert_msg(strstr(captured, "it belongs to another job"), "error: %s", captured);
    ck_assert_msg(strstr(captured, "255 characters"), "error: %s", captured);
    a[64] = '\0'; /* its first 64 bytes */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, a, 42, NULL, &peer, NULL),
                     PX_ERR_BAD_PARAM);
    a[63] = '\0';
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, a, 42, NULL, &peer, NULL),
                     PX_ERR_BAD_PARAM);
    munmap(base, seg_size);
}
END_TEST

/* A peer's header whose geometry is not this process's: refused with the
 * peer, the field and both values, never mapped with rings in the wrong place. */
START_TEST(geometry_checked_at_attach)
{
    char *base = NULL, *peer = NULL;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, seg_size, "jobA", 42, 3, 4,
                                               8192, &base, NULL),
                     PX_SUCCESS);
    px_btl_shm_geom_t good = {3, 0, 4, 8192};
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 42, &good, &peer, NULL),
                     PX_SUCCESS);
    munmap(peer, seg_size);
    static const struct {
        px_btl_shm_geom_t g;
        const char *want;
    } bad[] = {
        {{3, 0, 4, 4096}, "rank 0 refuses rank 3's segment"},
        {{3, 0, 4, 4096},
         "its btl_shm_fbox_size (bytes of each ring) is 8192, rank 0 expects 4096"},
        {{3, 0, 4, 16384}, "btl_shm_fbox_size (bytes of each ring) is 8192, rank 0 expects 16384"},
        {{3, 0, 2, 8192}, "local process count (nlocal) is 4, rank 0 expects 2"},
        {{1, 0, 4, 8192}, "owner rank is 3, rank 0 expects 1"},
        {{3, 0, 4, 1 << 20}, "btl_shm_fbox_size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        peer = NULL;
        int rc = 0;
        CAPTURE_STDERR(
            rc = px_btl_shm_segment_attach(path, seg_size, "jobA", 42, &bad[i].g, &peer, NULL));
        ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
        ck_assert_ptr_null(peer);
        ck_assert_msg(strstr(captured, bad[i].want), "case %zu: want '%s' in: %s", i, bad[i].want,
                      captured);
    }
    munmap(base, seg_size);
    unlink(path);
    /* A header that agrees but a file too small for the rings it claims. */
    ck_assert_int_eq(
        px_btl_shm_segment_create(dir, path, 65536, 65536, "jobA", 42, 0, 4, 65536, &base, NULL),
        PX_SUCCESS);
    px_btl_shm_geom_t big = {0, 1, 4, 65536};
    int rc = 0;
    CAPTURE_STDERR(rc = px_btl_shm_segment_attach(path, 65536, "jobA", 42, &big, &peer, NULL));
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_msg(strstr(captured, "size (too small for its rings) is 65536"), "%s", captured);
    munmap(base, 65536);
}
END_TEST

/* The modex entry: its length, index, pid, size and path are checked. */
START_TEST(modex_checked)
{
    px_btl_shm_modex_t mx, out;
    memset(&mx, 0, sizeof mx);
    mx.key = 1;
    mx.size = seg_size;
    mx.pid = 123;
    mx.local_index = 1;
    snprintf(mx.path, sizeof mx.path, "%s/seg-1", dir);
    ck_assert_ptr_null(px_btl_shm_modex_check(&mx, sizeof mx, 1, dir, &out));
    ck_assert_str_eq(out.path, mx.path);
    ck_assert_ptr_nonnull(px_btl_shm_modex_check(&mx, sizeof mx - 1, 1, dir, &out));
    ck_assert_ptr_nonnull(px_btl_shm_modex_check(NULL, sizeof mx, 1, dir, &out));
    ck_assert_ptr_nonnull(px_btl_shm_modex_check(&mx, sizeof mx, 2, dir, &out));
    px_btl_shm_modex_t m2 = mx;
    m2.pid = 0;
    ck_assert_ptr_nonnull(px_btl_shm_modex_check(&m2, sizeof m2, 1, dir, &out));
    m2 = mx;
    m2.size = 0;
    ck_assert_ptr_nonnull(px_btl_shm_modex_check(&m2, sizeof m2, 1, dir, &out));
    m2 = mx;
    m2.size = ~0ULL;
    ck_assert_ptr_nonnull(px_btl_shm_modex_check(&m2, sizeof m2, 1, dir, &out));
    const char *paths[] = {"/etc/passwd", "%s/../x", "%s/a/b", "%s/", "%s", "%sx/seg-1"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        m2 = mx;
        snprintf(m2.path, sizeof m2.path, paths[i], dir);
        ck_assert_msg(px_btl_shm_modex_check(&m2, sizeof m2, 1, dir, &out) != NULL,
                      "path %s accepted", m2.path);
    }
    m2 = mx;
    memset(m2.path, 'a', sizeof m2.path); /* no NUL */
    ck_assert_ptr_nonnull(px_btl_shm_modex_check(&m2, sizeof m2, 1, dir, &out));
}
END_TEST

/* A dynamic peer of another release (another connection-segment version:
 * version 1 wrote fast box entries in 64-byte lines) is unreachable by
 * btl/shm, not a malformed part, so another transport may connect it; a bad
 * magic number stays an error. */
START_TEST(dyn_part_version)
{
    px_btl_shm_dyn_part_t mine = {.magic = PX_BTL_SHM_DYN_MAGIC,
                                  .version = PX_BTL_SHM_DYN_VERSION,
                                  .uid = 1000,
                                  .pid = 42,
                                  .fd = 3,
                                  .ring = 1 << 16,
                                  .size = PX_BTL_SHM_DYN_RING_OFF + (1 << 16),
                                  .pidns = 7,
                                  .ipcns = 8},
                          theirs = mine, out;
    bool unreach = true;
    ck_assert_ptr_null(px_btl_shm_dyn_part_check(&theirs, sizeof theirs, &mine, &out, &unreach));
    theirs.version = PX_BTL_SHM_DYN_VERSION - 1;
    const char *why = px_btl_shm_dyn_part_check(&theirs, sizeof theirs, &mine, &out, &unreach);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(unreach, "an older release's part counted as malformed: %s", why);
    ck_assert_ptr_nonnull(strstr(why, "another Plexus release"));
    theirs = mine;
    theirs.magic ^= 1;
    ck_assert_ptr_nonnull(px_btl_shm_dyn_part_check(&theirs, sizeof theirs, &mine, &out, &unreach));
    ck_assert(!unreach);
}
END_TEST

/* The checks of what peers write into the rings and the queue, at their
 * bounds. */
START_TEST(entry_bounds)
{
    const size_t fbs = 4096;
    /* Entry sizes in 32-byte slots (PX_BTL_SHM_FB_SLOT). */
#define FBH(lead, slots, len)                                                                      \
    (PX_BTL_SHM_FB_VALID | ((uint64_t)(lead) << 48) | ((uint64_t)(slots) << 32) | (uint64_t)(len))
    ck_assert(px_btl_shm_fbox_entry_ok(FBH(0, 1, 24), 0, fbs)); /* an 8-byte message */
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(0, 1, 25), 0, fbs));
    ck_assert(px_btl_shm_fbox_entry_ok(FBH(0, 2, 56), 0, fbs));
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(0, 2, 57), 0, fbs));
    ck_assert(px_btl_shm_fbox_entry_ok(FBH(120, 6, 64), 0, fbs));
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(127, 6, 64), 0, fbs));
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(0, 1, 0xffffff), 0, fbs)); /* the SIGSEGV */
    ck_assert(px_btl_shm_fbox_entry_ok(FBH(0, 128, 100), 0, fbs));     /* the whole ring */
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(0, 128, 100), 32, fbs));   /* past its end */
    ck_assert(px_btl_shm_fbox_entry_ok(FBH(0, 1, 0), fbs - 32, fbs));
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(0, 2, 0), fbs - 32, fbs));
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(0, 0, 0), 0, fbs)); /* an empty entry: no progress */
    ck_assert(!px_btl_shm_fbox_entry_ok(FBH(0, 0xffff, 0), 0, fbs));
#undef FBH
    size_t sizes[3] = {1 << 20, 0, 65536};
    const size_t heap = 8192;
#define REL(i, off) (((uint64_t)(i) << 48) | (uint64_t)(off))
    ck_assert(px_btl_shm_rel_ok(REL(0, heap), 3, sizes, heap));
    ck_assert(px_btl_shm_rel_ok(REL(2, 65536 - 64), 3, sizes, heap));
    ck_assert(!px_btl_shm_rel_ok(REL(2, 65536), 3, sizes, heap));
    ck_assert(!px_btl_shm_rel_ok(REL(1, heap), 3, sizes, heap)); /* not mapped */
    ck_assert(!px_btl_shm_rel_ok(REL(3, heap), 3, sizes, heap)); /* no such process */
    ck_assert(!px_btl_shm_rel_ok(REL(0xffff, heap), 3, sizes, heap));
    ck_assert(!px_btl_shm_rel_ok(REL(0, heap - 64), 3, sizes, heap)); /* a ring, not the heap */
    ck_assert(!px_btl_shm_rel_ok(REL(0, heap + 8), 3, sizes, heap));  /* not a line */
    ck_assert(!px_btl_shm_rel_ok(PX_BTL_SHM_EMPTY, 3, sizes, heap));
#undef REL
    ck_assert(px_btl_shm_frag_ok(65536 - 128, 65536, 64, 64));
    ck_assert(!px_btl_shm_frag_ok(65536 - 128, 65536, 64, 65));
    ck_assert(!px_btl_shm_frag_ok(8192, 65536, 64, 0xffffffffu));
    ck_assert(!px_btl_shm_frag_ok(8192, 65536, 0, 8)); /* data over the header */
    ck_assert(!px_btl_shm_frag_ok(8192, 65536, 128, 8));
    ck_assert(px_btl_shm_frag_ok(8192, 65536, 127, 8));
}
END_TEST

/* A folder of this user's ended job beside the job's own (nobody holds its
 * flock) is removed when a job takes its folder; one a live process holds,
 * one open to others, another user's name pattern and a link are not, and
 * nothing behind a link is touched. */
START_TEST(ended_jobs_folders_reaped)
{
    char dead[192], live[192], open_[192], link_[192], target[192], other[192], f[256];
    unsigned me = (unsigned)getuid();
    snprintf(dead, sizeof dead, "%s/plexus-%u-dead", top, me);
    snprintf(live, sizeof live, "%s/plexus-%u-live", top, me);
    snprintf(open_, sizeof open_, "%s/plexus-%u-open", top, me);
    snprintf(link_, sizeof link_, "%s/plexus-%u-link", top, me);
    snprintf(other, sizeof other, "%s/plexus-%u-x", top, me + 1);
    snprintf(target, sizeof target, "%s/target", top);
    const char *dirs[] = {dead, live, open_, target, other};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(mkdir(dirs[i], 0700), 0);
        snprintf(f, sizeof f, "%s/seg-1", dirs[i]);
        int fd = open(f, O_CREAT | O_WRONLY, 0600);
        ck_assert_int_ge(fd, 0);
        close(fd);
    }
    ck_assert_int_eq(chmod(open_, 0755), 0);
    ck_assert_int_eq(symlink(target, link_), 0);
    /* A live job: a process holding its folder's shared flock. */
    int up[2], go[2];
    ck_assert_int_eq(pipe(up), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(live, O_RDONLY | O_DIRECTORY);
        char c = (fd >= 0 && flock(fd, LOCK_SH) == 0) ? 'y' : 'n';
        if (write(up[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
            _exit(3);
        _exit(0);
    }
    char c = 0;
    ck_assert_int_eq(read(up[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');

    ck_assert_int_eq(px_btl_shm_dir_ensure(dir), PX_SUCCESS);
    struct stat st;
    ck_assert_int_ne(lstat(dead, &st), 0); /* the ended job's folder is gone */
    ck_assert_int_eq(stat(live, &st), 0);
    ck_assert_int_eq(stat(open_, &st), 0);
    ck_assert_int_eq(lstat(link_, &st), 0);
    ck_assert_int_eq(stat(other, &st), 0);
    snprintf(f, sizeof f, "%s/seg-1", target);
    ck_assert_int_eq(stat(f, &st), 0);
    px_btl_shm_dir_release();

    ck_assert_int_eq(write(go[1], "x", 1), 1);
    int ws;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    const char *all[] = {live, open_, target, other};
    for (int i = 0; i < 4; i++) {
        snprintf(f, sizeof f, "%s/seg-1", all[i]);
        unlink(f);
        rmdir(all[i]);
    }
    unlink(link_);
    close(up[0]);
    close(up[1]);
    close(go[0]);
    close(go[1]);
}
END_TEST

/* A process that finds the job's folder made (by pxrun, or by the job's
 * first process on the host) leaves the reaping to its maker: it does not
 * scan the parent, so an ended job's folder stays. */
START_TEST(ended_jobs_left_to_the_maker)
{
    char dead[192], f[256];
    snprintf(dead, sizeof dead, "%s/plexus-%u-dead", top, (unsigned)getuid());
    ck_assert_int_eq(mkdir(dead, 0700), 0);
    snprintf(f, sizeof f, "%s/seg-1", dead);
    int fd = open(f, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(mkdir(dir, 0700), 0); /* made by another process */
    ck_assert_int_eq(px_btl_shm_dir_ensure(dir), PX_SUCCESS);
    struct stat st;
    ck_assert_int_eq(stat(f, &st), 0);
    px_btl_shm_dir_release();
    unlink(f);
    rmdir(dead);
}
END_TEST

PX_CHECK_MAIN("btl_shm_segment", setup, teardown, 0, create_modes_and_attach,
              other_job_cannot_attach, not_a_segment, open_folder_refused, exclusive_create,
              failed_create_removes_the_folder, liveness_lock, takeover_of_a_dead_owner,
              no_takeover_of_a_live_owner, auto_ring_size, long_job_ids, geometry_checked_at_attach,
              modex_checked, entry_bounds, dyn_part_version, ended_jobs_folders_reaped,
              ended_jobs_left_to_the_maker)
