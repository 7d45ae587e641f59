#!/usr/bin/env bash
# Dynamic peers' bad input and faults (issue 23, docs/peers.md), dyn_app
# processes started separately by this script (each px_init alone):
# - two processes that connect to each other at the same moment both finish
#   (each has two peers: the one px_connect gave, the one px_accept gives);
# - px_connect to oneself, px_accept without a listener or with nobody
#   connecting, two connections to one process: each a defined result;
# - a malformed contact, a port nobody listens on, an address that drops
#   packets (a network namespace made here), a contact of a process that
#   exited or of an older process on the same port, a listener that does not
#   progress: a clear error within peer_connect_timeout (the test's own
#   watchdog is three times that: no hang);
# - a listener out of descriptors (ulimit -n, every descriptor taken):
#   connectors are refused at once with the reason, it is logged once, the
#   process does not spin, and it serves again once descriptors are free;
# - 1,000 connect/echo/disconnect cycles over shm and over ofi: descriptors,
#   memfds, shared-memory files unchanged after a warm-up of 100, resident
#   memory within 256 KiB and the heap in use (mallinfo2) within 16 KiB, on
#   both sides; btl/ofi's address vector holds no
#   dynamic peer's address once all disconnected.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
app=$B/test/peer/dyn_app
need_built "$app"
export PX_MCA_mca_component_path=$B/.libs
T=$(mktemp -d)
pids=()
ns=
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
    [ -n "$KEEP" ] || rm -rf "$T"
}
trap cleanup EXIT
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
export PX_MCA_peer_secret_file=$T/secret
TO=2
export PX_MCA_peer_connect_timeout=$TO
WD=$((3 * TO + 10)) # the watchdog of one connection attempt

if timeout 60 "$app" contact 2>&1 | grep -q "built without libsodium"; then
    skip "dynamic peers' faults" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi
show() { sed 's/^/# /' "$@" | head -20; }

# ---- 1. mutual simultaneous connect
rm -f "$T/a.c" "$T/b.c"
timeout -s KILL 60 "$app" mutual "$T/a.c" "$T/b.c" >"$T/a.out" 2>"$T/a.err" </dev/null &
apid=$!
pids+=("$apid")
timeout -s KILL 60 "$app" mutual "$T/b.c" "$T/a.c" >"$T/b.out" 2>"$T/b.err" </dev/null
brc=$?
wait "$apid"
arc=$?
check "mutual connect: both processes connect to each other at once and finish (exit $arc, $brc)" \
    test "$arc" -eq 0 -a "$brc" -eq 0
[ "$arc" = 0 ] && [ "$brc" = 0 ] || show "$T/a.out" "$T/a.err" "$T/b.out" "$T/b.err"
check "mutual connect: each side has two peers and an echo went through both" \
    test "$(cat "$T/a.out" "$T/b.out" | grep -c 'echo through both peers ok')" -eq 2

# ---- 2. self, nobody, twice
timeout -s KILL 60 "$app" edge >"$T/edge.out" 2>"$T/edge.err" </dev/null
rc=$?
check "edge: ends cleanly (exit $rc)" test "$rc" -eq 0
out=$(cat "$T/edge.out")
err=$(cat "$T/edge.err")
check "px_accept without px_contact: a bad parameter" contains "$out" "accept without contact: bad parameter"
check "... saying to call px_contact first" contains "$err" "call px_contact first"
check "px_connect to its own contact: refused as a bad parameter" \
    contains "$out" "connect to self: bad parameter"
check "... saying it is this process's own listener" contains "$err" "own listener"
check "px_accept(0) with nobody connecting: a timeout" contains "$out" "accept nobody (0 s): timed out"
check "px_accept(0.5) with nobody connecting: a timeout" contains "$out" "accept nobody (0.5 s): timed out"
check "... and the listener is still the same" contains "$out" "contact again: success same"
grep . "$T/edge.out" | sed 's/^/# /'

