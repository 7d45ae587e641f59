/*
 * px_xfer_bench: one-sided throughput after Mooncake's transfer_engine_bench
 * (docs/px_xfer_bench.md). An initiator reads or writes a target's region
 * with batches of `--batch-size` requests of `--block-size` bytes, from
 * `--threads` threads, for `--duration` seconds, and prints the throughput
 * (GB/s, ops/s) on one line of key=value fields.
 *
 * Where the target comes from:
 *   named   px_xfer_bench --mode target --publish NAME        (one process)
 *           px_xfer_bench --target NAME                        (another one)
 *           The target publishes its region (runtime/plexus_name.h); the
 *           initiator opens it by name through the registry (PX_MCA_registry
 *           and its variables: docs/registry.md) and also reports the time
 *           from px_name_open to its first byte.
 *   ranks   pxrun -n 2 px_xfer_bench --ranks
 *           Rank 1 is the target, rank 0 the initiator; the key goes over a
 *           message (the same transfers between job ranks).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/plexus.h"
#include "runtime/plexus_name.h"
#include "runtime/plexus_xfer.h"

#define TAG_KEY  71
#define TAG_DONE 72

typedef struct opts {
    const char *mode; /* "initiator", "target" */
    bool ranks;
    const char *target;  /* initiator: the name to open */
    const char *publish; /* target: the name to publish */
    const char *name_file;
    int op;
    size_t block, buffer;
    int batch, threads;
    double duration;
    bool reg; /* --mem reg */
    const char *transport;
} opts_t;

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: px_xfer_bench [OPTIONS]\n"
        "One-sided throughput after Mooncake's transfer_engine_bench: an initiator reads or\n"
        "writes a target's region with batches of requests, from several threads.\n"
        "\n"
        "Where the target is:\n"
        "  --mode target --publish NAME   be the target: allocate a region, publish it under\n"
        "                                 NAME (runtime/plexus_name.h) and serve it until\n"
        "                                 interrupted (or --duration seconds)\n"
        "  --target NAME                  be the initiator of a target found by NAME through the\n"
        "                                 registry (PX_MCA_registry=p2p|redis|etcd|pmix)\n"
        "  --ranks                        under pxrun -n 2: rank 1 is the target, rank 0 the\n"
        "                                 initiator (the key goes over a message)\n"
        "Options:\n"
        "  --op read|write        initiator's operation (default read)\n"
        "  --block-size BYTES     bytes per request (default 64k; k, M, G suffixes)\n"
        "  --batch-size N         requests per batch (default 128)\n"
        "  --threads N            submitting threads, each its own batch (default 1)\n"
        "  --duration SECONDS     how long the initiator measures (default 5); a target ends\n"
        "                         after it when given (default: when interrupted)\n"
        "  --buffer-size BYTES    the target's region (default 256M; at least one block)\n"
        "  --mem alloc|reg        memory of both sides: px_xfer_alloc'd (default) or\n"
        "                         malloc'd and px_xfer_register'ed\n"
        "  --transport NAME       the transport each request must take (shm, ofi, stage, ...)\n"
        "  --name-file FILE       target: write the name initiators open (px_name_qualify:\n"
        "                         host:port/NAME under p2p) to FILE once published\n"
        "  --help                 this text\n"
        "The initiator prints one line: px_xfer_bench: mode=... op=... block=... batch=...\n"
        "threads=... duration=... path=... ops=... bytes=... gbps=... ops_per_s=... and, for a\n"
        "named target, open_ms (px_name_open) and first_byte_ms (to the first byte read).\n");
}

static void die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "px_xfer_bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(px_xfer_bench --help lists the options)\n");
    exit(2);
}

static size_t parse_bytes(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-')
        goto bad;
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default:
        break;
    }
    if (*end || v == 0 || v > (1ull << 40))
        goto bad;
    return (size_t)v;
