/*
 * rcache_test.c: unit tests of the BTL registration cache
 * (frameworks/btl/base/rcache.c): reference counts, hits on sub-ranges and
 * flags, LRU eviction by count and bytes, retry after an out-of-resource
 * registration, and invalidation by px_rcache_invalidate and by munmap.
 */
#define _GNU_SOURCE
#include "test/lib/px_check.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/util/error.h"
#include "frameworks/btl/base/rcache.h"

typedef struct {
    px_rcache_entry_t base;
    int id;
} test_entry_t;

static int n_reg, n_dereg, fail_next_with_oor, next_id;
static px_rcache_entry_t *last_dereg; /* compared, never dereferenced: it is freed */
static int last_dereg_id;

static int test_reg(void *ctx, px_rcache_entry_t *e)
{
    (void)ctx;
    if (fail_next_with_oor) {
        fail_next_with_oor--;
        return PX_ERR_OUT_OF_RESOURCE;
    }
    ((test_entry_t *)e)->id = ++next_id;
    n_reg++;
    return PX_SUCCESS;
}

static int test_dereg(void *ctx, px_rcache_entry_t *e)
{
    (void)ctx;
    n_dereg++;
    last_dereg = e;
    last_dereg_id = ((test_entry_t *)e)->id;
    return PX_SUCCESS;
}

static px_rcache_t *make_cache(size_t max_entries, size_t max_bytes)
{
    px_rcache_params_t p = {.name = "test",
                            .entry_size = sizeof(test_entry_t),
                            .register_fn = test_reg,
                            .deregister_fn = test_dereg,
                            .max_entries = max_entries,
                            .max_bytes = max_bytes};
    px_rcache_t *c = NULL;
    ck_assert_int_eq(px_rcache_create(&p, &c), PX_SUCCESS);
    n_reg = n_dereg = fail_next_with_oor = 0;
    last_dereg = NULL;
    return c;
}

static long page;

START_TEST(refcount_and_hits)
{
    px_rcache_t *c = make_cache(0, 0);
    char *buf = aligned_alloc((size_t)page, 4 * (size_t)page);
    px_rcache_entry_t *a, *b, *d;
    ck_assert_int_eq(px_rcache_register(c, buf, 3 * (size_t)page, 0x3, &a), PX_SUCCESS);
    ck_assert_int_eq(a->refcount, 1);
    ck_assert_uint_eq(a->base, (uintptr_t)buf);
    ck_assert_uint_eq(a->bound, (uintptr_t)buf + 3 * (size_t)page);
    /* a sub-range with a subset of the flags is a hit on the same entry */
    ck_assert_int_eq(px_rcache_register(c, buf + 10, 100, 0x1, &b), PX_SUCCESS);
    ck_assert_ptr_eq(a, b);
    ck_assert_int_eq(a->refcount, 2);
    /* more flags, or a range beyond it, is a new registration */
    ck_assert_int_eq(px_rcache_register(c, buf, 100, 0x4, &d), PX_SUCCESS);
    ck_assert_ptr_ne(d, a);
    ck_assert_int_eq(n_reg, 2);
    px_rcache_stats_t st;
    px_rcache_get_stats(c, &st);
    ck_assert_uint_eq(st.hits, 1);
    ck_assert_uint_eq(st.misses, 2);
    ck_assert_int_eq(px_rcache_release(b), PX_SUCCESS);
    ck_assert_int_eq(a->refcount, 1);
    ck_assert_int_eq(px_rcache_release(a), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_release(d), PX_SUCCESS);
    /* released entries stay registered (cached) */
    ck_assert_int_eq(n_dereg, 0);
    px_rcache_get_stats(c, &st);
    ck_assert_uint_eq(st.unused, 2);
    /* and are found again */
    ck_assert_int_eq(px_rcache_register(c, buf + page, 10, 0x2, &b), PX_SUCCESS);
    ck_assert_ptr_eq(b, a);
    ck_assert_int_eq(n_reg, 2);
    /* releasing too often is an error, not a crash */
    ck_assert_int_eq(px_rcache_release(b), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_release(b), PX_ERR_BAD_PARAM);
    px_rcache_destroy(c);
    ck_assert_int_eq(n_dereg, 2);
    free(buf);
}
END_TEST

