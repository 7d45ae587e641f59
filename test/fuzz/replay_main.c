/*
 * replay_main.c: runs a harness without libFuzzer: every file named on the
 * command line (or every file in a named folder) is passed once to
 * LLVMFuzzerTestOneInput. Prints one line per input; a crash, a sanitizer
 * report or a harness abort() is the failure. Used by t_fuzz_corpus.sh.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "test/fuzz/fuzz.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf)
        return 1;
    /* An exact-size copy, so that reading past the input is caught by ASan. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, n);
    free(buf);
    printf("replay: %s (%zu bytes)\n", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            bad++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]);
            count++;
            continue;
        }
        struct dirent **ents;
        int n = scandir(argv[i], &ents, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            if (ents[k]->d_name[0] != '.') {
                char *p = NULL;
                if (asprintf(&p, "%s/%s", argv[i], ents[k]->d_name) >= 0) {
                    bad += run_file(p);
                    count++;
                }
                free(p);
            }
            free(ents[k]);
        }
        free(n >= 0 ? ents : NULL);
    }
    printf("replay: %d input(s), %d unreadable\n", count, bad);
    return bad ? 1 : 0;
}
