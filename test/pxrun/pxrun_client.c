/*
 * pxrun_client: a small client of pxrun's modex protocol for
 * test/pxrun/t_pxrun.sh, written against components/boot/pxrun/pxrun_proto.h
 * only (no libplexus), so the launcher is tested on its own.
 *
 *   pxrun -n N pxrun_client modex     hello, fence with a blob of rank*100+1
 *                                     bytes, check every rank's blob, get one
 *                                     back, get a missing key
 *   pxrun -n N pxrun_client fuzz K    first K connections sending malformed
 *                                     or random frames, then the modex check
 * Prints "modex ok rank R of N" or what went wrong (exit 1).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "components/boot/pxrun/pxrun_proto.h"

static int rank, size;

static int dial(void)
{
    const char *uri = getenv(PX_PXRUN_URI_ENV);
    if (!uri) {
        fprintf(stderr, "pxrun_client: %s is not set\n", PX_PXRUN_URI_ENV);
        exit(1);
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", uri);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fprintf(stderr, "pxrun_client: connect %s: %s\n", uri, strerror(errno));
        exit(1);
    }
    return fd;
}

static void xsend(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* pxrun may have closed a fuzz connection */
        c += w;
        n -= (size_t)w;
    }
}

static int xrecv(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 20000) <= 0)
            return -1;
        ssize_t r = recv(fd, c, n, 0);
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static char *transact(int fd, px_pxrun_buf_t *b, size_t *len)
{
    xsend(fd, b->data, b->len);
    px_pxrun_buf_free(b);
    px_pxrun_frame_hdr_t h;
    if (xrecv(fd, &h, sizeof h) || h.op != PX_PXRUN_OP_REPLY || h.len > PX_PXRUN_MAX_FRAME)
        return NULL;
    char *r = malloc(h.len + 1);
    if (xrecv(fd, r, h.len)) {
        free(r);
        return NULL;
    }
    *len = h.len;
    return r;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "pxrun_client rank %d: ", rank);                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

