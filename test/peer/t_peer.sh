#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# runtime/peer between processes started separately (no launcher): each
# peer_probe runs px_init alone and takes its secret from peer_secret_file.
# A right secret connects and both payloads arrive; a wrong one, none, or a
# secret file others can read is refused with a message saying why (and the
# listener logs whom it refused); malformed, unreachable, stale and silent
# contacts fail within peer_connect_timeout with a clear error; a client
# that holds a handshake open (slowloris) is dropped while others connect;
# connecting to oneself, twice, and accepting with nobody connecting; 1,000
# connect/disconnect cycles leave no descriptor and no heap behind.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
probe=$B/test/peer/peer_probe
need_built "$probe"
export PX_MCA_mca_component_path=$B/.libs
T=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
head -c 32 /dev/urandom | base64 >"$T/s1"
head -c 32 /dev/urandom | base64 >"$T/s2"
cp "$T/s1" "$T/s1-open"
chmod 600 "$T/s1" "$T/s2"
chmod 644 "$T/s1-open"

if "$probe" accept-none 0.1 2>&1 | grep -q "built without libsodium"; then
    skip "runtime/peer" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi

# listen NAME SECRET COUNT [TIMEOUT] [VAR=VALUE...]: a listener in the
# background; its contact in $T/NAME.contact, output in $T/NAME.out/.err.
listen() {
    local name=$1 secret=$2 count=$3 to=${4:-20}
    shift 4 2>/dev/null || shift $#
    env PX_MCA_peer_secret_file="$secret" "$@" timeout -s KILL 120 \
        "$probe" listen "$T/$name.contact" "payload-of-$name" "$count" "$to" \
        >"$T/$name.out" 2>"$T/$name.err" </dev/null &
    lpid=$!
    pids+=("$lpid")
    wait_file "$T/$name.contact" "$lpid" 400
    contact=$(cat "$T/$name.contact" 2>/dev/null)
}

# connect SECRET CONTACT PAYLOAD COUNT [VAR=VALUE...]: output in $out, status in $rc
connect() {
    local secret=$1 c=$2 p=$3 n=$4
    shift 4
    out=$(env PX_MCA_peer_secret_file="$secret" "$@" timeout -s KILL 120 \
        "$probe" connect "$c" "$p" "$n" 2>&1 </dev/null)
    rc=$?
}

# --- a right secret is accepted, both payloads arrive
listen right "$T/s1" 1
check "listener prints its contact (${contact:-none})" contains "$contact" "px-peer:1:127.0.0.1:"
connect "$T/s1" "$contact" "payload-of-connector" 1
check "right secret: the connector connects (exit $rc)" test "$rc" -eq 0
check "right secret: the connector has the listener's payload" contains "$out" "payload payload-of-right"
wait "$lpid"
lrc=$?
check "right secret: the listener accepted one (exit $lrc)" test "$lrc" -eq 0
check "right secret: the listener has the connector's payload" \
    contains "$(cat "$T/right.out")" "payload payload-of-connector"

# --- a wrong secret is refused; the listener says whom it refused and why
listen wrong "$T/s1" 1 3
connect "$T/s2" "$contact" "intruder" 1
check "wrong secret: the connector fails (exit $rc)" test "$rc" -eq 2
check "wrong secret: the connector says authentication failed" contains "$out" "authentication failed"
wait "$lpid"
check "wrong secret: the listener delivered nothing" contains "$(cat "$T/wrong.out")" "accept 0: listener"
check "wrong secret: the listener logs whom it refused and why" \
    contains "$(cat "$T/wrong.err")" "refused 127.0.0.1:"
check "wrong secret: ... with the reason" contains "$(cat "$T/wrong.err")" "authentication failed"

# --- no secret, a secret file others may read
out=$(PX_MCA_peer_secret_file= timeout 60 "$probe" listen "$T/none.contact" x 1 1 2>&1)
check "no secret: no listener, and the error says what to set" contains "$out" "no secret: set peer_secret_file"
listen open "$T/s1" 1 3
connect "$T/s1-open" "$contact" "x" 1
check "secret file mode 644: refused (exit $rc)" test "$rc" -eq 2
check "secret file mode 644: the error says why and what to do" contains "$out" "chmod 600"
wait "$lpid"

# --- malformed, unreachable, stale, silent contacts: clear errors within the bound
connect "$T/s1" "px-peer:1:127.0.0.1:99999:h:1:0123456789abcdef" x 1
check "malformed contact: refused (exit $rc)" test "$rc" -eq 2
check "malformed contact: names the field and what is accepted" \
    contains "$out" 'field 4 (port) at byte 20, "99999", is not a port 1-65535; accepted:'
