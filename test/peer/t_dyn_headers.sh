#!/usr/bin/env bash
# A dynamic peer's matched-message headers are not trusted: the sender is the
# transport endpoint a message came through, and its header must name
# PX_BTL_RANK_DYNAMIC; forged ones are dropped, counted and reported, never
# matched (dyn_hdr_probe.c). Two processes started separately, over shm.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/peer/dyn_hdr_probe
need_built "$probe"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
export PX_MCA_peer_secret_file=$T/secret PX_MCA_runtime_wait_timeout=30
timeout -s KILL 120 "$probe" server "$T/c" >"$T/out" 2>"$T/err" </dev/null &
spid=$!
timeout -s KILL 120 "$probe" client "$T/c" >"$T/cout" 2>&1 </dev/null
crc=$?
wait $spid
src=$?
out=$(cat "$T/out")
errs=$(cat "$T/err")
if grep -q "built without libsodium" "$T/err" "$T/cout"; then
    skip "dynamic peers' headers" "built without libsodium"
    tap_done
fi
check "both sides end cleanly (server $src, client $crc)" test "$src" -eq 0 -a "$crc" -eq 0
check "all 4 forged headers are counted" contains "$out" "bad_headers 4"
check "none is queued as unexpected" contains "$out" "unexpected 0"
check "the wildcard receive gets the peer's real message, from its id" \
    contains "$out" "recv success source the peer value 4242"
check "a header naming a rank through a dynamic peer's endpoint is reported, naming the peer" \
    contains "$errs" "whose header names rank 0 as its sender (a dynamic peer's names -1"
check "a rank the transport names that does not exist is reported" \
    contains "$errs" "dropped a message from rank 5 with source -1 in its header"
tap_done
