#!/usr/bin/env bash
# startup.sh: what a rank's start costs, two builds side by side.
#
#   test/bench/startup.sh OLD_BUILD NEW_BUILD [N...]
#
# A build is a build tree (tools/pxrun/pxrun, .libs) or a folder holding
# pxrun and libs/ (libplexus.so.0 and the plugins, copied from a build's
# .libs: keep one of main before changing it). The program is an empty
# px_init/px_finalize, compiled here against each build's libplexus.
#
# Exact counts first (independent of the machine's load): system calls per
# process of `pxrun -n 2` by type (strace -ff), and instructions of px_init
# in one rank (callgrind). Then wall time of `pxrun -n N` for each N
# (default 2 8): ROUNDS rounds (default 7), each running old and new RUNS
# times (default 10) back to back, in alternating order; the figure is the
# median over rounds of each round's new/old ratio, printed with the load.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
sizes=${*:-2 8}
ROUNDS=${ROUNDS:-7} RUNS=${RUNS:-10}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

pxrun_of() { [ -x "$1/tools/pxrun/pxrun" ] && echo "$1/tools/pxrun/pxrun" || echo "$1/pxrun"; }
libs_of() { [ -d "$1/.libs" ] && echo "$1/.libs" || echo "$1/libs"; }
cat >"$T/tiny.c" <<'EOF'
#include "plexus.h"
int main(int argc, char **argv)
{
    if (px_init(&argc, &argv) != 0)
        return 1;
    return px_finalize() != 0;
}
EOF
for which in old new; do
    b=${!which}
    gcc -O2 -I"$src" -I"$src/runtime" "$T/tiny.c" -o "$T/tiny.$which" -L"$(libs_of "$b")" -lplexus
done
# run WHICH ARGS...: pxrun of that build with its libs and plugins
run() {
    local b=${!1}
    local l
    l=$(libs_of "$b")
    shift
    PX_MCA_mca_component_path=$l LD_LIBRARY_PATH=$l "$(pxrun_of "$b")" "$@"
}

echo "== system calls per process, pxrun -n 2 (strace -ff)"
for which in old new; do
    rm -f "$T"/st.*
    run $which -n 1 true >/dev/null 2>&1 || true # warm the caches
    b=${!which}
    l=$(libs_of "$b")
    PX_MCA_mca_component_path=$l LD_LIBRARY_PATH=$l strace -f -ff -o "$T/st" \
        "$(pxrun_of "$b")" -n 2 "$T/tiny.$which"
    for f in "$T"/st.*; do
        first=$(grep -m1 '^execve(' "$f" || true)
        case $first in
        *pxrun*) who=pxrun ;;
        *tiny*) who=rank ;;
        *) continue ;;
        esac
        total=$(grep -vc '^+++\|^---\|resumed>' "$f" || true)
        printf '%s %-5s total %4d' "$which" "$who" "$total"
        for c in openat newfstatat getdents64 mmap rt_sigaction; do
            printf '  %s %d' "$c" "$(grep -c "^$c(" "$f" || true)"
        done
        printf '  ENOENT %d\n' "$(grep -c 'ENOENT' "$f" || true)"
    done
done

echo "== instructions (callgrind), one rank of pxrun -n 2"
for which in old new; do
    rm -f "$T"/cg.*
    run $which -n 2 valgrind --tool=callgrind --callgrind-out-file="$T/cg.%p" \
        "$T/tiny.$which" >/dev/null 2>&1
    f=$(ls "$T"/cg.* | head -1)
    tot=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ && !t {t = $1} END {print t}')
    ini=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
        awk '/:px_init / && !t {t = $1} END {print t}')
    echo "$which: process $tot, px_init $ini"
done

for n in $sizes; do
    echo "== pxrun -n $n, wall ms per run ($RUNS runs per build per round)"
    ratios=()
    for r in $(seq "$ROUNDS"); do
        order="old new"
        [ $((r % 2)) -eq 0 ] && order="new old"
        declare -A ms=()
        for which in $order; do
            t0=$(date +%s%N)
            for _ in $(seq "$RUNS"); do run $which -n "$n" "$T/tiny.$which" >/dev/null; done
            t1=$(date +%s%N)
            ms[$which]=$(awk -v a="$t0" -v b="$t1" -v k="$RUNS" 'BEGIN {printf "%.1f", (b - a) / k / 1e6}')
        done
        ratio=$(awk -v a="${ms[old]}" -v b="${ms[new]}" 'BEGIN {printf "%.3f", b / a}')
        ratios+=("$ratio")
        echo "round $r: old ${ms[old]} new ${ms[new]} new/old $ratio load $(cut -d' ' -f1 /proc/loadavg)"
        unset ms
    done
    med=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
    echo "pxrun -n $n: median of per-round new/old = $med"
done
