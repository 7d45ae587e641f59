/*
 * group.c: groups (runtime/plexus_coll.h: px_group_world, px_group_split,
 * px_group_free, rank and size): the list of live groups and their context
 * ids. The collectives that run on them are in coll.c.
 *
 * Context ids: the world group has 0. px_group_split allgathers (color, key,
 * next free id) over the parent; the new groups take ids from the largest
 * next free id upward, one per color, and every parent member moves its next
 * free id past them. So no two groups sharing a pair of ranks ever share an
 * id, and their tags (INT32_MIN + id * 4096 + sequence) never meet.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/coll/coll_internal.h"

px_coll_group_t *px_rt_coll_world_group = NULL;
static px_coll_group_t **groups = NULL; /* every live group (world first) */
static int ngroups = 0, groups_cap = 0;
static uint32_t next_ctx = 1;

static int groups_add(px_coll_group_t *g)
{
    if (ngroups == groups_cap) {
        int ncap = groups_cap ? groups_cap * 2 : 8;
        px_coll_group_t **n = realloc(groups, (size_t)ncap * sizeof(*n));
        if (NULL == n)
            return PX_ERR_OUT_OF_RESOURCE;
        groups = n;
        groups_cap = ncap;
    }
    groups[ngroups++] = g;
    return PX_SUCCESS;
}

static void group_destroy(px_coll_group_t *g)
{
    for (int i = 0; i < ngroups; ++i)
        if (groups[i] == g) {
            groups[i] = groups[--ngroups];
            break;
        }
    px_coll_base_group_fini(g);
    free(g->world);
    free(g);
}

/* A group of `size` ranks whose world ranks are `world` (taken), this
 * process at `rank`, context `ctx`. */
static int group_make(int *world, int size, int rank, uint32_t ctx, px_coll_group_t **out)
{
    px_coll_group_t *g = calloc(1, sizeof(*g));
    if (NULL == g) {
        free(world);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    g->world = world;
    g->size = size;
    g->rank = rank;
    g->ctx = ctx;
    int rc = px_coll_base_group_init(g);
    if (PX_SUCCESS == rc)
        rc = groups_add(g);
    if (rc != PX_SUCCESS) {
        px_coll_base_group_fini(g);
        free(world);
        free(g);
        return rc;
    }
    *out = g;
    return PX_SUCCESS;
}

int px_rt_coll_world(void)
{
    int *world = malloc((size_t)px_rt.size * sizeof(int));
    if (NULL == world)
        return PX_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < px_rt.size; ++i)
        world[i] = i;
    next_ctx = 1;
    return group_make(world, px_rt.size, px_rt.rank, 0, &px_rt_coll_world_group);
}

void px_rt_coll_groups_fini(void)
{
    while (ngroups > 0)
        group_destroy(groups[ngroups - 1]);
    free(groups);
    groups = NULL;
    groups_cap = 0;
    px_rt_coll_world_group = NULL;
}

px_group_t *px_group_world(void)
{
    return px_rt.initialized ? px_rt_coll_world_group : NULL;
}

bool px_rt_coll_group_ok(const px_coll_group_t *g, const char *fn)
{
    if (PX_LIKELY(g == px_rt_coll_world_group && NULL != g))
        return true; /* px_rt_coll_world_group is NULL outside px_init .. px_finalize */
    if (!px_rt.initialized) {
        px_show_error("%s: called before px_init (or after px_finalize)", fn);
        return false;
    }
    for (int i = 0; g && i < ngroups; ++i)
        if (groups[i] == g)
            return true;
    px_show_error("%s: the group %p is not a live group (px_group_world() or one made by "
                  "px_group_split and not freed)",
                  fn, (const void *)g);
    return false;
}

int px_group_rank(const px_group_t *g)
{
    return px_rt_coll_group_ok(g, "px_group_rank") ? g->rank : PX_ERR_BAD_PARAM;
}

int px_group_size(const px_group_t *g)
{
    return px_rt_coll_group_ok(g, "px_group_size") ? g->size : PX_ERR_BAD_PARAM;
}

