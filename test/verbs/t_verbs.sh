#!/usr/bin/env bash
# btl/verbs over the software libibverbs.so.1 (test/softverbs, first in
# LD_LIBRARY_PATH): the unit test with a device; the messaging protocols
# (rendezvous auto/get/put/pipeline, 3 ranks); the all-to-all on 2, 4 and 8
# ranks, and over 2 devices x 2 ports (4 rails); px_perf names verbs for the
# peer; px_info shows the ports; a work-completion error (remote access, RNR
# retries exceeded: the fault injection of softverbs) ends the job with a
# message naming the status, the peer's rank and host, never a hang; a killed
# peer ends the job, and survivors only waiting to receive from a dead peer
# learn it (keepalive). Without the software device (the system's libibverbs and
# no HCA) a job that asks for verbs is told why it declines.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
A2A=$B/test/shm/shm_alltoall
PROBE=$B/test/runtime/xfer_probe
PXPERF=$B/tools/px_perf/px_perf
PXINFO=$B/tools/px_info/px_info
LIB=$B/test/softverbs/lib
if [ ! -e "$B/.libs/plexus_btl_verbs.so" ]; then
    if grep -q 'S\["PX_HAVE_VERBS_TRUE"\]="#"' "$B/config.status" 2>/dev/null; then
        skip "btl/verbs" "configured without libibverbs-dev (btl/verbs is not built)"
        tap_done
    fi
    not_ok "plugin plexus_btl_verbs.so is built"
    tap_done
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PX_MCA_mca_component_path=$B/.libs
unset PX_SOFTVERBS_DEVICES PX_SOFTVERBS_LINK_LAYER PX_SOFTVERBS_FAIL_WR PX_SOFTVERBS_DELAY_US \
    PX_SOFTVERBS_QP_ERROR_AFTER PX_SOFTVERBS_FAIL_STATUS PX_SOFTVERBS_PORTS
