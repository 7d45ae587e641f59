/*
 * var.h: MCA variables (parameters). Frameworks and components register
 * variables in their register_params; users set them through parameter files,
 * PX_MCA_<name> environment variables, a launcher's --mca, or the API.
 *
 * A variable's full name is "<framework>_<component>_<name>" with empty parts
 * left out ("btl", "btl_base_verbose", "btl_self_eager_limit"). Registration
 * resolves the value from every source and writes it into the caller's
 * storage, which must outlive the variable (a static or component field).
 *
 * Sources, lowest to highest precedence: default < file < environment <
 * command line < API < override file (which also makes it read-only).
 */
#ifndef PX_MCA_VAR_H
#define PX_MCA_VAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"

typedef enum {
    PX_MCA_VAR_TYPE_INT,      /* int */
    PX_MCA_VAR_TYPE_UNSIGNED, /* unsigned int */
    PX_MCA_VAR_TYPE_SIZE,     /* size_t, accepts k/M/G suffixes */
    PX_MCA_VAR_TYPE_BOOL,     /* bool: 1/0, true/false, yes/no, on/off */
    PX_MCA_VAR_TYPE_DOUBLE,   /* double */
    PX_MCA_VAR_TYPE_STRING,   /* char * (strdup'ed; the var system owns it) */
    PX_MCA_VAR_TYPE_ENUM,     /* int, by name or number from the enum table */
} px_mca_var_type_t;

typedef enum {
    PX_MCA_VAR_SOURCE_DEFAULT,
    PX_MCA_VAR_SOURCE_FILE,
    PX_MCA_VAR_SOURCE_ENV,
    PX_MCA_VAR_SOURCE_COMMAND_LINE,
    PX_MCA_VAR_SOURCE_API,
    PX_MCA_VAR_SOURCE_OVERRIDE,
} px_mca_var_source_t;

typedef enum {
    PX_MCA_VAR_SCOPE_CONSTANT, /* never changes (a build fact) */
    PX_MCA_VAR_SCOPE_READONLY, /* set before open only */
    PX_MCA_VAR_SCOPE_LOCAL,    /* may differ between processes */
    PX_MCA_VAR_SCOPE_ALL,      /* must agree across the job (px_init checks it) */
} px_mca_var_scope_t;

/* Flags */
#define PX_MCA_VAR_FLAG_READONLY   0x1u /* users cannot set it */
#define PX_MCA_VAR_FLAG_SETTABLE   0x2u /* may be set with the API after open */
#define PX_MCA_VAR_FLAG_DEPRECATED 0x4u /* warns when set */
#define PX_MCA_VAR_FLAG_INTERNAL   0x8u /* hidden from px_info unless --all */

/* Info levels: 1-3 end users, 4-6 tuners, 7-9 developers. */
#define PX_INFO_LVL_1 1
#define PX_INFO_LVL_9 9

/* One named value of an enum variable; a table ends with {0, NULL}. */
typedef struct px_mca_var_enum_value {
    int value;
    const char *name;
} px_mca_var_enum_value_t;

/* Register a variable and resolve its value into *storage (whose current
 * content is the default; for strings a const char * default or NULL).
 * Returns the variable's index (>= 0) or a negative error code; a value that
 * does not parse prints an error naming the variable, the value, its source
 * and the accepted forms, and returns PX_ERR_BAD_PARAM (storage keeps the
 * default). Registering the same full name again returns the existing index. */
PX_EXPORT int px_mca_var_register(const char *framework, const char *component, const char *name,
                                  const char *help, px_mca_var_type_t type,
                                  const px_mca_var_enum_value_t *enum_values, int info_level,
                                  px_mca_var_scope_t scope, unsigned flags, void *storage);

/* Valid range of an int, unsigned, size or double variable. `min` and `max`
 * are texts parsed as values of the variable ("64k", "1G", "-1", "0.5");
 * NULL leaves that side open. Other types: PX_ERR_BAD_PARAM. The current
 * value is checked at once: a value from a file, the environment, the
 * command line or the API outside [min, max] is reported (the variable, the
 * value, its source, the accepted range), the default is kept, the error is
 * counted by px_mca_var_error_count, and PX_ERR_BAD_PARAM is returned. From
 * then on every source is checked against the range. A default outside its
 * own range is a programming error: PX_ERR_BAD_PARAM and a message, and no
 * range is set. The range stays when a plugin's variables are detached. */
PX_EXPORT int px_mca_var_set_range(int index, const char *min, const char *max);
/* px_mca_var_register with a range in one call (int, unsigned, size, double;
 * no enum table). Returns as px_mca_var_register. */
PX_EXPORT int px_mca_var_register_range(const char *framework, const char *component,
                                        const char *name, const char *help, px_mca_var_type_t type,
                                        int info_level, px_mca_var_scope_t scope, unsigned flags,
                                        const char *min, const char *max, void *storage);
