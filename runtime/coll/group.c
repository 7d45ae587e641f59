/*
 * group.c: groups (runtime/plexus_coll.h: px_group_world, px_group_split,
 * px_group_free, rank and size; px_group_from_peers, groups of connected
 * peers): the list of live groups and their context ids. The collectives that run on them are in
 * coll.c.
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
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"
#include "runtime/coll/coll_internal.h"
#include "runtime/plexus.h"

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
                  "px_group_split or px_group_from_peers and not freed)",
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

/* ---- groups of connected peers (px_group_from_peers) ----
 *
 * Peer ids are local to each process, so the members agree on an order by
 * exchanging who they are: every process has a random 64-bit identity
 * (drawn at px_init); the group is ordered by (the caller's key, identity).
 * The exchange runs on its own tag (PX_RT_COLL_FORM_TAG, below every
 * collective's and above none: the context id 2^19 - 1 that no group gets),
 * in two steps, each message carrying the sender's nonce for this call and
 * the nonce it answers, so a message left over from an earlier call that
 * failed (a member that never joined, a timeout) is recognised and dropped:
 *
 *   HELLO  (nonce, n, key, identity, next free context id) to every member
 *   ECHO   the same, answering a HELLO (echo = its nonce): a member's
 *          information counts only from an ECHO of this call's nonce
 *   DIGEST once every member answered: a hash of the ordered membership and
 *          the context id, to every member (echo = its nonce); the group is
 *          made when every member's digest matches this one's
 *   NAK    this member gave up (a different member count, membership or
 *          a timeout): the others fail at once instead of at their bound
 *
 * Every field of a received message is checked (it comes from another
 * process). The context id is the largest next free id of the members, and
 * every member moves its own past it, as px_group_split does. */

#define PX_RT_COLL_FORM_TAG (INT32_MIN + (int32_t)((PX_COLL_MAX_CTX + 1) * PX_COLL_SEQ_SPAN))
#define FORM_MAGIC          0x50584746u /* "PXGF" */
#define FORM_MAX_MEMBERS    (1 << 20)
enum { FORM_HELLO = 1, FORM_ECHO = 2, FORM_DIGEST = 3, FORM_NAK = 4 };
enum { NAK_COUNT = 1, NAK_DIGEST = 2, NAK_GAVE_UP = 3 };

typedef struct form_msg {
    uint32_t magic, type;
    uint64_t nonce;    /* the sender's nonce for this call */
    uint64_t echo;     /* the receiver's nonce this answers (0 in HELLO) */
    uint64_t ident;    /* the sender's identity */
    int32_t key;       /* the sender's key */
    uint32_t n;        /* members the sender listed */
    uint32_t next_ctx; /* the sender's next free context id */
    uint32_t reason;   /* NAK: why */
    uint64_t digest;   /* DIGEST: the ordered membership's hash */
} form_msg_t;

typedef struct form_member {
    int id;         /* this process's id of it (its rank or peer id) */
    bool self;      /* this process */
    bool answered;  /* its ECHO of this call arrived: the fields below are its */
    bool confirmed; /* its DIGEST of this call arrived and matches */
    uint64_t nonce; /* its latest nonce (from HELLO or ECHO) */
    uint64_t ident; /* identity, key, next free context id */
    int32_t key;
    uint32_t next_ctx;
    uint64_t digest;    /* its DIGEST's */
    form_msg_t in;      /* the receive buffer */
    px_request_t *rreq; /* the receive posted from it */
} form_member_t;

static uint64_t my_ident;

static uint64_t form_random64(void)
{
    uint64_t v = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (1 != fread(&v, sizeof v, 1, f))
            v = 0;
        fclose(f);
    }
    if (0 == v) /* no /dev/urandom: the clock and the pid, still distinct per process */
        v = ((uint64_t)getpid() << 32) ^ (uint64_t)(px_wtime() * 1e9) ^ 0x9e3779b97f4a7c15ull;
    return v ? v : 1;
}

typedef struct form_sorted {
    int32_t key;
    uint64_t ident;
    int index; /* into the members array */
} form_sorted_t;

static int cmp_sorted(const void *a, const void *b)
{
    const form_sorted_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->ident > y->ident) - (x->ident < y->ident);
}

