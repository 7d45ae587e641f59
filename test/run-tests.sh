#!/usr/bin/env bash
# Run every Plexus test and end with one line "N passed, N failed[, N skipped]".
# Usage: test/run-tests.sh BUILD_DIR [filter-regex]
#   Check programs (BUILD_DIR/test/**/*_test): each test case counts once.
#   Shell tests (test/**/t_*.sh in the source tree): each "ok"/"not ok" line counts once.
# PX_TEST_TIMEOUT (seconds, default 600) bounds each program.
# PX_TEST_EXCLUDE (a regex, default none): tests whose path matches are not run
# (test/tsan/run-tsan.sh leaves out those that exercise no threads).
# PX_TEST_SKIP_SOURCE_ONLY=1: shell tests marked "# px-test: source-only"
# (they read the source tree and build scratch copies, never BUILD_DIR, so a
# second build flavour runs them identically) are not run; a line names them.
# .ci/run sets it for the sanitizer build, after the normal build ran them.
# Two lanes run beside the main one; their lines come at the end:
#  - shell tests marked "# px-test: background" (they compile and inspect
#    files: no process of theirs waits on another or on a clock) at the
#    lowest CPU priority (nice 19);
#  - shell tests marked "# px-test: waits" (most of their time is spent
#    waiting for daemons they start, for timeouts and leases to run out: a
#    small fraction of one core) at normal priority, one after the other.
# PX_TEST_LANES=1 runs everything in one lane, one test after the other.
# Each test's line ends with its wall time and CPU time "(W s, CPU C s)":
# a CPU time far below the wall time is waiting (sleeps, polls, timeouts).
set -u
build=$(cd "${1:?usage: run-tests.sh BUILD_DIR [filter]}" && pwd)
filter=${2:-.}
exclude=${PX_TEST_EXCLUDE:-}
src=$(cd "$(dirname "$0")/.." && pwd)
export PX_BUILD=$build PX_SRC=$src
# Keep user settings out of the tests.
while IFS= read -r v; do unset "$v"; done < <(env | sed -n 's/^\(PX_MCA_[^=]*\)=.*/\1/p')
export HOME=${PX_TEST_HOME:-$(mktemp -d)}
# Plugins come from this build, never from an installed Plexus (the default
# path is the install folder, then ~/.plexus/components): an installed plugin
# of another build would be tested instead, and one linked with the installed
# libplexus.so would bring a second library into a test linked with
# libplexus's objects (libpxcore.la). Tests that need other folders set the variable themselves.
export PX_MCA_mca_component_path=$build/.libs
# Tests that configure a tree of their own (t_component_fragments) do it
# under dash, as scripts/build.sh does: libtool's calls cost about two
# thirds of their CPU under bash.
if [ -z "${CONFIG_SHELL:-}" ] && [ -x /bin/dash ]; then export CONFIG_SHELL=/bin/dash; fi
timeout_s=${PX_TEST_TIMEOUT:-600}
lane=${PX_TEST_LANE:-main} # main, or the own run of lane bg (background) or wait (waits)
passed=0 failed=0 skipped=0
failures=() not_run=() excluded=()
logdir=$build/test-logs
mkdir -p "$logdir"
# timed LOG CMD...: run CMD (output to LOG, no input) in a subshell of its
# own, which then reads its children's CPU time (user + system; fields
# cutime and cstime of /proc/PID/stat) into $cpu_file: the CPU that CMD
# and the processes it waited for used (not a daemon it left running, nor
# one re-parented away by a double fork). Returns CMD's status.
tick=$(getconf CLK_TCK 2>/dev/null || echo 100)
cpu_file=$logdir/.cpu.$$
timed() {
    local log=$1
    shift
    rm -f "$cpu_file"
    (
        "$@" >"$log" 2>&1 </dev/null
        rc=$?
        read -r -a st <"/proc/$BASHPID/stat"
        echo $(((st[15] + st[16]) * 100 / tick)) >"$cpu_file"
        exit $rc
    )
}
cpu_s() { # the CPU seconds of the last timed command, with one decimal
    local cs
    cs=$(cat "$cpu_file" 2>/dev/null || echo 0)
    echo "$((cs / 100)).$((cs % 100 / 10))"
}

