/*
 * job_vars.h: px_init's check that every rank gives each job-wide variable
 * (scope PX_MCA_VAR_SCOPE_ALL) the same value (job_vars.c). Called by
 * px_init (runtime.c) only; not installed.
 */
#ifndef PX_RUNTIME_JOB_VARS_H
#define PX_RUNTIME_JOB_VARS_H

/* publish before the address exchange's commit; check after its fence,
 * before any transport attaches to a peer: PX_ERR_BAD_PARAM (on every rank)
 * when a variable differs, reported with the ranks and their values. */
int px_rt_job_vars_publish(void);
int px_rt_job_vars_check(void);

#endif
