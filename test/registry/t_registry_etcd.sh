#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# registry/etcd against real etcd servers this test starts on 127.0.0.1
# (test/registry/etcd_lib.sh): put/get/del/list and create-only through the
# module (test/registry/etcd_drive), a lease that ends when its process
# stops renewing, an etcd restarted empty and refilled by the heartbeat, a
# process that stalled past its lease, fail-over to a second endpoint and
# within a 3-member cluster, an etcd that is down or stopped (an error within
# registry_timeout), entries written by someone else (too large, bad keys),
# and two tenants (registry_namespace) on one etcd.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/peers.sh"
. "$PX_SRC/test/registry/etcd_lib.sh"
B=$PX_BUILD
if ! etcd_have; then
    skip "registry/etcd against etcd" "etcd or etcdctl is not installed (scripts/deps.sh installs etcd-server and etcd-client)"
    tap_done
fi
if ! grep -q "registry:etcd" <(sed -n 's/^#define PX_PLUGIN_COMPONENTS_STR //p' "$B/config.h"); then
    skip "registry/etcd against etcd" "registry/etcd is not built (configure found no libcurl or json-c: scripts/deps.sh installs libcurl4-openssl-dev and libjson-c-dev)"
    tap_done
fi
need_built "$B/test/registry/etcd_drive"
peers_setup
D=$B/test/registry/etcd_drive
export PX_MCA_registry=etcd PX_MCA_registry_lease=2 PX_MCA_registry_heartbeat=0.5 \
    PX_MCA_registry_timeout=1
# drive ARGS: the driver in the foreground; in the background the test runs
# "$D" itself (its pid is the driver's, for kill -STOP and -9)
drive() { timeout -s KILL 60 "$D" "$@"; }
# line PREFIX FILE: the first line of FILE starting with PREFIX
line() { grep -m1 -F -- "$1" "$2"; }
# ms PREFIX FILE: the ms= of that line
ms_of() { line "$1" "$2" | sed -n 's/.* ms=\([0-9]*\).*/\1/p'; }
# until_ok SECONDS CMD...: retry CMD every 0.1 s; 0 when it succeeded in time
until_ok() {
    local end=$((SECONDS + $1))
    shift
    while [ $SECONDS -le $end ]; do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
has_key() { [ -n "$(etcdctl_at "$1" get --print-value-only "$2" 2>/dev/null)" ]; }
no_key() { etcdctl_at "$1" get "$2" >/dev/null 2>&1 && [ -z "$(etcdctl_at "$1" get "$2" 2>/dev/null)" ]; }

etcd_up a || { not_ok "etcd starts on 127.0.0.1:${etcd_cport[a]}"; tap_done; }
export PX_MCA_registry_etcd_endpoints=$(etcd_url a)

# ---- put, get, del, list, create-only ----
args=(create a v1 create a v1 create a v2 get a put a v2 get a del a v1 del a v2 del a v2 get a
    delany nothing create l v create l0 v create l.x v)
for i in $(seq 1 40); do args+=(put "l/$i" "value-$i"); done
long=$(head -c 505 /dev/zero | tr '\0' 'n') # "plexus/" + 505: the longest key (512 bytes)
args+=(list l/ create "$long" v get "$long" del "$long" v touch "$T/basic" wait "$T/basic-checked")
"$D" "${args[@]}" >"$T/basic.out" 2>"$T/basic.err" &
dp=$!
until_ok 20 test -e "$T/basic"
check "create of an absent name succeeds" contains "$(line 'create a:' "$T/basic.out")" "rc=0"
check "create again with the same value succeeds (renews)" \
    [ "$(grep -c '^create a: rc=0' "$T/basic.out")" -eq 2 ]
check "create with another value is refused: PX_ERR_EXISTS" \
    contains "$(grep '^create a:' "$T/basic.out" | sed -n 3p)" "rc=-11"
check "get returns what create stored" contains "$(sed -n '/^get a:/p' "$T/basic.out" | sed -n 1p)" "rc=0 ms="
check "... the value v1" contains "$(sed -n '/^get a:/p' "$T/basic.out" | sed -n 1p)" "value=v1"
check "put (any) replaces it" contains "$(sed -n '/^get a:/p' "$T/basic.out" | sed -n 2p)" "value=v2"
check "del with another value is refused: PX_ERR_EXISTS" \
    contains "$(grep '^del a:' "$T/basic.out" | sed -n 1p)" "rc=-11"
check "del with its value removes it" contains "$(grep '^del a:' "$T/basic.out" | sed -n 2p)" "rc=0"
check "del again: PX_ERR_NOT_FOUND" contains "$(grep '^del a:' "$T/basic.out" | sed -n 3p)" "rc=-5"
check "get of a removed name: PX_ERR_NOT_FOUND" \
    contains "$(sed -n '/^get a:/p' "$T/basic.out" | sed -n 3p)" "rc=-5"
check "delany of an absent name: PX_ERR_NOT_FOUND" contains "$(line 'delany nothing:' "$T/basic.out")" "rc=-5"
check "list over two pages finds exactly the 40 names under l/ (not l, l0, l.x)" \
    contains "$(line 'list l/:' "$T/basic.out")" "rc=0 n=40"
check "... with their values" [ "$(grep -c '^item plexus/l/[0-9]*=value-[0-9]*$' "$T/basic.out")" -eq 40 ]
check "the longest key (512 bytes): create, get and delete-if-same work" \
    [ "$(grep -c "^\(create\|del\) $long: rc=0" "$T/basic.out")" -eq 2 ] &&
    contains "$(line "get $long:" "$T/basic.out")" "value=v"
lease=$(etcdctl_at a get plexus/l -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0].get("lease", 0))')
check "entries carry the process's lease (etcdctl: lease $lease)" [ "${lease:-0}" != 0 ]
touch "$T/basic-checked"
wait $dp
check "close revokes the lease: its entries are gone at once" no_key a plexus/l/1
check "no error printed for these calls" [ ! -s "$T/basic.err" ]

