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
 *   pxrun -n 2 px_perf --connect [--conns N] [--reps R] [--sizes ...] [--csv]
 *                                peers that connect later (px_perf_connect.c): N fresh
 *                                connections of rank 1 to rank 0's contact, px_connect
 *                                to the first round trip (median, p90, p99), then
 *                                latency and bandwidth with a connected peer against
 *                                the job rank in R interleaved rounds (needs
 *                                PX_MCA_peer_secret_file)
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
 *
 * This file reads the options and starts the mode; each mode has a file of
 * its own (px_perf.h lists them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "tools/px_perf/px_perf.h"

static const size_t default_sizes[] = {0,      1,      8,       64,      256,    512,   1024,
                                       2048,   4096,   8192,    16384,   32768,  65536, 131072,
                                       262144, 524288, 1 << 20, 2 << 20, 4 << 20};

_Noreturn void px_perf_die(const char *fmt, const char *arg)
{
    fprintf(stderr, "px_perf: error: ");
    fprintf(stderr, fmt, arg);
    fputs("\n(px_perf --help lists the options)\n", stderr);
    exit(2);
}

int px_perf_check(int rc, const char *what)
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
        px_perf_die("'%s' is not a size (bytes, with an optional k/K, m/M or g/G suffix)", s);
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
        px_perf_die("'%s' is not a size (bytes, with an optional k/K, m/M or g/G suffix)", s);
    return (size_t)v;
}

static int load_peer(const char *path, px_perf_peer_row_t *rows, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        px_perf_die("--vs: cannot open '%s'", path);
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
        px_perf_die("--vs '%s': no lines of the form \"bytes lat_us bw_MBps\"", path);
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
        px_perf_die("--series: %s", err);
    return t;
}

