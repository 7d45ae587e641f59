#!/usr/bin/env bash
# The lifetime of the names layer's connections (docs/registry.md,
# "Connections"): a long-running reader of writers that come and go keeps a
# bounded number of dynamic peers, and a peer this process failed itself
# (a timeout) while it is alive leaves one connection once it is reached
# again. Processes started separately (px_init alone each), meeting through
# dirstore (test/registry/dirstore.c, built here against the build tree).
# The counts are the runtime's own: peer_verbose 10 prints the number of
# dynamic peers at each connection and release, registry_base_verbose 10
# the names layer's connections.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
app=$B/test/registry/name_probe
need_built "$app"
. "$PX_SRC/test/lib/peers.sh"
peers_setup

. "$PX_SRC/test/registry/names_lib.sh"
names_need_deps "names lifetime"

mkdir -p "$T/plug"
cc -std=gnu11 -O2 -Wall -Wextra -Werror -shared -fPIC -I"$B" -I"$PX_SRC" \
    -o "$T/plug/plexus_registry_dirstore.so" "$PX_SRC/test/registry/dirstore.c" 2>"$T/cc.log"
check "dirstore builds" test -f "$T/plug/plexus_registry_dirstore.so" || sed 's/^/#   /' "$T/cc.log" | head
export PX_MCA_mca_component_path=$T/plug:$B/.libs
export PX_MCA_registry=dirstore PX_MCA_registry_dirstore_dir=$T/store
export PX_MCA_registry_lease=3 PX_MCA_registry_heartbeat=0.5 PX_MCA_registry_cache_ttl=0

# max_count FILE WORDS: the largest N of FILE's lines "...: N WORDS" (or "; N WORDS")
max_count() { sed -n "s/.*[:;] \([0-9]*\) $2.*/\1/p" "$1" | sort -n | tail -1; }
# at_most A B: A is a number not above B
at_most() { [ -n "$1" ] && [ "$1" -le "$2" ]; }

# ---- a reader of 20 writers that start, publish, get killed or leave
N=20
mkdir -p "$T/churn"
PX_MCA_peer_verbose=10 PX_MCA_registry_base_verbose=10 timeout -s KILL 120 \
    "$app" churn churn/w 65536 $N "$T/churn" >"$T/churn.out" 2>&1 </dev/null
rc=$?
ok_rounds=$(grep -c "^round [0-9]*: read ok" "$T/churn.out")
check "the reader reads each of $N writers, one after the other (exit $rc)" \
    test "$ok_rounds" -eq $N -a "$rc" -eq 0
if [ "$ok_rounds" -ne $N ] || [ "$rc" -ne 0 ]; then
    grep -v "peer:\|registry:" "$T/churn.out" | sed 's/^/#   /' | head -20
fi
check "... a read on a handle whose writer ended fails cleanly" \
    [ "$(grep -c "^read after end [0-9]*: peer process failed" "$T/churn.out")" -eq $((N / 2)) ]
peers=$(max_count "$T/churn.out" "dynamic peer(s)")
conns=$(max_count "$T/churn.out" "connection(s) to owners held")
released=$(grep -c "released peer .*: disconnected by this process" "$T/churn.out")
echo "# churn: at most $peers dynamic peer(s), $conns connection(s) held; $released released"
check "its dynamic peers stay bounded: at most 2 at any time over $N writers (max $peers)" \
    at_most "$peers" 2
check "... and the names layer's connections too (max $conns)" at_most "$conns" 2
check "... each dead writer's peer released by px_disconnect before px_finalize (at least $((N - 1)): $released)" \
    [ "$released" -ge $((N - 1)) ]
# Descriptors after each round: a round that closed its handle before its
# writer ended still holds that writer's connection (released at the next
# open), one that closed it after does not; the 4 kinds of round repeat.
fds() { sed -n "s/^round \([0-9]*\): read ok, \([0-9]*\) descriptors/\1 \2/p" "$T/churn.out" |
    awk -v lo="$1" -v hi="$2" '$1 >= lo && $1 <= hi && $2 > m { m = $2 } END { print m }'; }
first=$(fds 0 3)
rest=$(fds 4 $((N - 1)))
echo "# churn: open descriptors after rounds 0-3: at most $first; after rounds 4-$((N - 1)): at most $rest"
check "... and its open descriptors do not grow with the writers ($first in the first 4 rounds, $rest after)" \
    at_most "$rest" "${first:-0}"
