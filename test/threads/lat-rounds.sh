#!/usr/bin/env bash
# Single-thread 8-byte ping-pong latency over shm at SERIALIZED and MULTIPLE,
# interleaved rounds, and the median of the per-round ratios (docs/threads.md,
# "What MULTIPLE costs"). Usage: test/threads/lat-rounds.sh BUILD [ROUNDS]
set -u
B=${1:?usage: lat-rounds.sh BUILD [ROUNDS]}
R=${2:-7}
export PX_MCA_mca_component_path=$B/.libs
ratios=()
for r in $(seq 1 "$R"); do
    s=$("$B/tools/pxrun/pxrun" -n 2 "$B/test/threads/thread_lat" serialized 8 20000 | awk '/^lat/{print $4}')
    m=$("$B/tools/pxrun/pxrun" -n 2 "$B/test/threads/thread_lat" multiple 8 20000 | awk '/^lat/{print $4}')
    ratio=$(awk -v s="$s" -v m="$m" 'BEGIN{printf "%.3f", m / s}')
    echo "round $r serialized $s us multiple $m us ratio $ratio"
    ratios+=("$ratio")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END{print "median ratio", a[int((NR+1)/2)]}'
