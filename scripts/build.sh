#!/usr/bin/env bash
# Configure and build Plexus out of tree.
# Usage: scripts/build.sh [BUILD_DIR] [configure args...]   (default BUILD_DIR: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
shift || true
cd "$src"
# Regenerate when configure.ac, a shared macro or any framework/component
# fragment changed, or a component folder was added (autogen.sh scans them).
stale() {
  [ ! -x configure ] && return 0
  [ -n "$(find configure.ac autogen.sh config/px_macros.m4 frameworks components \
           \( -name configure.ac -o -name autogen.sh -o -name '*.m4' -o -name Makefile.inc \) \
           -newer configure -print -quit)" ]
}
if stale; then ./autogen.sh; fi
mkdir -p "$build"
cd "$build"
# Under dash when there is one (Debian's /bin/sh): configure then writes
# libtool for dash and makes SHELL=/bin/dash for make's recipes, and every
# libtool call (one per compile and link, ~450 per build) costs about half
# the CPU it does under bash (docs/measurements/ci.md, session 38).
# CONFIG_SHELL=/bin/bash (or any shell) keeps that one.
if [ -z "${CONFIG_SHELL:-}" ] && [ -x /bin/dash ]; then export CONFIG_SHELL=/bin/dash; fi
if [ ! -f config.status ] || [ "$src/configure" -nt config.status ]; then
  ${CONFIG_SHELL:-/bin/sh} "$src/configure" -q "$@"
fi
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" build-tests >/dev/null
echo "build.sh: built in $build"
