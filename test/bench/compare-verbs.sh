#!/usr/bin/env bash
# compare-verbs.sh: Plexus over btl/verbs (px_perf under pxrun, PX_MCA_btl=self,verbs)
# against raw verbs (perftest's ib_send_lat and ib_write_bw) on the same
# device in the same run. On this project's software device
# (test/softverbs) the figures are the device's, not hardware's: the ratios
# are the point, Plexus's overhead over raw verbs. Targets (issue 12,
# docs/verbs.md): latency at most 1.2x ib_send_lat, bandwidth at least 0.9x
# ib_write_bw.
#
# Like with like: ib_send_lat times every round trip and prints the median
# ("t_typical", its headline) and the mean ("t_avg"); px_perf --stats prints
# the same two for Plexus, with the same number of iterations. Both ratios
# are printed; on a loaded 2-core machine a mean carries the scheduler's
# outliers (a thread preempted for a whole time slice), so a mean is only
# comparable with a mean. On the software device the clients also print
# their turnaround (PX_SOFTVERBS_STATS: from the poll that returned a
# receive completion to the next post of a send, the client's own time per
# one-way trip, free of the device's and the scheduler's).
#
# The table gives the best of each column over the interleaved rounds, and
# then the median of the rounds' own ratios (Plexus / perftest in the same
# round).
#
# Usage: test/bench/compare-verbs.sh [BUILD_DIR]     (default: $PX_BUILD or ./build)
# Env:   REPEAT (interleaved rounds, best counts; default 3), LAT_SIZE (8),
#        BW_SIZE (65536), ITERS (round trips of each latency test, perftest -n
#        of both; default 5000), BW_MSGS (messages of each bandwidth test: perftest
#        -n, px_perf --iters BW_MSGS/64 windows of 64; default 6400), SOFTVERBS=0 to use the system libibverbs (a real
#        HCA) instead, SOFTVERBS_LIB (a folder with the software libibverbs.so.1,
#        default BUILD_DIR's: compare two Plexus builds on one device);
#        PLOT: a chart of the best figures, .svg or .png (default
#        compare-verbs.svg in the current folder; PLOT= for none).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${PX_BUILD:-$src/build}}" && pwd) || exit 2
REPEAT=${REPEAT:-3} LAT_SIZE=${LAT_SIZE:-8} BW_SIZE=${BW_SIZE:-65536} ITERS=${ITERS:-5000}
BW_MSGS=${BW_MSGS:-6400}
BW_WINDOWS=$(( (BW_MSGS + 63) / 64 ))
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
sv=0
if [ "${SOFTVERBS:-1}" = 1 ]; then
    SVLIB=${SOFTVERBS_LIB:-$B/test/softverbs/lib}
    [ -e "$SVLIB/libibverbs.so.1" ] ||
        { echo "compare-verbs: $SVLIB/libibverbs.so.1 is not built (make build-tests)" >&2; exit 2; }
    export LD_LIBRARY_PATH=$SVLIB:$LD_LIBRARY_PATH PX_SOFTVERBS_DIR=$T/reg
    sv=1
fi
dev=$(ibv_devices 2>/dev/null | awk 'NR>2 {print $1; exit}')
[ -n "$dev" ] || { echo "compare-verbs: no RDMA device (ibv_devices lists none)" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# perftest NAME ARGS...: server and client on this host; the client's output
# in $T/NAME, the server's in $T/NAME.srv
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
# turnaround FILES...: the mean of the median turnarounds softverbs printed
turnaround() {
    cat "$@" 2>/dev/null | awk '/receive-to-send turnarounds/ {
        for (i = 1; i <= NF; i++) if ($i == "median") { s += $(i+1); n++ } }
        END { if (n) printf "%.3f", s / n; else print "?" }'
}
# median of the numbers given (positive ones only)
median() { printf '%s\n' "$@" | awk '$1 > 0' | sort -g | awk '{v[NR] = $1} END {if (!NR) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN{print (a > 0 && b > 0) ? b / a : 0}'; }
best_min() { awk -v a="$1" -v b="${2:-0}" 'BEGIN{print (a == 0 || (b > 0 && b < a)) ? b : a}'; }
best_max() { awk -v a="$1" -v b="${2:-0}" 'BEGIN{print (b > a) ? b : a}'; }

