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
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "components/boot/pxrun/pxrun_proto.h"

extern char **environ;

#define PXRUN_MAX_RANKS    4096
#define PXRUN_LINE_MAX     65536
#define PXRUN_EXIT_USAGE   2
#define PXRUN_EXIT_NOEXEC  127
#define PXRUN_EXIT_TIMEOUT 124

/* ------------------------------------------------------------ state */

typedef struct linebuf {
    int fd; /* -1 once closed */
    char *data;
    size_t len;
} linebuf_t;

typedef struct kv {
    char *key;
    void *val;
    uint32_t len;
} kv_t;

typedef struct rank {
    pid_t pid;
    bool alive;
    int wstatus;
    linebuf_t out, err;
    int conn;        /* connection index after HELLO, or -1 */
    bool hello, bye; /* boot/pxrun said HELLO (px_init) / BYE (px_finalize) */
    bool fenced;
    kv_t *kv;
    size_t nkv, capkv;
} rank_t;

typedef struct conn {
    int fd;
    int rank;
    char *in;
    size_t inlen, incap;
    px_pxrun_buf_t out;
    size_t outoff;
    bool closing; /* close after the output is flushed */
} conn_t;

static struct {
    int n;
    char **argv;
    bool tag;
    int bind; /* -1 auto, 0 none, 1 core */
    double timeout;
    double grace;
    char **mca_names, **mca_values;
    int nmca;
    char **xvars;
    int nx;
    /* runtime */
    char jobid[64];
    char host[256];
    char topdir[PATH_MAX], sessdir[PATH_MAX], sockpath[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char shmdir[PATH_MAX];
    int lfd, sfd;
    rank_t *ranks;
    conn_t *conns;
    int nconns, capconns;
    int nalive;
    int nfenced;
    px_pxrun_buf_t round;
    uint32_t round_count;
    /* stdin forwarding */
    int stdin_fd; /* our 0, -1 when done */
    int rank0_in; /* write end to rank 0, -1 when closed */
    char inbuf[65536];
    size_t inlen, inoff;
    /* ending */
    bool ending;
    double kill_at;
    bool killed;
    int exit_code;
    bool have_failure;
    double start;
    double drain_deadline;
} px;

static double now(void)
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

/* Is `prog` runnable (as posix_spawnp would find it)? */
static bool find_program(const char *prog, char *why, size_t whylen)
{
    if (strchr(prog, '/')) {
        struct stat st;
        if (stat(prog, &st) != 0) {
            snprintf(why, whylen, "%s: %s", prog, strerror(errno));
            return false;
        }
        if (S_ISDIR(st.st_mode) || access(prog, X_OK) != 0) {
            snprintf(why, whylen, "%s: not an executable file", prog);
            return false;
        }
        return true;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char buf[PATH_MAX];
    for (const char *p = path;;) {
        const char *c = strchr(p, ':');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)l, l ? p : ".", prog);
        struct stat st;
        if (stat(buf, &st) == 0 && !S_ISDIR(st.st_mode) && access(buf, X_OK) == 0)
            return true;
        if (!c)
            break;
        p = c + 1;
    }
    snprintf(why, whylen, "%s: command not found in PATH (%s)", prog, path);
    return false;
}

/* ------------------------------------------------------------ cleanup */

static void rm_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && depth < 4)
                rm_tree(p, depth + 1);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static void cleanup_files(void)
{
    if (px.sockpath[0])
        unlink(px.sockpath);
    if (px.sessdir[0])
        rm_tree(px.sessdir, 0);
    if (px.topdir[0])
        rmdir(px.topdir); /* only when no other job uses it */
    if (px.shmdir[0])
        rm_tree(px.shmdir, 0);
}

/* ------------------------------------------------------------ setup */

