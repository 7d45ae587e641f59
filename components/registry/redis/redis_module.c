/*
 * redis_module.c: registry/redis module: one blocking hiredis connection to
 * the current endpoint, failover, and the four operations.
 *
 * Every call has a deadline registry_timeout seconds after it starts; the
 * connect (redisConnectWithTimeout) and every command (redisSetTimeout,
 * SO_RCVTIMEO/SO_SNDTIMEO) get what is left of it. A command that fails on
 * the connection (refused, reset, closed, timed out) or that the server
 * refuses for a passing reason (LOADING, READONLY, MASTERDOWN, BUSY) is
 * retried once on the next endpoint (the same one when only one is given: a
 * server restarted since the last call closed the old connection); with
 * several endpoints the first try gets half of the time, so a server that
 * stopped answering leaves time for the next one.
 *
 * Values are read by a small Lua script (FETCH) that checks each key's type
 * and length on the server, so a key someone made a hash or a value larger
 * than PX_REGISTRY_VALUE_MAX is refused without being transferred.
 * PX_REGISTRY_PUT_CREATE and del with a value are scripts too, so they are
 * atomic. Scripts run by EVALSHA (loaded at connect); a server whose script
 * cache was flushed gets EVAL.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "components/registry/redis/redis.h"
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"

/* ---- the scripts ---- */

enum { SCRIPT_FETCH = 0, SCRIPT_CREATE, SCRIPT_DEL, SCRIPT_COUNT };

/* KEYS: the keys; ARGV[1]: the largest value returned. Per key: its value
 * (a bulk string), nil (absent), an integer (a string longer than ARGV[1]:
 * its length) or an array holding the key's type (not a string). */
static const char script_fetch[] =
    "local r = {}\n"
    "local max = tonumber(ARGV[1])\n"
    "for i, k in ipairs(KEYS) do\n"
    "  local t = redis.call('TYPE', k)['ok']\n"
    "  if t == 'none' then r[i] = false\n"
    "  elseif t ~= 'string' then r[i] = {t}\n"
    "  else\n"
    "    local n = redis.call('STRLEN', k)\n"
    "    if n > max then r[i] = n else r[i] = redis.call('GET', k) end\n"
    "  end\n"
    "end\n"
    "return r\n";

/* KEYS[1]; ARGV[1]: the value, ARGV[2]: the lease in ms. 1: stored, 2: held
 * these bytes already (lease renewed), 0: holds other bytes, an array with
 * the type: not a string. */
static const char script_create[] = "local t = redis.call('TYPE', KEYS[1])['ok']\n"
                                    "if t == 'none' then\n"
                                    "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                                    "  return 1\n"
                                    "end\n"
                                    "if t ~= 'string' then return {t} end\n"
                                    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                    "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                    "  return 2\n"
                                    "end\n"
                                    "return 0\n";

/* KEYS[1]; ARGV[1]: the value. 1: removed, 0: absent, 2: holds other bytes,
 * an array with the type: not a string. */
static const char script_del[] = "local t = redis.call('TYPE', KEYS[1])['ok']\n"
                                 "if t == 'none' then return 0 end\n"
                                 "if t ~= 'string' then return {t} end\n"
                                 "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                 "  redis.call('DEL', KEYS[1])\n"
                                 "  return 1\n"
                                 "end\n"
                                 "return 2\n";

static const char *const scripts[SCRIPT_COUNT] = {script_fetch, script_create, script_del};

/* ---- the module ---- */

typedef struct px_registry_redis_module {
    px_registry_module_t super;
    px_registry_redis_endpoint_t *eps;
    int n_eps;
    int cur;             /* endpoint of c, or the next to try */
    int good;            /* endpoint of the last call that succeeded, -1: none yet */
    unsigned long conns; /* connections made: a SCAN cursor is only good on its own */
    redisContext *c;
    char *password;
    char sha[SCRIPT_COUNT][48];
    char failed[1024];   /* why the last endpoint(s) failed, for "took over" */
    char last_err[1024]; /* the last error printed: not repeated during an outage */
    char tried[256];     /* the endpoints the last failed call tried */
    bool outage;         /* a call failed on the connection since the last success */
} redis_module_t;

