/*
 * shm_dyn.c: btl/shm's dynamic peers (BTL API 3.3): a process on this host
 * that is not a rank of the job, added through the dynamic peer exchange.
 *
 * Each side of a connection makes its own connection segment, sized per
 * connection (not from the job's local ranks): a header page (magic, key,
 * sizes, its read position) and one ring, the fast box the other side
 * writes into. The segment is a sealed memfd (it cannot shrink under the
 * peer's mapping); the part of the payload names it by pid and descriptor
 * number, and the peer opens /proc/<pid>/fd/<n>, which the kernel permits
 * only to a process of the same user (or one allowed to ptrace the owner).
 * Before that, both sides check that they run on the same boot of the same
 * kernel (boot id) in the same pid and IPC namespaces, as the same user;
 * after, the peer checks the segment's seals, size and random key. Every
 * message goes through the rings (no fragment heap, no shared queue), with
 * the ring readers' existing bounds checks; a peer writing out of bounds is
 * cut off as a job peer would be. The peer's liveness is a pidfd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/progress.h"
#include "frameworks/btl/base/base.h"

#define DYN_RING_MIN ((size_t)64 << 10)
#define DYN_RING_MAX ((size_t)16 << 20)

#define REASON(...) snprintf(reason, PX_BTL_DYN_REASON_MAX, __VA_ARGS__)

/* ------------------------------------------------------------ this host */

