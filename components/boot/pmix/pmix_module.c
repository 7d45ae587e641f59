/*
 * pmix_module.c: boot/pmix module: a PMIx client.
 *  - init: PMIx_Init, then rank (from the client's proc), size (PMIX_JOB_SIZE),
 *    job id (the namespace) and the ranks on this host (PMIX_LOCAL_PEERS);
 *  - hostname: PMIX_HOSTNAME of the peer, fetched on first use and cached;
 *  - locality: HOST for the ranks in PMIX_LOCAL_PEERS (or, when the server
 *    does not give that key, for ranks whose PMIX_HOSTNAME equals ours), and
 *    NUMA when both locality strings are known and PMIx says they share one;
 *  - modex: PMIx_Put(PMIX_GLOBAL) of byte objects, PMIx_Commit, PMIx_Fence
 *    with PMIX_COLLECT_DATA (bounded by boot_pmix_fence_timeout), PMIx_Get;
 *  - session_dir: the job's folder on this node that the resource manager
 *    made and promises to remove (PMIX_NSDIR with PMIX_TDIR_RMCLEAN: Slurm's
 *    srun --mpi=pmix gives <TmpFS>/spmix_appdir_<uid>_<job>.<step>); the
 *    base keeps the job's scratch folder inside it. Without it (Open MPI 4.1's
 *    mpirun gives neither key) the base makes one under $TMPDIR.
 *  - register_cleanup: PMIx_Job_control_nb with PMIX_REGISTER_CLEANUP (a
 *    file the server removes when this process ends) or, for the whole
 *    namespace, PMIX_REGISTER_CLEANUP_DIR with PMIX_CLEANUP_EMPTY (a folder
 *    removed at the job's end if empty), answered within 5 s.
 * Every PMIx failure is printed with the call, PMIx_Error_string and the key.
 */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "components/boot/pmix/pmix.h"
#include "components/boot/pmix/pmix_lib.h"
#include "core/mca/framework.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/proc.h"

static pmix_proc_t px_pmix_me;
static bool px_pmix_initialized;
static char **px_pmix_hosts;    /* [size], fetched lazily */
static uint32_t *px_pmix_local; /* [size] locality bits, filled at init */
static char *px_pmix_my_locstr; /* our PMIX_LOCALITY_STRING, or NULL */
static char *px_pmix_nsdir;     /* the launcher's per-job folder here, or NULL */

static int px_pmix_fail(const char *call, pmix_status_t rc, const char *what)
{
    px_show_error("boot/pmix: %s%s%s failed: %s (PMIx status %d)", call, what ? " of " : "",
                  what ? what : "", PMIx_Error_string(rc), (int)rc);
    switch (rc) {
    case PMIX_ERR_NOT_FOUND:
        return PX_ERR_NOT_FOUND;
    case PMIX_ERR_TIMEOUT:
        return PX_ERR_TIMEOUT;
    case PMIX_ERR_NOMEM:
        return PX_ERR_OUT_OF_RESOURCE;
    case PMIX_ERR_UNREACH:
        return PX_ERR_UNREACH;
    default:
        return PX_ERROR;
    }
}

/* PMIx_Get of a job-level (wildcard rank) or a peer's key; NULL when absent. */
static pmix_value_t *px_pmix_get_value(pmix_rank_t rank, const char *key, bool optional,
                                       pmix_status_t *status)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&proc, px_pmix_me.nspace, rank);
    pmix_info_t info;
    bool immediate = true;
    /* Job-level and host data are local to the server: do not let a
     * missing key turn into a wait for the peer to publish it. */
    PMIX_INFO_LOAD(&info, PMIX_IMMEDIATE, &immediate, PMIX_BOOL);
    pmix_status_t rc = PMIx_Get(&proc, key, &info, 1, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (status)
        *status = rc;
    if (PMIX_SUCCESS != rc || NULL == val) {
        if (!optional)
            px_pmix_fail("PMIx_Get", rc, key);
        return NULL;
    }
    return val;
}

