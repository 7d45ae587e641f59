/*
 * var_test.c: MCA variables: every source and its precedence, file:line
 * records, parse errors, synonyms and deprecation, read-only and override,
 * the command-line hand-off, unknown names and strict mode, value ranges.
 * One concern past 800 lines: 45 independent cases of the one variable
 * system, sharing the registration and source helpers at the top.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include "test/mca/mca_test_util.h"
#include "core/mca/var.h"
#include "core/util/error.h"

static int reg_int(const char *name, int *storage)
{
    return px_mca_var_register("ptest", "alpha", name, "an int", PX_MCA_VAR_TYPE_INT, NULL, 1,
                               PX_MCA_VAR_SCOPE_LOCAL, 0, storage);
}

static char *value_of(const char *full)
{
    int i = px_mca_var_find(full);
    ck_assert_int_ge(i, 0);
    return px_mca_var_value_string(i);
}

static void assert_source(const char *full, const char *expected)
{
    int i = px_mca_var_find(full);
    ck_assert_int_ge(i, 0);
    char *s = px_mca_var_source_string(i);
    ck_assert_str_eq(s, expected);
    free(s);
}

static void assert_source_prefix(const char *full, const char *prefix)
{
    int i = px_mca_var_find(full);
    ck_assert_int_ge(i, 0);
    char *s = px_mca_var_source_string(i);
    ck_assert_msg(0 == strncmp(s, prefix, strlen(prefix)),
                  "source \"%s\" does not start with \"%s\"", s, prefix);
    free(s);
}

START_TEST(test_default)
{
    clean_env();
    px_mca_var_init();
    int x = 42;
    int idx = reg_int("x", &x);
    ck_assert_int_ge(idx, 0);
    ck_assert_int_eq(x, 42);
    assert_source("ptest_alpha_x", "default");
    char *d = px_mca_var_default_string(idx);
    ck_assert_str_eq(d, "42");
    free(d);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_full_names)
{
    clean_env();
    int a = 0, b = 0, c = 0;
    ck_assert_int_ge(px_mca_var_register("ptest", NULL, NULL, "h", PX_MCA_VAR_TYPE_INT, NULL, 1,
                                         PX_MCA_VAR_SCOPE_LOCAL, 0, &a),
                     0);
    ck_assert_int_ge(px_mca_var_register("ptest", "base", "verbose", "h", PX_MCA_VAR_TYPE_INT, NULL,
                                         1, PX_MCA_VAR_SCOPE_LOCAL, 0, &b),
                     0);
    ck_assert_int_ge(px_mca_var_register("ptest", "", "lone", "h", PX_MCA_VAR_TYPE_INT, NULL, 1,
                                         PX_MCA_VAR_SCOPE_LOCAL, 0, &c),
                     0);
    ck_assert_int_ge(px_mca_var_find("ptest"), 0);
    ck_assert_int_ge(px_mca_var_find("ptest_base_verbose"), 0);
    ck_assert_int_ge(px_mca_var_find("ptest_lone"), 0);
    ck_assert_int_eq(px_mca_var_find("ptest_base"), PX_ERR_NOT_FOUND);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_int_forms)
{
    clean_env();
    int x = 0;
    reg_int("x", &x);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "0x10"), PX_SUCCESS);
    ck_assert_int_eq(x, 16);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "-5"), PX_SUCCESS);
    ck_assert_int_eq(x, -5);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", " 12 "), PX_SUCCESS);
    ck_assert_int_eq(x, 12);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "abc"), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "12abc"), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "99999999999"), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", ""), PX_ERR_BAD_PARAM);
    const char *err = capture_end();
    ck_assert_int_eq(x, 12); /* unchanged by the bad values */
    ck_assert_int_eq(count_of(err, "plexus: error: invalid value"), 4);
    ck_assert_ptr_nonnull(strstr(err, "\"abc\""));
    ck_assert_ptr_nonnull(strstr(err, "ptest_alpha_x (int)"));
    ck_assert_ptr_nonnull(strstr(err, "from API"));
    ck_assert_ptr_nonnull(strstr(err, "accepted: an integer"));
    ck_assert_ptr_nonnull(strstr(err, "the current value \"12\" is kept"));
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_unsigned_forms)
{
    clean_env();
    unsigned u = 3;
    px_mca_var_register("ptest", "alpha", "u", "h", PX_MCA_VAR_TYPE_UNSIGNED, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &u);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_u", "4000000000"), PX_SUCCESS);
    ck_assert_uint_eq(u, 4000000000u);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_u", "-1"), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_u", "5000000000"), PX_ERR_BAD_PARAM);
    const char *err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "a non-negative integer"));
    ck_assert_uint_eq(u, 4000000000u);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_size_forms)
{
    clean_env();
    size_t z = 4096;
    px_mca_var_register("ptest", "alpha", "z", "h", PX_MCA_VAR_TYPE_SIZE, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &z);
    static const struct {
        const char *text;
        size_t value;
    } good[] = {{"4096", 4096},   {"64k", 65536},   {"64K", 65536},
                {"2M", 2u << 20}, {"2m", 2u << 20}, {"1G", (size_t)1 << 30},
                {"0", 0},         {" 8k ", 8192},   {"0x10", 16}};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        ck_assert_int_eq(px_mca_var_set("ptest_alpha_z", good[i].text), PX_SUCCESS);
        ck_assert_msg(z == good[i].value, "%s gave %zu", good[i].text, z);
    }
    capture_begin();
    const char *bad[] = {"1.5M", "12q", "-1", "k", "1kk", "99999999999999G", "2 M x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        ck_assert_msg(px_mca_var_set("ptest_alpha_z", bad[i]) == PX_ERR_BAD_PARAM, "%s accepted",
                      bad[i]);
    const char *err = capture_end();
    ck_assert_int_eq(count_of(err, "invalid value"), 7);
    ck_assert_ptr_nonnull(strstr(err, "k, M or G suffix"));
    ck_assert_uint_eq(z, 16);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_bool_forms)
{
    clean_env();
    bool b = false;
    px_mca_var_register("ptest", "alpha", "b", "h", PX_MCA_VAR_TYPE_BOOL, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &b);
    const char *yes[] = {"1", "true", "TRUE", "yes", "on", "On"};
    const char *no[] = {"0", "false", "no", "off", "OFF"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
        b = false;
        ck_assert_int_eq(px_mca_var_set("ptest_alpha_b", yes[i]), PX_SUCCESS);
        ck_assert_msg(b, "%s is not true", yes[i]);
        ck_assert_int_eq(px_mca_var_set("ptest_alpha_b", no[i % 5]), PX_SUCCESS);
        ck_assert_msg(!b, "%s is not false", no[i % 5]);
    }
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_b", "2"), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_b", "maybe"), PX_ERR_BAD_PARAM);
    const char *err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "1/0, true/false, yes/no, on/off"));
    char *v = value_of("ptest_alpha_b");
    ck_assert_str_eq(v, "false");
    free(v);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_double_and_string)
{
    clean_env();
    double d = 0.5;
    const char *s = "dflt";
    px_mca_var_register("ptest", "alpha", "d", "h", PX_MCA_VAR_TYPE_DOUBLE, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &d);
    px_mca_var_register("ptest", "alpha", "s", "h", PX_MCA_VAR_TYPE_STRING, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &s);
    ck_assert_str_eq(s, "dflt");
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_d", "1e-3"), PX_SUCCESS);
    ck_assert_double_eq_tol(d, 0.001, 1e-12);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_d", "fast"), PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(capture_end(), "a number"));
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_s", "hello world"), PX_SUCCESS);
    ck_assert_str_eq(s, "hello world");
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_s", ""), PX_SUCCESS);
    ck_assert_str_eq(s, "");
    px_mca_var_finalize();
    ck_assert_str_eq(s, "dflt"); /* finalize gives the storage its default back */
}
END_TEST

static const px_mca_var_enum_value_t levels[] = {{0, "none"}, {1, "low"}, {5, "high"}, {0, NULL}};

