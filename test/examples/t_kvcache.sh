#!/usr/bin/env bash
# examples/kvcache (README.md there): install Plexus into a staging root,
# build the example's writer (kv_prefill) and reader (kv_decode) out of tree
# with its Makefile, and run them as separate processes (no launcher) that
# meet through the registry:
#  - over redis (a redis-server of the test's own on a random port): two
#    writers, a reader listing the model's prefix reads every block with
#    batches and checks every checksum; writer 1 is killed: the reader names
#    each of its blocks in a line and reads on with writer 2's; redis is
#    restarted empty: the reader reads on, writer 2's names are in redis
#    again after one heartbeat and a new reader opens them all; writer 1's
#    names are gone (expired) from the store; writer 1 started again (another
#    generation) publishes them again and the reader reads them again.
#  - over p2p (no service): two writers write their qualified names to files,
#    the reader reads them, writer 1 is killed, the reader names its blocks
#    and reads on.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/example.sh"
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
# wait_for TEXT FILE [SECONDS]: until FILE holds TEXT (default 30 s)
wait_for() {
    local n=$((${3:-30} * 20))
    for _ in $(seq 1 $n); do
        grep -qF -- "$1" "$2" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
# count TEXT FILE: lines of FILE holding TEXT
count() { grep -cF -- "$1" "$2" 2>/dev/null || true; }
# reports_after LINE FILE REGEX: report lines of FILE after its first LINE lines
# that match REGEX (extended)
reports_after() { tail -n +"$(($1 + 1))" "$2" 2>/dev/null | grep -cE -- "$3" || true; }
# wait_reports LINE FILE REGEX N [SECONDS]: until N such lines (default 30 s)
wait_reports() {
    local n=$((${5:-30} * 20))
    for _ in $(seq 1 $n); do
        [ "$(reports_after "$1" "$2" "$3")" -ge "$4" ] && return 0
        sleep 0.05
    done
    return 1
}

example_build kvcache kv_prefill kv_decode
example_secret
export LD_LIBRARY_PATH=$libdir
# the plugins of the staging root (the library looks in its configured
# folder, which the staging root is not)
plugdir=$(find "$dest" -type d -path '*/lib/plexus' | head -1)
[ -n "$plugdir" ] && export PX_MCA_mca_component_path=$plugdir
info=$(find "$dest" -type f -name px_info -path '*/bin/*' | head -1)
# a short lease, so a killed writer's names expire within the test
export PX_MCA_registry_lease=3 PX_MCA_registry_heartbeat=1 PX_MCA_registry_namespace=t_kvcache_$$
if timeout 60 "$PX_BUILD/test/peer/dyn_app" contact 2>&1 | grep -q "built without libsodium"; then
    skip "the example" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi
W=$tmp/ex/kv_prefill
R=$tmp/ex/kv_decode

# ---- redis ----
redis_up() { # start redis-server on $rport, empty, no persistence
    redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no >"$tmp/redis.$1.log" 2>&1 </dev/null &
    rpid=$!
    pids+=("$rpid")
    for _ in $(seq 1 100); do
        redis-cli -p "$rport" ping 2>/dev/null | grep -q PONG && return 0
        sleep 0.05
    done
    return 1
}
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    skip "redis: writers and readers over registry/redis" \
        "no redis-server/redis-cli (scripts/deps.sh installs redis-server)"
elif ! "$info" 2>/dev/null | grep -q "MCA registry: redis"; then
    skip "redis: writers and readers over registry/redis" \
        "registry/redis is not built (configure found no hiredis: install libhiredis-dev, configure again)"
else
    up=0
    for _ in 1 2 3 4 5; do
        rport=$((20000 + RANDOM % 30000))
        redis_up 1 && { up=1; break; }
        kill -9 "$rpid" 2>/dev/null
    done
    check "redis-server started on port $rport" test $up = 1
    export PX_MCA_registry=redis PX_MCA_registry_redis_endpoints=127.0.0.1:$rport
    "$W" --model t --writer 1 --blocks 4 --block-size 256k >"$tmp/w1.out" 2>"$tmp/w1.err" </dev/null &
    w1=$!
    pids+=("$w1")
    "$W" --model t --writer 2 --blocks 4 --block-size 256k --generation 7 \
        >"$tmp/w2.out" 2>"$tmp/w2.err" </dev/null &
    w2=$!
    pids+=("$w2")
    wait_for "serving" "$tmp/w1.out" && wait_for "serving" "$tmp/w2.out"
    check "redis: both writers published 4 blocks each" \
        grep -q "published 4 blocks of 262144 bytes.*registry redis" "$tmp/w1.out" "$tmp/w2.out"
    # The reader runs until the test stops it (SIGTERM: it ends as at the end of
    # its duration, printing its summary); the duration only bounds it.
    "$R" --list kv/t/ --wait-names 8 --duration 120 --refresh 0.5 --batch 3 \
        >"$tmp/r1.out" 2>"$tmp/r1.err" </dev/null &
    r1=$!
    pids+=("$r1")
    wait_for "checksum errors" "$tmp/r1.out"
    check "redis: the reader listed kv/t/ and opened the 8 names" \
        grep -q "decode: 8 names open (registry redis)" "$tmp/r1.out"
    check "redis: ... and read blocks at a rate (blocks/s and GB/s)" \
        grep -Eq "decode: [0-9]+ blocks/s, [0-9]+\.[0-9]+ GB/s; 8 names open, 0 lost, 0 checksum errors" "$tmp/r1.out"
    kill -9 "$w1"
    wait "$w1" 2>/dev/null
    for _ in $(seq 1 200); do
        [ "$(count "decode: lost kv/t/1/" "$tmp/r1.out")" -ge 4 ] && break
        sleep 0.05
    done
    lost=$(grep "decode: lost kv/t/" "$tmp/r1.out")
    printf '%s\n' "$lost" | head -2 | cut -c1-300 | sed 's/^/# /'
    check "redis: writer 1 killed: the reader names each of its 4 blocks in a line" \
        test "$(count "decode: lost kv/t/1/" "$tmp/r1.out")" -eq 4
    check "... and none of writer 2's" test "$(count "decode: lost kv/t/2/" "$tmp/r1.out")" -eq 0
    [ "$(count "decode: lost kv/t/2/" "$tmp/r1.out")" -eq 0 ] ||
        grep "decode: lost kv/t/2/" "$tmp/r1.out" | cut -c1-600 | sed 's/^/# /'
    check "... each with the reason, naming the writer (pid $w1)" \
        test "$(printf '%s\n' "$lost" | grep -c "pid $w1")" -eq 4
    check "... and goes on with the others" wait_for "4 names open, 4 lost, 0 checksum errors" "$tmp/r1.out" 10
    # writer 1's lease (3 s) expires: its names leave the store
    for _ in $(seq 1 100); do
        [ "$(redis-cli -p "$rport" --scan --pattern "*kv/t/1/*" | wc -l)" = 0 ] && break
        sleep 0.1
    done
    check "redis: the killed writer's names expired from the store" \
        test "$(redis-cli -p "$rport" --scan --pattern "*kv/t/1/*" | wc -l)" = 0
    check "... while the live writer's are there" \
        test "$(redis-cli -p "$rport" --scan --pattern "*kv/t/2/*" | wc -l)" = 4
    # restart redis empty
    kill -9 "$rpid"
    wait "$rpid" 2>/dev/null
    sleep 1
    redis_up 2
    check "redis restarted (empty) on the same port" \
        test "$(redis-cli -p "$rport" dbsize)" -lt 4
    mark=$(wc -l <"$tmp/r1.out")
    for _ in $(seq 1 60); do # one heartbeat (1 s) and some room on a loaded machine
        [ "$(redis-cli -p "$rport" --scan --pattern "*kv/t/2/*" | wc -l)" = 4 ] && break
        sleep 0.1
    done
    check "redis: the live writer filled the restarted store again (4 names)" \
        test "$(redis-cli -p "$rport" --scan --pattern "*kv/t/2/*" | wc -l)" = 4
    timeout 60 "$R" --list kv/t/ --wait-names 4 --duration 1 >"$tmp/r2.out" 2>"$tmp/r2.err" </dev/null
    r2rc=$?
    check "redis: after the restart a new reader opens the 4 names and reads them (exit $r2rc)" \
        grep -q "decode: 4 names open (registry redis)" "$tmp/r2.out"
    check "... with every checksum good" test $r2rc -eq 0
    grep -q "done:.* 0 checksum errors" "$tmp/r2.out" || sed 's/^/# /' "$tmp/r2.out" "$tmp/r2.err" | tail -10
    # (a report once a second: wait for one, up to 10 s, rather than a fixed 1.5 s)
    check "redis: the first reader read on across the restart" \
        wait_reports "$mark" "$tmp/r1.out" 'decode: [1-9][0-9]* blocks/s, .*4 names open, 4 lost, 0 checksum errors' 1 10
    # writer 1 started again, another generation: the reader opens its names again
    "$W" --model t --writer 1 --blocks 4 --block-size 256k --generation 2 \
        >"$tmp/w1b.out" 2>"$tmp/w1b.err" </dev/null &
    w1b=$!
    pids+=("$w1b")
    for _ in $(seq 1 300); do
        [ "$(count "decode: kv/t/1/" "$tmp/r1.out")" -ge 4 ] && break
        sleep 0.05
    done
    check "redis: writer 1 started again: the reader opens its 4 names again" \
        test "$(grep -c "decode: kv/t/1/[0-3] is back" "$tmp/r1.out")" -eq 4
    # Two reports after the names came back: the second covers a whole second
    # of reads with all 8 open.
    back=$(grep -n "decode: kv/t/1/[0-3] is back" "$tmp/r1.out" | tail -1 | cut -d: -f1)
    check "... and reads all 8 with good checksums (the new generation's pattern)" \
        wait_reports "${back:-0}" "$tmp/r1.out" 'decode: [1-9][0-9]* blocks/s, .*8 names open, 0 lost, 0 checksum errors' 2 10
    kill -TERM "$r1"
    wait "$r1"
    r1rc=$?
    check "redis: the reader ended cleanly (exit $r1rc), 0 checksum errors, no name lost at the end" \
        grep -Eq "decode: done: [1-9][0-9]* blocks read .* 0 checksum errors; 0 names lost" "$tmp/r1.out"
    kill -TERM "$w1b"
    wait "$w1b"
    test "$r1rc" = 0 || sed 's/^/# /' "$tmp/r1.out" "$tmp/r1.err" | tail -15
    kill -TERM "$w2"
    wait "$w2"
    w2rc=$?
    check "redis: writer 2 stopped on SIGTERM, unpublishing its names (exit $w2rc)" \
        grep -q "stopped; unpublished 4 names" "$tmp/w2.out"
    check "... and they are gone from the store" \
        test "$(redis-cli -p "$rport" --scan --pattern "*kv/t/*" | wc -l)" = 0
    kill -9 "$rpid" 2>/dev/null
    unset PX_MCA_registry_redis_endpoints
fi

# ---- p2p ----
export PX_MCA_registry=p2p
"$W" --model p --writer 1 --blocks 4 --block-size 128k --names-file "$tmp/p1.names" \
    >"$tmp/p1.out" 2>"$tmp/p1.err" </dev/null &
p1=$!
pids+=("$p1")
"$W" --model p --writer 2 --blocks 4 --block-size 128k --names-file "$tmp/p2.names" \
    >"$tmp/p2.out" 2>"$tmp/p2.err" </dev/null &
p2=$!
pids+=("$p2")
wait_for "serving" "$tmp/p1.out" && wait_for "serving" "$tmp/p2.out"
check "p2p: both writers published, their names qualified with their address" \
    grep -Eq "^[0-9.]+:[0-9]+/kv/p/1/0$" "$tmp/p1.names"
sed 's/^/# /' "$tmp/p1.names" | head -1
# (stopped by SIGTERM once it read on after the kill; the duration only bounds it)
"$R" --names-file "$tmp/p1.names" --names-file "$tmp/p2.names" --wait-names 8 --duration 60 \
    --refresh 0.5 >"$tmp/q.out" 2>"$tmp/q.err" </dev/null &
q=$!
pids+=("$q")
wait_for "checksum errors" "$tmp/q.out"
check "p2p: the reader opened the 8 names and read them with good checksums" \
    grep -Eq "decode: [0-9]+ blocks/s, [0-9]+\.[0-9]+ GB/s; 8 names open, 0 lost, 0 checksum errors" "$tmp/q.out"
kill -9 "$p1"
wait "$p1" 2>/dev/null
# Two reports after the 4 losses: the second covers a whole second of reads
# of writer 2's blocks alone.
wait_for_lost() {
    for _ in $(seq 1 400); do
        [ "$(count "decode: lost " "$tmp/q.out")" -ge 4 ] && return 0
        sleep 0.05
    done
    return 1
}
wait_for_lost
lostline=$(grep -n "decode: lost " "$tmp/q.out" | tail -1 | cut -d: -f1)
wait_reports "${lostline:-0}" "$tmp/q.out" 'decode: [1-9][0-9]* blocks/s, .*4 names open, 4 lost, 0 checksum errors' 2 20
kill -TERM "$q" 2>/dev/null
wait "$q"
qrc=$?
check "p2p: writer 1 killed: the reader names each of its 4 blocks in a line, none of writer 2's" \
    test "$(count "decode: lost " "$tmp/q.out")" -eq 4 -a "$(grep -c "decode: lost [0-9.]*:[0-9]*/kv/p/1/" "$tmp/q.out")" -eq 4
grep "decode: lost" "$tmp/q.out" | head -1 | cut -c1-300 | sed 's/^/# /'
[ "$(count "decode: lost " "$tmp/q.out")" -eq 4 ] ||
    grep -E "decode: (lost|.* is back)" "$tmp/q.out" | cut -c1-400 | sed 's/^/# /'
check "p2p: the reader went on and ended cleanly (exit $qrc), 0 checksum errors, 4 names lost" \
    grep -Eq "decode: done: [1-9][0-9]* blocks read .* 0 checksum errors; 4 names lost" "$tmp/q.out"
check "... reading writer 2's blocks after the kill" \
    grep -q "4 names open, 4 lost, 0 checksum errors" "$tmp/q.out"
test "$qrc" = 0 || sed 's/^/# /' "$tmp/q.out" "$tmp/q.err" | tail -15
kill -TERM "$p2"
wait "$p2"
check "p2p: writer 2 stopped on SIGTERM" grep -q "stopped; unpublished 4 names" "$tmp/p2.out"
tap_done