static int make_private_dir(const char *path)
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
        r = (uint32_t)(now() * 1e9) ^ (uint32_t)getpid() * 2654435761u;
    snprintf(px.jobid, sizeof px.jobid, "%x-%08x", (unsigned)getpid(), r);
    if (gethostname(px.host, sizeof px.host - 1) != 0)
        strcpy(px.host, "localhost");
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(px.topdir, sizeof px.topdir, "%s/plexus-%u", tmp, (unsigned)getuid());
    if (make_private_dir(px.topdir) != 0) {
        fprintf(stderr,
                "pxrun: error: cannot use session folder %s: %s (it must be a directory owned by "
                "uid %u with mode 0700; set TMPDIR to use another place)\n",
                px.topdir, strerror(errno), (unsigned)getuid());
        px.topdir[0] = 0;
        exit(1);
    }
    if (snprintf(px.sessdir, sizeof px.sessdir, "%s/job-%s", px.topdir, px.jobid) >=
            (int)sizeof px.sockpath - 8 ||
        mkdir(px.sessdir, 0700) != 0) {
        fprintf(stderr, "pxrun: error: cannot create session folder %s: %s\n", px.sessdir,
                strerror(errno));
        px.sessdir[0] = 0;
        cleanup_files();
        exit(1);
    }
    if (snprintf(px.sockpath, sizeof px.sockpath, "%s/sock", px.sessdir) < 0)
        px.sockpath[0] = 0;
    if (snprintf(px.shmdir, sizeof px.shmdir, "%s/plexus-%u-%s", shm_backing_dir(),
                 (unsigned)getuid(), px.jobid) >= (int)sizeof px.shmdir ||
        mkdir(px.shmdir, 0700) != 0) {
        /* Not fatal: the shm component reports it if it needs the folder. */
        px.shmdir[0] = 0;
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

/* ------------------------------------------------------------ output */

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {fd, POLLOUT, 0};
                poll(&pf, 1, 1000);
                continue;
            }
            return; /* our stdout is gone; keep running */
        }
        p += w;
        n -= (size_t)w;
    }
}

static void emit(int rank, int outfd, const char *p, size_t n, bool add_nl)
{
    if (px.tag) {
        char tag[24];
        int tl = snprintf(tag, sizeof tag, "[%d] ", rank);
        char stackbuf[4096];
        size_t total = (size_t)tl + n + (add_nl ? 1 : 0);
        char *b = total <= sizeof stackbuf ? stackbuf : malloc(total);
        if (!b) {
            write_all(outfd, tag, (size_t)tl);
            write_all(outfd, p, n);
            if (add_nl)
                write_all(outfd, "\n", 1);
            return;
        }
        memcpy(b, tag, (size_t)tl);
        memcpy(b + tl, p, n);
        if (add_nl)
            b[total - 1] = '\n';
        write_all(outfd, b, total);
        if (b != stackbuf)
            free(b);
    } else {
        write_all(outfd, p, n);
    }
}

/* Read what is available; print whole lines (and an over-long partial one). */
static void pump_output(int rank, linebuf_t *lb, int outfd)
{
    char tmp[65536];
    ssize_t r = read(lb->fd, tmp, sizeof tmp);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0) { /* EOF or error: flush the partial line */
        if (lb->len)
            emit(rank, outfd, lb->data, lb->len, px.tag);
        lb->len = 0;
        close(lb->fd);
        lb->fd = -1;
        return;
    }
    if (!px.tag && lb->len == 0) {
        /* Untagged: pass whole lines straight through, keep the tail. */
        char *last = memrchr(tmp, '\n', (size_t)r);
        size_t whole = last ? (size_t)(last - tmp) + 1 : 0;
        if (whole)
            emit(rank, outfd, tmp, whole, false);
        if ((size_t)r > whole) {
            if (!lb->data)
                lb->data = malloc(PXRUN_LINE_MAX);
            memcpy(lb->data, tmp + whole, (size_t)r - whole);
            lb->len = (size_t)r - whole;
        }
        return;
    }
    if (!lb->data)
        lb->data = malloc(PXRUN_LINE_MAX);
    for (ssize_t i = 0; i < r;) {
        size_t take = (size_t)r - (size_t)i;
        if (take > PXRUN_LINE_MAX - lb->len)
            take = PXRUN_LINE_MAX - lb->len;
        memcpy(lb->data + lb->len, tmp + i, take);
        lb->len += take;
        i += (ssize_t)take;
        size_t start = 0;
        for (;;) {
            char *nl = memchr(lb->data + start, '\n', lb->len - start);
            if (!nl)
                break;
            size_t end = (size_t)(nl - lb->data) + 1;
            emit(rank, outfd, lb->data + start, end - start, false);
            start = end;
        }
        if (start == 0 && lb->len == PXRUN_LINE_MAX) { /* a very long line: emit a piece */
            emit(rank, outfd, lb->data, lb->len, px.tag);
            lb->len = 0;
        } else if (start) {
            memmove(lb->data, lb->data + start, lb->len - start);
            lb->len -= start;
        }
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
    px.kill_at = now() + px.grace;
}

