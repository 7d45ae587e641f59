/*
 * pmix_lib.c: loading libpmix for boot/pmix on demand (see pmix_lib.h).
 */
#define PX_BOOT_PMIX_LIB_DEFINE 1
#include "components/boot/pmix/pmix_lib.h"
#include <dlfcn.h>
#include <stdio.h>

px_boot_pmix_lib_t px_boot_pmix_lib;

#ifndef PX_BOOT_PMIX_LIBDIR
#define PX_BOOT_PMIX_LIBDIR ""
#endif

bool px_boot_pmix_lib_load(const char **why)
{
    static int state; /* 0: not tried, 1: loaded, -1: failed */
    static char reason[400];
    if (0 == state) {
        state = -1;
        /* never closed: libpmix keeps its progress thread and event base */
        void *h = dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
        if (NULL == h && '\0' != PX_BOOT_PMIX_LIBDIR[0]) {
            char first[200];
            snprintf(first, sizeof(first), "%s", dlerror());
            h = dlopen(PX_BOOT_PMIX_LIBDIR "/libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
            if (NULL == h)
                snprintf(reason, sizeof(reason), "cannot load libpmix: %s; nor from %s: %s", first,
                         PX_BOOT_PMIX_LIBDIR, dlerror());
        } else if (NULL == h) {
            snprintf(reason, sizeof(reason), "cannot load libpmix: %s", dlerror());
        }
        if (h) {
            const char *missing = NULL;
#define PX_BOOT_PMIX_RESOLVE(f)                                                                    \
    *(void **)&px_boot_pmix_lib.f##_fn = dlsym(h, #f);                                             \
    if (NULL == px_boot_pmix_lib.f##_fn && NULL == missing)                                        \
        missing = #f;
            PX_BOOT_PMIX_FUNCTIONS(PX_BOOT_PMIX_RESOLVE)
#undef PX_BOOT_PMIX_RESOLVE
            if (missing)
                snprintf(reason, sizeof(reason),
                         "the libpmix.so.2 found lacks %s (a PMIx 4 client library is needed)",
                         missing);
            else
                state = 1;
        }
    }
    if (why)
        *why = reason;
    return 1 == state;
}