bad:
    fprintf(stderr, "px_xfer_bench: %s '%s' is not a byte count (1 .. 1T, k/M/G suffixes)\n", opt,
            s);
    exit(2);
}

static long parse_int(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "px_xfer_bench: %s '%s' is not a whole number in %ld..%ld\n", opt, s, lo,
                hi);
        exit(2);
    }
    return v;
}

static void parse(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.mode = NULL,
                  .op = PX_XFER_READ,
                  .block = 64 << 10,
                  .buffer = 256 << 20,
                  .batch = 128,
                  .threads = 1,
                  .duration = 5};
    bool have_dur = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(a, "--ranks")) {
            o->ranks = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            die_usage("unexpected argument '%s'", a);
        if (i + 1 >= argc)
            die_usage("%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--mode")) {
            if (strcmp(v, "target") && strcmp(v, "initiator"))
                die_usage("--mode '%s': target or initiator", v);
            o->mode = v;
        } else if (!strcmp(a, "--target"))
            o->target = v;
        else if (!strcmp(a, "--publish"))
            o->publish = v;
        else if (!strcmp(a, "--name-file"))
            o->name_file = v;
        else if (!strcmp(a, "--op")) {
            if (!strcmp(v, "read"))
                o->op = PX_XFER_READ;
            else if (!strcmp(v, "write"))
                o->op = PX_XFER_WRITE;
            else
                die_usage("--op '%s': read or write", v);
        } else if (!strcmp(a, "--block-size"))
            o->block = parse_bytes(a, v);
        else if (!strcmp(a, "--buffer-size"))
            o->buffer = parse_bytes(a, v);
        else if (!strcmp(a, "--batch-size"))
            o->batch = (int)parse_int(a, v, 1, 65536);
        else if (!strcmp(a, "--threads"))
            o->threads = (int)parse_int(a, v, 1, 64);
        else if (!strcmp(a, "--duration")) {
            char *end;
            o->duration = strtod(v, &end);
            if (end == v || *end || !(o->duration > 0 && o->duration <= 86400))
                die_usage("--duration '%s': seconds, more than 0 and at most 86400", v);
            have_dur = true;
        } else if (!strcmp(a, "--mem")) {
            if (strcmp(v, "alloc") && strcmp(v, "reg"))
                die_usage("--mem '%s': alloc or reg", v);
            o->reg = !strcmp(v, "reg");
        } else if (!strcmp(a, "--transport"))
            o->transport = v;
        else
            die_usage("unknown option '%s'", a);
    }
    if (!o->mode)
        o->mode = o->publish ? "target" : "initiator";
    bool target = !strcmp(o->mode, "target");
    if (o->ranks && (o->target || o->publish))
        die_usage("%s: --ranks takes no --target or --publish (the peer is the other rank)",
                  o->target ? o->target : o->publish);
    if (!o->ranks && target && !o->publish)
        die_usage("%s: a target needs --publish NAME (or --ranks under pxrun -n 2)", o->mode);
    if (!o->ranks && !target && !o->target)
        die_usage("%s: an initiator needs --target NAME (or --ranks under pxrun -n 2)", o->mode);
    if (target && !have_dur)
        o->duration = 0; /* serve until interrupted */
    if (o->buffer < o->block)
        o->buffer = o->block;
}

/* A region of `len` bytes of the kind --mem says, filled with `byte`. */
static px_xfer_region_t *make_region(const opts_t *o, size_t len, int byte)
{
    px_xfer_region_t *r = NULL;
    int rc;
    if (o->reg) {
        void *m = NULL;
        if (posix_memalign(&m, 4096, len) != 0) {
            fprintf(stderr, "px_xfer_bench: no memory for %zu bytes\n", len);
            return NULL;
        }
        memset(m, byte, len);
        rc = px_xfer_register(m, len, &r);
    } else {
        rc = px_xfer_alloc(len, &r);
        if (PX_SUCCESS == rc)
            memset(px_xfer_region_base(r), byte, len);
    }
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_xfer_bench: %s of %zu bytes failed: %s: %s\n",
                o->reg ? "px_xfer_register" : "px_xfer_alloc", len, px_strerror(rc),
                px_xfer_last_error());
        return NULL;
    }
    return r;
}