# ---- lease: a killed process's names vanish within registry_lease ----
"$D" create crash v touch "$T/crash" sleep 60 >"$T/crash.out" 2>&1 &
dp=$!
pids+=($dp)
until_ok 20 test -e "$T/crash"
check "the entry is there while its process lives" has_key a plexus/crash
kill -9 $dp
check "killed (no revoke, no renewal): the entry vanishes within the 2 s lease (+2 s slack)" \
    until_ok 4 no_key a plexus/crash

# ---- a process stalled past its lease gets a new one and puts again ----
"$D" create stall v touch "$T/stall" hold 12 >"$T/stall.out" 2>"$T/stall.err" &
dp=$!
pids+=($dp)
until_ok 20 test -e "$T/stall"
sleep 1
check "held entry present" has_key a plexus/stall
stop_proc $dp
check "stopped past its lease: the entry expires" until_ok 5 no_key a plexus/stall
kill -CONT $dp
check "resumed: back within a heartbeat (a new lease, put again)" until_ok 3 has_key a plexus/stall
check "... saying the lease was gone" contains "$(cat "$T/stall.err")" "is gone"

# ---- etcd restarted empty: refilled within a heartbeat ----
"$D" create keep v touch "$T/restart" hold 15 >"$T/restart.out" 2>"$T/restart.err" &
dp=$!
pids+=($dp)
until_ok 20 test -e "$T/restart"
sleep 0.5
check "entry present before the restart" has_key a plexus/keep
etcd_kill a
etcd_wipe a
etcd_start a
etcd_wait a || not_ok "etcd a restarts on its port ${etcd_cport[a]}"
check "the live process puts its entry again within a heartbeat (+2 s slack)" \
    until_ok 3 has_key a plexus/keep
check "... with a new lease, saying so (naming the endpoint)" \
    contains "$(grep 'is gone' "$T/restart.err")" "$(etcd_url a)"