static bool read_boot_id(unsigned char id[16])
{
    char text[64] = "";
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    int k = 0;
    for (const char *p = text; *p && k < 32; p++) {
        int v = (*p >= '0' && *p <= '9')   ? *p - '0'
                : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
                : (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10
                                           : -1;
        if (v < 0)
            continue;
        if (k % 2 == 0)
            id[k / 2] = (unsigned char)(v << 4);
        else
            id[k / 2] |= (unsigned char)v;
        k++;
    }
    return k == 32;
}

static uint64_t ns_inode(const char *which)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/self/ns/%s", which);
    return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* What this process puts in its part (and compares a peer's with). */
static bool my_identity(px_btl_shm_dyn_part_t *me)
{
    /* Read once per process (five system calls on /proc each time cost a
     * connection about 3 x 15 of them on each side): the boot id cannot
     * change, nor can the namespaces of a process that did not call
     * unshare or setns. A forked child (another pid) reads its own. */
    static px_btl_shm_dyn_part_t cached;
    static bool have;
    memset(me, 0, sizeof *me);
    me->magic = PX_BTL_SHM_DYN_MAGIC;
    me->version = PX_BTL_SHM_DYN_VERSION;
    me->uid = (uint32_t)getuid();
    me->pid = (int32_t)getpid();
    if (!have || cached.pid != me->pid) {
        memset(&cached, 0, sizeof cached);
        cached.pid = me->pid;
        cached.pidns = ns_inode("pid");
        cached.ipcns = ns_inode("ipc");
        have = read_boot_id(cached.boot_id) && cached.pidns && cached.ipcns;
        if (!have)
            return false;
    }
    me->pidns = cached.pidns;
    me->ipcns = cached.ipcns;
    memcpy(me->boot_id, cached.boot_id, sizeof me->boot_id);
    return true;
}

const char *px_btl_shm_dyn_part_check(const void *buf, size_t len,
                                      const px_btl_shm_dyn_part_t *mine, px_btl_shm_dyn_part_t *out,
                                      bool *unreach)
{
    *unreach = false;
    if (NULL == buf || len != sizeof *out)
        return "its btl/shm part is not the size of this version's";
    memcpy(out, buf, sizeof *out);
    if (out->magic != PX_BTL_SHM_DYN_MAGIC)
        return "its btl/shm part has a bad magic number";
    *unreach = true;
    if (out->version != PX_BTL_SHM_DYN_VERSION)
        return "its btl/shm part is of another version (another Plexus release, whose fast box "
               "format differs): btl/shm cannot reach it; another transport may";
    if (memcmp(out->boot_id, mine->boot_id, sizeof out->boot_id) != 0)
        return "on another host (its kernel boot id differs)";
    if (out->pidns != mine->pidns || out->ipcns != mine->ipcns)
        return "in another pid or IPC namespace (a container) on this host";
    if (out->uid != mine->uid)
        return "runs as another user: btl/shm shares memory with processes of the same user "
               "only";
    *unreach = false;
    if (out->pid <= 0 || out->fd < 0)
        return "its btl/shm part names no process or descriptor";
    if (out->ring < DYN_RING_MIN || out->ring > DYN_RING_MAX || (out->ring & (out->ring - 1)))
        return "its btl/shm ring size is not a power of two from 64 KiB to 16 MiB";
    if (out->size != PX_BTL_SHM_DYN_RING_OFF + out->ring)
        return "its btl/shm segment size does not match its ring";
    return NULL;
}

/* ------------------------------------------------------------ segments */

/* The ring a connection needs for this module's largest message. */
static size_t dyn_ring_size(void)
{
    size_t need = 4 * (px_btl_shm_module.super.btl_max_send_size + 256), r = DYN_RING_MIN;
    while (r < need && r < DYN_RING_MAX)
        r <<= 1;
    return r;
}

static size_t ring_max_msg(size_t ring)
{
    size_t m = ring / 4;
    return m > PX_BTL_SHM_FBOX_MAX_ENTRY - 192 ? PX_BTL_SHM_FBOX_MAX_ENTRY - 192 : m;
}

/* Make our connection segment for `ep` (ring bytes). */
static int own_segment(px_btl_endpoint_t *ep, size_t ring, char *reason)
{
    size_t size = PX_BTL_SHM_DYN_RING_OFF + ring;
    int fd = memfd_create("plexus-shm-dyn", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        REASON("memfd_create failed: %s", strerror(errno));
        return PX_ERR_OUT_OF_RESOURCE;
    }
    if (ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        REASON("cannot size and seal its connection segment: %s", strerror(errno));
        close(fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (MAP_FAILED == base) {
        REASON("cannot map its connection segment of %zu bytes: %s", size, strerror(errno));
        close(fd);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    px_btl_shm_dyn_hdr_t *h = (px_btl_shm_dyn_hdr_t *)base;
    if (getrandom(&ep->key, sizeof ep->key, 0) != (ssize_t)sizeof ep->key)
        ep->key = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)base ^ 0x9e3779b97f4a7c15ULL;
    h->magic = PX_BTL_SHM_DYN_MAGIC;
    h->version = PX_BTL_SHM_DYN_VERSION;
    h->owner_pid = (int32_t)getpid();
    h->key = ep->key;
    h->size = size;
    h->ring = ring;
    /* We take split offers from this peer (it reads our regions, we copy
     * part of each large read while we progress): said here so that a
     * peer of a version that writes no offers, or reads no such bit,
     * never meets one. */
    const px_btl_shm_state_t *s = &px_btl_shm_state;
    if (s->cma_split && s->dyn_split)
        atomic_store_explicit(&h->features, PX_BTL_SHM_DYN_FEAT_SPLIT, memory_order_relaxed);
    ep->memfd = fd;
    ep->own = base;
    ep->own_size = size;
    ep->fbs = ring;
    ep->fb_max = ring_max_msg(ring);
    ep->fb_stream_max = ep->fb_max; /* no fragment heap between us: the ring only */
    ep->fb_in = base + PX_BTL_SHM_DYN_RING_OFF;
    ep->fb_in_ack = (_Atomic uint64_t *)(base + PX_BTL_SHM_DYN_ACK_OFF);
    return PX_SUCCESS;
}

static void fill_part(const px_btl_endpoint_t *ep, void *part, size_t *len)
{
    px_btl_shm_dyn_part_t p;
    my_identity(&p);
    p.fd = ep->memfd;
    p.key = ep->key;
    p.size = ep->own_size;
    p.ring = ep->fbs;
    p.vaddr = (uint64_t)(uintptr_t)ep->own;
    memcpy(part, &p, sizeof p);
    *len = sizeof p;
}

/* Map the peer's segment its (checked) part names: the ring we write. */
static int peer_segment(px_btl_endpoint_t *ep, const px_btl_shm_dyn_part_t *p, char *reason)
{
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)p->pid, 0);
    if (pidfd < 0 && errno != ENOSYS) {
        REASON("process %d is not there (%s)", (int)p->pid, strerror(errno));
        return PX_ERR_UNREACH;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)p->pid, (int)p->fd);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        REASON("cannot open the peer's connection segment %s: %s (only the same user may)", path,
               strerror(errno));
        if (pidfd >= 0)
            close(pidfd);
        return PX_ERR_UNREACH;
    }
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    const char *bad = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        bad = "is not a memory file";
    else if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_SEAL)) != (F_SEAL_SHRINK | F_SEAL_SEAL))
        bad = "is not sealed against shrinking (it could vanish under the mapping)";
    else if ((uint64_t)st.st_size != p->size)
        bad = "has another size than its part says";
    char *base = NULL;
    if (!bad) {
        base = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (MAP_FAILED == base) {
            base = NULL;
            bad = "cannot be mapped";
        }
    }
    close(fd);
    if (base) {
        px_btl_shm_dyn_hdr_t h;
        memcpy(&h, base, sizeof h); /* one copy: the peer may change it */
        if (h.magic != PX_BTL_SHM_DYN_MAGIC || h.version != PX_BTL_SHM_DYN_VERSION ||
            h.key != p->key || h.size != p->size || h.ring != p->ring || h.owner_pid != p->pid) {
            bad = "does not carry the key and sizes its part names (another process's file?)";
            munmap(base, p->size);
            base = NULL;
        }
    }
    if (bad) {
        REASON("the peer's connection segment %s %s", path, bad);
        if (pidfd >= 0)
            close(pidfd);
        return PX_ERR_BAD_PARAM;
    }
    ep->pidfd = pidfd;
    ep->pid = (pid_t)p->pid;
    ep->seg = base;
    ep->seg_size = p->size;
    ep->fb_out = base + PX_BTL_SHM_DYN_RING_OFF;
    ep->fb_out_ack = (_Atomic uint64_t *)(base + PX_BTL_SHM_DYN_ACK_OFF);
    ep->fb_zeroed = ep->fbs; /* a new ring is all zero */
    return PX_SUCCESS;
}

