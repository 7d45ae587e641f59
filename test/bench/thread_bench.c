/*
 * thread_bench: latency and message rate with T threads per process, two
 * processes (issue 25; test/bench/compare-threads.sh). One source, two
 * programs of the same shape: thread_bench_px (Plexus) and, compiled with
 * mpicc -DTB_MPI, thread_bench_mpi (MPI initialised with
 * MPI_THREAD_MULTIPLE).
 *
 *   pxrun -n 2 thread_bench_px [OPTIONS]
 *   mpirun -np 2 thread_bench_mpi [OPTIONS]
 *
 *   --threads T     threads per process (1..64, default 1)
 *   --level L       Plexus only: multiple (px_init_thread(PX_THREAD_MULTIPLE),
 *                   the default) or serialized (px_init; T must be 1)
 *   --comm C        MPI only: dup (default: each thread its own duplicate of
 *                   MPI_COMM_WORLD, the usual MPI practice) or world (every
 *                   thread on MPI_COMM_WORLD, its own tag, as Plexus does)
 *   --iters N       round trips per thread and block (default 2000)
 *   --windows W     windows per thread and block (default 20)
 *   --reps R        timed blocks after one warm-up block (default 9)
 *   --settle MS     counting, not timing: in the rate part the receiver
 *                   sleeps MS milliseconds after posting a window's receives
 *                   and before its waitall, so the window's messages are all
 *                   there when it waits; instructions counted in the window's
 *                   calls (valgrind --tool=callgrind --toggle-collect=px_isend
 *                   ... or MPI_Isend ...) are then each library's own cost
 *                   per message, without polling for a message not there
 *                   yet (docs/measurements/threads.md)
 *   --csv           one line "threads,lat_us,rate_mps,lat_best_us,rate_best_mps"
 *
 * Thread t of rank 0 works with thread t of rank 1 and nobody else, on tag t
 * (acks on tag 1000 + t). Latency: each thread ping-pongs 8 bytes with its
 * peer thread, N round trips, all threads at once; a block's figure is the
 * block's time (from a barrier of the process's threads to the next) / N / 2:
 * the one-way latency each thread sees beside the others. Rate: each thread
 * of rank 0 sends W windows of 64 non-blocking 8-byte sends, its peer
 * receives them with non-blocking receives and answers each window with one
 * 1-byte message; a block's figure is T * W * 64 / the block's time. Printed:
 * the median block (and the best block), by rank 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WIN  64
#define MAXT 64

#ifdef TB_MPI
#include <mpi.h>
static MPI_Comm comms[MAXT];
typedef MPI_Request tb_req_t;
#define TB_SEND(b, n, p, tag, t)     MPI_Send(b, n, MPI_CHAR, p, tag, comms[t])
#define TB_RECV(b, n, p, tag, t)     MPI_Recv(b, n, MPI_CHAR, p, tag, comms[t], MPI_STATUS_IGNORE)
#define TB_ISEND(b, n, p, tag, t, r) MPI_Isend(b, n, MPI_CHAR, p, tag, comms[t], r)
#define TB_IRECV(b, n, p, tag, t, r) MPI_Irecv(b, n, MPI_CHAR, p, tag, comms[t], r)
#define TB_WAITALL(n, r)             MPI_Waitall(n, r, MPI_STATUSES_IGNORE)
#define TB_WTIME()                   MPI_Wtime()
#define TB_NAME                      "thread_bench_mpi"
#else
#include "plexus.h"
typedef px_request_t *tb_req_t;
#define TB_SEND(b, n, p, tag, t)     px_send(b, n, p, tag)
#define TB_RECV(b, n, p, tag, t)     px_recv(b, n, p, tag, NULL)
#define TB_ISEND(b, n, p, tag, t, r) px_isend(b, n, p, tag, r)
#define TB_IRECV(b, n, p, tag, t, r) px_irecv(b, n, p, tag, r)
#define TB_WAITALL(n, r)             px_waitall(n, r, NULL)
#define TB_WTIME()                   px_wtime()
#define TB_NAME                      "thread_bench_px"
#endif

static int nthreads = 1, iters = 2000, windows = 20, reps = 9, settle_ms = 0, me;
static pthread_barrier_t bar;
static double lat_block[1000], rate_block[1000];

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, other = 1 - me;
    char buf[WIN][8], pp[8] = {0}, ack = 0;
    tb_req_t r[WIN];
    for (int b = -1; b < reps; ++b) { /* block -1: warm-up */
        pthread_barrier_wait(&bar);
        double t0 = TB_WTIME();
        for (int i = 0; i < iters; ++i) {
            if (0 == me) {
                TB_SEND(pp, 8, other, t, t);
                TB_RECV(pp, 8, other, t, t);
            } else {
                TB_RECV(pp, 8, other, t, t);
                TB_SEND(pp, 8, other, t, t);
            }
        }
        pthread_barrier_wait(&bar);
        if (0 == t && b >= 0)
            lat_block[b] = (TB_WTIME() - t0) / iters / 2 * 1e6;
        pthread_barrier_wait(&bar);
        t0 = TB_WTIME();
        for (int w = 0; w < windows; ++w) {
            for (int i = 0; i < WIN; ++i) {
                if (0 == me)
                    TB_ISEND(buf[i], 8, other, t, t, &r[i]);
                else
                    TB_IRECV(buf[i], 8, other, t, t, &r[i]);
            }
            if (settle_ms && 0 != me)
                usleep((useconds_t)settle_ms * 1000);
            TB_WAITALL(WIN, r);
            if (0 == me)
                TB_RECV(&ack, 1, other, 1000 + t, t);
            else
                TB_SEND(&ack, 1, other, 1000 + t, t);
        }
        pthread_barrier_wait(&bar);
        if (0 == t && b >= 0)
            rate_block[b] = (double)nthreads * windows * WIN / (TB_WTIME() - t0) / 1e6;
    }
    return NULL;
}

