/*
 * fuzz_var_file.c: the parameter-file parser (core/mca/var_source.c read_file and
 * the resolution of file entries against registered variables). The input
 * is the content of a parameter file named by mca_param_files (a memfd,
 * /proc/self/fd/N); every variable type is registered, with a synonym and a
 * deprecated synonym, then unknown names are checked and values printed.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    memfd = memfd_create("px_fuzz_params", 0);
    if (memfd < 0) {
        perror("memfd_create");
        abort();
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    setenv("PX_MCA_mca_param_files", path, 1);
    setenv("HOME", px_fuzz_empty_dir(), 1);
    setenv("PX_SYSCONFDIR", px_fuzz_empty_dir(), 1);
    return 0;
}

static const px_mca_var_enum_value_t modes[] = {{0, "off"}, {3, "fast"}, {-2, "slow"}, {0, NULL}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
        abort();
    int i = 1;
    unsigned u = 2;
    size_t z = 3;
    bool b = true;
    double d = 0.5;
    const char *s = "x";
    int e = 3, ro = 7;
    px_mca_var_init();
    px_mca_var_register("fuzz", "x", "i", "int", PX_MCA_VAR_TYPE_INT, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &i);
    px_mca_var_register("fuzz", "x", "u", "unsigned", PX_MCA_VAR_TYPE_UNSIGNED, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &u);
    int zi = px_mca_var_register("fuzz", "x", "z", "size", PX_MCA_VAR_TYPE_SIZE, NULL, 1,
                                 PX_MCA_VAR_SCOPE_LOCAL, 0, &z);
    px_mca_var_register("fuzz", "x", "b", "bool", PX_MCA_VAR_TYPE_BOOL, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &b);
    px_mca_var_register("fuzz", "x", "d", "double", PX_MCA_VAR_TYPE_DOUBLE, NULL, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &d);
    int si = px_mca_var_register("fuzz", "x", "s", "string", PX_MCA_VAR_TYPE_STRING, NULL, 1,
                                 PX_MCA_VAR_SCOPE_LOCAL, 0, &s);
    px_mca_var_register("fuzz", "x", "e", "enum", PX_MCA_VAR_TYPE_ENUM, modes, 1,
                        PX_MCA_VAR_SCOPE_LOCAL, 0, &e);
    px_mca_var_register("fuzz", "x", "ro", "read-only", PX_MCA_VAR_TYPE_INT, NULL, 1,
                        PX_MCA_VAR_SCOPE_CONSTANT, 0, &ro);
    if (zi >= 0)
        px_mca_var_register_synonym(zi, "fuzz", "old", "z", PX_MCA_VAR_FLAG_DEPRECATED);
    if (si >= 0)
        px_mca_var_register_synonym(si, "fuzz", "x", "str", 0);
    px_mca_var_check_unknown();
    for (int k = 0, n = px_mca_var_count(); k < n; k++) {
        free(px_mca_var_value_string(k));
        free(px_mca_var_source_string(k));
    }
    if (e != 0 && e != 3 && e != -2)
        abort(); /* an enum took a value outside its table */
    if (ro != 7)
        abort(); /* a constant changed */
    px_mca_var_finalize();
    return 0;
}
