#!/usr/bin/env bash
# docs/variables.md must list every variable the build registers (built-in
# components and the plugins built here). Regenerate it with
# scripts/gen-variables-doc.sh BUILD_DIR when this fails.
. "$PX_SRC/test/lib/tap.sh"
doc=$PX_SRC/docs/variables.md
check "docs/variables.md exists" test -f "$doc"
names=$(PX_MCA_mca_component_path=$PX_BUILD/.libs "$PX_BUILD/tools/px_info/px_info" --all --parsable |
    awk -F: '$1 == "mca" && $4 == "param" { print $5 }' | sort -u)
n=$(echo "$names" | grep -c .)
check "px_info lists variables ($n)" test "$n" -gt 20
missing=""
for v in $names; do grep -qF "| \`$v\` |" "$doc" || missing="$missing $v"; done
check "every registered variable is documented in docs/variables.md (missing:${missing:- none})" test -z "$missing"
stale=""
for v in $(sed -n 's/^| `\([a-z0-9_]*\)` |.*/\1/p' "$doc"); do
    echo "$names" | grep -qx "$v" || stale="$stale $v"
done
check "docs/variables.md names no variable that no longer exists (stale:${stale:- none})" test -z "$stale"
tap_done
