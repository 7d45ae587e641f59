/*
 * coll_base_rules.c: the decision rules: which component serves which
 * operation at which message size and group size.
 *
 * Two sources, tried in this order, first match wins:
 *  1. the rules file named by coll_base_rules_file (optional), one rule a line:
 *         OP  GROUP-SIZES  BYTES  COMPONENT
 *     e.g. "allreduce 2-4 0-64k fullmesh"; ranges are N, LO-HI (inclusive),
 *     LO- (no upper end) or * (any); sizes take k, m, g suffixes (x1024);
 *     '#' starts a comment. A mistake is an error naming the file, the line
 *     and what is accepted;
 *  2. the built-in rules, made from the threshold variables
 *     (coll_base_<op>_<algorithm>_min), whose defaults were measured on the
 *     development machine (docs/coll.md, "Decision rules").
 * A rule naming a component that does not serve the group (excluded by
 * PX_MCA_coll, or it declined) is skipped; when none matches, the
 * highest-priority module providing the operation serves.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/coll/coll.h"

#define MAX_RULES 256

static px_coll_rule_t file_rules[MAX_RULES];
static int nfile_rules = 0;
static char *file_rules_path = NULL;
static px_coll_rule_t all_rules[MAX_RULES + 32];

/* The threshold variables (bytes; a message of at least this many goes to
 * the next algorithm up). Defaults measured here: docs/coll.md. */
size_t px_coll_base_bcast_binomial_min = 2048;
size_t px_coll_base_bcast_ring_min = 8 << 20;
size_t px_coll_base_allreduce_pair_ring_min = 4 * 1024;
size_t px_coll_base_allreduce_ring_min = 256 * 1024;
size_t px_coll_base_allgather_ring_min = 4 << 20;
size_t px_coll_base_reduce_scatter_ring_min = 4 * 1024;
size_t px_coll_base_alltoall_pairwise_min = 8 << 20;
/* coll/sm (a group whose members all share this host): at least this many
 * bytes go through it (single copy, or its shared segments). */
size_t px_coll_base_bcast_sm_min = 64 * 1024;
size_t px_coll_base_allgather_sm_min = 64 * 1024;
size_t px_coll_base_alltoall_sm_min = 64 * 1024;
size_t px_coll_base_reduce_scatter_sm_min = 64 * 1024;
size_t px_coll_base_allreduce_sm_min = 64 * 1024;
char *px_coll_base_rules_file = NULL;

#define PX_COLL_SM_MIN_VAR(op, what, var)                                                          \
    {                                                                                              \
        .name = op "_sm_min",                                                                      \
        .help = what " of at least this many bytes"                                                \
                     " on a group whose members all share this "                                   \
                     "host go through coll/sm (each byte copied once between the buffers, or "     \
                     "through its shared segments); smaller ones, and groups spanning hosts, the " \
                     "rules below",                                                                \
        .type = PX_MCA_VAR_TYPE_SIZE, .info_level = 5, .scope = PX_MCA_VAR_SCOPE_READONLY,         \
        .dflt = "64k", .min = "0", .max = "1024G", .storage = &(var)                               \
    }

