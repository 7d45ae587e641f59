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

/* container_of: from a pointer to a member back to the enclosing struct. */
#define px_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
