/*
 * pxrun_module.c: the boot module under pxrun. One blocking connection to
 * the launcher; every wait is bounded by boot_pxrun_timeout. Puts are kept
 * here until commit, sent with the next fence; the fence's reply carries
 * everything every rank put, so a get after a fence is a local lookup
 * (a GET request only for keys the cache does not hold).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "core/util/fs.h"
#include "components/boot/pxrun/pxrun.h"
#include "components/boot/pxrun/pxrun_proto.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/proc.h"

typedef struct entry {
    struct entry *next;
    int rank;
    char *key;
    size_t len;
    unsigned char data[];
} entry_t;

static int fd = -1;
static char jobid[256]; /* a PMIx namespace may be 255 characters; so may this */
static char host[256];
static int *nodes;         /* node index per rank */
static entry_t *pending;   /* put, not committed */
static entry_t *committed; /* committed, sent at the next fence */
static entry_t *cache;     /* everything learned from fences and gets */

/* Launcher watch: a thread sleeps in poll() on the launcher socket (for a
 * hang-up only) and on a pipe that stops it at finalize. Each rank holds a
 * shared flock on the session folder; the rank that finds it can take it
 * exclusively after the launcher died is the last one and removes the job's
 * files. */
static pthread_t watcher;
static bool watching;
static int stop_pipe[2] = {-1, -1};
static int sess_fd = -1;

static void list_free(entry_t **l)
{
    while (*l) {
        entry_t *e = *l;
        *l = e->next;
        free(e->key);
        free(e);
    }
}

static entry_t *entry_new(int rank, const char *key, const void *data, size_t len)
{
    entry_t *e = malloc(sizeof(*e) + len);
    if (!e)
        return NULL;
    e->key = strdup(key);
    if (!e->key) {
        free(e);
        return NULL;
    }
    e->rank = rank;
    e->len = len;
    if (len)
        memcpy(e->data, data, len);
    e->next = NULL;
    return e;
}

/* Put (replacing) into a list. */
static int list_put(entry_t **l, entry_t *n)
{
    for (entry_t **p = l; *p; p = &(*p)->next)
        if ((*p)->rank == n->rank && !strcmp((*p)->key, n->key)) {
            entry_t *old = *p;
            n->next = old->next;
            *p = n;
            free(old->key);
            free(old);
            return PX_SUCCESS;
        }
    n->next = *l;
    *l = n;
    return PX_SUCCESS;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int send_all(const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return PX_ERR_PEER_FAILED;
        c += w;
        n -= (size_t)w;
    }
    return PX_SUCCESS;
}

