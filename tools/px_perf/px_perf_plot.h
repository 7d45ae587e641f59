/*
 * px_perf_plot.h: px_perf's pictures. Tables of results (bytes and named
 * columns: lat_us, bw_MBps, ...) from a run or read from CSV files, drawn by
 * gnuplot as one panel per column, against message size, log-log, one line
 * per table. Used by px_perf.c and px_perf_msg.c (--plot) only; test/bench/plot.sh reaches it
 * through px_perf's command line.
 */
#ifndef PX_PERF_PLOT_H
#define PX_PERF_PLOT_H

#include <stddef.h>

typedef struct px_perf_table {
    char *name;   /* the line's name in the key */
    int ncols;    /* columns after bytes */
    char **cols;  /* their names, from the file's header */
    int nrows;    /* rows read */
    double *rows; /* nrows x (1 + ncols): bytes, then the columns */
} px_perf_table_t;

/* A table with these columns and no rows yet; add rows with
 * px_perf_table_add. NULL when memory runs out. */
px_perf_table_t *px_perf_table_new(const char *name, int ncols, const char *const *cols);
int px_perf_table_add(px_perf_table_t *t, const double *row);
/* Read a CSV (or space separated) file: an optional header naming the
 * columns, the first being the message size (without a header:
 * bytes,lat_us,bw_MBps, as mpi_pingpong.c prints), then rows of numbers;
 * '#' lines are skipped. NULL with the reason in err when the file cannot be
 * read or holds no row. */
px_perf_table_t *px_perf_table_load(const char *name, const char *path, char *err, size_t errlen);
void px_perf_table_free(px_perf_table_t *t);

/* Whether gnuplot can be run (an executable "gnuplot" on PATH). */
int px_perf_have_gnuplot(void);

/* Draw the tables into `out` (.svg or .png): one panel per column named in
 * the comma list `ycols` (default "lat_us,bw_MBps"; a column no table has
 * is left out), titled `title` and a line "<host>, <N> cores, <date UTC>,
 * load <load>" (`load` NULL: /proc/loadavg now). 0, or -1 with the reason
 * in err. */
int px_perf_plot(const char *out, const char *title, const char *load, const char *ycols,
                 px_perf_table_t *const *tables, int ntables, char *err, size_t errlen);

#endif