run() { timeout -s KILL 120 "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }
show() { [ "$rc" -eq 0 ] || { head -c 1500 "$T/err"; tail -5 "$T/out"; } | sed 's/^/# /'; }

# Without the software device: the system's libibverbs.
ndev=$(ibv_devices 2>/dev/null | grep -vc -e '^ *device' -e '^ *------')
if [ "${ndev:-0}" -eq 0 ]; then
    run env PX_MCA_btl=self,verbs "$PXRUN" -n 2 "$A2A" --rounds 1 --msgs 1 --max 8
    check "no RDMA device: a job that asks for verbs fails" [ "$rc" -ne 0 ]
    check "no RDMA device: btl/verbs says why it declines" \
        contains "$(cat "$T/err")" "btl/verbs declines: no RDMA device found"
else
    skip "btl/verbs decline without a device" "this host has an RDMA device ($ndev)"
fi

# The plugin loads libibverbs at its first device search, which a job all on
# one host skips (btl_verbs_skip_single_host): such a job never maps it.
run "$PXRUN" -n 2 "$B/test/runtime/init_probe"
check "a one-host job with btl/verbs on the path: exit 0" [ "$rc" -eq 0 ]
check "... neither rank maps libibverbs" [ "$(grep -c 'libibverbs 0$' "$T/out")" -eq 2 ]
show

if [ ! -e "$LIB/libibverbs.so.1" ]; then
    skip "btl/verbs over the software device" "$LIB/libibverbs.so.1 is not built (make build-tests)"
    tap_done
fi
export LD_LIBRARY_PATH=$LIB PX_SOFTVERBS_DIR=$T/reg PX_MCA_btl=self,verbs

run "$B/test/verbs/verbs_unit_test"
check "unit test over the software device (messages, credits, RDMA, bad rkey)" [ "$rc" -eq 0 ]
show

run "$PXRUN" -n 2 "$B/test/runtime/init_probe"
check "btl=self,verbs on one host: both ranks load libibverbs (the software device's)" \
    [ "$(grep -c 'libibverbs [1-9]' "$T/out")" -eq 2 ]
check "... and reach each other over verbs" [ "$(grep -c 'transport to [01]: verbs' "$T/out")" -eq 2 ]
show

run "$PXINFO" --param btl verbs --level 9
check "px_info shows the software device's port as used" contains "$(cat "$T/out")" "softverbs0:1 active (InfiniBand)"
check "px_info shows the port details (MTU, max_qp_wr)" contains "$(cat "$T/out")" "max_qp_wr"

# Under ThreadSanitizer (PX_TEST_TSAN, each step several times slower) the
# threads are the software device's and progress's, the same whatever the
# protocol: auto (get) there (with the 2-credit and event-mode runs below);
# all four in the other builds.
protos="auto get put pipeline"
[ -n "${PX_TEST_TSAN:-}" ] && protos="auto"
for proto in $protos; do
    out=$(PX_MCA_runtime_rndv_protocol=$proto timeout -s KILL 120 "$PXRUN" -n 3 "$PROBE" </dev/null 2>&1)
    rc=$?
    n=$(echo "$out" | grep -c ': 0 errors (transport to [0-9]: verbs)')
    check "messaging protocols over verbs, rendezvous $proto: 0 B .. 8 MiB on 3 ranks" \
        [ "$rc" -eq 0 -a "$n" -eq 3 ]
    [ "$rc" -eq 0 -a "$n" -eq 3 ] || echo "$out" | head -10 | sed 's/^/# /'
done
out=$(PX_MCA_runtime_tiny_limit=0 PX_MCA_runtime_eager_limit=1000 PX_MCA_btl_verbs_num_recvs=2 \
    timeout -s KILL 120 "$PXRUN" -n 3 "$PROBE" </dev/null 2>&1)
check "messaging protocols over verbs with 2 receive credits per peer and no sendi" \
    [ "$?" -eq 0 -a "$(echo "$out" | grep -c ': 0 errors')" -eq 3 ]

# Under ThreadSanitizer 2 and 4 ranks: 8 ranks on this machine's 2 cores
# add connections, not threads (each process runs the same two).
a2a_ranks="2 4 8"
[ -n "${PX_TEST_TSAN:-}" ] && a2a_ranks="2 4"
for n in $a2a_ranks; do
    run "$PXRUN" -n $n "$A2A" --rounds 2 --msgs 3 --max 4194304 --seed $((n * 7))
    check "all-to-all 0 B..4 MiB over verbs on $n ranks: no loss, corruption or reordering" \
        contains "$(cat "$T/out")" "alltoall ok"
    check "all-to-all over verbs on $n ranks: every rank exits 0" [ "$rc" -eq 0 ]
    check "rank 0 reaches rank 1 over verbs ($n ranks)" contains "$(cat "$T/out")" "transport 0->1: verbs"
    show
done
run env PX_SOFTVERBS_DEVICES=2 PX_SOFTVERBS_PORTS=2 "$PXRUN" -n 3 "$A2A" --rounds 2 --msgs 3 --max 4194304
check "all-to-all over 2 devices x 2 ports (4 rails)" contains "$(cat "$T/out")" "alltoall ok"
show
run env PX_SOFTVERBS_DEVICES=2 "$PXRUN" -n 2 --mca btl_verbs_device_exclude softverbs0 \
    --mca btl_verbs_verbose 10 "$A2A" --rounds 1 --msgs 2 --max 65536
check "btl_verbs_device_exclude leaves softverbs1 only" \
    eval 'contains "$(cat "$T/out")" "alltoall ok" && contains "$(cat "$T/err")" "softverbs0:1 (in btl_verbs_device_exclude)"'

# One window per size under the sanitizers (64 sends in flight, as in each
# of the 4 windows the other builds run).
perf_iters=4
[ -n "${PX_TEST_SANITIZER:-}${PX_TEST_TSAN:-}" ] && perf_iters=1
run "$PXRUN" -n 2 "$PXPERF" --sizes 8,65536,1048576 --iters $perf_iters
check "px_perf over btl=self,verbs reports verbs for the peer" \
    contains "$(cat "$T/out")" "transports from rank 0: 0:self 1:verbs"
check "px_perf over verbs exits 0" [ "$rc" -eq 0 ]
show
# px_perf --btl: btl_sendi ping-pong on the module itself. It used to hang at
# the first ping of a size: the count was reset after px_barrier, while the
# peer's first message could already have been counted inside the barrier.
run "$PXRUN" -n 2 "$PXPERF" --btl --sizes 0,8,4096,30000,65536 --iters 50
check "px_perf --btl over verbs: every size up to btl_max_send_size finishes (no hang)" \
    eval '[ "$rc" -eq 0 ] && [ "$(grep -cE "^ +(0|8|4096|30000) +[0-9.]+$" "$T/out")" -eq 4 ]'
check "px_perf --btl over verbs: a size above btl_max_send_size is skipped, saying why" \
    contains "$(cat "$T/out")" "65536 bytes skipped: above the transport's btl_max_send_size"
show

# Event mode (btl_verbs_progress_mode=event): the same protocols and the
# all-to-all; a rank waiting in px_recv for 2 s sleeps in poll() on the
# completion channel (its thread's CPU time stays a small part of the wait,
# where polling spends it all); with shm's rings also to poll it does not.
out=$(PX_MCA_btl_verbs_progress_mode=event timeout -s KILL 120 "$PXRUN" -n 3 "$PROBE" </dev/null 2>&1)
check "event mode: messaging protocols over verbs, 0 B .. 8 MiB on 3 ranks" \
    [ "$?" -eq 0 -a "$(echo "$out" | grep -c ': 0 errors (transport to [0-9]: verbs)')" -eq 3 ]
run env PX_MCA_btl_verbs_progress_mode=event "$PXRUN" -n 4 "$A2A" --rounds 2 --msgs 3 --max 4194304 --seed 11
check "event mode: all-to-all 0 B..4 MiB on 4 ranks" eval 'contains "$(cat "$T/out")" "alltoall ok" && [ "$rc" -eq 0 ]'
show
IDLE=$B/test/runtime/idle_probe
run env PX_MCA_btl_verbs_progress_mode=event "$PXRUN" -n 3 "$IDLE" --wait 2000
check "event mode: both waiting ranks got the message after the wait" \
    [ "$rc" -eq 0 -a "$(grep -c '^rank [12] waited' "$T/out")" -eq 2 ]
check "event mode: a rank waiting 2 s sleeps (thread CPU < 0.25 s, blocked in poll)" \
    eval '[ -n "$(cat "$T/out")" ] && awk '"'"'/waited/ { if ($7 + 0 >= 0.25 || $10 + 0 < 1) bad = 1; n++ } END { exit bad || n != 2 }'"'"' "$T/out"'
show
run env PX_MCA_btl_verbs_progress_mode=poll "$PXRUN" -n 3 "$IDLE" --wait 300
check "poll mode (default): a waiting rank never blocks" \
    eval '[ "$rc" -eq 0 ] && [ "$(grep -c "waited.*blocks 0$" "$T/out")" -eq 2 ]'
run env PX_MCA_btl=self,shm,verbs PX_MCA_btl_verbs_skip_single_host=false \
    PX_MCA_btl_verbs_progress_mode=event "$PXRUN" -n 3 "$IDLE" --wait 300
check "event mode beside shm (its rings need polling): a waiting rank does not block" \
    eval '[ "$rc" -eq 0 ] && [ "$(grep -c "waited.*blocks 0$" "$T/out")" -eq 2 ]'
show
run env PX_MCA_btl_verbs_progress_mode=event PX_PXRUN_GRACE=60 "$PXRUN" -n 3 "$B/test/pxrun/px_probe" peerdeath 1 kill
check "event mode, peer death: both survivors' px_recv from rank 1 end with an error (keepalive)" \
    [ "$(grep -c 'recv from rank 1: transport error after' "$T/out")" -eq 2 ]

# Work-completion errors injected in rank 1 (the 5th work request of each of
# its QPs fails): the job ends, with the status, the peer's rank and host.
for st in 10:"remote access error" 13:"RNR retry counter exceeded" 12:"transport retry counter exceeded"; do
    code=${st%%:*} text=${st#*:}
    run "$PXRUN" -n 3 sh -c 'if [ "$PX_RANK" = 1 ]; then export PX_SOFTVERBS_FAIL_WR=5 PX_SOFTVERBS_FAIL_STATUS='$code'; fi; exec "$0" "$@"' \
        "$A2A" --rounds 2 --msgs 3 --max 1048576
    check "injected '$text' in rank 1: the job fails (no hang)" \
        eval '[ "$rc" -ne 0 ] && ! grep -q "sending SIGKILL" "$T/err"'
    check "injected '$text' in rank 1: the error names the status, the peer's rank and host" \
        eval 'grep -q "btl/verbs (softverbs0:1): .* rank [02] on host .* failed: work completion $text" "$T/err"'
done

# The same in every rank: each fails one QP, and the peer on its other end
# (which may only be waiting to receive) learns it from the keepalive read.
run env PX_SOFTVERBS_FAIL_WR=5 PX_SOFTVERBS_FAIL_STATUS=10 "$PXRUN" -n 3 "$A2A" --rounds 2 --msgs 3 --max 1048576
check "a failed QP in every rank: the job fails (no hang)" \
    eval '[ "$rc" -ne 0 ] && ! grep -q "sending SIGKILL" "$T/err"'

# A peer that dies while the others only wait in px_recv from it (SIGTERM
# ignored, pxrun's grace 60 s): the keepalive read fails, and their receives
# end with an error naming the rank, within seconds.
run env PX_PXRUN_GRACE=60 "$PXRUN" -n 3 "$B/test/pxrun/px_probe" peerdeath 1 kill
check "peer death over verbs: both survivors' px_recv from rank 1 end with an error" \
    [ "$(grep -c 'recv from rank 1: transport error after' "$T/out")" -eq 2 ]
check "peer death over verbs: btl/verbs names the rank and the failed keepalive" \
    contains "$(cat "$T/err")" "keepalive read from rank 1 on host"
check "peer death over verbs: pxrun did not have to SIGKILL the survivors" \
    eval '! grep -q "sending SIGKILL" "$T/err"'

# The BTL contract, as a component author checks it (docs/px_btl_check.md):
# every px_btl_check check over verbs on the software device, 2 and 3 ranks
# (3 only under ThreadSanitizer: the same checks, with a third peer).
btl_check_ranks="2 3"
[ -n "${PX_TEST_TSAN:-}" ] && btl_check_ranks=3
for n in $btl_check_ranks; do
    out=$(PX_MCA_btl= timeout -s KILL 300 "$B/tools/px_btl_check/px_btl_check" -n $n \
        --pxrun "$PXRUN" verbs </dev/null 2>"$T/err")
    rc=$?
    check "px_btl_check verbs on $n ranks: exit 0" [ "$rc" -eq 0 ]
    check "px_btl_check verbs on $n ranks: 16 checks, none not ok" \
        eval '[ "$(echo "$out" | grep -c "^ok [0-9]")" -eq 16 ] && ! echo "$out" | grep -q "^not ok"'
    [ "$rc" -eq 0 ] || echo "$out" | grep "^not ok" | head -5 | sed 's/^/# /'
done

# A peer killed mid-exchange: pxrun ends the job, nothing waits forever.
run "$PXRUN" -n 4 "$A2A" --rounds 100 --msgs 4 --max 1048576 --kill-rank 2 --kill-after 20
check "a rank SIGKILLed mid-exchange over verbs: the job fails" [ "$rc" -ne 0 ]
check "a rank SIGKILLed mid-exchange over verbs: pxrun (not the test's watchdog) ended the others" \
    contains "$(cat "$T/err")" "ending the other 3 ranks"
check "a rank SIGKILLed mid-exchange over verbs: the report names rank 2" contains "$(cat "$T/err")" "rank 2 (pid"
tap_done