static const px_mca_var_field_t px_coll_base_vars[] = {
    {.name = "rules_file",
     .help = "A file of decision rules tried before the built-in ones: one rule a line, "
             "\"OP GROUP-SIZES BYTES COMPONENT\" (e.g. \"allreduce 2-4 0-64k fullmesh\"; "
             "ranges N, LO-HI, LO- or *; sizes with k/m/g); empty: none (docs/coll.md)",
     .type = PX_MCA_VAR_TYPE_STRING,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .storage = &px_coll_base_rules_file},
    {.name = "bcast_binomial_min",
     .help = "Broadcasts of at least this many bytes use basic's binomial tree; smaller ones "
             "fullmesh's direct sends from the root",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "2k",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_base_bcast_binomial_min},
    {.name = "bcast_ring_min",
     .help = "Broadcasts of at least this many bytes use ring's scatter + ring allgather",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "8M",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_base_bcast_ring_min},
    {.name = "allreduce_pair_ring_min",
     .help = "In groups of two ranks, allreduces of at least this many bytes use ring's "
             "pipelined reduce-scatter + allgather (half the vector each way); smaller ones "
             "fullmesh's exchange of the whole vector",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "4k",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_base_allreduce_pair_ring_min},
    {.name = "allreduce_ring_min",
     .help = "In groups of three ranks or more, allreduces of at least this many bytes use "
             "ring's pipelined reduce-scatter + allgather; smaller ones fullmesh's recursive "
             "doubling (or its linear form when ranks outnumber cores)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "256k",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_base_allreduce_ring_min},
    {.name = "allgather_ring_min",
     .help = "Allgathers of at least this many bytes per rank use ring's allgather; smaller ones "
             "fullmesh's direct exchange",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "4M",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_base_allgather_ring_min},
    {.name = "reduce_scatter_ring_min",
     .help = "Reduce-scatters of at least this many bytes per rank use ring's reduce-scatter; "
             "smaller ones basic's reduce + scatter",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "4k",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_base_reduce_scatter_ring_min},
    {.name = "alltoall_pairwise_min",
     .help = "Alltoalls of at least this many bytes per pair use fullmesh's pairwise exchange "
             "(one peer a round); smaller ones basic's all-at-once exchange",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "8M",
     .min = "0",
     .max = "1024G",
     .storage = &px_coll_base_alltoall_pairwise_min},
    PX_COLL_SM_MIN_VAR("bcast", "Broadcasts", px_coll_base_bcast_sm_min),
    PX_COLL_SM_MIN_VAR("allgather", "Allgathers (bytes per rank)", px_coll_base_allgather_sm_min),
    PX_COLL_SM_MIN_VAR("alltoall", "Alltoalls (bytes per pair)", px_coll_base_alltoall_sm_min),
    PX_COLL_SM_MIN_VAR("reduce_scatter", "Reduce-scatters (bytes per rank)",
                       px_coll_base_reduce_scatter_sm_min),
    PX_COLL_SM_MIN_VAR("allreduce", "Allreduces", px_coll_base_allreduce_sm_min),
    {.name = NULL},
};

int px_coll_base_rules_register(void);
int px_coll_base_rules_register(void)
{
    return px_mca_var_register_table("coll", "base", px_coll_base_vars, -1, NULL);
}

static const char accepted_line[] =
    "a rule is \"OP GROUP-SIZES BYTES COMPONENT\": OP one of barrier, bcast, scatter, gather, "
    "reduce, allreduce, allgather, reduce_scatter, alltoall; GROUP-SIZES and BYTES each N, "
    "LO-HI (inclusive), LO- (no upper end) or * (sizes may end in k, m or g); COMPONENT a coll "
    "component";

static bool parse_num(const char *s, size_t len, bool sizes, size_t *out)
{
    if (0 == len)
        return false;
    char buf[32];
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (!isdigit((unsigned char)buf[0]))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno)
        return false;
    unsigned long long mul = 1;
    if (sizes && *end) {
        switch (*end) {
        case 'k':
        case 'K':
            mul = 1ull << 10;
            break;
        case 'm':
        case 'M':
            mul = 1ull << 20;
            break;
        case 'g':
        case 'G':
            mul = 1ull << 30;
            break;
        default:
            return false;
        }
        end++;
    }
    if (*end || v > SIZE_MAX / mul)
        return false;
    *out = (size_t)(v * mul);
    return true;
}

/* "N", "LO-HI", "LO-", "*" */
static bool parse_range(const char *s, bool sizes, size_t *lo, size_t *hi)
{
    if (0 == strcmp(s, "*")) {
        *lo = 0;
        *hi = SIZE_MAX;
        return true;
    }
    const char *dash = strchr(s, '-');
    if (NULL == dash)
        return parse_num(s, strlen(s), sizes, lo) && (*hi = *lo, true);
    if (!parse_num(s, (size_t)(dash - s), sizes, lo))
        return false;
    if ('\0' == dash[1]) {
        *hi = SIZE_MAX;
        return true;
    }
    return parse_num(dash + 1, strlen(dash + 1), sizes, hi) && *hi >= *lo;
}

static bool component_known(const char *name, char *known, size_t klen)
{
    const px_mca_component_t *list[32];
    int n = px_mca_repository_list("coll", list, 32);
    bool found = false;
    known[0] = '\0';
    for (int i = 0; i < n && i < 32; ++i) {
        size_t used = strlen(known);
        snprintf(known + used, klen - used, "%s%s", i ? ", " : "", list[i]->component_name);
        if (0 == strcmp(list[i]->component_name, name))
            found = true;
    }
    return found;
}