static char *px_pmix_get_string(pmix_rank_t rank, const char *key, bool optional)
{
    pmix_value_t *val = px_pmix_get_value(rank, key, optional, NULL);
    char *s = NULL;
    if (val && PMIX_STRING == val->type && val->data.string)
        s = strdup(val->data.string);
    if (val)
        PMIX_VALUE_RELEASE(val);
    return s;
}

static void px_pmix_mark_local_from_list(const char *list)
{
    const char *p = list;
    while (p && *p) {
        char *end;
        long r = strtol(p, &end, 10);
        if (end == p)
            break;
        if (r >= 0 && r < px_boot_pmix_module.size)
            px_pmix_local[r] |= PX_PROC_LOCAL_HOST;
        p = ('\0' == *end) ? end : end + 1;
    }
}

/* The job's folder on this node that the resource manager made and removes
 * at the end of the job: PMIX_NSDIR, taken only when the server also says
 * PMIX_TDIR_RMCLEAN (without that promise nobody would remove what a killed
 * job leaves), and only when it is a folder this process can write (a
 * container may not see the launcher's /tmp); otherwise NULL, and the base
 * makes a folder under $TMPDIR. */
static void px_pmix_find_nsdir(void)
{
    pmix_value_t *val = px_pmix_get_value(PMIX_RANK_WILDCARD, PMIX_TDIR_RMCLEAN, true, NULL);
    bool rmclean = val && PMIX_BOOL == val->type && val->data.flag;
    if (val)
        PMIX_VALUE_RELEASE(val);
    char *dir = px_pmix_get_string(PMIX_RANK_WILDCARD, PMIX_NSDIR, true);
    struct stat st;
    const char *why = NULL;
    if (NULL == dir)
        why = "the server gives no PMIX_NSDIR";
    else if (!rmclean)
        why = "the server does not promise to remove it (no PMIX_TDIR_RMCLEAN)";
    else if ('/' != dir[0] || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
             access(dir, W_OK | X_OK) != 0)
        why = "it is not a folder this process can write";
    PX_OUTPUT_VERBOSE(10, px_boot_base_framework.output,
                      "boot/pmix: rank %d: %s launcher's job folder %s%s%s",
                      px_boot_pmix_module.rank, why ? "not using the" : "using the",
                      dir ? dir : "(none)", why ? ": " : "", why ? why : "");
    if (why)
        free(dir);
    else
        px_pmix_nsdir = dir;
}

static int px_pmix_init(void)
{
    pmix_status_t rc = PMIx_Init(&px_pmix_me, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        const char *why = NULL;
        px_boot_pmix_env_present(&why);
        px_show_error("boot/pmix: PMIx_Init failed: %s (PMIx status %d); the environment "
                      "(%s) says a PMIx launcher started this process, but its server could "
                      "not be reached. Run under the launcher that set it, or unset the "
                      "PMIX_* variables to run as a singleton.",
                      PMIx_Error_string(rc), (int)rc, why ? why : "?");
        return PX_ERR_NOT_AVAILABLE;
    }
    px_pmix_initialized = true;

    pmix_value_t *val = px_pmix_get_value(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, false, NULL);
    if (NULL == val)
        return PX_ERROR;
    uint32_t size = 0;
    if (PMIX_UINT32 == val->type)
        size = val->data.uint32;
    else if (PMIX_INT == val->type)
        size = (uint32_t)val->data.integer;
    PMIX_VALUE_RELEASE(val);
    if (0 == size || px_pmix_me.rank >= size) {
        px_show_error("boot/pmix: PMIx gave job size %u and rank %u, which do not fit", size,
                      (unsigned)px_pmix_me.rank);
        return PX_ERROR;
    }
    px_boot_pmix_module.rank = (int)px_pmix_me.rank;
    px_boot_pmix_module.size = (int)size;
    px_boot_pmix_module.jobid = px_pmix_me.nspace;

    px_pmix_hosts = calloc(size, sizeof(char *));
    px_pmix_local = calloc(size, sizeof(uint32_t));
    if (NULL == px_pmix_hosts || NULL == px_pmix_local)
        return PX_ERR_OUT_OF_RESOURCE;

    char *peers = px_pmix_get_string(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, true);
    if (peers) {
        px_pmix_mark_local_from_list(peers);
        free(peers);
    } else {
        /* No PMIX_LOCAL_PEERS: same host name means same host. */
        const char *mine = px_boot_pmix_module.hostname(px_boot_pmix_module.rank);
        for (uint32_t r = 0; r < size && mine; ++r) {
            const char *h = px_boot_pmix_module.hostname((int)r);
            if (h && 0 == strcmp(h, mine))
                px_pmix_local[r] |= PX_PROC_LOCAL_HOST;
        }
    }
    px_pmix_local[px_pmix_me.rank] |= PX_PROC_LOCAL_SELF | PX_PROC_LOCAL_HOST;
    px_pmix_my_locstr = px_pmix_get_string(px_pmix_me.rank, PMIX_LOCALITY_STRING, true);
    px_pmix_find_nsdir();
    return PX_SUCCESS;
}

