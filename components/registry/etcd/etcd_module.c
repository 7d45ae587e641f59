/*
 * etcd_module.c: registry/etcd's calls on the store, each one or a few
 * POSTs to the gateway (/v3/kv/..., /v3/lease/...) with libcurl, bounded
 * together by registry_timeout.
 *
 * One lease per process, granted with TTL registry_lease; every put carries
 * it, heartbeat() renews it (keepalive) and grants a new one when etcd says
 * it is gone (an etcd restarted empty, a lease that expired while the
 * process stalled, or another cluster after a fail-over): the base then puts
 * every entry again. PX_REGISTRY_PUT_CREATE is one transaction: "absent
 * (create_revision 0): put; else (a nested transaction) value ours: put
 * again with our lease; else nothing", so the check and the put are atomic.
 *
 * Endpoints are tried in order, starting from the one that answered last:
 * while more than one is left to try, an attempt gets an equal share of what
 * is left of the call's bound, so a stopped endpoint leaves time for the
 * next; when all failed quickly (refused, or a member without a leader) they
 * are tried again after 50 ms while the bound allows. Switching is said once (a warning naming
 * both); every error names the endpoint and etcd's own message.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include "components/registry/etcd/etcd.h"
#include "components/registry/etcd/etcd_wire.h"
#include "core/util/error.h"
#include "core/util/output.h"

/* Keys per page of a listing (at most 64 KiB values: under the answer cap). */
#define ETCD_PAGE 32

typedef struct etcd_module {
    px_registry_module_t super;
    CURL *curl;
    struct curl_slist *headers;
    char **ep;
    int n_ep;
    int cur;         /* the endpoint that answered last */
    long long lease; /* 0: none */
    long long ttl;   /* what etcd granted */
    double deadline; /* of the call in progress (monotonic seconds) */
    char *buf;       /* the answer being received */
    size_t len, cap;
    bool too_big;
    char last_error[512]; /* the last error printed, not printed again in a row */
    char why[512];        /* the error of the call in progress */
    char curl_err[CURL_ERROR_SIZE];
} etcd_module_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The error of this call: printed unless it is the one printed last. */
static int etcd_error(etcd_module_t *m, int rc, const char *fmt, ...) PX_PRINTF(3, 4);
static int etcd_error(etcd_module_t *m, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
    if (strcmp(m->why, m->last_error)) {
        px_show_error("registry/etcd: %s", m->why);
        snprintf(m->last_error, sizeof m->last_error, "%s", m->why);
    }
    return rc;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    etcd_module_t *m = arg;
    size_t add = size * n;
    if (m->len + add > PX_REGISTRY_ETCD_ANSWER_MAX) {
        m->too_big = true;
        return 0; /* stops the transfer */
    }
    if (m->len + add + 1 > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < m->len + add + 1)
            cap *= 2;
        char *b = realloc(m->buf, cap);
        if (NULL == b)
            return 0;
        m->buf = b;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, p, add);
    m->len += add;
    m->buf[m->len] = '\0';
    return add;
}

static void begin(etcd_module_t *m)
{
    m->deadline = now() + px_registry_base_timeout();
    m->why[0] = '\0';
}

/* gRPC codes that mean "this member cannot serve now": try the next one. */
static bool member_unavailable(const px_registry_etcd_answer_t *a, long http)
{
    return (a->is_error && (14 == a->code || 4 == a->code)) || 502 == http || 503 == http ||
           504 == http;
}

/* Append "endpoint: why; " to tried[0..cap) at tl; the new length. */
static size_t add_tried(char *tried, size_t cap, size_t tl, const char *ep, const char *why)
{
    if (tl + 1 < cap)
        snprintf(tried + tl, cap - tl, "%s: %s; ", ep, why);
    return strlen(tried);
}

/* POST body to path on the endpoints, parse the answer as `kind` into *a.
 * PX_SUCCESS (an error answer too: a->is_error, a->message), or
 * PX_ERR_TIMEOUT / PX_ERR_NOT_AVAILABLE when no endpoint answered, or
 * PX_ERR_BAD_PARAM when the answer was not etcd's. `what` names the call. */
