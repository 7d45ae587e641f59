/*
 * plexus.h: what an application includes (`#include <plexus.h>`, with the flags
 * from `pkg-config --cflags --libs plexus`, or the pxcc wrapper). The API itself
 * is in runtime/plexus.h (messaging), runtime/plexus_coll.h (groups and
 * collectives) and runtime/plexus_xfer.h (the one-sided transfer engine).
 */
#ifndef PLEXUS_TOP_H
#define PLEXUS_TOP_H
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#include "runtime/plexus_xfer.h"
#endif
