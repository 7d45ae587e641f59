/*
 * framework_test.c: framework lifecycle with the test framework "ptest" and
 * its built-in components: order of calls, refcounting, failing open ->
 * close + removal, the automatic variables, the selection-list grammar and
 * its errors, and the two selection styles.
 */
#define _GNU_SOURCE
#include "test/mca/mca_test_util.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "test/mca/ptest.h"

static px_mca_framework_t *const fw = &px_ptest_base_framework;

static void setup(void)
{
    clean_env();
    ptest_add_builtins();
    ptest_log_clear();
}

static void teardown_fw(void)
{
    while (fw->refcount > 0)
        px_mca_framework_close(fw);
    px_mca_var_finalize();
}

static bool has_component(const char *name)
{
    px_mca_component_item_t *it;
    PX_LIST_FOREACH(it, &fw->components, px_mca_component_item_t)
    {
        if (0 == strcmp(it->component->component_name, name))
            return true;
    }
    return false;
}

START_TEST(test_lifecycle_order)
{
    setup();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_str_eq(ptest_log_get(), "fw:register alpha:register beta:register alpha:open "
                                      "beta:open broken:open broken:close fw:open");
    ck_assert_int_eq(fw->refcount, 1);
    ck_assert(fw->registered);
    ck_assert_int_eq((int)px_list_get_size(&fw->components), 3);
    ck_assert(has_component("alpha") && has_component("beta") && has_component("shy"));
    ck_assert(!has_component("broken"));
    /* The failed open is recorded for px_info --show-failed. */
    bool recorded = false;
    for (int i = 0; i < px_mca_repository_failed_count(); i++) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (!strcmp(f->framework, "ptest") && !strcmp(f->component, "broken")) {
            recorded = true;
            ck_assert_ptr_nonnull(strstr(f->reason, "open failed"));
        }
    }
    ck_assert(recorded);
    ptest_log_clear();
    ck_assert_int_eq(px_mca_framework_close(fw), PX_SUCCESS);
    ck_assert_str_eq(ptest_log_get(), "fw:close shy:close beta:close alpha:close");
    ck_assert_int_eq(fw->refcount, 0);
    ck_assert(px_list_is_empty(&fw->components));
    teardown_fw();
}
END_TEST

START_TEST(test_failing_open_is_reported_at_verbose)
{
    setup();
    setenv("PX_MCA_ptest_base_verbose", "1", 1);
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    const char *err = capture_end();
    ck_assert_int_eq(fw->verbose, 1);
    ck_assert_ptr_nonnull(strstr(err, "ptest: component broken: open failed: "));
    ck_assert_ptr_nonnull(strstr(err, "closing and unloading it"));
    /* Problems show at level 1; routine messages need level 10. */
    ck_assert_ptr_null(strstr(err, "component alpha opened"));
    teardown_fw();
}
END_TEST

START_TEST(test_verbose_routine)
{
    setup();
    setenv("PX_MCA_ptest_base_verbose", "10", 1);
    capture_begin();
    px_mca_framework_open(fw);
    px_mca_framework_close(fw);
    const char *err = capture_end();
    ck_assert_ptr_nonnull(strstr(err, "ptest: component alpha opened"));
    ck_assert_ptr_nonnull(strstr(err, "ptest: component alpha closed"));
    teardown_fw();
}
END_TEST

START_TEST(test_quiet_by_default)
{
    setup();
    capture_begin();
    px_mca_framework_open(fw);
    px_mca_framework_close(fw);
    const char *err = capture_end();
    ck_assert_str_eq(err, "");
    teardown_fw();
}
END_TEST

START_TEST(test_refcount)
{
    setup();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ptest_log_clear();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_int_eq(fw->refcount, 2);
    ck_assert_str_eq(ptest_log_get(), ""); /* a second open only counts */
    px_mca_framework_close(fw);
    ck_assert_str_eq(ptest_log_get(), "");
    ck_assert_int_eq((int)px_list_get_size(&fw->components), 3);
    px_mca_framework_close(fw);
    ck_assert_str_eq(ptest_log_get(), "fw:close shy:close beta:close alpha:close");
    ck_assert_int_eq(px_mca_framework_close(fw), PX_SUCCESS); /* extra close: no-op */
    ck_assert_str_eq(ptest_log_get(), "fw:close shy:close beta:close alpha:close");
    /* Reopen works from scratch. */
    ptest_log_clear();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_ptr_nonnull(strstr(ptest_log_get(), "alpha:register"));
    ck_assert_int_eq((int)px_list_get_size(&fw->components), 3);
    teardown_fw();
}
END_TEST

