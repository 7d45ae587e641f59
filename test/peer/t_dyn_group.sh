#!/usr/bin/env bash
# Groups of connected peers (px_group_from_peers; docs/peers.md): dyn_group
# members started separately by this script (each px_init alone: no
# launcher), in a random order, connecting pairwise in a random order, with a
# 0600 secret file. Over shm (the default btl list) and over ofi
# (PX_MCA_btl=self,ofi): 4 members form a group, agree on its order and run
# every collective on sizes from 4 B to 1.2 MB per member with every result
# checked; 3 members: one killed in the middle of allreduces (the others fail
# with an error naming it, form a group of the two survivors and go on); one
# killed while nothing is pending with it (the next allreduce fails); a
# member that connected but never joins (the others get a timeout naming
# it); member lists that differ in count or in processes (every member gets
# an error).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
app=$B/test/peer/dyn_group
need_built "$app"
. "$PX_SRC/test/lib/peers.sh"
peers_setup
# Every member is a process alone (no launcher): until it connected to the
# others it sees one process on the node, so the default idle policy (auto)
# never gives the core away, and 3 or 4 members on a 2-core machine spun in
# every wait, each one's turn waiting for the others' time slices (auto now
# counts the peers connected from this host: the shm scenario's 4-member run
# checks that). Here they sleep 100 us after 32 empty polls.
export PX_MCA_progress_yield_when_idle=always PX_MCA_progress_idle_sleep_us=100

if timeout 60 "$B/test/peer/dyn_app" contact 2>&1 | grep -q "built without libsodium"; then
    skip "groups of connected peers" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi

# start NAME N MODE [ARG]: members 0..N-1 in a random order; pids in mp[]
start() {
    local name=$1 n=$2 mode=$3 arg=${4:-}
    local d=$T/$name
    mkdir -p "$d"
    mp=()
    for i in $(seq 0 $((n - 1)) | shuf); do
        # no timeout(1) wrapper: $! must be the member's pid (the test kills it and
        # looks for it in the errors); every wait in dyn_group is bounded
        "$app" "$d" "$i" "$n" "$mode" $arg >"$d/$i.out" 2>"$d/$i.err" </dev/null &
        mp[$i]=$!
        pids+=("$!")
        sleep 0.0$((RANDOM % 3))
    done
}

# rc_of NAME I: wait for member I; its exit code in rc
rc_of() {
    wait "${mp[$2]}"
    rc=$?
}

show() { sed 's/^/# /' "$@" | cut -c1-300 | head -40; }

