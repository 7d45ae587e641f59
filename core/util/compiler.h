/*
 * compiler.h: branch hints and small attributes used on hot paths.
 * Called by every layer; has no state.
 */
#ifndef PX_UTIL_COMPILER_H
#define PX_UTIL_COMPILER_H

#define PX_LIKELY(x)    __builtin_expect(!!(x), 1)
#define PX_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#define PX_CACHE_LINE   64
#define PX_ALIGNED(n)   __attribute__((aligned(n)))
#define PX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define PX_NOINLINE     __attribute__((noinline))
#define PX_COLD         __attribute__((cold, noinline))
#define PX_UNUSED       __attribute__((unused))

/* PX_EXPORT: the one mark of what libplexus exports. The library is built
 * with -fvisibility=hidden, so a function or variable is callable from an
 * application, a plugin (btl/ofi, btl/verbs, boot/pmix, out-of-tree
 * components) or a tool only when its declaration in an installed header
 * starts with PX_EXPORT. Everything else stays inside libplexus.so.
 * test/build/t_exported_symbols.sh compares the exported list with
 * test/build/exported-symbols.txt, so an export is always deliberate. */
#ifndef PX_EXPORT /* plexus_types.h defines it the same way */
#define PX_EXPORT __attribute__((visibility("default")))
#endif

/* container_of: from a pointer to a member back to the enclosing struct. */
#define px_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
