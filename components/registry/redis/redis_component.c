/*
 * redis_component.c: registry/redis component: variables, the endpoint list,
 * the password file and query. query declines (priority -1) when
 * registry_redis_endpoints is empty, so a process that did not ask for redis
 * never connects anywhere; when it is set, query connects (failing over in
 * the given order) and declines with every endpoint's error when none answers
 * within registry_timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "components/registry/redis/redis.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"

char *px_registry_redis_endpoints = NULL;
char *px_registry_redis_password_file = NULL;
char *px_registry_redis_user = NULL;
int px_registry_redis_db = 0;
int px_registry_redis_priority = 60;

/* Longest password file read (redis passwords are short; ACL allows long). */
#define REDIS_PASSWORD_MAX 4096

static const px_mca_var_field_t px_registry_redis_vars[] = {
    {.name = "endpoints",
     .help = "Redis servers holding the names, \"host:port[,host:port...]\" (\"[v6addr]:port\" "
             "for IPv6; port 6379 when left out). The first that answers is used; on a "
             "connection error or timeout the next one takes over (said once). Empty: "
             "registry/redis is not selected",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 2,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "",
     .storage = &px_registry_redis_endpoints},
    {.name = "password_file",
     .help = "File holding the redis password (AUTH), one line; it must belong to this user "
             "and be readable by no one else (chmod 600), like an ssh key. A file rather than "
             "a variable so the secret is not in the environment or on a command line. Empty: "
             "no AUTH",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "",
     .storage = &px_registry_redis_password_file},
    {.name = "user",
     .help = "Redis ACL user (redis 6 or newer) for AUTH <user> <password>; empty: AUTH "
             "<password> (the default user). Needs registry_redis_password_file",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "",
     .storage = &px_registry_redis_user},
    {.name = "db",
     .help = "Redis database number (SELECT); every process of a tenant must use the same",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 3,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "0",
     .min = "0",
     .max = "65535",
     .storage = &px_registry_redis_db},
    {.name = "priority",
     .help = "Priority of registry/redis when registry_redis_endpoints is set (above p2p, so "
             "setting the endpoints is enough to choose redis)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 6,
     .scope = PX_MCA_VAR_SCOPE_ALL,
     .dflt = "60",
     .min = "0",
     .max = "100",
     .storage = &px_registry_redis_priority},
    {.name = NULL},
};

static int px_registry_redis_register(void)
{
    return px_mca_var_register_table("registry", "redis", px_registry_redis_vars, -1, NULL);
}

int px_registry_redis_parse_endpoints(const char *text, px_registry_redis_endpoint_t **eps, int *n,
                                      char *why, size_t why_len)
{
    static const char accepted[] =
        "accepted: host:port[,host:port...], [v6addr]:port for IPv6, port 1-65535";
    *eps = NULL;
    *n = 0;
    if (NULL == text || '\0' == text[0]) {
        snprintf(why, why_len, "registry_redis_endpoints is empty");
        return PX_ERR_BAD_PARAM;
    }
    int count = 1;
    for (const char *p = text; *p; p++)
        count += (',' == *p);
    px_registry_redis_endpoint_t *e = calloc((size_t)count, sizeof *e);
    if (NULL == e)
        return PX_ERR_OUT_OF_RESOURCE;
    int k = 0;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (' ' == *p || '\t' == *p)) {
            p++;
            len--;
        }
        while (len > 0 && (' ' == p[len - 1] || '\t' == p[len - 1]))
            len--;
        char item[300];
        if (0 == len || len >= sizeof item) {
            snprintf(why, why_len, "registry_redis_endpoints \"%.200s\": item %d is %s; %s", text,
                     k + 1, 0 == len ? "empty" : "too long", accepted);
            free(e);
            return PX_ERR_BAD_PARAM;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        const char *host = item, *port = NULL;
        if ('[' == item[0]) {
            char *close = strchr(item, ']');
            if (NULL == close || (close[1] != '\0' && close[1] != ':') || close == item + 1) {
                snprintf(why, why_len, "registry_redis_endpoints: \"%s\" has no closing ']'; %s",
                         item, accepted);
                free(e);
                return PX_ERR_BAD_PARAM;
            }
            *close = '\0';
            host = item + 1;
            port = close[1] ? close + 2 : NULL;
        } else {
            char *colon = strrchr(item, ':');
            if (colon && strchr(item, ':') != colon) {
                snprintf(why, why_len,
                         "registry_redis_endpoints: \"%s\" has several ':' (an IPv6 address "
                         "goes in brackets); %s",
                         item, accepted);
                free(e);
                return PX_ERR_BAD_PARAM;
            }
            if (colon) {
                *colon = '\0';
                port = colon + 1;
            }
        }
        long pn = 6379;
        if (port) {
            char *stop = NULL;
            errno = 0;
            pn = strtol(port, &stop, 10);
            if ('\0' == port[0] || errno || *stop || pn < 1 || pn > 65535) {
                snprintf(why, why_len, "registry_redis_endpoints: \"%.200s\": port \"%s\"; %s", p,
                         port, accepted);
                free(e);
                return PX_ERR_BAD_PARAM;
            }
        }
        if ('\0' == host[0] || strlen(host) >= sizeof e[k].host) {
            snprintf(why, why_len, "registry_redis_endpoints: \"%.200s\": no host; %s", p,
                     accepted);
            free(e);
            return PX_ERR_BAD_PARAM;
        }
        /* host is shorter than e[k].host (checked above); the precisions
         * say so to the compiler's truncation warnings too */
        snprintf(e[k].host, sizeof e[k].host, "%.255s", host);
        e[k].port = (int)pn;
        if (strchr(host, ':'))
            snprintf(e[k].label, sizeof e[k].label, "[%.255s]:%d", host, e[k].port);
        else
            snprintf(e[k].label, sizeof e[k].label, "%.255s:%d", host, e[k].port);
        k++;
        if (NULL == end)
            break;
        p = end + 1;
    }
    *eps = e;
    *n = k;
    return PX_SUCCESS;
}

