/*
 * px_coll_check.h: what px_coll_check's two halves share: the launcher
 * (px_coll_check.c: options, one pxrun job per operation, the reports merged
 * into TAP) and the worker (px_coll_check_worker.c: one rank of such a job,
 * checking every group, type, reduction, count and root).
 */
#ifndef PX_COLL_CHECK_H
#define PX_COLL_CHECK_H

#include <stdbool.h>
#include "runtime/plexus_coll.h"

#define CC_REPORT  "PXCC "            /* a worker's report line starts so */
#define CC_REASON  600                /* the longest reason a report line carries */
#define CC_NCHECKS (1 + PX_COLL_NOPS) /* the query, then one per operation */

enum { CC_OK = 0, CC_FAIL = 1, CC_SKIP = 2 };

/* One rank of a job (`px_coll_check --worker OP ...`): checks operation `op`
 * of component `comp` and prints one report line per check; the process's
 * exit status. */
int cc_worker(const char *comp, int op, bool quick, int argc, char **argv);

#endif
