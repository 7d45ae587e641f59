/*
 * mpi_pingpong_px: the project's MPI peer for px_perf (test/bench/compare-shm.sh).
 * Same method as px_perf and ../shared/bench/mpi_pingpong.c: ping-pong
 * half round trip between ranks 0 and 1 (20000 / 2000 / 200 iterations by
 * size, a tenth more as warm-up), and streaming bandwidth as windows of 64
 * non-blocking sends closed by a zero-byte ack (200 or 20 windows).
 *
 *   mpirun -np 2 mpi_pingpong_px [--csv] [--sizes B,B,...] [--reps R]
 *   mpirun -np 2 mpi_pingpong_px --empty     MPI_Init + MPI_Finalize only
 *
 * --reps R, as px_perf --reps: each test runs one warm-up block and R timed
 * blocks of a tenth of the iterations (windows) each; lat_us and bw_MBps are
 * the best block, and the columns lat_med_us and bw_med_MBps the median block.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const long default_sizes[] = {0,      1,      8,       64,      256,    512,   1024,
                                     2048,   4096,   8192,    16384,   32768,  65536, 131072,
                                     262144, 524288, 1 << 20, 2 << 20, 4 << 20};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void pingpong(int rank, char *buf, char *rbuf, int s)
{
    if (rank == 0) {
        MPI_Send(buf, s, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(rbuf, s, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, s, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, s, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
}

static void window(int rank, char *buf, char *rbuf, int s)
{
    enum { WIN = 64 };
    MPI_Request req[WIN];
    for (int w = 0; w < WIN; w++) {
        if (rank == 0)
            MPI_Isend(buf, s, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
        else
            MPI_Irecv(rbuf, s, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
    }
    MPI_Waitall(WIN, req, MPI_STATUSES_IGNORE);
    if (rank == 0)
        MPI_Recv(rbuf, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(buf, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int csv = 0, n = 0, reps = 0;
    long sizes[64];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--empty")) {
            MPI_Finalize();
            return 0;
        } else if (!strcmp(argv[i], "--csv")) {
            csv = 1;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > 1000) {
                fprintf(stderr, "mpi_pingpong_px: --reps %s: expected 1..1000 blocks\n", argv[i]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            char *t = argv[++i], *save = NULL;
            for (char *tok = strtok_r(t, ",", &save); tok && n < 64;
                 tok = strtok_r(NULL, ",", &save))
                sizes[n++] = atol(tok);
        }
    }
    if (!n)
        for (size_t i = 0; i < sizeof default_sizes / sizeof default_sizes[0]; i++)
            sizes[n++] = default_sizes[i];
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    long maxs = 4096;
    for (int i = 0; i < n; i++)
        if (sizes[i] > maxs)
            maxs = sizes[i];
    size_t alloc = ((size_t)maxs + 4095) & ~(size_t)4095;
    char *buf = aligned_alloc(4096, alloc), *rbuf = aligned_alloc(4096, alloc);
    memset(buf, 1, alloc);
    memset(rbuf, 0, alloc);
    int active = rank < 2;
    if (rank == 0) {
        if (csv)
            printf("bytes,lat_us,bw_MBps%s\n", reps ? ",lat_med_us,bw_med_MBps" : "");
        else if (reps)
            printf("%10s %12s %12s %12s %12s\n", "bytes", "lat_us", "bw_MBps", "lat_med_us",
                   "bw_med_MBps");
        else
            printf("%10s %12s %12s\n", "bytes", "lat_us", "bw_MBps");
    }
    double *t = malloc(sizeof(double) * (reps ? reps : 1));
    for (int si = 0; si < n; si++) {
        int s = (int)sizes[si];
        int iters = s <= 4096 ? 20000 : (s <= 262144 ? 2000 : 200), warm = iters / 10;
        int bit = s <= 32768 ? 200 : 20;
        double lat = 0, bw = 0, lat_med = 0, bw_med = 0;
        if (reps) {
            int blk = iters / 10, wblk = bit / 10 > 0 ? bit / 10 : 1;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int b = -1; active && b < reps; b++) {
                double t0 = MPI_Wtime();
                for (int i = 0; i < blk; i++)
                    pingpong(rank, buf, rbuf, s);
                if (b >= 0)
                    t[b] = (MPI_Wtime() - t0) / blk / 2 * 1e6;
            }
            if (active) {
                lat_med = median(t, reps);
                lat = t[0];
            }
            MPI_Barrier(MPI_COMM_WORLD);
            for (int b = -1; active && b < reps; b++) {
                double t0 = MPI_Wtime();
                for (int k = 0; k < wblk; k++)
                    window(rank, buf, rbuf, s);
                if (b >= 0)
                    t[b] = (double)s * 64 * wblk / (MPI_Wtime() - t0) / 1e6;
            }
            if (active) {
                bw_med = median(t, reps);
                bw = t[reps - 1];
            }
        } else {
            double t0 = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; active && i < iters + warm; i++) {
                if (i == warm)
                    t0 = MPI_Wtime();
                pingpong(rank, buf, rbuf, s);
            }
            lat = (MPI_Wtime() - t0) / iters / 2 * 1e6;
            MPI_Barrier(MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            for (int k = 0; active && k < bit; k++)
                window(rank, buf, rbuf, s);
            bw = (double)s * 64 * bit / (MPI_Wtime() - t1) / 1e6;
        }
        if (rank == 0) {
            if (reps)
                printf(csv ? "%d,%.4f,%.1f,%.4f,%.1f\n" : "%10d %12.3f %12.1f %12.3f %12.1f\n", s,
                       lat, bw, lat_med, bw_med);
            else
                printf(csv ? "%d,%.4f,%.1f\n" : "%10d %12.3f %12.1f\n", s, lat, bw);
            fflush(stdout);
        }
    }
    free(t);
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
