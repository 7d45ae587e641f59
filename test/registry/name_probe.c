/*
 * name_probe: one process of test/registry/t_names.sh, through the public
 * API only (<plexus.h>, which includes plexus_name.h); each started
 * separately (px_init alone), meeting through a registry.
 *
 *   name_probe owner NAME SIZE SEED CTL
 *       publish a region of SIZE bytes filled from SEED under NAME, print
 *       "published", then progress until a file appears in folder CTL:
 *       "move" (publish a new region filled from SEED+1 under the same name,
 *       free the old one, print "moved"), "free" (px_xfer_free the region,
 *       print "freed"), "stop" (px_finalize, print "finalized", exit)
 *   name_probe read NAME SIZE SEED
 *       open NAME, read it whole and check the pattern: "read ok"
 *   name_probe watch NAME SIZE SEED TIMEOUT
 *       open and read as `read`, then px_name_watch(TIMEOUT): "watch: moved"
 *       (then read again, SEED+1: "read ok after move"), "watch: gone"
 *       (then one more read: "read after gone: <error>"), or another result
 *   name_probe open NAME
 *       px_name_open and print its result: "open: <px_strerror>"
 *   name_probe publish NAME
 *       publish a region of 4 KiB under NAME and print the result
 *   name_probe self NAME
 *       publish a region, open the name itself, read it: "self ok"
 *   name_probe unpublish NAME
 *       publish, unpublish, open: prints each result
 *   name_probe contact NAME CTL
 *       publish this process's contact under NAME, progress until CTL/stop
 *   name_probe connect NAME
 *       px_name_connect: "connect ok" when a peer id came back
 *   name_probe loaded NAME
 *       count the registry plugins mapped into this process after px_init
 *       ("after px_init: N registry plugin(s) loaded"), then px_name_open
 *       NAME and count again ("after px_name_open: N ...")
 *   name_probe churn PREFIX SIZE N DIR
 *       a long-running reader of writers that come and go: N times, start a
 *       writer (this program, "owner PREFIX/i SIZE i DIR/i", its output in
 *       DIR/owner-i.log), open and read PREFIX/i, and end the writer: killed
 *       (SIGKILL) when i is even, leaving (px_finalize) when odd; when i % 4
 *       < 2 the handle stays open while the writer ends, a read on it then
 *       fails ("read after end i: <error>") and it is closed after. Prints
 *       "round i: read ok, N descriptors" (this process's open descriptors
 *       after the writer ended and the handle was closed)
 *   name_probe failed NAME SIZE SEED
 *       open NAME and read it, then fail its owner by a timeout while it is
 *       alive (a 1 MiB send it never receives, with runtime_wait_timeout
 *       set): "send: timed out"; open NAME again while the first handle is
 *       open ("reopen: read ok", over a new connection), close the first
 *       ("closed the first"), open it once more ("third: read ok, same
 *       peer" when it reused the second connection)
 */
#include <plexus.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
}

static int exists(const char *dir, const char *f)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, f);
    struct stat st;
    if (stat(p, &st) != 0)
        return 0;
    unlink(p);
    return 1;
}

/* Registry plugins (plexus_registry_*.so) mapped into this process: the
 * distinct file names in /proc/self/maps. */
static int registry_plugins_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[4096], seen[16][256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "plexus_registry_");
        if (!p)
            continue;
        char file[256];
        snprintf(file, sizeof file, "%.*s", (int)strcspn(p, "\n"), p);
        int k = 0;
        while (k < n && strcmp(seen[k], file) != 0)
            k++;
        if (k == n && n < 16)
            snprintf(seen[n++], sizeof seen[0], "%s", file);
    }
    fclose(f);
    return n;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

