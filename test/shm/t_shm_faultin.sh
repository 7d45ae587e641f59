#!/usr/bin/env bash
# btl/shm: when the rings' pages are faulted in (btl_shm_fault_in), and which
# path a message above the eager limit takes by its size
# (btl_shm_single_copy, btl_shm_single_copy_min), with every byte of every
# message checked (test/shm/shm_faultin): sizes around each line, page, the
# 64 KiB fault-in chunk, the eager limit and the single-copy threshold, the
# rings wrapped several times.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
FI=$B/test/shm/shm_faultin
PERF=$B/tools/px_perf/px_perf
need_built "$PXRUN" "$FI" "$PERF"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
run() { timeout -s KILL 180 "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }
# pages RANK WHEN in|out|total: from "rank R: WHEN ring pages present: in I of T, out O of T; ..."
pages() {
    sed -n "s/^rank $1: $2 ring pages present: in \([0-9]*\) of \([0-9]*\), out \([0-9]*\) of [0-9]*;.*/\1 \3 \2/p" "$T/out" |
        awk -v w="$3" '{ print (w == "in" ? $1 : w == "out" ? $2 : $3) }'
}
counters() { # RANK: "cma C declined D" after the traffic
    sed -n "s/^rank $1: after ring pages .*; \(cma [0-9]* declined [0-9]*\); split .*$/\1/p" "$T/out"
}
splits() { # RANK: "split S helped H" after the traffic
    sed -n "s/^rank $1: after ring pages .*; \(split [0-9]* helped [0-9]*\)$/\1/p" "$T/out"
}
ok_ranks() { # N: every rank of N said "faultin ok" and the job exited 0
    [ "$rc" -eq 0 ] && [ "$(grep -c '^rank [0-9]*: faultin ok' "$T/out")" -eq "$1" ]
}
few() { # IN OUT TOTAL: both below an eighth of a non-zero total
    [ -n "$3" ] && [ "$3" -gt 0 ] && [ -n "$1" ] && [ "$1" -lt $(($3 / 8)) ] && [ "$2" -lt $(($3 / 8)) ]
}
all() { # IN OUT TOTAL CMD...: both equal the non-zero total, and CMD succeeds
    [ -n "$3" ] && [ "$3" -gt 0 ] && [ "$1" = "$3" ] && [ "$2" = "$3" ] && shift 3 && "$@"
}
show() { [ "$rc" -eq 0 ] || { head -5 "$T/err"; head -8 "$T/out"; } | sed 's/^/# /'; }

# Lazy (the default): px_init leaves the rings alone (it faulted in all of
# them before: 8 MiB per process with 2, and `pxrun -n 8` started 2-3 times
# slower); traffic faults them in ahead of use and arrives intact.
for n in 2 4; do
    run "$PXRUN" -n $n "$FI" --passes 3
    check "lazy fault-in, $n ranks: every byte of every message arrives (rings wrapped 3 times)" ok_ranks $n
    show
    for r in 0 1; do
        tot=$(pages $r init total) in=$(pages $r init in) out=$(pages $r init out)
        check "lazy fault-in, $n ranks: rank $r's rings are not faulted in by px_init ($in and $out of $tot pages present)" \
            few "$in" "$out" "$tot"
    done
    # px_init reserves (posix_fallocate) the rings the peers write and the
    # fragment lists' first growth, not the own ring slot nor the rest of
    # the heap (6-10 MB per process that every process zeroed at startup)
    res=$(grep "^rank 0: segment " "$T/out")
    read -r seg got heap ring <<<"$(sed -n 's/^rank 0: segment \([0-9]*\) bytes, reserved \([0-9]*\), heap at \([0-9]*\), ring \([0-9]*\)$/\1 \2 \3 \4/p' <<<"$res")"
    check "$n ranks: px_init reserves the rings the peers write ($res)" \
        test -n "$ring" && test "$got" -ge $((heap - ring))
    check "$n ranks: ... but not the process's own ring slot nor the whole fragment heap" \
        test -n "$ring" && test "$got" -lt $((seg - ring))
    if [ $n = 2 ]; then
        tot=$(pages 0 after total)
        check "lazy fault-in: after a pass the rank's rings are all in ($(pages 0 after in), $(pages 0 after out) of $tot), the fault-in finished" \
            all "$(pages 0 after in)" "$(pages 0 after out)" "$tot" grep -q "^rank 0: after .*lazy fault-in done: yes" "$T/out"
    fi
done
# setup: the old way, every ring at px_init (what the lazy check above
# would have seen before).
run "$PXRUN" -n 2 --mca btl_shm_fault_in setup "$FI" --passes 2
check "btl_shm_fault_in=setup: traffic intact" ok_ranks 2
show
tot=$(pages 1 init total)
check "btl_shm_fault_in=setup: px_init faulted in every page of the rings ($(pages 1 init in), $(pages 1 init out) of $tot)" \
    all "$(pages 1 init in)" "$(pages 1 init out)" "$tot" true
run "$PXRUN" -n 2 --mca btl_shm_fault_in none "$FI" --passes 2
check "btl_shm_fault_in=none: traffic intact" ok_ranks 2
show
# Smaller rings (128 KiB: two fault-in chunks), wrapped many times.
run "$PXRUN" -n 2 --mca btl_shm_fbox_size 128K "$FI" --passes 40
check "lazy fault-in, 128 KiB rings wrapped 40 times: traffic intact" ok_ranks 2
show

# The path by size. Each rank receives each size of the list once (one cycle):
# 16433 and 65536 bytes are above the eager limit and below
# btl_shm_single_copy_min (pipelined fragments: the CMA read is declined),
# 65537 and 1 MiB at or above it, where CMA is cheaper by the estimates the
# test fixes (PX_BTL_SHM_TEST_SC_COST="CMA:FRAG" ns per KiB).
S=16432,16433,65536,65537,1048576
run "$PXRUN" -n 2 --mca btl_shm_single_copy auto --mca btl_shm_single_copy_min 65537 \
    -x PX_BTL_SHM_TEST_SC_COST=1:1000 "$FI" --cycles 1 --sizes $S
check "single copy auto, threshold 65537: data intact around the eager limit and the threshold" ok_ranks 2
show
for r in 0 1; do
    check "single copy auto: rank $r read 65537 and 1 MiB by CMA, 16433 and 65536 by fragments ($(counters $r))" \
        [ "$(counters $r)" = "cma 2 declined 2" ]
done
# By cost: CMA 100 ns per KiB per copier, a fragment's copy out 60: the
# pipeline (one fragment in, all out) costs 60 x (KiB + min(KiB, 64)). A
# read alone (no split: btl_shm_cma_split=0) wins up to 96 KiB: 16433 and
# 65537 bytes by CMA, 256 KiB and 1 MiB by fragments.
run "$PXRUN" -n 2 --mca btl_shm_single_copy auto --mca btl_shm_cma_split 0 \
    -x PX_BTL_SHM_TEST_SC_COST=100:60 "$FI" --cycles 1 --sizes 16433,65537,262144,1048576
check "single copy auto by cost: data intact" ok_ranks 2
show
check "single copy auto by cost, not split: 16433 and 65537 bytes by CMA, 256 KiB and 1 MiB by fragments ($(counters 1))" \
    [ "$(counters 1)" = "cma 2 declined 2" ]
# The same choice when the sender puts (runtime_rndv_protocol=put): a
# declined put sends the fragments unasked.
run "$PXRUN" -n 2 --mca btl_shm_single_copy auto --mca runtime_rndv_protocol put \
    -x PX_BTL_SHM_TEST_SC_COST=100:60 "$FI" --cycles 1 --sizes 16433,65537,262144,1048576
check "single copy auto by cost, put: data intact" ok_ranks 2
show
check "single copy auto by cost, put: 2 by CMA, 2 by fragments ($(counters 1))" \
    [ "$(counters 1)" = "cma 2 declined 2" ]
# The default is auto, with reads from 64 KiB split between both processes:
# such a read costs each of the two copiers half the message, 50 x KiB
# against 60 x (KiB + 64), so 256 KiB and 1 MiB go by CMA too (before
# issue 26's session 34 a split read was priced as one copier's: the
# pipeline's 2 of 4, and in a stream nearly every message).
run "$PXRUN" -n 2 -x PX_BTL_SHM_TEST_SC_COST=100:60 "$FI" --cycles 1 --sizes 16433,65537,262144,1048576
check "the default (auto, split): data intact" ok_ranks 2
show
check "the default (auto): a split read priced per copier, all 4 by CMA ($(counters 1))" [ "$(counters 1)" = "cma 4 declined 0" ]
# The same in a stream (px_perf bw --iters 2: 2 windows of 64 messages of 256 KiB, all
# in flight): CMA 150 ns per KiB per copier against a fragment's 100, the
# receiver (rank 1) reads every message by CMA; with btl_shm_cma_split=0
# (one copier) it sends every one by fragments.
stream() { # "cma N declined D" from rank 1's counts (btl_base_verbose 5 at finalize)
    sed -n 's/.*btl shm: single copies \([0-9]*\) (split.*, declined \([0-9]*\);.*/cma \1 declined \2/p' "$T/out" "$T/err" |
        sort | tail -1
}
run "$PXRUN" -n 2 --mca btl_base_verbose 5 -x PX_BTL_SHM_TEST_SC_COST=150:100 "$PERF" --test bw \
    --sizes 262144 --iters 2
check "auto in a stream of 256 KiB, CMA 1.5x a fragment's cost per copier: every message by CMA ($(stream))" \
    [ "$(stream)" = "cma 128 declined 0" ]
show
run "$PXRUN" -n 2 --mca btl_base_verbose 5 --mca btl_shm_cma_split 0 -x PX_BTL_SHM_TEST_SC_COST=150:100 \
    "$PERF" --test bw --sizes 262144 --iters 2
check "the same stream not split (one copier): every message by fragments ($(stream))" \
    [ "$(stream)" = "cma 0 declined 128" ]
show
# Measured (no fixed estimates): the receiver tries CMA first, then the
# pipeline, for each size class, and every 32nd message the path it did not
# choose; the data arrives either way.
run "$PXRUN" -n 2 --mca btl_shm_single_copy auto "$FI" --cycles 40 --sizes 40000,262144,1048577
check "single copy auto, measured: data intact over 40 rounds of 40000, 256 KiB, 1 MiB + 1" ok_ranks 2
show
both() { case "$(counters 0)" in "cma 0 "* | *" declined 0") return 1 ;; esac; }
check "single copy auto, measured: both paths were taken ($(counters 0))" both
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma "$FI" --cycles 1 --sizes $S
check "single copy cma: data intact" ok_ranks 2
check "single copy cma: every rendezvous by CMA ($(counters 0))" [ "$(counters 0)" = "cma 4 declined 0" ]
run "$PXRUN" -n 2 --mca btl_shm_single_copy none "$FI" --cycles 1 --sizes $S
check "single copy none: data intact" ok_ranks 2
check "single copy none: no CMA ($(counters 0))" [ "$(counters 0)" = "cma 0 declined 0" ]
# Split single copy (btl_shm_cma_split, 64 KiB by default): the receiver
# offers the copy to the sender and both copy chunks of it at once. Each rank
# receives each size once. With the hook "leave" the receiver copies no
# chunk itself, so every chunk is the sender's: 2 + 3 + 4 + 9 + 8 chunks of
# 32 KiB, 32 KiB, 64 KiB, 128 KiB and 512 KiB (a quarter of the message, an
# eighth above 1 MiB, at least 32 KiB); with "ignore" the sender never takes
# an offer and the receiver copies it all, then shuts the sender out.
SS=65535,65536,65537,262144,1048577,4194304
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma -x PX_BTL_SHM_TEST_SPLIT=leave "$FI" --cycles 1 --sizes $SS
check "split single copy, every chunk by the sender: data intact" ok_ranks 2
show
for r in 0 1; do
    check "split single copy, every chunk by the sender: rank $r split 5 reads, wrote 26 chunks ($(splits $r))" \
        [ "$(splits $r)" = "split 5 helped 26" ]
