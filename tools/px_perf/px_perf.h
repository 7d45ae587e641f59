/*
 * px_perf.h: what px_perf's source files share. px_perf.c reads the options
 * and starts one mode; each mode is a file of its own: px_perf_msg.c (the
 * default: latency, bandwidth, bidirectional bandwidth and message rate over
 * the messaging API), px_perf_local.c (--memcpy, --floor: no library),
 * px_perf_btl.c (--btl), px_perf_xfer.c (--xfer), px_perf_coll.c (--coll),
 * px_perf_connect.c (--connect);
 * px_perf_plot.c draws (--plot).
 */
#ifndef PX_PERF_H
#define PX_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include "tools/px_perf/px_perf_plot.h"

#define PX_PERF_MAX_SIZES 64

/* --test: the messaging mode's tests. */
enum { PX_PERF_LAT = 1, PX_PERF_BW = 2, PX_PERF_BIBW = 4, PX_PERF_RATE = 8 };

typedef struct px_perf_opts {
    int tests;                       /* PX_PERF_LAT | ... (--test) */
    size_t sizes[PX_PERF_MAX_SIZES]; /* --sizes, or the defaults in --min..--max */
    int nsizes;
    size_t minb, maxb;                     /* --min, --max */
    long iters;                            /* --iters; 0: per size */
    int csv, json, btl, stats, xfer, reps; /* --csv, --json, --btl, --stats, --xfer, --reps R */
    const char *vs, *plot, *title, *load, *ycols, *coll;
    px_perf_table_t *series[PX_PERF_MAX_SIZES]; /* --series, read while parsing */
    int nseries;
    const char *xfer_mem, *xfer_transport; /* --xfer-mem, --transport */
    int connect, conns;                    /* --connect, --conns N */
} px_perf_opts_t;

/* One row of a --vs peer's results. */
typedef struct px_perf_peer_row {
    size_t bytes;
    double lat, bw;
} px_perf_peer_row_t;

/* A bad option or file: the reason (fmt with one %s) on stderr, exit 2. */
_Noreturn void px_perf_die(const char *fmt, const char *arg);
/* A failed Plexus call ends the job (px_abort); rc otherwise. */
int px_perf_check(int rc, const char *what);
/* Draw `tables` into `out` and free them: 0, or 1 with the reason on stderr. */
int px_perf_draw(const char *out, const char *title, const char *load, const char *ycols,
                 px_perf_table_t **tables, int n);

/* The modes. Those that return an int return main's exit status. */
int px_perf_memcpy(size_t bytes);
int px_perf_floor(size_t bytes);
void px_perf_btl(const size_t *sizes, int nsizes, long iters_override);
void px_perf_xfer(const size_t *sizes, int nsizes, long iters_override, const char *mem,
                  const char *transport, bool csv);
int px_perf_coll(const char *op, const size_t *sizes, int nsizes, long iters_override, int csv);
/* Runs after px_init with at least 2 ranks and calls px_finalize: connection
 * setup and a connected peer against a job rank (--connect). */
int px_perf_connect(const px_perf_opts_t *o);
/* Runs after px_init with at least 2 ranks; calls px_finalize, then draws
 * the results when o->plot is set. */
int px_perf_msg(const px_perf_opts_t *o, const px_perf_peer_row_t *peer, int npeer);

#endif
