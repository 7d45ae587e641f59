/*
 * notify.c: notifications (px_xfer_notify): a small message to a peer that
 * leaves only once every write to that peer submitted before it completed.
 * A note goes through the queue into progress like a request; it waits on
 * its peer's list while requests to the peer are active, and requests
 * submitted after it are held (batch.c) until it went out. Progress sends
 * the waiting notes (px_xfer_notes_run) and then starts what was held; a
 * completing request only leaves that to progress. Received notes wait in
 * an inbox (any thread; its own lock) for px_xfer_notify_recv.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/xfer/xfer.h"

typedef struct {
    uint32_t len;
    uint32_t pad;
} px_xfer_note_hdr_t;

static void note_free(px_xfer_note_t *n)
{
    px_xfer.notes_waiting--;
    atomic_fetch_sub(&px_xfer.work, 1);
    PX_OBJ_DESTRUCT(&n->link);
    free(n);
}

/* Send the peer's notes while no request to it is active; once none waits,
 * start what was held behind them. */
static int notes_try(px_xfer_peer_t *p)
{
    const int peer = p->id;
    int n = 0;
    px_list_item_t *it;
    while (0 == p->active && (it = px_list_get_first(&p->notes)) != px_list_get_end(&p->notes)) {
        px_xfer_note_t *note = px_container_of(it, px_xfer_note_t, link);
        px_xfer_note_hdr_t h = {(uint32_t)note->len, 0};
        int rc = px_xfer_send(peer, PX_XFER_AM_NOTIFY, &h, sizeof h, note->data, note->len);
        if (PX_ERR_TEMP_OUT_OF_RESOURCE == rc)
            return n; /* retried from progress */
        if (rc != PX_SUCCESS)
            PX_OUTPUT_VERBOSE(1, px_xfer.output, "a notification to peer %d was dropped: %s", peer,
                              px_strerror(rc));
        px_list_remove_item(&p->notes, it);
        note_free(note);
        n++;
    }
    if (px_list_is_empty(&p->notes) && !px_list_is_empty(&p->held))
        px_xfer_held_start(peer);
    return n;
}

void px_xfer_note_arrive(px_xfer_note_t *n)
{
    px_xfer_peer_t *p = px_xfer_peer_get(n->peer);
    if (!p || atomic_load(&p->failed)) {
        atomic_fetch_sub(&px_xfer.work, 1);
        PX_OBJ_DESTRUCT(&n->link);
        free(n);
        return;
    }
    px_list_append(&p->notes, &n->link);
    px_xfer.notes_waiting++;
    notes_try(p);
}

int px_xfer_notes_run(void)
{
    int n = 0;
    for (int r = 0; r < px_xfer.npeers && px_xfer.notes_waiting; ++r)
        if (!px_list_is_empty(&px_xfer.peers[r].notes))
            n += notes_try(&px_xfer.peers[r]);
    for (int r = 0; r < px_xfer.ndyn && px_xfer.notes_waiting; ++r)
        if (!px_list_is_empty(&px_xfer.dyn[r]->notes))
            n += notes_try(px_xfer.dyn[r]);
    return n;
}

void px_xfer_notes_drop(px_xfer_peer_t *p)
{
    px_list_item_t *it;
    while ((it = px_list_remove_first(&p->notes)) != NULL)
        note_free(px_container_of(it, px_xfer_note_t, link));
}

void px_xfer_inbox_finalize(void)
{
    pthread_mutex_lock(&px_xfer.inbox_lock);
    px_list_item_t *it;
    while ((it = px_list_remove_first(&px_xfer.inbox)) != NULL) {
        PX_OBJ_DESTRUCT(it);
        free(px_container_of(it, px_xfer_inbox_item_t, link));
    }
    atomic_store(&px_xfer.inbox_count, 0);
    pthread_mutex_unlock(&px_xfer.inbox_lock);
}

int px_xfer_notify(int peer, const void *message, size_t length)
{
    if (PX_UNLIKELY(!px_xfer.ready))
        return px_xfer_api_error(PX_ERR_NOT_INITIALIZED, "px_xfer_notify",
                                 "Plexus is not initialised");
    px_xfer_peer_t *p = NULL;
    if (PX_LIKELY(peer >= 0 && peer < px_xfer.npeers))
        p = &px_xfer.peers[peer];
    else if (peer >= PX_RT_DYN_BASE && !(p = px_xfer_peer_dyn(peer, true)))
        return px_xfer_fail(PX_ERR_PEER_FAILED,
                            "px_xfer_notify: peer %d is not connected (disconnected, gone, or "
                            "never an id px_connect or px_accept gave)",
                            peer);
    if (PX_UNLIKELY(!p || length > PX_XFER_NOTIFY_MAX || (length && !message)))
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_notify",
            "peer %d, %zu bytes at %p: expected a rank from 0 to %d or a connected peer's id, "
            "and at most %d bytes",
            peer, length, message, px_xfer.npeers - 1, PX_XFER_NOTIFY_MAX);
    int failed = atomic_load_explicit(&p->failed, memory_order_acquire);
    if (failed) {
        char name[300];
        return px_xfer_fail(failed, "px_xfer_notify: %s failed: %s",
                            px_xfer_peer_name(peer, name, sizeof name), p->why ? p->why : "?");
    }
    px_xfer_note_t *n = malloc(sizeof *n + length);
    if (!n)
        return px_xfer_fail(PX_ERR_OUT_OF_RESOURCE, "px_xfer_notify: out of memory");
    n->q.kind = PX_XFER_Q_NOTE;
    PX_OBJ_CONSTRUCT(&n->link, px_list_item_t);
    n->peer = peer;
    n->len = length;
    if (length)
        memcpy(n->data, message, length);
    px_xfer_need_progress();
    atomic_fetch_add_explicit(&px_xfer.work, 1, memory_order_relaxed);
    px_mpsc_push(&px_xfer.queue, &n->q.node);
    px_xfer_progress_try();
    return PX_SUCCESS;
}

