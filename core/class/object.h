/*
 * object.h: the Plexus object system: reference-counted C structs with
 * single inheritance and constructor/destructor chains.
 *
 * A class is a px_class_t made by PX_CLASS_INSTANCE; an object is a struct whose
 * first member is its parent class's struct (ultimately px_object_t).
 * Everything in Plexus that is shared or pooled (list items, free-list items,
 * BTL fragments, requests) is an object.
 *
 *   typedef struct { px_object_t super; int fd; } my_file_t;
 *   static void my_file_construct(my_file_t *f) { f->fd = -1; }
 *   static void my_file_destruct(my_file_t *f) { if (f->fd >= 0) close(f->fd); }
 *   PX_CLASS_DECLARATION(my_file_t);                      // in the header
 *   PX_CLASS_INSTANCE(my_file_t, px_object_t, my_file_construct, my_file_destruct);
 *
 *   my_file_t *f = PX_OBJ_NEW(my_file_t);    // malloc + constructors, refcount 1
 *   PX_OBJ_RETAIN(f);                         // refcount 2
 *   PX_OBJ_RELEASE(f);                        // refcount 1, f set to NULL
 *
 * A class initialises on first use (a small allocation). If that allocation
 * fails, PX_OBJ_NEW returns NULL as for any allocation failure, and
 * PX_OBJ_CONSTRUCT (which cannot report it) aborts with a message.
 *
 * Costs: PX_OBJ_NEW is one malloc (usually a pop from a per-thread cache of
 * freed objects of the class) plus one call per class in the chain that
 * has a constructor; PX_OBJ_RELEASE is one atomic decrement (skipped when the
 * caller holds the only reference) and, at zero, the destructors and a free
 * (usually a push to that cache).
 * Classes initialise lazily and thread-safely on first use; depth is unbounded.
 *
 * Debug builds (configure --enable-debug) add a magic number and the file:line
 * that created each object, catch a retain/release of a dead object and a
 * destruct of an object never constructed, and px_class_finalize() lists every
 * object still alive with where it was made.
 */
#ifndef PX_CLASS_OBJECT_H
#define PX_CLASS_OBJECT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "core/px_config.h"
#include "core/class/tcache_fast.h"
#include "core/util/compiler.h"

/* Freed heap objects are kept in a small per-thread, per-class cache
 * (core/class/tcache.h) and reused by the next PX_OBJ_NEW of that class on
 * that thread, instead of going through free/malloc. Off in debug builds
 * (which quarantine freed objects instead), under AddressSanitizer (so it sees
 * every use after free), and with -DPX_OBJ_NO_CACHE. */
#if !PX_ENABLE_DEBUG && !defined(__SANITIZE_ADDRESS__) && !defined(PX_OBJ_NO_CACHE)
#define PX_OBJ_CACHE 1
#else
#define PX_OBJ_CACHE 0
#endif

typedef struct px_object px_object_t;
typedef struct px_class px_class_t;
typedef void (*px_construct_t)(px_object_t *);
typedef void (*px_destruct_t)(px_object_t *);

struct px_class {
    const char *cls_name;         /* the type's name, for debug output */
    px_class_t *cls_parent;       /* NULL only for px_object_t */
    px_construct_t cls_construct; /* this class's own constructor, or NULL */
    px_destruct_t cls_destruct;   /* this class's own destructor, or NULL */
    size_t cls_sizeof;            /* size of an instance */
    /* Filled on first use by px_class_initialize(): */
    atomic_int cls_initialized;
    int cls_depth;                       /* number of classes in the chain */
    px_construct_t *cls_construct_array; /* parent first, NULL-terminated */
    px_destruct_t *cls_destruct_array;   /* child first, NULL-terminated */
    px_class_t *cls_next_initialized;    /* registry, for px_class_finalize */
    px_tcache_owner_t cls_cache;         /* per-thread cache of freed objects */
};

struct px_object {
#if PX_ENABLE_DEBUG
    uint64_t obj_magic;   /* PX_OBJ_MAGIC_ALIVE while constructed */
    const char *obj_file; /* where it was made */
    int obj_line;
    int obj_heap;                             /* 1 for PX_OBJ_NEW, 0 for PX_OBJ_CONSTRUCT */
    px_object_t *obj_dbg_prev, *obj_dbg_next; /* live-object registry */
#endif
    px_class_t *obj_class;
    atomic_int_fast32_t obj_refcount;
};

#define PX_OBJ_MAGIC_ALIVE 0x706c65787573a11eULL
#define PX_OBJ_MAGIC_DEAD  0x706c65787573deadULL