rm -f "$T/tw.c"
timeout -s KILL 60 "$app" server "$T/tw.c" 2 >"$T/tw.srv" 2>&1 </dev/null &
spid=$!
pids+=("$spid")
timeout -s KILL 60 "$app" twice "$T/tw.c" >"$T/tw.out" 2>&1 </dev/null
rc=$?
wait "$spid"
src=$?
check "two connections to one process at once: two peers, each echoes its own message (client $rc, server $src)" \
    test "$rc" -eq 0 -a "$src" -eq 0
[ "$rc" = 0 ] || show "$T/tw.out" "$T/tw.srv"

# ---- 3. malformed, unreachable, stale, silent: an error within the bound
# attempt NAME CONTACT: connect once to CONTACT; sets rc, out
attempt() {
    printf '%s\n' "$2" >"$T/$1.contact"
    timeout -s KILL "$WD" "$app" connect-only "$T/$1.contact" >"$T/$1.out" 2>&1 </dev/null
    rc=$?
    out=$(cat "$T/$1.out")
}
attempt malformed "px-peer:1:127.0.0.1:99999:h:1:0123456789abcdef"
check "malformed contact: refused (exit $rc)" test "$rc" -eq 3
check "... naming the field and what is accepted" contains "$out" "field 4 (port)"
attempt garbage "hello"
check "a contact that is no contact: refused (exit $rc)" test "$rc" -eq 3
check "... saying what is accepted" contains "$out" "accepted: px-peer:1:"

# a port nobody listens on: take a free port from a listener that then exits
rm -f "$T/gone.c"
timeout -s KILL 60 "$app" server "$T/gone.c" 1 >"$T/gone.srv" 2>&1 </dev/null &
spid=$!
pids+=("$spid")
timeout -s KILL 60 "$app" cycles "$T/gone.c" 1 >/dev/null 2>&1 </dev/null
wait "$spid"
gone=$(cat "$T/gone.c")
attempt gone "$gone"
check "stale contact (its process exited, nobody listens there): refused (exit $rc)" test "$rc" -eq 3
check "... saying nobody listens there" contains "$out" "nobody listens there"
# a peer that left while nothing was pending with it: no message then (a
# departure is normal), but the first operation with it later fails and
# says who it was, once
rm -f "$T/late.c"
timeout -s KILL 60 "$app" late "$T/late.c" >"$T/late.out" 2>"$T/late.err" </dev/null &
lpid=$!
pids+=("$lpid")
timeout -s KILL 60 "$app" connect-only "$T/late.c" >"$T/late.cli" 2>&1 </dev/null
wait "$lpid"
rc=$?
check "a send to a peer that left with nothing pending fails (exit $rc)" \
    grep -q "^late send: peer process failed" "$T/late.out"
check "... and the error names the peer and says it is gone" \
    grep -q "an operation with peer [0-9]* (host .*, pid [0-9]*.*is gone" "$T/late.err"
[ "$rc" = 3 ] || sed 's/^/# late: /' "$T/late.out" "$T/late.err" "$T/late.cli"
# a new process on the same port: another instance
port=$(echo "$gone" | cut -d: -f4)
rm -f "$T/new.c"
PX_MCA_peer_listen_port=$port timeout -s KILL 60 "$app" server "$T/new.c" 1 >"$T/new.srv" 2>&1 </dev/null &
spid=$!
pids+=("$spid")
for _ in $(seq 1 200); do [ -s "$T/new.c" ] && break; sleep 0.05; done
attempt stale "$gone"
check "stale contact (a new process on its port $port): refused (exit $rc)" test "$rc" -eq 3
check "... saying stale contact" contains "$out" "stale contact"
# a listener that does not progress (stopped): the handshake's bound
new=$(cat "$T/new.c")
stopped=$(pgrep -P "$spid") # dyn_app, below timeout
stop_proc $stopped
attempt stopped "$new"
check "a listener that does not progress (SIGSTOP): an error, no hang (exit $rc)" test "$rc" -eq 3
check "... naming the bound ($TO s, peer_connect_timeout)" contains "$out" "within $TO s (peer_connect_timeout)"
kill -CONT $stopped
timeout -s KILL 60 "$app" cycles "$T/new.c" 1 >/dev/null 2>&1 </dev/null
wait "$spid"
# an address that drops packets: a dummy device in a network namespace
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
    skip "an address that drops packets" "needs root and ip(8) for a network namespace"
