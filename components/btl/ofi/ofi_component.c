/*
 * ofi_component.c: btl/ofi component: variables, provider discovery and
 * choice, init (one module on the chosen provider), modex (fi_getname blob).
 *
 * Discovery (fi_getinfo, about 0.1 s of CPU with every provider libfabric
 * loads) runs in btl_init, or when px_info reads the informational
 * variables (a probe), never in register_params; a job whose ranks are all
 * on this host skips it when shm may serve them. It asks for RDM endpoints
 * with FI_MSG|FI_RMA, then takes
 *  - btl_ofi_provider_include (a list: the first one found wins) or
 *    btl_ofi_provider_exclude (removes names); setting both is an error;
 *  - otherwise btl_ofi_provider_order: hardware first, then net (libfabric
 *    1.16-1.17's RDM endpoints straight over TCP, without rxm's signalling
 *    write and read per message received), tcp;ofi_rxm, sockets and, last,
 *    shm (which reaches only same-host peers);
 *  - within the provider, btl_ofi_domain picks an interface/device by name;
 *    by default a non-loopback domain is preferred.
 * A name matches a provider when equal to it ("tcp;ofi_rxm") or to its core
 * ("tcp" matches "tcp;ofi_rxm").
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "components/btl/ofi/ofi.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/argv.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/proc.h"
#include "frameworks/boot/boot.h"
#include "frameworks/btl/base/base.h"

char *px_btl_ofi_provider_include = NULL;
char *px_btl_ofi_provider_exclude = NULL;
char *px_btl_ofi_provider_order =
    (char *)"cxi,efa,psm3,opx,verbs;ofi_rxm,psm2,net,tcp;ofi_rxm,tcp,sockets,shm";
char *px_btl_ofi_domain = NULL;
int px_btl_ofi_num_recvs = 32;
px_btl_base_net_vars_t px_btl_ofi_net = PX_BTL_BASE_NET_VARS_DEFAULTS;
int px_btl_ofi_connect_timeout = 30;
int px_btl_ofi_connect_probe = 1;
size_t px_btl_ofi_rxm_eager_limit = 66 * 1024;
int px_btl_ofi_rxm_cm_progress_interval = 1000;
size_t px_btl_ofi_rxm_buffer_size = 4096;
int px_btl_ofi_rdma_lanes = 1;
size_t px_btl_ofi_rdma_lane_min = 32 * 1024;
int px_btl_ofi_verbose = 0;
bool px_btl_ofi_skip_single_host = true;
static bool px_btl_ofi_discovered; /* px_btl_ofi_all_infos is up to date */
int px_btl_ofi_output = -1;
/* Storage of the informational variables (the variable system owns it). */
static char *px_btl_ofi_providers_available = NULL;
static char *px_btl_ofi_provider_selected = NULL;
/* What the last discovery found. */
static char px_btl_ofi_avail_text[1024], px_btl_ofi_selected_text[2200];

static struct fi_info *px_btl_ofi_all_infos; /* from fi_getinfo */
static struct fi_info *px_btl_ofi_chosen;    /* points into the list above */
static char px_btl_ofi_decline[2048];        /* why init declines, when it does */
static bool px_btl_ofi_decline_is_error;     /* a user's setting cannot be honoured */