START_TEST(lru_eviction_by_count)
{
    px_rcache_t *c = make_cache(2, 0);
    char *buf = aligned_alloc((size_t)page, 8 * (size_t)page);
    px_rcache_entry_t *e[3];
    for (int i = 0; i < 3; ++i)
        ck_assert_int_eq(px_rcache_register(c, buf + 2 * i * page, 10, 0, &e[i]), PX_SUCCESS);
    /* all three in use: over the limit, but nothing unused to evict */
    ck_assert_int_eq(n_dereg, 0);
    int id0 = ((test_entry_t *)e[0])->id;
    /* use e[0] again so e[1] becomes the least recently released */
    ck_assert_int_eq(px_rcache_release(e[1]), PX_SUCCESS); /* now unused, over limit: evicted */
    ck_assert_int_eq(n_dereg, 1);
    ck_assert_ptr_eq(last_dereg, e[1]);
    ck_assert_int_eq(px_rcache_release(e[0]), PX_SUCCESS); /* 2 entries: within limit */
    ck_assert_int_eq(px_rcache_release(e[2]), PX_SUCCESS);
    ck_assert_int_eq(n_dereg, 1);
    /* a new one pushes out the least recently used: e[0] */
    px_rcache_entry_t *x;
    ck_assert_int_eq(px_rcache_register(c, buf + 7 * page, 10, 0, &x), PX_SUCCESS);
    ck_assert_int_eq(n_dereg, 2);
    ck_assert_int_eq(last_dereg_id, id0);
    px_rcache_stats_t st;
    px_rcache_get_stats(c, &st);
    ck_assert_uint_eq(st.entries, 2);
    ck_assert_uint_eq(st.evictions, 2);
    ck_assert_int_eq(px_rcache_release(x), PX_SUCCESS);
    px_rcache_destroy(c);
    free(buf);
}
END_TEST

START_TEST(lru_eviction_by_bytes_and_oor_retry)
{
    px_rcache_t *c = make_cache(0, 3 * (size_t)page);
    char *buf = aligned_alloc((size_t)page, 8 * (size_t)page);
    px_rcache_entry_t *a, *b;
    ck_assert_int_eq(px_rcache_register(c, buf, 2 * (size_t)page, 0, &a), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_release(a), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_register(c, buf + 4 * page, 2 * (size_t)page, 0, &b), PX_SUCCESS);
    /* 4 pages > 3: the unused one goes */
    ck_assert_int_eq(n_dereg, 1);
    ck_assert_ptr_eq(last_dereg, a);
    ck_assert_int_eq(px_rcache_release(b), PX_SUCCESS);
    /* the provider runs out: the cache drops everything unused and retries */
    fail_next_with_oor = 1;
    ck_assert_int_eq(px_rcache_register(c, buf + 7 * page, 10, 0, &a), PX_SUCCESS);
    ck_assert_int_eq(n_dereg, 2);
    ck_assert_int_eq(px_rcache_release(a), PX_SUCCESS);
    /* twice in a row: the error reaches the caller */
    fail_next_with_oor = 2;
    ck_assert_int_eq(px_rcache_register(c, buf, 10, 0x8, &a), PX_ERR_OUT_OF_RESOURCE);
    px_rcache_destroy(c);
    free(buf);
}
END_TEST