/* The range as normalised texts ("65536", not "64k"), NULL for an open side.
 * The texts belong to the variable system and stay valid until
 * px_mca_var_finalize. */
PX_EXPORT int px_mca_var_get_range(int index, const char **min, const char **max);
/* What the variable accepts, with its range ("an integer from 1 to 1024").
 * Caller frees. */
PX_EXPORT char *px_mca_var_accepted_string(int index);

/* One row of a registration table (px_mca_var_register_table): what
 * px_mca_var_register or px_mca_var_register_range take, as data. */
/* (Declared again below with px_mca_var_set_probe; C11 allows the repeat.) */
typedef int (*px_mca_var_probe_fn)(void);

typedef struct px_mca_var_field {
    const char *name; /* "eager_limit"; NULL ends a table given with n < 0 */
    const char *help;
    px_mca_var_type_t type;
    const px_mca_var_enum_value_t *enum_values; /* enum variables only */
    int info_level;
    px_mca_var_scope_t scope;
    unsigned flags;
    /* The default as text ("64k", "auto", "/dev/shm"), written into the
     * storage before registration; NULL: the storage already holds it. A
     * string default must be a literal (the storage points at it). */
    const char *dflt;
    /* Range texts as for px_mca_var_set_range; NULL: that side is open. Only
     * int, unsigned, size and double variables may have them. */
    const char *min, *max;
    /* Where the value lives: `storage` when not NULL, else `offset` bytes
     * into the `base` given to px_mca_var_register_table (PX_MCA_VAR_AT). */
    void *storage;
    size_t offset;
    px_mca_var_probe_fn probe; /* optional, see px_mca_var_set_probe */
} px_mca_var_field_t;

/* The storage of a table row as a field of the struct given as `base`:
 * .offset = PX_MCA_VAR_AT(px_btl_module_t, btl_latency). */
#define PX_MCA_VAR_AT(type, member) offsetof(type, member)

/* Register every row of `table` (`n` rows, or up to the row whose name is
 * NULL when `n` < 0) for framework/component, in order. A row that is
 * malformed (no name, no storage, an enum without its table, a range on a
 * type that has none, a default that does not parse) is reported, naming the
 * variable and the row, and skipped. Every other row is registered even when
 * an earlier one failed. Returns PX_SUCCESS or the first error (a value
 * refused from a file, the environment or the command line is
 * PX_ERR_BAD_PARAM, as for px_mca_var_register). */
PX_EXPORT int px_mca_var_register_table(const char *framework, const char *component,
                                        const px_mca_var_field_t *table, int n, void *base);

/* Another name for a registered variable. With PX_MCA_VAR_FLAG_DEPRECATED,
 * setting it warns once, naming the replacement. */
PX_EXPORT int px_mca_var_register_synonym(int index, const char *framework, const char *component,
                                          const char *name, unsigned flags);

/* Read parameter files and the environment (once per process; refcounted).
 * Registration loads them on demand too. The system files live in
 * PX_SYSCONFDIR, which the environment variable PX_SYSCONFDIR replaces
 * (used by the test suite to point at its own plexus-mca-params.conf and
 * plexus-mca-params-override.conf). */
PX_EXPORT int px_mca_var_init(void);
/* Free everything (last caller of init). Storage of string vars is freed. */
PX_EXPORT int px_mca_var_finalize(void);

/* Index of a full name or synonym, or PX_ERR_NOT_FOUND. */
PX_EXPORT int px_mca_var_find(const char *full_name);
/* Set a value from a string with source API (or `source` for the _source
 * variant). Errors as for registration. Read-only variables refuse. */
PX_EXPORT int px_mca_var_set(const char *full_name, const char *value);
PX_EXPORT int px_mca_var_set_source(const char *full_name, const char *value,
                                    px_mca_var_source_t source, const char *where);
/* A launcher's or tool's `--mca name value`: recorded with source "command
 * line" for this process and, for children, exported as the environment
 * variable PX_CMDLINE_MCA_<name>=value (which the child reads back with source
 * "command line"). */
PX_EXPORT int px_mca_var_set_cmdline(const char *name, const char *value, bool export_to_env);

/* Report PX_MCA_* environment names and file entries that match no registered
 * variable, with the nearest registered names. Returns PX_ERR_NOT_FOUND when
 * there were some and mca_base_strict is set, else PX_SUCCESS. */
PX_EXPORT int px_mca_var_check_unknown(void);

/* A name px_mca_var_check_unknown must not report although no variable has
 * it (e.g. one of a component that exists but was not registered). */
