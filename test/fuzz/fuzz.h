/*
 * fuzz.h: what every harness in test/fuzz shares. A harness defines
 * LLVMFuzzerTestOneInput (and may define LLVMFuzzerInitialize); it is built
 * twice: by test/fuzz/run-fuzz.sh with clang -fsanitize=fuzzer (coverage-
 * guided fuzzing), and by the normal build with replay_main.c, which feeds it
 * the committed corpus (test/fuzz/t_fuzz_corpus.sh).
 */
#ifndef PX_TEST_FUZZ_H
#define PX_TEST_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A harness with nothing to set up once. */
#define PX_FUZZ_NO_INIT                                                                            \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                                              \
    {                                                                                              \
        (void)argc;                                                                                \
        (void)argv;                                                                                \
        return 0;                                                                                  \
    }

/* Make a private, empty folder (for HOME and PX_SYSCONFDIR), once per
 * process; removed at exit. */
const char *px_fuzz_empty_dir(void);

/* The input as a NUL-terminated string (cut at its first NUL, as an
 * environment variable would be); caller frees. Unlike strndup it reads no
 * byte past `size` (ASan's strict_string_checks flags strndup on input that
 * has no NUL). */
char *px_fuzz_text(const uint8_t *data, size_t size);

/* The environment of a harness that runs px_init as a singleton with btl/self
 * alone: no launcher, no user or system parameter files, no plugins. A
 * harness sets its own variables after it, then calls px_init. */
void px_fuzz_singleton_env(void);

/* Copy the next n bytes of the input at *p (before end) to out, zero-filling
 * what the input lacks; advance *p; return how many bytes were real. */
size_t px_fuzz_take(const uint8_t **p, const uint8_t *end, void *out, size_t n);

#endif
