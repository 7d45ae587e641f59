/*
 * fs.c: file-system helpers (fs.h).
 */
#define _XOPEN_SOURCE 700
#include "core/util/fs.h"
#include <ftw.h>
#include <stdio.h>

static int px_fs_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void px_fs_remove_tree(const char *dir)
{
    nftw(dir, px_fs_remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
