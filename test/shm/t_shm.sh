#!/usr/bin/env bash
# btl/shm under pxrun: all-to-all of random sizes (0 B..8 MiB, checksummed,
# ordered per pair) on 2, 4 and 8 ranks, through each path (fast box,
# fragment queue, pipelined and single-copy large messages); 255-character
# job ids; ranks with different ring sizes refused; corrupt entries written by
# a peer end its connection with an error; a rank SIGKILLed mid-exchange; nothing of a job left in /dev/shm; a peer that dies
# while the others wait on it is reported to them (pxrun and mpirun).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
A2A=$B/test/shm/shm_alltoall
PROBE=$B/test/pxrun/px_probe
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
uid=$(id -u)
sess=${TMPDIR:-/tmp}/plexus-$uid
run() { timeout -s KILL 120 "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }
leftovers() { # jobid: 0 when nothing of the job remains
    [ ! -e "/dev/shm/plexus-$uid-$1" ] && [ ! -e "$sess/job-$1" ]
}

for n in 2 4 8; do
    run "$PXRUN" -n $n "$A2A" --rounds 2 --msgs 3 --max 8388608 --seed $((n * 101))
    job=$(sed -n 's/^jobid=//p' "$T/out")
    check "all-to-all 0 B..8 MiB on $n ranks: no loss, corruption or reordering" \
        contains "$(cat "$T/out")" "alltoall ok"
    check "all-to-all on $n ranks: every rank exits 0" [ "$rc" -eq 0 ]
    [ "$rc" -eq 0 ] || cat "$T/err" | head -5 | sed 's/^/# /'
    check "rank 0 reaches rank 1 over shm ($n ranks)" contains "$(cat "$T/out")" "transport 0->1: shm"
    check "nothing of the job left in /dev/shm or the session folder ($n ranks)" leftovers "$job"
done

# Force each path: every message through the queue (tiny fast box), CMA single copy.
run "$PXRUN" -n 4 --mca btl_shm_fbox_size 4096 --mca btl_shm_fbox_max_send 64 "$A2A" --rounds 2 --msgs 4 --max 65536
check "all-to-all with the fragment queue carrying nearly everything" contains "$(cat "$T/out")" "alltoall ok"
check "all-to-all with the fragment queue carrying nearly everything: exit 0" [ "$rc" -eq 0 ]
run "$PXRUN" -n 3 --mca btl_shm_single_copy cma "$A2A" --rounds 2 --msgs 3 --max 8388608
check "all-to-all with single copy (process_vm_readv)" contains "$(cat "$T/out")" "alltoall ok"
check "all-to-all with single copy (process_vm_readv): exit 0" [ "$rc" -eq 0 ]
run "$PXRUN" -n 3 --mca btl_shm_single_copy cma -x PX_BTL_SHM_TEST_DENY_CMA=1 "$A2A" --rounds 1 --msgs 3 --max 4194304
check "CMA refused by the kernel: the pipeline carries large messages" contains "$(cat "$T/out")" "alltoall ok"
check "CMA refused by the kernel: exit 0" [ "$rc" -eq 0 ]
check "CMA refused by the kernel: a warning says so" contains "$(cat "$T/err")" "process_vm_readv from rank"
run "$PXRUN" -n 3 --mca btl_shm_free_list_send_max 2 --mca btl_shm_free_list_eager_max 8 "$A2A" --rounds 2 --msgs 6 --max 1048576
check "all-to-all with the fragment lists at their minimum" contains "$(cat "$T/out")" "alltoall ok"
check "all-to-all with the fragment lists at their minimum: exit 0" [ "$rc" -eq 0 ]
# A backing folder too small for the segment: each rank says what it needed,
# what was free and which variables make it smaller (the rings first), and
# the job ends with an error, not SIGBUS on a page the file system refuses.
small="$T/small-backing"
mkdir -p "$small"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m tmpfs "$small" 2>"$T/mnt.err"; then
    run "$PXRUN" -n 2 --mca btl_shm_backing_dir "$small" --mca btl self,shm "$A2A" --rounds 1 \
        --msgs 1 --max 8
    umount "$small"
    check "a backing folder too small: the job fails with an error, not a signal" [ "$rc" -gt 0 -a "$rc" -lt 128 ]
    check "a backing folder too small: the error names the need, the folder and the rings" \
        contains "$(cat "$T/err")" "free in $small (btl_shm_backing_dir): 2 rings of btl_shm_fbox_size"
else
    skip "a backing folder too small" "needs root and a tmpfs mount: $(head -1 "$T/mnt.err" 2>/dev/null)"
    skip "a backing folder too small: the error" "needs root and a tmpfs mount"
fi
# A backing folder with room for some of the host's segments but not all:
# every rank's own check of the free space passes, and the segments together
# do not fit (4 ranks of about 10 MiB each, 22 MiB free; pipelined messages
# of up to 4 MiB fill the fragment heaps). Each segment's pages are reserved
# when it is made, so a rank that finds no room says so (the folder, the
# size, btl_shm_backing_dir) instead of dying of SIGBUS when it first
# touches a page the file system cannot give (3 runs of 3 did before).
full="$T/full-backing"
mkdir -p "$full"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=256m tmpfs "$full" 2>"$T/mnt.err"; then
    fallocate -l 234M "$full/ballast"
    sigbus=0 named=0
    for i in 1 2 3; do
        run "$PXRUN" -n 4 --mca btl_shm_backing_dir "$full" --mca btl self,shm \
            --mca btl_shm_single_copy none "$A2A" --rounds 2 --msgs 16 --max 4194304
        [ "$rc" -eq $((128 + 7)) ] && sigbus=$((sigbus + 1))
        # the reservation that failed, or the check before it (the others took the room first)
        if [ "$rc" -eq 0 ] || grep -Eq "cannot reserve [0-9]+ bytes for segment $full/.*btl_shm_backing_dir|need [0-9]+ bytes, more than the [0-9]+ free in $full \(btl_shm_backing_dir\)" "$T/err"; then
            named=$((named + 1))
        fi
    done
    leftover=$(ls -A "$full" | grep -v '^ballast$')
    umount "$full"
    check "4 ranks, room for 2 segments: no rank dies of SIGBUS (3 runs)" [ $sigbus -eq 0 ]
    check "4 ranks, room for 2 segments: each run succeeds or names the folder, the size and btl_shm_backing_dir" [ $named -eq 3 ]
    [ $named -eq 3 ] || head -3 "$T/err" | sed 's/^/# /'
    check "4 ranks, room for 2 segments: nothing of the jobs left in the folder" [ -z "$leftover" ]
else
    skip "4 ranks, room for 2 segments" "needs root and a tmpfs mount: $(head -1 "$T/mnt.err" 2>/dev/null)"
    skip "4 ranks, room for 2 segments: the error" "needs root and a tmpfs mount"
    skip "4 ranks, room for 2 segments: nothing left" "needs root and a tmpfs mount"
fi
# Pipeline fragments cool for btl_shm_frag_cool_bytes of other data before
# reuse: at 0 a fragment is taken again as soon as it comes back, at 1G only
# once the list is at its maximum; the data arrives intact either way.
for cb in 0 1G; do
    run "$PXRUN" -n 3 --mca btl_shm_frag_cool_bytes $cb --mca btl_shm_free_list_send_max 8 "$A2A" \
        --rounds 2 --msgs 6 --max 1048576
    check "all-to-all with btl_shm_frag_cool_bytes $cb" contains "$(cat "$T/out")" "alltoall ok"
    check "all-to-all with btl_shm_frag_cool_bytes $cb: exit 0" [ "$rc" -eq 0 ]
done
# The largest entry a ring can describe (its size / 64 in 16 bits): a 4 MiB
# limit on a 16 MiB ring, and a message whose entry with the alignment lead
# would just pass 4 MiB, goes through intact (a wrapped size field once made
# the receiver read garbage as the next header).
timeout -s KILL 60 "$PXRUN" -n 2 --mca btl_shm_fbox_size 16M --mca btl_shm_fbox_max_send 4M \
    --mca btl_shm_eager_limit 8M --mca btl_shm_max_send_size 8M "$B/tools/px_perf/px_perf" \
    --sizes 4194200 --iters 4 --test lat >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "a message at the ring's largest entry size arrives intact (4 MiB limit, 16 MiB ring)" \
    [ "$rc" -eq 0 -a "$(grep -c '^ *4194200 ' "$T/out")" -eq 1 ]
[ "$rc" -eq 0 ] || head -3 "$T/err" | sed 's/^/# /'
run "$PXRUN" -n 2 --mca btl_shm_fbox_size 5000 "$A2A" --rounds 1 --msgs 1 --max 8
check "a bad btl_shm_fbox_size is an error naming it" contains "$(cat "$T/err")" "btl_shm_fbox_size 5000"

# Job ids as long as a PMIx namespace may be (255 characters; boot/pxrun's
# test hook appends to pxrun's id, cut at 255): the whole id counts, so
# such a job runs, and two ids alike in their first 200 characters are two jobs.
long=$(printf 'n%.0s' $(seq 1 255))
hdirs() { ls -d /dev/shm/plexus-$uid-h* 2>/dev/null | wc -l; }
before=$(hdirs)
run "$PXRUN" -n 3 -x PX_BOOT_PXRUN_TEST_JOBID_SUFFIX="$long" "$A2A" --rounds 1 --msgs 3 --max 100000
check "a 255-character job id: all-to-all over shm" contains "$(cat "$T/out")" "alltoall ok"
check "a 255-character job id: exit 0" [ "$rc" -eq 0 ]
check "a 255-character job id: rank 0 reaches rank 1 over shm" contains "$(cat "$T/out")" "transport 0->1: shm"
[ "$rc" -eq 0 ] || head -3 "$T/err" | sed 's/^/# /'
check "a 255-character job id: its segment folder is gone" [ "$(hdirs)" -eq "$before" ]
# (in a folder of its own: a rank that pxrun ends before its cleanup may
# leave its segment in the folder named after its id's hash, unknown to pxrun)
mkdir -p "$T/backing"
run "$PXRUN" -n 2 --mca btl self,shm --mca btl_shm_backing_dir "$T/backing" \
    sh -c 'PX_BOOT_PXRUN_TEST_JOBID_SUFFIX='"${long:0:200}"'$PX_RANK exec "$0" "$@"' \
    "$A2A" --rounds 1 --msgs 1 --max 8
check "job ids that differ after byte 200: each rank refuses the other's segment (another job's folder)" \
    contains "$(cat "$T/err")" "is not a file of this job's segment folder"
check "job ids that differ after byte 200: the job fails with an error, not a signal" \
    [ "$rc" -gt 0 -a "$rc" -lt 124 ]
check "job ids that differ after byte 200: no message passed" eval '! grep -q "alltoall ok" "$T/out"'

# btl_shm_fbox_size is job-wide: a rank with another ring size would put its
# rings where the other has its heap (before: no error, then a hang). px_init's
# job-wide check refuses it first, naming the variable, the ranks and both
# values; shm's own check at attach (the header's geometry against the
# segment, for a peer that skipped or lied about that check) is driven by
# shm_segment_test's header cases.
run "$PXRUN" -n 2 --mca btl self,shm sh -c '[ "$PX_RANK" = 1 ] && export PX_MCA_btl_shm_fbox_size=8192; exec "$0" "$@"' \
    "$A2A" --rounds 1 --msgs 2 --max 100000
check "ranks with different btl_shm_fbox_size: the job ends with an error, not a hang or a signal" \
    [ "$rc" -gt 0 -a "$rc" -lt 124 ]
check "ranks with different btl_shm_fbox_size: the error names the variable, both values and the ranks" \
    eval 'grep -qE "btl_shm_fbox_size: .*on rank 0.*\"8192\" on rank 1|btl_shm_fbox_size: \"8192\" on rank 1.*on rank 0" "$T/err"'

# A peer that writes corrupt entries into shared memory (shm_corrupt: rank 1
# writes through its mapping of rank 0's segment): rank 0's btl/shm ends
# that peer's connection with an error naming it, its receive fails, and it
# exits on its own (status 3), never crashing on the bad length or pointer.
for mode in fbox-len fbox-size split-slot queue-rel frag-len frag-return; do
    run "$PXRUN" -n 2 --mca btl_shm_fbox_size 65536 "$B/test/shm/shm_corrupt" $mode
    check "corrupt $mode from rank 1: rank 0's receive fails, no crash (exit 3)" [ "$rc" -eq 3 ]
    check "corrupt $mode from rank 1: the error names rank 1 and what it wrote" \
        contains "$(cat "$T/err")" "local peer rank 1 (pid"
    check "corrupt $mode from rank 1: ... wrote corrupt data" contains "$(cat "$T/err")" \
        "wrote corrupt data into shared memory"
    check "corrupt $mode from rank 1: rank 0 reports its failed receive" \
        contains "$(cat "$T/out")" "rank 0: recv from rank 1: transport error"
    [ "$rc" -eq 3 ] || { head -3 "$T/err"; head -3 "$T/out"; } | sed 's/^/# /'
done

# px_perf over shm: every test, each output format, the --vs column.
PXPERF=$B/tools/px_perf/px_perf
run "$PXRUN" -n 2 "$PXPERF" --test all --sizes 0,8,65536,1M --iters 20 --json
check "px_perf --json runs every test over shm" [ "$rc" -eq 0 ]
check "px_perf --json names the transport" contains "$(cat "$T/out")" '"to": 1, "transport": "shm"'
check "px_perf --json has bibw and rate" contains "$(cat "$T/out")" '"bibw_MBps"'
printf 'bytes,lat_us,bw_MBps\n8,0.5,100\n65536,5.0,10000\n' >"$T/peer.csv"
run "$PXRUN" -n 3 "$PXPERF" --sizes 8,65536 --iters 20 --csv --vs "$T/peer.csv"
check "px_perf --csv --vs on 3 ranks" [ "$rc" -eq 0 -a "$(grep -c '^8,' "$T/out")" -eq 1 ]
check "px_perf --vs adds the ratio columns" contains "$(head -1 "$T/out")" "vs_lat,vs_bw"
run "$PXRUN" -n 2 "$PXPERF" --sizes 8 --test nonsense
check "px_perf rejects an unknown test by name" contains "$(cat "$T/err")" "unknown test 'nonsense'"

# A rank SIGKILLed mid-exchange.
run "$PXRUN" -n 4 "$A2A" --rounds 100 --msgs 4 --max 1048576 --kill-rank 2 --kill-after 20
job=$(sed -n 's/^jobid=//p' "$T/out")
check "SIGKILL mid-exchange: pxrun exits non-zero" [ "$rc" -ne 0 ]
check "SIGKILL mid-exchange: pxrun (not the test's watchdog) ended the others" \
    contains "$(cat "$T/err")" "ending the other 3 ranks"
check "SIGKILL mid-exchange: the report names rank 2 and signal 9" \
    contains "$(cat "$T/err")" "rank 2 (pid"
check "SIGKILL mid-exchange: ... killed by signal 9" contains "$(cat "$T/err")" "killed by signal 9"
check "SIGKILL mid-exchange: the job id was printed" [ -n "$job" ]
check "SIGKILL mid-exchange: nothing of the job in /dev/shm or the session folder" leftovers "$job"

# A local peer that dies while the others wait in px_recv from it: btl/shm sees
# its segment lock released and the runtime fails the receives with
# PX_ERR_PEER_FAILED. The survivors ignore SIGTERM and pxrun's grace period is
# 60 s, so only btl/shm can end their wait (before, they waited for SIGKILL).
for how in kill exit; do
    run env PX_PXRUN_GRACE=60 "$PXRUN" -n 3 "$PROBE" peerdeath 1 $how
    check "peer death ($how) under pxrun: rank 0 reaches rank 1 over shm" \
        contains "$(cat "$T/out")" "rank 0: transport to rank 1: shm"
    check "peer death ($how) under pxrun: both survivors' px_recv fail with peer failed" \
        [ "$(grep -c 'recv from rank 1: peer process failed or disconnected after' "$T/out")" -eq 2 ]
    check "peer death ($how) under pxrun: btl/shm names the rank that is gone" \
        contains "$(cat "$T/err")" "local peer rank 1 (pid"
    check "peer death ($how) under pxrun: pxrun did not have to SIGKILL the survivors" \
        eval '! grep -q "sending SIGKILL" "$T/err"'
    grep -h 'after [0-9.]* s' "$T/out" | sed 's/^/# /'
done
if command -v mpirun >/dev/null; then
    root=()
    [ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
    run mpirun "${root[@]}" --oversubscribe -np 3 -x PX_MCA_mca_component_path="$B/.libs" \
        "$PROBE" peerdeath 1 kill
    check "peer death under mpirun: rank 0 reaches rank 1 over shm" \
        contains "$(cat "$T/out")" "rank 0: transport to rank 1: shm"
    check "peer death under mpirun: both survivors' px_recv fail with peer failed" \
        [ "$(grep -c 'recv from rank 1: peer process failed or disconnected after' "$T/out")" -eq 2 ]
    # A rank SIGKILLed in px_init before its peer attached its segment: the
    # launcher removes the segment, which boot/pmix registered for cleanup
    # (PMIX_REGISTER_CLEANUP), and the job's folder, empty by then, at the
    # job's end (registered for the namespace, PMIX_CLEANUP_EMPTY); nothing
    # else would (the peer never started).
    bk=$T/pmix-backing
    mkdir -p "$bk"
    timeout -s KILL 60 mpirun "${root[@]}" --oversubscribe -np 2 \
        -x PX_MCA_mca_component_path="$B/.libs" -x PX_MCA_btl_shm_backing_dir="$bk" \
        sh -c 'echo $$ >"$1.$OMPI_COMM_WORLD_RANK"; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && sleep 30; exec "$0" hold 0' \
        "$PROBE" "$T/mpid" >"$T/out" 2>"$T/err" </dev/null &
    mp=$!
    for _ in $(seq 400); do ls "$bk"/plexus-*/seg-0 >/dev/null 2>&1 && break; sleep 0.05; done
    made=$(ls "$bk"/plexus-*/seg-0 2>/dev/null)
    [ -n "$made" ] && kill -9 "$(cat "$T/mpid.0")"
    wait $mp
    check "mpirun, rank 0 killed in px_init: its segment was made" [ -n "$made" ]
    check "mpirun, rank 0 killed in px_init: the launcher removed its segment (PMIX_REGISTER_CLEANUP)" \
        [ -n "$made" -a ! -e "$made" ]
    check "mpirun, rank 0 killed in px_init: and the job's empty folder at the job's end" \
        [ -n "$made" -a ! -e "$(dirname "$made")" ]
else
    skip "peer death under mpirun" "mpirun is not installed"
    skip "mpirun, rank 0 killed in px_init: the launcher removes its segment" "mpirun is not installed"
    skip "mpirun, rank 0 killed in px_init: and the job's empty folder" "mpirun is not installed"
fi
tap_done