static int etcd_call(etcd_module_t *m, int kind, const char *path, const char *body,
                     px_registry_etcd_answer_t *a, const char *what)
{
    char tried[400] = "";
    size_t tl = 0;
    int rc = PX_ERR_NOT_AVAILABLE, start = m->cur;
    memset(a, 0, sizeof *a);
    for (int t = 0;; t++) {
        int i = (start + t) % m->n_ep;
        double left = m->deadline - now();
        if (t > 0 && 0 == t % m->n_ep) {
            /* every endpoint failed: a member electing a leader, or one
             * restarting, may answer soon; again after a pause, in time */
            if (left < 0.1)
                break;
            struct timespec pause = {0, 50 * 1000 * 1000};
            nanosleep(&pause, NULL);
            tl = 0;
            tried[0] = '\0';
            left = m->deadline - now();
        }
        if (left <= 0.001) {
            rc = PX_ERR_TIMEOUT;
            if (0 == t)
                tl = add_tried(tried, sizeof tried, tl, m->ep[i], "no time left");
            break;
        }
        long ms = (long)ceil(left / (m->n_ep - t % m->n_ep) * 1000.0);
        char url[600];
        snprintf(url, sizeof url, "%s%s", m->ep[i], path);
        m->len = 0;
        m->too_big = false;
        m->curl_err[0] = '\0';
        curl_easy_setopt(m->curl, CURLOPT_URL, url);
        curl_easy_setopt(m->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(m->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        curl_easy_setopt(m->curl, CURLOPT_TIMEOUT_MS, ms);
        curl_easy_setopt(m->curl, CURLOPT_CONNECTTIMEOUT_MS, ms);
        CURLcode cc = curl_easy_perform(m->curl);
        long http = 0;
        curl_easy_getinfo(m->curl, CURLINFO_RESPONSE_CODE, &http);
        if (m->too_big) {
            return etcd_error(m, PX_ERR_BAD_PARAM,
                              "%s: %s: the answer is larger than %u bytes: not accepted", m->ep[i],
                              what, PX_REGISTRY_ETCD_ANSWER_MAX);
        }
        if (CURLE_OK != cc) {
            rc = CURLE_OPERATION_TIMEDOUT == cc ? PX_ERR_TIMEOUT : PX_ERR_NOT_AVAILABLE;
            tl = add_tried(tried, sizeof tried, tl, m->ep[i],
                           m->curl_err[0] ? m->curl_err : curl_easy_strerror(cc));
            continue;
        }
        char why[256];
        px_registry_etcd_answer_free(a);
        if (PX_SUCCESS !=
            px_registry_etcd_parse(kind, m->buf ? m->buf : "", m->len, a, why, sizeof why)) {
            px_registry_etcd_answer_free(a);
            return etcd_error(m, PX_ERR_BAD_PARAM,
                              "%s: %s: not an etcd v3 gateway answer (HTTP %ld): %s", m->ep[i],
                              what, http, why);
        }
        if (!a->is_error && (http < 200 || http > 299)) {
            px_registry_etcd_answer_free(a);
            return etcd_error(m, PX_ERR_BAD_PARAM, "%s: %s: HTTP status %ld without an error",
                              m->ep[i], what, http);
        }
        if (member_unavailable(a, http)) {
            rc = PX_ERR_NOT_AVAILABLE;
            tl = add_tried(tried, sizeof tried, tl, m->ep[i],
                           a->is_error ? a->message : "unavailable");
            px_registry_etcd_answer_free(a);
            continue;
        }
        if (i != m->cur) {
            px_show_warning("registry/etcd: %s failed (%.*s): using %s from now on", m->ep[m->cur],
                            tl > 2 ? (int)(tl - 2) : 0, tried, m->ep[i]);
            m->cur = i;
        }
        return PX_SUCCESS;
    }
    if (tl >= 2)
        tried[tl - 2] = '\0';
    return etcd_error(m, rc, "%s: %s within registry_timeout (%.3g s): %s",
                      PX_ERR_TIMEOUT == rc ? "no endpoint answered" : "no endpoint reachable", what,
                      px_registry_base_timeout(), tried);
}

/* An error answer as a code, printed with etcd's message. */
static int answer_error(etcd_module_t *m, const px_registry_etcd_answer_t *a, const char *what)
{
    int rc;
    switch (a->code) {
    case 3:  /* invalid argument */
    case 11: /* out of range */
        rc = PX_ERR_BAD_PARAM;
        break;
    case 4:
        rc = PX_ERR_TIMEOUT;
        break;
    case 5:
        rc = PX_ERR_NOT_FOUND;
        break;
    default:
        rc = PX_ERR_NOT_AVAILABLE;
    }
    return etcd_error(m, rc, "%s: %s: etcd said: %s (code %d)", m->ep[m->cur], what, a->message,
                      a->code);
}

static void lease_lost_warn(const etcd_module_t *m)
{
    px_show_warning("registry/etcd: %s: lease %lld is gone (etcd restarted empty, the lease "
                    "expired while this process did not renew it, or another cluster): "
                    "granting a new one; the entries are put again",
                    m->ep[m->cur], m->lease);
}

static bool lease_gone(const px_registry_etcd_answer_t *a)
{
    return a->is_error && NULL != strstr(a->message, "lease not found");
}

static int grant(etcd_module_t *m)
{
    px_registry_etcd_answer_t a;
    char body[64];
    long long want = (long long)ceil(px_registry_base_lease());
    if (want < 1)
        want = 1;
    snprintf(body, sizeof body, "{\"TTL\":\"%lld\"}", want);
    int rc = etcd_call(m, PX_REGISTRY_ETCD_GRANT, "/v3/lease/grant", body, &a, "lease grant");
    if (PX_SUCCESS == rc && a.is_error)
        rc = answer_error(m, &a, "lease grant");
    if (PX_SUCCESS == rc) {
        if (a.ttl != want && m->ttl != a.ttl)
            px_show_warning("registry/etcd: %s granted a lease of %lld s for the %lld s asked "
                            "(registry_lease): etcd's own minimum",
                            m->ep[m->cur], (long long)a.ttl, want);
        m->lease = a.lease_id;
        m->ttl = a.ttl;
    }
    px_registry_etcd_answer_free(&a);
    return rc;
}

/* The key and value as base64 (malloc'd). */
static char *b64(const void *p, size_t n)
{
    char *s = malloc(px_registry_etcd_b64_len(n) + 1);
    if (s)
        px_registry_etcd_b64_encode(p, n, s);
    return s;
}

static int etcd_put(px_registry_module_t *base, const char *key, const void *value, size_t len,
                    int how)
{
    etcd_module_t *m = (etcd_module_t *)base;
    char what[PX_REGISTRY_KEY_MAX + 64];
    snprintf(what, sizeof what, "put of \"%s\"", key);
    begin(m);
    if (PX_REGISTRY_PUT_ANY != how && PX_REGISTRY_PUT_CREATE != how)
        return etcd_error(m, PX_ERR_BAD_PARAM, "%s: unknown put mode %d", what, how);
    char *k = b64(key, strlen(key)), *v = b64(value, len), *body = NULL;
    int rc = PX_ERR_OUT_OF_RESOURCE;
    if (NULL == k || NULL == v)
        goto out;
    /* the create transaction names the key 4 times, the value 3 times */
    size_t cap = 4 * (strlen(k) + strlen(v)) + 1024;
    body = malloc(cap);
    if (NULL == body)
        goto out;
    rc = m->lease ? PX_SUCCESS : grant(m);
    for (int attempt = 0; PX_SUCCESS == rc && attempt < 2; attempt++) {
        px_registry_etcd_answer_t a;
        char put[96];
        snprintf(put, sizeof put, "\"lease\":\"%lld\"", m->lease);
        if (PX_REGISTRY_PUT_ANY == how) {
            snprintf(body, cap, "{\"key\":\"%s\",\"value\":\"%s\",%s}", k, v, put);
            rc = etcd_call(m, PX_REGISTRY_ETCD_PUT, "/v3/kv/put", body, &a, what);
        } else {
            sprintf(
                body,
                "{\"compare\":[{\"target\":\"CREATE\",\"key\":\"%s\",\"create_revision\":\"0\"}],"
                "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",%s}}],"
                "\"failure\":[{\"request_txn\":{"
                "\"compare\":[{\"target\":\"VALUE\",\"key\":\"%s\",\"value\":\"%s\"}],"
                "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",%s}}]}}]}",
                k, k, v, put, k, v, k, v, put);
            rc = etcd_call(m, PX_REGISTRY_ETCD_TXN, "/v3/kv/txn", body, &a, what);
        }
        if (PX_SUCCESS == rc && lease_gone(&a) && 0 == attempt) {
            /* a cluster that lost the lease (restarted empty, or another one
             * after a fail-over): a new lease, and put again; said as the
             * heartbeat says it, whichever of the two finds it first */
            px_registry_etcd_answer_free(&a);
            lease_lost_warn(m);
            m->lease = 0;
            rc = grant(m);
            continue;
        }
        if (PX_SUCCESS == rc && a.is_error)
            rc = answer_error(m, &a, what);
        else if (PX_SUCCESS == rc && PX_REGISTRY_PUT_CREATE == how && !a.succeeded && 1 != a.inner)
            rc = PX_ERR_EXISTS; /* another value: someone else's */
        px_registry_etcd_answer_free(&a);
        break;
    }
