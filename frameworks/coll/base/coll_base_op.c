/*
 * coll_base_op.c: the reductions of the collectives, one plain loop per
 * (datatype, operation), which the compiler vectorises (docs/coll.md,
 * "Reductions", shows how to check: -fopt-info-vec-optimized). Signed
 * integers add and multiply as unsigned (wrapping, no undefined behaviour);
 * min and max on floats are `a < b ? a : b`, which maps to the SIMD min/max
 * instructions without -ffast-math.
 */
#include <stdint.h>
#include <string.h>
#include "core/util/error.h"
#include "frameworks/coll/coll.h"

/* GCC's -O2 vectorises only with the "very cheap" cost model (no epilogue);
 * these loops are worth the full vectoriser. Clang vectorises at -O2. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

static const char *const dtype_names[PX_DTYPE_COUNT] = {
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float", "double"};
static const size_t dtype_sizes[PX_DTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
static const char *const rop_names[PX_OP_COUNT] = {"sum", "prod", "min", "max",
                                                   "avg", "band", "bor", "bxor"};
static const char *const op_names[PX_COLL_NOPS] = {"barrier",   "bcast",          "scatter",
                                                   "gather",    "reduce",         "allreduce",
                                                   "allgather", "reduce_scatter", "alltoall"};

const char *px_coll_op_name(int opid)
{
    return opid >= 0 && opid < PX_COLL_NOPS ? op_names[opid] : NULL;
}
const char *px_coll_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < PX_DTYPE_COUNT ? dtype_names[dtype] : NULL;
}
const char *px_coll_rop_name(int rop)
{
    return rop >= 0 && rop < PX_OP_COUNT ? rop_names[rop] : NULL;
}
size_t px_coll_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < PX_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

static bool is_float(int dtype)
{
    return PX_FLOAT == dtype || PX_DOUBLE == dtype;
}

bool px_coll_rop_valid(int dtype, int rop)
{
    if (dtype < 0 || dtype >= PX_DTYPE_COUNT || rop < 0 || rop >= PX_OP_COUNT)
        return false;
    if (PX_AVG == rop)
        return is_float(dtype);
    if (PX_BAND == rop || PX_BOR == rop || PX_BXOR == rop)
        return !is_float(dtype);
    return true;
}

/* The loops. `dst` may alias `a` (or b), so no restrict; the compiler
 * vectorises with one runtime overlap check (dst == a passes it). */
#define LOOP(name, T, EXPR)                                                                        \
    static void name(void *dst_, const void *a_, const void *b_, size_t n)                         \
    {                                                                                              \
        T *dst = dst_;                                                                             \
        const T *a = a_, *b = b_;                                                                  \
        for (size_t i = 0; i < n; ++i) {                                                           \
            T x = a[i], y = b[i];                                                                  \
            dst[i] = (EXPR);                                                                       \
        }                                                                                          \
    }

/* Integers: arithmetic in the unsigned type of the same width. */
#define INT_LOOPS(S, T, U)                                                                         \
    LOOP(sum_##S, T, (T)((U)x + (U)y))                                                             \
    LOOP(prod_##S, T, (T)((U)x * (U)y))                                                            \
    LOOP(min_##S, T, x < y ? x : y)                                                                \
    LOOP(max_##S, T, x > y ? x : y)                                                                \
    LOOP(band_##S, T, (T)(x & y))                                                                  \
    LOOP(bor_##S, T, (T)(x | y))                                                                   \
    LOOP(bxor_##S, T, (T)(x ^ y))
#define FLT_LOOPS(S, T)                                                                            \
    LOOP(sum_##S, T, x + y)                                                                        \
    LOOP(prod_##S, T, x *y)                                                                        \
    LOOP(min_##S, T, x < y ? x : y)                                                                \
    LOOP(max_##S, T, x > y ? x : y)

INT_LOOPS(i8, int8_t, uint8_t)
INT_LOOPS(u8, uint8_t, uint8_t)
INT_LOOPS(i16, int16_t, uint16_t)
INT_LOOPS(u16, uint16_t, uint16_t)
INT_LOOPS(i32, int32_t, uint32_t)
INT_LOOPS(u32, uint32_t, uint32_t)
INT_LOOPS(i64, int64_t, uint64_t)
INT_LOOPS(u64, uint64_t, uint64_t)
FLT_LOOPS(f32, float)
FLT_LOOPS(f64, double)

typedef void (*loop_fn)(void *, const void *, const void *, size_t);
#define F(x) x
#define INT_ROW(S)                                                                                 \
    {                                                                                              \
        F(sum_##S), F(prod_##S), F(min_##S), F(max_##S), NULL, F(band_##S), F(bor_##S),            \
            F(bxor_##S)                                                                            \
    }
#define FLT_ROW(S)                                                                                 \
    {                                                                                              \
        F(sum_##S), F(prod_##S), F(min_##S), F(max_##S), NULL, NULL, NULL, NULL                    \
    }

static const loop_fn loops[PX_DTYPE_COUNT][PX_OP_COUNT] = {
    INT_ROW(i8),  INT_ROW(u8),  INT_ROW(i16), INT_ROW(u16), INT_ROW(i32),
    INT_ROW(u32), INT_ROW(i64), INT_ROW(u64), FLT_ROW(f32), FLT_ROW(f64),
};

int px_coll_reduce(void *dst, const void *a, const void *b, size_t count, int dtype, int rop)
{
    if (dtype < 0 || dtype >= PX_DTYPE_COUNT || rop < 0 || rop >= PX_OP_COUNT ||
        NULL == loops[dtype][rop])
        return PX_ERR_NOT_SUPPORTED;
    if (count)
        loops[dtype][rop](dst, a, b, count);
    return PX_SUCCESS;
}

void px_coll_scale(void *x, size_t count, int dtype, double div)
{
    if (PX_FLOAT == dtype) {
        float *f = x, d = (float)div;
        for (size_t i = 0; i < count; ++i)
            f[i] /= d;
    } else if (PX_DOUBLE == dtype) {
        double *f = x;
        for (size_t i = 0; i < count; ++i)
            f[i] /= div;
    }
}
