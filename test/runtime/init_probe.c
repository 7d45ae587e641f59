/*
 * init_probe.c: px_init, print "rank R size S" and each peer's transport,
 * exchange one message with itself, px_finalize. Exit status 0 on success,
 * 2 when px_init fails (its error is on stderr). Driven by test/runtime/t_*.sh.
 */
#include <stdio.h>
#include "core/runtime/plexus.h"

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        printf("px_init failed: %s\n", px_strerror(rc));
        return 2;
    }
    printf("rank %d size %d\n", px_rank(), px_size());
    for (int p = 0; p < px_size(); ++p)
        printf("transport to %d: %s\n", p, px_transport_name(p));
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