listen gone "$T/s1" 1 2
old=$contact
wait "$lpid" # it timed out and exited: its contact names nobody now
connect "$T/s1" "$old" x 1
check "listener gone: refused (exit $rc)" test "$rc" -eq 2
check "listener gone: the error says nobody listens there" contains "$out" "nobody listens there"
port=$(echo "$old" | cut -d: -f4)
listen again "$T/s1" 1 3 PX_MCA_peer_listen_port="$port"
check "a new listener on the old port ($port)" contains "$contact" ":$port:"
connect "$T/s1" "$old" x 1
check "stale contact: refused (exit $rc)" test "$rc" -eq 2
check "stale contact: the error says so" contains "$out" "stale contact"
wait "$lpid"
"$probe" silent "$T/silent.contact" </dev/null >/dev/null 2>&1 &
spid=$!
pids+=("$spid")
for _ in $(seq 1 100); do [ -s "$T/silent.contact" ] && break; sleep 0.05; done
connect "$T/s1" "$(cat "$T/silent.contact")" x 1 PX_MCA_peer_connect_timeout=1
check "silent listener: fails (exit $rc)" test "$rc" -eq 2
check "silent listener: the error names the bound" contains "$out" "did not finish the handshake within 1 s"
kill "$spid" 2>/dev/null

# --- a client that holds its handshake open is dropped; others still connect
listen slow "$T/s1" 1 20 PX_MCA_peer_connect_timeout=1
port=$(echo "$contact" | cut -d: -f4)
exec 7<>"/dev/tcp/127.0.0.1/$port"
printf 'PXP' >&7
sleep 2
connect "$T/s1" "$contact" "after-slowloris" 1
check "slowloris held open: another connector still connects (exit $rc)" test "$rc" -eq 0
exec 7>&-
wait "$lpid"
check "slowloris: the listener dropped it at its deadline, saying so" \
    contains "$(cat "$T/slow.err")" "handshake did not finish within peer_connect_timeout (1 s)"

# --- self, twice, nobody
out=$(PX_MCA_peer_secret_file=$T/s1 timeout 60 "$probe" self 2>&1)
rc=$?
check "connecting to oneself: refused at once (exit $rc)" test "$rc" -eq 0
check "connecting to oneself: says why" contains "$out" "this process's own listener"
listen twice "$T/s1" 2
out=$(PX_MCA_peer_secret_file=$T/s1 timeout 60 "$probe" twice "$contact" p 2>&1)
rc=$?
check "connecting twice: two distinct connections (exit $rc)" test "$rc" -eq 0
wait "$lpid"
check "connecting twice: the listener accepted both" \
    test "$(grep -c '^accepted [01] from' "$T/twice.out")" -eq 2
out=$(PX_MCA_peer_secret_file=$T/s1 timeout 60 "$probe" accept-none 0.5 2>&1)
rc=$?
check "accepting with nobody connecting: none yet, then a timeout (exit $rc)" test "$rc" -eq 0
check "accepting with nobody connecting: says so" contains "$out" "progress: 0; accept: "

# --- 1,000 connect/disconnect cycles. mallinfo2 counts the chunks glibc keeps
# in its per-thread cache as in use, so the cache is off for these two.
nocache=GLIBC_TUNABLES=glibc.malloc.tcache_count=0
listen cycles "$T/s1" 1000 20 "$nocache"
connect "$T/s1" "$contact" "cycle" 1000 "$nocache"
check "1000 cycles: every connection made (exit $rc)" test "$rc" -eq 0
wait "$lpid"
lrc=$?
check "1000 cycles: the listener accepted all 1000 (exit $lrc)" test "$lrc" -eq 0
check "1000 cycles: accepted the last" contains "$(cat "$T/cycles.out")" "accepted 999 from"
set -- $(echo "$out" | sed -n 's/^connector fds before \([0-9]*\) after \([0-9]*\) heap after ten \([0-9]*\) after last \([0-9]*\)$/\1 \2 \3 \4/p')
check "1000 cycles: the connector's descriptors ${1:-?} before, ${2:-?} after" test -n "$1" -a "$1" = "$2"
# a leak of one allocation per cycle (32 bytes at least) would add 31 KiB
# over the last 990 cycles; small moves of the allocator's own are allowed.
check "1000 cycles: the connector's heap in use ${3:-?} after ten cycles, ${4:-?} after the last (< 8 KiB more)" \
    test -n "$3" -a "$((${4:-0} - ${3:-0}))" -lt 8192
set -- $(sed -n 's/^listener fds before \([0-9]*\) after \([0-9]*\) heap after ten \([0-9]*\) after last \([0-9]*\)$/\1 \2 \3 \4/p' "$T/cycles.out")
check "1000 cycles: the listener's descriptors ${1:-?} before, ${2:-?} after" test -n "$1" -a "$1" = "$2"
check "1000 cycles: the listener's heap in use ${3:-?} after ten cycles, ${4:-?} after the last (< 8 KiB more)" \
    test -n "$3" -a "$((${4:-0} - ${3:-0}))" -lt 8192
tap_done