scenario() {
    local s=$1
    # 4 members, every collective; over shm with the idle policy auto, which
    # counts the members connected from this host with the process itself
    local policy=always
    [ "$s" = shm ] && policy=auto
    PX_MCA_progress_yield_when_idle=$policy start "$s-ok" 4 ok
    local bad=0
    for i in 0 1 2 3; do
        rc_of "$s-ok" "$i"
        [ "$rc" = 0 ] && grep -q "collectives ok" "$T/$s-ok/$i.out" || { bad=1; echo "# member $i exit $rc"; }
    done
    check "$s: 4 members started separately form a group and every collective's results check out" \
        test "$bad" = 0
    [ "$bad" = 0 ] || show "$T/$s-ok"/*.out "$T/$s-ok"/*.err
    grep -h "group rank" "$T/$s-ok"/*.out | sort | sed 's/^/# /'
    check "$s: ... sizes up to 300000 elements" \
        test "$(cat "$T/$s-ok"/*.out | grep -c '300000 elements: every collective checked')" = 4
    if [ "$s" = shm ]; then
        # auto yields when the processes on this node outnumber its cores:
        # alone (1) never, connected to the 3 others (4) on fewer than 4 cores
        # (online cores as the library counts them, sysconf: nproc(1) counts
        # the affinity mask, which a container or taskset narrows)
        local want=0 cores
        cores=$(getconf _NPROCESSORS_ONLN)
        [ "$cores" -lt 4 ] && want=1
        check "shm: idle policy auto: a member alone does not yield, connected to 3 others on this host ($cores cores online) yields $want, after disconnecting not" \
            test "$(grep -h 'yields alone' "$T/$s-ok"/*.out | sed 's/.*yields //' | sort -u)" = \
            "alone 0 connected $want disconnected 0"
        grep -h 'yields alone' "$T/$s-ok"/*.out | sed 's/^/# /'
    fi

    # 3 members, member 1 killed in the middle of allreduces
    start "$s-kill" 3 kill 1
    for _ in $(seq 1 600); do
        [ "$(cat "$T/$s-kill"/*.out 2>/dev/null | grep -c looping)" = 3 ] && break
        sleep 0.05
    done
    sleep 0.2
    local victim=${mp[1]}
    kill -9 "$victim"
    wait "$victim" 2>/dev/null
    bad=0
    for i in 0 2; do
        rc_of "$s-kill" "$i"
        [ "$rc" = 0 ] || { bad=1; echo "# member $i exit $rc"; }
    done
    check "$s: member killed mid-allreduce: the 2 others see the collective fail" \
        test "$(cat "$T/$s-kill/0.out" "$T/$s-kill/2.out" | grep -c 'collective failed')" = 2
    check "$s: ... with an error naming it (its pid $victim) on both" \
        test "$(grep -l "pid $victim" "$T/$s-kill/0.err" "$T/$s-kill/2.err" | wc -l)" = 2
    grep -h "pid $victim" "$T/$s-kill/0.err" | head -2 | cut -c1-300 | sed 's/^/# /'
    check "$s: ... then disconnect it, form a group of the survivors and carry on" \
        test "$bad" = 0 -a "$(cat "$T/$s-kill"/*.out | grep -c 'regrouped ok')" = 2
    [ "$bad" = 0 ] || show "$T/$s-kill"/*.out "$T/$s-kill"/*.err
    # 3 members, member 2 killed while nothing is pending with it, then an allreduce
    start "$s-idle" 3 idle 2
    for _ in $(seq 1 600); do
        [ "$(cat "$T/$s-idle"/*.out 2>/dev/null | grep -c ready)" = 3 ] && break
        sleep 0.05
    done
    victim=${mp[2]}
    kill -9 "$victim"
    wait "$victim" 2>/dev/null
    touch "$T/$s-idle/killed"
    for _ in $(seq 1 600); do
        [ "$(cat "$T/$s-idle"/*.out | grep -c 'collective failed')" = 2 ] && break
        sleep 0.05
    done
    check "$s: member killed while idle: the others' next allreduce fails (not waits)" \
        test "$(cat "$T/$s-idle/0.out" "$T/$s-idle/1.out" | grep -c 'collective failed')" = 2
    check "$s: ... naming it (pid $victim) on both" \
        test "$(grep -l "pid $victim" "$T/$s-idle/0.err" "$T/$s-idle/1.err" | wc -l)" = 2
    kill -9 "${mp[0]}" "${mp[1]}" 2>/dev/null
    wait "${mp[0]}" "${mp[1]}" 2>/dev/null
    check "$s: every member reached every other over $s" \
        test "$(cat "$T/$s-ok"/*.out | grep -c " over $s\$")" = 12
}

scenario shm

# a member that connected but does not join: the others fail within their bound, naming it
start absent 3 absent 2
bad=0
for i in 0 1; do
    rc_of absent "$i"
    [ "$rc" = 0 ] && grep -q "formation failed: " "$T/absent/$i.out" || { bad=1; echo "# member $i exit $rc"; }
done
touch "$T/absent/end"
wait "${mp[2]}"
check "a member that never joins: the others' px_group_from_peers fails within its bound" test "$bad" = 0
check "... one with a timeout (the other may be told by it at once)" \
    grep -q 'formation failed: .*timed out' "$T/absent/0.out" "$T/absent/1.out"
check "... both naming the member that did not answer (pid ${mp[2]})" \
    test "$(grep -l "pid ${mp[2]}[^)]*) (did not answer)" "$T/absent/0.err" "$T/absent/1.err" | wc -l)" = 2
grep -h "did not answer" "$T/absent/0.err" "$T/absent/1.err" | cut -c1-400 | sed 's/^/# /'
[ "$bad" = 0 ] || show "$T/absent"/*

# member 0 lists 2 members, the others 3: everyone gets an error
start short 3 short
bad=0
for i in 0 1 2; do
    rc_of short "$i"
    [ "$rc" = 0 ] && grep -q "formation failed: " "$T/short/$i.out" || { bad=1; echo "# member $i exit $rc"; }
done
check "member lists that differ: every member's px_group_from_peers fails" test "$bad" = 0
# Which member sees the mismatch first depends on who hears from whom first:
# one that hears of another's give-up before the lists fails with that.
check "... the mismatch is named: a member says another lists another number of members" \
    test "$(grep -l "lists 3 members, this process lists 2\|lists 2 members, this process lists 3" "$T/short"/*.err | wc -l)" -ge 1
# A member that gave up exits: the others may learn it from its leaving.
why="members, this process lists\|gave up forming the group\|was not formed within"
why="$why\|failed while the group was being formed\|could not receive from it\|has failed or left"
check "... and every member's error says why: that, another member's give-up or leaving, or its own bound" \
    test "$(grep -L "$why" "$T/short"/*.err | wc -l)" = 0
for f in $(grep -L "$why" "$T/short"/*.err); do sed "s|^|# $(basename "$f"): |" "$f" | cut -c1-300; done
grep -h "members, this process lists" "$T/short"/*.err | head -2 | cut -c1-300 | sed 's/^/# /'
[ "$bad" = 0 ] || show "$T/short"/*

# 4 members, each listing itself and its 2 neighbours: the same count, other sets
start ring 4 ring
bad=0
for i in 0 1 2 3; do
    rc_of ring "$i"
    [ "$rc" = 0 ] && grep -q "formation failed: " "$T/ring/$i.out" || { bad=1; echo "# member $i exit $rc"; }
done
check "member sets that differ with the same count: every member's px_group_from_peers fails" test "$bad" = 0
check "... at least one saying another member formed another group" \
    grep -q "formed another group" "$T/ring/0.err" "$T/ring/1.err" "$T/ring/2.err" "$T/ring/3.err"
grep -h "formed another group\|gave up" "$T/ring"/*.err | head -2 | cut -c1-300 | sed 's/^/# /'
[ "$bad" = 0 ] || show "$T/ring"/*

export PX_MCA_btl=self,ofi
if ! timeout 60 "$B/test/peer/dyn_app" contact >"$T/ofi.probe" 2>&1; then
    sed 's/^/# /' "$T/ofi.probe" | head -5
    skip "ofi: groups of connected peers" "btl/ofi offers no module on this machine"
else
    scenario ofi
fi
tap_done
