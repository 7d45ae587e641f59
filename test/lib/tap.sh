# tap.sh: helpers for shell tests. Source it; each check prints "ok N - what"
# or "not ok N - what"; skip prints "ok N - what # SKIP reason".
# Environment from test/run-tests.sh: PX_BUILD (build tree), PX_SRC (source tree).
_tap_n=0
_tap_failed=0
ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
not_ok() { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; }
# A partial build (test/tsan/run-tsan.sh builds only what its tests need)
# lists the test programs it left out in the file $PX_TEST_UNBUILT: a skip
# whose reason names one of them, or its folder, is then a failure (the
# build missed a program its tests need), never a skip.
skip() {
    local u
    if [ -n "${PX_TEST_UNBUILT:-}" ] && [ -s "$PX_TEST_UNBUILT" ]; then
        while IFS= read -r u; do
            u=${u%.la}
            case "$2" in *"$u"* | *"${u%/*}"*)
                not_ok "$1: skipped ($2), but this partial build left out $u ($PX_TEST_UNBUILT): build it"
                return ;;
            esac
        done <"$PX_TEST_UNBUILT"
    fi
    _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $1 # SKIP $2"
}
# check "description" command...: ok when the command succeeds
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
# contains "text" "needle"
contains() { case "$1" in *"$2"*) return 0 ;; *) echo "# expected to find: $2" >&2; echo "# in: $1" | head -20 >&2; return 1 ;; esac; }
# stop_proc PID: SIGSTOP, then wait (up to 5 s) until every thread of PID is
# stopped: the signal wakes one thread, which stops the others only when it
# runs, so on a loaded machine another thread may still serve a while.
proc_stopped() {
    local st
    for st in /proc/"$1"/task/*/stat; do
        [ -r "$st" ] || return 1
        [ "$(sed 's/.*) //' "$st" | cut -d' ' -f1)" = T ] || return 1
    done
}
stop_proc() {
    kill -STOP "$1" || return 1
    local i
    for i in $(seq 1 200); do proc_stopped "$1" && return 0; sleep 0.025; done
    echo "# process $1 did not stop within 5 s" >&2
    return 1
}
tap_done() { exit $((_tap_failed > 0)); }
# wait_file FILE PID [TRIES]: wait (TRIES x 50 ms, default 600: 30 s) until
# FILE is not empty; status 0 when it is, 1 when PID (its writer) ended or
# the time ran out first.
wait_file() {
    local i
    for i in $(seq 1 "${3:-600}"); do
        [ -s "$1" ] && return 0
        kill -0 "$2" 2>/dev/null || break
        sleep 0.05
    done
    [ -s "$1" ]
}
# need_built FILE...: each FILE (a program or library of the build) exists and
# is executable; otherwise one not_ok naming the first one missing, and the
# test ends there.
need_built() {
    local f
    for f in "$@"; do
        [ -x "$f" ] || { not_ok "$f is not built (make build-tests in ${PX_BUILD:-the build})"; tap_done; }
    done
}