/* The module template: figures the base registers as btl_ofi_<field>. */
px_btl_ofi_module_t px_btl_ofi_module_template = {
    .super =
        {
            .btl_size = PX_BTL_MODULE_SIZE,
            .btl_component = &px_btl_ofi_component,
            .btl_exclusivity = PX_BTL_EXCLUSIVITY_DEFAULT,
            .btl_latency = 10000,
            .btl_bandwidth = 5000,
            /* 64 KiB of data (and the runtime's 16-byte header) eager, as
             * Open MPI's btl/tcp: over tcp;ofi_rxm one rxm message placed
             * straight into a posted receive (btl_ofi_rxm_eager_limit). */
            .btl_eager_limit = 64 * 1024 + 64,
            .btl_max_send_size = 64 * 1024 + 64,
            .btl_put_limit = (size_t)1 << 30,
            .btl_get_limit = 512 * 1024,
            /* DYN_EXT: the dynamic-peer part's extension carries the RDMA
             * lanes (ofi_dyn.c) */
            .btl_flags = PX_BTL_FLAGS_SEND | PX_BTL_FLAGS_PUT | PX_BTL_FLAGS_GET |
                         PX_BTL_FLAGS_NEEDS_REG | PX_BTL_FLAGS_DYN_EXT,
            .btl_registration_handle_size = PX_BTL_OFI_HANDLE_WIRE_SIZE,
        },
};

px_btl_ofi_lib_t px_btl_ofi_lib;

/* Is there an RDMA device here (so rxm may run over verbs)? */
static bool px_btl_ofi_have_rdma_device(void)
{
    DIR *d = opendir("/sys/class/infiniband");
    if (NULL == d)
        return false;
    bool any = false;
    for (struct dirent *e; !any && (e = readdir(d));)
        any = '.' != e->d_name[0];
    closedir(d);
    return any;
}

/* Before libfabric loads (its providers read their variables then): rxm
 * sends a message above its eager limit (16 KiB by default) by segments
 * copied through bounce buffers (SAR), which made 16-64 KiB messages 2-3
 * times slower than one eager message. Over tcp, rxm may take a larger
 * eager limit than its buffer size (the tcp provider places the message
 * straight into the posted receive); over verbs it may not, so nothing is
 * set when this host has an RDMA device, or when the user set it. */
static void px_btl_ofi_set_rxm_eager_limit(void)
{
    if (0 == px_btl_ofi_rxm_eager_limit || getenv("FI_OFI_RXM_EAGER_LIMIT") ||
        px_btl_ofi_have_rdma_device())
        return;
    size_t v = px_btl_ofi_rxm_eager_limit < 16384 ? 16384 : px_btl_ofi_rxm_eager_limit;
    char text[32];
    snprintf(text, sizeof(text), "%zu", v);
    setenv("FI_OFI_RXM_EAGER_LIMIT", text, 0);
}

/* Before libfabric loads: rxm handles its connection events (a peer's
 * connection request, the answer to ours) only every
 * FI_OFI_RXM_CM_PROGRESS_INTERVAL microseconds of fi_cq_read calls, 10000
 * by default. The first transfer to a peer waits for one interval on each
 * side: measured across two namespace hosts (test/bench/compare-named-hosts.sh),
 * 16 ms between rxm's connection request and its answer, and 12 ms more
 * before the read left, in a cold open by name to first
 * byte of 35-42 ms (20-22 ms at 1000 us). Unless the user set it. */
