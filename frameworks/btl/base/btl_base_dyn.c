/*
 * btl_base_dyn.c: dynamic peers (BTL API 3.3). The base frames every
 * module's part of an offer or reply into one payload (the format is in
 * base.h), parses the peer's payload as untrusted input, calls the modules'
 * btl_dyn_* methods and chooses the peer's modules with the same rule as
 * for a rank (px_btl_base_select_peer).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "core/util/error.h"
#include "frameworks/btl/base/base_runtime.h"

/* ------------------------------------------------------------ text */

typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} dyn_sb_t;

static void sb_printf(dyn_sb_t *b, const char *fmt, ...) PX_PRINTF(2, 3);
static void sb_printf(dyn_sb_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || b->failed)
        return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (NULL == s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static const char *comp_name(const px_btl_module_t *m)
{
    return (m->btl_component && m->btl_component->base.component_name)
               ? m->btl_component->base.component_name
               : "?";
}

/* ------------------------------------------------------------ the payload */

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}
static void wr16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void wr32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void wr64(unsigned char *p, uint64_t v)
{
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

static bool name_char_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

int px_btl_base_dyn_parse(const void *buf, size_t len, px_btl_dyn_payload_t *out, char *why,
                          size_t why_len)
{
    const unsigned char *p = buf;
#define BAD(...)                                                                                   \
    do {                                                                                           \
        if (why && why_len)                                                                        \
            snprintf(why, why_len, __VA_ARGS__);                                                   \
        return PX_ERR_BAD_PARAM;                                                                   \
    } while (0)
    if (NULL == out)
        return PX_ERR_BAD_PARAM;
    memset(out, 0, sizeof(*out));
    if (NULL == p || len < PX_BTL_DYN_HEADER_SIZE)
        BAD("dynamic peer payload of %zu bytes is shorter than its %d-byte header (truncated?)",
            len, PX_BTL_DYN_HEADER_SIZE);
    if (len > PX_BTL_DYN_PAYLOAD_MAX)
        BAD("dynamic peer payload of %zu bytes is larger than the %zu bytes accepted", len,
            (size_t)PX_BTL_DYN_PAYLOAD_MAX);
    if (memcmp(p, PX_BTL_DYN_MAGIC, 4) != 0)
        BAD("dynamic peer payload does not start with \"%s\" (not a Plexus transport payload)",
            PX_BTL_DYN_MAGIC);
    if (p[4] != PX_BTL_DYN_VERSION)
        BAD("dynamic peer payload is format version %u; this library reads version %d", p[4],
            PX_BTL_DYN_VERSION);
    if (p[5] != PX_BTL_DYN_OFFER && p[5] != PX_BTL_DYN_REPLY)
        BAD("dynamic peer payload kind %u is neither an offer (%d) nor a reply (%d)", p[5],
            PX_BTL_DYN_OFFER, PX_BTL_DYN_REPLY);
    unsigned nparts = rd16(p + 6);
    uint32_t total = rd32(p + 16);
    if (total != len)
        BAD("dynamic peer payload says it is %u bytes but %zu arrived (%s)", total, len,
            total > len ? "truncated" : "trailing bytes");
    if (nparts > PX_BTL_DYN_MAX_PARTS)
        BAD("dynamic peer payload has %u parts; at most %d are accepted", nparts,
            PX_BTL_DYN_MAX_PARTS);
    out->kind = p[5];
    out->conn_id = rd64(p + 8);
    size_t at = PX_BTL_DYN_HEADER_SIZE;
    for (unsigned i = 0; i < nparts; ++i) {
        px_btl_dyn_part_t *part = &out->parts[i];
        if (len - at < 1)
            BAD("dynamic peer payload ends at byte %zu inside part %u's header", at, i);
        size_t nl = p[at];
        if (nl < 1 || nl > PX_BTL_DYN_NAME_MAX)
            BAD("dynamic peer payload part %u (byte %zu) has a component name of %zu bytes; "
                "1..%d are accepted",
                i, at, nl, PX_BTL_DYN_NAME_MAX);
        if (len - at < 1 + nl + 10)
            BAD("dynamic peer payload ends at byte %zu inside part %u's header", len, i);
        for (size_t k = 0; k < nl; ++k)
            if (!name_char_ok(p[at + 1 + k]))
                BAD("dynamic peer payload part %u (byte %zu) has a component name with byte "
                    "0x%02x; names are of a-z, 0-9 and _",
                    i, at + 1 + k, p[at + 1 + k]);
        memcpy(part->component, p + at + 1, nl);
        part->component[nl] = '\0';
        const unsigned char *h = p + at + 1 + nl;
        for (int k = 0; k < 3; ++k)
            part->version[k] = rd16(h + 2 * k);
        part->index = h[6];
        part->status = h[7];
        part->len = rd16(h + 8);
        if (part->status > PX_BTL_DYN_PART_DECLINED)
            BAD("dynamic peer payload part %u (btl/%s) has status %u; 0 (a part) or 1 "
                "(declined) are accepted",
                i, part->component, part->status);
        if (part->len > PX_BTL_DYN_PART_MAX)
            BAD("dynamic peer payload part %u (btl/%s) is %zu bytes; at most %d are accepted", i,
                part->component, part->len, PX_BTL_DYN_PART_MAX);
        at += 1 + nl + 10;
        if (len - at < part->len)
            BAD("dynamic peer payload part %u (btl/%s) says %zu bytes but only %zu follow "
                "(truncated)",
                i, part->component, part->len, len - at);
        part->data = p + at;
        at += part->len;
        for (unsigned j = 0; j < i; ++j)
            if (out->parts[j].index == part->index &&
                0 == strcmp(out->parts[j].component, part->component))
                BAD("dynamic peer payload has two parts for module %u of btl/%s", part->index,
                    part->component);
    }
    if (at != len)
        BAD("dynamic peer payload has %zu bytes after its %u parts", len - at, nparts);
    out->nparts = (int)nparts;
    return PX_SUCCESS;
#undef BAD
}

/* A payload under construction. */
typedef struct {
    unsigned char *buf;
    size_t len, cap;
    unsigned nparts;
} dyn_out_t;

static int out_init(dyn_out_t *o, uint8_t kind, uint64_t conn_id)
{
    o->cap = 1024;
    o->buf = malloc(o->cap);
    if (NULL == o->buf)
        return PX_ERR_OUT_OF_RESOURCE;
    memcpy(o->buf, PX_BTL_DYN_MAGIC, 4);
    o->buf[4] = PX_BTL_DYN_VERSION;
    o->buf[5] = kind;
    wr64(o->buf + 8, conn_id);
    o->len = PX_BTL_DYN_HEADER_SIZE;
    o->nparts = 0;
    return PX_SUCCESS;
}

static int out_part(dyn_out_t *o, const px_btl_module_t *m, uint8_t index, uint8_t status,
                    const void *data, size_t len)
{
    const char *name = comp_name(m);
    size_t nl = strlen(name);
    if (nl < 1 || nl > PX_BTL_DYN_NAME_MAX || len > PX_BTL_DYN_PART_MAX ||
        o->nparts >= PX_BTL_DYN_MAX_PARTS)
        return PX_ERR_BAD_PARAM;
    size_t need = o->len + 1 + nl + 10 + len;
    if (need > o->cap) {
        size_t cap = o->cap;
        while (cap < need)
            cap *= 2;
        unsigned char *b = realloc(o->buf, cap);
        if (NULL == b)
            return PX_ERR_OUT_OF_RESOURCE;
        o->buf = b;
        o->cap = cap;
    }
    unsigned char *p = o->buf + o->len;
    *p++ = (unsigned char)nl;
    memcpy(p, name, nl);
    p += nl;
    const px_mca_version_t *v = &m->btl_component->base.component_version;
    wr16(p, (uint16_t)v->major);
    wr16(p + 2, (uint16_t)v->minor);
    wr16(p + 4, (uint16_t)v->release);
    p[6] = index;
    p[7] = status;
    wr16(p + 8, (uint16_t)len);
    p += 10;
    if (len)
        memcpy(p, data, len);
    o->len = need;
    o->nparts++;
    return PX_SUCCESS;
}

static void out_finish(dyn_out_t *o, void **payload, size_t *len)
{
    wr16(o->buf + 6, (uint16_t)o->nparts);
    wr32(o->buf + 16, (uint32_t)o->len);
    *payload = o->buf;
    *len = o->len;
    o->buf = NULL;
}

/* ------------------------------------------------------------ helpers */

bool px_btl_base_dyn_capable(const px_btl_module_t *m)
{
    return PX_BTL_MODULE_HAS(m, btl_dyn_offer) && PX_BTL_MODULE_HAS(m, btl_dyn_accept) &&
           PX_BTL_MODULE_HAS(m, btl_dyn_complete) && PX_BTL_MODULE_HAS(m, btl_dyn_remove);
}

/* Why a module is not capable, in `buf`. */
static void not_capable_reason(const px_btl_module_t *m, char *buf, size_t len)
{
    const px_mca_version_t *fv = &m->btl_component->base.framework_version;
    if (m->btl_size && m->btl_size < offsetof(px_btl_module_t, btl_dyn_remove) + sizeof(void *))
        snprintf(buf, len,
                 "built for BTL API %d.%d, before 3.3: it does not serve dynamic peers "
                 "(rebuild it against BTL API 3.3 or later)",
                 fv->major, fv->minor);
    else
        snprintf(buf, len, "it does not implement the dynamic peer methods (btl_dyn_*)");
}

/* The index of modules[i] among the modules of its component. */
static uint8_t module_index(px_btl_module_t **modules, int i)
{
    unsigned n = 0;
    for (int j = 0; j < i; ++j)
        if (modules[j]->btl_component == modules[i]->btl_component)
            n++;
    return (uint8_t)n;
}

static const px_btl_dyn_part_t *find_part(const px_btl_dyn_payload_t *pl, const char *name,
                                          uint8_t index)
{
    for (int i = 0; i < pl->nparts; ++i)
        if (pl->parts[i].index == index && 0 == strcmp(pl->parts[i].component, name))
            return &pl->parts[i];
    return NULL;
}

/* A declined part's reason as text: printable bytes only. */
static void part_text(const px_btl_dyn_part_t *part, char *buf, size_t len)
{
    size_t n = part->len < len - 1 ? part->len : len - 1;
    for (size_t i = 0; i < n; ++i) {
        unsigned char c = part->data[i];
        buf[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[n] = '\0';
}

/* A module whose parts have an extension (PX_BTL_FLAGS_DYN_EXT) writes and
 * reads them as "u16 n | part proper (n bytes) | extension"; it gets room
 * for both. */
#define DYN_ROOM (2 + 2 * PX_BTL_DYN_PART_MAX)

static bool has_ext(const px_btl_module_t *m)
{
    return 0 != (m->btl_flags & PX_BTL_FLAGS_DYN_EXT);
}

/* Whether the `plen` bytes module `m` wrote are a part it may send. */
static bool part_ok(const px_btl_module_t *m, const unsigned char *part, size_t plen)
{
    if (!has_ext(m))
        return plen <= PX_BTL_DYN_PART_MAX;
    if (plen < 2 || plen > DYN_ROOM)
        return false;
    size_t n = rd16(part);
    return n <= plen - 2 && n <= PX_BTL_DYN_PART_MAX && plen - 2 - n <= PX_BTL_DYN_PART_MAX;
}

/* Frame what module `m` wrote (checked by part_ok): its part, and for a
 * module with an extension that as a part of its own (index +
 * PX_BTL_DYN_EXT_INDEX), which an older reader never looks up. */
static int out_module(dyn_out_t *o, const px_btl_module_t *m, uint8_t index,
                      const unsigned char *part, size_t plen)
{
    if (!has_ext(m))
        return out_part(o, m, index, PX_BTL_DYN_PART_OK, part, plen);
    size_t n = rd16(part);
    int rc = out_part(o, m, index, PX_BTL_DYN_PART_OK, part + 2, n);
    if (PX_SUCCESS == rc && plen - 2 - n > 0 && index < PX_BTL_DYN_EXT_INDEX)
        rc = out_part(o, m, (uint8_t)(index + PX_BTL_DYN_EXT_INDEX), PX_BTL_DYN_PART_OK,
                      part + 2 + n, plen - 2 - n);
    return rc;
}

/* What module `m` reads of the peer's part `in` (its index `index`): the
 * part as it is, or for a module with an extension the part proper and the
 * peer's extension part (none from a peer that sends none) laid out in
 * `buf` (DYN_ROOM bytes). */
static const unsigned char *in_module(const px_btl_dyn_payload_t *pl, const px_btl_module_t *m,
                                      const px_btl_dyn_part_t *in, uint8_t index,
                                      unsigned char *buf, size_t *len)
{
    if (!has_ext(m)) {
        *len = in->len;
        return in->data;
    }
    const px_btl_dyn_part_t *ext =
        index < PX_BTL_DYN_EXT_INDEX
            ? find_part(pl, in->component, (uint8_t)(index + PX_BTL_DYN_EXT_INDEX))
            : NULL;
    size_t elen = (ext && PX_BTL_DYN_PART_OK == ext->status) ? ext->len : 0;
    wr16(buf, (uint16_t)in->len);
    memcpy(buf + 2, in->data, in->len);
    if (elen)
        memcpy(buf + 2 + in->len, ext->data, elen);
    *len = 2 + in->len + elen;
    return buf;
}

static px_btl_base_dyn_peer_t *dp_new(px_btl_module_t **modules, int nmodules)
{
    px_btl_base_dyn_peer_t *dp = calloc(1, sizeof(*dp));
    if (NULL == dp)
        return NULL;
    dp->nmodules = nmodules;
    dp->modules = modules;
    dp->endpoints = calloc(nmodules > 0 ? (size_t)nmodules : 1, sizeof(*dp->endpoints));
    if (NULL == dp->endpoints) {
        free(dp);
        return NULL;
    }
    return dp;
}

/* Choose the peer's modules from those that added it; on PX_ERR_UNREACH
 * append each module's reason (reasons[m]) to *sb. */
static int dp_select(px_btl_base_dyn_peer_t *dp, char (*reasons)[PX_BTL_DYN_REASON_MAX],
                     dyn_sb_t *sb)
{
    int n = dp->nmodules;
    px_btl_base_reach_t *reach = calloc(n > 0 ? (size_t)n : 1, sizeof(*reach));
    const char **why = calloc(n > 0 ? (size_t)n : 1, sizeof(*why));
    if (NULL == reach || NULL == why) {
        free(reach);
        free(why);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = PX_SUCCESS, m;
    for (m = 0; m < n; ++m) {
        reach[m].module = dp->modules[m];
        reach[m].endpoints = &dp->endpoints[m];
        why[m] = reasons[m];
        reach[m].reasons = &why[m];
        PX_OBJ_CONSTRUCT(&reach[m].reachable, px_bitmap_t);
        if (PX_SUCCESS != px_bitmap_init(&reach[m].reachable, 1)) {
            rc = PX_ERR_OUT_OF_RESOURCE;
            m++;
            break;
        }
        if (dp->endpoints[m])
            px_bitmap_set_bit(&reach[m].reachable, 0);
    }
    if (PX_SUCCESS == rc)
        rc = px_btl_base_select_peer(reach, n, 0, PX_BTL_RANK_DYNAMIC, &dp->peer);
    if (PX_ERR_UNREACH == rc) {
        if (0 == n)
            sb_printf(sb, "\n  No BTL module was available.");
        for (int k = 0; k < n; ++k) {
            const px_btl_module_t *mod = dp->modules[k];
            if (dp->endpoints[k] && !(mod->btl_flags & PX_BTL_FLAGS_SEND))
                sb_printf(sb, "\n    %s: reaches it but cannot send (btl_%s_flags = 0x%x)",
                          comp_name(mod), comp_name(mod), mod->btl_flags);
            else
                sb_printf(sb, "\n    %s: %s", comp_name(mod),
                          reasons[k][0] ? reasons[k] : "declined without giving a reason");
        }
    }
    for (int k = 0; k < m; ++k)
        PX_OBJ_DESTRUCT(&reach[k].reachable);
    free(reach);
    free(why);
    return rc;
}

static void dp_release(px_btl_base_dyn_peer_t *dp)
{
    for (int m = dp->nmodules - 1; m >= 0; --m)
        if (dp->endpoints[m]) {
            dp->modules[m]->btl_dyn_remove(dp->modules[m], dp->endpoints[m]);
            dp->endpoints[m] = NULL;
        }
    px_btl_base_peer_free(dp->peer);
    dp->peer = NULL;
}

static uint64_t new_conn_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        id = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
    }
    return id ? id : 1;
}

static char *sb_take(dyn_sb_t *sb)
{
    if (sb->failed) {
        free(sb->s);
        return NULL;
    }
    return sb->s;
}

/* ------------------------------------------------------------ the calls */

int px_btl_base_dyn_offer(px_btl_module_t **modules, int nmodules, px_btl_base_dyn_peer_t **dpp,
                          void **payload, size_t *len, char **error)
{
    if (error)
        *error = NULL;
    *dpp = NULL;
    *payload = NULL;
    *len = 0;
    if (nmodules < 0 || (nmodules > 0 && NULL == modules))
        return PX_ERR_BAD_PARAM;
    px_btl_base_dyn_peer_t *dp = dp_new(modules, nmodules);
    if (NULL == dp)
        return PX_ERR_OUT_OF_RESOURCE;
    dp->connector = true;
    dp->conn_id = new_conn_id();
    dyn_out_t o;
    int rc = out_init(&o, PX_BTL_DYN_OFFER, dp->conn_id);
    if (rc != PX_SUCCESS) {
        free(dp->endpoints);
        free(dp);
        return rc;
    }
    dyn_sb_t sb = {0};
    unsigned char *part = malloc(DYN_ROOM);
    char reason[PX_BTL_DYN_REASON_MAX];
    if (NULL == part)
        rc = PX_ERR_OUT_OF_RESOURCE;
    for (int m = 0; m < nmodules && PX_SUCCESS == rc; ++m) {
        px_btl_module_t *mod = modules[m];
        reason[0] = '\0';
        if (!px_btl_base_dyn_capable(mod)) {
            not_capable_reason(mod, reason, sizeof reason);
            sb_printf(&sb, "\n    %s: %s", comp_name(mod), reason);
            continue;
        }
        size_t plen = has_ext(mod) ? DYN_ROOM : PX_BTL_DYN_PART_MAX;
        px_btl_endpoint_t *ep = NULL;
        int mrc = mod->btl_dyn_offer(mod, &ep, part, &plen, reason);
        if (PX_SUCCESS != mrc || NULL == ep || !part_ok(mod, part, plen)) {
            if (PX_SUCCESS == mrc && ep)
                mod->btl_dyn_remove(mod, ep);
            reason[sizeof reason - 1] = '\0';
            sb_printf(&sb, "\n    %s: %s", comp_name(mod),
                      reason[0] ? reason : "declined without giving a reason");
            continue;
        }
        dp->endpoints[m] = ep;
        rc = out_module(&o, mod, module_index(modules, m), part, plen);
    }
    free(part);
    if (PX_SUCCESS == rc && 0 == o.nparts) {
        rc = PX_ERR_UNREACH;
        dyn_sb_t e = {0};
        sb_printf(&e, "no transport offers a dynamic peer connection:%s%s", sb.s ? sb.s : "",
                  0 == nmodules ? "\n  No BTL module was available." : "");
        if (error)
            *error = sb_take(&e);
        else
            free(e.s);
    }
    free(sb.s);
    if (rc != PX_SUCCESS) {
        free(o.buf);
        dp_release(dp);
        free(dp->endpoints);
        free(dp);
        return rc;
    }
    out_finish(&o, payload, len);
    *dpp = dp;
    return PX_SUCCESS;
}

int px_btl_base_dyn_accept(px_btl_module_t **modules, int nmodules, const void *offer,
                           size_t offer_len, px_btl_base_dyn_peer_t **dpp, void **reply,
                           size_t *reply_len, char **error)
{
    if (error)
        *error = NULL;
    *dpp = NULL;
    *reply = NULL;
    *reply_len = 0;
    if (nmodules < 0 || (nmodules > 0 && NULL == modules))
        return PX_ERR_BAD_PARAM;
    px_btl_dyn_payload_t *pl = malloc(sizeof(*pl));
    if (NULL == pl)
        return PX_ERR_OUT_OF_RESOURCE;
    char why[PX_BTL_DYN_REASON_MAX];
    int rc = px_btl_base_dyn_parse(offer, offer_len, pl, why, sizeof why);
    if (PX_SUCCESS == rc && pl->kind != PX_BTL_DYN_OFFER) {
        snprintf(why, sizeof why, "dynamic peer payload is a reply where an offer is expected");
        rc = PX_ERR_BAD_PARAM;
    }
    if (rc != PX_SUCCESS) {
        if (error) {
            dyn_sb_t e = {0};
            sb_printf(&e, "refused a dynamic peer's offer: %s", why);
            *error = sb_take(&e);
        }
        free(pl);
        return rc;
    }
    px_btl_base_dyn_peer_t *dp = dp_new(modules, nmodules);
    char(*reasons)[PX_BTL_DYN_REASON_MAX] =
        calloc(nmodules > 0 ? (size_t)nmodules : 1, sizeof(*reasons));
    unsigned char *part = malloc(DYN_ROOM), *inbuf = malloc(DYN_ROOM);
    dyn_out_t o = {0};
    if (NULL == dp || NULL == reasons || NULL == part || NULL == inbuf ||
        PX_SUCCESS != out_init(&o, PX_BTL_DYN_REPLY, pl->conn_id)) {
        if (dp) {
            free(dp->endpoints);
            free(dp);
        }
        free(reasons);
        free(part);
        free(inbuf);
        free(pl);
        free(o.buf);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    dp->conn_id = pl->conn_id;
    for (int m = 0; m < nmodules && PX_SUCCESS == rc; ++m) {
        px_btl_module_t *mod = modules[m];
        const px_mca_version_t *v = &mod->btl_component->base.component_version;
        uint8_t index = module_index(modules, m);
        const px_btl_dyn_part_t *in = find_part(pl, comp_name(mod), index);
        char *r = reasons[m];
        if (!px_btl_base_dyn_capable(mod)) {
            not_capable_reason(mod, r, PX_BTL_DYN_REASON_MAX);
        } else if (NULL == in) {
            snprintf(r, PX_BTL_DYN_REASON_MAX, "the peer offered no part for it (module %u)",
                     index);
        } else if (in->version[0] != v->major) {
            snprintf(r, PX_BTL_DYN_REASON_MAX,
                     "the peer's part is for btl/%s %u.%u.%u, this is %d.%d.%d (the major must "
                     "be the same)",
                     in->component, in->version[0], in->version[1], in->version[2], v->major,
                     v->minor, v->release);
        } else {
            size_t plen = has_ext(mod) ? DYN_ROOM : PX_BTL_DYN_PART_MAX, ilen = 0;
            const unsigned char *idata = in_module(pl, mod, in, index, inbuf, &ilen);
            px_btl_endpoint_t *ep = NULL;
            int mrc = mod->btl_dyn_accept(mod, idata, ilen, &ep, part, &plen, r);
            r[PX_BTL_DYN_REASON_MAX - 1] = '\0';
            if (PX_SUCCESS == mrc && ep && part_ok(mod, part, plen)) {
                dp->endpoints[m] = ep;
                r[0] = '\0';
                rc = out_module(&o, mod, index, part, plen);
                continue;
            }
            if (PX_SUCCESS == mrc && ep)
                mod->btl_dyn_remove(mod, ep);
            if (!r[0])
                snprintf(r, PX_BTL_DYN_REASON_MAX, "declined without giving a reason");
        }
        /* Tell the connector why, when it offered this module. */
        if (in)
            rc = out_part(&o, mod, index, PX_BTL_DYN_PART_DECLINED, r, strlen(r));
    }
    free(part);
    free(inbuf);
    free(pl);
    dyn_sb_t sb = {0};
    if (PX_SUCCESS == rc) {
        rc = dp_select(dp, reasons, &sb); /* unreachable: the reply still says why */
    }
    free(reasons);
    if (rc != PX_SUCCESS) {
        if (PX_ERR_UNREACH == rc) {
            out_finish(&o, reply, reply_len);
            if (error) {
                dyn_sb_t e = {0};
                sb_printf(&e,
                          "no transport reaches the dynamic peer that offered a "
                          "connection; modules tried:%s",
                          sb.s ? sb.s : "");
                *error = sb_take(&e);
            }
        }
        free(o.buf);
        free(sb.s);
        dp_release(dp);
        free(dp->endpoints);
        free(dp);
        return rc;
    }
    free(sb.s);
    out_finish(&o, reply, reply_len);
    dp->completed = true;
    *dpp = dp;
    return PX_SUCCESS;
}

int px_btl_base_dyn_complete(px_btl_base_dyn_peer_t *dp, const void *reply, size_t reply_len,
                             char **error)
{
    if (error)
        *error = NULL;
    if (NULL == dp || !dp->connector || dp->completed)
        return PX_ERR_BAD_PARAM;
    px_btl_dyn_payload_t *pl = malloc(sizeof(*pl));
    char(*reasons)[PX_BTL_DYN_REASON_MAX] =
        calloc(dp->nmodules > 0 ? (size_t)dp->nmodules : 1, sizeof(*reasons));
    unsigned char *inbuf = malloc(DYN_ROOM);
    if (NULL == pl || NULL == reasons || NULL == inbuf) {
        free(pl);
        free(reasons);
        free(inbuf);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    char why[PX_BTL_DYN_REASON_MAX];
    dyn_sb_t e = {0};
    int rc = px_btl_base_dyn_parse(reply, reply_len, pl, why, sizeof why);
    if (PX_SUCCESS == rc && pl->kind != PX_BTL_DYN_REPLY) {
        snprintf(why, sizeof why, "dynamic peer payload is an offer where a reply is expected");
        rc = PX_ERR_BAD_PARAM;
    } else if (PX_SUCCESS == rc && pl->conn_id != dp->conn_id) {
        snprintf(why, sizeof why,
                 "dynamic peer reply is for connection %016llx, not this one (%016llx): a stale "
                 "or misrouted reply",
                 (unsigned long long)pl->conn_id, (unsigned long long)dp->conn_id);
        rc = PX_ERR_BAD_PARAM;
    }
    if (rc != PX_SUCCESS) {
        sb_printf(&e, "refused a dynamic peer's reply: %s", why);
        goto out;
    }
    for (int m = 0; m < dp->nmodules; ++m) {
        px_btl_module_t *mod = dp->modules[m];
        char *r = reasons[m];
        if (NULL == dp->endpoints[m]) {
            if (!px_btl_base_dyn_capable(mod))
                not_capable_reason(mod, r, PX_BTL_DYN_REASON_MAX);
            else
                snprintf(r, PX_BTL_DYN_REASON_MAX, "declined to offer");
            continue;
        }
        uint8_t index = module_index(dp->modules, m);
        const px_btl_dyn_part_t *in = find_part(pl, comp_name(mod), index);
        if (NULL == in || PX_BTL_DYN_PART_DECLINED == in->status) {
            /* Room for the words around it in r (PX_BTL_DYN_REASON_MAX). */
            char text[PX_BTL_DYN_REASON_MAX - 48] = "gave no reason";
            if (in)
                part_text(in, text, sizeof text);
            snprintf(r, PX_BTL_DYN_REASON_MAX, "the accepting side %s: %s",
                     in ? "declined" : "sent no reply part", text);
            mod->btl_dyn_remove(mod, dp->endpoints[m]);
            dp->endpoints[m] = NULL;
            continue;
        }
        size_t ilen = 0;
        const unsigned char *idata = in_module(pl, mod, in, index, inbuf, &ilen);
        int mrc = mod->btl_dyn_complete(mod, dp->endpoints[m], idata, ilen, r);
        r[PX_BTL_DYN_REASON_MAX - 1] = '\0';
        if (PX_SUCCESS != mrc) {
            sb_printf(&e,
                      "btl/%s could not complete the dynamic peer connection the peer "
                      "accepted: %s",
                      comp_name(mod), r[0] ? r : "no reason given");
            rc = PX_SUCCESS == mrc ? PX_ERR_COMM : mrc;
            goto out;
        }
    }
    {
        dyn_sb_t sb = {0};
        rc = dp_select(dp, reasons, &sb);
        if (PX_ERR_UNREACH == rc)
            sb_printf(&e, "no transport reaches the dynamic peer that accepted; modules tried:%s",
                      sb.s ? sb.s : "");
        free(sb.s);
    }
out:
    free(pl);
    free(reasons);
    free(inbuf);
    if (rc != PX_SUCCESS) {
        if (error)
            *error = sb_take(&e);
        else
            free(e.s);
        return rc;
    }
    free(e.s);
    dp->completed = true;
    return PX_SUCCESS;
}

int px_btl_base_dyn_remove(px_btl_base_dyn_peer_t *dp)
{
    if (NULL == dp)
        return PX_SUCCESS;
    dp_release(dp);
    free(dp->endpoints);
    free(dp);
    return PX_SUCCESS;
}
