/*
 * singleton_module.c: the boot module of a lone process. The modex is a list
 * of (key, blob) in this process; fence and commit have nothing to do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "components/boot/singleton/singleton.h"
#include "core/util/error.h"
#include "core/util/proc.h"

typedef struct modex_entry {
    struct modex_entry *next;
    char *key;
    size_t len;
    unsigned char data[];
} modex_entry_t;

static modex_entry_t *px_boot_singleton_modex = NULL;
static char px_boot_singleton_host[256];
static char px_boot_singleton_jobid[64];

static int singleton_init(void)
{
    if (gethostname(px_boot_singleton_host, sizeof(px_boot_singleton_host) - 1) != 0)
        strcpy(px_boot_singleton_host, "localhost");
    px_boot_singleton_host[sizeof(px_boot_singleton_host) - 1] = '\0';
    snprintf(px_boot_singleton_jobid, sizeof(px_boot_singleton_jobid), "singleton-%ld",
             (long)getpid());
    px_boot_singleton_module.rank = 0;
    px_boot_singleton_module.size = 1;
    px_boot_singleton_module.jobid = px_boot_singleton_jobid;
    return PX_SUCCESS;
}

static const char *singleton_hostname(int rank)
{
    return 0 == rank ? px_boot_singleton_host : NULL;
}

static uint32_t singleton_locality(int rank)
{
    return 0 == rank ? (PX_PROC_LOCAL_SELF | PX_PROC_LOCAL_HOST | PX_PROC_LOCAL_NUMA) : 0;
}

static int singleton_put(const char *key, const void *data, size_t len)
{
    if (NULL == key || (len && NULL == data))
        return PX_ERR_BAD_PARAM;
    for (modex_entry_t **p = &px_boot_singleton_modex; *p; p = &(*p)->next) {
        if (0 == strcmp((*p)->key, key)) { /* replace */
            modex_entry_t *old = *p;
            *p = old->next;
            free(old->key);
            free(old);
            break;
        }
    }
    modex_entry_t *e = malloc(sizeof(*e) + len);
    if (NULL == e)
        return PX_ERR_OUT_OF_RESOURCE;
    e->key = strdup(key);
    if (NULL == e->key) {
        free(e);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    e->len = len;
    if (len)
        memcpy(e->data, data, len);
    e->next = px_boot_singleton_modex;
    px_boot_singleton_modex = e;
    return PX_SUCCESS;
}

static int singleton_commit(void)
{
    return PX_SUCCESS;
}
static int singleton_fence(void)
{
    return PX_SUCCESS;
}

static int singleton_get(int rank, const char *key, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (rank != 0)
        return PX_ERR_BAD_PARAM;
    for (modex_entry_t *e = px_boot_singleton_modex; e; e = e->next) {
        if (0 == strcmp(e->key, key)) {
            void *copy = malloc(e->len ? e->len : 1);
            if (NULL == copy)
                return PX_ERR_OUT_OF_RESOURCE;
            memcpy(copy, e->data, e->len);
            *data = copy;
            *len = e->len;
            return PX_SUCCESS;
        }
    }
    return PX_ERR_NOT_FOUND;
}

static void singleton_abort(int status, const char *msg)
{
    fprintf(stderr, "plexus: rank 0 (singleton) aborted with status %d: %s\n", status,
            msg ? msg : "");
    fflush(stderr);
    exit(status ? status : 1);
}

static int singleton_finalize(void)
{
    while (px_boot_singleton_modex) {
        modex_entry_t *e = px_boot_singleton_modex;
        px_boot_singleton_modex = e->next;
        free(e->key);
        free(e);
    }
    return PX_SUCCESS;
}

px_boot_module_t px_boot_singleton_module = {
    .name = "singleton",
    .init = singleton_init,
    .rank = 0,
    .size = 1,
    .jobid = NULL,
    .hostname = singleton_hostname,
    .locality = singleton_locality,
    .put = singleton_put,
    .commit = singleton_commit,
    .fence = singleton_fence,
    .get = singleton_get,
    .abort = singleton_abort,
    .finalize = singleton_finalize,
};