typedef bool (*px_mca_var_unknown_filter_fn)(const char *name);
/* Install the filter px_mca_var_check_unknown consults (NULL: none). The
 * framework layer installs its own when it registers a framework. */
PX_EXPORT void px_mca_var_set_unknown_filter(px_mca_var_unknown_filter_fn filter);

/* The longest source_where kept by px_mca_var_get_info (a parameter file's
 * path and line; longer ones are cut, ending in "..."). */
#define PX_MCA_VAR_WHERE_MAX 4160

/* Read-only view for px_info and tests. The strings other than source_where
 * belong to the variable and live until px_mca_var_finalize. */
typedef struct px_mca_var_info {
    int index;
    const char *full_name;
    const char *framework, *component, *name;
    const char *help;
    px_mca_var_type_t type;
    const px_mca_var_enum_value_t *enum_values;
    int info_level;
    px_mca_var_scope_t scope;
    unsigned flags;
    px_mca_var_source_t source;
    /* "file:line", "PX_MCA_x", ... or NULL. Points into source_where_buf
     * below: a copy taken under the variable lock, so it stays valid (and
     * unchanged) however the variable is set afterwards, by any thread. */
    const char *source_where;
    const char *const *synonyms; /* NULL-terminated */
    bool is_synonym_of_other;
    int synonym_for;    /* index of the variable this one names, or -1 */
    bool probe_pending; /* a probe will compute the value when it is first read */
    char source_where_buf[PX_MCA_VAR_WHERE_MAX]; /* storage of source_where */
} px_mca_var_info_t;

PX_EXPORT int px_mca_var_count(void);
/* How many values that did not parse were reported since init (tools use it
 * for their exit status). */
PX_EXPORT int px_mca_var_error_count(void);
PX_EXPORT int px_mca_var_get_info(int index, px_mca_var_info_t *info);
/* Value as text, in a buffer the caller frees. */
PX_EXPORT char *px_mca_var_value_string(int index);
/* "default", "file /etc/x.conf:12", "environment PX_MCA_btl", "command line",
 * "API", "override file /etc/y.conf:3". Caller frees. */
PX_EXPORT char *px_mca_var_source_string(int index);
PX_EXPORT const char *px_mca_var_type_name(px_mca_var_type_t type);
/* "default", "file", "environment", "command line", "API", "override file". */
PX_EXPORT const char *px_mca_var_source_name(px_mca_var_source_t source);

/* Before a plugin is unloaded: every variable of framework/component moves
 * its value, default and enum table into the variable system, so nothing
 * points into the unloaded file. Returns how many variables were detached. */
PX_EXPORT int px_mca_var_detach_component(const char *framework, const char *component);

/* Informational variables whose value costs real time to compute (hardware
 * or network discovery): instead of computing it in register_params, give a
 * probe. It runs once, the first time the value is read through
 * px_mca_var_value_string (or px_mca_var_probe), and writes the variable's
 * storage. px_info runs probes only for what it is asked about by name
 * (--param FW COMP, --var NAME), so a full listing stays fast. A probe of a
 * plugin is dropped when the plugin is unloaded. */
typedef int (*px_mca_var_probe_fn)(void);
PX_EXPORT int px_mca_var_set_probe(int index, px_mca_var_probe_fn probe);
/* Run the variable's probe now if it has not run (no-op otherwise). */
PX_EXPORT int px_mca_var_probe(int index);

/* The default value as text (caller frees). */
PX_EXPORT char *px_mca_var_default_string(int index);
/* The accepted forms of a type, for messages ("1/0, true/false, ..."). For
 * enums pass the table; the result lists its names. Caller frees. */
PX_EXPORT char *px_mca_var_accepted_forms(px_mca_var_type_t type,
                                          const px_mca_var_enum_value_t *ev);

/* Up to `max` registered names nearest to `name` (edit distance), best first.
 * Returns how many were written; names point into the registry. */
PX_EXPORT int px_mca_var_nearest(const char *name, const char **out, int max);

/* This process's job-wide variables (scope PX_MCA_VAR_SCOPE_ALL), for the
 * runtime's check that every rank of a job agrees on them. Every primary
 * variable of that scope whose value is known (not awaiting a probe), sorted
 * by full name. `*buf` (caller frees; NULL to skip) gets four NUL-terminated
 * texts per variable: the full name, the value in a canonical form (the
 * parsed value: "64k" and "65536" give the same text; a double in full
 * precision), the value as px_mca_var_value_string shows it, and its source
 * as px_mca_var_source_string says it; `*len` its length in bytes. `*hash`
 * (NULL to skip) gets a 64-bit FNV-1a hash of the names and canonical values
 * only, so two processes with equal hashes agree whatever the sources. */
PX_EXPORT int px_mca_var_scope_all_values(char **buf, size_t *len, uint64_t *hash);

#endif