static const char *px_pmix_hostname(int rank)
{
    if (rank < 0 || rank >= px_boot_pmix_module.size || NULL == px_pmix_hosts)
        return NULL;
    if (NULL == px_pmix_hosts[rank]) {
        px_pmix_hosts[rank] = px_pmix_get_string((pmix_rank_t)rank, PMIX_HOSTNAME, true);
        if (NULL == px_pmix_hosts[rank]) {
            char buf[64];
            snprintf(buf, sizeof(buf), "unknown-host-of-rank-%d", rank);
            px_pmix_hosts[rank] = strdup(buf);
        }
    }
    return px_pmix_hosts[rank];
}

static uint32_t px_pmix_locality(int rank)
{
    if (rank < 0 || rank >= px_boot_pmix_module.size || NULL == px_pmix_local)
        return 0;
    uint32_t loc = px_pmix_local[rank];
    if ((loc & PX_PROC_LOCAL_HOST) && !(loc & PX_PROC_LOCAL_SELF) && px_pmix_my_locstr) {
        char *theirs = px_pmix_get_string((pmix_rank_t)rank, PMIX_LOCALITY_STRING, true);
        pmix_locality_t rel = 0;
        if (theirs && PMIX_SUCCESS == PMIx_Get_relative_locality(px_pmix_my_locstr, theirs, &rel) &&
            (rel & PMIX_LOCALITY_SHARE_NUMA))
            loc |= PX_PROC_LOCAL_NUMA;
        free(theirs);
        px_pmix_local[rank] = loc;
    }
    return loc;
}

static int px_pmix_put(const char *key, const void *data, size_t len)
{
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)data; /* PMIx_Put copies */
    val.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &val);
    if (PMIX_SUCCESS != rc)
        return px_pmix_fail("PMIx_Put", rc, key);
    return PX_SUCCESS;
}

static int px_pmix_commit(void)
{
    pmix_status_t rc = PMIx_Commit();
    return PMIX_SUCCESS == rc ? PX_SUCCESS : px_pmix_fail("PMIx_Commit", rc, NULL);
}

static int px_pmix_fence(void)
{
    pmix_info_t info[2];
    size_t ninfo = 1;
    bool collect = true;
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    if (px_boot_pmix_fence_timeout > 0) {
        int t = px_boot_pmix_fence_timeout;
        PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &t, PMIX_INT);
        ninfo = 2;
    }
    pmix_status_t rc = PMIx_Fence(NULL, 0, info, ninfo);
    for (size_t i = 0; i < ninfo; ++i)
        PMIX_INFO_DESTRUCT(&info[i]);
    if (PMIX_SUCCESS != rc)
        return px_pmix_fail("PMIx_Fence", rc, "the job (collecting modex data)");
    return PX_SUCCESS;
}

