/*
 * fs_race: another local user racing a removal of a job's folder, for
 * test/util/t_fs_race.sh (run as nobody with setpriv), and the removal
 * routine itself (run as the job's user).
 *
 *   fs_race make TARGET VICTIM NSUB NFILES SECONDS
 *       make TARGET (mode 0755) with NSUB subfolders d<k> of NFILES files
 *       f<i> each, print "ready", then swap: a subfolder whose removal has
 *       begun (its size on tmpfs went down) is renamed away and replaced by
 *       a symbolic link to VICTIM (which holds files of the same names), so
 *       that a removal by path goes on in VICTIM. Ends after SECONDS or when
 *       TARGET is gone.
 *   fs_race watch DIR PREFIX VICTIM NSUB NFILES SECONDS WINDOW
 *       poll DIR every 200 us for names starting with PREFIX; when one seen
 *       before is gone within WINDOW seconds of its first sight (mid-job, not
 *       the job's end), make it again as above (prints "recreated NAME") and
 *       swap. Ends after SECONDS.
 *   fs_race remove PATH
 *       px_fs_remove_tree(PATH)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core/util/fs.h"

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int make_tree(const char *target, int nsub, int nfiles)
{
    if (strlen(target) > PATH_MAX - 64 || mkdir(target, 0755) != 0)
        return -1;
    char p[PATH_MAX + 64];
    for (int k = 0; k < nsub; k++) {
        snprintf(p, sizeof p, "%s/d%d", target, k);
        if (mkdir(p, 0755) != 0)
            return -1;
        for (int i = 0; i < nfiles; i++) {
            snprintf(p, sizeof p, "%s/d%d/f%d", target, k, i);
            int fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0644);
            if (fd < 0)
                return -1;
            close(fd);
        }
    }
    return 0;
}

/* Swap each subfolder for a link to victim as soon as its removal begins. */
static void swap_loop(const char *target, const char *victim, int nsub, double end)
{
    off_t *size0 = calloc((size_t)nsub, sizeof *size0);
    char *done = calloc((size_t)nsub, 1);
    char p[PATH_MAX + 64], q[PATH_MAX + 64];
    struct stat st;
    for (int k = 0; k < nsub; k++) {
        snprintf(p, sizeof p, "%s/d%d", target, k);
        size0[k] = stat(p, &st) == 0 ? st.st_size : 0;
    }
    int swapped = 0;
    while (mono() < end && swapped < nsub) {
        if (lstat(target, &st) != 0)
            break;
        for (int k = 0; k < nsub; k++) {
            if (done[k])
                continue;
            snprintf(p, sizeof p, "%s/d%d", target, k);
            if (lstat(p, &st) != 0) {
                done[k] = 1; /* removed whole */
                swapped++;
                continue;
            }
            if (S_ISDIR(st.st_mode) && st.st_size < size0[k]) {
                snprintf(q, sizeof q, "%s/old%d", target, k);
                if (rename(p, q) == 0 && symlink(victim, p) == 0)
                    printf("swapped d%d\n", k);
                done[k] = 1;
                swapped++;
            }
        }
    }
    fflush(stdout);
    free(size0);
    free(done);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "remove")) {
        px_fs_remove_tree(argv[2]);
        return 0;
    }
    if (argc == 7 && !strcmp(argv[1], "make")) {
        int nsub = atoi(argv[4]), nfiles = atoi(argv[5]);
        double end = mono() + atof(argv[6]);
        if (make_tree(argv[2], nsub, nfiles) != 0) {
            perror("fs_race: make");
            return 1;
        }
        printf("ready\n");
        swap_loop(argv[2], argv[3], nsub, end);
        return 0;
    }
    if (argc == 9 && !strcmp(argv[1], "watch")) {
        const char *dir = argv[2], *prefix = argv[3], *victim = argv[4];
        int nsub = atoi(argv[5]), nfiles = atoi(argv[6]);
        double end = mono() + atof(argv[7]), window = atof(argv[8]);
        char seen[64][NAME_MAX + 1];
        double first[64];
        int nseen = 0;
        printf("watching\n");
        while (mono() < end) {
            DIR *d = opendir(dir);
            if (!d)
                return 1;
            char present[64] = {0};
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
                    continue;
                int i = 0;
                while (i < nseen && strcmp(seen[i], e->d_name) != 0)
                    i++;
                if (i == nseen && nseen < 64) {
                    first[nseen] = mono();
                    snprintf(seen[nseen++], NAME_MAX + 1, "%s", e->d_name);
                }
                if (i < 64)
                    present[i] = 1;
            }
            closedir(d);
            for (int i = 0; i < nseen; i++) {
                if (present[i] || !seen[i][0] || mono() > first[i] + window)
                    continue;
                char target[PATH_MAX + NAME_MAX + 2];
                if (snprintf(target, sizeof target, "%s/%s", dir, seen[i]) >= (int)sizeof target)
                    continue;
                if (make_tree(target, nsub, nfiles) == 0) {
                    printf("recreated %s\n", seen[i]);
                    swap_loop(target, victim, nsub, end);
                    return 0;
                }
                seen[i][0] = '\0'; /* made again by someone else: not ours */
            }
            struct timespec ts = {0, 200 * 1000};
            nanosleep(&ts, NULL);
        }
        return 0;
    }
    fprintf(stderr, "usage: fs_race make TARGET VICTIM NSUB NFILES SECONDS | watch DIR PREFIX "
                    "VICTIM NSUB NFILES SECONDS WINDOW | remove PATH\n");
    return 2;
}