/* Longest lease or timeout in ms given to redis. */
#define MS_MAX 2000000000.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct timeval tv_of(double s)
{
    if (s < 0.001)
        s = 0.001;
    struct timeval tv;
    tv.tv_sec = (time_t)s;
    tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
    return tv;
}

static void disconnect(redis_module_t *m)
{
    if (m->c) {
        redisFree(m->c);
        m->c = NULL;
    }
}

/* Print an error once per outage: the same failure again (`same`: the
 * endpoints and the kind of failure; the heartbeat of a process whose store
 * is down) only at verbose level 1. */
static void report(redis_module_t *m, const char *same, const char *fmt, ...) PX_PRINTF(3, 4);
static void report(redis_module_t *m, const char *same, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (NULL == same)
        same = text;
    if (m->last_err[0] && strncmp(same, m->last_err, sizeof m->last_err - 1) == 0) {
        PX_OUTPUT_VERBOSE(1, px_registry_base_framework_get()->output, "%s", text);
        return;
    }
    size_t n = strlen(same);
    if (n >= sizeof m->last_err)
        n = sizeof m->last_err - 1;
    memcpy(m->last_err, same, n);
    m->last_err[n] = '\0';
    px_show_error("%s", text);
}

/* Whether a failed hiredis call on c timed out (rather than was refused or
 * closed). */
static bool timed_out(const redisContext *c, int saved_errno)
{
    if (EAGAIN == saved_errno || EWOULDBLOCK == saved_errno || ETIMEDOUT == saved_errno ||
        EINPROGRESS == saved_errno)
        return true;
    return c && (strstr(c->errstr, "timed out") || strstr(c->errstr, "temporarily unavailable"));
}

/* Whether an error reply is one another endpoint may not give. */
static bool passing_error(const redisReply *r)
{
    static const char *const passing[] = {"LOADING",  "READONLY",    "MASTERDOWN", "BUSY",
                                          "TRYAGAIN", "CLUSTERDOWN", NULL};
    for (int i = 0; passing[i]; i++) {
        size_t n = strlen(passing[i]);
        if (r->len >= n && 0 == strncmp(r->str, passing[i], n) && (r->len == n || ' ' == r->str[n]))
            return true;
    }
    return false;
}

/* A command on the open connection, bounded by `budget` seconds. NULL: the
 * connection failed (*rc TIMEOUT or NOT_AVAILABLE, why[] says what); else
 * the reply (an error reply included). */
static redisReply *command(redis_module_t *m, double budget, int argc, const char **argv,
                           const size_t *lens, int *rc, char *why, size_t why_len)
{
    redisSetTimeout(m->c, tv_of(budget));
    errno = 0;
    redisReply *r = redisCommandArgv(m->c, argc, argv, lens);
    int e = errno;
    if (r)
        return r;
    bool t = timed_out(m->c, e);
    *rc = t ? PX_ERR_TIMEOUT : PX_ERR_NOT_AVAILABLE;
    if (t)
        snprintf(why, why_len, "no answer (%s)", m->c->errstr[0] ? m->c->errstr : "timed out");
    else
        snprintf(why, why_len, "%s", m->c->errstr[0] ? m->c->errstr : "connection lost");
    disconnect(m);
    return NULL;
}

/* Connect to endpoint m->cur within `budget` seconds: AUTH, SELECT and
 * SCRIPT LOAD. */
