#!/usr/bin/env bash
# compare-ofi.sh: btl/ofi over PROV (tcp;ofi_rxm) on loopback, in one run, against
#  - raw libfabric: fi_pingpong -p PROV -e rdm (libfabric-bin), the
#    same provider with nothing on top;
#  - Open MPI's btl/tcp: mpirun --mca pml ob1 --mca btl self,tcp over lo with
#    the project's MPI ping-pong (mpi_pingpong_px, same method as ours).
# Plexus side: test/ofi/ofi_pingpong under pxrun -n 2 with btl=self,ofi.
# Latency is the ping-pong half round trip at LAT_SIZE; "ping-pong bandwidth"
# is size / half round trip at BW_SIZE, which is what fi_pingpong's MB/sec
# is; streaming bandwidth (windows of 64) is compared with Open MPI.
# Targets (docs/ofi.md): latency <= 1.1x fi_pingpong, bandwidth >= 0.95x.
#
# Usage: test/bench/compare-ofi.sh [BUILD_DIR]   (default: $PX_BUILD or ./build)
# Env:   LAT_SIZE (8), BW_SIZE (1048576), LAT_ITERS (5000), BW_ITERS (200),
#        REPS (3): each side runs REPS times, alternating, and keeps its best
#        figures (the machine is shared: the best run is the least disturbed);
#        PLOT: a chart of the best figures, .svg or .png (default
#        compare-ofi.svg in the current folder; PLOT= for none); PROV: the
#        provider of both fi_pingpong and Plexus (default tcp;ofi_rxm; net
#        is btl/ofi's default where libfabric has it, docs/ofi.md).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${PX_BUILD:-$src/build}}" && pwd) || exit 2
LAT_SIZE=${LAT_SIZE:-8}
BW_SIZE=${BW_SIZE:-1048576}
LAT_ITERS=${LAT_ITERS:-5000}
BW_ITERS=${BW_ITERS:-200}
REPS=${REPS:-3}
PROV=${PROV:-tcp;ofi_rxm}
PXRUN=$B/tools/pxrun/pxrun
# The real binaries, not libtool's wrapper scripts.
PP=$B/test/ofi/.libs/ofi_pingpong
[ -x "$PP" ] || PP=$B/test/ofi/ofi_pingpong
MPIPP=$B/test/bench/.libs/mpi_pingpong_px
[ -x "$MPIPP" ] || MPIPP=$B/test/bench/mpi_pingpong_px
export LD_LIBRARY_PATH=$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PX_MCA_mca_component_path=$B/.libs FI_TCP_IFACE=lo FI_NET_IFACE=lo
T=$(mktemp -d)
trap 'rm -rf "$T"; [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null' EXIT
for f in "$PXRUN" "$PP"; do
    [ -x "$f" ] || { echo "compare-ofi: $f is not built (make -C $B all check)" >&2; exit 2; }
done
command -v fi_pingpong >/dev/null || { echo "compare-ofi: fi_pingpong not found (apt-get install libfabric-bin)" >&2; exit 2; }

load0=$(cut -d' ' -f1-3 /proc/loadavg) # for the chart's title
echo "== compare-ofi $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== provider $PROV on lo; latency at $LAT_SIZE B, bandwidth at $BW_SIZE B"

# fi_pingpong prints one row: bytes #sent #ack total time MB/sec usec/xfer
# Mxfers/sec; usec/xfer is the half round trip and MB/sec is size / that.
fipp() { # size iters -> "usec MBps"
    local port=$((20000 + RANDOM % 20000))
    timeout 120 fi_pingpong -p "$PROV" -e rdm -B $port -S "$1" -I "$2" >"$T/fi_srv" 2>&1 &
    srv=$!
    sleep 0.3
    timeout 120 fi_pingpong -p "$PROV" -e rdm -P $port -S "$1" -I "$2" 127.0.0.1 >"$T/fi_cli" 2>&1
    wait "$srv" 2>/dev/null
    srv=
    tail -n 1 "$T/fi_cli" | awk 'NF == 8 { print $7, $6 }'
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 <= b + 0) print a; else print b }'; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 >= b + 0) print a; else print b }'; }
scale=$(awk -v n="$LAT_ITERS" 'BEGIN { print n / 20000 }')
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
have_mpi=0
[ -x "$MPIPP" ] && command -v mpirun >/dev/null && have_mpi=1
fi_lat= fi_bw= px_lat= px_bwlat= px_stream= px_stream4= mpi_lat= mpi_stream= mpi_stream4=
for rep in $(seq "$REPS"); do
    echo "-- round $rep of $REPS"
    read -r l _ < <(fipp "$LAT_SIZE" "$LAT_ITERS")
    read -r _ bw < <(fipp "$BW_SIZE" "$BW_ITERS")
    echo "fi_pingpong -p \"$PROV\" -e rdm: $LAT_SIZE B ${l:-?} us; $BW_SIZE B ${bw:-?} MB/s"
    fi_lat=$(min "$fi_lat" "$l")
    fi_bw=$(max "$fi_bw" "$bw")

    echo "Plexus ofi_pingpong (pxrun -n 2, btl=self,ofi, btl_ofi_provider_include=$PROV):"
    timeout 300 "$PXRUN" -n 2 -x PX_MCA_btl=self,ofi -x "PX_MCA_btl_ofi_provider_include=$PROV" \
        "$PP" --sizes "$LAT_SIZE,$BW_SIZE,4194304" --scale "$scale" </dev/null | tee "$T/px"
    px_lat=$(min "$px_lat" "$(awk -v s="$LAT_SIZE" '$1 == s { print $2 }' "$T/px")")
    px_bwlat=$(min "$px_bwlat" "$(awk -v s="$BW_SIZE" '$1 == s { print $2 }' "$T/px")")
    px_stream=$(max "$px_stream" "$(awk -v s="$BW_SIZE" '$1 == s { print $3 }' "$T/px")")
    px_stream4=$(max "$px_stream4" "$(awk '$1 == 4194304 { print $3 }' "$T/px")")

    if [ $have_mpi = 1 ]; then
        echo "Open MPI 4.1 btl/tcp on lo (mpirun --mca pml ob1 --mca btl self,tcp, mpi_pingpong_px):"
        timeout 300 mpirun $root --oversubscribe -np 2 --mca pml ob1 --mca btl self,tcp \
            --mca btl_tcp_if_include lo "$MPIPP" --csv --sizes "$LAT_SIZE,$BW_SIZE,4194304" \
            </dev/null | tr ',' ' ' | tee "$T/mpi"
        mpi_lat=$(min "$mpi_lat" "$(awk -v s="$LAT_SIZE" '$1 == s { print $2 }' "$T/mpi")")
        mpi_stream=$(max "$mpi_stream" "$(awk -v s="$BW_SIZE" '$1 == s { print $3 }' "$T/mpi")")
        mpi_stream4=$(max "$mpi_stream4" "$(awk '$1 == 4194304 { print $3 }' "$T/mpi")")
    fi
