/*
 * job_vars.c: px_init's check that every rank of the job gives each job-wide
 * variable (scope PX_MCA_VAR_SCOPE_ALL, core/mca/var.h) the same value.
 *
 * Each rank publishes one 64-bit hash of its job-wide names and parsed values
 * with the transports' addresses (no extra fence). After the address fence
 * every rank reads every rank's hash: equal everywhere, done. Otherwise every
 * rank has seen the same hashes, so all take the slow path together: the
 * lowest rank of each distinct setting (up to PX_RT_JOB_VARS_GROUPS of them)
 * publishes its list of names, values and sources, one more fence, and every
 * rank compares those lists. A variable with different values fails px_init
 * on every rank (PX_ERR_BAD_PARAM) before any transport attaches to a peer;
 * the lowest rank of each setting prints the variables, the ranks and their
 * values. A variable that only some ranks have (a component missing on some
 * nodes) is not an error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"
#include "frameworks/boot/boot.h"
#include "runtime/job_vars.h"
#include "runtime/proc/proc.h"

#define KEY_HASH "rt.vars.hash"
#define KEY_LIST "rt.vars.list"
/* Distinct settings compared in detail; ranks with yet others are counted. */
#define PX_RT_JOB_VARS_GROUPS 16

int px_rt_job_vars_publish(void)
{
    if (px_rt.size < 2)
        return PX_SUCCESS;
    uint64_t h;
    int rc = px_mca_var_scope_all_values(NULL, NULL, &h);
    if (PX_SUCCESS == rc)
        rc = px_boot->put(KEY_HASH, &h, sizeof(h));
    if (rc != PX_SUCCESS)
        px_show_error("px_init: boot %s: publishing the job-wide variables' hash failed: %s",
                      px_boot->name, px_strerror(rc));
    return rc;
}

/* One rank's list: `n` variables, each four texts (see
 * px_mca_var_scope_all_values). */
typedef struct {
    char *buf;
    size_t n;
    const char **t; /* [4 * n] */
} vlist_t;

/* Split a list received from a peer (`len` bytes in l->buf): false when it
 * is malformed (not whole NUL-terminated texts, four per variable). */
static bool vlist_split(vlist_t *l, size_t len)
{
    size_t texts = 0;
    for (size_t i = 0; i < len; i++)
        texts += '\0' == l->buf[i];
    if (len > 0 && l->buf[len - 1] != '\0')
        return false;
    if (texts % 4 != 0)
        return false;
    l->n = texts / 4;
    l->t = malloc(sizeof(*l->t) * (texts ? texts : 1));
    if (!l->t)
        return false;
    size_t at = 0;
    for (size_t k = 0; k < texts; k++) {
        l->t[k] = l->buf + at;
        at += strlen(l->buf + at) + 1;
    }
    return true;
}

/* "0, 2-5, 7" for the ranks whose group is `g` (at most about 200 chars). */
static char *rank_list(const int *gid, int size, int g, int *count)
{
    char *s = strdup("");
    int n = 0;
    for (int r = 0; r < size && s; r++) {
        if (gid[r] != g)
            continue;
        int e = r;
        while (e + 1 < size && gid[e + 1] == g)
            e++;
        n += e - r + 1;
        if (strlen(s) < 200) {
            char *next = e > r ? px_asprintf("%s%s%d-%d", s, s[0] ? ", " : "", r, e)
                               : px_asprintf("%s%s%d", s, s[0] ? ", " : "", r);
            free(s);
            s = next;
        } else if (s[strlen(s) - 1] != '.') {
            char *next = px_asprintf("%s, ...", s);
            free(s);
            s = next;
        }
        r = e;
    }
    *count = n;
    return s;
}

static const char *vlist_find(const vlist_t *l, const char *name, int k)
{
    for (size_t i = 0; i < l->n; i++)
        if (0 == strcmp(l->t[4 * i], name))
            return l->t[4 * i + k];
    return NULL;
}