static void px_btl_ofi_set_rxm_cm_progress_interval(void)
{
    if (0 == px_btl_ofi_rxm_cm_progress_interval || getenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL"))
        return;
    char text[32];
    snprintf(text, sizeof(text), "%d", px_btl_ofi_rxm_cm_progress_interval);
    setenv("FI_OFI_RXM_CM_PROGRESS_INTERVAL", text, 0);
}

/* Before libfabric loads: rxm's bounce buffers (its receive buffers for
 * each new connection, 256 of them, and its transmit and receive pools) are
 * FI_OFI_RXM_BUFFER_SIZE bytes each, or as large as its eager limit
 * (btl_ofi_rxm_eager_limit, 66 KiB) when that is not set: rxm allocated and
 * faulted in 17 MB at the first transfer to every new peer (`strace` of an
 * open by name: 15-20 ms of the first byte on loopback) and 68 MB when the
 * endpoint opened. Over tcp, messages that match a posted receive are placed
 * straight into it (rxm's dynamic receive buffers), so the bounce buffers
 * need not hold a whole eager message. Not set with an RDMA device (rxm over
 * verbs needs them as large as its eager limit), nor when the user set it. */
static void px_btl_ofi_set_rxm_buffer_size(void)
{
    if (0 == px_btl_ofi_rxm_buffer_size || getenv("FI_OFI_RXM_BUFFER_SIZE") ||
        px_btl_ofi_have_rdma_device())
        return;
    char text[32];
    snprintf(text, sizeof(text), "%zu", px_btl_ofi_rxm_buffer_size);
    setenv("FI_OFI_RXM_BUFFER_SIZE", text, 0);
}

bool px_btl_ofi_lib_load(const char **why)
{
    static int state; /* 0: not tried, 1: loaded, -1: failed */
    static char reason[300];
    if (0 == state) {
        state = -1;
        px_btl_ofi_set_rxm_eager_limit();
        px_btl_ofi_set_rxm_cm_progress_interval();
        px_btl_ofi_set_rxm_buffer_size();
        void *h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
        if (NULL == h) {
            snprintf(reason, sizeof(reason), "cannot load libfabric: %s", dlerror());
        } else {
            /* never closed: providers may keep threads and handlers */
            *(void **)&px_btl_ofi_lib.getinfo = dlsym(h, "fi_getinfo");
            *(void **)&px_btl_ofi_lib.freeinfo = dlsym(h, "fi_freeinfo");
            *(void **)&px_btl_ofi_lib.dupinfo = dlsym(h, "fi_dupinfo");
            *(void **)&px_btl_ofi_lib.fabric = dlsym(h, "fi_fabric");
            *(void **)&px_btl_ofi_lib.strerror = dlsym(h, "fi_strerror");
            if (px_btl_ofi_lib.getinfo && px_btl_ofi_lib.freeinfo && px_btl_ofi_lib.dupinfo &&
                px_btl_ofi_lib.fabric && px_btl_ofi_lib.strerror)
                state = 1;
            else
                snprintf(reason, sizeof(reason),
                         "libfabric.so.1 lacks fi_getinfo/fi_freeinfo/fi_dupinfo/fi_fabric/"
                         "fi_strerror");
        }
    }
    if (why)
        *why = reason;
    return 1 == state;
}

const char *px_btl_ofi_strerror(int fi_rc)
{
    static __thread char buf[160];
    int e = fi_rc < 0 ? -fi_rc : fi_rc;
    snprintf(buf, sizeof(buf), "%s (%d)", px_btl_ofi_lib.strerror ? fi_strerror(e) : strerror(e),
             fi_rc);
    return buf;
}

/* Does list entry `name` (length n) match provider `prov`? 2: it names it,
 * 1: it names its core ("net" and "net;ofi_rxm"), 0: no. */
static int px_btl_ofi_name_matches(const char *name, size_t n, const char *prov)
{
    if (strlen(prov) == n && 0 == strncmp(name, prov, n))
        return 2;
    const char *semi = strchr(prov, ';');
    if (semi && (size_t)(semi - prov) == n && 0 == strncmp(name, prov, n) &&
        NULL == memchr(name, ';', n))
        return 1;
    return 0;
}

/* Rank of prov in a comma-separated list, or -1: twice the index of the
 * first entry matching it, plus one when that entry names only its core,
 * so that "net" prefers the provider net to net;ofi_rxm. */
static int px_btl_ofi_list_index(const char *list, const char *prov)
{
    char **names = list ? px_argv_split(list, ',') : NULL;
    int found = -1;
    for (int i = 0; names && names[i] && found < 0; ++i) {
        const char *p = names[i];
        size_t n = strlen(p);
        while (n && ' ' == *p) { /* "tcp, sockets" */
            ++p;
            --n;
        }
        while (n && ' ' == p[n - 1])
            --n;
        int how = n ? px_btl_ofi_name_matches(p, n, prov) : 0;
        if (how)
            found = 2 * i + (2 == how ? 0 : 1);
    }
    px_argv_free(names);
    return found;
}

static bool px_btl_ofi_is_set(const char *s)
{
    return s && s[0];
}

static struct fi_info *px_btl_ofi_hints(void)
{
    struct fi_info *hints = fi_dupinfo(NULL); /* fi_allocinfo */
    if (NULL == hints)
        return NULL;
    hints->caps = FI_MSG | FI_RMA;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    return hints;
}

/* Append `s` to a growing string (comma-separated) unless present. */
static void px_btl_ofi_append_unique(char *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = buf; *p;) {
        const char *end = strchr(p, ',');
        size_t m = end ? (size_t)(end - p) : strlen(p);
        if (m == n && 0 == strncmp(p, s, n))
            return;
        if (!end)
            break;
        p = end + 1;
    }
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", used ? "," : "", s);
}

