/*
 * fuzz_test.c: the parsers of outside input in core/mca (parameter files,
 * PX_MCA_* / PX_CMDLINE_MCA_* values, selection lists) fed with random and
 * hostile input from a fixed-seed generator. Checks that nothing crashes
 * (the ASan build catches memory errors), that every value is either
 * accepted or refused with an error, and that an accepted value reads back
 * and parses again to the same value.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include "test/mca/mca_test_util.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/mca/ptest.h"

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* Characters that matter to the parsers, plus some noise. */
static const char alphabet[] = "=#\n \t\"'0123456789kKmMgGxX-+.eE,^_abcdefghijklmnoptrsuyz\r\\";

static void random_text(char *buf, size_t max)
{
    size_t n = rnd() % max;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = rnd() % 100;
        if (r < 85)
            buf[i] = alphabet[rnd() % (sizeof(alphabet) - 1)];
        else if (r < 95)
            buf[i] = (char)(rnd() % 256 ?: 1); /* any byte but NUL */
        else
            buf[i] = "ptest_alpha_"[rnd() % 12];
    }
    buf[n] = '\0';
}

static const px_mca_var_enum_value_t modes[] = {{0, "off"}, {3, "fast"}, {-2, "slow"}, {0, NULL}};

typedef struct {
    int i;
    unsigned u;
    size_t z;
    bool b;
    double d;
    const char *s;
    int e;
} vars_t;

static const char *const names[] = {"ptest_alpha_i", "ptest_alpha_u", "ptest_alpha_z",
                                    "ptest_alpha_b", "ptest_alpha_d", "ptest_alpha_s",
                                    "ptest_alpha_e"};

static void register_all(vars_t *v)
{
    *v = (vars_t){.i = 1, .u = 2, .z = 3, .b = true, .d = 0.5, .s = "x", .e = 3};
    static const px_mca_var_type_t types[] = {PX_MCA_VAR_TYPE_INT,    PX_MCA_VAR_TYPE_UNSIGNED,
                                              PX_MCA_VAR_TYPE_SIZE,   PX_MCA_VAR_TYPE_BOOL,
                                              PX_MCA_VAR_TYPE_DOUBLE, PX_MCA_VAR_TYPE_STRING,
                                              PX_MCA_VAR_TYPE_ENUM};
    void *storage[] = {&v->i, &v->u, &v->z, &v->b, &v->d, &v->s, &v->e};
    for (int k = 0; k < 7; k++) {
        int rc = px_mca_var_register("ptest", "alpha", names[k] + strlen("ptest_alpha_"), "fuzz",
                                     types[k], types[k] == PX_MCA_VAR_TYPE_ENUM ? modes : NULL, 1,
                                     PX_MCA_VAR_SCOPE_LOCAL, 0, storage[k]);
        ck_assert_msg(rc >= 0 || rc == PX_ERR_BAD_PARAM, "register %s: %d", names[k], rc);
    }
    ck_assert(v->e == 0 || v->e == 3 || v->e == -2);
}

/* Random parameter files, environment and command-line values. */
START_TEST(test_fuzz_sources)
{
    clean_env();
    rng_state = 0x9e3779b97f4a7c15ULL;
    char *home = NULL;
    ck_assert_int_ge(asprintf(&home, "%s/.plexus", getenv("HOME")), 0);
    mkdir(home, 0700);
    static char text[8192];
    capture_begin(); /* errors and warnings are expected; keep them out of the log */
    for (int round = 0; round < 300; round++) {
        /* a file: random lines, some of them plausible */
        char *path = NULL;
        ck_assert_int_ge(asprintf(&path, "%s/mca-params.conf", home), 0);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        int lines = (int)(rnd() % 20);
        for (int l = 0; l < lines; l++) {
            random_text(text, rnd() % 4 == 0 ? sizeof(text) : 80);
            if (rnd() % 2)
                fprintf(f, "%s = %s\n", names[rnd() % 7], text);
            else
                fprintf(f, "%s\n", text);
        }
        fclose(f);
        free(path);
        /* environment and command-line hand-off values */
        for (int k = 0; k < 7; k++) {
            char env[64];
            random_text(text, 64);
            snprintf(env, sizeof(env), "%s%s", rnd() % 2 ? "PX_MCA_" : "PX_CMDLINE_MCA_", names[k]);
            if (rnd() % 3)
                setenv(env, text, 1);
            else
                unsetenv(env);
        }
        random_text(text, 40);
        setenv("PX_MCA_ptest", text, 1); /* a random selection list */
        px_mca_var_init();
        vars_t v;
        register_all(&v);
        int rc = px_mca_framework_open(&px_ptest_base_framework);
        ck_assert(rc == PX_SUCCESS || rc == PX_ERR_BAD_PARAM || rc == PX_ERR_NOT_FOUND);
        px_mca_var_check_unknown();
        for (int k = 0; k < 7; k++) {
            char *s = px_mca_var_value_string(px_mca_var_find(names[k]));
            ck_assert_ptr_nonnull(s);
            free(s);
        }
        px_mca_framework_close(&px_ptest_base_framework);
        px_mca_var_finalize();
    }
    capture_end();
    free(home);
}
END_TEST

/* Random values through the API: refused, or accepted and stable. */
START_TEST(test_fuzz_values_round_trip)
{
    clean_env();
    rng_state = 0x2545f4914f6cdd1dULL;
    vars_t v;
    register_all(&v);
    static char text[256];
    int accepted = 0;
    capture_begin();
    for (int n = 0; n < 20000; n++) {
        int k = (int)(rnd() % 7);
        if (rnd() % 4 == 0) {
            /* plausible numbers with suffixes */
            snprintf(text, sizeof(text), "%s%u%s", rnd() % 3 ? "" : "-", rnd() % 100000,
                     (const char *[]){"", "k", "M", "G", "x", " ", "e3", ".5"}[rnd() % 8]);
        } else {
            random_text(text, 24);
        }
        int rc = px_mca_var_set(names[k], text);
        ck_assert_msg(rc == PX_SUCCESS || rc == PX_ERR_BAD_PARAM, "set %s \"%s\": %d", names[k],
                      text, rc);
        if (rc != PX_SUCCESS)
            continue;
        accepted++;
        int idx = px_mca_var_find(names[k]);
        char *once = px_mca_var_value_string(idx);
        ck_assert_int_eq(px_mca_var_set(names[k], once), PX_SUCCESS);
        char *twice = px_mca_var_value_string(idx);
        ck_assert_msg(!strcmp(once, twice), "%s: \"%s\" read back as \"%s\" then \"%s\"", names[k],
                      text, once, twice);
        free(once);
        free(twice);
    }
    capture_end();
    ck_assert_int_gt(accepted, 1000); /* the generator does reach the accepting paths */
    ck_assert(v.e == 0 || v.e == 3 || v.e == -2);
    ck_assert(v.b == true || v.b == false);
    px_mca_var_finalize();
}
END_TEST

int main(void)
{
    ptest_add_builtins();
    const TTest *tests[] = {test_fuzz_sources, test_fuzz_values_round_trip};
    Suite *s = suite_create("mca_fuzz");
    suite_add_tcase(
        s, px_check_tcase("mca_fuzz", NULL, remove_tmpdirs, 120, tests, PX_CHECK_COUNT(tests)));
    return px_check_run(s);
}
