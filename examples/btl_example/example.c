/*
 * example.c: a small but working out-of-tree BTL component, built only
 * against the installed Plexus headers and plexus.pc (see Makefile and
 * docs/writing-a-component.md). Copy it to start your own transport.
 *
 * It moves active messages between ranks on the same host over UNIX-domain
 * datagram sockets (AF_UNIX, SOCK_DGRAM):
 *
 *   init       one socket per process, bound to an abstract name (Linux:
 *              sun_path[0] = '\0', so no file is left behind) made of the job
 *              id and the rank; non-blocking; buffers sized for a fragment
 *   modex      the name is published through the boot framework's modex
 *   add_procs  a peer whose locality says "same host" is reached: its name
 *              comes from the modex; any other peer gets a reason
 *   send       one datagram = our 8-byte header (tag, sender's rank) + data;
 *              a send that would block (EAGAIN: the peer's queue is full) is
 *              queued on the peer's endpoint and retried from progress, in
 *              order
 *   progress   retries the queues, then recvmsg(MSG_DONTWAIT) and calls the
 *              active-message callback registered for the tag
 *   failure    sending to a dead peer's name fails with ECONNREFUSED: the
 *              peer is marked failed, its queued sends complete with
 *              PX_ERR_PEER_FAILED, the error callback is called for it (from
 *              progress) and every later send to it fails at once
 *
 * No put/get: the flags say SEND only, so the messaging layer pipelines large
 * messages as fragments of btl_max_send_size bytes.
 *
 * Build:  PKG_CONFIG_PATH=<prefix>/lib/pkgconfig make
 * Use:    PX_MCA_mca_component_path_prepend=$PWD PX_MCA_btl=self,example pxrun -n 2 ./app
 * Check:  px_btl_check --mca mca_component_path_prepend $PWD -n 2 example
 * (_prepend adds this folder before the installed plugins' one; setting
 * mca_component_path itself would hide them: boot/pmix, btl/ofi, btl/verbs.)
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <core/class/free_list.h>
#include <core/class/list.h>
#include <core/mca/var.h>
#include <core/util/error.h>
#include <core/util/output.h>
#include <frameworks/boot/boot.h>
#include <frameworks/btl/base/base.h>
#include <frameworks/btl/btl.h>

/* ---- State ----------------------------------------------------------- */

/* What travels in front of the data of every datagram. */
typedef struct {
    uint8_t tag; /* the active-message tag: selects the receiver's callback */
    uint8_t pad[3];
    int32_t src_rank; /* the sender, so the receiver can name it */
} px_btl_example_hdr_t;

/* Our per-peer state (btl.h leaves struct px_btl_endpoint to us). */
struct px_btl_endpoint {
    int rank;
    struct sockaddr_un addr; /* the peer's abstract socket name */
    socklen_t addrlen;
    px_list_t pending; /* fragments that met EAGAIN, oldest first */
    bool failed;       /* a send got ECONNREFUSED: the peer is gone */
    bool reported;     /* the error callback has been told */
};

/* A fragment: a class of this plugin, derived from the BTL descriptor (which
 * derives from px_free_list_item_t), kept in a free list of our own. */
typedef struct {
    px_btl_descriptor_t base;
    px_btl_segment_t segment; /* points into the free list's payload buffer */
    px_btl_endpoint_t *endpoint;
    px_btl_tag_t tag;
} px_btl_example_frag_t;
static void px_btl_example_frag_construct(px_btl_example_frag_t *frag)
{
    frag->base.des_segments = &frag->segment;
    frag->base.des_segment_count = 1;
    frag->endpoint = NULL;
}
PX_CLASS_INSTANCE(px_btl_example_frag_t, px_btl_descriptor_t, px_btl_example_frag_construct, NULL);

