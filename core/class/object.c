/*
 * object.c: class initialisation, the debug-build object registry, and the
 * forgetting of a shared object's classes before it is unloaded.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/class/object.h"
#include "core/class/tcache.h"
#include "core/util/error.h"

px_class_t px_object_t_class = {
    "px_object_t", NULL, NULL, NULL, sizeof(px_object_t), 0, 0, NULL, NULL, NULL, {NULL, 0, 0, 0}};

px_object_t *px_obj_alloc_slow(px_class_t *cls)
{
    /* Bind this thread's cache so that the release of this object fills it. */
    (void)px_tcache_bind(&cls->cls_cache);
    return (px_object_t *)malloc(cls->cls_sizeof);
}

void px_obj_free_slow(px_object_t *obj)
{
    px_tcache_t *c = px_tcache_bind(&obj->obj_class->cls_cache);
    if (c && c->count < PX_TCACHE_CAP)
        c->items[c->count++] = obj;
    else
        free(obj);
}

static void cache_flush_unused(px_tcache_owner_t *owner, void **items, uint32_t n)
{
    (void)owner, (void)items, (void)n; /* PX_TCACHE_KIND_MALLOC: tcache frees them */
}

/* Tests compile their own copy of this file with -DPX_CLASS_ALLOC_HOOK=fn to
 * make the class arrays' allocation fail on demand. */
#ifdef PX_CLASS_ALLOC_HOOK
void *PX_CLASS_ALLOC_HOOK(size_t size);
#define class_alloc PX_CLASS_ALLOC_HOOK
#else
#define class_alloc malloc
#endif

static pthread_mutex_t class_lock = PTHREAD_MUTEX_INITIALIZER;
static px_class_t *initialized_classes; /* guarded by class_lock */

int px_class_initialize(px_class_t *cls)
{
    pthread_mutex_lock(&class_lock);
    if (atomic_load_explicit(&cls->cls_initialized, memory_order_relaxed)) {
        pthread_mutex_unlock(&class_lock);
        return PX_SUCCESS;
    }
    int depth = 0, nctor = 0, ndtor = 0;
    for (px_class_t *c = cls; c; c = c->cls_parent) {
        depth++;
        nctor += (c->cls_construct != NULL);
        ndtor += (c->cls_destruct != NULL);
    }
    /* One allocation holds both NULL-terminated arrays. */
    px_construct_t *ctors =
        class_alloc(sizeof(px_construct_t) * (nctor + 1) + sizeof(px_destruct_t) * (ndtor + 1));
    if (NULL == ctors) {
        pthread_mutex_unlock(&class_lock);
        return PX_ERR_OUT_OF_RESOURCE;
    }
    px_destruct_t *dtors = (px_destruct_t *)(ctors + nctor + 1);
    int ci = nctor, di = 0;
    ctors[ci] = NULL;
    for (px_class_t *c = cls; c; c = c->cls_parent) {
        if (c->cls_construct)
            ctors[--ci] = c->cls_construct; /* filled back to front: parent first */
        if (c->cls_destruct)
            dtors[di++] = c->cls_destruct; /* child first */
    }
    dtors[di] = NULL;
    cls->cls_depth = depth;
    cls->cls_construct_array = ctors;
    cls->cls_destruct_array = dtors;
    cls->cls_next_initialized = initialized_classes;
    initialized_classes = cls;
    cls->cls_cache.kind = PX_TCACHE_KIND_MALLOC;
    cls->cls_cache.flush = cache_flush_unused;
#if PX_OBJ_CACHE
    px_tcache_owner_register(&cls->cls_cache);
#else
    cls->cls_cache.slot = 0;
#endif
    atomic_store_explicit(&cls->cls_initialized, 1, memory_order_release);
    pthread_mutex_unlock(&class_lock);
    return PX_SUCCESS;
}

void px_class_init_failed(const px_class_t *cls, const char *file, int line)
{
    fprintf(stderr,
            "plexus: object error: PX_OBJ_CONSTRUCT at %s:%d cannot initialise class %s: out of "
            "memory for its constructor and destructor arrays\n",
            file, line, cls->cls_name ? cls->cls_name : "?");
    abort();
}

