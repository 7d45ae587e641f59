/*
 * plexus.h: what an application includes (`#include <plexus.h>`, with the flags
 * from `pkg-config --cflags --libs plexus`). The API itself is in
 * runtime/plexus.h.
 */
#ifndef PLEXUS_TOP_H
#define PLEXUS_TOP_H
#include "runtime/plexus.h"
#endif
