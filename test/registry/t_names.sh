#!/usr/bin/env bash
# Named segments (runtime/plexus_name.h, docs/registry.md) between processes
# started separately (px_init alone each), over "dirstore": a registry
# component built here OUT of tree, against the installed headers and
# plexus.pc only (test/registry/dirstore.c: one file per key in a folder,
# lease = the file's mtime + registry_lease). Publish/open/read, px_names
# list/get/del, a name taken (EXISTS naming the holder), an own name opened
# by its owner, unpublish, a moved segment (refresh/watch say so, reads see
# the new bytes), px_xfer_free unpublishing, a store restarted empty (refilled
# within a heartbeat), a crashed owner (its name gone within lease +
# heartbeat, the reader's watch says so and its next read fails cleanly),
# malformed, oversized and newer-format entries, bad names (refused before
# any store call), namespaces, px_finalize unpublishing, no usable component.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/install.sh"
B=$PX_BUILD
app=$B/test/registry/name_probe
names=$B/tools/px_names/px_names
need_built "$app"
need_built "$names"
. "$PX_SRC/test/lib/peers.sh"
peers_setup

. "$PX_SRC/test/registry/names_lib.sh"
names_need_deps "named segments"

# ---- dirstore, out of tree
px_staged_install "$T/root" "$T/install.log"
check "make install into a staging root" test $? -eq 0
pc=$(find "$T/root" -name plexus.pc | head -1)
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$T/root
mkdir -p "$T/plug"
cc -std=gnu11 -O2 -Wall -Wextra -Werror -shared -fPIC $(pkg-config --cflags plexus) \
    -o "$T/plug/plexus_registry_dirstore.so" "$PX_SRC/test/registry/dirstore.c" 2>"$T/cc.log"
check "dirstore (a registry component) builds out of tree with the installed headers and plexus.pc" \
    test -f "$T/plug/plexus_registry_dirstore.so" || sed 's/^/#   /' "$T/cc.log" | head
printf '#include <plexus/plexus_name.h>\nint main(void) { return PX_NAME_MAX != 200; }\n' >"$T/inc.c"
cc -std=gnu11 -Wall -Werror -c $(pkg-config --cflags plexus) -o "$T/inc.o" "$T/inc.c" 2>"$T/inc.log"
check "an application includes <plexus/plexus_name.h> with pkg-config --cflags plexus" test -f "$T/inc.o"

export PX_MCA_mca_component_path_prepend=$T/plug
export PX_MCA_registry_dirstore_dir=$T/store
export PX_MCA_registry_lease=3 PX_MCA_registry_heartbeat=0.5 PX_MCA_registry_cache_ttl=0
export PX_MCA_registry_watch_interval=0.1
store=$T/store

out=$("$B/tools/px_info/px_info" 2>&1)
check "px_info lists the registry framework with the plugin" contains "$out" "MCA registry: dirstore"
out=$("$B/tools/px_info/px_info" --param registry all --level 9 2>&1)
for v in registry_namespace registry_lease registry_heartbeat registry_timeout registry_cache_ttl \
    registry_watch_interval registry_dirstore_dir; do
    check "px_info shows the variable $v" contains "$out" "\"$v\""
done

SIZE=1048576

# ---- publish, open, read
start_owner kv/block-1 $SIZE 7 "$T/c1" "$T/o1"
check "an owner publishes kv/block-1 (1 MiB)" grep -q "^published" "$T/o1"
out=$(timeout -s KILL 60 "$app" read kv/block-1 $SIZE 7 2>&1)
check "another process opens kv/block-1 and reads the 1 MiB it holds" contains "$out" "read ok"
check "... and its px_finalize succeeds" contains "$out" "finalized: success"