#if PX_ENABLE_DEBUG
static pthread_mutex_t dbg_lock = PTHREAD_MUTEX_INITIALIZER;
static px_object_t *dbg_live; /* doubly linked registry of live objects */
/* Freed heap objects are kept (poisoned, magic DEAD) in a ring for a while, so
 * a later retain/release of one is caught instead of reading freed memory. */
#define PX_OBJ_QUARANTINE 4096
static px_object_t *quarantine[PX_OBJ_QUARANTINE];
static size_t quarantine_next;

void px_obj_debug_on_new(px_object_t *obj, const char *file, int line, int heap)
{
    obj->obj_magic = PX_OBJ_MAGIC_ALIVE;
    obj->obj_file = file;
    obj->obj_line = line;
    obj->obj_heap = heap;
    pthread_mutex_lock(&dbg_lock);
    obj->obj_dbg_prev = NULL;
    obj->obj_dbg_next = dbg_live;
    if (dbg_live)
        dbg_live->obj_dbg_prev = obj;
    dbg_live = obj;
    pthread_mutex_unlock(&dbg_lock);
}

void px_obj_debug_check(px_object_t *obj, const char *what, const char *file, int line)
{
    if (NULL == obj) {
        fprintf(stderr, "plexus: object error: %s of a NULL pointer at %s:%d\n", what, file, line);
        abort();
    }
    if (PX_LIKELY(obj->obj_magic == PX_OBJ_MAGIC_ALIVE))
        return;
    if (obj->obj_magic == PX_OBJ_MAGIC_DEAD)
        fprintf(stderr,
                "plexus: object error: %s at %s:%d of an object that is already dead "
                "(class %s, made at %s:%d)\n",
                what, file, line, obj->obj_class ? obj->obj_class->cls_name : "?",
                obj->obj_file ? obj->obj_file : "?", obj->obj_line);
    else
        fprintf(stderr,
                "plexus: object error: %s at %s:%d of an object that was never constructed "
                "(no valid magic number at %p)\n",
                what, file, line, (void *)obj);
    abort();
}

void px_obj_debug_on_destruct(px_object_t *obj, const char *file, int line)
{
    (void)file;
    (void)line;
    pthread_mutex_lock(&dbg_lock);
    if (obj->obj_dbg_prev)
        obj->obj_dbg_prev->obj_dbg_next = obj->obj_dbg_next;
    else if (dbg_live == obj)
        dbg_live = obj->obj_dbg_next;
    if (obj->obj_dbg_next)
        obj->obj_dbg_next->obj_dbg_prev = obj->obj_dbg_prev;
    obj->obj_dbg_prev = obj->obj_dbg_next = NULL;
    obj->obj_magic = PX_OBJ_MAGIC_DEAD;
    pthread_mutex_unlock(&dbg_lock);
}

int px_obj_debug_free(px_object_t *obj)
{
    pthread_mutex_lock(&dbg_lock);
    px_object_t *old = quarantine[quarantine_next];
    quarantine[quarantine_next] = obj;
    quarantine_next = (quarantine_next + 1) % PX_OBJ_QUARANTINE;
    pthread_mutex_unlock(&dbg_lock);
    free(old);
    return 1;
}
#endif

/* ------------------------------------------------ classes of an unloaded module */

/* The loaded segments (PT_LOAD) of the shared object that holds an address. */
#define PX_MODULE_MAX_SEGS 16
typedef struct {
    uintptr_t addr; /* in: an address inside the module */
    int found;
    int nseg;
    uintptr_t lo[PX_MODULE_MAX_SEGS], hi[PX_MODULE_MAX_SEGS];
} module_range_t;

static int find_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    module_range_t *m = arg;
    int hit = 0;
    for (int i = 0; i < info->dlpi_phnum && !hit; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        hit = ph->p_type == PT_LOAD && m->addr >= lo && m->addr < lo + ph->p_memsz;
    }
    if (!hit)
        return 0;
    m->found = 1;
    for (int i = 0; i < info->dlpi_phnum && m->nseg < PX_MODULE_MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        m->lo[m->nseg] = info->dlpi_addr + ph->p_vaddr;
        m->hi[m->nseg] = m->lo[m->nseg] + ph->p_memsz;
        m->nseg++;
    }
    return 1; /* stop: found */
}

