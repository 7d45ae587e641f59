/*
 * px_coll_check: runs a coll component, built in or a plugin, through every
 * operation it provides and checks the results (docs/px_coll_check.md).
 *
 *   px_coll_check [-n RANKS] [--timeout S] [--quick] [--mca NAME VALUE]... [--pxrun PATH]
 *                 COMPONENT
 *
 * It launches pxrun itself, once per operation, with a rules file that names
 * the component for that operation only (the other operations, which the
 * check itself needs, stay with the built-in rules). Each rank runs this
 * program as `px_coll_check --worker OP ...`: it splits the world into groups
 * of every size from 1 to RANKS and runs the operation there over every
 * datatype and reduction, several counts and roots, blocking and not, in
 * place and not, comparing each result with a serial computation. Each rank
 * prints one report line per check; this process merges them into TAP.
 *
 * This file is the launcher; the worker is px_coll_check_worker.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core/mca/mca_tools.h"
#include "core/mca/var.h"
#include "core/util/argv.h"
#include "core/util/error.h"
#include "tools/common/tool_launch.h"
#include "tools/common/tool_report.h"
#include "frameworks/coll/coll.h"
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#include "tools/px_coll_check/px_coll_check.h"

static int n_ranks = 4, quick_mode = 0;

static const char *check_name(int i, char *buf, size_t len, const char *comp)
{
    int op = i - 1;
    if (0 == i)
        snprintf(buf, len, "query: coll/%s gives a module for groups of 1..%d ranks", comp,
                 n_ranks);
    else if (PX_COLL_BARRIER == op)
        snprintf(buf, len,
                 "barrier: no rank leaves before every rank of its group entered, groups of "
                 "1..%d, blocking and non-blocking",
                 n_ranks);
    else
        snprintf(buf, len,
                 "%s: results for every datatype%s, counts 0..%s%s, groups of 1..%d, blocking and "
                 "non-blocking%s",
                 px_coll_op_name(op),
                 (op == PX_COLL_REDUCE || op == PX_COLL_ALLREDUCE || op == PX_COLL_REDUCE_SCATTER)
                     ? " and reduction"
                     : "",
                 quick_mode ? "7" : "20000",
                 (op == PX_COLL_BCAST || op == PX_COLL_SCATTER || op == PX_COLL_GATHER ||
                  op == PX_COLL_REDUCE)
                     ? ", first, middle and last root"
                     : "",
                 n_ranks, op == PX_COLL_BCAST ? "" : ", in place and not");
    return buf;
}

static void usage_exit(const char *fmt, const char *arg)
{
    fprintf(stderr, "px_coll_check: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: px_coll_check [-n RANKS (1..8, default 4)] [--timeout SECONDS] "
                    "[--quick] [--mca NAME VALUE]... [--pxrun PATH] COMPONENT\n");
    exit(2);
}

/* ======================= the launcher ======================= */

static int any_fail = 0;

static void emit(int i, int result, const char *reason, void *comp)
{
    char name[300];
    check_name(i, name, sizeof name, comp);
    const char *mark = result == CC_FAIL ? "not ok" : "ok";
    if (result == CC_FAIL)
        any_fail = 1;
    if (result == CC_SKIP)
        printf("%s %d - %s # SKIP %s\n", mark, i + 1, name, reason);
    else if (reason && *reason)
        printf("%s %d - %s # %s\n", mark, i + 1, name, reason);
    else
        printf("%s %d - %s\n", mark, i + 1, name);
    fflush(stdout);
}

