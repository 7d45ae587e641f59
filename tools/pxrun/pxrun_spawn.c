/*
 * pxrun_spawn.c: starting the ranks: checking that the program can run, the
 * ranks' environment (pxrun's own, -x, --mca as PX_CMDLINE_MCA_*, and the
 * PX_* variables boot/pxrun reads), and posix_spawn with each rank's pipes,
 * process group, signal dispositions and core binding.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/pxrun/pxrun.h"

extern char **environ;

/* Is `prog` runnable (as posix_spawnp would find it)? */
bool pxrun_find_program(const char *prog, char *why, size_t whylen)
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

void pxrun_spawn_all(void)
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
        pxrun_rank_t *r = &px.ranks[i];
        int po[2], pe[2], pi[2] = {-1, -1};
        if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC) || (i == 0 && pipe2(pi, O_CLOEXEC))) {
            fprintf(stderr, "pxrun: error: cannot create pipes for rank %d: %s\n", i,
                    strerror(errno));
            pxrun_fail(1, -1, "could not start every rank");
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
            pxrun_fail(PXRUN_EXIT_NOEXEC, -1, msg);
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