/* Progress for `ms` milliseconds (a reader that keeps working). */
static void progress_for(int ms)
{
    for (int i = 0; i < ms; ++i) {
        px_progress();
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static bool file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

static void say(const char *fmt, const char *a, int rc)
{
    printf(fmt, a, px_strerror(rc));
    fflush(stdout);
}

/* Read the whole remote of h into a fresh region and compare with SEED's
 * pattern. */
static int read_check(px_name_t *h, size_t size, unsigned seed)
{
    px_xfer_remote_t *rm = px_name_remote(h);
    if (NULL == rm || px_xfer_remote_length(rm) != size) {
        printf("remote missing or of %zu bytes\n", rm ? px_xfer_remote_length(rm) : 0);
        return PX_ERR_BAD_PARAM;
    }
    px_xfer_region_t *mine;
    int rc = px_xfer_alloc(size, &mine);
    if (rc != PX_SUCCESS)
        return rc;
    rc = px_xfer_read(mine, 0, rm, 0, size);
    if (PX_SUCCESS == rc) {
        unsigned char *want = malloc(size);
        fill(want, size, seed);
        if (memcmp(want, px_xfer_region_base(mine), size) != 0)
            rc = PX_ERR_BAD_PARAM, printf("the bytes read differ from the pattern\n");
        free(want);
    } else {
        printf("read failed: %s: %s\n", px_strerror(rc), px_xfer_last_error());
    }
    px_xfer_free(&mine);
    return rc;
}

/* name_probe churn (above): one writer's round. */
static int churn_round(const char *exe, const char *prefix, size_t size, int i, const char *dir)
{
    char name[256], ctl[4096], log[4096], sz[32], seed[16];
    snprintf(name, sizeof name, "%s/%d", prefix, i);
    snprintf(ctl, sizeof ctl, "%s/%d", dir, i);
    snprintf(log, sizeof log, "%s/owner-%d.log", dir, i);
    snprintf(sz, sizeof sz, "%zu", size);
    snprintf(seed, sizeof seed, "%d", i);
    mkdir(ctl, 0700);
    char *args[] = {(char *)exe, "owner", name, sz, seed, ctl, NULL};
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (0 == pid) { /* only async-signal-safe calls until exec */
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0 && dup2(fd, 1) >= 0 && dup2(fd, 2) >= 0)
            execv(exe, args);
        _exit(127);
    }
    for (int t = 0; t < 60000 && !file_has(log, "published by pid"); t += 5)
        progress_for(5);
    px_name_t *h = NULL;
    int rc = px_name_open(name, &h);
    if (PX_SUCCESS == rc)
        rc = read_check(h, size, (unsigned)i);
    if (rc != PX_SUCCESS)
        printf("round %d: %s\n", i, px_strerror(rc));
    bool keep = i % 4 < 2;
    if (h && !keep)
        px_name_close(&h);
    if (i % 2 == 0) {
        kill(pid, SIGKILL);
    } else {
        char stop[4200];
        snprintf(stop, sizeof stop, "%s/stop", ctl);
        FILE *f = fopen(stop, "w");
        if (f)
            fclose(f);
    }
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0)
        progress_for(2);
    progress_for(20); /* the reader goes on working meanwhile */
    if (h) {
        int r2 = read_check(h, size, (unsigned)i);
        printf("read after end %d: %s\n", i, px_strerror(r2));
        px_name_close(&h);
    }
    if (PX_SUCCESS == rc)
        printf("round %d: read ok, %d descriptors\n", i, open_fds());
    fflush(stdout);
    return rc != PX_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: name_probe CMD NAME ...\n");
        return 2;
    }
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 3;
    const char *cmd = argv[1], *name = argv[2];
    size_t size = argc > 3 ? strtoull(argv[3], NULL, 0) : 4096;
    unsigned seed = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
    int rc = PX_SUCCESS, ret = 0;
    if (0 == strcmp(cmd, "owner") && argc > 5) {
        const char *ctl = argv[5];
        px_xfer_region_t *r;
        if ((rc = px_xfer_alloc(size, &r)) != PX_SUCCESS)
            return 4;
        fill(px_xfer_region_base(r), size, seed);
        rc = px_name_publish(name, r);
        say("publish %s: %s\n", name, rc);
        if (rc != PX_SUCCESS)
            return 5;
        printf("published by pid %ld\n", (long)getpid());
        fflush(stdout);
        for (;;) {
            px_progress();
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
            if (exists(ctl, "move")) {
                px_xfer_region_t *r2;
                px_xfer_alloc(size, &r2);
                fill(px_xfer_region_base(r2), size, seed + 1);
                rc = px_name_publish(name, r2);
                say("republish %s: %s\n", name, rc);
                if (r)
                    px_xfer_free(&r);
                r = r2;
                printf("moved\n");
                fflush(stdout);
            }
            if (exists(ctl, "free") && r) {
                rc = px_xfer_free(&r);
                say("free %s: %s\n", name, rc);
                printf("freed\n");
                fflush(stdout);
            }
            if (exists(ctl, "stop"))
                break;
        }
    } else if (0 == strcmp(cmd, "contact") && argc > 3) {
        const char *ctl = argv[3];
        rc = px_name_publish_contact(name);
        say("publish_contact %s: %s\n", name, rc);
        printf("published\n");
        fflush(stdout);
        while (!exists(ctl, "stop")) {
            px_progress();
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    } else if (0 == strcmp(cmd, "connect")) {
        int peer = -1;
        rc = px_name_connect(name, &peer);
        say("connect %s: %s\n", name, rc);
        if (PX_SUCCESS == rc && peer >= 0)
            printf("connect ok\n");
        ret = rc != PX_SUCCESS;
    } else if (0 == strcmp(cmd, "read") || 0 == strcmp(cmd, "watch")) {
        px_name_t *h;
        rc = px_name_open(name, &h);
        say("open %s: %s\n", name, rc);
        if (rc != PX_SUCCESS)
            return 6;
        rc = read_check(h, size, seed);
        if (PX_SUCCESS == rc)
            printf("read ok\n");
        fflush(stdout);
        if (0 == strcmp(cmd, "watch") && argc > 5) {
            rc = px_name_watch(h, atof(argv[5]));
            if (1 == rc) {
                printf("watch: moved\n");
                fflush(stdout);
                if (read_check(h, size, seed + 1) == PX_SUCCESS)
                    printf("read ok after move\n");
            } else if (PX_ERR_NOT_FOUND == rc) {
                printf("watch: gone\n");
                fflush(stdout);
                int r2 = read_check(h, size, seed);
                printf("read after gone: %s\n", px_strerror(r2));
            } else {
                printf("watch: %s\n", px_strerror(rc));
            }
            fflush(stdout);
        }
        px_name_close(&h);
    } else if (0 == strcmp(cmd, "open")) {
        px_name_t *h = NULL;
        rc = px_name_open(name, &h);
        say("open %s: %s\n", name, rc);
        if (h)
            px_name_close(&h);
    } else if (0 == strcmp(cmd, "loaded")) {
        printf("after px_init: %d registry plugin(s) loaded\n", registry_plugins_mapped());
        fflush(stdout);
        px_name_t *h = NULL;
        rc = px_name_open(name, &h);
        if (h)
            px_name_close(&h);
        printf("after px_name_open: %d registry plugin(s) loaded\n", registry_plugins_mapped());
        fflush(stdout);
        rc = PX_SUCCESS;
    } else if (0 == strcmp(cmd, "churn") && argc > 5) {
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return 7;
        exe[n] = 0;
        int rounds = atoi(argv[4]);
        printf("before: %d descriptors\n", open_fds());
        for (int i = 0; i < rounds; ++i)
            ret |= churn_round(exe, name, size, i, argv[5]);
    } else if (0 == strcmp(cmd, "failed")) {
        px_name_t *h = NULL, *h2 = NULL, *h3 = NULL;
        rc = px_name_open(name, &h);
        if (PX_SUCCESS == rc && read_check(h, size, seed) == PX_SUCCESS)
            printf("first: read ok\n");
        fflush(stdout);
        size_t big = 1 << 20;
        char *buf = calloc(1, big);
        if (PX_SUCCESS == rc) {
            int s = px_send(buf, big, px_name_peer(h), 77);
            printf("send: %s\n", PX_ERR_TIMEOUT == s ? "timed out" : px_strerror(s));
            fflush(stdout);
        }
        free(buf);
        int p1 = h ? px_name_peer(h) : -1;
        rc = px_name_open(name, &h2);
        if (PX_SUCCESS == rc && read_check(h2, size, seed) == PX_SUCCESS)
            printf("reopen: read ok, %s peer\n", px_name_peer(h2) == p1 ? "same" : "another");
        fflush(stdout);
        if (h)
            px_name_close(&h);
        printf("closed the first\n");
        fflush(stdout);
        rc = px_name_open(name, &h3);
        if (PX_SUCCESS == rc && read_check(h3, size, seed) == PX_SUCCESS)
            printf("third: read ok, %s peer\n",
                   h2 && px_name_peer(h3) == px_name_peer(h2) ? "same" : "another");
        fflush(stdout);
        if (h2)
            px_name_close(&h2);
        if (h3)
            px_name_close(&h3);
    } else if (0 == strcmp(cmd, "publish")) {
        px_xfer_region_t *r;
        px_xfer_alloc(4096, &r);
        rc = px_name_publish(name, r);
        say("publish %s: %s\n", name, rc);
    } else if (0 == strcmp(cmd, "self")) {
        px_xfer_region_t *r;
        px_xfer_alloc(size, &r);
        fill(px_xfer_region_base(r), size, seed);
        rc = px_name_publish(name, r);
        px_name_t *h = NULL;
        if (PX_SUCCESS == rc)
            rc = px_name_open(name, &h);
        if (PX_SUCCESS == rc && px_name_peer(h) == px_rank() && read_check(h, size, seed) == 0)
            printf("self ok\n");
        else
            say("self %s: %s\n", name, rc);
        if (h)
            px_name_close(&h);
    } else if (0 == strcmp(cmd, "unpublish")) {
        px_xfer_region_t *r;
        px_xfer_alloc(4096, &r);
        say("publish %s: %s\n", name, px_name_publish(name, r));
        say("unpublish %s: %s\n", name, px_name_unpublish(name));
        px_name_t *h = NULL;
        say("open after unpublish %s: %s\n", name, px_name_open(name, &h));
        say("unpublish again %s: %s\n", name, px_name_unpublish(name));
    } else {
        fprintf(stderr, "name_probe: unknown command %s\n", cmd);
        ret = 2;
    }
    rc = px_finalize();
    printf("finalized: %s\n", px_strerror(rc));
    return ret;
}
