/*
 * px_perf: point-to-point benchmarks over the Plexus messaging API between
 * ranks 0 and 1 (other ranks wait): ping-pong latency, windowed streaming
 * bandwidth (64 non-blocking sends then a zero-byte ack, as in
 * ../shared/bench/mpi_pingpong.c), bidirectional bandwidth, message rate.
 *
 *   pxrun -n 2 px_perf [--test lat,bw,bibw,rate|all] [--sizes LIST | --min B --max B]
 *                      [--iters N] [--csv | --json] [--vs FILE]
 *   pxrun -n N px_perf --coll OP [--sizes LIST] [--iters N] [--csv]
 *                                collective latency (px_perf_coll.c)
 *   px_perf --memcpy [BYTES]     memcpy bandwidth in one process (no launcher)
 *   px_perf --empty              px_init + px_finalize only (startup timing)
 *   px_perf --floor [BYTES]      one cache line (or BYTES copied in and out) passed
 *                                between two processes: the hardware's floor
 *   pxrun -n 2 px_perf --stats ...   also the minimum and the median ("typical", as
 *                                perftest prints it) of the half round trips, each
 *                                round trip timed on its own
 *   pxrun -n 2 px_perf --reps R ...   lat and bw in R timed blocks (after one warm-up
 *                                block) of a tenth of the iterations each: lat_us and
 *                                bw_MBps are the best block, lat_med_us and bw_med_MBps
 *                                the median block (a block the scheduler preempted
 *                                is left out of the best; test/bench/compare-shm.sh)
 *   pxrun -n 2 px_perf --btl --sizes 8,4096
 *                                ping-pong on the transport itself (btl_sendi +
 *                                btl_progress), below the messaging API
 *   pxrun -n 2 px_perf --plot FILE.svg|FILE.png [--title T] [--y COLS]
 *                                also draw the results (and the --vs peer's)
 *                                with gnuplot: one panel per column (latency,
 *                                bandwidth) against size, log-log
 *   px_perf --plot FILE --series NAME=CSV [--series NAME=CSV ...]
 *          [--title T] [--load L] [--y COLS]
 *                                draw saved results only (no run): one line
 *                                per file (px_perf_plot.c)
 *   pxrun -n 2 px_perf --xfer [--xfer-mem alloc|reg] [--transport NAME] [--sizes ...]
 *                                one-sided transfers (runtime/plexus_xfer.h) from
 *                                rank 0 into rank 1's region: write (+ flush) and
 *                                read latency, streaming bandwidth with a window of
 *                                64, batch submission rate (batches of 1, 16, 256 of
 *                                8 B writes) with 1 and 2 submitting threads
 *
 * Iterations per size follow mpi_pingpong.c: latency 20000 (<= 4 KiB),
 * 2000 (<= 256 KiB), 200 above, with a tenth more as warm-up; bandwidth 200
 * windows (<= 32 KiB) or 20. --vs FILE reads a peer's results (lines
 * "bytes lat_us bw_MBps", spaces or commas, as printed by mpi_pingpong_px
 * --csv or mpi_pingpong.c) and adds ratio columns (Plexus / peer).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include "runtime/plexus.h"
#include "runtime/plexus_xfer.h"
#include "runtime/runtime.h" /* --btl reaches the transport behind the API */
#include "tools/px_perf/px_perf_plot.h"

int px_perf_coll(const char *op, const size_t *sizes, int nsizes, long iters_override, int csv);

#define WIN       64
#define MAX_SIZES 64

static const size_t default_sizes[] = {0,      1,      8,       64,      256,    512,   1024,
                                       2048,   4096,   8192,    16384,   32768,  65536, 131072,
                                       262144, 524288, 1 << 20, 2 << 20, 4 << 20};

enum { T_LAT = 1, T_BW = 2, T_BIBW = 4, T_RATE = 8 };

typedef struct result {
    size_t bytes;
    double lat, bw, bibw, rate;
    double lat_min, lat_typ; /* --stats */
    double lat_med, bw_med;  /* --reps */
} result_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of n values (sorts them). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct peer_row {
    size_t bytes;
    double lat, bw;
} peer_row_t;

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "px_perf: error: ");
    fprintf(stderr, fmt, arg);
    fputs("\n(px_perf --help lists the options)\n", stderr);
    exit(2);
}

static int check(int rc, const char *what)
{
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_perf: %s failed: %s\n", what, px_strerror(rc));
        px_abort(3, "px_perf: a messaging call failed");
    }
    return rc;
}