out=$(timeout 60 "$names" list 2>&1)
check "px_names list shows the name, its kind and length" contains "$out" "kv/block-1"
check "... as a region of 1048576 B with its owner's pid" contains "$out" "1048576 B  host $(hostname) pid $owner_pid"
out=$(timeout 60 "$names" list kv/ 2>&1)
check "px_names list kv/ counts it under the prefix" contains "$out" "1 name(s) under \"plexus/kv/\""
out=$(timeout 60 "$names" get kv/block-1 2>&1)
check "px_names get decodes the entry (kind)" contains "$out" "kind: region"
check "... (owner)" contains "$out" "owner: host $(hostname), pid $owner_pid"
check "... and prints it (versioned JSON)" contains "$out" '"plexus":1'

# ---- a named read split with its owner (btl/shm, docs/shm.md "Split single
# copy"): the reader, a dynamic peer of the owner, offers its 1 MiB get
# through the connection's ring (the slot in its connection segment); the
# owner, in progress, writes the chunks it claims (4 of 256 KiB). Counted by
# btl/shm's line at px_finalize (btl_base_verbose 5). With the hook "leave"
# the reader copies none; an owner that never joins (hook "ignore") leaves
# all 4 to the reader, which completes alone; an owner with
# btl_shm_cma_split=0 (as one from before session 35) says in its segment
# that it takes no offers, and none is sent.
shmline() { sed -n 's/.*btl shm: single copies [0-9]* (\(split [0-9]*\), of them one-sided \([0-9]*\), joined by the sender \([0-9]*\), chunks read ourselves \([0-9]*\), chunks written for peers \([0-9]*\)).*/\1 xfer \2 joined \3 own \4 wrote \5/p' "$1" | head -1; }
split_case() { # NAME OWNER_ENV READER_ENV READER_WANTS OWNER_WANTS
    mkdir -p "$T/cs$1"
    env $2 PX_MCA_btl_base_verbose=5 timeout -s KILL 120 "$app" owner split/$1 $SIZE 9 "$T/cs$1" \
        >"$T/os$1" 2>&1 </dev/null &
    pids+=($!)
    wait_for "$T/os$1" "^published" 60
    env $3 PX_MCA_btl_base_verbose=5 timeout -s KILL 60 "$app" read split/$1 $SIZE 9 >"$T/rs$1" 2>&1
    touch "$T/cs$1/stop"
    wait_for "$T/os$1" "^finalized" 30
    check "split $1: the named read of 1 MiB is intact" grep -q "read ok" "$T/rs$1"
    check "split $1: the reader: $4 ($(shmline "$T/rs$1"))" [ "$(shmline "$T/rs$1")" = "$4" ]
    check "split $1: the owner: $5 ($(shmline "$T/os$1"))" [ "$(shmline "$T/os$1")" = "$5" ]
}
split_case leave "" PX_BTL_SHM_TEST_SPLIT=leave \
    "split 1 xfer 1 joined 1 own 0 wrote 0" "split 0 xfer 0 joined 0 own 0 wrote 4"
split_case ignore "PX_MCA_btl_shm_dyn_split=1 PX_BTL_SHM_TEST_SPLIT=ignore" "" \
    "split 1 xfer 1 joined 0 own 4 wrote 0" "split 0 xfer 0 joined 0 own 0 wrote 0"
split_case off PX_MCA_btl_shm_cma_split=0 "" \
    "split 0 xfer 0 joined 0 own 0 wrote 0" "split 0 xfer 0 joined 0 own 0 wrote 0"
# An owner that sets btl_shm_dyn_split false (default true) takes no offers
# from connected readers, which read alone.
split_case dyn-off PX_MCA_btl_shm_dyn_split=0 "" \
    "split 0 xfer 0 joined 0 own 0 wrote 0" "split 0 xfer 0 joined 0 own 0 wrote 0"

# ---- taken by another process
out=$(timeout -s KILL 60 "$app" publish kv/block-1 2>&1)
check "publishing a name another live process holds: already exists" contains "$out" "publish kv/block-1: already exists"
check "... naming the holder's host and pid" contains "$out" "host $(hostname), pid $owner_pid"