static struct {
    char *greeting;          /* btl_example_greeting: shows a string variable */
    size_t socket_buffer;    /* btl_example_socket_buffer: SO_SNDBUF/SO_RCVBUF */
    int fd;                  /* our socket, -1 when closed */
    char name[96];           /* our abstract name (without the leading '\0') */
    size_t frag_size;        /* payload bytes of a fragment: max(eager, max send) */
    px_free_list_t frags;    /* fragments, px_btl_example_frag_t */
    bool frags_made;         /* frags constructed (finalize destructs it) */
    void *recv_buf;          /* one datagram being received */
    px_btl_endpoint_t **eps; /* by rank, NULL for a peer we do not reach */
    int neps;
    px_btl_error_fn error_cb;
} px_btl_example = {.fd = -1};

static px_btl_module_t px_btl_example_module;
extern const px_btl_component_t px_btl_example_component;

/* ---- Variables ------------------------------------------------------- */

/* The component's own variables, as a table (docs/writing-a-component.md). */
static const px_mca_var_field_t px_btl_example_vars[] = {
    {.name = "greeting",
     .help = "A string this example component registers",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 9,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "hello from an out-of-tree component",
     .storage = &px_btl_example.greeting},
    {.name = "socket_buffer",
     .help = "SO_SNDBUF and SO_RCVBUF of the socket (the kernel caps them at "
             "net.core.wmem_max/rmem_max); a datagram must fit in the send buffer",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .dflt = "1M",
     .min = "128k",
     .max = "64M",
     .storage = &px_btl_example.socket_buffer},
    {.name = NULL},
};

static int px_btl_example_register(void)
{
    int rc = px_mca_var_register_table("btl", "example", px_btl_example_vars, -1, NULL);
    /* The module figures become btl_example_<field> variables, registered by
     * the base from the module template. A datagram carries a whole fragment,
     * so both sizes stay well below the datagram limit (about the send
     * buffer): 64 KiB at most. */
    const px_btl_component_t *c = &px_btl_example_component;
    px_btl_example_module.btl_eager_limit = 32 * 1024;
    px_btl_example_module.btl_max_send_size = 64 * 1024;
    px_btl_example_module.btl_exclusivity = PX_BTL_EXCLUSIVITY_LOW;
    px_btl_example_module.btl_latency = 10000; /* ns: slower than shm */
    px_btl_example_module.btl_bandwidth = 1000;
    /* No put/get: the base registers no put/get limits or alignments for
     * this module, so they stay 0. */
    px_btl_example_module.btl_flags = PX_BTL_FLAGS_SEND;
    int rc2 = px_btl_base_module_param_range(c, "eager_limit", "64", "64k");
    if (rc2 == PX_SUCCESS)
        rc2 = px_btl_base_module_param_range(c, "max_send_size", "1k", "64k");
    if (rc2 == PX_SUCCESS)
        rc2 = px_btl_base_register_module_params(c, &px_btl_example_module);
    return rc < 0 ? rc : rc2;
}

/* ---- Fragments ------------------------------------------------------- */

static px_btl_example_frag_t *px_btl_example_frag_get(px_btl_endpoint_t *ep, uint32_t flags)
{
    px_btl_example_frag_t *f = (px_btl_example_frag_t *)px_free_list_get(&px_btl_example.frags);
    if (NULL == f)
        return NULL;
    f->segment.seg_addr = f->base.super.payload;
    f->segment.seg_len = 0;
    f->endpoint = ep;
    f->base.des_flags = flags;
    f->base.des_cbfunc = NULL;
    return f;
}

static int px_btl_example_free(px_btl_module_t *btl, px_btl_descriptor_t *des)
{
    (void)btl;
    px_free_list_return(&px_btl_example.frags, &des->super);
    return PX_SUCCESS;
}

static px_btl_descriptor_t *px_btl_example_alloc(px_btl_module_t *btl, px_btl_endpoint_t *ep,
                                                 uint8_t order, size_t size, uint32_t flags)
{
    (void)btl;
    (void)order;
    if (size > px_btl_example.frag_size)
        return NULL;
    px_btl_example_frag_t *f = px_btl_example_frag_get(ep, flags);
    if (NULL == f)
        return NULL;
    f->segment.seg_len = size;
    return &f->base;
}

