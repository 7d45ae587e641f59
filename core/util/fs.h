/*
 * fs.h: file-system helpers shared by the library and the tools that build
 * this file into themselves (pxrun, which does not link libplexus).
 * Internal: not installed, not exported.
 */
#ifndef PX_UTIL_FS_H
#define PX_UTIL_FS_H

/* Remove the folder `dir` and everything in it, however deep. Symbolic links
 * are removed, not followed; other file systems mounted inside are not
 * entered. Best effort: what cannot be removed stays, silently (callers
 * clean up on their way out and have no one to tell). */
void px_fs_remove_tree(const char *dir);

#endif
