#!/usr/bin/env bash
# compare-threads.sh: latency and message rate with 1, 2 and 4 threads per
# process, 2 processes on this host, Plexus at PX_THREAD_MULTIPLE against
# Open MPI at MPI_THREAD_MULTIPLE (issue 25; docs/threads.md, "What it
# costs"; figures in docs/measurements/threads.md). Both sides run the same
# program, test/bench/thread_bench.c (thread_bench_px, thread_bench_mpi):
# thread t of one process works with thread t of the other on its own tag
# (MPI: also on its own duplicate of MPI_COMM_WORLD, COMM=dup, the usual MPI
# practice; COMM=world keeps every thread on MPI_COMM_WORLD).
#
# Usage: test/bench/compare-threads.sh [BUILD_DIR [BASE_BUILD_DIR]]
#        (default BUILD_DIR: $PX_BUILD or ./build). With BASE_BUILD_DIR, this
#        build's thread_bench_px also runs on that build's library
#        (px_base: before/after one change, in the same rounds).
# Env:   THREADS  thread counts (default "1 2 4")
#        ROUNDS   interleaved rounds (default 5): every contender once per
#                 round and thread count, the order rotated from round to round
#        REPS     timed blocks per run (default 9; a run's figure is its
#                 median block); ITERS round trips and WINDOWS windows of 64
#                 messages per block (default 2000 and 20), divided among the
#                 threads (each thread ITERS/T and WINDOWS/T, at least 1): a
#                 block moves as many messages at every thread count
#        RUN_TIMEOUT  seconds a run may take (default 300): with the threads
#                 of a process on one core, Open MPI's ob1 spins a whole time
#                 slice per message (milliseconds); a run cut short is printed
#                 as such and counts as missing
#        COMM     dup (default) or world, for the MPI program
#        BIND     core (default, as compare-shm.sh: one core per process, its
#                 threads share it) or none
#        OFI=1    also Plexus over btl/ofi (tcp;ofi_rxm on loopback) against
#                 Open MPI ob1 with btl tcp on lo, as a second row
#        PRIORITY=0: no autogroup nice -20 (see compare-shm.sh)
#        LOCKS    runtime_thread_locks settings to run beside px, each as its
#                 own contender px_SETTING (e.g. LOCKS="api fine": px_api,
#                 px_fine, with PX_MCA_runtime_thread_locks set for that run
#                 only; px runs the default); the targets are then printed
#                 for each of them too, and px_fine / px_api (px_auto / px_api)
#                 per round
#
# Contenders (each on 2 processes):
#   px        pxrun thread_bench_px --level multiple       (btl self,shm)
#   px_ser    pxrun thread_bench_px --level serialized     (1 thread only)
#   vader     mpirun --mca pml ob1 --mca btl self,vader thread_bench_mpi
#   ucx       mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
#             (UCX_TLS left to UCX: it picks shared memory on one host)
# Printed: each run's figure (median block), per thread count the median
# over the rounds of each contender, and the median over the rounds of each
# round's ratio Plexus / best peer (latency: below 1 is better; rate: above 1
# is better); then the targets of issue 25: single-thread latency at
# MULTIPLE / SERIALIZED <= 1.05 and the 2-thread rate / the better Open MPI
# configuration >= 1.0. Nothing here asserts a figure.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${PX_BUILD:-$src/build}}" && pwd) || exit 2
BASE=""
if [ -n "${2:-}" ]; then BASE=$(cd "$2" && pwd) || exit 2; fi
THREADS=${THREADS:-1 2 4}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-9}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
ITERS=${ITERS:-2000}
WINDOWS=${WINDOWS:-20}
COMM=${COMM:-dup}
BIND=${BIND:-core}
LOCKS=${LOCKS:-}
for l in $LOCKS; do
    case $l in api | fine | auto) ;; *) echo "compare-threads: LOCKS=$LOCKS: expected api, fine and/or auto" >&2; exit 2 ;; esac
done
case $COMM in dup | world) ;; *) echo "compare-threads: COMM=$COMM: expected dup or world" >&2; exit 2 ;; esac
case $BIND in core | none) ;; *) echo "compare-threads: BIND=$BIND: expected core or none" >&2; exit 2 ;; esac
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