done
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma -x PX_BTL_SHM_TEST_SPLIT=ignore "$FI" --cycles 1 --sizes $SS
check "split single copy, the sender never helps: data intact" ok_ranks 2
show
check "split single copy, the sender never helps: rank 1 read all 5 ($(splits 1))" [ "$(splits 1)" = "split 5 helped 0" ]
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma "$FI" --cycles 3 --sizes $SS
check "split single copy, both copying: data intact over 3 rounds" ok_ranks 2
show
check "split single copy, both copying: 15 reads split ($(splits 0))" [ "$(splits 0 | cut -d" " -f1-2)" = "split 15" ]
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma --mca btl_shm_cma_split 0 "$FI" --cycles 1 --sizes $SS
check "btl_shm_cma_split=0: data intact" ok_ranks 2
check "btl_shm_cma_split=0: no split ($(splits 0), $(counters 0))" [ "$(splits 0)" = "split 0 helped 0" ]
# One-sided reads (the transfer engine: its gets carry PX_BTL_RDMA_FLAG_ASYNC,
# its callback may run from progress) are split with the region's owner: it
# waits in px_barrier, runs progress and, with the hook "leave" (the reader
# copies no chunk itself), copies every chunk: 2 of 32 KiB for 64 KiB, 8 of
# 512 KiB for 4 MiB; below btl_shm_cma_split (64 KiB) the reader copies
# alone. Then a px_allgather of 1 MiB each through coll/sm's single copy,
# whose btl_get/btl_put carry no flag: never split, hook or not (split, its
# reader would leave every chunk to the other and return before the copy
# was done; session 34's split of every flagless get failed each coll/sm
# collective reading 64 KiB or more: "the transport did not complete it at
# once").
XS=4096,65535,65536,4194304
CM=(--mca coll_base_allgather_sm_min 0 --mca coll_sm_single_copy auto)
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma "${CM[@]}" -x PX_BTL_SHM_TEST_SPLIT=leave "$FI" \
    --xfer 1 --sizes $XS --coll 1048576
