#!/usr/bin/env bash
# Dynamic peers through the public API (px_contact, px_connect, px_accept,
# px_disconnect; docs/peers.md) between dyn_app processes started separately
# by this script (each px_init alone: no launcher), with a 0600 secret file:
# tagged messages both ways (eager and rendezvous sizes, checksummed), a
# wildcard receive, disconnect and reconnect (a new id each time), a peer
# killed while the other receives from it (the receive fails, the error names
# it, the survivor serves the next connection), a wrong secret refused, a
# rank started by pxrun on either side, 200 cycles without a descriptor
# left behind. Over
# shm (the default btl list: same host) and over ofi (PX_MCA_btl=self,ofi).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
app=$B/test/peer/dyn_app
need_built "$app"
. "$PX_SRC/test/lib/peers.sh"
peers_setup
head -c 32 /dev/urandom | base64 >"$T/other" # a secret the server does not hold

if timeout 60 "$app" contact 2>&1 | grep -q "built without libsodium"; then
    skip "dynamic peers" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi

# scenario NAME: the whole story over the btl list in $PX_MCA_btl (or the default)
scenario() {
    local n=$1 c=$T/$1.contact
    rm -f "$c"
    timeout -s KILL 240 "$app" server "$c" 5 >"$T/$n.srv" 2>"$T/$n.srv.err" </dev/null &
    local spid=$!
    pids+=("$spid")
    # two connections in a row from one process: messages, wildcard, disconnect, reconnect
    timeout -s KILL 120 "$app" client "$c" 2 >"$T/$n.c1" 2>&1 </dev/null
    local rc=$?
    check "$n: client connects twice, echoes 0 B .. 4 MiB with checksums and a wildcard exchange (exit $rc)" \
        test "$rc" -eq 0
    [ "$rc" = 0 ] || sed 's/^/# /' "$T/$n.c1" "$T/$n.srv" "$T/$n.srv.err" | head -30
    check "$n: each connection is a new peer id" \
        test "$(grep -o 'peer [0-9]* over' "$T/$n.c1" | sort -u | wc -l)" -eq 2
    grep 'over' "$T/$n.c1" | sed 's/^/# /'
    # a peer killed while the server receives from it
    "$app" hold "$c" >"$T/$n.hold" 2>&1 </dev/null &
    local hpid=$!
    pids+=("$hpid")
    for _ in $(seq 1 400); do
        grep -q connected "$T/$n.hold" && grep -q "session 2: accepted" "$T/$n.srv" && break
        sleep 0.05
    done
    kill -9 "$hpid"
    wait "$hpid" 2>/dev/null
    for _ in $(seq 1 300); do
        grep -q "session 2: receive from peer" "$T/$n.srv" && break
        sleep 0.05
    done
    check "$n: killed peer: the server's receive from it fails" \
        contains "$(cat "$T/$n.srv")" "session 2: receive from peer"
    check "$n: ... with an error naming it (its pid $hpid)" \
        contains "$(cat "$T/$n.srv.err")" "pid $hpid"
    grep "pid $hpid" "$T/$n.srv.err" | head -2 | cut -c1-300 | sed 's/^/# /'
    # the survivor keeps working: another connection
    timeout -s KILL 120 "$app" client "$c" 1 >"$T/$n.c2" 2>&1 </dev/null
    rc=$?
    check "$n: after the kill, a new connection works (exit $rc)" test "$rc" -eq 0
    [ "$rc" = 0 ] || sed 's/^/# /' "$T/$n.c2" | head -10
    # a wrong secret is refused with the message
    PX_MCA_peer_secret_file=$T/other timeout -s KILL 60 "$app" connect-only "$c" >"$T/$n.bad" 2>&1 </dev/null
    rc=$?
    check "$n: a wrong secret is refused (exit $rc)" test "$rc" -eq 3
    check "$n: ... saying authentication failed" contains "$(cat "$T/$n.bad")" "authentication failed"
    # the last session ends the server
    timeout -s KILL 120 "$app" client "$c" 1 >"$T/$n.c3" 2>&1 </dev/null
    wait "$spid"
    rc=$?
    check "$n: the server served every session and ended cleanly (exit $rc)" test "$rc" -eq 0
    [ "$rc" = 0 ] || sed 's/^/# /' "$T/$n.srv" "$T/$n.srv.err" | tail -15
}

scenario shm
check "shm: the peer is reached by shm" contains "$(cat "$T/shm.c1")" "over shm"

# 200 connect/disconnect cycles: no descriptor left behind on the connecting side
timeout -s KILL 240 "$app" server "$T/cyc.contact" 200 >"$T/cyc.srv" 2>&1 </dev/null &
spid=$!
pids+=("$spid")
timeout -s KILL 240 "$app" cycles "$T/cyc.contact" 200 >"$T/cyc.c" 2>&1 </dev/null
rc=$?
wait "$spid"
src=$?
check "shm: 200 connect/echo/disconnect cycles, both sides end cleanly (client $rc, server $src)" \
    test "$rc" -eq 0 -a "$src" -eq 0
grep cycles "$T/cyc.c" | sed 's/^/# /'
line=$(grep -o 'after the first [0-9]*, after the last [0-9]*' "$T/cyc.c")
set -- $line
check "shm: ... the open descriptors do not grow ($line)" test -n "$line" -a "${4%,}" = "${8:-x}"

# a rank of a job started by pxrun connects to a singleton, and the other way
pxrun=$B/tools/pxrun/pxrun
if [ -x "$pxrun" ]; then
    timeout -s KILL 120 "$app" server "$T/px1.contact" 1 >"$T/px1.srv" 2>&1 </dev/null &
    spid=$!
    pids+=("$spid")
    timeout -s KILL 120 "$pxrun" -n 1 "$app" client "$T/px1.contact" 1 >"$T/px1.c" 2>&1 </dev/null
    rc=$?
    wait "$spid"
    check "a pxrun rank connects to a singleton and exchanges messages (client $rc, server $?)" \
        contains "$(cat "$T/px1.c" "$T/px1.srv")" "server done"
    timeout -s KILL 120 "$pxrun" -n 1 "$app" server "$T/px2.contact" 1 >"$T/px2.srv" 2>&1 </dev/null &
    spid=$!
    pids+=("$spid")
    timeout -s KILL 120 "$app" client "$T/px2.contact" 1 >"$T/px2.c" 2>&1 </dev/null
    rc=$?
    wait "$spid"
    check "a singleton connects to a pxrun rank (client $rc, server $?)" \
        contains "$(cat "$T/px2.c")" "client done: 1 connections"
else
    skip "pxrun ranks and singletons" "pxrun is not built"
fi

export PX_MCA_btl=self,ofi
if ! timeout 60 "$app" contact >"$T/ofi.probe" 2>&1; then
    sed 's/^/# /' "$T/ofi.probe" | head -5
    skip "ofi: dynamic peers" "btl/ofi offers no module on this machine"
else
    scenario ofi
    check "ofi: the peer is reached by ofi" contains "$(cat "$T/ofi.c1")" "over ofi"
fi
tap_done