static void fuzz(int count)
{
    srand((unsigned)(getpid() * 7919));
    for (int i = 0; i < count; i++) {
        int fd = dial();
        char junk[512];
        px_pxrun_buf_t b = {0};
        size_t at;
        switch (i % 6) {
        case 0: /* random bytes */
            for (size_t k = 0; k < sizeof junk; k++)
                junk[k] = (char)rand();
            xsend(fd, junk, (size_t)(rand() % (int)sizeof junk));
            break;
        case 1: /* a frame claiming to be huge */ {
            px_pxrun_frame_hdr_t h = {0xfffffff0u, PX_PXRUN_OP_FENCE};
            xsend(fd, &h, sizeof h);
            break;
        }
        case 2: /* short HELLO, then a HELLO for a rank that does not exist */
            at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_HELLO);
            px_pxrun_buf_i32(&b, 0);
            px_pxrun_buf_end(&b, at);
            at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_HELLO);
            px_pxrun_buf_i32(&b, 1000000);
            px_pxrun_buf_i32(&b, 1);
            px_pxrun_buf_u32(&b, PX_PXRUN_PROTO_VERSION);
            px_pxrun_buf_end(&b, at);
            xsend(fd, b.data, b.len);
            break;
        case 3: /* a request before HELLO */
            at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_GET);
            px_pxrun_buf_i32(&b, 0);
            px_pxrun_buf_str(&b, "k");
            px_pxrun_buf_end(&b, at);
            xsend(fd, b.data, b.len);
            break;
        case 4: /* a frame whose fields run past its end, with a random op */ {
            at = px_pxrun_buf_begin(&b, (uint32_t)(2 + rand() % 250));
            px_pxrun_buf_u32(&b, 5);
            px_pxrun_buf_u32(&b, 0x7fffffff);
            px_pxrun_buf_end(&b, at);
            xsend(fd, b.data, b.len);
            break;
        }
        default: /* wrong protocol version for our own rank: refused, slot kept */
            at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_HELLO);
            px_pxrun_buf_i32(&b, rank);
            px_pxrun_buf_i32(&b, getpid());
            px_pxrun_buf_u32(&b, 999);
            px_pxrun_buf_end(&b, at);
            xsend(fd, b.data, b.len);
            px_pxrun_frame_hdr_t h;
            int32_t st = 0;
            if (xrecv(fd, &h, sizeof h) == 0 && xrecv(fd, &st, 4) == 0 && st == 0)
                FAIL("a HELLO with protocol 999 was accepted");
            break;
        }
        px_pxrun_buf_free(&b);
        close(fd);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "modex";
    rank = getenv("PX_RANK") ? atoi(getenv("PX_RANK")) : -1;
    if (!strcmp(mode, "fuzz"))
        fuzz(argc > 2 ? atoi(argv[2]) : 60);
    else if (strcmp(mode, "modex") != 0)
        FAIL("unknown mode %s", mode);

    int fd = dial();
    px_pxrun_buf_t b = {0};
    size_t at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_HELLO);
    px_pxrun_buf_i32(&b, rank);
    px_pxrun_buf_i32(&b, getpid());
    px_pxrun_buf_u32(&b, PX_PXRUN_PROTO_VERSION);
    px_pxrun_buf_end(&b, at);
    size_t len;
    char *r = transact(fd, &b, &len);
    if (!r)
        FAIL("no HELLO reply");
    px_pxrun_cursor_t c = {r, len, 0};
    int32_t st = px_pxrun_get_i32(&c), myrank = px_pxrun_get_i32(&c);
    size = px_pxrun_get_i32(&c);
    char jobid[128], host[256];
    px_pxrun_get_str(&c, jobid, sizeof jobid);
    px_pxrun_get_str(&c, host, sizeof host);
    if (c.bad || st != 0 || myrank != rank || strcmp(jobid, getenv("PX_JOBID")) != 0)
        FAIL("bad HELLO reply (status %d, rank %d, jobid %s)", st, myrank, jobid);
    free(r);

    size_t blen = (size_t)rank * 100 + 1;
    char *blob = malloc(blen);
    for (size_t i = 0; i < blen; i++)
        blob[i] = (char)(rank + i);
    at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_FENCE);
    px_pxrun_buf_u32(&b, 1);
    px_pxrun_buf_str(&b, "test.blob");
    px_pxrun_buf_bytes(&b, blob, blen);
    px_pxrun_buf_end(&b, at);
    r = transact(fd, &b, &len);
    if (!r)
        FAIL("no FENCE reply");
    c = (px_pxrun_cursor_t){r, len, 0};
    st = px_pxrun_get_i32(&c);
    uint32_t n = px_pxrun_get_u32(&c);
    if (st != 0 || n != (uint32_t)size)
        FAIL("FENCE reply: status %d, %u entries for %d ranks", st, n, size);
    /* n == size entries, each rank's once: every rank is there */
    unsigned char *seen = calloc((size_t)size, 1);
    if (!seen)
        FAIL("out of memory");
    for (uint32_t i = 0; i < n; i++) {
        int32_t rr = px_pxrun_get_i32(&c);
        char key[PX_PXRUN_MAX_KEY];
        const void *v;
        px_pxrun_get_str(&c, key, sizeof key);
        uint32_t vl = px_pxrun_get_bytes(&c, &v);
        if (c.bad || rr < 0 || rr >= size || strcmp(key, "test.blob") ||
            vl != (uint32_t)rr * 100 + 1)
            FAIL("FENCE entry %u malformed (rank %d, %u bytes)", i, rr, vl);
        for (uint32_t k = 0; k < vl; k++)
            if (((const char *)v)[k] != (char)(rr + k))
                FAIL("rank %d's blob differs at byte %u", rr, k);
        if (seen[rr]++)
            FAIL("FENCE reply holds rank %d's entry twice", rr);
    }
    free(seen);
    free(r);
    int peer = (rank + 1) % size;
    at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_GET);
    px_pxrun_buf_i32(&b, peer);
    px_pxrun_buf_str(&b, "test.blob");
    px_pxrun_buf_end(&b, at);
    r = transact(fd, &b, &len);
    c = (px_pxrun_cursor_t){r, r ? len : 0, 0};
    st = px_pxrun_get_i32(&c);
    const void *v;
    uint32_t vl = px_pxrun_get_bytes(&c, &v);
    if (!r || st != 0 || vl != (uint32_t)peer * 100 + 1)
        FAIL("GET of rank %d's blob: status %d, %u bytes", peer, st, vl);
    free(r);
    at = px_pxrun_buf_begin(&b, PX_PXRUN_OP_GET);
    px_pxrun_buf_i32(&b, peer);
    px_pxrun_buf_str(&b, "no.such.key");
    px_pxrun_buf_end(&b, at);
    r = transact(fd, &b, &len);
    c = (px_pxrun_cursor_t){r, r ? len : 0, 0};
    st = px_pxrun_get_i32(&c);
    if (!r || st != -5)
        FAIL("GET of a missing key: status %d (expected -5, not found)", st);
    free(r);
    px_pxrun_frame_hdr_t bye = {0, PX_PXRUN_OP_BYE};
    xsend(fd, &bye, sizeof bye);
    close(fd);
    printf("modex ok rank %d of %d\n", rank, size);
    free(blob);
    return 0;
}
