/*
 * pxrun: the embedded single-host launcher.
 *
 *   pxrun -n N [--mca name value]... [-x VAR[=value]]... [--tag-output]
 *         [--timeout S] prog args...
 *
 * Starts N ranks with posix_spawn, serves their modex over a Unix socket in
 * a per-job session folder (protocol: components/boot/pxrun/pxrun_proto.h),
 * forwards stdin to rank 0 and the ranks' stdout/stderr (optionally tagged
 * "[rank] "), and ends the job when a rank fails, at the timeout, or on
 * SIGINT/SIGTERM/SIGHUP. Everything runs in one poll loop; no sleeps.
 * At the end it removes the session folder and the job's shared-memory
 * folder (<btl_shm_backing_dir>/plexus-<uid>-<jobid>).
 *
 * Exit status: 0 when every rank exited 0; otherwise the first failing
 * rank's exit code, or 128+signal when a signal ended it; 124 at --timeout;
 * 128+signal when pxrun itself was interrupted; 2 for a usage error; 127
 * when the program cannot be run.
 *
 * This file: the options, the session folder, the poll loop and job control.
 * The modex service is in pxrun_server.c, stdin/stdout/stderr forwarding in
 * pxrun_io.c, the ranks' environment and spawning in pxrun_spawn.c; the job
 * state they share is in pxrun.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "config.h"
#include "tools/pxrun/pxrun.h"

pxrun_job_t px;

static double pxrun_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pxrun: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nUsage: pxrun -n N [--mca NAME VALUE]... [-x VAR[=VALUE]]... [--tag-output] "
          "[--timeout SECONDS] PROGRAM [ARGS...]\n(see pxrun --help)\n",
          stderr);
    va_end(ap);
    exit(PXRUN_EXIT_USAGE);
}

static void usage(void)
{
    puts("Usage: pxrun -n N [options] PROGRAM [ARGS...]\n"
         "Start N ranks of PROGRAM on this host and serve their modex.\n\n"
         "  -n, -np, --np N        number of ranks (1.."
         "4096)\n"
         "  --mca NAME VALUE       set MCA variable NAME for every rank (source \"command line\")\n"
         "  -x VAR[=VALUE]         export VAR (from pxrun's environment, or VALUE) to the ranks\n"
         "  --tag-output           prefix every output line with \"[rank] \"\n"
         "  --timeout SECONDS      end the job after SECONDS (exit status 124)\n"
         "  --bind-to core|none    pin rank i to the i-th allowed core (default: core when\n"
         "                         N <= allowed cores, else none)\n"
         "  -h, --help             this text\n"
         "  --version              print the version\n\n"
         "Exit status: 0 when every rank exits 0; else the first failing rank's code, or\n"
         "128+signal; 124 at the timeout; 2 on a usage error; 127 when PROGRAM cannot run.\n"
         "Environment: PX_PXRUN_GRACE (seconds between SIGTERM and SIGKILL, default 1).");
    exit(0);
}

static bool valid_name(const char *s)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return !(s[0] >= '0' && s[0] <= '9');
}

static double parse_seconds(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d > 0) || d > 1e7)
        die_usage("%s '%s': expected a positive number of seconds (e.g. 30 or 2.5)", opt, v);
    return d;
}

static void parse_args(int argc, char **argv)
{
    px.n = -1;
    px.bind = -1;
    px.timeout = 0;
    px.mca_names = calloc((size_t)argc, sizeof(char *));
    px.mca_values = calloc((size_t)argc, sizeof(char *));
    px.xvars = calloc((size_t)argc, sizeof(char *));
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-')
            break;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            usage();
        if (!strcmp(a, "--version")) {
            printf("pxrun (Plexus) %s\n", PACKAGE_VERSION);
            exit(0);
        }
        if (!strcmp(a, "-n") || !strcmp(a, "-np") || !strcmp(a, "--np") || !strcmp(a, "--n") ||
            !strncmp(a, "-n=", 3) || !strncmp(a, "--np=", 5)) {
            const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v)
                die_usage("%s needs a number of ranks", a);
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (errno || end == v || *end || n < 1 || n > PXRUN_MAX_RANKS)
                die_usage("-n '%s': expected a number of ranks from 1 to %d", v, PXRUN_MAX_RANKS);
            px.n = (int)n;
        } else if (!strcmp(a, "--mca") || !strcmp(a, "-mca")) {
            if (i + 2 >= argc)
                die_usage("--mca needs a name and a value: --mca NAME VALUE (got %s)",
                          i + 1 < argc ? "only a name" : "nothing");
            const char *name = argv[i + 1], *value = argv[i + 2];
            if (strchr(name, '='))
                die_usage("--mca '%s': malformed; write --mca NAME VALUE (a space, not '=')", name);
            if (!valid_name(name))
                die_usage("--mca '%s': malformed variable name; names use letters, digits and "
                          "'_' (e.g. btl_shm_eager_limit)",
                          name);
            if (!strncmp(name, "PX_MCA_", 7))
                die_usage("--mca '%s': give the variable's name without the PX_MCA_ prefix", name);
            px.mca_names[px.nmca] = (char *)name;
            px.mca_values[px.nmca++] = (char *)value;
            i += 2;
        } else if (!strcmp(a, "-x")) {
            if (i + 1 >= argc)
                die_usage("-x needs a variable: -x VAR or -x VAR=VALUE");
            const char *v = argv[++i];
            const char *eq = strchr(v, '=');
            size_t nl = eq ? (size_t)(eq - v) : strlen(v);
            char name[256];
            if (nl == 0 || nl >= sizeof name)
                die_usage("-x '%s': malformed; expected VAR or VAR=VALUE", v);
            memcpy(name, v, nl);
            name[nl] = 0;
            if (!valid_name(name))
                die_usage("-x '%s': '%s' is not a valid environment variable name", v, name);
            if (!eq && !getenv(name))
                die_usage("-x %s: %s is not set in pxrun's environment; use -x %s=VALUE", v, v, v);
            px.xvars[px.nx++] = (char *)v;
        } else if (!strcmp(a, "--bind-to")) {
            if (i + 1 >= argc)
                die_usage("--bind-to needs core or none");
            const char *v = argv[++i];
            if (!strcmp(v, "core"))
                px.bind = 1;
            else if (!strcmp(v, "none"))
                px.bind = 0;
            else
                die_usage("--bind-to '%s': expected core or none", v);
        } else if (!strcmp(a, "--tag-output")) {
            px.tag = true;
        } else if (!strcmp(a, "--timeout")) {
            if (i + 1 >= argc)
                die_usage("--timeout needs a number of seconds");
            px.timeout = parse_seconds("--timeout", argv[++i]);
        } else if (!strncmp(a, "--timeout=", 10)) {
            px.timeout = parse_seconds("--timeout", a + 10);
        } else {
            die_usage("unknown option '%s'", a);
        }
    }
    if (px.n < 0)
        die_usage("missing -n N (the number of ranks)");
    if (i >= argc)
        die_usage("missing the program to run");
    px.argv = argv + i;
    const char *g = getenv("PX_PXRUN_GRACE");
    px.grace = g ? parse_seconds("PX_PXRUN_GRACE", g) : 1.0;
}

/* ------------------------------------------------------------ cleanup */

