/*
 * kv_decode: a "decode" reader of the kvcache example
 * (examples/kvcache/README.md). Started on its own, it finds KV blocks by
 * name (a prefix listed with px_name_list, a file of names a writer wrote, or
 * names given), opens each (px_name_open: the registry, a connection to the
 * writer on demand, its region imported), reads them with batches of reads
 * (px_xfer_batch_*), checks every block's header and checksum and reports
 * blocks/s and GB/s.
 *
 * A block whose read fails (its writer was killed) is closed with a line
 * naming it and the reason; the reader goes on with the others. Every
 * --refresh seconds it refreshes the names it holds (px_name_refresh: a name
 * whose writer is gone and whose lease expired is reported gone) and looks
 * for names again (a writer started later, or again). While the registry is
 * down it says so once and reads on through the connections it has.
 *
 *   PX_MCA_registry=redis PX_MCA_peer_secret_file=SECRET ./kv_decode --list kv/demo/
 *
 * Options: --list PREFIX, --names-file FILE (both may repeat), NAME...;
 * --batch N (blocks per batch, 16), --duration SECONDS (10; 0: until
 * interrupted), --refresh SECONDS (1), --report SECONDS (1), --wait-names N
 * (wait up to 60 s until N names are found before reading; default 1).
 */
#include <errno.h>
#include <plexus.h>
#include <runtime/plexus_name.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kv_common.h"

enum { NEW = 0, OPEN = 1, LOST = 2 };

typedef struct entry {
    char name[PX_NAME_MAX + 128];
    px_name_t *h;
    int state;
    bool seen; /* found by the last look for names */
    bool told; /* its failure to open was printed (once per state) */
    uint64_t writer, block;
    uint64_t exp_gen, exp_sum; /* the checksum the pattern of exp_gen gives */
    bool have_exp;
} entry_t;

static entry_t *ents;
static size_t nents, cap_ents;
static const char *lists[16], *files[16];
static int nlists, nfiles;
static char **given;
static int ngiven;
static volatile sig_atomic_t stop_flag;
static bool registry_down;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void add_name(const char *name)
{
    for (size_t i = 0; i < nents; i++)
        if (!strcmp(ents[i].name, name)) {
            ents[i].seen = true;
            return;
        }
    if (nents == cap_ents) {
        size_t c = cap_ents ? 2 * cap_ents : 64;
        entry_t *e = realloc(ents, c * sizeof *e);
        if (!e)
            return;
        ents = e, cap_ents = c;
    }
    entry_t *e = &ents[nents];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    if (!kv_parse_name(name, &e->writer, &e->block)) {
        printf("decode: skipping %s: not a kv/<model>/<writer>/<block> name\n", name);
        return;
    }
    e->seen = true;
    nents++;
}

static int on_listed(const px_name_info_t *info, void *arg)
{
    (void)arg;
    if (info->error)
        printf("decode: skipping the entry %s: %s\n", info->name, info->error);
    else if (info->kind == PX_NAME_REGION)
        add_name(info->name);
    return 0;
}

/* Look for names: list the prefixes, read the files, take the names given.
 * A registry that does not answer is said once; the cached names stay. */
static void discover(void)
{
    for (size_t i = 0; i < nents; i++)
        ents[i].seen = false;
    for (int i = 0; i < nlists; i++) {
        int rc = px_name_list(lists[i], on_listed, NULL);
        if (rc < 0 && !registry_down) {
            printf("decode: listing %s failed: %s; reading on with the names already open\n",
                   lists[i], px_strerror(rc));
            registry_down = true;
        }
    }
    for (int i = 0; i < nfiles; i++) {
        FILE *f = fopen(files[i], "r");
        char line[PX_NAME_MAX + 128];
        while (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = 0;
            if (line[0])
                add_name(line);
        }
        if (f)
            fclose(f);
    }
    for (int i = 0; i < ngiven; i++)
        add_name(given[i]);
}

static void lose(entry_t *e, const char *why)
{
    printf("decode: lost %s (writer %llu, block %llu): %s; going on with the others\n", e->name,
           (unsigned long long)e->writer, (unsigned long long)e->block, why);
    if (e->h && px_name_close(&e->h) != PX_SUCCESS)
        printf("decode: px_name_close(%s) failed\n", e->name);
    e->h = NULL;
    e->state = LOST;
    e->told = true; /* the next failure to open it again is not news */
}

