/*
 * var_internal.h: what the files of the MCA variable system share (var.c
 * the registry, var_value.c values, var_source.c sources, var_resolve.c
 * precedence). Not installed; nothing outside core/mca and its tests
 * includes it. Everything here runs with px_mca_var_lock held.
 */
#ifndef PX_MCA_VAR_INTERNAL_H
#define PX_MCA_VAR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include "core/mca/var.h"

typedef union {
    int i;
    unsigned u;
    size_t z;
    bool b;
    double d;
    char *s;
} value_t;

typedef struct var {
    char *full_name, *framework, *component, *name, *help;
    px_mca_var_type_t type;
    const px_mca_var_enum_value_t *enum_values;
    int info_level;
    px_mca_var_scope_t scope;
    unsigned flags;
    void *storage;
    value_t dflt; /* for strings: the caller's original pointer */
    char *owned;  /* string we put in *storage */
    px_mca_var_source_t source;
    char *where;
    int synonym_for; /* -1 for a primary */
    int *syns;       /* synonym indices */
    int n_syns;
    const char **syn_names; /* NULL-terminated, for px_mca_var_get_info */
    bool warned_deprecated, warned_readonly, warned_override;
    px_mca_var_probe_fn probe; /* computes the value on first read */
    /* After px_mca_var_detach_component: the value lives here, and the
     * default and enum table are our own copies. */
    value_t internal;
    char *dflt_owned;
    px_mca_var_enum_value_t *enum_owned;
    /* Valid range (int, unsigned, size, double), set by px_mca_var_set_range.
     * The texts (made at the first read, px_mca_var_range_texts) are ours
     * and never change once made (a later set_range keeps
     * the old texts in `old_range` until finalize), so pointers handed out
     * by px_mca_var_get_range stay valid. */
    bool has_min, has_max;
    value_t rmin, rmax;
    char *range_min, *range_max;
    char **old_range;
    int n_old_range;
} var_t;

typedef struct entry {
    char *name, *value, *where;
    px_mca_var_source_t source;
    int file_seq; /* which file (0 = highest priority), for FILE entries */
    bool bad;     /* did not parse; ignored from then on */
    bool warned;  /* unknown-name warning given */
} entry_t;

/* ---------------------------------------------------------------- registry
 * (var.c). The lock is recursive: the public calls take it, and so do the
 * calls they make into each other. */
extern pthread_mutex_t px_mca_var_lock;
extern var_t **px_mca_vars;
extern int px_mca_n_vars;
extern int px_mca_var_n_value_errors; /* values reported as not accepted */
/* Index of a full name or synonym, or PX_ERR_NOT_FOUND. */
int px_mca_var_find_unlocked(const char *full_name);
/* The primary variable of `index` (itself, or the one it is a synonym of). */
var_t *px_mca_var_primary_of(int index);

/* ------------------------------------------------------- values (var_value.c) */
/* Parse `text` for `v` into *out (strings are strdup'ed); `text` is not
 * modified. False when it does not parse. */
bool px_mca_var_parse(const var_t *v, const char *text, value_t *out);
/* The value as text; caller frees. */
char *px_mca_var_format(const var_t *v, const value_t *val);
void px_mca_var_read_storage(const var_t *v, value_t *out);
/* Store `val` (strings: copied) into the variable's storage. */
void px_mca_var_write_storage(var_t *v, const value_t *val);
/* "environment variable PX_MCA_x", "file /a/b.conf:3", ...; caller frees. */
char *px_mca_var_describe_source(px_mca_var_source_t s, const char *where);
bool px_mca_var_has_range_type(px_mca_var_type_t type);
bool px_mca_var_in_range(const var_t *v, const value_t *val);
/* What the variable accepts, with its range; caller frees. */
char *px_mca_var_accepted_for(var_t *v);
/* Make the range's texts (range_min, range_max) if not made yet: they are
 * made when first read, not at registration. */
void px_mca_var_range_texts(var_t *p);
/* Report a value that is not accepted (counted in px_mca_var_n_value_errors). */
void px_mca_var_report_bad_value(const var_t *v, const char *name, const char *text,
                                 px_mca_var_source_t s, const char *where, const char *keeping,
                                 bool out_of_range);
/* Install [min, max] on primary `p` (texts; NULL: open). Does not resolve. */
int px_mca_var_set_range_unlocked(var_t *p, const char *min, const char *max);

/* ----------------------------------------------------- sources (var_source.c) */
extern entry_t *px_mca_var_entries;
extern int px_mca_var_n_entries;
extern bool px_mca_var_strict_value; /* storage of mca_base_strict */
entry_t *px_mca_var_find_entry(const char *name, px_mca_var_source_t source);
entry_t *px_mca_var_add_entry(const char *name, const char *value, px_mca_var_source_t source,
                              const char *where, int file_seq);
/* Forget every entry; the next px_mca_var_load reads the sources again. */
void px_mca_var_sources_reset(void);

/* -------------------------------------------------- precedence (var_resolve.c) */
/* Recompute the value of primary `v` from its entries. PX_SUCCESS, or
 * PX_ERR_BAD_PARAM when the winning value is not accepted (the default is
 * then used and the entry marked bad). */
int px_mca_var_resolve(var_t *v);

#endif
