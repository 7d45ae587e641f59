/*
 * coll_base.c: the coll framework object, opening it with the runtime's
 * point-to-point table, the per-group module stacks (every component queried
 * for the group, modules sorted by priority, per operation the ones that
 * provide it), and choosing the module of one call from the decision rules.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/coll/coll.h"

const px_coll_p2p_t *px_coll_base_p2p = NULL;
/* coll_base_verbose >= 20 (each call's module), read at open. */
static bool verbose_calls = false;

int px_coll_base_rules_register(void);
void px_coll_base_rules_fini(void);
int px_coll_base_tag(px_coll_group_t *g, uint32_t seq);
extern char *px_coll_base_rules_file;

static const char *const px_coll_base_fp_names[] = {"px_coll_component_t", "px_coll_module_t",
                                                    "px_coll_sched_t", "px_coll_args_t", NULL};
static const uint32_t px_coll_base_fp_sizes[PX_COLL_API_MINOR + 1][PX_MCA_FINGERPRINT_FW_SIZES] = {
    [0] = {sizeof(px_coll_component_t), PX_COLL_MODULE_SIZE_1_0, sizeof(px_coll_sched_t),
           sizeof(px_coll_args_t)},
    [1] = {sizeof(px_coll_component_t), sizeof(px_coll_module_t), sizeof(px_coll_sched_t),
           sizeof(px_coll_args_t)},
};

static int px_coll_base_register(void)
{
    return px_coll_base_rules_register();
}

px_mca_framework_t px_coll_base_framework = {
    .name = "coll",
    .description = "Collective operations over groups of ranks (barrier, bcast, ..., alltoall)",
    .api_version = {PX_COLL_API_MAJOR, PX_COLL_API_MINOR, PX_COLL_API_RELEASE},
    .register_fn = px_coll_base_register,
    .open_fn = NULL,
    .close_fn = NULL,
    .fp_size_names = px_coll_base_fp_names,
    .fp_sizes = px_coll_base_fp_sizes,
};

int px_coll_base_open(const px_coll_p2p_t *p2p)
{
    px_coll_base_p2p = p2p;
    int rc = px_mca_framework_open(&px_coll_base_framework);
    if (rc != PX_SUCCESS)
        return rc;
    verbose_calls = px_output_check(px_coll_base_framework.output, 20);
    rc = px_coll_base_rules_load(px_coll_base_rules_file);
    if (rc != PX_SUCCESS) {
        px_mca_framework_close(&px_coll_base_framework);
        return rc;
    }
    return PX_SUCCESS;
}

int px_coll_base_close(void)
{
    px_coll_base_rules_fini();
    px_coll_base_p2p = NULL;
    return px_mca_framework_close(&px_coll_base_framework);
}

/* Module m's blocking shortcut for `op` (NULL: none, or its component was
 * built for API 1.0 and its module has no run[]). */
static px_coll_run_fn run_of(const px_coll_group_t *g, const px_coll_module_t *m, int op)
{
    for (int k = 0; k < g->nmodules; ++k)
        if (g->modules[k] == m)
            return g->module_has_run[k] ? m->run[op] : NULL;
    return NULL;
}

/* Resolve the rules for this group's size into per-operation choices. */
static void resolve_rules(px_coll_group_t *g)
{
    const px_coll_rule_t *rules;
    int n = px_coll_base_rules(&rules);
    for (int op = 0; op < PX_COLL_NOPS; ++op)
        g->nchoice[op] = 0;
    for (int i = 0; i < n; ++i) {
        const px_coll_rule_t *r = &rules[i];
        if (g->size < r->gmin || (r->gmax >= 0 && g->size > r->gmax))
            continue;
        px_coll_module_t *m = NULL;
        for (int k = 0; k < g->nstack[r->opid] && !m; ++k)
            if (0 == strcmp(g->stack[r->opid][k]->name, r->component))
                m = g->stack[r->opid][k];
        if (NULL == m) {
            PX_OUTPUT_VERBOSE(10, px_coll_base_framework.output,
                              "coll: rule for %s (%s) names %s, which does not serve this group",
                              px_coll_op_name(r->opid), r->source, r->component);
            continue;
        }
        if (g->nchoice[r->opid] < PX_COLL_MAX_CHOICES) {
            px_coll_choice_t *c = &g->choice[r->opid][g->nchoice[r->opid]++];
            c->bmin = r->bmin;
            c->bmax = r->bmax;
            c->module = m;
            c->run = run_of(g, m, r->opid);
        }
    }
}

