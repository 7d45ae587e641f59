/*
 * px_perf_plot.c: px_perf's pictures (px_perf_plot.h). The drawing is
 * gnuplot's: this file writes a gnuplot program, with the data inline as
 * datablocks (one per line of the chart, holding only points a log-log
 * chart can show), to a gnuplot process, and checks that the file appeared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tools/px_perf/px_perf_plot.h"

#define MAX_COLS   32
#define MAX_PANELS 6

static void seterr(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

void px_perf_table_free(px_perf_table_t *t)
{
    if (!t)
        return;
    for (int i = 0; t->cols && i < t->ncols; i++)
        free(t->cols[i]);
    free(t->cols);
    free(t->rows);
    free(t->name);
    free(t);
}

px_perf_table_t *px_perf_table_new(const char *name, int ncols, const char *const *cols)
{
    if (ncols < 0 || ncols > MAX_COLS)
        return NULL;
    px_perf_table_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->name = strdup(name ? name : "");
    t->cols = calloc((size_t)ncols + 1, sizeof(char *));
    if (!t->name || !t->cols) {
        px_perf_table_free(t);
        return NULL;
    }
    for (int i = 0; i < ncols; i++) {
        t->cols[i] = strdup(cols[i]);
        t->ncols = i + 1;
        if (!t->cols[i]) {
            px_perf_table_free(t);
            return NULL;
        }
    }
    return t;
}

int px_perf_table_add(px_perf_table_t *t, const double *row)
{
    size_t w = 1 + (size_t)t->ncols;
    double *r = realloc(t->rows, ((size_t)t->nrows + 1) * w * sizeof(double));
    if (!r)
        return -1;
    t->rows = r;
    memcpy(r + (size_t)t->nrows * w, row, w * sizeof(double));
    t->nrows++;
    return 0;
}

/* Split a line at commas, blanks and tabs (an empty field between two
 * commas counts); returns the number of fields. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = '\0';
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p && n < max) {
        f[n++] = p;
        p += strcspn(p, ", \t");
        if (!*p)
            break;
        bool comma = *p == ',';
        *p++ = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (!comma && *p == ',') {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
        }
    }
    return n;
}

static bool number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && errno == 0;
}

px_perf_table_t *px_perf_table_load(const char *name, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        seterr(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    px_perf_table_t *t = NULL;
    char *line = NULL, *fld[MAX_COLS + 1];
    size_t cap = 0;
    long lineno = 0;
    bool bad = false;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        int n = split(line, fld, MAX_COLS + 1);
        if (n == 0 || fld[0][0] == '#')
            continue;
        double v;
        if (!t && !number(fld[0], &v)) { /* the header */
            if (n < 2) {
                seterr(err, errlen, "%s:%ld: a header names the size and at least one column", path,
                       lineno);
                bad = true;
                break;
            }
            t = px_perf_table_new(name, n - 1, (const char *const *)fld + 1);
            if (!t) {
                seterr(err, errlen, "out of memory reading %s", path);
                bad = true;
                break;
            }
            continue;
        }
        if (!t) { /* no header: mpi_pingpong.c's columns */
            const char *dflt[MAX_COLS];
            char extra[MAX_COLS][16];
            for (int i = 0; i < n - 1; i++) {
                if (i < 2) {
                    dflt[i] = i == 0 ? "lat_us" : "bw_MBps";
                } else {
                    snprintf(extra[i], sizeof extra[i], "col%d", i + 2);
                    dflt[i] = extra[i];
                }
            }
            t = px_perf_table_new(name, n - 1, dflt);
            if (!t) {
                seterr(err, errlen, "out of memory reading %s", path);
                bad = true;
                break;
            }
        }
        double row[MAX_COLS + 1];
        if (!number(fld[0], &row[0])) {
            seterr(err, errlen,
                   "%s:%ld: '%s' is not a message size (rows of numbers, after a header such "
                   "as bytes,lat_us,bw_MBps)",
                   path, lineno, fld[0]);
            bad = true;
            break;
        }
        for (int i = 1; i <= t->ncols; i++) /* a missing or "-" field: no point */
            if (i >= n || !number(fld[i], &row[i]))
                row[i] = NAN;
        if (px_perf_table_add(t, row) != 0) {
            seterr(err, errlen, "out of memory reading %s", path);
            bad = true;
            break;
        }
    }
    free(line);
    fclose(f);
    if (!bad && (!t || t->nrows == 0)) {
        seterr(err, errlen, "%s holds no row of results (bytes and values)", path);
        bad = true;
    }
    if (bad) {
        px_perf_table_free(t);
        return NULL;
    }
    return t;
}

