/*
 * session_dir_test.c: who removes the job's scratch folder when the base made
 * it (boot/pmix, boot/singleton): two ranks of one job on one node (forked
 * processes with a stand-in boot module) share the folder; the first to
 * finalize removes only its own rank folder, the last removes the job's
 * folder and plexus-<uid>; a rank that comes after that makes it again; a
 * plexus-<uid> that others can enter is refused.
 */
#include "test/lib/px_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "frameworks/boot/boot.h"

static char tmpdir[256], jobid[64];

static const char *fake_host(int rank)
{
    (void)rank;
    return "node/one"; /* a '/' must not make a sub-folder */
}

static px_boot_module_t fake = {.name = "fake", .rank = 0, .size = 2, .hostname = fake_host};

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/px_session_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    setenv("TMPDIR", tmpdir, 1);
    snprintf(jobid, sizeof jobid, "test/%d", (int)getpid());
    fake.jobid = jobid;
    px_boot = &fake;
}

static void teardown(void)
{
    px_boot = NULL;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* A forked rank: opens both folders, reports, waits for the byte on `go`,
 * finalizes, and exits 0 when its checks passed. */
static pid_t rank_proc(int rank, int ready_w, int go_r)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    fake.rank = rank;
    const char *node = px_boot_session_dir();
    const char *proc = px_boot_proc_session_dir();
    char c = node && proc ? 'y' : 'n';
    if (write(ready_w, &c, 1) != 1 || read(go_r, &c, 1) != 1)
        _exit(3);
    px_boot_base_session_close();
    _exit(0);
}

START_TEST(last_rank_removes_the_folder)
{
    int ready[2], go0[2], go1[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go0), 0);
    ck_assert_int_eq(pipe(go1), 0);
    pid_t p0 = rank_proc(0, ready[1], go0[0]);
    pid_t p1 = rank_proc(1, ready[1], go1[0]);
    char c[2];
    ck_assert_int_eq(read(ready[0], &c[0], 1), 1);
    ck_assert_int_eq(read(ready[0], &c[1], 1), 1);
    ck_assert(c[0] == 'y' && c[1] == 'y');

    char top[300], node[400], r0[450], r1[450];
    snprintf(top, sizeof top, "%s/plexus-%u", tmpdir, (unsigned)getuid());
    snprintf(node, sizeof node, "%s/job-test_%d-node_one", top, (int)getpid());
    snprintf(r0, sizeof r0, "%s/rank-0", node);
    snprintf(r1, sizeof r1, "%s/rank-1", node);
    struct stat st;
    ck_assert_int_eq(stat(node, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    ck_assert(exists(r0) && exists(r1));

    /* Rank 1 finalizes first: its folder goes, the job's stays. */
    int status;
    ck_assert_int_eq(write(go1[1], "x", 1), 1);
    ck_assert_int_eq(waitpid(p1, &status, 0), p1);
    ck_assert(WIFEXITED(status) && 0 == WEXITSTATUS(status));
    ck_assert(!exists(r1));
    ck_assert(exists(r0));
    ck_assert(exists(node));

    /* Rank 0 is the last: everything goes, plexus-<uid> too. */
    ck_assert_int_eq(write(go0[1], "x", 1), 1);
    ck_assert_int_eq(waitpid(p0, &status, 0), p0);
    ck_assert(WIFEXITED(status) && 0 == WEXITSTATUS(status));
    ck_assert(!exists(node));
    ck_assert(!exists(top));

    /* A rank that starts after that makes the folder again, and removes it. */
    fake.rank = 1;
    const char *again = px_boot_session_dir();
    ck_assert_ptr_nonnull(again);
    ck_assert_str_eq(again, node);
    ck_assert(exists(node));
    px_boot_base_session_close();
    ck_assert(!exists(node));
}
END_TEST

START_TEST(open_top_folder_is_refused)
{
    char top[300];
    snprintf(top, sizeof top, "%s/plexus-%u", tmpdir, (unsigned)getuid());
    ck_assert_int_eq(mkdir(top, 0755), 0);
    ck_assert_int_eq(chmod(top, 0755), 0);
    ck_assert_ptr_null(px_boot_session_dir());
    ck_assert_ptr_null(px_boot_proc_session_dir());
    px_boot_base_session_close();
    ck_assert(exists(top)); /* not ours to remove */
}
END_TEST

static char launcher[300];
static const char *launcher_dir(void)
{
    return launcher;
}

START_TEST(launcher_folder_is_used_and_left)
{
    /* A module whose launcher made a folder (pxrun): the job's folder is
     * "<it>/scratch", and finalize leaves it to the launcher (the rank's
     * folder goes). */
    snprintf(launcher, sizeof launcher, "%s/launcher", tmpdir);
    ck_assert_int_eq(mkdir(launcher, 0700), 0);
    fake.session_dir = launcher_dir;
    char node[400], proc[450];
    snprintf(node, sizeof node, "%s/scratch", launcher);
    snprintf(proc, sizeof proc, "%s/rank-0", node);
    ck_assert_str_eq(px_boot_session_dir(), node);
    ck_assert_str_eq(px_boot_proc_session_dir(), proc);
    px_boot_base_session_close();
    fake.session_dir = NULL;
    ck_assert(!exists(proc));
    ck_assert(exists(node));
}
END_TEST

PX_CHECK_MAIN("session_dir", setup, teardown, 0, last_rank_removes_the_folder,
              open_top_folder_is_refused, launcher_folder_is_used_and_left)
