#!/usr/bin/env bash
# coll/sm (components/coll/sm, docs/coll.md "coll/sm"): large collectives of a
# group on one host, by single copy (btl_get/btl_put between the members'
# buffers) or through shared segments (coll_sm_single_copy=none).
#  - px_info lists the component, its variables and its rules;
#  - single copy, 3 ranks (4: --quick) with every coll/sm threshold at 0 and the
#    smallest step (4 KiB: transfers of many steps taken by both sides), then
#    the default step with edges around its quarters and whole steps: the
#    whole matrix below; the run says it went by single copy;
#  - members that call different sizes get an error naming the mismatch;
#  - streams: 3 ranks (4: --quick) with every coll/sm threshold at 0 and the smallest
#    pipeline (4 KiB chunks, 2 slots: the rings wrap all the time): every
#    operation x datatype x reduction of test/coll/coll_probe, in place and
#    not, blocking and not, groups of every split, counts 0, 1, odd and around
#    multiples of the chunk, results against a serial computation; coll/sm
#    must have served (coll_base_verbose says which component serves a call);
#  - 4 ranks run the single-copy and streams matrices with coll_sm_nt_min=4k
#    (every own block and streams' copy out by streaming stores);
#  - 2 MiB allgather and alltoall copy each rank's own block with streaming
#    stores, 1 MiB with memcpy (counted, coll_base_verbose 30, in the same
#    jobs as the path each size takes);
#  - 2 ranks, default settings, the large sizes of issue 26 (16 MiB);
#  - px_coll_check sm (the conformance checks every component passes), 4
#    ranks (groups of 1 to 4; under the sanitizers 3 ranks);
#  - a rank killed during a 4 MiB allreduce served by coll/sm: the others
#    return an error within seconds, the message names the dead rank;
#  - members that disagree on the segment's geometry get an error naming the
#    variables, no crash, no hang.
# PX_TEST_SANITIZER=1: --quick matrices; the single-copy matrices without
# their 1 MiB + 1 edge (257 steps of 4 KiB: the same branches as the 17 steps
# of 65600, and 90% of the job's CPU under ASan); px_coll_check -n 3; the
# killed rank on 2 and 3 ranks.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/coll/coll_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
pxinfo=$PX_BUILD/tools/px_info/px_info
need_built "$probe" "$pxrun" "$pxinfo"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
quick=()
[ -n "${PX_TEST_SANITIZER:-}" ] && quick=(--quick)

out=$("$pxinfo" --all 2>&1)
check "px_info lists coll/sm" eval 'echo "$out" | grep -Eq "coll.*\bsm\b"'
for v in coll_sm_chunk coll_sm_slots coll_sm_step coll_sm_single_copy coll_sm_single_copy_min \
    coll_sm_single_copy_red_min coll_sm_priority coll_base_bcast_sm_min \
    coll_base_allgather_sm_min coll_base_alltoall_sm_min coll_base_reduce_scatter_sm_min \
    coll_base_allreduce_sm_min; do
    check "px_info lists $v" contains "$out" "$v"
done
out=$("$pxinfo" --coll-rules 2>&1)
check "the built-in rules send allreduce from 64k to sm first" \
    eval 'echo "$out" | grep -Eq "^  allreduce +2- +64k- +sm +coll_base_allreduce_sm_min$"'

sm_min0=(PX_MCA_coll_base_bcast_sm_min=0 PX_MCA_coll_base_allgather_sm_min=0
    PX_MCA_coll_base_alltoall_sm_min=0 PX_MCA_coll_base_reduce_scatter_sm_min=0
    PX_MCA_coll_base_allreduce_sm_min=0)
sm_all=("${sm_min0[@]}" PX_MCA_coll_sm_chunk=4k PX_MCA_coll_sm_slots=2 PX_MCA_coll_sm_single_copy=none)
sm_sc=("${sm_min0[@]}" PX_MCA_coll_sm_step=4k PX_MCA_coll_sm_single_copy_min=0 PX_MCA_coll_sm_single_copy_red_min=0)

