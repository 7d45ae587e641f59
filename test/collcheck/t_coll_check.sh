#!/usr/bin/env bash
# px_coll_check (tools/px_coll_check) on the in-tree coll components (basic,
# fullmesh, ring), the out-of-tree example (examples/coll_example, coll/chain),
# and a deliberately broken plugin (test/collcheck/broken.c) whose defects must
# show as "not ok" on the right operation; plus the errors for an unknown
# component and a bad option.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
CHECK=$B/tools/px_coll_check/px_coll_check
PXRUN=$B/tools/pxrun/pxrun
[ -x "$CHECK" ] && [ -x "$PXRUN" ] || { not_ok "px_coll_check and pxrun are built"; tap_done; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Sanitizer builds: the small counts only, and 3 ranks where the normal
# build runs 4 (px_coll_check starts a job per operation: a 4-rank run is 10
# ASan jobs of 5 processes; groups of 4 members of basic and ring run under
# the sanitizers in test/coll/t_coll.sh's matrices).
quick="" n4=4 groups="1 2 3 4"
[ -n "${PX_TEST_SANITIZER:-}" ] && quick=--quick n4=3 groups="1 2 3"
run() { timeout -s KILL 900 "$CHECK" --pxrun "$PXRUN" $quick "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }
wellformed() {
    local plan n
    plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$T/out")
    n=$(grep -cE '^(not )?ok [0-9]+ - ' "$T/out")
    [ -n "$plan" ] && [ "$plan" -eq "$n" ]
}
show() { sed 's/^/#   /' "$T/out" | cut -c1-400 | head -20 >&2; sed 's/^/#   stderr: /' "$T/err" | head -10 >&2; }
line() { grep -E "^(not )?ok $1 - " "$T/out"; }

# In-tree components: every check ok; what each does not provide is SKIP.
# Each run's report is kept ($T/out.<component>) for the checks of its lines.
for t in "basic -n $n4" "fullmesh -n 3" "ring -n $n4"; do
    # shellcheck disable=SC2086
    run $t
    check "px_coll_check $t: exit status 0 (every check ok)" test "$rc" -eq 0 || show
    check "px_coll_check $t: TAP plan and lines agree" wellformed
    cp "$T/out" "$T/out.${t%% *}"
done
cp "$T/out.basic" "$T/out"
check "basic provides every operation: no SKIP" eval '! grep -q "# SKIP" "$T/out"'
check "basic: allreduce checked on groups of $groups" \
    contains "$(line 7)" "calls checked on groups of $groups"
cp "$T/out.ring" "$T/out"
check "ring: scatter is SKIP (ring does not provide it)" \
    contains "$(line 4)" "# SKIP coll/ring does not provide scatter"
check "ring: reduce_scatter ran (not skipped)" contains "$(line 9)" "calls checked"

# The out-of-tree example, built from examples/coll_example against the
# source tree: its bcast passes, everything else is SKIP.
mkdir -p "$T/chain"
cc -shared -fPIC -std=gnu11 -Wall -Wextra -Werror -I"$PX_SRC" -I"$B" -o "$T/chain/plexus_coll_chain.so" \
    "$PX_SRC/examples/coll_example/chain.c" -L"$B/.libs" -lplexus 2>"$T/cc.log"
check "the example coll plugin builds" test -f "$T/chain/plexus_coll_chain.so" || sed 's/^/#   /' "$T/cc.log"
run -n "$n4" --mca mca_component_path_prepend "$T/chain" chain
check "chain -n $n4: exit status 0" test "$rc" -eq 0 || show
check "chain: its bcast is checked" contains "$(line 3)" "ok 3 - bcast: results"
check "... over every group size" contains "$(line 3)" "calls checked on groups of $groups"
check "chain: allreduce is SKIP (not provided)" contains "$(line 7)" "# SKIP coll/chain does not provide allreduce"

# The broken plugin: barrier returns at once, allreduce leaves the last
# element unreduced; its bcast is correct.
run -n 3 --mca mca_component_path_prepend "$B/test/collcheck/.libs" broken
check "broken -n 3: exit status 1 (not ok lines)" test "$rc" -eq 1 || show
check "broken: TAP plan and lines agree" wellformed
check "broken: the barrier that waits for nobody is not ok, saying who left early" \
    grep -qE "^not ok 2 - barrier: .* left [0-9.]+ ms before group rank [0-9]+ entered" "$T/out"
check "broken: the allreduce is not ok, naming the wrong last element" \
    grep -qE "^not ok 7 - allreduce: .*count 7, group of [23].*element 6 of 7 is 0x[0-9a-f]+, expected 0x" "$T/out"
check "broken: its correct bcast is ok" grep -qE "^ok 3 - bcast: " "$T/out"
check "broken: the query check is ok (it gives a module)" grep -qE "^ok 1 - query: " "$T/out"

# Usage errors.
"$CHECK" nosuch >"$T/out" 2>"$T/err"
rc=$?
check "an unknown component: exit status 2 (got $rc)" test "$rc" -eq 2
check "... listing the components found" contains "$(cat "$T/err")" 'no coll component named "nosuch" here; available: basic (built in)'
"$CHECK" -n 9 basic >"$T/out" 2>"$T/err"
rc=$?
check "-n 9: exit status 2 (got $rc), saying the range" \
    sh -c 'test "$1" -eq 2 && grep -q "the number of ranks must be 1 to 8" "$2"' _ "$rc" "$T/err"
"$CHECK" --pxrun "$T/nosuch" basic >"$T/out" 2>"$T/err"
rc=$?
check "--pxrun naming no program: exit status 2 (got $rc), naming it" \
    sh -c 'test "$1" -eq 2 && grep -q "cannot run the launcher .*/nosuch" "$2"' _ "$rc" "$T/err"
tap_done
