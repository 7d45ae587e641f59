/*
 * objbench.h: the interface between objbench.c (Plexus side) and
 * objbench_opal.c (Open MPI OPAL side, built only when OPAL's headers are
 * installed). Each function runs `n` operations and returns ns per operation.
 */
#ifndef PX_BENCH_OBJBENCH_H
#define PX_BENCH_OBJBENCH_H

int px_bench_opal_init(void);
void px_bench_opal_fini(void);
double px_bench_opal_new_release(long n);
double px_bench_opal_free_list_st(long n);
double px_bench_opal_free_list_mt(long n); /* opal_uses_threads = true: atomic LIFO */
double px_bench_now_ns(void);

#endif
