/*
 * coll_base.c: the coll framework object, opening it with the runtime's
 * point-to-point table, the per-group module stacks (every component queried
 * for the group, modules sorted by priority, per operation the ones that
 * provide it), and choosing the module of one call from the decision rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/coll/coll.h"

const px_coll_p2p_t *px_coll_base_p2p = NULL;

int px_coll_base_rules_register(void);
void px_coll_base_rules_fini(void);
int px_coll_base_tag(px_coll_group_t *g, uint32_t seq);
extern char *px_coll_base_rules_file;

static const char *const px_coll_base_fp_names[] = {"px_coll_component_t", "px_coll_module_t",
                                                    "px_coll_sched_t", "px_coll_args_t", NULL};
static const uint32_t px_coll_base_fp_sizes[PX_COLL_API_MINOR + 1][PX_MCA_FINGERPRINT_FW_SIZES] = {
    [0] = {sizeof(px_coll_component_t), sizeof(px_coll_module_t), sizeof(px_coll_sched_t),
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
            k--;
        }
        g->modules[k] = m;
        g->priorities[k] = prio;
    }
    for (int op = 0; op < PX_COLL_NOPS; ++op) {
        g->nstack[op] = 0;
        for (int k = 0; k < g->nmodules; ++k)
            if (g->modules[k]->op[op])
                g->stack[op][g->nstack[op]++] = g->modules[k];
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

px_coll_module_t *px_coll_base_choose(px_coll_group_t *g, int opid, size_t bytes)
{
    for (int i = 0; i < g->nchoice[opid]; ++i) {
        const px_coll_choice_t *c = &g->choice[opid][i];
        if (bytes >= c->bmin && bytes <= c->bmax)
            return c->module;
    }
    return g->nstack[opid] ? g->stack[opid][0] : NULL;
}

int px_coll_base_build(px_coll_group_t *g, const px_coll_args_t *a, px_coll_sched_t *s)
{
    size_t bytes = a->count * px_coll_dtype_size(a->dtype);
    px_coll_module_t *m = px_coll_base_choose(g, a->opid, bytes);
    s->tag = px_coll_base_tag(g, g->seq);
    g->seq = (g->seq + 1) % PX_COLL_SEQ_ALERT;
    int rc = PX_ERR_NOT_FOUND;
    if (m) {
        rc = m->op[a->opid](g, a, s);
        PX_OUTPUT_VERBOSE(20, px_coll_base_framework.output,
                          "coll: %s of %zu bytes on %d ranks: %s", px_coll_op_name(a->opid), bytes,
                          g->size, m->name);
    }
    /* The chosen module passed: the rest of the stack, in order. */
    for (int k = 0; PX_ERR_NOT_SUPPORTED == rc && k < g->nstack[a->opid]; ++k) {
        px_coll_module_t *next = g->stack[a->opid][k];
        if (next == m)
            continue;
        px_coll_sched_fini(s);
        px_coll_sched_init(s, g, a->opid, s->heap);
        s->tag = px_coll_base_tag(g, (g->seq + PX_COLL_SEQ_ALERT - 1) % PX_COLL_SEQ_ALERT);
        rc = next->op[a->opid](g, a, s);
    }
    return rc;
}