elif ! ip netns add "pxconn$$" 2>"$T/ns.err"; then
    skip "an address that drops packets" "ip netns add failed: $(head -1 "$T/ns.err")"
else
    # a veth pair inside it: 10.251.0.2 is on the link, its (made up)
    # hardware address is fixed, so SYNs go out and the other end, which has
    # no address and is not that hardware address, drops them
    ns=pxconn$$
    ip -n "$ns" link set lo up
    ip -n "$ns" link add v0 type veth peer name v1
    ip -n "$ns" addr add 10.251.0.1/24 dev v0
    ip -n "$ns" link set v0 up
    ip -n "$ns" link set v1 up
    ip -n "$ns" neigh add 10.251.0.2 lladdr 02:00:00:fb:00:02 dev v0 nud permanent
    printf '%s\n' "px-peer:1:10.251.0.2:40123:ghost:4242:0123456789abcdef" >"$T/drop.contact"
    timeout -s KILL "$WD" ip netns exec "$ns" "$app" connect-only "$T/drop.contact" >"$T/drop.out" 2>&1 </dev/null
    rc=$?
    out=$(cat "$T/drop.out")
    check "an address that drops packets: an error, no hang (exit $rc)" test "$rc" -eq 3
    check "... naming the bound ($TO s, peer_connect_timeout)" contains "$out" "did not answer within $TO s (peer_connect_timeout)"
    ip netns del "$ns"
    ns=
fi

# ---- 5. a listener out of descriptors
rm -f "$T/hog.c" "$T/hog.c.go"
(ulimit -n 256 && exec timeout -s KILL 120 "$app" fdhog "$T/hog.c") >"$T/hog.out" 2>"$T/hog.err" </dev/null &
hpid=$!
pids+=("$hpid")
for _ in $(seq 1 400); do grep -q "fdhog: holding" "$T/hog.out" && break; sleep 0.05; done
grep "fdhog: holding" "$T/hog.out" | sed 's/^/# /'
refused=0
for i in 1 2 3; do
    timeout -s KILL "$WD" "$app" connect-only "$T/hog.c" >"$T/hog.c$i" 2>&1 </dev/null
    grep -q "out of file descriptors" "$T/hog.c$i" && refused=$((refused + 1))
done
check "listener out of descriptors: 3 connectors refused at once, saying so ($refused of 3)" test "$refused" -eq 3
[ "$refused" = 3 ] || show "$T/hog.c1"
touch "$T/hog.c.go"
for _ in $(seq 1 400); do grep -q "out of descriptors for" "$T/hog.out" && break; sleep 0.05; done
timeout -s KILL 60 "$app" cycles "$T/hog.c" 1 >"$T/hog.cy" 2>&1 </dev/null
rc=$?
check "... once it has descriptors again, a connection works (exit $rc)" test "$rc" -eq 0
wait "$hpid"
src=$?
check "... and the listener's process ends cleanly (exit $src)" test "$src" -eq 0
[ "$src" = 0 ] || show "$T/hog.out" "$T/hog.err"
check "... it logged it once ($(grep -c 'cannot accept connections' "$T/hog.err") times)" \
    test "$(grep -c 'cannot accept connections' "$T/hog.err")" -eq 1
grep -m1 'cannot accept' "$T/hog.err" | cut -c1-300 | sed 's/^/# /'
line=$(grep 'out of descriptors for' "$T/hog.out")
echo "# $line"
set -- $line
# "fdhog: out of descriptors for W s wall, C s cpu, ...": a spinning loop uses
# a core (CPU time near the wall time); waiting uses almost none
check "... and did not spin meanwhile (cpu $9 s of $6 s)" awk -v w="$6" -v c="$9" 'BEGIN { exit !(c < w / 10) }'

