#!/usr/bin/env bash
# compare-verbs.sh: Plexus over btl/verbs (px_perf under pxrun, PX_MCA_btl=self,verbs)
# against raw verbs (perftest's ib_send_lat and ib_write_bw) on the same
# device in the same run. On this project's software device
# (test/softverbs) the figures are the device's, not hardware's: the ratios
# are the point, Plexus's overhead over raw verbs. Targets (issue 12,
# docs/verbs.md): latency at most 1.2x ib_send_lat, bandwidth at least 0.9x
# ib_write_bw.
#
# Usage: test/bench/compare-verbs.sh [BUILD_DIR]     (default: $PX_BUILD or ./build)
# Env:   REPEAT (interleaved rounds, best counts; default 3), LAT_SIZE (8),
#        BW_SIZE (65536), ITERS (perftest -n; default 2000),
#        SOFTVERBS=0 to use the system libibverbs (a real HCA) instead;
#        PLOT: a chart of the best figures, .svg or .png (default
#        compare-verbs.svg in the current folder; PLOT= for none).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${PX_BUILD:-$src/build}}" && pwd) || exit 2
REPEAT=${REPEAT:-3} LAT_SIZE=${LAT_SIZE:-8} BW_SIZE=${BW_SIZE:-65536} ITERS=${ITERS:-2000}
PXRUN=$B/tools/pxrun/pxrun
PXPERF=$B/tools/px_perf/px_perf
[ -x "$B/tools/px_perf/.libs/px_perf" ] && PXPERF=$B/tools/px_perf/.libs/px_perf
for p in ib_send_lat ib_write_bw; do
    command -v $p >/dev/null || { echo "compare-verbs: $p is missing (apt-get install perftest)" >&2; exit 2; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PX_MCA_mca_component_path=$B/.libs
if [ "${SOFTVERBS:-1}" = 1 ]; then
    [ -e "$B/test/softverbs/lib/libibverbs.so.1" ] ||
        { echo "compare-verbs: $B/test/softverbs/lib/libibverbs.so.1 is not built (make build-tests)" >&2; exit 2; }
    export LD_LIBRARY_PATH=$B/test/softverbs/lib:$LD_LIBRARY_PATH PX_SOFTVERBS_DIR=$T/reg
fi
dev=$(ibv_devices 2>/dev/null | awk 'NR>2 {print $1; exit}')
[ -n "$dev" ] || { echo "compare-verbs: no RDMA device (ibv_devices lists none)" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# perftest NAME ARGS...: server and client on this host; the client's output in $T/NAME
perftest() {
    local name=$1 port
    shift
    port=$(free_port)
    timeout -s KILL 300 "$@" -p "$port" >"$T/$name.srv" 2>&1 </dev/null &
    local spid=$!
    for _ in $(seq 100); do ss -ltn | grep -q ":$port " && break; sleep 0.1; done
    timeout -s KILL 300 "$@" -p "$port" 127.0.0.1 >"$T/$name" 2>&1 </dev/null
    wait $spid
}

load0=$(cut -d' ' -f1-3 /proc/loadavg) # for the chart's title
echo "== compare-verbs $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   device $dev$([ "${SOFTVERBS:-1}" = 1 ] && echo ' (software device, test/softverbs)'), $REPEAT interleaved rounds, best of each"
best_lat=0 best_bw=0 px_lat=0 px_bw=0
for r in $(seq "$REPEAT"); do
    perftest lat ib_send_lat -d "$dev" -i 1 -s "$LAT_SIZE" -n "$ITERS"
    # columns: #bytes #iterations t_min t_max t_typical t_avg ...
    l=$(awk -v s="$LAT_SIZE" '$1 == s && NF >= 6 {print $5}' "$T/lat" | tail -1)
    perftest bw ib_write_bw -d "$dev" -i 1 -s "$BW_SIZE" -n "$ITERS" --report_gbits
    # columns: #bytes #iterations BW_peak BW_average (Gb/s) MsgRate; as MB/s (10^6 B, px_perf's unit)
    w=$(awk -v s="$BW_SIZE" '$1 == s && NF >= 4 {printf "%.1f", $4 * 125}' "$T/bw" | tail -1)
    PX_MCA_btl=self,verbs timeout -s KILL 300 "$PXRUN" -n 2 "$PXPERF" --sizes "$LAT_SIZE,$BW_SIZE" \
        --csv </dev/null >"$T/px.csv" 2>"$T/px.err"
    pl=$(awk -F, -v s="$LAT_SIZE" '$1 == s {print $2}' "$T/px.csv")
    pw=$(awk -F, -v s="$BW_SIZE" '$1 == s {print $3}' "$T/px.csv")
    printf '   round %d: ib_send_lat %s us, ib_write_bw %s MB/s, plexus %s us, %s MB/s\n' \
        "$r" "${l:-?}" "${w:-?}" "${pl:-?}" "${pw:-?}"
    best_lat=$(awk -v a="$best_lat" -v b="${l:-0}" 'BEGIN{print (a == 0 || (b > 0 && b < a)) ? b : a}')
    best_bw=$(awk -v a="$best_bw" -v b="${w:-0}" 'BEGIN{print (b > a) ? b : a}')
    px_lat=$(awk -v a="$px_lat" -v b="${pl:-0}" 'BEGIN{print (a == 0 || (b > 0 && b < a)) ? b : a}')
    px_bw=$(awk -v a="$px_bw" -v b="${pw:-0}" 'BEGIN{print (b > a) ? b : a}')
done
echo "== best of $REPEAT"
printf '%-34s %12s %12s %8s %s\n' "" "raw verbs" "plexus" "ratio" "target"
awk -v a="$best_lat" -v b="$px_lat" -v s="$LAT_SIZE" 'BEGIN{printf "%-34s %12.2f %12.2f %8.2f %s\n", "latency " s " B (us; ib_send_lat)", a, b, (a > 0 ? b / a : 0), "<= 1.2"}'
awk -v a="$best_bw" -v b="$px_bw" -v s="$BW_SIZE" 'BEGIN{printf "%-34s %12.1f %12.1f %8.2f %s\n", "bandwidth " s " B (MB/s; ib_write_bw)", a, b, (a > 0 ? b / a : 0), ">= 0.9"}'
# One chart of the best figures (test/bench/plot.sh): latency at LAT_SIZE,
# bandwidth at BW_SIZE.
if [ -n "${PLOT-compare-verbs.svg}" ]; then
    printf 'bytes,lat_us,bw_MBps\n%s,%s,\n%s,,%s\n' "$LAT_SIZE" "$px_lat" "$BW_SIZE" "$px_bw" >"$T/plot_px.csv"
    printf 'bytes,lat_us,bw_MBps\n%s,%s,\n%s,,%s\n' "$LAT_SIZE" "$best_lat" "$BW_SIZE" "$best_bw" >"$T/plot_raw.csv"
    PX_BUILD=$B PLOT_LOAD=$load0 bash "$src/test/bench/plot.sh" "${PLOT-compare-verbs.svg}" \
        "compare-verbs: Plexus btl/verbs and raw verbs on $dev, best of $REPEAT" \
        "plexus verbs=$T/plot_px.csv" "ib_send_lat / ib_write_bw=$T/plot_raw.csv" || echo "(no chart)"
fi