static int recv_all(void *p, size_t n, double deadline)
{
    char *c = p;
    while (n) {
        double left = deadline - now();
        if (left <= 0)
            return PX_ERR_TIMEOUT;
        struct pollfd pf = {fd, POLLIN, 0};
        int rc = poll(&pf, 1, (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0)
            continue;
        ssize_t r = recv(fd, c, n, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return PX_ERR_PEER_FAILED;
        c += r;
        n -= (size_t)r;
    }
    return PX_SUCCESS;
}

/* Send one frame and read the reply's payload (caller frees *reply). */
static int transact(const px_pxrun_buf_t *req, char **reply, size_t *rlen, const char *what)
{
    if (fd < 0)
        return PX_ERR_NOT_INITIALIZED;
    if (req->oom)
        return PX_ERR_OUT_OF_RESOURCE;
    int rc = send_all(req->data, req->len);
    px_pxrun_frame_hdr_t h;
    if (rc == PX_SUCCESS)
        rc = recv_all(&h, sizeof h, now() + px_boot_pxrun_timeout);
    if (rc == PX_SUCCESS && (h.op != PX_PXRUN_OP_REPLY || h.len > PX_PXRUN_MAX_FRAME))
        rc = PX_ERR_COMM;
    char *buf = NULL;
    if (rc == PX_SUCCESS) {
        buf = malloc(h.len ? h.len : 1);
        rc = buf ? recv_all(buf, h.len, now() + px_boot_pxrun_timeout) : PX_ERR_OUT_OF_RESOURCE;
    }
    if (rc != PX_SUCCESS) {
        free(buf);
        px_show_error("boot/pxrun: %s: no valid answer from pxrun over %s: %s%s", what,
                      getenv(PX_PXRUN_URI_ENV), px_strerror(rc),
                      rc == PX_ERR_TIMEOUT ? " (variable boot_pxrun_timeout)" : "");
        return rc;
    }
    *reply = buf;
    *rlen = h.len;
    return PX_SUCCESS;
}

static void say(const char *msg)
{
    size_t n = strlen(msg);
    while (n) {
        ssize_t w = write(2, msg, n);
        if (w <= 0)
            return; /* stderr went with the launcher */
        msg += w;
        n -= (size_t)w;
    }
}

/* The launcher is gone: nobody will clean up after the job. The rank that
 * can take the session folder's flock exclusively is the last one and
 * removes the job's files: the socket, the session folder (the scratch
 * folder inside it) and the shm folder, each only when it is a folder of
 * this user (px_fs_remove_tree). Returns whether this rank did. The lock is
 * kept until the process ends, so no later rank repeats it. */
static bool remove_files_if_last(void)
{
    const char *sess = getenv("PX_SESSION_DIR"), *shm = getenv("PX_PXRUN_SHMDIR");
    const char *uri = getenv(PX_PXRUN_URI_ENV);
    bool last = false;
    if (sess_fd >= 0) {
        flock(sess_fd, LOCK_UN);
        last = flock(sess_fd, LOCK_EX | LOCK_NB) == 0;
    }
    if (!last)
        return false;
    if (uri && sess && *sess && !strncmp(uri, sess, strlen(sess)) && uri[strlen(sess)] == '/' &&
        !strchr(uri + strlen(sess) + 1, '/'))
        unlinkat(sess_fd, uri + strlen(sess) + 1, 0);
    if (shm && *shm)
        px_fs_remove_tree(shm);
    if (sess && *sess) {
        px_fs_remove_tree_fd(sess_fd, sess);
        char top[4096];
        snprintf(top, sizeof top, "%s", sess);
        char *slash = strrchr(top, '/');
        if (slash) {
            *slash = '\0';
            rmdir(top); /* plexus-<uid>, when no other job uses it */
        }
    }
    return true;
}

/* The launcher's end of the socket hung up (pxrun died). */
static bool launcher_hung_up(void)
{
    if (fd < 0)
        return false;
    struct pollfd pf = {fd, POLLRDHUP, 0};
    return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The launcher is gone: nobody will end this rank or clean up after the job.
 * Called by the watcher thread, or at exit when the application returns
 * without px_finalize (its main thread may see a peer's failure before the
 * watcher sees the hang-up, and exit would end the watcher mid-message or
 * before it took the lock). gone_lock makes the two one: whichever comes
 * second waits until the first _exits the process. */
static pthread_mutex_t gone_lock = PTHREAD_MUTEX_INITIALIZER;

static void launcher_gone(void)
{
    pthread_mutex_lock(&gone_lock); /* never released: _exit follows */
    signal(SIGPIPE, SIG_IGN);       /* our stdout/stderr were pipes to pxrun */
    const char *uri = getenv(PX_PXRUN_URI_ENV), *ppid = getenv("PX_PXRUN_PID");
    bool last = remove_files_if_last(); /* held until _exit */
    char msg[1024];
    snprintf(msg, sizeof msg,
             "plexus: rank %d: the launcher pxrun (pid %s) died: its socket %s hung up; exiting "
             "with status 1%s\n",
             px_boot_pxrun_module.rank, ppid ? ppid : "?", uri ? uri : "?",
             last ? " (the last rank: removed the job's files)" : "");
    say(msg);
    _exit(1);
}

static void *watch_launcher(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd pf[2] = {{fd, POLLRDHUP, 0}, {stop_pipe[0], POLLIN, 0}};
        int rc = poll(pf, 2, -1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0 || (pf[1].revents & (POLLIN | POLLHUP)))
            return NULL; /* finalize */
        if (pf[0].revents & (POLLRDHUP | POLLHUP | POLLERR))
            launcher_gone();
    }
}

/* At exit without px_finalize (the socket still open): if the launcher died,
 * say so and clean up as the watcher would. */
static void exit_check(void)
{
    if (fd >= 0 && launcher_hung_up())
        launcher_gone();
}

static void watch_start(void)
{
    static bool exit_hooked;
    if (!exit_hooked)
        exit_hooked = atexit(exit_check) == 0;
    const char *sess = getenv("PX_SESSION_DIR");
    if (sess && *sess) {
        sess_fd = open(sess, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sess_fd >= 0 && flock(sess_fd, LOCK_SH) != 0) {
            close(sess_fd);
            sess_fd = -1;
        }
    }
    /* PX_BOOT_PXRUN_TEST_NO_WATCH: the test suite's stand-in for a main
     * thread that sees the launcher's hang-up (in a fence of px_init) before
     * the watcher does. */
    const char *nowatch = getenv("PX_BOOT_PXRUN_TEST_NO_WATCH");
    if (nowatch && *nowatch == '1')
        return;
    if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
        stop_pipe[0] = stop_pipe[1] = -1;
        return;
    }
    /* The thread takes no signals: they stay with the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    watching = pthread_create(&watcher, NULL, watch_launcher, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!watching)
        px_show_warning("boot/pxrun: cannot start the thread that watches the launcher: this "
                        "rank will not notice if pxrun dies");
}

static void watch_stop(void)
{
    if (watching) {
        /* Signals wait from before the thread is told to stop until it is
         * joined (microseconds: it returns as soon as it sees the pipe). A
         * library's handler that ends the process with exit() (libfabric
         * installs such handlers for SIGTERM and others) would otherwise
         * leave the thread finished but unjoined, had the signal come
         * between the write and the join. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        ssize_t w;
        do
            w = write(stop_pipe[1], "x", 1);
        while (w < 0 && errno == EINTR);
        pthread_join(watcher, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        watching = false;
    }
    for (int i = 0; i < 2; i++)
        if (stop_pipe[i] >= 0) {
            close(stop_pipe[i]);
            stop_pipe[i] = -1;
        }
}

static int pxrun_init(void)
{
    const char *uri = getenv(PX_PXRUN_URI_ENV), *rs = getenv("PX_RANK");
    char *end = NULL;
    long rank = rs ? strtol(rs, &end, 10) : -1;
    if (!uri || !rs || *end || rank < 0) {
        px_show_error("boot/pxrun: the environment from pxrun is incomplete (%s=%s, PX_RANK=%s); "
                      "start the program with pxrun -n N",
                      PX_PXRUN_URI_ENV, uri ? uri : "(unset)", rs ? rs : "(unset)");
        return PX_ERR_BAD_PARAM;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(uri) >= sizeof sa.sun_path) {
        px_show_error("boot/pxrun: %s=%s is longer than a socket path may be", PX_PXRUN_URI_ENV,
                      uri);
        return PX_ERR_BAD_PARAM;
    }
    strcpy(sa.sun_path, uri);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        px_show_error("boot/pxrun: cannot connect to pxrun at %s (%s=%s): %s", uri,
                      PX_PXRUN_URI_ENV, uri, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
        return PX_ERR_PEER_FAILED;
    }
    px_pxrun_buf_t b = {0};
    size_t at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_HELLO);
    px_pxrun_buf_i32(&b, (int32_t)rank);
    px_pxrun_buf_i32(&b, (int32_t)getpid());
    px_pxrun_buf_u32(&b, PX_PXRUN_PROTO_VERSION);
    px_pxrun_buf_end(&b, at);
    char *r;
    size_t rl;
    int rc = transact(&b, &r, &rl, "hello");
    px_pxrun_buf_free(&b);
    if (rc != PX_SUCCESS)
        return rc;
    px_pxrun_cursor_t c = {r, rl, 0};
    int32_t st = px_pxrun_get_i32(&c);
    int32_t myrank = px_pxrun_get_i32(&c), size = px_pxrun_get_i32(&c);
    px_pxrun_get_str(&c, jobid, sizeof jobid);
    px_pxrun_get_str(&c, host, sizeof host);
    if (!c.bad && st == 0 && size > 0 && size <= (int32_t)(c.left / 4) && myrank == rank) {
        nodes = malloc((size_t)size * sizeof(int));
        for (int i = 0; nodes && i < size; i++)
            nodes[i] = px_pxrun_get_i32(&c);
    }
    free(r);
    if (c.bad || st != 0 || !nodes) {
        px_show_error("boot/pxrun: pxrun refused rank %ld (PX_RANK) with status %d (%s)", rank, st,
                      st ? px_strerror(st) : "malformed reply");
        close(fd);
        fd = -1;
        return st ? st : PX_ERR_COMM;
    }
    /* PX_BOOT_PXRUN_TEST_JOBID_SUFFIX: the test suite's stand-in for a
     * launcher whose job ids are long (PMIx namespaces up to 255
     * characters); appended to pxrun's id, which stays unique. */
    const char *sfx = getenv("PX_BOOT_PXRUN_TEST_JOBID_SUFFIX");
    if (sfx && *sfx) {
        size_t have = strlen(jobid);
        snprintf(jobid + have, sizeof jobid - have, "%s", sfx);
    }
    px_boot_pxrun_module.rank = myrank;
    px_boot_pxrun_module.size = size;
    px_boot_pxrun_module.jobid = jobid;
    watch_start();
    return PX_SUCCESS;
}

static const char *pxrun_hostname(int rank)
{
    return rank >= 0 && rank < px_boot_pxrun_module.size ? host : NULL;
}

static uint32_t pxrun_locality(int rank)
{
    if (rank < 0 || rank >= px_boot_pxrun_module.size || !nodes)
        return 0;
    if (rank == px_boot_pxrun_module.rank)
        return PX_PROC_LOCAL_SELF | PX_PROC_LOCAL_HOST | PX_PROC_LOCAL_NUMA;
    return nodes[rank] == nodes[px_boot_pxrun_module.rank] ? PX_PROC_LOCAL_HOST : 0;
}

static int pxrun_put(const char *key, const void *data, size_t len)
{
    if (!key || (len && !data) || strlen(key) >= PX_PXRUN_MAX_KEY)
        return PX_ERR_BAD_PARAM;
    entry_t *e = entry_new(px_boot_pxrun_module.rank, key, data, len);
    return e ? list_put(&pending, e) : PX_ERR_OUT_OF_RESOURCE;
}

static int pxrun_commit(void)
{
    while (pending) {
        entry_t *e = pending;
        pending = e->next;
        e->next = NULL;
        list_put(&committed, e);
    }
    return PX_SUCCESS;
}

static int pxrun_fence(void)
{
    px_pxrun_buf_t b = {0};
    size_t at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_FENCE);
    uint32_t n = 0;
    for (entry_t *e = committed; e; e = e->next)
        n++;
    px_pxrun_buf_u32(&b, n);
    for (entry_t *e = committed; e; e = e->next) {
        px_pxrun_buf_str(&b, e->key);
        px_pxrun_buf_bytes(&b, e->data, e->len);
    }
    px_pxrun_buf_end(&b, at);
    char *r;
    size_t rl;
    int rc = transact(&b, &r, &rl, "fence");
    px_pxrun_buf_free(&b);
    if (rc != PX_SUCCESS)
        return rc;
    list_free(&committed);
    px_pxrun_cursor_t c = {r, rl, 0};
    int32_t st = px_pxrun_get_i32(&c);
    uint32_t cnt = px_pxrun_get_u32(&c);
    for (uint32_t i = 0; i < cnt && !c.bad && st == 0; i++) {
        int32_t rank = px_pxrun_get_i32(&c);
        char key[PX_PXRUN_MAX_KEY];
        const void *val;
        px_pxrun_get_str(&c, key, sizeof key);
        uint32_t vl = px_pxrun_get_bytes(&c, &val);
        if (c.bad)
            break;
        entry_t *e = entry_new(rank, key, val, vl);
        if (!e) {
            free(r);
            return PX_ERR_OUT_OF_RESOURCE;
        }
        list_put(&cache, e);
    }
    free(r);
    if (c.bad || st != 0) {
        px_show_error("boot/pxrun: fence: malformed answer from pxrun (status %d)", st);
        return st ? st : PX_ERR_COMM;
    }
    return PX_SUCCESS;
}

