#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers of outside input with libFuzzer.
# Usage: test/fuzz/run-fuzz.sh [SECONDS [HARNESS...]]
#   Configures (once) a clang build with ASan+UBSan and libFuzzer coverage in
#   $PX_FUZZ_BUILD (default: <source>/build-fuzz), builds libplexus.a there,
#   links each harness test/fuzz/fuzz_<name>.c with -fsanitize=fuzzer and
#   runs it for SECONDS (default 20) from the committed seed corpus
#   test/fuzz/corpus/<name>/ (new inputs go to $PX_FUZZ_BUILD/fuzz/corpus/<name>,
#   kept between runs). Prints one TAP-like line per harness; a crash, a
#   sanitizer report, a leak or a timeout is a failure and leaves the input
#   in $PX_FUZZ_BUILD/fuzz/artifacts/. Exit status 0 only when nothing was found.
#   PX_FUZZ_SEED fixes libFuzzer's random seed (CI sets it, so a CI run is
#   repeatable; developers fuzz with a new seed each run). PX_FUZZ_PARALLEL
#   harnesses run at once (default: the number of cores), each one process.
#   PX_FUZZ_BUILD_ONLY=1: configure and build libplexus.a and link every
#   harness, then stop (CI builds them in the background while other tests
#   run). A later run links a harness again only when its binary is older
#   than libplexus.a or one of the files it is built from (or than this
#   script), so CI's fuzzing stage spends its time fuzzing.
# Needs clang and libclang-rt-<version>-dev (libFuzzer, sanitizers).
set -u
secs=${1:-20}
shift || true
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${PX_FUZZ_BUILD:-$src/build-fuzz}
cc=${PX_FUZZ_CC:-clang}
all=(var_file var_value selection pxrun_client pxrun_server runtime_am xfer_key)
all+=(shm_fbox shm_queue shm_modex)
all+=(ofi_modex ofi_recv verbs_modex verbs_recv) # btl/ofi, btl/verbs wire checks
all+=(xfer_am xfer_map)
all+=(peer_contact peer_accept) # runtime/peer: contact strings, the listener's framing
all+=(btl_dyn) # the BTL base's dynamic peer payload
all+=(name_entry) # runtime/name: registry entries (JSON) written by anyone
all+=(registry_p2p_request registry_p2p_answer) # registry/p2p: its listener's and client's parsers
all+=(registry_etcd) # registry/etcd: what an etcd endpoint answers
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all[@]}")
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -g1: line tables only (a crash's stack names files and lines), cheaper to compile than -g
cflags="-O1 -g1 $san -fsanitize=fuzzer-no-link"

if ! command -v "$cc" >/dev/null; then
    echo "run-fuzz: $cc not found (install clang and libclang-rt-dev)" >&2
    exit 2
fi
mkdir -p "$build"
cd "$build" || exit 2
if [ ! -f Makefile ] || [ "$(cat .px_fuzz_flags 2>/dev/null)" != "$cc $cflags" ]; then
    echo "# configuring $build (CC=$cc CFLAGS=$cflags)"
    # Under dash, as scripts/build.sh does (libtool's calls cost about half).
    [ -z "${CONFIG_SHELL:-}" ] && [ -x /bin/dash ] && export CONFIG_SHELL=/bin/dash
    ${CONFIG_SHELL:-/bin/sh} "$src/configure" -q --disable-shared CC="$cc" CFLAGS="$cflags" LDFLAGS="$san" \
        >configure.out 2>&1 || { echo "run-fuzz: configure failed, see $build/configure.out" >&2; exit 2; }
    echo "$cc $cflags" >.px_fuzz_flags
fi
echo "# building libplexus.a"
make -j"${PX_FUZZ_JOBS:-2}" libplexus.la >make-fuzz.out 2>&1 ||
    { echo "run-fuzz: building libplexus failed, see $build/make-fuzz.out" >&2; exit 2; }
libs="$build/.libs/libplexus.a $(sed -n 's/^HWLOC_LIBS = //p; s/^LTDL_LIBS = //p; s/^SODIUM_LIBS = //p; s/^JSONC_LIBS = //p' Makefile | tr '\n' ' ') -ldl -lm -lpthread"
mkdir -p fuzz/bin fuzz/corpus fuzz/artifacts fuzz/logs
# The C files of a source list a component's Makefile.inc defines (what the
# harnesses of test/fuzz/Makefile.inc compile in), from the top of the tree.
component_sources() {
    printf 'px-print-sources:\n\t@echo $(%s)\n' "$1" |
        make -s -f Makefile -f - px-print-sources | tr ' ' '\n' | sed -n "s|^\(.*\.c\)$|$src/\1|p"
}

# link_one H: link harness H into fuzz/bin/fuzz_H unless it is newer than
# everything it is built from; status 0 when the binary is there. Its
# compiler output goes to fuzz/logs/H.build.
link_one() {
    local h=$1 extra="" bin=fuzz/bin/fuzz_$1 f stale=0
    [ "$h" = selection ] && extra="$src/test/mca/ptest_base.c"
    [ "$h" = pxrun_server ] && extra="$src/tools/pxrun/pxrun_server.c"
    case $h in ofi_*) extra=$(component_sources PX_BTL_OFI_WIRE_SOURCES) ;; esac
    case $h in verbs_*) extra=$(component_sources PX_BTL_VERBS_WIRE_SOURCES) ;; esac
    [ "$h" = registry_etcd ] && extra="$(component_sources PX_REGISTRY_ETCD_WIRE_SOURCES) $(sed -n 's/^JSONC_CFLAGS = //p; s/^JSONC_LIBS = //p' Makefile | tr '\n' ' ')"
    if [ "$h" = btl_dyn ]; then # with btl/verbs's part reader where verbs is built
        extra=$(component_sources PX_BTL_VERBS_WIRE_SOURCES)
        [ -n "$extra" ] && extra="$extra -DPX_FUZZ_BTL_DYN_VERBS"
    fi
    if [ -x "$bin" ]; then
        # The sources named here, the headers of the tree (any may be
        # included), the library and this script.
        for f in "$src/test/fuzz/fuzz_$h.c" "$src/test/fuzz/fuzz_util.c" $(printf '%s\n' $extra | grep '\.c$') \
            "$build/.libs/libplexus.a" "$build/config.h" "$src/test/fuzz/run-fuzz.sh"; do
            [ "$f" -nt "$bin" ] && stale=1
        done
        [ -n "$(find "$src" \( -path "$src/build*" -o -path "$src/.git" \) -prune -o \
            -name '*.h' -newer "$bin" -print -quit)" ] && stale=1
        [ $stale = 0 ] && return 0
    fi
    rm -f "$bin"
    # shellcheck disable=SC2086
    $cc $cflags -fsanitize=fuzzer -I"$src" -I"$build" -o "$bin" \
        "$src/test/fuzz/fuzz_$h.c" "$src/test/fuzz/fuzz_util.c" $extra $libs >"fuzz/logs/$h.build" 2>&1
}

