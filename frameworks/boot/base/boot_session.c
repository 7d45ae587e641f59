/*
 * boot_session.c: the job's scratch folder on this node (px_boot_session_dir)
 * and each rank's folder inside it (px_boot_proc_session_dir).
 *
 * Where: when the boot module names a folder its launcher made and removes
 * at the end of the job (pxrun's session folder; under Slurm's srun
 * --mpi=pmix the step's folder PMIx gives as PMIX_NSDIR), "<that>/scratch";
 * otherwise (mpirun, singleton) "$TMPDIR/plexus-<uid>/job-<jobid>-<host>"
 * (TMPDIR unset or longer than 200 characters: /tmp), named from the job id
 * (the PMIx namespace under mpirun) and the host, so that ranks of one job on
 * one node share it, and nodes that share /tmp do not. Inside a Slurm job
 * (SLURM_JOB_ID set: mpirun in an allocation, srun --mpi=none) the name also
 * carries Slurm's job and step ids, "job-<jobid>-slurm<job>.<step>-<host>",
 * so that an epilog can find what a killed job left. Every folder is made
 * 0700 and checked to be this user's.
 *
 * Who removes it: each rank removes its own folder at finalize. For a folder
 * the base made, each rank that used it holds a shared flock on it while it
 * lives; at finalize a rank that can take the lock exclusively is the last
 * one left and removes the folder (and plexus-<uid> when it is empty). A rank
 * that opens the folder while another removes it waits for the lock, sees the
 * folder is gone, and makes it again. The launcher's folder is the
 * launcher's to remove.
 */
#define _XOPEN_SOURCE   700
#define _DEFAULT_SOURCE /* flock */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/util/fs.h"
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/boot/boot.h"

static char px_boot_top_dir[PATH_MAX];  /* plexus-<uid>, when the base made the folder */
static char px_boot_node_dir[PATH_MAX]; /* the job's folder on this node */
static char px_boot_proc_dir[PATH_MAX]; /* this rank's folder inside it */
static int px_boot_node_fd = -1;        /* holds the shared flock */
static bool px_boot_session_failed;     /* reported once */

/* mkdir 0700, or check that an existing one is a folder of ours that only we
 * can enter. */
static int private_dir(const char *path)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077)) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

/* A job id or host name as one path component: [A-Za-z0-9._-], others '_'. */
static void component_name(char *out, size_t len, const char *in)
{
    size_t i = 0;
    for (; in && in[i] && i + 1 < len; i++) {
        char c = in[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[i] = '\0';
    if (0 == i || 0 == strcmp(out, ".") || 0 == strcmp(out, ".."))
        snprintf(out, len, "unnamed");
}

/* Report (once) that `path`, which holds or is the scratch folder, cannot be
 * used: what failed, the error, the rank, where the place came from, and
 * what is accepted. */
static void session_fail(const char *where, const char *what, int err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", where); /* `where` may be px_boot_node_dir */
    px_boot_session_failed = true;
    px_boot_node_dir[0] = '\0';
    const char *tmp = getenv("TMPDIR");
    char from[300];
    if (!px_boot_top_dir[0])
        snprintf(from, sizeof from, "the launcher's session folder");
    else if (tmp && *tmp && strlen(tmp) <= 200)
        snprintf(from, sizeof from, "TMPDIR=%s", tmp);
    else
        snprintf(from, sizeof from, "/tmp (TMPDIR is %s)", tmp && *tmp ? "too long" : "not set");
    px_show_error("boot %s: rank %d has no scratch folder (px_boot_session_dir): cannot %s %s: %s "
                  "(the place comes from %s; each folder must be a directory owned by uid %u "
                  "with mode 0700; set TMPDIR to another place)",
                  px_boot && px_boot->name ? px_boot->name : "?", px_boot ? px_boot->rank : -1,
                  what, path, strerror(err), from, (unsigned)getuid());
}

/* Make (or find) the folder and take the shared lock; a folder removed by
 * its last user between our mkdir and our lock is made again. */
static int open_node_dir(void)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        /* plexus-<uid> is removed by the last job that leaves it: made
         * again when that happened between its mkdir and its open, or
         * before the job folder's mkdir (ENOENT). A TMPDIR that does not
         * exist gives ENOENT every time: the last attempt reports it. */
        bool again = attempt < 99;
        if (px_boot_top_dir[0] && private_dir(px_boot_top_dir) != 0) {
            if (ENOENT == errno && again)
                continue;
            session_fail(px_boot_top_dir, "use", errno);
            return -1;
        }
        if (private_dir(px_boot_node_dir) != 0) {
            if (ENOENT == errno && px_boot_top_dir[0] && again)
                continue;
            session_fail(px_boot_node_dir, "make", errno);
            return -1;
        }
        int fd = open(px_boot_node_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            if (ENOENT == errno)
                continue;
            session_fail(px_boot_node_dir, "open", errno);
            return -1;
        }
        int rc;
        do
            rc = flock(fd, LOCK_SH);
        while (rc != 0 && EINTR == errno);
        struct stat held, now;
        if (fstat(fd, &held) == 0 && held.st_nlink > 0 && stat(px_boot_node_dir, &now) == 0 &&
            held.st_ino == now.st_ino && held.st_dev == now.st_dev) {
            px_boot_node_fd = fd;
            return 0;
        }
        close(fd); /* removed by the last rank meanwhile: make it again */
    }
    session_fail(px_boot_node_dir, "keep", EAGAIN);
    return -1;
}

