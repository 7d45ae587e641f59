/*
 * pxrun_server.c: the launcher's side of the pxrun protocol
 * (components/boot/pxrun/pxrun_proto.h): accepting the ranks' connections,
 * reading and bounds-checking their frames, serving HELLO, FENCE (the modex
 * rounds), GET, ABORT and BYE, and writing the replies. A malformed frame
 * closes that connection with a warning and never affects pxrun or the other
 * ranks. Fuzzed by test/fuzz/fuzz_pxrun_server.c, which compiles this file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/pxrun/pxrun.h"

void pxrun_conn_close(int ci)
{
    pxrun_conn_t *c = &px.conns[ci];
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
    pxrun_conn_t *c = &px.conns[ci];
    if (c->rank >= 0)
        fprintf(stderr, "pxrun: warning: closing rank %d's connection: %s\n", c->rank, why);
    else
        fprintf(stderr, "pxrun: warning: closing a connection: %s\n", why);
    pxrun_conn_close(ci);
}

static void reply_status(pxrun_conn_t *c, int32_t st)
{
    size_t at = px_pxrun_buf_begin(&c->out, PX_PXRUN_OP_REPLY);
    px_pxrun_buf_i32(&c->out, st);
    px_pxrun_buf_end(&c->out, at);
}

static pxrun_kv_t *kv_find(pxrun_rank_t *r, const char *key)
{
    for (size_t i = 0; i < r->nkv; i++)
        if (!strcmp(r->kv[i].key, key))
            return &r->kv[i];
    return NULL;
}

static int kv_put(pxrun_rank_t *r, const char *key, const void *val, uint32_t len)
{
    pxrun_kv_t *e = kv_find(r, key);
    if (!e) {
        if (r->nkv == r->capkv) {
            size_t cap = r->capkv ? r->capkv * 2 : 8;
            pxrun_kv_t *n = realloc(r->kv, cap * sizeof *n);
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
void pxrun_check_fence_orphaned(void)
{
    if (px.nfenced == 0 || px.ending)
        return;
    for (int i = 0; i < px.n; i++)
        if (!px.ranks[i].alive && !px.ranks[i].fenced && px.ranks[i].pid > 0) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "rank %d exited while %d other rank%s waited for it in a fence", i, px.nfenced,
                     px.nfenced == 1 ? "" : "s");
            pxrun_fail(1, -1, msg);
            return;
        }
}

static void fence_complete(void)
{
    size_t at_hdr;
    for (int i = 0; i < px.nconns; i++) {
        pxrun_conn_t *c = &px.conns[i];
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
    pxrun_conn_t *c = &px.conns[ci];
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
        pxrun_rank_t *r = &px.ranks[c->rank];
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
            pxrun_check_fence_orphaned();
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
        pxrun_kv_t *e = (rank >= 0 && rank < px.n) ? kv_find(&px.ranks[rank], key) : NULL;
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
        pxrun_fail(st > 0 && st < 256 ? st : 1, c->rank, text);
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

void pxrun_conn_read(int ci)
{
    pxrun_conn_t *c = &px.conns[ci];
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
            pxrun_conn_close(ci);
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

void pxrun_conn_write(int ci)
{
    pxrun_conn_t *c = &px.conns[ci];
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
            pxrun_conn_close(ci);
            return;
        }
        c->outoff += (size_t)w;
    }
    c->out.len = c->outoff = 0;
    if (c->closing)
        pxrun_conn_close(ci);
}

void pxrun_accept_conns(void)
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
                pxrun_conn_t *n = realloc(px.conns, (size_t)cap * sizeof *n);
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

void pxrun_server_release(void)
{
    for (int i = 0; i < px.nconns; i++)
        pxrun_conn_close(i);
    free(px.conns);
    px.conns = NULL;
    px.nconns = px.capconns = 0;
    for (int i = 0; px.ranks && i < px.n; i++) {
        pxrun_rank_t *r = &px.ranks[i];
        for (size_t k = 0; k < r->nkv; k++) {
            free(r->kv[k].key);
            free(r->kv[k].val);
        }
        free(r->kv);
        r->kv = NULL;
        r->nkv = r->capkv = 0;
    }
    px_pxrun_buf_free(&px.round);
}
