/*
 * plexus.h: what an application includes (`#include <plexus.h>`, with the flags
 * from `pkg-config --cflags --libs plexus`, or the pxcc wrapper), and all it
 * includes. The application tier of the installed headers (docs/abi.md, "Two
 * tiers of headers") is this file and the five it includes: plexus_types.h
 * (return codes, opaque handles, datatypes and reductions), runtime/plexus.h
 * (messaging), runtime/plexus_coll.h (groups and collectives),
 * runtime/plexus_xfer.h (the one-sided transfer engine) and
 * runtime/plexus_name.h (named segments in a registry). They include nothing
 * else of Plexus; the other installed headers (core/, frameworks/) are for
 * component authors (docs/writing-a-component.md). test/build/t_app_headers.sh
 * checks both.
 */
#ifndef PLEXUS_TOP_H
#define PLEXUS_TOP_H
#include "plexus_types.h"
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#include "runtime/plexus_xfer.h"
#include "runtime/plexus_name.h"
#endif