# one N H: fuzz harness H (number N; linked first if needed); its TAP line
# goes to fuzz/logs/H.result. Harnesses run side by side, one per core
# (PX_FUZZ_PARALLEL), each single-threaded, each for $secs seconds.
one() {
    local n=$1 h=$2 bin log seeds work start rc took runs cov art what
    bin=fuzz/bin/fuzz_$h
    log=$build/fuzz/logs/$h.log
    if ! link_one "$h"; then
        cp "fuzz/logs/$h.build" "$log"
        echo "not ok $n - $h: does not build (see $log)" >"fuzz/logs/$h.result"
        return
    fi
    : >"$log"
    seeds=$src/test/fuzz/corpus/$h
    work=fuzz/corpus/$h
    mkdir -p "$work"
    start=$(date +%s)
    # -close_fd_mask=3: the library's own warnings stay out of the log;
    # libFuzzer and the sanitizers still report.
    "./$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        ${PX_FUZZ_SEED:+-seed="$PX_FUZZ_SEED"} -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$build/fuzz/artifacts/$h-" \
        "$work" "$seeds" >>"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        echo "ok $n - $h: ${runs:-?} runs in ${took} s, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) inputs"
    else
        art=$(grep -oE "Test unit written to [^ ]+" "$log" | tail -1 | sed 's/Test unit written to //')
        what=$(grep -m1 -oE 'ERROR: [A-Za-z]+: [^ ]+( [^ ]+)?|runtime error: .*|deadly signal|timeout after [0-9]+ seconds' "$log" | head -1)
        echo "not ok $n - $h: ${what:-exit $rc} (input: ${art:-?}; log: $log)"
    fi >"fuzz/logs/$h.result"
}

par=${PX_FUZZ_PARALLEL:-$(nproc)}
if [ -n "${PX_FUZZ_BUILD_ONLY:-}" ]; then
    running=0 bad=""
    for h in "${harnesses[@]}"; do
        { link_one "$h" || echo "$h" >>fuzz/logs/build-failed; } &
        running=$((running + 1))
        if [ "$running" -ge "${PX_FUZZ_JOBS:-2}" ]; then
            wait -n
            running=$((running - 1))
        fi
    done
    wait
    # (a harness that does not link is reported by the fuzzing run, which tries again)
    [ -f fuzz/logs/build-failed ] && bad=$(tr '\n' ' ' <fuzz/logs/build-failed) && rm -f fuzz/logs/build-failed
    echo "# built $build/.libs/libplexus.a and ${#harnesses[@]} harness(es)${bad:+; not linked: $bad}"
    exit 0
fi
n=0 failed=0 running=0
echo "1..${#harnesses[@]}"
for h in "${harnesses[@]}"; do
    n=$((n + 1))
    rm -f "fuzz/logs/$h.result"
    one "$n" "$h" &
    running=$((running + 1))
    if [ "$running" -ge "$par" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
i=0
for h in "${harnesses[@]}"; do
    i=$((i + 1))
    line=$(cat "fuzz/logs/$h.result" 2>/dev/null)
    [ -n "$line" ] || line="not ok $i - $h: no result (see $build/fuzz/logs/$h.log)"
    echo "$line"
    case $line in "not ok"*) failed=$((failed + 1)) ;; esac
done
echo "# $((n - failed)) passed, $failed failed (fuzzing $secs s each; build $build)"
[ "$failed" -eq 0 ]
