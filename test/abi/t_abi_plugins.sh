#!/usr/bin/env bash
# The growable plugin ABI seen by a user (docs/writing-a-component.md,
# "Compatibility"): the plugin built against the frozen BTL API 3.0 headers
# carries the messaging layer of a 3.1 library (the api_example program alone,
# with btl=abi30 only); px_info lists its API version and fingerprint; the
# plugins of another debug setting and of a newer minor are refused, and
# px_info --show-failed and btl_base_verbose say why. The plugin built against
# the frozen 3.3 header (abi33) loads and shows as serialized (thread support
# came in 3.4); abi_test runs it at PX_THREAD_MULTIPLE.
. "$PX_SRC/test/lib/tap.sh"
plugins=$PX_BUILD/test/abi/.libs
ex=$PX_BUILD/test/runtime/api_example
pxinfo=$PX_BUILD/tools/px_info/px_info
export PX_MCA_mca_component_path=$plugins

out=$(PX_MCA_btl=abi30 timeout 60 "$ex" 2>&1); rc=$?
check "api_example over the 3.0 plugin alone: exits 0" test "$rc" -eq 0
check "the ring token travels through the 3.0 plugin" contains "$out" "rank 0 got token 0 from rank 0 (via abi30)"
check "the wildcard receive through the 3.0 plugin" contains "$out" '"hello from rank 0" (source 0, tag 100, 18 bytes)'

out=$("$pxinfo" --all 2>&1); rc=$?
flat=$(echo "$out" | tr -s ' \n' ' ')
check "px_info --all: exit 0" test "$rc" -eq 0
check "px_info lists the 3.0 plugin with its API version" contains "$flat" "abi30 (MCA ABI 2, API 3.0.0, component 1.0.0, plugin"
check "px_info shows the library's fingerprint" contains "$flat" "Build fingerprint: debug="
check "px_info shows a plugin's fingerprint" contains "$flat" "built with debug="
# A plugin of BTL API 3.3, before components declared their thread support
# (3.4): it loads unchanged, and counts as not thread-safe (docs/threads.md).
check "px_info lists the 3.3 plugin with its API version" contains "$flat" "abi33 (MCA ABI 2, API 3.3.0, component 1.0.0, plugin"
check "... and shows it serialized at MULTIPLE, saying why" contains "$flat" "abi33 (MCA ABI 2, API 3.3.0, component 1.0.0, plugin) threads: serialized at PX_THREAD_MULTIPLE (built for btl API 3.3, before components declared thread support)"
check "... the 3.0 plugin too" contains "$flat" "threads: serialized at PX_THREAD_MULTIPLE (built for btl API 3.0,"
out=$("$pxinfo" --parsable 2>&1)
check "px_info --parsable: the 3.3 plugin's thread support" contains "$out" "mca:btl:abi33:threads:serialized"
out=$(PX_MCA_btl=abi33 timeout 60 "$ex" 2>&1); rc=$?
check "api_example over the 3.3 plugin alone: exits 0" test "$rc" -eq 0
check "the ring token travels through the 3.3 plugin" contains "$out" "rank 0 got token 0 from rank 0 (via abi33)"

out=$("$pxinfo" --show-failed 2>&1); rc=$?
flat=$(echo "$out" | tr -s ' \n' ' ')
check "px_info --show-failed: exit 0" test "$rc" -eq 0
check "--show-failed: the other debug setting, with both builds" contains "$flat" "build fingerprint mismatch: the plugin was built with debug="
check "--show-failed: ... naming this library's setting" contains "$flat" "; this library with debug="
check "--show-failed: the newer minor" contains "$flat" "framework API too new: built for btl API 3."

out=$(PX_MCA_btl=self,abi30debug PX_MCA_btl_base_verbose=1 timeout 60 "$ex" 2>&1); rc=$?
check "naming the refused plugin in btl fails the run" test "$rc" -ne 0
check "... and says why" contains "$out" "abi30debug: refused: build fingerprint mismatch"
out=$(PX_MCA_btl_base_verbose=1 timeout 60 "$ex" 2>&1); rc=$?
check "refused plugins do not stop a run that does not name them" test "$rc" -eq 0
check "btl_base_verbose 1 says why the plugin was refused" contains "$out" "build fingerprint mismatch"
# A coll component built against the frozen coll API 1.0 headers (before
# px_coll_module_t.run[]): it serves barrier and small bcasts, blocking and
# not, and the library never reads past its 1.0 module (ASan: a read of run[]
# would be a global-buffer-overflow).
probe=$PX_BUILD/test/coll/coll_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
out=$(PX_MCA_coll=basic,abicoll10 PX_MCA_coll_base_verbose=20 timeout -k 5 240 "$pxrun" -n 3 \
    "$probe" matrix --quick </dev/null 2>&1); rc=$?
check "coll API 1.0 plugin: the collectives' matrix passes on 3 ranks" test "$rc" -eq 0
check "... every rank reports no error" test "$(echo "$out" | grep -cE '^rank [0-9]+: [0-9]+ checks, 0 errors')" -eq 3
check "... the 1.0 plugin served barriers" grep -qE 'coll: barrier of .*: abicoll10' <<<"$out"
check "... and bcasts" grep -qE 'coll: bcast of .*: abicoll10' <<<"$out"
out=$("$pxinfo" --all 2>&1)
check "px_info lists the coll 1.0 plugin with its API version" contains "$(echo "$out" | tr -s ' \n' ' ')" "abicoll10 (MCA ABI 2, API 1.0.0, component 1.0.0, plugin"
tap_done
