/*
 * plugin_test.c: plugins of the test framework "ptest", built by the test
 * suite in test/mca/.libs: a good one, and ones the repository must refuse
 * (wrong MCA ABI, wrong framework API, struct names unlike the file name, an
 * unresolved symbol, a world-writable file or folder), one whose open fails
 * (closed and unloaded), and one shadowed by a built-in of the same name.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "test/mca/mca_test_util.h"
#include "core/mca/framework.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/mca/ptest.h"

static px_mca_framework_t *const fw = &px_ptest_base_framework;

static void setup(const char *selection)
{
    clean_env();
    ptest_add_builtins();
    ptest_log_clear();
    setenv("PX_MCA_mca_component_path", PTEST_PLUGIN_DIR, 1);
    if (selection)
        setenv("PX_MCA_ptest", selection, 1);
}

static void teardown_fw(void)
{
    while (fw->refcount > 0)
        px_mca_framework_close(fw);
    px_mca_framework_close(fw);
    px_mca_var_finalize();
}

static char *plugin_path(const char *name)
{
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/plexus_ptest_%s.so", PTEST_PLUGIN_DIR, name), 0);
    return p;
}

/* Whether the file is mapped in this process right now. */
static bool is_loaded(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static px_mca_component_item_t *find_item(const char *name)
{
    px_mca_component_item_t *it;
    PX_LIST_FOREACH(it, &fw->components, px_mca_component_item_t)
    {
        if (0 == strcmp(it->component->component_name, name))
            return it;
    }
    return NULL;
}

static const px_mca_failed_component_t *failure_of(const char *framework, const char *name)
{
    for (int i = px_mca_repository_failed_count() - 1; i >= 0; i--) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (!strcmp(f->framework, framework) && !strcmp(f->component, name))
            return f;
    }
    return NULL;
}

static const char *failure_reason(const char *name)
{
    for (int i = px_mca_repository_failed_count() - 1; i >= 0; i--) {
        const px_mca_failed_component_t *f = px_mca_repository_failed(i);
        if (!strcmp(f->framework, "ptest") && !strcmp(f->component, name))
            return f->reason;
    }
    return NULL;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
    ck_assert_int_eq(chmod(to, mode), 0);
}

START_TEST(test_good_plugin)
{
    setup("alpha,good");
    setenv("PX_MCA_ptest_good_weight", "3", 1);
    char *path = plugin_path("good");
    /* Hold our own reference so the counters stay readable after close. */
    void *own = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(own);
    const px_ptest_component_t *c = dlsym(own, "px_ptest_good_component");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    px_mca_component_item_t *it = find_item("good");
    ck_assert_ptr_nonnull(it);
    ck_assert_ptr_eq(it->component, &c->base);
    ck_assert_ptr_nonnull(it->dl_handle);
    ck_assert_str_eq(it->path, path);
    ck_assert_int_eq(c->counters()[0], 1);
    ck_assert_int_eq(c->counters()[1], 1);
    int prio = 0;
    c->query(&prio);
    ck_assert_int_eq(prio, 3); /* its variable took the environment's value */
    int wi = px_mca_var_find("ptest_good_weight");
    ck_assert_int_ge(wi, 0);
    /* px_info's listing: built-ins, then loaded plugins */
    const px_mca_component_t *out[16];
    int n = px_mca_repository_list("ptest", out, 16);
    ck_assert_int_eq(n, 5);
    ck_assert_str_eq(out[4]->component_name, "good");
    ck_assert_int_eq(out[4]->component_version.major, 1);
    ck_assert_int_eq(out[4]->component_version.minor, 2);
    ck_assert_int_eq(out[4]->component_version.release, 3);
    px_mca_framework_close(fw);
    ck_assert_int_eq(c->counters()[2], 1);
    /* The variable outlives the unloaded plugin and still reads right. */
    char *v = px_mca_var_value_string(wi);
    ck_assert_str_eq(v, "3");
    free(v);
    dlclose(own);
    free(path);
    teardown_fw();
}
END_TEST

