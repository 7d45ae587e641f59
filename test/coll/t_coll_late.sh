#!/usr/bin/env bash
# A member late to a collective the others already gave up on (docs/coll.md,
# "Failures"; test/coll/coll_late.c): ranks 1 and 2 time out
# (runtime_wait_timeout) while rank 0 makes no Plexus call; rank 0 then calls
# the same collective and must fail with PX_ERR_GROUP_FAILED, not succeed with
# what the others sent before giving up. For barrier, allgather, allreduce
# (and bcast) through coll/fullmesh (blocking shortcuts and schedules),
# coll/basic and coll/ring, blocking and not; rank 0 idle or progressing.
# Also the codes (item 2 of issue 21): a rank whose own wait timed out gets
# PX_ERR_TIMEOUT, one told by another member PX_ERR_GROUP_FAILED, nobody
# PX_ERR_PEER_FAILED (no process died); every later collective
# PX_ERR_GROUP_FAILED; point-to-point and px_finalize still work.
. "$PX_SRC/test/lib/tap.sh"
prog=$PX_BUILD/test/coll/coll_late
pxrun=$PX_BUILD/tools/pxrun/pxrun
need_built "$prog" "$pxrun"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/ring" <<'RULES'
allreduce * * ring
allgather * * ring
RULES

# late DESCRIPTION OP COUNT MODE [env...]: start one case in the background
# (its result goes to $T/res.N, its lines to print to $T/log.N); up to
# $par cases run at once. Each case is a 3-rank job that mostly waits (ranks 1
# and 2 for their 1 s timeout, rank 0 for their done files), so cases side by
# side do not change what one proves; the results are printed in order by
# report_all. The timeout is 1 s (it was 2): a waiting rank polls, about 0.2
# CPU s per second each, and nothing here needs longer (rank 0 calls only
# after both others gave up; a rank that enters late is told by the other).
par=${PX_COLL_LATE_PARALLEL:-3}
ncase=0 running=0
late() {
    ncase=$((ncase + 1))
    late_one "$ncase" "$@" &
    running=$((running + 1))
    if [ "$running" -ge "$par" ]; then
        wait -n
        running=$((running - 1))
    fi
}
late_one() {
    local n=$1 d=$2 op=$3 count=$4 mode=$5; shift 5
    local dir out rc
    dir=$(mktemp -d "$T/run.XXXXXX")
    out=$(env PX_MCA_runtime_wait_timeout=1 "$@" timeout 120 "$pxrun" -n 3 "$prog" "$op" "$count" \
        "$mode" "$dir" </dev/null 2>"$dir/err"); rc=$?
    local r0 others
    r0=$(echo "$out" | grep -c "^rank 0: $op: PX_ERR_GROUP_FAILED")
    others=$(echo "$out" | grep -Ec "^rank [12]: $op: PX_ERR_(TIMEOUT|GROUP_FAILED) ")
    echo "$d: the late rank 0 gets PX_ERR_GROUP_FAILED, the others TIMEOUT or GROUP_FAILED" >"$T/desc.$n"
    if [ "$rc" -eq 0 ] && [ "$r0" -eq 1 ] && [ "$others" -eq 2 ] &&
        echo "$out" | grep -q "^rank [12]: $op: PX_ERR_TIMEOUT " &&
        ! echo "$out" | grep -q PEER_FAILED &&
        [ "$(echo "$out" | grep -c ': next: PX_ERR_GROUP_FAILED')" -eq 3 ] &&
        [ "$(echo "$out" | grep -c 'finalized: PX_SUCCESS, 0 unexpected')" -eq 3 ]; then
        echo ok >"$T/res.$n"
    else
        { echo "exit $rc"; echo "$out"; grep -v '^$' "$dir/err" | head -20; } | sed 's/^/# /' >"$T/log.$n"
        echo fail >"$T/res.$n"
    fi
}
report_all() {
    wait
    local n
    for n in $(seq 1 "$ncase"); do
        local d
        d=$(cat "$T/desc.$n" 2>/dev/null || echo "case $n: no result")
        if [ "$(cat "$T/res.$n" 2>/dev/null)" = ok ]; then
            ok "$d"
        else
            not_ok "$d"
            cat "$T/log.$n" 2>/dev/null
        fi
    done
}

for mode in busy progress; do
    late "fullmesh barrier ($mode)" barrier 0 $mode
    late "fullmesh allgather of 1 ($mode)" allgather 1 $mode
    late "fullmesh allreduce of 1 ($mode)" allreduce 1 $mode
done
late "fullmesh allreduce of 1000 (halving)" allreduce 1000 busy
late "fullmesh allgather of 1000" allgather 1000 busy
late "bcast of 100" bcast 100 busy
late "fullmesh ibarrier" ibarrier 0 busy
late "fullmesh iallreduce of 1" iallreduce 1 busy
late "fullmesh iallgather of 1" iallgather 1 busy
late "basic barrier" barrier 0 busy PX_MCA_coll=basic
late "basic allgather of 1" allgather 1 busy PX_MCA_coll=basic
late "basic allreduce of 1" allreduce 1 busy PX_MCA_coll=basic
late "ring allreduce of 1000" allreduce 1000 busy PX_MCA_coll_base_rules_file="$T/ring"
late "ring allgather of 1000" allgather 1000 busy PX_MCA_coll_base_rules_file="$T/ring"
# Over btl/ofi (tcp;ofi_rxm on lo), whose completions come in batches.
if [ -f "$PX_BUILD/.libs/plexus_btl_ofi.so" ]; then
    ofi=(PX_MCA_mca_component_path="$PX_BUILD/.libs" FI_TCP_IFACE=lo PX_MCA_btl=self,ofi
        "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm")
    late "ofi: fullmesh allreduce of 1" allreduce 1 busy "${ofi[@]}"
    late "ofi: fullmesh iallreduce of 1" iallreduce 1 busy "${ofi[@]}"
fi
report_all
[ -f "$PX_BUILD/.libs/plexus_btl_ofi.so" ] ||
    skip "ofi: the late member over btl/ofi" "btl/ofi is not built (no libfabric)"
tap_done