static void cleanup_files(void)
{
    /* Through the descriptors held since creation: only what pxrun made is
     * removed, and a name is removed only while it still is that folder. */
    if (px.sockpath[0] && px.sessfd >= 0)
        unlinkat(px.sessfd, "sock", 0);
    if (px.sessdir[0] && px.sessfd >= 0)
        px_fs_remove_tree_fd(px.sessfd, px.sessdir);
    if (px.topdir[0])
        rmdir(px.topdir); /* only when no other job uses it */
    if (px.shmdir[0] && px.shmfd >= 0)
        px_fs_remove_tree_fd(px.shmfd, px.shmdir);
    if (px.sessfd >= 0)
        close(px.sessfd);
    if (px.shmfd >= 0)
        close(px.shmfd);
    px.sessfd = px.shmfd = -1;
}

/* ------------------------------------------------------------ setup */

static int make_private_dir(const char *path)
{
    int fd = px_fs_private_dir_open(path, true, NULL, NULL);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static const char *shm_backing_dir(void)
{
    for (int i = 0; i < px.nmca; i++)
        if (!strcmp(px.mca_names[i], "btl_shm_backing_dir"))
            return px.mca_values[i];
    const char *e = getenv("PX_MCA_btl_shm_backing_dir");
    return e && *e ? e : "/dev/shm";
}

static void setup_session(void)
{
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r)
        r = (uint32_t)(pxrun_now() * 1e9) ^ (uint32_t)getpid() * 2654435761u;
    snprintf(px.jobid, sizeof px.jobid, "%x-%08x", (unsigned)getpid(), r);
    if (gethostname(px.host, sizeof px.host - 1) != 0)
        strcpy(px.host, "localhost");
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(px.topdir, sizeof px.topdir, "%s/plexus-%u", tmp, (unsigned)getuid());
    bool made = false;
    bool too_long = snprintf(px.sessdir, sizeof px.sessdir, "%s/job-%s", px.topdir, px.jobid) >=
                    (int)sizeof px.sockpath - 8;
    /* Another job that ends removes plexus-<uid> when it holds no job
     * folder: removed between its mkdir and its open, or before our job
     * folder's mkdir (ENOENT), it is made again. */
    for (int attempt = 0; !too_long && attempt < 100; attempt++) {
        if (make_private_dir(px.topdir) != 0) {
            if (ENOENT == errno && attempt < 99)
                continue; /* removed between its mkdir and its open */
            fprintf(stderr,
                    "pxrun: error: cannot use session folder %s: %s (it must be a directory owned "
                    "by uid %u with mode 0700; set TMPDIR to use another place)\n",
                    px.topdir, strerror(errno), (unsigned)getuid());
            px.topdir[0] = 0;
            exit(1);
        }
        px.sessfd = px_fs_private_dir_open(px.sessdir, true, NULL, &made);
        if (px.sessfd >= 0 || errno != ENOENT)
            break;
    }
    if (too_long || px.sessfd < 0 || !made) {
        if (too_long)
            errno = ENAMETOOLONG;
        else if (px.sessfd >= 0 || errno == EPERM)
            errno = EEXIST; /* not ours to use: a job folder is always new */
        if (px.sessfd >= 0)
            close(px.sessfd);
        px.sessfd = -1;
        fprintf(stderr, "pxrun: error: cannot create session folder %s: %s\n", px.sessdir,
                strerror(errno));
        px.sessdir[0] = 0;
        cleanup_files();
        exit(1);
    }
    if (snprintf(px.sockpath, sizeof px.sockpath, "%s/sock", px.sessdir) < 0)
        px.sockpath[0] = 0;
    /* The job's shm folder: made here, held open (with a shared flock, so
     * that no rank takes it for the last user and removes it while the job
     * runs) and removed through that descriptor at the end. A name that
     * exists already is not pxrun's to remove. */
    struct stat held, now;
    if (snprintf(px.shmdir, sizeof px.shmdir, "%s/plexus-%u-%s", shm_backing_dir(),
                 (unsigned)getuid(), px.jobid) >= (int)sizeof px.shmdir ||
        (px.shmfd = px_fs_private_dir_open(px.shmdir, true, &held, &made)) < 0 || !made ||
        flock(px.shmfd, LOCK_SH) != 0 ||
        /* Still ours by that name: another job's start removes a folder
         * nobody holds (btl/shm), which it was between mkdir and flock. */
        lstat(px.shmdir, &now) != 0 || now.st_dev != held.st_dev || now.st_ino != held.st_ino) {
        /* Not fatal: the shm component reports it if it needs the folder. */
        if (px.shmfd >= 0 && made)
            px_fs_remove_tree_fd(px.shmfd, px.shmdir); /* made, but not lockable */
        if (px.shmfd >= 0)
            close(px.shmfd);
        px.shmfd = -1;
        px.shmdir[0] = 0;
    } else {
        /* Once per job here rather than in each rank (btl/shm reaps only in
         * the process that makes the folder). */
        px_fs_reap_ended_jobs(px.shmdir, NULL);
    }

    px.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, px.sockpath);
    if (px.lfd < 0 || bind(px.lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(px.lfd, 4096) != 0) {
        fprintf(stderr, "pxrun: error: cannot listen on %s: %s\n", px.sockpath, strerror(errno));
        cleanup_files();
        exit(1);
    }
}