START_TEST(test_register_without_open)
{
    setup();
    ck_assert_int_eq(px_mca_framework_register(fw), PX_SUCCESS);
    ck_assert_int_eq(px_mca_framework_register(fw), PX_SUCCESS); /* idempotent */
    ck_assert_str_eq(ptest_log_get(), "fw:register alpha:register beta:register");
    ck_assert_int_eq(fw->refcount, 0);
    ck_assert_int_ge(px_mca_var_find("ptest_alpha_priority"), 0);
    /* close without open releases the candidates without calling close */
    ptest_log_clear();
    px_mca_framework_close(fw);
    ck_assert_str_eq(ptest_log_get(), "");
    ck_assert(px_list_is_empty(&fw->components));
    teardown_fw();
}
END_TEST

START_TEST(test_automatic_variables)
{
    setup();
    setenv("PX_MCA_ptest", "alpha,beta", 1);
    setenv("PX_MCA_ptest_base_verbose", "7", 1);
    px_mca_framework_register(fw);
    int sel = px_mca_var_find("ptest");
    int verb = px_mca_var_find("ptest_base_verbose");
    ck_assert_int_ge(sel, 0);
    ck_assert_int_ge(verb, 0);
    ck_assert_str_eq(fw->selection, "alpha,beta");
    ck_assert_int_eq(fw->verbose, 7);
    ck_assert_int_eq(px_output_get_verbosity(fw->output), 7);
    px_mca_var_info_t info;
    px_mca_var_get_info(sel, &info);
    ck_assert_int_eq(info.type, PX_MCA_VAR_TYPE_STRING);
    ck_assert_ptr_nonnull(strstr(info.help, "^a,b"));
    px_mca_var_get_info(verb, &info);
    ck_assert_int_eq(info.type, PX_MCA_VAR_TYPE_INT);
    ck_assert_str_eq(info.framework, "ptest");
    ck_assert_str_eq(info.component, "base");
    ck_assert_ptr_eq(px_mca_framework_find("ptest"), fw);
    ck_assert_ptr_null(px_mca_framework_find("nope"));
    bool listed = false;
    for (int i = 0; i < px_mca_framework_count(); i++)
        if (px_mca_framework_get(i) == fw)
            listed = true;
    ck_assert(listed);
    teardown_fw();
}
END_TEST

START_TEST(test_include_list)
{
    setup();
    setenv("PX_MCA_ptest", "beta, shy", 1);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_str_eq(ptest_log_get(), "fw:register beta:register beta:open fw:open");
    ck_assert(has_component("beta") && has_component("shy"));
    ck_assert(!has_component("alpha") && !has_component("broken"));
    ck_assert(px_mca_framework_allows(fw, "beta"));
    ck_assert(!px_mca_framework_allows(fw, "alpha"));
    /* an excluded component's variables are not registered */
    ck_assert_int_eq(px_mca_var_find("ptest_alpha_priority"), PX_ERR_NOT_FOUND);
    teardown_fw();
}
END_TEST

START_TEST(test_exclude_list)
{
    setup();
    setenv("PX_MCA_ptest", "^alpha,broken", 1);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_str_eq(ptest_log_get(), "fw:register beta:register beta:open fw:open");
    ck_assert(has_component("beta") && has_component("shy"));
    ck_assert(!has_component("alpha") && !has_component("broken"));
    ck_assert(!px_mca_framework_allows(fw, "alpha"));
    ck_assert(px_mca_framework_allows(fw, "anything"));
    teardown_fw();
}
END_TEST