START_TEST(test_enum_forms)
{
    clean_env();
    int e = 0;
    px_mca_var_register("ptest", "alpha", "e", "h", PX_MCA_VAR_TYPE_ENUM, levels, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &e);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_e", "high"), PX_SUCCESS);
    ck_assert_int_eq(e, 5);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_e", "LOW"), PX_SUCCESS);
    ck_assert_int_eq(e, 1);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_e", "5"), PX_SUCCESS);
    ck_assert_int_eq(e, 5);
    char *v = value_of("ptest_alpha_e");
    ck_assert_str_eq(v, "high");
    free(v);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_e", "3"), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_e", "medium"), PX_ERR_BAD_PARAM);
    const char *err = capture_end();
    ck_assert_int_eq(count_of(err, "one of none (0), low (1), high (5)"), 2);
    ck_assert_int_eq(e, 5);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_env_source)
{
    clean_env();
    setenv("PX_MCA_ptest_alpha_x", "17", 1);
    int x = 1;
    reg_int("x", &x);
    ck_assert_int_eq(x, 17);
    assert_source("ptest_alpha_x", "environment PX_MCA_ptest_alpha_x");
    px_mca_var_info_t info;
    px_mca_var_get_info(px_mca_var_find("ptest_alpha_x"), &info);
    ck_assert_int_eq(info.source, PX_MCA_VAR_SOURCE_ENV);
    ck_assert_str_eq(info.source_where, "PX_MCA_ptest_alpha_x");
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_env_parse_error_keeps_default)
{
    clean_env();
    setenv("PX_MCA_ptest_alpha_limit", "abc", 1);
    size_t z = 4096;
    capture_begin();
    int rc = px_mca_var_register("ptest", "alpha", "limit", "h", PX_MCA_VAR_TYPE_SIZE, NULL, 1,
                                 PX_MCA_VAR_SCOPE_LOCAL, 0, &z);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_error_count(), 1);
    ck_assert_uint_eq(z, 4096);
    ck_assert_ptr_nonnull(strstr(err, "\"abc\""));
    ck_assert_ptr_nonnull(strstr(err, "ptest_alpha_limit"));
    ck_assert_ptr_nonnull(strstr(err, "environment variable PX_MCA_ptest_alpha_limit"));
    ck_assert_ptr_nonnull(strstr(err, "64k"));
    ck_assert_ptr_nonnull(strstr(err, "the default \"4096\" is kept"));
    /* The variable exists and says where its value came from. */
    assert_source("ptest_alpha_limit", "default");
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_file_source_and_line)
{
    clean_env();
    char *dir = make_tmpdir();
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/.plexus", getenv("HOME")), 0);
    mkdir(p, 0700);
    char *f = write_file(p, "mca-params.conf",
                         "# comment\n\n  ptest_alpha_x = 5\nptest_alpha_s = \"quoted value\"\n"
                         "ptest_alpha_x=6\n");
    int x = 0;
    const char *s = NULL;
    reg_int("x", &x);
    px_mca_var_register("ptest", "alpha", "s", "h", PX_MCA_VAR_TYPE_STRING, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &s);
    ck_assert_int_eq(x, 6); /* the last line of a file wins */
    ck_assert_str_eq(s, "quoted value");
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want, "file %s:5", f), 0);
    assert_source("ptest_alpha_x", want);
    free(want);
    ck_assert_int_ge(asprintf(&want, "file %s:4", f), 0);
    assert_source("ptest_alpha_s", want);
    free(want);
    free(f);
    free(p);
    free(dir);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_file_parse_error_names_line)
{
    clean_env();
    char *f = write_file(getenv("PX_SYSCONFDIR"), "plexus-mca-params.conf",
                         "# system file\nptest_alpha_x = twelve\n");
    int x = 3;
    capture_begin();
    ck_assert_int_eq(reg_int("x", &x), PX_ERR_BAD_PARAM);
    const char *err = capture_end();
    ck_assert_int_eq(x, 3);
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want, "from file %s:2", f), 0);
    ck_assert_msg(strstr(err, want) != NULL, "missing \"%s\" in %s", want, err);
    ck_assert_ptr_nonnull(strstr(err, "\"twelve\""));
    free(want);
    free(f);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_file_syntax_warnings)
{
    clean_env();
    char *extra = make_tmpdir();
    char *f = write_file(extra, "x.conf", "ptest_alpha_x 5\n= 7\nptest_alpha_x = 8\n");
    setenv("PX_MCA_mca_param_files", f, 1);
    int x = 0;
    capture_begin();
    reg_int("x", &x);
    const char *err = capture_end();
    ck_assert_int_eq(x, 8);
    char *w1 = NULL, *w2 = NULL;
    ck_assert_int_ge(asprintf(&w1, "%s:1: expected \"name = value\"", f), 0);
    ck_assert_int_ge(asprintf(&w2, "%s:2: no variable name", f), 0);
    ck_assert_msg(strstr(err, w1) && strstr(err, w2), "got: %s", err);
    free(w1);
    free(w2);
    free(f);
    free(extra);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_file_precedence)
{
    /* extra files (mca_param_files, in order) > ~/.plexus > system file */
    clean_env();
    char *home = NULL;
    ck_assert_int_ge(asprintf(&home, "%s/.plexus", getenv("HOME")), 0);
    mkdir(home, 0700);
    free(
        write_file(getenv("PX_SYSCONFDIR"), "plexus-mca-params.conf",
                   "ptest_alpha_a = 1\nptest_alpha_b = 1\nptest_alpha_c = 1\nptest_alpha_d = 1\n"));
    free(write_file(home, "mca-params.conf",
                    "ptest_alpha_b = 2\nptest_alpha_c = 2\nptest_alpha_d = 2\n"));
    char *dir = make_tmpdir();
    char *e1 = write_file(dir, "e1.conf", "ptest_alpha_c = 3\n");
    char *e2 = write_file(dir, "e2.conf", "ptest_alpha_c = 4\nptest_alpha_d = 4\n");
    char *list = NULL;
    ck_assert_int_ge(asprintf(&list, "%s:%s", e1, e2), 0);
    setenv("PX_MCA_mca_param_files", list, 1);
    int a = 0, b = 0, c = 0, d = 0;
    reg_int("a", &a);
    reg_int("b", &b);
    reg_int("c", &c);
    reg_int("d", &d);
    ck_assert_int_eq(a, 1);
    ck_assert_int_eq(b, 2);
    ck_assert_int_eq(c, 3);
    ck_assert_int_eq(d, 4);
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want, "file %s:1", e1), 0);
    assert_source("ptest_alpha_c", want);
    free(want);
    ck_assert_int_ge(asprintf(&want, "file %s/plexus-mca-params.conf:1", getenv("PX_SYSCONFDIR")),
                     0);
    assert_source("ptest_alpha_a", want);
    free(want);
    free(list);
    free(e1);
    free(e2);
    free(dir);
    free(home);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_missing_listed_file_warns)
{
    clean_env();
    setenv("PX_MCA_mca_param_files", "/nonexistent/px/params.conf", 1);
    capture_begin();
    px_mca_var_init();
    const char *err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "cannot read parameter file /nonexistent/px/params.conf"));
    ck_assert_ptr_nonnull(strstr(err, "mca_param_files"));
    px_mca_var_finalize();
}
END_TEST

/* Only regular files are read: a FIFO used to block px_mca_var_init (and so
 * px_info and every job) forever, in any of the three places a parameter file
 * is named. Check's per-test timeout bounds the old hang. */
START_TEST(test_param_file_fifo_refused)
{
    clean_env();
    char *dir = make_tmpdir();
    char *fifo = NULL, *sys = NULL, *ovr = NULL;
    ck_assert_int_ge(asprintf(&fifo, "%s/fifo.conf", dir), 0);
    ck_assert_int_ge(asprintf(&sys, "%s/plexus-mca-params.conf", getenv("PX_SYSCONFDIR")), 0);
    ck_assert_int_ge(asprintf(&ovr, "%s/plexus-mca-params-override.conf", getenv("PX_SYSCONFDIR")),
                     0);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(mkfifo(sys, 0600), 0);
    ck_assert_int_eq(mkfifo(ovr, 0600), 0);
    setenv("PX_MCA_mca_param_files", fifo, 1);
    capture_begin();
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
    const char *err = capture_end();
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want,
                              "parameter file %s (listed in mca_param_files) is a FIFO; "
                              "ignored (a parameter file must be a regular file of at "
                              "most 1048576 bytes)",
                              fifo),
                     0);
    ck_assert_msg(strstr(err, want) != NULL, "missing \"%s\" in: %s", want, err);
    free(want);
    ck_assert_int_ge(
        asprintf(&want, "parameter file %s (the system parameter file) is a FIFO", sys), 0);
    ck_assert_msg(strstr(err, want) != NULL, "missing \"%s\" in: %s", want, err);
    free(want);
    ck_assert_int_ge(asprintf(&want, "parameter file %s (the system override file) is a FIFO", ovr),
                     0);
    ck_assert_msg(strstr(err, want) != NULL, "missing \"%s\" in: %s", want, err);
    free(want);
    px_mca_var_finalize();
    free(fifo);
    free(sys);
    free(ovr);
    free(dir);
}
END_TEST