static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        die("'%s' is not a size (bytes, with an optional k/K, m/M or g/G suffix)", s);
    switch (*end) {
    case 'k':
    case 'K':
        v *= 1024;
        end++;
        break;
    case 'm':
    case 'M':
        v *= 1048576;
        end++;
        break;
    case 'g':
    case 'G':
        v *= 1073741824.0;
        end++;
        break;
    default:
        break;
    }
    if (*end)
        die("'%s' is not a size (bytes, with an optional k/K, m/M or g/G suffix)", s);
    return (size_t)v;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int memcpy_mode(size_t bytes)
{
    char *a = aligned_alloc(4096, bytes ? bytes : 4096),
         *b = aligned_alloc(4096, bytes ? bytes : 4096);
    memset(a, 1, bytes);
    memset(b, 0, bytes);
    int iters = bytes >= (1 << 20) ? 1000 : 100000;
    for (int i = 0; i < iters / 10; i++)
        memcpy(b, a, bytes);
    double t0 = now();
    for (int i = 0; i < iters; i++) {
        memcpy(b, a, bytes);
        __asm__ volatile("" ::"r"(b) : "memory");
    }
    double t = now() - t0;
    printf("memcpy %zu bytes: %.1f MB/s\n", bytes, (double)bytes * iters / t / 1e6);
    free(a);
    free(b);
    return 0;
}

/* The hardware floor: two processes (on two cores when the mask allows)
 * pass `bytes` back and forth through shared memory with the least work a
 * copy-in/copy-out transport can do: the sender copies from its private
 * buffer into a shared slot and sets a flag in the slot's last line, the
 * receiver waits for the flag and copies into its private buffer. With
 * bytes = 0 it is one cache line passed to and fro. No library involved. */
