/*
 * pxrun_io.c: pxrun's forwarding: its stdin to rank 0, and the ranks'
 * stdout/stderr to its own, line by line (lines of different ranks never
 * interleave; a line over PXRUN_LINE_MAX is split), prefixed "[rank] " with
 * --tag-output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/pxrun/pxrun.h"

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
void pxrun_pump_output(int rank, pxrun_linebuf_t *lb, int outfd)
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

/* stdin is readable (polled only while the buffer is empty): take a chunk;
 * at its end (or an error) close rank 0's stdin. */
void pxrun_stdin_read(void)
{
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
}

/* Rank 0's stdin is writable: pass on what is buffered; when rank 0 no
 * longer reads, stop forwarding. */
void pxrun_stdin_write(void)
{
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
}
