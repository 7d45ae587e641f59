/*
 * redis_open_time: open-by-name to first byte, measured (not asserted) for
 * docs/registry.md's redis section; any registry works, the numbers quoted
 * are with registry/redis on one host.
 *
 *   redis_open_time NAME N
 *
 * After px_init (not timed): the first px_name_open + a 64-byte px_xfer_read
 * (registry lookup, connection to the owner, import, read: "cold"), then N
 * times close + open + read again ("warm": the connection stays; set
 * registry_cache_ttl=0 so each open reads the store). Prints the cold time
 * and the warm median and 90th percentile in microseconds.
 */
#include <plexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

/* Open name, read its first 64 bytes into mine; the time in *us. */
static int once(const char *name, px_xfer_region_t *mine, double *us)
{
    double t0 = now_us();
    px_name_t *h = NULL;
    int rc = px_name_open(name, &h);
    if (PX_SUCCESS == rc)
        rc = px_xfer_read(mine, 0, px_name_remote(h), 0, 64);
    *us = now_us() - t0;
    if (h)
        px_name_close(&h);
    return rc;
}

int main(int argc, char **argv)
{
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
    double cold = 0;
    if (PX_SUCCESS == rc)
        rc = once(name, mine, &cold);
    double *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n && PX_SUCCESS == rc && t; i++)
        rc = once(name, mine, &t[i]);
    if (PX_SUCCESS == rc && t) {
        qsort(t, (size_t)n, sizeof *t, cmp);
        printf("open+first byte (%s, registry %s): cold %.0f us; warm median %.0f us, p90 %.0f "
               "us over %d\n",
               name, px_name_registry(), cold, t[n / 2], t[n * 9 / 10], n);
    } else {
        printf("open+first byte (%s): %s\n", name, px_strerror(rc));
    }
    free(t);
    if (mine)
        px_xfer_free(&mine);
    px_finalize();
    return PX_SUCCESS == rc ? 0 : 1;
}