static bool px_btl_ofi_is_loopback(const struct fi_info *i)
{
    const char *d = i->domain_attr ? i->domain_attr->name : NULL;
    return d && (0 == strcmp(d, "lo") || 0 == strncmp(d, "lo:", 3));
}

/* Choose a provider and domain from px_btl_ofi_all_infos. */
static void px_btl_ofi_choose(void)
{
    px_btl_ofi_chosen = NULL;
    const char *inc = px_btl_ofi_provider_include, *exc = px_btl_ofi_provider_exclude;
    if (px_btl_ofi_is_set(inc) && px_btl_ofi_is_set(exc)) {
        snprintf(px_btl_ofi_decline, sizeof(px_btl_ofi_decline),
                 "btl_ofi_provider_include (\"%s\") and btl_ofi_provider_exclude (\"%s\") are "
                 "both set; set only one of them",
                 inc, exc);
        px_btl_ofi_decline_is_error = true;
        return;
    }
    const char *order = px_btl_ofi_is_set(inc) ? inc : px_btl_ofi_provider_order;
    int best_rank = 1 << 30;
    bool best_lo = true;
    for (struct fi_info *i = px_btl_ofi_all_infos; i; i = i->next) {
        const char *prov = i->fabric_attr->prov_name;
        if (px_btl_ofi_is_set(exc) && px_btl_ofi_list_index(exc, prov) >= 0)
            continue;
        int r = px_btl_ofi_list_index(order, prov);
        if (r < 0) {
            if (px_btl_ofi_is_set(inc))
                continue;
            r = 1 << 20; /* not in the order list: after those in it */
        }
        if (px_btl_ofi_is_set(px_btl_ofi_domain) &&
            (NULL == i->domain_attr->name || 0 != strcmp(i->domain_attr->name, px_btl_ofi_domain)))
            continue;
        bool lo = px_btl_ofi_is_loopback(i);
        if (r < best_rank || (r == best_rank && best_lo && !lo)) {
            best_rank = r;
            best_lo = lo;
            px_btl_ofi_chosen = i;
        }
    }
    if (NULL == px_btl_ofi_chosen) {
        px_btl_ofi_decline_is_error =
            px_btl_ofi_is_set(inc) || px_btl_ofi_is_set(px_btl_ofi_domain);
        const char *avail = px_btl_ofi_avail_text[0] ? px_btl_ofi_avail_text : "none";
        if (px_btl_ofi_is_set(inc))
            snprintf(px_btl_ofi_decline, sizeof(px_btl_ofi_decline),
                     "btl_ofi_provider_include=\"%.300s\"%s%.200s names no provider found here; "
                     "available RDM providers: %.1023s",
                     inc, px_btl_ofi_is_set(px_btl_ofi_domain) ? " with btl_ofi_domain=" : "",
                     px_btl_ofi_is_set(px_btl_ofi_domain) ? px_btl_ofi_domain : "", avail);
        else
            snprintf(px_btl_ofi_decline, sizeof(px_btl_ofi_decline),
                     "no usable libfabric RDM provider%s%.300s%s%.200s (available: %.1023s)",
                     px_btl_ofi_is_set(exc) ? " after btl_ofi_provider_exclude=" : "",
                     px_btl_ofi_is_set(exc) ? exc : "",
                     px_btl_ofi_is_set(px_btl_ofi_domain) ? " with btl_ofi_domain=" : "",
                     px_btl_ofi_is_set(px_btl_ofi_domain) ? px_btl_ofi_domain : "", avail);
    }
}