START_TEST(test_mixing_is_an_error)
{
    setup();
    setenv("PX_MCA_ptest", "alpha,^beta", 1);
    capture_begin();
    int rc = px_mca_framework_open(fw);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(err, "plexus: error: the ptest selection list \"alpha,^beta\" "
                                      "(from environment PX_MCA_ptest) mixes including and "
                                      "excluding"));
    ck_assert_ptr_nonnull(strstr(err, "\"^a,b\""));
    ck_assert_str_eq(ptest_log_get(), "");
    ck_assert_int_eq(fw->refcount, 0);
    teardown_fw();
}
END_TEST

START_TEST(test_empty_exclude_is_an_error)
{
    setup();
    setenv("PX_MCA_ptest", "^", 1);
    capture_begin();
    int rc = px_mca_framework_open(fw);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_BAD_PARAM);
    ck_assert_ptr_nonnull(strstr(err, "excludes nothing"));
    teardown_fw();
}
END_TEST

START_TEST(test_empty_list_means_all)
{
    setup();
    setenv("PX_MCA_ptest", " ", 1);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert(has_component("alpha") && has_component("beta") && has_component("shy"));
    teardown_fw();
}
END_TEST

START_TEST(test_include_unknown_reports_all)
{
    setup();
    px_mca_var_set_cmdline("ptest", "alpah,beta,zzzzzzzz,bta", false);
    capture_begin();
    int rc = px_mca_framework_open(fw);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_NOT_FOUND);
    ck_assert_int_eq(count_of(err, "plexus: error:"), 1); /* one message with every name */
    ck_assert_ptr_nonnull(strstr(err, "the ptest selection list \"alpah,beta,zzzzzzzz,bta\" (from "
                                      "command line) names components that cannot be used:"));
    ck_assert_ptr_nonnull(strstr(err, "  alpah: probably a misspelling of \"alpha\""));
    ck_assert_ptr_nonnull(strstr(err, "  bta: probably a misspelling of \"beta\""));
    ck_assert_ptr_nonnull(strstr(err, "  zzzzzzzz: not found: no built-in component of that name, "
                                      "and no file plexus_ptest_zzzzzzzz.so in the plugin "
                                      "folders searched (below)"));
    ck_assert_ptr_nonnull(strstr(err, "; plugin folders searched, mca_component_path_prepend then "
                                      "mca_component_path: "));
    ck_assert_ptr_null(strstr(err, "  beta:"));
    ck_assert_ptr_nonnull(strstr(err, "(ptest components here: alpha, beta, shy, broken"));
    ck_assert_int_eq(fw->refcount, 0);
    ck_assert_ptr_null(strstr(ptest_log_get(), "open"));
    teardown_fw();
}
END_TEST

START_TEST(test_include_failed_open_names_reason)
{
    setup();
    setenv("PX_MCA_ptest", "broken", 1);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert(px_list_is_empty(&fw->components));
    teardown_fw();
}
END_TEST

START_TEST(test_exclude_unknown_warns)
{
    setup();
    setenv("PX_MCA_ptest", "^alpah", 1);
    capture_begin();
    int rc = px_mca_framework_open(fw);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_SUCCESS);
    ck_assert_ptr_nonnull(strstr(err, "plexus: warning: the ptest selection list \"^alpah\""));
    ck_assert_ptr_nonnull(strstr(err, "excludes \"alpah\", which is not a ptest component here; "
                                      "did you mean \"alpha\"?"));
    ck_assert(has_component("alpha"));
    teardown_fw();
}
END_TEST

static int query(const px_mca_component_t *c, int *priority, void **module)
{
    const px_ptest_component_t *pc = (const px_ptest_component_t *)c;
    *module = (void *)c->component_name;
    if (!pc->query)
        return PX_ERR_NOT_SUPPORTED;
    return pc->query(priority);
}

START_TEST(test_select_highest)
{
    setup();
    px_mca_framework_open(fw);
    ptest_log_clear();
    const px_mca_component_t *best = NULL;
    void *module = NULL;
    ck_assert_int_eq(px_mca_select_highest(fw, query, &best, &module), PX_SUCCESS);
    ck_assert_str_eq(best->component_name, "beta");
    ck_assert_str_eq((const char *)module, "beta");
    ck_assert_str_eq(ptest_log_get(), "alpha:query beta:query shy:query alpha:close shy:close");
    ck_assert_int_eq((int)px_list_get_size(&fw->components), 1);
    teardown_fw();
}
END_TEST