real_bin() { # the real binary, not libtool's wrapper script
    local d=${1%/*} f=${1##*/}
    if [ -x "$d/.libs/$f" ]; then echo "$d/.libs/$f"; else echo "$1"; fi
}
PXRUN=$B/tools/pxrun/pxrun
PXB=$(real_bin "$B/test/bench/thread_bench_px")
MPB=$B/test/bench/thread_bench_mpi
for f in "$PXRUN" "$PXB"; do
    [ -x "$f" ] || { echo "compare-threads: $f is not built (make -C $B)" >&2; exit 2; }
done
if [ -n "$BASE" ]; then
    [ -e "$BASE/.libs/libplexus.so" ] || { echo "compare-threads: $BASE/.libs/libplexus.so is not built" >&2; exit 2; }
fi
export LD_LIBRARY_PATH=$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo} # OFI=1: libfabric tcp on loopback
# Plugins (btl/ofi) from this build (the base build runs over shm only).
export PX_MCA_mca_component_path=${PX_MCA_mca_component_path:-$B/.libs}
MPIRUN="mpirun --allow-run-as-root -np 2 --bind-to $BIND"
have_mpi=0
[ -x "$MPB" ] && command -v mpirun >/dev/null && have_mpi=1
have_ucx=0
if [ $have_mpi = 1 ] && ompi_info 2>/dev/null | grep -q "MCA pml: ucx"; then have_ucx=1; fi

NICE=""
if [ "${PRIORITY:-1}" = 1 ] && [ "$(id -u)" = 0 ] && [ -w /proc/self/autogroup ]; then
    NICE="setsid $T/hi"
    printf '#!/bin/sh\necho -20 > /proc/self/autogroup 2>/dev/null\nexec "$@"\n' >"$T/hi"
    chmod +x "$T/hi"
fi

echo "== compare-threads $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   build $B${BASE:+, base build $BASE}; $ROUNDS interleaved rounds; threads: $THREADS"
echo "   each run: $REPS timed blocks (median kept) of $ITERS round trips and $WINDOWS windows of 64 x 8 B, divided among the threads"
echo "   binding: $BIND (pxrun --bind-to $BIND, mpirun --bind-to $BIND); MPI communicators: $COMM"
[ $have_mpi = 1 ] || echo "== Open MPI peers skipped: thread_bench_mpi not built or mpirun missing"
[ $have_mpi = 1 ] && [ $have_ucx = 0 ] && echo "== Open MPI has no pml ucx here: ucx skipped"

