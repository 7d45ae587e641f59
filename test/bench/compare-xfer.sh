#!/usr/bin/env bash
# compare-xfer.sh: the transfer engine (px_perf --xfer) against Open MPI's
# one-sided MPI (test/bench/osc_mpi: MPI_Put/MPI_Get + MPI_Win_flush under
# MPI_Win_lock_all, on MPI_Win_allocate and MPI_Win_create windows, with osc
# rdma and osc ucx), UCX's ucx_perftest (ucp_put_lat, ucp_get, ucp_put_bw over
# shared memory and over tcp) and memcpy, in ONE run, interleaved: every
# round runs every contender once, and each keeps its best round. Prints
# every figure, then the ratios against the targets of issue 13
# (docs/transfer.md, "Measured"; the runs: docs/measurements/transfer.md).
#
#   Plexus, allocated regions (shm mapping):  px_perf --xfer --xfer-mem alloc
#   Plexus, registered user memory (CMA):     px_perf --xfer --xfer-mem reg, xfer_stage_below=0
#   the same with xfer_stage_below=8k:        small requests served by the target (staged;
#                                             the default "auto" does the same under 8 KiB)
#   Plexus over tcp;ofi_rxm on loopback:      btl=self,ofi, --xfer-mem reg
#
# Usage: test/bench/compare-xfer.sh [BUILD_DIR]   (default: $PX_BUILD or ./build)
# Env:   REPEAT (rounds, default 3), SIZES (default 8,4096,65536,4194304),
#        PRIORITY=0 (no autogroup priority boost, see compare-shm.sh)
# Not part of the test suite: run by hand, on a machine as quiet as you can get.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${PX_BUILD:-$src/build}}" && pwd) || exit 2
SIZES=${SIZES:-8,4096,65536,4194304}
REPEAT=${REPEAT:-3}
PXRUN=$B/tools/pxrun/pxrun
if [ -x "$B/tools/px_perf/.libs/px_perf" ]; then
    PXPERF=$B/tools/px_perf/.libs/px_perf
else
    PXPERF=$B/tools/px_perf/px_perf
fi
OSC=$B/test/bench/osc_mpi
export LD_LIBRARY_PATH=$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PX_MCA_mca_component_path=$B/.libs FI_TCP_IFACE=lo
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for f in "$PXRUN" "$PXPERF"; do
    [ -x "$f" ] || { echo "compare-xfer: $f is not built (make -C $B)" >&2; exit 2; }
done
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core"
have_mpi=0
[ -x "$OSC" ] && command -v mpirun >/dev/null && have_mpi=1
have_ucx=0
command -v ucx_perftest >/dev/null && have_ucx=1
NICE=""
if [ "${PRIORITY:-1}" = 1 ] && [ "$(id -u)" = 0 ] && [ -w /proc/self/autogroup ]; then
    NICE="setsid $T/hi"
    printf '#!/bin/sh\necho -20 > /proc/self/autogroup 2>/dev/null\nexec "$@"\n' >"$T/hi"
    chmod +x "$T/hi"
fi
OFI=(env PX_MCA_btl=self,ofi "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm")

echo "== compare-xfer $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== sizes $SIZES; $REPEAT rounds, interleaved; best round per contender"

