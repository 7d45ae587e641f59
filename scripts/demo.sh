#!/usr/bin/env bash
# Set up, build, and run the main job: two processes on this host measuring
# latency and bandwidth through Plexus (pxrun -n 2 px_perf).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$src/build}
bash "$src/scripts/deps.sh" >/dev/null
bash "$src/scripts/build.sh" "$build" >/dev/null
exec "$build/tools/pxrun/pxrun" -n 2 "$build/tools/px_perf/px_perf" "$@"
