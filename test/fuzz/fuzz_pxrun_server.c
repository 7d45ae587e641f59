/*
 * fuzz_pxrun_server.c: the launcher side of the pxrun protocol
 * (tools/pxrun/pxrun.c: conn_read's framing and handle_frame's decoders,
 * compiled into this harness with its main renamed) fed with arbitrary rank
 * requests over one or two connections.
 * Input: byte 0: ranks in the job (1 + bits 0-1) and connections (1 + bit 2);
 * then records {u8 connection, u8 length, length bytes}: each record's
 * bytes are written on that connection, then the launcher reads (as its poll
 * loop would), writes its replies, and the harness drains them.
 * kill() is replaced so that ending the job signals no real process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include "test/fuzz/fuzz.h"

static int fuzz_kills;
static int fuzz_kill(pid_t pid, int sig)
{
    (void)pid;
    (void)sig;
    fuzz_kills++;
    return 0;
}

#define kill fuzz_kill
#define main px_fuzz_pxrun_main
#include "tools/pxrun/pxrun.c"
#undef main
#undef kill

PX_FUZZ_NO_INIT

#define MAX_CONNS 2

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int nranks = 1 + (data[0] & 3), nconns = 1 + ((data[0] >> 2) & 1);
    memset(&px, 0, sizeof px);
    px.n = nranks;
    px.grace = 1;
    px.lfd = px.sfd = px.stdin_fd = px.rank0_in = -1;
    snprintf(px.jobid, sizeof px.jobid, "fuzzjob");
    snprintf(px.host, sizeof px.host, "fuzzhost");
    px.ranks = calloc((size_t)nranks, sizeof(rank_t));
    px.conns = calloc(MAX_CONNS, sizeof(conn_t));
    if (!px.ranks || !px.conns)
        abort();
    px.capconns = MAX_CONNS;
    px.nalive = nranks;
    for (int i = 0; i < nranks; i++) {
        px.ranks[i].pid = 999990 + i; /* never signalled: kill() is a stub */
        px.ranks[i].alive = true;
        px.ranks[i].conn = -1;
        px.ranks[i].out.fd = px.ranks[i].err.fd = -1;
    }
    int peer[MAX_CONNS];
    for (int c = 0; c < nconns; c++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
            abort();
        px.conns[c].fd = sv[0];
        px.conns[c].rank = -1;
        peer[c] = sv[1];
        px.nconns++;
    }
    size_t off = 1;
    char sink[65536];
    while (off + 2 <= size) {
        int c = data[off] % nconns;
        size_t len = data[off + 1];
        off += 2;
        if (len > size - off)
            len = size - off;
        if (px.conns[c].fd >= 0) {
            if (write(peer[c], data + off, len) != (ssize_t)len)
                abort();
            conn_read(c);
        }
        off += len;
        for (int k = 0; k < nconns; k++) {
            if (px.conns[k].fd >= 0 && px.conns[k].out.len)
                conn_write(k);
            while (read(peer[k], sink, sizeof sink) > 0)
                ;
        }
    }
    for (int c = 0; c < px.nconns; c++)
        conn_close(c);
    for (int c = 0; c < nconns; c++)
        close(peer[c]);
    for (int i = 0; i < nranks; i++) {
        for (size_t k = 0; k < px.ranks[i].nkv; k++) {
            free(px.ranks[i].kv[k].key);
            free(px.ranks[i].kv[k].val);
        }
        free(px.ranks[i].kv);
    }
    free(px.ranks);
    free(px.conns);
    px_pxrun_buf_free(&px.round);
    memset(&px, 0, sizeof px);
    return 0;
}