static void free_region(const opts_t *o, px_xfer_region_t **r)
{
    if (!*r)
        return;
    void *m = o->reg ? px_xfer_region_base(*r) : NULL;
    px_xfer_free(r);
    free(m);
}

/* ---- the initiator's threads ---- */

typedef struct worker {
    const opts_t *o;
    px_xfer_region_t *local;
    px_xfer_remote_t *remote;
    int index;
    double t_end;
    long ops;
    int rc;
    char why[512];
    pthread_t tid;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    const opts_t *o = w->o;
    size_t n = (size_t)o->batch, rlen = px_xfer_remote_length(w->remote);
    size_t slots = rlen / o->block; /* whole blocks in the target's region */
    px_xfer_batch_t *b = NULL;
    px_xfer_request_t *q = calloc(n, sizeof *q);
    w->rc = q ? px_xfer_batch_alloc(n, &b) : PX_ERR_OUT_OF_RESOURCE;
    if (w->rc != PX_SUCCESS) {
        snprintf(w->why, sizeof w->why, "no batch of %zu: %s", n, px_strerror(w->rc));
        free(q);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)w->index * n + i;
        q[i] = (px_xfer_request_t){.op = o->op,
                                   .local = w->local,
                                   .local_offset = k * o->block,
                                   .remote = w->remote,
                                   .remote_offset = (k % slots) * o->block,
                                   .length = o->block,
                                   .transport = o->transport};
    }
    while (px_wtime() < w->t_end) {
        px_xfer_batch_reset(b);
        int rc = px_xfer_batch_submit(b, q, n, NULL);
        if (PX_SUCCESS == rc)
            rc = px_xfer_batch_wait(b, 60);
        if (rc != PX_SUCCESS) {
            px_xfer_status_t st = {0};
            for (size_t i = 0; i < n; i++)
                if (px_xfer_batch_test(b, i, &st) < 0)
                    break;
            snprintf(w->why, sizeof w->why, "%s (%s)", px_strerror(rc),
                     st.reason ? st.reason : px_xfer_last_error());
            w->rc = rc;
            break;
        }
        w->ops += (long)n;
    }
    if (px_xfer_batch_pending(b) == 0)
        px_xfer_batch_free(&b);
    free(q);
    return NULL;
}

/* The path one block takes (a status's transport), for the report. */
static void probe_path(const opts_t *o, px_xfer_region_t *local, px_xfer_remote_t *remote,
                       char *path, size_t cap)
{
    px_xfer_batch_t *b = NULL;
    snprintf(path, cap, "?");
    if (px_xfer_batch_alloc(1, &b) != PX_SUCCESS)
        return;
    px_xfer_request_t q = {o->op, local, 0, remote, 0, o->block, o->transport};
    px_xfer_status_t st = {0};
    if (PX_SUCCESS == px_xfer_batch_submit(b, &q, 1, NULL) &&
        PX_SUCCESS == px_xfer_batch_wait(b, 60) && px_xfer_batch_test(b, 0, &st) == PX_SUCCESS)
        snprintf(path, cap, "%s", st.transport);
    px_xfer_batch_free(&b);
}

