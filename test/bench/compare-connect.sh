#!/usr/bin/env bash
# compare-connect.sh: connection setup of processes that were not launched
# together (issue 23): Plexus (px_perf --connect: px_connect to the first
# round trip with the new peer, plus a connected peer's latency and
# bandwidth against a job rank's), UCX's client/server (ucx_connect.c: a UCP
# listener on a socket address, ucp_ep_create from it) and Open MPI's
# MPI_Comm_connect/MPI_Comm_accept (mpi_connect.c: each side an mpirun of one
# process, both given one ompi-server, the port name passed by file), in
# interleaved rounds (the order rotates each round), on one host and across
# two network-namespace hosts (test/lib/netns.sh). A hand-run benchmark, not
# part of the test suite (no test asserts a time).
#
# Each contender makes CONNS+1 fresh connections per round, one after another,
# and times each from the connect call to the first round trip done (4 bytes
# there and back); the first is printed apart, the median, p90 and p99 are of
# the others. The figure judged is the median over the rounds of each round's
# ratio (Plexus / peer). Where:
#   lo     one host: Plexus under pxrun -n 2 with its default transports (shm
#          for the rank and the connected peer); UCX with its default
#          transports on 127.0.0.1; Open MPI's defaults
#   hosts  rank 0 / the listener / the acceptor in namespace nsA, the other
#          side in nsB, joined by a veth pair: Plexus under mpirun (boot/pmix)
#          with PX_MCA_btl=self,ofi (tcp;ofi_rxm) and rank 0's listener on
#          nsA's address; UCX with UCX_TLS=tcp; Open MPI with btl self,tcp
#
# Usage: test/bench/compare-connect.sh BUILD_DIR     (root for "hosts")
# Env:   ROUNDS (default 5); CONNS (connections per round and contender,
#        default 100); WHERE (default "lo hosts"); SIZES (px_perf's steady-
#        state sizes, default 8,4096,65536,1048576,4194304); REPS (px_perf's
#        own interleaved rounds of the steady state, default 3); KEEP (a
#        folder to keep every run's output in).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: compare-connect.sh BUILD_DIR" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
ROUNDS=${ROUNDS:-5}
CONNS=${CONNS:-100}
WHERE=${WHERE:-lo hosts}
SIZES=${SIZES:-8,4096,65536,1048576,4194304}
REPS=${REPS:-3}
PERF=$B/tools/px_perf/.libs/px_perf
[ -x "$PERF" ] || PERF=$B/tools/px_perf/px_perf
PXRUN=$B/tools/pxrun/pxrun
[ -x "$PERF" ] && [ -x "$PXRUN" ] || { echo "compare-connect: $B has no px_perf or pxrun (make -C $B)" >&2; exit 2; }
if [[ " $WHERE " == *" hosts "* ]]; then
    [ "$(id -u)" = 0 ] || { echo "compare-connect: WHERE=hosts needs root (network namespaces); WHERE=lo does not" >&2; exit 2; }
    for need in ip unshare mpirun; do
        command -v $need >/dev/null || { echo "compare-connect: $need is missing" >&2; exit 2; }
    done
fi

