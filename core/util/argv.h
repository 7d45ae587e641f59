/*
 * argv.h: helpers for NULL-terminated string vectors (argv-style).
 * For building command lines (launchers) and splitting comma lists such as
 * "shm,self" (selection lists, variable values); any layer may use it.
 *
 *   char **v = px_argv_split("shm,,self", ',');   // {"shm", "self", NULL}
 *   px_argv_append_nosize(&v, "ofi");              // {"shm", "self", "ofi", NULL}
 *   char *s = px_argv_join(v, ',');                // "shm,self,ofi" (free it)
 *   px_argv_free(v);
 *
 * Every vector returned here is malloc'ed, as is each string in it; free it
 * with px_argv_free. A NULL vector is a valid empty vector everywhere.
 */
#ifndef PX_UTIL_ARGV_H
#define PX_UTIL_ARGV_H

#include "core/util/compiler.h"

/* Number of strings before the terminating NULL (0 for a NULL vector). */
PX_EXPORT int px_argv_count(char **argv);
/* Append a copy of `arg`, growing the vector; *argc (if not NULL) is set to
 * the new count. Returns PX_SUCCESS, PX_ERR_BAD_PARAM for a NULL arg or
 * PX_ERR_OUT_OF_RESOURCE. */
PX_EXPORT int px_argv_append(int *argc, char ***argv, const char *arg);
PX_EXPORT int px_argv_append_nosize(char ***argv, const char *arg);
/* Insert a copy of `arg` at the front. */
PX_EXPORT int px_argv_prepend_nosize(char ***argv, const char *arg);
/* Split `src` at `delimiter`. Empty tokens are dropped by px_argv_split and
 * kept (as "") by px_argv_split_with_empty. An empty `src` gives an empty
 * vector (a NULL-terminated array of 0 strings), NULL on out of memory. */
PX_EXPORT char **px_argv_split(const char *src, int delimiter);
PX_EXPORT char **px_argv_split_with_empty(const char *src, int delimiter);
/* Join the strings with `delimiter` between them ("" for an empty vector);
 * NULL on out of memory. The caller frees the result. */
PX_EXPORT char *px_argv_join(char **argv, int delimiter);
/* A deep copy (NULL for a NULL vector or on out of memory). */
PX_EXPORT char **px_argv_copy(char **argv);
/* Free every string and the vector; NULL is ignored. */
PX_EXPORT void px_argv_free(char **argv);

#endif