int px_group_world_rank(const px_group_t *g, int rank)
{
    if (!px_rt_coll_group_ok(g, "px_group_world_rank"))
        return PX_ERR_BAD_PARAM;
    if (rank < 0 || rank >= g->size)
        return PX_ERR_BAD_PARAM;
    return g->world[rank];
}

static int group_free_locked(px_group_t **group)
{
    if (NULL == group || !px_rt_coll_group_ok(*group, "px_group_free"))
        return PX_ERR_BAD_PARAM;
    if (*group == px_rt_coll_world_group) {
        px_show_error("px_group_free: the world group cannot be freed (it lives until "
                      "px_finalize)");
        return PX_ERR_BAD_PARAM;
    }
    if (px_rt_coll_group_busy(*group)) {
        px_show_error("px_group_free: a non-blocking collective on this group is still in "
                      "progress (complete it with px_wait or px_test first)");
        return PX_ERR_BAD_PARAM;
    }
    group_destroy(*group);
    *group = NULL;
    return PX_SUCCESS;
}

int px_group_free(px_group_t **group)
{
    PX_RT_API_CALL(group_free_locked(group));
}

typedef struct split_entry {
    int32_t color, key, next_ctx;
} split_entry_t;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int group_split_locked(px_group_t *parent, int color, int key, px_group_t **newgroup)
{
    if (!px_rt_coll_group_ok(parent, "px_group_split"))
        return PX_ERR_BAD_PARAM;
    if (NULL == newgroup || (color < 0 && color != PX_UNDEFINED)) {
        px_show_error("px_group_split: color %d is invalid (valid: >= 0, or PX_UNDEFINED to join "
                      "no group)%s",
                      color, newgroup ? "" : "; and newgroup is NULL");
        return PX_ERR_BAD_PARAM;
    }
    *newgroup = NULL;
    int p = parent->size;
    split_entry_t mine = {color, key, (int32_t)next_ctx};
    split_entry_t *all = malloc((size_t)p * sizeof(*all));
    int *colors = malloc((size_t)p * sizeof(int));
    if (NULL == all || NULL == colors) {
        free(all);
        free(colors);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int rc = px_allgather(&mine, all, 3, PX_INT32, parent);
    if (rc != PX_SUCCESS) {
        free(all);
        free(colors);
        return rc;
    }
    uint32_t base = 0;
    int ncolors = 0;
    for (int i = 0; i < p; ++i) {
        if ((uint32_t)all[i].next_ctx > base)
            base = (uint32_t)all[i].next_ctx;
        if (all[i].color >= 0)
            colors[ncolors++] = all[i].color;
    }
    qsort(colors, (size_t)ncolors, sizeof(int), cmp_int);
    int distinct = 0, my_index = -1;
    for (int i = 0; i < ncolors; ++i) {
        if (i && colors[i] == colors[i - 1])
            continue;
        if (colors[i] == color)
            my_index = distinct;
        distinct++;
    }
    free(colors);
    if ((uint64_t)base + (uint64_t)distinct > PX_COLL_MAX_CTX) {
        free(all);
        px_show_error("px_group_split: out of context ids (%u groups made in this job; at most "
                      "%u): free groups you no longer need is not enough, ids are not reused",
                      base, PX_COLL_MAX_CTX);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    next_ctx = base + (uint32_t)distinct;
    if (PX_UNDEFINED == color) {
        free(all);
        return PX_SUCCESS;
    }
    /* Members: parent ranks of my color, by (key, parent rank). */
    int n = 0;
    int *members = malloc((size_t)p * sizeof(int));
    if (NULL == members) {
        free(all);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < p; ++i)
        if (all[i].color == color) {
            int k = n++;
            while (k > 0 && (all[members[k - 1]].key > all[i].key))
                members[k] = members[k - 1], k--;
            members[k] = i;
        }
    int myrank = -1;
    for (int i = 0; i < n; ++i) {
        if (members[i] == parent->rank)
            myrank = i;
        members[i] = parent->world[members[i]];
    }
    free(all);
    return group_make(members, n, myrank, base + (uint32_t)my_index, newgroup);
}

int px_group_split(px_group_t *parent, int color, int key, px_group_t **newgroup)
{
    PX_RT_API_CALL(group_split_locked(parent, color, key, newgroup));
}