T=$(mktemp -d /tmp/pxcc.XXXXXX)
SIDES="plexus"
cleanup() {
    [ -n "${NS_A:-}" ] && netns_down
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
# The peers' programs, built here (Debian: libucx-dev, libopenmpi-dev).
if [ -e /usr/include/ucp/api/ucp.h ] && cc -O2 -o "$T/ucx_connect" "$src/test/bench/ucx_connect.c" -lucp -lucs 2>"$T/ucx.cc"; then
    SIDES="$SIDES ucx"
else
    echo "   (UCX left out: no ucp.h (apt-get install libucx-dev) or it did not build: $(head -1 "$T/ucx.cc" 2>/dev/null))"
fi
if command -v mpicc >/dev/null && command -v ompi-server >/dev/null &&
    mpicc -O2 -o "$T/mpi_connect" "$src/test/bench/mpi_connect.c" 2>"$T/mpi.cc"; then
    SIDES="$SIDES mpi"
else
    echo "   (Open MPI left out: no mpicc/ompi-server (openmpi-bin, libopenmpi-dev) or it did not build)"
fi
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
export PX_MCA_peer_secret_file=$T/secret PX_MCA_mca_component_path=$B/.libs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [[ " $WHERE " == *" hosts "* ]]; then
    . "$src/test/lib/netns.sh"
    netns_up cc "$T/setup.err" || { echo "compare-connect: cannot make the namespaces:" >&2; cat "$T/setup.err" >&2; exit 2; }
    NET=${IP_A%.*}.0/24
    netns_agent "$T/agent.sh"
    printf 'nsA slots=2\nnsB slots=2\n' >"$T/hosts"
    printf 'rank 0=nsA slot=0\nrank 1=nsB slot=1\n' >"$T/rankfile"
fi
# on HOST CMD...: run CMD in namespace host HOST (nsA, nsB) with that host
# name, or here when WHERE is lo
on() {
    local h=$1
    shift
    if [ "$h" = here ]; then "$@"; return; fi
    local ns=$NS_A
    [ "$h" = nsB ] && ns=$NS_B
    ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
}

# run WHERE SIDE OUT: one contender's CONNS+1 connections into OUT
run() {
    local where=$1 side=$2 out=$3 ha=here hb=here ip=127.0.0.1 rc
    [ "$where" = hosts ] && { ha=nsA hb=nsB ip=$IP_A; }
    rm -f "$T/addr" "$T/port" "$T/uri"
    case $side in
    plexus)
        if [ "$where" = lo ]; then
            LD_LIBRARY_PATH=$B/.libs timeout -s KILL 600 "$PXRUN" -n 2 "$PERF" --connect --conns "$CONNS" --reps "$REPS" \
                --sizes "$SIZES" </dev/null >"$out" 2>"$out.err"
        else
            local x=(-x LD_LIBRARY_PATH="$B/.libs" -x PX_MCA_mca_component_path -x PX_MCA_peer_secret_file
                -x PX_MCA_btl=self,ofi -x "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm")
            timeout -s KILL 600 setsid ip netns exec "$NS_A" mpirun --allow-run-as-root \
                --hostfile "$T/hosts" --mca plm_rsh_agent "$T/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
                --rankfile "$T/rankfile" \
                -np 1 "${x[@]}" -x PX_MCA_peer_listen_address="$IP_A" "$PERF" --connect --conns "$CONNS" \
                --reps "$REPS" --sizes "$SIZES" : \
                -np 1 "${x[@]}" "$PERF" --connect --conns "$CONNS" --reps "$REPS" --sizes "$SIZES" \
                </dev/null >"$out" 2>"$out.err"
        fi
        rc=$? ;;
    ucx)
        local tls=()
        [ "$where" = hosts ] && tls=(env UCX_TLS=tcp)
        on $ha "${tls[@]}" timeout -s KILL 300 "$T/ucx_connect" server "$T/addr" "$ip" "$CONNS" \
            </dev/null >"$out.srv" 2>&1 &
        local spid=$!
        on $hb "${tls[@]}" timeout -s KILL 300 "$T/ucx_connect" client "$T/addr" "$CONNS" \
            </dev/null >"$out" 2>"$out.err"
        rc=$?
        wait $spid || rc=$? ;;
    mpi)
        local m=()
        [ "$where" = hosts ] && m=(--mca btl self,tcp --mca btl_tcp_if_include "$NET" --mca oob_tcp_if_include "$NET")
        on $ha timeout -s KILL 300 ompi-server --no-daemonize -r "$T/uri" </dev/null >"$out.os" 2>&1 &
        local opid=$!
        for _ in $(seq 100); do [ -s "$T/uri" ] && break; sleep 0.1; done
        on $ha timeout -s KILL 300 mpirun --allow-run-as-root --ompi-server "file:$T/uri" "${m[@]}" -np 1 \
            "$T/mpi_connect" accept "$T/port" "$CONNS" </dev/null >"$out.srv" 2>&1 &
        local spid=$!
        on $hb timeout -s KILL 300 mpirun --allow-run-as-root --ompi-server "file:$T/uri" "${m[@]}" -np 1 \
            "$T/mpi_connect" connect "$T/port" "$CONNS" </dev/null >"$out" 2>"$out.err"
        rc=$?
        wait $spid || rc=$?
        kill "$opid" 2>/dev/null
        pkill -KILL -P "$opid" 2>/dev/null
        wait "$opid" 2>/dev/null ;;
    esac
    if [ "$rc" != 0 ] || ! grep -q '^setup_us' "$out"; then
        echo "   ($where $side failed, exit $rc:)"
        cat "$out.err" "$out.srv" 2>/dev/null | grep -v '^\[' | head -5 | sed 's/^/     /'
        rm -f "$out"
    fi
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== compare-connect $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, load $load0"
echo "   $ROUNDS interleaved rounds of: $SIDES; where: $WHERE; $CONNS connections (+1 first) per run"
[ -n "${NS_A:-}" ] && echo "   hosts: namespaces $NS_A ($IP_A) and $NS_B ($IP_B) joined by a veth pair"
echo "   plexus: $B"
read -r -a sides <<<"$SIDES"
ns=${#sides[@]}
for rep in $(seq "$ROUNDS"); do
    for where in $WHERE; do
        line="-- round $rep $where:"
        for k in $(seq 0 $((ns - 1))); do
            side=${sides[$(((k + rep - 1) % ns))]}
            l=$(cut -d' ' -f1 /proc/loadavg)
            run "$where" "$side" "$T/$where.$side.$rep.out"
            line="$line $side (load $l)"
        done
        echo "$line"
    done
done
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$T"/*.out "$KEEP"/ 2>/dev/null

med() { sort -g | awk '{ a[n++] = $1 } END { if (n == 0) print "-"; else print (n % 2) ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2 }'; }
# col WHERE SIDE FIELD: the setup_us line's FIELD (3 first, 4 median, 5 p90, 6 p99) of each round
col() { for f in "$T/$1.$2".*.out; do [ -e "$f" ] && awk -v c="$3" '$1 == "setup_us" { print $c }' "$f"; done; }
echo "== load now $(cut -d' ' -f1-3 /proc/loadavg)"
for where in $WHERE; do
    echo
    echo "== $where: connect to the first round trip done (us), median over the rounds of each round's figure"
    printf '%-8s %10s %10s %10s %10s %8s\n' side first median p90 p99 rounds
    for s in "${sides[@]}"; do
        printf '%-8s %10s %10s %10s %10s %8s\n' "$s" "$(col "$where" "$s" 3 | med)" "$(col "$where" "$s" 4 | med)" \
            "$(col "$where" "$s" 5 | med)" "$(col "$where" "$s" 6 | med)" "$(col "$where" "$s" 4 | wc -l)"
    done
    for p in ucx mpi; do
        [[ " $SIDES " == *" $p "* ]] || continue
        r=$(for rep in $(seq "$ROUNDS"); do
            a=$(awk '$1 == "setup_us" { print $4 }' "$T/$where.plexus.$rep.out" 2>/dev/null)
            b=$(awk '$1 == "setup_us" { print $4 }' "$T/$where.$p.$rep.out" 2>/dev/null)
            [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) print a / b }'
        done | med)
        echo "   plexus/$p median setup: median of the rounds' ratios $r"
    done
    tgt=1000
    [ "$where" = hosts ] && tgt=5000
    echo "   target: first round trip to a new peer <= $tgt us (plexus median: $(col "$where" plexus 4 | med))"
    echo
    echo "== $where: plexus steady state, connected peer / job rank (px_perf's median of $REPS inner rounds; median over $ROUNDS rounds)"
    printf '%10s %12s %12s %10s %12s %12s %10s\n' bytes rank_lat_us peer_lat_us lat_ratio rank_bw_MBps peer_bw_MBps bw_ratio
    for size in ${SIZES//,/ }; do
        row=$(printf '%10s' "$size")
        for c in 2 3 4 5 6 7; do
            v=$(for f in "$T/$where.plexus".*.out; do [ -e "$f" ] && awk -v s="$size" -v c="$c" \
                '$1 == s && NF == 7 { print $c }' "$f"; done | med)
            row="$row $(printf '%12s' "$v")"
        done
        echo "$row"
    done
    echo "   targets: lat_ratio <= 1.05, bw_ratio >= 0.95"
done