int px_coll_base_group_init(px_coll_group_t *g)
{
    g->nmodules = 0;
    g->failed = 0;
    g->failed_rank = -1;
    g->alert_req = NULL;
    px_mca_component_item_t *it;
    PX_LIST_FOREACH(it, &px_coll_base_framework.components, px_mca_component_item_t)
    {
        const px_coll_component_t *c = (const px_coll_component_t *)it->component;
        if (NULL == c->query || g->nmodules >= PX_COLL_MAX_MODULES)
            continue;
        int prio = -1;
        px_coll_module_t *m = NULL;
        if (c->query(g, &prio, &m) != PX_SUCCESS || prio < 0 || NULL == m) {
            PX_OUTPUT_VERBOSE(10, px_coll_base_framework.output,
                              "coll: %s declined a group of %d ranks", c->base.component_name,
                              g->size);
            continue;
        }
        /* Insert sorted by priority, highest first (stable). */
        int k = g->nmodules++;
        while (k > 0 && g->priorities[k - 1] < prio) {
            g->modules[k] = g->modules[k - 1];
            g->priorities[k] = g->priorities[k - 1];
            g->module_has_run[k] = g->module_has_run[k - 1];
            k--;
        }
        g->modules[k] = m;
        g->priorities[k] = prio;
        /* run[] exists only in modules built for API 1.1 or later. */
        g->module_has_run[k] = c->base.framework_version.minor >= 1;
    }
    for (int op = 0; op < PX_COLL_NOPS; ++op) {
        g->nstack[op] = 0;
        for (int k = 0; k < g->nmodules; ++k)
            if (g->modules[k]->op[op])
                g->stack[op][g->nstack[op]++] = g->modules[k];
        g->stack_run[op] = g->nstack[op] ? run_of(g, g->stack[op][0], op) : NULL;
        if (0 == g->nstack[op]) {
            px_show_error("coll: no component provides %s for a group of %d ranks (selection "
                          "variable coll = \"%s\"; basic provides every operation)",
                          px_coll_op_name(op), g->size,
                          px_coll_base_framework.selection ? px_coll_base_framework.selection : "");
            px_coll_base_group_fini(g);
            return PX_ERR_NOT_FOUND;
        }
    }
    resolve_rules(g);
    if (g->size > 1) {
        int rc = px_coll_base_p2p->irecv(&g->alert_byte, 0, PX_COLL_ANY_SOURCE,
                                         px_coll_base_tag(g, PX_COLL_SEQ_ALERT), &g->alert_req);
        if (rc != PX_SUCCESS) {
            px_coll_base_group_fini(g);
            return rc;
        }
    }
    return PX_SUCCESS;
}

void px_coll_base_group_fini(px_coll_group_t *g)
{
    if (g->alert_req && px_coll_base_p2p)
        px_coll_base_p2p->release(&g->alert_req);
    for (int k = 0; k < g->nmodules; ++k)
        if (g->modules[k]->group_free)
            g->modules[k]->group_free(g, g->modules[k]);
    g->nmodules = 0;
}

