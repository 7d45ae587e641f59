#!/usr/bin/env bash
# px-test: background (compiles and reads files; nothing waits on a clock)
# libplexus.so is built with -fvisibility=hidden and exports only what is
# marked PX_EXPORT (core/util/compiler.h): the application API and what
# components call. Its dynamic symbol table must match
# test/build/exported-symbols.txt, so no internal symbol becomes exported (and
# no API symbol disappears) by accident. The tool hooks (exported for the
# in-tree tools only) are marked there and must stay out of the installed
# headers.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/install.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib=$PX_BUILD/.libs/libplexus.so
list=$PX_SRC/test/build/exported-symbols.txt
check "libplexus.so is built" test -f "$lib"

debug=$(sed -n 's/^#define PX_ENABLE_DEBUG \([0-9]\).*/\1/p' "$PX_BUILD/core/px_config.h")
# Expected: the list, with the debug-only names in a debug build.
grep -v '^#' "$list" | awk -v d="${debug:-0}" '$2 != "debug" || d == 1 {print $1}' |
    LC_ALL=C sort >"$tmp/expected"
# Actual: defined dynamic symbols, without the ones toolchains and sanitizers
# generate (names starting with "__") and absolute ones.
# (names without their symbol version: name@@PLEXUS_0.1 is px_foo; the
# versions are libplexus.map's business, checked by test/abi/t_abi_baseline.sh)
nm -D --defined-only "$lib" | awk '$2 != "A" && $3 !~ /^__/ {sub(/@.*/, "", $3); print $3}' |
    LC_ALL=C sort -u >"$tmp/actual"
check "nm -D lists symbols of libplexus.so" test -s "$tmp/actual"

appeared=$(LC_ALL=C comm -13 "$tmp/expected" "$tmp/actual" | tr '\n' ' ')
gone=$(LC_ALL=C comm -23 "$tmp/expected" "$tmp/actual" | tr '\n' ' ')
fix="mark the declaration PX_EXPORT and add the name to test/build/exported-symbols.txt only if components or applications must call it (docs/writing-a-component.md, \"What libplexus exports\")"
[ -z "$appeared" ] || echo "# newly exported, not in test/build/exported-symbols.txt: $appeared" >&2
[ -z "$appeared" ] || echo "# if internal, drop PX_EXPORT or make it static; if API on purpose, $fix" >&2
[ -z "$gone" ] || echo "# listed in test/build/exported-symbols.txt but no longer exported: $gone" >&2
[ -z "$gone" ] || echo "# an application or plugin calling it would fail to load; restore PX_EXPORT, or remove the line if dropping it from the API is deliberate" >&2
check "no symbol exported beyond the list (appeared: ${appeared:-none})" test -z "$appeared"
check "every listed symbol is exported (disappeared: ${gone:-none})" test -z "$gone"

# Exported data (variables, thread-local ones included) is frozen: a program
# built against an older release holds a copy of each sized by its headers
# (docs/abi.md, "No new exported data").
grep -v '^#' "$list" | awk '$2 == "data" {print $1}' | LC_ALL=C sort >"$tmp/data_expected"
nm -D --defined-only "$lib" | awk '$2 ~ /^[BbDdGgRrSsVv]$/ && $3 !~ /^__/ {sub(/@.*/, "", $3); print $3}' |
    LC_ALL=C sort -u >"$tmp/data_actual"
new_data=$(LC_ALL=C comm -13 "$tmp/data_expected" "$tmp/data_actual" | tr '\n' ' ')
gone_data=$(LC_ALL=C comm -23 "$tmp/data_expected" "$tmp/data_actual" | tr '\n' ' ')
[ -z "$new_data" ] || echo "# exported variables not in the frozen list: $new_data; export a function that reads or sets the state instead (docs/abi.md)" >&2
check "no exported variable beyond the frozen list (new: ${new_data:-none})" test -z "$new_data"
check "every frozen variable is still exported (gone: ${gone_data:-none})" test -z "$gone_data"

# Every export carries a version of libplexus.map (docs/abi.md, "Symbol
# versions"), but munmap and mremap, which must stay unversioned to interpose
# the C library's.
if grep -q '^#define PX_HAVE_SYMVER 1' "$PX_BUILD/config.h"; then
    unversioned=$(nm -D --defined-only "$lib" |
        awk '$2 != "A" && $3 !~ /^__/ && $3 !~ /@/ && $3 != "munmap" && $3 != "mremap" {print $3}' |
        tr '\n' ' ')
    [ -z "$unversioned" ] || echo "# exported without a version: $unversioned; add them to the node of the next release in libplexus.map" >&2
    check "every export has a symbol version (unversioned: ${unversioned:-none})" test -z "$unversioned"
    check "munmap is exported unversioned (it interposes the C library's)" \
        test -n "$(nm -D --defined-only "$lib" | awk '$3 == "munmap"')"
else
    skip "every export has a symbol version" "configure found no linker version scripts (config.h: PX_HAVE_SYMVER 0)"
fi

# Tool hooks (" tool", listed apart after the API): exported for the in-tree
# tools and tests only, so no installed header may name one; and every other
# export is the API of an application or a component, so an installed header
# names it (a class px_foo_t_class through PX_CLASS_DECLARATION(px_foo_t)).
# munmap and mremap interpose the C library's; px_progress_policy is 0.1's
# compatibility symbol (docs/abi.md): no header declares them.
px_staged_install "$tmp/inst" "$tmp/install.log"
hdrs=$(dirname "$(find "$tmp/inst" -path '*/include/plexus/plexus.h' | head -1)")
check "the installed headers are found (make install DESTDIR=...)" test -f "$hdrs/plexus.h"
# Their code without comments (gcc -fpreprocessed strips them, expands nothing).
for h in $(find "$hdrs" -name '*.h'); do
    gcc -fpreprocessed -dD -E -P "$h" 2>/dev/null
done >"$tmp/installed.h"
check "the installed headers are read" grep -q "px_init" "$tmp/installed.h"
grep -v '^#' "$list" | awk '$NF == "tool" {print $1}' | LC_ALL=C sort >"$tmp/tools"
check "the tool hooks are marked (px_rt_tool_peer_btl among them)" grep -qx px_rt_tool_peer_btl "$tmp/tools"
named=$(grep -owFf "$tmp/tools" "$tmp/installed.h" | LC_ALL=C sort -u | tr '\n' ' ')
[ -z "$named" ] || echo "# marked \" tool\" in $list but named by an installed header: $named; either it is API (drop the mark) or the header must not name it" >&2
check "no installed header names a tool hook (named: ${named:-none})" test -z "$named"
undeclared=""
for s in $(grep -v '^#' "$list" | awk '$NF != "tool" {print $1}'); do
    case $s in munmap | mremap | px_progress_policy) continue ;; esac
    grep -qw "$s" "$tmp/installed.h" && continue
    case $s in *_class) grep -q "PX_CLASS_DECLARATION(${s%_class})" "$tmp/installed.h" && continue ;; esac
    undeclared="$undeclared $s"
done
[ -z "$undeclared" ] || echo "# exported as API but no installed header declares it:$undeclared; install its header, or mark it \" tool\" if only in-tree tools call it" >&2
check "every export not marked \" tool\" is declared by an installed header (missing:${undeclared:- none})" \
    test -z "$undeclared"

# Internals named in the issue stay inside the library.
for s in px_mca_repository_load_plugin px_btl_shm_state px_tcache_bind px_rt_wait; do
    check "internal $s is not exported" test -z "$(grep -x "$s" "$tmp/actual")"
done
tap_done
