/*
 * p2p_module.c: registry/p2p's module (p2p.h): this process's entries in a
 * table its listener reads too, and lookups of other processes' names
 * ("<namespace>/a.b.c.d:port/<name>") asked of their owners.
 *
 * How a key is read (docs/registry.md, "p2p"): the base gives
 * "<namespace>/<rest>". When the first part of <rest> (up to its first '/')
 * is "a.b.c.d:port" the name is that process's, and the rest after it is
 * the name there; when the address is this process's own listener the
 * name is local. Anything else is a local name. A first part that looks like
 * an address (digits and dots, ':', digits) but is not a valid one is
 * refused. Only local names are put and removed: a process publishes under
 * its own address only (qualify says which).
 */
#include "components/registry/p2p/p2p.h"
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"

static px_registry_p2p_module_t p2p_module;

/* ---- the table ---- */

int px_registry_p2p_table_init(px_registry_p2p_table_t *t)
{
    pthread_mutex_init(&t->lock, NULL);
    PX_OBJ_CONSTRUCT(&t->entries, px_hash_table_t);
    return px_hash_table_init(&t->entries, 64);
}

void px_registry_p2p_table_fini(px_registry_p2p_table_t *t)
{
    px_hash_table_iter_t it = PX_HASH_TABLE_ITER_INIT;
    while (px_hash_table_next(&t->entries, &it))
        free(it.value);
    px_hash_table_remove_all(&t->entries);
    PX_OBJ_DESTRUCT(&t->entries);
    pthread_mutex_destroy(&t->lock);
}

