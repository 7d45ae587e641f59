/*
 * pxrun.h: what the files of the pxrun launcher share (internal to
 * tools/pxrun, not installed): the job's state and the functions one file
 * calls in another.
 *
 *   pxrun.c         main: options, the session folder, the poll loop, job
 *                   control (ending the job, reaping ranks, exit status)
 *   pxrun_server.c  the ranks' connections: framing, the HELLO / FENCE /
 *                   GET / ABORT / BYE requests, the modex store
 *   pxrun_io.c      stdin to rank 0, the ranks' stdout/stderr to pxrun's
 *   pxrun_spawn.c   finding the program, the ranks' environment, spawning
 *                   and binding them
 *
 * pxrun_server.c depends only on this header, the protocol header and
 * pxrun_fail(), so the fuzz harness (test/fuzz/fuzz_pxrun_server.c) compiles
 * it on its own, supplying `px` and pxrun_fail() itself.
 */
#ifndef PXRUN_H
#define PXRUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "components/boot/pxrun/pxrun_proto.h"

#define PXRUN_MAX_RANKS    4096
#define PXRUN_LINE_MAX     65536
#define PXRUN_EXIT_USAGE   2
#define PXRUN_EXIT_NOEXEC  127
#define PXRUN_EXIT_TIMEOUT 124

/* One output pipe of a rank and its partial last line. */
typedef struct pxrun_linebuf {
    int fd; /* -1 once closed */
    char *data;
    size_t len;
} pxrun_linebuf_t;

/* One modex entry a rank put. */
typedef struct pxrun_kv {
    char *key;
    void *val;
    uint32_t len;
} pxrun_kv_t;

typedef struct pxrun_rank {
    pid_t pid;
    bool alive;
    int wstatus;
    pxrun_linebuf_t out, err;
    int conn;        /* connection index after HELLO, or -1 */
    bool hello, bye; /* boot/pxrun said HELLO (px_init) / BYE (px_finalize) */
    bool fenced;
    pxrun_kv_t *kv;
    size_t nkv, capkv;
} pxrun_rank_t;

/* One accepted connection on the launcher socket. */
typedef struct pxrun_conn {
    int fd;
    int rank;
    char *in;
    size_t inlen, incap;
    px_pxrun_buf_t out;
    size_t outoff;
    bool closing; /* close after the output is flushed */
} pxrun_conn_t;

typedef struct pxrun_job {
    /* options */
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
    int sessfd, shmfd; /* the two job folders, held from creation (-1: none) */
    int lfd, sfd;
    pxrun_rank_t *ranks;
    pxrun_conn_t *conns;
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
} pxrun_job_t;

/* The job (defined in pxrun.c). */
extern pxrun_job_t px;

/* pxrun.c: job control. */
/* The job fails with exit status `code` (the first failure wins), saying
 * `what` on stderr; the ranks are ended. */
/* The job fails with `code` (first failure wins): say `what` and end the
 * ranks. `culprit`: the rank that caused it and ends by itself (an abort),
 * not counted among "the other ranks" being ended; -1 for none. */
void pxrun_fail(int code, int culprit, const char *what);

/* pxrun_server.c: the modex service. */
void pxrun_accept_conns(void);
void pxrun_conn_read(int ci);
void pxrun_conn_write(int ci);
void pxrun_conn_close(int ci);
/* A fence that a rank which already exited can never join fails the job. */
void pxrun_check_fence_orphaned(void);
/* Closes every connection and frees the connections, the ranks' modex
 * entries and the fence round (not px.ranks itself). */
void pxrun_server_release(void);

/* pxrun_io.c: forwarding. */
void pxrun_pump_output(int rank, pxrun_linebuf_t *lb, int outfd);
void pxrun_stdin_read(void);
void pxrun_stdin_write(void);

/* pxrun_spawn.c: starting the ranks. */
bool pxrun_find_program(const char *prog, char *why, size_t whylen);
void pxrun_spawn_all(void);

#endif
