#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# Named segments over registry/redis, end to end: processes started
# separately (test/registry/name_probe, px_init alone each) meet through a
# redis-server this test starts on 127.0.0.1 (random free port, no
# persistence, killed at exit). An owner publishes a 1 MiB region, a reader
# opens it by name and reads it with the checksum; px_names lists it from
# redis; redis killed and restarted empty on the same port: the owner's
# heartbeat puts the name back within a heartbeat and it reads again (nothing
# lost); the owner killed: its name is gone within lease + heartbeat, the
# reader's watch says so and its next read fails cleanly. Also the
# open-by-name time is printed (a comment, never asserted).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
app=$B/test/registry/name_probe
names=$B/tools/px_names/px_names
need_built "$app" "$names" "$B/test/registry/redis_open_time"
. "$PX_SRC/test/lib/peers.sh"
peers_setup
. "$PX_SRC/test/registry/redis_util.sh"
redis_setup
for need in PX_HAVE_JSONC:libjson-c-dev PX_HAVE_SODIUM:libsodium-dev; do
    if ! grep -q "^#define ${need%%:*} 1" "$B/config.h"; then
        skip "named segments over redis" "built without ${need#*:} (install it, configure again)"
        tap_done
    fi
done
if ! grep -q '^#define PX_HAVE_HIREDIS 1' "$B/config.h"; then
    skip "registry/redis" "built without hiredis: configure did not find it (scripts/deps.sh installs libhiredis-dev)"
    tap_done
fi
[ -f "$B/.libs/plexus_registry_redis.so" ] || {
    not_ok "configure found hiredis but plexus_registry_redis.so is not built"
    tap_done
}
redis_start A || { not_ok "redis-server starts"; tap_done; }
export PX_MCA_registry=redis PX_MCA_registry_redis_endpoints=127.0.0.1:$REDIS_PORT_A
export PX_MCA_registry_namespace=t/redis PX_MCA_registry_lease=3 PX_MCA_registry_heartbeat=0.5
export PX_MCA_registry_cache_ttl=0 PX_MCA_registry_watch_interval=0.1

. "$PX_SRC/test/registry/names_lib.sh"
SIZE=1048576

# ---- publish, open, read with the checksum
start_owner kv/block-1 $SIZE 7 "$T/c1" "$T/o1"
check "an owner publishes kv/block-1 (1 MiB) in redis" grep -q "^published" "$T/o1"
check "... the entry is a redis string under the namespace" test "$(rcli A TYPE t/redis/kv/block-1)" = string
ttl=$(rcli A PTTL t/redis/kv/block-1)
check "... with the lease as its expiry ($ttl ms, lease 3 s)" test "${ttl:--1}" -gt 0 -a "${ttl:-9999}" -le 3000
out=$(timeout -s KILL 60 "$app" read kv/block-1 $SIZE 7 2>&1)
check "another process opens kv/block-1 by name and reads the 1 MiB (checksum)" contains "$out" "read ok"
out=$(timeout 60 "$names" list 2>&1)
check "px_names list shows the name from redis" contains "$out" "kv/block-1"
out=$(timeout -s KILL 60 "$B/test/registry/redis_open_time" kv/block-1 50 2>&1)
check "open by name to first byte over redis works" contains "$out" "registry redis"
echo "# $out"

# ---- redis restarted empty: nothing lost
rcli A SET t/redis/marker 1 >/dev/null
redis_kill A
redis_start A "$REDIS_PORT_A" || not_ok "redis-server restarts on the same port"
check "the restarted redis lost what it held (a marker key is gone)" test "$(rcli A EXISTS t/redis/marker)" = 0
found=0
for ((i = 0; i < 40; i++)); do # 4 s: 8 heartbeats of 0.5 s
    [ "$(rcli A EXISTS t/redis/kv/block-1)" = 1 ] && found=1 && break
    sleep 0.1
done
check "the owner's heartbeat puts the name back in the restarted redis" test $found -eq 1
out=$(timeout -s KILL 60 "$app" read kv/block-1 $SIZE 7 2>&1)
check "... and it opens and reads with the same bytes" contains "$out" "read ok"
# A heartbeat during the outage prints the error once and "answers again" after
# it; one after the restart reconnects without a word (its one retry).
check "the owner either said nothing or said the outage and its end" \
    bash -c '! grep -q "registry/redis: .*not available" "$1" || grep -q "answers again" "$1"' _ "$T/o1"
sed -n 's/^/# owner: /p' "$T/o1" | grep registry >&2

# ---- the owner killed: its name expires
timeout -s KILL 120 "$app" watch kv/block-1 $SIZE 7 60 >"$T/w1" 2>&1 </dev/null &
wpid=$!
pids+=("$wpid")
wait_for "$T/w1" "read ok" 60
kill -9 "$owner_pid"
# lease 3 s + heartbeat 0.5 s, and 2 s for a loaded machine
sleep 5.5
check "a killed owner's name is gone from redis within lease + heartbeat (+2 s)" \
    test "$(rcli A EXISTS t/redis/kv/block-1)" = 0
out=$(timeout -s KILL 60 "$app" open kv/block-1 2>&1)
check "... opening it: not found" contains "$out" "open kv/block-1: not found"
wait "$wpid"
check "the reader's watch says the name went away" grep -q "watch: gone" "$T/w1"
check "... and its next read fails cleanly" grep -q "read after gone: \(peer process failed\|not found\|transport error\)" "$T/w1"

# ---- a foreign entry under the namespace
rcli A HSET t/redis/kv/hash f v >/dev/null
out=$(timeout -s KILL 60 "$app" open kv/hash 2>&1)
check "a hash someone put under a name: open fails (no crash)" contains "$out" "open kv/hash: "
check "... saying it is not a Plexus entry" contains "$out" "holds a redis hash, not a string"
out=$(timeout 60 "$names" list 2>&1)
check "px_names list still lists (the foreign key shown as malformed)" contains "$out" "kv/hash"
tap_done
