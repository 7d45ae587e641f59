/*
 * plexus_name.h: named segments and contacts in a registry
 * (runtime/plexus_name.h, docs/registry.md), for an application that
 * includes it by itself: `#include <plexus/plexus_name.h>` or
 * `#include <plexus_name.h>` with the flags of `pkg-config --cflags plexus`
 * or pxcc. <plexus.h> includes it too.
 */
#ifndef PLEXUS_NAME_TOP_H
#define PLEXUS_NAME_TOP_H
#include "runtime/plexus_name.h"
#endif
