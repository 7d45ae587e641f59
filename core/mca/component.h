/*
 * component.h: the struct every component exports, and how it is versioned.
 * A component (built in or a plugin plexus_<fw>_<name>.so) defines one
 * variable px_<fw>_<name>_component of its framework's component type, whose
 * first member is px_mca_component_t. The repository checks the ABI and
 * framework API versions and the names before it calls anything.
 *
 * Lifecycle: register_params -> open -> (framework init/query) -> close.
 */
#ifndef PX_MCA_COMPONENT_H
#define PX_MCA_COMPONENT_H

#include "core/px_config.h"

typedef struct px_mca_version {
    int major, minor, release;
} px_mca_version_t;

typedef struct px_mca_component {
    int mca_abi_version;                /* PX_MCA_ABI_VERSION_CURRENT */
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
} px_mca_component_t;

/* Fill the px_mca_component_t header of a component struct. */
#define PX_MCA_COMPONENT_HEADER(fw, fw_maj, fw_min, fw_rel, name, maj, min, rel, reg, opn, cls)    \
    {                                                                                              \
        .mca_abi_version = PX_MCA_ABI_VERSION_CURRENT, .framework_name = (fw),                     \
        .framework_version = {(fw_maj), (fw_min), (fw_rel)}, .component_name = (name),             \
        .component_version = {(maj), (min), (rel)}, .register_params = (reg), .open = (opn),       \
        .close = (cls)                                                                             \
    }

#endif