void px_xfer_am_notify(px_btl_module_t *btl, const px_btl_receive_descriptor_t *d)
{
    (void)btl;
    size_t total = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i)
        total += d->des_segments[i].seg_len;
    px_xfer_note_hdr_t h;
    if (d->des_segment_count < 1 || d->des_segments[0].seg_len < sizeof h) {
        px_show_error("a notification from rank %d has %zu bytes, %zu in its first segment: "
                      "less than its %zu-byte header (which a transport delivers whole, first); "
                      "dropped",
                      d->src_rank, total, d->des_segment_count ? d->des_segments[0].seg_len : 0,
                      sizeof h);
        return;
    }
    memcpy(&h, d->des_segments[0].seg_addr, sizeof h);
    if (h.len > PX_XFER_NOTIFY_MAX || h.len != total - sizeof h) {
        px_show_error("a notification from rank %d says %u bytes and carries %zu; dropped",
                      d->src_rank, h.len, total - sizeof h);
        return;
    }
    px_xfer_inbox_item_t *it = malloc(sizeof *it + h.len);
    if (!it)
        return;
    PX_OBJ_CONSTRUCT(&it->link, px_list_item_t);
    it->peer = d->src_rank;
    it->len = h.len;
    size_t skip = sizeof h, pos = 0;
    for (size_t i = 0; i < d->des_segment_count; ++i) {
        const char *a = d->des_segments[i].seg_addr;
        size_t l = d->des_segments[i].seg_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        memcpy(it->data + pos, a + skip, l - skip);
        pos += l - skip;
        skip = 0;
    }
    pthread_mutex_lock(&px_xfer.inbox_lock);
    px_list_append(&px_xfer.inbox, &it->link);
    atomic_fetch_add(&px_xfer.inbox_count, 1);
    pthread_mutex_unlock(&px_xfer.inbox_lock);
}

static px_xfer_inbox_item_t *inbox_pop(void)
{
    if (0 == atomic_load_explicit(&px_xfer.inbox_count, memory_order_acquire))
        return NULL;
    pthread_mutex_lock(&px_xfer.inbox_lock);
    px_list_item_t *li = px_list_remove_first(&px_xfer.inbox);
    if (li)
        atomic_fetch_sub(&px_xfer.inbox_count, 1);
    pthread_mutex_unlock(&px_xfer.inbox_lock);
    return li ? px_container_of(li, px_xfer_inbox_item_t, link) : NULL;
}

static bool inbox_nonempty(const void *arg)
{
    (void)arg;
    return atomic_load_explicit(&px_xfer.inbox_count, memory_order_acquire) > 0;
}

int px_xfer_notify_recv(int *peer, void *buffer, size_t capacity, size_t *length, double timeout)
{
    if (PX_UNLIKELY(!px_xfer.ready))
        return px_xfer_api_error(PX_ERR_NOT_INITIALIZED, "px_xfer_notify_recv",
                                 "Plexus is not initialised");
    if (PX_UNLIKELY(!peer || !length || (capacity && !buffer)))
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_notify_recv",
            "peer %p, buffer %p, length %p: expected places for the peer, the bytes "
            "and the length",
            (void *)peer, buffer, (void *)length);
    double deadline = timeout >= 0 ? px_wtime() + timeout : 0;
    for (;;) {
        px_xfer_inbox_item_t *it = inbox_pop();
        if (!it) {
            px_xfer_progress_try();
            it = inbox_pop();
        }
        if (it) {
            *peer = it->peer;
            *length = it->len;
            size_t c = it->len < capacity ? it->len : capacity;
            if (c)
                memcpy(buffer, it->data, c);
            int rc = it->len > capacity ? PX_ERR_TRUNCATE : PX_SUCCESS;
            PX_OBJ_DESTRUCT(&it->link);
            free(it);
            return rc;
        }
        double left = timeout >= 0 ? deadline - px_wtime() : 1.0;
        if (left <= 0)
            return px_xfer_fail(PX_ERR_TIMEOUT, "px_xfer_notify_recv: no notification within %g s",
                                timeout);
        px_xfer_wait_loop(inbox_nonempty, NULL, left < 0.05 ? left : 0.05);
    }
}