xfer_ok() { [ "$rc" -eq 0 ] && [ "$(grep -c '^rank [0-9]*: xfer ok' "$T/out")" -eq 2 ]; }
own() { sed -n "s/^rank $1: chunks read ourselves \([0-9]*\), one-sided splits \([0-9]*\)$/own \1 xfer \2/p" "$T/out"; }
coll() { sed -n "s/^rank $1: coll ok: \(.*\)$/\1/p" "$T/out"; }
check "one-sided reads split with the region's owner: data intact" xfer_ok
show
check "one-sided reads split with the region's owner: 2 of 4 reads split ($(splits 0); $(own 0))" \
    [ "$(splits 0)" = "split 2 helped 0" ] && [ "$(own 0)" = "own 0 xfer 2" ]
check "one-sided reads split with the region's owner: it wrote all 10 chunks ($(splits 1))" \
    [ "$(splits 1)" = "split 0 helped 10" ]
check "coll/sm's single copy after them: both ranks' allgather intact ($(coll 0); $(coll 1))" \
    [ -n "$(coll 0)" ] && [ -n "$(coll 1)" ]
cc0=$(coll 0 | sed -n 's/^cma \([0-9]*\) split 0$/\1/p')
cc1=$(coll 1 | sed -n 's/^cma \([0-9]*\) split 0$/\1/p')
check "coll/sm's gets and puts went through btl/shm's CMA, none split" \
    [ -n "$cc0" ] && [ -n "$cc1" ] && [ $((cc0 + cc1)) -gt 0 ]