static int connect_ep(redis_module_t *m, double budget, char *why, size_t why_len)
{
    const px_registry_redis_endpoint_t *ep = &m->eps[m->cur];
    double deadline = now_s() + budget;
    errno = 0;
    redisContext *c = redisConnectWithTimeout(ep->host, ep->port, tv_of(budget));
    int e = errno;
    if (NULL == c) {
        snprintf(why, why_len, "out of memory");
        return PX_ERR_OUT_OF_RESOURCE;
    }
    if (c->err) {
        bool t = timed_out(c, e);
        snprintf(why, why_len, "cannot connect: %s", c->errstr[0] ? c->errstr : "timeout");
        redisFree(c);
        return t ? PX_ERR_TIMEOUT : PX_ERR_NOT_AVAILABLE;
    }
    m->c = c;
    m->conns++;
    int rc = PX_SUCCESS;
    char what[512];
    redisReply *r;
    if (m->password) {
        const char *argv[3] = {"AUTH", NULL, NULL};
        size_t lens[3] = {4, 0, 0};
        int argc = 1;
        if (px_registry_redis_user && px_registry_redis_user[0]) {
            argv[argc] = px_registry_redis_user;
            lens[argc++] = strlen(px_registry_redis_user);
        }
        argv[argc] = m->password;
        lens[argc++] = strlen(m->password);
        r = command(m, deadline - now_s(), argc, argv, lens, &rc, what, sizeof what);
        if (NULL == r) {
            snprintf(why, why_len, "AUTH: %s", what);
            return rc;
        }
        if (REDIS_REPLY_ERROR == r->type) {
            snprintf(why, why_len, "AUTH (registry_redis_password_file %s%s%s) refused: %.300s",
                     px_registry_redis_password_file, px_registry_redis_user[0] ? ", user " : "",
                     px_registry_redis_user, r->str);
            freeReplyObject(r);
            disconnect(m);
            return PX_ERR_NOT_AVAILABLE;
        }
        freeReplyObject(r);
    }
    if (px_registry_redis_db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", px_registry_redis_db);
        const char *argv[2] = {"SELECT", db};
        size_t lens[2] = {6, strlen(db)};
        r = command(m, deadline - now_s(), 2, argv, lens, &rc, what, sizeof what);
        if (NULL == r) {
            snprintf(why, why_len, "SELECT: %s", what);
            return rc;
        }
        if (REDIS_REPLY_ERROR == r->type) {
            snprintf(why, why_len, "SELECT %s (registry_redis_db) refused: %.300s", db, r->str);
            freeReplyObject(r);
            disconnect(m);
            return PX_ERR_NOT_AVAILABLE;
        }
        freeReplyObject(r);
    }
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", scripts[i]};
        size_t lens[3] = {6, 4, strlen(scripts[i])};
        r = command(m, deadline - now_s(), 3, argv, lens, &rc, what, sizeof what);
        if (NULL == r) {
            snprintf(why, why_len, "SCRIPT LOAD: %s", what);
            return rc;
        }
        if (REDIS_REPLY_STRING != r->type || r->len >= sizeof m->sha[i]) {
            snprintf(why, why_len,
                     "SCRIPT LOAD refused (registry/redis needs redis 2.6 or newer with Lua "
                     "scripts): %.300s",
                     REDIS_REPLY_ERROR == r->type ? r->str : "unexpected reply");
            freeReplyObject(r);
            disconnect(m);
            return PX_ERR_NOT_AVAILABLE;
        }
        memcpy(m->sha[i], r->str, r->len);
        m->sha[i][r->len] = '\0';
        freeReplyObject(r);
    }
    return PX_SUCCESS;
}

/* Note a success on m->cur: say once that it took over from another. */
static void succeeded(redis_module_t *m)
{
    if (m->good != m->cur && (m->good >= 0 || m->failed[0]))
        px_show_warning("registry/redis: %s took over (%s)", m->eps[m->cur].label,
                        m->failed[0] ? m->failed : "the previous endpoint failed");
    else if (m->outage)
        px_show_warning("registry/redis: %s answers again", m->eps[m->cur].label);
    m->outage = false;
    m->good = m->cur;
    m->failed[0] = '\0';
    m->last_err[0] = '\0';
}

static void note_failure(redis_module_t *m, int ep, const char *what)
{
    size_t l = strlen(m->failed);
    snprintf(m->failed + l, sizeof m->failed - l, "%s%s: %s", l ? "; " : "", m->eps[ep].label,
             what);
}

/* Run argv (argv[0] "EVALSHA" and argv[1] the sha when script >= 0) until
 * `deadline`, connecting and failing over as the top of the file says.
 * PX_SUCCESS with the reply in *out (an error reply included, except
 * passing ones), or the error with why[] naming each endpoint tried. */
