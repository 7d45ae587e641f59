#!/usr/bin/env bash
# Dynamic peers across two "hosts" (test/lib/netns.sh: network namespaces nsA
# and nsB joined by a veth pair, each process with its own UTS host name),
# every process started on its own by this script (px_init alone, no
# launcher; test/multihost/dyn_mesh.c), over btl/ofi (tcp;ofi_rxm), each
# listener on its namespace's address, one 0600 secret file:
# - A and C on nsA, B on nsB, started in a random order after random pauses;
#   in a random order of roles each connects to those before it (the
#   targets in a shuffled order) and accepts those after: a full mesh;
# - rounds of checksummed messages both ways on every pair (0 B to 1 MiB,
#   eager and rendezvous sizes drawn per pair and round), all at once;
# - one of them, drawn at random, is SIGKILLed mid-transfer: the others
#   carry on with each other, and their failed operations name it (the
#   runtime's message names its pid);
# - a late joiner D on nsB connects to both survivors and exchanges
#   checksummed messages with them; everyone ends with no bad message.
# SEED=N repeats a run's random choices (the test prints its seed).
# Root only (network namespaces): skipped otherwise, saying why.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/netns.sh"
B=$PX_BUILD
app=$B/test/multihost/dyn_mesh
what="dynamic peers across network namespaces"
if [ "$(id -u)" != 0 ]; then
    skip "$what" "needs root to create network namespaces (ip netns); .ci/run runs it as root"
    tap_done
fi
for need in ip unshare; do
    command -v $need >/dev/null || { not_ok "$need is installed (iproute2, util-linux)"; tap_done; }
done
need_built "$app"
if [ ! -e "$B/.libs/plexus_btl_ofi.so" ]; then
    skip "$what" "btl/ofi is not built (configured without libfabric-dev)"
    tap_done
fi
T=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    netns_down
    rm -rf "$T"
}
trap cleanup EXIT
netns_up dn "$T/setup.err" || netns_skip_or_fail "$what" "$T/setup.err"
ok "namespaces $NS_A (nsA, $IP_A) and $NS_B (nsB, $IP_B) joined by a veth pair"
SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
echo "# seed $SEED (SEED=$SEED repeats this run's choices)"
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
mkdir "$T/dir"
chmod 755 "$T" "$T/dir"
export PX_MCA_peer_secret_file=$T/secret PX_MCA_mca_component_path=$B/.libs
export PX_MCA_btl=self,ofi "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm"

if ! timeout 60 ip netns exec "$NS_A" env PX_MCA_peer_listen_address="$IP_A" "$app" "$T/dir" probe - 0 0 0 1 \
    >"$T/probe.out" 2>&1 </dev/null; then
    sed 's/^/# /' "$T/probe.out" | head -5
    if grep -q "built without libsodium" "$T/probe.out"; then
        skip "$what" "built without libsodium (install libsodium-dev, configure again)"
        tap_done
    fi
fi

declare -A host ip
host=([A]=nsA [B]=nsB [C]=nsA [D]=nsB)
ip=([nsA]=$IP_A [nsB]=$IP_B)
ROUNDS=40
# start NAME CONNECT ACCEPT ROUNDS LATE: one process on its host, in the background
start() {
    local n=$1 h=${host[$1]} ns=$NS_A
    [ "$h" = nsB ] && ns=$NS_B
    timeout -s KILL 240 ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$h" \
        env PX_MCA_peer_listen_address="${ip[$h]}" "$app" "$T/dir" "$n" "$2" "$3" "$4" "$5" \
        $((SEED + ${#n})) >"$T/$n.out" 2>"$T/$n.err" </dev/null &
    pids+=($!)
    eval "tpid_$n=$!"
}
mypid() { sed -n "s/^$1: pid \([0-9]*\) listening.*/\1/p" "$T/$1.out"; }

# Roles: a random order; each connects to those before it, accepts those after.
order=(A B C)
for i in 2 1; do
    j=$((RANDOM % (i + 1)))
    t=${order[$i]} order[$i]=${order[$j]} order[$j]=$t
done
victim=${order[$((RANDOM % 3))]}
declare -A conn acc
for i in 0 1 2; do
    n=${order[$i]} c=
    for ((k = 0; k < i; k++)); do c="$c${c:+,}${order[$k]}"; done
    conn[$n]=${c:--} acc[$n]=$((2 - i))