static void describe_status(int ws, char *buf, size_t len)
{
    if (WIFSIGNALED(ws))
        snprintf(buf, len, "was killed by signal %d (%s)%s", WTERMSIG(ws), strsignal(WTERMSIG(ws)),
                 WCOREDUMP(ws) ? ", core dumped" : "");
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(ws));
}

static void check_fence_orphaned(void);
static void conn_read(int ci);
static void fail(int code, const char *what)
{
    if (!px.have_failure) {
        px.have_failure = true;
        px.exit_code = code;
        int others = alive_count();
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
            rank_t *r = &px.ranks[i];
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
                conn_read(r->conn);
            bool bad = WIFSIGNALED(ws) || WEXITSTATUS(ws) != 0;
            /* Started px_init, never px_finalize: its peers would wait for it. */
            bool nofin = WIFEXITED(ws) && r->hello && !r->bye;
            if ((bad || nofin) && !px.ending) {
                char d[128], msg[300];
                describe_status(ws, d, sizeof d);
                snprintf(msg, sizeof msg, "rank %d (pid %d) %s%s", i, (int)pid, d,
                         nofin ? " without calling px_finalize" : "");
                fail(WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : (bad ? WEXITSTATUS(ws) : 1), msg);
            }
            check_fence_orphaned();
            break;
        }
    }
}

/* ------------------------------------------------------------ modex service */

static void conn_close(int ci)
{
    conn_t *c = &px.conns[ci];
    if (c->fd < 0)
        return;
    close(c->fd);
    c->fd = -1;
    if (c->rank >= 0 && px.ranks[c->rank].conn == ci)
        px.ranks[c->rank].conn = -1;
    c->rank = -1;
    free(c->in);
    c->in = NULL;
    c->inlen = c->incap = 0;
    px_pxrun_buf_free(&c->out);
    c->outoff = 0;
}

static void conn_reject(int ci, const char *why)
{
    conn_t *c = &px.conns[ci];
    if (c->rank >= 0)
        fprintf(stderr, "pxrun: warning: closing rank %d's connection: %s\n", c->rank, why);
    else
        fprintf(stderr, "pxrun: warning: closing a connection: %s\n", why);
    conn_close(ci);
}

static void reply_status(conn_t *c, int32_t st)
{
    size_t at = px_pxrun_buf_begin(&c->out, PX_PXRUN_OP_REPLY);
    px_pxrun_buf_i32(&c->out, st);
    px_pxrun_buf_end(&c->out, at);
}

static kv_t *kv_find(rank_t *r, const char *key)
{
    for (size_t i = 0; i < r->nkv; i++)
        if (!strcmp(r->kv[i].key, key))
            return &r->kv[i];
    return NULL;
}

static int kv_put(rank_t *r, const char *key, const void *val, uint32_t len)
{
    kv_t *e = kv_find(r, key);
    if (!e) {
        if (r->nkv == r->capkv) {
            size_t cap = r->capkv ? r->capkv * 2 : 8;
            kv_t *n = realloc(r->kv, cap * sizeof *n);
            if (!n)
                return -1;
            r->kv = n;
            r->capkv = cap;
        }
        e = &r->kv[r->nkv++];
        e->key = strdup(key);
        e->val = NULL;
    }
    free(e->val);
    e->val = malloc(len ? len : 1);
    if (!e->key || !e->val)
        return -1;
    memcpy(e->val, val, len);
    e->len = len;
    return 0;
}

/* A fence that a rank which already exited can never join fails the job. */
static void check_fence_orphaned(void)
{
    if (px.nfenced == 0 || px.ending)
        return;
    for (int i = 0; i < px.n; i++)
        if (!px.ranks[i].alive && !px.ranks[i].fenced && px.ranks[i].pid > 0) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "rank %d exited while %d other rank%s waited for it in a fence", i, px.nfenced,
                     px.nfenced == 1 ? "" : "s");
            fail(1, msg);
            return;
        }
}