static int pxrun_get(int rank, const char *key, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (rank < 0 || rank >= px_boot_pxrun_module.size || !key || strlen(key) >= PX_PXRUN_MAX_KEY)
        return PX_ERR_BAD_PARAM;
    for (entry_t *e = cache; e; e = e->next)
        if (e->rank == rank && !strcmp(e->key, key)) {
            *data = malloc(e->len ? e->len : 1);
            if (!*data)
                return PX_ERR_OUT_OF_RESOURCE;
            memcpy(*data, e->data, e->len);
            *len = e->len;
            return PX_SUCCESS;
        }
    px_pxrun_buf_t b = {0};
    size_t at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_GET);
    px_pxrun_buf_i32(&b, rank);
    px_pxrun_buf_str(&b, key);
    px_pxrun_buf_end(&b, at);
    char *r;
    size_t rl;
    int rc = transact(&b, &r, &rl, "get");
    px_pxrun_buf_free(&b);
    if (rc != PX_SUCCESS)
        return rc;
    px_pxrun_cursor_t c = {r, rl, 0};
    int32_t st = px_pxrun_get_i32(&c);
    const void *val;
    uint32_t vl = px_pxrun_get_bytes(&c, &val);
    if (!c.bad && st == 0) {
        *data = malloc(vl ? vl : 1);
        if (*data) {
            memcpy(*data, val, vl);
            *len = vl;
        } else {
            st = PX_ERR_OUT_OF_RESOURCE;
        }
    }
    free(r);
    return c.bad ? PX_ERR_COMM : st;
}