START_TEST(test_close_unloads)
{
    setup("good");
    char *path = plugin_path("good");
    ck_assert(!is_loaded(path));
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert(is_loaded(path));
    /* a probed value written by the plugin survives the unload (copied) */
    char *found = px_mca_var_value_string(px_mca_var_find("ptest_good_found"));
    ck_assert_str_eq(found, "probed:good");
    free(found);
    px_mca_framework_close(fw);
    found = px_mca_var_value_string(px_mca_var_find("ptest_good_found"));
    ck_assert_str_eq(found, "probed:good");
    free(found);
    ck_assert(!is_loaded(path));
    /* Plugin strings and enum tables were copied before the unload. */
    char *v = px_mca_var_value_string(px_mca_var_find("ptest_good_label"));
    ck_assert_str_eq(v, "plugin-default");
    free(v);
    v = px_mca_var_value_string(px_mca_var_find("ptest_good_mode"));
    ck_assert_str_eq(v, "fast");
    free(v);
    v = px_mca_var_default_string(px_mca_var_find("ptest_good_label"));
    ck_assert_str_eq(v, "plugin-default");
    free(v);
    free(path);
    teardown_fw();
}
END_TEST

static void assert_refused(const char *name, const char *reason_part)
{
    setup(name);
    char *path = plugin_path(name);
    capture_begin();
    int rc = px_mca_framework_open(fw);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_NOT_FOUND);
    const char *reason = failure_reason(name);
    ck_assert_msg(reason != NULL, "%s was not recorded as refused", name);
    ck_assert_msg(strstr(reason, reason_part) != NULL, "reason \"%s\" lacks \"%s\"", reason,
                  reason_part);
    char *line = NULL;
    ck_assert_int_ge(asprintf(&line, "  %s: refused: %s", name, reason_part), 0);
    ck_assert_msg(strstr(err, line) != NULL, "error \"%s\" lacks \"%s\"", err, line);
    ck_assert_msg(strstr(err, path) != NULL, "error \"%s\" lacks the path", err);
    ck_assert(!is_loaded(path));
    free(line);
    free(path);
    teardown_fw();
}

START_TEST(test_refuse_wrong_abi)
{
    assert_refused("badabi", "MCA ABI version mismatch: the plugin has 99, this library has 2");
}
END_TEST

START_TEST(test_refuse_wrong_api)
{
    assert_refused("badapi", "framework API version mismatch: built for ptest API 2.1.0, this "
                             "library has 1.1.0 (the major must be the same");
}
END_TEST

/* The compatibility rule: a plugin built for an older minor of the same
 * major loads and is used. */
START_TEST(test_older_minor_loads)
{
    setup("oldminor");
    char *path = plugin_path("oldminor");
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    px_mca_component_item_t *it = find_item("oldminor");
    ck_assert_ptr_nonnull(it);
    ck_assert_str_eq(it->path, path);
    ck_assert_int_eq(it->component->framework_version.major, PX_PTEST_API_MAJOR);
    ck_assert_int_eq(it->component->framework_version.minor, 0);
    ck_assert_ptr_null(failure_reason("oldminor"));
    px_mca_framework_close(fw);
    free(path);
    teardown_fw();
}
END_TEST

/* ... and one built for a newer minor than the library is refused. */
START_TEST(test_refuse_newer_minor)
{
    assert_refused("newminor", "framework API too new: built for ptest API 1.2.0, this library "
                               "has 1.1.0 (a plugin loads into a library of the same major and "
                               "the same or a newer minor: use a Plexus with ptest API 1.2 or "
                               "newer, or rebuild the plugin against this one)");
}
END_TEST

/* A plugin built with the other debug setting: the fingerprint names both
 * builds. flipdebugclassy also calls functions of the object system that
 * only its own build has: the fingerprint is still the reason given. */