/* ------------------------------------------------------------ endpoints */

static px_btl_endpoint_t *ep_new(void)
{
    px_btl_endpoint_t *ep = calloc(1, sizeof *ep);
    if (NULL == ep)
        return NULL;
    ep->rank = PX_BTL_RANK_DYNAMIC;
    ep->idx = -1;
    ep->lockfd = -1;
    ep->memfd = -1;
    ep->pidfd = -1;
    ep->dyn = true;
    ep->fb_out_pop = ep->fb_in_pop = UINT64_MAX; /* its rings fault in page by page */
    px_btl_shm_state_t *s = &px_btl_shm_state;
    ep->dyn_next = s->dyn_head;
    if (s->dyn_head)
        s->dyn_head->dyn_prev = ep;
    s->dyn_head = ep;
    if (0 == s->dyn_count++ && s->dyn_only)
        px_progress_register(px_btl_shm_dyn_progress, NULL);
    return ep;
}

static void ep_free(px_btl_endpoint_t *ep)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    if (ep->dyn) /* our gets split with it: their slots are in ep->own */
        px_btl_shm_split_drop(ep);
    if (ep->own) { /* the peer sees we left in order */
        atomic_store_explicit(&((px_btl_shm_dyn_hdr_t *)ep->own)->departed, 1,
                              memory_order_release);
        munmap(ep->own, ep->own_size);
    }
    if (ep->seg)
        munmap(ep->seg, ep->seg_size);
    if (ep->memfd >= 0)
        close(ep->memfd);
    if (ep->pidfd >= 0)
        close(ep->pidfd);
    if (ep->dyn_prev)
        ep->dyn_prev->dyn_next = ep->dyn_next;
    else
        s->dyn_head = ep->dyn_next;
    if (ep->dyn_next)
        ep->dyn_next->dyn_prev = ep->dyn_prev;
    if (0 == --s->dyn_count && s->dyn_only)
        px_progress_unregister(px_btl_shm_dyn_progress, NULL);
    free(ep);
}

static const char *unusable(void)
{
    if (px_btl_shm_module.super.btl_max_send_size + 8 > ring_max_msg(DYN_RING_MAX))
        return "btl_shm_max_send_size is larger than a dynamic peer's ring can carry";
    return NULL;
}