static void fence_complete(void)
{
    size_t at_hdr;
    for (int i = 0; i < px.nconns; i++) {
        conn_t *c = &px.conns[i];
        if (c->fd < 0 || c->rank < 0 || !px.ranks[c->rank].fenced)
            continue;
        at_hdr = px_pxrun_buf_begin(&c->out, PX_PXRUN_OP_REPLY);
        px_pxrun_buf_i32(&c->out, 0);
        px_pxrun_buf_u32(&c->out, px.round_count);
        px_pxrun_buf_put(&c->out, px.round.data, px.round.len);
        px_pxrun_buf_end(&c->out, at_hdr);
    }
    for (int i = 0; i < px.n; i++)
        px.ranks[i].fenced = false;
    px.nfenced = 0;
    px.round.len = 0;
    px.round_count = 0;
}

/* Handle one complete frame; returns -1 to drop the connection. */
static int handle_frame(int ci, uint32_t op, const char *payload, uint32_t len)
{
    conn_t *c = &px.conns[ci];
    px_pxrun_cursor_t cur = {payload, len, 0};
    if (op != PX_PXRUN_OP_HELLO && c->rank < 0) {
        conn_reject(ci, "request before HELLO");
        return -1;
    }
    switch (op) {
    case PX_PXRUN_OP_HELLO: {
        int32_t rank = px_pxrun_get_i32(&cur);
        int32_t pid = px_pxrun_get_i32(&cur);
        uint32_t proto = px_pxrun_get_u32(&cur);
        (void)pid;
        if (cur.bad || c->rank >= 0) {
            conn_reject(ci, cur.bad ? "short HELLO" : "second HELLO");
            return -1;
        }
        if (proto != PX_PXRUN_PROTO_VERSION || rank < 0 || rank >= px.n ||
            px.ranks[rank].conn >= 0 || !px.ranks[rank].alive) {
            reply_status(c, proto != PX_PXRUN_PROTO_VERSION ? -17 : -4);
            c->closing = true;
            return 0;
        }
        c->rank = rank;
        px.ranks[rank].conn = ci;
        px.ranks[rank].hello = true;
        px.ranks[rank].bye = false;
        size_t at = px_pxrun_buf_begin(&c->out, PX_PXRUN_OP_REPLY);
        px_pxrun_buf_i32(&c->out, 0);
        px_pxrun_buf_i32(&c->out, rank);
        px_pxrun_buf_i32(&c->out, px.n);
        px_pxrun_buf_str(&c->out, px.jobid);
        px_pxrun_buf_str(&c->out, px.host);
        for (int i = 0; i < px.n; i++)
            px_pxrun_buf_i32(&c->out, 0); /* one host: every rank on node 0 */
        px_pxrun_buf_end(&c->out, at);
        return 0;
    }
    case PX_PXRUN_OP_FENCE: {
        rank_t *r = &px.ranks[c->rank];
        if (r->fenced) {
            conn_reject(ci, "FENCE while already in a fence");
            return -1;
        }
        uint32_t n = px_pxrun_get_u32(&cur);
        for (uint32_t k = 0; k < n && !cur.bad; k++) {
            char key[PX_PXRUN_MAX_KEY];
            const void *val;
            px_pxrun_get_str(&cur, key, sizeof key);
            uint32_t vl = px_pxrun_get_bytes(&cur, &val);
            if (cur.bad)
                break;
            if (kv_put(r, key, val, vl) != 0) {
                conn_reject(ci, "out of memory");
                return -1;
            }
            px_pxrun_buf_i32(&px.round, c->rank);
            px_pxrun_buf_str(&px.round, key);
            px_pxrun_buf_bytes(&px.round, val, vl);
            px.round_count++;
        }
        if (cur.bad || cur.left) {
            conn_reject(ci, "malformed FENCE");
            return -1;
        }
        r->fenced = true;
        if (++px.nfenced == px.n)
            fence_complete();
        else
            check_fence_orphaned();
        return 0;
    }
    case PX_PXRUN_OP_GET: {
        int32_t rank = px_pxrun_get_i32(&cur);
        char key[PX_PXRUN_MAX_KEY];
        px_pxrun_get_str(&cur, key, sizeof key);
        if (cur.bad) {
            conn_reject(ci, "malformed GET");
            return -1;
        }
        kv_t *e = (rank >= 0 && rank < px.n) ? kv_find(&px.ranks[rank], key) : NULL;
        size_t at = px_pxrun_buf_begin(&c->out, PX_PXRUN_OP_REPLY);
        px_pxrun_buf_i32(&c->out, e ? 0 : (rank >= 0 && rank < px.n ? -5 : -4));
        px_pxrun_buf_bytes(&c->out, e ? e->val : "", e ? e->len : 0);
        px_pxrun_buf_end(&c->out, at);
        return 0;
    }
    case PX_PXRUN_OP_ABORT: {
        int32_t st = px_pxrun_get_i32(&cur);
        const void *msg;
        uint32_t ml = px_pxrun_get_bytes(&cur, &msg);
        char text[600];
        snprintf(text, sizeof text, "rank %d called abort with status %d%s%.*s", c->rank, st,
                 ml ? ": " : "", (int)(ml > 500 ? 500 : ml), cur.bad ? "" : (const char *)msg);
        fail(st > 0 && st < 256 ? st : 1, text);
        return 0;
    }
    case PX_PXRUN_OP_BYE:
        px.ranks[c->rank].bye = true;
        c->closing = true;
        return 0;
    default: {
        char why[64];
        snprintf(why, sizeof why, "unknown request %u", op);
        conn_reject(ci, why);
        return -1;
    }
    }
}