static int px_pmix_get(int rank, const char *key, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (rank < 0 || rank >= px_boot_pmix_module.size)
        return PX_ERR_BAD_PARAM;
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&proc, px_pmix_me.nspace, (pmix_rank_t)rank);
    /* After the collecting fence every peer's data is here: a key that is
     * missing was never published, so do not wait for it. */
    pmix_info_t info;
    bool optional = true;
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &optional, PMIX_BOOL);
    pmix_status_t rc = PMIx_Get(&proc, key, &info, 1, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (PMIX_ERR_NOT_FOUND == rc)
        return PX_ERR_NOT_FOUND; /* the peer did not publish it: the caller decides */
    if (PMIX_SUCCESS != rc || NULL == val) {
        char what[200];
        snprintf(what, sizeof(what), "key %s of rank %d", key, rank);
        return px_pmix_fail("PMIx_Get", rc, what);
    }
    int ret = PX_SUCCESS;
    if (PMIX_BYTE_OBJECT != val->type) {
        px_show_error("boot/pmix: key %s of rank %d holds PMIx type %d, not a byte object", key,
                      rank, (int)val->type);
        ret = PX_ERR_BAD_PARAM;
    } else {
        *len = val->data.bo.size;
        *data = malloc(*len ? *len : 1);
        if (NULL == *data)
            ret = PX_ERR_OUT_OF_RESOURCE;
        else if (*len)
            memcpy(*data, val->data.bo.bytes, *len);
    }
    PMIX_VALUE_RELEASE(val);
    return ret;
}

/* Say why on stderr first: neither Slurm's srun nor Open MPI 4.1's mpirun
 * prints the message given to PMIx_Abort, and the server may kill this
 * process before PMIx_Abort returns. */
static void px_pmix_abort(int status, const char *msg)
{
    fprintf(stderr, "plexus: rank %d aborted with status %d: %s\n", px_boot_pmix_module.rank,
            status, msg ? msg : "");
    fflush(stderr);
    if (px_pmix_initialized)
        PMIx_Abort(status, msg ? msg : "px_abort", NULL, 0);
    _exit(status > 0 && status < 256 ? status : 1);
}

static int px_pmix_finalize(void)
{
    int ret = PX_SUCCESS;
    if (px_pmix_initialized) {
        pmix_status_t rc = PMIx_Finalize(NULL, 0);
        if (PMIX_SUCCESS != rc)
            ret = px_pmix_fail("PMIx_Finalize", rc, NULL);
        px_pmix_initialized = false;
    }
    if (px_pmix_hosts) {
        for (int r = 0; r < px_boot_pmix_module.size; ++r)
            free(px_pmix_hosts[r]);
        free(px_pmix_hosts);
        px_pmix_hosts = NULL;
    }
    free(px_pmix_local);
    px_pmix_local = NULL;
    free(px_pmix_my_locstr);
    px_pmix_my_locstr = NULL;
    free(px_pmix_nsdir);
    px_pmix_nsdir = NULL;
    return ret;
}

static const char *px_pmix_session_dir(void)
{
    return px_pmix_nsdir;
}

/* PMIx_Job_control_nb's answer. Static: a late answer after the bounded
 * wait below must still find it. */
static struct {
    volatile int done;
    volatile pmix_status_t status;
    pmix_info_t info[2];
    size_t ninfo;
    char path[4096];
} px_pmix_cleanup_req;

static void px_pmix_cleanup_cb(pmix_status_t status, pmix_info_t *info, size_t ninfo, void *cbdata,
                               pmix_release_cbfunc_t release_fn, void *release_cbdata)
{
    (void)info;
    (void)ninfo;
    (void)cbdata;
    px_pmix_cleanup_req.status = status;
    __atomic_store_n(&px_pmix_cleanup_req.done, 1, __ATOMIC_RELEASE);
    if (release_fn)
        release_fn(release_cbdata);
}

/* Ask the PMIx server to remove `path`: a file when this process ends
 * (PMIX_REGISTER_CLEANUP for this process), or an empty folder when the job
 * ends (PMIX_REGISTER_CLEANUP_DIR for the whole namespace, with
 * PMIX_CLEANUP_EMPTY and no recursion). Bounded by a few seconds: a server
 * that never answers does not hold px_init up. */