static void usage(const char *why)
{
    fprintf(stderr,
            TB_NAME ": %s\nusage: " TB_NAME " [--threads 1..64] [--level multiple|serialized] "
                    "[--comm dup|world] [--iters N] [--windows W] [--reps 1..1000] "
                    "[--settle MS] [--csv]\n",
            why);
    exit(2);
}

static int int_arg(const char *opt, const char *v, int lo, int hi)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
        fprintf(stderr, TB_NAME ": %s '%s': expected an integer %d..%d\n", opt, v, lo, hi);
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    int csv = 0, multiple = 1, dup = 1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--csv")) {
            csv = 1;
            continue;
        }
        if (!v)
            usage("an option is missing its value or is unknown");
        ++i;
        if (!strcmp(a, "--threads"))
            nthreads = int_arg(a, v, 1, MAXT);
        else if (!strcmp(a, "--iters"))
            iters = int_arg(a, v, 1, 100000000);
        else if (!strcmp(a, "--windows"))
            windows = int_arg(a, v, 1, 100000000);
        else if (!strcmp(a, "--reps"))
            reps = int_arg(a, v, 1, 1000);
        else if (!strcmp(a, "--settle"))
            settle_ms = int_arg(a, v, 0, 10000);
        else if (!strcmp(a, "--level") && (!strcmp(v, "multiple") || !strcmp(v, "serialized")))
            multiple = !strcmp(v, "multiple");
        else if (!strcmp(a, "--comm") && (!strcmp(v, "dup") || !strcmp(v, "world")))
            dup = !strcmp(v, "dup");
        else
            usage("unknown option or value");
    }
    if (!multiple && nthreads > 1)
        usage("--level serialized allows one thread only (--threads 1)");
    int provided = -1, size;
#ifdef TB_MPI
    (void)multiple;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, TB_NAME ": MPI_Init_thread gave level %d, not MPI_THREAD_MULTIPLE\n",
                provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int t = 0; t < nthreads; ++t) {
        if (dup)
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
        else
            comms[t] = MPI_COMM_WORLD;
    }
#else
    (void)dup;
    int rc = multiple ? px_init_thread(PX_THREAD_MULTIPLE, &provided) : px_init(&argc, &argv);
    if (rc != PX_SUCCESS || (multiple && provided != PX_THREAD_MULTIPLE)) {
        fprintf(stderr, TB_NAME ": px_init%s failed (rc %d, provided %d)\n",
                multiple ? "_thread(PX_THREAD_MULTIPLE)" : "", rc, provided);
        return 1;
    }
    me = px_rank();
    size = px_size();
#endif
    if (size != 2) {
        fprintf(stderr, TB_NAME ": runs on 2 processes, not %d\n", size);
        exit(2);
    }
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    pthread_t th[MAXT];
    for (int t = 0; t < nthreads; ++t)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < nthreads; ++t)
        pthread_join(th[t], NULL);
    qsort(lat_block, (size_t)reps, sizeof(double), cmp);
    qsort(rate_block, (size_t)reps, sizeof(double), cmp);
    double lat = lat_block[reps / 2], rate = rate_block[reps / 2];
    if (0 == me) {
        if (csv)
            printf("%d,%.4f,%.4f,%.4f,%.4f\n", nthreads, lat, rate, lat_block[0],
                   rate_block[reps - 1]);
        else
            printf("threads %d: latency %.3f us (best %.3f), rate %.3f M msg/s (best %.3f)\n",
                   nthreads, lat, lat_block[0], rate, rate_block[reps - 1]);
        fflush(stdout);
    }
    pthread_barrier_destroy(&bar);
#ifdef TB_MPI
    for (int t = 0; dup && t < nthreads; ++t)
        MPI_Comm_free(&comms[t]);
    MPI_Finalize();
#else
    px_finalize();
#endif
    return 0;
}