/* Draw `tables`; exit 1 with the reason when gnuplot cannot. */
int px_perf_draw(const char *out, const char *title, const char *load, const char *ycols,
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

static int usage(void)
{
    puts("Usage: pxrun -n 2 px_perf [--test lat,bw,bibw,rate|all] [--sizes B,B,...]\n"
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
         "       pxrun -n 2 px_perf --connect [--conns N] [--reps R] [--sizes ...] [--csv]\n"
         "                                   connection setup (px_connect to the first round\n"
         "                                   trip, N fresh connections) and a connected peer's\n"
         "                                   latency and bandwidth against a job rank's, R\n"
         "                                   interleaved rounds (PX_MCA_peer_secret_file)\n"
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
}

/* --test LIST: the tests to run. */
static int parse_tests(const char *v)
{
    int tests = 0;
    char *t = strdup(v), *save = NULL;
    for (char *tok = strtok_r(t, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "lat"))
            tests |= PX_PERF_LAT;
        else if (!strcmp(tok, "bw"))
            tests |= PX_PERF_BW;
        else if (!strcmp(tok, "bibw"))
            tests |= PX_PERF_BIBW;
        else if (!strcmp(tok, "rate"))
            tests |= PX_PERF_RATE;
        else if (!strcmp(tok, "all"))
            tests |= PX_PERF_LAT | PX_PERF_BW | PX_PERF_BIBW | PX_PERF_RATE;
        else
            px_perf_die("--test: unknown test '%s' (lat, bw, bibw, rate, all)", tok);
    }
    free(t);
    return tests;
}

/* Read the options into o, left to right. --help, --memcpy, --floor and
 * --empty run where they are met (the options after them unread): their
 * exit status, or -1 when the options are read and a mode is to start. */
static int parse_options(int *argc, char ***argv, px_perf_opts_t *o)
{
    for (int i = 1; i < *argc; i++) {
        const char *a = (*argv)[i];
        const char *v = i + 1 < *argc ? (*argv)[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return usage();
        } else if (!strcmp(a, "--memcpy")) {
            return px_perf_memcpy(v && v[0] != '-' ? parse_size(v) : (size_t)4 << 20);
        } else if (!strcmp(a, "--floor")) {
            return px_perf_floor(v && v[0] != '-' ? parse_size(v) : 0);
        } else if (!strcmp(a, "--empty")) {
            px_perf_check(px_init(argc, argv), "px_init");
            return px_finalize() == PX_SUCCESS ? 0 : 1;
        } else if (!strcmp(a, "--btl")) {
            o->btl = 1;
        } else if (!strcmp(a, "--coll") && v) {
            o->coll = v;
            i++;
        } else if (!strcmp(a, "--stats")) {
            o->stats = 1;
        } else if (!strcmp(a, "--reps") && v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000)
                px_perf_die("--reps '%s': expected a number of timed blocks from 1 to 1000", v);
            o->reps = (int)n;
            i++;
        } else if (!strcmp(a, "--connect")) {
            o->connect = 1;
        } else if (!strcmp(a, "--conns") && v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 100000)
                px_perf_die("--conns '%s': expected a number of connections from 1 to 100000", v);
            o->conns = (int)n;
            i++;
        } else if (!strcmp(a, "--xfer")) {
            o->xfer = 1;
        } else if (!strcmp(a, "--xfer-mem") && v) {
            if (strcmp(v, "alloc") && strcmp(v, "reg"))
                px_perf_die(
                    "--xfer-mem '%s': alloc (px_xfer_alloc) or reg (registered user memory)", v);
            o->xfer_mem = v;
            i++;
        } else if (!strcmp(a, "--transport") && v) {
            o->xfer_transport = v;
            i++;
        } else if (!strcmp(a, "--csv")) {
            o->csv = 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--test") && v) {
            o->tests = parse_tests(v);
            i++;
        } else if (!strcmp(a, "--sizes") && v) {
            char *t = strdup(v), *save = NULL;
            for (char *tok = strtok_r(t, ",", &save); tok && o->nsizes < PX_PERF_MAX_SIZES;
                 tok = strtok_r(NULL, ",", &save))
                o->sizes[o->nsizes++] = parse_size(tok);
            free(t);
            i++;
        } else if (!strcmp(a, "--min") && v) {
            o->minb = parse_size(v);
            i++;
        } else if (!strcmp(a, "--max") && v) {
            o->maxb = parse_size(v);
            i++;
        } else if (!strcmp(a, "--iters") && v) {
            o->iters = atol(v);
            if (o->iters <= 0)
                px_perf_die("--iters '%s': expected a positive number", v);
            i++;
        } else if (!strcmp(a, "--vs") && v) {
            o->vs = v;
            i++;
        } else if (!strcmp(a, "--plot") && v) {
            o->plot = v;
            i++;
        } else if (!strcmp(a, "--title") && v) {
            o->title = v;
            i++;
        } else if (!strcmp(a, "--load") && v) {
            o->load = v;
            i++;
        } else if (!strcmp(a, "--y") && v) {
            o->ycols = v;
            i++;
        } else if (!strcmp(a, "--series") && v) {
            if (o->nseries == PX_PERF_MAX_SIZES)
                px_perf_die("--series '%s': at most 64 series", v);
            o->series[o->nseries++] = load_series(v);
            i++;
        } else {
            px_perf_die("unknown option or missing value: '%s'", a);
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    px_perf_opts_t o = {.tests = PX_PERF_LAT | PX_PERF_BW, .maxb = 4 << 20, .xfer_mem = "alloc"};
    int rc = parse_options(&argc, &argv, &o);
    if (rc >= 0)
        return rc;
    if (o.plot) {
        size_t n = strlen(o.plot);
        if (n < 5 || (strcmp(o.plot + n - 4, ".svg") && strcmp(o.plot + n - 4, ".png")))
            px_perf_die("--plot '%s': the file must end in .svg or .png", o.plot);
    }
    if (o.nseries) { /* plot saved results: no run */
        if (!o.plot)
            px_perf_die("--series needs --plot FILE (%s)", "a .svg or .png file to draw into");
        return px_perf_draw(o.plot, o.title ? o.title : "px_perf", o.load, o.ycols, o.series,
                            o.nseries);
    }
    if (o.reps && o.stats)
        px_perf_die("%s and --stats time the ping-pong two ways: choose one", "--reps");
    if (o.plot && (o.btl || o.coll || o.xfer))
        px_perf_die("--plot draws the table of a run, not %s", o.btl    ? "--btl's ping-pong"
                                                               : o.coll ? "--coll's table"
                                                                        : "--xfer's table");
    if (o.plot && o.connect)
        px_perf_die("--plot draws the table of a run, not %s", "--connect's tables");
    if (o.coll)
        return px_perf_coll(o.coll, o.sizes, o.nsizes, o.iters, o.csv);
    if (!o.nsizes && !o.connect) /* --connect has its own default sizes */
        for (size_t i = 0; i < sizeof default_sizes / sizeof default_sizes[0]; i++)
            if (default_sizes[i] >= o.minb && default_sizes[i] <= o.maxb)
                o.sizes[o.nsizes++] = default_sizes[i];
    px_perf_peer_row_t peer[PX_PERF_MAX_SIZES * 2];
    int npeer = o.vs ? load_peer(o.vs, peer, PX_PERF_MAX_SIZES * 2) : 0;

    px_perf_check(px_init(&argc, &argv), "px_init");
    int rank = px_rank(), size = px_size();
    if (o.plot && rank == 0 && !px_perf_have_gnuplot()) {
        fprintf(stderr,
                "px_perf: --plot %s: gnuplot is not on PATH (Debian: apt-get install "
                "gnuplot-nox)\n",
                o.plot);
        px_abort(2, "px_perf: --plot needs gnuplot");
    }
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "px_perf: needs 2 ranks (run it as: pxrun -n 2 px_perf)\n");
        px_finalize();
        return 2;
    }
    if (o.connect)
        return px_perf_connect(&o);
    if (o.btl) {
        px_perf_btl(o.sizes, o.nsizes, o.iters);
        px_finalize();
        return 0;
    }
    if (o.xfer) {
        px_perf_xfer(o.sizes, o.nsizes, o.iters, o.xfer_mem, o.xfer_transport, o.csv);
        px_perf_check(px_finalize(), "px_finalize");
        return 0;
    }
    return px_perf_msg(&o, peer, npeer);
}
