/*
 * osc_mpi.c: MPI one-sided peer of px_perf --xfer (test/bench/compare-xfer.sh).
 * Rank 0 puts into and gets from rank 1's window under MPI_Win_lock_all, as
 * px_perf does with the transfer engine:
 *   latency:   MPI_Put + MPI_Win_flush (MPI_Get + MPI_Win_flush), per size;
 *   bandwidth: windows of 64 MPI_Put (MPI_Get), then MPI_Win_flush.
 * The window is MPI_Win_allocate (--win allocate: the library's memory,
 * shared memory on one host) or MPI_Win_create over malloc'ed memory
 * (--win create: the user's memory). Which osc component runs is mpirun's
 * choice (--mca osc rdma / --mca osc ucx).
 *
 *   mpicc -O2 -o osc_mpi osc_mpi.c
 *   mpirun -np 2 --bind-to core --mca osc rdma --mca btl self,vader ./osc_mpi --win allocate --csv
 *   mpirun -np 2 --bind-to core --mca pml ucx --mca osc ucx ./osc_mpi --win create
 * Output (--csv): bytes,put_us,get_us,put_MBps,get_MBps. The build puts it in
 * build/test/bench/osc_mpi when mpicc is found.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN 64

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'k' || *end == 'K')
        v *= 1024;
    else if (*end == 'm' || *end == 'M')
        v *= 1048576;
    return (size_t)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *kind = "allocate";
    size_t sizes[64];
    int nsizes = 0, csv = 0;
    long iters_override = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--win") && i + 1 < argc)
            kind = argv[++i];
        else if (!strcmp(argv[i], "--csv"))
            csv = 1;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters_override = atol(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            char *t = strdup(argv[++i]), *save = NULL;
            for (char *tok = strtok_r(t, ",", &save); tok && nsizes < 64;
                 tok = strtok_r(NULL, ",", &save))
                sizes[nsizes++] = parse_size(tok);
            free(t);
        }
    }
    if (!nsizes) {
        size_t d[] = {8, 64, 512, 4096, 32768, 65536, 262144, 1048576, 4194304};
        for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
            sizes[nsizes++] = d[i];
    }
    if (size < 2) {
        if (!rank)
            fprintf(stderr, "osc_mpi: run it with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    size_t max = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > max)
            max = sizes[i];
    char *origin = malloc(max), *mem = NULL;
    memset(origin, 1, max);
    MPI_Win win;
    if (!strcmp(kind, "create")) {
        mem = malloc(max);
        memset(mem, 0, max);
        MPI_Win_create(mem, (MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate((MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        memset(mem, 0, max);
    }
    if (!rank && !csv)
        printf("# osc_mpi: MPI_Win_%s window, rank 0 -> rank 1\n", kind);
    if (!rank)
        printf(csv ? "bytes,put_us,get_us,put_MBps,get_MBps\n" : "%10s %12s %12s %12s %12s\n",
               "bytes", "put_us", "get_us", "put_MBps", "get_MBps");
    MPI_Win_lock_all(0, win);
    for (int si = 0; si < nsizes; si++) {
        size_t s = sizes[si];
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            long iters =
                iters_override ? iters_override : (s <= 4096 ? 100000 : (s <= 262144 ? 5000 : 300));
            long warm = iters / 10;
            double t0 = 0, lat[2], bw[2];
            for (int dir = 0; dir < 2; dir++) {
                for (long i = 0; i < iters + warm; i++) {
                    if (i == warm)
                        t0 = MPI_Wtime();
                    if (dir == 0)
                        MPI_Put(origin, (int)s, MPI_BYTE, 1, 0, (int)s, MPI_BYTE, win);
                    else
                        MPI_Get(origin, (int)s, MPI_BYTE, 1, 0, (int)s, MPI_BYTE, win);
                    MPI_Win_flush(1, win);
                }
                lat[dir] = (MPI_Wtime() - t0) / (double)iters * 1e6;
                long nwin = iters_override ? iters_override
                                           : (s <= 32768 ? 2000 : (s <= 1048576 ? 100 : 20));
                for (long k = 0; k < nwin + 1; k++) {
                    if (k == 1)
                        t0 = MPI_Wtime();
                    for (int w = 0; w < WIN; w++) {
                        if (dir == 0)
                            MPI_Put(origin, (int)s, MPI_BYTE, 1, 0, (int)s, MPI_BYTE, win);
                        else
                            MPI_Get(origin, (int)s, MPI_BYTE, 1, 0, (int)s, MPI_BYTE, win);
                    }
                    MPI_Win_flush(1, win);
                }
                bw[dir] = (double)s * WIN * (double)nwin / (MPI_Wtime() - t0) / 1e6;
            }
            printf(csv ? "%zu,%.4f,%.4f,%.1f,%.1f\n" : "%10zu %12.4f %12.4f %12.1f %12.1f\n", s,
                   lat[0], lat[1], bw[0], bw[1]);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    if (!strcmp(kind, "create"))
        free(mem);
    free(origin);
    MPI_Finalize();
    return 0;
}