/* A folder listed in mca_param_files used to be skipped without a word, and
 * /dev/urandom was read forever. */
START_TEST(test_param_file_not_regular_refused)
{
    clean_env();
    char *dir = make_tmpdir();
    char *list = NULL;
    ck_assert_int_ge(asprintf(&list, "%s:/dev/urandom", dir), 0);
    setenv("PX_MCA_mca_param_files", list, 1);
    capture_begin();
    ck_assert_int_eq(px_mca_var_init(), PX_SUCCESS);
    const char *err = capture_end();
    char *want = NULL;
    ck_assert_int_ge(
        asprintf(&want, "parameter file %s (listed in mca_param_files) is a directory", dir), 0);
    ck_assert_msg(strstr(err, want) != NULL, "missing \"%s\" in: %s", want, err);
    free(want);
    ck_assert_msg(strstr(err, "parameter file /dev/urandom (listed in mca_param_files) is a "
                              "character device; ignored") != NULL,
                  "in: %s", err);
    px_mca_var_finalize();
    free(list);
    free(dir);
}
END_TEST

/* Files are read up to 1 MiB; a larger one is refused whole, with its size. */
START_TEST(test_param_file_size_cap)
{
    clean_env();
    char *dir = make_tmpdir();
    size_t big = 1024 * 1024 + 1;
    char *text = malloc(big + 1);
    ck_assert_ptr_nonnull(text);
    memset(text, '#', big);
    text[big] = '\0';
    const char *line = "\nptest_alpha_x = 9\n";
    memcpy(text + big - strlen(line), line, strlen(line));
    char *large = write_file(dir, "large.conf", text);
    /* just under the cap: read, its last line applies */
    text[big - strlen(line) - 1] = '\0';
    char *under = NULL;
    ck_assert_int_ge(asprintf(&under, "%s%s", text + 2, line), 0);
    char *fits = write_file(dir, "fits.conf", under);
    char *list = NULL;
    ck_assert_int_ge(asprintf(&list, "%s:%s", large, fits), 0);
    setenv("PX_MCA_mca_param_files", list, 1);
    capture_begin();
    int x = 0;
    reg_int("x", &x);
    const char *err = capture_end();
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want,
                              "parameter file %s (listed in mca_param_files) is 1048577 bytes, "
                              "more than the 1048576 bytes (1 MiB) a parameter file may have; "
                              "ignored",
                              large),
                     0);
    ck_assert_msg(strstr(err, want) != NULL, "missing \"%s\" in: %s", want, err);
    free(want);
    ck_assert_int_eq(x, 9);
    ck_assert_int_ge(asprintf(&want, "file %s:2", fits), 0);
    assert_source("ptest_alpha_x", want);
    free(want);
    px_mca_var_finalize();
    free(list);
    free(under);
    free(fits);
    free(large);
    free(text);
    free(dir);
}
END_TEST

/* PX_MCA_=5 names no variable: it used to be dropped without a word. */
START_TEST(test_env_empty_name_warns)
{
    clean_env();
    setenv("PX_MCA_", "5", 1);
    setenv("PX_CMDLINE_MCA_", "6", 1);
    capture_begin();
    px_mca_var_init();
    const char *err = capture_end();
    ck_assert_msg(strstr(err, "environment variable PX_MCA_ (\"PX_MCA_=5\") names no variable; "
                              "ignored (expected PX_MCA_<name>=value") != NULL,
                  "in: %s", err);
    ck_assert_msg(strstr(err, "environment variable PX_CMDLINE_MCA_ (\"PX_CMDLINE_MCA_=6\") "
                              "names no variable") != NULL,
                  "in: %s", err);
    px_mca_var_finalize();
    unsetenv("PX_MCA_");
    unsetenv("PX_CMDLINE_MCA_");
}
END_TEST

/* px_mca_var_get_info's source_where used to point at the variable's own
 * string, which a set from another thread frees and replaces: the reader
 * then read freed memory. It is now a copy in the info struct. */
static atomic_int where_stop;
static void *where_setter(void *arg)
{
    (void)arg;
    char where[64], value[16];
    for (int i = 0; !atomic_load(&where_stop); i++) { /* until the reader is done */
        snprintf(where, sizeof(where), "setter-where-%d-with-some-length", i);
        snprintf(value, sizeof(value), "%d", i);
        px_mca_var_set_source("ptest_alpha_x", value, PX_MCA_VAR_SOURCE_COMMAND_LINE, where);
    }
    return NULL;
}

START_TEST(test_info_where_survives_concurrent_set)
{
    clean_env();
    int x = 0;
    reg_int("x", &x);
    ck_assert_int_eq(px_mca_var_set_source("ptest_alpha_x", "1", PX_MCA_VAR_SOURCE_COMMAND_LINE,
                                           "setter-where-"),
                     PX_SUCCESS);
    int idx = px_mca_var_find("ptest_alpha_x");
    atomic_store(&where_stop, 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, where_setter, NULL), 0);
    long reads = 0, bad = 0;
    while (reads < 3000) {
        px_mca_var_info_t info;
        ck_assert_int_eq(px_mca_var_get_info(idx, &info), PX_SUCCESS);
        ck_assert_ptr_nonnull(info.source_where);
        /* read it slowly, as a printer would, while the setter goes on */
        char copy[128];
        size_t n = 0;
        for (const char *c = info.source_where; *c && n + 1 < sizeof(copy); c++)
            copy[n++] = *c;
        copy[n] = '\0';
        if (strncmp(copy, "setter-where-", 13) != 0)
            bad++;
        reads++;
    }
    atomic_store(&where_stop, 1);
    pthread_join(t, NULL);
    ck_assert_msg(bad == 0, "%ld of %ld reads of source_where saw garbage", bad, reads);
    px_mca_var_finalize();
}
END_TEST

