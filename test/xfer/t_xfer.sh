#!/usr/bin/env bash
# The transfer engine between processes under pxrun (test/xfer/xfer_probe):
# data integrity with random offsets and sizes (0 B to 16 MiB) over every
# path (shm mapping, shm put/get, staged, ofi over tcp;ofi_rxm, shm+ofi
# striped, two verbs modules on the software device striped), 2 to 8 ranks, 2 submitting threads per rank with messaging
# beside them; the multi-process error paths; a peer killed during a batch;
# the verbose output that names the path and rails; no file left in /dev/shm.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
P=$B/test/xfer/xfer_probe
need_built "$PXRUN" "$P"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PX_MCA_mca_component_path=$B/.libs FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo
xfer_files() { ls /dev/shm/plexus-"$(id -u)"-*/xfer-* 2>/dev/null | sort; }
# Files this test's jobs left: new since the start, in a job folder no pxrun
# holds any more (pxrun keeps a shared flock on its folder while the job
# runs), so that other jobs of this user running meanwhile do not count.
left_files() {
    local f
    xfer_files | comm -13 <(echo "$files_before") - | while read -r f; do
        flock -n -x "$(dirname "$f")" true 2>/dev/null && echo "$f"
    done
}
files_before=$(xfer_files)
run() { timeout -s KILL 300 "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }
# Sizes shrink under the sanitizers (ten times slower): ASan and UBSan
# (PX_TEST_SANITIZER) and ThreadSanitizer (PX_TEST_TSAN), whose checks of
# each byte copied cost most there; PERF_IT is px_perf's staged flood below.
if [ "${PX_TEST_SANITIZER:-0}" = 1 ] || [ -n "${PX_TEST_TSAN:-}" ]; then
    BIG=4194304 IT=4 PERF_IT=200
else
    BIG=16777216 IT=8 PERF_IT=2000
fi
# Under ThreadSanitizer px_perf's staged run keeps its two submitting
# threads (the batch rate: 2000 requests each, in batches of 16, at 20)
# and floods 20 rounds: what the flood found was between processes, which
# TSan does not see (ASan runs 200 rounds, the normal build 2000); at load
# 40 its 200 rounds did not finish in the 300 s.
[ -n "${PX_TEST_TSAN:-}" ] && PERF_IT=20
OFI="PX_MCA_btl=self,ofi PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm"
# Under ThreadSanitizer (PX_TEST_TSAN) only the jobs whose processes run
# threads that touch the transfers: submitting threads (--threads), ofi
# (libfabric's threads), the software verbs device's progress thread,
# px_perf --xfer (its own threads), and a peer's death (pxrun's watcher
# thread). The jobs of one thread per process (the shm paths and sizes,
# the auto staging bounds, verbose output, the shm error and free races)
# give TSan nothing to order: they run in the normal and ASan builds.
one_thread_jobs=1
[ -n "${PX_TEST_TSAN:-}" ] && one_thread_jobs=0

# stress NAME RANKS LABEL [ENV...] -- [PROBE ARGS...]: every rank verifies
# what it wrote and read; LABEL is a path some request must have taken.
stress() {
    local name=$1 n=$2 label=$3
    shift 3
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    run env "${envs[@]}" "$PXRUN" -n "$n" "$P" stress "$@"
    check "$name: exit 0" test $rc -eq 0
    [ $rc -eq 0 ] || { grep -h "FAIL\|error" "$T/out" "$T/err" | head -5 | sed 's/^/# /'; }
    check "$name: every rank's data checked out" test "$(grep -c 'stress ok' "$T/out")" -eq "$n"
    check "$name: requests took $label" grep -q "paths:.* $label [0-9]" "$T/out"
}

if [ $one_thread_jobs = 1 ]; then
    stress "shm, allocated regions, 2 ranks, 0 B..$BIG B" 2 shm:map -- --max $BIG --iters $IT --mem alloc
    check "... and never another path between the two" eval '! grep -q "shm:put\|stage:" "$T/out"'
    stress "shm mapping with a 255-character job id (a PMIx namespace may be that long)" 2 shm:map \
        PX_BOOT_PXRUN_TEST_JOBID_SUFFIX="$(printf 'n%.0s' $(seq 1 255))" -- --max 1048576 --iters 4 --mem alloc
    stress "shm, registered memory (CMA), 3 ranks" 3 shm:get -- --max 4194304 --iters $IT --mem reg
    check "... written with shm:put" grep -q "paths:.* shm:put [0-9]" "$T/out"
    stress "shm, mixed memory, 8 ranks, batches up to 16" 8 shm:map -- --max 262144 --iters 6 --batch 16 --mem mixed
    stress "registered memory, xfer_stage_below=64k: small requests staged" 2 stage:shm \
        PX_MCA_xfer_stage_below=64k -- --max 1048576 --iters $IT --mem reg
    check "... the larger ones by CMA" grep -q "paths:.* shm:put [0-9]" "$T/out"
    # xfer_stage_below "auto" (the default): on the same host, small requests
    # to registered user memory are staged (the target's CPU serves them), larger
    # ones keep CMA, with a bound per operation (writes below AUTO_W, reads below
    # AUTO_R: runtime/xfer/xfer.h, measured apart, docs/measurements/transfer.md); 0 forces
    # CMA for every size; an explicit value is honoured for both.
    # paths_of ENV... [-- PROBE ARGS]: runs "xfer_probe paths"; $T/out holds rank 0's lines.
    paths_of() {
        local envs=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
        [ $# -gt 0 ] && shift
        run env "${envs[@]}" "$PXRUN" -n 2 "$P" paths "$@"
    }
    via() { grep -q "^rank 0: $1 via $2\$" "$T/out"; }
    AUTO_W=3072 AUTO_R=3072
    auto_sizes="8 512 $((AUTO_W - 1)) $AUTO_W $((AUTO_R - 1)) $AUTO_R 4096 8192 65536 1048576"
    # auto_ok OP BOUND CMA_LABEL: every size of auto_sizes went staged below BOUND, by CMA from it.
    auto_ok() {
        local n
        for n in $auto_sizes; do
            if [ "$n" -lt "$2" ]; then via "$1 $n B" stage:shm || return 1; else via "$1 $n B" "$3" || return 1; fi
        done
    }
    paths_of PX_MCA_xfer_stage_below=auto -- --sizes "$(echo $auto_sizes | tr ' ' ,)"
    check "stage_below auto: exit 0 (every size written and read back)" test $rc -eq 0
    [ $rc -eq 0 ] || { grep -h "FAIL\|error" "$T/out" "$T/err" | head -5 | sed 's/^/# /'; }
    check "stage_below auto: writes of 8 B to $((AUTO_W - 1)) B staged, from $AUTO_W B to 1 MiB by CMA" \
        auto_ok write $AUTO_W shm:put
    check "stage_below auto: reads of 8 B to $((AUTO_R - 1)) B staged, from $AUTO_R B to 1 MiB by CMA" \
        auto_ok read $AUTO_R shm:get
    paths_of
    check "stage_below unset is auto: 8 B staged, 4 KiB write and 1 MiB by CMA" \
        eval '[ $rc -eq 0 ] && via "write 8 B" stage:shm && via "read 8 B" stage:shm && via "write 4096 B" shm:put && via "write 1048576 B" shm:put'
    paths_of PX_MCA_xfer_stage_below=0
    check "stage_below=0: every size by CMA, none staged" \
        eval '[ $rc -eq 0 ] && via "write 8 B" shm:put && via "read 8 B" shm:get && ! grep -q "via stage" "$T/out"'
    paths_of PX_MCA_xfer_stage_below=2M
    check "stage_below=2M (explicit): 1 MiB staged too" \
        eval '[ $rc -eq 0 ] && via "write 1048576 B" stage:shm && via "read 1048576 B" stage:shm'
    paths_of PX_MCA_xfer_stage_below=8k -- --sizes 4096,8191,8192
    check "stage_below=8k (explicit): the same bound for writes and reads (4 KiB and 8191 B staged, 8 KiB by CMA)" \
        eval '[ $rc -eq 0 ] && via "write 4096 B" stage:shm && via "read 4096 B" stage:shm && via "write 8191 B" stage:shm && via "read 8191 B" stage:shm && via "write 8192 B" shm:put && via "read 8192 B" shm:get'
    paths_of PX_MCA_xfer_stage_below=1k
    check "stage_below=1k (explicit): 8 B staged, 4 KiB by CMA" \
        eval '[ $rc -eq 0 ] && via "write 8 B" stage:shm && via "write 4096 B" shm:put && via "read 4096 B" shm:get'
    paths_of PX_MCA_xfer_stage_below=lots
    check "stage_below=lots is refused with what it accepts" \
        grep -q 'xfer_stage_below: "lots" is not accepted: the variable takes "auto" or a byte count' "$T/err"
    stress "registered memory, CMA refused (PX_BTL_SHM_TEST_DENY_CMA=1): staged" 2 stage:shm \
        PX_BTL_SHM_TEST_DENY_CMA=1 -- --max 1048576 --iters $IT --mem reg
    stress "staged: btl_shm_flags=0x1 excludes RDMA and mapping, 2 ranks, 0 B..$BIG B" 2 stage:shm \
        PX_MCA_btl_shm_flags=0x1 -- --max $BIG --iters $IT --mem mixed
    check "... no direct path between the two" eval '! grep -q "shm:map\|shm:put\|shm:get" "$T/out"'
    stress "staged, 4 ranks, 2 bounce buffers of 4 KiB" 4 stage:shm PX_MCA_btl_shm_flags=0x1 \
        PX_MCA_xfer_stage_count=2 PX_MCA_xfer_stage_size=4k -- --max 65536 --iters 6 --batch 8 --mem mixed
else
    skip "one thread per process: the shm paths and sizes, the staging bounds" "no threads for ThreadSanitizer to order (normal and ASan builds run them)"
fi
# shellcheck disable=SC2086
stress "ofi over tcp;ofi_rxm, 2 ranks, 0 B..$BIG B" 2 ofi:put $OFI -- --max $BIG --iters $IT --mem mixed
check "... read with ofi:get" grep -q "paths:.* ofi:get [0-9]" "$T/out"
# shellcheck disable=SC2086
stress "ofi, 3 ranks, 2 threads each" 3 ofi:get $OFI -- --threads 2 --max 1048576 --iters 6 --mem mixed
stress "multi-rail: shm+ofi at equal priority, 64 KiB chunks, registered memory" 2 shm:put+ofi:put \
    PX_MCA_btl_ofi_skip_single_host=0 "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm" \
    PX_MCA_xfer_priority=shm+ofi PX_MCA_xfer_chunk_size=64k -- --max 4194304 --iters $IT --mem reg
check "... and read striped" grep -q "paths:.* shm:get+ofi:get [0-9]" "$T/out"
stress "multi-rail: allocated regions, the mapping striped with ofi" 2 shm:map+ofi:put \
    PX_MCA_btl_ofi_skip_single_host=0 "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm" \
    PX_MCA_xfer_priority=shm+ofi PX_MCA_xfer_chunk_size=64k -- --max 1048576 --iters $IT --mem alloc
if [ -e "$B/.libs/plexus_btl_verbs.so" ] && [ -e "$B/test/softverbs/lib/libibverbs.so.1" ]; then
    mkdir -p "$T/softverbs"
    stress "multi-rail: two verbs modules (2 software devices), 64 KiB chunks" 2 verbs:put+verbs:put \
        LD_LIBRARY_PATH="$B/test/softverbs/lib" PX_SOFTVERBS_DIR="$T/softverbs" PX_MCA_btl=self,verbs \
        PX_SOFTVERBS_DEVICES=2 PX_MCA_xfer_chunk_size=64k -- --max 4194304 --iters $IT --mem mixed
    check "... and read striped over both" grep -q "paths:.* verbs:get+verbs:get [0-9]" "$T/out"
else
    skip "multi-rail over two verbs modules" "btl/verbs or the software device (test/softverbs) is not built"
fi
stress "2 submitting threads per rank, messaging beside them, 2 ranks" 2 shm:map -- --threads 2 \
    --messaging --max 1048576 --iters 12 --mem mixed
check "... the messaging went on beside the transfers" grep -q "messaging beside the transfers" "$T/out"
stress "2 threads per rank, staged, 4 ranks" 4 stage:shm PX_MCA_btl_shm_flags=0x1 -- --threads 2 \
    --max 131072 --iters 8 --mem mixed

# px_perf's one-sided tests run (figures are for test/bench/compare-xfer.sh).
# Its staged run floods btl/shm with small answers: it found a btl_sendi that
# queued a fast box descriptor as a fragment when the peer freed ring space
# between two of its checks (a crash in most runs before the fix). Under the
# sanitizers a tenth of the rounds (the same windows of 64 and batches of
# 256): the 2000 rounds were most of t_xfer's CPU there, and more than 300 s
# under ThreadSanitizer on a loaded machine.
PXPERF=$B/tools/px_perf/px_perf
run "$PXRUN" -n 2 "$PXPERF" --xfer --sizes 8,65536 --iters 200 --csv
check "px_perf --xfer (allocated regions): exit 0 with a row per size and the batch rates" \
    eval '[ $rc -eq 0 ] && grep -q "^65536," "$T/out" && grep -q "^16,2," "$T/out"'
run "$PXRUN" -n 2 --mca xfer_stage_below 8k "$PXPERF" --xfer --xfer-mem reg --sizes 8,4096 --iters $PERF_IT --csv
check "px_perf --xfer, registered memory, small requests staged (xfer_stage_below=8k): exit 0" \
    eval '[ $rc -eq 0 ] && grep -q "^4096," "$T/out" && grep -q "^256,1," "$T/out"'
[ $rc -eq 0 ] || grep -h "signal\|error" "$T/err" | head -3 | sed 's/^/# /'

# What verbose output says per request.
run env PX_MCA_xfer_verbose=10 PX_MCA_btl_ofi_skip_single_host=0 \
    "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm" PX_MCA_xfer_priority=shm+ofi \
    PX_MCA_xfer_chunk_size=64k "$PXRUN" -n 2 "$P" stress --max 1048576 --iters 2 --mem reg --seed 7
check "xfer_verbose=10: exit 0" test $rc -eq 0
check "xfer_verbose=10: a striped request names its rails and bytes per rail" \
    grep -qE "via shm:(put|get)\+ofi:(put|get); rails: shm#0 [0-9]+ B, ofi#0 [0-9]+ B: done" "$T/err"
check "xfer_verbose=10: the transports and priorities at start" grep -q "transport ofi#0 priority" "$T/err"
check "xfer_verbose=10: an import lists its direct paths" grep -q "direct paths, best first: shm#0(put/get) ofi#0(put/get)" "$T/err"
if [ $one_thread_jobs = 1 ]; then
    run env PX_MCA_xfer_verbose=10 "$PXRUN" -n 2 "$P" stress --max 4096 --iters 2 --mem alloc
    check "xfer_verbose=10: a mapped request is one memcpy by the submitting thread" \
        grep -q "via shm:map (one memcpy by the submitting thread)" "$T/err"
fi

# The error paths between processes.
error_cfgs=("shm" "staged:PX_MCA_btl_shm_flags=0x1" "ofi:PX_MCA_btl=self,ofi")
[ $one_thread_jobs = 1 ] || error_cfgs=("ofi:PX_MCA_btl=self,ofi")
for cfg in "${error_cfgs[@]}"; do
    name=${cfg%%:*}
    envs=()
    [ "$cfg" != "$name" ] && envs=("${cfg#*:}")
    extra=()
    [ "$name" = ofi ] && { envs+=("PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm"); extra=(nodirect); }
    mkdir -p "$T/$name"
    run env "${envs[@]}" "$PXRUN" -n 2 "$P" errors "$T/$name" "${extra[@]}"
    out=$(cat "$T/out")
    check "errors over $name: exit 0" test $rc -eq 0
    [ $rc -eq 0 ] || { grep -h "FAIL" "$T/out" | head -3 | sed 's/^/# /'; }
    check "errors over $name: a key given as another rank's is refused, naming both" \
        contains "$out" "it was exported by rank 0, not by rank 1"
    check "errors over $name: a transport without a path is refused, naming it" \
        contains "$out" 'the request names transport "nosuch", which has no direct path'
    check "errors over $name: a notification comes after the writes before it" \
        contains "$out" "the data before it is all there"
    check "errors over $name: free refused while requests are in flight" \
        contains "$out" "free while in flight: px_xfer_free: region"
    check "errors over $name: release refused while requests are in flight" \
        contains "$out" "release while in flight: px_xfer_remote_release: rank 1's region"
    check "errors over $name: staged requests to a deregistered region fail, saying so" \
        [ "$(grep -c 'region via stage:[a-z]*: not found: rank 1 (host .*), transport stage:[a-z]*: the region was deregistered by its owner' "$T/out")" -ge 2 ]
    if [ "$name" != ofi ]; then
        check "errors over $name: direct requests to a deregistered region fail before moving a byte" \
            [ "$(grep -c 'region via [a-z]*:[a-z]*: not found: rank 1 (host .*), transport [a-z]*:[a-z]*: the region was deregistered by its owner' "$T/out")" -eq 4 ]
    fi
done

# A region freed by its owner while a peer reads it in a loop (an object
# store's ordinary race): the reads after the free fail with PX_ERR_NOT_FOUND
# and nothing else does: messages both ways, a new key and px_finalize work.
# Over shm (mapped and shm:get) and over ofi (ofi:get, whose stale key would
# make tcp;ofi_rxm drop the connection: the owner revokes the key from its
# peers before deregistering it, docs/transfer.md), and staged over ofi.
race_cfgs=("shm alloc:" "shm reg:" "ofi reg:$OFI" "ofi alloc:$OFI" "ofi staged:$OFI")
[ $one_thread_jobs = 1 ] || race_cfgs=("ofi reg:$OFI" "ofi alloc:$OFI" "ofi staged:$OFI")
for cfg in "${race_cfgs[@]}"; do
    name=${cfg%%:*}
    envs=()
    [ -n "${cfg#*:}" ] && read -r -a envs <<<"${cfg#*:}"
    args=(--mem "${name#* }")
    [ "$name" = "ofi staged" ] && args=(--mem reg --transport stage)
    run env "${envs[@]}" "$PXRUN" -n 2 "$P" freerace "${args[@]}"
    check "freerace over $name: a read after the owner's free fails with not found" \
        grep -q "^rank 0: freerace: read after the free via [a-z:]*: not found: .*deregistered by its owner" "$T/out"
    [ "${name% *}" = ofi ] && [ "$name" != "ofi staged" ] &&
        check "freerace over $name: ... by the direct path" grep -q "read after the free via ofi:get" "$T/out"
    check "freerace over $name: messages, a new key and px_finalize work after it, exit 0" \
        eval '[ $rc -eq 0 ] && [ "$(grep -c "freerace ok, finalize: success" "$T/out")" -eq 2 ]'
    [ $rc -eq 0 ] || { cat "$T/out"; head -5 "$T/err"; } | head -10 | sed 's/^/# /'
done

# Both ranks free their region while reading the other's (each waits for
# the other's answer to its revocation with requests in flight on the other's
# region): both frees return, no read fails otherwise.
for t in ofi:get stage; do
    args=()
    [ "$t" = stage ] && args=(--transport stage)
    run env PX_MCA_btl=self,ofi "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm" \
        PX_MCA_runtime_wait_timeout=30 "$PXRUN" -n 2 "$P" mutual "${args[@]}"
    check "mutual free over ofi ($t): both frees return at once, reads end with success or not found" \
        eval '[ $rc -eq 0 ] && [ "$(grep -c "mutual ok, finalize: success" "$T/out")" -eq 2 ] &&
            ! grep -q "did not answer" "$T/err"'
    [ $rc -eq 0 ] || { cat "$T/out"; head -5 "$T/err"; } | head -10 | sed 's/^/# /'
done

# A peer killed during a batch: the pending requests fail with a peer error.
run env PX_PXRUN_GRACE=60 PX_XFER_PROBE_SYNC="$T/rank1-out" "$PXRUN" -n 2 "$P" deadpeer
out=$(cat "$T/out")
check "peer killed during a batch: pxrun reports it" contains "$(cat "$T/err")" "rank 1 (pid"
check "peer killed during a batch: all 16 pending requests fail with peer failed" \
    contains "$out" "16 of 16 failed with peer failed"
check "... each naming the peer, the transport and the reason" \
    grep -q "last: rank 1 (host .*), transport stage:shm: the peer failed: transport shm: btl/shm: local peer rank 1 (pid [0-9]*) is gone" "$T/out"
check "... later requests to it fail at once" contains "$out" "a later request: peer process failed or disconnected"
check "... pxrun did not have to SIGKILL the survivor" eval '! grep -q "sending SIGKILL" "$T/err"'
grep -h "deadpeer: wait returned" "$T/out" | sed 's/^/# /'

left=$(left_files)
check "no shareable-memory file of these jobs is left in /dev/shm" test -z "$left"
[ -z "$left" ] || echo "$left" | sed 's/^/# left: /'

tap_done
