/*
 * pmix_lib.h: boot/pmix's handle on the PMIx client library, loaded with
 * dlopen when a PMIx launcher started the process (internal to the
 * component). The plugin is not linked with libpmix: a process started by
 * pxrun or with no launcher never maps libpmix and what it pulls in
 * (libevent, libhwloc, munge), which cost every px_init about 3 ms of CPU.
 * pmix_component.c's query loads it (px_boot_pmix_lib_load) before it offers
 * the module; pmix_module.c includes this header after <pmix.h>, so its
 * calls (and the PMIx macros that expand to calls) go through the table.
 */
#ifndef PX_BOOT_PMIX_LIB_H
#define PX_BOOT_PMIX_LIB_H

#include <pmix.h>
#include <stdbool.h>

/* X(name): every PMIx function the component calls, directly or through a
 * PMIx macro (PMIX_INFO_LOAD -> PMIx_Info_load, PMIX_VALUE_RELEASE and
 * PMIX_INFO_DESTRUCT -> PMIx_Value_destruct). */
#define PX_BOOT_PMIX_FUNCTIONS(X)                                                                  \
    X(PMIx_Init)                                                                                   \
    X(PMIx_Finalize)                                                                               \
    X(PMIx_Abort)                                                                                  \
    X(PMIx_Put)                                                                                    \
    X(PMIx_Commit)                                                                                 \
    X(PMIx_Fence)                                                                                  \
    X(PMIx_Get)                                                                                    \
    X(PMIx_Get_relative_locality)                                                                  \
    X(PMIx_Job_control_nb)                                                                         \
    X(PMIx_Error_string)                                                                           \
    X(PMIx_Info_load)                                                                              \
    X(PMIx_Value_destruct)

typedef struct px_boot_pmix_lib {
#define PX_BOOT_PMIX_MEMBER(f) __typeof__(&f) f##_fn;
    PX_BOOT_PMIX_FUNCTIONS(PX_BOOT_PMIX_MEMBER)
#undef PX_BOOT_PMIX_MEMBER
} px_boot_pmix_lib_t;

extern px_boot_pmix_lib_t px_boot_pmix_lib;

/* Load libpmix once (the soname through the usual search, then the folder
 * configure found it in) and resolve every function above. true when all
 * are there; false with *why naming the library and the failure (dlerror, or
 * the first missing function). Later calls return the first answer. */
bool px_boot_pmix_lib_load(const char **why);

#ifndef PX_BOOT_PMIX_LIB_DEFINE
#define PMIx_Init                  px_boot_pmix_lib.PMIx_Init_fn
#define PMIx_Finalize              px_boot_pmix_lib.PMIx_Finalize_fn
#define PMIx_Abort                 px_boot_pmix_lib.PMIx_Abort_fn
#define PMIx_Put                   px_boot_pmix_lib.PMIx_Put_fn
#define PMIx_Commit                px_boot_pmix_lib.PMIx_Commit_fn
#define PMIx_Fence                 px_boot_pmix_lib.PMIx_Fence_fn
#define PMIx_Get                   px_boot_pmix_lib.PMIx_Get_fn
#define PMIx_Get_relative_locality px_boot_pmix_lib.PMIx_Get_relative_locality_fn
#define PMIx_Job_control_nb        px_boot_pmix_lib.PMIx_Job_control_nb_fn
#define PMIx_Error_string          px_boot_pmix_lib.PMIx_Error_string_fn
#define PMIx_Info_load             px_boot_pmix_lib.PMIx_Info_load_fn
#define PMIx_Value_destruct        px_boot_pmix_lib.PMIx_Value_destruct_fn
#endif

#endif