/* We cannot send from user memory in place (no SEND_INPLACE flag): the
 * reserve and as much data as fits are copied into one fragment. */
static px_btl_descriptor_t *px_btl_example_prepare_src(px_btl_module_t *btl, px_btl_endpoint_t *ep,
                                                       px_btl_convertor_t *conv, uint8_t order,
                                                       size_t reserve, size_t *size, uint32_t flags)
{
    (void)btl;
    (void)order;
    if (reserve > px_btl_example.frag_size)
        return NULL;
    px_btl_example_frag_t *f = px_btl_example_frag_get(ep, flags);
    if (NULL == f)
        return NULL;
    px_btl_convertor_pack_segment(conv, &f->segment, reserve, px_btl_example.frag_size, size);
    return &f->base;
}

/* ---- Sending --------------------------------------------------------- */

/* One sendmsg of our header and the given pieces; returns 0, or the errno. */
static int px_btl_example_sendmsg(px_btl_endpoint_t *ep, px_btl_tag_t tag, const void *a,
                                  size_t alen, const void *b, size_t blen)
{
    px_btl_example_hdr_t hdr = {.tag = tag, .src_rank = px_boot->rank};
    struct iovec iov[3] = {{&hdr, sizeof hdr}, {(void *)a, alen}, {(void *)b, blen}};
    struct msghdr msg = {
        .msg_name = &ep->addr, .msg_namelen = ep->addrlen, .msg_iov = iov, .msg_iovlen = 3};
    if (sendmsg(px_btl_example.fd, &msg, MSG_DONTWAIT) >= 0)
        return 0;
    return errno;
}

/* A fragment is done: its completion callback (when it must run), then it
 * goes back to the free list if the BTL owns it. */
static void px_btl_example_complete(px_btl_example_frag_t *f, int status, bool callback)
{
    px_btl_descriptor_t *des = &f->base;
    uint32_t flags = des->des_flags; /* read first: the callback may free it */
    if (callback && des->des_cbfunc)
        des->des_cbfunc(&px_btl_example_module, f->endpoint, des, status);
    if (flags & PX_BTL_DES_FLAGS_BTL_OWNERSHIP)
        px_btl_example_free(&px_btl_example_module, des);
}

/* The peer is gone: complete its queued fragments with an error; the error
 * callback is called from progress (not from inside the caller's send). */
static void px_btl_example_peer_failed(px_btl_endpoint_t *ep)
{
    ep->failed = true;
    px_list_item_t *it;
    while (NULL != (it = px_list_remove_first(&ep->pending)))
        px_btl_example_complete((px_btl_example_frag_t *)it, PX_ERR_PEER_FAILED, true);
}

static int px_btl_example_errno_to_px(int err)
{
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS)
        return PX_ERR_TEMP_OUT_OF_RESOURCE;
    if (err == ECONNREFUSED || err == ENOENT)
        return PX_ERR_PEER_FAILED; /* nobody is bound to the name any more */
    return PX_ERR_COMM;
}

static int px_btl_example_send(px_btl_module_t *btl, px_btl_endpoint_t *ep,
                               px_btl_descriptor_t *des, px_btl_tag_t tag)
{
    (void)btl;
    px_btl_example_frag_t *f = (px_btl_example_frag_t *)des;
    if (ep->failed)
        return PX_ERR_PEER_FAILED; /* the caller keeps the descriptor */
    f->endpoint = ep;
    f->tag = tag;
    /* Keep the order: behind queued fragments, this one waits its turn. */
    if (!px_list_is_empty(&ep->pending)) {
        px_list_append(&ep->pending, &des->super.super);
        return 0; /* started: the callback runs from progress */
    }
    int err = px_btl_example_sendmsg(ep, tag, f->segment.seg_addr, f->segment.seg_len, NULL, 0);
    int rc = err ? px_btl_example_errno_to_px(err) : PX_SUCCESS;
    if (rc == PX_SUCCESS) {
        /* Completed in place: the callback only with ALWAYS_CALLBACK. */
        px_btl_example_complete(f, PX_SUCCESS, des->des_flags & PX_BTL_DES_SEND_ALWAYS_CALLBACK);
        return 1;
    }
    if (rc == PX_ERR_TEMP_OUT_OF_RESOURCE) {
        px_list_append(&ep->pending, &des->super.super);
        return 0;
    }
    px_btl_example_peer_failed(ep);
    return rc;
}

