#!/usr/bin/env bash
# The transfer engine with connected peers (docs/peers.md, "One-sided with
# connected peers"; docs/transfer.md) between dyn_xfer processes started
# separately by this script (each px_init alone: no launcher), with a 0600
# secret file: reads and writes of 8 B .. 4 MiB on an allocated and a
# registered region (checked against the pattern or the owner's checksum),
# a batch of 16, flush, a notification after writes (both ways), the owner
# freeing a region during reads (that request fails, the connection goes
# on), a peer killed while the other runs batches on its region (they fail
# naming it; the survivor serves the next connection), disconnect and
# reconnect cycles without a descriptor left behind (both sides). Over shm
# (the default btl list: same host) and over ofi (PX_MCA_btl=self,ofi).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
app=$B/test/peer/dyn_xfer
need_built "$app"
. "$PX_SRC/test/lib/peers.sh"
peers_setup

if timeout 60 "$app" server "$T/probe.contact" 0 2>&1 | grep -q "built without libsodium"; then
    skip "dynamic peers' transfers" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi

# scenario NAME CYCLES: the whole story over the btl list in $PX_MCA_btl (or the default)
scenario() {
    local n=$1 ncyc=$2 c=$T/$1.contact
    rm -f "$c"
    # sessions: the client, the killed peer, the client again, the cycles
    timeout -s KILL 300 "$app" server "$c" $((3 + ncyc)) >"$T/$n.srv" 2>"$T/$n.srv.err" </dev/null &
    local spid=$!
    pids+=("$spid")
    timeout -s KILL 200 "$app" client "$c" >"$T/$n.c1" 2>&1 </dev/null
    local rc=$?
    check "$n: puts, gets, a batch, flush and notify with a connected peer, checksummed (exit $rc)" \
        test "$rc" -eq 0
    sed 's/^/# /' "$T/$n.c1" | grep -v ': ok$' | head -40
    grep -c ': ok$' "$T/$n.c1" | sed 's/^/# requests and checks ok: /'
    check "$n: every read and write of 8 B .. 4 MiB on both regions is right" \
        test "$(grep -c '^region [01]: \(read\|write\) .*: ok$' "$T/$n.c1")" -eq 28
    check "$n: the owner freeing a region during reads fails that request only" \
        contains "$(cat "$T/$n.c1")" "freed during reads: that request fails, the connection goes on: ok"
    check "$n: ... with PX_ERR_NOT_FOUND saying it was deregistered" \
        contains "$(cat "$T/$n.c1")" "deregistered by its owner"
    # a peer killed while the server runs batches on its region
    "$app" hold "$c" >"$T/$n.hold" 2>&1 </dev/null &
    local hpid=$!
    pids+=("$hpid")
    for _ in $(seq 1 600); do
        grep -q hammered "$T/$n.hold" && grep -q "session 1: hammering" "$T/$n.srv" && break
        sleep 0.05
    done
    sleep 0.3
    kill -9 "$hpid"
    wait "$hpid" 2>/dev/null
    for _ in $(seq 1 600); do
        grep -q "session 1: done" "$T/$n.srv" && break
        sleep 0.05
    done
    check "$n: killed mid-batch: the server's batch fails with PX_ERR_PEER_FAILED" \
        contains "$(cat "$T/$n.srv")" "session 1: batch"
    check "$n: ... the reason names the peer (pid $hpid)" \
        contains "$(grep 'session 1: batch' "$T/$n.srv")" "pid $hpid"
    grep 'session 1: \(batch\|a later\|flush\)' "$T/$n.srv" | cut -c1-400 | sed 's/^/# /'
    check "$n: ... later requests and flush fail at once" \
        contains "$(grep 'session 1: a later\|session 1: flush' "$T/$n.srv")" "flush: peer process failed"
    check "$n: ... after px_disconnect its transports let go: the dead peer's remote is released" \
        contains "$(cat "$T/$n.srv")" "session 1: the dead peer's remote released ok"
    # the survivor serves the next connection
    timeout -s KILL 200 "$app" client "$c" >"$T/$n.c2" 2>&1 </dev/null
    rc=$?
    check "$n: after the kill, a new connection's transfers work (exit $rc)" test "$rc" -eq 0
    [ "$rc" = 0 ] || sed 's/^/# /' "$T/$n.c2" | grep -v ': ok$' | head -20
    # disconnect / reconnect cycles: nothing left behind
    timeout -s KILL 300 "$app" cycles "$c" "$ncyc" >"$T/$n.cyc" 2>&1 </dev/null
    rc=$?
    wait "$spid"
    local src=$?
    check "$n: $ncyc connect/import/transfer/disconnect cycles, both sides end cleanly (client $rc, server $src)" \
        test "$rc" -eq 0 -a "$src" -eq 0
    [ "$src" = 0 ] || sed 's/^/# /' "$T/$n.srv" "$T/$n.srv.err" | tail -15
    local line
    line=$(grep -o 'after the first [0-9]*, after the last [0-9]*' "$T/$n.cyc")
    set -- $line
    check "$n: ... the connecting side's open descriptors do not grow ($line)" \
        test -n "$line" -a "${4%,}" = "${8:-x}"
    local f1 f2
    f1=$(grep -o "session 3: done.*fds [0-9]*" "$T/$n.srv" | grep -o '[0-9]*$')
    f2=$(grep -o "session $((2 + ncyc)): done.*fds [0-9]*" "$T/$n.srv" | grep -o '[0-9]*$')
    check "$n: ... nor the server's (after the first cycle ${f1:-?}, after the last ${f2:-?})" \
        test -n "$f1" -a -n "$f2" && test "$f2" -le "$f1"
}

scenario shm 30
check "shm: the peer is reached by shm" contains "$(cat "$T/shm.c1")" "over shm"

export PX_MCA_btl=self,ofi
if ! timeout 60 "$app" server "$T/ofi.probe.contact" 0 >"$T/ofi.probe" 2>&1; then
    sed 's/^/# /' "$T/ofi.probe" | head -5
    skip "ofi: dynamic peers' transfers" "btl/ofi offers no module on this machine"
else
    scenario ofi 10
    check "ofi: the peer is reached by ofi" contains "$(cat "$T/ofi.c1")" "over ofi"
    check "ofi: ... and large requests take ofi's put/get" \
        contains "$(cat "$T/ofi.c1")" "4194304 B via ofi:"
fi
tap_done