out:
    free(k);
    free(v);
    free(body);
    return rc;
}

/* A pair of a range answer checked against the key asked for. */
static int check_kv(etcd_module_t *m, const px_registry_etcd_kv_t *kv, const char *what)
{
    char shown[128];
    if (NULL == kv->error)
        return PX_SUCCESS;
    px_registry_etcd_printable(kv->key, kv->key_len, shown, sizeof shown);
    return etcd_error(m, PX_ERR_BAD_PARAM, "%s: %s: the entry \"%s\" is not usable: %s",
                      m->ep[m->cur], what, shown, kv->error);
}

static int etcd_get(px_registry_module_t *base, const char *key, void **value, size_t *len)
{
    etcd_module_t *m = (etcd_module_t *)base;
    char what[PX_REGISTRY_KEY_MAX + 64], body[PX_REGISTRY_KEY_MAX * 2 + 64];
    snprintf(what, sizeof what, "get of \"%s\"", key);
    *value = NULL;
    *len = 0;
    begin(m);
    size_t kl = strlen(key);
    if (kl > PX_REGISTRY_KEY_MAX)
        return etcd_error(m, PX_ERR_BAD_PARAM, "%s: a key longer than %d bytes", what,
                          PX_REGISTRY_KEY_MAX);
    char k[PX_REGISTRY_KEY_MAX * 2];
    px_registry_etcd_b64_encode(key, kl, k);
    snprintf(body, sizeof body, "{\"key\":\"%s\"}", k);
    px_registry_etcd_answer_t a;
    int rc = etcd_call(m, PX_REGISTRY_ETCD_RANGE, "/v3/kv/range", body, &a, what);
    if (PX_SUCCESS != rc)
        return rc;
    if (a.is_error)
        rc = answer_error(m, &a, what);
    else if (0 == a.n_kvs)
        rc = PX_ERR_NOT_FOUND;
    else if (1 != a.n_kvs || a.kvs[0].key_len != kl || memcmp(a.kvs[0].key, key, kl))
        rc = etcd_error(m, PX_ERR_BAD_PARAM,
                        "%s: %s: the answer holds %zu entries, not the key asked for",
                        m->ep[m->cur], what, a.n_kvs);
    else if (PX_SUCCESS == (rc = check_kv(m, &a.kvs[0], what))) {
        *value = a.kvs[0].value;
        *len = a.kvs[0].value_len;
        a.kvs[0].value = NULL;
    }
    px_registry_etcd_answer_free(&a);
    return rc;
}