int px_perf_have_gnuplot(void)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    char *copy = strdup(path), *save = NULL;
    int found = 0;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
         d = strtok_r(NULL, ":", &save)) {
        char p[4096];
        snprintf(p, sizeof p, "%s/gnuplot", *d ? d : ".");
        found = access(p, X_OK) == 0;
    }
    free(copy);
    return found;
}

/* Text inside a gnuplot string in double quotes: backslashes and quotes
 * escaped, control characters made blanks. */
static void escaped(FILE *g, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', g);
        fputc((unsigned char)*s < ' ' ? ' ' : *s, g);
    }
}

static void quoted(FILE *g, const char *s)
{
    fputc('"', g);
    escaped(g, s);
    fputc('"', g);
}

static int col_index(const px_perf_table_t *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], name))
            return i + 1;
    return -1;
}

/* Points a log-log chart can show: size and value both positive. */
static int valid_points(const px_perf_table_t *t, int c)
{
    int n = 0;
    size_t w = 1 + (size_t)t->ncols;
    for (int r = 0; c > 0 && r < t->nrows; r++) {
        const double *row = t->rows + (size_t)r * w;
        n += row[0] > 0 && isfinite(row[c]) && row[c] > 0;
    }
    return n;
}

static void axis_label(char *buf, size_t len, const char *col)
{
    static const struct {
        const char *col, *label;
    } known[] = {{"lat_us", "latency (us)"},
                 {"bw_MBps", "bandwidth (MB/s)"},
                 {"bibw_MBps", "bidirectional bandwidth (MB/s)"},
                 {"Mmsg_per_s", "message rate (million/s)"},
                 {"rate_Mmsgps", "message rate (million/s)"}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(col, known[i].col)) {
            snprintf(buf, len, "%s", known[i].label);
            return;
        }
    size_t n = strlen(col);
    if (n > 3 && !strcmp(col + n - 3, "_us"))
        snprintf(buf, len, "%.*s (us)", (int)(n - 3), col);
    else if (n > 5 && !strcmp(col + n - 5, "_MBps"))
        snprintf(buf, len, "%.*s (MB/s)", (int)(n - 5), col);
    else
        snprintf(buf, len, "%s", col);
}

static void machine_line(char *buf, size_t len, const char *load)
{
    char host[256] = "?", when[64] = "?", avg[64] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
    if (!load) {
        FILE *f = fopen("/proc/loadavg", "r");
        double a, b, c;
        if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
            snprintf(avg, sizeof avg, "%.2f %.2f %.2f", a, b, c);
        if (f)
            fclose(f);
        load = avg;
    }
    snprintf(buf, len, "%s, %ld cores, %s, load %s", host, sysconf(_SC_NPROCESSORS_ONLN), when,
             load);
}