/* ------------------------------------------------------------ ending the job */

static int alive_count(void)
{
    int c = 0;
    for (int i = 0; i < px.n; i++)
        c += px.ranks[i].alive;
    return c;
}

static void signal_all(int sig)
{
    for (int i = 0; i < px.n; i++)
        if (px.ranks[i].alive) {
            kill(-px.ranks[i].pid, sig); /* its process group: the rank and its children */
            kill(px.ranks[i].pid, sig);
        }
}

static void begin_ending(void)
{
    if (px.ending)
        return;
    px.ending = true;
    signal_all(SIGTERM);
    px.kill_at = pxrun_now() + px.grace;
}

static void describe_status(int ws, char *buf, size_t len)
{
    if (WIFSIGNALED(ws))
        snprintf(buf, len, "was killed by signal %d (%s)%s", WTERMSIG(ws), strsignal(WTERMSIG(ws)),
                 WCOREDUMP(ws) ? ", core dumped" : "");
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(ws));
}

void pxrun_fail(int code, int culprit, const char *what)
{
    if (!px.have_failure) {
        px.have_failure = true;
        px.exit_code = code;
        int others = alive_count();
        if (culprit >= 0 && culprit < px.n && px.ranks[culprit].alive)
            others--;
        if (others)
            fprintf(stderr, "pxrun: %s; ending the other %d rank%s\n", what, others,
                    others == 1 ? "" : "s");
        else
            fprintf(stderr, "pxrun: %s\n", what);
    }
    begin_ending();
}