# run DESCRIPTION NRANKS [env...] -- probe args: every rank reports 0 errors,
# and coll/sm served calls of every one of its operations.
run() {
    local d=$1 n=$2; shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    out=$(env "${envs[@]}" PX_MCA_coll_base_verbose=20 timeout 600 "$pxrun" -n "$n" "$probe" "$@" \
        </dev/null 2>"$T/err"); rc=$?
    local good served missing=""
    good=$(echo "$out" | grep -c ', 0 errors$')
    for op in bcast allgather alltoall reduce_scatter allreduce; do
        grep -Eq "coll: $op of [0-9]+ bytes on [0-9]+ ranks: sm" "$T/err" || missing="$missing $op"
    done
    served=$(grep -Ec 'ranks: sm' "$T/err")
    # The way coll/sm moved the data (coll_base_verbose 10 and up says it
    # per group): MODE is "single copy" or "streams".
    if [ -n "${MODE:-}" ] && ! grep -q "coll/sm: group of .*: $MODE" "$T/err"; then
        missing="$missing (no group went by $MODE)"
    fi
    if [ "$rc" -eq 0 ] && [ "$good" -eq "$n" ] && [ -z "$missing" ]; then
        ok "$d ($(echo "$out" | awk '{s += $3} END {print s}') checks, $served calls through sm)"
    else
        not_ok "$d"
        { echo "$out"; [ -n "$missing" ] && echo "sm served no:$missing";
          grep -v '^\[.*coll: ' "$T/err" | head -20; } | head -40 | sed 's/^/# /'
    fi
}

# Single copy needs process_vm_readv between the ranks (btl/shm's probe):
# one 64 KiB bcast tells (coll_base_verbose 10 names the group's way).
perf=$PX_BUILD/tools/px_perf/px_perf
sc_ok=1
out=$(env PX_MCA_coll_base_verbose=10 "${sm_min0[@]}" PX_MCA_coll_sm_single_copy_min=0 PX_MCA_coll_sm_single_copy_red_min=0 timeout 120 "$pxrun" -n 2 "$perf" --coll bcast \
    --sizes 65536 --iters 1 </dev/null 2>&1)
if ! echo "$out" | grep -q "coll/sm: group of .*: single copy"; then
    sc_ok=0
    echo "# single copy unavailable here (process_vm_readv refused?): its checks skip"
fi
# The whole matrix on 3 ranks; 4 ranks run it --quick (counts 0, 1 and 7
# instead of also 33, and two splits: 4 ranks skip the split 3 + 1, whose
# group of 3 is the 3-rank run's): every operation, type, reduction, in
# place or not, blocking or not, and every edge still runs on each. Groups
# of 1 to 4 members: 3 ranks split 3 and 2 + 1, 4 ranks 4 and 2 + 2 (a
# 2-rank job's groups, 2 and 1 + 1, were both in these: it went).
qn() { if [ "$1" = 3 ]; then echo "${quick[@]}"; else echo --quick; fi; }
# 4 ranks copy every own block and every streams' copy out with non-temporal
# stores (coll_sm_nt_min 4k: odd sizes and offsets through that copy, on
# groups of 4 and 2), 3 ranks with memcpy (the default from 2 MiB).
ntmin() { if [ "$1" = 4 ]; then echo PX_MCA_coll_sm_nt_min=4k; else echo PX_MCA_coll_sm_nt_min=2M; fi; }
# 257 steps of 4 KiB (1 MiB + 1): not under the sanitizers (see the top).
scedges=4096,16384,16447,65536,65600,1048577
[ -n "${PX_TEST_SANITIZER:-}" ] && scedges=4096,16384,16447,65536,65600
for n in 3 4; do
    if [ "$sc_ok" = 1 ]; then
        # shellcheck disable=SC2046
        MODE="single copy" run "$n ranks, single copy, every threshold 0, 4 KiB steps: the whole matrix$( [ "$n" = 3 ] || echo ' (quick)')$( [ "$n" = 4 ] && echo ', streaming stores from 4 KiB')" "$n" \
            "${sm_sc[@]}" "$(ntmin "$n")" -- matrix --edges $scedges $(qn "$n")
    else
        skip "$n ranks, single copy" "process_vm_readv is refused between the ranks here"
    fi