static int call(redis_module_t *m, double deadline, int script, int argc, const char **argv,
                size_t *lens, redisReply **out, char *why, size_t why_len)
{
    *out = NULL;
    why[0] = '\0';
    m->tried[0] = '\0';
    int rc = PX_ERR_TIMEOUT;
    size_t wl = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        double left = deadline - now_s();
        if (left <= 0) {
            if (0 == attempt)
                snprintf(why, why_len, "registry_timeout passed before the call");
            rc = PX_ERR_TIMEOUT;
            break;
        }
        double budget = (0 == attempt && m->n_eps > 1) ? left / 2 : left;
        int ep = m->cur;
        char what[1024];
        int r2 = PX_SUCCESS;
        if (NULL == m->c)
            r2 = connect_ep(m, budget, what, sizeof what);
        redisReply *r = NULL;
        if (PX_SUCCESS == r2) {
            if (script >= 0) {
                argv[0] = "EVALSHA";
                lens[0] = 7;
                argv[1] = m->sha[script];
                lens[1] = strlen(m->sha[script]);
            }
            r = command(m, deadline - now_s(), argc, argv, lens, &r2, what, sizeof what);
            if (r && script >= 0 && REDIS_REPLY_ERROR == r->type &&
                0 == strncmp(r->str, "NOSCRIPT", 8)) {
                /* The script cache was flushed: send the script itself. */
                freeReplyObject(r);
                argv[0] = "EVAL";
                lens[0] = 4;
                argv[1] = scripts[script];
                lens[1] = strlen(scripts[script]);
                r = command(m, deadline - now_s(), argc, argv, lens, &r2, what, sizeof what);
            }
            if (r && REDIS_REPLY_ERROR == r->type && passing_error(r)) {
                snprintf(what, sizeof what, "%.300s", r->str);
                freeReplyObject(r);
                r = NULL;
                r2 = PX_ERR_NOT_AVAILABLE;
                disconnect(m);
            }
        }
        if (r) {
            succeeded(m);
            *out = r;
            return PX_SUCCESS;
        }
        rc = r2;
        if (PX_ERR_OUT_OF_RESOURCE == rc) {
            snprintf(why, why_len, "out of memory");
            return rc;
        }
        if (wl < why_len)
            wl += (size_t)snprintf(why + wl, why_len - wl, "%s%s: %s", wl ? "; " : "",
                                   m->eps[ep].label, what);
        note_failure(m, ep, what);
        size_t tl = strlen(m->tried);
        snprintf(m->tried + tl, sizeof m->tried - tl, "%d ", ep);
        m->cur = (m->cur + 1) % m->n_eps;
    }
    return rc;
}

static bool key_ok(const char *op, const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (0 == n || n > PX_REGISTRY_KEY_MAX) {
        px_show_error("registry/redis: %s: the key is %s (accepted: 1-%d bytes)", op,
                      n ? "too long" : "empty", PX_REGISTRY_KEY_MAX);
        return false;
    }
    return true;
}

static double deadline_now(void)
{
    return now_s() + px_registry_base_timeout();
}

/* An error reply or a reply of an unexpected type: say what redis said. */
static int bad_reply(redis_module_t *m, const char *op, const char *key, const redisReply *r)
{
    if (REDIS_REPLY_ERROR == r->type)
        report(m, NULL, "registry/redis: %s %.200s on %s: redis said: %.400s", op, key,
               m->eps[m->cur].label, r->str);
    else
        report(m, NULL, "registry/redis: %s %.200s on %s: unexpected reply of type %d from redis",
               op, key, m->eps[m->cur].label, r->type);
    return PX_ERR_NOT_AVAILABLE;
}

static int wrong_type(redis_module_t *m, const char *op, const char *key, const redisReply *r)
{
    const char *type = "?";
    if (REDIS_REPLY_ARRAY == r->type && 1 == r->elements &&
        (REDIS_REPLY_STRING == r->element[0]->type || REDIS_REPLY_STATUS == r->element[0]->type))
        type = r->element[0]->str;
    report(m, NULL,
           "registry/redis: %s %.200s on %s: the key holds a redis %.40s, not a string: it is not "
           "a Plexus entry (someone else's key under the namespace; remove it or choose another "
           "registry_namespace)",
           op, key, m->eps[m->cur].label, type);
    return PX_ERR_BAD_PARAM;
}

static int too_large(redis_module_t *m, const char *op, const char *key, long long len)
{
    report(m, NULL,
           "registry/redis: %s %.200s on %s: the value is %lld bytes, more than %d "
           "(PX_REGISTRY_VALUE_MAX): not a Plexus entry (someone else's key under the namespace)",
           op, key, m->eps[m->cur].label, len, PX_REGISTRY_VALUE_MAX);
    return PX_ERR_BAD_PARAM;
}

