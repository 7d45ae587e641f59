/*
 * coll_mpi.c: the MPI side of test/bench/compare-coll.sh: the same
 * collectives, sizes and timing method as `px_perf --coll OP`
 * (tools/px_perf/px_perf_coll.c), so the two print comparable rows.
 *
 *   mpicc -O2 -o coll_mpi coll_mpi.c
 *   mpirun -np 4 --bind-to core ./coll_mpi allreduce [--sizes 8,64,...] [--csv]
 *
 * Per size: a tenth of the iterations (at least 2) as warm-up, a barrier,
 * then `iters` calls back to back; each rank's time is the average per call
 * and the figure the largest over the ranks. Iterations: 2000 up to 4 KiB,
 * 200 up to 256 KiB, 50 up to 4 MiB, 10 above (5 from 32 MiB). allreduce and
 * bcast: the vector (allreduce: doubles, sum); allgather and alltoall: one
 * rank's block; barrier: one row.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t coll_sizes[] = {8,      64,      512,     4096,     32768,
                                    262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20};

static long iters_for(size_t bytes)
{
    if (bytes <= 4096)
        return 2000;
    if (bytes <= 262144)
        return 200;
    if (bytes <= (4u << 20))
        return 50;
    return bytes < (32u << 20) ? 10 : 5;
}

static int call(int which, void *s, void *r, size_t bytes)
{
    switch (which) {
    case 0:
        return MPI_Allreduce(s, r, (int)(bytes / 8 ? bytes / 8 : 1), MPI_DOUBLE, MPI_SUM,
                             MPI_COMM_WORLD);
    case 1:
        return MPI_Bcast(s, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    case 2:
        return MPI_Allgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    case 3:
        return MPI_Alltoall(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    default:
        return MPI_Barrier(MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    static const char *const names[] = {"allreduce", "bcast", "allgather", "alltoall", "barrier"};
    int which = -1, csv = 0, nsizes = 0;
    size_t sizes[64];
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--csv"))
            csv = 1;
        else if (0 == strcmp(argv[i], "--sizes") && i + 1 < argc) {
            for (char *t = strtok(argv[++i], ","); t && nsizes < 64; t = strtok(NULL, ","))
                sizes[nsizes++] = strtoull(t, NULL, 10);
        } else
            for (int k = 0; k < 5; ++k)
                if (0 == strcmp(argv[i], names[k]))
                    which = k;
    }
    if (which < 0) {
        if (0 == me)
            fprintf(stderr, "usage: coll_mpi allreduce|bcast|allgather|alltoall|barrier "
                            "[--sizes B,...] [--csv]\n");
        MPI_Finalize();
        return 2;
    }
    if (0 == nsizes)
        for (size_t i = 0; i < sizeof(coll_sizes) / sizeof(coll_sizes[0]); ++i)
            sizes[nsizes++] = coll_sizes[i];
    if (4 == which)
        nsizes = 1;
    size_t maxb = 8;
    for (int i = 0; i < nsizes; ++i)
        maxb = sizes[i] > maxb ? sizes[i] : maxb;
    size_t sbytes = maxb, rbytes = maxb;
    if (2 == which)
        rbytes = maxb * (size_t)p;
    if (3 == which)
        sbytes = rbytes = maxb * (size_t)p;
    char *s = malloc(sbytes), *r = malloc(rbytes);
    memset(s, 0, sbytes);
    memset(r, 0, rbytes);
    if (0 == me) {
        if (csv)
            printf("op,ranks,bytes,usec\n");
        else
            printf("# coll_mpi %s: %d ranks, time per call (largest over the ranks)\n%-10s %12s\n",
                   names[which], p, "bytes", "usec");
    }
    for (int i = 0; i < nsizes; ++i) {
        size_t bytes = 4 == which ? 0 : sizes[i];
        long iters = iters_for(bytes), warm = iters / 10 > 2 ? iters / 10 : 2;
        for (long k = 0; k < warm; ++k)
            call(which, s, r, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long k = 0; k < iters; ++k)
            call(which, s, r, bytes);
        double t = (MPI_Wtime() - t0) / (double)iters, tmax = 0;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (0 == me) {
            if (csv)
                printf("%s,%d,%zu,%.3f\n", names[which], p, bytes, tmax * 1e6);
            else
                printf("%-10zu %12.3f\n", bytes, tmax * 1e6);
            fflush(stdout);
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