static void conn_read(int ci)
{
    conn_t *c = &px.conns[ci];
    for (;;) {
        if (c->incap - c->inlen < 65536) {
            size_t cap = c->incap ? c->incap * 2 : 65536;
            if (cap > PX_PXRUN_MAX_FRAME + 65536 + sizeof(px_pxrun_frame_hdr_t)) {
                conn_reject(ci, "frame too large");
                return;
            }
            char *n = realloc(c->in, cap);
            if (!n) {
                conn_reject(ci, "out of memory");
                return;
            }
            c->in = n;
            c->incap = cap;
        }
        ssize_t r = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            break;
        if (r <= 0) {
            conn_close(ci);
            return;
        }
        c->inlen += (size_t)r;
        if ((size_t)r < 65536)
            break;
    }
    size_t off = 0;
    while (c->fd >= 0 && c->inlen - off >= sizeof(px_pxrun_frame_hdr_t)) {
        px_pxrun_frame_hdr_t h;
        memcpy(&h, c->in + off, sizeof h);
        if (h.len > PX_PXRUN_MAX_FRAME) {
            conn_reject(ci, "frame too large");
            return;
        }
        if (c->inlen - off - sizeof h < h.len)
            break;
        const char *payload = c->in + off + sizeof h;
        off += sizeof h + h.len;
        if (handle_frame(ci, h.op, payload, h.len) < 0)
            return;
    }
    if (c->fd >= 0 && off) {
        memmove(c->in, c->in + off, c->inlen - off);
        c->inlen -= off;
    }
}

