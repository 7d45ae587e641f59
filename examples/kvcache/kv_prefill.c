/*
 * kv_prefill: a "prefill" writer of the kvcache example
 * (examples/kvcache/README.md). Started on its own (no launcher), it
 * allocates BLOCKS KV blocks (px_xfer_alloc), fills each with a header and a
 * pattern derived from (writer id, block index, generation), publishes each
 * under "kv/<model>/<writer>/<block>" (px_name_publish) and serves them (a
 * progress loop: readers connect and read through it) until it is
 * interrupted (SIGINT, SIGTERM: it unpublishes its names and ends) or killed
 * (its names expire after the registry's lease), or after --duration.
 *
 *   PX_MCA_registry=redis PX_MCA_peer_secret_file=SECRET ./kv_prefill --writer 1
 *
 * Options: --model NAME (default "demo"), --writer ID (default 0), --blocks N
 * (16), --block-size BYTES (1M; k/M suffixes, header included), --generation
 * G (1), --duration SECONDS (0: until interrupted), --names-file FILE (write
 * the names readers open, one a line: "host:port/kv/..." under p2p),
 * --poll-us US (sleep between idle progress passes, default 50).
 */
#include <errno.h>
#include <plexus.h>
#include <runtime/plexus_name.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kv_common.h"

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: kv_prefill [--model NAME] [--writer ID] [--blocks N] [--block-size "
                    "BYTES] [--generation G]\n"
                    "                  [--duration SECONDS] [--names-file FILE] [--poll-us US]\n");
    exit(2);
}

static unsigned long long number(const char *opt, const char *s, unsigned long long lo,
                                 unsigned long long hi)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end != s && (*end == 'k' || *end == 'K'))
        v <<= 10, end++;
    else if (end != s && (*end == 'm' || *end == 'M'))
        v <<= 20, end++;
    if (end == s || *end || errno || s[0] == '-' || v < lo || v > hi) {
        fprintf(stderr, "kv_prefill: %s '%s': a number in %llu..%llu\n", opt, s, lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *model = "demo", *names_file = NULL;
    unsigned long long writer = 0, blocks = 16, bsize = 1 << 20, generation = 1, poll_us = 50;
    double duration = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--writer"))
            writer = number(a, v, 0, 1000000);
        else if (!strcmp(a, "--blocks"))
            blocks = number(a, v, 1, 100000);
        else if (!strcmp(a, "--block-size"))
            bsize = number(a, v, KV_HEADER + 8, 1ull << 32);
        else if (!strcmp(a, "--generation"))
            generation = number(a, v, 0, ~0ull);
        else if (!strcmp(a, "--duration"))
            duration = (double)number(a, v, 0, 86400);
        else if (!strcmp(a, "--names-file"))
            names_file = v;
        else if (!strcmp(a, "--poll-us"))
            poll_us = number(a, v, 0, 1000000);
        else {
            fprintf(stderr, "kv_prefill: unknown option '%s'\n", a);
            usage();
        }
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 1;
    px_xfer_region_t **r = calloc(blocks, sizeof *r);
    char(*names)[PX_NAME_MAX + 1] = calloc(blocks, sizeof *names);
    FILE *nf = NULL;
    char tmp[4096];
    if (names_file) { /* written whole, then renamed: a reader never sees half of it */
        snprintf(tmp, sizeof tmp, "%s.tmp", names_file);
        if (!(nf = fopen(tmp, "w"))) {
            fprintf(stderr, "kv_prefill: cannot write %s: %s\n", tmp, strerror(errno));
            return 1;
        }
    }
    int rc = (r && names) ? PX_SUCCESS : PX_ERR_OUT_OF_RESOURCE;
    unsigned long long done = 0;
    for (; PX_SUCCESS == rc && done < blocks; done++) {
        rc = px_xfer_alloc(bsize, &r[done]);
        if (rc != PX_SUCCESS) {
            fprintf(stderr, "kv_prefill: px_xfer_alloc(%llu) for block %llu: %s\n", bsize, done,
                    px_xfer_last_error());
            break;
        }
        unsigned char *m = px_xfer_region_base(r[done]);
        kv_header_t h = {.magic = KV_MAGIC,
                         .writer = writer,
                         .block = done,
                         .generation = generation,
                         .length = bsize - KV_HEADER};
        kv_fill(m + KV_HEADER, h.length, writer, done, generation);
        h.sum = kv_checksum(m + KV_HEADER, h.length);
        memcpy(m, &h, sizeof h);
        snprintf(names[done], sizeof names[done], "kv/%s/%llu/%llu", model, writer, done);
        rc = px_name_publish(names[done], r[done]); /* the library says why it failed */
        if (rc != PX_SUCCESS) {
            fprintf(stderr, "kv_prefill: cannot publish %s: %s\n", names[done], px_strerror(rc));
            px_xfer_free(&r[done]);
            break;
        }
        char q[PX_NAME_MAX + 128];
        if (px_name_qualify(names[done], q, sizeof q) != PX_SUCCESS)
            snprintf(q, sizeof q, "%s", names[done]);
        if (nf)
            fprintf(nf, "%s\n", q);
        if (0 == done)
            printf("prefill: writer %llu: the first block is open as %s\n", writer, q);
    }
    if (nf && (fclose(nf) != 0 || (PX_SUCCESS == rc && rename(tmp, names_file) != 0))) {
        fprintf(stderr, "kv_prefill: cannot write %s: %s\n", names_file, strerror(errno));
        rc = PX_ERR_IN_ERRNO;
    }
    if (PX_SUCCESS == rc) {
        printf("prefill: writer %llu (pid %ld): published %llu blocks of %llu bytes, generation "
               "%llu, as kv/%s/%llu/0 .. kv/%s/%llu/%llu (registry %s); serving\n",
               writer, (long)getpid(), blocks, bsize, generation, model, writer, model, writer,
               blocks - 1, px_name_registry());
        fflush(stdout);
        double until = duration > 0 ? px_wtime() + duration : 0;
        struct timespec nap = {0, (long)poll_us * 1000};
        /* Readers connect, and the transports serve their reads, through our
         * progress; sleep a little when nothing happened. */
        while (!stop_flag && (0 == until || px_wtime() < until))
            if (0 == px_progress() && poll_us)
                nanosleep(&nap, NULL);
    }
    /* Ending: unpublish (readers' next refresh finds the names gone) and free. */
    unsigned long long gone = 0;
    for (unsigned long long b = 0; b < done; b++) {
        if (r[b] && PX_SUCCESS == px_name_unpublish(names[b]))
            gone++;
        if (r[b])
            px_xfer_free(&r[b]);
    }
    printf("prefill: writer %llu: %s; unpublished %llu names\n", writer,
           PX_SUCCESS == rc ? "stopped" : "failed", gone);
    free(r);
    free(names);
    int frc = px_finalize();
    return PX_SUCCESS != rc || PX_SUCCESS != frc;
}