static int etcd_del(px_registry_module_t *base, const char *key, const void *value, size_t len)
{
    etcd_module_t *m = (etcd_module_t *)base;
    char what[PX_REGISTRY_KEY_MAX + 64];
    snprintf(what, sizeof what, "delete of \"%s\"", key);
    begin(m);
    char *k = b64(key, strlen(key)), *v = value ? b64(value, len) : NULL, *body = NULL;
    int rc = PX_ERR_OUT_OF_RESOURCE;
    if (NULL == k || (value && NULL == v))
        goto out;
    /* the delete transaction names the key 3 times, the value once */
    size_t cap = 4 * (strlen(k) + (v ? strlen(v) : 0)) + 512;
    body = malloc(cap);
    if (NULL == body)
        goto out;
    px_registry_etcd_answer_t a;
    if (NULL == value) {
        snprintf(body, cap, "{\"key\":\"%s\"}", k);
        rc = etcd_call(m, PX_REGISTRY_ETCD_DELETE, "/v3/kv/deleterange", body, &a, what);
    } else {
        snprintf(body, cap,
                 "{\"compare\":[{\"target\":\"VALUE\",\"key\":\"%s\",\"value\":\"%s\"}],"
                 "\"success\":[{\"request_delete_range\":{\"key\":\"%s\"}}],"
                 "\"failure\":[{\"request_range\":{\"key\":\"%s\",\"keys_only\":true}}]}",
                 k, v, k, k);
        rc = etcd_call(m, PX_REGISTRY_ETCD_TXN, "/v3/kv/txn", body, &a, what);
    }
    if (PX_SUCCESS != rc)
        goto out;
    if (a.is_error)
        rc = answer_error(m, &a, what);
    else if (value && !a.succeeded)
        rc = a.n_kvs ? PX_ERR_EXISTS : PX_ERR_NOT_FOUND;
    else if (a.deleted <= 0)
        rc = PX_ERR_NOT_FOUND;
    px_registry_etcd_answer_free(&a);
out:
    free(k);
    free(v);
    free(body);
    return rc;
}