START_TEST(test_select_highest_follows_variable)
{
    setup();
    setenv("PX_MCA_ptest_alpha_priority", "30", 1);
    px_mca_framework_open(fw);
    const px_mca_component_t *best = NULL;
    ck_assert_int_eq(px_mca_select_highest(fw, query, &best, NULL), PX_SUCCESS);
    ck_assert_str_eq(best->component_name, "alpha");
    teardown_fw();
}
END_TEST

START_TEST(test_select_none)
{
    setup();
    setenv("PX_MCA_ptest", "shy", 1);
    px_mca_framework_open(fw);
    const px_mca_component_t *best = (const px_mca_component_t *)1;
    void *module = (void *)1;
    ck_assert_int_eq(px_mca_select_highest(fw, query, &best, &module), PX_ERR_NOT_FOUND);
    ck_assert_ptr_null(best);
    ck_assert_ptr_null(module);
    ck_assert(px_list_is_empty(&fw->components));
    ck_assert_ptr_nonnull(strstr(ptest_log_get(), "shy:close"));
    teardown_fw();
}
END_TEST

START_TEST(test_drop)
{
    setup();
    px_mca_framework_open(fw);
    ptest_log_clear();
    px_mca_component_item_t *it, *next;
    PX_LIST_FOREACH_SAFE(it, next, &fw->components, px_mca_component_item_t)
    {
        if (!strcmp(it->component->component_name, "alpha"))
            px_mca_framework_drop(fw, it);
    }
    ck_assert_str_eq(ptest_log_get(), "alpha:close");
    ck_assert(!has_component("alpha"));
    ck_assert_int_eq((int)px_list_get_size(&fw->components), 2);
    ptest_log_clear();
    px_mca_framework_close(fw);
    ck_assert_str_eq(ptest_log_get(), "fw:close shy:close beta:close");
    teardown_fw();
}
END_TEST

START_TEST(test_repository_list)
{
    setup();
    px_mca_framework_register(fw);
    const px_mca_component_t *out[16];
    int n = px_mca_repository_list("ptest", out, 16);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(out[0]->component_name, "alpha");
    ck_assert_str_eq(out[3]->component_name, "broken");
    ck_assert_int_eq(px_mca_repository_list("nosuchframework", out, 16), 0);
    ck_assert_int_eq(px_mca_repository_add_static(NULL), PX_ERR_BAD_PARAM);
    teardown_fw();
}
END_TEST

START_TEST(test_excluded_component_vars_not_unknown)
{
    setup();
    setenv("PX_MCA_ptest", "^alpha", 1);
    setenv("PX_MCA_ptest_alpha_priority", "5", 1); /* excluded component: fine */
    setenv("PX_MCA_ptest_alpah_priority", "5", 1); /* no such component */
    setenv("PX_MCA_ptest_beta_prio", "5", 1);      /* registered component, no such var */
    px_mca_framework_open(fw);
    capture_begin();
    px_mca_var_check_unknown();
    const char *err = capture_end();
    ck_assert_int_eq(count_of(err, "unknown variable"), 2);
    ck_assert_ptr_nonnull(strstr(err, "\"ptest_alpah_priority\""));
    ck_assert_ptr_nonnull(strstr(err, "\"ptest_beta_prio\""));
    teardown_fw();
}
END_TEST

PX_CHECK_MAIN("mca_framework", NULL, remove_tmpdirs, 0, test_lifecycle_order,
              test_failing_open_is_reported_at_verbose, test_verbose_routine, test_quiet_by_default,
              test_refcount, test_register_without_open, test_automatic_variables,
              test_include_list, test_exclude_list, test_mixing_is_an_error,
              test_empty_exclude_is_an_error, test_empty_list_means_all,
              test_include_unknown_reports_all, test_include_failed_open_names_reason,
              test_exclude_unknown_warns, test_select_highest, test_select_highest_follows_variable,
              test_select_none, test_drop, test_repository_list,
              test_excluded_component_vars_not_unknown)