static void px_btl_ofi_discover(void)
{
    char *avail = px_btl_ofi_avail_text, *selected = px_btl_ofi_selected_text;
    avail[0] = selected[0] = '\0';
    px_btl_ofi_decline[0] = '\0';
    px_btl_ofi_decline_is_error = false;
    const char *why = NULL;
    if (!px_btl_ofi_lib_load(&why)) {
        snprintf(px_btl_ofi_decline, sizeof(px_btl_ofi_decline), "%s", why);
        snprintf(selected, sizeof(px_btl_ofi_selected_text), "none: %s", why);
        snprintf(avail, sizeof(px_btl_ofi_avail_text), "none (%s)", why);
        return;
    }
    struct fi_info *hints = px_btl_ofi_hints();
    int rc = hints ? fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &px_btl_ofi_all_infos)
                   : -FI_ENOMEM;
    fi_freeinfo(hints);
    if (0 != rc) {
        px_btl_ofi_all_infos = NULL;
        if (-FI_ENODATA != rc)
            snprintf(px_btl_ofi_decline, sizeof(px_btl_ofi_decline), "fi_getinfo failed: %s",
                     px_btl_ofi_strerror(rc));
    }
    for (struct fi_info *i = px_btl_ofi_all_infos; i; i = i->next)
        px_btl_ofi_append_unique(avail, sizeof(px_btl_ofi_avail_text), i->fabric_attr->prov_name);
    if (!px_btl_ofi_decline[0])
        px_btl_ofi_choose();
    if (px_btl_ofi_chosen)
        snprintf(selected, sizeof(px_btl_ofi_selected_text), "%s (fabric %s, domain %s)",
                 px_btl_ofi_chosen->fabric_attr->prov_name, px_btl_ofi_chosen->fabric_attr->name,
                 px_btl_ofi_chosen->domain_attr->name);
    else
        snprintf(selected, sizeof(px_btl_ofi_selected_text), "none: %s",
                 px_btl_ofi_decline[0] ? px_btl_ofi_decline : "no RDM provider found");
}

/* Discovery with the current settings, once until they may change. */
static void px_btl_ofi_discover_once(void)
{
    if (px_btl_ofi_discovered)
        return;
    if (px_btl_ofi_all_infos) {
        fi_freeinfo(px_btl_ofi_all_infos);
        px_btl_ofi_all_infos = NULL;
    }
    px_btl_ofi_discover();
    px_btl_ofi_discovered = true;
}

/* Probe of the informational variables: their storage points at the texts
 * discovery fills. */
static int px_btl_ofi_probe(void)
{
    px_btl_ofi_discover_once();
    px_btl_ofi_providers_available = px_btl_ofi_avail_text;
    px_btl_ofi_provider_selected = px_btl_ofi_selected_text;
    return PX_SUCCESS;
}

/* True when every rank is on this host and shm may serve them. */
static bool px_btl_ofi_single_host_job(const char **why)
{
    if (!px_btl_ofi_skip_single_host || !px_btl_base_job_is_local("shm"))
        return false;
    *why = px_boot->size > 1 ? "every rank is on this host and btl/shm serves them "
                               "(btl_ofi_skip_single_host; use btl=self,ofi to run ofi here)"
                             : "a job of one process needs no network "
                               "(btl_ofi_skip_single_host)";
    return true;
}

