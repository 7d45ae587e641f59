/*
 * px_perf_btl.c: px_perf --btl, the ping-pong straight on the transport
 * (below the messaging API).
 */
#include <stdio.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/runtime.h" /* --btl reaches the transport behind the API */
#include "tools/px_perf/px_perf.h"

/* --btl: the same ping-pong straight on the transport that serves rank 1
 * (btl_sendi and the module's progress, an active-message callback on a user
 * tag), to split the one-way latency into transport and runtime. */
static volatile int btl_arrived;
static char btl_rbuf[1 << 16];
static void btl_am(struct px_btl_module *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    /* Copy the data out, as a receive into a user buffer would. */
    size_t off = 0;
    for (size_t i = 0; i < d->des_segment_count; i++) {
        size_t n = d->des_segments[i].seg_len;
        if (off + n > sizeof btl_rbuf)
            n = sizeof btl_rbuf - off;
        memcpy(btl_rbuf + off, d->des_segments[i].seg_addr, n);
        off += n;
    }
    btl_arrived++;
}

/* One message, as the runtime's eager send takes it: btl_sendi, and when it
 * says "not now", a descriptor from btl_alloc sent with btl_send (a module
 * may take only small messages through sendi, e.g. up to its eager limit, and
 * then refuse larger ones for ever, docs/btl.md). Both refusing is retried
 * after progress, for at most a minute without any send taken; an error of
 * the peer ends the benchmark. */
static void btl_send_one(px_btl_module_t *m, px_btl_endpoint_t *ep, const void *buf, size_t s)
{
    double since = 0;
    for (;;) {
        int rc = m->btl_sendi(m, ep, buf, s, NULL, 0, PX_BTL_NO_ORDER, 0, 200, NULL);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc) {
            px_perf_check(rc, "btl_sendi");
            return;
        }
        px_btl_descriptor_t *d =
            m->btl_alloc(m, ep, PX_BTL_NO_ORDER, s, PX_BTL_DES_FLAGS_BTL_OWNERSHIP);
        if (d) {
            if (s)
                memcpy(d->des_segments[0].seg_addr, buf, s);
            rc = m->btl_send(m, ep, d, 200);
            if (rc >= 0)
                return;
            m->btl_free(m, d);
            if (PX_ERR_TEMP_OUT_OF_RESOURCE != rc)
                px_perf_check(rc, "btl_send");
        }
        if (0 == since) {
            since = px_wtime();
        } else if (px_wtime() - since > 60) {
            fprintf(stderr,
                    "px_perf --btl: btl/%s took no send of %zu bytes for 60 s (btl_sendi and "
                    "btl_alloc + btl_send both answer \"not now\")\n",
                    m->btl_component->base.component_name, s);
            px_abort(3, "px_perf: the transport takes no send");
        }
        m->btl_progress(m);
    }
}

void px_perf_btl(const size_t *sizes, int nsizes, long iters_override)
{
    int rank = px_rank(), peer = rank == 0 ? 1 : 0;
    if (rank > 1 || px_size() < 2)
        return;
    px_btl_module_t *m = NULL;
    px_btl_endpoint_t *ep = NULL;
    if (px_rt_tool_peer_btl(peer, &m, &ep) != PX_SUCCESS || !m->btl_sendi) {
        if (rank == 0)
            printf("px_perf --btl: the transport to rank 1 has no sendi\n");
        return;
    }
    px_btl_base_register_am(200, btl_am, NULL);
    static char buf[1 << 16];
    if (rank == 0)
        printf("# px_perf --btl: %s sendi + progress + copy out, half round trip\n%10s %12s\n",
               m->btl_component->base.component_name, "bytes", "lat_us");
    for (int si = 0; si < nsizes; si++) {
        size_t s = sizes[si];
        if (s > sizeof buf || s > m->btl_max_send_size) {
            /* sendi would answer "not now" for ever: say so instead of spinning */
            if (rank == 0)
                printf("# %zu bytes skipped: above %s (%zu bytes)\n", s,
                       s > sizeof buf ? "px_perf --btl's buffer"
                                      : "the transport's btl_max_send_size",
                       s > sizeof buf ? sizeof buf : m->btl_max_send_size);
            continue;
        }
        long iters = iters_override ? iters_override : 20000, warm = iters / 10;
        double t0 = 0;
        /* Reset the count before the barrier, never after it: the peer may
         * leave the barrier first and its first message may arrive (and be
         * counted by btl_am) while this rank still progresses inside
         * px_barrier. Resetting after the barrier lost that message and both
         * ranks waited for ever (seen over verbs, where the barrier's message
         * and the first ping complete in the same CQ poll). Every message of
         * the previous size was counted before this point. */
        btl_arrived = 0;
        px_barrier();
        int expect = 0;
        for (long i = 0; i < iters + warm; i++) {
            if (i == warm)
                t0 = px_wtime();
            if (rank == 0) {
                btl_send_one(m, ep, buf, s);
                expect++;
                while (btl_arrived < expect)
                    m->btl_progress(m);
            } else {
                expect++;
                while (btl_arrived < expect)
                    m->btl_progress(m);
                btl_send_one(m, ep, buf, s);
            }
        }
        double lat = (px_wtime() - t0) / (double)iters / 2 * 1e6;
        if (rank == 0)
            printf("%10zu %12.3f\n", s, lat);
    }
    px_btl_base_register_am(200, NULL, NULL);
    px_barrier();
}
