/*
 * mpi_pingpong_px: the project's MPI peer for px_perf (test/bench/compare-shm.sh).
 * Same method as px_perf and ../shared/bench/mpi_pingpong.c: ping-pong
 * half round trip between ranks 0 and 1 (20000 / 2000 / 200 iterations by
 * size, a tenth more as warm-up), and streaming bandwidth as windows of 64
 * non-blocking sends closed by a zero-byte ack (200 or 20 windows).
 *
 *   mpirun -np 2 mpi_pingpong_px [--csv] [--sizes B,B,...]
 *   mpirun -np 2 mpi_pingpong_px --empty     MPI_Init + MPI_Finalize only
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const long default_sizes[] = {0,      1,      8,       64,      256,    512,   1024,
                                     2048,   4096,   8192,    16384,   32768,  65536, 131072,
                                     262144, 524288, 1 << 20, 2 << 20, 4 << 20};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int csv = 0, n = 0;
    long sizes[64];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--empty")) {
            MPI_Finalize();
            return 0;
        } else if (!strcmp(argv[i], "--csv")) {
            csv = 1;
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
    if (rank == 0)
        printf(csv ? "bytes,lat_us,bw_MBps\n" : "%10s %12s %12s\n", "bytes", "lat_us", "bw_MBps");
    for (int si = 0; si < n; si++) {
        int s = (int)sizes[si];
        int iters = s <= 4096 ? 20000 : (s <= 262144 ? 2000 : 200), warm = iters / 10;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; active && i < iters + warm; i++) {
            if (i == warm)
                t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, s, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, s, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, s, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, s, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        double lat = (MPI_Wtime() - t0) / iters / 2 * 1e6;
        int win = 64, bit = s <= 32768 ? 200 : 20;
        MPI_Request req[64];
        MPI_Barrier(MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        for (int k = 0; active && k < bit; k++) {
            for (int w = 0; w < win; w++) {
                if (rank == 0)
                    MPI_Isend(buf, s, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
                else
                    MPI_Irecv(rbuf, s, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
            }
            MPI_Waitall(win, req, MPI_STATUSES_IGNORE);
            if (rank == 0)
                MPI_Recv(rbuf, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(buf, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        }
        double bw = (double)s * win * bit / (MPI_Wtime() - t1) / 1e6;
        if (rank == 0)
            printf(csv ? "%d,%.4f,%.1f\n" : "%10d %12.3f %12.1f\n", s, lat, bw);
    }
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
