/*
 * init_probe.c: px_init, print "rank R size S" and each peer's transport,
 * exchange one message with itself, px_finalize. Exit status 0 on success,
 * 2 when px_init fails (its error is on stderr). Driven by test/runtime/t_*.sh.
 *   init_probe abort R     rank R calls px_abort(3, "probe abort from rank R")
 *   init_probe wait        rank 0 waits for a message rank 1 never sends
 *                          (prints the return code's text), then all finalize
 * After px_init it also prints "mapped: libpmix N libibverbs N": how many
 * mappings of each library /proc/self/maps shows (the boot and BTL plugins
 * load them only when the launcher or a device needs them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"

/* Mappings of a file whose name contains `lib` in /proc/self/maps. */
static int mapped(const char *lib)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, lib))
            ++n;
    if (f)
        fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        printf("px_init failed: %s\n", px_strerror(rc));
        return 2;
    }
    printf("rank %d size %d\n", px_rank(), px_size());
    printf("mapped: libpmix %d libibverbs %d\n", mapped("/libpmix.so"), mapped("/libibverbs.so"));
    for (int p = 0; p < px_size(); ++p)
        printf("transport to %d: %s\n", p, px_transport_name(p));
    if (argc > 2 && 0 == strcmp(argv[1], "abort")) {
        char msg[64];
        snprintf(msg, sizeof(msg), "probe abort from rank %d", px_rank());
        if (px_rank() == atoi(argv[2]))
            px_abort(3, msg);
    }
    if (argc > 1 && 0 == strcmp(argv[1], "wait")) {
        if (px_rank() == 0) {
            int x;
            double t0 = px_wtime();
            rc = px_recv(&x, sizeof(x), px_size() - 1, 99, NULL);
            printf("wait: %s after %.1f s\n", px_strerror(rc), px_wtime() - t0);
        } else {
            /* Keep serving, but stay out of the barrier until rank 0 is
             * done, so no other wait runs into runtime_wait_timeout. */
            double t0 = px_wtime();
            while (px_wtime() - t0 < 1.5)
                px_progress();
        }
    }
    int v = 42, w = 0;
    if (px_send(&v, sizeof(v), px_rank(), 0) != PX_SUCCESS ||
        px_recv(&w, sizeof(w), px_rank(), 0, NULL) != PX_SUCCESS || w != 42) {
        printf("self message failed\n");
        return 1;
    }
    if (px_barrier() != PX_SUCCESS)
        return 1;
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}