/* Send without a descriptor: one sendmsg, or "not now". */
static int px_btl_example_sendi(px_btl_module_t *btl, px_btl_endpoint_t *ep, const void *header,
                                size_t header_size, const void *payload, size_t payload_size,
                                uint8_t order, uint32_t flags, px_btl_tag_t tag,
                                px_btl_descriptor_t **descriptor)
{
    (void)btl;
    (void)order;
    (void)flags;
    if (descriptor)
        *descriptor = NULL;
    if (ep->failed)
        return PX_ERR_PEER_FAILED;
    if (!px_list_is_empty(&ep->pending) || header_size + payload_size > px_btl_example.frag_size)
        return PX_ERR_TEMP_OUT_OF_RESOURCE; /* the caller takes the descriptor path */
    int err = px_btl_example_sendmsg(ep, tag, header, header_size, payload, payload_size);
    int rc = err ? px_btl_example_errno_to_px(err) : PX_SUCCESS;
    if (rc != PX_SUCCESS && rc != PX_ERR_TEMP_OUT_OF_RESOURCE)
        px_btl_example_peer_failed(ep);
    return rc;
}

/* ---- Progress -------------------------------------------------------- */

/* Retry one peer's queue in order; stops at the first EAGAIN. */
static int px_btl_example_retry(px_btl_endpoint_t *ep)
{
    int done = 0;
    while (!ep->failed && !px_list_is_empty(&ep->pending)) {
        px_btl_example_frag_t *f = (px_btl_example_frag_t *)px_list_get_first(&ep->pending);
        int err =
            px_btl_example_sendmsg(ep, f->tag, f->segment.seg_addr, f->segment.seg_len, NULL, 0);
        int rc = err ? px_btl_example_errno_to_px(err) : PX_SUCCESS;
        if (rc == PX_ERR_TEMP_OUT_OF_RESOURCE)
            break;
        px_list_remove_first(&ep->pending);
        /* btl_send returned 0 for it: the callback runs whatever the flags. */
        px_btl_example_complete(f, rc, true);
        if (rc != PX_SUCCESS)
            px_btl_example_peer_failed(ep);
        done++;
    }
    return done;
}

