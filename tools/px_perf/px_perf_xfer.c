/*
 * px_perf_xfer.c: px_perf --xfer, one-sided transfers (runtime/plexus_xfer.h)
 * from rank 0 into rank 1's region: write (+ flush) and read latency,
 * streaming bandwidth with a window of 64, batch submission rate with 1 and
 * 2 submitting threads.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"
#include "tools/px_perf/px_perf.h"

/* --xfer: one-sided transfers from rank 0 into rank 1's region. Rank 1 only
 * progresses (in px_barrier) while rank 0 measures: a direct path needs
 * nothing from it, the staged path its progress. */
typedef struct xfer_ctx {
    px_xfer_region_t *local;
    px_xfer_remote_t *remote;
    const char *transport;
    int batch;
    long reps;
    double rate;
    size_t roff; /* where in the remote region this thread writes (threads do not overlap) */
} xfer_ctx_t;

static void xcheck(int rc, const char *what)
{
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_perf --xfer: %s failed: %s: %s\n", what, px_strerror(rc),
                px_xfer_last_error());
        px_abort(3, "px_perf: a transfer failed");
    }
}

static void *xfer_rate_thread(void *arg)
{
    xfer_ctx_t *c = arg;
    px_xfer_batch_t *b;
    xcheck(px_xfer_batch_alloc((size_t)c->batch, &b), "batch_alloc");
    px_xfer_request_t *q = calloc((size_t)c->batch, sizeof *q);
    for (int i = 0; i < c->batch; i++)
        q[i] = (px_xfer_request_t){PX_XFER_WRITE,           c->local, (size_t)i * 8, c->remote,
                                   c->roff + (size_t)i * 8, 8,        c->transport};
    double t0 = 0;
    long warm = c->reps / 10;
    for (long r = 0; r < c->reps + warm; r++) {
        if (r == warm)
            t0 = px_wtime();
        px_xfer_batch_reset(b);
        xcheck(px_xfer_batch_submit(b, q, (size_t)c->batch, NULL), "batch_submit");
        xcheck(px_xfer_batch_wait(b, -1), "batch_wait");
    }
    c->rate = (double)c->reps * c->batch / (px_wtime() - t0);
    px_xfer_batch_free(&b);
    free(q);
    return NULL;
}

