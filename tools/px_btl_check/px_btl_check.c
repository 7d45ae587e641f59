/*
 * px_btl_check: runs a BTL component, built in or a plugin, through the BTL
 * contract and prints TAP (docs/px_btl_check.md).
 *
 *   px_btl_check [-n RANKS] [--timeout S] [--mca NAME VALUE]... [--pxrun PATH] COMPONENT
 *
 * It launches pxrun itself, three times: the module job (the module's own
 * operations, beside btl/self and btl/shm which carry the runtime's barriers),
 * the messaging job (only the component and self allowed) and the death job
 * (2 ranks; rank 1 SIGKILLs itself). Each rank of a job runs this program as
 * `px_btl_check --worker JOB ...` and prints one report line per check; this
 * process merges the ranks' reports of each check into one TAP line.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/mca/mca_tools.h"
#include "core/mca/var.h"
#include "core/util/argv.h"
#include "core/util/error.h"
#include "tools/common/tool_launch.h"
#include "tools/common/tool_report.h"
#include "frameworks/btl/base/base_runtime.h"
#include "runtime/plexus.h"
#include "runtime/runtime.h"
#include "tools/px_btl_check/btl_check.h"

int bc_run_check(bc_ctx_t *c, int i);

static void usage_exit(const char *fmt, const char *arg)
{
    fprintf(stderr, "px_btl_check: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: px_btl_check [-n RANKS (1..8, default 2; 1 for self)] "
                    "[--timeout SECONDS] [--mca NAME VALUE]... [--pxrun PATH] COMPONENT\n");
    exit(2);
}

/* ---- the worker: one rank of a job ---- */

static void report(int check, int rank, int result, const char *reason)
{
    static const char *word[] = {"ok", "fail", "skip"};
    char line[BC_REASON + 64];
    snprintf(line, sizeof line, "%s", reason);
    for (char *p = line; *p; p++)
        if (*p == '\n')
            *p = ' ';
    printf(BC_REPORT "%d %d %s %s\n", check, rank, word[result], line);
    fflush(stdout);
}

static void fatal(int rank, const char *fmt, const char *arg)
{
    char r[BC_REASON];
    snprintf(r, sizeof r, fmt, arg);
    printf(BC_REPORT "fatal %d %s\n", rank, r);
    fflush(stdout);
}

int bc_worker(int job, const char *name, double timeout, int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (job == BC_JOB_DEATH)
        signal(SIGTERM, SIG_IGN); /* pxrun ends the job when rank 1 dies: outlive that */
    int rank = getenv("PX_RANK") ? atoi(getenv("PX_RANK")) : 0;
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        printf(BC_REPORT "initfail %d px_init failed: %s (its message is on stderr above)\n", rank,
               px_strerror(rc));
        return 1;
    }
    if (job == BC_JOB_DEATH)
        signal(SIGTERM, SIG_IGN); /* again: a transport's library may have set a handler */
    bc_ctx_t c = {.name = name, .rank = px_rank(), .size = px_size(), .timeout = timeout};
    /* The selection is this component beside self (and shm): its module
     * names it, or is the one that names no component (btl_component is the
     * module's to fill; the base does not). */
    for (int i = 0; i < px_btl_base_num_modules && !c.m; i++) {
        const px_btl_component_t *bc = px_btl_base_modules[i]->btl_component;
        if (bc && !strcmp(bc->base.component_name, name))
            c.m = px_btl_base_modules[i];
    }
    for (int i = 0; i < px_btl_base_num_modules && !c.m; i++)
        if (NULL == px_btl_base_modules[i]->btl_component)
            c.m = px_btl_base_modules[i];
    if (NULL == c.m) {
        for (int i = 0; i < px_btl_base_declined_count(); i++)
            if (!strcmp(px_btl_base_declined_name(i), name)) {
                fatal(c.rank,
                      "the component %s declined: its btl_init offered no module (run with "
                      "--mca btl_base_verbose 10 to see its reason)",
                      name);
                _exit(1);
            }
        fatal(c.rank, "the component %s offered no module", name);
        _exit(1);
    }
    c.ep = calloc((size_t)c.size, sizeof *c.ep);
    c.why_not = calloc((size_t)c.size, sizeof *c.why_not);
    const px_btl_base_table_t *t = px_rt_tool_btl_table();
    for (int m = 0; t && m < t->nmodules; m++) {
        const px_btl_base_reach_t *r = &t->reach[m];
        if (r->module != c.m)
            continue;
        for (size_t i = 0; i < t->nprocs; i++) {
            int pr = t->procs[i]->rank;
            if (px_bitmap_is_set_bit(&r->reachable, (int)i))
                c.ep[pr] = r->endpoints[i];
            else
                c.why_not[pr] = r->reasons ? r->reasons[i] : NULL;
        }
    }
    c.to = (c.rank + 1) % c.size;
    c.from = (c.rank + c.size - 1) % c.size;
    bool reached = true;
    for (int i = 0; i < bc_nchecks; i++) {
        if (bc_checks[i].job != job)
            continue;
        bool last = (i + 1 == bc_nchecks) || bc_checks[i + 1].job != job;
        if (job == BC_JOB_MODULE && last) {
            int r = bc_run_check(&c, i); /* finalize */
            report(i, c.rank, r, c.reason);
            break;
        }
        int r = (reached || job != BC_JOB_MODULE)
                    ? bc_run_check(&c, i)
                    : bc_fail(&c, "not run: the module does not reach every rank (above)");
        if (i == 0 && r != BC_OK)
            reached = false;
        if (job == BC_JOB_DEATH && c.rank != 0)
            continue;
        report(i, c.rank, r, c.reason);
        if (job != BC_JOB_DEATH && bc_barrier(&c) != BC_OK) {
            fatal(c.rank, "%s", c.reason);
            _exit(1);
        }
    }
    if (job == BC_JOB_DEATH)
        _exit(0); /* rank 1 is gone: px_finalize would wait for it */
    if (job == BC_JOB_PROTO) {
        free(c.ep);
        free(c.why_not);
        rc = px_finalize();
        return rc == PX_SUCCESS ? 0 : 1;
    }
    free(c.ep);
    free(c.why_not);
    return 0;
}

