#!/usr/bin/env bash
# Open-by-name to first byte over registry/redis on one host (docs/registry.md,
# "redis"): a redis-server on a random port, one owner publishing 64 KiB and
# progressing without pause, then RUNS separate reader processes
# (redis_open_time: selection timed apart, one cold open + 64-byte read, then
# N warm ones). Measures; asserts nothing; not run by the suite.
#   bash test/registry/redis_open_bench.sh BUILD_DIR [RUNS] [N]
set -u
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-7}
N=${3:-200}
T=$(mktemp -d)
P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$P" --bind 127.0.0.1 --save "" --appendonly no --dir "$T" --daemonize no \
    >/dev/null 2>&1 &
rp=$!
trap 'kill $rp ${op:-} 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 50); do redis-cli -p "$P" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
export PX_MCA_peer_secret_file=$T/secret PX_MCA_mca_component_path=$B/.libs PX_MCA_registry=redis \
    PX_MCA_registry_redis_endpoints=127.0.0.1:$P PX_MCA_registry_cache_ttl=0
"$B/test/registry/redis_open_time" --owner bench/blk "$T/stop" >"$T/owner" 2>&1 &
op=$!
for i in $(seq 100); do grep -q "owner bench/blk: success" "$T/owner" && break; sleep 0.1; done
for i in $(seq "$RUNS"); do "$B/test/registry/redis_open_time" bench/blk "$N"; done | tee "$T/runs"
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "median of $RUNS runs: select $(sed -n 's/.*selected in \([0-9]*\) us.*/\1/p' "$T/runs" | median) us," \
    "cold open+first byte $(sed -n 's/.*: cold \([0-9]*\) us.*/\1/p' "$T/runs" | median) us," \
    "warm $(sed -n 's/.*warm median \([0-9]*\) us.*/\1/p' "$T/runs" | median) us" \
    "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
touch "$T/stop"
wait "$op" 2>/dev/null