static int in_module(const module_range_t *m, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < m->nseg; i++)
        if (a >= m->lo[i] && a < m->hi[i])
            return 1;
    return 0;
}

/* A class belongs to the module when it, or any class of its chain (whose
 * constructor or destructor its arrays hold), lies in the module's memory. */
static int class_in_module(const module_range_t *m, const px_class_t *cls)
{
    for (const px_class_t *c = cls; c; c = c->cls_parent) {
        if (in_module(m, c) || (c->cls_construct && in_module(m, (const void *)c->cls_construct)) ||
            (c->cls_destruct && in_module(m, (const void *)c->cls_destruct)))
            return 1;
    }
    return 0;
}

int px_class_unload_module(const void *addr, const char *module_name)
{
    module_range_t m = {.addr = (uintptr_t)addr};
    if (NULL == addr || 0 == dl_iterate_phdr(find_module_cb, &m) || !m.found)
        return 0; /* not in any loaded object: nothing of ours points there */
    const char *name = module_name ? module_name : "?";
    int alive = 0;
#if PX_ENABLE_DEBUG
    /* An object of the module's classes still alive would point into unmapped
     * memory once it is gone: report each, and tell the caller to keep it. */
    pthread_mutex_lock(&dbg_lock);
    for (px_object_t *o = dbg_live; o; o = o->obj_dbg_next) {
        if (!class_in_module(&m, o->obj_class))
            continue;
        if (0 == alive)
            fprintf(stderr,
                    "plexus: %s is being unloaded while objects of its classes are still alive "
                    "(a plugin must release or destruct every object it made before its close "
                    "returns); it stays loaded so they remain valid:\n",
                    name);
        fprintf(stderr, "  %s at %p, made at %s:%d, refcount %d\n", o->obj_class->cls_name,
                (void *)o, o->obj_file, o->obj_line, (int)atomic_load(&o->obj_refcount));
        alive++;
    }
    pthread_mutex_unlock(&dbg_lock);
    if (alive > 0)
        return alive;
#else
    (void)name;
#endif
    pthread_mutex_lock(&class_lock);
    px_class_t **link = &initialized_classes;
    while (*link) {
        px_class_t *c = *link;
        if (!class_in_module(&m, c)) {
            link = &c->cls_next_initialized;
            continue;
        }
        *link = c->cls_next_initialized;
        px_tcache_owner_unregister(&c->cls_cache); /* frees this thread's cached objects */
        free(c->cls_construct_array);
        c->cls_construct_array = NULL;
        c->cls_destruct_array = NULL;
        c->cls_next_initialized = NULL;
        atomic_store(&c->cls_initialized, 0);
    }
    pthread_mutex_unlock(&class_lock);
    return alive;
}

int px_class_finalize(void)
{
    int alive = 0;
#if PX_ENABLE_DEBUG
    pthread_mutex_lock(&dbg_lock);
    for (px_object_t *o = dbg_live; o; o = o->obj_dbg_next) {
        if (0 == alive)
            fprintf(stderr, "plexus: objects still alive at px_class_finalize:\n");
        fprintf(stderr, "  %s at %p, made at %s:%d, refcount %d\n", o->obj_class->cls_name,
                (void *)o, o->obj_file, o->obj_line, (int)atomic_load(&o->obj_refcount));
        alive++;
    }
    for (size_t i = 0; i < PX_OBJ_QUARANTINE; i++) {
        free(quarantine[i]);
        quarantine[i] = NULL;
    }
    pthread_mutex_unlock(&dbg_lock);
#endif
    pthread_mutex_lock(&class_lock);
    px_class_t *c = initialized_classes;
    while (c) {
        px_class_t *next = c->cls_next_initialized;
        px_tcache_owner_unregister(&c->cls_cache); /* frees this thread's cached objects */
        free(c->cls_construct_array);
        c->cls_construct_array = NULL;
        c->cls_destruct_array = NULL;
        c->cls_next_initialized = NULL;
        atomic_store(&c->cls_initialized, 0);
        c = next;
    }
    initialized_classes = NULL;
    pthread_mutex_unlock(&class_lock);
    return alive;
}