int px_registry_redis_read_password(const char *file, char **password, char *why, size_t why_len)
{
    *password = NULL;
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, why_len, "registry_redis_password_file %s: cannot open it: %s", file,
                 strerror(errno));
        return PX_ERR_NOT_FOUND;
    }
    struct stat st;
    int rc = PX_SUCCESS;
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_len, "registry_redis_password_file %s: %s", file, strerror(errno));
        rc = PX_ERR_IN_ERRNO;
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "registry_redis_password_file %s is not a regular file", file);
        rc = PX_ERR_BAD_PARAM;
    } else if (st.st_uid != geteuid()) {
        snprintf(why, why_len,
                 "registry_redis_password_file %s belongs to uid %u, not to this user (uid %u); "
                 "refused",
                 file, (unsigned)st.st_uid, (unsigned)geteuid());
        rc = PX_ERR_BAD_PARAM;
    } else if (st.st_mode & 077) {
        snprintf(why, why_len,
                 "registry_redis_password_file %s has mode %04o: group or others may read it, "
                 "so it is no secret; refused: chmod 600 %s",
                 file, (unsigned)(st.st_mode & 07777), file);
        rc = PX_ERR_BAD_PARAM;
    } else if (st.st_size > REDIS_PASSWORD_MAX) {
        snprintf(why, why_len, "registry_redis_password_file %s is %lld bytes, more than %d", file,
                 (long long)st.st_size, REDIS_PASSWORD_MAX);
        rc = PX_ERR_BAD_PARAM;
    }
    char *buf = NULL;
    size_t n = 0;
    if (PX_SUCCESS == rc && NULL == (buf = malloc(REDIS_PASSWORD_MAX + 2)))
        rc = PX_ERR_OUT_OF_RESOURCE;
    while (PX_SUCCESS == rc) {
        ssize_t r = read(fd, buf + n, REDIS_PASSWORD_MAX + 1 - n);
        if (r < 0 && EINTR == errno)
            continue;
        if (r < 0) {
            snprintf(why, why_len, "registry_redis_password_file %s: %s", file, strerror(errno));
            rc = PX_ERR_IN_ERRNO;
        } else if (0 == r) {
            break;
        } else if ((n += (size_t)r) > REDIS_PASSWORD_MAX) {
            snprintf(why, why_len, "registry_redis_password_file %s is more than %d bytes", file,
                     REDIS_PASSWORD_MAX);
            rc = PX_ERR_BAD_PARAM;
        }
    }
    close(fd);
    if (PX_SUCCESS == rc) {
        while (n > 0 && ('\n' == buf[n - 1] || '\r' == buf[n - 1]))
            n--;
        buf[n] = '\0';
        if (0 == n || memchr(buf, '\n', n) || strlen(buf) != n) {
            snprintf(why, why_len,
                     "registry_redis_password_file %s: %s; accepted: the password on one line",
                     file, 0 == n ? "it is empty" : "it holds more than one line or a NUL byte");
            rc = PX_ERR_BAD_PARAM;
        }
    }
    if (PX_SUCCESS != rc) {
        if (buf) {
            memset(buf, 0, REDIS_PASSWORD_MAX + 2);
            free(buf);
        }
        return rc;
    }
    *password = buf;
    return PX_SUCCESS;
}

static int px_registry_redis_query(int *priority, px_registry_module_t **module)
{
    *priority = -1;
    *module = NULL;
    const char *text = px_registry_redis_endpoints;
    if (NULL == text || '\0' == text[0]) {
        PX_OUTPUT_VERBOSE(10, px_registry_base_framework_get()->output,
                          "registry/redis: registry_redis_endpoints is not set: not selected");
        return PX_ERR_NOT_AVAILABLE;
    }
    char why[2048];
    px_registry_redis_endpoint_t *eps = NULL;
    int n = 0;
    int rc = px_registry_redis_parse_endpoints(text, &eps, &n, why, sizeof why);
    if (PX_SUCCESS != rc) {
        px_show_error("registry/redis: %s", why);
        return rc;
    }
    char *password = NULL;
    const char *pf = px_registry_redis_password_file;
    if (pf && pf[0]) {
        rc = px_registry_redis_read_password(pf, &password, why, sizeof why);
        if (PX_SUCCESS != rc) {
            px_show_error("registry/redis: %s", why);
            free(eps);
            return rc;
        }
    } else if (px_registry_redis_user && px_registry_redis_user[0]) {
        px_show_error("registry/redis: registry_redis_user is \"%s\" but "
                      "registry_redis_password_file is empty: an ACL user needs its password",
                      px_registry_redis_user);
        free(eps);
        return PX_ERR_BAD_PARAM;
    }
    px_registry_module_t *m =
        px_registry_redis_module_create(eps, n, password, &rc, why, sizeof why);
    if (NULL == m) {
        /* The user asked for redis (the endpoints are set): say why it is not
         * used even when another component is selected instead. */
        px_show_error("registry/redis: no redis server of registry_redis_endpoints=%s answered "
                      "within registry_timeout=%g s: %s",
                      text, px_registry_base_timeout(), why);
        return rc;
    }
    *priority = px_registry_redis_priority;
    *module = m;
    return PX_SUCCESS;
}

const px_registry_component_t px_registry_redis_component = {
    .base = PX_REGISTRY_COMPONENT_HEADER("redis", 1, 0, 0, px_registry_redis_register, NULL, NULL),
    .query = px_registry_redis_query,
};
