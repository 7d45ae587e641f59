/*
 * mpi_connect: Open MPI's MPI_Comm_connect/MPI_Comm_accept connection setup,
 * the peer of px_perf --connect (test/bench/compare-connect.sh). Each side is
 * started on its own (an mpirun of 1 process each, both given the same
 * ompi-server), the port name passed through a file:
 *
 *   mpi_connect accept PORTFILE N    open a port, write it to PORTFILE, accept N+1
 *                                    connections one after another: each, receive
 *                                    an int, send it back, MPI_Comm_disconnect
 *   mpi_connect connect PORTFILE N   N+1 connections: the time from MPI_Comm_connect
 *                                    to the first round trip done (setup_us), and of
 *                                    MPI_Comm_connect alone (connect_us); prints the
 *                                    first, then the median, p90, p99 and largest of
 *                                    the others, as px_perf --connect does
 *
 * Build: mpicc -O2 -o mpi_connect mpi_connect.c
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *v, int n, double q)
{
    int i = (int)(q * n + 0.999999) - 1;
    return v[i < 0 ? 0 : (i >= n ? n - 1 : i)];
}

static void print_setup(const char *what, double first, double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    printf("%-10s %6d %10.1f %10.1f %10.1f %10.1f %10.1f\n", what, n, first * 1e6,
           quantile(v, n, 0.5) * 1e6, quantile(v, n, 0.9) * 1e6, quantile(v, n, 0.99) * 1e6,
           v[n - 1] * 1e6);
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "accept") && strcmp(argv[1], "connect")) ||
        atoi(argv[3]) < 1) {
        fprintf(stderr, "usage: mpi_connect accept|connect PORTFILE N (N >= 1)\n");
        return 2;
    }
    int n = atoi(argv[3]);
    MPI_Init(&argc, &argv);
    char port[MPI_MAX_PORT_NAME] = "";
    if (!strcmp(argv[1], "accept")) {
        MPI_Open_port(MPI_INFO_NULL, port);
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
        FILE *f = fopen(tmp, "w");
        if (!f) {
            perror(tmp);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        fprintf(f, "%s\n", port);
        fclose(f);
        rename(tmp, argv[2]);
        for (int i = 0; i <= n; i++) {
            MPI_Comm inter;
            int v;
            MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
            MPI_Recv(&v, 1, MPI_INT, 0, 1, inter, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_INT, 0, 2, inter);
            MPI_Comm_disconnect(&inter);
        }
        MPI_Close_port(port);
    } else {
        for (int i = 0; i < 600 && !port[0]; i++) { /* wait up to 60 s for the file */
            FILE *f = fopen(argv[2], "r");
            if (f) {
                if (!fgets(port, sizeof port, f))
                    port[0] = 0;
                fclose(f);
                port[strcspn(port, "\n")] = 0;
            }
            if (!port[0])
                usleep(100000);
        }
        if (!port[0]) {
            fprintf(stderr, "mpi_connect: no port name in %s after 60 s\n", argv[2]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        double *setup = malloc(sizeof(double) * (size_t)(n + 1));
        double *conn = malloc(sizeof(double) * (size_t)(n + 1));
        for (int i = 0; i <= n; i++) {
            MPI_Comm inter;
            int v = i, w = -1;
            double t0 = MPI_Wtime();
            MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
            double t1 = MPI_Wtime();
            MPI_Send(&v, 1, MPI_INT, 0, 1, inter);
            MPI_Recv(&w, 1, MPI_INT, 0, 2, inter, MPI_STATUS_IGNORE);
            double t2 = MPI_Wtime();
            if (w != v) {
                fprintf(stderr, "mpi_connect: echo %d, expected %d\n", w, v);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            setup[i] = t2 - t0;
            conn[i] = t1 - t0;
            MPI_Comm_disconnect(&inter);
        }
        printf("%-10s %6s %10s %10s %10s %10s %10s\n", "what", "n", "first", "median", "p90", "p99",
               "max");
        print_setup("setup_us", setup[0], setup + 1, n);
        print_setup("connect_us", conn[0], conn + 1, n);
        free(setup);
        free(conn);
    }
    MPI_Finalize();
    return 0;
}