int px_btl_shm_dyn_offer(px_btl_module_t *btl, px_btl_endpoint_t **endpoint, void *part,
                         size_t *part_len, char *reason)
{
    (void)btl;
    px_btl_shm_dyn_part_t me;
    const char *no = unusable();
    if (no) {
        REASON("%s", no);
        return PX_ERR_NOT_SUPPORTED;
    }
    if (!my_identity(&me)) {
        REASON("cannot read this host's boot id or namespaces (/proc): cannot tell a peer on "
               "this host");
        return PX_ERR_NOT_SUPPORTED;
    }
    if (*part_len < sizeof me) {
        REASON("no room for its part");
        return PX_ERR_BAD_PARAM;
    }
    px_btl_endpoint_t *ep = ep_new();
    if (NULL == ep) {
        REASON("out of memory");
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = own_segment(ep, dyn_ring_size(), reason);
    if (rc != PX_SUCCESS) {
        ep_free(ep);
        return rc;
    }
    fill_part(ep, part, part_len);
    *endpoint = ep;
    return PX_SUCCESS;
}

int px_btl_shm_dyn_accept(px_btl_module_t *btl, const void *offer, size_t offer_len,
                          px_btl_endpoint_t **endpoint, void *reply, size_t *reply_len,
                          char *reason)
{
    (void)btl;
    px_btl_shm_dyn_part_t me, peer;
    bool unreach;
    const char *no = unusable();
    if (no) {
        REASON("%s", no);
        return PX_ERR_NOT_SUPPORTED;
    }
    if (!my_identity(&me)) {
        REASON("cannot read this host's boot id or namespaces (/proc)");
        return PX_ERR_NOT_SUPPORTED;
    }
    const char *bad = px_btl_shm_dyn_part_check(offer, offer_len, &me, &peer, &unreach);
    if (bad) {
        REASON("%s", bad);
        return unreach ? PX_ERR_UNREACH : PX_ERR_BAD_PARAM;
    }
    if (peer.pid == me.pid) {
        REASON("the calling process itself (served by btl/self)");
        return PX_ERR_UNREACH;
    }
    /* Both rings of a connection have the connector's size; it must carry
     * this side's largest message too. */
    if (ring_max_msg(peer.ring) < px_btl_shm_module.super.btl_max_send_size + 8) {
        REASON("the peer's ring of %llu bytes cannot carry this side's btl_shm_max_send_size "
               "%zu",
               (unsigned long long)peer.ring, px_btl_shm_module.super.btl_max_send_size);
        return PX_ERR_UNREACH;
    }
    if (*reply_len < sizeof me) {
        REASON("no room for its part");
        return PX_ERR_BAD_PARAM;
    }
    px_btl_endpoint_t *ep = ep_new();
    if (NULL == ep) {
        REASON("out of memory");
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = own_segment(ep, (size_t)peer.ring, reason);
    if (PX_SUCCESS == rc)
        rc = peer_segment(ep, &peer, reason);
    if (rc != PX_SUCCESS) {
        ep_free(ep);
        return rc;
    }
    fill_part(ep, reply, reply_len);
    *endpoint = ep;
    return PX_SUCCESS;
}

int px_btl_shm_dyn_complete(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *reply,
                            size_t reply_len, char *reason)
{
    (void)btl;
    px_btl_shm_dyn_part_t me, peer;
    bool unreach;
    if (NULL == ep || !ep->dyn || ep->seg) {
        REASON("not an offered btl/shm connection");
        return PX_ERR_BAD_PARAM;
    }
    if (!my_identity(&me)) {
        REASON("cannot read this host's boot id or namespaces (/proc)");
        return PX_ERR_NOT_SUPPORTED;
    }
    const char *bad = px_btl_shm_dyn_part_check(reply, reply_len, &me, &peer, &unreach);
    if (!bad && peer.ring != ep->fbs)
        bad = "its btl/shm reply has another ring size than the offer";
    if (bad) {
        REASON("%s", bad);
        return unreach ? PX_ERR_UNREACH : PX_ERR_BAD_PARAM;
    }
    return peer_segment(ep, &peer, reason);
}

int px_btl_shm_dyn_remove(px_btl_module_t *btl, px_btl_endpoint_t *ep)
{
    (void)btl;
    if (NULL == ep || !ep->dyn)
        return PX_ERR_BAD_PARAM;
    ep_free(ep);
    return PX_SUCCESS;
}

/* A peer whose process ended, or that removed the connection, can no
 * longer be sent to; one that ended without removing it is reported. */
void px_btl_shm_dyn_check_peers(void)
{
    px_btl_shm_state_t *s = &px_btl_shm_state;
    for (px_btl_endpoint_t *ep = s->dyn_head; ep; ep = ep->dyn_next) {
        if (ep->gone || NULL == ep->seg)
            continue;
        bool left = atomic_load_explicit(&((px_btl_shm_dyn_hdr_t *)ep->seg)->departed,
                                         memory_order_acquire) != 0;
        struct pollfd pf = {ep->pidfd, POLLIN, 0};
        bool dead = ep->exiting || (ep->pidfd >= 0 && poll(&pf, 1, 0) > 0);
        if (!left && !dead)
            continue;
        ep->gone = true;
        if (left) {
            PX_OUTPUT_VERBOSE(10, 0, "btl shm: dynamic peer pid %d removed the connection",
                              (int)ep->pid);
            continue;
        }
        char text[200];
        snprintf(text, sizeof text,
                 "btl/shm: dynamic peer pid %d is gone: its process ended without removing the "
                 "connection",
                 (int)ep->pid);
        if (px_btl_shm_module.error_cb)
            px_btl_shm_module.error_cb(&px_btl_shm_module.super, ep, PX_BTL_RANK_DYNAMIC,
                                       PX_ERR_PEER_FAILED, text);
        else
            px_show_error("%s", text);
    }
}

void px_btl_shm_dyn_cleanup(void)
{
    while (px_btl_shm_state.dyn_head)
        ep_free(px_btl_shm_state.dyn_head);
}