static int store_failed(redis_module_t *m, const char *op, const char *key, int rc, const char *why)
{
    char same[512];
    snprintf(same, sizeof same, "%d %s", rc, m->tried);
    m->outage = true;
    if (PX_ERR_TIMEOUT == rc)
        report(m, same,
               "registry/redis: %s %.200s: the store did not answer within "
               "registry_timeout=%g s: %s",
               op, key, px_registry_base_timeout(), why);
    else
        report(m, same, "registry/redis: %s %.200s: the store is not available: %s", op, key, why);
    return rc;
}

static long long lease_ms(void)
{
    double ms = px_registry_base_lease() * 1000.0;
    if (ms < 1)
        ms = 1;
    if (ms > MS_MAX)
        ms = MS_MAX;
    return (long long)(ms + 0.5);
}

static int redis_put(px_registry_module_t *base, const char *key, const void *value, size_t len,
                     int how)
{
    redis_module_t *m = (redis_module_t *)base;
    if (!key_ok("put", key))
        return PX_ERR_BAD_PARAM;
    if (len > PX_REGISTRY_VALUE_MAX || (NULL == value && len > 0)) {
        px_show_error("registry/redis: put %.200s: a value of %zu bytes (accepted: 0-%d)", key, len,
                      PX_REGISTRY_VALUE_MAX);
        return PX_ERR_BAD_PARAM;
    }
    if (PX_REGISTRY_PUT_ANY != how && PX_REGISTRY_PUT_CREATE != how) {
        px_show_error("registry/redis: put %.200s: how=%d (accepted: PX_REGISTRY_PUT_ANY, "
                      "PX_REGISTRY_PUT_CREATE)",
                      key, how);
        return PX_ERR_BAD_PARAM;
    }
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", lease_ms());
    const char *v = value ? value : "";
    char why[2048];
    redisReply *r = NULL;
    int rc;
    if (PX_REGISTRY_PUT_ANY == how) {
        const char *argv[5] = {"SET", key, v, "PX", ms};
        size_t lens[5] = {3, strlen(key), len, 2, strlen(ms)};
        rc = call(m, deadline_now(), -1, 5, argv, lens, &r, why, sizeof why);
    } else {
        const char *argv[6] = {NULL, NULL, "1", key, v, ms};
        size_t lens[6] = {0, 0, 1, strlen(key), len, strlen(ms)};
        rc = call(m, deadline_now(), SCRIPT_CREATE, 6, argv, lens, &r, why, sizeof why);
    }
    if (PX_SUCCESS != rc)
        return store_failed(m, "put", key, rc, why);
    if (PX_REGISTRY_PUT_ANY == how && REDIS_REPLY_STATUS == r->type)
        rc = PX_SUCCESS;
    else if (PX_REGISTRY_PUT_CREATE == how && REDIS_REPLY_INTEGER == r->type && r->integer >= 0 &&
             r->integer <= 2)
        rc = r->integer ? PX_SUCCESS : PX_ERR_EXISTS;
    else if (PX_REGISTRY_PUT_CREATE == how && REDIS_REPLY_ARRAY == r->type)
        rc = wrong_type(m, "put", key, r);
    else
        rc = bad_reply(m, "put", key, r);
    freeReplyObject(r);
    return rc;
}

/* One element of FETCH's reply: PX_SUCCESS with the value (pointing into e),
 * PX_ERR_NOT_FOUND, or PX_ERR_BAD_PARAM (printed when `op`). */
static int fetched(redis_module_t *m, const char *op, const char *key, const redisReply *e,
                   const char **value, size_t *len)
{
    switch (e->type) {
    case REDIS_REPLY_STRING:
        if (e->len > PX_REGISTRY_VALUE_MAX)
            return op ? too_large(m, op, key, (long long)e->len) : PX_ERR_BAD_PARAM;
        *value = e->str;
        *len = e->len;
        return PX_SUCCESS;
    case REDIS_REPLY_NIL:
        return PX_ERR_NOT_FOUND;
    case REDIS_REPLY_INTEGER:
        return op ? too_large(m, op, key, e->integer) : PX_ERR_BAD_PARAM;
    case REDIS_REPLY_ARRAY:
        return op ? wrong_type(m, op, key, e) : PX_ERR_BAD_PARAM;
    default:
        return op ? bad_reply(m, op, key, e) : PX_ERR_NOT_AVAILABLE;
    }
}

