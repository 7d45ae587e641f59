/*
 * plexus_types.h: the small types header of the application API (included
 * by <plexus.h>; docs/abi.md, "Two tiers of headers"): return codes and
 * px_strerror, the opaque handles, the datatypes and reductions of the
 * collectives, the application's own settings (px_var_register), and
 * PX_EXPORT: what works without px_init. It includes nothing of Plexus and
 * nothing beyond the C library's <stddef.h>.
 *
 * The lowest layer of the tree: core/util/error.h (the return codes for the
 * library's own code) and frameworks/coll/coll_types.h (the datatypes for
 * coll components) include it, so the values have one definition
 * (test/build/check_layers.sh places it beside the configuration headers).
 */
#ifndef PLEXUS_TYPES_H
#define PLEXUS_TYPES_H

#include <stddef.h>

/* PX_EXPORT: the one mark of what libplexus exports (core/util/compiler.h
 * says more); defined the same way there. */
#ifndef PX_EXPORT
#define PX_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Every function that can fail returns PX_SUCCESS (0) or one of these
 * negative codes; px_strerror turns them into text. */
enum {
    PX_SUCCESS = 0,
    PX_ERROR = -1,                    /* generic failure; a message was printed */
    PX_ERR_OUT_OF_RESOURCE = -2,      /* memory or another resource is exhausted */
    PX_ERR_TEMP_OUT_OF_RESOURCE = -3, /* try again after progress */
    PX_ERR_BAD_PARAM = -4,            /* an argument or value is invalid */
    PX_ERR_NOT_FOUND = -5,            /* no such name, key or item */
    PX_ERR_NOT_SUPPORTED = -6,        /* the operation is not offered here */
    PX_ERR_UNREACH = -7,              /* no transport reaches the peer */
    PX_ERR_TRUNCATE = -8,             /* the receive buffer was too small */
    PX_ERR_NOT_AVAILABLE = -9,        /* component or service not usable here */
    PX_ERR_VALUE_OUT_OF_BOUNDS = -10, /* index or value outside the valid range */
    PX_ERR_EXISTS = -11,              /* already present */
    PX_ERR_TIMEOUT = -12,             /* a deadline passed */
    PX_ERR_IN_ERRNO = -13,            /* see errno */
    PX_ERR_PEER_FAILED = -14,         /* the peer process died or disconnected */
    PX_ERR_NOT_INITIALIZED = -15,     /* px_init has not been called */
    PX_ERR_COMM = -16,                /* a transport reported an error */
    PX_ERR_VERSION = -17,             /* version or ABI mismatch */
    PX_ERR_FATAL = -18,               /* unrecoverable */
    PX_ERR_GROUP_FAILED = -19,        /* a member gave up on a collective: the group is failed */
    PX_ERR_MAX = -20
};

/* Text for a return code; never NULL. */
PX_EXPORT const char *px_strerror(int code);

/* Opaque handles: applications hold pointers to them and never see inside
 * (the bodies are the library's own and change freely). */
typedef struct px_request px_request_t;  /* a non-blocking operation (plexus.h) */
typedef struct px_coll_group px_group_t; /* a group of ranks (plexus_coll.h) */

/* Element types of a collective's buffers. */
typedef enum px_dtype {
    PX_INT8 = 0,
    PX_UINT8,
    PX_INT16,
    PX_UINT16,
    PX_INT32,
    PX_UINT32,
    PX_INT64,
    PX_UINT64,
    PX_FLOAT,
    PX_DOUBLE,
    PX_DTYPE_COUNT
} px_dtype_t;

/* Reductions. AVG is for PX_FLOAT and PX_DOUBLE only (the sum divided by the
 * group's size); BAND, BOR and BXOR for the integer types only. Integer SUM
 * and PROD wrap around (two's complement), as unsigned arithmetic does. */
typedef enum px_op {
    PX_SUM = 0,
    PX_PROD,
    PX_MIN,
    PX_MAX,
    PX_AVG,
    PX_BAND,
    PX_BOR,
    PX_BXOR,
    PX_OP_COUNT
} px_op_t;

/* Pass as the send buffer (the receive buffer for a scatter's root) for the
 * in-place form of a collective, as MPI_IN_PLACE (docs/coll.md says where). */
#define PX_IN_PLACE ((void *)1)

/* color for px_group_split: this rank joins no new group. */
#define PX_UNDEFINED (-32766)

/* ---- the application's own settings (no px_init needed) ----
 *
 *   static size_t threshold = 32 * 1024;   // the default
 *   px_var_register("myapp_threshold", PX_VAR_SIZE, "switch point (bytes)", "0", NULL, &threshold);
 *
 * A setting is read like Plexus's own variables: PX_MCA_<name> in the
 * environment, a parameter file, `pxrun --mca <name> <value>`, with the same
 * parsing ("64k"), range checks, error messages and `px_info` listing. */
typedef enum px_var_type {
    PX_VAR_INT = 0, /* storage: int */
    PX_VAR_SIZE,    /* size_t; accepts k/M/G suffixes */
    PX_VAR_BOOL,    /* bool (<stdbool.h>): 1/0, true/false, yes/no, on/off */
    PX_VAR_DOUBLE,  /* double */
    PX_VAR_STRING   /* char *: a const default or NULL; the value belongs to Plexus */
} px_var_type_t;

/* Register the setting `name` (a letter, then letters, digits and '_'; give
 * it the application's prefix, as "myapp_threshold") and write its value into
 * *storage, whose current content is the default. `min` and `max` (texts
 * parsed as values, "4k"; NULL: open) bound an INT, SIZE or DOUBLE. Call it
 * before px_init (so a value given to the job is checked before the run
 * starts) or after; the value stays in *storage until the process ends.
 * Returns PX_SUCCESS; PX_ERR_BAD_PARAM when a given value does not parse or
 * is out of range (a message names the setting, the value, where it came
 * from and what is accepted; *storage keeps the default) or when an argument
 * is wrong (a message says which); PX_ERR_EXISTS when the name is a variable
 * of another type (one of Plexus's own, say). Registering the same name again
 * with the same type gives the same value. */
PX_EXPORT int px_var_register(const char *name, px_var_type_t type, const char *help,
                              const char *min, const char *max, void *storage);

#ifdef __cplusplus
}
#endif
#endif