/* The class of `type`, declared with PX_CLASS_DECLARATION. */
#define PX_CLASS(type) (&(type##_class))
/* Declare a class in a header. */
#define PX_CLASS_DECLARATION(type) extern px_class_t type##_class
/* Define a class in exactly one .c file: its parent type, constructor and
 * destructor (either may be NULL). */
#define PX_CLASS_INSTANCE(type, parent, construct, destruct)                                       \
    px_class_t type##_class = {#type,                                                              \
                               PX_CLASS(parent),                                                   \
                               (px_construct_t)(construct),                                        \
                               (px_destruct_t)(destruct),                                          \
                               sizeof(type),                                                       \
                               0,                                                                  \
                               0,                                                                  \
                               NULL,                                                               \
                               NULL,                                                               \
                               NULL,                                                               \
                               {NULL, 0, 0, 0}}

PX_EXPORT PX_CLASS_DECLARATION(px_object_t);

/* Build the class's flattened constructor/destructor arrays. Called
 * automatically on first use; thread-safe and idempotent. Returns 0 or
 * PX_ERR_OUT_OF_RESOURCE. */
PX_EXPORT int px_class_initialize(px_class_t *cls);
/* Free every class's arrays and, in debug builds, print every object still
 * alive with the file:line that made it. Returns the number still alive
 * (always 0 in non-debug builds). */
PX_EXPORT int px_class_finalize(void);
/* Forget every class defined in the shared object that contains `addr` (any
 * symbol of a plugin, e.g. its component struct) before that object is
 * unloaded, so that nothing in the class registry points into unmapped
 * memory. The repository calls it for every plugin it unloads; a program that
 * dlclose()s a library defining classes itself calls it first. `module_name`
 * (for messages) is typically the plugin's path.
 * Debug builds first look for objects of those classes still alive: each is
 * printed with where it was made, nothing is forgotten, and the count is
 * returned; the caller must then keep the module loaded (the repository does).
 * Returns 0 when the module may be unloaded (always, in non-debug builds,
 * which keep no list of live objects). */
PX_EXPORT int px_class_unload_module(const void *addr, const char *module_name);

/* ---- implementation helpers: use the macros below ---- */
#if PX_ENABLE_DEBUG
PX_EXPORT void px_obj_debug_on_new(px_object_t *obj, const char *file, int line, int heap);
PX_EXPORT void px_obj_debug_check(px_object_t *obj, const char *what, const char *file, int line);
PX_EXPORT void px_obj_debug_on_destruct(px_object_t *obj, const char *file, int line);
PX_EXPORT int px_obj_debug_free(px_object_t *obj); /* returns 1 when it kept the memory */
#endif
/* Slow paths of the per-thread object cache: allocate (binding this thread's
 * cache for the class) / cache or free a dead object. Exported because the
 * inline PX_OBJ_NEW/PX_OBJ_RELEASE call them from a plugin's code. */
PX_EXPORT px_object_t *px_obj_alloc_slow(px_class_t *cls);
PX_EXPORT void px_obj_free_slow(px_object_t *obj);

static inline void px_obj_run_constructors(px_object_t *obj, const px_class_t *cls)
{
    for (px_construct_t *c = cls->cls_construct_array; *c; ++c)
        (*c)(obj);
}

static inline void px_obj_run_destructors(px_object_t *obj)
{
    for (px_destruct_t *d = obj->obj_class->cls_destruct_array; *d; ++d)
        (*d)(obj);
}

/* Initialise the class on first use. Returns 0, or PX_ERR_OUT_OF_RESOURCE when
 * its arrays could not be allocated (the class stays uninitialised and the next
 * use tries again). */
static inline int px_class_ensure(px_class_t *cls)
{
    if (PX_UNLIKELY(!atomic_load_explicit(&cls->cls_initialized, memory_order_acquire)))
        return px_class_initialize(cls);
    return 0;
}

/* PX_OBJ_CONSTRUCT has no way to report an error and its caller would go on
 * to use and destruct an object that was never constructed: it aborts with a
 * message naming the class and the call site. */
PX_EXPORT __attribute__((noreturn, cold)) void px_class_init_failed(const px_class_t *cls,
                                                                    const char *file, int line);

static inline px_object_t *px_obj_new_(px_class_t *cls, const char *file, int line)
{
    if (PX_UNLIKELY(px_class_ensure(cls) != 0))
        return NULL;
#if PX_OBJ_CACHE
    px_object_t *obj;
    px_tcache_t *c = px_tcache_current(cls->cls_cache.slot, cls->cls_cache.gen);
    if (PX_LIKELY(c != NULL && c->count > 0))
        obj = (px_object_t *)c->items[--c->count];
    else
        obj = px_obj_alloc_slow(cls);
#else
    px_object_t *obj = (px_object_t *)malloc(cls->cls_sizeof);
#endif
    if (PX_UNLIKELY(NULL == obj))
        return NULL;
    obj->obj_class = cls;
    atomic_init(&obj->obj_refcount, 1);
#if PX_ENABLE_DEBUG
    px_obj_debug_on_new(obj, file, line, 1);
#else
    (void)file;
    (void)line;
#endif
    px_obj_run_constructors(obj, cls);
    return obj;
}