done
if [ "$sc_ok" = 1 ]; then
    # Both paths in one run: calls of 16 KiB and more by single copy, the
    # smaller ones through the streams, mixed call by call on the same groups.
    MODE="single copy" run "3 ranks, single copy from 16 KiB, streams below, mixed in one run (quick)" 3 \
        "${sm_min0[@]}" PX_MCA_coll_sm_single_copy_min=16k PX_MCA_coll_sm_single_copy_red_min=16k PX_MCA_coll_sm_step=4k PX_MCA_coll_sm_chunk=4k \
        -- matrix --edges 4096,16383,16384,65600 --quick
    # Default step (256 KiB): around a quarter step (64 KiB), whole steps and
    # the step buffer of the reductions.
    MODE="single copy" run "3 ranks, single copy, default step: blocks around 64 KiB, 256 KiB, 1 MiB" 3 \
        "${sm_min0[@]}" PX_MCA_coll_sm_single_copy_min=0 PX_MCA_coll_sm_single_copy_red_min=0 -- matrix --quick --big-edges bcast:65536,allgather:262144,alltoall:262208,reduce_scatter:1048576,allreduce:786432,allreduce:1048576
    out=$(env "${sm_min0[@]}" PX_MCA_coll_sm_single_copy_min=0 PX_MCA_coll_sm_single_copy_red_min=0 PX_MCA_runtime_wait_timeout=20 timeout 120 "$pxrun" -n 2 "$probe" mismatch \
        2>&1 </dev/null); rc=$?
    check "members calling different sizes: each returns an error (no hang, no crash)" \
        eval '[ $rc -ne 124 ] && [ "$(echo "$out" | grep -c "mismatched allreduce: ")" -eq 2 ] && ! echo "$out" | grep -q "mismatched allreduce: succeeded"'
    check "... the error says what differs" contains "$out" "every member must make the same collective calls"
    echo "$out" | grep -E "mismatched|coll/sm" | head -4 | sed 's/^/# /'
else
    skip "single copy, default step" "process_vm_readv is refused between the ranks here"
    skip "members calling different sizes" "process_vm_readv is refused between the ranks here"
    skip "... the error says what differs" "process_vm_readv is refused between the ranks here"