static const px_mca_var_field_t px_btl_ofi_vars[] = {
    {.name = "provider_include",
     .help = "Comma-separated libfabric providers btl/ofi may use, in order of preference (e.g. "
             "\"tcp;ofi_rxm\", \"verbs\", \"sockets\", \"shm\"); a core name also matches its "
             "utility stack (\"tcp\" = \"tcp;ofi_rxm\"). Exclusive with btl_ofi_provider_exclude",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 1,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .storage = &px_btl_ofi_provider_include},
    {.name = "provider_exclude",
     .help = "Comma-separated libfabric providers btl/ofi must not use. Exclusive with "
             "btl_ofi_provider_include",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 1,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .storage = &px_btl_ofi_provider_exclude},
    {.name = "provider_order",
     .help = "Preference order of providers when btl_ofi_provider_include is not set; providers "
             "found but not listed come after those listed",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .storage = &px_btl_ofi_provider_order},
    {.name = "domain",
     .help = "Use only this libfabric domain of the chosen provider (a NIC or interface name such "
             "as \"lo\", \"eth0\", \"mlx5_0\"); empty: the first non-loopback one",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 4,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_ofi_domain},
    {.name = "num_recvs",
     .help = "Receive buffers (each header + btl_ofi_max_send_size bytes) posted ahead of time",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "1",
     .max = "1024",
     .storage = &px_btl_ofi_num_recvs},
    {.name = NULL},
};

/* After the shared rows (rcache_max_entries, rcache_max_bytes, flush_timeout). */
static const px_mca_var_field_t px_btl_ofi_vars_tail[] = {
    {.name = "connect_timeout",
     .help = "Seconds libfabric may refuse every operation to a peer (EAGAIN, as tcp;ofi_rxm does "
             "while it cannot connect) before the peer is declared unreachable and its pending "
             "requests fail",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .storage = &px_btl_ofi_connect_timeout},
    {.name = "connect_probe",
     .help = "Over tcp-based providers (tcp;ofi_rxm, net): after this many seconds of EAGAIN to a "
             "peer, and again every as many seconds, try a plain TCP connect to the address the "
             "peer published; a refused connection (nothing listens there: the peer's process "
             "is gone) declares the peer unreachable at once instead of after "
             "btl_ofi_connect_timeout. 0: never probe",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "3600",
     .storage = &px_btl_ofi_connect_probe},
    {.name = "rxm_eager_limit",
     .help = "Bytes up to which libfabric's ofi_rxm sends a message in one piece: btl/ofi sets "
             "FI_OFI_RXM_EAGER_LIMIT to this before it loads libfabric, unless the environment "
             "sets it or this host has an RDMA device (rxm over verbs needs its default), so "
             "that eager fragments up to btl_ofi_max_send_size avoid rxm's segmentation; values "
             "below 16384 count as 16384; 0: leave libfabric's default (16 KiB)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "67108864",
     .storage = &px_btl_ofi_rxm_eager_limit},
    {.name = "rxm_cm_progress_interval",
     .help = "Microseconds between two looks of libfabric's ofi_rxm at its connection events "
             "(a peer's connection request, the answer to ours) while completions are polled: "
             "btl/ofi sets FI_OFI_RXM_CM_PROGRESS_INTERVAL to this before it loads libfabric, "
             "unless the environment sets it. rxm's own default, 10000, added 15-28 ms to the "
             "first transfer to a new peer across two hosts (an interval on each side); 0: leave "
             "libfabric's default",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "10000000",
     .storage = &px_btl_ofi_rxm_cm_progress_interval},
    {.name = "rxm_buffer_size",
     .help = "Bytes of each of libfabric's ofi_rxm bounce buffers (256 receive buffers per "
             "connection, made at the first transfer to a peer, and its pools): btl/ofi sets "
             "FI_OFI_RXM_BUFFER_SIZE to this before it loads libfabric, unless the environment "
             "sets it or this host has an RDMA device. Without it rxm sizes them by its eager "
             "limit (btl_ofi_rxm_eager_limit): 17 MB faulted in at the first transfer to each "
             "new peer. Over tcp a message matching a posted receive goes straight into it; 0: "
             "leave libfabric's default",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "67108864",
     .storage = &px_btl_ofi_rxm_buffer_size},
    {.name = "rdma_lanes",
     .help = "Endpoints (lanes) per process for RDMA: each its own connection to the peer's lane "
             "of the same number (its own TCP connection over net and tcp;ofi_rxm) and its own "
             "completion queue; a put or get of at least two btl_ofi_rdma_lane_min goes out in "
             "pieces over the lanes, smaller ones take turns; messages stay on lane 0. With a "
             "peer the smaller of the two counts is used (1 with an older Plexus, which "
             "publishes no lanes). On a quiet machine 2 lanes lost (0.54-0.99x at 64 KiB-4 MiB, "
             "docs/ofi.md): 1 is the default. Providers that bind registrations to an endpoint "
             "(FI_MR_ENDPOINT) get 1",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .min = "1",
     .max = "8",
     .storage = &px_btl_ofi_rdma_lanes},
    {.name = "rdma_lane_min",
     .help = "Smallest piece of a put or get striped over RDMA lanes (btl_ofi_rdma_lanes): an "
             "operation goes out in at most size / this many pieces; below twice this it goes "
             "whole on one lane",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "4096",
     .storage = &px_btl_ofi_rdma_lane_min},
    {.name = "verbose",
     .help = "Verbosity of btl/ofi (0-100)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .min = "0",
     .max = "100",
     .storage = &px_btl_ofi_verbose},
    {.name = NULL},
};

