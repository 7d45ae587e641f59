#!/usr/bin/env bash
# The messaging layer drops a matched message whose header names another
# sender than the transport's, or whose sequence number lies behind the one
# expected: counted, reported with a rate limit, never matched (hdr_probe.c).
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/hdr_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
need_built "$probe" "$pxrun"

err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$(PX_MCA_btl=self,shm PX_MCA_runtime_wait_timeout=30 timeout 120 "$pxrun" -n 2 "$probe" </dev/null 2>"$err"); rc=$?
errs=$(cat "$err")
check "the job finishes cleanly (exit $rc)" test "$rc" -eq 0
check "all 104 lying headers are counted" contains "$out" "bad_headers 104"
check "none waits among the out-of-order messages" contains "$out" "ooo 0"
check "the receive gets rank 1's real message, not an injected one" contains "$out" "recv source 1 value 4242 (success)"
check "rank 0's own messages still flow in order" contains "$out" "self message after the injections ok"
check "the sequence behind does not move the counter" contains "$out" "self recv_seq 3"
check "a header naming rank 1 over rank 0's transport is reported" contains "$errs" "dropped a message from rank 0 whose header names rank 1 as its sender"
check "a header naming rank 0 over rank 1's transport is reported" contains "$errs" "dropped a message from rank 1 whose header names rank 0 as its sender"
check "a sequence number behind is reported with both numbers" contains "$errs" "dropped a message from rank 0 with sequence number 2, behind the 3 expected next"
check "so is a rendezvous request's" contains "$errs" "dropped a rendezvous request from rank 0 with sequence number 1, behind the 3 expected next"
n=$(grep -c "runtime: dropped" "$err")
check "the report is rate-limited ($n lines for 104 headers)" test "$n" -le 12 -a "$n" -ge 4
check "... and says how many were dropped" contains "$errs" "64 such headers dropped so far"
tap_done