# ---- an own name, unpublish
out=$(timeout -s KILL 60 "$app" self me/self $SIZE 3 2>&1)
check "an owner opens its own name (peer = its rank) and reads it" contains "$out" "self ok"
out=$(timeout -s KILL 60 "$app" unpublish me/gone 2>&1)
check "unpublish: success" contains "$out" "unpublish me/gone: success"
check "... then opening it: not found" contains "$out" "open after unpublish me/gone: not found"
check "... with a message naming the name and the store" contains "$out" "no name \"me/gone\" in registry dirstore"
check "unpublishing a name this process does not hold: not found" contains "$out" "unpublish again me/gone: not found"

# ---- a moved segment
timeout -s KILL 120 "$app" watch kv/block-1 $SIZE 7 60 >"$T/w1" 2>&1 </dev/null &
wpid=$!
pids+=("$wpid")
wait_for "$T/w1" "read ok" 60
touch "$T/c1/move"
wait_for "$T/o1" "^moved" 30
wait "$wpid"
check "the owner republishes kv/block-1 with a new region" grep -q "republish kv/block-1: success" "$T/o1"
check "a reader's watch says the name moved" grep -q "watch: moved" "$T/w1"
check "... and its reads then see the new region's bytes" grep -q "read ok after move" "$T/w1"

# ---- store restarted empty: refilled within a heartbeat
rm -rf "$store"
found=0
for ((i = 0; i < 40; i++)); do # 4 s: 8 heartbeats of 0.5 s
    [ -f "$store/plexus%2Fkv%2Fblock-1" ] && found=1 && break
    sleep 0.1
done
check "a store restarted empty is refilled by the live owner's heartbeat" test $found -eq 1
out=$(timeout -s KILL 60 "$app" read kv/block-1 $SIZE 8 2>&1)
check "... and the name opens and reads again" contains "$out" "read ok"

# ---- px_xfer_free unpublishes
touch "$T/c1/free"
wait_for "$T/o1" "^freed" 30
out=$(timeout -s KILL 60 "$app" open kv/block-1 2>&1)
check "px_xfer_free of a published region unpublishes its name" contains "$out" "open kv/block-1: not found"

# ---- a crashed owner
start_owner kv/crash 65536 5 "$T/c2" "$T/o2"
timeout -s KILL 120 "$app" watch kv/crash 65536 5 60 >"$T/w2" 2>&1 </dev/null &
wpid=$!
pids+=("$wpid")
wait_for "$T/w2" "read ok" 60
kill -9 "$owner_pid"
# lease 3 s + heartbeat 0.5 s, and 2 s for a loaded machine: asked every
# 0.25 s until it is gone, for at most 5.5 s
t_end=$((${EPOCHREALTIME/./} + 5500000))
while :; do
    out=$(timeout 60 "$names" get kv/crash 2>&1)
    case $out in *"no name \"kv/crash\""*) break ;; esac
    [ "${EPOCHREALTIME/./}" -ge "$t_end" ] && break
    sleep 0.25
done
check "a crashed owner's name is gone within lease + heartbeat (+2 s)" contains "$out" "no name \"kv/crash\""
wait "$wpid"
check "the reader's watch says the name went away" grep -q "watch: gone" "$T/w2"
check "... and its next read fails cleanly" grep -q "read after gone: \(peer process failed\|not found\|transport error\)" "$T/w2"
sed 's/^/# w2: /' "$T/w2" | grep -i "read after\|watch" >&2