void px_perf_xfer(const size_t *sizes, int nsizes, long iters_override, const char *mem,
                  const char *transport, bool csv)
{
    int rank = px_rank();
    size_t maxs = 4096;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > maxs)
            maxs = sizes[i];
    size_t len = (maxs + 4095) & ~(size_t)4095;
    bool alloc = !mem || strcmp(mem, "reg") != 0;
    px_xfer_region_t *target = NULL, *local = NULL, *local2 = NULL;
    char *tmem = NULL, *lmem = NULL, *lmem2 = NULL;
    if (alloc) {
        xcheck(px_xfer_alloc(len, &target), "alloc");
        xcheck(px_xfer_alloc(len, &local), "alloc");
        xcheck(px_xfer_alloc(len, &local2), "alloc");
    } else {
        tmem = aligned_alloc(4096, len);
        lmem = aligned_alloc(4096, len);
        lmem2 = aligned_alloc(4096, len);
        memset(tmem, 0, len);
        memset(lmem, 1, len);
        memset(lmem2, 1, len);
        xcheck(px_xfer_register(tmem, len, &target), "register");
        xcheck(px_xfer_register(lmem, len, &local), "register");
        xcheck(px_xfer_register(lmem2, len, &local2), "register");
    }
    memset(px_xfer_region_base(local), 1, len);
    memset(px_xfer_region_base(local2), 1, len);
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen = 0;
    px_xfer_remote_t *remote = NULL;
    if (rank == 1) {
        xcheck(px_xfer_key_export(target, key, sizeof key, &klen), "key_export");
        px_perf_check(px_send(key, klen, 0, 9), "px_send");
    } else if (rank == 0) {
        px_status_t st;
        px_perf_check(px_recv(key, sizeof key, 1, 9, &st), "px_recv");
        xcheck(px_xfer_key_import(1, key, st.length, &remote), "key_import");
    }
    /* The path the requests take, from one request's status. */
    char path[64] = "?";
    if (rank == 0) {
        px_xfer_batch_t *b;
        xcheck(px_xfer_batch_alloc(1, &b), "batch_alloc");
        px_xfer_request_t q = {PX_XFER_WRITE, local, 0, remote, 0, len, transport};
        xcheck(px_xfer_batch_submit(b, &q, 1, NULL), "submit");
        xcheck(px_xfer_batch_wait(b, -1), "wait");
        px_xfer_status_t st;
        px_xfer_batch_test(b, 0, &st);
        snprintf(path, sizeof path, "%s", st.transport);
        px_xfer_batch_free(&b);
        if (!csv)
            printf("# px_perf --xfer: rank 0 -> rank 1, %s memory, path %s (large requests; "
                   "xfer_verbose=10 shows each)\n",
                   alloc ? "allocated (px_xfer_alloc)" : "registered user", path);
        printf(csv ? "bytes,write_us,read_us,write_MBps,read_MBps\n" : "%10s %12s %12s %12s %12s\n",
               "bytes", "write_us", "read_us", "write_MBps", "read_MBps");
    }
    enum { XWIN = 64 };
    px_xfer_batch_t *win = NULL;
    if (rank == 0)
        xcheck(px_xfer_batch_alloc(XWIN, &win), "batch_alloc");
    for (int si = 0; si < nsizes; si++) {
        size_t s = sizes[si];
        px_perf_check(px_barrier(), "px_barrier");
        if (rank != 0) {
            px_perf_check(px_barrier(), "px_barrier");
            continue;
        }
        long iters =
            iters_override ? iters_override : (s <= 4096 ? 100000 : (s <= 262144 ? 5000 : 300));
        long warm = iters / 10;
        double t0 = 0, lat_w, lat_r;
        for (long i = 0; i < iters + warm; i++) {
            if (i == warm)
                t0 = px_wtime();
            if (transport) {
                px_xfer_request_t q = {PX_XFER_WRITE, local, 0, remote, 0, s, transport};
                px_xfer_batch_reset(win);
                xcheck(px_xfer_batch_submit(win, &q, 1, NULL), "submit");
                xcheck(px_xfer_batch_wait(win, -1), "wait");
            } else {
                xcheck(px_xfer_write(local, 0, remote, 0, s), "write");
            }
            xcheck(px_xfer_flush(1), "flush");
        }
        lat_w = (px_wtime() - t0) / (double)iters * 1e6;
        for (long i = 0; i < iters + warm; i++) {
            if (i == warm)
                t0 = px_wtime();
            if (transport) {
                px_xfer_request_t q = {PX_XFER_READ, local, 0, remote, 0, s, transport};
                px_xfer_batch_reset(win);
                xcheck(px_xfer_batch_submit(win, &q, 1, NULL), "submit");
                xcheck(px_xfer_batch_wait(win, -1), "wait");
            } else {
                xcheck(px_xfer_read(local, 0, remote, 0, s), "read");
            }
        }
        lat_r = (px_wtime() - t0) / (double)iters * 1e6;
        /* Streaming: windows of 64 requests, each window waited for. */
        double bw[2];
        for (int dir = 0; dir < 2; dir++) {
            long nwin =
                iters_override ? iters_override : (s <= 32768 ? 2000 : (s <= 1048576 ? 100 : 20));
            px_xfer_request_t q[XWIN];
            for (int w = 0; w < XWIN; w++)
                q[w] = (px_xfer_request_t){
                    dir ? PX_XFER_READ : PX_XFER_WRITE, local, 0, remote, 0, s, transport};
            for (long k = 0; k < nwin + 1; k++) {
                if (k == 1)
                    t0 = px_wtime();
                px_xfer_batch_reset(win);
                xcheck(px_xfer_batch_submit(win, q, XWIN, NULL), "submit");
                xcheck(px_xfer_batch_wait(win, -1), "wait");
            }
            xcheck(px_xfer_flush(1), "flush");
            bw[dir] = (double)s * XWIN * (double)nwin / (px_wtime() - t0) / 1e6;
        }
        printf(csv ? "%zu,%.4f,%.4f,%.1f,%.1f\n" : "%10zu %12.4f %12.4f %12.1f %12.1f\n", s, lat_w,
               lat_r, bw[0], bw[1]);
        fflush(stdout);
        px_perf_check(px_barrier(), "px_barrier");
    }
    /* Batch submission rate: 8-byte writes, batches of 1, 16, 256; 16 with two
     * submitting threads. */
    static const int batches[] = {1, 16, 256, 16};
    static const int threads[] = {1, 1, 1, 2};
    if (rank == 0)
        printf(csv ? "batch,threads,Mreq_per_s\n"
                   : "# batch submission rate, 8-byte writes\n%10s %8s %12s\n",
               "batch", "threads", "Mreq_per_s");
    for (int k = 0; k < 4; k++) {
        px_perf_check(px_barrier(), "px_barrier");
        if (rank == 0) {
            xfer_ctx_t c[2];
            pthread_t th[2];
            long reqs = iters_override ? iters_override * 100 : 2000000;
            for (int t = 0; t < threads[k]; t++) {
                c[t] = (xfer_ctx_t){.local = t ? local2 : local,
                                    .remote = remote,
                                    .transport = transport,
                                    .batch = batches[k],
                                    .reps = reqs / batches[k],
                                    .roff = (size_t)t * 2048};
                if (threads[k] > 1)
                    pthread_create(&th[t], NULL, xfer_rate_thread, &c[t]);
                else
                    xfer_rate_thread(&c[t]);
            }
            double rate = 0;
            for (int t = 0; t < threads[k]; t++) {
                if (threads[k] > 1)
                    pthread_join(th[t], NULL);
                rate += c[t].rate;
            }
            printf(csv ? "%d,%d,%.3f\n" : "%10d %8d %12.3f\n", batches[k], threads[k], rate / 1e6);
            fflush(stdout);
        }
        px_perf_check(px_barrier(), "px_barrier");
    }
    if (win)
        px_xfer_batch_free(&win);
    px_perf_check(px_barrier(), "px_barrier");
    if (remote)
        px_xfer_remote_release(&remote);
    px_perf_check(px_barrier(), "px_barrier");
    px_xfer_free(&target);
    px_xfer_free(&local);
    px_xfer_free(&local2);
    free(tmem);
    free(lmem);
    free(lmem2);
}