/* Open what was found and is not open; refresh what is open. */
static void open_and_refresh(bool refresh)
{
    for (size_t i = 0; i < nents && !stop_flag; i++) {
        entry_t *e = &ents[i];
        if (e->state == OPEN && refresh && !registry_down) {
            int rc = px_name_refresh(e->h);
            if (1 == rc) {
                printf("decode: %s moved (a new writer or region); reading the new one\n", e->name);
                e->have_exp = false;
            } else if (PX_ERR_NOT_FOUND == rc) {
                lose(e, "gone from the registry (its writer unpublished it, ended, or its lease "
                        "expired)");
            } else if (rc < 0) {
                printf("decode: refreshing %s: the registry did not answer (%s); reading on "
                       "with the cached descriptions\n",
                       e->name, px_strerror(rc));
                registry_down = true;
            }
        } else if (e->state != OPEN && e->seen) {
            int rc = px_name_open(e->name, &e->h);
            if (PX_SUCCESS == rc) {
                if (e->state == LOST)
                    printf("decode: %s is back; reading it again\n", e->name);
                e->state = OPEN, e->told = false, e->have_exp = false;
            } else {
                e->h = NULL;
                if (!e->told)
                    printf("decode: cannot open %s: %s\n", e->name, px_strerror(rc));
                e->told = true;
            }
        }
    }
}

/* The block in `m` (len bytes) is e's: header, then the checksum. */
static bool verify(entry_t *e, const unsigned char *m, size_t len, char *why, size_t cap)
{
    kv_header_t h;
    memcpy(&h, m, sizeof h);
    if (h.magic != KV_MAGIC || h.writer != e->writer || h.block != e->block ||
        h.length != len - KV_HEADER) {
        snprintf(why, cap, "header says magic %016llx writer %llu block %llu length %llu",
                 (unsigned long long)h.magic, (unsigned long long)h.writer,
                 (unsigned long long)h.block, (unsigned long long)h.length);
        return false;
    }
    if (!e->have_exp || e->exp_gen != h.generation) { /* what this generation's pattern gives */
        unsigned char *p = malloc(h.length);
        if (!p) {
            snprintf(why, cap, "no memory to check it");
            return false;
        }
        kv_fill(p, h.length, e->writer, e->block, h.generation);
        e->exp_sum = kv_checksum(p, h.length), e->exp_gen = h.generation, e->have_exp = true;
        free(p);
    }
    uint64_t sum = kv_checksum(m + KV_HEADER, h.length);
    if (sum != h.sum || sum != e->exp_sum) {
        snprintf(why, cap,
                 "payload checksum %016llx, header says %016llx, generation %llu's "
                 "pattern gives %016llx",
                 (unsigned long long)sum, (unsigned long long)h.sum,
                 (unsigned long long)h.generation, (unsigned long long)e->exp_sum);
        return false;
    }
    return true;
}