/* ---- the launcher ---- */

static int next_out = 1, any_fail = 0;

static void emit(int i, int result, const char *reason, void *ctx)
{
    (void)ctx;
    const char *mark = result == BC_FAIL ? "not ok" : "ok";
    if (result == BC_FAIL)
        any_fail = 1;
    if (result == BC_SKIP)
        printf("%s %d - %s # SKIP %s\n", mark, next_out++, bc_checks[i].name, reason);
    else if (reason && *reason)
        printf("%s %d - %s # %s\n", mark, next_out++, bc_checks[i].name, reason);
    else
        printf("%s %d - %s\n", mark, next_out++, bc_checks[i].name);
    fflush(stdout);
}

/* Run one job under pxrun; merge its reports. `skip_why`: do not run, fail
 * its checks with this reason. */
static bool run_job(int job, const char *pxrun, const char *self, const char *name, int n,
                    double timeout, char **mca, const char *skip_why, bool *module_reached,
                    const char *sel, bool may_retry)
{
    px_tool_slot_t slots[64];
    memset(slots, 0, sizeof slots);
    int first = -1, last = -1, reporters = job == BC_JOB_DEATH ? 1 : n;
    for (int i = 0; i < bc_nchecks; i++)
        if (bc_checks[i].job == job) {
            first = first < 0 ? i : first;
            last = i;
        }
    px_tool_merge_t m = {.prefix = BC_REPORT,
                         .first = first,
                         .last = last,
                         .reporters = reporters,
                         .skip_needs_all = false,
                         .slots = slots,
                         .emit = emit};
    const char *fatal_why = m.fatal_why;
    int status = 0;
    if (!skip_why) {
        char **av = NULL;
        int ac = 0;
        char nbuf[16], tbuf[32], jbuf[8];
        snprintf(nbuf, sizeof nbuf, "%d", n);
        snprintf(tbuf, sizeof tbuf, "%.0f", 3 * timeout + 60);
        snprintf(jbuf, sizeof jbuf, "%d", job);
        const char *fixed[] = {pxrun, "-n", nbuf, "--timeout", tbuf, "--mca", "btl", sel};
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
            px_argv_append(&ac, &av, fixed[i]);
        for (int i = 0; mca && mca[i] && mca[i + 1]; i += 2) {
            px_argv_append(&ac, &av, "--mca");
            px_argv_append(&ac, &av, mca[i]);
            px_argv_append(&ac, &av, mca[i + 1]);
        }
        char tmo[32];
        snprintf(tmo, sizeof tmo, "%g", timeout);
        const char *tail[] = {self, "--worker", jbuf, "--timeout", tmo, name};
        for (size_t i = 0; i < sizeof tail / sizeof *tail; i++)
            px_argv_append(&ac, &av, tail[i]);
        char grace[32];
        snprintf(grace, sizeof grace, "%.0f", 2 * timeout + 30);
        pid_t pid;
        FILE *in = px_tool_spawn("px_btl_check", av, job == BC_JOB_DEATH ? "PX_PXRUN_GRACE" : NULL,
                                 grace, &pid);
        px_argv_free(av);
        if (job == BC_JOB_DEATH)
            printf("# the next job kills rank 1 on purpose; pxrun reports it on stderr\n");
        px_tool_merge_read(&m, in);
        if (in)
            waitpid(pid, &status, 0);
    }
    if (m.initfail && may_retry && !slots[0].done)
        return true;
    for (int i = first; i <= last; i++) {
        px_tool_slot_t *t = &slots[i - first];
        if (t->done)
            continue;
        char why[3 * PX_TOOL_REASON];
        if (!skip_why && fatal_why[0] && t->reports == 0)
            snprintf(why, sizeof why, "not run: %s", fatal_why);
        else if (skip_why)
            snprintf(why, sizeof why, "not run: %s", skip_why);
        else
            snprintf(why, sizeof why,
                     "%s%s%d of %d rank(s) reported before the job ended "
                     "(pxrun exit status %d)%s%s",
                     t->reason, t->reason[0] ? "; " : "", t->reports, reporters,
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                     fatal_why[0] ? ": " : "", fatal_why);
        t->done = true;
        emit(i, BC_FAIL, why, NULL);
    }
    if (module_reached && job == BC_JOB_MODULE)
        *module_reached = slots[0].done && slots[0].failed == 0 && slots[0].reports == reporters;
    return false;
}