# ---- malformed, oversized, newer entries (written by someone else)
# Each is written just before the check that reads it: the store's lease
# (a file's age, registry_lease 3 s) runs out in a few seconds, and under
# ThreadSanitizer one run of the app takes about a second.
mkdir -p "$store"
foreign() { # foreign NAME: write the foreign entry bad/NAME again
    case $1 in
    json) printf 'not json at all' ;;
    newer) printf '{"plexus":2,"kind":"region","future":true}' ;;
    b64) printf '{"plexus":1,"kind":"region","contact":"x","key":"!!!!","length":1,"host":"h","pid":1,"owner":"0123456789abcdef"}' ;;
    type) printf '{"plexus":1,"kind":"region","contact":"x","key":"AAAA","length":"1","host":"h","pid":1,"owner":"0123456789abcdef"}' ;;
    big) head -c 70000 /dev/zero | tr '\0' 'x' ;;
    esac >"$store/plexus%2Fbad%2F$1"
}
foreign json
out=$(timeout -s KILL 60 "$app" open bad/json 2>&1)
check "an entry that is not JSON: bad parameter" contains "$out" "open bad/json: bad parameter"
check "... saying why" contains "$out" "is not one Plexus can use: it is not JSON"
foreign newer
out=$(timeout -s KILL 60 "$app" open bad/newer 2>&1)
check "an entry of a newer format: version mismatch" contains "$out" "open bad/newer: version mismatch"
check "... naming its version and the ones read" contains "$out" "format version 2, written by a newer Plexus; this one reads versions 1 to 1"
foreign b64
out=$(timeout -s KILL 60 "$app" open bad/b64 2>&1)
check "an entry whose key is not base64: refused, saying so" contains "$out" "the field \"key\" is not base64"
foreign type
out=$(timeout -s KILL 60 "$app" open bad/type 2>&1)
check "an entry with a field of the wrong type: refused, naming the field" contains "$out" "the field \"length\" is not an integer"
foreign big
out=$(timeout -s KILL 60 "$app" open bad/big 2>&1)
check "an oversized value: bad parameter" contains "$out" "open bad/big: bad parameter"
check "... naming the limit" contains "$out" "65536"
foreign json
out=$(timeout 60 "$names" list bad 2>&1)
check "px_names list shows malformed entries as such" contains "$out" "(not a Plexus entry: it is not JSON"
foreign json
out=$(timeout 60 "$names" get bad/json 2>&1)
check "px_names get of a foreign entry: why, and its raw bytes" contains "$out" "raw (15 bytes): not json at all"

# ---- bad names: refused before any store call (the store is unusable here)
out=$(PX_MCA_registry_dirstore_dir=/proc/no/such/folder timeout -s KILL 60 "$app" open 'bad name!' 2>&1)
check "a name with a space and '!': bad parameter" contains "$out" "open bad name!: bad parameter"
check "... with what is accepted" contains "$out" "accepted: 1-"
for n in /lead trail/ 'a//b'; do
    out=$(timeout -s KILL 60 "$app" publish "$n" 2>&1)
    check "publishing the name '$n': bad parameter" contains "$out" "publish $n: bad parameter"
done
out=$(timeout -s KILL 60 "$app" publish "$(head -c 201 /dev/zero | tr '\0' a)" 2>&1)
check "a name of 201 bytes: bad parameter (too long)" contains "$out" "it is too long"

# ---- px_names del
start_owner del/me 4096 1 "$T/c3" "$T/o3"
out=$(timeout 60 "$names" del del/me 2>&1)
check "px_names del removes a name, saying whose it was" contains "$out" "removed del/me (key plexus/del/me in registry dirstore): a region of host $(hostname), pid $owner_pid"
# written again: the store's lease (the file's age) may have run out meanwhile
foreign json
out=$(timeout 60 "$names" del bad/json 2>&1)
check "px_names del removes a foreign entry too" contains "$out" "bytes that were not a Plexus entry"
out=$(timeout 60 "$names" get nothing/here 2>&1)
rc=$?
check "px_names get of a missing name: exit 1 with a message" test $rc -eq 1
check "... naming it" contains "$out" "no name \"nothing/here\" in registry dirstore"
touch "$T/c3/stop"
wait_for "$T/o3" "finalized" 30

