/*
 * component.h: the struct every component exports, and how it is versioned.
 * A component (built in or a plugin plexus_<fw>_<name>.so) defines one
 * variable px_<fw>_<name>_component of its framework's component type, whose
 * first member is px_mca_component_t. Before it calls anything, the
 * repository checks, in this order: the MCA ABI version, the names, the
 * framework API version (same major, a minor no newer than the library's)
 * and the build fingerprint (below). docs/writing-a-component.md,
 * "Compatibility", has the rule.
 *
 * Lifecycle: register_params -> open -> (framework init/query) -> close.
 */
#ifndef PX_MCA_COMPONENT_H
#define PX_MCA_COMPONENT_H

#include <stdint.h>
#include "core/px_config.h"
#include "core/class/free_list.h"
#include "core/class/object.h"
#include "core/class/tcache_fast.h"
#include "core/util/progress.h"

typedef struct px_mca_version {
    int major, minor, release;
} px_mca_version_t;

/* Framework-defined sizes a fingerprint carries (the framework's component
 * and module structs, ...); px_mca_framework_t names them. */
#define PX_MCA_FINGERPRINT_FW_SIZES 4

/* What a component was compiled against beyond its API version: the build
 * settings and the sizes of the structs its own code lays out or reads
 * inline (objects, classes, the per-thread cache PX_OBJ_NEW reads, free
 * lists, the progress table, and its framework's structs). Filled by the
 * header macros below at compile time; a plugin whose fingerprint differs
 * from the library's is refused, naming both builds. Sizes, not hashes, so
 * that the refusal can say what differs. */
typedef struct px_mca_fingerprint {
    uint32_t size;           /* sizeof(px_mca_fingerprint_t) the component saw */
    uint32_t debug;          /* PX_ENABLE_DEBUG */
    uint32_t component_size; /* sizeof(px_mca_component_t) */
    uint32_t object_size;    /* sizeof(px_object_t) */
    uint32_t class_size;     /* sizeof(px_class_t) */
    uint32_t tcache_size;    /* sizeof(px_tcache_t) */
    uint32_t tcache_slots;   /* PX_TCACHE_SLOTS: entries of px_tcache_tls */
    uint32_t free_list_size; /* sizeof(px_free_list_t) */
    uint32_t progress_size;  /* sizeof(px_progress_entry_t), px_progress_entries' element */
    uint32_t fw_sizes[PX_MCA_FINGERPRINT_FW_SIZES]; /* the framework's, 0: not recorded */
} px_mca_fingerprint_t;

typedef struct px_mca_component {
    int mca_abi_version;                /* PX_MCA_ABI_VERSION_CURRENT; stays first */
    const char *framework_name;         /* "btl" */
    px_mca_version_t framework_version; /* the framework API it was built for */
    const char *component_name;         /* "self" */
    px_mca_version_t component_version;
    /* Register variables; may be NULL. Called once, before open. */
    int (*register_params)(void);
    /* Acquire what the component needs; a failure closes and unloads it. May be NULL. */
    int (*open)(void);
    /* Release everything open and init acquired. May be NULL. */
    int (*close)(void);
    /* MCA ABI 2: */
    px_mca_fingerprint_t fingerprint;
    /* Fields added later go here; the repository reads one only when
     * fingerprint.component_size says the component has it. */
} px_mca_component_t;

/* The fingerprint of the translation unit that expands it; the four
 * framework sizes as given (0 when the framework records none). */
#define PX_MCA_FINGERPRINT(s0, s1, s2, s3)                                                         \
    {                                                                                              \
        .size = sizeof(px_mca_fingerprint_t), .debug = PX_ENABLE_DEBUG,                            \
        .component_size = sizeof(px_mca_component_t), .object_size = sizeof(px_object_t),          \
        .class_size = sizeof(px_class_t), .tcache_size = sizeof(px_tcache_t),                      \
        .tcache_slots = PX_TCACHE_SLOTS, .free_list_size = sizeof(px_free_list_t),                 \
        .progress_size = sizeof(px_progress_entry_t), .fw_sizes = {                                \
            (s0),                                                                                  \
            (s1),                                                                                  \
            (s2),                                                                                  \
            (s3)                                                                                   \
        }                                                                                          \
    }

/* Fill the px_mca_component_t header of a component struct, with the
 * framework's own sizes in the fingerprint (a framework header wraps this in
 * its own macro, e.g. PX_BTL_COMPONENT_HEADER). */
#define PX_MCA_COMPONENT_HEADER_FP(fw, fw_maj, fw_min, fw_rel, name, maj, min, rel, reg, opn, cls, \
                                   s0, s1, s2, s3)                                                 \
    {                                                                                              \
        .mca_abi_version = PX_MCA_ABI_VERSION_CURRENT, .framework_name = (fw),                     \
        .framework_version = {(fw_maj), (fw_min), (fw_rel)}, .component_name = (name),             \
        .component_version = {(maj), (min), (rel)}, .register_params = (reg), .open = (opn),       \
        .close = (cls), .fingerprint = PX_MCA_FINGERPRINT(s0, s1, s2, s3)                          \
    }

/* Fill the px_mca_component_t header of a component struct (a framework that
 * records no sizes of its own: boot). */
#define PX_MCA_COMPONENT_HEADER(fw, fw_maj, fw_min, fw_rel, name, maj, min, rel, reg, opn, cls)    \
    PX_MCA_COMPONENT_HEADER_FP(fw, fw_maj, fw_min, fw_rel, name, maj, min, rel, reg, opn, cls, 0,  \
                               0, 0, 0)

#endif
