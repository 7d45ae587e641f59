/*
 * tool_report.c: starting a conformance tool's job and merging its ranks'
 * report lines (tool_report.h).
 */
#include "tools/common/tool_report.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

FILE *px_tool_spawn(const char *tool, char **av, const char *env_name, const char *env_value,
                    pid_t *pid)
{
    int fd[2];
    if (pipe(fd) != 0) {
        fprintf(stderr, "%s: cannot make a pipe for the job's output: %s\n", tool, strerror(errno));
        exit(1);
    }
    fflush(stdout);
    *pid = fork();
    if (*pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        close(fd[1]);
        if (env_name)
            setenv(env_name, env_value, 1);
        execvp(av[0], av);
        fprintf(stderr, "%s: cannot run %s: %s (--pxrun PATH names it)\n", tool, av[0],
                strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    if (*pid < 0) {
        fprintf(stderr, "%s: cannot start %s: %s\n", tool, av[0], strerror(errno));
        close(fd[0]);
        return NULL;
    }
    return fdopen(fd[0], "r");
}

void px_tool_add_reason(px_tool_slot_t *s, int rank, const char *why)
{
    if (*why && strstr(s->reason, why))
        return; /* another rank said the same */
    size_t l = strlen(s->reason);
    snprintf(s->reason + l, sizeof s->reason - l, "%srank %d: %s", l ? "; " : "", rank, why);
}

static void add_fatal(px_tool_merge_t *m, const char *p)
{
    int rk, used = 0;
    if (sscanf(p, "%d %n", &rk, &used) < 1)
        return;
    char one[64];
    snprintf(one, sizeof one, "rank %d: ", rk);
    if (strstr(m->fatal_why, one))
        return; /* this rank's first word on it is kept */
    size_t l = strlen(m->fatal_why);
    snprintf(m->fatal_why + l, sizeof m->fatal_why - l, "%s%s%s", l ? "; " : "", one, p + used);
}

static void merge_line(px_tool_merge_t *m, char *line)
{
    size_t plen = strlen(m->prefix);
    if (strncmp(line, m->prefix, plen)) {
        printf("# %s\n", line);
        return;
    }
    char *p = line + plen, word[16];
    int chk, rk, used = 0;
    if (!strncmp(p, "initfail ", 9)) {
        m->initfail = true;
        add_fatal(m, p + 9);
        return;
    }
    if (!strncmp(p, "fatal ", 6)) {
        add_fatal(m, p + 6);
        return;
    }
    if (sscanf(p, "%d %d %15s %n", &chk, &rk, word, &used) < 3 || chk < m->first || chk > m->last)
        return;
    px_tool_slot_t *s = &m->slots[chk - m->first];
    s->reports++;
    const char *why = p + used;
    if (!strcmp(word, "fail")) {
        s->failed++;
        px_tool_add_reason(s, rk, why);
    } else if (!strcmp(word, "skip")) {
        s->skipped++;
        if (!s->reason[0])
            snprintf(s->reason, sizeof s->reason, "%s", why);
    } else if (rk == 0 && *why && !s->failed)
        snprintf(s->reason, sizeof s->reason, "%s", why);
    /* Print each check once every rank reported it, in order. */
    for (int i = m->first; i <= m->last; i++) {
        px_tool_slot_t *t = &m->slots[i - m->first];
        if (t->done)
            continue;
        if (t->reports < m->reporters)
            break;
        t->done = true;
        bool skipped = m->skip_needs_all ? t->skipped == m->reporters : t->skipped > 0;
        m->emit(i,
                t->failed ? PX_TOOL_FAIL
                : skipped ? PX_TOOL_SKIP
                          : PX_TOOL_OK,
                t->reason, m->ctx);
    }
}

void px_tool_merge_read(px_tool_merge_t *m, FILE *in)
{
    if (!in)
        return;
    char line[3 * PX_TOOL_REASON];
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        merge_line(m, line);
    }
    fclose(in);
}
