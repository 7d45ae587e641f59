/*
 * coll_rt.h: what px_init and px_finalize (runtime.c) call of groups and
 * collectives (runtime/coll/): open the coll framework (before the
 * unknown-variable check), make the world group (once messaging works), and
 * tear it all down. Non-blocking collectives progress through the process
 * table's progress hooks and finish through their requests' hooks
 * (runtime/pml/pml_request.h): messaging does not call them. Not installed.
 */
#ifndef PX_RUNTIME_COLL_COLL_RT_H
#define PX_RUNTIME_COLL_COLL_RT_H

int px_rt_coll_open(void);
int px_rt_coll_world(void);
void px_rt_coll_finalize(void);

#endif
