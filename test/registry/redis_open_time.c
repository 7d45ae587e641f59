/*
 * redis_open_time: open-by-name to first byte, measured (not asserted) for
 * docs/registry.md's redis section; any registry works, the numbers quoted
 * are with registry/redis on one host.
 *
 *   redis_open_time NAME N
 *   redis_open_time --owner NAME STOPFILE
 *
 * The owner publishes 64 KiB under NAME and calls px_progress without pause
 * (a reader's one-sided read waits for its owner's progress: an owner that
 * sleeps between polls adds its sleep to every read) until STOPFILE exists.
 *
 * After px_init (not timed) and selecting the registry (timed apart,
 * px_name_registry): the first px_name_open + a 64-byte px_xfer_read
 * (registry lookup, connection to the owner, import, read: "cold"), then N
 * times close + open + read again ("warm": the connection stays; set
 * registry_cache_ttl=0 so each open reads the store). Prints the cold time
 * and the warm median and 90th percentile in microseconds.
 */
#include <plexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Open name, read its first 64 bytes into mine; the time in *us, of the
 * open alone in *open_us. */
static int once(const char *name, px_xfer_region_t *mine, double *us, double *open_us)
{
    double t0 = now_us();
    px_name_t *h = NULL;
    int rc = px_name_open(name, &h);
    *open_us = now_us() - t0;
    if (PX_SUCCESS == rc)
        rc = px_xfer_read(mine, 0, px_name_remote(h), 0, 64);
    *us = now_us() - t0;
    if (h)
        px_name_close(&h);
    return rc;
}

static int owner(const char *name, const char *stop)
{
    px_xfer_region_t *r = NULL;
    int rc = px_xfer_alloc(65536, &r);
    if (PX_SUCCESS == rc)
        rc = px_name_publish(name, r);
    printf("owner %s: %s\n", name, px_strerror(rc));
    fflush(stdout);
    for (unsigned long i = 0; PX_SUCCESS == rc; i++) {
        px_progress();
        if (0 == i % 4096 && 0 == access(stop, F_OK))
            break;
    }
    px_finalize();
    return PX_SUCCESS == rc ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && 0 == strcmp(argv[1], "--owner")) {
        const char *name = argv[2], *stop = argv[3];
        if (px_init(&argc, &argv) != PX_SUCCESS)
            return 3;
        return owner(name, stop);
    }
    if (argc < 3) {
        fprintf(stderr, "usage: redis_open_time NAME N\n");
        return 2;
    }
    const char *name = argv[1];
    int n = atoi(argv[2]);
    if (n < 1)
        n = 1;
    if (px_init(&argc, &argv) != PX_SUCCESS)
        return 3;
    px_xfer_region_t *mine = NULL;
    int rc = px_xfer_alloc(4096, &mine);
    /* Selecting the registry (loading its plugin, connecting to the store)
     * is timed apart: an application pays it once, at its first px_name_*
     * call or px_name_registry. */
    double s0 = now_us();
    const char *reg = px_name_registry();
    double select_us = now_us() - s0;
    double cold = 0, cold_open = 0;
    if (PX_SUCCESS == rc)
        rc = once(name, mine, &cold, &cold_open);
    double *t = calloc((size_t)n, sizeof *t), *o = calloc((size_t)n, sizeof *o);
    for (int i = 0; i < n && PX_SUCCESS == rc && t && o; i++)
        rc = once(name, mine, &t[i], &o[i]);
    if (PX_SUCCESS == rc && t && o) {
        qsort(t, (size_t)n, sizeof *t, cmp);
        qsort(o, (size_t)n, sizeof *o, cmp);
        printf("open+first byte (%s, registry %s selected in %.0f us): cold %.0f us (open %.0f); "
               "warm median %.0f us (open %.0f), p90 %.0f us over %d\n",
               name, reg ? reg : "none", select_us, cold, cold_open, t[n / 2], o[n / 2],
               t[n * 9 / 10], n);
    } else {
        printf("open+first byte (%s): %s\n", name, px_strerror(rc));
    }
    free(t);
    free(o);
    if (mine)
        px_xfer_free(&mine);
    px_finalize();
    return PX_SUCCESS == rc ? 0 : 1;
}
