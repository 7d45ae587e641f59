#!/usr/bin/env bash
# ThreadSanitizer run of the threaded unit tests and the messaging tests.
# Usage: test/tsan/run-tsan.sh [FILTER-REGEX]
#   Configures (once) a separate build in $PX_TSAN_BUILD (default:
#   <source>/build-tsan) with CC=${PX_TSAN_CC:-clang}
#   CFLAGS="-O1 -g1 -fsanitize=thread" (line tables only: a report names
#   files and lines; full debug info cost 12-18% more CPU per compile), builds the library, tools and the
#   test programs the filter's tests need (below), and runs test/run-tests.sh on it with FILTER-REGEX (default:
#   the tests whose processes run threads of their own, listed below). A
#   ThreadSanitizer report makes the program exit with status 66, which fails
#   its test; the reports are listed at the end. Ends with run-tests.sh's
#   "N passed, N failed" line; exit status 0 only when it says 0 failed and no
#   report was written. PX_TSAN_BUILD_ONLY=1: configure and build, then stop
#   (CI builds in the background while other tests run).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${PX_TSAN_BUILD:-$src/build-tsan}
cc=${PX_TSAN_CC:-clang}
# The tests whose processes run threads of their own (ThreadSanitizer sees
# races between the threads of one process, never between processes): the
# object system and utilities (lifo, free lists, atomics, variables), the
# transfer engine (submitting threads beside messaging), the thread levels
# (test/threads), the registry (heartbeat thread, p2p's listener), pxrun (the
# ranks' watcher thread), verbs (the software device's progress thread) and
# the peer listener's unit test. The messaging tests over btl, shm, coll and
# runtime run single-threaded processes: they run in the normal and ASan builds.
filter=${1:-'test/(class|util|mca/var_test|xfer|threads|registry|pxrun|verbs|peer/peer_test)'}
# -mcx16 on x86_64: the LIFO's 16-byte CAS is then emitted inline, where
# ThreadSanitizer instruments it; through libatomic it is invisible to TSan,
# which then reports false races on the items it orders.
cflags="-O1 -g1 -fno-omit-frame-pointer -fsanitize=thread"
case "$(uname -m)" in x86_64) cflags="$cflags -mcx16" ;; esac

mkdir -p "$build"
cd "$build" || exit 2
if [ ! -f Makefile ] || [ "$(cat .px_tsan_flags 2>/dev/null)" != "$cc $cflags" ]; then
    echo "# configuring $build (CC=$cc CFLAGS=$cflags)"
    # Under dash, as scripts/build.sh does (libtool's calls cost about half).
    [ -z "${CONFIG_SHELL:-}" ] && [ -x /bin/dash ] && export CONFIG_SHELL=/bin/dash
    ${CONFIG_SHELL:-/bin/sh} "$src/configure" -q CC="$cc" CFLAGS="$cflags" LDFLAGS="-fsanitize=thread" \
        >configure.out 2>&1 || { echo "run-tsan: configure failed, see $build/configure.out" >&2; exit 2; }
    echo "$cc $cflags" >.px_tsan_flags
