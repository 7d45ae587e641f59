/*
 * fuzz_var_value.c: typed value parsing (core/mca/var_value.c px_mca_var_parse) through
 * px_mca_var_set_source and through registration with a PX_MCA_* value.
 * Input: byte 0 picks the variable type (bits 0-2), the source (bits 3-4:
 * API, environment, command line, a PX_MCA_ value read at registration) and
 * whether an accepted value must read back the same (bit 5); the rest is the
 * value text (cut at the first NUL, as in an environment variable).
 * Properties: the value text is not written to (it is passed in read-only
 * memory); a value is either refused or accepted; an accepted bool or
 * enum is one of the accepted words (or a number, for an enum) with blanks
 * around it, nothing longer; an accepted value prints as text that parses
 * again to the same text.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/fuzz/fuzz.h"

static const px_mca_var_enum_value_t modes[] = {
    {0, "off"}, {3, "fast"}, {-2, "slow"}, {7, "FAST2"}, {0, NULL}};
static const px_mca_var_type_t types[] = {
    PX_MCA_VAR_TYPE_INT,    PX_MCA_VAR_TYPE_UNSIGNED, PX_MCA_VAR_TYPE_SIZE, PX_MCA_VAR_TYPE_BOOL,
    PX_MCA_VAR_TYPE_DOUBLE, PX_MCA_VAR_TYPE_STRING,   PX_MCA_VAR_TYPE_ENUM, PX_MCA_VAR_TYPE_SIZE,
};
static const char *const names[] = {"i", "u", "z", "b", "d", "s", "e", "z"};

static union {
    int i;
    unsigned u;
    size_t z;
    bool b;
    double d;
    const char *s;
} store;

PX_FUZZ_NO_INIT

/* `text` without leading and trailing blanks equals `word` (any case). */
static bool is_word(const char *text, const char *word)
{
    while (*text == ' ' || (*text >= '\t' && *text <= '\r'))
        text++;
    size_t n = strlen(text);
    while (n && (text[n - 1] == ' ' || (text[n - 1] >= '\t' && text[n - 1] <= '\r')))
        n--;
    return n == strlen(word) && strncasecmp(text, word, n) == 0;
}

/* An accepted bool or enum value is one of the accepted words (or, for an
 * enum, a number): nothing else may be accepted. */
static bool acceptable(int k, const char *text)
{
    static const char *const bools[] = {"1", "true",  "yes", "on",  "y", "t",
                                        "0", "false", "no",  "off", "n", "f"};
    if (types[k] == PX_MCA_VAR_TYPE_BOOL) {
        for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
            if (is_word(text, bools[i]))
                return true;
        return false;
    }
    if (types[k] == PX_MCA_VAR_TYPE_ENUM) {
        for (const px_mca_var_enum_value_t *e = modes; e->name; e++)
            if (is_word(text, e->name))
                return true;
        char *end;
        (void)strtol(text, &end, 0);
        while (*end == ' ' || (*end >= '\t' && *end <= '\r'))
            end++;
        return end != text && *end == '\0';
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int k = data[0] & 7, how = (data[0] >> 3) & 3;
    bool round_trip = data[0] & 0x20;
    char *text = px_fuzz_text(data + 1, size - 1);
    if (!text)
        return 0;
    char full[32];
    snprintf(full, sizeof full, "fuzz_v_%s", names[k]);
    unsetenv("PX_MCA_fuzz_v_i"), unsetenv("PX_MCA_fuzz_v_u"), unsetenv("PX_MCA_fuzz_v_z");
    unsetenv("PX_MCA_fuzz_v_b"), unsetenv("PX_MCA_fuzz_v_d"), unsetenv("PX_MCA_fuzz_v_s");
    unsetenv("PX_MCA_fuzz_v_e");
    if (how == 3) {
        char env[48];
        snprintf(env, sizeof env, "PX_MCA_%s", full);
        setenv(env, text, 1);
    }
    px_mca_var_init();
    memset(&store, 0, sizeof store);
    if (types[k] == PX_MCA_VAR_TYPE_STRING)
        store.s = "default";
    else if (types[k] == PX_MCA_VAR_TYPE_ENUM)
        store.i = 3;
    int idx = px_mca_var_register("fuzz", "v", names[k], "fuzzed", types[k],
                                  types[k] == PX_MCA_VAR_TYPE_ENUM ? modes : NULL, 1,
                                  PX_MCA_VAR_SCOPE_LOCAL, 0, &store);
    int rc = PX_SUCCESS;
    if (how == 3) {
        rc = idx >= 0 ? PX_SUCCESS : idx;
        idx = px_mca_var_find(full);
    } else {
        static const px_mca_var_source_t src[] = {PX_MCA_VAR_SOURCE_API, PX_MCA_VAR_SOURCE_ENV,
                                                  PX_MCA_VAR_SOURCE_COMMAND_LINE};
        /* The value is const: pass it in read-only memory, so that writing
         * into it faults. */
        size_t page = (size_t)sysconf(_SC_PAGESIZE), n = strlen(text) + 1;
        size_t span = (n + page - 1) / page * page;
        char *ro = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ro == MAP_FAILED)
            abort();
        memcpy(ro, text, n);
        mprotect(ro, span, PROT_READ);
        rc = px_mca_var_set_source(full, ro, src[how], how == 1 ? "PX_MCA_fuzz" : NULL);
        munmap(ro, span);
    }
    if (rc != PX_SUCCESS && rc != PX_ERR_BAD_PARAM)
        abort(); /* neither accepted nor refused */
    if (rc == PX_SUCCESS && !acceptable(k, text)) {
        fprintf(stderr, "\"%s\" accepted for a %s\n", text, px_mca_var_type_name(types[k]));
        abort();
    }
    if (types[k] == PX_MCA_VAR_TYPE_ENUM && store.i != 0 && store.i != 3 && store.i != -2 &&
        store.i != 7)
        abort();
    if (types[k] == PX_MCA_VAR_TYPE_BOOL) {
        unsigned char raw;
        memcpy(&raw, &store.b, 1);
        if (raw > 1)
            abort();
    }
    if (rc == PX_SUCCESS && round_trip && idx >= 0) {
        char *once = px_mca_var_value_string(idx);
        if (!once || px_mca_var_set(full, once) != PX_SUCCESS)
            abort(); /* printed a value it does not accept */
        char *twice = px_mca_var_value_string(idx);
        if (!twice || strcmp(once, twice) != 0) {
            fprintf(stderr, "\"%s\" read back as \"%s\" then \"%s\"\n", text, once,
                    twice ? twice : "(null)");
            abort();
        }
        free(once);
        free(twice);
    }
    char *def = px_mca_var_default_string(idx);
    free(def);
    px_mca_var_finalize();
    free(text);
    return 0;
}