static int initiate(const opts_t *o, px_xfer_remote_t *remote, const char *mode, const char *extra)
{
    if (px_xfer_remote_length(remote) < o->block) {
        fprintf(stderr,
                "px_xfer_bench: the target's region has %zu bytes, less than one block "
                "(--block-size %zu)\n",
                px_xfer_remote_length(remote), o->block);
        return PX_ERR_BAD_PARAM;
    }
    size_t per = (size_t)o->batch * o->block;
    px_xfer_region_t *local = make_region(o, per * (size_t)o->threads, 1);
    if (!local)
        return PX_ERR_OUT_OF_RESOURCE;
    char path[96];
    probe_path(o, local, remote, path, sizeof path);
    worker_t *w = calloc((size_t)o->threads, sizeof *w);
    double t0 = px_wtime();
    for (int i = 0; i < o->threads; i++) {
        w[i] = (worker_t){
            .o = o, .local = local, .remote = remote, .index = i, .t_end = t0 + o->duration};
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0) {
            fprintf(stderr, "px_xfer_bench: cannot start thread %d\n", i);
            exit(1);
        }
    }
    long ops = 0;
    int rc = PX_SUCCESS;
    for (int i = 0; i < o->threads; i++) {
        pthread_join(w[i].tid, NULL);
        ops += w[i].ops;
        if (w[i].rc != PX_SUCCESS && PX_SUCCESS == rc) {
            rc = w[i].rc;
            fprintf(stderr, "px_xfer_bench: thread %d: a batch failed: %s\n", i, w[i].why);
        }
    }
    double dt = px_wtime() - t0;
    double bytes = (double)ops * (double)o->block;
    printf("px_xfer_bench: mode=%s op=%s block=%zu batch=%d threads=%d mem=%s duration=%.3f "
           "path=%s ops=%ld bytes=%.0f gbps=%.3f ops_per_s=%.0f%s%s\n",
           mode, o->op == PX_XFER_READ ? "read" : "write", o->block, o->batch, o->threads,
           o->reg ? "reg" : "alloc", dt, path, ops, bytes, bytes / dt / 1e9, (double)ops / dt,
           extra && *extra ? " " : "", extra ? extra : "");
    /* Mooncake's own closing line, for side-by-side reading */
    printf("Test completed: duration %.2f, batch count %ld, throughput %.2f GB/s\n", dt,
           ops / o->batch, bytes / dt / 1e9);
    fflush(stdout);
    free(w);
    free_region(o, &local);
    return rc;
}

/* ---- named: target and initiator ---- */

static int serve_named(const opts_t *o)
{
    px_xfer_region_t *r = make_region(o, o->buffer, 0x5a);
    if (!r)
        return 1;
    int rc = px_name_publish(o->publish, r);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_xfer_bench: px_name_publish(%s) failed: %s\n", o->publish,
                px_strerror(rc));
        free_region(o, &r);
        return 1;
    }
    char q[PX_NAME_MAX + 128];
    if (px_name_qualify(o->publish, q, sizeof q) != PX_SUCCESS)
        snprintf(q, sizeof q, "%s", o->publish);
    printf("px_xfer_bench: target: %zu bytes published as %s (open it as %s; registry %s)\n",
           o->buffer, o->publish, q, px_name_registry());
    fflush(stdout);
    if (o->name_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", o->name_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%s\n", q) < 0 || fclose(f) != 0 || rename(tmp, o->name_file)) {
            fprintf(stderr, "px_xfer_bench: cannot write %s: %s\n", o->name_file, strerror(errno));
            return 1;
        }
    }
    double until = o->duration > 0 ? px_wtime() + o->duration : 0;
    while (!stop_flag && (until == 0 || px_wtime() < until))
        px_progress(); /* peers connect and the transports serve through it */
    px_name_unpublish(o->publish);
    free_region(o, &r);
    return 0;
}

