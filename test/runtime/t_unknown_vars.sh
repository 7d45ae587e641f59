#!/usr/bin/env bash
# px_init warns about PX_MCA_* names that match no registered variable, with
# the nearest names, and mca_base_strict makes that fatal.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/init_probe

out=$(PX_MCA_btl_self_eagre_limit=8k "$probe" 2>&1); rc=$?
check "a misspelled variable does not stop px_init" test "$rc" -eq 0
check "the warning names the variable and where it came from" \
    contains "$out" 'unknown variable "btl_self_eagre_limit" in environment variable PX_MCA_btl_self_eagre_limit'
check "the warning suggests the nearest registered name" contains "$out" "btl_self_eager_limit"

out=$(PX_MCA_btl_self_eagre_limit=8k PX_MCA_mca_base_strict=1 "$probe" 2>&1); rc=$?
check "with mca_base_strict=1 px_init fails" test "$rc" -ne 0
check "and says the warning became fatal" contains "$out" "mca_base_strict"

# A variable of a component the selection list excludes is not "unknown".
out=$(PX_MCA_btl=self PX_MCA_btl_shm_poll_batch=2 PX_MCA_mca_base_strict=1 "$probe" 2>&1); rc=$?
check "a variable of an excluded component is not reported as unknown" test "$rc" -eq 0
tap_done
