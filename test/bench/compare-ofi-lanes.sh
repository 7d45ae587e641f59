#!/usr/bin/env bash
# compare-ofi-lanes.sh: btl/ofi's RDMA over one lane against N lanes
# (btl_ofi_rdma_lanes, docs/ofi.md), in interleaved rounds: reads (or writes)
# of a named segment with px_xfer_bench (registry p2p, docs/px_xfer_bench.md)
# over tcp;ofi_rxm, on loopback (lo) and across two network namespace hosts
# joined by a veth pair (ns, test/lib/netns.sh; root only), and px_perf
# --xfer between the two ranks of a pxrun job on loopback (perf). Each round
# runs lanes=1 and lanes=N for every place and size, the order alternating
# each round. A hand-run benchmark, not part of the test suite.
#
# Printed: every run's GB/s; per place and size the medians and the median
# over the rounds of each round's ratio N / 1, with the load at the start
# and the end.
#
# Usage: test/bench/compare-ofi-lanes.sh BUILD_DIR
# Env:   LANES (2), ROUNDS (5), SIZES (65536 1048576 4194304), PLACES (lo ns
#        perf), OP (read), DUR (seconds per px_xfer_bench run, 2), BATCH (128),
#        PX_ENV (extra VAR=value settings for every run), KEEP (a folder to
#        keep the outputs in).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: compare-ofi-lanes.sh BUILD_DIR" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
LANES=${LANES:-2}
ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-65536 1048576 4194304}
PLACES=${PLACES:-lo ns perf}
OP=${OP:-read}
DUR=${DUR:-2}
BATCH=${BATCH:-128}
real() { # the real binary, not libtool's wrapper
    local d=${1%/*} n=${1##*/}
    if [ -x "$d/.libs/$n" ]; then echo "$d/.libs/$n"; else echo "$1"; fi
}
BENCH=$(real "$B/tools/px_xfer_bench/px_xfer_bench")
PERF=$(real "$B/tools/px_perf/px_perf")
PXRUN=$B/tools/pxrun/pxrun
[ -x "$BENCH" ] || { echo "compare-ofi-lanes: $B has no px_xfer_bench" >&2; exit 2; }
if [[ " $PLACES " == *" ns "* ]] && [ "$(id -u)" != 0 ]; then
    echo "   (ns left out: network namespaces need root)"
    PLACES=${PLACES/ns/}
