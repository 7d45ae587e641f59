/*
 * px_perf_msg.c: px_perf's default mode, over the messaging API between
 * ranks 0 and 1 (other ranks wait): ping-pong latency, windowed streaming
 * bandwidth (64 non-blocking sends then a zero-byte ack), bidirectional
 * bandwidth, message rate; the results as a table, CSV or JSON, and drawn
 * with --plot.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "tools/px_perf/px_perf.h"

#define WIN 64

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

/* One ping-pong round trip between ranks 0 and 1 (the lat test). */
static void pingpong(int rank, char *buf, char *rbuf, size_t s)
{
    if (rank == 0) {
        px_perf_check(px_send(buf, s, 1, 1), "px_send");
        px_perf_check(px_recv(rbuf, s, 1, 1, NULL), "px_recv");
    } else {
        px_perf_check(px_recv(rbuf, s, 0, 1, NULL), "px_recv");
        px_perf_check(px_send(buf, s, 0, 1), "px_send");
    }
}

/* One window of the bw test: 64 sends from rank 0, a 0-byte ack back. */
static void window(int rank, char *buf, char *rbuf, size_t s)
{
    px_request_t *req[WIN];
    for (int w = 0; w < WIN; w++) {
        if (rank == 0)
            px_perf_check(px_isend(buf, s, 1, 2, &req[w]), "px_isend");
        else
            px_perf_check(px_irecv(rbuf, s, 0, 2, &req[w]), "px_irecv");
    }
    px_perf_check(px_waitall(WIN, req, NULL), "px_waitall");
    if (rank == 0)
        px_perf_check(px_recv(rbuf, 0, 1, 3, NULL), "px_recv");
    else
        px_perf_check(px_send(buf, 0, 0, 3), "px_send");
}

static const px_perf_peer_row_t *peer_find(const px_perf_peer_row_t *rows, int n, size_t bytes)
{
    for (int i = 0; i < n; i++)
        if (rows[i].bytes == bytes)
            return &rows[i];
    return NULL;
}

/* The lat test at size s: --reps R timed blocks of a tenth of the
 * iterations (after one warm-up block), or one timed run (--stats: each
 * round trip timed on its own, as perftest does). */