contenders_for() { # threads
    local c="px" l
    for l in $LOCKS; do c="$c px_$l"; done
    [ "$1" = 1 ] && c="$c px_ser"
    [ -n "$BASE" ] && c="$c px_base"
    if [ $have_mpi = 1 ]; then
        c="$c vader"
        [ $have_ucx = 1 ] && c="$c ucx"
    fi
    if [ "${OFI:-0}" = 1 ]; then
        c="$c px_ofi"
        [ $have_mpi = 1 ] && c="$c tcp"
    fi
    echo "$c"
}
OFIMCA="--mca btl self,ofi --mca btl_ofi_provider_include tcp;ofi_rxm"
run_one() { # name threads round
    local out="$T/$1.$2.$3" it=$((ITERS / $2)) wi=$((WINDOWS / $2)) ARGS
    [ $it -ge 1 ] || it=1
    [ $wi -ge 1 ] || wi=1
    ARGS="--reps $REPS --iters $it --windows $wi --csv"
    case $1 in
    px) $NICE timeout -k 10 "$RUN_TIMEOUT" "$PXRUN" -n 2 --bind-to "$BIND" "$PXB" --threads "$2" --level multiple $ARGS ;;
    px_api | px_fine | px_auto) $NICE timeout -k 10 "$RUN_TIMEOUT" env PX_MCA_runtime_thread_locks="${1#px_}" \
        "$PXRUN" -n 2 --bind-to "$BIND" "$PXB" --threads "$2" --level multiple $ARGS ;;
    px_ser) $NICE timeout -k 10 "$RUN_TIMEOUT" "$PXRUN" -n 2 --bind-to "$BIND" "$PXB" --threads 1 --level serialized $ARGS ;;
    px_base) $NICE timeout -k 10 "$RUN_TIMEOUT" env LD_LIBRARY_PATH="$BASE/.libs" "$BASE/tools/pxrun/pxrun" -n 2 --bind-to "$BIND" \
        "$PXB" --threads "$2" --level multiple $ARGS ;;
    px_ofi) $NICE timeout -k 10 "$RUN_TIMEOUT" "$PXRUN" -n 2 --bind-to "$BIND" $OFIMCA "$PXB" --threads "$2" --level multiple $ARGS ;;
    vader) $NICE timeout -k 10 "$RUN_TIMEOUT" $MPIRUN --mca pml ob1 --mca btl self,vader "$MPB" --threads "$2" --comm "$COMM" $ARGS ;;
    ucx) $NICE timeout -k 10 "$RUN_TIMEOUT" $MPIRUN --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        "$MPB" --threads "$2" --comm "$COMM" $ARGS ;;
    tcp) $NICE timeout -k 10 "$RUN_TIMEOUT" $MPIRUN --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo \
        "$MPB" --threads "$2" --comm "$COMM" $ARGS ;;
    esac </dev/null 2>"$T/err" | grep -E '^[0-9]+,' >"$out"
    if [ ! -s "$out" ]; then
        echo "   ($1, $2 threads, failed in round $3: $(head -c 300 "$T/err" | tr '\n' ' '))"
        rm -f "$out"
        return
    fi
    IFS=, read -r _ lat rate _ _ <"$out"
    printf "   %-8s %d thr  lat %8s us  rate %8s M/s\n" "$1" "$2" "$lat" "$rate"
}

for r in $(seq "$ROUNDS"); do
    echo "== round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
    for th in $THREADS; do
        set -- $(contenders_for "$th")
        n=$#
        order=""
        for k in $(seq 0 $((n - 1))); do
            i=$(((r - 1 + k) % n + 1))
            order="$order ${!i}"
        done
        for c in $order; do run_one "$c" "$th" "$r"; done
    done
done