static uint64_t fnv64(uint64_t h, const void *p, size_t len)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < len; ++i)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

/* Pending sends of this call (their buffers live until they complete). */
typedef struct form_sends {
    px_request_t **req;
    form_msg_t **buf;
    int n, cap;
} form_sends_t;

static void form_send(form_sends_t *fs, int dest, const form_msg_t *m)
{
    if (fs->n == fs->cap) {
        int ncap = fs->cap ? fs->cap * 2 : 16;
        px_request_t **r = realloc(fs->req, (size_t)ncap * sizeof *r);
        if (r)
            fs->req = r;
        form_msg_t **b = realloc(fs->buf, (size_t)ncap * sizeof *b);
        if (b)
            fs->buf = b;
        if (!r || !b)
            return; /* out of memory: the member times out, the error says so */
        fs->cap = ncap;
    }
    form_msg_t *copy = malloc(sizeof *copy);
    if (NULL == copy)
        return;
    *copy = *m;
    px_request_t *r = NULL;
    if (PX_SUCCESS != px_pml_isend(copy, sizeof *copy, dest, PX_RT_COLL_FORM_TAG, &r) || !r) {
        free(copy);
        return; /* a failed peer: its receive fails too, which names it */
    }
    fs->req[fs->n] = r;
    fs->buf[fs->n++] = copy;
}

/* Let go of the sends: the completed ones now; the others are given a
 * moment (they are small, eager: delivered or failed at once normally);
 * one a transport still holds keeps its buffer (a few bytes, on purpose). */
static void form_sends_fini(form_sends_t *fs)
{
    double until = px_wtime() + 1.0;
    for (;;) {
        bool left = false;
        for (int i = 0; i < fs->n; ++i)
            if (fs->req[i] && !px_pml_done(fs->req[i]))
                left = true;
        if (!left || px_wtime() > until)
            break;
        px_pml_progress_once();
    }
    for (int i = 0; i < fs->n; ++i) {
        bool done = px_pml_done(fs->req[i]);
        px_pml_release(&fs->req[i]);
        if (done)
            free(fs->buf[i]);
    }
    free(fs->req);
    free(fs->buf);
}

static const char *form_name(const form_member_t *m, char *buf, size_t len)
{
    return px_rt_peer_name(m->id, buf, len);
}

static bool form_msg_valid(const form_msg_t *m, size_t got)
{
    return got == sizeof *m && FORM_MAGIC == m->magic && m->type >= FORM_HELLO &&
           m->type <= FORM_NAK && 0 != m->nonce && 0 != m->ident && m->n >= 1 &&
           m->n <= FORM_MAX_MEMBERS && m->next_ctx <= PX_COLL_MAX_CTX + 1;
}

/* "member 2, peer N (...) (did not answer); ..." for the members not done. */
static void form_missing(const form_member_t *m, int n, char *who, size_t len)
{
    char name[300];
    who[0] = 0;
    for (int i = 0; i < n; ++i) {
        if (m[i].self || (m[i].answered && m[i].confirmed))
            continue;
        size_t u = strlen(who);
        snprintf(who + u, len - u, "%smembers[%d], %s (%s)", u ? "; " : "", i,
                 form_name(&m[i], name, sizeof name),
                 m[i].answered ? "answered but did not confirm the membership" : "did not answer");
    }
}

