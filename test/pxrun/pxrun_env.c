/*
 * pxrun_env: prints what a rank learns under pxrun, for test/pxrun/t_pxrun.sh:
 * rank, size, and for each argument NAME the MCA variable's value and
 * source ("var NAME=VALUE source=SOURCE"), or an environment variable's
 * value when NAME starts with "env:".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mca/var.h"
#include "runtime/plexus.h"

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "pxrun_env: px_init: %s\n", px_strerror(rc));
        return 1;
    }
    printf("rank %d size %d\n", px_rank(), px_size());
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "env:", 4)) {
            const char *v = getenv(argv[i] + 4);
            printf("env %s=%s\n", argv[i] + 4, v ? v : "(unset)");
            continue;
        }
        int idx = px_mca_var_find(argv[i]);
        if (idx < 0) {
            printf("var %s not found\n", argv[i]);
            continue;
        }
        char *val = px_mca_var_value_string(idx), *src = px_mca_var_source_string(idx);
        printf("var %s=%s source=%s\n", argv[i], val ? val : "?", src ? src : "?");
        free(val);
        free(src);
    }
    fflush(stdout);
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}
