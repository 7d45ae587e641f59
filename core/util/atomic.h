/*
 * atomic.h: thin inline wrappers over C11 <stdatomic.h> for counters, flags
 * and pointers shared between threads, for any layer (progress engines,
 * transport ring indices, statistics). Header only.
 *
 * Types: px_atomic_int32_t, px_atomic_int64_t, px_atomic_ptr_t (_Atomic).
 *
 * Memory order, unless the name says otherwise:
 *   - px_atomic_load_*      acquire: later reads/writes stay after it;
 *   - px_atomic_store_*     release: earlier reads/writes stay before it;
 *   - read-modify-write (add/sub/swap/cas) acq_rel: both of the above; on
 *     x86_64 every RMW is a full barrier anyway;
 *   - *_relaxed             no ordering, only atomicity (statistics, counters
 *                           that publish nothing);
 *   - px_atomic_mb() full (seq_cst) fence, px_atomic_rmb() acquire fence,
 *     px_atomic_wmb() release fence.
 * cas is strong (no spurious failure); on failure *expected gets the current
 * value, on success it is unchanged. All return the value the name says:
 * add_fetch the new value, fetch_add the old one.
 */
#ifndef PX_UTIL_ATOMIC_H
#define PX_UTIL_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef _Atomic int32_t px_atomic_int32_t;
typedef _Atomic int64_t px_atomic_int64_t;
typedef void *_Atomic px_atomic_ptr_t;

#define PX_ACQ memory_order_acquire
#define PX_REL memory_order_release
#define PX_AR  memory_order_acq_rel
#define PX_RLX memory_order_relaxed

static inline void px_atomic_mb(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}
static inline void px_atomic_rmb(void)
{
    atomic_thread_fence(memory_order_acquire);
}
static inline void px_atomic_wmb(void)
{
    atomic_thread_fence(memory_order_release);
}

/* A hint for spin-wait loops (x86 `pause`); a compiler barrier elsewhere. */
static inline void px_atomic_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#undef PX_ACQ
#undef PX_REL
#undef PX_AR
#undef PX_RLX

#endif
}

#define PX_ATOMIC_DEFINE(bits, T, AT)                                                              \
    static inline void px_atomic_init_##bits(AT *p, T v)                                           \
    {                                                                                              \
        atomic_init(p, v);                                                                         \
    }                                                                                              \
    static inline T px_atomic_load_##bits(AT *p)                                                   \
    {                                                                                              \
        return atomic_load_explicit(p, PX_ACQ);                                                    \
    }                                                                                              \
    static inline T px_atomic_load_relaxed_##bits(AT *p)                                           \
    {                                                                                              \
        return atomic_load_explicit(p, PX_RLX);                                                    \
    }                                                                                              \
    static inline void px_atomic_store_##bits(AT *p, T v)                                          \
    {                                                                                              \
        atomic_store_explicit(p, v, PX_REL);                                                       \
    }                                                                                              \
    static inline void px_atomic_store_relaxed_##bits(AT *p, T v)                                  \
    {                                                                                              \
        atomic_store_explicit(p, v, PX_RLX);                                                       \
    }                                                                                              \
    static inline T px_atomic_fetch_add_##bits(AT *p, T v)                                         \
    {                                                                                              \
        return atomic_fetch_add_explicit(p, v, PX_AR);                                             \
    }                                                                                              \
    static inline T px_atomic_add_fetch_##bits(AT *p, T v)                                         \
    {                                                                                              \
        return atomic_fetch_add_explicit(p, v, PX_AR) + v;                                         \
    }                                                                                              \
    static inline T px_atomic_fetch_sub_##bits(AT *p, T v)                                         \
    {                                                                                              \
        return atomic_fetch_sub_explicit(p, v, PX_AR);                                             \
    }                                                                                              \
    static inline T px_atomic_sub_fetch_##bits(AT *p, T v)                                         \
    {                                                                                              \
        return atomic_fetch_sub_explicit(p, v, PX_AR) - v;                                         \
    }                                                                                              \
    static inline T px_atomic_fetch_add_relaxed_##bits(AT *p, T v)                                 \
    {                                                                                              \
        return atomic_fetch_add_explicit(p, v, PX_RLX);                                            \
    }                                                                                              \
    static inline T px_atomic_fetch_or_##bits(AT *p, T v)                                          \
    {                                                                                              \
        return atomic_fetch_or_explicit(p, v, PX_AR);                                              \
    }                                                                                              \
    static inline T px_atomic_fetch_and_##bits(AT *p, T v)                                         \
    {                                                                                              \
        return atomic_fetch_and_explicit(p, v, PX_AR);                                             \
    }                                                                                              \
    static inline T px_atomic_swap_##bits(AT *p, T v)                                              \
    {                                                                                              \
        return atomic_exchange_explicit(p, v, PX_AR);                                              \
    }                                                                                              \
    static inline bool px_atomic_cas_##bits(AT *p, T *expected, T desired)                         \
    {                                                                                              \
        return atomic_compare_exchange_strong_explicit(p, expected, desired, PX_AR, PX_ACQ);       \
    }

PX_ATOMIC_DEFINE(32, int32_t, px_atomic_int32_t)
PX_ATOMIC_DEFINE(64, int64_t, px_atomic_int64_t)
#undef PX_ATOMIC_DEFINE

static inline void *px_atomic_load_ptr(px_atomic_ptr_t *p)
{
    return atomic_load_explicit(p, PX_ACQ);
}
static inline void px_atomic_store_ptr(px_atomic_ptr_t *p, void *v)
{
    atomic_store_explicit(p, v, PX_REL);
}
static inline void *px_atomic_swap_ptr(px_atomic_ptr_t *p, void *v)
{
    return atomic_exchange_explicit(p, v, PX_AR);
}
static inline bool px_atomic_cas_ptr(px_atomic_ptr_t *p, void **expected, void *desired)
{
    return atomic_compare_exchange_strong_explicit(p, expected, desired, PX_AR, PX_ACQ);
}

#undef PX_ACQ
#undef PX_REL
#undef PX_AR
#undef PX_RLX

#endif
