/*
 * tool_report.h: running one job of a conformance tool (px_btl_check,
 * px_coll_check) and merging its ranks' report lines into one TAP line per
 * check. Linked into each tool; not part of libplexus.
 *
 * A worker rank prints, on its stdout, one line per check:
 *     <prefix><check> <rank> ok|fail|skip <reason>
 * and, when it cannot go on, "<prefix>fatal <rank> <why>" or
 * "<prefix>initfail <rank> <why>" (px_init failed). Every other line of the
 * job is echoed as a TAP comment ("# ...").
 */
#ifndef PX_TOOL_REPORT_H
#define PX_TOOL_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* A check's result, as the workers report it and the tools print it. */
enum { PX_TOOL_OK = 0, PX_TOOL_FAIL = 1, PX_TOOL_SKIP = 2 };

/* The longest merged reason of one check (the ranks' reasons joined). */
#define PX_TOOL_REASON 2048

/* What the ranks reported so far for one check. */
typedef struct px_tool_slot {
    int reports, failed, skipped;
    bool done; /* its TAP line is printed */
    char reason[PX_TOOL_REASON];
} px_tool_slot_t;

/* Prints check `check`'s TAP line (the tool numbers and names it). */
typedef void (*px_tool_emit_fn)(int check, int result, const char *reason, void *ctx);

typedef struct px_tool_merge {
    const char *prefix; /* what starts a report line */
    int first, last;    /* the checks this job reports */
    int reporters;      /* the ranks that report each check */
    /* A check is skipped when every rank skipped it (true) or when any did
     * and none failed (false). */
    bool skip_needs_all;
    px_tool_slot_t *slots; /* last - first + 1, zeroed */
    px_tool_emit_fn emit;
    void *ctx;
    /* Filled while reading: the "fatal"/"initfail" reasons, each rank once. */
    char fatal_why[PX_TOOL_REASON];
    bool initfail;
} px_tool_merge_t;

/* Start `av` (argv[0] found through PATH) with its stdout on a pipe, and
 * `env_name`=`env_value` set in the child when env_name is not NULL. Returns
 * the pipe's reading end and the child in *pid; exits the tool (status 1)
 * when it cannot make the pipe. `tool` names the program in messages. */
FILE *px_tool_spawn(const char *tool, char **av, const char *env_name, const char *env_value,
                    pid_t *pid);

/* Read the job's output to its end, merging report lines; prints each check
 * once every rank reported it, in order of checks. Closes `in`. */
void px_tool_merge_read(px_tool_merge_t *m, FILE *in);

/* Add rank `rank`'s reason to a slot, unless another rank said the same. */
void px_tool_add_reason(px_tool_slot_t *s, int rank, const char *why);

#endif