/* The full chain default < file < env < command line < API < override. */
START_TEST(test_precedence_chain)
{
    clean_env();
    char *home = NULL;
    ck_assert_int_ge(asprintf(&home, "%s/.plexus", getenv("HOME")), 0);
    mkdir(home, 0700);
    free(write_file(home, "mca-params.conf",
                    "ptest_alpha_f = 1\nptest_alpha_e = 1\n"
                    "ptest_alpha_c = 1\nptest_alpha_a = 1\n"
                    "ptest_alpha_o = 1\n"));
    setenv("PX_MCA_ptest_alpha_e", "2", 1);
    setenv("PX_MCA_ptest_alpha_c", "2", 1);
    setenv("PX_MCA_ptest_alpha_a", "2", 1);
    setenv("PX_MCA_ptest_alpha_o", "2", 1);
    setenv("PX_CMDLINE_MCA_ptest_alpha_c", "3", 1);
    setenv("PX_CMDLINE_MCA_ptest_alpha_a", "3", 1);
    setenv("PX_CMDLINE_MCA_ptest_alpha_o", "3", 1);
    char *ovr = write_file(getenv("PX_SYSCONFDIR"), "plexus-mca-params-override.conf",
                           "ptest_alpha_o = 5\n");
    int dflt = 0, f = 0, e = 0, c = 0, a = 0, o = 0;
    reg_int("dflt", &dflt);
    reg_int("f", &f);
    reg_int("e", &e);
    reg_int("c", &c);
    reg_int("a", &a);
    reg_int("o", &o);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_a", "4"), PX_SUCCESS);
    capture_begin();
    int orc = px_mca_var_set("ptest_alpha_o", "4");
    const char *err = capture_end();
    ck_assert_int_eq(orc, PX_ERR_NOT_SUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "override file"));
    ck_assert_ptr_nonnull(strstr(err, ovr));
    ck_assert_int_eq(dflt, 0);
    ck_assert_int_eq(f, 1);
    ck_assert_int_eq(e, 2);
    ck_assert_int_eq(c, 3);
    ck_assert_int_eq(a, 4);
    ck_assert_int_eq(o, 5);
    assert_source("ptest_alpha_dflt", "default");
    assert_source_prefix("ptest_alpha_f", "file ");
    assert_source("ptest_alpha_e", "environment PX_MCA_ptest_alpha_e");
    assert_source("ptest_alpha_c", "command line");
    assert_source("ptest_alpha_a", "API");
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want, "override file %s:1", ovr), 0);
    assert_source("ptest_alpha_o", want);
    free(want);
    /* A lower source set later does not win over a higher one. */
    ck_assert_int_eq(px_mca_var_set_source("ptest_alpha_e", "9", PX_MCA_VAR_SOURCE_FILE, "x:1"),
                     PX_SUCCESS);
    ck_assert_int_eq(e, 2);
    ck_assert_int_eq(
        px_mca_var_set_source("ptest_alpha_e", "9", PX_MCA_VAR_SOURCE_COMMAND_LINE, "--mca"),
        PX_SUCCESS);
    ck_assert_int_eq(e, 9);
    free(ovr);
    free(home);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_cmdline_handoff)
{
    clean_env();
    int x = 0;
    reg_int("x", &x);
    ck_assert_int_eq(px_mca_var_set_cmdline("ptest_alpha_x", "21", true), PX_SUCCESS);
    ck_assert_int_eq(x, 21);
    assert_source("ptest_alpha_x", "command line");
    ck_assert_str_eq(getenv("PX_CMDLINE_MCA_ptest_alpha_x"), "21");
    /* Not exported: the environment is left alone. */
    ck_assert_int_eq(px_mca_var_set_cmdline("ptest_alpha_x", "22", false), PX_SUCCESS);
    ck_assert_int_eq(x, 22);
    ck_assert_str_eq(getenv("PX_CMDLINE_MCA_ptest_alpha_x"), "21");
    px_mca_var_finalize();
    /* A "child" reads it back from the environment as command line, above
     * the environment proper. */
    setenv("PX_MCA_ptest_alpha_x", "5", 1);
    ck_assert_int_eq(x, 0);
    px_mca_var_init();
    reg_int("x", &x);
    ck_assert_int_eq(x, 21);
    assert_source("ptest_alpha_x", "command line");
    px_mca_var_info_t info;
    px_mca_var_get_info(px_mca_var_find("ptest_alpha_x"), &info);
    ck_assert_str_eq(info.source_where, "PX_CMDLINE_MCA_ptest_alpha_x");
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_cmdline_before_register)
{
    clean_env();
    ck_assert_int_eq(px_mca_var_set_cmdline("ptest_alpha_late", "8", false), PX_SUCCESS);
    int x = 0;
    reg_int("late", &x);
    ck_assert_int_eq(x, 8);
    assert_source("ptest_alpha_late", "command line");
    capture_begin();
    ck_assert_int_eq(px_mca_var_set_cmdline("ptest_alpha_late", "x8", false), PX_ERR_BAD_PARAM);
    const char *err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "from command line (--mca)"));
    ck_assert_int_eq(x, 8);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_api_unknown_name)
{
    clean_env();
    int x = 0;
    reg_int("priority", &x);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_priorty", "3"), PX_ERR_NOT_FOUND);
    const char *err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "unknown variable \"ptest_alpha_priorty\""));
    ck_assert_ptr_nonnull(strstr(err, "ptest_alpha_priority"));
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_synonyms)
{
    clean_env();
    setenv("PX_MCA_ptest_old_x", "4", 1);
    setenv("PX_MCA_ptest_alias_y", "6", 1);
    int x = 0, y = 0;
    int xi = reg_int("x", &x);
    int yi = reg_int("y", &y);
    capture_begin();
    int sx = px_mca_var_register_synonym(xi, "ptest", "old", "x", PX_MCA_VAR_FLAG_DEPRECATED);
    int sy = px_mca_var_register_synonym(yi, "ptest", "alias", "y", 0);
    ck_assert_int_ge(sx, 0);
    ck_assert_int_ge(sy, 0);
    ck_assert_int_eq(x, 4);
    ck_assert_int_eq(y, 6);
    /* Resolving again (another source changes) does not warn again. */
    setenv("PX_MCA_ptest_old_x", "5", 1);
    ck_assert_int_eq(
        px_mca_var_set_source("ptest_old_x", "7", PX_MCA_VAR_SOURCE_COMMAND_LINE, NULL),
        PX_SUCCESS);
    const char *err = capture_end();
    ck_assert_int_eq(x, 7);
    ck_assert_int_eq(count_of(err, "deprecated"), 1);
    ck_assert_ptr_nonnull(strstr(err, "\"ptest_old_x\""));
    ck_assert_ptr_nonnull(strstr(err, "use \"ptest_alpha_x\" instead"));
    ck_assert_ptr_null(strstr(err, "ptest_alias_y"));
    /* Info: the primary lists its synonyms; the synonym points back. */
    px_mca_var_info_t info;
    px_mca_var_get_info(xi, &info);
    ck_assert_ptr_nonnull(info.synonyms);
    ck_assert_str_eq(info.synonyms[0], "ptest_old_x");
    ck_assert_ptr_null(info.synonyms[1]);
    ck_assert(!info.is_synonym_of_other);
    px_mca_var_get_info(sx, &info);
    ck_assert(info.is_synonym_of_other);
    ck_assert_int_eq(info.synonym_for, xi);
    ck_assert_int_eq(px_mca_var_find("ptest_old_x"), sx);
    /* Registering the same synonym again returns it; another variable's name is refused. */
    ck_assert_int_eq(px_mca_var_register_synonym(xi, "ptest", "old", "x", 0), sx);
    ck_assert_int_eq(px_mca_var_register_synonym(xi, "ptest", "alpha", "y", 0), PX_ERR_EXISTS);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_latest_set_wins_across_names)
{
    clean_env();
    int x = 0;
    int xi = reg_int("x", &x);
    px_mca_var_register_synonym(xi, "ptest", "old", "x", PX_MCA_VAR_FLAG_DEPRECATED);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "1"), PX_SUCCESS);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_old_x", "2"), PX_SUCCESS);
    const char *err = capture_end();
    ck_assert_int_eq(x, 2); /* the synonym, set later, wins */
    ck_assert_ptr_nonnull(strstr(err, "use \"ptest_alpha_x\" instead"));
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "3"), PX_SUCCESS);
    ck_assert_int_eq(x, 3);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_primary_beats_synonym)
{
    clean_env();
    setenv("PX_MCA_ptest_old_x", "4", 1);
    setenv("PX_MCA_ptest_alpha_x", "9", 1);
    int x = 0;
    int xi = reg_int("x", &x);
    px_mca_var_register_synonym(xi, "ptest", "old", "x", 0);
    ck_assert_int_eq(x, 9);
    /* A synonym at a higher source still wins over the primary at a lower one. */
    setenv("PX_CMDLINE_MCA_ptest_old_x", "11", 1);
    px_mca_var_finalize();
    px_mca_var_init();
    xi = reg_int("x", &x);
    px_mca_var_register_synonym(xi, "ptest", "old", "x", 0);
    ck_assert_int_eq(x, 11);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_deprecated_variable)
{
    clean_env();
    setenv("PX_MCA_ptest_alpha_gone", "1", 1);
    int x = 0;
    capture_begin();
    px_mca_var_register("ptest", "alpha", "gone", "h", PX_MCA_VAR_TYPE_INT, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, PX_MCA_VAR_FLAG_DEPRECATED, &x);
    const char *err = capture_end();
    ck_assert_int_eq(x, 1);
    ck_assert_ptr_nonnull(strstr(err, "\"ptest_alpha_gone\""));
    ck_assert_ptr_nonnull(strstr(err, "deprecated and may be removed"));
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_readonly)
{
    clean_env();
    setenv("PX_MCA_ptest_alpha_ro", "3", 1);
    int x = 1;
    capture_begin();
    px_mca_var_register("ptest", "alpha", "ro", "h", PX_MCA_VAR_TYPE_INT, NULL, 1,
                        PX_MCA_VAR_SCOPE_CONSTANT, PX_MCA_VAR_FLAG_READONLY, &x);
    int rc = px_mca_var_set("ptest_alpha_ro", "4");
    const char *err = capture_end();
    ck_assert_int_eq(x, 1);
    ck_assert_int_eq(rc, PX_ERR_NOT_SUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "ptest_alpha_ro is read-only; the value \"3\" from "
                                      "environment variable PX_MCA_ptest_alpha_ro is ignored"));
    ck_assert_ptr_nonnull(strstr(err, "cannot set it to \"4\""));
    assert_source("ptest_alpha_ro", "default");
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_override_makes_readonly)
{
    clean_env();
    char *ovr = write_file(getenv("PX_SYSCONFDIR"), "plexus-mca-params-override.conf",
                           "# site policy\nptest_alpha_s = site\n");
    setenv("PX_MCA_ptest_alpha_s", "user", 1);
    const char *s = "dflt";
    capture_begin();
    px_mca_var_register("ptest", "alpha", "s", "h", PX_MCA_VAR_TYPE_STRING, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &s);
    const char *warn = capture_end();
    ck_assert_str_eq(s, "site");
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want,
                              "variable ptest_alpha_s is fixed to \"site\" by the override file "
                              "%s:2; the value \"user\" from environment variable "
                              "PX_MCA_ptest_alpha_s is ignored",
                              ovr),
                     0);
    ck_assert_msg(strstr(warn, want) != NULL, "got %s", warn);
    free(want);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_s", "mine"), PX_ERR_NOT_SUPPORTED);
    ck_assert_int_eq(px_mca_var_set_cmdline("ptest_alpha_s", "mine", false), PX_ERR_NOT_SUPPORTED);
    const char *err = capture_end();
    ck_assert_int_eq(count_of(err, "is fixed to \"site\" by the override file"), 2);
    ck_assert_str_eq(s, "site");
    px_mca_var_info_t info;
    px_mca_var_get_info(px_mca_var_find("ptest_alpha_s"), &info);
    ck_assert_int_eq(info.source, PX_MCA_VAR_SOURCE_OVERRIDE);
    ck_assert_int_ge(asprintf(&want, "%s:2", ovr), 0);
    ck_assert_str_eq(info.source_where, want);
    free(want);
    free(ovr);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_unknown_names_warn)
{
    clean_env();
    char *home = NULL;
    ck_assert_int_ge(asprintf(&home, "%s/.plexus", getenv("HOME")), 0);
    mkdir(home, 0700);
    char *f = write_file(home, "mca-params.conf", "ptest_alpha_x = 1\nptest_alpah_prio = 2\n");
    setenv("PX_MCA_ptest_alpha_priorty", "3", 1);
    setenv("PX_MCA_zzzzzzzzzzzzzzzzzzzz", "3", 1);
    int x = 0, prio = 0;
    reg_int("x", &x);
    reg_int("priority", &prio);
    capture_begin();
    ck_assert_int_eq(px_mca_var_check_unknown(), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_check_unknown(), PX_SUCCESS); /* warns once */
    const char *err = capture_end();
    ck_assert_int_eq(count_of(err, "plexus: warning: unknown variable"), 3);
    ck_assert_ptr_nonnull(strstr(err, "\"ptest_alpha_priorty\" in environment variable "
                                      "PX_MCA_ptest_alpha_priorty; nearest registered names: "
                                      "ptest_alpha_priority"));
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want, "\"ptest_alpah_prio\" in file %s:2", f), 0);
    ck_assert_msg(strstr(err, want) != NULL, "got %s", err);
    ck_assert_ptr_nonnull(strstr(err, "zzzzzzzzzzzzzzzzzzzz\" in environment variable "
                                      "PX_MCA_zzzzzzzzzzzzzzzzzzzz; no registered variable has a "
                                      "similar name"));
    free(want);
    free(f);
    free(home);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_strict_makes_unknown_fatal)
{
    clean_env();
    setenv("PX_MCA_mca_base_strict", "1", 1);
    setenv("PX_MCA_ptest_alpha_priorty", "3", 1);
    int prio = 0;
    reg_int("priority", &prio);
    capture_begin();
    int rc = px_mca_var_check_unknown();
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "plexus: error: unknown variable \"ptest_alpha_priorty\""));
    ck_assert_ptr_nonnull(strstr(err, "mca_base_strict"));
    px_mca_var_finalize();
    /* Without strict, the same is a warning and not an error. */
    unsetenv("PX_MCA_mca_base_strict");
    px_mca_var_init();
    reg_int("priority", &prio);
    capture_begin();
    rc = px_mca_var_check_unknown();
    err = capture_end();
    ck_assert_int_eq(rc, PX_SUCCESS);
    ck_assert_ptr_nonnull(strstr(err, "plexus: warning: unknown variable"));
    px_mca_var_finalize();
}
END_TEST

