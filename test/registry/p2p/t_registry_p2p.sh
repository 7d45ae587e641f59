#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# registry/p2p between processes started separately (no launcher, no
# service): an owner puts names and serves them from its listener thread
# while it sleeps; other processes get and list them as "a.b.c.d:port/name".
# Local put/get/del/list/qualify; a missing name is NOT_FOUND; another
# namespace is told which one the owner serves; hostile clients (200 stalled
# connections, garbage, oversized lengths, slowloris) do not keep a real
# lookup from being answered; hostile owners (an oversized, truncated, foreign
# or overrunning answer) are refused; a stopped owner (SIGSTOP) gives TIMEOUT
# and a killed one NOT_AVAILABLE, each within registry_timeout (with a margin
# for this shared machine: the bound is what is checked, not a speed).
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/peers.sh"
B=$PX_BUILD
probe=$B/test/registry/p2p/registry_p2p_probe
need_built "$probe"
peers_setup
export PX_MCA_registry_timeout=2

# run NAME CMD...: the probe in the foreground, output in $T/NAME.out/.err, status in $T/NAME.rc
run() {
    local name=$1
    shift
    timeout -s KILL 60 "$probe" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
out() { cat "$T/$1.out" "$T/$1.err"; }
# elapsed NAME: the lookup's time in whole ms
elapsed() { sed -n 's/^elapsed_ms=\([0-9]*\).*/\1/p' "$T/$1.out"; }
# start_owner NAME FILE NAME=VALUE...: an owner in the background
start_owner() {
    local name=$1 file=$2
    shift 2
    # no timeout(1) in between: the tests stop and kill this very process
    "$probe" owner "$file" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
    opid=$!
    pids+=("$opid")
    wait_file "$file" "$opid"
}

run local local
check "local put/get/del/list/qualify (exit $(rc local))" [ "$(rc local)" -eq 0 ]
grep -q '^FAIL' "$T/local.out" && sed 's/^/# /' "$T/local.out"
contains "$(out local)" "qualified=127.0.0.1:" || not_ok "qualify names this host's listener"

start_owner o1 "$T/o1" kv/block-7=seven kv/block-8=eight solo=one
check "an owner started and published its names" [ -s "$T/o1" ]
A=$(cat "$T/o1")

run g1 get "$A/kv/block-7"
check "another process gets $A/kv/block-7 (exit $(rc g1))" [ "$(rc g1)" -eq 0 ]
contains "$(out g1)" "value=seven" || not_ok "the value read is the one put"
echo "# lookup across processes: $(elapsed g1) ms"
run g2 get "$A/kv/none"
check "a name the owner does not have is NOT_FOUND (exit $(rc g2))" [ "$(rc g2)" -eq 2 ]
run g3 list "$A/kv/"
check "listing $A/kv/ gives the owner's two names" [ "$(grep -c '^key=' "$T/g3.out")" -eq 2 ]
contains "$(out g3)" "key=plexus/$A/kv/block-8 value=eight" ||
    not_ok "listed keys are qualified with the owner's address"
run g4 list "$A"
check "listing $A gives all three of its names" [ "$(grep -c '^key=' "$T/g4.out")" -eq 3 ]
contains "$(out g4)" "key=plexus/$A/solo value=one" ||
    not_ok "listing the address alone gives keys qualified with it and a '/'"
PX_MCA_registry_namespace=tenant-b run g5 get "$A/kv/block-7"
check "an asker of another namespace gets NOT_FOUND (exit $(rc g5))" [ "$(rc g5)" -eq 2 ]
contains "$(out g5)" "names live in namespace \"plexus\", not \"tenant-b\"" ||
    not_ok "and is told which namespace the owner serves"
run g6 get "999.0.0.1:80/x"
check "a malformed address is BAD_PARAM (exit $(rc g6))" [ "$(rc g6)" -eq 5 ]
contains "$(out g6)" "not a numeric IPv4 address" || not_ok "saying what is wrong"

# hostile clients, then a real lookup
port=${A#*:}
timeout -s KILL 120 "$probe" hostile 127.0.0.1 "$port" stall 200 >"$T/h1.out" 2>&1 &
pids+=($!)
timeout -s KILL 120 "$probe" hostile 127.0.0.1 "$port" garbage 20 >"$T/h2.out" 2>&1 &
pids+=($!)
timeout -s KILL 120 "$probe" hostile 127.0.0.1 "$port" oversize 20 >"$T/h3.out" 2>&1 &
pids+=($!)
timeout -s KILL 120 "$probe" hostile 127.0.0.1 "$port" slowloris 20 >"$T/h4.out" 2>&1 &
pids+=($!)
for f in h1 h2 h3 h4; do
    for _ in $(seq 1 200); do grep -q ready "$T/$f.out" 2>/dev/null && break; sleep 0.05; done
done
check "260 hostile connections are open" grep -q ready "$T/h1.out"
run g7 get "$A/kv/block-8"
check "a lookup among 260 hostile connections is answered (exit $(rc g7), $(elapsed g7) ms)" \
    [ "$(rc g7)" -eq 0 ]
contains "$(out g7)" "value=eight" || not_ok "with the right value"
run g8 get "$A/solo"
check "and another one after it (exit $(rc g8))" [ "$(rc g8)" -eq 0 ]
check "the owner logged the connections it refused" grep -q "refused 127.0.0.1:" "$T/o1.err"
check "the owner is alive" kill -0 "$opid"

# hostile owners
for mode in huge truncated badmagic badlist; do
    timeout -s KILL 120 "$probe" fakeowner "$T/f-$mode" "$mode" >/dev/null 2>&1 &
    pids+=($!)
    for _ in $(seq 1 200); do [ -s "$T/f-$mode" ] && break; sleep 0.05; done
done
run f1 get "$(cat "$T/f-huge")/x"
check "an answer announcing 4 GiB is refused as BAD_PARAM (exit $(rc f1))" [ "$(rc f1)" -eq 5 ]
contains "$(out f1)" "more than the 65536 accepted" || not_ok "naming the bound"
run f2 get "$(cat "$T/f-truncated")/x"
check "a truncated answer is NOT_AVAILABLE (exit $(rc f2))" [ "$(rc f2)" -eq 3 ]
contains "$(out f2)" "after 10 of its answer's 100 bytes" || not_ok "saying how far it came"
run f3 get "$(cat "$T/f-badmagic")/x"
check "a foreign answer is BAD_PARAM (exit $(rc f3))" [ "$(rc f3)" -eq 5 ]
run f4 list "$(cat "$T/f-badlist")/"
check "a listing whose entry overruns it is BAD_PARAM (exit $(rc f4))" [ "$(rc f4)" -eq 5 ]
contains "$(out f4)" "overruns the listing" || not_ok "saying so"

# a stopped owner: TIMEOUT within registry_timeout (2 s; 10 s allowed here)
check "the owner stopped (all its threads)" stop_proc "$opid"
run s1 get "$A/kv/block-7"
kill -CONT "$opid"
check "a stopped owner gives TIMEOUT (exit $(rc s1))" [ "$(rc s1)" -eq 4 ]
check "within the bound ($(elapsed s1) ms for registry_timeout=2)" [ "$(elapsed s1)" -lt 10000 ]
contains "$(out s1)" "did not answer within registry_timeout" || not_ok "saying what happened"
run s2 get "$A/kv/block-7"
check "after SIGCONT it answers again (exit $(rc s2))" [ "$(rc s2)" -eq 0 ]

# a killed owner: NOT_AVAILABLE
kill -9 "$opid"
wait "$opid" 2>/dev/null
run k1 get "$A/kv/block-7"
check "a killed owner gives NOT_AVAILABLE (exit $(rc k1))" [ "$(rc k1)" -eq 3 ]
check "within the bound ($(elapsed k1) ms)" [ "$(elapsed k1)" -lt 10000 ]
contains "$(out k1)" "nobody listens at $A" || not_ok "naming the address"
tap_done
