#!/usr/bin/env bash
# compare-xfer.sh: the transfer engine (px_perf --xfer) against Open MPI's
# one-sided MPI (test/bench/osc_mpi: MPI_Put/MPI_Get + MPI_Win_flush under
# MPI_Win_lock_all, on MPI_Win_allocate and MPI_Win_create windows, with osc
# rdma and osc ucx), UCX's ucx_perftest (ucp_put_lat, ucp_get, ucp_put_bw over
# shared memory and over tcp) and memcpy, in ONE run, interleaved: every
# round runs every contender once. The figure judged (issue 26) is, per
# size and operation, the MEDIAN over the rounds of each round's ratio
# Plexus / best Open MPI window of that round (this machine's state changes
# between runs: a best across rounds compares different states); the
# per-round ratios and the load of each round are printed with it. The
# best round of each contender is printed too (the figures of issue 13).
#
#   Plexus, allocated regions (shm mapping):  px_perf --xfer --xfer-mem alloc
#   Plexus, registered user memory, default:  px_perf --xfer --xfer-mem reg (xfer_stage_below=auto)
#   the same, CMA at every size:              xfer_stage_below=0
#   the same, staged at every size:           xfer_stage_below=16M (RSIZES only)
#   Plexus over tcp;ofi_rxm on loopback:      btl=self,ofi, --xfer-mem reg
#   memcpy of 1 MiB and 4 MiB:                px_perf --memcpy
#
# Usage: test/bench/compare-xfer.sh [BUILD_DIR]   (default: $PX_BUILD or ./build)
# Env:   REPEAT (rounds, default 3), SIZES (default 8,4096,65536,1048576,4194304),
#        RSIZES (registered memory, staged and CMA side by side; default
#        8,512,1024,2048,4096,8192,16384),
#        BASE=BUILD_DIR (a "before" build: its default registered run in the
#        same rounds, reported as base), UCX=0 / OFI=0 / MPI=0 (skip those peers),
#        PRIORITY=0 (no autogroup priority boost, see compare-shm.sh),
#        OUT=DIR (keep the raw files there).
# Not part of the test suite: run by hand, on a machine as quiet as you can get.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${PX_BUILD:-$src/build}}" && pwd) || exit 2
SIZES=${SIZES:-8,4096,65536,1048576,4194304}
RSIZES=${RSIZES:-8,512,1024,2048,4096,8192,16384}
REPEAT=${REPEAT:-3}
ALL=$(echo "$SIZES,$RSIZES" | tr , '\n' | sort -nu | paste -sd, -)
pxperf_of() { # build -> px_perf binary
    if [ -x "$1/tools/px_perf/.libs/px_perf" ]; then echo "$1/tools/px_perf/.libs/px_perf"; else echo "$1/tools/px_perf/px_perf"; fi
}
PXRUN=$B/tools/pxrun/pxrun
PXPERF=$(pxperf_of "$B")
OSC=$B/test/bench/osc_mpi
export FI_TCP_IFACE=lo
if [ -n "${OUT:-}" ]; then
    T=$OUT
    mkdir -p "$T"
else
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
fi
for f in "$PXRUN" "$PXPERF"; do
    [ -x "$f" ] || { echo "compare-xfer: $f is not built (make -C $B)" >&2; exit 2; }
done
BASEB=""
if [ -n "${BASE:-}" ]; then
    BASEB=$(cd "$BASE" && pwd) || exit 2
    [ -x "$BASEB/tools/pxrun/pxrun" ] || { echo "compare-xfer: BASE $BASEB has no pxrun" >&2; exit 2; }
fi
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core"
have_mpi=0
[ "${MPI:-1}" = 1 ] && [ -x "$OSC" ] && command -v mpirun >/dev/null && have_mpi=1
have_ucx=0
[ "${UCX:-1}" = 1 ] && command -v ucx_perftest >/dev/null && have_ucx=1
NICE=""
if [ "${PRIORITY:-1}" = 1 ] && [ "$(id -u)" = 0 ] && [ -w /proc/self/autogroup ]; then
    NICE="setsid $T/hi"
    printf '#!/bin/sh\necho -20 > /proc/self/autogroup 2>/dev/null\nexec "$@"\n' >"$T/hi"
    chmod +x "$T/hi"
fi

echo "== compare-xfer $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== sizes $SIZES, registered sweep $RSIZES; $REPEAT rounds, interleaved${BASEB:+; base $BASEB}"