static int redis_get(px_registry_module_t *base, const char *key, void **value, size_t *len)
{
    redis_module_t *m = (redis_module_t *)base;
    *value = NULL;
    *len = 0;
    if (!key_ok("get", key))
        return PX_ERR_BAD_PARAM;
    char max[16];
    snprintf(max, sizeof max, "%d", PX_REGISTRY_VALUE_MAX);
    const char *argv[5] = {NULL, NULL, "1", key, max};
    size_t lens[5] = {0, 0, 1, strlen(key), strlen(max)};
    char why[2048];
    redisReply *r = NULL;
    int rc = call(m, deadline_now(), SCRIPT_FETCH, 5, argv, lens, &r, why, sizeof why);
    if (PX_SUCCESS != rc)
        return store_failed(m, "get", key, rc, why);
    if (REDIS_REPLY_ARRAY != r->type || 1 != r->elements) {
        rc = bad_reply(m, "get", key, r);
    } else {
        const char *v = NULL;
        size_t n = 0;
        rc = fetched(m, "get", key, r->element[0], &v, &n);
        if (PX_SUCCESS == rc) {
            char *copy = malloc(n + 1);
            if (NULL == copy) {
                rc = PX_ERR_OUT_OF_RESOURCE;
            } else {
                memcpy(copy, v, n);
                copy[n] = '\0';
                *value = copy;
                *len = n;
            }
        }
    }
    freeReplyObject(r);
    return rc;
}

static int redis_del(px_registry_module_t *base, const char *key, const void *value, size_t len)
{
    redis_module_t *m = (redis_module_t *)base;
    if (!key_ok("del", key))
        return PX_ERR_BAD_PARAM;
    char why[2048];
    redisReply *r = NULL;
    int rc;
    if (NULL == value) {
        const char *argv[2] = {"DEL", key};
        size_t lens[2] = {3, strlen(key)};
        rc = call(m, deadline_now(), -1, 2, argv, lens, &r, why, sizeof why);
    } else {
        if (len > PX_REGISTRY_VALUE_MAX) {
            px_show_error("registry/redis: del %.200s: a value of %zu bytes (accepted: 0-%d)", key,
                          len, PX_REGISTRY_VALUE_MAX);
            return PX_ERR_BAD_PARAM;
        }
        const char *argv[5] = {NULL, NULL, "1", key, value};
        size_t lens[5] = {0, 0, 1, strlen(key), len};
        rc = call(m, deadline_now(), SCRIPT_DEL, 5, argv, lens, &r, why, sizeof why);
    }
    if (PX_SUCCESS != rc)
        return store_failed(m, "del", key, rc, why);
    if (REDIS_REPLY_INTEGER == r->type && r->integer >= 0 && r->integer <= 2)
        rc = 1 == r->integer ? PX_SUCCESS : 0 == r->integer ? PX_ERR_NOT_FOUND : PX_ERR_EXISTS;
    else if (value && REDIS_REPLY_ARRAY == r->type)
        rc = wrong_type(m, "del", key, r);
    else
        rc = bad_reply(m, "del", key, r);
    freeReplyObject(r);
    return rc;
}

/* MATCH pattern of keys starting with prefix: glob characters escaped. */
static char *match_pattern(const char *prefix)
{
    size_t n = strlen(prefix);
    char *p = malloc(2 * n + 2);
    if (NULL == p)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strchr("*?[]\\^-", prefix[i]))
            p[k++] = '\\';
        p[k++] = prefix[i];
    }
    p[k++] = '*';
    p[k] = '\0';
    return p;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct {
    char **keys;
    size_t n, cap;
} keyset_t;

static void keyset_clear(keyset_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->keys[i]);
    s->n = 0;
}

static int keyset_add(keyset_t *s, const char *k, size_t len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        char **nk = realloc(s->keys, cap * sizeof *nk);
        if (NULL == nk)
            return PX_ERR_OUT_OF_RESOURCE;
        s->keys = nk;
        s->cap = cap;
    }
    char *c = malloc(len + 1);
    if (NULL == c)
        return PX_ERR_OUT_OF_RESOURCE;
    memcpy(c, k, len);
    c[len] = '\0';
    s->keys[s->n++] = c;
    return PX_SUCCESS;
}