const char *px_boot_session_dir(void)
{
    if (NULL == px_boot || px_boot_session_failed)
        return NULL;
    if (px_boot_node_dir[0])
        return px_boot_node_dir;
    const char *launcher = px_boot->session_dir ? px_boot->session_dir() : NULL;
    int n;
    if (launcher && *launcher) {
        px_boot_top_dir[0] = '\0';
        n = snprintf(px_boot_node_dir, sizeof px_boot_node_dir, "%s/scratch", launcher);
    } else {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp || strlen(tmp) > 200)
            tmp = "/tmp";
        char job[128], host[128], slurm[100] = "";
        component_name(job, sizeof job, px_boot->jobid);
        component_name(host, sizeof host,
                       px_boot->hostname ? px_boot->hostname(px_boot->rank) : "");
        const char *sjob = getenv("SLURM_JOB_ID"), *sstep = getenv("SLURM_STEP_ID");
        if (sjob && *sjob) {
            char j[40], st[40];
            component_name(j, sizeof j, sjob);
            if (sstep && *sstep) {
                component_name(st, sizeof st, sstep);
                snprintf(slurm, sizeof slurm, "-slurm%s.%s", j, st);
            } else {
                snprintf(slurm, sizeof slurm, "-slurm%s", j);
            }
        }
        snprintf(px_boot_top_dir, sizeof px_boot_top_dir, "%s/plexus-%u", tmp, (unsigned)getuid());
        n = snprintf(px_boot_node_dir, sizeof px_boot_node_dir, "%s/job-%s%s-%s", px_boot_top_dir,
                     job, slurm, host);
    }
    if (n < 0 || (size_t)n >= sizeof px_boot_node_dir) {
        session_fail(launcher ? launcher : px_boot_top_dir, "name", ENAMETOOLONG);
        return NULL;
    }
    if (launcher && *launcher) {
        if (private_dir(px_boot_node_dir) != 0) {
            session_fail(px_boot_node_dir, "make", errno);
            return NULL;
        }
    } else if (open_node_dir() != 0) {
        return NULL;
    }
    PX_OUTPUT_VERBOSE(10, px_boot_base_framework.output, "boot: rank %d: job scratch folder %s",
                      px_boot->rank, px_boot_node_dir);
    return px_boot_node_dir;
}

const char *px_boot_proc_session_dir(void)
{
    if (px_boot_proc_dir[0])
        return px_boot_proc_dir;
    const char *node = px_boot_session_dir();
    if (NULL == node)
        return NULL;
    int n = snprintf(px_boot_proc_dir, sizeof px_boot_proc_dir, "%s/rank-%d", node, px_boot->rank);
    if (n < 0 || (size_t)n >= sizeof px_boot_proc_dir || private_dir(px_boot_proc_dir) != 0) {
        int err = n < 0 || (size_t)n >= sizeof px_boot_proc_dir ? ENAMETOOLONG : errno;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/rank-%d", node, px_boot->rank);
        px_boot_proc_dir[0] = '\0';
        session_fail(path, "make", err);
        return NULL;
    }
    return px_boot_proc_dir;
}

void px_boot_base_session_close(void)
{
    if (px_boot_proc_dir[0])
        px_fs_remove_tree(px_boot_proc_dir);
    if (px_boot_node_fd >= 0) {
        /* The last rank that used the folder removes it. */
        if (flock(px_boot_node_fd, LOCK_EX | LOCK_NB) == 0) {
            px_fs_remove_tree(px_boot_node_dir);
            if (px_boot_top_dir[0])
                rmdir(px_boot_top_dir); /* only when no other job uses it */
        }
        close(px_boot_node_fd);
        px_boot_node_fd = -1;
    }
    px_boot_proc_dir[0] = px_boot_node_dir[0] = px_boot_top_dir[0] = '\0';
    px_boot_session_failed = false;
}
