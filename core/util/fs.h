/*
 * fs.h: file-system helpers shared by the library and the tools that build
 * this file into themselves (pxrun, which does not link libplexus).
 * Internal: not installed, not exported.
 *
 * The job's folders live in shared places (/dev/shm, /tmp: world-writable,
 * sticky), where another local user may create any name that is free and
 * swap what is inside a folder it owns while we walk it. So nothing here
 * removes by a path of more than one component: a folder is opened once
 * (O_DIRECTORY | O_NOFOLLOW), checked (a folder, owned by this user, on the
 * file system it was found on), and everything below it is reached with
 * openat/unlinkat relative to descriptors opened that way; a name is only
 * removed after checking it still is what was opened (device and inode).
 */
#ifndef PX_UTIL_FS_H
#define PX_UTIL_FS_H

#include <stdbool.h>
#include <sys/stat.h>

/* Open the private folder `path` (mode 0700, owned by this user), making it
 * first when `create` and it is missing. The last component is not followed
 * when it is a symbolic link. Returns the descriptor (O_CLOEXEC) and its
 * stat in *st (may be NULL), or -1 with errno set: EPERM when the name is
 * not a folder, is another user's or is open to others (*made tells whether
 * this call made it; may be NULL). */
int px_fs_private_dir_open(const char *path, bool create, struct stat *st, bool *made);

/* Remove the folder `dir` and everything in it, however deep, when `dir`
 * (its last component not followed) is a folder owned by this user; another
 * user's folder, or anything but a folder, is left alone. Symbolic links
 * are removed, never followed; other file systems mounted inside and
 * entries owned by other users are not entered. Best effort: what cannot be
 * removed stays, silently (callers clean up on their way out and have no one
 * to tell). */
void px_fs_remove_tree(const char *dir);

/* Remove everything inside the folder open at `dirfd` (as above, relative to
 * the descriptor), then the name `path` itself, but only when `path` still
 * names that folder (same device and inode, not followed): a folder of the
 * same name that someone else made after ours was removed stays untouched.
 * `path` may be NULL (only empty the folder). Does not close `dirfd`. */
void px_fs_remove_tree_fd(int dirfd, const char *path);

/* Remove the folders of this user's ended jobs beside the job folder `dir`:
 * a folder named plexus-<uid>-* in the same parent, not `dir` itself, ours
 * and 0700, that nobody holds (every process of a job holds its folder with
 * a shared flock from its creation to its cleanup, and pxrun for the whole
 * job). A job whose processes were all SIGKILLed under a launcher that takes
 * no cleanup registration (Slurm's srun --kill-on-bad-exit) leaves its
 * folder; the next job of the user on the host removes it, in the process
 * that makes that job's folder (pxrun, or the shared-memory transport's first process on the
 * host). The exclusive flock taken here is what a creator's shared one
 * waits for, and the creator then sees the name gone and makes the folder
 * again, so a folder being made is never lost. Removal is through
 * descriptors (px_fs_remove_tree_fd), never by a path someone else could
 * swap. `removed` (may be NULL) hears each folder removed. */
void px_fs_reap_ended_jobs(const char *dir, void (*removed)(const char *path));

#endif