START_TEST(invalidate_explicit)
{
    px_rcache_t *c = make_cache(0, 0);
    char *buf = aligned_alloc((size_t)page, 4 * (size_t)page);
    px_rcache_entry_t *a, *b;
    ck_assert_int_eq(px_rcache_register(c, buf, 10, 0, &a), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_register(c, buf + 2 * page, 10, 0, &b), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_release(b), PX_SUCCESS);
    px_rcache_invalidate(buf, 4 * (size_t)page);
    /* the in-use one is only marked; the unused one goes at the next call */
    ck_assert(a->invalid);
    px_rcache_entry_t *a2;
    ck_assert_int_eq(px_rcache_register(c, buf, 10, 0, &a2), PX_SUCCESS);
    ck_assert_ptr_ne(a2, a); /* never handed out again */
    ck_assert_int_eq(n_dereg, 1);
    ck_assert_int_eq(px_rcache_release(a), PX_SUCCESS); /* last user: deregistered now */
    ck_assert_int_eq(n_dereg, 2);
    ck_assert_ptr_eq(last_dereg, a);
    ck_assert_int_eq(px_rcache_release(a2), PX_SUCCESS);
    /* a range that does not overlap leaves it alone */
    px_rcache_invalidate(buf + 3 * page, (size_t)page);
    ck_assert_int_eq(px_rcache_register(c, buf, 10, 0, &a), PX_SUCCESS);
    ck_assert_ptr_eq(a, a2);
    ck_assert_int_eq(px_rcache_release(a), PX_SUCCESS);
    px_rcache_stats_t st;
    px_rcache_get_stats(c, &st);
    ck_assert_uint_eq(st.invalidations, 2);
    px_rcache_destroy(c);
    free(buf);
}
END_TEST

START_TEST(invalidate_on_munmap)
{
    ck_assert_msg(px_rcache_hooks_active(),
                  "libplexus's munmap interposer is not reached in this process");
    px_rcache_t *c = make_cache(0, 0);
    size_t len = 4 * (size_t)page;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    px_rcache_entry_t *a, *b;
    ck_assert_int_eq(px_rcache_register(c, m, len, 0, &a), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_register(c, m + page, 10, 0, &b), PX_SUCCESS);
    ck_assert_ptr_eq(a, b);
    ck_assert_int_eq(px_rcache_release(b), PX_SUCCESS);
    /* unmapping one page in the middle invalidates the whole registration */
    ck_assert_int_eq(munmap(m + 2 * page, (size_t)page), 0);
    ck_assert(a->invalid);
    ck_assert_int_eq(n_dereg, 0);
    ck_assert_int_eq(px_rcache_release(a), PX_SUCCESS);
    ck_assert_int_eq(n_dereg, 1);
    /* mremap of what is left invalidates too */
    ck_assert_int_eq(px_rcache_register(c, m, 10, 0, &a), PX_SUCCESS);
    ck_assert_int_eq(px_rcache_release(a), PX_SUCCESS);
    char *m2 = mremap(m, (size_t)page, 2 * (size_t)page, MREMAP_MAYMOVE);
    ck_assert_ptr_ne(m2, MAP_FAILED);
    ck_assert_int_eq(px_rcache_register(c, m2, 10, 0, &b), PX_SUCCESS); /* reaps the dead one */
    ck_assert_int_eq(n_dereg, 2);
    ck_assert_int_eq(px_rcache_release(b), PX_SUCCESS);
    px_rcache_destroy(c);
    munmap(m2, 2 * (size_t)page);
    munmap(m + page, (size_t)page);
    munmap(m + 3 * page, (size_t)page);
}
END_TEST

START_TEST(bad_params)
{
    px_rcache_t *c = (px_rcache_t *)1;
    px_rcache_params_t p = {.entry_size = 4, .register_fn = test_reg, .deregister_fn = test_dereg};
    ck_assert_int_eq(px_rcache_create(&p, &c), PX_ERR_BAD_PARAM);
    ck_assert_ptr_null(c);
    p.entry_size = sizeof(test_entry_t);
    p.register_fn = NULL;
    ck_assert_int_eq(px_rcache_create(&p, &c), PX_ERR_BAD_PARAM);
}
END_TEST

int main(void)
{
    page = sysconf(_SC_PAGESIZE);
    const TTest *tests[] = {
        refcount_and_hits,   lru_eviction_by_count, lru_eviction_by_bytes_and_oor_retry,
        invalidate_explicit, invalidate_on_munmap,  bad_params};
    Suite *s = suite_create("rcache");
    suite_add_tcase(s, px_check_tcase("rcache", NULL, NULL, 0, tests, PX_CHECK_COUNT(tests)));
    return px_check_run(s);
}
