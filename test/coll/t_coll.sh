#!/usr/bin/env bash
# The collectives (docs/coll.md), in few launches of test/coll/coll_probe:
#  - 8 ranks, thresholds and ring chunks made small so every algorithm runs at
#    cheap sizes: every operation, datatype and reduction, in place and not,
#    blocking and not, groups of 1..8 (two groups at a time), counts 0, 1, odd
#    and around each threshold, concurrent collectives with point-to-point;
#  - 5 ranks with the default thresholds, around each of them that coll/sm
#    (from 64 KiB) does not shadow (under sanitizers only those below 64
#    KiB), and one allreduce and bcast of 64 MiB (4 MiB under sanitizers);
#  - 3 ranks without coll/sm around the large thresholds it shadows (the
#    switches to ring and fullmesh; the normal build);
#  - each component alone (basic) or first (a rules file), and a rules file
#    with a mistake (the error names the file, the line and what is accepted);
#  - a rank killed during an allreduce: the others return an error, no hang.
# PX_TEST_SANITIZER=1 shrinks the matrix (--quick) and the sizes.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/coll/coll_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
pxinfo=$PX_BUILD/tools/px_info/px_info
need_built "$probe" "$pxrun" "$pxinfo"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
san=${PX_TEST_SANITIZER:-}
quick=()
large=$((64 << 20))
edges=2048,4096,262144
# Of the large thresholds only reduce_scatter's (4 KiB) is reached: from 64
# KiB coll/sm serves bcast, allgather, alltoall, reduce_scatter and
# allreduce first (the built-in rules), so edges of 4 and 8 MiB for bcast,
# allgather and alltoall (the switches to ring and fullmesh) ran coll/sm,
# not the switch they named: gone (the 8 MiB alltoall was a third of the
# test's CPU; coll/sm at those sizes is t_coll_sm.sh's, here it keeps the
# 256 KiB edge and the 64 MiB allreduce and bcast on 5 ranks).
big=reduce_scatter:4096
# Under the sanitizers not the 256 KiB edge either (80% of the 5-rank job's
# CPU under ASan): coll/sm's paths, which t_coll_sm.sh checks under the
# sanitizers, and basic's scatter, gather and reduce, whose code has no
# size threshold; the normal build keeps it.
[ -n "$san" ] && quick=(--quick) && large=$((4 << 20)) && big="" && edges=2048,4096

# run DESCRIPTION NRANKS [env...] -- probe args: all NRANKS ranks report 0 errors.
run() {
    local d=$1 n=$2; shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local t0=$SECONDS
    out=$(env "${envs[@]}" timeout 600 "$pxrun" -n "$n" "$probe" "$@" </dev/null 2>"$T/err"); rc=$?
    local good
    good=$(echo "$out" | grep -c ', 0 errors$')
    if [ "$rc" -eq 0 ] && [ "$good" -eq "$n" ]; then
        ok "$d ($(echo "$out" | awk '{s += $3} END {print s}') checks, $((SECONDS - t0)) s)"
    else
        not_ok "$d"
        { echo "$out"; head -30 "$T/err"; } | head -40 | sed 's/^/# /'
    fi
}

small=(PX_MCA_coll_base_allreduce_ring_min=256 PX_MCA_coll_fullmesh_allreduce_halving_min=128 PX_MCA_coll_base_allreduce_pair_ring_min=192 PX_MCA_coll_base_allgather_ring_min=128
    PX_MCA_coll_base_bcast_binomial_min=64 PX_MCA_coll_base_bcast_ring_min=512
    PX_MCA_coll_base_reduce_scatter_ring_min=128 PX_MCA_coll_base_alltoall_pairwise_min=256
    PX_MCA_coll_ring_chunk=64 PX_MCA_coll_ring_window=2)
run "8 ranks, every operation x type x reduction, groups of 1..8, small thresholds" 8 \
    "${small[@]}" -- matrix --edges 64,128,192,256,512 "${quick[@]}"
run "5 ranks, default thresholds, around each$([ -n "$san" ] && echo ' below 64 KiB'), and $((large >> 20)) MiB allreduce + bcast" 5 -- \
    matrix --edges $edges ${big:+--big-edges $big} --large $large --quick
# The switches coll/sm shadows from 64 KiB (to ring and fullmesh at 4 and 8
# MiB, allreduce's to ring at 256 KiB): with coll/sm left out the built-in
# rules fall through to them (px_info --coll-rules). 3 ranks, the normal
# build only (~5 CPU s; under the sanitizers the same code runs at the
# small thresholds of the 8-rank job above).
[ -z "$san" ] && run "3 ranks without coll/sm: around the default large thresholds (ring, fullmesh at 256 KiB, 4 and 8 MiB)" 3 \
    PX_MCA_coll=^sm -- matrix --edges 262144 --big-edges bcast:8388608,allgather:4194304,alltoall:8388608 --quick

