#!/usr/bin/env bash
# The rendezvous protocols across processes: 3 ranks under pxrun exchange
# every size across the switch points (0 B .. 8 MiB) over btl/shm with
# runtime_rndv_protocol auto, get and put (with and without shm's single
# copy) and pipeline, and with a small
# eager limit and no immediate path.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/xfer_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
need_built "$pxrun"
run() { # description, then environment assignments
    local d=$1; shift
    out=$(env "$@" timeout 120 "$pxrun" -n 3 "$probe" </dev/null 2>&1); rc=$?
    n=$(echo "$out" | grep -c ': 0 errors')
    if [ "$rc" -eq 0 ] && [ "$n" -eq 3 ]; then ok "$d"; else not_ok "$d"; echo "$out" | head -20 | sed 's/^/# /'; fi
}
run "rndv auto (get where offered) over shm" PX_MCA_runtime_rndv_protocol=auto
run "rndv put over shm" PX_MCA_runtime_rndv_protocol=put
run "rndv pipelined fragments over shm" PX_MCA_runtime_rndv_protocol=pipeline
# shm offers RDMA get/put only with single copy (process_vm_readv/writev) on.
run "rndv get over shm single copy" PX_MCA_btl_shm_single_copy=cma PX_MCA_runtime_rndv_protocol=get
run "rndv put over shm single copy" PX_MCA_btl_shm_single_copy=cma PX_MCA_runtime_rndv_protocol=put
run "no sendi, eager limit 1000, pipelined" PX_MCA_runtime_tiny_limit=0 PX_MCA_runtime_eager_limit=1000 PX_MCA_runtime_rndv_protocol=pipeline
out=$(timeout 120 "$pxrun" -n 3 "$probe" </dev/null 2>&1)
check "ranks reach each other through shm" contains "$out" "(transport to 1: shm)"
tap_done