px_coll_module_t *px_coll_base_choose(px_coll_group_t *g, int opid, size_t bytes,
                                      px_coll_run_fn *run)
{
    for (int i = 0; i < g->nchoice[opid]; ++i) {
        const px_coll_choice_t *c = &g->choice[opid][i];
        if (bytes >= c->bmin && bytes <= c->bmax) {
            if (run)
                *run = c->run;
            return c->module;
        }
    }
    if (run)
        *run = g->stack_run[opid];
    return g->nstack[opid] ? g->stack[opid][0] : NULL;
}

/* Build `s` for `a` with module `m` (falling back down the stack on
 * PX_ERR_NOT_SUPPORTED), its messages carrying `tag`. */
static int build_tagged(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s,
                        px_coll_module_t *m, int tag)
{
    int rc = PX_ERR_NOT_FOUND;
    s->tag = tag;
    if (m)
        rc = m->op[a->opid](g, a, s);
    /* The chosen module passed: the rest of the stack, in order. */
    for (int k = 0; PX_ERR_NOT_SUPPORTED == rc && k < g->nstack[a->opid]; ++k) {
        px_coll_module_t *next = g->stack[a->opid][k];
        if (next == m)
            continue;
        px_coll_sched_fini(s);
        px_coll_sched_init(s, g, a->opid, s->heap);
        s->tag = tag;
        rc = next->op[a->opid](g, a, s);
    }
    return rc;
}

static inline int next_tag(px_coll_group_t *g)
{
    int tag = (int)((int64_t)INT32_MIN + (int64_t)g->ctx * PX_COLL_SEQ_SPAN + g->seq);
    if (++g->seq == PX_COLL_SEQ_ALERT)
        g->seq = 0;
    return tag;
}

int px_coll_base_build(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t bytes = a->count * px_coll_dtype_bytes(a->dtype);
    px_coll_module_t *m = px_coll_base_choose(g, a->opid, bytes, NULL);
    PX_OUTPUT_VERBOSE(20, px_coll_base_framework.output, "coll: %s of %zu bytes on %d ranks: %s",
                      px_coll_op_name(a->opid), bytes, g->size, m ? m->name : "(none)");
    return build_tagged(g, a, s, m, next_tag(g));
}

/* A blocking call through a schedule (kept out of px_coll_base_blocking,
 * whose shortcut path then has no schedule on its stack). */
static PX_NOINLINE int blocking_sched(px_coll_group_t *g, const px_coll_args_t *a,
                                      px_coll_module_t *m, int tag)
{
    px_coll_sched_t s;
    px_coll_sched_init(&s, g, a->opid, false);
    int rc = build_tagged(g, a, &s, m, tag);
    if (rc != PX_SUCCESS)
        px_show_error("%s: could not prepare the collective on a group of %d ranks: %s",
                      px_coll_op_name(a->opid), g->size, px_strerror(rc));
    else
        rc = px_coll_sched_run(&s);
    px_coll_sched_fini(&s);
    return rc;
}

int px_coll_base_blocking(px_coll_group_t *g, const px_coll_args_t *a)
{
    size_t bytes = a->count * px_coll_dtype_bytes(a->dtype);
    px_coll_run_fn run;
    px_coll_module_t *m = px_coll_base_choose(g, a->opid, bytes, &run);
    int tag = next_tag(g);
    if (PX_UNLIKELY(verbose_calls))
        px_output(px_coll_base_framework.output, "coll: %s of %zu bytes on %d ranks: %s%s",
                  px_coll_op_name(a->opid), bytes, g->size, m ? m->name : "(none)",
                  run ? " (blocking shortcut)" : "");
    int rc = PX_ERR_NOT_SUPPORTED;
    if (run)
        rc = run(g, a, tag);
    if (PX_ERR_NOT_SUPPORTED == rc)
        rc = blocking_sched(g, a, m, tag);
    /* Finished here; fails when the group failed meanwhile (docs/coll.md,
     * "Failures": a late member matches the messages of members that gave
     * up, then their notices). */
    return px_coll_base_settle(g, a->opid, rc, true);
}
