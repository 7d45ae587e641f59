#!/usr/bin/env bash
# Request lifetime and failure paths under pxrun (test/runtime/life_probe.c):
# a request whose wait timed out is not reused while a transport still holds
# it (eager over shm, rendezvous by RDMA get), px_finalize after a failed
# barrier, messages never received, and an unexpected message that cannot be
# queued. The ranks order their steps through files, not through timing.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/life_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
need_built "$pxrun"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # ranks, mode, then environment assignments
    local n=$1 mode=$2; shift 2
    rm -rf "$tmp/d"; mkdir -p "$tmp/d"
    out=$(env PROBE_DIR="$tmp/d" "$@" timeout 60 "$pxrun" -n "$n" "$probe" "$mode" </dev/null 2>&1)
    rc=$?
}
zero_errors() { # ranks: every rank printed "0 errors" and the job exited 0
    local n; n=$(echo "$out" | grep -c ': 0 errors')
    if [ "$rc" -eq 0 ] && [ "$n" -eq "$1" ]; then return 0; fi
    echo "$out" | head -30 | sed 's/^/# /' >&2
    return 1
}

# A fast box smaller than the message: the send goes as a fragment the
# receiver hands back, so its completion waits for the receiver.
run 2 eager PX_MCA_runtime_wait_timeout=0.5 PX_MCA_btl_shm_fbox_max_send=1024
check "eager send times out: its request is not reused before the transport lets go" zero_errors 2
check "... the timeout says the transport still holds the send" contains "$out" "still held by the transport"

run 3 rndv PX_MCA_runtime_wait_timeout=0.5 PX_MCA_btl_shm_single_copy=cma PX_MCA_runtime_rndv_protocol=get
check "rendezvous (get) send times out: a late FIN does not complete another send" zero_errors 3
check "... the peer is failed and says so" contains "$out" "is treated as failed"

run 3 rndv PX_MCA_runtime_wait_timeout=0.5 PX_MCA_runtime_rndv_protocol=pipeline
check "rendezvous (fragments) send times out: a late ACK does not drive another send" zero_errors 3

run 2 finalize PX_MCA_runtime_wait_timeout=0.5
check "px_finalize after a failed barrier returns (no lone boot fence)" test "$rc" -ne 124
check "... rank 0's px_finalize reports the timeout" contains "$out" "rank 0: px_finalize: "
check "... naming the operation, not the internal tag" contains "$out" "px_barrier: the receive"
check "... both ranks end" test "$(echo "$out" | grep -c ': 0 errors')" -eq 2

run 2 unread PX_MCA_runtime_verbose=1
check "messages never received: both ranks end cleanly" zero_errors 2
check "... px_finalize counts them at runtime_verbose 1" contains "$out" "3 message(s) from rank 1 were never received"
run 2 unread
check "... and is quiet by default" test "$(echo "$out" | grep -c 'never received')" -eq 0

run 2 uxfail PX_RT_TEST_UX_FAIL=1
check "an unexpected message that cannot be queued fails its peer instead of vanishing" zero_errors 2
check "... with a message naming the rank" contains "$out" "could not queue a message from rank 1"
tap_done