# ---- 4. 1,000 cycles: nothing left behind
# usage LINE: "WHO usage WHEN: fds F memfds M shm S rss_kib R"
field() { grep "$1 usage $2" "$3" | sed -n "s/.* $4 \([0-9-]*\).*/\1/p"; }
# the transports' shared-memory folder is one of this test's (others' jobs
# use /dev/shm meanwhile); dyn_app counts its entries
mkdir -p "$T/shm"
export PX_MCA_btl_shm_backing_dir=$T/shm DYN_APP_SHM_DIR=$T/shm
cycles() {
    local n=$1 N=1000
    rm -f "$T/$n.cyc"
    timeout -s KILL 600 "$app" server "$T/$n.cyc" $N >"$T/$n.srv" 2>&1 </dev/null &
    local spid=$!
    pids+=("$spid")
    timeout -s KILL 600 "$app" cycles "$T/$n.cyc" $N >"$T/$n.cli" 2>&1 </dev/null
    local rc=$?
    wait "$spid"
    local src=$?
    check "$n: $N connect/echo/disconnect cycles, both sides end cleanly (client $rc, server $src)" \
        test "$rc" -eq 0 -a "$src" -eq 0
    [ "$rc" = 0 ] || show "$T/$n.cli"
    local who f a b
    for who in client server; do
        local log=$T/$n.cli
        [ $who = server ] && log=$T/$n.srv
        grep "$who usage" "$log" | sed 's/^/# /'
        for f in fds memfds shm; do
            a=$(field $who "after warm-up" "$log" $f)
            b=$(field $who "after the last" "$log" $f)
            check "$n: $who's $f after 100 cycles and after $N are the same ($a, $b)" test -n "$a" -a "$a" = "${b:-x}"
        done
        if [ -n "${PX_TEST_SANITIZER:-}" ]; then
            # ASan keeps freed memory in its quarantine (resident memory
            # grows) and has its own allocator (mallinfo2 says 0):
            # LeakSanitizer checks for leaks at exit instead.
            echo "# $n: $who's memory not compared under a sanitizer (LeakSanitizer checks leaks)"
        else
            a=$(field $who "after warm-up" "$log" rss_kib)
            b=$(field $who "after the last" "$log" rss_kib)
            check "$n: $who's resident memory grew at most 256 KiB over 900 cycles ($a -> $b KiB)" \
                test -n "$a" -a -n "$b" -a $((${b:-0} - ${a:-0})) -le 256
            a=$(field $who "after warm-up" "$log" heap)
            b=$(field $who "after the last" "$log" heap)
            check "$n: $who's heap in use grew at most 16 KiB over 900 cycles ($a -> $b bytes)" \
                test -n "$a" -a -n "$b" -a $((${b:-0} - ${a:-0})) -le 16384
        fi
        [ "$n" = ofi ] || continue
        # btl/ofi (btl_ofi_verbose 10) counts dynamic peers' addresses in its
        # address vector at each removal
        local av=$(grep -o "address vector: [0-9]*" "$log" | awk '{print $3}')
        local cnt=$(echo "$av" | grep -c .) last=$(echo "$av" | tail -1) max=$(echo "$av" | sort -n | tail -1)
        check "$n: $who removed $N dynamic peers from btl/ofi's address vector ($cnt), none left ($last), at most 1 at once ($max)" \
            test "$cnt" -eq $N -a "$last" = 0 -a "${max:-9}" -le 1
    done
}
cycles shm
export PX_MCA_btl=self,ofi PX_MCA_btl_ofi_verbose=10
if ! timeout 60 "$app" contact >"$T/ofi.probe" 2>&1; then
    show "$T/ofi.probe"
    skip "ofi: 1,000 cycles" "btl/ofi offers no module on this machine"
else
    cycles ofi
fi
tap_done
