/*
 * object_debug_test.c: the object system's debug-build checks. This program
 * compiles its own copy of core/class/object.c with PX_ENABLE_DEBUG=1 (see
 * test/class/Makefile.inc), so it runs in every build, --enable-debug or not.
 * Each misuse runs in a forked child whose stderr is captured; the child must
 * abort with a message naming the operation and the file:line of the misuse.
 */
#include "test/lib/px_check.h"
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/class/list.h"
#include "core/class/object.h"

#if !PX_ENABLE_DEBUG
#error "object_debug_test must be built with PX_ENABLE_DEBUG=1"
#endif

typedef struct {
    px_object_t super;
    int v;
} thing_t;
PX_CLASS_DECLARATION(thing_t);
PX_CLASS_INSTANCE(thing_t, px_object_t, NULL, NULL);

/* Print the line number of the statement that follows, for the parent. */
#define MARK_NEXT_LINE() fprintf(stderr, "MARK %d\n", __LINE__ + 1)

/* Run fn in a child with stderr captured into out (NUL-terminated). Returns
 * the wait status. */
static int run_child(void (*fn)(void), char *out, size_t outlen)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (0 == pid) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn();
        fflush(stderr);
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, 20000) <= 0) /* bound the wait */
            break;
        ssize_t r = read(fds[0], out + n, outlen - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == outlen - 1)
            break;
    }
    out[n] = '\0';
    close(fds[0]);
    int status = 0;
    kill(pid, SIGKILL); /* no-op if it already exited */
    waitpid(pid, &status, 0);
    return status;
}

/* "object_debug_test.c:<line>" for the line the child marked. */
static void expected_location(const char *out, char *loc, size_t len)
{
    const char *m = strstr(out, "MARK ");
    ck_assert_msg(m != NULL, "child printed no MARK: %s", out);
    snprintf(loc, len, "object_debug_test.c:%d", atoi(m + 5));
}

static void assert_aborted_with(int status, const char *out, const char *what, const char *kind)
{
    char loc[128];
    expected_location(out, loc, sizeof(loc));
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
                  "child did not abort (status 0x%x); stderr: %s", status, out);
    ck_assert_msg(strstr(out, what) != NULL, "no '%s' in: %s", what, out);
    ck_assert_msg(strstr(out, kind) != NULL, "no '%s' in: %s", kind, out);
    ck_assert_msg(strstr(out, loc) != NULL, "no '%s' in: %s", loc, out);
}

static void retain_dead(void)
{
    thing_t *o = PX_OBJ_NEW(thing_t);
    thing_t *alias = o;
    PX_OBJ_RELEASE(alias);
    MARK_NEXT_LINE();
    PX_OBJ_RETAIN(o);
}

START_TEST(retain_of_dead_object_caught)
{
    char out[4096];
    int st = run_child(retain_dead, out, sizeof(out));
    assert_aborted_with(st, out, "PX_OBJ_RETAIN", "already dead");
    ck_assert_msg(strstr(out, "class thing_t") != NULL, "class not named: %s", out);
}
END_TEST

static void release_dead(void)
{
    thing_t *o = PX_OBJ_NEW(thing_t);
    thing_t *alias = o;
    PX_OBJ_RELEASE(alias);
    MARK_NEXT_LINE();
    PX_OBJ_RELEASE(o);
}

START_TEST(release_of_dead_object_caught)
{
    char out[4096];
    int st = run_child(release_dead, out, sizeof(out));
    assert_aborted_with(st, out, "PX_OBJ_RELEASE", "already dead");
}
END_TEST

static void destruct_twice(void)
{
    thing_t t;
    PX_OBJ_CONSTRUCT(&t, thing_t);
    PX_OBJ_DESTRUCT(&t);
    MARK_NEXT_LINE();
    PX_OBJ_DESTRUCT(&t);
}

START_TEST(destruct_of_destructed_object_caught)
{
    char out[4096];
    int st = run_child(destruct_twice, out, sizeof(out));
    assert_aborted_with(st, out, "PX_OBJ_DESTRUCT", "already dead");
}
END_TEST

static void destruct_never_constructed(void)
{
    thing_t t;
    memset(&t, 0x5a, sizeof(t));
    t.super.obj_class = PX_CLASS(thing_t);
    MARK_NEXT_LINE();
    PX_OBJ_DESTRUCT(&t);
}

