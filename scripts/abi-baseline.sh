#!/usr/bin/env bash
# Write the ABI baseline test/abi/libplexus.abi from a build's libplexus.so
# (docs/abi.md, "Updating the baseline"). Only when the ABI changed on
# purpose, together with -version-info (Makefile.am) and libplexus.map.
# Usage: scripts/abi-baseline.sh [BUILD_DIR]   (default: build)
# The build must be a normal one (not --enable-debug) compiled with -g.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
lib=$(readlink -f "$build/.libs/libplexus.so")
command -v abidw >/dev/null || { echo "abi-baseline.sh: abidw not found: apt-get install abigail-tools (scripts/deps.sh)" >&2; exit 1; }
if grep -q '^#define PX_ENABLE_DEBUG 1' "$build/core/px_config.h"; then
    echo "abi-baseline.sh: $build is a --enable-debug build; the baseline is the normal build's ABI" >&2
    exit 1
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "abi-baseline.sh: $lib has no debug information: build with CFLAGS containing -g" >&2
    exit 1
fi
out=$src/test/abi/libplexus.abi
# Only the types the installed headers define (as test/abi/t_abi_baseline.sh
# compares): what is behind an opaque handle is the library's own.
inst=$(mktemp -d)
trap 'rm -rf "$inst"' EXIT
make -C "$build" install DESTDIR="$inst" >/dev/null
hdrs=$(dirname "$(find "$inst" -path '*/include/plexus/plexus.h' | head -1)")
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir "$hdrs" --drop-private-types \
    "$lib" >"$out.tmp"
mv "$out.tmp" "$out"
echo "abi-baseline.sh: wrote $out from $lib ($(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p'))"