/* The report of every variable on which the groups' lists disagree; NULL
 * when none does (or out of memory: *oom). */
static char *compare_lists(const vlist_t *lists, int ng, const int *gid, int size, bool *oom)
{
    char *msg = NULL;
    *oom = false;
    for (int g = 0; g < ng; g++) {
        for (size_t i = 0; i < lists[g].n; i++) {
            const char *name = lists[g].t[4 * i];
            /* Each name once: from the first group that has it. */
            bool seen = false;
            for (int e = 0; e < g && !seen; e++)
                seen = vlist_find(&lists[e], name, 0) != NULL;
            if (seen)
                continue;
            const char *canon = lists[g].t[4 * i + 1];
            bool differs = false;
            for (int e = g + 1; e < ng && !differs; e++) {
                const char *c = vlist_find(&lists[e], name, 1);
                differs = c && strcmp(c, canon) != 0;
            }
            if (!differs)
                continue;
            /* "  name: "v" on ranks 0, 2-3 (default at rank 0); "w" on rank 1 (...)" */
            char *line = px_asprintf("\n  %s:", name);
            bool done[PX_RT_JOB_VARS_GROUPS] = {false}, first = true;
            for (int e = 0; e < ng && line; e++) {
                const char *c = vlist_find(&lists[e], name, 1);
                if (!c || done[e])
                    continue;
                /* Groups with the same value share one entry. */
                int *merged = malloc(sizeof(int) * (size_t)size);
                if (!merged) {
                    free(line);
                    line = NULL;
                    break;
                }
                for (int r = 0; r < size; r++) {
                    int gr = gid[r];
                    const char *cr = gr >= 0 ? vlist_find(&lists[gr], name, 1) : NULL;
                    merged[r] = (gr >= 0 && !done[gr] && cr && 0 == strcmp(cr, c)) ? 0 : -1;
                }
                for (int f = e; f < ng; f++) {
                    const char *cf = vlist_find(&lists[f], name, 1);
                    if (cf && 0 == strcmp(cf, c))
                        done[f] = true;
                }
                int cnt = 0;
                char *ranks = rank_list(merged, size, 0, &cnt);
                free(merged);
                bool first_entry = first;
                first = false;
                int rep = -1;
                for (int r = 0; r < size && rep < 0; r++)
                    if (gid[r] == e)
                        rep = r;
                char *next = px_asprintf("%s%s \"%s\" on rank%s %s (%s at rank %d)", line,
                                         first_entry ? "" : ";", vlist_find(&lists[e], name, 2),
                                         cnt > 1 ? "s" : "", ranks ? ranks : "?",
                                         vlist_find(&lists[e], name, 3), rep);
                free(ranks);
                free(line);
                line = next;
            }
            char *next = line ? px_asprintf("%s%s", msg ? msg : "", line) : NULL;
            free(line);
            free(msg);
            msg = next;
            if (!msg) {
                *oom = true;
                return NULL;
            }
        }
    }
    return msg;
}