/* pxrun beside this program (installed), else the configured bindir, else PATH. */

int main(int argc, char **argv)
{
    int job = -1;
    px_tool_opts_t o = {.n = -1, .timeout = 20};
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (px_tool_common_option(argc, argv, &i, &o, usage_exit)) {
        } else if (!strcmp(a, "--worker")) {
            if (++i >= argc)
                usage_exit("%s needs a job", a);
            job = atoi(argv[i]);
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("px_btl_check [-n RANKS] [--timeout S] [--mca NAME VALUE]... [--pxrun PATH] "
                   "COMPONENT\n  runs the BTL component through the BTL contract under pxrun "
                   "and prints TAP\n  (docs/px_btl_check.md); exit status 1 on any not ok\n");
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
        usage_exit("%s", "name the BTL component to check");
    if (job >= 0)
        return bc_worker(job, name, timeout, 1, argv);
    if (n < 0)
        n = strcmp(name, "self") ? 2 : 1;
    px_tool_check_known("px_btl_check", "btl", name, mca);
    char pbuf[PATH_MAX], self[PATH_MAX];
    if (!pxrun)
        pxrun = px_tool_find_pxrun(pbuf, sizeof pbuf);
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        perror("px_btl_check: /proc/self/exe");
        return 1;
    }
    self[sl] = '\0';
    int total = 0;
    for (int i = 0; i < bc_nchecks; i++)
        total += 1;
    printf("# px_btl_check %s: %d rank(s), timeout %g s per wait, pxrun %s\n", name, n, timeout,
           pxrun);
    printf("1..%d\n", total);
    fflush(stdout);
    /* Only the component and self; when px_init fails (a rank it does not
     * reach), again with btl/shm beside it to carry the job, so that check 1
     * can say which ranks the module does not reach and why. */
    char sel[256];
    snprintf(sel, sizeof sel, strcmp(name, "self") ? "self,%s" : "%s", name);
    bool reached = false;
    if (run_job(BC_JOB_MODULE, pxrun, self, name, n, timeout, mca, NULL, &reached, sel,
                strcmp(name, "shm") && strcmp(name, "self") && n > 1)) {
        printf("# px_init failed with btl=%s; running the module checks again with btl/shm "
               "beside it to see which ranks %s does not reach\n",
               sel, name);
        snprintf(sel, sizeof sel, "self,shm,%s", name);
        run_job(BC_JOB_MODULE, pxrun, self, name, n, timeout, mca, NULL, &reached, sel, false);
        snprintf(sel, sizeof sel, "self,%s", name);
    }
    const char *why = reached ? NULL : "the module does not reach every rank (check 1)";
    run_job(BC_JOB_PROTO, pxrun, self, name, n, timeout, mca, why, NULL, sel, false);
    if (reached && n < 2) {
        for (int i = 0; i < bc_nchecks; i++)
            if (bc_checks[i].job == BC_JOB_DEATH)
                emit(i, BC_SKIP, "one rank: no peer to lose", NULL);
    } else
        run_job(BC_JOB_DEATH, pxrun, self, name, 2, timeout, mca, why, NULL, sel, false);
    px_argv_free(mca);
    return any_fail ? 1 : 0;
}