int px_registry_p2p_table_get(px_registry_p2p_table_t *t, const char *key, size_t key_len,
                              void **value, size_t *len)
{
    char k[PX_REGISTRY_KEY_MAX + 1];
    if (key_len > PX_REGISTRY_KEY_MAX)
        return PX_ERR_NOT_FOUND;
    memcpy(k, key, key_len);
    k[key_len] = '\0';
    pthread_mutex_lock(&t->lock);
    void *v = NULL;
    int rc = px_hash_table_get_value_str(&t->entries, k, &v);
    if (rc == PX_SUCCESS) {
        px_registry_p2p_entry_t *e = v;
        *value = malloc(e->len + 1);
        if (*value) {
            memcpy(*value, e->value, e->len + 1);
            *len = e->len;
        } else
            rc = PX_ERR_OUT_OF_RESOURCE;
    } else
        rc = PX_ERR_NOT_FOUND;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int px_registry_p2p_table_put(px_registry_p2p_table_t *t, const char *key, const void *value,
                              size_t len, int how)
{
    px_registry_p2p_entry_t *e = malloc(sizeof *e + len + 1);
    if (!e)
        return PX_ERR_OUT_OF_RESOURCE;
    e->len = len;
    if (len)
        memcpy(e->value, value, len);
    e->value[len] = 0;
    pthread_mutex_lock(&t->lock);
    void *old = NULL;
    int rc = PX_SUCCESS;
    if (px_hash_table_get_value_str(&t->entries, key, &old) == PX_SUCCESS) {
        px_registry_p2p_entry_t *o = old;
        if (how == PX_REGISTRY_PUT_CREATE && (o->len != len || memcmp(o->value, value, len) != 0))
            rc = PX_ERR_EXISTS;
    } else
        old = NULL;
    if (rc == PX_SUCCESS) {
        rc = px_hash_table_set_value_str(&t->entries, key, e);
        if (rc == PX_SUCCESS) {
            free(old);
            e = NULL;
        }
    }
    pthread_mutex_unlock(&t->lock);
    free(e);
    return rc;
}

/* ---- keys ---- */

typedef struct {
    bool remote;
    char local[PX_REGISTRY_KEY_MAX + 2]; /* local: the table's key "<ns>/<name>" */
    uint32_t addr;                       /* remote: the owner */
    int port;
    char contact[32];
    const char *ns, *name; /* remote: namespace and the name at the owner */
    size_t ns_len, name_len;
    size_t qual_len; /* bytes of "<ns>/a.b.c.d:port/" in the key given (0: none) */
} p2p_key_t;

/* Read key (or a list prefix); PX_ERR_BAD_PARAM with a message when it names
 * an address that is not one. */
static int split_key(px_registry_p2p_module_t *m, const char *key, bool prefix, p2p_key_t *k)
{
    memset(k, 0, sizeof *k);
    const char *ns = px_registry_base_namespace();
    size_t nsl = strlen(ns), kl = strlen(key);
    if (kl > PX_REGISTRY_KEY_MAX) {
        px_show_error("registry/p2p: key \"%.64s...\" of %zu bytes: at most %d accepted", key, kl,
                      PX_REGISTRY_KEY_MAX);
        return PX_ERR_BAD_PARAM;
    }
    snprintf(k->local, sizeof k->local, "%s", key);
    if (kl <= nsl || strncmp(key, ns, nsl) != 0 || key[nsl] != '/')
        return PX_SUCCESS; /* not under the namespace: a local key as it is */
    const char *rest = key + nsl + 1;
    const char *slash = strchr(rest, '/');
    if (!slash && !prefix)
        return PX_SUCCESS; /* "<ns>/name": one part, a local name */
    size_t fl = slash ? (size_t)(slash - rest) : strlen(rest);
    char why[200];
    int hp = px_registry_p2p_parse_hostport(rest, fl, &k->addr, &k->port, why, sizeof why);
    if (hp < 0) {
        px_show_error("registry/p2p: key \"%s\": %s", key, why);
        return PX_ERR_BAD_PARAM;
    }
    if (hp == 0)
        return PX_SUCCESS;
    if (!slash && prefix) {
        /* "<ns>/a.b.c.d:port": every name of that owner */
        slash = rest + fl;
    }
    const char *name = *slash ? slash + 1 : slash;
    k->qual_len = (size_t)(name - key);
    if (m->listener && k->addr == m->contact_addr && k->port == m->contact_port) {
        /* this process's own address: a local name */
        snprintf(k->local, sizeof k->local, "%s/%s", ns, name);
        return PX_SUCCESS;
    }
    k->remote = true;
    snprintf(k->contact, sizeof k->contact, "%.*s", (int)fl, rest);
    k->ns = ns;
    k->ns_len = nsl;
    k->name = name;
    k->name_len = strlen(name);
    return PX_SUCCESS;
}

/* ---- the listener, started by the first put or qualify ---- */

static char *var_string(const char *name)
{
    int idx = px_mca_var_find(name);
    return idx >= 0 ? px_mca_var_value_string(idx) : NULL;
}

static int ensure_listener(px_registry_p2p_module_t *m)
{
    if (m->listener)
        return PX_SUCCESS;
    const px_registry_p2p_vars_t *v = &px_registry_p2p_vars;
    /* registry_p2p_address empty: the peer listener's address (peer_listen_address) */
    char *peer_addr = NULL, *peer_contact = NULL;
    const char *addr = v->address, *contact = v->contact_address;
    if (!addr || !*addr) {
        peer_addr = var_string("peer_listen_address");
        addr = peer_addr && *peer_addr ? peer_addr : "127.0.0.1";
        if (!contact || !*contact) {
            peer_contact = var_string("peer_contact_address");
            contact = peer_contact;
        }
    }
    if (!contact || !*contact)
        contact = addr;
    char why[512];
    int rc = PX_SUCCESS;
    struct in_addr ca;
    if (inet_pton(AF_INET, contact, &ca) != 1 || ca.s_addr == htonl(INADDR_ANY)) {
        px_show_error("registry/p2p: others would reach this process's listener at \"%s\", which "
                      "is not a numeric IPv4 address of this host; set "
                      "registry_p2p_contact_address (or registry_p2p_address) to one",
                      contact);
        rc = PX_ERR_BAD_PARAM;
        goto out;
    }
    px_registry_p2p_listen_opts_t o = {.address = addr,
                                       .port = v->port,
                                       .ns = px_registry_base_namespace(),
                                       .max_clients = v->max_clients,
                                       .timeout = px_registry_base_timeout(),
                                       .list_max = v->list_max,
                                       .output = px_registry_p2p_output()};
    int port = 0;
    rc = px_registry_p2p_listen(&m->table, &o, &m->listener, &port, why, sizeof why);
    if (rc != PX_SUCCESS) {
        px_show_error("registry/p2p: %s; this process's names cannot be looked up", why);
        goto out;
    }
    m->contact_addr = ca.s_addr;
    m->contact_port = port;
    snprintf(m->contact, sizeof m->contact, "%s:%d", contact, port);
    PX_OUTPUT_VERBOSE(2, px_registry_p2p_output(), "listening on %s:%d, names qualified as %s/NAME",
                      addr, port, m->contact);
out:
    free(peer_addr);
    free(peer_contact);
    return rc;
}

/* ---- the operations ---- */

static int p2p_put(px_registry_module_t *mod, const char *key, const void *value, size_t len,
                   int how)
{
    px_registry_p2p_module_t *m = (px_registry_p2p_module_t *)mod;
    if (len > PX_REGISTRY_VALUE_MAX) {
        px_show_error("registry/p2p: value of %zu bytes for \"%s\": at most %d accepted", len, key,
                      PX_REGISTRY_VALUE_MAX);
        return PX_ERR_BAD_PARAM;
    }
    int rc = ensure_listener(m);
    if (rc != PX_SUCCESS)
        return rc;
    p2p_key_t k;
    if ((rc = split_key(m, key, false, &k)) != PX_SUCCESS)
        return rc;
    if (k.remote) {
        px_show_error("registry/p2p: cannot put \"%s\": it names the process at %s, and only "
                      "an owner publishes its names (this process is %s)",
                      key, k.contact, m->contact);
        return PX_ERR_BAD_PARAM;
    }
    return px_registry_p2p_table_put(&m->table, k.local, value, len, how);
}

/* An error answer's message, for the caller's message. */
static const char *answer_message(const uint8_t *body)
{
    return body && *body ? (const char *)body : "(no message)";
}

static int p2p_get(px_registry_module_t *mod, const char *key, void **value, size_t *len)
{
    px_registry_p2p_module_t *m = (px_registry_p2p_module_t *)mod;
    p2p_key_t k;
    int rc = split_key(m, key, false, &k);
    if (rc != PX_SUCCESS)
        return rc;
    if (!k.remote)
        return px_registry_p2p_table_get(&m->table, k.local, strlen(k.local), value, len);
    if (k.name_len == 0) {
        px_show_error("registry/p2p: \"%s\" names no name after %s/", key, k.contact);
        return PX_ERR_BAD_PARAM;
    }
    px_registry_p2p_answer_t a;
    uint8_t *body = NULL;
    char why[512];
    double timeout = px_registry_base_timeout();
    rc = px_registry_p2p_ask(k.addr, k.port, k.contact, PX_REGISTRY_P2P_GET, k.ns, k.ns_len, k.name,
                             k.name_len, timeout, px_registry_p2p_vars.list_max, &a, &body, why,
                             sizeof why);
    if (rc != PX_SUCCESS) {
        px_show_error("registry/p2p: looking up \"%s\": %s", key, why);
        return rc;
    }
    switch (a.status) {
    case PX_REGISTRY_P2P_OK:
        *value = body;
        *len = a.body_len;
        return PX_SUCCESS;
    case PX_REGISTRY_P2P_NOT_FOUND:
        PX_OUTPUT_VERBOSE(2, px_registry_p2p_output(), "the owner at %s has no name \"%s\": %s",
                          k.contact, k.name, answer_message(body));
        rc = PX_ERR_NOT_FOUND;
        break;
    case PX_REGISTRY_P2P_NAMESPACE:
        px_show_error("registry/p2p: looking up \"%s\": the owner at %s answered: %s", key,
                      k.contact, answer_message(body));
        rc = PX_ERR_NOT_FOUND;
        break;
    default:
        px_show_error("registry/p2p: looking up \"%s\": the owner at %s refused the request: %s",
                      key, k.contact, answer_message(body));
        rc = PX_ERR_BAD_PARAM;
        break;
    }
    free(body);
    return rc;
}

static int p2p_del(px_registry_module_t *mod, const char *key, const void *value, size_t len)
{
    px_registry_p2p_module_t *m = (px_registry_p2p_module_t *)mod;
    p2p_key_t k;
    int rc = split_key(m, key, false, &k);
    if (rc != PX_SUCCESS)
        return rc;
    if (k.remote) {
        px_show_error("registry/p2p: cannot remove \"%s\": it is the process at %s's, and only "
                      "an owner removes its names",
                      key, k.contact);
        return PX_ERR_BAD_PARAM;
    }
    px_registry_p2p_table_t *t = &m->table;
    pthread_mutex_lock(&t->lock);
    void *v = NULL;
    rc = px_hash_table_get_value_str(&t->entries, k.local, &v);
    if (rc != PX_SUCCESS)
        rc = PX_ERR_NOT_FOUND;
    else {
        px_registry_p2p_entry_t *e = v;
        if (value && (e->len != len || memcmp(e->value, value, len) != 0))
            rc = PX_ERR_EXISTS;
        else {
            px_hash_table_remove_value_str(&t->entries, k.local);
            free(e);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

typedef struct {
    char *key;
    px_registry_p2p_entry_t *e;
} listed_t;

static int list_local(px_registry_p2p_module_t *m, const char *match, size_t qual_len,
                      const char *given, px_registry_list_fn_t fn, void *arg)
{
    /* copy the matches under the lock, call back without it */
    px_registry_p2p_table_t *t = &m->table;
    size_t n = 0, cap = 0, ml = strlen(match);
    listed_t *l = NULL;
    int rc = PX_SUCCESS;
    const char *ns = px_registry_base_namespace();
    size_t nsl = strlen(ns);
    pthread_mutex_lock(&t->lock);
    px_hash_table_iter_t it = PX_HASH_TABLE_ITER_INIT;
    while (px_hash_table_next(&t->entries, &it)) {
        if (!it.key_str || strncmp(it.key_str, match, ml) != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            listed_t *nl = realloc(l, cap * sizeof *l);
            if (!nl) {
                rc = PX_ERR_OUT_OF_RESOURCE;
                break;
            }
            l = nl;
        }
        px_registry_p2p_entry_t *e = it.value;
        listed_t *x = &l[n];
        /* asked as "<ns>/a.b.c.d:port/...": keys come back the same way */
        x->key = qual_len ? px_asprintf("%.*s%s", (int)qual_len, given, it.key_str + nsl + 1)
                          : strdup(it.key_str);
        x->e = malloc(sizeof *e + e->len + 1);
        if (!x->key || !x->e) {
            free(x->key);
            free(x->e);
            rc = PX_ERR_OUT_OF_RESOURCE;
            break;
        }
        memcpy(x->e, e, sizeof *e + e->len + 1);
        ++n;
    }
    pthread_mutex_unlock(&t->lock);
    for (size_t i = 0; i < n; ++i) {
        if (rc == PX_SUCCESS)
            rc = fn(l[i].key, l[i].e->value, l[i].e->len, arg);
        free(l[i].key);
        free(l[i].e);
    }
    free(l);
    return rc;
}

static int p2p_list(px_registry_module_t *mod, const char *prefix, px_registry_list_fn_t fn,
                    void *arg)
{
    px_registry_p2p_module_t *m = (px_registry_p2p_module_t *)mod;
    p2p_key_t k;
    int rc = split_key(m, prefix, true, &k);
    if (rc != PX_SUCCESS)
        return rc;
    if (!k.remote)
        return list_local(m, k.local, k.qual_len, prefix, fn, arg);
    px_registry_p2p_answer_t a;
    uint8_t *body = NULL;
    char why[512];
    rc = px_registry_p2p_ask(k.addr, k.port, k.contact, PX_REGISTRY_P2P_LIST, k.ns, k.ns_len,
                             k.name, k.name_len, px_registry_base_timeout(),
                             px_registry_p2p_vars.list_max, &a, &body, why, sizeof why);
    if (rc != PX_SUCCESS) {
        px_show_error("registry/p2p: listing \"%s\": %s", prefix, why);
        return rc;
    }
    if (a.status != PX_REGISTRY_P2P_OK) {
        px_show_error("registry/p2p: listing \"%s\": the owner at %s answered: %s", prefix,
                      k.contact, answer_message(body));
        free(body);
        return a.status == PX_REGISTRY_P2P_BAD_REQUEST ? PX_ERR_BAD_PARAM : PX_ERR_NOT_FOUND;
    }
    if (a.flags & PX_REGISTRY_P2P_TRUNCATED)
        px_show_warning("registry/p2p: the owner at %s left names out of its listing of \"%s\": "
                        "more than its registry_p2p_list_max bytes",
                        k.contact, prefix);
    const uint8_t *p = body, *end = body + a.body_len;
    for (;;) {
        const char *name;
        const uint8_t *value;
        size_t nl, vl;
        int r = px_registry_p2p_list_next(&p, end, &name, &nl, &value, &vl, why, sizeof why);
        if (r == 0)
            break;
        if (r < 0) {
            px_show_error("registry/p2p: listing \"%s\": the owner at %s sent a malformed "
                          "listing: %s",
                          prefix, k.contact, why);
            rc = PX_ERR_BAD_PARAM;
            break;
        }
        if (nl < k.name_len || memcmp(name, k.name, k.name_len) != 0)
            continue; /* not asked for: ignored */
        char *full = px_asprintf("%.*s%.*s", (int)k.qual_len, prefix, (int)nl, name);
        void *copy = malloc(vl + 1);
        if (!full || !copy) {
            free(full);
            free(copy);
            rc = PX_ERR_OUT_OF_RESOURCE;
            break;
        }
        if (vl)
            memcpy(copy, value, vl);
        ((char *)copy)[vl] = 0;
        rc = fn(full, copy, vl, arg);
        free(full);
        free(copy);
        if (rc != PX_SUCCESS)
            break;
    }
    free(body);
    return rc;
}

static int p2p_qualify(px_registry_module_t *mod, const char *name, char *buf, size_t cap)
{
    px_registry_p2p_module_t *m = (px_registry_p2p_module_t *)mod;
    int rc = ensure_listener(m);
    if (rc != PX_SUCCESS)
        return rc;
    int n = snprintf(buf, cap, "%s/%s", m->contact, name);
    if (n < 0 || (size_t)n >= cap) {
        px_show_error("registry/p2p: \"%s/%s\" does not fit in %zu bytes", m->contact, name, cap);
        return PX_ERR_BAD_PARAM;
    }
    return PX_SUCCESS;
}

static void p2p_close(px_registry_module_t *mod)
{
    px_registry_p2p_module_t *m = (px_registry_p2p_module_t *)mod;
    px_registry_p2p_listen_stop(m->listener);
    m->listener = NULL;
    if (m->table_ready)
        px_registry_p2p_table_fini(&m->table);
    m->table_ready = false;
}

int px_registry_p2p_module_get(px_registry_module_t **module, char *why, size_t cap)
{
    px_registry_p2p_module_t *m = &p2p_module;
    if (!m->table_ready) {
        memset(m, 0, sizeof *m);
        if (px_registry_p2p_table_init(&m->table) != PX_SUCCESS) {
            snprintf(why, cap, "no memory for its table");
            return PX_ERR_OUT_OF_RESOURCE;
        }
        m->table_ready = true;
        m->super = (px_registry_module_t){.name = "p2p",
                                          .put = p2p_put,
                                          .get = p2p_get,
                                          .del = p2p_del,
                                          .list = p2p_list,
                                          .heartbeat = NULL,
                                          .qualify = p2p_qualify,
                                          .close = p2p_close};
    }
    *module = &m->super;
    return PX_SUCCESS;
}