static void reap(void)
{
    for (;;) {
        int ws;
        pid_t pid = waitpid(-1, &ws, WNOHANG);
        if (pid <= 0)
            return;
        for (int i = 0; i < px.n; i++) {
            pxrun_rank_t *r = &px.ranks[i];
            if (r->pid != pid || !r->alive)
                continue;
            r->alive = false;
            r->wstatus = ws;
            px.nalive--;
            if (i == 0 && px.rank0_in >= 0) {
                close(px.rank0_in);
                px.rank0_in = -1;
            }
            /* Its last frames (BYE) may still wait in the socket: read them first. */
            if (r->conn >= 0)
                pxrun_conn_read(r->conn);
            bool bad = WIFSIGNALED(ws) || WEXITSTATUS(ws) != 0;
            /* Started px_init, never px_finalize: its peers would wait for it. */
            bool nofin = WIFEXITED(ws) && r->hello && !r->bye;
            if ((bad || nofin) && !px.ending) {
                char d[128], msg[300];
                describe_status(ws, d, sizeof d);
                snprintf(msg, sizeof msg, "rank %d (pid %d) %s%s", i, (int)pid, d,
                         nofin ? " without calling px_finalize" : "");
                pxrun_fail(WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : (bad ? WEXITSTATUS(ws) : 1), -1,
                           msg);
            }
            pxrun_check_fence_orphaned();
            break;
        }
    }
}

/* ------------------------------------------------------------ main loop */

