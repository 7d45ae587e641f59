#!/usr/bin/env bash
# ofi-syscalls.sh: the system calls btl/ofi makes per message, counted exactly
# (strace -f -c of both ranks of px_perf under pxrun -n 2 on loopback), as
# the difference between a run of 2*N iterations and one of N, so start-up,
# connection set-up and teardown cancel. A hand-run tool, not part of the
# test suite; counts do not depend on the machine's load, except the polls
# a rank makes while it waits (they grow with the time it waits).
#
# Usage: test/bench/ofi-syscalls.sh BUILD_DIR [PROVIDER] [SIZE] [N]
#   PROVIDER  btl_ofi_provider_include (default: the build's own choice)
#   SIZE      message size in bytes (default 8)
#   N         iterations (default 2000): round trips of --test lat, or
#             windows of 64 messages and an ack of --test bw
# Env: TEST (lat or bw, default lat); any other variable is passed on
#      (e.g. FI_OFI_RXM_ENABLE_DIRECT_SEND=0).
# Prints per round trip (lat: both ranks, 1.1 N round trips with px_perf's
# warm-up of a tenth) or per window (bw) the mean count of each system call.
set -u
[ $# -ge 1 ] || { echo "usage: ofi-syscalls.sh BUILD_DIR [PROVIDER] [SIZE] [N]" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
PROV=${2:-}
S=${3:-8}
N=${4:-2000}
TEST=${TEST:-lat}
command -v strace >/dev/null || { echo "ofi-syscalls: strace is missing" >&2; exit 2; }
PERF=$B/tools/px_perf/.libs/px_perf
[ -x "$PERF" ] || PERF=$B/tools/px_perf/px_perf
[ -x "$PERF" ] && [ -e "$B/.libs/plexus_btl_ofi.so" ] ||
    { echo "ofi-syscalls: $B has no px_perf or btl/ofi" >&2; exit 2; }
T=$(mktemp -d /tmp/pxosc.XXXXXX)
trap 'rm -rf "$T"' EXIT
inc=()
[ -n "$PROV" ] && inc=("PX_MCA_btl_ofi_provider_include=$PROV")

# count ITERS -> "syscall calls" rows summed over both ranks in $T/cnt.ITERS
count() {
    local n=$1
    rm -f "$T"/st.*
    env FI_TCP_IFACE=lo FI_NET_IFACE=lo PX_MCA_btl=self,ofi PX_MCA_btl_ofi_domain=lo "${inc[@]}" \
        LD_LIBRARY_PATH="$B/.libs" PX_MCA_mca_component_path="$B/.libs" \
        timeout -s KILL 600 "$B/tools/pxrun/pxrun" -n 2 sh -c \
        'exec strace -f -c -o "$0/st.$$" "$@"' "$T" \
        "$PERF" --test "$TEST" --sizes "$S" --iters "$n" --csv >"$T/out.$n" 2>"$T/err.$n" ||
        { echo "ofi-syscalls: px_perf failed:" >&2; head -5 "$T/err.$n" >&2; exit 1; }
    cat "$T"/st.* | awk '$NF ~ /^[a-z_0-9]+$/ && $NF != "total" && $NF != "syscall" { c[$NF] += $4 }
        END { for (k in c) print k, c[k] }' | sort >"$T/cnt.$n"
}
count "$N"
count $((2 * N))
if [ "$TEST" = lat ]; then per=$(awk -v n="$N" 'BEGIN { print n * 1.1 }') unit="round trip (both ranks)"
else per=$N unit="window of 64 messages and an ack (both ranks)"; fi
echo "== ofi-syscalls $(date -u +%FT%TZ): provider ${PROV:-default}, $TEST, $S B; per $unit:"
join -a1 -a2 -e0 -o 0,1.2,2.2 "$T/cnt.$N" "$T/cnt.$((2 * N))" |
    awk -v p="$per" '{ d = ($3 - $2) / p; if (d >= 0.05) printf "  %-16s %8.2f\n", $1, d }'
echo "   (px_perf under strace: $(grep "^$S," "$T/out.$((2 * N))" | cut -d, -f2) $([ "$TEST" = lat ] && echo us || echo MB/s))"