static int px_btl_example_progress(px_btl_module_t *btl)
{
    int events = 0;
    for (int r = 0; r < px_btl_example.neps; r++) {
        px_btl_endpoint_t *ep = px_btl_example.eps[r];
        if (NULL == ep)
            continue;
        if (!px_list_is_empty(&ep->pending))
            events += px_btl_example_retry(ep);
        if (ep->failed && !ep->reported) {
            ep->reported = true;
            events++;
            if (px_btl_example.error_cb)
                px_btl_example.error_cb(btl, ep, ep->rank, PX_ERR_PEER_FAILED,
                                        "btl/example: the peer's socket is gone "
                                        "(sendmsg: connection refused)");
        }
    }
    /* Receive what is there, a bounded number so other work gets its turn. */
    size_t cap = sizeof(px_btl_example_hdr_t) + px_btl_example.frag_size;
    for (int i = 0; i < 64; i++) {
        ssize_t n = recv(px_btl_example.fd, px_btl_example.recv_buf, cap, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0)
            break; /* EAGAIN: nothing more now */
        if ((size_t)n < sizeof(px_btl_example_hdr_t) || (size_t)n > cap) {
            px_show_warning("btl example: dropped a datagram of %zd bytes (expected %zu to %zu)", n,
                            sizeof(px_btl_example_hdr_t), cap);
            continue;
        }
        px_btl_example_hdr_t hdr;
        memcpy(&hdr, px_btl_example.recv_buf, sizeof hdr);
        px_btl_segment_t seg = {(char *)px_btl_example.recv_buf + sizeof hdr,
                                (size_t)n - sizeof hdr};
        px_btl_active_message_callback_t *am = &px_btl_base_active_message_trigger[hdr.tag];
        px_btl_receive_descriptor_t desc = {
            .endpoint = (hdr.src_rank >= 0 && hdr.src_rank < px_btl_example.neps)
                            ? px_btl_example.eps[hdr.src_rank]
                            : NULL,
            .src_rank = hdr.src_rank,
            .des_segments = &seg,
            .des_segment_count = 1,
            .tag = hdr.tag,
            .cbdata = am->cbdata};
        events++;
        if (am->cbfunc)
            am->cbfunc(btl, &desc); /* seg is valid only during this call */
        else
            px_show_warning("btl example: no callback for tag %u (from rank %d), dropped",
                            (unsigned)hdr.tag, (int)hdr.src_rank);
    }
    return events;
}

/* Wait until every fragment sent to `ep` (NULL: to anyone) is handed back.
 * Only queued fragments are outstanding; a dead peer's are failed, so this
 * ends as soon as the queue is empty or the peer is known gone. */
static int px_btl_example_flush(px_btl_module_t *btl, px_btl_endpoint_t *ep)
{
    for (int r = 0; r < px_btl_example.neps; r++) {
        px_btl_endpoint_t *e = px_btl_example.eps[r];
        if (NULL == e || (ep && e != ep))
            continue;
        while (!px_list_is_empty(&e->pending)) {
            px_btl_example_progress(btl);
            if (!px_list_is_empty(&e->pending))
                sched_yield();
        }
    }
    return PX_SUCCESS;
}

static int px_btl_example_register_error(px_btl_module_t *btl, px_btl_error_fn cbfunc)
{
    (void)btl;
    px_btl_example.error_cb = cbfunc;
    return PX_SUCCESS;
}

/* ---- Peers ----------------------------------------------------------- */

/* Our abstract name for a rank: unique per job and rank. */
static int px_btl_example_name(int rank, char *buf, size_t len)
{
    int n = snprintf(buf, len, "plexus-example-%s-%d", px_boot->jobid, rank);
    return (n < 0 || (size_t)n >= len) ? PX_ERR_BAD_PARAM : PX_SUCCESS;
}

static int px_btl_example_modex_send(void)
{
    return px_boot_modex_send(&px_btl_example_component.base, px_btl_example.name,
                              strlen(px_btl_example.name) + 1);
}

