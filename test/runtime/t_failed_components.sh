#!/usr/bin/env bash
# A btl component whose open fails is closed and unloaded; when then no
# transport reaches a peer, px_init's error names it and why, beside the
# modules tried (it used to name none, and an author could not tell that the
# plugin had been found at all).
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/init_probe
plugdir=$PX_BUILD/test/runtime/.libs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while IFS= read -r v; do unset "$v"; done < <(env | sed -n 's/^\(PX_MCA_[^=]*\)=.*/\1/p')
export HOME=$tmp/home PX_SYSCONFDIR=$tmp/etc
mkdir -p "$HOME" "$PX_SYSCONFDIR" "$tmp/plugins"
check "the test plugin plexus_btl_failopen.so is built" test -f "$plugdir/plexus_btl_failopen.so"
cp "$plugdir/plexus_btl_failopen.so" "$tmp/plugins/"
chmod 0755 "$tmp/plugins" "$tmp/plugins/plexus_btl_failopen.so"

out=$(PX_MCA_mca_component_path_prepend=$tmp/plugins PX_MCA_btl='^self' "$probe" 2>&1); rc=$?
check "btl=^self: px_init fails (exit $rc)" test "$rc" -eq 2
check "the error is the unreachable one" contains "$out" "no transport reaches rank 0"
check "it lists the components that could not be used" \
    contains "$out" "Components that could not be used (px_info --show-failed lists them):"
check "it names the component whose open failed, and why" \
    contains "$out" "btl failopen: open failed: "
check "... and its file" contains "$out" "($tmp/plugins/plexus_btl_failopen.so)"

out=$(PX_MCA_mca_component_path_prepend=$tmp/plugins:$tmp/nowhere PX_MCA_btl=failopen "$probe" 2>&1); rc=$?
check "btl=failopen alone: px_init fails (exit $rc)" test "$rc" -eq 2
check "the failed open is named" contains "$out" "btl failopen: open failed"
check "an unusable plugin folder named by the user is in the error too" \
    contains "$out" "plugin folder $tmp/nowhere named in mca_component_path_prepend"

out=$(PX_MCA_mca_component_path_prepend=$tmp/plugins "$probe" 2>&1); rc=$?
check "with self beside it px_init succeeds (exit $rc)" test "$rc" -eq 0
check "... and rank 0 is served by self" contains "$out" "transport to 0: self"
tap_done