# Each component where it can serve alone or first.
run "coll = basic alone (every operation through basic), 4 ranks" 4 PX_MCA_coll=basic -- \
    matrix --quick
out=$(PX_MCA_coll=ring timeout 60 "$pxrun" -n 2 "$probe" matrix 2>&1 </dev/null); rc=$?
check "coll = ring alone: px_init fails, naming an operation ring does not provide" \
    eval '[ $rc -ne 0 ] && contains "$out" "no component provides barrier"'
cat >"$T/rules" <<'EOF'
# every allreduce and allgather through the ring, every bcast from fullmesh
allreduce  *   *    ring     # comments after a rule
allgather  2-  0-   ring
bcast      1-8 *    fullmesh
EOF
run "a rules file sending allreduce and allgather to ring, bcast to fullmesh, 3 ranks" 3 \
    PX_MCA_coll_base_rules_file="$T/rules" -- matrix --quick
out=$(PX_MCA_coll_base_rules_file="$T/rules" "$pxinfo" --coll-rules 2>&1)
check "px_info --coll-rules shows the file's rules first" \
    eval 'echo "$out" | sed -n 4p | grep -Eq "^  allreduce +any +any +ring +rules file line 2$"'
check "... then the built-in ones, from the threshold variables" \
    eval 'echo "$out" | grep -Eq "^  allreduce +3- +256k- +ring +coll_base_allreduce_ring_min$"'
out=$(PX_MCA_coll_base_rules_file="$T/rules" "$pxinfo" --json 2>&1)
check "px_info --json carries the rules" eval 'echo "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
r = d[\"coll_rules\"][0]
assert (r[\"operation\"], r[\"component\"], r[\"group_max\"], r[\"bytes_max\"]) == (\"allreduce\", \"ring\", None, None), r
assert \"coll\" in [f[\"name\"] for f in d[\"frameworks\"]]
"'
printf 'allreduce * * ring\nallreduse 2 0-4k basic\n' >"$T/bad"
out=$(PX_MCA_coll_base_rules_file="$T/bad" timeout 60 "$pxrun" -n 2 "$probe" matrix 2>&1 </dev/null); rc=$?
check "a mistake in the rules file: px_init fails" [ "$rc" -ne 0 ]
check "... the error names the file and line and what is wrong" \
    contains "$out" "coll_base_rules_file: $T/bad:2: \"allreduse\" is not an operation"
check "... and what is accepted" contains "$out" "OP one of barrier, bcast"
printf 'allreduce 2-4 0-1x ring\n' >"$T/bad"
out=$(PX_MCA_coll_base_rules_file="$T/bad" "$pxinfo" --coll-rules 2>&1)
check "a bad size range is named too (px_info reads the file as well)" \
    contains "$out" "$T/bad:1: bytes \"0-1x\" are not a range"
printf 'allreduce * * nosuch\n' >"$T/bad"
out=$(PX_MCA_coll_base_rules_file="$T/bad" "$pxinfo" --coll-rules 2>&1)
check "an unknown component is named with the known ones" \
    contains "$out" "\"nosuch\" is not a coll component (known: basic"

# A rank killed in the middle of an allreduce: the others fail, within
# seconds, and a later collective on the group fails at once. The survivors
# ignore SIGTERM and pxrun waits 60 s before SIGKILL, so only the library can
# end their wait.
for n in 4 3; do
    victim=$((n - 2))
    out=$(PX_PXRUN_GRACE=60 timeout 120 "$pxrun" -n $n "$probe" die $victim 2>"$T/err" </dev/null)
    # Those that exchanged with the victim see it die (PX_ERR_PEER_FAILED),
    # the others are told by them (PX_ERR_GROUP_FAILED); docs/coll.md.
    failed=$(echo "$out" | grep -Ec 'allreduce failed: (peer process failed or disconnected|the group failed: a member gave up on a collective) after')
    check "$n ranks, rank $victim killed during an allreduce: the $((n - 1)) others return an error" \
        [ "$failed" -eq $((n - 1)) ]
    check "... at least one of them saw the peer fail" \
        grep -q 'allreduce failed: peer process failed or disconnected after' <<<"$out"
    check "... and their next collective on the group fails at once (PX_ERR_GROUP_FAILED)" \
        [ "$(echo "$out" | grep -c 'next allreduce: the group failed: a member gave up')" -eq $((n - 1)) ]
    check "... pxrun did not have to SIGKILL anyone" eval '! grep -q "sending SIGKILL" "$T/err"'
    check "... and they free their buffers and finalize cleanly (no late fragment lands in them)" \
        [ "$(echo "$out" | grep -c 'finalized')" -eq $((n - 1)) ]
    echo "$out" | grep 'after' | sed 's/^/# /'
done
tap_done
