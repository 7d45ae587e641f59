#!/usr/bin/env bash
# How often a cold open by name over registry/p2p wakes the owner's threads
# (counts, not times): its lookup listener ("px-p2p-lookup") once per lookup,
# since the reader sends its request with the connection and the listening
# socket hands a connection over with its first bytes (TCP_DEFER_ACCEPT), and
# answered connections are closed at once; the peer listener's watcher
# ("px-peer-watch") twice per handshake (the connection with its HELLO, the
# AUTH), since it waits on the listener edge-triggered and the connector sends
# its HELLO at once. Before 2026-11-28 they woke 2.3-2.75 and 3.5 times per
# reader on average (docs/measurements/named.md). A wake is a voluntary
# context switch of the thread (/proc/PID/task/TID/status): it sleeps only
# there. Each wake that waits for a core delays the reader's open.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/peers.sh"
B=$PX_BUILD
prog=$B/test/registry/p2p/registry_p2p_names
need_built "$prog"
peers_setup
export PX_MCA_registry=p2p PX_MCA_registry_timeout=5
N=6

p2p_owner "$prog" 65536 kv/wakes "wakes of an owner"
read1() { timeout -s KILL 60 "$prog" reader "$Q" 65536 >"$T/r.out" 2>"$T/r.err" </dev/null; }
read1 # the first reader also starts the owner's watcher
tid_of() { for t in /proc/"$opid"/task/*; do [ "$(cat "$t/comm" 2>/dev/null)" = "$1" ] && basename "$t"; done; }
lt=$(tid_of px-p2p-lookup)
wt=$(tid_of px-peer-watch)
check "the owner's lookup listener and watcher threads are named ($lt, $wt)" [ -n "$lt" -a -n "$wt" ]
[ -n "$lt" ] && [ -n "$wt" ] || tap_done
wakes() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$opid/task/$1/status"; }
l0=$(wakes "$lt")
w0=$(wakes "$wt")
ok=0
for _ in $(seq 1 $N); do read1 && grep -q '^checksum=ok' "$T/r.out" && ok=$((ok + 1)); done
l1=$(wakes "$lt")
w1=$(wakes "$wt")
check "$N readers opened and read the name ($ok did)" [ "$ok" -eq $N ]
check "the lookup listener woke $((l1 - l0)) times for $N lookups (at most $((N + 2)))" \
    [ $((l1 - l0)) -le $((N + 2)) ]
check "the watcher woke $((w1 - w0)) times for $N handshakes (at most $((2 * N + 2)))" \
    [ $((w1 - w0)) -le $((2 * N + 2)) ]
tap_done
