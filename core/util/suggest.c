/*
 * suggest.c: nearest names by edit distance, for "did you mean" hints.
 */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/suggest.h"

int px_suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int stack[128];
    int *row = lb + 1 <= 128 ? stack : malloc((lb + 1) * sizeof(int));
    if (!row)
        return INT_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
            int best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    int d = row[lb];
    if (row != stack)
        free(row);
    return d;
}

int px_suggest_limit(const char *name)
{
    int n = (int)strlen(name);
    return n < 6 ? 2 : n / 3 + 1;
}

/* Insert `cand` into the best-first list out/dist (n entries, at most max)
 * when it is close enough to `name`. */
static void rank_candidate(const char *name, const char *cand, int limit, const char **out,
                           int *dist, int *n, int max)
{
    int d = px_suggest_distance(name, cand);
    /* A name that is a part of a longer one is also a good hint. */
    if (d > limit && strlen(name) >= 4 && strstr(cand, name))
        d = limit;
    if (d > limit || 0 == strcmp(name, cand))
        return;
    int pos = *n;
    while (pos > 0 && dist[pos - 1] > d)
        pos--;
    if (pos >= max)
        return;
    int last = *n < max ? *n : max - 1;
    for (int k = last; k > pos; k--) {
        out[k] = out[k - 1];
        dist[k] = dist[k - 1];
    }
    out[pos] = cand;
    dist[pos] = d;
    if (*n < max)
        (*n)++;
}

int px_suggest_nearest(const char *name, const char *const *cands, int ncands, const char **out,
                       int max)
{
    int dist[16], n = 0;
    if (!name || max <= 0)
        return 0;
    if (max > 16)
        max = 16;
    int limit = px_suggest_limit(name);
    for (int i = 0; cands && (ncands < 0 ? cands[i] != NULL : i < ncands); i++)
        rank_candidate(name, cands[i], limit, out, dist, &n, max);
    return n;
}