# field NAME THREADS ROUND COLUMN(2 lat, 3 rate)
field() { [ -s "$T/$1.$2.$3" ] && cut -d, -f"$4" "$T/$1.$2.$3"; }
median() { grep -v -e '^$' -e n/a | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.3f", a / b }'; }
verdict() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { if (v == "n/a") print "n/a"; else if ((op == "<=" && v <= t) || (op == ">=" && v >= t)) print "met"; else print "MISSED" }'; }
peer_best() { # threads round column peers...: the best peer's figure in that round
    local th=$1 r=$2 c=$3 p v best=""
    shift 3
    for p in "$@"; do
        v=$(field "$p" "$th" "$r" "$c")
        [ -z "$v" ] && continue
        if [ -z "$best" ] || awk -v a="$v" -v q="$best" -v c="$c" 'BEGIN { exit !((c == 2 && a < q) || (c == 3 && a > q)) }'; then best=$v; fi
    done
    echo "$best"
}
per_round() { # a threads column peers...: ratio a / best of peers in every round
    local a=$1 th=$2 c=$3 r
    shift 3
    for r in $(seq "$ROUNDS"); do
        ratio "$(field "$a" "$th" "$r" "$c")" "$(peer_best "$th" "$r" "$c" "$@")"
        echo
    done
}
med_of() { # name threads column: median over the rounds
    local r
    for r in $(seq "$ROUNDS"); do field "$1" "$2" "$r" "$3"; echo; done | median
}

peers=""
[ $have_mpi = 1 ] && peers="vader"
[ $have_ucx = 1 ] && peers="$peers ucx"
echo
echo "== medians over the rounds (latency: one-way us per thread; rate: million 8-byte messages/s, all threads)"
printf "%-8s %7s" contender threads
for th in $THREADS; do printf " | %8s %8s" "lat@$th" "rate@$th"; done
echo
for c in px px_api px_fine px_auto px_ser px_base vader ucx px_ofi tcp; do
    ls "$T/$c".* >/dev/null 2>&1 || continue
    printf "%-8s %7s" "$c" ""
    for th in $THREADS; do printf " | %8s %8s" "$(med_of "$c" "$th" 2)" "$(med_of "$c" "$th" 3)"; done
    echo
done

line() { # label a threads column op target peers...
    local label=$1 a=$2 th=$3 c=$4 op=$5 t=$6 rs m
    shift 6
    rs=$(per_round "$a" "$th" "$c" "$@" | tr '\n' ' ')
    m=$(echo "$rs" | tr ' ' '\n' | median)
    if [ -n "$t" ]; then
        printf "%-46s median %7s %-6s (target %s %s)  rounds: %s\n" "$label" "$m" "$(verdict "$m" "$op" "$t")" "$op" "$t" "$rs"
    else
        printf "%-46s median %7s  rounds: %s\n" "$label" "$m" "$rs"
    fi
}
if [ -n "$peers" ]; then
    echo
    echo "== median over the rounds of each round's ratio Plexus (MULTIPLE) / best Open MPI peer ($peers)"
    for th in $THREADS; do
        line "latency, $th thread(s) per process" px "$th" 2 "<=" "" $peers
        line "message rate, $th thread(s) per process" px "$th" 3 ">=" "" $peers
    done
    if [ "${OFI:-0}" = 1 ] && [ $have_mpi = 1 ]; then
        echo "== over loopback: Plexus btl/ofi (tcp;ofi_rxm) / Open MPI ob1 btl/tcp"
        for th in $THREADS; do
            line "ofi latency, $th thread(s)" px_ofi "$th" 2 "<=" "" tcp
            line "ofi message rate, $th thread(s)" px_ofi "$th" 3 ">=" "" tcp
        done
    fi
fi
echo
echo "== targets of issue 25"
case " $THREADS " in *" 1 "*)
    line "1-thread latency: MULTIPLE / SERIALIZED" px 1 2 "<=" 1.05 px_ser
    line "1-thread rate: MULTIPLE / SERIALIZED" px 1 3 ">=" "" px_ser
    ;;
esac
case " $THREADS " in *" 2 "*)
    [ -n "$peers" ] && line "2-thread rate / better Open MPI" px 2 3 ">=" 1.0 $peers
    ;;
esac
for l in $LOCKS; do
    case " $THREADS " in *" 1 "*)
        line "px_$l: 1-thread latency / SERIALIZED" "px_$l" 1 2 "<=" 1.05 px_ser
        line "px_$l: 1-thread rate / SERIALIZED" "px_$l" 1 3 ">=" "" px_ser
        ;;
    esac
    case " $THREADS " in *" 2 "*)
        [ -n "$peers" ] && line "px_$l: 2-thread rate / better Open MPI" "px_$l" 2 3 ">=" 1.0 $peers
        ;;
    esac
done
# fine and auto against px_api when it ran, else against px (the default setting).
ref=px
[[ " $LOCKS " == *" api "* ]] && ref=px_api
for l in fine auto; do
    [[ " $LOCKS " == *" $l "* ]] || continue
    echo
    echo "== px_$l / $ref, median of the per-round ratios"
    for th in $THREADS; do
        line "latency, $th thread(s)" px_$l "$th" 2 "<=" "" $ref
        line "rate, $th thread(s)" px_$l "$th" 3 ">=" "" $ref
    done
done
if [ -n "$BASE" ]; then
    echo
    echo "== after / before: px (this build) / px_base (base build's library), median of the per-round ratios"
    for th in $THREADS; do
        line "latency, $th thread(s)" px "$th" 2 "<=" "" px_base
        line "rate, $th thread(s)" px "$th" 3 ">=" "" px_base
    done
    case " $THREADS " in *" 1 "*)
        line "base: 1-thread latency MULTIPLE / SERIALIZED" px_base 1 2 "<=" 1.05 px_ser
        ;;
    esac
fi
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$T"/* "$KEEP"/; fi
