#!/usr/bin/env bash
# px-test: source-only (reads the source tree, never the build under test)
# px-test: background (compiles and reads files; nothing waits on a clock)
# A component is its folder: components/<fw>/<name>/ with its configure.m4 and
# Makefile.inc, found by autogen.sh. configure.ac and the top-level Makefile.am
# name no component; in a scratch copy of the tree, components dropped into
# components/btl/ (the example component as a plugin, a built-in copy of it,
# and one whose library is missing) are built, listed by px_info and named by
# configure's summary after nothing more than ./autogen.sh; a folder without
# a fragment, or whose fragment disagrees with its Makefile.inc, is refused.
. "$PX_SRC/test/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------- no names
# The tree's component names, and the ones the issue lists.
names="self shm ofi verbs pmix pxrun singleton"
for d in "$PX_SRC"/components/*/*/; do
    d=${d%/}
    names="$names ${d##*/}"
done
for f in configure.ac Makefile.am; do
    # tools/pxrun is the launcher tool, not the boot/pxrun component.
    hits=$(sed 's|tools/pxrun/|tools/TOOL/|g' "$PX_SRC/$f" |
        grep -nwE "$(echo $names | tr ' ' '|')|btl:[a-z]+|boot:[a-z]+|components/[a-z]")
    check "$f names no component${hits:+ (found: $hits)}" test -z "$hits"
done

# ---------------------------------------------------------------- scratch tree
src=$tmp/src
mkdir -p "$src"
if git -C "$PX_SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked files as they are in the working tree (a dirty tree's edits included).
    (cd "$PX_SRC" && git ls-files -z | tar --null --ignore-failed-read -T - -cf -) |
        tar -C "$src" -xf -
else
    # An unpacked tarball: everything but build trees and in-tree configure outputs.
    (cd "$PX_SRC" && tar --exclude='./build*' --exclude='./_build*' -cf - .) | tar -C "$src" -xf -
    rm -f "$src/config.status" "$src/Makefile" "$src/config.h"
fi
check "scratch copy of the tree" test -x "$src/autogen.sh"
[ -x "$src/autogen.sh" ] || tap_done

# A folder without a fragment is refused, naming the folder and what is missing.
mkdir -p "$src/components/btl/nofrag"
echo "libpxcore_la_SOURCES += components/btl/nofrag/nofrag.c" >"$src/components/btl/nofrag/Makefile.inc"
out=$(cd "$src" && ./autogen.sh 2>&1)
rc=$?
check "autogen.sh refuses a component folder without configure.m4" test "$rc" -ne 0
check "... and says which folder and what it lacks" \
    contains "$out" "components/btl/nofrag has no configure.m4"
# A fragment whose kind disagrees with its Makefile.inc is refused.
echo "PX_COMPONENT([btl], [nofrag], [plugin])" >"$src/components/btl/nofrag/configure.m4"
out=$(cd "$src" && ./autogen.sh 2>&1)
rc=$?
check "autogen.sh refuses a plugin fragment whose Makefile.inc builds no plugin" test "$rc" -ne 0
check "... and names the library it expected" contains "$out" "builds no plexus_btl_nofrag.la"
rm -rf "$src/components/btl/nofrag"

# The example component, as a plugin.
d=$src/components/btl/example
mkdir -p "$d"
cp "$PX_SRC/examples/btl_example/example.c" "$d/example_component.c"
cat >"$d/configure.m4" <<'EOF'
# components/btl/example: the example component, built as a plugin.
PX_COMPONENT([btl], [example], [plugin])
EOF
cat >"$d/Makefile.inc" <<'EOF'
if PX_BUILD_BTL_EXAMPLE
pkglib_LTLIBRARIES += plexus_btl_example.la
plexus_btl_example_la_SOURCES = components/btl/example/example_component.c
plexus_btl_example_la_LDFLAGS = $(PX_PLUGIN_LINK_FLAGS)
plexus_btl_example_la_LIBADD = $(PX_PLUGIN_LIBS)
endif
EOF
# The same source renamed, linked into libplexus.
d=$src/components/btl/exbuiltin
mkdir -p "$d"
sed 's/example/exbuiltin/g' "$PX_SRC/examples/btl_example/example.c" >"$d/exbuiltin_component.c"
cat >"$d/configure.m4" <<'EOF'
# components/btl/exbuiltin: the example component, linked into libplexus.
PX_COMPONENT([btl], [exbuiltin], [static])
EOF
cat >"$d/Makefile.inc" <<'EOF'
libpxcore_la_SOURCES += components/btl/exbuiltin/exbuiltin_component.c
EOF
# One whose library no machine has: not built, with the reason.
d=$src/components/btl/exmissing
mkdir -p "$d"
sed 's/example/exmissing/g' "$PX_SRC/examples/btl_example/example.c" >"$d/exmissing_component.c"
cat >"$d/configure.m4" <<'EOF'
# components/btl/exmissing: needs a library that does not exist.
PX_OPTIONAL([pxnosuchlib], [pxnosuchlib], [pxnosuchlib.h], [pxnosuchlib], [pxnosuchlib_init],
            [a dependency no machine has])