# px_perf --xfer --csv prints two tables: bytes,write_us,read_us,write_MBps,read_MBps
# and batch,threads,Mreq_per_s. Split them into NAME.ROUND.csv and NAME_rate.ROUND.csv.
px_run() { # name build args...
    local name=$1 b=$2
    shift 2
    LD_LIBRARY_PATH=$b/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PX_MCA_mca_component_path=$b/.libs \
        $NICE "$@" </dev/null >"$T/raw" 2>"$T/err" || { echo "($name failed)"; head -3 "$T/err"; return 1; }
    awk -F, 'NF == 5 && $1 ~ /^[0-9]+$/' "$T/raw" >"$T/$name.$rep.csv"
    awk -F, 'NF == 3 && $1 ~ /^[0-9]+$/' "$T/raw" >"$T/${name}_rate.$rep.csv"
}
# ucx_perftest: server, then client; "Final:" row: iterations, latency 50%ile,
# average, overall (us), bandwidth average, overall (MiB/s), message rates.
ucx_one() { # tls test size iters -> "lat_us MBps"
    local port=$((20000 + RANDOM % 20000))
    UCX_TLS=$1 timeout 120 ucx_perftest -p $port >"$T/ucx_srv" 2>&1 &
    local srv=$!
    sleep 0.5
    UCX_TLS=$1 $NICE timeout 120 ucx_perftest -p $port 127.0.0.1 -t "$2" -s "$3" -n "$4" \
        >"$T/ucx_cli" 2>&1
    wait $srv 2>/dev/null
    awk '/^Final:/ { printf "%s %.1f\n", $3, $7 * 1.048576 }' "$T/ucx_cli"
}

