/*
 * output_test.c: output streams: per-stream verbosity filtering, prefixes,
 * lazy argument evaluation in PX_OUTPUT_VERBOSE, px_show_error/warning, and
 * open/close. stderr is captured through a pipe (dup2).
 */
#include "test/lib/px_check.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"

static char out[8192];
static int saved_fd = -1, pipe_rd = -1;

static void capture_begin(void)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(stderr);
    saved_fd = dup(2);
    dup2(fds[1], 2);
    close(fds[1]);
    pipe_rd = fds[0];
}

/* Stop capturing; the text is in `out`. */
static const char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof(out) - 1 && (r = read(pipe_rd, out + n, sizeof(out) - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(pipe_rd);
    return out;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static int evaluated;
static int side_effect(void)
{
    return ++evaluated;
}

START_TEST(verbosity_filters_per_stream)
{
    int a = px_output_open("btl", 5);
    int b = px_output_open("boot", 0);
    ck_assert_int_gt(a, 0);
    ck_assert_int_gt(b, 0);
    ck_assert_int_ne(a, b);
    ck_assert_int_eq(px_output_get_verbosity(a), 5);
    ck_assert(px_output_check(a, 5));
    ck_assert(!px_output_check(a, 6));
    ck_assert(!px_output_check(b, 1));
    evaluated = 0;
    capture_begin();
    PX_OUTPUT_VERBOSE(1, a, "a-level-1 %d", 1);
    PX_OUTPUT_VERBOSE(5, a, "a-level-5");
    PX_OUTPUT_VERBOSE(6, a, "a-level-6 %d", side_effect());
    PX_OUTPUT_VERBOSE(1, b, "b-level-1 %d", side_effect());
    PX_OUTPUT_VERBOSE(0, b, "b-level-0\n");
    capture_end();
    ck_assert_msg(strstr(out, "btl: a-level-1 1\n") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "btl: a-level-5\n"));
    ck_assert_ptr_null(strstr(out, "a-level-6"));
    ck_assert_ptr_null(strstr(out, "b-level-1"));
    ck_assert_ptr_nonnull(strstr(out, "boot: b-level-0\n"));
    ck_assert_int_eq(count(out, "\n"), 3); /* one newline each, none doubled */
    ck_assert_int_eq(evaluated, 0);        /* filtered arguments not evaluated */
    /* lines carry [host:pid] */
    char pid[32];
    snprintf(pid, sizeof(pid), ":%d] ", (int)getpid());
    ck_assert_int_eq(count(out, pid), 3);
    ck_assert_int_eq(out[0], '[');

    px_output_set_verbosity(b, 3);
    ck_assert_int_eq(px_output_get_verbosity(b), 3);
    capture_begin();
    PX_OUTPUT_VERBOSE(3, b, "b-now-%s", "on");
    PX_OUTPUT_VERBOSE(4, b, "b-still-off");
    capture_end();
    ck_assert_ptr_nonnull(strstr(out, "boot: b-now-on"));
    ck_assert_ptr_null(strstr(out, "b-still-off"));
    px_output_close(a);
    px_output_close(b);
    ck_assert(!px_output_check(a, 0)); /* closed streams print nothing verbose */
}
END_TEST

START_TEST(stream_zero_and_bad_ids)
{
    ck_assert(px_output_check(0, 0));
    ck_assert(!px_output_check(-1, 0));
    ck_assert(!px_output_check(PX_OUTPUT_MAX_STREAMS, 0));
    ck_assert_int_eq(px_output_get_verbosity(-3), 0);
    capture_begin();
    px_output(0, "zero");
    px_output(999, "bad id falls back to stream 0");
    capture_end();
    ck_assert_ptr_nonnull(strstr(out, "plexus: zero\n"));
    ck_assert_ptr_nonnull(strstr(out, "plexus: bad id falls back"));
}
END_TEST

START_TEST(streams_run_out_and_are_reused)
{
    int ids[PX_OUTPUT_MAX_STREAMS];
    int n = 0, id;
    while ((id = px_output_open("x", 0)) >= 0)
        ids[n++] = id;
    ck_assert_int_eq(id, PX_ERR_OUT_OF_RESOURCE);
    ck_assert_int_eq(n, PX_OUTPUT_MAX_STREAMS - 1); /* stream 0 is taken */
    px_output_close(ids[3]);
    ck_assert_int_eq(px_output_open("y", 0), ids[3]);
    for (int i = 0; i < n; i++)
        px_output_close(ids[i]);
}
END_TEST

START_TEST(show_error_and_warning)
{
    capture_begin();
    px_show_error("value %s of %s is not a number", "abc", "btl_shm_eager_limit");
    px_show_warning("ignored %d\n", 3);
    capture_end();
    ck_assert_ptr_nonnull(
        strstr(out, "plexus: error: value abc of btl_shm_eager_limit is not a number\n"));
    ck_assert_ptr_nonnull(strstr(out, "plexus: warning: ignored 3\n"));
    ck_assert_int_eq(count(out, "\n"), 2);
}
END_TEST

PX_CHECK_MAIN("output", NULL, NULL, 0, verbosity_filters_per_stream, stream_zero_and_bad_ids,
              streams_run_out_and_are_reused, show_error_and_warning)
