#!/usr/bin/env bash
# Configure and build Plexus out of tree.
# Usage: scripts/build.sh [BUILD_DIR] [configure args...]   (default BUILD_DIR: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
shift || true
cd "$src"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then ./autogen.sh; fi
mkdir -p "$build"
cd "$build"
if [ ! -f config.status ] || [ "$src/configure" -nt config.status ]; then
  "$src/configure" -q "$@"
fi
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" build-tests >/dev/null
echo "build.sh: built in $build"
