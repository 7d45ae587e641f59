/*
 * session_probe.c: the job's scratch folder (px_boot_session_dir) and the
 * rank's folder (px_boot_proc_session_dir), for test/runtime/t_session_dir.sh.
 * Each rank prints
 *   rank R node DIR mode MODE
 *   rank R proc DIR mode MODE
 * writes "shared-R" in the job's folder and a file in its own, and after a
 * barrier prints "rank R sees N shared" (the shared-* files it finds: one per
 * rank on this node). After px_finalize it prints "rank R after: proc gone"
 * or "proc kept". Exit 2 when px_init fails, 1 on a failed check.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "frameworks/boot/boot.h"
#include "runtime/plexus.h"

static int put_file(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "%s\n", name);
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 2;
    int rank = px_rank();
    const char *node = px_boot_session_dir();
    const char *proc = px_boot_proc_session_dir();
    if (!node || !proc) {
        printf("rank %d: no scratch folder\n", rank);
        return 1;
    }
    if (px_boot_session_dir() != node) {
        printf("rank %d: a second call returned another folder\n", rank);
        return 1;
    }
    char procpath[4096], name[64];
    snprintf(procpath, sizeof procpath, "%s", proc);
    struct stat st;
    if (stat(node, &st) != 0 || !S_ISDIR(st.st_mode))
        return 1;
    printf("rank %d node %s mode %o\n", rank, node, (unsigned)(st.st_mode & 07777));
    if (stat(proc, &st) != 0 || !S_ISDIR(st.st_mode))
        return 1;
    printf("rank %d proc %s mode %o\n", rank, proc, (unsigned)(st.st_mode & 07777));
    snprintf(name, sizeof name, "shared-%d", rank);
    if (put_file(node, name) != 0 || put_file(proc, "mine") != 0)
        return 1;
    if (px_barrier() != PX_SUCCESS)
        return 1;
    int seen = 0;
    DIR *d = opendir(node);
    for (struct dirent *e; d && (e = readdir(d));)
        seen += 0 == strncmp(e->d_name, "shared-", 7);
    if (d)
        closedir(d);
    printf("rank %d sees %d shared\n", rank, seen);
    fflush(stdout);
    if (px_finalize() != PX_SUCCESS)
        return 1;
    printf("rank %d after: proc %s\n", rank, access(procpath, F_OK) == 0 ? "kept" : "gone");
    return 0;
}
