/*
 * suggest.h: "did you mean" suggestions: the names nearest to a misspelt one,
 * by edit distance. Used for unknown variable, component and option names.
 */
#ifndef PX_UTIL_SUGGEST_H
#define PX_UTIL_SUGGEST_H

#include "core/util/compiler.h"

/* Levenshtein distance, ignoring case (insert, delete, substitute cost 1). */
PX_EXPORT int px_suggest_distance(const char *a, const char *b);
/* Largest distance still worth suggesting for a name of this length. */
PX_EXPORT int px_suggest_limit(const char *name);
/* Up to `max` (<= 16) of `cands` nearest to `name`, best first, within the
 * suggestion limit (a candidate containing `name`, if `name` has 4 or more
 * characters, counts as near); `name` itself is never suggested. `ncands` < 0:
 * `cands` is NULL-terminated. Returns how many were written; the pointers
 * are the candidates'. */
PX_EXPORT int px_suggest_nearest(const char *name, const char *const *cands, int ncands,
                                 const char **out, int max);

#endif