static void conn_write(int ci)
{
    conn_t *c = &px.conns[ci];
    if (c->out.oom) {
        conn_reject(ci, "out of memory");
        return;
    }
    while (c->outoff < c->out.len) {
        ssize_t w = send(c->fd, c->out.data + c->outoff, c->out.len - c->outoff, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return;
        if (w < 0) {
            conn_close(ci);
            return;
        }
        c->outoff += (size_t)w;
    }
    c->out.len = c->outoff = 0;
    if (c->closing)
        conn_close(ci);
}

static void accept_conns(void)
{
    for (;;) {
        int fd = accept4(px.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int ci = -1;
        for (int i = 0; i < px.nconns; i++)
            if (px.conns[i].fd < 0) {
                ci = i;
                break;
            }
        if (ci < 0) {
            if (px.nconns == px.capconns) {
                int cap = px.capconns ? px.capconns * 2 : 64;
                conn_t *n = realloc(px.conns, (size_t)cap * sizeof *n);
                if (!n) {
                    close(fd);
                    return;
                }
                px.conns = n;
                px.capconns = cap;
            }
            ci = px.nconns++;
        }
        memset(&px.conns[ci], 0, sizeof px.conns[ci]);
        px.conns[ci].fd = fd;
        px.conns[ci].rank = -1;
    }
}

/* ------------------------------------------------------------ spawning */

static char *env_pair(const char *name, const char *value)
{
    size_t l = strlen(name) + strlen(value) + 2;
    char *s = malloc(l);
    snprintf(s, l, "%s=%s", name, value);
    return s;
}

static bool env_is_ours(const char *e)
{
    static const char *const ours[] = {"PX_PXRUN_URI=",
                                       "PX_RANK=",
                                       "PX_SIZE=",
                                       "PX_JOBID=",
                                       "PX_LOCAL_RANK=",
                                       "PX_LOCAL_SIZE=",
                                       "PX_SESSION_DIR=",
                                       "PX_PXRUN_PID=",
                                       "PX_CMDLINE_MCA_",
                                       "PX_PXRUN_SHMDIR=",
                                       NULL};
    for (int i = 0; ours[i]; i++)
        if (!strncmp(e, ours[i], strlen(ours[i])))
            return true;
    return false;
}

static void spawn_all(void)
{
    size_t nenv = 0;
    while (environ[nenv])
        nenv++;
    char **env = calloc(nenv + (size_t)px.nmca + (size_t)px.nx + 16, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++) {
        if (env_is_ours(environ[i]))
            continue;
        bool replaced = false;
        for (int x = 0; x < px.nx; x++) {
            const char *eq = strchr(px.xvars[x], '=');
            size_t nl = eq ? (size_t)(eq - px.xvars[x]) : strlen(px.xvars[x]);
            if (!strncmp(environ[i], px.xvars[x], nl) && environ[i][nl] == '=')
                replaced = eq != NULL;
        }
        if (!replaced)
            env[k++] = environ[i];
    }
    for (int x = 0; x < px.nx; x++)
        if (strchr(px.xvars[x], '='))
            env[k++] = px.xvars[x];
    size_t first_pair = k;
    for (int m = 0; m < px.nmca; m++) {
        char name[300];
        snprintf(name, sizeof name, "PX_CMDLINE_MCA_%s", px.mca_names[m]);
        env[k++] = env_pair(name, px.mca_values[m]);
    }
    char num[32];
    env[k++] = env_pair(PX_PXRUN_URI_ENV, px.sockpath);
    snprintf(num, sizeof num, "%d", px.n);
    env[k++] = env_pair("PX_SIZE", num);
    env[k++] = env_pair("PX_LOCAL_SIZE", num);
    env[k++] = env_pair("PX_JOBID", px.jobid);
    env[k++] = env_pair("PX_SESSION_DIR", px.sessdir);
    if (px.shmdir[0]) /* for the ranks to remove should pxrun die (boot/pxrun) */
        env[k++] = env_pair("PX_PXRUN_SHMDIR", px.shmdir);
    snprintf(num, sizeof num, "%d", (int)getpid());
    env[k++] = env_pair("PX_PXRUN_PID", num);
    char rankvar[32], lrankvar[40];
    size_t rank_slot = k++, lrank_slot = k++;
    env[rank_slot] = rankvar;
    env[lrank_slot] = lrankvar;
    env[k] = NULL;

    sigset_t empty;
    sigemptyset(&empty);
    sigset_t def;
    sigemptyset(&def);
    int defsigs[] = {SIGPIPE, SIGTTIN, SIGTTOU, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT};
    for (size_t i = 0; i < sizeof defsigs / sizeof defsigs[0]; i++)
        sigaddset(&def, defsigs[i]);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_USEVFORK);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setpgroup(&attr, 0);

    /* Binding: pxrun pins itself to a core before each spawn (children inherit
     * the mask) and restores its own mask at the end. */
    cpu_set_t allowed, one;
    int cpus[CPU_SETSIZE], ncpus = 0;
    bool bind = false;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &allowed))
                cpus[ncpus++] = c;
        bind = px.bind == 1 || (px.bind == -1 && px.n <= ncpus);
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (int i = 0; i < px.n; i++) {
        rank_t *r = &px.ranks[i];
        int po[2], pe[2], pi[2] = {-1, -1};
        if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC) || (i == 0 && pipe2(pi, O_CLOEXEC))) {
            fprintf(stderr, "pxrun: error: cannot create pipes for rank %d: %s\n", i,
                    strerror(errno));
            fail(1, "could not start every rank");
            break;
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, i == 0 ? pi[0] : devnull, 0);
        posix_spawn_file_actions_adddup2(&fa, po[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
        snprintf(rankvar, sizeof rankvar, "PX_RANK=%d", i);
        snprintf(lrankvar, sizeof lrankvar, "PX_LOCAL_RANK=%d", i);
        if (bind && ncpus > 0) {
            CPU_ZERO(&one);
            CPU_SET(cpus[i % ncpus], &one);
            sched_setaffinity(0, sizeof one, &one);
        }
        pid_t pid;
        int rc = posix_spawnp(&pid, px.argv[0], &fa, &attr, px.argv, env);
        posix_spawn_file_actions_destroy(&fa);
        close(po[1]);
        close(pe[1]);
        if (i == 0)
            close(pi[0]);
        if (rc != 0) {
            close(po[0]);
            close(pe[0]);
            if (i == 0)
                close(pi[1]);
            char msg[PATH_MAX + 100];
            snprintf(msg, sizeof msg, "rank %d could not start %s: %s", i, px.argv[0],
                     strerror(rc));
            fail(PXRUN_EXIT_NOEXEC, msg);
            break;
        }
        r->pid = pid;
        r->alive = true;
        px.nalive++;
        r->out.fd = po[0];
        r->err.fd = pe[0];
        fcntl(po[0], F_SETFL, O_NONBLOCK);
        fcntl(pe[0], F_SETFL, O_NONBLOCK);
        if (i == 0) {
            px.rank0_in = pi[1];
            fcntl(pi[1], F_SETFL, O_NONBLOCK);
        }
    }
    if (bind && ncpus > 0)
        sched_setaffinity(0, sizeof allowed, &allowed);
    if (devnull >= 0)
        close(devnull);
    posix_spawnattr_destroy(&attr);
    for (size_t i = first_pair; i < k; i++)
        if (env[i] != rankvar && env[i] != lrankvar)
            free(env[i]);
    free(env);
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
            px.kill_at = now();
        }
    }
}