static bool gone_filter(const char *name)
{
    return 0 == strncmp(name, "ptest_gone_", 11);
}

START_TEST(test_unknown_filter_installed_by_call)
{
    /* The variable system consults the filter it was given, and only that:
     * nothing installs one behind its back. */
    clean_env();
    setenv("PX_MCA_mca_base_strict", "1", 1);
    setenv("PX_MCA_ptest_gone_x", "3", 1);
    capture_begin();
    int rc = px_mca_var_check_unknown();
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "unknown variable \"ptest_gone_x\""));
    px_mca_var_set_unknown_filter(gone_filter);
    capture_begin();
    rc = px_mca_var_check_unknown();
    err = capture_end();
    ck_assert_int_eq(rc, PX_SUCCESS);
    ck_assert_ptr_null(strstr(err, "ptest_gone_x"));
    px_mca_var_set_unknown_filter(NULL);
    capture_begin();
    rc = px_mca_var_check_unknown();
    capture_end();
    ck_assert_int_eq(rc, PX_ERR_NOT_FOUND);
    unsetenv("PX_MCA_mca_base_strict");
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_register_twice)
{
    clean_env();
    setenv("PX_MCA_ptest_alpha_s", "env", 1);
    const char *s1 = "d", *s2 = "d";
    int i1 = px_mca_var_register("ptest", "alpha", "s", "h", PX_MCA_VAR_TYPE_STRING, NULL, 1,
                                 PX_MCA_VAR_SCOPE_LOCAL, 0, &s1);
    int i2 = px_mca_var_register("ptest", "alpha", "s", "h", PX_MCA_VAR_TYPE_STRING, NULL, 1,
                                 PX_MCA_VAR_SCOPE_LOCAL, 0, &s2);
    ck_assert_int_eq(i1, i2);
    ck_assert_str_eq(s2, "env");
    ck_assert_str_eq(s1, "d"); /* the old storage got its default back */
    int n = px_mca_var_count();
    int x = 0;
    ck_assert_int_eq(px_mca_var_register("ptest", "alpha", "s", "h", PX_MCA_VAR_TYPE_INT, NULL, 1,
                                         PX_MCA_VAR_SCOPE_LOCAL, 0, &x),
                     PX_ERR_EXISTS);
    ck_assert_int_eq(px_mca_var_count(), n);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_info_and_nearest)
{
    clean_env();
    int x = 0;
    int idx = px_mca_var_register("ptest", "alpha", "eager_limit", "Largest eager message",
                                  PX_MCA_VAR_TYPE_INT, NULL, 4, PX_MCA_VAR_SCOPE_ALL,
                                  PX_MCA_VAR_FLAG_SETTABLE, &x);
    int y = 0;
    reg_int("eager_limit2", &y);
    px_mca_var_info_t info;
    ck_assert_int_eq(px_mca_var_get_info(idx, &info), PX_SUCCESS);
    ck_assert_str_eq(info.full_name, "ptest_alpha_eager_limit");
    ck_assert_str_eq(info.framework, "ptest");
    ck_assert_str_eq(info.component, "alpha");
    ck_assert_str_eq(info.name, "eager_limit");
    ck_assert_str_eq(info.help, "Largest eager message");
    ck_assert_int_eq(info.info_level, 4);
    ck_assert_int_eq(info.scope, PX_MCA_VAR_SCOPE_ALL);
    ck_assert_uint_eq(info.flags, PX_MCA_VAR_FLAG_SETTABLE);
    ck_assert_str_eq(px_mca_var_type_name(info.type), "int");
    ck_assert_int_eq(px_mca_var_get_info(10000, &info), PX_ERR_NOT_FOUND);
    const char *near[3];
    int n = px_mca_var_nearest("ptest_alpha_eagr_limit", near, 3);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(near[0], "ptest_alpha_eager_limit");
    ck_assert_str_eq(near[1], "ptest_alpha_eager_limit2");
    ck_assert_int_eq(px_mca_var_nearest("eager_limit", near, 1), 1);
    ck_assert_int_eq(px_mca_var_nearest("qqqqqqqqqqqqqqqqqq", near, 3), 0);
    px_mca_var_finalize();
}
END_TEST

