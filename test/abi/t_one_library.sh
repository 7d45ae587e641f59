#!/usr/bin/env bash
# One libplexus per process (docs/abi.md, "One library per process").
# - The suite runs on this build's plugins, whatever Plexus is installed: the
#   runner sets mca_component_path to the build tree, so a plugin on the
#   default path (the install folder, ~/.plexus/components) is never loaded.
# - A program linked with libplexus's objects (libpxcore.la here, as with
#   libplexus.a) that loads a plugin linked with libplexus.so would get a
#   second, uninitialised library (the plugin's calls go there): the plugin is refused, saying so, and the program runs without
#   it; naming it in btl fails px_init with the reason.
. "$PX_SRC/test/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
B=$PX_BUILD
pxinfo=$B/tools/px_info/px_info
static=$B/test/abi/api_example_static
dynamic=$B/test/runtime/api_example
plugins=$B/test/abi/.libs

# 1. The runner's plugin path is the build tree.
check "the runner sets mca_component_path to the build tree" test "${PX_MCA_mca_component_path:-}" = "$B/.libs"
# A plugin on the default path, as if installed for this user: never looked at.
mkdir -p "$HOME/.plexus/components"
cp "$plugins/plexus_btl_abi30.so" "$HOME/.plexus/components/plexus_btl_planted.so"
out=$("$pxinfo" --show-failed 2>&1)
check "px_info --show-failed runs" test -n "$out"
check "a plugin on the default path is not considered" test -z "$(grep -F planted <<<"$out")"
out=$("$pxinfo" --all 2>&1)
files=$(grep -oE '/[^ ]*plexus_[a-z]+_[a-z0-9_]+\.so' <<<"$out" | sort -u)
outside=$(grep -vF "$B/.libs/" <<<"$files" | tr '\n' ' ')
check "every plugin px_info lists is in the build tree (outside: ${outside:-none})" test -z "$outside"
rm -rf "$HOME/.plexus"

# 2. The static program and a plugin linked with libplexus.so.
check "test/abi/api_example_static is built" test -x "$static"
check "... and is linked statically (no libplexus.so needed)" \
    test -z "$(readelf -d "$static" 2>/dev/null | grep -F 'libplexus.so')"
needs=$(readelf -d "$plugins/plexus_btl_abi30.so" 2>/dev/null | grep -F 'libplexus.so')
check "the abi30 plugin needs libplexus.so" test -n "$needs"

out=$(PX_MCA_mca_component_path=$plugins PX_MCA_btl=abi30 PX_MCA_btl_base_verbose=1 \
    timeout 60 "$static" 2>&1); rc=$?
echo "$out" | sed 's/^/#   /' | head -20
check "static program, btl=abi30: px_init fails" test "$rc" -ne 0
check "... the plugin is refused for bringing a second libplexus" \
    contains "$out" "it would load a second copy of libplexus ("
check "... naming the program it is linked into" contains "$out" "linked statically into $static"
check "... and the way out" contains "$out" "Plugins need the program linked with the shared libplexus"
check "... never reaching the uninitialised copy" test -z "$(grep -F 'call px_init first' <<<"$out")"

out=$(PX_MCA_mca_component_path=$plugins PX_MCA_btl_base_verbose=1 timeout 60 "$static" 2>&1); rc=$?
check "static program, plugins on the path but not named: runs (exit 0)" test "$rc" -eq 0
check "... over a built-in transport" contains "$out" "rank 0 got token 0 from rank 0 (via self)"
check "... having said why the plugin was left out" contains "$out" "second copy of libplexus"
out=$("$pxinfo" --show-failed 2>&1)
check "the dynamic px_info does not refuse the build's plugins for that" \
    test -z "$(grep -F 'second copy' <<<"$out")"

# 3. The same plugin in a program on libplexus.so: one library, accepted.
out=$(PX_MCA_mca_component_path=$plugins PX_MCA_btl=abi30 timeout 60 "$dynamic" 2>&1); rc=$?
check "program on libplexus.so, btl=abi30: exits 0" test "$rc" -eq 0
check "... through the plugin" contains "$out" "rank 0 got token 0 from rank 0 (via abi30)"
tap_done