static int px_btl_example_add_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                                    px_btl_endpoint_t **endpoints, px_bitmap_t *reachable,
                                    const char **reasons)
{
    (void)btl;
    if (NULL == px_btl_example.eps) {
        px_btl_example.neps = px_boot->size;
        px_btl_example.eps = calloc((size_t)px_boot->size, sizeof(*px_btl_example.eps));
        if (NULL == px_btl_example.eps)
            return PX_ERR_OUT_OF_RESOURCE;
    }
    for (size_t i = 0; i < nprocs; i++) {
        px_proc_t *p = procs[i];
        endpoints[i] = NULL;
        if (!(p->locality & (PX_PROC_LOCAL_SELF | PX_PROC_LOCAL_HOST))) {
            reasons[i] = "btl/example uses UNIX-domain sockets: it reaches only this host";
            continue;
        }
        if (p->rank < 0 || p->rank >= px_btl_example.neps) {
            reasons[i] = "btl/example: the rank is outside the job";
            continue;
        }
        char *name = NULL;
        size_t len = 0;
        if (px_boot_modex_recv(&px_btl_example_component.base, p->rank, (void **)&name, &len) !=
                PX_SUCCESS ||
            len < 2 || len > sizeof(((struct sockaddr_un *)0)->sun_path) - 1 ||
            name[len - 1] != '\0') {
            free(name);
            reasons[i] = "btl/example: the peer published no socket name (its modex entry is "
                         "missing or malformed)";
            continue;
        }
        px_btl_endpoint_t *ep = px_btl_example.eps[p->rank];
        if (NULL == ep) {
            ep = calloc(1, sizeof *ep);
            if (NULL == ep) {
                free(name);
                return PX_ERR_OUT_OF_RESOURCE;
            }
            PX_OBJ_CONSTRUCT(&ep->pending, px_list_t);
            ep->rank = p->rank;
            ep->addr.sun_family = AF_UNIX;
            memcpy(ep->addr.sun_path + 1, name, len - 1); /* sun_path[0] = '\0': abstract */
            ep->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
            px_btl_example.eps[p->rank] = ep;
        }
        free(name);
        endpoints[i] = ep;
        px_bitmap_set_bit(reachable, (int)i);
    }
    return PX_SUCCESS;
}

static void px_btl_example_endpoint_free(px_btl_endpoint_t *ep)
{
    /* Fragments still queued cannot go anywhere now: they fail. */
    px_btl_example_peer_failed(ep);
    PX_OBJ_DESTRUCT(&ep->pending);
    px_btl_example.eps[ep->rank] = NULL;
    free(ep);
}

static int px_btl_example_del_procs(px_btl_module_t *btl, size_t nprocs, px_proc_t **procs,
                                    px_btl_endpoint_t **endpoints)
{
    (void)btl;
    (void)procs;
    for (size_t i = 0; i < nprocs; i++)
        if (endpoints[i] && px_btl_example.eps &&
            endpoints[i] == px_btl_example.eps[endpoints[i]->rank])
            px_btl_example_endpoint_free(endpoints[i]);
    return PX_SUCCESS;
}

/* ---- Init and finalize ---------------------------------------------- */

static int px_btl_example_finalize(px_btl_module_t *btl)
{
    (void)btl;
    /* Every object the plugin made is gone before its code is unloaded. */
    for (int r = 0; px_btl_example.eps && r < px_btl_example.neps; r++)
        if (px_btl_example.eps[r])
            px_btl_example_endpoint_free(px_btl_example.eps[r]);
    free(px_btl_example.eps);
    px_btl_example.eps = NULL;
    px_btl_example.neps = 0;
    if (px_btl_example.fd >= 0)
        close(px_btl_example.fd); /* the abstract name disappears with it */
    px_btl_example.fd = -1;
    free(px_btl_example.recv_buf);
    px_btl_example.recv_buf = NULL;
    if (px_btl_example.frags_made)
        PX_OBJ_DESTRUCT(&px_btl_example.frags);
    px_btl_example.frags_made = false;
    px_btl_example.error_cb = NULL;
    return PX_SUCCESS;
}

/* Decline: say why (btl_base_verbose shows the components that declined),
 * give back what was made. */
static px_btl_module_t **px_btl_example_decline(const char *why, int err)
{
    px_show_warning("btl example: declining: %s%s%s", why, err ? ": " : "",
                    err ? strerror(err) : "");
    px_btl_example_finalize(NULL);
    return NULL;
}