fi
# The test programs and test libraries (check_PROGRAMS, check_LTLIBRARIES)
# the filter's tests need, derived from the Makefile and the tests, so a new
# test program is built without editing this script:
#  - each whose path in the build matches the filter (the Check programs
#    run-tests.sh then runs: it runs the *_test programs it finds);
#  - each a matching shell test names (test/<dir>/<name>, or its folder
#    test/<dir>: everything built there), or a shell file it sources or
#    runs names (test/lib/*.sh, ...; followed two levels deep).
# `make all` builds the library, plugins and tools as before. The targets
# left out go to $build/tsan-unbuilt.txt: a test that skips because one of
# them (or a file of its folder) is missing fails instead (test/lib/tap.sh,
# PX_TEST_UNBUILT), so a program missed here shows as a failure, never as a
# skip. PX_TSAN_ALL_TESTS=1: `make build-tests` (every test program).
print_var() { printf 'px-print:\n\t@echo $(%s)\n' "$1" | make -s -f Makefile -f - px-print; }
needed_targets() {
    local texts="" more t f w k word
    texts=$(find "$src/test" -type f -name 't_*.sh' | grep -E "$filter" | sort)
    more=$texts
    for _ in 1 2; do # the shell files these name (sourced or run), twice over
        more=$(cat $more /dev/null | grep -oE '(test|tools|examples)/[A-Za-z0-9_./-]+\.sh' | sort -u |
            while read -r f; do [ -f "$src/$f" ] && echo "$src/$f"; done)
        [ -n "$more" ] || break
        texts="$texts $more"
    done
    # the words naming something of the tree: test/<dir>/<name>, .libs/ and
    # extensions dropped
    words=$(cat $texts /dev/null | grep -oE 'test/[A-Za-z0-9_./-]+' |
        sed -E 's%/\.libs(/|$)%/%; s/\.(so|la|c)(\.[0-9]+)*$//; s%/+$%%' | sort -u)
    for t in $(print_var check_PROGRAMS) $(print_var check_LTLIBRARIES); do
        k=${t%.la}
        if [[ $build/$t =~ $filter ]]; then echo "$t"; continue; fi
        for word in $words; do
            if [ "$word" = "$k" ] || [ "$word" = "${k%/*}" ]; then echo "$t"; break; fi
        done
    done
}
if [ -n "${PX_TSAN_ALL_TESTS:-}" ]; then
    echo "# building (make all, then make build-tests)"
    : >tsan-unbuilt.txt
    { make -j"${PX_TSAN_JOBS:-2}" && make -j"${PX_TSAN_JOBS:-2}" build-tests; } >make-tsan.out 2>&1 ||
        { tail -30 make-tsan.out; echo "run-tsan: build failed, see $build/make-tsan.out" >&2; exit 2; }
else
    targets=$(needed_targets | sort -u)
    { print_var check_PROGRAMS; print_var check_LTLIBRARIES; } | tr ' ' '\n' | sed '/^$/d' | sort -u |
        comm -23 - <(echo "$targets") >tsan-unbuilt.txt
    echo "# building (make all, then the $(echo "$targets" | wc -w) test program(s) and libraries the tests of '$filter' need; $(wc -l <tsan-unbuilt.txt) left out)"
    # shellcheck disable=SC2086
    { make -j"${PX_TSAN_JOBS:-2}" && make -j"${PX_TSAN_JOBS:-2}" $targets; } >make-tsan.out 2>&1 ||
        { tail -30 make-tsan.out; echo "run-tsan: build failed, see $build/make-tsan.out" >&2; exit 2; }
fi
[ -n "${PX_TSAN_BUILD_ONLY:-}" ] && { echo "# built $build"; exit 0; }

# Reports go to files as well as to each test's log, so none is missed in a
# forked Check child or a rank started by pxrun.
rm -rf "$build/tsan-reports"
mkdir -p "$build/tsan-reports"
export TSAN_OPTIONS="exitcode=66 suppressions=$src/test/tsan/tsan.supp halt_on_error=0 second_deadlock_stack=1 log_path=$build/tsan-reports/report ${TSAN_OPTIONS:-}"
# Left out: t_var_ranges.sh (hundreds of 2-rank jobs that each parse one
# variable's value and move a few messages; no thread of its own; it runs in
# full in the normal build and at each range's ends under ASan): under TSan
# it took a fifth of the stage. Also t_fs_race.sh (another user racing the
# removal of a job's folder: processes, no thread of their own beyond what
# t_pxrun.sh runs here) and t_coll_late.sh (ranks timing out of collectives
# one after another: processes and timeouts, 44 s of the stage); both run in
# full in the normal and the ASan builds.
export PX_TEST_EXCLUDE=${PX_TEST_EXCLUDE:-'t_var_ranges|t_fs_race|t_coll_late'}
# PX_TEST_TSAN=1: tests that run long loops may run fewer under TSan (each
# step several times slower), as they do under ASan with PX_TEST_SANITIZER.
export PX_TEST_TSAN=1
# The test programs the build above left out (a skip for one fails).
export PX_TEST_UNBUILT=$build/tsan-unbuilt.txt
bash "$src/test/run-tests.sh" "$build" "$filter"
rc=$?
reports=$(find "$build/tsan-reports" -type f | wc -l)
if [ "$reports" -gt 0 ]; then
    echo "ThreadSanitizer reports ($reports file(s) in $build/tsan-reports):"
    grep -h -A3 '^WARNING: ThreadSanitizer' "$build"/tsan-reports/* | grep -E 'WARNING|#0' | sort | uniq -c | sort -rn | head -40
    rc=1
else
    echo "no ThreadSanitizer report"
fi
exit $rc