int px_perf_plot(const char *out, const char *title, const char *load, const char *ycols,
                 px_perf_table_t *const *tables, int ntables, char *err, size_t errlen)
{
    size_t olen = out ? strlen(out) : 0;
    bool svg = olen > 4 && !strcmp(out + olen - 4, ".svg");
    bool png = olen > 4 && !strcmp(out + olen - 4, ".png");
    if (!svg && !png) {
        seterr(err, errlen, "the plot file '%s' must end in .svg or .png", out ? out : "");
        return -1;
    }
    if (!px_perf_have_gnuplot()) {
        seterr(err, errlen,
               "cannot draw %s: gnuplot is not on PATH (Debian: apt-get install gnuplot-nox)", out);
        return -1;
    }
    /* The panels: the columns asked for that some table has a point of. */
    char *want = strdup(ycols && *ycols ? ycols : "lat_us,bw_MBps"), *save = NULL;
    const char *panel[MAX_PANELS];
    int npanel = 0;
    for (char *c = want ? strtok_r(want, ",", &save) : NULL; c && npanel < MAX_PANELS;
         c = strtok_r(NULL, ",", &save)) {
        int pts = 0;
        for (int t = 0; t < ntables; t++)
            pts += valid_points(tables[t], col_index(tables[t], c));
        if (pts > 0)
            panel[npanel++] = c;
    }
    if (npanel == 0) {
        char have[512] = "";
        size_t at = 0;
        for (int t = 0; t < ntables; t++)
            for (int c = 0; c < tables[t]->ncols; c++) {
                char key[130];
                snprintf(key, sizeof key, " %s,", tables[t]->cols[c]);
                if (strstr(have, key) || at + strlen(key) + 1 >= sizeof have)
                    continue;
                at += (size_t)snprintf(have + at, sizeof have - at, "%s", key);
            }
        if (at)
            have[at - 1] = '\0'; /* the last comma */
        seterr(err, errlen,
               "nothing to draw in %s: no table has a positive value in column(s) %s at a "
               "size above 0 (the tables' columns:%s)",
               out, ycols && *ycols ? ycols : "lat_us,bw_MBps", at ? have : " none");
        free(want);
        return -1;
    }
    if (unlink(out) != 0 && errno != ENOENT) {
        seterr(err, errlen, "cannot replace %s: %s", out, strerror(errno));
        free(want);
        return -1;
    }
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN); /* gnuplot may stop reading */
    fflush(NULL);
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        seterr(err, errlen, "cannot start gnuplot: %s", strerror(errno));
        signal(SIGPIPE, old_pipe);
        free(want);
        return -1;
    }
    int width = 500 * npanel, height = 460;
    if (svg)
        fprintf(g,
                "set terminal svg size %d,%d dynamic noenhanced background rgb \"white\" "
                "font \"Sans,11\"\n",
                width, height);
    else
        fprintf(g, "set terminal pngcairo size %d,%d noenhanced font \"Sans,10\"\n", width, height);
    fputs("set output ", g);
    quoted(g, out);
    fputs("\nset encoding utf8\n", g);
    for (int p = 0; p < npanel; p++)
        for (int t = 0; t < ntables; t++) {
            int c = col_index(tables[t], panel[p]);
            if (valid_points(tables[t], c) == 0)
                continue;
            fprintf(g, "$d%d_%d << EOD\n", p, t);
            size_t w = 1 + (size_t)tables[t]->ncols;
            for (int r = 0; r < tables[t]->nrows; r++) {
                const double *row = tables[t]->rows + (size_t)r * w;
                if (row[0] > 0 && isfinite(row[c]) && row[c] > 0)
                    fprintf(g, "%.17g %.17g\n", row[0], row[c]);
            }
            fputs("EOD\n", g);
        }
    char machine[512];
    machine_line(machine, sizeof machine, load);
    /* Two lines: the caller's title, then the machine. */
    fprintf(g, "set multiplot layout 1,%d title \"", npanel);
    escaped(g, title && *title ? title : "px_perf");
    fputs("\\n", g);
    escaped(g, machine);
    fputs("\"\n", g);
    fputs("set logscale x 2\nset format x \"%.0b%B\"\n"
          "set logscale y 10\nset format y \"%g\"\n"
          "set grid xtics ytics mytics lc rgb \"#dddddd\"\n"
          "set xlabel \"message size (bytes)\"\n",
          g);
    for (int p = 0; p < npanel; p++) {
        /* The sizes of this panel, a margin either side, and a tic every
         * 16x, 4x or 2x as the span allows. */
        double lo = INFINITY, hi = 0;
        for (int t = 0; t < ntables; t++) {
            int c = col_index(tables[t], panel[p]);
            size_t w = 1 + (size_t)tables[t]->ncols;
            for (int r = 0; c > 0 && r < tables[t]->nrows; r++) {
                const double *row = tables[t]->rows + (size_t)r * w;
                if (row[0] > 0 && isfinite(row[c]) && row[c] > 0) {
                    lo = row[0] < lo ? row[0] : lo;
                    hi = row[0] > hi ? row[0] : hi;
                }
            }
        }
        int step = hi / lo >= 4096 ? 16 : hi / lo >= 64 ? 4 : 2;
        fprintf(g, "set xrange [%.17g:%.17g]\nset xtics 1,%d\n", lo / 1.5, hi * 1.5, step);
        /* Times grow with size (the top left stays empty), rates too (the
         * bottom right does). */
        size_t cl = strlen(panel[p]);
        bool time_col = cl > 3 && !strcmp(panel[p] + cl - 3, "_us");
        fprintf(g, "set key %s Left reverse samplen 2 opaque\n",
                time_col ? "top left" : "bottom right");
        char label[128];
        axis_label(label, sizeof label, panel[p]);
        fputs("set ylabel ", g);
        quoted(g, label);
        fputs("\nplot ", g);
        int lines = 0;
        for (int t = 0; t < ntables; t++) {
            if (valid_points(tables[t], col_index(tables[t], panel[p])) == 0)
                continue;
            fprintf(g, "%s$d%d_%d using 1:2 with linespoints pt 7 ps 0.6 lw 1.5 title ",
                    lines++ ? ", " : "", p, t);
            quoted(g, tables[t]->name);
        }
        fputc('\n', g);
    }
    fputs("unset multiplot\nset output\n", g);
    int st = pclose(g);
    signal(SIGPIPE, old_pipe);
    free(want);
    struct stat sb;
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        seterr(err, errlen, "gnuplot failed drawing %s (%s %d; its messages are above)", out,
               st != -1 && WIFSIGNALED(st) ? "signal" : "exit status",
               st == -1          ? -1
               : WIFSIGNALED(st) ? WTERMSIG(st)
                                 : WEXITSTATUS(st));
        return -1;
    }
    if (stat(out, &sb) != 0 || sb.st_size == 0) {
        seterr(err, errlen, "gnuplot ended without writing %s", out);
        return -1;
    }
    return 0;
}