int px_coll_base_rules_load(const char *path)
{
    if (NULL == path)
        path = px_coll_base_rules_file;
    nfile_rules = 0;
    free(file_rules_path);
    file_rules_path = NULL;
    if (NULL == path || '\0' == *path)
        return PX_SUCCESS;
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        px_show_error("coll_base_rules_file = \"%s\": cannot open it: %s (give a readable file of "
                      "rules, or leave the variable empty)",
                      path, strerror(errno));
        return PX_ERR_BAD_PARAM;
    }
    file_rules_path = strdup(path);
    char line[1024];
    int lineno = 0, rc = PX_SUCCESS;
    static char sources[MAX_RULES][64];
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *tok[6];
        int n = 0;
        for (char *save = NULL, *t = strtok_r(line, " \t\r\n", &save); t;
             t = strtok_r(NULL, " \t\r\n", &save)) {
            if (n < 6)
                tok[n] = t;
            n++;
        }
        if (0 == n)
            continue;
        const char *what = NULL;
        char detail[512] = "";
        px_coll_rule_t r;
        memset(&r, 0, sizeof(r));
        r.opid = -1;
        if (n != 4) {
            snprintf(detail, sizeof(detail), "%d fields where a rule has 4", n);
            what = detail;
        }
        if (NULL == what) {
            for (int k = 0; k < PX_COLL_NOPS; ++k)
                if (0 == strcmp(tok[0], px_coll_op_name(k)))
                    r.opid = k;
            if (r.opid < 0) {
                snprintf(detail, sizeof(detail), "\"%.64s\" is not an operation", tok[0]);
                what = detail;
            }
        }
        size_t lo, hi;
        if (NULL == what) {
            if (!parse_range(tok[1], false, &lo, &hi) || lo > INT32_MAX) {
                snprintf(detail, sizeof(detail), "group sizes \"%.64s\" are not a range", tok[1]);
                what = detail;
            } else {
                r.gmin = (int)lo;
                r.gmax = hi >= (size_t)INT32_MAX ? -1 : (int)hi;
            }
        }
        if (NULL == what) {
            if (!parse_range(tok[2], true, &r.bmin, &r.bmax)) {
                snprintf(detail, sizeof(detail), "bytes \"%.64s\" are not a range", tok[2]);
                what = detail;
            }
        }
        if (NULL == what) {
            char known[256];
            if (strlen(tok[3]) >= sizeof(r.component) ||
                !component_known(tok[3], known, sizeof(known))) {
                snprintf(detail, sizeof(detail), "\"%.64s\" is not a coll component (known: %s)",
                         tok[3], known);
                what = detail;
            } else {
                snprintf(r.component, sizeof(r.component), "%s", tok[3]);
            }
        }
        if (NULL == what && nfile_rules >= MAX_RULES) {
            snprintf(detail, sizeof(detail), "more than %d rules", MAX_RULES);
            what = detail;
        }
        if (what) {
            px_show_error("coll_base_rules_file: %s:%d: %s; %s", path, lineno, what, accepted_line);
            rc = PX_ERR_BAD_PARAM;
            break;
        }
        snprintf(sources[nfile_rules], sizeof(sources[0]), "rules file line %d", lineno);
        r.source = sources[nfile_rules];
        file_rules[nfile_rules++] = r;
    }
    fclose(f);
    if (rc != PX_SUCCESS)
        nfile_rules = 0;
    return rc;
}

static int add_builtin_g(px_coll_rule_t *out, int n, int opid, int gmin, int gmax, size_t bmin,
                         size_t bmax, const char *comp, const char *src)
{
    if (bmin > bmax || (bmax != SIZE_MAX && bmax + 1 == bmin))
        return n; /* empty range (a threshold of 0) */
    px_coll_rule_t *r = &out[n];
    memset(r, 0, sizeof(*r));
    r->opid = opid;
    r->gmin = gmin;
    r->gmax = gmax;
    r->bmin = bmin;
    r->bmax = bmax;
    snprintf(r->component, sizeof(r->component), "%s", comp);
    r->source = src;
    return n + 1;
}

static int add_builtin(px_coll_rule_t *out, int n, int opid, size_t bmin, size_t bmax,
                       const char *comp, const char *src)
{
    return add_builtin_g(out, n, opid, 2, -1, bmin, bmax, comp, src);
}

/* Below / at-or-above a threshold. */
static int split2(px_coll_rule_t *out, int n, int opid, size_t t, const char *below,
                  const char *above, const char *var)
{
    if (t > 0)
        n = add_builtin(out, n, opid, 0, t - 1, below, var);
    return add_builtin(out, n, opid, t, SIZE_MAX, above, var);
}