static int px_pmix_register_cleanup(const char *path, int what)
{
    if (!px_pmix_initialized)
        return PX_ERR_NOT_INITIALIZED;
    if (__atomic_load_n(&px_pmix_cleanup_req.done, __ATOMIC_ACQUIRE) < 0)
        return PX_ERR_NOT_AVAILABLE; /* an earlier request is still unanswered */
    /* A comma separates paths in the value: such a path cannot be named. */
    if (strchr(path, ',') || strlen(path) >= sizeof px_pmix_cleanup_req.path)
        return PX_ERR_BAD_PARAM;
    bool dir = PX_BOOT_CLEANUP_EMPTY_DIR == what;
    snprintf(px_pmix_cleanup_req.path, sizeof px_pmix_cleanup_req.path, "%s", path);
    PMIX_INFO_LOAD(&px_pmix_cleanup_req.info[0],
                   dir ? PMIX_REGISTER_CLEANUP_DIR : PMIX_REGISTER_CLEANUP,
                   px_pmix_cleanup_req.path, PMIX_STRING);
    px_pmix_cleanup_req.ninfo = 1;
    if (dir) {
        bool yes = true;
        PMIX_INFO_LOAD(&px_pmix_cleanup_req.info[1], PMIX_CLEANUP_EMPTY, &yes, PMIX_BOOL);
        px_pmix_cleanup_req.ninfo = 2;
    }
    pmix_proc_t target;
    PMIX_LOAD_PROCID(&target, px_pmix_me.nspace, dir ? PMIX_RANK_WILDCARD : px_pmix_me.rank);
    __atomic_store_n(&px_pmix_cleanup_req.done, -1, __ATOMIC_RELAXED);
    pmix_status_t rc = PMIx_Job_control_nb(&target, 1, px_pmix_cleanup_req.info,
                                           px_pmix_cleanup_req.ninfo, px_pmix_cleanup_cb, NULL);
    if (PMIX_SUCCESS == rc) {
        for (int i = 0;
             i < 5000 && __atomic_load_n(&px_pmix_cleanup_req.done, __ATOMIC_ACQUIRE) < 0; i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        if (__atomic_load_n(&px_pmix_cleanup_req.done, __ATOMIC_ACQUIRE) < 0) {
            PX_OUTPUT_VERBOSE(1, px_boot_base_framework.output,
                              "boot/pmix: no answer to PMIX_REGISTER_CLEANUP of %s within 5 s",
                              path);
            return PX_ERR_TIMEOUT;
        }
        rc = px_pmix_cleanup_req.status;
    } else if (PMIX_OPERATION_SUCCEEDED == rc) {
        rc = PMIX_SUCCESS;
    }
    for (size_t i = 0; i < px_pmix_cleanup_req.ninfo; i++)
        PMIX_INFO_DESTRUCT(&px_pmix_cleanup_req.info[i]);
    __atomic_store_n(&px_pmix_cleanup_req.done, 0, __ATOMIC_RELAXED);
    if (PMIX_SUCCESS != rc) {
        PX_OUTPUT_VERBOSE(1, px_boot_base_framework.output,
                          "boot/pmix: the launcher does not take PMIX_REGISTER_CLEANUP of %s: %s",
                          path, PMIx_Error_string(rc));
        return PX_ERR_NOT_AVAILABLE;
    }
    PX_OUTPUT_VERBOSE(10, px_boot_base_framework.output,
                      "boot/pmix: the launcher removes %s when %s", path,
                      dir ? "the job ends (if empty then)" : "this process ends");
    return PX_SUCCESS;
}

px_boot_module_t px_boot_pmix_module = {
    .name = "pmix",
    .init = px_pmix_init,
    .rank = -1,
    .size = 0,
    .jobid = NULL,
    .hostname = px_pmix_hostname,
    .locality = px_pmix_locality,
    .put = px_pmix_put,
    .commit = px_pmix_commit,
    .fence = px_pmix_fence,
    .get = px_pmix_get,
    .abort = px_pmix_abort,
    .finalize = px_pmix_finalize,
    .session_dir = px_pmix_session_dir,
    .register_cleanup = px_pmix_register_cleanup,
};
