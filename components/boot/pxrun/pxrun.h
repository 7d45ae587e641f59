/*
 * pxrun.h: boot/pxrun serves a process started by the pxrun launcher
 * (tools/pxrun). It is selected (priority 80 by default) when the environment
 * carries PX_PXRUN_URI, and speaks the protocol of pxrun_proto.h over the
 * launcher's Unix socket: rank, size, job id, host and locality come from the
 * launcher, the modex is kept there.
 */
#ifndef PX_BOOT_PXRUN_H
#define PX_BOOT_PXRUN_H

#include "frameworks/boot/boot.h"

extern const px_boot_component_t px_boot_pxrun_component;
extern px_boot_module_t px_boot_pxrun_module;
extern int px_boot_pxrun_priority;
extern int px_boot_pxrun_timeout; /* seconds a reply from pxrun may take */

#endif