static void assert_refused_other_debug(const char *name)
{
    char *theirs = NULL, *ours = NULL;
    ck_assert_int_ge(asprintf(&theirs,
                              "refused: build fingerprint mismatch: the plugin was built with "
                              "debug=%d, sizeof(px_object_t)=",
                              !PX_ENABLE_DEBUG),
                     0);
    ck_assert_int_ge(asprintf(&ours, "; this library with debug=%d, sizeof(px_object_t)=%zu",
                              PX_ENABLE_DEBUG, sizeof(px_object_t)),
                     0);
    setup(name);
    char *path = plugin_path(name);
    capture_begin();
    int rc = px_mca_framework_open(fw);
    const char *err = capture_end();
    ck_assert_int_eq(rc, PX_ERR_NOT_FOUND);
    const char *reason = failure_reason(name);
    ck_assert_msg(reason != NULL, "%s was not recorded as refused", name);
    ck_assert_msg(strstr(reason, theirs + strlen("refused: ")), "reason \"%s\" lacks \"%s\"",
                  reason, theirs);
    ck_assert_msg(strstr(reason, ours), "reason \"%s\" lacks \"%s\"", reason, ours);
    ck_assert_msg(strstr(err, theirs), "error \"%s\" lacks \"%s\"", err, theirs);
    ck_assert(!is_loaded(path));
    free(theirs);
    free(ours);
    free(path);
    teardown_fw();
}

START_TEST(test_refuse_other_debug)
{
    assert_refused_other_debug("flipdebug");
}
END_TEST

START_TEST(test_refuse_other_debug_classy)
{
    assert_refused_other_debug("flipdebugclassy");
}
END_TEST

START_TEST(test_refuse_mismatched_name)
{
    assert_refused("misnamed", "name mismatch: the struct says framework \"ptest\" component "
                               "\"other\" but the file name says \"ptest\" \"misnamed\"");
}
END_TEST

START_TEST(test_refuse_unresolved_symbol)
{
    assert_refused("unresolved", "unresolved symbol: ");
    setup("unresolved");
    capture_begin();
    px_mca_framework_open(fw);
    capture_end();
    ck_assert_ptr_nonnull(
        strstr(failure_reason("unresolved"), "px_ptest_function_that_exists_nowhere"));
    teardown_fw();
}
END_TEST

/* For the tests that copy plugin "good" into a folder of their own: the
 * folder (made and set as mca_component_path), the plugin's path in the
 * build, and the path of the copy (not made yet). */
static char *good_copy_target(char **dir, char **from)
{
    setup("good");
    *dir = make_tmpdir();
    *from = plugin_path("good");
    char *to = NULL;
    ck_assert_int_ge(asprintf(&to, "%s/plexus_ptest_good.so", *dir), 0);
    setenv("PX_MCA_mca_component_path", *dir, 1);
    return to;
}

/* The end of such a test: its paths freed, the framework closed. */
static void good_copy_done(char *to, char *from, char *dir)
{
    free(to);
    free(from);
    free(dir);
    teardown_fw();
}

START_TEST(test_refuse_world_writable_file)
{
    char *dir, *from, *to = good_copy_target(&dir, &from);
    copy_file(from, to, 0757);
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_ERR_NOT_FOUND);
    const char *err = capture_end();
    const char *reason = failure_reason("good");
    ck_assert_ptr_nonnull(reason);
    ck_assert_ptr_nonnull(strstr(reason, "file"));
    ck_assert_ptr_nonnull(strstr(reason, to));
    ck_assert_ptr_nonnull(strstr(reason, "is world-writable (mode 0757)"));
    ck_assert_ptr_nonnull(strstr(err, "good: refused: file"));
    ck_assert(!is_loaded(to));
    good_copy_done(to, from, dir);
}
END_TEST

START_TEST(test_fixed_plugin_loses_its_refusal)
{
    char *dir, *from, *to = good_copy_target(&dir, &from);
    copy_file(from, to, 0757);
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_ERR_NOT_FOUND);
    capture_end();
    ck_assert_ptr_nonnull(failure_reason("good"));
    px_mca_framework_close(fw);
    ck_assert_int_eq(chmod(to, 0755), 0); /* the administrator fixes it */
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_ptr_null(failure_reason("good"));
    ck_assert_ptr_nonnull(find_item("good"));
    good_copy_done(to, from, dir);
}
END_TEST

/* px_init reads each plugin folder once for all its frameworks; outside it
 * every open reads the folder again: a plugin copied in after a framework
 * was opened is found when it is opened again. */
