#!/usr/bin/env bash
# px_abort ends the job with its code and message (alone and under pxrun);
# runtime_wait_timeout bounds a receive that is never matched.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/init_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun

out=$("$probe" abort 0 </dev/null 2>&1); rc=$?
check "singleton px_abort(3): exit status 3" test "$rc" -eq 3
check "singleton px_abort: the message is printed" contains "$out" "probe abort from rank 0"

out=$("$probe" wait </dev/null 2>&1); rc=$?
check "singleton: a receive that can never match fails instead of hanging" contains "$out" "wait: timed out"
check "... and says why" contains "$out" "can never complete: this process is alone in the job"

if [ -x "$pxrun" ]; then
    start=$(date +%s)
    out=$(timeout 60 "$pxrun" -n 2 "$probe" abort 1 </dev/null 2>&1); rc=$?
    check "pxrun -n 2, rank 1 aborts: pxrun exits non-zero" test "$rc" -ne 0
    check "pxrun -n 2, rank 1 aborts: the message is shown" contains "$out" "probe abort from rank 1"
    check "pxrun -n 2, rank 1 aborts: the job ends within 10 s" test $(( $(date +%s) - start )) -lt 10
    check "pxrun -n 2, rank 1 aborts: pxrun ends the one other rank (the aborting one is not counted)" \
        eval 'contains "$out" "ending the other 1 rank" && ! contains "$out" "ending the other 2"'

    out=$(PX_MCA_runtime_wait_timeout=1 timeout 60 "$pxrun" -n 2 "$probe" wait </dev/null 2>&1); rc=$?
    check "runtime_wait_timeout=1: the receive fails with a timeout" contains "$out" "wait: timed out after 1."
    check "runtime_wait_timeout=1: the message names the variable" contains "$out" "runtime_wait_timeout = 1 s"
    check "runtime_wait_timeout=1: the job still finishes cleanly" test "$rc" -eq 0
else
    not_ok "pxrun not built at $pxrun"
fi
tap_done