fi
# Single copy moves a transfer with few process_vm_readv/writev: a 64 KiB
# transfer is 2 steps (halves) and its destination takes what is left in
# one call, so at most 2 calls per transfer (it was 4 quarters, a call
# each): bcast of 2 ranks is one transfer a call, allgather and alltoall
# two. An exact count (strace), not a time.
if [ "$sc_ok" = 1 ] && command -v strace >/dev/null; then
    for oc in bcast:2 allgather:4 alltoall:4; do
        op=${oc%:*} most=${oc#*:}
        # 100 calls and 10 of warm-up; LeakSanitizer cannot run under ptrace.
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 PX_MCA_coll_sm_single_copy_min=0 PX_MCA_coll_sm_single_copy_red_min=0 timeout 300 strace -f -qq -c \
            -e trace=process_vm_readv,process_vm_writev -o "$T/st" "$pxrun" -n 2 "$perf" --coll "$op" \
            --sizes 65536 --iters 100 </dev/null >"$T/perf" 2>&1; rc=$?
        calls=$(awk '/process_vm_(readv|writev)/ {s += $4} END {print s + 0}' "$T/st")
        check "2 ranks, 64 KiB $op by single copy: at most $most process_vm_readv/writev a call ($calls in 110 calls)" \
            eval '[ $rc -eq 0 ] && [ "$calls" -gt 0 ] && [ "$calls" -le $((110 * most + 8)) ]'
        [ "$rc" -eq 0 ] || sed 's/^/# /' "$T/perf" | head -5
    done
else
    skip "single copy: process_vm_readv/writev per call" "no single copy here, or strace is not installed"
fi
for n in 3 4; do
    # shellcheck disable=SC2046
    MODE=streams run "$n ranks, streams, every threshold 0, 4 KiB chunks in 2 slots: the whole matrix$( [ "$n" = 3 ] || echo ' (quick)')$( [ "$n" = 4 ] && echo ', streaming stores from 4 KiB')" "$n" \
        "${sm_all[@]}" "$(ntmin "$n")" -- matrix --edges 4096,8192,12289,20000 $(qn "$n")
done
# Which path a call takes: single copy from coll_sm_single_copy_min (4 MiB),
# streams below (coll_base_verbose 30 names it per call and rank). The group
# takes its rank 0's thresholds, so members set differently still agree:
# in the allgather and the default allreduce rank 1 alone sets its threshold
# to 0 and still goes rank 0's way (streams); in the other allreduce rank 0
# alone sets coll_sm_single_copy_red_min=4M and rank 1 (1G) follows it at
# 4 MiB. In the same jobs (allgather, alltoall): a member's own block from
# coll_sm_nt_min (2 MiB) is copied with non-temporal stores (they skip the
# cache: 1.5-1.9x faster at 2-16 MiB on the development VM than memcpy,
# which keeps them for copies above 192 MiB there), coll_base_verbose 30
# says so once per call and rank; 1 MiB with memcpy (x86-64 only: SSE2's
# streaming stores). Exact counts of calls, not times.
if [ "$sc_ok" = 1 ]; then
    # rankenv R VAR=VALUE: a wrapper of px_perf that sets VAR for rank R only.
    rankenv() {
        printf '#!/bin/sh\n[ "$PX_RANK" = %s ] && export %s\nexec "%s" "$@"\n' "$1" "$2" "$perf" >"$T/wrap.$1.$3"
        chmod +x "$T/wrap.$1.$3"
    }
    rankenv 1 PX_MCA_coll_sm_single_copy_min=0 sc
    rankenv 0 PX_MCA_coll_sm_single_copy_red_min=4M red
    rankenv 1 PX_MCA_coll_sm_single_copy_red_min=0 red0
    for op in bcast allgather alltoall allreduce; do
        prog=$perf sizes=65536,1048576,4194304 below="64 KiB and 1 MiB" how="" nsz=3
        case $op in
        allgather) prog=$T/wrap.1.sc how=" (rank 1 alone with coll_sm_single_copy_min=0)" ;;
        allreduce) prog=$T/wrap.0.red how=" (rank 0 alone with coll_sm_single_copy_red_min=4M)" ;;
        esac
        if [ "$op" = allgather ] || [ "$op" = alltoall ]; then
            sizes=65536,1048576,2097152,4194304 below="64 KiB, 1 and 2 MiB" nsz=4
        fi
        # 4 calls and 2 of warm-up per size: 12 lines per size over 2 ranks.
        PX_MCA_coll_base_verbose=30 timeout 120 "$pxrun" -n 2 "$prog" --coll "$op" --sizes $sizes \
            --iters 4 </dev/null >"$T/perf" 2>"$T/err"; rc=$?
        st=$(grep -Ec "coll/sm: $op of (65536|1048576|2097152) bytes: streams" "$T/err")
        sc=$(grep -c "coll/sm: $op of 4194304 bytes: single copy" "$T/err")
        all=$(grep -c "coll/sm: $op of " "$T/err")
        check "2 ranks, $op$how: $below through the streams, 4 MiB by single copy ($st of $((12 * (nsz - 1))), $sc of 12; $all of $((12 * nsz)) calls named)" \
            eval '[ $rc -eq 0 ] && [ "$st" -eq $((12 * (nsz - 1))) ] && [ "$sc" -eq 12 ] && [ "$all" -eq $((12 * nsz)) ]'
        [ "$rc" -eq 0 ] || sed 's/^/# /' "$T/perf" | head -5
        [ "$nsz" = 4 ] || continue
        if [ "$(uname -m)" = x86_64 ]; then
            nt=$(grep -c "coll/sm: $op: own block of 2097152 bytes copied with non-temporal stores" "$T/err")
            nt1=$(grep -c "own block of 1048576 bytes copied" "$T/err")
            check "... 2 MiB: each rank copies its own block with streaming stores, 1 MiB with memcpy ($nt and $nt1 of 12 calls)" \
                eval '[ $rc -eq 0 ] && [ "$nt" -eq 12 ] && [ "$nt1" -eq 0 ]'
        else
            skip "own block by streaming stores" "not x86-64"
        fi
    done
    PX_MCA_coll_base_verbose=30 timeout 120 "$pxrun" -n 2 "$T/wrap.1.red0" --coll allreduce --sizes 65536,4194304 \
        --iters 4 </dev/null >"$T/perf" 2>"$T/err"; rc=$?
    st=$(grep -Ec "coll/sm: allreduce of (65536|4194304) bytes: streams" "$T/err")
    check "2 ranks, allreduce, rank 0's default settings (rank 1 alone with coll_sm_single_copy_red_min=0): 64 KiB and 4 MiB through the streams ($st of 24 calls)" \
        eval '[ $rc -eq 0 ] && [ "$st" -eq 24 ]'