kill $dp 2>/dev/null
wait $dp 2>/dev/null

# ---- fail-over between two independent etcd servers ----
etcd_up b || not_ok "etcd b starts"
PX_MCA_registry_etcd_endpoints="$(etcd_url a),$(etcd_url b)"
export PX_MCA_registry_etcd_endpoints
"$D" create f v touch "$T/fo1" wait "$T/fo2" create g v get g create h v touch "$T/fo3" \
    wait "$T/fo4" >"$T/fo.out" 2>"$T/fo.err" &
dp=$!
until_ok 20 test -e "$T/fo1"
check "with a,b: the first endpoint (a) is used" has_key a plexus/f
etcd_kill a
touch "$T/fo2"
until_ok 15 test -e "$T/fo3"
check "a killed: create goes to b (a new lease there)" contains "$(line 'create g:' "$T/fo.out")" "rc=0"
check "... and is readable there" contains "$(line 'get g:' "$T/fo.out")" "value=v"
check "... b holds it" has_key b plexus/g
check "the switch is said once, naming both endpoints" \
    [ "$(grep -c "using $(etcd_url b)" "$T/fo.err")" -eq 1 ]
check "... and why a failed" contains "$(grep 'using' "$T/fo.err")" "$(etcd_url a)"
check "a later call goes straight to b" contains "$(line 'create h:' "$T/fo.out")" "rc=0"
touch "$T/fo4"
wait $dp

# ---- etcd down at start: a clear error within registry_timeout ----
export PX_MCA_registry_etcd_endpoints=$(etcd_url a)
t0=$(date +%s%N)
drive get x >"$T/down.out" 2>"$T/down.err"
rc=$?
took=$((($(date +%s%N) - t0) / 1000000))
check "etcd down: no module (exit 2)" [ $rc -eq 2 ]
check "... the error names the endpoint and what happened" \
    contains "$(cat "$T/down.err")" "$(etcd_url a)"
check "... within registry_timeout (1 s; took $took ms, +1 s slack for the process)" [ $took -lt 2000 ]

# ---- a stopped etcd: PX_ERR_TIMEOUT within the bound ----
export PX_MCA_registry_etcd_endpoints=$(etcd_url b)
"$D" create s v touch "$T/stop1" wait "$T/stop2" get s hb touch "$T/stop3" >"$T/stop.out" 2>"$T/stop.err" &
dp=$!
until_ok 20 test -e "$T/stop1"
stop_proc "${etcd_pid[b]}"; ps -o pid,stat,comm -p "${etcd_pid[b]}" | sed "s/^/# /"
touch "$T/stop2"
until_ok 10 test -e "$T/stop3"
kill -CONT "${etcd_pid[b]}"
wait $dp
check "etcd stopped: get gives PX_ERR_TIMEOUT" contains "$(line 'get s:' "$T/stop.out")" "rc=-12"
ms=$(ms_of 'get s:' "$T/stop.out")
check "... within registry_timeout (1 s; took ${ms:-?} ms, +0.5 s slack)" [ "${ms:-99999}" -lt 1500 ]
check "... and the heartbeat too" contains "$(line 'hb:' "$T/stop.out")" "rc=-12"
check "... saying which endpoint did not answer" contains "$(cat "$T/stop.err")" "no endpoint answered"