START_TEST(test_plugin_added_later_found)
{
    char *dir, *from, *to = good_copy_target(&dir, &from);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_ERR_NOT_FOUND);
    ck_assert_ptr_null(find_item("good"));
    px_mca_framework_close(fw);
    copy_file(from, to, 0755);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_ptr_nonnull(find_item("good"));
    good_copy_done(to, from, dir);
}
END_TEST

START_TEST(test_refuse_world_writable_folder)
{
    char *dir, *from, *to = good_copy_target(&dir, &from);
    copy_file(from, to, 0755);
    ck_assert_int_eq(chmod(dir, 01777), 0);
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_ERR_NOT_FOUND);
    capture_end();
    const char *reason = failure_reason("good");
    ck_assert_ptr_nonnull(reason);
    ck_assert_ptr_nonnull(strstr(reason, "folder"));
    ck_assert_ptr_nonnull(strstr(reason, "is world-writable"));
    ck_assert(!is_loaded(to));
    chmod(dir, 0700);
    good_copy_done(to, from, dir);
}
END_TEST

START_TEST(test_failing_open_plugin_closed_and_unloaded)
{
    setup("good,failopen");
    setenv("PX_MCA_ptest_base_verbose", "1", 1);
    char *path = plugin_path("failopen");
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    const char *err = capture_end();
    ck_assert_ptr_nonnull(find_item("good"));
    ck_assert_ptr_null(find_item("failopen"));
    ck_assert(!is_loaded(path));
    ck_assert_ptr_nonnull(strstr(err, "component failopen: open failed: "));
    ck_assert_ptr_nonnull(strstr(failure_reason("failopen"), "open failed"));
    /* its variables are still safe to read */
    char *v = px_mca_var_value_string(px_mca_var_find("ptest_failopen_label"));
    ck_assert_str_eq(v, "plugin-default");
    free(v);
    free(path);
    teardown_fw();
}
END_TEST

START_TEST(test_probe_dropped_at_unload)
{
    setup("failopen");
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    /* failopen was unloaded before anyone read its probed variable: the
     * probe is gone, and reading shows the default instead of crashing */
    int idx = px_mca_var_find("ptest_failopen_found");
    ck_assert_int_ge(idx, 0);
    px_mca_var_info_t info;
    px_mca_var_get_info(idx, &info);
    ck_assert(!info.probe_pending);
    char *v = px_mca_var_value_string(idx);
    ck_assert_str_eq(v, "not probed");
    free(v);
    teardown_fw();
}
END_TEST

/* A plugin that defines classes and uses them (an object, a free list) is
 * unloaded; the class registry must not keep pointing into it: the next
 * px_class_finalize (which px_finalize calls in debug builds) used to crash. */
START_TEST(test_plugin_classes_forgotten_at_unload)
{
    for (int round = 0; round < 2; round++) { /* loaded again: the classes work again */
        setup("classy");
        char *path = plugin_path("classy");
        ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
        ck_assert_ptr_nonnull(find_item("classy"));
        ck_assert(is_loaded(path));
        px_mca_framework_close(fw);
        ck_assert(!is_loaded(path));
        free(path);
        teardown_fw();
        ck_assert_int_eq(px_class_finalize(), 0);
    }
}
END_TEST

/* The same for a plugin whose open fails after it used its classes. */
START_TEST(test_declining_plugin_classes_forgotten)
{
    setup("classydecline,alpha");
    char *path = plugin_path("classydecline");
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    capture_end();
    ck_assert_ptr_null(find_item("classydecline"));
    ck_assert(!is_loaded(path));
    free(path);
    teardown_fw();
    ck_assert_int_eq(px_class_finalize(), 0); /* once nothing is alive, as px_finalize does */
    /* the library's own classes initialise again afterwards */
    px_list_t l;
    PX_OBJ_CONSTRUCT(&l, px_list_t);
    PX_OBJ_DESTRUCT(&l);
}
END_TEST

/* A folder the user put on mca_component_path that does not exist used to be
 * skipped without a word: now one warning (however many frameworks look),
 * naming it and where the path was set, and a --show-failed entry. */