else
    skip "single copy or streams by size" "no single copy here"
    skip "own block by streaming stores" "no single copy here"
    skip "the group takes rank 0's thresholds" "no single copy here"
fi
run "2 ranks, default thresholds and chunk: 64 KiB, 1 and 16 MiB of each operation" 2 -- \
    matrix --quick --big-edges bcast:65536,allgather:1048576,alltoall:16777216,reduce_scatter:1048576,allreduce:16777216,bcast:16777216

# px_coll_check's conformance checks with coll/sm serving every call it can.
collcheck=$PX_BUILD/tools/px_coll_check/px_coll_check
# 4 ranks check groups of 1 to 4 (3 ranks' groups of 1 to 3 were a second
# run of the same checks); under the sanitizers 3 ranks, --quick (the group
# of 4 is in the 4-rank matrices above).
cq=() ccn=4
[ -n "${PX_TEST_SANITIZER:-}" ] && cq=(--quick) ccn=3
for n in $ccn; do
    out=$(timeout 900 "$collcheck" --pxrun "$pxrun" "${cq[@]}" sm -n $n 2>&1 </dev/null); rc=$?
    check "px_coll_check sm -n $n: every check ok" \
        eval '[ $rc -eq 0 ] && ! echo "$out" | grep -q "^not ok" && [ "$(echo "$out" | grep -c "^ok .* calls checked")" -eq 5 ]'
done

# A rank killed during an allreduce served by coll/sm (4 MiB >= 64k): 2
# ranks by single copy (coll_sm_single_copy_red_min 0), 3 and 4 through the
# streams (the default for allreduce); under the sanitizers not 4 ranks
# (the same streams path as 3, another victim).
dien="2 3 4"
[ -n "${PX_TEST_SANITIZER:-}" ] && dien="2 3"
for n in $dien; do
    victim=$((n - 1))
    [ "$n" -gt 2 ] && victim=$((n - 2))
    redmin=1G
    [ "$n" = 2 ] && redmin=0
    out=$(PX_MCA_coll_sm_single_copy_red_min=$redmin PX_MCA_coll_base_verbose=20 PX_PXRUN_GRACE=60 timeout 120 "$pxrun" -n $n "$probe" die $victim \
        2>"$T/err" </dev/null)
    check "$n ranks, rank $victim killed: coll/sm served the allreduce" \
        grep -Eq "coll: allreduce of 4194304 bytes on $n ranks: sm" "$T/err"
    failed=$(echo "$out" | grep -Ec 'allreduce failed: (peer process failed or disconnected|the group failed: a member gave up on a collective) after')
    check "... the $((n - 1)) others return an error" [ "$failed" -eq $((n - 1)) ]
    check "... within 30 s" eval "echo \"\$out\" | awk '/failed: .* after/ {if (\$(NF-1) + 0 > 30) bad = 1} END {exit bad}'"
    check "... the error names the dead rank" grep -Eq "rank $victim .*(gone|failed)" "$T/err"
    check "... and their next collective fails at once" \
        [ "$(echo "$out" | grep -c 'next allreduce: the group failed')" -eq $((n - 1)) ]
    check "... pxrun did not have to SIGKILL anyone" eval '! grep -q "sending SIGKILL" "$T/err"'
    echo "$out" | grep 'after' | sed 's/^/# /'
done

# Members with different chunk sizes: the segments do not match.
cat >"$T/wrap" <<EOF
#!/bin/sh
PX_MCA_coll_sm_chunk=\$((4096 * (PX_RANK + 1))) exec "$probe" "\$@"
EOF
chmod +x "$T/wrap"
out=$(env "${sm_all[@]}" PX_MCA_runtime_wait_timeout=20 timeout 120 "$pxrun" -n 2 "$T/wrap" matrix --quick \
    2>&1 </dev/null); rc=$?
check "ranks with different coll_sm_chunk: the run fails (no hang, no crash)" \
    eval '[ $rc -ne 0 ] && [ $rc -ne 124 ] && ! echo "$out" | grep -qi "signal\|segmentation"'
check "... the error names the variables" contains "$out" "coll_sm_chunk / coll_sm_slots / coll_sm_step differ"
tap_done