# ---- entries written by someone else ----
head -c 70000 /dev/zero | tr '\0' 'x' | etcdctl_at b put plexus/bad/big >/dev/null
etcdctl_at b put "plexus/bad/$(head -c 600 /dev/zero | tr '\0' 'k')" v >/dev/null
etcdctl_at b put plexus/bad/ok fine >/dev/null
etcdctl_at b put plexus/bad/empty "" >/dev/null
# a key with a NUL byte, through the gateway ("plexus/bad/\0x")
curl -s -X POST "$(etcd_url b)/v3/kv/put" -d "{\"key\":\"$(printf 'plexus/bad/\0x' | base64)\",\"value\":\"eA==\"}" >/dev/null
drive get bad/big list bad/ get bad/empty >"$T/bad.out" 2>"$T/bad.err"
check "a value over 64 KiB: PX_ERR_BAD_PARAM" contains "$(line 'get bad/big:' "$T/bad.out")" "rc=-4"
check "... saying why" contains "$(cat "$T/bad.err")" "longer than 65536 bytes"
check "list leaves out the oversized value, the long key and the NUL key, and lists the rest" \
    contains "$(line 'list bad/:' "$T/bad.out")" "rc=0 n=2"
check "... saying so for the long key" contains "$(cat "$T/bad.err")" "longer than 512 bytes"
check "... and the NUL key" contains "$(cat "$T/bad.err")" "contains a NUL byte"
check "an empty value (omitted by the gateway) reads as empty" \
    contains "$(line 'get bad/empty:' "$T/bad.out")" "rc=0"

# ---- bad endpoints: a clear error ----
PX_MCA_registry_etcd_endpoints="127.0.0.1:2379" drive get x >/dev/null 2>"$T/badep.err"
check "an endpoint without http:// is refused, saying what is accepted" \
    contains "$(cat "$T/badep.err")" "accepted: http://host:port"

# ---- two tenants on one etcd ----
PX_MCA_registry_namespace=t1 "$D" create n one touch "$T/t1" wait "$T/t2" list "" \
    >"$T/t1.out" 2>&1 &
dp=$!
until_ok 20 test -e "$T/t1"
PX_MCA_registry_namespace=t2 drive create n two get n list "" touch "$T/t2" >"$T/t2.out" 2>&1
wait $dp
check "tenant t2 creates the name t1 holds (separate keys)" contains "$(line 'create n:' "$T/t2.out")" "rc=0"
check "... reads its own value" contains "$(line 'get n:' "$T/t2.out")" "value=two"
check "... lists only its own names" contains "$(line 'list :' "$T/t2.out")" "n=1"
check "tenant t1 lists only its own" [ "$(grep -c '^item t1/n=one$' "$T/t1.out")" = 1 ] &&
    contains "$(line 'list :' "$T/t1.out")" "n=1"

# ---- a 3-member cluster: a member killed, the others serve, same lease ----
cl=""
for n in c1 c2 c3; do
    etcd_ports $n
    cl="$cl${cl:+,}$n=$(etcd_peer_url $n)"
done
for n in c1 c2 c3; do etcd_start $n "$cl"; done
if etcd_wait c1 && etcd_wait c2 && etcd_wait c3; then
    export PX_MCA_registry_etcd_endpoints="$(etcd_url c1),$(etcd_url c2),$(etcd_url c3)"
    # registry_timeout 3 s here: when c1 was the leader, the others answer
    # only after electing a new one (election timeout 500 ms, longer on a
    # loaded machine: a 1 s bound failed once at load 20, "rc=-12 ms=1002").
    PX_MCA_registry_timeout=3 \
    "$D" create m v touch "$T/cl1" wait "$T/cl2" get m hb create m v touch "$T/cl3" hold 3 >"$T/cl.out" 2>"$T/cl.err" &
    dp=$!
    until_ok 20 test -e "$T/cl1"
    etcd_kill c1
    touch "$T/cl2"
    until_ok 15 test -e "$T/cl3"
    check "cluster, c1 killed: get served by another member" contains "$(line 'get m:' "$T/cl.out")" "value=v"
    check "... the lease is the cluster's: keepalive renews it (no new lease)" \
        [ "$(grep -c 'is gone' "$T/cl.err")" -eq 0 ]
    check "... create renews" [ "$(grep -c '^create m: rc=0' "$T/cl.out")" -eq 2 ]
    wait $dp
    check "... the entry stays while held, then close revokes it" no_key c2 plexus/m
else
    not_ok "a 3-member etcd cluster starts"
fi
tap_done