static int floor_mode(size_t bytes)
{
    size_t slot = ((bytes + 64 + 63) & ~(size_t)63);
    char *shm = mmap(NULL, 2 * slot, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED)
        return 1;
    char *mine = aligned_alloc(4096, bytes + 4096), *theirs = aligned_alloc(4096, bytes + 4096);
    memset(mine, 1, bytes + 4096);
    memset(theirs, 0, bytes + 4096);
    cpu_set_t set;
    int cpus[2] = {-1, -1}, n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    const long iters = bytes > 65536 ? 20000 : 200000;
    /* slot 0: parent -> child, slot 1: child -> parent; flag = last 8 bytes */
    volatile uint64_t *flag[2] = {(volatile uint64_t *)(shm + slot - 8),
                                  (volatile uint64_t *)(shm + 2 * slot - 8)};
    pid_t pid = fork();
    int me = pid == 0 ? 1 : 0;
    if (cpus[me] >= 0) {
        CPU_ZERO(&set);
        CPU_SET(cpus[me], &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    double t0 = now();
    for (uint64_t v = 1; v <= (uint64_t)iters; v++) {
        if (me == 0) {
            memcpy(shm, mine, bytes);
            __atomic_store_n(flag[0], v, __ATOMIC_RELEASE);
            while (__atomic_load_n(flag[1], __ATOMIC_ACQUIRE) != v)
                __builtin_ia32_pause();
            memcpy(theirs, shm + slot, bytes);
        } else {
            while (__atomic_load_n(flag[0], __ATOMIC_ACQUIRE) != v)
                __builtin_ia32_pause();
            memcpy(theirs, shm, bytes);
            memcpy(shm + slot, mine, bytes);
            __atomic_store_n(flag[1], v, __ATOMIC_RELEASE);
        }
    }
    double t = now() - t0;
    if (me == 1)
        _exit(0);
    waitpid(pid, NULL, 0);
    if (bytes)
        printf("copy-in/copy-out ping-pong of %zu bytes between two processes: %.1f ns one-way\n",
               bytes, t / iters / 2 * 1e9);
    else
        printf("cache-line ping-pong between two processes: %.1f ns one-way\n",
               t / iters / 2 * 1e9);
    munmap(shm, 2 * slot);
    free(mine);
    free(theirs);
    return 0;
}

/* --btl: the same ping-pong straight on the transport that serves rank 1
 * (btl_sendi and the module's progress, an active-message callback on a user
 * tag), to split the one-way latency into transport and runtime. */
static volatile int btl_arrived;
static char btl_rbuf[1 << 16];
static void btl_am(struct px_btl_module *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    /* Copy the data out, as a receive into a user buffer would. */
    size_t off = 0;
    for (size_t i = 0; i < d->des_segment_count; i++) {
        size_t n = d->des_segments[i].seg_len;
        if (off + n > sizeof btl_rbuf)
            n = sizeof btl_rbuf - off;
        memcpy(btl_rbuf + off, d->des_segments[i].seg_addr, n);
        off += n;
    }
    btl_arrived++;
}

/* One message, as the runtime's eager send takes it: btl_sendi, and when it
 * says "not now", a descriptor from btl_alloc sent with btl_send (a module
 * may take only small messages through sendi, e.g. up to its eager limit, and
 * then refuse larger ones for ever, docs/btl.md). Both refusing is retried
 * after progress, for at most a minute without any send taken; an error of
 * the peer ends the benchmark. */
static void btl_send_one(px_btl_module_t *m, px_btl_endpoint_t *ep, const void *buf, size_t s)
{
    double since = 0;
    for (;;) {
        int rc = m->btl_sendi(m, ep, buf, s, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc) {
            check(rc, "btl_sendi");
            return;
        }
        px_btl_descriptor_t *d =
            m->btl_alloc(m, ep, PX_BTL_NO_ORDER, s, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
        if (d) {
            if (s)
                memcpy(d->des_segments[0].seg_addr, buf, s);
            rc = m->btl_send(m, ep, d, 200);
            if (rc >= 0)
                return;
            m->btl_free(m, d);
            if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc)
                check(rc, "btl_send");
        }
        if (0 == since) {
            since = px_wtime();
        } else if (px_wtime() - since > 60) {
            fprintf(stderr,
                    "px_perf --btl: btl/%s took no send of %zu bytes for 60 s (btl_sendi and "
                    "btl_alloc + btl_send both answer \"not now\")\n",
                    m->btl_component->base.component_name, s);
            px_abort(3, "px_perf: the transport takes no send");
        }
        m->btl_progress(m);
    }
}

static void btl_mode(const size_t *sizes, int nsizes, long iters_override)
{
    int rank = px_rank(), peer = rank == 0 ? 1 : 0;
    if (rank > 1 || px_size() < 2)
        return;
    px_btl_module_t *m = NULL;
    px_btl_endpoint_t *ep = NULL;
    if (px_rt_tool_peer_btl(peer, &m, &ep) != PX_SUCCESS || !m->btl_sendi) {
        if (rank == 0)
            printf("px_perf --btl: the transport to rank 1 has no sendi\n");
        return;
    }
    px_btl_base_register_am(200, btl_am, NULL);
    static char buf[1 << 16];
    if (rank == 0)
        printf("# px_perf --btl: %s sendi + progress + copy out, half round trip\n%10s %12s\n",
               m->btl_component->base.component_name, "bytes", "lat_us");
    for (int si = 0; si < nsizes; si++) {
        size_t s = sizes[si];
        if (s > sizeof buf || s > m->btl_max_send_size) {
            /* sendi would answer "not now" for ever: say so instead of spinning */
            if (rank == 0)
                printf("# %zu bytes skipped: above %s (%zu bytes)\n", s,
                       s > sizeof buf ? "px_perf --btl's buffer"
                                      : "the transport's btl_max_send_size",
                       s > sizeof buf ? sizeof buf : m->btl_max_send_size);
            continue;
        }
        long iters = iters_override ? iters_override : 20000, warm = iters / 10;
        double t0 = 0;
        /* Reset the count before the barrier, never after it: the peer may
         * leave the barrier first and its first message may arrive (and be
         * counted by btl_am) while this rank still progresses inside
         * px_barrier. Resetting after the barrier lost that message and both
         * ranks waited for ever (seen over verbs, where the barrier's message
         * and the first ping complete in the same CQ poll). Every message of
         * the previous size was counted before this point. */
        btl_arrived = 0;
        px_barrier();
        int expect = 0;
        for (long i = 0; i < iters + warm; i++) {
            if (i == warm)
                t0 = px_wtime();
            if (rank == 0) {
                btl_send_one(m, ep, buf, s);
                expect++;
                while (btl_arrived < expect)
                    m->btl_progress(m);
            } else {
                expect++;
                while (btl_arrived < expect)
                    m->btl_progress(m);
                btl_send_one(m, ep, buf, s);
            }
        }
        double lat = (px_wtime() - t0) / (double)iters / 2 * 1e6;
        if (rank == 0)
            printf("%10zu %12.3f\n", s, lat);
    }
    px_btl_base_register_am(200, NULL, NULL);
    px_barrier();
}

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

static void xfer_mode(const size_t *sizes, int nsizes, long iters_override, const char *mem,
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
        check(px_send(key, klen, 0, 9), "px_send");
    } else if (rank == 0) {
        px_status_t st;
        check(px_recv(key, sizeof key, 1, 9, &st), "px_recv");
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
        check(px_barrier(), "px_barrier");
        if (rank != 0) {
            check(px_barrier(), "px_barrier");
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
        check(px_barrier(), "px_barrier");
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
        check(px_barrier(), "px_barrier");
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
        check(px_barrier(), "px_barrier");
    }
    if (win)
        px_xfer_batch_free(&win);
    check(px_barrier(), "px_barrier");
    if (remote)
        px_xfer_remote_release(&remote);
    check(px_barrier(), "px_barrier");
    px_xfer_free(&target);
    px_xfer_free(&local);
    px_xfer_free(&local2);
    free(tmem);
    free(lmem);
    free(lmem2);
}

static int load_peer(const char *path, peer_row_t *rows, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("--vs: cannot open '%s'", path);
    char line[512];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        for (char *p = line; *p; p++)
            if (*p == ',')
                *p = ' ';
        double b, l, w;
        if (sscanf(line, "%lf %lf %lf", &b, &l, &w) == 3) {
            rows[n].bytes = (size_t)b;
            rows[n].lat = l;
            rows[n].bw = w;
            n++;
        }
    }
    fclose(f);
    if (n == 0)
        die("--vs '%s': no lines of the form \"bytes lat_us bw_MBps\"", path);
    return n;
}

/* --series NAME=FILE (or FILE: named after the file, less its extension). */
static px_perf_table_t *load_series(const char *arg)
{
    const char *eq = strchr(arg, '=');
    char name[256];
    const char *path = eq ? eq + 1 : arg;
    if (eq) {
        snprintf(name, sizeof name, "%.*s", (int)(eq - arg), arg);
    } else {
        const char *b = strrchr(arg, '/');
        snprintf(name, sizeof name, "%s", b ? b + 1 : arg);
        char *dot = strrchr(name, '.');
        if (dot && dot != name)
            *dot = '\0';
    }
    char err[512];
    px_perf_table_t *t = px_perf_table_load(name, path, err, sizeof err);
    if (!t)
        die("--series: %s", err);
    return t;
}

/* Draw `tables`; exit 1 with the reason when gnuplot cannot. */
static int draw(const char *out, const char *title, const char *load, const char *ycols,
                px_perf_table_t **tables, int n)
{
    char err[512];
    int rc = px_perf_plot(out, title, load, ycols, tables, n, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "px_perf: --plot: %s\n", err);
    else
        fprintf(stderr, "px_perf: wrote %s\n", out);
    for (int i = 0; i < n; i++)
        px_perf_table_free(tables[i]);
    return rc == 0 ? 0 : 1;
}

/* One ping-pong round trip between ranks 0 and 1 (the lat test). */
static void pingpong(int rank, char *buf, char *rbuf, size_t s)
{
    if (rank == 0) {
        check(px_send(buf, s, 1, 1), "px_send");
        check(px_recv(rbuf, s, 1, 1, NULL), "px_recv");
    } else {
        check(px_recv(rbuf, s, 0, 1, NULL), "px_recv");
        check(px_send(buf, s, 0, 1), "px_send");
    }
}

/* One window of the bw test: 64 sends from rank 0, a 0-byte ack back. */
static void window(int rank, char *buf, char *rbuf, size_t s)
{
    px_request_t *req[WIN];
    for (int w = 0; w < WIN; w++) {
        if (rank == 0)
            check(px_isend(buf, s, 1, 2, &req[w]), "px_isend");
        else
            check(px_irecv(rbuf, s, 0, 2, &req[w]), "px_irecv");
    }
    check(px_waitall(WIN, req, NULL), "px_waitall");
    if (rank == 0)
        check(px_recv(rbuf, 0, 1, 3, NULL), "px_recv");
    else
        check(px_send(buf, 0, 0, 3), "px_send");
}

static const peer_row_t *peer_find(const peer_row_t *rows, int n, size_t bytes)
{
    for (int i = 0; i < n; i++)
        if (rows[i].bytes == bytes)
            return &rows[i];
    return NULL;
}

int main(int argc, char **argv)
{
    int tests = T_LAT | T_BW;
    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    size_t minb = 0, maxb = 4 << 20;
    long iters_override = 0;
    int csv = 0, json = 0, btl = 0, stats = 0, xfer = 0, reps = 0;
    const char *vs = NULL, *plot = NULL, *title = NULL, *load = NULL, *ycols = NULL, *coll = NULL;
    px_perf_table_t *series[MAX_SIZES];
    int nseries = 0;
    const char *xfer_mem = "alloc", *xfer_transport = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            puts(
                "Usage: pxrun -n 2 px_perf [--test lat,bw,bibw,rate|all] [--sizes B,B,...]\n"
                "                          [--min BYTES] [--max BYTES] [--iters N]\n"
                "                          [--csv | --json] [--vs PEER_RESULTS_FILE] [--stats]\n"
                "                          [--reps R]  lat and bw in R blocks: best and median\n"
                "       px_perf --memcpy [BYTES]    memcpy bandwidth, one process\n"
                "       px_perf --empty             px_init and px_finalize only\n"
                "       px_perf --floor [BYTES]     cache-line (or copy-in/copy-out) ping-pong, "
                "no library\n"
                "       pxrun -n 2 px_perf --btl    ping-pong on the transport (btl_sendi)\n"
                "       pxrun -n 2 px_perf --xfer [--xfer-mem alloc|reg] [--transport NAME]\n"
                "                                   one-sided transfers: write+flush and read\n"
                "                                   latency, window-64 bandwidth, batch rate\n"
                "       pxrun -n N px_perf --coll OP [--sizes ...] [--iters N] [--csv]\n"
                "                                   collective latency over all ranks: allreduce,\n"
                "                                   bcast, allgather, alltoall, barrier (8 B-64 "
                "MiB)\n"
                "       pxrun -n 2 px_perf ... --plot FILE.svg|FILE.png [--title TEXT]\n"
                "                                   [--y COLUMNS]\n"
                "                           also draw the results (and --vs's) with gnuplot:\n"
                "                           latency and bandwidth against size, log-log\n"
                "       px_perf --plot FILE --series NAME=CSV [--series NAME=CSV ...]\n"
                "               [--title TEXT] [--load TEXT] [--y COLUMNS]\n"
                "                           draw saved results (bytes,lat_us,bw_MBps,...),\n"
                "                           one line per file; no run\n"
                "Defaults: --test lat,bw, sizes 0 B to 4 MiB, --y lat_us,bw_MBps;\n"
                "the chart's title gains the host, cores, date and load.");
            return 0;
        } else if (!strcmp(a, "--memcpy")) {
            return memcpy_mode(v && v[0] != '-' ? parse_size(v) : (size_t)4 << 20);
        } else if (!strcmp(a, "--floor")) {
            return floor_mode(v && v[0] != '-' ? parse_size(v) : 0);
        } else if (!strcmp(a, "--empty")) {
            check(px_init(&argc, &argv), "px_init");
            return px_finalize() == PX_SUCCESS ? 0 : 1;
        } else if (!strcmp(a, "--btl")) {
            btl = 1;
        } else if (!strcmp(a, "--coll") && v) {
            coll = v;
            i++;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--reps") && v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000)
                die("--reps '%s': expected a number of timed blocks from 1 to 1000", v);
            reps = (int)n;
            i++;
        } else if (!strcmp(a, "--xfer")) {
            xfer = 1;
        } else if (!strcmp(a, "--xfer-mem") && v) {
            if (strcmp(v, "alloc") && strcmp(v, "reg"))
                die("--xfer-mem '%s': alloc (px_xfer_alloc) or reg (registered user memory)", v);
            xfer_mem = v;
            i++;
        } else if (!strcmp(a, "--transport") && v) {
            xfer_transport = v;
            i++;
        } else if (!strcmp(a, "--csv")) {
            csv = 1;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--test") && v) {
            tests = 0;
            char *t = strdup(v), *save = NULL;
            for (char *tok = strtok_r(t, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (!strcmp(tok, "lat"))
                    tests |= T_LAT;
                else if (!strcmp(tok, "bw"))
                    tests |= T_BW;
                else if (!strcmp(tok, "bibw"))
                    tests |= T_BIBW;
                else if (!strcmp(tok, "rate"))
                    tests |= T_RATE;
                else if (!strcmp(tok, "all"))
                    tests |= T_LAT | T_BW | T_BIBW | T_RATE;
                else
                    die("--test: unknown test '%s' (lat, bw, bibw, rate, all)", tok);
            }
            free(t);
            i++;
        } else if (!strcmp(a, "--sizes") && v) {
            char *t = strdup(v), *save = NULL;
            for (char *tok = strtok_r(t, ",", &save); tok && nsizes < MAX_SIZES;
                 tok = strtok_r(NULL, ",", &save))
                sizes[nsizes++] = parse_size(tok);
            free(t);
            i++;
        } else if (!strcmp(a, "--min") && v) {
            minb = parse_size(v);
            i++;
        } else if (!strcmp(a, "--max") && v) {
            maxb = parse_size(v);
            i++;
        } else if (!strcmp(a, "--iters") && v) {
            iters_override = atol(v);
            if (iters_override <= 0)
                die("--iters '%s': expected a positive number", v);
            i++;
        } else if (!strcmp(a, "--vs") && v) {
            vs = v;
            i++;
        } else if (!strcmp(a, "--plot") && v) {
            plot = v;
            i++;
        } else if (!strcmp(a, "--title") && v) {
            title = v;
            i++;
        } else if (!strcmp(a, "--load") && v) {
            load = v;
            i++;
        } else if (!strcmp(a, "--y") && v) {
            ycols = v;
            i++;
        } else if (!strcmp(a, "--series") && v) {
            if (nseries == MAX_SIZES)
                die("--series '%s': at most 64 series", v);
            series[nseries++] = load_series(v);
            i++;
        } else {
            die("unknown option or missing value: '%s'", a);
        }
    }
    if (plot) {
        size_t n = strlen(plot);
        if (n < 5 || (strcmp(plot + n - 4, ".svg") && strcmp(plot + n - 4, ".png")))
            die("--plot '%s': the file must end in .svg or .png", plot);
    }
    if (nseries) { /* plot saved results: no run */
        if (!plot)
            die("--series needs --plot FILE (%s)", "a .svg or .png file to draw into");
        return draw(plot, title ? title : "px_perf", load, ycols, series, nseries);
    }
    if (reps && stats)
        die("%s and --stats time the ping-pong two ways: choose one", "--reps");
    if (plot && (btl || coll || xfer))
        die("--plot draws the table of a run, not %s", btl    ? "--btl's ping-pong"
                                                       : coll ? "--coll's table"
                                                              : "--xfer's table");
    if (coll)
        return px_perf_coll(coll, sizes, nsizes, iters_override, csv);
    if (!nsizes)
        for (size_t i = 0; i < sizeof default_sizes / sizeof default_sizes[0]; i++)
            if (default_sizes[i] >= minb && default_sizes[i] <= maxb)
                sizes[nsizes++] = default_sizes[i];
    peer_row_t peer[MAX_SIZES * 2];
    int npeer = vs ? load_peer(vs, peer, MAX_SIZES * 2) : 0;

    check(px_init(&argc, &argv), "px_init");
    int rank = px_rank(), size = px_size();
    if (plot && rank == 0 && !px_perf_have_gnuplot()) {
        fprintf(stderr,
                "px_perf: --plot %s: gnuplot is not on PATH (Debian: apt-get install "
                "gnuplot-nox)\n",
                plot);
        px_abort(2, "px_perf: --plot needs gnuplot");
    }
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "px_perf: needs 2 ranks (run it as: pxrun -n 2 px_perf)\n");
        px_finalize();
        return 2;
    }
    if (btl) {
        btl_mode(sizes, nsizes, iters_override);
        px_finalize();
        return 0;
    }
    if (xfer) {
        xfer_mode(sizes, nsizes, iters_override, xfer_mem, xfer_transport, csv);
        check(px_finalize(), "px_finalize");
        return 0;
    }
    size_t maxs = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > maxs)
            maxs = sizes[i];
    size_t alloc = (maxs + 4095) & ~(size_t)4095;
    if (!alloc)
        alloc = 4096;
    char *buf = aligned_alloc(4096, alloc), *rbuf = aligned_alloc(4096, alloc);
    memset(buf, 1, alloc);
    memset(rbuf, 0, alloc);
    result_t res[MAX_SIZES];
    int peer_rank = rank == 0 ? 1 : 0;
    bool active = rank < 2;

    for (int si = 0; si < nsizes; si++) {
        size_t s = sizes[si];
        result_t *r = &res[si];
        memset(r, 0, sizeof *r);
        r->bytes = s;
        if (tests & T_LAT) {
            long iters =
                iters_override ? iters_override : (s <= 4096 ? 20000 : (s <= 262144 ? 2000 : 200));
            long warm = iters / 10;
            if (reps) { /* R blocks of a tenth each, after one warm-up block */
                long blk = iters / 10 > 0 ? iters / 10 : 1;
                double *t = malloc((size_t)reps * sizeof(double));
                if (!t)
                    px_abort(3, "px_perf --reps: no memory for the block times");
                check(px_barrier(), "px_barrier");
                for (int b = -1; active && b < reps; b++) {
                    double t0 = px_wtime();
                    for (long i = 0; i < blk; i++)
                        pingpong(rank, buf, rbuf, s);
                    if (b >= 0)
                        t[b] = (px_wtime() - t0) / (double)blk / 2 * 1e6;
                }
                if (active) {
                    r->lat_med = median(t, reps);
                    r->lat = t[0];
                }
                free(t);
            } else {
                double t0 = 0, ti = 0;
                /* --stats: each round trip timed on its own, as perftest does */
                double *each = stats && rank == 0 ? malloc((size_t)iters * sizeof(double)) : NULL;
                if (stats && rank == 0 && !each)
                    px_abort(3, "px_perf --stats: no memory for the round-trip times");
                check(px_barrier(), "px_barrier");
                for (long i = 0; active && i < iters + warm; i++) {
                    if (i == warm)
                        t0 = ti = px_wtime();
                    pingpong(rank, buf, rbuf, s);
                    if (each && i >= warm) {
                        double t = px_wtime();
                        each[i - warm] = t - ti;
                        ti = t;
                    }
                }
                r->lat = active ? (px_wtime() - t0) / (double)iters / 2 * 1e6 : 0;
                if (each) {
                    qsort(each, (size_t)iters, sizeof(double), cmp_double);
                    r->lat_min = each[0] / 2 * 1e6;
                    r->lat_typ = each[iters / 2] / 2 * 1e6;
                    free(each);
                }
            }
        }
        if (tests & (T_BW | T_RATE)) {
            int bit = iters_override ? (int)iters_override : (s <= 32768 ? 200 : 20);
            int blk = reps ? (bit / 10 > 0 ? bit / 10 : 1) : bit, nblk = reps ? reps : 1;
            double tb[1000];
            check(px_barrier(), "px_barrier");
            for (int b = reps ? -1 : 0; active && b < nblk; b++) {
                double t1 = px_wtime();
                for (int k = 0; k < blk; k++)
                    window(rank, buf, rbuf, s);
                if (b >= 0)
                    tb[b] = px_wtime() - t1;
            }
            if (active) {
                if (reps) {
                    double w[1000];
                    for (int b = 0; b < nblk; b++)
                        w[b] = (double)s * WIN * blk / tb[b] / 1e6;
                    r->bw_med = median(w, nblk); /* sorts w */
                    r->bw = w[nblk - 1];
                    qsort(tb, (size_t)nblk, sizeof(double), cmp_double);
                    r->rate = (double)WIN * blk / tb[0] / 1e6;
                } else {
                    r->bw = (double)s * WIN * bit / tb[0] / 1e6;
                    r->rate = (double)WIN * bit / tb[0] / 1e6;
                }
            }
        }
        if (tests & T_BIBW) {
            int bit = iters_override ? (int)iters_override : (s <= 32768 ? 200 : 20);
            px_request_t *req[2 * WIN];
            check(px_barrier(), "px_barrier");
            double t1 = px_wtime();
            for (int k = 0; active && k < bit; k++) {
                for (int w = 0; w < WIN; w++)
                    check(px_irecv(rbuf, s, peer_rank, 4, &req[w]), "px_irecv");
                for (int w = 0; w < WIN; w++)
                    check(px_isend(buf, s, peer_rank, 4, &req[WIN + w]), "px_isend");
                check(px_waitall(2 * WIN, req, NULL), "px_waitall");
            }
            r->bibw = 2.0 * (double)s * WIN * bit / (px_wtime() - t1) / 1e6;
        }
    }

    if (rank == 0) {
        if (json) {
            printf("{\n  \"ranks\": %d,\n  \"transports\": [", size);
            for (int p = 0; p < size; p++)
                printf("%s{\"from\": 0, \"to\": %d, \"transport\": \"%s\"}", p ? ", " : "", p,
                       px_transport_name(p));
            printf("],\n  \"results\": [\n");
            for (int si = 0; si < nsizes; si++) {
                result_t *r = &res[si];
                const peer_row_t *pr = npeer ? peer_find(peer, npeer, r->bytes) : NULL;
                printf("    {\"bytes\": %zu", r->bytes);
                if (tests & T_LAT)
                    printf(", \"lat_us\": %.4f", r->lat);
                if ((tests & T_LAT) && stats)
                    printf(", \"lat_min_us\": %.4f, \"lat_typical_us\": %.4f", r->lat_min,
                           r->lat_typ);
                if ((tests & T_LAT) && reps)
                    printf(", \"lat_med_us\": %.4f", r->lat_med);
                if (tests & T_BW)
                    printf(", \"bw_MBps\": %.1f", r->bw);
                if ((tests & T_BW) && reps)
                    printf(", \"bw_med_MBps\": %.1f", r->bw_med);
                if (tests & T_BIBW)
                    printf(", \"bibw_MBps\": %.1f", r->bibw);
                if (tests & T_RATE)
                    printf(", \"rate_Mmsgps\": %.3f", r->rate);
                if (pr && (tests & T_LAT) && pr->lat > 0)
                    printf(", \"vs_lat\": %.3f", r->lat / pr->lat);
                if (pr && (tests & T_BW) && pr->bw > 0)
                    printf(", \"vs_bw\": %.3f", r->bw / pr->bw);
                printf("}%s\n", si + 1 < nsizes ? "," : "");
            }
            printf("  ]\n}\n");
        } else {
            if (!csv) {
                printf("# px_perf: ranks 0 and 1 of %d; transports from rank 0:", size);
                for (int p = 0; p < size; p++)
                    printf(" %d:%s", p, px_transport_name(p));
                printf("\n");
            }
            const char *sep = csv ? "," : " ";
            printf(csv ? "%s" : "%10s", "bytes");
            if (tests & T_LAT)
                printf(csv ? ",%s" : " %12s", "lat_us");
            if (tests & T_BW)
                printf(csv ? ",%s" : " %12s", "bw_MBps");
            if (tests & T_BIBW)
                printf(csv ? ",%s" : " %12s", "bibw_MBps");
            if (tests & T_RATE)
                printf(csv ? ",%s" : " %12s", "Mmsg_per_s");
            if (npeer && (tests & T_LAT))
                printf(csv ? ",%s" : " %10s", "vs_lat");
            if (npeer && (tests & T_BW))
                printf(csv ? ",%s" : " %10s", "vs_bw");
            if (stats && (tests & T_LAT))
                printf(csv ? ",%s,%s" : " %12s %12s", "lat_min_us", "lat_typ_us");
            if (reps && (tests & T_LAT))
                printf(csv ? ",%s" : " %12s", "lat_med_us");
            if (reps && (tests & T_BW))
                printf(csv ? ",%s" : " %12s", "bw_med_MBps");
            printf("\n");
            for (int si = 0; si < nsizes; si++) {
                result_t *r = &res[si];
                const peer_row_t *pr = npeer ? peer_find(peer, npeer, r->bytes) : NULL;
                printf(csv ? "%zu" : "%10zu", r->bytes);
                if (tests & T_LAT)
                    printf(csv ? "%s%.4f" : "%s%12.3f", sep, r->lat);
                if (tests & T_BW)
                    printf(csv ? "%s%.1f" : "%s%12.1f", sep, r->bw);
                if (tests & T_BIBW)
                    printf(csv ? "%s%.1f" : "%s%12.1f", sep, r->bibw);
                if (tests & T_RATE)
                    printf(csv ? "%s%.3f" : "%s%12.3f", sep, r->rate);
                if (npeer && (tests & T_LAT)) {
                    if (pr && pr->lat > 0)
                        printf(csv ? "%s%.3f" : "%s%10.3f", sep, r->lat / pr->lat);
                    else
                        printf(csv ? "%s" : "%s%10s", sep, "-");
                }
                if (npeer && (tests & T_BW)) {
                    if (pr && pr->bw > 0)
                        printf(csv ? "%s%.3f" : "%s%10.3f", sep, r->bw / pr->bw);
                    else
                        printf(csv ? "%s" : "%s%10s", sep, "-");
                }
                if (stats && (tests & T_LAT))
                    printf(csv ? "%s%.4f%s%.4f" : "%s%12.3f%s%12.3f", sep, r->lat_min, sep,
                           r->lat_typ);
                if (reps && (tests & T_LAT))
                    printf(csv ? "%s%.4f" : "%s%12.3f", sep, r->lat_med);
                if (reps && (tests & T_BW))
                    printf(csv ? "%s%.1f" : "%s%12.1f", sep, r->bw_med);
                printf("\n");
            }
        }
        fflush(stdout);
    }
    free(buf);
    free(rbuf);
    /* The transport's name belongs to the runtime: keep it past px_finalize. */
    char line[128];
    snprintf(line, sizeof line, "plexus %s", size > 1 ? px_transport_name(1) : "");
    check(px_finalize(), "px_finalize");
    if (plot && rank == 0) {
        /* Drawn after px_finalize: no transport is open when gnuplot is forked. */
        const char *names[4];
        int ncols = 0;
        if (tests & T_LAT)
            names[ncols++] = "lat_us";
        if (tests & T_BW)
            names[ncols++] = "bw_MBps";
        if (tests & T_BIBW)
            names[ncols++] = "bibw_MBps";
        if (tests & T_RATE)
            names[ncols++] = "Mmsg_per_s";
        px_perf_table_t *tab[2] = {px_perf_table_new(line, ncols, names), NULL};
        int ntab = 1;
        for (int si = 0; tab[0] && si < nsizes; si++) {
            double row[5] = {(double)res[si].bytes};
            int k = 1;
            if (tests & T_LAT)
                row[k++] = res[si].lat;
            if (tests & T_BW)
                row[k++] = res[si].bw;
            if (tests & T_BIBW)
                row[k++] = res[si].bibw;
            if (tests & T_RATE)
                row[k++] = res[si].rate;
            px_perf_table_add(tab[0], row);
        }
        if (tab[0] && npeer) { /* the --vs peer, named after its file */
            const char *b = strrchr(vs, '/');
            char pname[256];
            snprintf(pname, sizeof pname, "%s", b ? b + 1 : vs);
            char *dot = strrchr(pname, '.');
            if (dot && dot != pname)
                *dot = '\0';
            const char *pc[2] = {"lat_us", "bw_MBps"};
            tab[1] = px_perf_table_new(pname, 2, pc);
            for (int i = 0; tab[1] && i < npeer; i++) {
                double row[3] = {(double)peer[i].bytes, peer[i].lat, peer[i].bw};
                px_perf_table_add(tab[1], row);
            }
            ntab += tab[1] != NULL;
        }
        if (!tab[0]) {
            fprintf(stderr, "px_perf: --plot: out of memory\n");
            return 1;
        }
        char head[256];
        snprintf(head, sizeof head, "px_perf: ranks 0 and 1 of %d over %s", size, line + 7);
        return draw(plot, title ? title : head, load, ycols, tab, ntab);
    }
    return 0;
}