# ---- a name taken by another process while its owner's entry was gone
start_owner take/x 4096 1 "$T/c6" "$T/o6"
pid_a=$owner_pid
# The first owner stays stopped while its entry is removed and the name
# taken: otherwise its heartbeat (0.5 s) may put it back first, as it should.
check "the first owner is stopped (all its threads)" stop_proc "$pid_a"
timeout 60 "$names" del take/x >/dev/null 2>&1
start_owner take/x 4096 2 "$T/c7" "$T/o7"
check "another process publishes a name removed from the store" grep -q "publish take/x: success" "$T/o7"
kill -CONT "$pid_a"
wait_for "$T/o6" "was taken by another process" 10
check "the first owner's heartbeat finds it taken: drops it and says so" grep -q "the name \"take/x\" (key \"plexus/take/x\") of this process was taken by another process (host $(hostname), pid $owner_pid)" "$T/o6"
out=$(timeout 60 "$names" get take/x 2>&1)
check "... and does not overwrite it" contains "$out" "pid $owner_pid"
touch "$T/c6/stop" "$T/c7/stop"
wait_for "$T/o6" "finalized" 30
wait_for "$T/o7" "finalized" 30
check "the first owner's px_finalize leaves the name it lost alone" grep -q "finalized: success" "$T/o6"

# ---- px_finalize unpublishes
start_owner fin/x 4096 1 "$T/c4" "$T/o4"
check "the entry of fin/x is in the store" test -f "$store/plexus%2Ffin%2Fx"
touch "$T/c4/stop"
wait_for "$T/o4" "finalized" 30
check "px_finalize unpublishes this process's names (at once, not after the lease)" test ! -f "$store/plexus%2Ffin%2Fx"

# ---- contacts
mkdir -p "$T/c5"
timeout -s KILL 120 "$app" contact svc/a "$T/c5" >"$T/o5" 2>&1 </dev/null &
pids+=($!)
wait_for "$T/o5" "^published" 60
out=$(timeout -s KILL 60 "$app" connect svc/a 2>&1)
check "px_name_connect reaches a process by its published contact" contains "$out" "connect ok"
out=$(timeout 60 "$names" get svc/a 2>&1)
check "px_names get shows a contact" contains "$out" "kind: contact"
touch "$T/c5/stop"

# ---- namespaces (tenants)
out=$(PX_MCA_registry_namespace=tenant2 timeout 60 "$names" list 2>&1)
check "another namespace does not see these names" contains "$out" "0 name(s) under \"tenant2/\""
out=$(PX_MCA_registry_namespace=tenant2 timeout -s KILL 60 "$app" open me/self 2>&1)
check "... nor opens them" contains "$out" "open me/self: not found"

# ---- the registry framework loads at the first name call, not at px_init
# (its plugins pull in libcurl, hiredis, PMIx: 13 ms of every process's start)
out=$(PX_MCA_registry_dirstore_dirr=x timeout 60 "$app" loaded nothing/here 2>&1)
check "px_init loads no registry plugin" contains "$out" "after px_init: 0 registry plugin(s) loaded"
check "the first px_name_* call loads them" grep -Eq 'after px_name_open: [1-9][0-9]* registry plugin' <<<"$out"
check "... and a misspelled variable of a registry component is reported then" \
    contains "$(sed -n '/^after px_init/,$p' <<<"$out")" 'unknown variable "registry_dirstore_dirr"'
check "... once" [ "$(grep -c 'unknown variable "registry_dirstore_dirr"' <<<"$out")" = 1 ]

# ---- settings and selection errors
# (registry/p2p, built in, needs nothing and serves any process: left out here)
out=$(PX_MCA_registry='^p2p' PX_MCA_registry_dirstore_dir= timeout 60 "$names" list 2>&1)
check "no usable registry: px_names says no component can serve" contains "$out" "no component can serve this process"
check "... with each component's answer" contains "$out" "dirstore declined"
out=$(PX_MCA_registry_heartbeat=5 timeout 60 "$names" list 2>&1)
check "a heartbeat not below the lease is refused, naming both" contains "$out" "registry_heartbeat = 5 s is not below registry_lease = 3 s"
out=$(PX_MCA_registry_namespace='a b' timeout 60 "$names" list 2>&1)
check "a namespace with a space is refused" contains "$out" "registry_namespace = \"a b\" is not usable"

tap_done
