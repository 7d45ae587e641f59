#!/usr/bin/env bash
# px-test: background (compiles and reads files; nothing waits on a clock)
# libplexus.so's ABI against the baseline committed in test/abi/libplexus.abi
# (docs/abi.md, "The checks"): abidiff (abigail-tools) compares the exported
# functions and variables, their symbol versions and every type reachable
# from them. A removed or changed function or variable fails, unless the
# SONAME changed (an incompatible release says so); added ones pass with a
# note to refresh the baseline (scripts/abi-baseline.sh). Planted changes in
# a copy of the baseline (a function the library no longer has, a variable
# whose type shrank) must fail the same way, so a comparison that sees
# nothing cannot pass.
# Only types the installed headers define count (abidiff --drop-private-types
# with the headers `make install` puts in place): the bodies behind opaque
# handles (px_xfer_region_t, a component's px_btl_endpoint_t) are the
# library's own and change freely.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/install.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib=$(readlink -f "$PX_BUILD/.libs/libplexus.so")
base=$PX_SRC/test/abi/libplexus.abi
desc="libplexus.so against the ABI baseline"
if ! command -v abidiff >/dev/null; then
    skip "$desc" "abidiff is not installed (Debian: apt-get install abigail-tools; scripts/deps.sh does)"
    tap_done
fi
if grep -q '^#define PX_ENABLE_DEBUG 1' "$PX_BUILD/core/px_config.h"; then
    skip "$desc" "a --enable-debug build: its px_object_t is larger by design; the baseline is the normal build's ABI"
    tap_done
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    skip "$desc" "$lib has no debug information (build with -g): abidiff needs it to compare types"
    tap_done
fi
check "the baseline test/abi/libplexus.abi is committed" test -s "$base"
px_staged_install "$tmp/inst" "$tmp/install.log"
hdrs=$(dirname "$(find "$tmp/inst" -path '*/include/plexus/plexus.h' | head -1)")
check "the installed headers are found (make install DESTDIR=...)" test -f "$hdrs/plexus.h"

# diff BASELINE: run abidiff, print the report, set removed/changed/added.
diff_against() {
    abidiff --no-show-locs --hd2 "$hdrs" --drop-private-types "$1" "$lib" >"$tmp/report" 2>&1
    rc=$?
    removed=0 changed=0 added=0
    while IFS= read -r l; do
        case "$l" in
        *"changes summary:"*)
            n=$(grep -oE '[0-9]+ Removed' <<<"$l" | grep -oE '^[0-9]+')
            removed=$((removed + ${n:-0}))
            n=$(grep -oE '[0-9]+ Changed' <<<"$l" | grep -oE '^[0-9]+')
            changed=$((changed + ${n:-0}))
            n=$(grep -oE '[0-9]+ Added' <<<"$l" | grep -oE '^[0-9]+')
            added=$((added + ${n:-0}))
            ;;
        esac
    done <"$tmp/report"
}
soname() { sed -n "s/^<abi-corpus [^>]*soname='\\([^']*\\)'.*/\\1/p" "$1" | head -1; }

diff_against "$base"
sed 's/^/#   /' "$tmp/report" | head -80
check "abidiff ran (exit $rc; 1 and 2 are errors of abidiff itself)" test $((rc & 3)) -eq 0
old_soname=$(soname "$base")
new_soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ $((removed + changed)) -gt 0 ] && [ "$old_soname" != "$new_soname" ]; then
    ok "incompatible changes ($removed removed, $changed changed) with a new SONAME ($old_soname -> $new_soname): refresh the baseline (scripts/abi-baseline.sh)"
else
    [ $((removed + changed)) -eq 0 ] ||
        echo "# an incompatible change of the ABI (report above). If it is wanted: a new SONAME (-version-info, docs/abi.md), then scripts/abi-baseline.sh; better, keep the old symbol as a compatibility version" >&2
    check "no function or variable removed or changed ($removed removed, $changed changed; SONAME $new_soname)" \
        test $((removed + changed)) -eq 0
fi
[ "$added" -eq 0 ] ||
    echo "# $added added: compatible; refresh the baseline with scripts/abi-baseline.sh in the commit that bumps -version-info (docs/abi.md)"

# Planted: the baseline with one function more (so the library "removed" it)
# and with px_progress_nentries as a long (so the library "changed" it).
python3 - "$base" "$tmp" <<'PY'
import re, sys
base, tmp = sys.argv[1], sys.argv[2]
s = open(base).read()
sym = re.search(r"\n( *<elf-symbol name='px_barrier' [^\n]*)", s).group(1)
s1 = s.replace(sym, sym + "\n" + sym.replace("'px_barrier'", "'px_planted_gone'"), 1)
decl = re.search(r"\n( *<function-decl name='px_barrier' .*?</function-decl>)", s1, re.S).group(1)
s1 = s1.replace(decl, decl + "\n" + decl.replace("px_barrier", "px_planted_gone"), 1)
open(tmp + "/removed.abi", "w").write(s1)
long_id = re.search(r"<type-decl name='long int' size-in-bits='64' id='([^']+)'", s).group(1)
s2, n = re.subn(r"(<var-decl name='px_progress_nentries' type-id=')[^']+'", r"\g<1>" + long_id + "'", s)
assert n == 1
open(tmp + "/resized.abi", "w").write(s2)
PY
check "planted baselines written" test -s "$tmp/removed.abi" -a -s "$tmp/resized.abi"
diff_against "$tmp/removed.abi"
check "planted: a function the library lost is reported removed" test "$removed" -ge 1
check "... by name" grep -q "px_planted_gone" "$tmp/report"
check "... and abidiff calls it incompatible (exit bit 8)" test $((rc & 8)) -eq 8
diff_against "$tmp/resized.abi"
check "planted: a variable whose type changed is reported changed" test "$changed" -ge 1
check "... by name, with its size" grep -qE "px_progress_nentries|size of symbol changed" "$tmp/report"
tap_done