PX_COMPONENT([btl], [exmissing], [plugin], [pxnosuchlib])
EOF
cat >"$d/Makefile.inc" <<'EOF'
if PX_BUILD_BTL_EXMISSING
pkglib_LTLIBRARIES += plexus_btl_exmissing.la
plexus_btl_exmissing_la_SOURCES = components/btl/exmissing/exmissing_component.c
plexus_btl_exmissing_la_LDFLAGS = $(PX_PLUGIN_LINK_FLAGS)
plexus_btl_exmissing_la_LIBADD = $(PX_PLUGIN_LIBS) $(PXNOSUCHLIB_LIBS)
endif
EOF

(cd "$src" && ./autogen.sh) >"$tmp/autogen.log" 2>&1
rc=$?
check "autogen.sh with the new folders" test $rc -eq 0
[ $rc -eq 0 ] || { cat "$tmp/autogen.log" >&2; tap_done; }
bld=$tmp/build
mkdir -p "$bld"
# Only what this test needs: the optional libraries of the tree's own plugins
# are switched off, nothing is optimised (the build is what is tested), and
# no header dependencies are tracked (the scratch build is made once).
(cd "$bld" && "$src/configure" --disable-static --disable-dependency-tracking \
    --without-verbs --without-ofi --without-pmix --without-hwloc CFLAGS="-O0 -g0") >"$tmp/configure.log" 2>&1
rc=$?
check "configure" test $rc -eq 0
[ $rc -eq 0 ] || { tail -30 "$tmp/configure.log" >&2; tap_done; }
summary=$(sed -n '/configuration summary/,$p' "$tmp/configure.log")
check "the summary names the plugin" contains "$summary" "btl/example .......... plugin"
check "the summary names the built-in one" contains "$summary" "btl/exbuiltin ........ built-in"
check "the summary says why the third is not built" \
    contains "$summary" "btl/exmissing ........ not built: pxnosuchlib.h not found"
check "the tree's own components are still there" contains "$summary" "btl/self ............. built-in"
check "PX_NOT_BUILT_COMPONENTS_STR names it" \
    grep -q '^#define PX_NOT_BUILT_COMPONENTS_STR ".*btl:exmissing' "$bld/config.h"
check "the generated static list declares the built-in one" \
    grep -q '&px_btl_exbuiltin_component,' "$bld/core/mca/static_components.c"

make -C "$bld" -j2 libplexus.la tools/px_info/px_info plexus_btl_example.la >"$tmp/make.log" 2>&1
rc=$?
check "make libplexus.la px_info plexus_btl_example.la" test $rc -eq 0
[ $rc -eq 0 ] || { tail -30 "$tmp/make.log" >&2; tap_done; }
out=$(make -C "$bld" -n install-pkglibLTLIBRARIES 2>&1)
check "make would install the example plugin" contains "$out" "plexus_btl_example.la"
check "... and not the one that is not built" test "${out/plexus_btl_exmissing/}" = "$out"

info="$bld/tools/px_info/px_info"
out=$(PX_MCA_mca_component_path="$bld/.libs" "$info" 2>&1)
# (the list wraps at 80 columns: read it up to the next label)
check "px_info: built-in components include btl:exbuiltin" \
    grep -q 'btl:exbuiltin' <<<"$(sed -n '/^ *Built-in components:/,/^ *Plugin components:/p' <<<"$out")"
check "px_info: plugin components include btl:example" \
    grep -qE '^ *Plugin components: .*btl:example' <<<"$out"
check "px_info lists exbuiltin as built in" contains "$out" "MCA btl: exbuiltin (MCA ABI 2, API"
check "px_info loads and lists the example plugin (version 1.2.3)" \
    grep -qE 'MCA btl: example .*component 1\.2\.3' <<<"$out"
out=$(PX_MCA_mca_component_path="$bld/.libs" "$info" --param btl exbuiltin --level 9 2>&1)
check "the built-in one registers its variable" contains "$out" "btl_exbuiltin_greeting"

# The fragments travel in the tarball: `make dist` copies $(DISTFILES).
dist=$(printf 'px-print-distfiles:\n\t@echo $(DISTFILES)\n' |
    make -s -C "$bld" -f Makefile -f - px-print-distfiles 2>&1)
missing=""
for f in "$src"/components/*/*/configure.m4 "$src"/components/*/*/Makefile.inc \
    "$src"/config/px_macros.m4; do
    rel=${f#"$src"/}
    case " $dist " in *"/$rel "*) ;; *) missing="$missing $rel" ;; esac
done
check "every configure.m4, Makefile.inc and config/px_macros.m4 is in DISTFILES (missing:${missing:- none})" \
    test -z "$missing"
tap_done