static double number(const char *opt, const char *s, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) {
        fprintf(stderr, "kv_decode: %s '%s': a number in %g..%g\n", opt, s, lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    int batch = 16, wait_names = 1;
    double duration = 10, refresh = 1, report = 1;
    given = calloc((size_t)argc, sizeof *given);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            given[ngiven++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "kv_decode: %s needs a value\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--list") && nlists < 16)
            lists[nlists++] = v;
        else if (!strcmp(a, "--names-file") && nfiles < 16)
            files[nfiles++] = v;
        else if (!strcmp(a, "--batch"))
            batch = (int)number(a, v, 1, 4096);
        else if (!strcmp(a, "--duration"))
            duration = number(a, v, 0, 86400);
        else if (!strcmp(a, "--refresh"))
            refresh = number(a, v, 0.01, 3600);
        else if (!strcmp(a, "--report"))
            report = number(a, v, 0.1, 3600);
        else if (!strcmp(a, "--wait-names"))
            wait_names = (int)number(a, v, 0, 1e6);
        else {
            fprintf(stderr, "usage: kv_decode [--list PREFIX]... [--names-file FILE]... "
                            "[NAME...] [--batch N] [--duration S]\n"
                            "                 [--refresh S] [--report S] [--wait-names N]\n");
            return 2;
        }
    }
    if (!nlists && !nfiles && !ngiven) {
        fprintf(stderr, "kv_decode: no names: give --list PREFIX, --names-file FILE or names\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    /* Writers start on their own: wait (up to 60 s) until enough names are found. */
    double t_wait = px_wtime() + 60;
    size_t nopen = 0;
    struct timespec nap = {0, 100 * 1000 * 1000};
    for (;;) {
        discover();
        open_and_refresh(false);
        nopen = 0;
        for (size_t i = 0; i < nents; i++)
            nopen += ents[i].state == OPEN;
        if ((int)nopen >= wait_names || px_wtime() > t_wait || stop_flag)
            break;
        nanosleep(&nap, NULL);
    }
    printf("decode: %zu names open (registry %s); reading with batches of %d\n", nopen,
           px_name_registry(), batch);
    fflush(stdout);

    px_xfer_batch_t *b = NULL;
    px_xfer_region_t *local = NULL;
    size_t slot = 0; /* bytes per block in `local` */
    px_xfer_request_t *q = calloc((size_t)batch, sizeof *q);
    entry_t **which = calloc((size_t)batch, sizeof *which);
    if (px_xfer_batch_alloc((size_t)batch, &b) != PX_SUCCESS || !q || !which) {
        fprintf(stderr, "kv_decode: no batch of %d\n", batch);
        return 1;
    }
    unsigned long long blocks = 0, bad = 0, last_blocks = 0;
    double bytes = 0, last_bytes = 0;
    double t0 = px_wtime(), t_refresh = t0 + refresh, t_report = t0 + report, t_last = t0;
    while (!stop_flag && (0 == duration || px_wtime() - t0 < duration)) {
        double now = px_wtime();
        if (now >= t_refresh) {
            bool was_down = registry_down;
            registry_down = false; /* try again */
            open_and_refresh(true);
            if (!registry_down)
                discover(), open_and_refresh(false);
            if (was_down && !registry_down)
                printf("decode: the registry answers again\n");
            t_refresh = now + refresh;
        }
        if (now >= t_report) {
            size_t o = 0, l = 0;
            for (size_t i = 0; i < nents; i++)
                o += ents[i].state == OPEN, l += ents[i].state == LOST;
            printf("decode: %.0f blocks/s, %.3f GB/s; %zu names open, %zu lost, %llu checksum "
                   "errors\n",
                   (double)(blocks - last_blocks) / (now - t_last),
                   (bytes - last_bytes) / (now - t_last) / 1e9, o, l, bad);
            fflush(stdout);
            last_blocks = blocks, last_bytes = bytes, t_last = now, t_report = now + report;
        }
        /* One pass over the open names, `batch` blocks per batch. */
        size_t i = 0;
        bool any = false;
        while (i < nents && !stop_flag) {
            int n = 0;
            for (; i < nents && n < batch; i++) {
                entry_t *e = &ents[i];
                if (e->state != OPEN)
                    continue;
                px_xfer_remote_t *rm = px_name_remote(e->h);
                size_t len = rm ? px_xfer_remote_length(rm) : 0;
                if (len < KV_HEADER) {
                    lose(e, "its region is smaller than a block header");
                    continue;
                }
                if (len > slot) { /* room for `batch` blocks of this size */
                    if (n > 0)    /* submit what we have first; this one comes next */
                        break;
                    if (local)
                        px_xfer_free(&local);
                    slot = len;
                    if (px_xfer_alloc(slot * (size_t)batch, &local) != PX_SUCCESS) {
                        fprintf(stderr, "kv_decode: px_xfer_alloc: %s\n", px_xfer_last_error());
                        return 1;
                    }
                }
                which[n] = e;
                q[n] = (px_xfer_request_t){.op = PX_XFER_READ,
                                           .local = local,
                                           .local_offset = (size_t)n * slot,
                                           .remote = rm,
                                           .remote_offset = 0,
                                           .length = len};
                n++;
            }
            if (0 == n)
                continue;
            any = true;
            px_xfer_batch_reset(b);
            px_xfer_batch_submit(b, q, (size_t)n, NULL);
            px_xfer_batch_wait(b, 30);
            unsigned char *m = px_xfer_region_base(local);
            for (int k = 0; k < n; k++) {
                px_xfer_status_t st = {0};
                int rc = px_xfer_batch_test(b, (size_t)k, &st);
                entry_t *e = which[k];
                if (rc != PX_SUCCESS) {
                    char why[1024];
                    snprintf(why, sizeof why, "read failed: %s (%s)",
                             rc == PX_XFER_PENDING ? "no answer within 30 s" : px_strerror(rc),
                             st.reason ? st.reason : "");
                    if (rc != PX_XFER_PENDING)
                        lose(e, why);
                    continue;
                }
                char why[512];
                if (!verify(e, m + (size_t)k * slot, q[k].length, why, sizeof why)) {
                    printf("decode: %s: checksum error: %s\n", e->name, why);
                    bad++;
                }
                blocks++;
                bytes += (double)q[k].length;
            }
        }
        if (!any) /* nothing open: wait for names to come (or come back) */
            nanosleep(&nap, NULL);
    }
    double dt = px_wtime() - t0;
    size_t lost = 0;
    for (size_t i = 0; i < nents; i++)
        lost += ents[i].state == LOST;
    printf("decode: done: %llu blocks read in %.1f s: %.0f blocks/s, %.3f GB/s; %llu checksum "
           "errors; %zu names lost",
           blocks, dt, (double)blocks / dt, bytes / dt / 1e9, bad, lost);
    for (size_t i = 0, k = 0; i < nents; i++)
        if (ents[i].state == LOST)
            printf("%s%s", k++ ? ", " : ": ", ents[i].name);
    printf("\n");
    fflush(stdout);
    for (size_t i = 0; i < nents; i++)
        if (ents[i].h)
            px_name_close(&ents[i].h);
    if (px_xfer_batch_pending(b) == 0)
        px_xfer_batch_free(&b);
    if (local)
        px_xfer_free(&local);
    free(q);
    free(which);
    free(ents);
    free(given);
    int frc = px_finalize();
    return bad != 0 || 0 == blocks || frc != PX_SUCCESS;
}
