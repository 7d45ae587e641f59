#!/usr/bin/env bash
# px-test: source-only (reads the source tree, never the build under test)
# px-test: background (compiles and reads files; nothing waits on a clock)
# Each component stands on its own fragments (docs/writing-a-component.md):
#  - a library a component uses (X_CFLAGS or X_LIBS in its Makefile.inc,
#    PX_HAVE_X in its sources) is checked by its own configure.m4
#    (PX_OPTIONAL([x], ...)), not only by another component's fragment;
#  - tests and fuzz harnesses reach a component's files through variables its
#    Makefile.inc defines (PX_<FW>_<NAME>_TEST_SOURCES, ..._WIRE_SOURCES),
#    never by naming them, so the component may rename or split them alone
#    (test/fuzz/run-fuzz.sh asks make for the same variables).
. "$PX_SRC/test/lib/tap.sh"
cd "$PX_SRC" || exit 1

# Every optional library some fragment (or configure.ac) checks.
libs=$(grep -ho 'PX_OPTIONAL(\[[a-z0-9_]*\]' configure.ac components/*/*/configure.m4 |
    sed 's/.*\[\(.*\)\]/\1/' | sort -u)
check "the fragments check optional libraries (found: $(echo $libs))" test -n "$libs"

for d in components/*/*/; do
    d=${d%/}
    for x in $libs; do
        X=$(printf '%s' "$x" | tr a-z A-Z)
        used=$(
            grep -l -F -e "\$(${X}_CFLAGS)" -e "\$(${X}_LIBS)" "$d/Makefile.inc"
            grep -l -w "PX_HAVE_${X}" "$d"/*.[ch] 2>/dev/null
        )
        [ -n "$used" ] || continue
        check "$d uses $x ($(echo $used)) and its configure.m4 checks for it" \
            grep -q "PX_OPTIONAL(\[$x\]" "$d/configure.m4"
    done
done

# A source file of a component named outside comments in a test's Makefile.inc.
named=$(find test -name Makefile.inc -exec grep -n -H -E \
    '^[^#]*components/[a-z0-9_]+/[a-z0-9_]+/[A-Za-z0-9_.-]+\.(c|h)\b' {} + 2>/dev/null)
check "no test Makefile.inc names a component's files${named:+ (found: $named)}" test -z "$named"
# Nor does the script that builds the fuzz harnesses with libFuzzer.
named=$(grep -n -E '^[^#]*components/[a-z0-9_]+/[a-z0-9_]+/[A-Za-z0-9_.-]+\.(c|h)\b' test/fuzz/run-fuzz.sh)
check "test/fuzz/run-fuzz.sh names no component's files${named:+ (found: $named)}" test -z "$named"
# And what they use instead is defined by the component's Makefile.inc.
for v in $(grep -ho '\$(PX_[A-Z0-9]*_[A-Z0-9]*_[A-Z_]*SOURCES)' $(find test -name Makefile.inc) |
    sort -u | sed 's/^\$(\(.*\))$/\1/'); do
    check "$v is defined by a component's Makefile.inc" \
        grep -q "^$v =" $(ls components/*/*/Makefile.inc)
done
tap_done