# px_perf --xfer --csv prints two tables: bytes,write_us,read_us,write_MBps,read_MBps
# and batch,threads,Mreq_per_s. Split them.
px_run() { # name args...
    local name=$1
    shift
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
    echo "-- round $rep (load $(cut -d' ' -f1-3 /proc/loadavg))"
    px_run px_alloc "$PXRUN" -n 2 "$PXPERF" --xfer --xfer-mem alloc --sizes "$SIZES" --csv
    px_run px_reg "$PXRUN" -n 2 --mca xfer_stage_below 0 "$PXPERF" --xfer --xfer-mem reg \
        --sizes "$SIZES" --csv
    px_run px_reg_stage "$PXRUN" -n 2 --mca xfer_stage_below 8k "$PXPERF" --xfer --xfer-mem reg \
        --sizes 8,4096 --csv
    px_run px_ofi "${OFI[@]}" "$PXRUN" -n 2 "$PXPERF" --xfer --xfer-mem reg --sizes 4194304 --csv
    if [ $have_mpi = 1 ]; then
        for osc in rdma ucx; do
            if [ $osc = rdma ]; then
                args=(--mca osc rdma --mca pml ob1 --mca btl self,vader)
            else
                args=(--mca osc ucx --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
            fi
            for win in allocate create; do
                $NICE $MPIRUN "${args[@]}" "$OSC" --win $win --sizes "$SIZES" --csv </dev/null \
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
    $NICE "$PXPERF" --memcpy 4194304 | sed -n 's/.*: \([0-9.]*\) MB\/s/\1/p' >"$T/memcpy.$rep"
done

# Best per size over the rounds: min of latency columns (2, 3), max of
# bandwidth columns (4, 5).
best5() { # name
    ls "$T/$1".[0-9]*.csv >/dev/null 2>&1 || return 1
    awk -F, '{ b = $1; if (!(b in seen)) { seen[b] = 1; order[n++] = b; l2[b] = $2; l3[b] = $3; w4[b] = $4; w5[b] = $5 }
               if ($2 < l2[b]) l2[b] = $2; if ($3 < l3[b]) l3[b] = $3; if ($4 > w4[b]) w4[b] = $4; if ($5 > w5[b]) w5[b] = $5 }
             END { for (i = 0; i < n; i++) { b = order[i]; print b "," l2[b] "," l3[b] "," w4[b] "," w5[b] } }' \
        "$T/$1".[0-9]*.csv >"$T/$1.csv"
}
f() { awk -F, -v b="$2" -v c="$3" '$1 == b { print $c; exit }' "$T/$1.csv" 2>/dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.3f", a / b }'; }
verdict() {
    awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { if (v == "n/a") print "n/a"; else if ((op == "<=" && v <= t) || (op == ">=" && v >= t)) print "met"; else print "MISSED" }'
}
contenders="px_alloc px_reg px_reg_stage px_ofi mpi_rdma_allocate mpi_ucx_allocate mpi_rdma_create mpi_ucx_create"
echo
for c in $contenders; do
    best5 "$c" || continue
    echo "== $c (bytes, write|put us, read|get us, write|put MB/s, read|get MB/s), best of $REPEAT"
    cat "$T/$c.csv"
done
rate_best() { # name -> lines "batch threads best"
    ls "$T/$1".[0-9]*.csv >/dev/null 2>&1 || return 1
    awk -F, '{ k = $1 "," $2; if (!(k in v)) order[n++] = k; if (!(k in v) || $3 > v[k]) v[k] = $3 }
             END { for (i = 0; i < n; i++) print order[i] "," v[order[i]] }' "$T/$1".[0-9]*.csv
}
echo "== px_alloc batch submission rate (batch, threads, M requests/s of 8-byte writes), best of $REPEAT"
rate_best px_alloc_rate | tee "$T/rate.csv"
echo "== px_reg batch submission rate (CMA path)"
rate_best px_reg_rate
ucx_best() { # name -> "lat getbw putbw"
    ls "$T/$1".[0-9]*.csv >/dev/null 2>&1 || return 1
    awk -F, 'NR == 1 || $1 < l { l = $1 } $2 > g { g = $2 } $3 > p { p = $3 } END { print l, g, p }' "$T/$1".[0-9]*.csv
}
if [ $have_ucx = 1 ]; then
    read -r ushm_lat ushm_get ushm_put <<<"$(ucx_best ucx_shm)"
    read -r utcp_lat utcp_get utcp_put <<<"$(ucx_best ucx_tcp)"
    echo "== ucx_perftest (best of $REPEAT): ucp_put_lat 8 B (us, 50%ile), ucp_get 4 MiB, ucp_put_bw 4 MiB (MB/s)"
    echo "shm (posix,cma,self): $ushm_lat us, get $ushm_get MB/s, put $ushm_put MB/s"
    echo "tcp (lo):             $utcp_lat us, get $utcp_get MB/s, put $utcp_put MB/s"
fi
memcpy=$(sort -g "$T"/memcpy.* | tail -1)
echo "== memcpy of 4 MiB (px_perf --memcpy, best of $REPEAT): $memcpy MB/s"

# The best Open MPI window of a kind, per size and column.
ompi_best() { # kind(allocate|create) bytes col min|max -> "value name"
    local bv="" bn="" v o
    for o in rdma ucx; do
        v=$(f "mpi_${o}_$1" "$2" "$3")
        [ -z "$v" ] && continue
        if [ -z "$bv" ] || awk -v a="$v" -v b="$bv" -v h="$4" 'BEGIN { exit !((h == "min" && a < b) || (h == "max" && a > b)) }'; then
            bv=$v bn="osc $o"
        fi
    done
    echo "$bv $bn"
}
line() { printf "%-74s %8s  (target %s %s)  %s\n" "$1" "$2" "$3" "$4" "$(verdict "$2" "$3" "$4")"; }
echo
echo "== ratios against the targets (best round of every contender)"
if [ $have_mpi = 1 ]; then
    for b in $(echo "$SIZES" | tr , ' '); do
        [ "$b" = 4194304 ] && continue
        read -r v n <<<"$(ompi_best allocate "$b" 2 min)"
        line "allocated, write+flush $b B: plexus / MPI_Put+flush, Win_allocate (${n:-none})" "$(ratio "$(f px_alloc "$b" 2)" "$v")" "<=" 1.0
        read -r v n <<<"$(ompi_best allocate "$b" 3 min)"
        line "allocated, read $b B: plexus / MPI_Get+flush, Win_allocate (${n:-none})" "$(ratio "$(f px_alloc "$b" 3)" "$v")" "<=" 1.0
    done
    read -r v n <<<"$(ompi_best allocate 4194304 4 max)"
    line "allocated, 4 MiB write: plexus / MPI_Put, Win_allocate (${n:-none})" "$(ratio "$(f px_alloc 4194304 4)" "$v")" ">=" 1.0
    read -r v n <<<"$(ompi_best allocate 4194304 5 max)"
    line "allocated, 4 MiB read: plexus / MPI_Get, Win_allocate (${n:-none})" "$(ratio "$(f px_alloc 4194304 5)" "$v")" ">=" 1.0
fi
line "allocated, 4 MiB write: plexus / memcpy of 4 MiB" "$(ratio "$(f px_alloc 4194304 4)" "$memcpy")" ">=" 0.9
line "allocated, 4 MiB read: plexus / memcpy of 4 MiB" "$(ratio "$(f px_alloc 4194304 5)" "$memcpy")" ">=" 0.9
if [ $have_mpi = 1 ]; then
    for b in $(echo "$SIZES" | tr , ' '); do
        if [ "$b" = 4194304 ]; then
            read -r v n <<<"$(ompi_best create "$b" 4 max)"
            line "registered, 4 MiB write: plexus / MPI_Put, Win_create (${n:-none})" "$(ratio "$(f px_reg "$b" 4)" "$v")" ">=" 1.0
            read -r v n <<<"$(ompi_best create "$b" 5 max)"
            line "registered, 4 MiB read: plexus / MPI_Get, Win_create (${n:-none})" "$(ratio "$(f px_reg "$b" 5)" "$v")" ">=" 1.0
            continue
        fi
        read -r v n <<<"$(ompi_best create "$b" 2 min)"
        line "registered, write+flush $b B: plexus / MPI_Put+flush, Win_create (${n:-none})" "$(ratio "$(f px_reg "$b" 2)" "$v")" "<=" 1.0
        read -r v n <<<"$(ompi_best create "$b" 3 min)"
        line "registered, read $b B: plexus / MPI_Get+flush, Win_create (${n:-none})" "$(ratio "$(f px_reg "$b" 3)" "$v")" "<=" 1.0
    done
fi
if [ $have_mpi = 1 ]; then
    echo "== registered memory with xfer_stage_below=8k (the target's CPU serves small requests, as osc ucx's does)"
    for b in 8 4096; do
        read -r v n <<<"$(ompi_best create "$b" 2 min)"
        line "registered+stage_below, write+flush $b B: plexus / Win_create (${n:-none})" "$(ratio "$(f px_reg_stage "$b" 2)" "$v")" "<=" 1.0
        read -r v n <<<"$(ompi_best create "$b" 3 min)"
        line "registered+stage_below, read $b B: plexus / Win_create (${n:-none})" "$(ratio "$(f px_reg_stage "$b" 3)" "$v")" "<=" 1.0
    done
fi
if [ $have_ucx = 1 ]; then
    line "registered, 4 MiB read: plexus / ucp_get over shm" "$(ratio "$(f px_reg 4194304 5)" "$ushm_get")" ">=" 1.3
    line "tcp;ofi_rxm, 4 MiB write: plexus / ucp_put_bw over tcp" "$(ratio "$(f px_ofi 4194304 4)" "$utcp_put")" ">=" 1.0
fi
r1=$(awk -F, '$2 == 1 && $3 > m { m = $3 } END { print m + 0 }' "$T/rate.csv")
line "batch submission, one thread, best batch: M 8-byte writes/s" "$r1" ">=" 5
echo "== done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