static int etcd_list(px_registry_module_t *base, const char *prefix, px_registry_list_fn_t fn,
                     void *arg)
{
    etcd_module_t *m = (etcd_module_t *)base;
    char what[PX_REGISTRY_KEY_MAX + 64];
    snprintf(what, sizeof what, "listing of \"%s*\"", prefix);
    begin(m);
    size_t pl = strlen(prefix);
    if (pl > PX_REGISTRY_KEY_MAX)
        return etcd_error(m, PX_ERR_BAD_PARAM, "%s: a prefix longer than %d bytes", what,
                          PX_REGISTRY_KEY_MAX);
    /* end: the end of the prefix's range ("\0": every key, for prefix "");
     * from: the first key of a page, the last key seen and a NUL after it */
    unsigned char end[PX_REGISTRY_KEY_MAX + 1];
    size_t el = pl ? px_registry_etcd_range_end(prefix, pl, end) : 1;
    if (0 == pl)
        end[0] = 0;
    char eb[(PX_REGISTRY_KEY_MAX + 1) * 2];
    px_registry_etcd_b64_encode(end, el, eb);
    unsigned char *from = (unsigned char *)strdup(prefix);
    size_t fl = pl;
    char *body = NULL;
    long long rev = 0;
    int limit = ETCD_PAGE, rc = PX_SUCCESS;
    while (PX_SUCCESS == rc) {
        char *kb = from ? b64(from, fl) : NULL;
        free(body);
        body = kb ? malloc(strlen(kb) + strlen(eb) + 200) : NULL;
        if (NULL == body) {
            free(kb);
            rc = PX_ERR_OUT_OF_RESOURCE;
            break;
        }
        sprintf(body,
                "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\",\"revision\":\"%lld\"}", kb,
                eb, limit, rev);
        free(kb);
        px_registry_etcd_answer_t a;
        rc = etcd_call(m, PX_REGISTRY_ETCD_RANGE, "/v3/kv/range", body, &a, what);
        if (PX_ERR_BAD_PARAM == rc && limit > 1 && strstr(m->why, "is larger than")) {
            limit = limit / 4 ? limit / 4 : 1; /* oversized values: smaller pages */
            rc = PX_SUCCESS;
            continue;
        }
        if (PX_SUCCESS != rc)
            break;
        if (a.is_error) {
            rc = answer_error(m, &a, what);
            px_registry_etcd_answer_free(&a);
            break;
        }
        if (0 == rev)
            rev = a.revision > 0 ? a.revision : 0;
        for (size_t i = 0; i < a.n_kvs && PX_SUCCESS == rc; i++) {
            px_registry_etcd_kv_t *kv = &a.kvs[i];
            char shown[128];
            px_registry_etcd_printable(kv->key, kv->key_len, shown, sizeof shown);
            if (kv->key_len < pl || memcmp(kv->key, prefix, pl))
                rc = etcd_error(m, PX_ERR_BAD_PARAM,
                                "%s: %s: the answer holds \"%s\", outside the prefix",
                                m->ep[m->cur], what, shown);
            else if (kv->error) /* someone else's entry: said, and left out */
                etcd_error(m, PX_SUCCESS, "%s: %s: the entry \"%s\" is left out: %s", m->ep[m->cur],
                           what, shown, kv->error);
            else
                rc = fn(kv->key, kv->value, kv->value_len, arg);
        }
        bool more = PX_SUCCESS == rc && a.more && a.n_kvs > 0;
        if (more) { /* the next page starts after the last key */
            px_registry_etcd_kv_t *kv = &a.kvs[a.n_kvs - 1];
            free(from);
            if (NULL != (from = malloc(kv->key_len + 1))) {
                memcpy(from, kv->key, kv->key_len);
                from[kv->key_len] = 0;
                fl = kv->key_len + 1;
            }
        }
        px_registry_etcd_answer_free(&a);
        if (!more)
            break;
        if (now() > m->deadline)
            rc = etcd_error(m, PX_ERR_TIMEOUT, "%s: %s: not done within registry_timeout (%.3g s)",
                            m->ep[m->cur], what, px_registry_base_timeout());
    }
    free(from);
    free(body);
    return rc;
}

