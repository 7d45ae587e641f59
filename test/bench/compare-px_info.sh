#!/usr/bin/env bash
# compare-px_info.sh: wall time of a full px_info listing against ompi_info,
# in the same run on the same machine (target: px_info <= 0.1x ompi_info).
#
# Usage: test/bench/compare-px_info.sh BUILD_DIR [RUNS]
#
# px_info runs from the build tree as an installation would: the real binary
# (not the libtool wrapper script) with libplexus from BUILD_DIR/.libs and the
# plugins built there on mca_component_path, so every plugin that configure
# built (btl/ofi, btl/verbs, boot/pmix) is loaded and listed. Measured:
#   px_info --all                 everything, every plugin loaded
#   px_info --all, btl/ofi excluded  (btl/ofi runs a libfabric discovery when
#                                  it registers its variables; this line shows
#                                  what that discovery costs)
#   ompi_info --all               the peer
# hyperfine is used when installed, otherwise a loop timed with date +%s.%N.
set -euo pipefail
build=$(cd "${1:?usage: compare-px_info.sh BUILD_DIR [RUNS]}" && pwd)
runs=${2:-20}
px=$build/tools/px_info/.libs/px_info
[ -x "$px" ] || px=$build/tools/px_info/px_info
command -v ompi_info >/dev/null || { echo "ompi_info not found (apt-get install openmpi-bin)"; exit 1; }
export LD_LIBRARY_PATH=$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PX_MCA_mca_component_path=$build/.libs
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export HOME=$home # no user parameter file

plugins=$(cd "$build/.libs" && ls plexus_*.so 2>/dev/null | tr '\n' ' ')
echo "px_info: $px"
echo "plugins on mca_component_path: ${plugins:-none}"
echo "px_info --all: $("$px" --all | wc -l) lines; ompi_info --all: $(ompi_info --all | wc -l) lines"

# mean wall seconds of a command, printed with 4 decimals
mean_loop() {
    local i t0 t1
    for i in 1 2 3; do "$@" >/dev/null 2>&1 || true; done
    t0=$(date +%s.%N)
    for ((i = 0; i < runs; i++)); do "$@" >/dev/null 2>&1 || true; done
    t1=$(date +%s.%N)
    echo "$t0 $t1 $runs" | awk '{ printf "%.4f", ($2 - $1) / $3 }'
}

mean_hyperfine() {
    local json
    json=$(mktemp)
    hyperfine -N --warmup 3 --runs "$runs" --export-json "$json" "$*" >/dev/null 2>&1
    sed -n 's/.*"mean": *\([0-9.e-]*\).*/\1/p' "$json" | head -1 | awk '{ printf "%.4f", $1 }'
    rm -f "$json"
}

measure() {
    if command -v hyperfine >/dev/null; then mean_hyperfine "$@"; else mean_loop "$@"; fi
}

t_ompi=$(measure ompi_info --all)
t_px=$(measure "$px" --all)
t_px_noofi=$(measure "$px" --all --mca btl ^ofi)
t_ompi2=$(measure ompi_info --all)
# the peer before and after, averaged, so a drift of the machine shows
t_peer=$(echo "$t_ompi $t_ompi2" | awk '{ printf "%.4f", ($1 + $2) / 2 }')

ratio() { echo "$1 $2" | awk '{ printf "%.3f", $1 / $2 }'; }
printf '%-44s %9s %8s\n' "command" "mean (s)" "ratio"
printf '%-44s %9s %8s\n' "ompi_info --all" "$t_peer" "1.000"
printf '%-44s %9s %8s\n' "px_info --all" "$t_px" "$(ratio "$t_px" "$t_peer")"
printf '%-44s %9s %8s\n' "px_info --all --mca btl ^ofi" "$t_px_noofi" "$(ratio "$t_px_noofi" "$t_peer")"
echo "target: px_info --all <= 0.1x ompi_info --all"