check "its px_finalize succeeds" grep -q "finalized: success" "$T/churn.out"

# ---- the owner's side: readers that come and go, never px_accept-ed
# An owner that only serves its memory never calls px_accept; a reader
# that left must not stay in its table until px_finalize.
R=6
PX_MCA_peer_verbose=10 start_owner served/x 65536 9 "$T/c2" "$T/o2"
for i in $(seq 1 $R); do
    timeout -s KILL 60 "$app" read served/x 65536 9 >"$T/r2.$i" 2>&1 </dev/null
    # the next reader starts once the owner released this one (or 10 s passed)
    for _ in $(seq 1 200); do
        [ "$(grep -c "it left before px_accept took it" "$T/o2")" -ge "$i" ] && break
        sleep 0.05
    done
done
rd=$(cat "$T"/r2.* | grep -c "^read ok")
check "$R readers, one after the other, read the owner's region ($rd)" [ "$rd" -eq $R ]
for _ in $(seq 1 100); do
    [ "$(grep -c "it left before px_accept took it" "$T/o2")" -ge $R ] && break
    sleep 0.05
done
gone=$(grep -c "it left before px_accept took it" "$T/o2")
opeers=$(max_count "$T/o2" "dynamic peer(s)")
echo "# owner: at most $opeers dynamic peer(s) over $R readers; $gone released as they left"
check "the owner releases each reader that left (never px_accept-ed) before px_finalize ($gone of $R)" \
    [ "$gone" -eq $R ]
check "... so its dynamic peers stay bounded: at most 2 at any time (max $opeers)" at_most "$opeers" 2
timeout -s KILL 60 "$app" read served/x 65536 9 >"$T/r2.last" 2>&1 </dev/null
check "... and it still serves the next reader" grep -q "^read ok" "$T/r2.last"
touch "$T/c2/stop"
wait_for "$T/o2" "finalized" 30
check "... and ends cleanly" grep -q "finalized: success" "$T/o2"

# ---- a peer failed by this process (a timeout) while its owner is alive
start_owner alive/x 65536 5 "$T/c1" "$T/o1"
PX_MCA_peer_verbose=10 PX_MCA_registry_base_verbose=10 PX_MCA_runtime_wait_timeout=0.5 \
    timeout -s KILL 60 "$app" failed alive/x 65536 5 >"$T/failed.out" 2>&1 </dev/null
rc=$?
check "a reader opens alive/x and reads it" grep -q "^first: read ok" "$T/failed.out"
check "... a send its owner never receives times out and fails the peer" \
    grep -q "^send: timed out" "$T/failed.out"
check "... opening the name again connects again (another peer) and reads" \
    grep -q "^reopen: read ok, another peer" "$T/failed.out"
check "... closing the first handle releases the failed connection" \
    grep -q "released the connection to the owner of \"alive/x\" .*: this process failed it; 1 connection(s)" "$T/failed.out"
check "... a third open reuses the new connection" grep -q "^third: read ok, same peer" "$T/failed.out"
# the count the runtime printed last before the first handle's close returned
last_peers=$(sed -n '1,/^closed the first/p' "$T/failed.out" | sed -n 's/.*[:;] \([0-9]*\) dynamic peer(s).*/\1/p' | tail -1)
check "... leaving one dynamic peer, not two ($last_peers)" [ "$last_peers" = 1 ] ||
    grep "dynamic peer\|connection(s)\|^[a-z]*:" "$T/failed.out" | sed 's/^/#   /' | head -20
check "its px_finalize succeeds (exit $rc)" test "$rc" -eq 0 -a -n "$(grep "finalized: success" "$T/failed.out")"
touch "$T/c1/stop"
wait_for "$T/o1" "finalized" 30
check "the owner carries on and ends cleanly" grep -q "finalized: success" "$T/o1"
# (a sanitizer build: a report makes a process exit non-zero after its work;
# the owner's comes after its "finalized" line)
for _ in $(seq 1 200); do kill -0 "$owner_pid" 2>/dev/null || break; sleep 0.05; done
reports=$(cat "$T/churn.out" "$T/failed.out" "$T/o1" "$T/o2" "$T"/churn/owner-*.log 2>/dev/null |
    grep -c "ERROR: [A-Za-z]*Sanitizer\|runtime error:")
check "no process reported a sanitizer error ($reports)" [ "$reports" -eq 0 ]

tap_done
