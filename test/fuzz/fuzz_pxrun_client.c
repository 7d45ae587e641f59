/*
 * fuzz_pxrun_client.c: the rank side of the pxrun protocol
 * (components/boot/pxrun/pxrun_module.c, compiled into this harness so its
 * static decoders are reached) fed with arbitrary launcher replies.
 * The input is the byte stream "pxrun" sends on the rank's socket: the
 * answers to HELLO, FENCE and GET, in that order, then end of stream. The
 * module runs init, put, commit, fence, a cached get, an uncached get and
 * finalize against it, over a socketpair that stands in for the connection
 * (connect() is replaced below). The thread that watches the launcher socket
 * is replaced by one that returns at once: the stream's end is a hang-up, on
 * which the real one would _exit(1) the harness (whenever it ran before
 * finalize stopped it: 8 replays of the corpus in 20 died so).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "test/fuzz/fuzz.h"

static int fuzz_conn = -1; /* the rank's end of the socketpair */

static int fuzz_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    (void)sa;
    (void)len;
    if (fuzz_conn < 0 || dup2(fuzz_conn, fd) < 0)
        return -1;
    close(fuzz_conn);
    fuzz_conn = -1;
    return 0;
}

static void *fuzz_no_watch(void *arg)
{
    return arg;
}

static int fuzz_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                               void *arg)
{
    (void)fn;
    return pthread_create(t, attr, fuzz_no_watch, arg);
}

/* The module under test, with its own name so that it does not clash with
 * the copy in libplexus. */
#define connect              fuzz_connect
#define pthread_create       fuzz_pthread_create
#define px_boot_pxrun_module px_fuzz_pxrun_module
#include "components/boot/pxrun/pxrun_module.c"
#undef connect
#undef pthread_create

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv(PX_PXRUN_URI_ENV, "/nonexistent/fuzz.sock", 1);
    setenv("PX_RANK", "0", 1);
    px_boot_pxrun_timeout = 2; /* the stream always ends; this only bounds a bug */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(sv[1], data + off, size - off);
        if (w <= 0)
            break; /* the rest does not fit: the stream ends there */
        off += (size_t)w;
    }
    shutdown(sv[1], SHUT_WR);
    fuzz_conn = sv[0];
    px_fuzz_pxrun_module.rank = -1;
    px_fuzz_pxrun_module.size = 0;
    if (pxrun_init() == PX_SUCCESS) {
        if (px_fuzz_pxrun_module.rank != 0 || px_fuzz_pxrun_module.size <= 0)
            abort();
        for (int r = -1; r <= px_fuzz_pxrun_module.size && r < 64; r++) {
            (void)pxrun_hostname(r);
            (void)pxrun_locality(r);
        }
        pxrun_put("k", "v", 1);
        pxrun_put("empty", NULL, 0);
        pxrun_commit();
        if (pxrun_fence() == PX_SUCCESS) {
            void *v;
            size_t n;
            if (pxrun_get(0, "k", &v, &n) == PX_SUCCESS)
                free(v);
            if (pxrun_get(px_fuzz_pxrun_module.size - 1, "other", &v, &n) == PX_SUCCESS)
                free(v);
        }
    }
    if (fuzz_conn >= 0)
        close(fuzz_conn);
    fuzz_conn = -1;
    pxrun_finalize();
    close(sv[1]);
    return 0;
}
