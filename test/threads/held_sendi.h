/*
 * held_sendi.h: a BTL module's btl_sendi wrapped so that the send of the
 * message of one tag waits inside the transport call until the test lets it
 * go, to show what other threads can do meanwhile (thread_fine: a blocked
 * transport call under fine mode; thread_progress: the API lock held).
 * Included by those two test programs only; everything here is static.
 *
 *   held_arm(module, tag, bound_s)  wrap module's sendi; held_inner keeps it
 *   held_now()                      monotonic seconds
 *   held, release                   the holder is inside / let it go; it also
 *                                   goes by itself after bound_s seconds
 *   held_disarm(module)             put the module's sendi back
 */
#ifndef PX_TEST_HELD_SENDI_H
#define PX_TEST_HELD_SENDI_H

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include "frameworks/btl/btl.h"

typedef int (*held_sendi_fn)(px_btl_module_t *, px_btl_endpoint_t *, const void *, size_t,
                             const void *, size_t, uint8_t, uint32_t, px_btl_tag_t,
                             px_btl_descriptor_t **);
static held_sendi_fn held_inner;
static int32_t held_tag;
static double held_bound_s;
static atomic_int held;    /* the holder is inside the wrapped sendi */
static atomic_int release; /* let it go */

static double held_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The match header the runtime puts first (runtime/pml/pml_wire.h). */
struct held_match_hdr {
    int32_t src, tag;
    uint32_t seq, flags;
};

static int held_sendi(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *header,
                      size_t header_size, const void *payload, size_t payload_size, uint8_t order,
                      uint32_t flags, px_btl_tag_t tag, px_btl_descriptor_t **descriptor)
{
    if (header_size == sizeof(struct held_match_hdr)) {
        struct held_match_hdr h;
        memcpy(&h, header, sizeof h);
        if (held_tag == h.tag) {
            atomic_store(&held, 1);
            double t0 = held_now();
            while (!atomic_load(&release) && held_now() - t0 < held_bound_s)
                sched_yield();
        }
    }
    return held_inner(btl, ep, header, header_size, payload, payload_size, order, flags, tag,
                      descriptor);
}

static void held_arm(px_btl_module_t *m, int32_t tag, double bound_s)
{
    held_inner = m->btl_sendi;
    held_tag = tag;
    held_bound_s = bound_s;
    m->btl_sendi = held_sendi;
}

static void held_disarm(px_btl_module_t *m)
{
    m->btl_sendi = held_inner;
}

#endif