/* Values fetched per FETCH script call while listing. */
#define LIST_BATCH 64

static int redis_list(px_registry_module_t *base, const char *prefix, px_registry_list_fn_t fn,
                      void *arg)
{
    redis_module_t *m = (redis_module_t *)base;
    if (NULL == prefix)
        prefix = "";
    size_t plen = strlen(prefix);
    if (plen > PX_REGISTRY_KEY_MAX) {
        px_show_error("registry/redis: list: the prefix is %zu bytes (accepted: 0-%d)", plen,
                      PX_REGISTRY_KEY_MAX);
        return PX_ERR_BAD_PARAM;
    }
    char *pattern = match_pattern(prefix);
    if (NULL == pattern)
        return PX_ERR_OUT_OF_RESOURCE;
    double deadline = deadline_now();
    keyset_t ks = {NULL, 0, 0};
    char cursor[32] = "0";
    unsigned long conns = 0;
    size_t skipped = 0;
    char why[2048];
    int rc = PX_SUCCESS;
    redisReply *r = NULL;
    /* Every key: SCAN to the end (never KEYS, which blocks the server). */
    for (;;) {
        const char *argv[6] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
        size_t lens[6] = {4, strlen(cursor), 5, strlen(pattern), 5, 4};
        rc = call(m, deadline, -1, 6, argv, lens, &r, why, sizeof why);
        if (PX_SUCCESS != rc) {
            rc = store_failed(m, "list", prefix, rc, why);
            goto out;
        }
        if (0 != strcmp(cursor, "0") && m->conns != conns) {
            /* A cursor is good only on the connection's server: start again. */
            freeReplyObject(r);
            keyset_clear(&ks);
            strcpy(cursor, "0");
            conns = m->conns;
            continue;
        }
        conns = m->conns;
        if (REDIS_REPLY_ARRAY != r->type || 2 != r->elements ||
            REDIS_REPLY_STRING != r->element[0]->type || r->element[0]->len >= sizeof cursor ||
            REDIS_REPLY_ARRAY != r->element[1]->type) {
            rc = bad_reply(m, "list (SCAN)", prefix, r);
            freeReplyObject(r);
            goto out;
        }
        const redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements && PX_SUCCESS == rc; i++) {
            const redisReply *k = keys->element[i];
            if (REDIS_REPLY_STRING != k->type)
                continue;
            /* MATCH is a glob: check the prefix byte for byte too; a key with a
             * NUL byte or longer than the limit is no Plexus key. */
            if (k->len < plen || memcmp(k->str, prefix, plen) != 0)
                continue;
            if (k->len > PX_REGISTRY_KEY_MAX || memchr(k->str, '\0', k->len)) {
                skipped++;
                continue;
            }
            rc = keyset_add(&ks, k->str, k->len);
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len);
        cursor[r->element[0]->len] = '\0';
        freeReplyObject(r);
        if (PX_SUCCESS != rc)
            goto out;
        if (0 == strcmp(cursor, "0"))
            break;
    }
    if (skipped)
        PX_OUTPUT_VERBOSE(1, px_registry_base_framework_get()->output,
                          "registry/redis: list %.200s: %zu keys skipped (longer than %d bytes or "
                          "holding a NUL byte: not Plexus keys)",
                          prefix, skipped, PX_REGISTRY_KEY_MAX);
    /* SCAN may return a key twice: sort and keep one of each. */
    if (ks.n > 1) {
        qsort(ks.keys, ks.n, sizeof *ks.keys, cmp_str);
        size_t w = 1;
        for (size_t i = 1; i < ks.n; i++) {
            if (strcmp(ks.keys[i], ks.keys[w - 1]) == 0)
                free(ks.keys[i]);
            else
                ks.keys[w++] = ks.keys[i];
        }
        ks.n = w;
    }
    char max[16];
    snprintf(max, sizeof max, "%d", PX_REGISTRY_VALUE_MAX);
    for (size_t at = 0; at < ks.n; at += LIST_BATCH) {
        size_t nb = ks.n - at < LIST_BATCH ? ks.n - at : LIST_BATCH;
        const char *argv[4 + LIST_BATCH];
        size_t lens[4 + LIST_BATCH];
        char nk[16];
        snprintf(nk, sizeof nk, "%zu", nb);
        argv[2] = nk;
        lens[2] = strlen(nk);
        for (size_t i = 0; i < nb; i++) {
            argv[3 + i] = ks.keys[at + i];
            lens[3 + i] = strlen(ks.keys[at + i]);
        }
        argv[3 + nb] = max;
        lens[3 + nb] = strlen(max);
        rc = call(m, deadline, SCRIPT_FETCH, (int)(4 + nb), argv, lens, &r, why, sizeof why);
        if (PX_SUCCESS != rc) {
            rc = store_failed(m, "list", prefix, rc, why);
            goto out;
        }
        if (REDIS_REPLY_ARRAY != r->type || nb != r->elements) {
            rc = bad_reply(m, "list", prefix, r);
            freeReplyObject(r);
            goto out;
        }
        for (size_t i = 0; i < nb && PX_SUCCESS == rc; i++) {
            const char *v = NULL;
            size_t n = 0;
            int frc = fetched(m, NULL, ks.keys[at + i], r->element[i], &v, &n);
            if (PX_ERR_NOT_FOUND == frc)
                continue; /* expired or removed since SCAN */
            if (PX_SUCCESS != frc) {
                /* Not a Plexus entry (another type, oversized): listed with an
                 * empty value, which the names layer reports as malformed. */
                PX_OUTPUT_VERBOSE(1, px_registry_base_framework_get()->output,
                                  "registry/redis: list: %.200s is not a string of at most %d "
                                  "bytes: listed with an empty value",
                                  ks.keys[at + i], PX_REGISTRY_VALUE_MAX);
                v = "";
                n = 0;
            }
            rc = fn(ks.keys[at + i], v, n, arg);
        }
        freeReplyObject(r);
        if (PX_SUCCESS != rc)
            goto out;
    }