int main(int argc, char **argv)
{
    px.start = now();
    parse_args(argc, argv);
    char why[PATH_MAX + 200];
    if (!find_program(px.argv[0], why, sizeof why)) {
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

    setup_session();
    px.ranks = calloc((size_t)px.n, sizeof(rank_t));
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
    spawn_all();
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
        double t = now();
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
                accept_conns();
            } else if (w == -3) {
                ssize_t r = read(px.stdin_fd, px.inbuf, sizeof px.inbuf);
                if (r > 0) {
                    px.inlen = (size_t)r;
                    px.inoff = 0;
                } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                    px.stdin_fd = -1;
                    if (px.rank0_in >= 0) {
                        close(px.rank0_in);
                        px.rank0_in = -1;
                    }
                }
            } else if (w == -4) {
                ssize_t r = write(px.rank0_in, px.inbuf + px.inoff, px.inlen - px.inoff);
                if (r > 0) {
                    px.inoff += (size_t)r;
                    if (px.inoff == px.inlen)
                        px.inlen = px.inoff = 0;
                } else if (r < 0 && errno != EINTR && errno != EAGAIN) {
                    close(px.rank0_in);
                    px.rank0_in = -1;
                    px.stdin_fd = -1;
                }
            } else if (w >= 3000000) {
                int ci = w - 3000000;
                if (px.conns[ci].fd < 0)
                    continue;
                if (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
                    conn_read(ci);
                if (px.conns[ci].fd >= 0 && px.conns[ci].out.len > px.conns[ci].outoff)
                    conn_write(ci);
            } else if (w >= 2000000) {
                pump_output(w - 2000000, &px.ranks[w - 2000000].err, 2);
            } else if (w >= 1000000) {
                pump_output(w - 1000000, &px.ranks[w - 1000000].out, 1);
            }
        }
        /* Replies queued by a fence for connections polled earlier in this pass. */
        for (int i = 0; i < px.nconns; i++)
            if (px.conns[i].fd >= 0 && px.conns[i].out.len > px.conns[i].outoff)
                conn_write(i);
    }
    /* Leave nothing behind: late grandchildren of the ranks, then the files. */
    if (px.ending)
        for (int i = 0; i < px.n; i++)
            if (px.ranks[i].pid > 0)
                kill(-px.ranks[i].pid, SIGKILL);
    cleanup_files();
    for (int i = 0; i < px.n; i++) {
        rank_t *r = &px.ranks[i];
        for (size_t k = 0; k < r->nkv; k++) {
            free(r->kv[k].key);
            free(r->kv[k].val);
        }
        free(r->kv);
        free(r->out.data);
        free(r->err.data);
        if (r->out.fd >= 0)
            close(r->out.fd);
        if (r->err.fd >= 0)
            close(r->err.fd);
    }
    for (int i = 0; i < px.nconns; i++)
        conn_close(i);
    free(px.conns);
    free(px.ranks);
    free(pf);
    free(who);
    px_pxrun_buf_free(&px.round);
    free(px.mca_names);
    free(px.mca_values);
    free(px.xvars);
    return px.have_failure ? px.exit_code : 0;
}