START_TEST(test_missing_named_folder_warns_once)
{
    setup("good");
    setenv("PX_MCA_mca_component_path", PTEST_PLUGIN_DIR ":/nonexistent/px-plugins", 1);
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    px_mca_framework_close(fw);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS); /* looks again */
    const char *err = capture_end();
    const char *want = "plugin folder /nonexistent/px-plugins (in mca_component_path, set by "
                       "environment PX_MCA_mca_component_path) does not exist";
    ck_assert_msg(count_of(err, want) == 1, "want once \"%s\" in: %s", want, err);
    ck_assert_ptr_nonnull(find_item("good")); /* the other folder still serves */
    const px_mca_failed_component_t *f = failure_of("mca", "component_path");
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f->path, "/nonexistent/px-plugins");
    ck_assert_ptr_nonnull(strstr(f->reason, "does not exist"));
    teardown_fw();
}
END_TEST

/* The default path's folders (~/.plexus/components here: HOME is an empty
 * temporary folder) may not exist: no warning. */
START_TEST(test_missing_default_folder_quiet)
{
    setup("alpha");
    unsetenv("PX_MCA_mca_component_path");
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    const char *err = capture_end();
    ck_assert_msg(strstr(err, "plugin folder") == NULL, "unexpected: %s", err);
    ck_assert_ptr_null(failure_of("mca", "component_path"));
    teardown_fw();
}
END_TEST

START_TEST(test_failing_open_plugin_close_called)
{
    setup("failopen");
    char *path = plugin_path("failopen");
    void *own = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(own);
    const px_ptest_component_t *c = dlsym(own, "px_ptest_failopen_component");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_int_eq(c->counters()[1], 1); /* open */
    ck_assert_int_eq(c->counters()[2], 1); /* close after the failed open */
    dlclose(own);
    free(path);
    teardown_fw();
}
END_TEST

START_TEST(test_builtin_wins)
{
    setup(NULL);
    setenv("PX_MCA_ptest_base_verbose", "10", 1);
    char *path = plugin_path("alpha");
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    const char *err = capture_end();
    px_mca_component_item_t *it = find_item("alpha");
    ck_assert_ptr_nonnull(it);
    ck_assert_ptr_null(it->dl_handle);
    ck_assert(!is_loaded(path));
    char *msg = NULL;
    ck_assert_int_eq(
        asprintf(&msg, "plugin %s ignored: a built-in component alpha exists and wins", path) > 0,
        1);
    ck_assert_msg(strstr(err, msg) != NULL, "got %s", err);
    /* every bad plugin of the folder was refused and recorded */
    ck_assert_ptr_nonnull(failure_reason("badabi"));
    ck_assert_ptr_nonnull(failure_reason("badapi"));
    ck_assert_ptr_nonnull(failure_reason("misnamed"));
    ck_assert_ptr_nonnull(failure_reason("unresolved"));
    ck_assert_ptr_nonnull(failure_reason("newminor"));
    ck_assert_ptr_nonnull(failure_reason("flipdebug"));
    ck_assert_ptr_nonnull(failure_reason("flipdebugclassy"));
    ck_assert_ptr_nonnull(find_item("oldminor")); /* an older minor loads */
    ck_assert_ptr_nonnull(
        strstr(err, "plugin " PTEST_PLUGIN_DIR "/plexus_ptest_badabi.so refused"));
    ck_assert_ptr_nonnull(find_item("good"));
    free(msg);
    free(path);
    teardown_fw();
}
END_TEST

START_TEST(test_unwanted_never_loaded_exclude)
{
    setup("^badabi,badapi,misnamed,unresolved,failopen,classydecline,newminor,flipdebug,"
          "flipdebugclassy");
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_int_eq(px_mca_repository_failed_count(), 1); /* only broken (built-in) */
    ck_assert_str_eq(px_mca_repository_failed(0)->component, "broken");
    ck_assert_ptr_nonnull(find_item("good"));
    teardown_fw();
}
END_TEST

START_TEST(test_unwanted_never_loaded_include)
{
    setup("good");
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    ck_assert_int_eq(px_mca_repository_failed_count(), 0);
    ck_assert_int_eq((int)px_list_get_size(&fw->components), 1);
    char *p = plugin_path("failopen");
    ck_assert(!is_loaded(p));
    free(p);
    teardown_fw();
}
END_TEST