done
echo "# roles: ${order[*]} (each connects to those before it); victim $victim; start order below"
starts=(A B C)
for i in 2 1; do
    j=$((RANDOM % (i + 1)))
    t=${starts[$i]} starts[$i]=${starts[$j]} starts[$j]=$t
done
for n in "${starts[@]}"; do
    echo "# start $n on ${host[$n]}: connect ${conn[$n]}, accept ${acc[$n]}"
    start "$n" "${conn[$n]}" "${acc[$n]}" $ROUNDS 1
    sleep "0.$((RANDOM % 5))"
done
# Kill the victim once it finished round 3 (mid-transfer: the rounds go on).
for _ in $(seq 1 1200); do
    grep -q "^$victim: round 3$" "$T/$victim.out" 2>/dev/null && break
    sleep 0.05
done
vpid=$(mypid "$victim")
meshok=0
for n in A B C; do grep -q "^$n: mesh of 2 peers" "$T/$n.out" && meshok=$((meshok + 1)); done
check "A, B and C, started separately in a random order, form a full mesh (each has 2 peers)" test $meshok -eq 3
[ $meshok -eq 3 ] || for n in A B C; do sed "s/^/# $n: /" "$T/$n.out" "$T/$n.err" | tail -8; done
nofi=$(cat "$T"/[ABC].out | grep -c ': peer [A-D] is [0-9]* over ofi$')
check "every connection of the mesh goes over ofi ($nofi of 6 ends)" test "$nofi" -eq 6
check "the victim $victim (pid $vpid) reached round 3 of $ROUNDS" grep -q "^$victim: round 3$" "$T/$victim.out"
[ -n "$vpid" ] && kill -9 "$vpid"
eval "wait \$tpid_$victim" 2>/dev/null
echo "# killed $victim (pid $vpid) after its round 3"
survivors=()
for n in A B C; do [ "$n" != "$victim" ] && survivors+=("$n"); done
# The late joiner connects to the survivors (its own shuffled order).
start D "${survivors[0]},${survivors[1]}" 0 4 0
for n in "${survivors[@]}" D; do
    eval "wait \$tpid_$n"
    eval "rc_$n=$?"
done
for n in "${survivors[@]}"; do
    eval "rc=\$rc_$n"
    check "survivor $n ends cleanly (exit $rc)" test "$rc" -eq 0
    [ "$rc" = 0 ] || sed "s/^/# $n: /" "$T/$n.out" "$T/$n.err" | tail -10
    check "survivor $n: its operations with $victim failed, naming it" \
        grep -q "^$n: FAILED with $victim (peer [0-9]*): " "$T/$n.out"
    grep "^$n: FAILED" "$T/$n.out" | head -1 | sed 's/^/# /'
    check "survivor $n: the runtime's error names the victim's pid $vpid" grep -q "pid $vpid\b" "$T/$n.err"
    grep "pid $vpid" "$T/$n.err" | head -1 | cut -c1-240 | sed 's/^/# /'
    check "survivor $n: nothing failed but $victim, no bad message" \
        grep -q "^$n: done: [1-9][0-9]* messages verified, 0 bad, failed peers: $victim$" "$T/$n.out"
    grep "^$n: done" "$T/$n.out" | sed 's/^/# /'
    check "survivor $n kept exchanging with the other survivor after the kill (all $ROUNDS rounds)" \
        grep -q "^$n: round $((ROUNDS - 1))$" "$T/$n.out"
    check "survivor $n served the late joiner" grep -q "^$n: late joiner D served" "$T/$n.out"
done
check "the late joiner D connects to both survivors and ends cleanly (exit $rc_D)" test "$rc_D" -eq 0
[ "$rc_D" = 0 ] || sed "s/^/# D: /" "$T/D.out" "$T/D.err" | tail -10
check "D: 8 checksummed messages verified over ofi, none bad, no peer failed" \
    grep -q "^D: done: 8 messages verified, 0 bad, failed peers: none$" "$T/D.out"
grep "^D: \(peer\|done\)" "$T/D.out" | sed 's/^/# /'
tap_done