static px_btl_module_t **px_btl_example_init(int *num_modules, bool progress_threads)
{
    (void)progress_threads;
    *num_modules = 0;
    px_btl_module_t *m = &px_btl_example_module;
    if (NULL == px_boot || NULL == px_boot->jobid)
        return NULL; /* no job (px_info): nothing to reach */

    /* The socket: non-blocking, bound to an abstract name. */
    px_btl_example.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (px_btl_example.fd < 0)
        return px_btl_example_decline("socket(AF_UNIX, SOCK_DGRAM)", errno);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (px_btl_example_name(px_boot->rank, px_btl_example.name, sizeof px_btl_example.name) ||
        strlen(px_btl_example.name) >= sizeof addr.sun_path - 1)
        return px_btl_example_decline("the job id makes the socket name too long", 0);
    memcpy(addr.sun_path + 1, px_btl_example.name, strlen(px_btl_example.name));
    socklen_t len =
        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(px_btl_example.name));
    if (bind(px_btl_example.fd, (struct sockaddr *)&addr, len) != 0)
        return px_btl_example_decline("bind to the abstract socket name", errno);

    /* A datagram must fit in the send buffer: ask, then check what we got. */
    if (m->btl_eager_limit > m->btl_max_send_size)
        m->btl_eager_limit = m->btl_max_send_size;
    px_btl_example.frag_size = m->btl_max_send_size;
    int want = (int)px_btl_example.socket_buffer, got = 0;
    socklen_t optlen = sizeof got;
    setsockopt(px_btl_example.fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
    setsockopt(px_btl_example.fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
    getsockopt(px_btl_example.fd, SOL_SOCKET, SO_SNDBUF, &got, &optlen);
    if ((size_t)got < 2 * (px_btl_example.frag_size + sizeof(px_btl_example_hdr_t)))
        return px_btl_example_decline("SO_SNDBUF too small for btl_example_max_send_size (raise "
                                      "btl_example_socket_buffer or lower the size)",
                                      0);

    /* The fragments: a free list of our own class, payload = a fragment. */
    PX_OBJ_CONSTRUCT(&px_btl_example.frags, px_free_list_t);
    px_btl_example.frags_made = true;
    px_free_list_params_t params = {.item_class = PX_CLASS(px_btl_example_frag_t),
                                    .payload_size = px_btl_example.frag_size,
                                    .num_initial = 8,
                                    .num_per_grow = 8};
    px_btl_module_t **modules = NULL;
    px_btl_example.recv_buf = malloc(sizeof(px_btl_example_hdr_t) + px_btl_example.frag_size);
    if (NULL == px_btl_example.recv_buf ||
        px_free_list_init(&px_btl_example.frags, &params) != PX_SUCCESS ||
        NULL == (modules = malloc(sizeof(*modules))))
        return px_btl_example_decline("out of memory", ENOMEM);

    m->btl_size = PX_BTL_MODULE_SIZE; /* the BTL API this module was built for */
    m->btl_component = &px_btl_example_component;
    m->btl_add_procs = px_btl_example_add_procs;
    m->btl_del_procs = px_btl_example_del_procs;
    m->btl_finalize = px_btl_example_finalize;
    m->btl_alloc = px_btl_example_alloc;
    m->btl_free = px_btl_example_free;
    m->btl_prepare_src = px_btl_example_prepare_src;
    m->btl_send = px_btl_example_send;
    m->btl_sendi = px_btl_example_sendi;
    m->btl_flush = px_btl_example_flush;
    m->btl_progress = px_btl_example_progress;
    m->btl_register_error = px_btl_example_register_error;
    modules[0] = m;
    *num_modules = 1;
    return modules;
}

/* The one symbol the repository looks for: px_<framework>_<component>_component. */
const px_btl_component_t px_btl_example_component = {
    .base = PX_BTL_COMPONENT_HEADER("example", 1, 2, 3, px_btl_example_register, NULL, NULL),
    .btl_init = px_btl_example_init,
    .btl_modex_send = px_btl_example_modex_send,
    /* BTL API 3.4: one socket and a free list without locks, so not
     * thread-safe; at PX_THREAD_MULTIPLE the base calls the module from one
     * thread at a time (docs/threads.md, "Rules for component authors"). */
    .btl_thread_support = PX_BTL_THREADS_SERIALIZED,
};
