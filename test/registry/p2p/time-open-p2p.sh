#!/usr/bin/env bash
# Open by name to first byte on one host with registry/p2p (issue 24's target:
# at most 2 ms): an owner publishes a region, then RUNS reader processes, each
# started separately, open its "a.b.c.d:port/name" cold (registry lookup asked
# of the owner, connection made, region imported) and read 8 bytes; and RUNS
# lookups alone (registry_p2p_probe get: the registry's part). Prints each
# figure's median, min and max. Not a test: nothing asserts a time.
# Usage: test/registry/p2p/time-open-p2p.sh BUILD_DIR [RUNS (default 21)]
set -u
B=$(cd "${1:?usage: time-open-p2p.sh BUILD_DIR [RUNS]}" && pwd)
runs=${2:-21}
T=$(mktemp -d)
trap 'kill -9 $opid 2>/dev/null; rm -rf "$T"' EXIT
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
export PX_MCA_peer_secret_file=$T/secret PX_MCA_mca_component_path=$B/.libs
prog=$B/test/registry/p2p/registry_p2p_names
probe=$B/test/registry/p2p/registry_p2p_probe
"$prog" owner "$T/q" 1048576 kv/block-7 >"$T/owner.out" 2>&1 </dev/null &
opid=$!
for _ in $(seq 1 600); do [ -s "$T/q" ] && break; sleep 0.05; done
Q=$(cat "$T/q")
for i in $(seq 1 "$runs"); do
    "$prog" reader "$Q" 1048576 </dev/null >"$T/r$i" 2>&1 || { echo "reader $i failed:"; cat "$T/r$i"; }
    "$probe" get "$Q" </dev/null >"$T/g$i" 2>&1
done
stats() { # label, then numbers on stdin
    sort -g | awk -v l="$1" '{v[NR]=$1} END {if (NR) printf "%-34s median %8.1f us  min %8.1f  max %8.1f  (%d runs)\n", l, v[int((NR+1)/2)], v[1], v[NR], NR}'
}
echo "# $(date -u +%FT%TZ) $(uname -n), $runs runs, $(nproc) cores; name $Q"
sed -n 's/^first_byte_us=//p' "$T"/r* | stats "open by name to first byte (cold)"
sed -n 's/^open_us=//p' "$T"/r* | stats "  of which px_name_open"
sed -n 's/^warm_first_byte_us=//p' "$T"/r* | stats "open again to first byte (warm)"
sed -n 's/^elapsed_ms=//p' "$T"/g* | awk '{print $1*1000}' | stats "registry/p2p get alone"
