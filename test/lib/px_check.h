/*
 * px_check.h: the main() that the Check unit tests share.
 *
 * A test program lists its START_TEST cases once:
 *
 *     PX_CHECK_MAIN("argv", NULL, NULL, 0, append_count_prepend, copy_is_deep)
 *
 * which builds one suite with one test case (the suite's name, the given
 * checked fixture and, when nonzero, a timeout in seconds), runs it and exits
 * 0 only when every test passed. A program that needs more (several test
 * cases, a test expecting a signal) builds its TCases with px_check_tcase()
 * and runs the suite with px_check_run().
 */
#ifndef PX_TEST_CHECK_H
#define PX_TEST_CHECK_H

#include <check.h>
#include <stddef.h>

/* PX_CHECK_TSAN: 1 in a ThreadSanitizer build, where a test may run fewer
 * rounds (each access is instrumented). gcc defines __SANITIZE_THREAD__;
 * clang (14, CI's TSan compiler) answers only __has_feature(thread_sanitizer):
 * tests that tested __SANITIZE_THREAD__ alone ran their full counts there. */
#if defined(__SANITIZE_THREAD__)
#define PX_CHECK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PX_CHECK_TSAN 1
#endif
#endif
#ifndef PX_CHECK_TSAN
#define PX_CHECK_TSAN 0
#endif

/* A test case named `name` with the checked fixture (either may be NULL),
 * the timeout (0: Check's default) and the n tests. */
static inline TCase *px_check_tcase(const char *name, SFun setup, SFun teardown, int timeout,
                                    const TTest *const *tests, size_t n)
{
    TCase *tc = tcase_create(name);
    if (setup || teardown)
        tcase_add_checked_fixture(tc, setup, teardown);
    if (timeout > 0)
        tcase_set_timeout(tc, timeout);
    for (size_t i = 0; i < n; i++)
        tcase_add_test(tc, tests[i]);
    return tc;
}

/* Runs the suite (and frees it); the exit status for main(). */
static inline int px_check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

#define PX_CHECK_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define PX_CHECK_MAIN(name, setup, teardown, timeout, ...)                                         \
    int main(void)                                                                                 \
    {                                                                                              \
        const TTest *px_check_tests_[] = {__VA_ARGS__};                                            \
        Suite *s = suite_create(name);                                                             \
        suite_add_tcase(s, px_check_tcase(name, setup, teardown, timeout, px_check_tests_,         \
                                          PX_CHECK_COUNT(px_check_tests_)));                       \
        return px_check_run(s);                                                                    \
    }

#endif
