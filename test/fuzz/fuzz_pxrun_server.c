/*
 * fuzz_pxrun_server.c: the launcher side of the pxrun protocol
 * (tools/pxrun/pxrun_server.c, compiled into this harness: the connections'
 * framing and the request decoders) fed with arbitrary rank requests over
 * one or two connections.
 * Input: byte 0: ranks in the job (1 + bits 0-1) and connections (1 + bit 2);
 * then records {u8 connection, u8 length, length bytes}: each record's
 * bytes are written on that connection, then the launcher reads (as its poll
 * loop would), writes its replies, and the harness drains them.
 * The harness stands in for pxrun.c: it defines the job state `px` and
 * pxrun_fail(), which records the failure and ends the job as pxrun's does
 * but signals no process (the ranks are not real).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "test/fuzz/fuzz.h"
#include "tools/pxrun/pxrun.h"

pxrun_job_t px;

void pxrun_fail(int code, int culprit, const char *what)
{
    (void)culprit;
    if (!px.have_failure) {
        px.have_failure = true;
        px.exit_code = code;
        fprintf(stderr, "pxrun: %s\n", what);
    }
    px.ending = true; /* pxrun would now send SIGTERM to the ranks */
}

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
    px.ranks = calloc((size_t)nranks, sizeof(pxrun_rank_t));
    px.conns = calloc(MAX_CONNS, sizeof(pxrun_conn_t));
    if (!px.ranks || !px.conns)
        abort();
    px.capconns = MAX_CONNS;
    px.nalive = nranks;
    for (int i = 0; i < nranks; i++) {
        px.ranks[i].pid = 999990 + i; /* never signalled (see pxrun_fail above) */
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
            pxrun_conn_read(c);
        }
        off += len;
        for (int k = 0; k < nconns; k++) {
            if (px.conns[k].fd >= 0 && px.conns[k].out.len)
                pxrun_conn_write(k);
            while (read(peer[k], sink, sizeof sink) > 0)
                ;
        }
    }
    pxrun_server_release();
    for (int c = 0; c < nconns; c++)
        close(peer[c]);
    free(px.ranks);
    memset(&px, 0, sizeof px);
    return 0;
}