static void handle_signals(void)
{
    struct signalfd_siginfo si;
    while (read(px.sfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            reap();
        } else if (!px.have_failure) {
            px.have_failure = true;
            px.exit_code = 128 + sig;
            fprintf(stderr, "pxrun: received signal %d (%s); ending %d rank%s\n", sig,
                    strsignal(sig), alive_count(), alive_count() == 1 ? "" : "s");
            begin_ending();
        } else if (px.ending && !px.killed) {
            /* A second interrupt: do not wait for the grace period. */
            px.kill_at = pxrun_now();
        }
    }
}

int main(int argc, char **argv)
{
    px.start = pxrun_now();
    parse_args(argc, argv);
    char why[PATH_MAX + 200];
    if (!pxrun_find_program(px.argv[0], why, sizeof why)) {
        fprintf(stderr, "pxrun: error: cannot run the program: %s\n", why);
        return PXRUN_EXIT_NOEXEC;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    /* A shell starts background jobs with SIGINT ignored; pxrun still wants
     * it (blocked below, read from the signalfd) to end the job cleanly. */
    signal(SIGINT, SIG_DFL);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    px.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);

    px.sessfd = px.shmfd = -1;
    setup_session();
    px.ranks = calloc((size_t)px.n, sizeof(pxrun_rank_t));
    for (int i = 0; i < px.n; i++) {
        px.ranks[i].out.fd = px.ranks[i].err.fd = -1;
        px.ranks[i].conn = -1;
    }
    px.stdin_fd = 0;
    px.rank0_in = -1;
    {
        int fl = fcntl(0, F_GETFL);
        if (fl < 0)
            px.stdin_fd = -1;
    }
    pxrun_spawn_all();
    if (px.rank0_in < 0)
        px.stdin_fd = -1;
    double deadline = px.timeout > 0 ? px.start + px.timeout : 0;

    size_t cap = 8 + (size_t)px.n * 2 + 16;
    struct pollfd *pf = NULL;
    int *who = NULL; /* encodes what each pollfd is */
    size_t pfcap = 0;
    for (;;) {
        /* Done when no rank is alive and every output pipe is closed (or the
         * drain deadline after the last exit passed). */
        bool outputs_open = false;
        for (int i = 0; i < px.n; i++)
            if (px.ranks[i].out.fd >= 0 || px.ranks[i].err.fd >= 0)
                outputs_open = true;
        if (px.nalive == 0 && !outputs_open)
            break;
        double t = pxrun_now();
        if (px.nalive == 0 && px.drain_deadline == 0)
            px.drain_deadline = t + 1.0;
        if (px.drain_deadline && t >= px.drain_deadline)
            break;
        if (deadline && t >= deadline && !px.ending) {
            char msg[160];
            snprintf(msg, sizeof msg, "timeout: the job was still running after %g s (--timeout)",
                     px.timeout);
            if (!px.have_failure) {
                px.have_failure = true;
                px.exit_code = PXRUN_EXIT_TIMEOUT;
                fprintf(stderr, "pxrun: %s; ending %d rank%s\n", msg, alive_count(),
                        alive_count() == 1 ? "" : "s");
            }
            begin_ending();
        }
        if (px.ending && !px.killed && t >= px.kill_at) {
            px.killed = true;
            if (alive_count())
                fprintf(stderr, "pxrun: %d rank%s still running after SIGTERM; sending SIGKILL\n",
                        alive_count(), alive_count() == 1 ? "" : "s");
            signal_all(SIGKILL);
        }
        /* Build the poll set. */
        size_t need = cap + (size_t)px.nconns;
        if (need > pfcap) {
            pfcap = need * 2;
            pf = realloc(pf, pfcap * sizeof *pf);
            who = realloc(who, pfcap * sizeof *who);
        }
        size_t np = 0;
        pf[np] = (struct pollfd){px.sfd, POLLIN, 0};
        who[np++] = -1;
        pf[np] = (struct pollfd){px.lfd, POLLIN, 0};
        who[np++] = -2;
        if (px.stdin_fd >= 0 && px.rank0_in >= 0 && px.inlen == 0) {
            pf[np] = (struct pollfd){px.stdin_fd, POLLIN, 0};
            who[np++] = -3;
        }
        if (px.rank0_in >= 0 && px.inlen > 0) {
            pf[np] = (struct pollfd){px.rank0_in, POLLOUT, 0};
            who[np++] = -4;
        }
        for (int i = 0; i < px.n; i++) {
            if (px.ranks[i].out.fd >= 0) {
                pf[np] = (struct pollfd){px.ranks[i].out.fd, POLLIN, 0};
                who[np++] = 1000000 + i;
            }
            if (px.ranks[i].err.fd >= 0) {
                pf[np] = (struct pollfd){px.ranks[i].err.fd, POLLIN, 0};
                who[np++] = 2000000 + i;
            }
        }
        for (int i = 0; i < px.nconns; i++)
            if (px.conns[i].fd >= 0) {
                short ev = POLLIN;
                if (px.conns[i].out.len > px.conns[i].outoff)
                    ev |= POLLOUT;
                pf[np] = (struct pollfd){px.conns[i].fd, ev, 0};
                who[np++] = 3000000 + i;
            }
        double wake = 1e18;
        if (deadline && !px.ending)
            wake = deadline;
        if (px.ending && !px.killed)
            wake = wake < px.kill_at ? wake : px.kill_at;
        if (px.drain_deadline)
            wake = wake < px.drain_deadline ? wake : px.drain_deadline;
        int tmo = -1;
        if (wake < 1e17) {
            double ms = (wake - t) * 1000.0 + 1;
            tmo = ms < 0 ? 0 : (ms > 1e9 ? 1000000000 : (int)ms);
        }
        int rc = poll(pf, np, tmo);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc <= 0)
            continue;
        for (size_t i = 0; i < np; i++) {
            if (!pf[i].revents)
                continue;
            int w = who[i];
            if (w == -1) {
                handle_signals();
            } else if (w == -2) {
                pxrun_accept_conns();
            } else if (w == -3) {
                pxrun_stdin_read();
            } else if (w == -4) {
                pxrun_stdin_write();
            } else if (w >= 3000000) {
                int ci = w - 3000000;
                if (px.conns[ci].fd < 0)
                    continue;
                if (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
                    pxrun_conn_read(ci);
                if (px.conns[ci].fd >= 0 && px.conns[ci].out.len > px.conns[ci].outoff)
                    pxrun_conn_write(ci);
            } else if (w >= 2000000) {
                pxrun_pump_output(w - 2000000, &px.ranks[w - 2000000].err, 2);
            } else if (w >= 1000000) {
                pxrun_pump_output(w - 1000000, &px.ranks[w - 1000000].out, 1);
            }
        }
        /* Replies queued by a fence for connections polled earlier in this pass. */
        for (int i = 0; i < px.nconns; i++)
            if (px.conns[i].fd >= 0 && px.conns[i].out.len > px.conns[i].outoff)
                pxrun_conn_write(i);
    }
    /* Leave nothing behind: late grandchildren of the ranks, then the files. */
    if (px.ending)
        for (int i = 0; i < px.n; i++)
            if (px.ranks[i].pid > 0)
                kill(-px.ranks[i].pid, SIGKILL);
    cleanup_files();
    pxrun_server_release();
    for (int i = 0; i < px.n; i++) {
        pxrun_rank_t *r = &px.ranks[i];
        free(r->out.data);
        free(r->err.data);
        if (r->out.fd >= 0)
            close(r->out.fd);
        if (r->err.fd >= 0)
            close(r->err.fd);
    }
    free(px.ranks);
    free(pf);
    free(who);
    free(px.mca_names);
    free(px.mca_values);
    free(px.xvars);
    return px.have_failure ? px.exit_code : 0;
}