static void pxrun_abort(int status, const char *msg)
{
    if (fd >= 0) {
        px_pxrun_buf_t b = {0};
        size_t at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_ABORT);
        px_pxrun_buf_i32(&b, status);
        px_pxrun_buf_str(&b, msg ? msg : "");
        px_pxrun_buf_end(&b, at);
        if (!b.oom)
            send_all(b.data, b.len);
        px_pxrun_buf_free(&b);
    }
    fprintf(stderr, "plexus: rank %d aborted with status %d: %s\n", px_boot_pxrun_module.rank,
            status, msg ? msg : "");
    fflush(stderr);
    _exit(status > 0 && status < 256 ? status : 1);
}

static int pxrun_finalize(void)
{
    watch_stop(); /* before the socket closes under it */
    /* px_finalize, or px_init's error path (a fence that failed because
     * pxrun died): with the launcher gone, the last rank removes the job's
     * files here, as the watcher would have. */
    if (launcher_hung_up() && remove_files_if_last()) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "plexus: rank %d: the launcher pxrun is gone; the last rank removed the job's "
                 "files\n",
                 px_boot_pxrun_module.rank);
        say(msg);
    }
    if (sess_fd >= 0) {
        close(sess_fd);
        sess_fd = -1;
    }
    if (fd >= 0) {
        px_pxrun_frame_hdr_t h = {0, PX_PXRUN_OP_BYE};
        send_all(&h, sizeof h);
        close(fd);
        fd = -1;
    }
    list_free(&pending);
    list_free(&committed);
    list_free(&cache);
    free(nodes);
    nodes = NULL;
    return PX_SUCCESS;
}

/* pxrun made the session folder before starting the ranks and removes it at
 * the end of the job: the job's scratch folder lives inside it. */
static const char *pxrun_session_dir(void)
{
    const char *sess = getenv("PX_SESSION_DIR");
    return sess && *sess ? sess : NULL;
}

px_boot_module_t px_boot_pxrun_module = {
    .name = "pxrun",
    .init = pxrun_init,
    .rank = -1,
    .size = 0,
    .jobid = NULL,
    .hostname = pxrun_hostname,
    .locality = pxrun_locality,
    .put = pxrun_put,
    .commit = pxrun_commit,
    .fence = pxrun_fence,
    .get = pxrun_get,
    .abort = pxrun_abort,
    .finalize = pxrun_finalize,
    .session_dir = pxrun_session_dir,
};
