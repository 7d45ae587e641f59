#!/usr/bin/env bash
# plot.sh: one chart of Plexus and its peers for the comparison scripts
# (compare-*.sh): one panel per column (latency, bandwidth) against message
# size, log-log, one line per CSV file, drawn by gnuplot through
# `px_perf --plot ... --series ...` (tools/px_perf/px_perf_plot.c). The title
# gains the host, its cores, the date and the load.
#
# Usage: test/bench/plot.sh OUT.svg|OUT.png "TITLE" NAME=FILE.csv [NAME=FILE.csv ...]
#   FILE.csv: a header "bytes,COLUMN,..." then rows (px_perf --csv and
#             mpi_pingpong_px --csv write them; a file without a header is read
#             as bytes,lat_us,bw_MBps). A FILE that is missing or empty (a peer
#             that was not measured) is left out with a note.
# Env: PX_BUILD   build tree whose tools/px_perf/px_perf draws (default: the
#                 source tree's build/, then px_perf on PATH)
#      PLOT_LOAD  the load to print, read when the measurement began
#                 (default: /proc/loadavg now)
#      PLOT_Y     the columns to draw, a panel each (default lat_us,bw_MBps)
# Exit 0 with the chart written; 1 (with the reason) when it cannot be drawn,
# gnuplot missing among them: callers that only add a chart to their figures
# go on (`plot.sh ... || true`).
set -u
if [ $# -lt 3 ]; then
    echo "usage: plot.sh OUT.svg|OUT.png \"TITLE\" NAME=FILE.csv [NAME=FILE.csv ...]" >&2
    exit 2
fi
out=$1 title=$2
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
pxperf=
for b in ${PX_BUILD:-} "$src/build"; do
    for p in "$b/tools/px_perf/.libs/px_perf" "$b/tools/px_perf/px_perf"; do
        [ -z "$pxperf" ] && [ -x "$p" ] && pxperf=$p
    done
done
[ -n "$pxperf" ] || pxperf=$(command -v px_perf) ||
    { echo "plot.sh: no px_perf (set PX_BUILD to a build tree)" >&2; exit 1; }
case "$pxperf" in */.libs/*) export LD_LIBRARY_PATH=${pxperf%/tools/px_perf/.libs/px_perf}/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;; esac
args=()
for s in "$@"; do
    f=${s#*=}
    if [ -s "$f" ]; then
        args+=(--series "$s")
    else
        echo "plot.sh: ${s%%=*}: no results ($f missing or empty), left out" >&2
    fi
done
[ ${#args[@]} -gt 0 ] || { echo "plot.sh: no results to draw" >&2; exit 1; }
"$pxperf" --plot "$out" --title "$title" ${PLOT_LOAD:+--load "$PLOT_LOAD"} \
    ${PLOT_Y:+--y "$PLOT_Y"} "${args[@]}"
