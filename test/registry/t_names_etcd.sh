#!/usr/bin/env bash
# Named segments over registry/etcd, end to end: processes started
# separately (test/registry/name_probe, px_init alone each) meet through an
# etcd this test starts (test/registry/etcd_lib.sh). Publish, open and read
# 1 MiB checking its pattern, px_names over etcd, a name taken, an etcd
# restarted empty (the live owner puts its entry again within a heartbeat
# and readers read again), a crashed owner (its name gone within the lease,
# the reader's watch says so), two tenants on one etcd, a malformed entry
# written with etcdctl, px_finalize unpublishing at once.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/peers.sh"
. "$PX_SRC/test/registry/etcd_lib.sh"
B=$PX_BUILD
app=$B/test/registry/name_probe
names=$B/tools/px_names/px_names
if ! etcd_have; then
    skip "named segments over etcd" "etcd or etcdctl is not installed (scripts/deps.sh installs etcd-server and etcd-client)"
    tap_done
fi
if ! grep -q "registry:etcd" <(sed -n 's/^#define PX_PLUGIN_COMPONENTS_STR //p' "$B/config.h"); then
    skip "named segments over etcd" "registry/etcd is not built (configure found no libcurl or json-c: scripts/deps.sh installs libcurl4-openssl-dev and libjson-c-dev)"
    tap_done
fi
if ! grep -q '^#define PX_HAVE_SODIUM 1' "$B/config.h"; then
    skip "named segments over etcd" "built without libsodium: processes cannot connect (install libsodium-dev)"
    tap_done
fi
need_built "$app" "$names"
peers_setup
etcd_up e || { not_ok "etcd starts on 127.0.0.1:${etcd_cport[e]}"; tap_done; }
export PX_MCA_registry=etcd PX_MCA_registry_etcd_endpoints=$(etcd_url e)
export PX_MCA_registry_lease=3 PX_MCA_registry_heartbeat=0.5 PX_MCA_registry_cache_ttl=0
export PX_MCA_registry_watch_interval=0.1 PX_MCA_registry_timeout=2

. "$PX_SRC/test/registry/names_lib.sh"
until_ok() { # SECONDS CMD...
    local end=$((SECONDS + $1))
    shift
    while [ $SECONDS -le $end ]; do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
has_key() { [ -n "$(etcdctl_at e get --print-value-only "$1" 2>/dev/null)" ]; }
no_key() { etcdctl_at e get "$1" >/dev/null 2>&1 && [ -z "$(etcdctl_at e get "$1" 2>/dev/null)" ]; }
SIZE=1048576

# ---- publish, open, read through etcd
start_owner kv/block-1 $SIZE 7 "$T/c1" "$T/o1"
check "an owner publishes kv/block-1 (1 MiB) in etcd" grep -q "^published" "$T/o1"
check "... etcd holds the entry (etcdctl)" has_key plexus/kv/block-1
out=$(timeout -s KILL 60 "$app" read kv/block-1 $SIZE 7 2>&1)
check "another process opens kv/block-1 through etcd and reads the 1 MiB pattern" contains "$out" "read ok"
out=$(timeout 60 "$names" list kv/ 2>&1)
check "px_names list over etcd shows it with its owner" contains "$out" "1048576 B  host $(hostname) pid $owner_pid"
out=$(timeout -s KILL 60 "$app" publish kv/block-1 2>&1)
check "publishing a name another live process holds: already exists" contains "$out" "publish kv/block-1: already exists"

# ---- etcd restarted empty: the owner publishes again within a heartbeat
etcd_kill e
etcd_wipe e
etcd_start e
etcd_wait e || not_ok "etcd e restarts on its port ${etcd_cport[e]}"
check "etcd restarted empty: the live owner's entry is back within a heartbeat (+2 s)" \
    until_ok 3 has_key plexus/kv/block-1
out=$(timeout -s KILL 60 "$app" read kv/block-1 $SIZE 7 2>&1)
check "... and the name opens and reads again" contains "$out" "read ok"
check "... the owner said its lease was gone" grep -q "is gone" "$T/o1"

# ---- a crashed owner: gone within the lease, the reader's watch says so
start_owner kv/crash 65536 5 "$T/c2" "$T/o2"
timeout -s KILL 120 "$app" watch kv/crash 65536 5 60 >"$T/w2" 2>&1 </dev/null &
wpid=$!
pids+=("$wpid")
wait_for "$T/w2" "read ok" 60
kill -9 "$owner_pid"
check "a crashed owner's entry is gone within the 3 s lease (+2 s)" until_ok 5 no_key plexus/kv/crash
wait "$wpid"
check "the reader's watch says the name went away" grep -q "watch: gone" "$T/w2"

# ---- two tenants on one etcd
PX_MCA_registry_namespace=t1 start_owner ten/x 4096 3 "$T/c3" "$T/o3"
out=$(PX_MCA_registry_namespace=t2 timeout -s KILL 60 "$app" open ten/x 2>&1)
check "tenant t2 does not see tenant t1's name" contains "$out" "open ten/x: not found"
out=$(PX_MCA_registry_namespace=t1 timeout -s KILL 60 "$app" read ten/x 4096 3 2>&1)
check "tenant t1 reads it" contains "$out" "read ok"
touch "$T/c3/stop"
wait_for "$T/o3" "finalized" 30
check "px_finalize unpublishes at once (not after the lease)" no_key t1/ten/x

# ---- an entry written by someone else
etcdctl_at e put plexus/bad/json "not json at all" >/dev/null
out=$(timeout -s KILL 60 "$app" open bad/json 2>&1)
check "an entry that is not Plexus's (etcdctl put): bad parameter" contains "$out" "open bad/json: bad parameter"

touch "$T/c1/stop"
wait_for "$T/o1" "finalized" 30
check "the first owner ends cleanly" grep -q "finalized: success" "$T/o1"
tap_done
