/*
 * class_unload_test.c: classes defined by a shared object that is then
 * unloaded (test/class/class_plugin.c, dlopen()ed like a third-party plugin).
 * px_class_unload_module must forget them so px_class_finalize does not walk
 * into unmapped memory, and, in a debug build, must refuse (with a message
 * naming the class and where the object was made) while an object of them is
 * still alive. Built twice (test/class/Makefile.inc): class_unload_test with
 * the configured setting and libplexus, class_unload_debug_test with its own
 * copy of the object system compiled with PX_ENABLE_DEBUG=1, so the debug
 * path is tested in every build.
 */
#define _GNU_SOURCE
#include "test/lib/px_check.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/class/list.h"
#include "core/class/object.h"

#ifndef CLASS_PLUGIN
#error "CLASS_PLUGIN (the path of the test plugin) must be defined"
#endif

typedef int (*run_fn)(int);
typedef int (*drop_fn)(void);

static void *plugin;
static run_fn plugin_run;
static drop_fn plugin_drop;

static void load(void)
{
    plugin = dlopen(CLASS_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(plugin != NULL, "dlopen %s: %s", CLASS_PLUGIN, dlerror());
    plugin_run = (run_fn)(uintptr_t)dlsym(plugin, "class_plugin_run");
    plugin_drop = (drop_fn)(uintptr_t)dlsym(plugin, "class_plugin_drop");
    ck_assert(plugin_run && plugin_drop);
}

static bool loaded(void)
{
    void *h = dlopen(CLASS_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

#if PX_ENABLE_DEBUG
/* Capture stderr into a temporary file around a call. */
static int saved_fd = -1;
static FILE *cap;
static void capture_begin(void)
{
    fflush(stderr);
    cap = tmpfile();
    ck_assert_ptr_nonnull(cap);
    saved_fd = dup(2);
    dup2(fileno(cap), 2);
}
static char *capture_end(void)
{
    static char buf[8192];
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    rewind(cap);
    size_t n = fread(buf, 1, sizeof(buf) - 1, cap);
    buf[n] = '\0';
    fclose(cap);
    return buf;
}
#endif

START_TEST(test_unload_then_finalize)
{
    for (int round = 0; round < 3; round++) { /* reloaded: its classes work again */
        load();
        ck_assert_int_eq(plugin_run(0), 0);
        ck_assert_int_eq(px_class_unload_module((void *)(uintptr_t)plugin_run, CLASS_PLUGIN), 0);
        dlclose(plugin);
        ck_assert(!loaded());
        /* walks the class registry: crashed when it still held the plugin's classes */
        ck_assert_int_eq(px_class_finalize(), 0);
    }
    /* the library's own classes are untouched and still work */
    px_list_t l;
    PX_OBJ_CONSTRUCT(&l, px_list_t);
    PX_OBJ_DESTRUCT(&l);
    ck_assert_int_eq(px_class_finalize(), 0);
}
END_TEST

START_TEST(test_unload_keeps_other_classes)
{
    px_list_t *l = PX_OBJ_NEW(px_list_t); /* initialised before, alive across */
    load();
    ck_assert_int_eq(plugin_run(0), 0);
    ck_assert_int_eq(px_class_unload_module((void *)(uintptr_t)plugin_run, "p"), 0);
    dlclose(plugin);
    PX_OBJ_RELEASE(l);
    ck_assert_int_eq(px_class_finalize(), 0);
    /* an address in no loaded object changes nothing */
    ck_assert_int_eq(px_class_unload_module(NULL, "none"), 0);
}
END_TEST

#if PX_ENABLE_DEBUG
START_TEST(test_live_object_reported_and_kept)
{
    load();
    ck_assert_int_eq(plugin_run(1), 0); /* one object stays alive */
    capture_begin();
    int n = px_class_unload_module((void *)(uintptr_t)plugin_run, "the test plugin");
    const char *err = capture_end();
    ck_assert_int_eq(n, 1);
    ck_assert_msg(strstr(err, "the test plugin is being unloaded while objects of its classes "
                              "are still alive") != NULL,
                  "message: %s", err);
    ck_assert_msg(strstr(err, "class_plugin_thing_t at ") != NULL, "message: %s", err);
    ck_assert_msg(strstr(err, "class_plugin.c:") != NULL, "no file:line in: %s", err);
    ck_assert_msg(strstr(err, "stays loaded") != NULL, "message: %s", err);
    /* the caller keeps it loaded: the object is still usable and released */
    ck_assert_int_eq(plugin_drop(), 0);
    ck_assert_int_eq(px_class_unload_module((void *)(uintptr_t)plugin_run, "p"), 0);
    dlclose(plugin);
    ck_assert(!loaded());
    ck_assert_int_eq(px_class_finalize(), 0);
}
END_TEST
#endif

int main(void)
{
    const TTest *tests[] = {
        test_unload_then_finalize,
        test_unload_keeps_other_classes,
#if PX_ENABLE_DEBUG
        test_live_object_reported_and_kept
#endif
    };
    Suite *s = suite_create("class_unload");
    suite_add_tcase(s, px_check_tcase("class_unload", NULL, NULL, 0, tests, PX_CHECK_COUNT(tests)));
    return px_check_run(s);
}