static inline void px_obj_construct_(px_object_t *obj, px_class_t *cls, const char *file, int line)
{
    if (PX_UNLIKELY(px_class_ensure(cls) != 0))
        px_class_init_failed(cls, file, line);
    obj->obj_class = cls;
    atomic_init(&obj->obj_refcount, 1);
#if PX_ENABLE_DEBUG
    px_obj_debug_on_new(obj, file, line, 0);
#else
    (void)file;
    (void)line;
#endif
    px_obj_run_constructors(obj, cls);
}

static inline void px_obj_destruct_(px_object_t *obj, const char *file, int line)
{
#if PX_ENABLE_DEBUG
    px_obj_debug_check(obj, "PX_OBJ_DESTRUCT", file, line);
#else
    (void)file;
    (void)line;
#endif
    px_obj_run_destructors(obj);
#if PX_ENABLE_DEBUG
    px_obj_debug_on_destruct(obj, file, line);
#endif
}

static inline void px_obj_retain_(px_object_t *obj, const char *file, int line)
{
#if PX_ENABLE_DEBUG
    px_obj_debug_check(obj, "PX_OBJ_RETAIN", file, line);
#else
    (void)file;
    (void)line;
#endif
    atomic_fetch_add_explicit(&obj->obj_refcount, 1, memory_order_relaxed);
}

/* Drop one reference; at zero run the destructors (child first) and free.
 * A caller holding the only reference (count 1) skips the atomic RMW: no other
 * thread can hold a reference to retain through. */
static inline void px_obj_release_(px_object_t *obj, const char *file, int line)
{
#if PX_ENABLE_DEBUG
    px_obj_debug_check(obj, "PX_OBJ_RELEASE", file, line);
#else
    (void)file;
    (void)line;
#endif
    if (atomic_load_explicit(&obj->obj_refcount, memory_order_acquire) != 1 &&
        atomic_fetch_sub_explicit(&obj->obj_refcount, 1, memory_order_acq_rel) != 1)
        return;
    px_obj_run_destructors(obj);
#if PX_ENABLE_DEBUG
    px_obj_debug_on_destruct(obj, file, line);
    if (px_obj_debug_free(obj))
        return;
#endif
#if PX_OBJ_CACHE
    px_class_t *cls = obj->obj_class;
    px_tcache_t *c = px_tcache_current(cls->cls_cache.slot, cls->cls_cache.gen);
    if (PX_LIKELY(c != NULL && c->count < PX_TCACHE_CAP)) {
        c->items[c->count++] = obj;
        return;
    }
    px_obj_free_slow(obj);
#else
    free(obj);
#endif
}

/* Allocate and construct an object of `type`; NULL when out of memory
 * (including when the class's first-use initialisation could not allocate). */
#define PX_OBJ_NEW(type) ((type *)px_obj_new_(PX_CLASS(type), __FILE__, __LINE__))
/* Add a reference. */
#define PX_OBJ_RETAIN(obj) px_obj_retain_((px_object_t *)(obj), __FILE__, __LINE__)
/* Drop a reference (destroying at zero) and set the pointer to NULL. */
#define PX_OBJ_RELEASE(obj)                                                                        \
    do {                                                                                           \
        px_obj_release_((px_object_t *)(obj), __FILE__, __LINE__);                                 \
        (obj) = NULL;                                                                              \
    } while (0)
/* Construct an object in memory the caller owns (a member, a stack variable). */
#define PX_OBJ_CONSTRUCT(obj, type)                                                                \
    px_obj_construct_((px_object_t *)(obj), PX_CLASS(type), __FILE__, __LINE__)
/* Run the destructors of an object made with PX_OBJ_CONSTRUCT; frees nothing. */
#define PX_OBJ_DESTRUCT(obj) px_obj_destruct_((px_object_t *)(obj), __FILE__, __LINE__)
/* The current reference count (for tests and assertions). */
#define PX_OBJ_REFCOUNT(obj)                                                                       \
    ((int)atomic_load_explicit(&((px_object_t *)(obj))->obj_refcount, memory_order_relaxed))
/* The class of an object. */
#define PX_OBJ_CLASS(obj) (((px_object_t *)(obj))->obj_class)

#endif