static void measure_lat(const px_perf_opts_t *o, int rank, bool active, char *buf, char *rbuf,
                        size_t s, result_t *r)
{
    long iters = o->iters ? o->iters : (s <= 4096 ? 20000 : (s <= 262144 ? 2000 : 200));
    long warm = iters / 10;
    if (o->reps) { /* R blocks of a tenth each, after one warm-up block */
        int reps = o->reps;
        long blk = iters / 10 > 0 ? iters / 10 : 1;
        double *t = malloc((size_t)reps * sizeof(double));
        if (!t)
            px_abort(3, "px_perf --reps: no memory for the block times");
        px_perf_check(px_barrier(), "px_barrier");
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
        return;
    }
    double t0 = 0, ti = 0;
    double *each = o->stats && rank == 0 ? malloc((size_t)iters * sizeof(double)) : NULL;
    if (o->stats && rank == 0 && !each)
        px_abort(3, "px_perf --stats: no memory for the round-trip times");
    px_perf_check(px_barrier(), "px_barrier");
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

/* The bw and rate tests at size s (one run of windows serves both). */
static void measure_bw(const px_perf_opts_t *o, int rank, bool active, char *buf, char *rbuf,
                       size_t s, result_t *r)
{
    int reps = o->reps;
    int bit = o->iters ? (int)o->iters : (s <= 32768 ? 200 : 20);
    int blk = reps ? (bit / 10 > 0 ? bit / 10 : 1) : bit, nblk = reps ? reps : 1;
    double tb[1000];
    px_perf_check(px_barrier(), "px_barrier");
    for (int b = reps ? -1 : 0; active && b < nblk; b++) {
        double t1 = px_wtime();
        for (int k = 0; k < blk; k++)
            window(rank, buf, rbuf, s);
        if (b >= 0)
            tb[b] = px_wtime() - t1;
    }
    if (!active)
        return;
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

/* The bibw test at size s: both ranks send and receive windows of 64. */
static void measure_bibw(const px_perf_opts_t *o, int rank, bool active, char *buf, char *rbuf,
                         size_t s, result_t *r)
{
    int peer_rank = rank == 0 ? 1 : 0;
    int bit = o->iters ? (int)o->iters : (s <= 32768 ? 200 : 20);
    px_request_t *req[2 * WIN];
    px_perf_check(px_barrier(), "px_barrier");
    double t1 = px_wtime();
    for (int k = 0; active && k < bit; k++) {
        for (int w = 0; w < WIN; w++)
            px_perf_check(px_irecv(rbuf, s, peer_rank, 4, &req[w]), "px_irecv");
        for (int w = 0; w < WIN; w++)
            px_perf_check(px_isend(buf, s, peer_rank, 4, &req[WIN + w]), "px_isend");
        px_perf_check(px_waitall(2 * WIN, req, NULL), "px_waitall");
    }
    r->bibw = 2.0 * (double)s * WIN * bit / (px_wtime() - t1) / 1e6;
}

static void print_json(const px_perf_opts_t *o, int size, const result_t *res,
                       const px_perf_peer_row_t *peer, int npeer)
{
    int tests = o->tests, nsizes = o->nsizes;
    printf("{\n  \"ranks\": %d,\n  \"transports\": [", size);
    for (int p = 0; p < size; p++)
        printf("%s{\"from\": 0, \"to\": %d, \"transport\": \"%s\"}", p ? ", " : "", p,
               px_transport_name(p));
    printf("],\n  \"results\": [\n");
    for (int si = 0; si < nsizes; si++) {
        const result_t *r = &res[si];
        const px_perf_peer_row_t *pr = npeer ? peer_find(peer, npeer, r->bytes) : NULL;
        printf("    {\"bytes\": %zu", r->bytes);
        if (tests & PX_PERF_LAT)
            printf(", \"lat_us\": %.4f", r->lat);
        if ((tests & PX_PERF_LAT) && o->stats)
            printf(", \"lat_min_us\": %.4f, \"lat_typical_us\": %.4f", r->lat_min, r->lat_typ);
        if ((tests & PX_PERF_LAT) && o->reps)
            printf(", \"lat_med_us\": %.4f", r->lat_med);
        if (tests & PX_PERF_BW)
            printf(", \"bw_MBps\": %.1f", r->bw);
        if ((tests & PX_PERF_BW) && o->reps)
            printf(", \"bw_med_MBps\": %.1f", r->bw_med);
        if (tests & PX_PERF_BIBW)
            printf(", \"bibw_MBps\": %.1f", r->bibw);
        if (tests & PX_PERF_RATE)
            printf(", \"rate_Mmsgps\": %.3f", r->rate);
        if (pr && (tests & PX_PERF_LAT) && pr->lat > 0)
            printf(", \"vs_lat\": %.3f", r->lat / pr->lat);
        if (pr && (tests & PX_PERF_BW) && pr->bw > 0)
            printf(", \"vs_bw\": %.3f", r->bw / pr->bw);
        printf("}%s\n", si + 1 < nsizes ? "," : "");
    }
    printf("  ]\n}\n");
}

/* The table (or --csv): a heading line, the column names, a row per size. */
static void print_table(const px_perf_opts_t *o, int size, const result_t *res,
                        const px_perf_peer_row_t *peer, int npeer)
{
    int tests = o->tests, csv = o->csv, stats = o->stats, reps = o->reps;
    if (!csv) {
        printf("# px_perf: ranks 0 and 1 of %d; transports from rank 0:", size);
        for (int p = 0; p < size; p++)
            printf(" %d:%s", p, px_transport_name(p));
        printf("\n");
    }
    const char *sep = csv ? "," : " ";
    printf(csv ? "%s" : "%10s", "bytes");
    if (tests & PX_PERF_LAT)
        printf(csv ? ",%s" : " %12s", "lat_us");
    if (tests & PX_PERF_BW)
        printf(csv ? ",%s" : " %12s", "bw_MBps");
    if (tests & PX_PERF_BIBW)
        printf(csv ? ",%s" : " %12s", "bibw_MBps");
    if (tests & PX_PERF_RATE)
        printf(csv ? ",%s" : " %12s", "Mmsg_per_s");
    if (npeer && (tests & PX_PERF_LAT))
        printf(csv ? ",%s" : " %10s", "vs_lat");
    if (npeer && (tests & PX_PERF_BW))
        printf(csv ? ",%s" : " %10s", "vs_bw");
    if (stats && (tests & PX_PERF_LAT))
        printf(csv ? ",%s,%s" : " %12s %12s", "lat_min_us", "lat_typ_us");
    if (reps && (tests & PX_PERF_LAT))
        printf(csv ? ",%s" : " %12s", "lat_med_us");
    if (reps && (tests & PX_PERF_BW))
        printf(csv ? ",%s" : " %12s", "bw_med_MBps");
    printf("\n");
    for (int si = 0; si < o->nsizes; si++) {
        const result_t *r = &res[si];
        const px_perf_peer_row_t *pr = npeer ? peer_find(peer, npeer, r->bytes) : NULL;
        printf(csv ? "%zu" : "%10zu", r->bytes);
        if (tests & PX_PERF_LAT)
            printf(csv ? "%s%.4f" : "%s%12.3f", sep, r->lat);
        if (tests & PX_PERF_BW)
            printf(csv ? "%s%.1f" : "%s%12.1f", sep, r->bw);
        if (tests & PX_PERF_BIBW)
            printf(csv ? "%s%.1f" : "%s%12.1f", sep, r->bibw);
        if (tests & PX_PERF_RATE)
            printf(csv ? "%s%.3f" : "%s%12.3f", sep, r->rate);
        if (npeer && (tests & PX_PERF_LAT)) {
            if (pr && pr->lat > 0)
                printf(csv ? "%s%.3f" : "%s%10.3f", sep, r->lat / pr->lat);
            else
                printf(csv ? "%s" : "%s%10s", sep, "-");
        }
        if (npeer && (tests & PX_PERF_BW)) {
            if (pr && pr->bw > 0)
                printf(csv ? "%s%.3f" : "%s%10.3f", sep, r->bw / pr->bw);
            else
                printf(csv ? "%s" : "%s%10s", sep, "-");
        }
        if (stats && (tests & PX_PERF_LAT))
            printf(csv ? "%s%.4f%s%.4f" : "%s%12.3f%s%12.3f", sep, r->lat_min, sep, r->lat_typ);
        if (reps && (tests & PX_PERF_LAT))
            printf(csv ? "%s%.4f" : "%s%12.3f", sep, r->lat_med);
        if (reps && (tests & PX_PERF_BW))
            printf(csv ? "%s%.1f" : "%s%12.1f", sep, r->bw_med);
        printf("\n");
    }
}

/* --plot: the results (named `line`, "plexus <transport>") and the --vs
 * peer's (named after its file), drawn after px_finalize. */
static int plot_results(const px_perf_opts_t *o, int size, const char *line, const result_t *res,
                        const px_perf_peer_row_t *peer, int npeer)
{
    int tests = o->tests;
    const char *names[4];
    int ncols = 0;
    if (tests & PX_PERF_LAT)
        names[ncols++] = "lat_us";
    if (tests & PX_PERF_BW)
        names[ncols++] = "bw_MBps";
    if (tests & PX_PERF_BIBW)
        names[ncols++] = "bibw_MBps";
    if (tests & PX_PERF_RATE)
        names[ncols++] = "Mmsg_per_s";
    px_perf_table_t *tab[2] = {px_perf_table_new(line, ncols, names), NULL};
    int ntab = 1;
    for (int si = 0; tab[0] && si < o->nsizes; si++) {
        double row[5] = {(double)res[si].bytes};
        int k = 1;
        if (tests & PX_PERF_LAT)
            row[k++] = res[si].lat;
        if (tests & PX_PERF_BW)
            row[k++] = res[si].bw;
        if (tests & PX_PERF_BIBW)
            row[k++] = res[si].bibw;
        if (tests & PX_PERF_RATE)
            row[k++] = res[si].rate;
        px_perf_table_add(tab[0], row);
    }
    if (tab[0] && npeer) { /* the --vs peer, named after its file */
        const char *b = strrchr(o->vs, '/');
        char pname[256];
        snprintf(pname, sizeof pname, "%s", b ? b + 1 : o->vs);
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
    return px_perf_draw(o->plot, o->title ? o->title : head, o->load, o->ycols, tab, ntab);
}

int px_perf_msg(const px_perf_opts_t *o, const px_perf_peer_row_t *peer, int npeer)
{
    int rank = px_rank(), size = px_size();
    size_t maxs = 0;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > maxs)
            maxs = o->sizes[i];
    size_t alloc = (maxs + 4095) & ~(size_t)4095;
    if (!alloc)
        alloc = 4096;
    char *buf = aligned_alloc(4096, alloc), *rbuf = aligned_alloc(4096, alloc);
    memset(buf, 1, alloc);
    memset(rbuf, 0, alloc);
    result_t res[PX_PERF_MAX_SIZES];
    bool active = rank < 2;

    for (int si = 0; si < o->nsizes; si++) {
        size_t s = o->sizes[si];
        result_t *r = &res[si];
        memset(r, 0, sizeof *r);
        r->bytes = s;
        if (o->tests & PX_PERF_LAT)
            measure_lat(o, rank, active, buf, rbuf, s, r);
        if (o->tests & (PX_PERF_BW | PX_PERF_RATE))
            measure_bw(o, rank, active, buf, rbuf, s, r);
        if (o->tests & PX_PERF_BIBW)
            measure_bibw(o, rank, active, buf, rbuf, s, r);
    }

    if (rank == 0) {
        if (o->json)
            print_json(o, size, res, peer, npeer);
        else
            print_table(o, size, res, peer, npeer);
        fflush(stdout);
    }
    free(buf);
    free(rbuf);
    /* The transport's name belongs to the runtime: keep it past px_finalize. */
    char line[128];
    snprintf(line, sizeof line, "plexus %s", size > 1 ? px_transport_name(1) : "");
    px_perf_check(px_finalize(), "px_finalize");
    /* Drawn after px_finalize: no transport is open when gnuplot is forked. */
    if (o->plot && rank == 0)
        return plot_results(o, size, line, res, peer, npeer);
    return 0;
}