for rep in $(seq "$REPEAT"); do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "$load" >"$T/load.$rep"
    echo "-- round $rep (load $load)"
    PP=("$PXRUN" -n 2)
    px_run px_alloc "$B" "${PP[@]}" "$PXPERF" --xfer --xfer-mem alloc --sizes "$SIZES" --csv
    px_run px_reg "$B" "${PP[@]}" "$PXPERF" --xfer --xfer-mem reg --sizes "$ALL" --csv
    px_run px_reg_cma "$B" "${PP[@]}" --mca xfer_stage_below 0 "$PXPERF" --xfer --xfer-mem reg \
        --sizes "$ALL" --csv
    px_run px_reg_stage "$B" "${PP[@]}" --mca xfer_stage_below 16M "$PXPERF" --xfer --xfer-mem reg \
        --sizes "$RSIZES" --csv
    if [ -n "$BASEB" ]; then
        px_run base_reg "$BASEB" "$BASEB/tools/pxrun/pxrun" -n 2 "$(pxperf_of "$BASEB")" --xfer \
            --xfer-mem reg --sizes "$ALL" --csv
        px_run base_alloc "$BASEB" "$BASEB/tools/pxrun/pxrun" -n 2 "$(pxperf_of "$BASEB")" --xfer \
            --xfer-mem alloc --sizes "$SIZES" --csv
    fi
    if [ "${OFI:-1}" = 1 ]; then
        px_run px_ofi "$B" env PX_MCA_btl=self,ofi "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm" \
            "$PXRUN" -n 2 "$PXPERF" --xfer --xfer-mem reg --sizes 4194304 --csv
    fi
    if [ $have_mpi = 1 ]; then
        for osc in rdma ucx; do
            if [ $osc = rdma ]; then
                args=(--mca osc rdma --mca pml ob1 --mca btl self,vader)
            else
                args=(--mca osc ucx --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
            fi
            for win in allocate create; do
                sz=$SIZES
                [ $win = create ] && sz=$ALL
                $NICE $MPIRUN "${args[@]}" "$OSC" --win $win --sizes "$sz" --csv </dev/null \
                    >"$T/raw" 2>"$T/err" ||
                    { echo "(osc $osc $win failed)"; head -3 "$T/err"; continue; }
                awk -F, 'NF == 5 && $1 ~ /^[0-9]+$/' "$T/raw" >"$T/mpi_${osc}_${win}.$rep.csv"
            done
        done
    fi
    if [ $have_ucx = 1 ]; then
        for tl in "shm:posix,cma,self" "tcp:tcp"; do
            n=${tl%%:*} tls=${tl#*:}
            read -r lat _ <<<"$(ucx_one "$tls" ucp_put_lat 8 100000)"
            read -r _ gbw <<<"$(ucx_one "$tls" ucp_get 4194304 200)"
            read -r _ pbw <<<"$(ucx_one "$tls" ucp_put_bw 4194304 200)"
            echo "$lat,$gbw,$pbw" >"$T/ucx_$n.$rep.csv"
        done
    fi
    for m in 1048576 4194304; do
        LD_LIBRARY_PATH=$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} $NICE "$PXPERF" --memcpy $m | sed -n 's/.*: \([0-9.]*\) MB\/s/\1/p' >"$T/memcpy_$m.$rep"
    done
done
echo "== done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

REPEAT=$REPEAT SIZES=$SIZES RSIZES=$RSIZES python3 - "$T" <<'EOF'
import glob, os, sys, statistics as st
T = sys.argv[1]
R = int(os.environ["REPEAT"])
rounds = [str(r) for r in range(1, R + 1)]
def rows(name, r):
    """{bytes: (write_us, read_us, write_MBps, read_MBps)} of one round."""
    out = {}
    try:
        for line in open(os.path.join(T, "%s.%s.csv" % (name, r))):
            f = line.strip().split(",")
            if len(f) == 5:
                out[int(f[0])] = tuple(float(x) for x in f[1:])
    except OSError:
        pass
    return out
data = {}
for path in glob.glob(os.path.join(T, "*.csv")):
    base = os.path.basename(path)[:-4]
    name, _, r = base.rpartition(".")
    if name.endswith("_rate") or name.startswith("ucx_"):
        continue
    data[(name, r)] = rows(name, r)
def get(name, r, b, col):
    v = data.get((name, r), {}).get(b)
    return v[col] if v else None
def memcpy(b, r):
    try:
        return float(open(os.path.join(T, "memcpy_%d.%s" % (b, r))).read().split()[0])
    except (OSError, IndexError, ValueError):
        return None
load = {r: open(os.path.join(T, "load." + r)).read().strip() for r in rounds if os.path.exists(os.path.join(T, "load." + r))}
COL = {"write_us": 0, "read_us": 1, "write_MBps": 2, "read_MBps": 3}
def best_mpi(kind, r, b, col):
    """The best Open MPI window of a kind in round r: (value, osc)."""
    best = None
    for osc in ("rdma", "ucx"):
        v = get("mpi_%s_%s" % (osc, kind), r, b, col)
        if v is None:
            continue
        if best is None or (v < best[0] if col < 2 else v > best[0]):
            best = (v, osc)
    return best
def med(v):
    return st.median(v) if v else float("nan")
def fmt(v):
    return "-" if v is None else ("%.4g" % v)

print()
print("# load per round: " + "; ".join("%s: %s" % (r, load.get(r, "?")) for r in rounds))
for name in sorted({k[0] for k in data}):
    print("# %s, per round (bytes: write_us read_us write_MBps read_MBps)" % name)
    for r in rounds:
        d = data.get((name, r), {})
        if d:
            print("  round %s: " % r + "; ".join("%d: %s" % (b, " ".join(fmt(x) for x in d[b])) for b in sorted(d)))
print("# memcpy (MB/s) per round: " + "; ".join(
    "%d: %s" % (b, " ".join(fmt(memcpy(b, r)) for r in rounds)) for b in (1048576, 4194304)))

targets = []   # (label, median, op, target)
def ratio_line(label, num, den, op, target):
    """num, den: functions of the round -> value or None. Prints per-round ratios and the median."""
    rs = []
    for r in rounds:
        a, b = num(r), den(r)
        if a is not None and b:
            rs.append(a / b)
    m = med(rs)
    verdict = "n/a" if not rs else ("met" if (m <= target if op == "<=" else m >= target) else "MISSED")
    print("%-70s %7.3f  (%s %s) %-6s rounds: %s" % (label, m, op, target, verdict, " ".join("%.2f" % x for x in rs)))
    targets.append((label, m, op, target, verdict))

print()
print("# per-round ratio, median over rounds (time: <= target; bandwidth: >= target)")
rs_sizes = sorted({int(x) for x in (os.environ["SIZES"] + "," + os.environ["RSIZES"]).split(",")})
sizes = [int(x) for x in os.environ["SIZES"].split(",")]
for b in sizes:
    if b >= 1048576:
        for col, what in ((2, "write"), (3, "read")):
            ratio_line("allocated, %s %d B (MB/s): plexus / best osc (Win_allocate)" % (what, b),
                       lambda r, b=b, c=col: get("px_alloc", r, b, c),
                       lambda r, b=b, c=col: (best_mpi("allocate", r, b, c) or (None,))[0], ">=", 1.0)
            ratio_line("allocated, %s %d B (MB/s): plexus / memcpy of %d B" % (what, b, b),
                       lambda r, b=b, c=col: get("px_alloc", r, b, c),
                       lambda r, b=b: memcpy(b, r) if b in (1048576, 4194304) else None, ">=", 0.95)
    else:
        for col, what in ((0, "write+flush"), (1, "read")):
            ratio_line("allocated, %s %d B (us): plexus / best osc (Win_allocate)" % (what, b),
                       lambda r, b=b, c=col: get("px_alloc", r, b, c),
                       lambda r, b=b, c=col: (best_mpi("allocate", r, b, c) or (None,))[0], "<=", 1.0)
for b in rs_sizes:
    if b >= 1048576:
        for col, what in ((2, "write"), (3, "read")):
            ratio_line("registered, %s %d B (MB/s): plexus / best osc (Win_create)" % (what, b),
                       lambda r, b=b, c=col: get("px_reg", r, b, c),
                       lambda r, b=b, c=col: (best_mpi("create", r, b, c) or (None,))[0], ">=", 1.0)
        continue
    for col, what in ((0, "write+flush"), (1, "read")):
        ratio_line("registered, %s %d B (us): plexus / best osc (Win_create)" % (what, b),
                   lambda r, b=b, c=col: get("px_reg", r, b, c),
                   lambda r, b=b, c=col: (best_mpi("create", r, b, c) or (None,))[0], "<=", 1.0)

print()
print("# registered memory, the two paths: staged (xfer_stage_below=16M) / CMA (=0), and the default (auto) / the cheaper of the two, per round")
print("%-8s %-6s %10s %10s %10s %9s %9s  %s" % ("bytes", "op", "auto_us", "cma_us", "stage_us", "stage/cma", "auto/min", "per-round stage/cma"))
for b in rs_sizes:
    if b > 65536:
        continue
    for col, what in ((0, "write"), (1, "read")):
        sc, am = [], []
        for r in rounds:
            c, s, a = get("px_reg_cma", r, b, col), get("px_reg_stage", r, b, col), get("px_reg", r, b, col)
            if c and s:
                sc.append(s / c)
            if a and c and s:
                am.append(a / min(c, s))
        print("%-8d %-6s %10s %10s %10s %9.2f %9.2f  %s" % (
            b, what, fmt(med([get("px_reg", r, b, col) for r in rounds if get("px_reg", r, b, col)])),
            fmt(med([get("px_reg_cma", r, b, col) for r in rounds if get("px_reg_cma", r, b, col)])),
            fmt(med([get("px_reg_stage", r, b, col) for r in rounds if get("px_reg_stage", r, b, col)])),
            med(sc), med(am), " ".join("%.2f" % x for x in sc)))
if any(k[0] == "base_reg" for k in data):
    print()
    print("# this build / BASE, median of per-round ratios (time; below 1 is faster)")
    for name, base in (("px_reg", "base_reg"), ("px_alloc", "base_alloc")):
        for b in sorted({b for (n, r), d in data.items() if n == base for b in d}):
            for col, what in ((0, "write_us"), (1, "read_us"), (2, "write_MBps"), (3, "read_MBps")):
                rs = [get(name, r, b, col) / get(base, r, b, col) for r in rounds
                      if get(name, r, b, col) and get(base, r, b, col)]
                if rs and (col < 2 or b >= 65536):
                    print("%-9s %-10s %8d %7.2f  rounds: %s" % (name, what, b, med(rs), " ".join("%.2f" % x for x in rs)))

ucx = {}
for r in rounds:
    for n in ("shm", "tcp"):
        try:
            f = open(os.path.join(T, "ucx_%s.%s.csv" % (n, r))).read().strip().split(",")
            ucx[(n, r)] = [float(x) if x else None for x in f]
        except (OSError, ValueError):
            pass
if ucx:
    print()
    print("# ucx_perftest per round (ucp_put_lat 8 B us, ucp_get 4 MiB MB/s, ucp_put_bw 4 MiB MB/s): " +
          "; ".join("%s %s: %s" % (n, r, " ".join(fmt(x) for x in v)) for (n, r), v in sorted(ucx.items())))
    ratio_line("registered, 4 MiB read: plexus / ucp_get over shm",
               lambda r: get("px_reg", r, 4194304, 3), lambda r: (ucx.get(("shm", r)) or [None] * 3)[1], ">=", 1.3)
    ratio_line("tcp;ofi_rxm, 4 MiB write: plexus / ucp_put_bw over tcp",
               lambda r: get("px_ofi", r, 4194304, 2), lambda r: (ucx.get(("tcp", r)) or [None] * 3)[2], ">=", 1.0)
rates = {}
for path in glob.glob(os.path.join(T, "px_alloc_rate.*.csv")):
    for line in open(path):
        f = line.strip().split(",")
        if len(f) == 3 and f[1] == "1":
            rates.setdefault(int(f[0]), []).append(float(f[2]))
if rates:
    print("# batch submission, allocated, one thread, M 8-byte writes/s (median over rounds): " +
          ", ".join("batch %d: %.1f" % (k, med(v)) for k, v in sorted(rates.items())))
print()
print("# %d of %d targets missed" % (sum(1 for t in targets if t[4] == "MISSED"), sum(1 for t in targets if t[4] != "n/a")))
EOF