out:
    keyset_clear(&ks);
    free(ks.keys);
    free(pattern);
    return rc;
}

static void redis_close(px_registry_module_t *base)
{
    redis_module_t *m = (redis_module_t *)base;
    disconnect(m);
    if (m->password) {
        memset(m->password, 0, strlen(m->password));
        free(m->password);
    }
    free(m->eps);
    free(m);
}

px_registry_module_t *px_registry_redis_module_create(px_registry_redis_endpoint_t *eps, int n,
                                                      char *password, int *rc, char *why,
                                                      size_t why_len)
{
    redis_module_t *m = calloc(1, sizeof *m);
    if (NULL == m) {
        free(eps);
        if (password) {
            memset(password, 0, strlen(password));
            free(password);
        }
        *rc = PX_ERR_OUT_OF_RESOURCE;
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    m->super.name = "redis";
    m->super.put = redis_put;
    m->super.get = redis_get;
    m->super.del = redis_del;
    m->super.list = redis_list;
    m->super.close = redis_close;
    m->eps = eps;
    m->n_eps = n;
    m->password = password;
    m->good = -1;
    /* Connect to the first endpoint that answers, in order, within the
     * timeout (each endpoint gets an equal share of what is left). */
    double deadline = deadline_now();
    size_t wl = 0;
    why[0] = '\0';
    *rc = PX_ERR_NOT_AVAILABLE;
    for (int i = 0; i < n; i++) {
        double left = deadline - now_s();
        if (left <= 0) {
            if (wl < why_len)
                wl += (size_t)snprintf(why + wl, why_len - wl, "%s%s: not tried (timeout)",
                                       wl ? "; " : "", eps[i].label);
            *rc = PX_ERR_TIMEOUT;
            continue;
        }
        char what[1024];
        m->cur = i;
        int r2 = connect_ep(m, left / (n - i), what, sizeof what);
        if (PX_SUCCESS == r2) {
            succeeded(m);
            return &m->super;
        }
        *rc = r2;
        if (wl < why_len)
            wl += (size_t)snprintf(why + wl, why_len - wl, "%s%s: %s", wl ? "; " : "", eps[i].label,
                                   what);
        note_failure(m, i, what);
    }
    redis_close(&m->super);
    return NULL;
}