static int probe_calls;
static const char *probed_text = "not probed";
static int probe_fn(void)
{
    probe_calls++;
    probed_text = "found: tcp, shm";
    return PX_SUCCESS;
}

START_TEST(test_probe_runs_once_on_first_read)
{
    clean_env();
    probe_calls = 0;
    int idx = px_mca_var_register("ptest", "alpha", "found", "What discovery found",
                                  PX_MCA_VAR_TYPE_STRING, NULL, 2, PX_MCA_VAR_SCOPE_CONSTANT,
                                  PX_MCA_VAR_FLAG_READONLY, &probed_text);
    ck_assert_int_ge(idx, 0);
    ck_assert_int_eq(px_mca_var_set_probe(idx, probe_fn), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_set_probe(99999, probe_fn), PX_ERR_NOT_FOUND);
    px_mca_var_info_t info;
    px_mca_var_get_info(idx, &info);
    ck_assert(info.probe_pending);
    ck_assert_int_eq(probe_calls, 0); /* registration does not run it */
    char *v = px_mca_var_value_string(idx);
    ck_assert_str_eq(v, "found: tcp, shm");
    free(v);
    v = px_mca_var_value_string(idx);
    free(v);
    ck_assert_int_eq(px_mca_var_probe(idx), PX_SUCCESS);
    ck_assert_int_eq(probe_calls, 1);
    px_mca_var_get_info(idx, &info);
    ck_assert(!info.probe_pending);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_init_refcount)
{
    clean_env();
    int x = 0;
    px_mca_var_init();
    px_mca_var_init();
    reg_int("x", &x);
    px_mca_var_finalize();
    ck_assert_int_ge(px_mca_var_find("ptest_alpha_x"), 0); /* still one init */
    px_mca_var_finalize();
    ck_assert_int_eq(px_mca_var_find("ptest_alpha_x"), PX_ERR_NOT_FOUND);
}
END_TEST

/* ------------------------------------------------------------------ ranges */

START_TEST(test_range_in_and_out_from_api)
{
    clean_env();
    int x = 4;
    int idx = reg_int("x", &x);
    ck_assert_int_eq(px_mca_var_set_range(idx, "1", "64"), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "64"), PX_SUCCESS); /* bounds included */
    ck_assert_int_eq(x, 64);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_x", "1"), PX_SUCCESS);
    ck_assert_int_eq(x, 1);
    capture_begin();
    int rc = px_mca_var_set("ptest_alpha_x", "65");
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(x, 1); /* the current value is kept */
    ck_assert_int_eq(px_mca_var_error_count(), 1);
    ck_assert_ptr_nonnull(strstr(err, "out-of-range value \"65\" for variable ptest_alpha_x"));
    ck_assert_ptr_nonnull(strstr(err, "from API"));
    ck_assert_ptr_nonnull(strstr(err, "accepted: an integer from 1 to 64"));
    ck_assert_ptr_nonnull(strstr(err, "the current value \"1\" is kept"));
    capture_begin();
    rc = px_mca_var_set("ptest_alpha_x", "0");
    capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    const char *lo = NULL, *hi = NULL;
    ck_assert_int_eq(px_mca_var_get_range(idx, &lo, &hi), PX_SUCCESS);
    ck_assert_str_eq(lo, "1");
    ck_assert_str_eq(hi, "64");
    char *acc = px_mca_var_accepted_string(idx);
    ck_assert_str_eq(acc, "an integer from 1 to 64");
    free(acc);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_range_env_refused_at_registration)
{
    clean_env();
    setenv("PX_MCA_ptest_alpha_batch", "-1", 1);
    int batch = 1;
    capture_begin();
    int rc = px_mca_var_register_range("ptest", "alpha", "batch", "h", PX_MCA_VAR_TYPE_INT, 1,
                                       PX_MCA_VAR_SCOPE_LOCAL, 0, "1", NULL, &batch);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_int_eq(batch, 1);
    ck_assert_int_eq(px_mca_var_error_count(), 1);
    ck_assert_int_eq(count_of(err, "ptest_alpha_batch"), 2); /* variable and env name, once */
    ck_assert_ptr_nonnull(strstr(err, "environment variable PX_MCA_ptest_alpha_batch"));
    ck_assert_ptr_nonnull(strstr(err, "accepted: an integer of at least 1"));
    ck_assert_ptr_nonnull(strstr(err, "the default \"1\" is kept"));
    assert_source("ptest_alpha_batch", "default");
    /* The variable exists with its range. */
    int idx = px_mca_var_find("ptest_alpha_batch");
    const char *lo = NULL, *hi = "x";
    px_mca_var_get_range(idx, &lo, &hi);
    ck_assert_str_eq(lo, "1");
    ck_assert_ptr_null(hi);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_range_set_later_checks_current_value)
{
    clean_env();
    char *dir = make_tmpdir();
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/.plexus", getenv("HOME")), 0);
    mkdir(p, 0700);
    char *f = write_file(p, "mca-params.conf", "ptest_alpha_limit = 1G\n");
    size_t z = 4096;
    int idx = px_mca_var_register("ptest", "alpha", "limit", "h", PX_MCA_VAR_TYPE_SIZE, NULL, 1,
                                  PX_MCA_VAR_SCOPE_LOCAL, 0, &z);
    ck_assert_int_ge(idx, 0);
    ck_assert_uint_eq(z, (size_t)1 << 30);
    capture_begin();
    int rc = px_mca_var_set_range(idx, "1k", "64k"); /* suffixes, as the parser reads them */
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_uint_eq(z, 4096);
    char *want = NULL;
    ck_assert_int_ge(asprintf(&want, "from file %s:1", f), 0);
    ck_assert_ptr_nonnull(strstr(err, want));
    free(want);
    ck_assert_ptr_nonnull(strstr(err, "out-of-range value \"1G\""));
    ck_assert_ptr_nonnull(strstr(err, "a byte count from 1024 to 65536"));
    assert_source("ptest_alpha_limit", "default");
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_limit", "64k"), PX_SUCCESS);
    ck_assert_uint_eq(z, 65536);
    /* A source read later (the command-line hand-off) is checked too. */
    capture_begin();
    rc = px_mca_var_set_cmdline("ptest_alpha_limit", "2M", false);
    err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(err, "command line (--mca)"));
    ck_assert_uint_eq(z, 65536);
    free(f);
    free(p);
    free(dir);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_range_double_and_bad_ranges)
{
    clean_env();
    double d = 0.5;
    int idx = px_mca_var_register_range("ptest", "alpha", "ratio", "h", PX_MCA_VAR_TYPE_DOUBLE, 1,
                                        PX_MCA_VAR_SCOPE_LOCAL, 0, "0", "1.5", &d);
    ck_assert_int_ge(idx, 0);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_ratio", "1.25"), PX_SUCCESS);
    ck_assert(d == 1.25);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_ratio", "1.5001"), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_ratio", "-1e-9"), PX_ERR_BAD_PARAM);
    const char *err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "a number from 0 to 1.5"));
    ck_assert(d == 1.25);
    /* A default outside its own range is the registering code's mistake. */
    int x = 100;
    int xi = reg_int("x", &x);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set_range(xi, "1", "10"), PX_ERR_BAD_PARAM);
    err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "default \"100\" of variable ptest_alpha_x is outside"));
    const char *lo = "x", *hi = "x";
    px_mca_var_get_range(xi, &lo, &hi);
    ck_assert_ptr_null(lo); /* no range was set */
    ck_assert_ptr_null(hi);
    /* Bounds that do not parse, min above max, types without a range. */
    capture_begin();
    ck_assert_int_eq(px_mca_var_set_range(xi, "lots", NULL), PX_ERR_BAD_PARAM);
    ck_assert_int_eq(px_mca_var_set_range(xi, "10", "1"), PX_ERR_BAD_PARAM);
    bool b = false;
    int bi = px_mca_var_register("ptest", "alpha", "flag", "h", PX_MCA_VAR_TYPE_BOOL, NULL, 1,
                                 PX_MCA_VAR_SCOPE_LOCAL, 0, &b);
    ck_assert_int_eq(px_mca_var_set_range(bi, "0", "1"), PX_ERR_BAD_PARAM);
    capture_end();
    ck_assert_int_eq(px_mca_var_set_range(99999, "0", "1"), PX_ERR_NOT_FOUND);
    /* Unsigned: 2^64-1 does not parse; the range's own text is used. */
    unsigned u = 5;
    int ui = px_mca_var_register_range("ptest", "alpha", "u", "h", PX_MCA_VAR_TYPE_UNSIGNED, 1,
                                       PX_MCA_VAR_SCOPE_LOCAL, 0, "0x1", "0x3f", &u);
    ck_assert_int_ge(ui, 0);
    px_mca_var_get_range(ui, &lo, &hi);
    ck_assert_str_eq(lo, "1");
    ck_assert_str_eq(hi, "63");
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_alpha_u", "64"), PX_ERR_BAD_PARAM);
    capture_end();
    ck_assert_uint_eq(u, 5);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_range_survives_detach)
{
    clean_env();
    int x = 3;
    int idx = px_mca_var_register_range("ptest", "plug", "x", "h", PX_MCA_VAR_TYPE_INT, 1,
                                        PX_MCA_VAR_SCOPE_LOCAL, 0, "-1", "8", &x);
    ck_assert_int_ge(idx, 0);
    const char *lo0 = NULL, *hi0 = NULL;
    px_mca_var_get_range(idx, &lo0, &hi0);
    ck_assert_int_eq(px_mca_var_detach_component("ptest", "plug"), 1);
    x = 77; /* the plugin's storage is gone; the variable no longer reads it */
    const char *lo = NULL, *hi = NULL;
    px_mca_var_get_range(idx, &lo, &hi);
    ck_assert_str_eq(lo, "-1");
    ck_assert_str_eq(hi, "8");
    ck_assert_ptr_eq(lo, lo0); /* the same texts, still valid */
    ck_assert_int_eq(px_mca_var_set("ptest_plug_x", "-1"), PX_SUCCESS);
    capture_begin();
    ck_assert_int_eq(px_mca_var_set("ptest_plug_x", "9"), PX_ERR_BAD_PARAM);
    capture_end();
    char *v = px_mca_var_value_string(idx);
    ck_assert_str_eq(v, "-1");
    free(v);
    /* A plugin loaded again registers with its range again; old texts stay. */
    int y = 3;
    ck_assert_int_eq(px_mca_var_register_range("ptest", "plug", "x", "h", PX_MCA_VAR_TYPE_INT, 1,
                                               PX_MCA_VAR_SCOPE_LOCAL, 0, "-2", "8", &y),
                     idx);
    ck_assert_int_eq(y, -1); /* the value moves into the new storage */
    ck_assert_str_eq(lo0, "-1");
    px_mca_var_get_range(idx, &lo, &hi);
    ck_assert_str_eq(lo, "-2");
    px_mca_var_finalize();
}
END_TEST

