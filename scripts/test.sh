#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build Plexus with warnings as errors, and run
# the whole test suite. Ends with a line "N passed, N failed".
# Usage: scripts/test.sh [BUILD_DIR]    (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
bash "$src/scripts/deps.sh" >/dev/null
CFLAGS=${CFLAGS:-"-O2 -g -Werror"} bash "$src/scripts/build.sh" "$build" >/dev/null
exec bash "$src/test/run-tests.sh" "$build"