# An owner that never joins (the hook "ignore": busy elsewhere, or not in
# progress) never stalls the reader: it claims all 10 chunks itself and
# each read completes in the call.
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma -x PX_BTL_SHM_TEST_SPLIT=ignore "$FI" --xfer 1 --sizes $XS
check "one-sided reads, an owner that never joins: data intact" xfer_ok
check "one-sided reads, an owner that never joins: the reader copied all 10 chunks ($(splits 0); $(own 0); $(splits 1))" \
    [ "$(splits 0)" = "split 2 helped 0" ] && [ "$(own 0)" = "own 10 xfer 2" ] && [ "$(splits 1)" = "split 0 helped 0" ]
run "$PXRUN" -n 2 --mca btl_shm_single_copy cma --mca btl_shm_cma_split 0 "$FI" --xfer 1 --sizes $XS
check "one-sided reads, btl_shm_cma_split=0: data intact" xfer_ok
check "one-sided reads, btl_shm_cma_split=0: no split ($(splits 0), $(counters 0))" \
    [ "$(splits 0)" = "split 0 helped 0" ]
# The kernel refuses CMA (the probe fails): auto falls back to fragments for
# every size, quietly (it is the default), and the data arrives.
run "$PXRUN" -n 2 --mca btl_shm_single_copy auto --mca btl_shm_single_copy_min 65537 \
    -x PX_BTL_SHM_TEST_DENY_CMA=1 "$FI" --cycles 2 --sizes $S
