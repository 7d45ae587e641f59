/*
 * class_init_fail_test.c: a class whose first-use initialisation cannot
 * allocate. This program compiles its own copy of the object system with
 * PX_CLASS_ALLOC_HOOK=test_class_alloc (test/class/Makefile.inc), so the
 * allocation of a class's constructor/destructor arrays fails on demand.
 * PX_OBJ_NEW must return NULL (and work once memory is back), a free list of
 * such a class must fail to initialise, and PX_OBJ_CONSTRUCT, which cannot
 * report an error, must abort with a message naming the class and call site.
 */
#include "test/lib/px_check.h"
#include <signal.h>
#include <stdlib.h>
#include "core/class/free_list.h"
#include "core/class/object.h"
#include "core/util/error.h"

static int fail_allocs; /* how many class-array allocations fail from now */

void *test_class_alloc(size_t size);
void *test_class_alloc(size_t size)
{
    if (fail_allocs > 0) {
        fail_allocs--;
        return NULL;
    }
    return malloc(size);
}

typedef struct {
    px_object_t super;
    int v;
} thing_t;
static void thing_construct(thing_t *t)
{
    t->v = 5;
}
PX_CLASS_INSTANCE(thing_t, px_object_t, thing_construct, NULL);

typedef struct {
    px_free_list_item_t super;
    int tag;
} item_t;
PX_CLASS_INSTANCE(item_t, px_free_list_item_t, NULL, NULL);

START_TEST(test_new_returns_null_then_recovers)
{
    fail_allocs = 1;
    thing_t *t = PX_OBJ_NEW(thing_t);
    ck_assert_ptr_null(t); /* crashed here: constructors ran from a NULL array */
    ck_assert_int_eq(fail_allocs, 0);
    t = PX_OBJ_NEW(thing_t); /* memory is back: the class initialises now */
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->v, 5);
    PX_OBJ_RELEASE(t);
    ck_assert_int_eq(px_class_finalize(), 0);
}
END_TEST

START_TEST(test_free_list_init_fails)
{
    px_free_list_t fl;
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    fail_allocs = 1;
    px_free_list_params_t p = {.item_class = PX_CLASS(item_t), .num_initial = 2};
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_ERR_OUT_OF_RESOURCE);
    PX_OBJ_DESTRUCT(&fl);
    PX_OBJ_CONSTRUCT(&fl, px_free_list_t);
    ck_assert_int_eq(px_free_list_init(&fl, &p), PX_SUCCESS);
    px_free_list_item_t *it = px_free_list_get(&fl);
    ck_assert_ptr_nonnull(it);
    px_free_list_return(&fl, it);
    PX_OBJ_DESTRUCT(&fl);
    ck_assert_int_eq(px_class_finalize(), 0);
}
END_TEST

/* Aborts (SIGABRT), after "plexus: object error: PX_OBJ_CONSTRUCT at
 * class_init_fail_test.c:N cannot initialise class thing_t". */
START_TEST(test_construct_aborts)
{
    thing_t t;
    fail_allocs = 1;
    PX_OBJ_CONSTRUCT(&t, thing_t);
    /* not reached */
    PX_OBJ_DESTRUCT(&t);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {test_new_returns_null_then_recovers, test_free_list_init_fails};
    TCase *tc = px_check_tcase("class_init_fail", NULL, NULL, 0, tests, PX_CHECK_COUNT(tests));
    tcase_add_test_raise_signal(tc, test_construct_aborts, SIGABRT);
    Suite *s = suite_create("class_init_fail");
    suite_add_tcase(s, tc);
    return px_check_run(s);
}
