#!/usr/bin/env bash
# compare-named.sh: one-sided transfers to a named segment (issue 24: the
# target found by name through the registry, p2p and redis) against the
# same transfers between the two ranks of a job (pxrun -n 2), with
# px_xfer_bench (docs/px_xfer_bench.md), in interleaved rounds (the order of
# the contenders rotates each round). Also the time from px_name_open to the
# first byte read. A hand-run benchmark, not part of the test suite (no test
# asserts a time).
#
# For each transport (NETS: ofi = PX_MCA_btl=self,ofi over tcp;ofi_rxm on
# loopback, shm = the default list on one host), each block size (SIZES) and
# each operation (OPS), every round runs:
#   ranks      pxrun -n 2 px_xfer_bench --ranks ...
#   p2p        px_xfer_bench --mode target --publish NAME (registry p2p) and a
#              separately started px_xfer_bench --target host:port/NAME
#   redis      the same with registry redis (a redis-server of this script's
#              own on a random port)
# and prints each one's GB/s. The figure judged is the median over the
# rounds of each round's ratio named / ranks (target >= 0.95), and the
# median open-to-first-byte time (targets: <= 2 ms p2p, <= 5 ms redis).
#
# Usage: test/bench/compare-named.sh BUILD_DIR
# Env:   ROUNDS (5), SIZES (65536 1048576 4194304), NETS ("ofi shm"),
#        OPS (read), STORES ("p2p redis"), DUR (seconds per run, 2),
#        BATCH (128), THREADS (1), MEM (reg: malloc'd and registered on both
#        sides, the same path for ranks and a connected peer; alloc:
#        px_xfer_alloc'd, which ranks on one host map and a connected peer
#        reads by CMA), KEEP (a folder to keep every run's output in),
#        BENCH (another px_xfer_bench binary), CONTENDERS ("ranks $STORES"),
#        RATIOS (pairs A/B, e.g. "p2p/p2p-nosplit": the median of the
#        per-round ratios A / B too), VERBOSE (1: btl_base_verbose 5, so each
#        process prints btl/shm's single-copy counts at px_finalize; with
#        KEEP, in the kept outputs).
# A contender WHO-nosplit (ranks-nosplit, p2p-nosplit, redis-nosplit) is WHO
# with btl_shm_cma_split=0 in every process: the transfer engine's gets are
# read alone, not split with the region's owner (docs/shm.md), e.g.
#   NETS=shm STORES="p2p" CONTENDERS="p2p p2p-nosplit" RATIOS=p2p/p2p-nosplit \
#       test/bench/compare-named.sh build
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: compare-named.sh BUILD_DIR" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-65536 1048576 4194304}
NETS=${NETS:-ofi shm}
OPS=${OPS:-read}
STORES=${STORES:-p2p redis}
DUR=${DUR:-2}
BATCH=${BATCH:-128}
THREADS=${THREADS:-1}
MEM=${MEM:-reg}
BENCH=${BENCH:-$B/tools/px_xfer_bench/.libs/px_xfer_bench}
[ -x "$BENCH" ] || BENCH=$B/tools/px_xfer_bench/px_xfer_bench
PXRUN=$B/tools/pxrun/pxrun
[ -x "$BENCH" ] && [ -x "$PXRUN" ] || { echo "compare-named: $B has no px_xfer_bench or pxrun (make -C $B)" >&2; exit 2; }
T=$(mktemp -d /tmp/pxnamed.XXXXXX)
rpid=''
cleanup() {
    [ -n "$rpid" ] && kill -9 "$rpid" 2>/dev/null
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp -r "$T"/. "$KEEP"/
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
export LD_LIBRARY_PATH=$B/.libs PX_MCA_mca_component_path=$B/.libs PX_MCA_peer_secret_file=$T/secret
export PX_MCA_registry_namespace=compare_named_$$
if [[ " $STORES " == *" redis "* ]]; then
    if ! command -v redis-server >/dev/null; then
        echo "   (redis left out: no redis-server; scripts/deps.sh installs it)"
        STORES=${STORES/redis/}
    else
        for _ in 1 2 3 4 5; do
            rport=$((20000 + RANDOM % 30000))
            redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
                >"$T/redis.log" 2>&1 </dev/null &
            rpid=$!
            for _ in $(seq 50); do redis-cli -p "$rport" ping 2>/dev/null | grep -q PONG && break 2; sleep 0.1; done
            kill -9 "$rpid" 2>/dev/null
            rpid=''
        done
        [ -n "$rpid" ] || { echo "compare-named: redis-server did not start" >&2; exit 2; }
    fi
fi

# field NAME FILE: the value of NAME= on px_xfer_bench's result line
field() { sed -n "s/^px_xfer_bench: mode=.* $1=\([^ ]*\).*/\1/p" "$2" | head -1; }

# run NET SIZE OP WHO OUT: one contender's run; its result line in OUT
run() {
    local net=$1 size=$2 op=$3 who=$4 out=$5 env=() buf
    buf=$((BATCH * size * THREADS))
    [ "$net" = ofi ] && env=(PX_MCA_btl=self,ofi "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm")
    [ "${who%-nosplit}" != "$who" ] && env+=(PX_MCA_btl_shm_cma_split=0)
    who=${who%-nosplit}
    [ "${VERBOSE:-0}" = 1 ] && env+=(PX_MCA_btl_base_verbose=5)
    local args=(--op "$op" --block-size "$size" --batch-size "$BATCH" --threads "$THREADS"
        --duration "$DUR" --mem "$MEM")
    if [ "$who" = ranks ]; then
        env "${env[@]}" timeout -s KILL 300 "$PXRUN" -n 2 "$BENCH" --ranks "${args[@]}" \
            --buffer-size "$buf" </dev/null >"$out" 2>&1
        return
    fi
    local reg=(PX_MCA_registry="$who")
    [ "$who" = redis ] && reg+=(PX_MCA_registry_redis_endpoints=127.0.0.1:$rport)
    rm -f "$T/name"
    env "${env[@]}" "${reg[@]}" timeout -s KILL 300 "$BENCH" --mode target \
        --publish "bench/$net/$size" --buffer-size "$buf" --mem "$MEM" --name-file "$T/name" \
        </dev/null >"$out.target" 2>&1 &
    local tp=$!
    for _ in $(seq 600); do [ -s "$T/name" ] && break; sleep 0.05; done
    if [ -s "$T/name" ]; then
        env "${env[@]}" "${reg[@]}" timeout -s KILL 300 "$BENCH" --target "$(cat "$T/name")" \
            "${args[@]}" </dev/null >"$out" 2>&1
    else
        echo "compare-named: the $who target did not publish: $(tail -1 "$out.target")" >"$out"
    fi
    kill -TERM "$tp" 2>/dev/null
    wait "$tp" 2>/dev/null
}

contenders=${CONTENDERS:-ranks $STORES}
echo "# compare-named: $(date -u +%FT%TZ) $(uname -n) load $(cut -d' ' -f1-3 /proc/loadavg); rounds $ROUNDS, batch $BATCH, threads $THREADS, $DUR s per run, memory $MEM"
echo "# contenders: $contenders; transports: $NETS; ops: $OPS; sizes: $SIZES"
for r in $(seq 1 "$ROUNDS"); do
    # rotate the order each round
    set -- $contenders
    order=()
    n=$#
    for i in $(seq 0 $((n - 1))); do
        k=$(((i + r - 1) % n + 1))
        order+=("${!k}")
    done
    for net in $NETS; do
        for op in $OPS; do
            for size in $SIZES; do
                line="round $r $net $op $size:"
                for who in "${order[@]}"; do
                    o=$T/r$r.$net.$op.$size.$who
                    run "$net" "$size" "$op" "$who" "$o"
                    g=$(field gbps "$o")
                    [ -n "$g" ] || { g=NA; echo "   ($who failed: $(grep -v '^Test' "$o" | tail -1 | cut -c1-200))"; }
                    fb=$(field first_byte_ms "$o")
                    om=$(field open_ms "$o")
                    line="$line $who=$g${fb:+ (open ${om} ms, first byte ${fb} ms)} path=$(field path "$o")"
                    echo "$r $net $op $size $who $g ${fb:-NA} ${om:-NA}" >>"$T/all"
                done
                echo "$line"
            done
        done
    done
done

# medians: of each contender's GB/s, of each round's ratio named / ranks, of
# the first-byte times
python3 - "$T/all" "$STORES" "${RATIOS:-}" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
stores = sys.argv[2].split()
data = {}
for r, net, op, size, who, g, fb, om in rows:
    data.setdefault((net, op, int(size)), {}).setdefault(int(r), {})[who] = (g, fb, om)
def num(x):
    try: return float(x)
    except ValueError: return None
print()
print("| transport | op | block | ranks GB/s | " + " | ".join(f"{s} GB/s | {s}/ranks (median of rounds) | {s} open / to first byte (ms, median)" for s in stores) + " |")
print("|---|---|---|---|" + "---|---|---|" * len(stores))
for (net, op, size), rounds in sorted(data.items()):
    ranks = [num(v["ranks"][0]) for v in rounds.values() if "ranks" in v and num(v["ranks"][0])]
    cells = [f"{st.median(ranks):.2f}" if ranks else "NA"]
    for s in stores:
        gs = [num(v[s][0]) for v in rounds.values() if s in v and num(v[s][0])]
        ratios = [num(v[s][0]) / num(v["ranks"][0]) for v in rounds.values()
                  if s in v and "ranks" in v and num(v[s][0]) and num(v["ranks"][0])]
        fbs = [num(v[s][1]) for v in rounds.values() if s in v and num(v[s][1])]
        oms = [num(v[s][2]) for v in rounds.values() if s in v and num(v[s][2])]
        cells += [f"{st.median(gs):.2f}" if gs else "NA",
                  (f"{st.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "NA"),
                  (f"{st.median(oms):.3f} / " if oms else "") + (f"{st.median(fbs):.3f}" if fbs else "NA")]
    size_s = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    print(f"| {net} | {op} | {size_s} | " + " | ".join(cells) + " |")
pairs = [p.split("/") for p in (sys.argv[3].split() if len(sys.argv) > 3 else [])]
if pairs:
    print()
    print("| transport | op | block | " + " | ".join(f"{a} GB/s | {b} GB/s | {a}/{b} (median of rounds, range)" for a, b in pairs) + " |")
    print("|---|---|---|" + "---|---|---|" * len(pairs))
    for (net, op, size), rounds in sorted(data.items()):
        cells = []
        for a, b in pairs:
            ga = [num(v[a][0]) for v in rounds.values() if a in v and num(v[a][0])]
            gb = [num(v[b][0]) for v in rounds.values() if b in v and num(v[b][0])]
            rs = [num(v[a][0]) / num(v[b][0]) for v in rounds.values()
                  if a in v and b in v and num(v[a][0]) and num(v[b][0])]
            cells += [f"{st.median(ga):.2f}" if ga else "NA", f"{st.median(gb):.2f}" if gb else "NA",
                      (f"{st.median(rs):.3f} ({min(rs):.2f}-{max(rs):.2f}; " + ", ".join(f"{r:.2f}" for r in rs) + ")") if rs else "NA"]
        size_s = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        print(f"| {net} | {op} | {size_s} | " + " | ".join(cells) + " |")
PY
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