done
[ $have_mpi = 1 ] || echo "-- Open MPI peer skipped: mpirun or $MPIPP missing"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'; }
verdict() { # ratio op target
    awk -v r="$1" -v op="$2" -v t="$3" 'BEGIN { if (r == "n/a") print "n/a";
        else if ((op == "<=" && r + 0 <= t + 0) || (op == ">=" && r + 0 >= t + 0)) print "met";
        else print "NOT met" }'
}
px_bw=$(awk -v s="$BW_SIZE" -v l="$px_bwlat" 'BEGIN { if (l + 0 > 0) printf "%.1f", s / l }')
r1=$(ratio "$px_lat" "$fi_lat")
r2=$(ratio "$px_bw" "$fi_bw")
echo "== best of $REPS rounds, and ratios"
echo "latency $LAT_SIZE B, Plexus ofi / fi_pingpong:              $r1 (target <= 1.1: $(verdict "$r1" "<=" 1.1))  [$px_lat us vs $fi_lat us]"
echo "ping-pong bandwidth $BW_SIZE B, Plexus ofi / fi_pingpong:  $r2 (target >= 0.95: $(verdict "$r2" ">=" 0.95))  [$px_bw vs $fi_bw MB/s]"
echo "latency $LAT_SIZE B, Plexus ofi / Open MPI btl/tcp:         $(ratio "$px_lat" "$mpi_lat")  [$px_lat us vs ${mpi_lat:-?} us]"
echo "streaming bandwidth $BW_SIZE B, Plexus ofi / Open MPI tcp: $(ratio "$px_stream" "$mpi_stream")  [$px_stream vs ${mpi_stream:-?} MB/s]"
echo "streaming bandwidth 4 MiB, Plexus ofi / Open MPI tcp:      $(ratio "$px_stream4" "$mpi_stream4")  [$px_stream4 vs ${mpi_stream4:-?} MB/s]"
# One chart of the best figures (test/bench/plot.sh): latency is the half
# round trip (at BW_SIZE too); bandwidth is streaming for Plexus and Open
# MPI, ping-pong for fi_pingpong.
if [ -n "${PLOT-compare-ofi.svg}" ]; then
    printf 'bytes,lat_us,bw_MBps\n%s,%s,\n%s,%s,%s\n4194304,,%s\n' "$LAT_SIZE" "$px_lat" \
        "$BW_SIZE" "$px_bwlat" "$px_stream" "$px_stream4" >"$T/plot_px.csv"
    printf 'bytes,lat_us,bw_MBps\n%s,%s,\n%s,%s,%s\n' "$LAT_SIZE" "$fi_lat" "$BW_SIZE" \
        "$(awk -v s="$BW_SIZE" -v b="$fi_bw" 'BEGIN { if (b + 0 > 0) printf "%.3f", s / b }')" \
        "$fi_bw" >"$T/plot_fi.csv"
    [ $have_mpi = 1 ] && printf 'bytes,lat_us,bw_MBps\n%s,%s,\n%s,,%s\n4194304,,%s\n' \
        "$LAT_SIZE" "$mpi_lat" "$BW_SIZE" "$mpi_stream" "$mpi_stream4" >"$T/plot_mpi.csv"
    PX_BUILD=$B PLOT_LOAD=$load0 bash "$src/test/bench/plot.sh" "${PLOT-compare-ofi.svg}" \
        "compare-ofi: Plexus btl/ofi and peers over $PROV on lo, best of $REPS" \
        "plexus ofi=$T/plot_px.csv" "fi_pingpong (bw: ping-pong)=$T/plot_fi.csv" \
        "Open MPI btl/tcp=$T/plot_mpi.csv" || echo "(no chart)"
fi