int px_coll_base_rules(const px_coll_rule_t **rules)
{
    int n = 0;
    for (int i = 0; i < nfile_rules; ++i)
        all_rules[n++] = file_rules[i];
    n = add_builtin(all_rules, n, PX_COLL_BARRIER, 0, SIZE_MAX, "fullmesh", "built-in");
    /* coll/sm first: it serves only groups on one host (it declines the
     * others, and a rule naming a component that does not serve the group is
     * skipped), so across hosts and below the thresholds the rules after
     * these decide as before. */
    n = add_builtin(all_rules, n, PX_COLL_BCAST, px_coll_base_bcast_sm_min, SIZE_MAX, "sm",
                    "coll_base_bcast_sm_min");
    n = add_builtin(all_rules, n, PX_COLL_ALLGATHER, px_coll_base_allgather_sm_min, SIZE_MAX, "sm",
                    "coll_base_allgather_sm_min");
    n = add_builtin(all_rules, n, PX_COLL_ALLTOALL, px_coll_base_alltoall_sm_min, SIZE_MAX, "sm",
                    "coll_base_alltoall_sm_min");
    n = add_builtin(all_rules, n, PX_COLL_REDUCE_SCATTER, px_coll_base_reduce_scatter_sm_min,
                    SIZE_MAX, "sm", "coll_base_reduce_scatter_sm_min");
    n = add_builtin(all_rules, n, PX_COLL_ALLREDUCE, px_coll_base_allreduce_sm_min, SIZE_MAX, "sm",
                    "coll_base_allreduce_sm_min");
    size_t b1 = px_coll_base_bcast_binomial_min, b2 = px_coll_base_bcast_ring_min;
    if (b2 < b1)
        b1 = b2;
    if (b1 > 0)
        n = add_builtin(all_rules, n, PX_COLL_BCAST, 0, b1 - 1, "fullmesh",
                        "coll_base_bcast_binomial_min");
    if (b2 > b1)
        n = add_builtin(all_rules, n, PX_COLL_BCAST, b1, b2 - 1, "basic", "coll_base_bcast_*_min");
    n = add_builtin(all_rules, n, PX_COLL_BCAST, b2, SIZE_MAX, "ring", "coll_base_bcast_ring_min");
    n = add_builtin(all_rules, n, PX_COLL_SCATTER, 0, SIZE_MAX, "basic", "built-in");
    n = add_builtin(all_rules, n, PX_COLL_GATHER, 0, SIZE_MAX, "basic", "built-in");
    n = add_builtin(all_rules, n, PX_COLL_REDUCE, 0, SIZE_MAX, "basic", "built-in");
    size_t t2 = px_coll_base_allreduce_pair_ring_min, t = px_coll_base_allreduce_ring_min;
    if (t2 > 0)
        n = add_builtin_g(all_rules, n, PX_COLL_ALLREDUCE, 2, 2, 0, t2 - 1, "fullmesh",
                          "coll_base_allreduce_pair_ring_min");
    n = add_builtin_g(all_rules, n, PX_COLL_ALLREDUCE, 2, 2, t2, SIZE_MAX, "ring",
                      "coll_base_allreduce_pair_ring_min");
    if (t > 0)
        n = add_builtin_g(all_rules, n, PX_COLL_ALLREDUCE, 3, -1, 0, t - 1, "fullmesh",
                          "coll_base_allreduce_ring_min");
    n = add_builtin_g(all_rules, n, PX_COLL_ALLREDUCE, 3, -1, t, SIZE_MAX, "ring",
                      "coll_base_allreduce_ring_min");
    n = split2(all_rules, n, PX_COLL_ALLGATHER, px_coll_base_allgather_ring_min, "fullmesh", "ring",
               "coll_base_allgather_ring_min");
    n = split2(all_rules, n, PX_COLL_REDUCE_SCATTER, px_coll_base_reduce_scatter_ring_min, "basic",
               "ring", "coll_base_reduce_scatter_ring_min");
    n = split2(all_rules, n, PX_COLL_ALLTOALL, px_coll_base_alltoall_pairwise_min, "basic",
               "fullmesh", "coll_base_alltoall_pairwise_min");
    *rules = all_rules;
    return n;
}

void px_coll_base_rules_fini(void);
void px_coll_base_rules_fini(void)
{
    nfile_rules = 0;
    free(file_rules_path);
    file_rules_path = NULL;
}