/* ---- registration tables ---- */

typedef struct {
    int level;
    size_t limit;
    bool fast;
    int mode;
    char *path;
    double ratio;
} tbl_conf_t;

static const px_mca_var_enum_value_t tbl_modes[] = {{1, "one"}, {2, "two"}, {0, NULL}};

START_TEST(test_table_registers_every_row)
{
    clean_env();
    setenv("PX_MCA_ptest_tbl_limit", "2M", 1);
    static int outside = 5;
    tbl_conf_t c = {0};
    const px_mca_var_field_t table[] = {
        {.name = "level",
         .help = "h level",
         .type = PX_MCA_VAR_TYPE_INT,
         .info_level = 3,
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .dflt = "7",
         .min = "0",
         .max = "9",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, level)},
        {.name = "limit",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h limit",
         .type = PX_MCA_VAR_TYPE_SIZE,
         .info_level = 4,
         .dflt = "64k",
         .min = "1k",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, limit)},
        {.name = "fast",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h fast",
         .type = PX_MCA_VAR_TYPE_BOOL,
         .info_level = 5,
         .dflt = "yes",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, fast)},
        {.name = "mode",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h mode",
         .type = PX_MCA_VAR_TYPE_ENUM,
         .enum_values = tbl_modes,
         .info_level = 6,
         .dflt = "two",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, mode)},
        {.name = "path",
         .help = "h path",
         .type = PX_MCA_VAR_TYPE_STRING,
         .info_level = 7,
         .scope = PX_MCA_VAR_SCOPE_ALL,
         .dflt = "/tmp",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, path)},
        {.name = "outside",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h outside",
         .type = PX_MCA_VAR_TYPE_INT,
         .info_level = 8,
         .flags = PX_MCA_VAR_FLAG_SETTABLE,
         .storage = &outside},
        {.name = NULL},
    };
    px_mca_var_init();
    ck_assert_int_eq(px_mca_var_register_table("ptest", "tbl", table, -1, &c), PX_SUCCESS);
    ck_assert_int_eq(c.level, 7);
    ck_assert_uint_eq(c.limit, 2u << 20); /* from the environment */
    ck_assert(c.fast);
    ck_assert_int_eq(c.mode, 2);
    ck_assert_str_eq(c.path, "/tmp");
    ck_assert_int_eq(outside, 5);
    /* Each row is a variable as px_mca_var_register would make it. */
    px_mca_var_info_t info;
    int idx = px_mca_var_find("ptest_tbl_level");
    ck_assert_int_ge(idx, 0);
    ck_assert_int_eq(px_mca_var_get_info(idx, &info), PX_SUCCESS);
    ck_assert_str_eq(info.help, "h level");
    ck_assert_int_eq(info.info_level, 3);
    const char *lo = NULL, *hi = NULL;
    px_mca_var_get_range(idx, &lo, &hi);
    ck_assert_str_eq(lo, "0");
    ck_assert_str_eq(hi, "9");
    char *d = px_mca_var_default_string(px_mca_var_find("ptest_tbl_limit"));
    ck_assert_str_eq(d, "65536");
    free(d);
    assert_source("ptest_tbl_limit", "environment PX_MCA_ptest_tbl_limit");
    idx = px_mca_var_find("ptest_tbl_path");
    px_mca_var_get_info(idx, &info);
    ck_assert_int_eq(info.scope, PX_MCA_VAR_SCOPE_ALL);
    idx = px_mca_var_find("ptest_tbl_outside");
    px_mca_var_get_info(idx, &info);
    ck_assert_uint_eq(info.flags, PX_MCA_VAR_FLAG_SETTABLE);
    ck_assert_int_eq(px_mca_var_set("ptest_tbl_mode", "one"), PX_SUCCESS);
    ck_assert_int_eq(c.mode, 1);
    /* A count instead of the end row: only the first two. */
    tbl_conf_t c2 = {0};
    px_mca_var_finalize();
    clean_env();
    ck_assert_int_eq(px_mca_var_register_table("ptest", "tbl", table, 2, &c2), PX_SUCCESS);
    ck_assert_int_ge(px_mca_var_find("ptest_tbl_limit"), 0);
    ck_assert_int_eq(px_mca_var_find("ptest_tbl_fast"), PX_ERR_NOT_FOUND);
    px_mca_var_finalize();
}
END_TEST