/* One job: operation `op` with the component named for it in `rules`. */
static void run_job(int op, const char *pxrun, const char *self, const char *comp, int n,
                    double timeout, bool quick, char **mca, const char *rules)
{
    int first = op == PX_COLL_BARRIER ? 0 : op + 1, last = op + 1;
    px_tool_slot_t slots[2];
    memset(slots, 0, sizeof slots);
    char **av = NULL;
    int ac = 0;
    char nbuf[16], jt[32], wt[32], obuf[16];
    snprintf(nbuf, sizeof nbuf, "%d", n);
    snprintf(jt, sizeof jt, "%.0f", 10 * timeout + 60);
    snprintf(wt, sizeof wt, "%g", timeout);
    snprintf(obuf, sizeof obuf, "%d", op);
    const char *fixed[] = {pxrun,
                           "-n",
                           nbuf,
                           "--timeout",
                           jt,
                           "--mca",
                           "coll_base_rules_file",
                           rules,
                           "--mca",
                           "runtime_wait_timeout",
                           wt};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        px_argv_append(&ac, &av, fixed[i]);
    for (int i = 0; mca && mca[i] && mca[i + 1]; i += 2) {
        px_argv_append(&ac, &av, "--mca");
        px_argv_append(&ac, &av, mca[i]);
        px_argv_append(&ac, &av, mca[i + 1]);
    }
    px_argv_append(&ac, &av, self);
    px_argv_append(&ac, &av, "--worker");
    px_argv_append(&ac, &av, obuf);
    if (quick)
        px_argv_append(&ac, &av, "--quick");
    px_argv_append(&ac, &av, comp);
    pid_t pid;
    FILE *in = px_tool_spawn("px_coll_check", av, NULL, NULL, &pid);
    px_argv_free(av);
    px_tool_merge_t m = {.prefix = CC_REPORT,
                         .first = first,
                         .last = last,
                         .reporters = n,
                         .skip_needs_all = true,
                         .slots = slots,
                         .emit = emit,
                         .ctx = (void *)comp};
    px_tool_merge_read(&m, in);
    const char *fatal_why = m.fatal_why;
    int status = 0;
    if (in)
        waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    for (int i = first; i <= last; i++) {
        px_tool_slot_t *t = &slots[i - first];
        if (t->done) {
            continue;
        }
        char why[3 * PX_TOOL_REASON];
        snprintf(why, sizeof why,
                 "%s%s%d of %d rank(s) reported before the job ended (pxrun exit status %d%s)%s%s",
                 t->reason, t->reason[0] ? "; " : "", t->reports, n, code,
                 code == 124 || code == 137 ? ": a hang ended by pxrun --timeout?" : "",
                 fatal_why[0] ? ": " : "", fatal_why);
        t->done = true;
        emit(i, CC_FAIL, why, (void *)comp);
    }
}

/* pxrun beside this program (installed), else the configured bindir, else PATH. */

int main(int argc, char **argv)
{
    int op = -1;
    px_tool_opts_t o = {.n = 4, .timeout = 20};
    bool quick = false;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (px_tool_common_option(argc, argv, &i, &o, usage_exit)) {
        } else if (!strcmp(a, "--quick")) {
            quick = true;
        } else if (!strcmp(a, "--worker")) {
            if (++i >= argc)
                usage_exit("%s needs an operation", a);
            op = atoi(argv[i]);
            if (op < 0 || op >= PX_COLL_NOPS)
                usage_exit("--worker '%s': not an operation number", argv[i]);
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("px_coll_check [-n RANKS] [--timeout S] [--quick] [--mca NAME VALUE]... "
                   "[--pxrun PATH] COMPONENT\n  runs every operation of the coll component "
                   "under pxrun, checks the results, prints TAP\n  (docs/px_coll_check.md); "
                   "exit status 1 on any not ok\n");
            return 0;
        } else if (a[0] == '-') {
            usage_exit("unknown option '%s'", a);
        } else if (name) {
            usage_exit("one component at a time ('%s' is extra)", a);
        } else
            name = a;
    }
    int n = o.n;
    double timeout = o.timeout;
    const char *pxrun = o.pxrun;
    char **mca = o.mca;
    if (!name)
        usage_exit("%s", "name the coll component to check");
    if (op >= 0)
        return cc_worker(name, op, quick, 1, argv);
    n_ranks = n;
    quick_mode = quick;
    px_tool_check_known("px_coll_check", "coll", name, mca);
    char pbuf[PATH_MAX], self[PATH_MAX];
    if (!pxrun)
        pxrun = px_tool_find_pxrun(pbuf, sizeof pbuf);
    if (strchr(pxrun, '/') && access(pxrun, X_OK) != 0) {
        fprintf(stderr,
                "px_coll_check: error: cannot run the launcher %s: %s (--pxrun PATH names it)\n",
                pxrun, strerror(errno));
        return 2;
    }
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        perror("px_coll_check: /proc/self/exe");
        return 1;
    }
    self[sl] = '\0';
    const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/px_coll_check.XXXXXX", tmpdir);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "px_coll_check: cannot make a folder for the rules file in %s: %s\n",
                tmpdir, strerror(errno));
        return 1;
    }
    printf("# px_coll_check %s: %d rank(s), groups of 1..%d, timeout %g s per wait%s, pxrun %s\n",
           name, n, n, timeout, quick ? ", quick" : "", pxrun);
    printf("1..%d\n", CC_NCHECKS);
    fflush(stdout);
    for (int o = 0; o < PX_COLL_NOPS; o++) {
        char rules[PATH_MAX + 32];
        snprintf(rules, sizeof rules, "%s/rules.%s", dir, px_coll_op_name(o));
        FILE *f = fopen(rules, "w");
        if (!f || fprintf(f, "# px_coll_check: every %s through %s\n%s * * %s\n",
                          px_coll_op_name(o), name, px_coll_op_name(o), name) < 0) {
            fprintf(stderr, "px_coll_check: cannot write %s: %s\n", rules, strerror(errno));
            return 1;
        }
        fclose(f);
        run_job(o, pxrun, self, name, n, timeout, quick, mca, rules);
        unlink(rules);
    }
    rmdir(dir);
    px_argv_free(mca);
    return any_fail ? 1 : 0;
}