run_check() { # a Check program
    local prog=$1 name log out t0=$SECONDS
    name=${prog#"$build"/}
    log=$logdir/$(echo "$name" | tr / _).log
    CK_VERBOSITY=normal CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120} \
        timed "$log" timeout -k 5 "$timeout_s" "$prog"
    local rc=$?
    out=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -1)
    if [ -z "$out" ]; then
        failed=$((failed + 1)); failures+=("$name (exit $rc, no Check summary; see $log)")
        return
    fi
    local n f e
    n=$(echo "$out" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    f=$(echo "$out" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
    e=$(echo "$out" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
    passed=$((passed + n - f - e)); failed=$((failed + f + e))
    if [ $((f + e)) -gt 0 ]; then
        while IFS= read -r l; do failures+=("$name: $l"); done < <(grep -E ':(F|E):' "$log")
    fi
    echo "  $name: $((n - f - e))/$n ($((SECONDS - t0)) s, CPU $(cpu_s) s)"
}

run_shell() { # a TAP-style shell test
    local t=$1 name log rc t0=$SECONDS
    name=${t#"$src"/}
    log=$logdir/$(echo "$name" | tr / _).log
    timed "$log" timeout -k 5 "$timeout_s" bash "$t"
    rc=$?
    local p f s
    p=$(grep -cE '^ok [0-9]+' "$log" | tr -d ' ')
    s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$log" | tr -d ' ')
    f=$(grep -cE '^not ok [0-9]+' "$log" | tr -d ' ')
    p=$((p - s))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1; failures+=("$name: exited $rc without a failing check (see $log)")
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    while IFS= read -r l; do failures+=("$name: $l"); done < <(grep -E '^not ok' "$log")
    while IFS= read -r l; do echo "  $name: $l"; done < <(grep -E '^ok [0-9]+ .*# SKIP' "$log")
    echo "  $name: $p passed, $f failed, $s skipped ($((SECONDS - t0)) s, CPU $(cpu_s) s)"
}

# lane_of FILE: the lane a shell test, or a Check program whose source FILE
# (PROGRAM.c in the source tree) says " * px-test: waits", runs in when the
# lanes are on
lane_of() {
    if grep -q '^# px-test: background' "$1" 2>/dev/null; then echo bg
    elif grep -qE '^(#| \*) px-test: waits' "$1" 2>/dev/null; then echo wait
    else echo main; fi
}

# One `make install` of the build under test for every test that needs an
# installed tree (test/lib/install.sh copies it), made before the lanes
# start: `make install` relinks the plugins in the build's .libs/, moving
# each aside meanwhile, and a test installing beside another that loaded
# plugins could make one missing for it (docs/testing.md).
if [ "$lane" = main ] && [ -z "${PX_TEST_STAGE:-}" ]; then
    need_stage=0
    while IFS= read -r t; do
        [[ $t =~ $filter ]] || continue
        [ -n "$exclude" ] && [[ $t =~ $exclude ]] && continue
        if grep -q 'px_staged_install\|test/lib/example\.sh' "$t"; then
            need_stage=1
            break
        fi
    done < <(find "$src/test" -type f -name 't_*.sh' 2>/dev/null)
    if [ "$need_stage" = 1 ]; then
        export PX_TEST_STAGE=$build/test-stage
        rm -rf "$PX_TEST_STAGE" "$PX_TEST_STAGE.rc"
        make -C "$build" install DESTDIR="$PX_TEST_STAGE" >"$PX_TEST_STAGE.log" 2>&1
        echo $? >"$PX_TEST_STAGE.rc"
    fi
fi
lanes_on=0 bg_pid= wait_pid=
if [ "$lane" = main ] && [ "${PX_TEST_LANES:-3}" != 1 ]; then
    lanes_on=1
    PX_TEST_LANE=bg nice -n 19 bash "$0" "$build" "$filter" >"$logdir/background-lane.log" 2>&1 </dev/null &
    bg_pid=$!
    PX_TEST_LANE=wait bash "$0" "$build" "$filter" >"$logdir/waits-lane.log" 2>&1 </dev/null &
    wait_pid=$!
fi

[ "$lane" = main ] && echo "Plexus tests (build: $build)"
while IFS= read -r prog; do
    [ "$lane" = bg ] && break
    [[ $prog =~ $filter ]] || continue
    [ -n "$exclude" ] && [[ $prog =~ $exclude ]] && continue
    if [ "$lane" != main ] || [ "$lanes_on" = 1 ]; then
        [ "$(lane_of "$src/${prog#"$build"/}.c")" = "$lane" ] || continue
    fi
    run_check "$prog"
done < <(find "$build/test" -type f -name '*_test' -perm -u+x -not -path '*/.libs/*' 2>/dev/null | sort)
while IFS= read -r t; do
    [[ $t =~ $filter ]] || continue
    if [ -n "$exclude" ] && [[ $t =~ $exclude ]]; then
        excluded+=("${t#"$src"/}")
        continue
    fi
    if [ "${PX_TEST_SKIP_SOURCE_ONLY:-0}" = 1 ] && grep -q '^# px-test: source-only' "$t"; then
        not_run+=("${t#"$src"/}")
        continue
    fi
    if [ "$lane" != main ] || [ "$lanes_on" = 1 ]; then
        [ "$(lane_of "$t")" = "$lane" ] || continue
    fi
    run_shell "$t"
done < <(find "$src/test" -type f -name 't_*.sh' 2>/dev/null | sort)

merge_lane() { # merge_lane PID LOG TITLE: a lane's lines, counts and failures
    wait "$1"
    local lines
    lines=$(sed -n '/^Failures:$/q; /^Not run in this build/d; /^  test\//p' "$2")
    [ -n "$lines" ] && printf '  (%s:)\n%s\n' "$3" "$lines"
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$2" | tail -1)
    if [ -z "$line" ]; then
        failed=$((failed + 1)); failures+=("$3: no summary line (see $2)")
        return
    fi
    passed=$((passed + $(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')))
    failed=$((failed + $(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
    case "$line" in *skipped*) skipped=$((skipped + $(echo "$line" | sed -E 's/.* ([0-9]+) skipped.*/\1/'))) ;; esac
    while IFS= read -r l; do failures+=("$l"); done < <(sed -n '/^Failures:$/,/^[0-9]* passed, /p' "$2" | sed -n 's/^  //p')
}
if [ "$lanes_on" = 1 ]; then
    merge_lane "$wait_pid" "$logdir/waits-lane.log" "waiting lane, beside"
    merge_lane "$bg_pid" "$logdir/background-lane.log" "background lane, nice 19"
fi
rm -f "$cpu_file"
if [ ${#not_run[@]} -gt 0 ]; then
    echo "Not run in this build (source-only, PX_TEST_SKIP_SOURCE_ONLY=1): ${not_run[*]}"
fi
if [ ${#excluded[@]} -gt 0 ] && [ "$lane" = main ]; then
    echo "Shell tests not run (PX_TEST_EXCLUDE='$exclude'): ${excluded[*]}"
fi
if [ ${#failures[@]} -gt 0 ]; then
    echo "Failures:"
    printf '  %s\n' "${failures[@]}"
fi
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ $((passed + skipped)) -gt 0 ]