static int open_named(const opts_t *o)
{
    const char *reg = px_name_registry(); /* select (and connect to) the store first */
    if (!reg) {
        fprintf(stderr, "px_xfer_bench: no registry component could be selected\n");
        return 1;
    }
    px_xfer_region_t *one = make_region(o, 4096, 0);
    if (!one)
        return 1;
    px_name_t *h = NULL;
    double t0 = px_wtime();
    int rc = px_name_open(o->target, &h);
    double t1 = px_wtime();
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_xfer_bench: px_name_open(%s) failed: %s\n", o->target, px_strerror(rc));
        free_region(o, &one);
        return 1;
    }
    px_xfer_remote_t *remote = px_name_remote(h);
    if (!remote) {
        fprintf(stderr, "px_xfer_bench: %s is a contact, not a region\n", o->target);
        px_name_close(&h);
        free_region(o, &one);
        return 1;
    }
    rc = px_xfer_read(one, 0, remote, 0, 1);
    double t2 = px_wtime();
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_xfer_bench: the first read from %s failed: %s (%s)\n", o->target,
                px_strerror(rc), px_xfer_last_error());
        px_name_close(&h);
        free_region(o, &one);
        return 1;
    }
    free_region(o, &one);
    char extra[PX_NAME_MAX + 200];
    snprintf(extra, sizeof extra, "registry=%s open_ms=%.3f first_byte_ms=%.3f target=%s", reg,
             (t1 - t0) * 1e3, (t2 - t0) * 1e3, o->target);
    rc = initiate(o, remote, "named", extra);
    px_name_close(&h);
    return rc != PX_SUCCESS;
}

/* ---- ranks: pxrun -n 2 ---- */

static int run_ranks(const opts_t *o)
{
    if (px_size() != 2) {
        fprintf(stderr,
                "px_xfer_bench: --ranks needs a job of 2 ranks (pxrun -n 2), this one "
                "has %d\n",
                px_size());
        return 2;
    }
    int rc;
    if (px_rank() == 1) {
        px_xfer_region_t *r = make_region(o, o->buffer, 0x5a);
        unsigned char key[PX_XFER_KEY_MAX];
        size_t klen = 0;
        rc = r ? px_xfer_key_export(r, key, sizeof key, &klen) : PX_ERR_OUT_OF_RESOURCE;
        if (rc != PX_SUCCESS)
            klen = 0; /* an empty key tells rank 0 to give up */
        px_send(key, klen, 0, TAG_KEY);
        px_recv(NULL, 0, 0, TAG_DONE, NULL); /* progress while rank 0 measures */
        free_region(o, &r);
        return rc != PX_SUCCESS;
    }
    unsigned char key[PX_XFER_KEY_MAX];
    px_status_t st;
    px_xfer_remote_t *remote = NULL;
    px_xfer_region_t *one = make_region(o, 4096, 0);
    rc = px_recv(key, sizeof key, 1, TAG_KEY, &st);
    double t0 = px_wtime();
    if (PX_SUCCESS == rc && st.length == 0)
        rc = PX_ERR_OUT_OF_RESOURCE;
    if (PX_SUCCESS == rc)
        rc = px_xfer_key_import(1, key, st.length, &remote);
    if (PX_SUCCESS == rc && one)
        rc = px_xfer_read(one, 0, remote, 0, 1);
    double t1 = px_wtime();
    free_region(o, &one);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_xfer_bench: rank 1's region: %s (%s)\n", px_strerror(rc),
                px_xfer_last_error());
    } else {
        char extra[64];
        snprintf(extra, sizeof extra, "import_first_byte_ms=%.3f", (t1 - t0) * 1e3);
        rc = initiate(o, remote, "ranks", extra);
    }
    if (remote)
        px_xfer_remote_release(&remote);
    px_send(NULL, 0, 1, TAG_DONE);
    return rc != PX_SUCCESS;
}

int main(int argc, char **argv)
{
    opts_t o;
    parse(argc, argv, &o);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (px_init(&argc, &argv) != PX_SUCCESS) {
        fprintf(stderr, "px_xfer_bench: px_init failed\n");
        return 1;
    }
    int rc;
    if (o.ranks)
        rc = run_ranks(&o);
    else if (!strcmp(o.mode, "target"))
        rc = serve_named(&o);
    else
        rc = open_named(&o);
    if (px_finalize() != PX_SUCCESS && 0 == rc)
        rc = 1;
    return rc;
}
