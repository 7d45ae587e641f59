#!/usr/bin/env bash
# px_xfer_bench (docs/px_xfer_bench.md): short runs whose output must be
# well formed (the result line's fields are there and are numbers, the path
# is named), in rank mode (pxrun -n 2) for read and write with two threads,
# and against a target found by name under registry/p2p (the open and
# first-byte times reported); bad options are refused with exit 2 and a
# message saying what is accepted. No time is asserted.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/peers.sh"
B=$PX_BUILD
BENCH=$B/tools/px_xfer_bench/px_xfer_bench
PXRUN=$B/tools/pxrun/pxrun
need_built "$BENCH" "$PXRUN"
peers_setup
export PX_MCA_registry_namespace=t_px_xfer_bench_$$

# well_formed FILE MODE: FILE has one result line of MODE whose numeric fields parse
well_formed() {
    local l
    l=$(grep "^px_xfer_bench: mode=$2 " "$1") || { sed 's/^/# /' "$1" | tail -5; return 1; }
    [ "$(printf '%s\n' "$l" | wc -l)" = 1 ] || return 1
    local f
    for f in block batch threads ops; do
        printf '%s\n' "$l" | grep -Eq " $f=[0-9]+( |$)" || { echo "# no integer $f= in: $l"; return 1; }
    done
    for f in duration gbps ops_per_s; do
        printf '%s\n' "$l" | grep -Eq " $f=[0-9]+(\.[0-9]+)?( |$)" || { echo "# no number $f= in: $l"; return 1; }
    done
    printf '%s\n' "$l" | grep -Eq " path=[a-z]+:[a-z]+" || { echo "# no path= in: $l"; return 1; }
    grep -Eq "^Test completed: duration [0-9.]+, batch count [0-9]+, throughput [0-9.]+ GB/s$" "$1"
}

timeout -s KILL 120 "$PXRUN" -n 2 "$BENCH" --ranks --op read --block-size 64k --batch-size 8 \
    --duration 0.3 --buffer-size 1M >"$T/r.out" 2>&1
check "ranks, read: exit 0 and a well-formed result line" \
    bash -c "test $? = 0 && $(declare -f well_formed); well_formed '$T/r.out' ranks"
check "... the fields say what was asked" \
    grep -q "mode=ranks op=read block=65536 batch=8 threads=1 mem=alloc" "$T/r.out"
timeout -s KILL 120 "$PXRUN" -n 2 "$BENCH" --ranks --op write --block-size 4096 --batch-size 4 \
    --threads 2 --mem reg --duration 0.3 >"$T/w.out" 2>&1
check "ranks, write, 2 threads, registered memory: exit 0 and a well-formed result line" \
    bash -c "test $? = 0 && $(declare -f well_formed); well_formed '$T/w.out' ranks"
check "... the fields say what was asked" \
    grep -q "mode=ranks op=write block=4096 batch=4 threads=2 mem=reg" "$T/w.out"

# named: a target published under registry/p2p, an initiator started separately
export PX_MCA_registry=p2p
"$BENCH" --mode target --publish bench/t --buffer-size 1M --name-file "$T/name" \
    >"$T/tgt.out" 2>&1 </dev/null &
tp=$!
pids+=("$tp")
for _ in $(seq 1 600); do [ -s "$T/name" ] && break; sleep 0.05; done
check "named: the target published its region and wrote the name to open" test -s "$T/name"
timeout -s KILL 120 "$BENCH" --target "$(cat "$T/name" 2>/dev/null)" --block-size 64k \
    --batch-size 8 --duration 0.3 >"$T/n.out" 2>&1
check "named (p2p): exit 0 and a well-formed result line" \
    bash -c "test $? = 0 && $(declare -f well_formed); well_formed '$T/n.out' named"
check "... with the registry and the open and first-byte times" \
    grep -Eq " registry=p2p open_ms=[0-9.]+ first_byte_ms=[0-9.]+ target=" "$T/n.out"
kill -TERM "$tp"
wait "$tp"
check "the target ends on SIGTERM (exit $?)" test $? = 0
# The same over btl/ofi: libfabric installed a SIGTERM handler of its own
# (cleanup, then exit(1)) while px_init loaded it, so the target's handler
# never ran: it ended with 1 without unpublishing (under redis its name
# stayed for a lease). px_init gives the application's handlers back.
if [ -e "$B/.libs/plexus_btl_ofi.so" ]; then
    rm -f "$T/name"
    env PX_MCA_btl=self,ofi "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm" "$BENCH" --mode target \
        --publish bench/o --buffer-size 1M --name-file "$T/name" >"$T/tgo.out" 2>&1 </dev/null &
    tp=$!
    pids+=("$tp")
    for _ in $(seq 1 600); do [ -s "$T/name" ] && break; sleep 0.05; done
    check "over btl/ofi: the target published its region" test -s "$T/name"
    kill -TERM "$tp"
    wait "$tp"
    rc=$?
    check "over btl/ofi: the target's own SIGTERM handler runs, it ends with exit 0 ($rc)" test $rc = 0
    [ $rc = 0 ] || sed 's/^/# /' "$T/tgo.out" | tail -5
else
    skip "the target's SIGTERM over btl/ofi" "btl/ofi is not built (configured without libfabric-dev)"
fi
timeout 60 "$BENCH" --target bench/absent --duration 0.1 >"$T/miss.out" 2>&1
mrc=$?
check "a name nobody published: exit 1, the name in the message" \
    bash -c "test $mrc = 1 && grep -q 'px_name_open(bench/absent) failed' '$T/miss.out'"
unset PX_MCA_registry

# bad options: exit 2 and what is accepted
for bad in "--op swap|read or write" "--block-size 12q|not a byte count" \
    "--batch-size 0|whole number in 1..65536" "--mode both|target or initiator" \
    "--duration -1|more than 0" "--frobnicate 1|unknown option"; do
    opt=${bad%%|*}
    want=${bad#*|}
    # shellcheck disable=SC2086
    "$BENCH" --ranks $opt >"$T/bad.out" 2>&1
    rc=$?
    check "$opt: refused with exit 2 ($rc), saying '$want'" \
        bash -c "test $rc = 2 && grep -q -- '$want' '$T/bad.out'"
done
"$BENCH" >"$T/none.out" 2>&1
check "no target: refused with exit 2, naming --target and --ranks" \
    bash -c "test $? = 2 && grep -q -- '--target NAME' '$T/none.out'"
tap_done