static int etcd_heartbeat(px_registry_module_t *base)
{
    etcd_module_t *m = (etcd_module_t *)base;
    begin(m);
    if (0 == m->lease)
        return grant(m);
    char body[64];
    snprintf(body, sizeof body, "{\"ID\":\"%lld\"}", m->lease);
    px_registry_etcd_answer_t a;
    int rc = etcd_call(m, PX_REGISTRY_ETCD_KEEPALIVE, "/v3/lease/keepalive", body, &a,
                       "lease keepalive");
    if (PX_SUCCESS != rc)
        return rc;
    if ((a.is_error && lease_gone(&a)) || (!a.is_error && a.ttl <= 0)) {
        lease_lost_warn(m);
        m->lease = 0;
        rc = grant(m);
    } else if (a.is_error) {
        rc = answer_error(m, &a, "lease keepalive");
    } else {
        m->last_error[0] = '\0'; /* renewed: a later error is news */
    }
    px_registry_etcd_answer_free(&a);
    return rc;
}

static void etcd_close(px_registry_module_t *base)
{
    etcd_module_t *m = (etcd_module_t *)base;
    if (m->lease) {
        char body[64];
        px_registry_etcd_answer_t a;
        begin(m);
        snprintf(body, sizeof body, "{\"ID\":\"%lld\"}", m->lease);
        if (PX_SUCCESS ==
            etcd_call(m, PX_REGISTRY_ETCD_REVOKE, "/v3/lease/revoke", body, &a, "lease revoke"))
            px_registry_etcd_answer_free(&a);
    }
    curl_easy_cleanup(m->curl);
    curl_slist_free_all(m->headers);
    for (int i = 0; i < m->n_ep; i++)
        free(m->ep[i]);
    free(m->ep);
    free(m->buf);
    free(m);
}