fi
T=$(mktemp -d /tmp/pxlanes.XXXXXX)
. "$src/test/lib/netns.sh"
cleanup() {
    netns_down
    rm -f "$T/secret"
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp -r "$T"/. "$KEEP"/
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
if [[ " $PLACES " == *" ns "* ]]; then
    netns_up la "$T/setup.err" ||
        { echo "compare-ofi-lanes: cannot make the namespaces:" >&2; cat "$T/setup.err" >&2; exit 2; }
fi
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
umask 022
export LD_LIBRARY_PATH=$B/.libs
common=(LD_LIBRARY_PATH="$B/.libs" PX_MCA_mca_component_path="$B/.libs" "PX_MCA_btl=self,ofi"
    "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm" PX_MCA_peer_secret_file="$T/secret"
    PX_MCA_registry=p2p PX_MCA_registry_namespace="lanes_$$")
read -r -a pxenv <<<"${PX_ENV:-}"
common+=("${pxenv[@]}")

field() { sed -n "s/^px_xfer_bench: mode=.* $1=\([^ ]*\).*/\1/p" "$2" | head -1; }

# nsx PLACE HOST: sets the array `pre` to the command prefix that runs a
# command on HOST (ip netns exec for ns, nothing for lo and perf). A prefix,
# not a shell function around the command: a backgrounded function is a
# subshell, and killing it left the target running (every target of a run
# kept spinning until the end, which loaded the machine of every later run).
nsx() {
    pre=()
    if [ "$1" = ns ]; then
        if [ "$2" = B ]; then pre=(ip netns exec "$NS_B"); else pre=(ip netns exec "$NS_A"); fi
    fi
}

# run PLACE SIZE LANES OUT: one run; GB/s on stdout (NA when it failed)
run() {
    local place=$1 size=$2 lanes=$3 out=$4 buf=$((BATCH * size))
    local env=("${common[@]}" PX_MCA_btl_ofi_rdma_lanes="$lanes")
    if [ "$place" = perf ]; then
        # --iters: windows of 64 transfers (and latency loops) per size; px_perf's
        # own counts (300 latency rounds, 100 windows at 1 MiB) take minutes
        # under load
        local it=$((size < 1048576 ? 40 : 8))
        env "${env[@]}" timeout -s KILL 300 "$PXRUN" -n 2 "$PERF" --xfer --xfer-mem reg \
            --iters "$it" --sizes "$size" </dev/null >"$out" 2>&1
        # the size's row: bytes write_us read_us write_MBps read_MBps
        awk -v s="$size" -v op="$OP" '$1 == s && NF == 5 {
            printf "%.3f\n", (op == "read" ? $5 : $4) / 1000; exit }' "$out" | grep . || echo NA
        return
    fi
    local ipa=127.0.0.1 ipb=127.0.0.1
    [ "$place" = ns ] && ipa=$IP_A ipb=$IP_B
    rm -f "$T/name"
    local pre
    nsx "$place" A
    timeout -s KILL 300 "${pre[@]}" env "${env[@]}" PX_MCA_peer_listen_address=$ipa "$BENCH" \
        --mode target --publish "lanes/$size" --buffer-size "$buf" --mem reg \
        --name-file "$T/name" </dev/null >"$out.target" 2>&1 &
    local tp=$!
    for _ in $(seq 600); do [ -s "$T/name" ] && break; sleep 0.05; done
    if [ -s "$T/name" ]; then
        nsx "$place" B
        timeout -s KILL 300 "${pre[@]}" env "${env[@]}" PX_MCA_peer_listen_address=$ipb "$BENCH" \
            --target "$(cat "$T/name")" --op "$OP" --block-size "$size" --batch-size "$BATCH" \
            --duration "$DUR" --mem reg </dev/null >"$out" 2>&1
    else
        echo "the target did not publish: $(tail -1 "$out.target")" >"$out"
    fi
    kill -TERM "$tp" 2>/dev/null
    wait "$tp" 2>/dev/null
    local g
    g=$(field gbps "$out")
    echo "${g:-NA}"
}

echo "# compare-ofi-lanes: $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# btl self,ofi over tcp;ofi_rxm; lanes 1 against $LANES; rounds $ROUNDS, $OP, batch $BATCH, $DUR s per run; places: $PLACES; sizes: $SIZES"
[ -n "${PX_ENV:-}" ] && echo "# PX_ENV: $PX_ENV"
for r in $(seq 1 "$ROUNDS"); do
    order="1 $LANES"
    [ $((r % 2)) = 0 ] && order="$LANES 1"
    for place in $PLACES; do
        for size in $SIZES; do
            line="round $r $place $size (load $(cut -d' ' -f1 /proc/loadavg)):"
            for l in $order; do
                g=$(run "$place" "$size" "$l" "$T/r$r.$place.$size.$l")
                [ "$g" = NA ] && echo "   (lanes=$l failed: $(tail -1 "$T/r$r.$place.$size.$l" | cut -c1-200))"
                line="$line lanes=$l $g"
                echo "$r $place $size $l $g" >>"$T/all"
            done
            echo "$line"
        done
    done
done
python3 - "$T/all" "$LANES" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
n = sys.argv[2]
d = {}
for r, place, size, lanes, g in rows:
    try: g = float(g)
    except ValueError: continue
    d.setdefault((place, int(size)), {}).setdefault(r, {})[lanes] = g
print()
print(f"| place | block | lanes=1 GB/s | lanes={n} GB/s | {n}/1 (median of rounds, min-max) |")
print("|---|---|---|---|---|")
for (place, size), rounds in sorted(d.items()):
    one = [v["1"] for v in rounds.values() if "1" in v]
    many = [v[n] for v in rounds.values() if n in v]
    rat = [v[n] / v["1"] for v in rounds.values() if "1" in v and n in v]
    s = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    f = lambda x: f"{st.median(x):.2f}" if x else "NA"
    rr = f"{st.median(rat):.3f} ({min(rat):.2f}-{max(rat):.2f}, {len(rat)} rounds)" if rat else "NA"
    print(f"| {place} | {s} | {f(one)} | {f(many)} | {rr} |")
PY
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