/* After the base's module variables. Discovery costs real time: the
 * informational variables are probed when read (px_info --param btl ofi),
 * not at registration. */
static const px_mca_var_field_t px_btl_ofi_late_vars[] = {
    {.name = "skip_single_host",
     .help = "Decline without asking libfabric (fi_getinfo costs about 0.1 s of CPU here) when "
             "every rank of the job is on this host and btl/shm is allowed, since shm would serve "
             "every pair; false keeps ofi as a fallback on one host",
     .type = PX_MCA_VAR_TYPE_BOOL,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_LOCAL,
     .storage = &px_btl_ofi_skip_single_host},
    {.name = "providers_available",
     .help = "libfabric providers offering RDM endpoints with messages and RMA here "
             "(informational)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 1,
     .scope = PX_MCA_VAR_SCOPE_CONSTANT,
     .flags = PX_MCA_VAR_FLAG_READONLY,
     .storage = &px_btl_ofi_providers_available,
     .probe = px_btl_ofi_probe},
    {.name = "provider_selected",
     .help = "The provider and domain btl/ofi will use, or why none (informational)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 1,
     .scope = PX_MCA_VAR_SCOPE_CONSTANT,
     .flags = PX_MCA_VAR_FLAG_READONLY,
     .storage = &px_btl_ofi_provider_selected,
     .probe = px_btl_ofi_probe},
    {.name = NULL},
};

static int px_btl_ofi_register(void)
{
    /* Settings may have changed: discover again when next needed. */
    px_btl_ofi_discovered = false;
    return px_btl_base_net_register(&px_btl_ofi_component, &px_btl_ofi_module_template.super,
                                    px_btl_ofi_vars, &px_btl_ofi_net, px_btl_ofi_vars_tail,
                                    px_btl_ofi_late_vars);
}

static int px_btl_ofi_open(void)
{
    px_btl_ofi_output = px_output_open("btl:ofi", px_btl_ofi_verbose);
    return PX_SUCCESS;
}

static int px_btl_ofi_close(void)
{
    if (px_btl_ofi_all_infos) {
        fi_freeinfo(px_btl_ofi_all_infos);
        px_btl_ofi_all_infos = NULL;
        px_btl_ofi_chosen = NULL;
    }
    px_btl_ofi_discovered = false;
    if (px_btl_ofi_output > 0)
        px_output_close(px_btl_ofi_output);
    px_btl_ofi_output = -1;
    return PX_SUCCESS;
}

