/*
 * mpsc.h: a multi-producer, single-consumer queue of intrusive nodes. Any
 * number of threads push without a lock; one consumer at a time (the caller
 * guarantees it, e.g. by holding the lock of whoever progresses) takes
 * everything queued so far in one step, oldest first. The transfer engine
 * (runtime/xfer*.c) feeds its progress from it; usable on its own.
 *
 *   px_mpsc_t q = PX_MPSC_INIT;
 *   px_mpsc_push(&q, &item->node);                 // any thread
 *   for (px_mpsc_node_t *n = px_mpsc_take_all(&q); n; n = n->next) use(n);
 *
 * How: the producers push onto a lock-free stack (compare-and-swap of the
 * head); the consumer swaps the whole stack out at once and reverses it. The
 * consumer never pops single nodes, so a node cannot be taken, reused and
 * pushed again between a producer's load and its CAS of the head (the ABA
 * problem of a Treiber stack does not arise), and no node is read after the
 * consumer took it unless the consumer reads it. Order: each producer's
 * nodes come out in the order it pushed them; nodes of different producers
 * in the order their pushes took effect.
 *
 * Cost: a push is one CAS (retried only when another push raced it); a take
 * is one exchange plus a pass over the taken nodes. An empty check is one load.
 */
#ifndef PX_CLASS_MPSC_H
#define PX_CLASS_MPSC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct px_mpsc_node {
    struct px_mpsc_node *next;
} px_mpsc_node_t;

typedef struct px_mpsc {
    _Atomic(px_mpsc_node_t *) head; /* the newest node, or NULL */
} px_mpsc_t;

#define PX_MPSC_INIT                                                                               \
    {                                                                                              \
        NULL                                                                                       \
    }

static inline void px_mpsc_init(px_mpsc_t *q)
{
    atomic_init(&q->head, NULL);
}

/* Push one node (any thread). The node belongs to the queue until taken. */
static inline void px_mpsc_push(px_mpsc_t *q, px_mpsc_node_t *node)
{
    px_mpsc_node_t *old = atomic_load_explicit(&q->head, memory_order_relaxed);
    do {
        node->next = old;
    } while (!atomic_compare_exchange_weak_explicit(&q->head, &old, node, memory_order_release,
                                                    memory_order_relaxed));
}

/* Whether nothing is queued (a hint: a push may land right after). */
static inline bool px_mpsc_empty(px_mpsc_t *q)
{
    return NULL == atomic_load_explicit(&q->head, memory_order_relaxed);
}

/* Take every node queued so far, oldest first, linked by `next` (NULL when
 * empty). One consumer at a time. */
static inline px_mpsc_node_t *px_mpsc_take_all(px_mpsc_t *q)
{
    if (NULL == atomic_load_explicit(&q->head, memory_order_relaxed))
        return NULL;
    px_mpsc_node_t *n = atomic_exchange_explicit(&q->head, NULL, memory_order_acquire),
                   *fifo = NULL;
    while (n) { /* newest first -> oldest first */
        px_mpsc_node_t *next = n->next;
        n->next = fifo;
        fifo = n;
        n = next;
    }
    return fifo;
}

#endif