START_TEST(test_table_error_in_the_middle)
{
    clean_env();
    tbl_conf_t c = {0};
    const px_mca_var_field_t table[] = {
        {.name = "level",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_INT,
         .dflt = "3",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, level)},
        /* An enum without its table of names. */
        {.name = "mode",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_ENUM,
         .offset = PX_MCA_VAR_AT(tbl_conf_t, mode)},
        /* A bool cannot have a range. */
        {.name = "fast",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_BOOL,
         .min = "0",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, fast)},
        /* A default that is not a size. */
        {.name = "limit",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_SIZE,
         .dflt = "lots",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, limit)},
        {.name = "ratio",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_DOUBLE,
         .dflt = "0.5",
         .min = "0",
         .max = "1",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, ratio)},
        {.name = NULL},
    };
    px_mca_var_init();
    capture_begin();
    int rc = px_mca_var_register_table("ptest", "tbl", table, -1, &c);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    /* Every bad row is named, with what is wrong. */
    ck_assert_ptr_nonnull(strstr(err, "row 1 (variable ptest_tbl_mode)"));
    ck_assert_ptr_nonnull(strstr(err, "needs its table of names"));
    ck_assert_ptr_nonnull(strstr(err, "row 2 (variable ptest_tbl_fast)"));
    ck_assert_ptr_nonnull(strstr(err, "only int, unsigned, size and double"));
    ck_assert_ptr_nonnull(strstr(err, "row 3 (variable ptest_tbl_limit)"));
    ck_assert_ptr_nonnull(strstr(err, "the default \"lots\" is not a size value"));
    ck_assert_ptr_null(strstr(err, "ptest_tbl_level"));
    ck_assert_ptr_null(strstr(err, "ptest_tbl_ratio"));
    /* The good rows before and after are registered; the bad ones are not. */
    ck_assert_int_ge(px_mca_var_find("ptest_tbl_level"), 0);
    ck_assert_int_eq(c.level, 3);
    ck_assert_int_ge(px_mca_var_find("ptest_tbl_ratio"), 0);
    ck_assert(c.ratio == 0.5);
    ck_assert_int_eq(px_mca_var_find("ptest_tbl_mode"), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_mca_var_find("ptest_tbl_fast"), PX_ERR_NOT_FOUND);
    ck_assert_int_eq(px_mca_var_find("ptest_tbl_limit"), PX_ERR_NOT_FOUND);
    px_mca_var_finalize();

    /* A refused user value in the middle: reported once, the first error
     * returned, the later rows still registered. */
    clean_env();
    setenv("PX_MCA_ptest_tbl_mode", "three", 1);
    const px_mca_var_field_t good[] = {
        {.name = "level",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_INT,
         .dflt = "3",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, level)},
        {.name = "mode",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_ENUM,
         .enum_values = tbl_modes,
         .dflt = "one",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, mode)},
        {.name = "ratio",
         .scope = PX_MCA_VAR_SCOPE_LOCAL,
         .help = "h",
         .type = PX_MCA_VAR_TYPE_DOUBLE,
         .dflt = "0.25",
         .offset = PX_MCA_VAR_AT(tbl_conf_t, ratio)},
    };
    px_mca_var_init();
    capture_begin();
    rc = px_mca_var_register_table("ptest", "tbl", good, 3, &c);
    err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(err, "invalid value \"three\" for variable ptest_tbl_mode"));
    ck_assert_int_eq(px_mca_var_error_count(), 1);
    ck_assert_int_eq(c.mode, 1);
    ck_assert(c.ratio == 0.25);
    ck_assert_int_ge(px_mca_var_find("ptest_tbl_ratio"), 0);
    /* No base and no storage: reported, not a crash. */
    capture_begin();
    rc = px_mca_var_register_table("ptest", "tbl2", good, 1, NULL);
    err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(err, "row 0 (variable ptest_tbl2_level): no storage"));
    px_mca_var_finalize();
}
END_TEST

/* The job-wide variables' list and hash (px_init compares them across the
 * ranks): sorted by name, parsed values (64k == 65536), sources beside them
 * but outside the hash, local variables left out. */
static bool list_has(const char *buf, size_t len, const char *name, const char *canon,
                     const char *source_prefix)
{
    size_t at = 0;
    while (at < len) {
        const char *t[4];
        for (int k = 0; k < 4; k++) {
            t[k] = buf + at;
            at += strlen(buf + at) + 1;
        }
        if (0 == strcmp(t[0], name))
            return 0 == strcmp(t[1], canon) &&
                   0 == strncmp(t[3], source_prefix, strlen(source_prefix));
    }
    return false;
}

START_TEST(test_scope_all_values_and_hash)
{
    clean_env();
    setenv("PX_MCA_ptest_jw_zsize", "64k", 1);
    size_t z = 4096, zl = 1;
    double d = 0.1;
    int e = 0;
    static const px_mca_var_enum_value_t ev[] = {{0, "auto"}, {1, "get"}, {0, NULL}};
    ck_assert_int_ge(px_mca_var_register("ptest", "jw", "zsize", "a size", PX_MCA_VAR_TYPE_SIZE,
                                         NULL, 4, PX_MCA_VAR_SCOPE_ALL, PX_MCA_VAR_FLAG_SETTABLE,
                                         &z),
                     0);
    ck_assert_int_ge(px_mca_var_register("ptest", "jw", "adouble", "a double",
                                         PX_MCA_VAR_TYPE_DOUBLE, NULL, 4, PX_MCA_VAR_SCOPE_ALL,
                                         PX_MCA_VAR_FLAG_SETTABLE, &d),
                     0);
    ck_assert_int_ge(px_mca_var_register("ptest", "jw", "mode", "an enum", PX_MCA_VAR_TYPE_ENUM, ev,
                                         4, PX_MCA_VAR_SCOPE_ALL, PX_MCA_VAR_FLAG_SETTABLE, &e),
                     0);
    ck_assert_int_ge(px_mca_var_register("ptest", "jw", "local", "a local size",
                                         PX_MCA_VAR_TYPE_SIZE, NULL, 4, PX_MCA_VAR_SCOPE_LOCAL,
                                         PX_MCA_VAR_FLAG_SETTABLE, &zl),
                     0);
    char *buf = NULL;
    size_t len = 0;
    uint64_t h0 = 0, h1 = 1;
    ck_assert_int_eq(px_mca_var_scope_all_values(&buf, &len, &h0), PX_SUCCESS);
    ck_assert(list_has(buf, len, "ptest_jw_zsize", "65536", "environment PX_MCA_ptest_jw_zsize"));
    ck_assert(list_has(buf, len, "ptest_jw_mode", "auto", "default"));
    ck_assert(!list_has(buf, len, "ptest_jw_local", "1", ""));
    /* Sorted by name: adouble, mode, zsize (among others). */
    const char *a = memmem(buf, len, "ptest_jw_adouble", 17);
    const char *m = memmem(buf, len, "ptest_jw_mode", 14);
    const char *zz = memmem(buf, len, "ptest_jw_zsize", 15);
    ck_assert(a && m && zz && a < m && m < zz);
    free(buf);
    /* Another spelling of the same value, from another source: same hash. */
    ck_assert_int_eq(px_mca_var_set("ptest_jw_zsize", "65536"), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_set("ptest_jw_mode", "0"), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_scope_all_values(NULL, NULL, &h1), PX_SUCCESS);
    ck_assert_uint_eq(h0, h1);
    /* A local variable does not count. */
    ck_assert_int_eq(px_mca_var_set("ptest_jw_local", "7"), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_scope_all_values(NULL, NULL, &h1), PX_SUCCESS);
    ck_assert_uint_eq(h0, h1);
    /* A different value does; a double to its last bit. */
    ck_assert_int_eq(px_mca_var_set("ptest_jw_mode", "get"), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_scope_all_values(NULL, NULL, &h1), PX_SUCCESS);
    ck_assert_uint_ne(h0, h1);
    ck_assert_int_eq(px_mca_var_set("ptest_jw_mode", "auto"), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_set("ptest_jw_adouble", "0.10000000000000002"), PX_SUCCESS);
    ck_assert_int_eq(px_mca_var_scope_all_values(NULL, NULL, &h1), PX_SUCCESS);
    ck_assert_uint_ne(h0, h1);
    px_mca_var_finalize();
    unsetenv("PX_MCA_ptest_jw_zsize");
}
END_TEST

PX_CHECK_MAIN("mca_var", NULL, remove_tmpdirs, 0, test_default, test_full_names, test_int_forms,
              test_unsigned_forms, test_size_forms, test_bool_forms, test_double_and_string,
              test_enum_forms, test_env_source, test_env_parse_error_keeps_default,
              test_file_source_and_line, test_file_parse_error_names_line,
              test_file_syntax_warnings, test_file_precedence, test_missing_listed_file_warns,
              test_param_file_fifo_refused, test_param_file_not_regular_refused,
              test_param_file_size_cap, test_env_empty_name_warns,
              test_info_where_survives_concurrent_set, test_precedence_chain, test_cmdline_handoff,
              test_cmdline_before_register, test_api_unknown_name, test_synonyms,
              test_primary_beats_synonym, test_latest_set_wins_across_names,
              test_deprecated_variable, test_readonly, test_override_makes_readonly,
              test_unknown_names_warn, test_strict_makes_unknown_fatal,
              test_unknown_filter_installed_by_call, test_register_twice, test_info_and_nearest,
              test_probe_runs_once_on_first_read, test_init_refcount,
              test_range_in_and_out_from_api, test_range_env_refused_at_registration,
              test_range_set_later_checks_current_value, test_range_double_and_bad_ranges,
              test_range_survives_detach, test_table_registers_every_row,
              test_table_error_in_the_middle, test_scope_all_values_and_hash)