static px_btl_ofi_module_t *px_btl_ofi_the_module;

static px_btl_module_t **px_btl_ofi_init(int *num_modules, bool enable_progress_threads)
{
    (void)enable_progress_threads;
    *num_modules = 0;
    px_btl_ofi_the_module = NULL;
    const char *why = NULL;
    if (px_btl_ofi_single_host_job(&why)) {
        PX_OUTPUT_VERBOSE(1, px_btl_ofi_output, "btl/ofi declines: %s", why);
        return NULL;
    }
    px_btl_ofi_discover_once();
    if (NULL == px_btl_ofi_chosen) {
        /* An explicit choice that cannot be honoured is an error; no
         * provider at all is only a reason to decline. */
        if (px_btl_ofi_decline_is_error)
            px_show_error("btl/ofi: %s", px_btl_ofi_decline);
        else
            PX_OUTPUT_VERBOSE(1, px_btl_ofi_output, "btl/ofi declines: %s", px_btl_ofi_decline);
        return NULL;
    }
    px_btl_ofi_module_t *m = malloc(sizeof(*m));
    px_btl_module_t **mods = malloc(sizeof(*mods));
    struct fi_info *info = fi_dupinfo(px_btl_ofi_chosen);
    if (NULL == m || NULL == mods || NULL == info) {
        free(m);
        free(mods);
        fi_freeinfo(info);
        return NULL;
    }
    *m = px_btl_ofi_module_template;
    if (PX_SUCCESS != px_btl_ofi_module_init(m, info)) {
        free(mods);
        free(m);
        return NULL;
    }
    PX_OUTPUT_VERBOSE(10, px_btl_ofi_output, "btl/ofi: using %s", px_btl_ofi_selected_text);
    px_btl_ofi_the_module = m;
    mods[0] = &m->super;
    *num_modules = 1;
    return mods;
}

static int px_btl_ofi_modex_send(void)
{
    px_btl_ofi_module_t *m = px_btl_ofi_the_module;
    if (NULL == m)
        return PX_SUCCESS;
    size_t len = px_btl_ofi_own_blob(m, NULL, 0);
    void *b = calloc(1, len);
    if (NULL == b)
        return PX_ERR_OUT_OF_RESOURCE;
    px_btl_ofi_own_blob(m, b, len);
    int rc = px_boot_modex_send(&px_btl_ofi_component.base, b, len);
    free(b);
    if (PX_SUCCESS != rc)
        return rc;
    /* The lanes under their own key, which an older Plexus never reads;
     * published with one lane too, so that a newer peer finds it at once
     * (boot/pxrun asks pxrun for a key it has not cached). */
    char key[64];
    unsigned char lanes[PX_BTL_OFI_LANES_MAX * (sizeof(uint32_t) + sizeof(m->lane_name[0])) + 8];
    len = px_btl_ofi_own_lanes(m, lanes, sizeof(lanes));
    if (len > sizeof(lanes) || PX_SUCCESS != (rc = px_btl_ofi_lanes_key(key, sizeof(key))))
        return PX_SUCCESS == rc ? PX_ERR_BAD_PARAM : rc;
    return px_boot->put(key, lanes, len);
}

const px_btl_component_t px_btl_ofi_component = {
    .base = PX_BTL_COMPONENT_HEADER("ofi", 1, 0, 0, px_btl_ofi_register, px_btl_ofi_open,
                                    px_btl_ofi_close),
    .btl_init = px_btl_ofi_init,
    .btl_modex_send = px_btl_ofi_modex_send,
    /* Not thread-safe: it asks libfabric for FI_THREAD_DOMAIN (the caller
     * serializes access to a domain; the module has one domain) and its
     * pending queues and fragment lists have no locks; the base's lock per
     * module is what FI_THREAD_DOMAIN asks for (docs/threads.md). */
    .btl_thread_support = PX_BTL_THREADS_SERIALIZED,
};