check "CMA refused by the kernel, auto: data intact" ok_ranks 2
show
check "CMA refused by the kernel, auto: no CMA tried ($(counters 0))" [ "$(counters 0)" = "cma 0 declined 0" ]
check "CMA refused by the kernel, auto: no warning" [ ! -s "$T/err" ]

# Streaming (btl_shm_fbox_stream_max, 2112 by default): from the third send
# in a row to a peer with no message from it between, messages larger than
# that take eager fragments, not the fast box (a stream of 3-16 KiB messages
# moved 2x faster so, docs/shm.md); a ping-pong keeps the fast box up to
# btl_shm_fbox_max_send. 4 windows of 16 messages per size, each checked.
sent() { # RANK: "fbox F frag Q full U" of the stream
    sed -n "s/^rank $1: stream sent: \(.*\)$/\1/p" "$T/out"
}
nfrag() { sent "$1" | awk '{ print $4 }'; }
stream_ok() { [ "$rc" -eq 0 ] && [ "$(grep -c '^rank [01]: stream ok: 64 messages' "$T/out")" -eq 2 ]; }
run "$PXRUN" -n 2 "$FI" --stream 16 --sizes 4096
check "stream of 4 KiB messages: data intact" stream_ok
show
f=$(nfrag 0)
check "stream of 4 KiB messages: at least 56 of 64 as fragments ($(sent 0))" \
    [ -n "$f" ] && [ "$f" -ge 56 ]
check "stream: the receiver's 4 replies went through its fast box ($(sent 1))" \
    [ "$(sent 1)" = "fbox 4 frag 0 full 0" ]
run "$PXRUN" -n 2 "$FI" --stream 16 --sizes 2048
check "stream of 2 KiB messages (not above btl_shm_fbox_stream_max): all 64 through the fast box ($(sent 0))" \
    [ "$(sent 0)" = "fbox 64 frag 0 full 0" ]
run "$PXRUN" -n 2 --mca btl_shm_fbox_stream_max 0 "$FI" --stream 16 --sizes 4096
check "btl_shm_fbox_stream_max=0: a stream of 4 KiB messages all through the fast box ($(sent 0))" \
    [ "$(sent 0)" = "fbox 64 frag 0 full 0" ] && stream_ok
run "$PXRUN" -n 2 "$FI" --stream 1 --cycles 8 --sizes 4096,16384
check "windows of 1 (a ping-pong): every message through the fast box ($(sent 0))" \
    [ "$(sent 0)" = "fbox 16 frag 0 full 0" ]
tap_done