static int group_from_peers_locked(const int *ids, int n, int key, double timeout,
                                   px_group_t **group)
{
    static const char fn[] = "px_group_from_peers";
    if (!px_rt.initialized) {
        px_show_error("%s: called before px_init (or after px_finalize)", fn);
        return PX_ERR_NOT_INITIALIZED;
    }
    if (NULL == group || NULL == ids || n < 1 || n > FORM_MAX_MEMBERS || !(timeout > 0) ||
        timeout > 1e9) {
        px_show_error("%s: %s (accepted: the members' ids, 1 to %d of them, this process's "
                      "px_rank() among them; a timeout in seconds above 0; a group pointer)",
                      fn,
                      NULL == group                   ? "the group pointer is NULL"
                      : NULL == ids                   ? "the member list is NULL"
                      : n < 1 || n > FORM_MAX_MEMBERS ? "the member count is out of range"
                                                      : "the timeout is not a number of seconds "
                                                        "above 0",
                      FORM_MAX_MEMBERS);
        return PX_ERR_BAD_PARAM;
    }
    *group = NULL;
    form_member_t *m = calloc((size_t)n, sizeof *m);
    if (NULL == m)
        return PX_ERR_OUT_OF_RESOURCE;
    int me = -1, rc = PX_SUCCESS;
    char name[300], name2[300];
    for (int i = 0; i < n && PX_SUCCESS == rc; ++i) {
        m[i].id = ids[i];
        for (int j = 0; j < i; ++j)
            if (ids[j] == ids[i]) {
                px_show_error("%s: id %d is listed twice (members %d and %d); list every "
                              "member once",
                              fn, ids[i], j, i);
                rc = PX_ERR_BAD_PARAM;
            }
        if (PX_SUCCESS != rc)
            break;
        if (ids[i] == px_rt.rank) {
            m[i].self = true;
            me = i;
            continue;
        }
        px_rt_peer_t *p = px_rt_peer_find(ids[i]);
        if (NULL == p) {
            px_show_error("%s: members[%d], id %d, is neither a rank of this job (0..%d) nor a "
                          "connected peer (px_connect, px_accept; not disconnected)",
                          fn, i, ids[i], px_rt.size - 1);
            rc = PX_ERR_BAD_PARAM;
        } else if (p->failed) {
            px_show_error("%s: members[%d], %s, has failed or left (%s); a group needs live "
                          "members",
                          fn, i, px_rt_peer_name(ids[i], name, sizeof name),
                          px_strerror(p->failed));
            rc = PX_ERR_PEER_FAILED;
        }
    }
    if (PX_SUCCESS == rc && me < 0) {
        px_show_error("%s: this process (px_rank() = %d) is not among the %d members; every "
                      "member lists itself too",
                      fn, px_rt.rank, n);
        rc = PX_ERR_BAD_PARAM;
    }
    if (PX_SUCCESS != rc) {
        free(m);
        return rc;
    }
    if (0 == my_ident)
        my_ident = form_random64();
    uint64_t nonce = form_random64();
    form_msg_t out = {.magic = FORM_MAGIC,
                      .nonce = nonce,
                      .ident = my_ident,
                      .key = key,
                      .n = (uint32_t)n,
                      .next_ctx = next_ctx};
    m[me].answered = m[me].confirmed = true;
    m[me].ident = my_ident;
    m[me].key = key;
    m[me].next_ctx = next_ctx;
    form_sends_t fs = {0};
    for (int i = 0; i < n; ++i) {
        if (m[i].self)
            continue;
        form_msg_t h = out;
        h.type = FORM_HELLO;
        form_send(&fs, m[i].id, &h);
        if (PX_SUCCESS !=
            px_pml_irecv(&m[i].in, sizeof m[i].in, m[i].id, PX_RT_COLL_FORM_TAG, &m[i].rreq))
            m[i].rreq = NULL;
    }
    const double deadline = px_wtime() + timeout;
    int answered = 1, confirmed = 1;
    bool digest_sent = false;
    uint64_t digest = 0;
    uint32_t ctx = 0;
    form_sorted_t *order = NULL;
    int nak_reason = 0; /* we give up: tell the others why */
    while (PX_SUCCESS == rc && confirmed < n) {
        int got_any = 0;
        for (int i = 0; i < n && PX_SUCCESS == rc; ++i) {
            form_member_t *x = &m[i];
            if (x->self)
                continue;
            if (NULL == x->rreq) {
                px_show_error("%s: members[%d], %s: could not receive from it (it failed or "
                              "left)",
                              fn, i, form_name(x, name, sizeof name));
                rc = PX_ERR_PEER_FAILED;
                break;
            }
            if (!px_pml_done(x->rreq))
                continue;
            got_any++;
            px_status_t st = x->rreq->status;
            px_pml_release(&x->rreq);
            if (PX_SUCCESS != st.error && PX_ERR_TRUNCATE != st.error) {
                px_show_error("%s: members[%d], %s, failed while the group was being formed: %s",
                              fn, i, form_name(x, name, sizeof name), px_strerror(st.error));
                rc = st.error;
                break;
            }
            form_msg_t msg = x->in;
            if (!form_msg_valid(&msg, PX_ERR_TRUNCATE == st.error ? 0 : st.length)) {
                px_show_error("%s: members[%d], %s, sent a malformed group message (%zu bytes; "
                              "%zu expected, magic 0x%08x, type %u): dropped",
                              fn, i, form_name(x, name, sizeof name), st.length, sizeof msg,
                              msg.magic, msg.type);
            } else if (FORM_HELLO == msg.type) {
                x->nonce = msg.nonce;
                form_msg_t e = out;
                e.type = FORM_ECHO;
                e.echo = msg.nonce;
                form_send(&fs, x->id, &e);
            } else if (msg.echo != nonce) {
                /* left over from an earlier call: dropped */
            } else if (FORM_NAK == msg.type) {
                char who[1024];
                x->answered = x->confirmed = true; /* it is not the one missing */
                form_missing(m, n, who, sizeof who);
                px_show_error("%s: members[%d], %s, gave up forming the group: %s%s%s", fn, i,
                              form_name(x, name, sizeof name),
                              NAK_COUNT == msg.reason    ? "it lists another number of members"
                              : NAK_DIGEST == msg.reason ? "the members listed another membership"
                                                         : "it timed out or a member failed",
                              who[0] ? "; still missing here: " : "", who);
                rc = PX_ERR_GROUP_FAILED;
            } else if (FORM_ECHO == msg.type && !x->answered) {
                x->nonce = msg.nonce;
                if (msg.n != (uint32_t)n) {
                    px_show_error("%s: members[%d], %s, lists %u members, this process lists %d: "
                                  "every member must list the same processes",
                                  fn, i, form_name(x, name, sizeof name), msg.n, n);
                    nak_reason = NAK_COUNT;
                    rc = PX_ERR_BAD_PARAM;
                    break;
                }
                x->answered = true;
                x->ident = msg.ident;
                x->key = msg.key;
                x->next_ctx = msg.next_ctx;
                answered++;
            } else if (FORM_DIGEST == msg.type && !x->confirmed) {
                x->nonce = msg.nonce;
                x->digest = msg.digest; /* compared once ours is known (below) */
                x->confirmed = true;
                confirmed++;
            }
            if (PX_SUCCESS == rc && PX_SUCCESS != px_pml_irecv(&x->in, sizeof x->in, x->id,
                                                               PX_RT_COLL_FORM_TAG, &x->rreq))
                x->rreq = NULL;
        }
        if (PX_SUCCESS != rc)
            break;
        if (!digest_sent && answered == n) {
            /* Everyone answered: the order, the context id, the digest. */
            order = malloc((size_t)n * sizeof *order);
            if (NULL == order) {
                rc = PX_ERR_OUT_OF_RESOURCE;
                break;
            }
            ctx = 0;
            for (int i = 0; i < n; ++i) {
                order[i] = (form_sorted_t){m[i].key, m[i].ident, i};
                if (m[i].next_ctx > ctx)
                    ctx = m[i].next_ctx;
            }
            qsort(order, (size_t)n, sizeof *order, cmp_sorted);
            for (int i = 1; i < n; ++i)
                if (order[i].ident == order[i - 1].ident) {
                    px_show_error("%s: %s and %s are the same process (connected twice?): "
                                  "list each process once",
                                  fn, form_name(&m[order[i - 1].index], name, sizeof name),
                                  form_name(&m[order[i].index], name2, sizeof name2));
                    rc = PX_ERR_BAD_PARAM;
                }
            if (PX_SUCCESS != rc)
                break;
            if (ctx > PX_COLL_MAX_CTX) {
                px_show_error("%s: out of context ids (a member made %u groups; at most %u): "
                              "ids are not reused",
                              fn, ctx, PX_COLL_MAX_CTX);
                rc = PX_ERR_OUT_OF_RESOURCE;
                break;
            }
            digest = fnv64(0xcbf29ce484222325ull, &ctx, sizeof ctx);
            for (int i = 0; i < n; ++i) {
                digest = fnv64(digest, &order[i].key, sizeof order[i].key);
                digest = fnv64(digest, &order[i].ident, sizeof order[i].ident);
            }
            for (int i = 0; i < n; ++i) {
                if (m[i].self)
                    continue;
                form_msg_t d = out;
                d.type = FORM_DIGEST;
                d.echo = m[i].nonce;
                d.digest = digest;
                form_send(&fs, m[i].id, &d);
            }
            digest_sent = true;
        }
        if (digest_sent)
            for (int i = 0; i < n; ++i)
                if (!m[i].self && m[i].confirmed && m[i].digest != digest) {
                    px_show_error("%s: members[%d], %s, formed another group (other members, "
                                  "keys or order) from the same call: every member must list "
                                  "the same processes",
                                  fn, i, form_name(&m[i], name, sizeof name));
                    nak_reason = NAK_DIGEST;
                    rc = PX_ERR_BAD_PARAM;
                    break;
                }
        if (PX_SUCCESS != rc || (digest_sent && confirmed == n))
            break;
        if (px_wtime() > deadline) {
            char who[1024];
            form_missing(m, n, who, sizeof who);
            px_show_error("%s: the group of %d members was not formed within %g s: %s; a "
                          "member that did not call px_group_from_peers with this process "
                          "among its members, or is busy elsewhere, never answers",
                          fn, n, timeout, who);
            nak_reason = NAK_GAVE_UP;
            rc = PX_ERR_TIMEOUT;
            break;
        }
        if (0 == got_any)
            px_pml_progress_once();
    }
    if (PX_SUCCESS != rc) {
        if (!nak_reason)
            nak_reason = NAK_GAVE_UP;
        for (int i = 0; i < n; ++i)
            if (!m[i].self && m[i].nonce) {
                form_msg_t k = out;
                k.type = FORM_NAK;
                k.echo = m[i].nonce;
                k.reason = (uint32_t)nak_reason;
                form_send(&fs, m[i].id, &k);
            }
    }
    for (int i = 0; i < n; ++i)
        if (m[i].rreq)
            px_pml_release(&m[i].rreq);
    form_sends_fini(&fs);
    if (PX_SUCCESS != rc) {
        free(order);
        free(m);
        return rc;
    }
    int *world = malloc((size_t)n * sizeof(int));
    if (NULL == world) {
        free(order);
        free(m);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    int myrank = -1;
    for (int i = 0; i < n; ++i) {
        world[i] = m[order[i].index].id;
        if (order[i].index == me)
            myrank = i;
    }
    free(order);
    free(m);
    next_ctx = ctx + 1;
    return group_make(world, n, myrank, ctx, group);
}

int px_group_from_peers(const int *members, int n, int key, double timeout, px_group_t **group)
{
    PX_RT_API_CALL(group_from_peers_locked(members, n, key, timeout, group));
}

/* A collective on a group with connected peers failed: name the members
 * that failed (a dead one's connection closes: give the progress engine up
 * to `wait` seconds to see it). */
void px_rt_coll_name_failed(const px_coll_group_t *g, const char *fn, double wait)
{
    bool dyn = false;
    for (int i = 0; i < g->size; ++i)
        if (g->world[i] >= PX_RT_DYN_BASE)
            dyn = true;
    if (!dyn)
        return;
    double until = px_wtime() + wait;
    char name[300];
    for (;;) {
        int named = 0;
        for (int i = 0; i < g->size; ++i)
            if (i != g->rank && px_rt_rank_failed(g->world[i]))
                named++;
        if (named || px_wtime() >= until) {
            for (int i = 0; i < g->size; ++i)
                if (i != g->rank && px_rt_rank_failed(g->world[i]))
                    px_show_error("%s: group rank %d of the %d connected peers, %s, failed "
                                  "or left; the group is failed (px_group_free it; the others "
                                  "may form a new one)",
                                  fn, i, g->size, px_rt_peer_name(g->world[i], name, sizeof name));
            if (!named)
                px_show_error("%s: the group of %d connected peers failed; no member is known "
                              "to have failed yet (another member gave up)",
                              fn, g->size);
            return;
        }
        px_pml_progress_once();
    }
}