START_TEST(test_path_order_first_wins)
{
    setup("good");
    char *d1 = make_tmpdir(), *d2 = make_tmpdir();
    char *from = plugin_path("good");
    char *t1 = NULL, *t2 = NULL, *list = NULL;
    ck_assert_int_ge(asprintf(&t1, "%s/plexus_ptest_good.so", d1), 0);
    ck_assert_int_ge(asprintf(&t2, "%s/plexus_ptest_good.so", d2), 0);
    copy_file(from, t1, 0755);
    copy_file(from, t2, 0755);
    ck_assert_int_ge(asprintf(&list, "/nonexistent/dir:%s:%s", d2, d1), 0);
    setenv("PX_MCA_mca_component_path", list, 1);
    ck_assert_int_eq(px_mca_framework_open(fw), PX_SUCCESS);
    px_mca_component_item_t *it = find_item("good");
    ck_assert_ptr_nonnull(it);
    ck_assert_str_eq(it->path, t2);
    free(t1);
    free(t2);
    free(list);
    free(from);
    free(d1);
    free(d2);
    teardown_fw();
}
END_TEST

START_TEST(test_include_mixes_reasons)
{
    setup("good,badapi,godo,nosuchthing");
    capture_begin();
    ck_assert_int_eq(px_mca_framework_open(fw), PX_ERR_NOT_FOUND);
    const char *err = capture_end();
    ck_assert_int_eq(count_of(err, "plexus: error:"), 1);
    ck_assert_ptr_nonnull(strstr(err, "  badapi: refused: framework API version mismatch"));
    ck_assert_ptr_nonnull(strstr(err, "  godo: probably a misspelling of \"good\""));
    ck_assert_ptr_nonnull(strstr(err, "  nosuchthing: not found: no built-in component of that "
                                      "name, and no file plexus_ptest_nosuchthing.so in the "
                                      "plugin folders searched"));
    ck_assert_ptr_null(strstr(err, "  good:"));
    /* The refused plugin is not offered as one of the components here. */
    const char *here = strstr(err, "(ptest components here: ");
    ck_assert_ptr_nonnull(here);
    ck_assert_ptr_nonnull(strstr(here, "good"));
    ck_assert_ptr_null(strstr(here, "badapi"));
    teardown_fw();
}
END_TEST

START_TEST(test_plugin_vars_not_unknown_when_excluded)
{
    setup("^good");
    setenv("PX_MCA_ptest_good_weight", "3", 1);
    setenv("PX_MCA_ptest_goood_weight", "3", 1);
    px_mca_framework_open(fw);
    capture_begin();
    px_mca_var_check_unknown();
    const char *err = capture_end();
    ck_assert_int_eq(count_of(err, "unknown variable"), 1);
    ck_assert_ptr_nonnull(strstr(err, "\"ptest_goood_weight\""));
    teardown_fw();
}
END_TEST

PX_CHECK_MAIN("mca_plugin", NULL, remove_tmpdirs, 0, test_good_plugin, test_close_unloads,
              test_refuse_wrong_abi, test_refuse_wrong_api, test_older_minor_loads,
              test_refuse_newer_minor, test_refuse_other_debug, test_refuse_other_debug_classy,
              test_refuse_mismatched_name, test_refuse_unresolved_symbol,
              test_refuse_world_writable_file, test_refuse_world_writable_folder,
              test_plugin_added_later_found, test_fixed_plugin_loses_its_refusal,
              test_failing_open_plugin_closed_and_unloaded, test_failing_open_plugin_close_called,
              test_probe_dropped_at_unload, test_plugin_classes_forgotten_at_unload,
              test_declining_plugin_classes_forgotten, test_missing_named_folder_warns_once,
              test_missing_default_folder_quiet, test_builtin_wins,
              test_unwanted_never_loaded_exclude, test_unwanted_never_loaded_include,
              test_path_order_first_wins, test_include_mixes_reasons,
              test_plugin_vars_not_unknown_when_excluded)