long long px_registry_etcd_module_lease(px_registry_module_t *m)
{
    return ((etcd_module_t *)m)->lease;
}

/* Split and check the endpoint list. */
static int parse_endpoints(etcd_module_t *m, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    if (NULL == copy)
        return PX_ERR_OUT_OF_RESOURCE;
    int n = 1;
    for (const char *p = list; *p; p++)
        n += ',' == *p;
    m->ep = calloc((size_t)n, sizeof *m->ep);
    if (NULL == m->ep) {
        free(copy);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = PX_SUCCESS;
    for (char *t = strtok_r(copy, ",", &save); t && PX_SUCCESS == rc;
         t = strtok_r(NULL, ",", &save)) {
        while (' ' == *t)
            t++;
        size_t l = strlen(t);
        while (l && (' ' == t[l - 1] || '/' == t[l - 1]))
            t[--l] = '\0';
        const char *host = !strncmp(t, "http://", 7)    ? t + 7
                           : !strncmp(t, "https://", 8) ? t + 8
                                                        : NULL;
        bool ok = host && *host && l < 256 && !strchr(host, '/') && !strchr(host, '?') &&
                  !strchr(host, '@') && !strchr(host, '#');
        for (const char *c = t; ok && *c; c++)
            ok = *c > 0x20 && *c < 0x7f;
        if (!ok) {
            px_show_error("registry/etcd: registry_etcd_endpoints \"%s\": \"%s\" is not an "
                          "endpoint; accepted: http://host:port or https://host:port, several "
                          "separated by commas",
                          list, t);
            rc = PX_ERR_BAD_PARAM;
            break;
        }
        if (NULL == (m->ep[m->n_ep++] = strdup(t)))
            rc = PX_ERR_OUT_OF_RESOURCE;
    }
    if (PX_SUCCESS == rc && 0 == m->n_ep) {
        px_show_error("registry/etcd: registry_etcd_endpoints \"%s\" names no endpoint; "
                      "accepted: http://host:port[,http://host:port...]",
                      list);
        rc = PX_ERR_BAD_PARAM;
    }
    free(copy);
    return rc;
}

int px_registry_etcd_module_create(const char *endpoints, px_registry_module_t **module)
{
    etcd_module_t *m = calloc(1, sizeof *m);
    *module = NULL;
    if (NULL == m)
        return PX_ERR_OUT_OF_RESOURCE;
    m->super.name = "etcd";
    m->super.put = etcd_put;
    m->super.get = etcd_get;
    m->super.del = etcd_del;
    m->super.list = etcd_list;
    m->super.heartbeat = etcd_heartbeat;
    m->super.close = etcd_close;
    int rc = parse_endpoints(m, endpoints);
    if (PX_SUCCESS == rc &&
        (NULL == (m->curl = curl_easy_init()) ||
         NULL == (m->headers = curl_slist_append(NULL, "Content-Type: application/json"))))
        rc = PX_ERR_OUT_OF_RESOURCE;
    if (PX_SUCCESS != rc) {
        m->lease = 0;
        etcd_close(&m->super);
        return rc;
    }
    curl_easy_setopt(m->curl, CURLOPT_NOSIGNAL, 1L); /* timeouts without SIGALRM: threads */
    curl_easy_setopt(m->curl, CURLOPT_HTTPHEADER, m->headers);
    curl_easy_setopt(m->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(m->curl, CURLOPT_WRITEDATA, m);
    curl_easy_setopt(m->curl, CURLOPT_ERRORBUFFER, m->curl_err);
    curl_easy_setopt(m->curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(m->curl, CURLOPT_PROXY, ""); /* the endpoints themselves, no proxy */
    begin(m);
    rc = grant(m);
    if (PX_SUCCESS != rc) {
        etcd_close(&m->super);
        return rc;
    }
    *module = &m->super;
    return PX_SUCCESS;
}
