/*
 * plexus.h: what an application includes (`#include <plexus.h>`, with the flags
 * from `pkg-config --cflags --libs plexus`). The API itself is in
 * runtime/plexus.h (messaging) and runtime/plexus_coll.h (groups and collectives).
 */
#ifndef PLEXUS_TOP_H
#define PLEXUS_TOP_H
#include "runtime/plexus.h"
#include "runtime/plexus_coll.h"
#endif
