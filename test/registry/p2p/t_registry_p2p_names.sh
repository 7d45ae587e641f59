#!/usr/bin/env bash
# The names API over registry/p2p, end to end, between processes started
# separately: an owner publishes a 1 MiB region under a name and serves it;
# a reader opens "a.b.c.d:port/name" (lookup asked of the owner, connection
# made on demand, region imported), reads it with px_xfer_read and checks
# its checksum; a name the owner never published is PX_ERR_NOT_FOUND; once
# the owner is killed, opening fails cleanly (not found or not available).
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/peers.sh"
B=$PX_BUILD
prog=$B/test/registry/p2p/registry_p2p_names
need_built "$prog"
peers_setup
export PX_MCA_registry_timeout=3

p2p_owner "$prog" 1048576 kv/block-7 "names over registry/p2p"
contains "$Q" "127.0.0.1:" || not_ok "its qualified name holds its listener's address ($Q)"

timeout -s KILL 60 "$prog" reader "$Q" 1048576 >"$T/r1.out" 2>"$T/r1.err" </dev/null
rc=$?
check "a reader opens $Q and reads it (exit $rc)" [ "$rc" -eq 0 ]
check "the region read has the owner's bytes" grep -q '^checksum=ok' "$T/r1.out"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$T/r1.out" "$T/r1.err" | head -20
grep -E '^(open|first_byte|warm_first_byte)_us=' "$T/r1.out" | sed 's/^/# /'

timeout -s KILL 60 "$prog" missing "${Q%/kv/block-7}/kv/none" >"$T/m1.out" 2>"$T/m1.err" </dev/null
check "a name the owner does not have is PX_ERR_NOT_FOUND" grep -q "^open=-5 " "$T/m1.out"

kill -9 "$opid"
wait "$opid" 2>/dev/null
timeout -s KILL 60 "$prog" missing "$Q" >"$T/m2.out" 2>"$T/m2.err" </dev/null
check "after the owner was killed, opening its name fails (exit $?)" \
    grep -qE "^open=-(5|9) " "$T/m2.out"
contains "$(cat "$T/m2.err")" "nobody listens at ${Q%/kv/block-7}" ||
    not_ok "naming the owner's address"
tap_done