START_TEST(destruct_of_never_constructed_caught)
{
    char out[4096];
    int st = run_child(destruct_never_constructed, out, sizeof(out));
    assert_aborted_with(st, out, "PX_OBJ_DESTRUCT", "never constructed");
}
END_TEST

static void retain_never_constructed(void)
{
    static thing_t t; /* zeroed: no magic */
    MARK_NEXT_LINE();
    PX_OBJ_RETAIN(&t);
}

START_TEST(retain_of_never_constructed_caught)
{
    char out[4096];
    int st = run_child(retain_never_constructed, out, sizeof(out));
    assert_aborted_with(st, out, "PX_OBJ_RETAIN", "never constructed");
}
END_TEST

static void leak_two(void)
{
    static thing_t on_static;
    MARK_NEXT_LINE();
    thing_t *leaked = PX_OBJ_NEW(thing_t);
    (void)leaked;
    PX_OBJ_CONSTRUCT(&on_static, thing_t);
    thing_t *freed = PX_OBJ_NEW(thing_t);
    PX_OBJ_RELEASE(freed);
    int alive = px_class_finalize();
    fprintf(stderr, "ALIVE %d\n", alive);
    fflush(stderr);
    _exit(alive == 2 ? 0 : 3); /* _exit: the leaks are deliberate (no LeakSanitizer report) */
}

START_TEST(leak_report_names_file_and_line)
{
    char out[8192], loc[128];
    int st = run_child(leak_two, out, sizeof(out));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x; stderr: %s", st, out);
    expected_location(out, loc, sizeof(loc));
    ck_assert_msg(strstr(out, "still alive") != NULL, "no report: %s", out);
    ck_assert_msg(strstr(out, loc) != NULL, "leak at %s not named: %s", loc, out);
    /* The PX_OBJ_CONSTRUCT one, two lines further down, is listed too. */
    char loc2[128];
    snprintf(loc2, sizeof(loc2), "object_debug_test.c:%d", atoi(strstr(out, "MARK ") + 5) + 2);
    ck_assert_msg(strstr(out, loc2) != NULL, "leak at %s not named: %s", loc2, out);
    ck_assert_msg(strstr(out, "thing_t") != NULL, "class not named: %s", out);
    ck_assert_msg(strstr(out, "ALIVE 2") != NULL, "%s", out);
}
END_TEST

static void no_leak(void)
{
    px_list_t l;
    PX_OBJ_CONSTRUCT(&l, px_list_t);
    thing_t *o = PX_OBJ_NEW(thing_t);
    PX_OBJ_RETAIN(o);
    thing_t *a = o;
    PX_OBJ_RELEASE(a);
    PX_OBJ_RELEASE(o);
    PX_OBJ_DESTRUCT(&l);
    int alive = px_class_finalize();
    fflush(stderr);
    _exit(alive == 0 ? 0 : 4);
}

START_TEST(clean_program_reports_nothing)
{
    char out[4096];
    int st = run_child(no_leak, out, sizeof(out));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x; stderr: %s", st, out);
    ck_assert_msg(strstr(out, "still alive") == NULL, "unexpected report: %s", out);
    ck_assert_msg(strstr(out, "object error") == NULL, "unexpected error: %s", out);
}
END_TEST

START_TEST(debug_fields_record_origin)
{
    const int line = __LINE__ + 1;
    thing_t *o = PX_OBJ_NEW(thing_t);
    ck_assert_uint_eq(o->super.obj_magic, PX_OBJ_MAGIC_ALIVE);
    ck_assert_int_eq(o->super.obj_line, line);
    ck_assert_ptr_nonnull(strstr(o->super.obj_file, "object_debug_test.c"));
    ck_assert_int_eq(o->super.obj_heap, 1);
    PX_OBJ_RELEASE(o);
}
END_TEST

PX_CHECK_MAIN("object_debug", NULL, NULL, 60, retain_of_dead_object_caught,
              release_of_dead_object_caught, destruct_of_destructed_object_caught,
              destruct_of_never_constructed_caught, retain_of_never_constructed_caught,
              leak_report_names_file_and_line, clean_program_reports_nothing,
              debug_fields_record_origin)
