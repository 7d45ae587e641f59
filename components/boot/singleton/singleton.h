/*
 * singleton.h: boot/singleton serves a process started without a launcher:
 * size 1, rank 0, the modex kept in this process. Lowest priority, so any
 * launcher's component wins when present.
 */
#ifndef PX_BOOT_SINGLETON_H
#define PX_BOOT_SINGLETON_H

#include "frameworks/boot/boot.h"

extern const px_boot_component_t px_boot_singleton_component;
extern px_boot_module_t px_boot_singleton_module;
extern int px_boot_singleton_priority;

#endif
