#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# registry/redis through the framework's module interface (redis_probe),
# against redis-server instances this test starts on 127.0.0.1 (random free
# ports, no persistence, killed at exit): put/get/del/list and CREATE
# semantics, lease expiry, glob characters in keys, entries someone else
# wrote (wrong type, oversized, garbage), a server down at start, a stopped
# server (TIMEOUT within the bound, never a hang), failover to the second
# endpoint, a server restarted on the same port, AUTH through a password
# file, SELECT, a flushed script cache.
B=${PX_BUILD:-$(pwd)}
S=${PX_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$S/test/lib/tap.sh"
. "$S/test/registry/redis_util.sh"
redis_setup
probe=$B/test/registry/redis_probe
need_built "$probe"
if ! grep -q '^#define PX_HAVE_HIREDIS 1' "$B/config.h"; then
    skip "registry/redis" "built without hiredis: configure did not find it (scripts/deps.sh installs libhiredis-dev)"
    tap_done
fi
[ -f "$B/.libs/plexus_registry_redis.so" ] || {
    not_ok "configure found hiredis but plexus_registry_redis.so is not built"
    tap_done
}
export PX_MCA_mca_component_path=$B/.libs PX_MCA_registry=redis PX_MCA_registry_timeout=2
unset PX_MCA_registry_redis_password_file PX_MCA_registry_redis_db

redis_start A || { not_ok "redis-server starts"; tap_done; }
EA=127.0.0.1:$REDIS_PORT_A
# p ENDPOINTS COMMAND...: run the probe (bounded: a hang fails the test), stdout in $out,
# stderr in $err.
p() {
    local eps=$1
    shift
    out=$(PX_MCA_registry_redis_endpoints=$eps timeout 60 "$probe" "$@" 2>"$T/err")
    rc=$?
    err=$(cat "$T/err")
    [ $rc -ne 124 ] || echo "# the probe hung (killed after 60 s)" >&2
}
# not_selected: the last probe selected no module (and said why on stderr).
not_selected() {
    [[ $out == "select: "* && $out != "select: redis"* && -n $err ]] || {
        echo "# expected a failed select with an error, got: $out" >&2
        return 1
    }
}

# ---- put / get / del / list / CREATE ----
p "$EA" "put t1/a one" "get t1/a" "create t1/a one" "create t1/a two" "get t1/a" \
    "create t1/b bee" "del t1/a two" "get t1/a" "del t1/a one" "get t1/a" "del t1/a" \
    "put t1/c see" "list t1/" "del t1/c" "list t1/"
check "select names redis" contains "$out" "select: redis"
check "put then get returns the value" contains "$out" "get t1/a: value=one (3 bytes"
check "CREATE of the same bytes renews (ok)" contains "$out" "create t1/a: ok"
check "CREATE of other bytes is EXISTS" contains "$out" "create t1/a: EXISTS"
check "del with other bytes is EXISTS and keeps the entry" \
    bash -c '[[ "$1" == *"del t1/a: EXISTS"*"get t1/a: value=one"*"del t1/a: ok"*"get t1/a: NOT_FOUND"*"del t1/a: NOT_FOUND"* ]]' _ "$out"
check "list returns each key under the prefix with its value" \
    contains "$out" "list t1/: ok 2
  t1/b=bee
  t1/c=see
"
check "list after del" contains "$out" "list t1/: ok 1
  t1/b=bee"
check "no error printed for ordinary calls" test -z "$err"
ttl=$(rcli A PTTL t1/b)
check "an entry carries the lease (PTTL $ttl ms > 0)" test "${ttl:-0}" -gt 0

# ---- the lease expires ----
PX_MCA_registry_lease=1 PX_MCA_registry_heartbeat=0.3 p "$EA" "put t2/x 1" "create t2/y 2" "get t2/x" "sleep 2.5" "get t2/x" "get t2/y" "list t2/"
check "an entry is there before its lease ends" contains "$out" "get t2/x: value=1"
check "put's entry is gone after its lease" contains "$out" "get t2/x: NOT_FOUND"
check "CREATE's entry is gone after its lease" contains "$out" "get t2/y: NOT_FOUND"
check "list after the leases ended is empty" contains "$out" "list t2/: ok 0"

# ---- glob characters in keys and prefixes ----
p "$EA" "put g*/1 star" "put g?/2 quest" "put g[x]/3 bracket" 'put g\/4 backslash' "put gx/5 plain" \
    "put g-^/6 caret" "list g*/" "list g?/" "list g[x]/" 'list g\/' "list gx/" "list g-^/" "list g"
check "prefix g*/ lists only g*/1" contains "$out" "list g*/: ok 1
  g*/1=star"
check "prefix g?/ lists only g?/2" contains "$out" "list g?/: ok 1
  g?/2=quest"
check "prefix g[x]/ lists only g[x]/3 (not gx/5)" contains "$out" "list g[x]/: ok 1
  g[x]/3=bracket"
check 'prefix g\/ lists only g\/4' contains "$out" 'list g\/: ok 1
  g\/4=backslash'
check "prefix gx/ lists only gx/5" contains "$out" "list gx/: ok 1
  gx/5=plain"
check "prefix g-^/ lists only g-^/6" contains "$out" "list g-^/: ok 1"
check "prefix g lists all six" contains "$out" "list g: ok 6"

# ---- entries someone else wrote ----
rcli A HSET h/hash f v >/dev/null
rcli A RPUSH h/list a b >/dev/null
head -c 70000 /dev/zero | tr '\0' 'z' | rcli A -x SET h/big >/dev/null
printf '\377\000\001garbage' | rcli A -x SET h/garbage >/dev/null
rcli A SET h/empty "" >/dev/null
p "$EA" "get h/hash" "get h/big" "create h/hash v" "del h/hash v" "get h/list" "get h/garbage" \
    "get h/empty" "list h/" "del h/list" "get h/list"
check "a hash under the key: get is BAD_PARAM" contains "$out" "get h/hash: BAD_PARAM"
check "... saying it is a hash, not a Plexus entry" contains "$err" "holds a redis hash, not a string"
check "... naming the endpoint" contains "$err" "h/hash on $EA"
check "a 70000-byte value: get is BAD_PARAM" contains "$out" "get h/big: BAD_PARAM"
check "... saying its size and the limit" contains "$err" "70000 bytes, more than 65536"
check "CREATE over a hash is BAD_PARAM" contains "$out" "create h/hash: BAD_PARAM"
check "del with a value over a hash is BAD_PARAM" contains "$out" "del h/hash: BAD_PARAM"
check "a list under the key: get is BAD_PARAM" contains "$out" "get h/list: BAD_PARAM"
check "binary garbage comes back byte for byte (the names layer judges it)" \
    contains "$out" "get h/garbage: value="
check "... all 10 bytes" contains "$out" "(10 bytes"
check "an empty value is a value" contains "$out" "get h/empty: value= (0 bytes"
check "list of hostile entries completes, listing each (other types and oversized with an empty value)" \
    contains "$out" "list h/: ok 5"
check "del without a value removes whatever is there" contains "$out" "get h/list: NOT_FOUND"
check "the hash is untouched" test "$(rcli A HGET h/hash f)" = v
check "the probe did not crash" test "$rc" -eq 0

# ---- a value at the limit passes, one over it is refused before the store ----
p "$EA" "big l/max 65536" "get l/max" "big l/over 65537"
check "a 65536-byte value round-trips" contains "$out" "(65536 bytes"
check "a 65537-byte put is BAD_PARAM" contains "$out" "big l/over: BAD_PARAM"

# ---- server down at start ----
dead=$(free_port)
p "127.0.0.1:$dead" "get x"
check "nothing listening: select fails" not_selected
check "... naming the endpoint" contains "$err" "127.0.0.1:$dead"
check "... and what happened" contains "$err" "Connection refused"
check "... and the variable" contains "$err" "registry_redis_endpoints"

# ---- a stopped server: TIMEOUT within the bound ----
redis_start S || not_ok "second redis-server starts"
ES=127.0.0.1:$REDIS_PORT_S
rm -f "$T/f1" "$T/f2"
(
    for i in $(seq 300); do [ -e "$T/f1" ] && break; sleep 0.1; done
    stop_proc "$REDIS_PID_S"
    touch "$T/f2"
) &
bg=$!
p "$ES" "put s/k v" "touch $T/f1" "wait $T/f2" "get s/k" "put s/k w" "list s/"
check "a stopped server: get is TIMEOUT" contains "$out" "get s/k: TIMEOUT"
check "... put is TIMEOUT" contains "$out" "put s/k: TIMEOUT"
check "... list is TIMEOUT" contains "$out" "list s/: TIMEOUT"
check "... the error names the bound" contains "$err" "did not answer within registry_timeout=2 s"
check "... and the endpoint" contains "$err" "$ES: no answer"
check "... said once, not for every call" test "$(grep -c 'did not answer' <<<"$err")" -eq 1
p "$ES" "get s/k"
check "a stopped server at start: select fails" not_selected
check "... naming the endpoint and saying it did not answer" contains "$err" "$ES: SCRIPT LOAD: no answer"
wait "$bg"
kill -CONT "$REDIS_PID_S"

# ---- failover: the first endpoint killed ----
redis_start F || not_ok "third redis-server starts"
EF=127.0.0.1:$REDIS_PORT_F
rm -f "$T/f1" "$T/f2"
(
    for i in $(seq 300); do [ -e "$T/f1" ] && break; sleep 0.1; done
    redis_kill A
    touch "$T/f2"
) &
bg=$!
p "$EA,$EF" "put fo/1 first" "touch $T/f1" "wait $T/f2" "put fo/2 second" "get fo/2" "get fo/1" "list fo/"
wait "$bg"
check "after the first endpoint died, put goes to the second" contains "$out" "put fo/2: ok"
check "... and get reads it there" contains "$out" "get fo/2: value=second"
check "... an entry of the dead server is not on the new one (the heartbeat puts it again)" \
    contains "$out" "get fo/1: NOT_FOUND"
check "the takeover is said, naming both endpoints" contains "$err" "$EF took over ($EA:"
check "... once" test "$(grep -c 'took over' <<<"$err")" -eq 1
check "the entry is in the second server" test "$(rcli F GET fo/2)" = second
p "$EA,$EF" "get fo/2"
check "first endpoint down at start: the second is selected" contains "$out" "get fo/2: value=second"
check "... saying it took over" contains "$err" "$EF took over ($EA: cannot connect"

# ---- failover: the first endpoint stops answering (SIGSTOP) on an open connection
redis_start G || not_ok "a redis-server to stop starts"
EG=127.0.0.1:$REDIS_PORT_G
rm -f "$T/f1" "$T/f2"
(
    for i in $(seq 300); do [ -e "$T/f1" ] && break; sleep 0.1; done
    stop_proc "$REDIS_PID_G"
    touch "$T/f2"
) &
bg=$!
p "$EG,$EF" "put st/1 a" "touch $T/f1" "wait $T/f2" "put st/2 b" "get st/2"
wait "$bg"
check "a stopped first endpoint: put goes to the second within the same call" contains "$out" "put st/2: ok"
check "... and get reads it there" contains "$out" "get st/2: value=b"
check "... saying the second took over because the first did not answer" \
    contains "$err" "$EF took over ($EG: no answer"
kill -CONT "$REDIS_PID_G"

# ---- a server restarted (empty) on the same port ----
redis_start R || not_ok "fourth redis-server starts"
ER=127.0.0.1:$REDIS_PORT_R
rm -f "$T/f1" "$T/f2"
(
    for i in $(seq 300); do [ -e "$T/f1" ] && break; sleep 0.1; done
    redis_kill R
    redis_start R "$REDIS_PORT_R" && echo "$REDIS_PID_R" >"$T/R.pid"
    touch "$T/f2"
) &
bg=$!
p "$ER" "put rs/1 before" "touch $T/f1" "wait $T/f2" "get rs/1" "create rs/1 before" "get rs/1"
check "a restarted, empty server: get is NOT_FOUND (not an error)" contains "$out" "get rs/1: NOT_FOUND"
check "... a put after it reconnects and stores" contains "$out" "create rs/1: ok"
check "... and the entry is back" contains "$out" "get rs/1: value=before"
wait "$bg"
[ -s "$T/R.pid" ] && pids+=("$(cat "$T/R.pid")")

# ---- AUTH through a password file, SELECT, a flushed script cache ----
redis_start P || not_ok "fifth redis-server starts"
EP=127.0.0.1:$REDIS_PORT_P
rcli P CONFIG SET requirepass 's3cret pass' >/dev/null
printf 's3cret pass\n' >"$T/pw"
chmod 600 "$T/pw"
PX_MCA_registry_redis_password_file=$T/pw p "$EP" "put pw/1 yes" "get pw/1"
check "AUTH with the password file" contains "$out" "get pw/1: value=yes"
p "$EP" "get pw/1"
check "no password: select fails" not_selected
check "... saying what redis said" contains "$err" "NOAUTH"
printf 'wrong\n' >"$T/pw2"
chmod 600 "$T/pw2"
PX_MCA_registry_redis_password_file=$T/pw2 p "$EP" "get pw/1"
check "a wrong password: AUTH refused, with the file and redis's words" \
    contains "$err" "AUTH (registry_redis_password_file $T/pw2) refused: WRONGPASS"
chmod 644 "$T/pw"
PX_MCA_registry_redis_password_file=$T/pw p "$EP" "get pw/1"
check "a password file others may read is refused" contains "$err" "has mode 0644"
check "... and nothing is selected" not_selected
PX_MCA_registry_redis_db=3 p "$EF" "put db/1 three" "get db/1"
check "registry_redis_db: the entry is in database 3" test "$(rcli F -n 3 GET db/1)" = three
check "... not in database 0" test -z "$(rcli F -n 0 GET db/1)"
rm -f "$T/f1" "$T/f2"
(
    for i in $(seq 300); do [ -e "$T/f1" ] && break; sleep 0.1; done
    rcli F SCRIPT FLUSH >/dev/null
    touch "$T/f2"
) &
bg=$!
p "$EF" "create sc/1 a" "touch $T/f1" "wait $T/f2" "create sc/2 b" "get sc/2" "del sc/2 b"
check "a flushed script cache: the scripts are sent again" \
    bash -c '[[ "$1" == *"create sc/2: ok"*"get sc/2: value=b"*"del sc/2: ok"* ]]' _ "$out"
wait "$bg"

# ---- bad endpoint lists ----
for bad in "host:0" "host:99999" "host:port" "::1:6379" "[::1" ",127.0.0.1:1"; do
    p "$bad" "get x"
    check "endpoints \"$bad\" refused, saying what is accepted" contains "$err" "accepted: host:port"
done
tap_done
