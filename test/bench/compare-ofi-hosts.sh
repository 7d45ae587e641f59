#!/usr/bin/env bash
# compare-ofi-hosts.sh: btl/ofi over tcp;ofi_rxm between two "hosts" (network
# namespaces joined by a veth pair, test/lib/netns.sh) and on loopback, in one
# run, against Open MPI's btl/tcp and UCX over tcp, all under Debian's mpirun
# with one rank bound to each core (a rankfile: rank 0 on core 0, rank 1 on
# core 1, as --bind-to core would on one host). A hand-run benchmark, not part
# of the test suite (timings on a shared machine are not for tests).
#
# Contenders (each run measures ping-pong latency and windowed streaming
# bandwidth at every size, the same method: px_perf and mpi_pingpong_px):
#   plexus    px_perf of BUILD_DIR, PX_MCA_btl=self,ofi, provider PROV
#   base      px_perf of BASE_BUILD_DIR (another Plexus build, e.g. main's),
#             the same settings but provider BASE_PROV: before/after in one run
#   ompi-tcp  mpirun --mca pml ob1 --mca btl self,tcp (mpi_pingpong_px)
#   ucx-tcp   mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices
#             any -x UCX_TLS=tcp,self (plus UCX_ENV)
# Rounds are interleaved (the order rotates each round); the tables give the
# best of the rounds per size (lowest latency, highest bandwidth), the
# median, and the ratios: of the bests, and the median of the rounds' own
# ratios (both measured minutes apart at most).
#
# Usage: test/bench/compare-ofi-hosts.sh BUILD_DIR [BASE_BUILD_DIR]   (root)
# Env:   REPS (interleaved rounds, default 5); WHERE ("hosts lo": across the
#        veth pair, and both ranks on one namespace's loopback); SIZES (comma
#        list, default 8,1024,4096,16384,65536,262144,1048576,4194304);
#        SIDES (default "plexus base ompi-tcp ucx-tcp", base only with a
#        BASE_BUILD_DIR); UCX_ENV (extra -x settings for UCX, space separated);
#        PX_ENV (extra -x settings for both Plexus builds); BASE_ENV (extra
#        -x settings for base only: with BASE_BUILD_DIR = BUILD_DIR, an A/B of
#        one variable, e.g. BASE_ENV=PX_MCA_btl_ofi_get_limit=1073741824); KEEP (a folder to
#        keep every run's CSV in); PRIORITY (1: every contender runs in a
#        session of its own whose scheduler autogroup gets nice -20, as in
#        compare-shm.sh; 0: off); PLOT (chart prefix: PLOT-hosts.svg and
#        PLOT-lo.svg, default compare-ofi-hosts; PLOT= for none); PROV (the
#        libfabric provider of the plexus side, btl_ofi_provider_include;
#        default tcp;ofi_rxm, "default" for the build's own choice, which is
#        net where libfabric has it); BASE_PROV (the base side's, default
#        PROV).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: compare-ofi-hosts.sh BUILD_DIR [BASE_BUILD_DIR]" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
BASE=
[ $# -ge 2 ] && { BASE=$(cd "$2" && pwd) || exit 2; }
REPS=${REPS:-5}
WHERE=${WHERE:-hosts lo}
SIZES=${SIZES:-8,1024,4096,16384,65536,262144,1048576,4194304}
SIDES=${SIDES:-plexus base ompi-tcp ucx-tcp}
[ -n "$BASE" ] || SIDES=$(echo "$SIDES" | sed 's/\bbase\b//')
PROV=${PROV-tcp;ofi_rxm}
BASE_PROV=${BASE_PROV-$PROV}
[ "$(id -u)" = 0 ] || { echo "compare-ofi-hosts: needs root (network namespaces)" >&2; exit 2; }
for need in ip unshare mpirun; do
    command -v $need >/dev/null || { echo "compare-ofi-hosts: $need is missing" >&2; exit 2; }
done
perf_bin() { # the real px_perf of build $1, not libtool's wrapper
    if [ -x "$1/tools/px_perf/.libs/px_perf" ]; then echo "$1/tools/px_perf/.libs/px_perf"; else echo "$1/tools/px_perf/px_perf"; fi
}
for b in $B $BASE; do
    [ -x "$(perf_bin "$b")" ] || { echo "compare-ofi-hosts: $b has no px_perf (make -C $b)" >&2; exit 2; }
    [ -e "$b/.libs/plexus_btl_ofi.so" ] || { echo "compare-ofi-hosts: $b has no btl/ofi" >&2; exit 2; }
done
MPIPP=$B/test/bench/.libs/mpi_pingpong_px
[ -x "$MPIPP" ] || MPIPP=$B/test/bench/mpi_pingpong_px
[ -x "$MPIPP" ] || SIDES=$(echo "$SIDES" | sed 's/\bompi-tcp\b//; s/\bucx-tcp\b//')
ompi_info 2>/dev/null | grep -q "MCA pml: ucx" || SIDES=$(echo "$SIDES" | sed 's/\bucx-tcp\b//')

T=$(mktemp -d /tmp/pxcoh.XXXXXX)
. "$src/test/lib/netns.sh"
cleanup() {
    netns_down
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
netns_up coh "$T/setup.err" || { echo "compare-ofi-hosts: cannot make the namespaces:" >&2; cat "$T/setup.err" >&2; exit 2; }
NET=${IP_A%.*}.0/24
# mpirun's rsh agent: host nsA/nsB is a namespace with its own UTS name; with
# PRIORITY, its session's autogroup gets nice -20 (every contender alike).
prio=
[ "${PRIORITY:-1}" = 1 ] && [ -w /proc/self/autogroup ] && prio='echo -20 > /proc/self/autogroup 2>/dev/null;'
netns_agent "$T/agent.sh" "$prio"
printf '#!/bin/sh\n%s\nexec "$@"\n' "$prio" >"$T/hi"
chmod +x "$T/hi"
printf 'nsA slots=2\nnsB slots=2\n' >"$T/hosts"
printf 'rank 0=nsA slot=0\nrank 1=nsB slot=1\n' >"$T/rank.hosts"
printf 'rank 0=nsA slot=0\nrank 1=nsA slot=1\n' >"$T/rank.lo"

# run WHERE SIDE OUT: one measurement into OUT (CSV bytes,lat_us,bw_MBps)
run() {
    local where=$1 side=$2 out=$3 b=$B xs=() net prov=$PROV
    if [ "$where" = lo ]; then
        net=(-x FI_TCP_IFACE=lo -x FI_NET_IFACE=lo -x PX_MCA_btl_ofi_domain=lo)
        omp=(--mca btl_tcp_if_include lo) ucxn=(-x UCX_NET_DEVICES=lo)
    else
        net=() omp=(--mca btl_tcp_if_include "$NET") ucxn=()
    fi
    local mr=(timeout -s KILL 600 setsid "$T/hi" ip netns exec "$NS_A" mpirun --allow-run-as-root
        --hostfile "$T/hosts" --mca plm_rsh_agent "$T/agent.sh" --mca plm_rsh_no_tree_spawn 1
        -np 2 --rankfile "$T/rank.$where")
    case $side in
    plexus | base)
        [ "$side" = base ] && b=$BASE prov=$BASE_PROV
        [ "$prov" = default ] || xs+=(-x "PX_MCA_btl_ofi_provider_include=$prov")
        for e in ${PX_ENV:-}; do xs+=(-x "$e"); done
        if [ "$side" = base ]; then for e in ${BASE_ENV:-}; do xs+=(-x "$e"); done; fi
        "${mr[@]}" -x LD_LIBRARY_PATH="$b/.libs" -x PX_MCA_mca_component_path="$b/.libs" \
            -x PX_MCA_btl=self,ofi "${net[@]}" "${xs[@]}" \
            "$(perf_bin "$b")" --sizes "$SIZES" --csv </dev/null >"$out" 2>"$out.err" ;;
    ompi-tcp)
        "${mr[@]}" --mca pml ob1 --mca btl self,tcp "${omp[@]}" "$MPIPP" --csv --sizes "$SIZES" \
            </dev/null >"$out" 2>"$out.err" ;;
    ucx-tcp)
        for e in ${UCX_ENV:-}; do xs+=(-x "$e"); done
        "${mr[@]}" --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=tcp,self \
            "${ucxn[@]}" "${xs[@]}" "$MPIPP" --csv --sizes "$SIZES" </dev/null >"$out" 2>"$out.err" ;;
    esac
    local rc=$?
    if [ $rc != 0 ] || ! grep -q '^[0-9]' "$out"; then
        echo "   ($where $side failed, exit $rc:)"
        grep -v '^\[' "$out.err" | head -5 | sed 's/^/     /'
        rm -f "$out"
    fi
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== compare-ofi-hosts $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $load0"
echo "   hosts: namespaces $NS_A ($IP_A) and $NS_B ($IP_B) joined by a veth pair; lo: both ranks in $NS_A"
echo "   provider $PROV$([ -n "$BASE" ] && [ "$BASE_PROV" != "$PROV" ] && echo " (base: $BASE_PROV)"); $REPS interleaved rounds of: $SIDES; where: $WHERE"
echo "   plexus: $B$([ -n "$BASE" ] && echo "; base: $BASE")"
[ -n "${UCX_ENV:-}" ] && echo "   UCX_ENV: $UCX_ENV"
[ -n "${PX_ENV:-}" ] && echo "   PX_ENV: $PX_ENV"
[ -n "${BASE_ENV:-}" ] && echo "   BASE_ENV (base only): $BASE_ENV"
read -r -a sides <<<"$SIDES"
ns=${#sides[@]}
for rep in $(seq "$REPS"); do
    for where in $WHERE; do
        line="-- round $rep $where:"
        for k in $(seq 0 $((ns - 1))); do
            side=${sides[$(((k + rep - 1) % ns))]}
            l=$(cut -d' ' -f1 /proc/loadavg)
            run "$where" "$side" "$T/$where.$side.$rep.csv"
            line="$line $side (load $l)"
        done
        echo "$line"
    done
done
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$T"/*.csv "$KEEP"/ 2>/dev/null

# stat WHERE SIDE COL best|median -> "size value" rows
stat() {
    cat "$T/$1.$2".*.csv 2>/dev/null | awk -F, -v c="$3" -v how="$4" '
        $1 ~ /^[0-9]+$/ && $c != "" { v[$1] = v[$1] " " $c; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
        END { for (i = 0; i < n; i++) { s = order[i]; m = split(v[s], a, " ");
                for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
                if (how == "median") r = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2;
                else if ((how == "best" && c == 2)) r = a[1]; else r = a[m];
                print s, r } }'
}
# round ratios WHERE SIDE PEER COL -> "size median-of-rounds'-ratios" (plexus / peer)
rratio() {
    local where=$1 side=$2 peer=$3 col=$4 rep
    for rep in $(seq "$REPS"); do
        [ -e "$T/$where.$side.$rep.csv" ] && [ -e "$T/$where.$peer.$rep.csv" ] || continue
        awk -F, -v c="$col" 'FNR == NR { if ($1 ~ /^[0-9]+$/) p[$1] = $c; next }
            $1 ~ /^[0-9]+$/ && ($1 in p) && $c + 0 > 0 { print $1, p[$1] / $c }' \
            "$T/$where.$side.$rep.csv" "$T/$where.$peer.$rep.csv"
    done | awk '{ v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
        END { for (i = 0; i < n; i++) { s = order[i]; m = split(v[s], a, " ");
                for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
                print s, (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 } }'
}
lookup() { awk -v s="$2" '$1 == s { print $2 }' <<<"$1"; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "") print "-"; else printf f, v }'; }

echo "== load now $(cut -d' ' -f1-3 /proc/loadavg)"
for where in $WHERE; do
    for col in 2 3; do
        what=$([ $col = 2 ] && echo "ping-pong latency (us, half round trip)" || echo "streaming bandwidth (MB/s, windows of 64)")
        echo
        echo "== $where: $what; best of $REPS [median]"
        hdr=$(printf '%10s' bytes)
        for s in "${sides[@]}"; do hdr="$hdr$(printf ' %21s' "$s")"; done
        peers=""
        for p in base ompi-tcp ucx-tcp; do [[ " $SIDES " == *" $p "* ]] && peers="$peers $p"; done
        for p in $peers; do hdr="$hdr$(printf ' %17s' "px/$p")"; done
        echo "$hdr"
        declare -A B_ M_
        for s in "${sides[@]}"; do
            B_[$s]=$(stat "$where" "$s" $col best)
            M_[$s]=$(stat "$where" "$s" $col median)
        done
        declare -A R_
        for p in $peers; do R_[$p]=$(rratio "$where" plexus "$p" $col); done
        for size in ${SIZES//,/ }; do
            row=$(printf '%10s' "$size")
            for s in "${sides[@]}"; do
                f=$([ $col = 2 ] && echo '%.2f' || echo '%.1f')
                row="$row$(printf ' %10s [%8s]' "$(fmt "$(lookup "${B_[$s]}" "$size")" "$f")" "$(fmt "$(lookup "${M_[$s]}" "$size")" "$f")")"
            done
            for p in $peers; do
                a=$(lookup "${B_[plexus]}" "$size") c=$(lookup "${B_[$p]}" "$size")
                rb=$(awk -v a="$a" -v c="$c" 'BEGIN { if (a == "" || c + 0 == 0) print "-"; else printf "%.2f", a / c }')
                row="$row$(printf ' %7s [%7s]' "$rb" "$(fmt "$(lookup "${R_[$p]}" "$size")" '%.2f')")"
            done
            echo "$row"
        done
        unset B_ M_ R_
    done
done
cat <<'EOF'

Ratios are plexus / peer: of the best figures, and [the median of the rounds'
own ratios]. Targets (issue 15, docs/ofi.md): 4 MiB streaming >= 1.0 against
ucx-tcp and >= 1.2 against ompi-tcp; latency 64 KiB-4 MiB <= 1.0 against
ompi-tcp; small messages no slower than base.
EOF

# Charts (test/bench/plot.sh): the best figures of each contender, one per WHERE.
if [ -n "${PLOT-compare-ofi-hosts}" ]; then
    for where in $WHERE; do
        series=()
        for s in "${sides[@]}"; do
            { echo "bytes,lat_us,bw_MBps"
              join <(stat "$where" "$s" 2 best | sort -k1,1) <(stat "$where" "$s" 3 best | sort -k1,1) |
                  sort -n | tr ' ' ','; } >"$T/plot.$where.$s.csv"
            [ "$(wc -l <"$T/plot.$where.$s.csv")" -gt 1 ] && series+=("$s=$T/plot.$where.$s.csv")
        done
        PX_BUILD=$B PLOT_LOAD=$load0 bash "$src/test/bench/plot.sh" "${PLOT-compare-ofi-hosts}-$where.svg" \
            "compare-ofi-hosts: $PROV, $where, best of $REPS" "${series[@]}" || echo "(no chart for $where)"
    done
fi
exit 0