int px_rt_job_vars_check(void)
{
    if (px_rt.size < 2)
        return PX_SUCCESS;
    const int size = px_rt.size;
    int rc = PX_SUCCESS;
    uint64_t *hash = malloc(sizeof(*hash) * (size_t)size);
    int *gid = malloc(sizeof(*gid) * (size_t)size);
    if (!hash || !gid) {
        free(hash);
        free(gid);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    bool all_equal = true;
    for (int r = 0; r < size && PX_SUCCESS == rc; r++) {
        void *d = NULL;
        size_t len = 0;
        rc = px_boot->get(r, KEY_HASH, &d, &len);
        if (PX_SUCCESS == rc && len != sizeof(uint64_t)) {
            px_show_error("px_init: rank %d published a %zu-byte hash of its job-wide variables "
                          "(expected %zu bytes: a different Plexus build?)",
                          r, len, sizeof(uint64_t));
            rc = PX_ERR_BAD_PARAM;
        } else if (rc != PX_SUCCESS) {
            px_show_error("px_init: boot %s: rank %d's hash of its job-wide variables could not "
                          "be read: %s (a different Plexus build?)",
                          px_boot->name, r, px_strerror(rc));
        } else {
            memcpy(&hash[r], d, sizeof(uint64_t));
            all_equal = all_equal && hash[r] == hash[0];
        }
        free(d);
    }
    if (rc != PX_SUCCESS || all_equal) {
        free(hash);
        free(gid);
        return rc;
    }

    /* Group the ranks by hash, in rank order: group g's lowest rank is rep[g]. */
    int rep[PX_RT_JOB_VARS_GROUPS], ng = 0, others = 0;
    for (int r = 0; r < size; r++) {
        gid[r] = -1;
        for (int g = 0; g < ng && gid[r] < 0; g++)
            if (hash[rep[g]] == hash[r])
                gid[r] = g;
        if (gid[r] < 0 && ng < PX_RT_JOB_VARS_GROUPS) {
            rep[ng] = r;
            gid[r] = ng++;
        } else if (gid[r] < 0) {
            others++;
        }
    }
    free(hash);

    /* The slow path, on every rank alike: the representatives publish their
     * lists; one more fence. */
    int mine = gid[px_rt.rank];
    if (mine >= 0 && rep[mine] == px_rt.rank) {
        char *buf = NULL;
        size_t len = 0;
        rc = px_mca_var_scope_all_values(&buf, &len, NULL);
        if (PX_SUCCESS == rc)
            rc = px_boot->put(KEY_LIST, buf, len);
        free(buf);
    }
    int rc2 = px_boot->commit();
    if (PX_SUCCESS == rc2)
        rc2 = px_boot->fence();
    if (rc != PX_SUCCESS || rc2 != PX_SUCCESS) {
        px_show_error("px_init: boot %s: the ranks' job-wide variables differ, and exchanging "
                      "them to say which failed: %s",
                      px_boot->name, px_strerror(rc != PX_SUCCESS ? rc : rc2));
        free(gid);
        return rc != PX_SUCCESS ? rc : rc2;
    }

    vlist_t lists[PX_RT_JOB_VARS_GROUPS];
    memset(lists, 0, sizeof(lists));
    for (int g = 0; g < ng && PX_SUCCESS == rc; g++) {
        void *d = NULL;
        size_t len = 0;
        rc = px_boot->get(rep[g], KEY_LIST, &d, &len);
        lists[g].buf = d;
        if (PX_SUCCESS == rc && !vlist_split(&lists[g], len)) {
            px_show_error("px_init: rank %d's list of job-wide variables is malformed (%zu "
                          "bytes)",
                          rep[g], len);
            rc = PX_ERR_BAD_PARAM;
        } else if (rc != PX_SUCCESS) {
            px_show_error("px_init: boot %s: rank %d's list of job-wide variables could not be "
                          "read: %s",
                          px_boot->name, rep[g], px_strerror(rc));
        }
    }
    bool oom = false;
    char *report = PX_SUCCESS == rc ? compare_lists(lists, ng, gid, size, &oom) : NULL;
    if (PX_SUCCESS == rc && oom)
        rc = PX_ERR_OUT_OF_RESOURCE;
    if (PX_SUCCESS == rc && report) {
        /* Every rank fails; the lowest rank of each setting says why. */
        if (mine >= 0 && rep[mine] == px_rt.rank) {
            char *more = others ? px_asprintf("\n  (%d more rank%s with yet other settings not "
                                              "compared)",
                                              others, others > 1 ? "s" : "")
                                : NULL;
            px_show_error("px_init: job-wide variables differ between the ranks of the job; "
                          "every rank must give each of them the same value (scope \"all\", "
                          "docs/parameters.md):%s%s",
                          report, more ? more : "");
            free(more);
        }
        rc = PX_ERR_BAD_PARAM;
    }
    free(report);
    for (int g = 0; g < ng; g++) {
        free(lists[g].buf);
        free(lists[g].t);
    }
    free(gid);
    return rc;
}