load0=$(cut -d' ' -f1-3 /proc/loadavg) # for the chart's title
echo "== compare-verbs $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   device $dev$([ $sv = 1 ] && echo ' (software device, test/softverbs)'), $REPEAT interleaved rounds, best of each;"
echo "   $ITERS round trips per latency test, $((BW_WINDOWS * 64)) messages per bandwidth test"
pt_typ=0 pt_avg=0 pt_bw=0 px_typ=0 px_avg=0 px_bw=0 pt_turn=0 px_turn=0
r_typ=() r_avg=() r_bw=()
for r in $(seq "$REPEAT"); do
    PX_SOFTVERBS_STATS=$sv perftest lat ib_send_lat -d "$dev" -i 1 -s "$LAT_SIZE" -n "$ITERS"
    # columns: #bytes #iterations t_min t_max t_typical t_avg ...
    lt=$(awk -v s="$LAT_SIZE" '$1 == s && NF >= 6 {print $5}' "$T/lat" | tail -1)
    la=$(awk -v s="$LAT_SIZE" '$1 == s && NF >= 6 {print $6}' "$T/lat" | tail -1)
    tt=$(turnaround "$T/lat" "$T/lat.srv")
    perftest bw ib_write_bw -d "$dev" -i 1 -s "$BW_SIZE" -n $((BW_WINDOWS * 64)) --report_gbits
    # columns: #bytes #iterations BW_peak BW_average (Gb/s) MsgRate; as MB/s (10^6 B, px_perf's unit)
    w=$(awk -v s="$BW_SIZE" '$1 == s && NF >= 4 {printf "%.1f", $4 * 125}' "$T/bw" | tail -1)
    PX_SOFTVERBS_STATS=$sv PX_MCA_btl=self,verbs timeout -s KILL 300 "$PXRUN" -n 2 "$PXPERF" \
        --test lat --sizes "$LAT_SIZE" --iters "$ITERS" --stats --csv </dev/null >"$T/px.csv" 2>"$T/px.err"
    # columns: bytes,lat_us,lat_min_us,lat_typ_us
    pa=$(awk -F, -v s="$LAT_SIZE" '$1 == s {print $2}' "$T/px.csv")
    pt=$(awk -F, -v s="$LAT_SIZE" '$1 == s {print $4}' "$T/px.csv")
    xt=$(turnaround "$T/px.err")
    PX_MCA_btl=self,verbs timeout -s KILL 300 "$PXRUN" -n 2 "$PXPERF" --test bw --sizes "$BW_SIZE" \
        --iters "$BW_WINDOWS" --csv </dev/null >"$T/pxbw.csv" 2>"$T/pxbw.err"
    pw=$(awk -F, -v s="$BW_SIZE" '$1 == s {print $2}' "$T/pxbw.csv")
    printf '   round %d (load %s): ib_send_lat typical %s avg %s us, ib_write_bw %s MB/s | plexus typical %s avg %s us, %s MB/s' \
        "$r" "$(cut -d' ' -f1 /proc/loadavg)" "${lt:-?}" "${la:-?}" "${w:-?}" "${pt:-?}" "${pa:-?}" "${pw:-?}"
    [ $sv = 1 ] && printf ' | turnaround perftest %s us, plexus %s us' "$tt" "$xt"
    printf '\n'
    r_typ+=("$(ratio "$lt" "$pt")") r_avg+=("$(ratio "$la" "$pa")") r_bw+=("$(ratio "$w" "$pw")")
    pt_typ=$(best_min "$pt_typ" "$lt") pt_avg=$(best_min "$pt_avg" "$la") pt_bw=$(best_max "$pt_bw" "$w")
    px_typ=$(best_min "$px_typ" "$pt") px_avg=$(best_min "$px_avg" "$pa") px_bw=$(best_max "$px_bw" "$pw")
    [ "$tt" != "?" ] && pt_turn=$(best_min "$pt_turn" "$tt")
    [ "$xt" != "?" ] && px_turn=$(best_min "$px_turn" "$xt")
done
echo "== best of $REPEAT, load now $(cut -d' ' -f1-3 /proc/loadavg)"
row() { awk -v n="$1" -v a="$2" -v b="$3" -v t="$4" -v f="$5" 'BEGIN{printf "%-44s " f " " f " %8.2f %s\n", n, a, b, (a > 0 ? b / a : 0), t}'; }
printf '%-44s %12s %12s %8s %s\n' "" "raw verbs" "plexus" "ratio" "target"
row "latency $LAT_SIZE B, median (us; ib_send_lat typical)" "$pt_typ" "$px_typ" "<= 1.2" "%12.2f"
row "latency $LAT_SIZE B, mean (us; ib_send_lat avg)" "$pt_avg" "$px_avg" "<= 1.2" "%12.2f"
row "bandwidth $BW_SIZE B (MB/s; ib_write_bw avg)" "$pt_bw" "$px_bw" ">= 0.9" "%12.1f"
[ $sv = 1 ] && row "client turnaround, median (us)" "$pt_turn" "$px_turn" "" "%12.3f"
# Each round's two measurements are minutes apart at most: the median of the
# rounds' ratios is less at the mercy of one lucky or unlucky round.
printf '%-44s %8s %8s %8s\n' "median of the $REPEAT rounds' ratios" "lat med" "lat mean" "bw"
printf '%-44s %8.2f %8.2f %8.2f\n' "" "$(median "${r_typ[@]}")" "$(median "${r_avg[@]}")" "$(median "${r_bw[@]}")"
# One chart of the best figures (test/bench/plot.sh): latency (median) at
# LAT_SIZE, bandwidth at BW_SIZE.
if [ -n "${PLOT-compare-verbs.svg}" ]; then
    printf 'bytes,lat_us,bw_MBps\n%s,%s,\n%s,,%s\n' "$LAT_SIZE" "$px_typ" "$BW_SIZE" "$px_bw" >"$T/plot_px.csv"
    printf 'bytes,lat_us,bw_MBps\n%s,%s,\n%s,,%s\n' "$LAT_SIZE" "$pt_typ" "$BW_SIZE" "$pt_bw" >"$T/plot_raw.csv"
    PX_BUILD=$B PLOT_LOAD=$load0 bash "$src/test/bench/plot.sh" "${PLOT-compare-verbs.svg}" \
        "compare-verbs: Plexus btl/verbs and raw verbs on $dev, best of $REPEAT" \
        "plexus verbs=$T/plot_px.csv" "ib_send_lat / ib_write_bw=$T/plot_raw.csv" || echo "(no chart)"
fi
exit 0
