#!/usr/bin/env bash
# The application ABI across releases (docs/abi.md): a program and a plugin
# built against the previous release's headers and library run, unchanged,
# on this build's library.
# - The previous release is 0.1 (commit fad2781, PX_ABI_PREV_COMMIT to
#   override), taken from git history: its libplexus.so and headers are built
#   in $PX_BUILD/test/abi/prev (kept between runs, nothing outside the build),
#   or in PX_ABI_PREV_DIR when set: nothing there depends on the build under
#   test (the 0.1 library, the program and the plugin are built with plain cc
#   -O1 -g whatever the build's flags), so CI's sanitizer stage points it at
#   the normal build's folder and does not build release 0.1 a second time.
# - test/abi/prev_app.c is compiled against them (a position-independent
#   program: it copies the exported px_progress_policy into itself) and
#   examples/btl_example of that release is built as a plugin.
# - The binary runs first on the old library (the program is right), then on
#   this build's through LD_LIBRARY_PATH: as a singleton, and on 2 ranks with
#   the old plugin carrying the messages; progress_idle_wait_ms=7 must reach
#   it, and the dynamic linker must not find a symbol of another size.
# Without git history (a source tarball, a shallow clone) it skips, saying so.
. "$PX_SRC/test/lib/tap.sh"
commit=${PX_ABI_PREV_COMMIT:-fad2781}
B=$PX_BUILD
prev=${PX_ABI_PREV_DIR:-$B/test/abi/prev}
pxrun=$B/tools/pxrun/pxrun

if ! command -v git >/dev/null; then
    skip "program of release 0.1 on this library" "git is not installed: the previous release is built from git history"
    tap_done
fi
if ! git -C "$PX_SRC" rev-parse --git-dir >/dev/null 2>&1; then
    skip "program of release 0.1 on this library" "$PX_SRC is not a git clone (no .git): the previous release ($commit) is built from its history"
    tap_done
fi
if ! git -C "$PX_SRC" cat-file -e "$commit^{commit}" 2>/dev/null; then
    skip "program of release 0.1 on this library" "commit $commit (release 0.1) is not in this clone's history (shallow clone?): fetch it to run this test"
    tap_done
fi
full=$(git -C "$PX_SRC" rev-parse "$commit^{commit}")

# 1. The previous release's library and headers, built once per commit
# (test/abi/build-prev.sh; .ci/run has it built beside the normal build).
bash "$PX_SRC/test/abi/build-prev.sh" "$prev" "$full"
check "release 0.1 ($commit) built: libplexus.so (log: $prev/build.log)" test -f "$prev/stamp"
if [ ! -f "$prev/stamp" ]; then
    tail -20 "$prev/build.log" | sed 's/^/#   /'
    tap_done
fi
oldlib=$prev/obj/.libs
inc=(-I"$prev/src" -I"$prev/obj")

# 2. The program and the plugin, built against 0.1 only.
app=$prev/prev_app
cc -std=gnu11 -O1 -g -Wall -Werror "${inc[@]}" -o "$app" "$PX_SRC/test/abi/prev_app.c" \
    -L"$oldlib" -lplexus 2>"$prev/app.log"
check "test/abi/prev_app.c compiles and links against the 0.1 headers and library" test -x "$app"
mkdir -p "$prev/plugins"
cc -std=gnu11 -O1 -g -shared -fPIC "${inc[@]}" -o "$prev/plugins/plexus_btl_example.so" \
    "$prev/src/examples/btl_example/example.c" 2>"$prev/plugin.log"
check "0.1's examples/btl_example builds as a plugin against the 0.1 headers" \
    test -f "$prev/plugins/plexus_btl_example.so"
[ -x "$app" ] || { sed 's/^/#   /' "$prev/app.log"; tap_done; }
check "the program copies px_progress_policy into itself (a copy relocation)" \
    grep -qE '_COPY +[0-9a-f]+ px_progress_policy' <(readelf -rW "$app")

# In a sanitizer build the library needs the ASan runtime loaded first, which
# the uninstrumented program does not do: preload it (the program stays as
# it was built). The 0.1 library's own leaks are not this build's business.
asan=$(readelf -d "$B/.libs/libplexus.so" | sed -n 's/.*NEEDED.*\[\(libasan\.so[^]]*\)\].*/\1/p')
run() { # run LIBDIR [pxrun -n N]: the unchanged binary on the library in LIBDIR
    local lib=$1 opts=${ASAN_OPTIONS:-}
    shift
    [ "$lib" = "$oldlib" ] && opts="${opts:+$opts:}detect_leaks=0"
    LD_PRELOAD=${asan:+$asan} ASAN_OPTIONS=$opts LD_LIBRARY_PATH=$lib PX_MCA_progress_idle_wait_ms=7 \
        PX_MCA_mca_component_path=$prev/plugins timeout -k 5 120 "$@" "$app" </dev/null 2>&1
}

# 3. On the old library: the program is right.
out=$(run "$oldlib"); rc=$?
echo "$out" | sed 's/^/#   0.1: /'
check "on the 0.1 library: PASS" test "$rc" -eq 0 -a -n "$(grep -F 'rank 0: PASS' <<<"$out")"

# 4. On this build's library.
resolved=$(LD_LIBRARY_PATH=$B/.libs ldd "$app" | grep -F libplexus.so)
check "with LD_LIBRARY_PATH it loads this build's library ($resolved)" contains "$resolved" "$B/.libs/"
out=$(run "$B/.libs"); rc=$?
echo "$out" | sed 's/^/#   new: /'
check "singleton on this library: exit 0" test "$rc" -eq 0
check "... every check passed" contains "$out" "prev_app rank 0: PASS"
check "... progress_idle_wait_ms 7 reached the program's px_progress_policy" \
    contains "$out" "idle_wait_ms 7, idle_spins 32"
check "... no symbol of a size other than the program was built with" \
    test -z "$(grep -F 'different size' <<<"$out")"

if [ -x "$pxrun" ]; then
    out=$(PX_MCA_btl=self,example run "$B/.libs" "$pxrun" -n 2); rc=$?
    echo "$out" | sed 's/^/#   new, 2 ranks: /'
    check "2 ranks over 0.1's example plugin on this library: exit 0" test "$rc" -eq 0
    check "... both ranks passed" test "$(grep -cE '^prev_app rank [01]: PASS' <<<"$out")" -eq 2
    check "... the ring crossed the 0.1 plugin" contains "$out" "ring token 11 from rank 1"
    check "... no symbol of another size" test -z "$(grep -F 'different size' <<<"$out")"
else
    not_ok "tools/pxrun/pxrun is not built"
fi
tap_done
