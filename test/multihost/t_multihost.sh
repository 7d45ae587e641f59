#!/usr/bin/env bash
# A job over two "hosts" on one machine: two network namespaces joined by a
# veth pair (10.211.<pid%250>.1 and .2, addresses that exist only inside
# them; test/lib/netns.sh), each with its own UTS host name (nsA, nsB), 2
# ranks on each, launched by Debian's mpirun (Open MPI 4.1, PMIx) through an rsh agent that
# runs the orted under `ip netns exec` + `unshare --uts`. mpirun itself runs
# inside nsA so the daemons reach it over the veth.
# Checks: boot/pmix gives the hosts; every same-host pair uses shm, every
# cross-host pair ofi, each rank itself self; an all-to-all of 0 B..4 MiB
# with checksums passes over that mix. Traffic stays in the namespaces.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
A2A=$B/test/ofi/ofi_alltoall
if [ "$(id -u)" != 0 ]; then
    skip "two-host job over network namespaces" "needs root to create network namespaces (ip netns); .ci/run runs it as root"
    tap_done
fi
for need in ip unshare mpirun; do
    command -v $need >/dev/null || { not_ok "$need is installed (iproute2, util-linux, openmpi-bin)"; tap_done; }
done
for p in plexus_btl_ofi.so plexus_boot_pmix.so; do
    check "plugin $p is built" test -e "$B/.libs/$p"
done
[ -x "$A2A" ] || { not_ok "test program $A2A is built (make check)"; tap_done; }

. "$PX_SRC/test/lib/netns.sh"
T=$(mktemp -d)
cleanup() {
    netns_down
    rm -rf "$T"
}
trap cleanup EXIT
netns_up mh "$T/setup.err" || netns_skip_or_fail "two-host job over network namespaces" "$T/setup.err"
nsA=$NS_A nsB=$NS_B
ok "namespaces $nsA (nsA, $IP_A) and $nsB (nsB, $IP_B) joined by a veth pair"

cat >"$T/agent.sh" <<AGENT
#!/bin/sh
# mpirun's rsh agent: "host" nsA/nsB is a network namespace with its own UTS name.
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case "\$host" in
nsA) ns=$nsA ;;
nsB) ns=$nsB ;;
*) echo "netns agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$host && \$*"
AGENT
chmod +x "$T/agent.sh"
printf 'nsA slots=2\nnsB slots=2\n' >"$T/hosts"

rx0=$(netns_rx_bytes)
timeout -s KILL 120 ip netns exec "$nsA" mpirun --allow-run-as-root -np 4 --hostfile "$T/hosts" \
    --mca plm_rsh_agent "$T/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    -x PX_MCA_mca_component_path="$B/.libs" \
    "$A2A" >"$T/out" 2>"$T/err" </dev/null
rc=$?
out=$(cat "$T/out")
rx1=$(netns_rx_bytes)
check "mpirun of 4 ranks over nsA and nsB exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || head -20 "$T/err" | sed 's/^/# /'
for r in 0 1 2 3; do
    check "rank $r: all-to-all 0 B..4 MiB with checksums passes" contains "$out" "alltoall ok 22 rank $r"
done
# Hosts as the ranks see them, and the transport of every pair.
declare -A host
while read -r _ me peer h name; do [ "$me" = "$peer" ] && host[$me]=$h; done < <(grep '^transport ' "$T/out")
check "ranks 0,1 run on nsA and ranks 2,3 on nsB" \
    test "${host[0]}${host[1]}${host[2]}${host[3]}" = "nsAnsAnsBnsB"
bad=0 n=0 nshm=0 nofi=0
while read -r _ me peer h name; do
    n=$((n + 1))
    if [ "$me" = "$peer" ]; then want=self
    elif [ "${host[$me]}" = "${host[$peer]}" ]; then want=shm; nshm=$((nshm + 1))
    else want=ofi; nofi=$((nofi + 1)); fi
    [ "$name" = "$want" ] || { bad=$((bad + 1)); echo "# rank $me -> $peer ($h -> ${host[$peer]}): $name, expected $want"; }
done < <(grep '^transport ' "$T/out")
check "16 pairs reported" test "$n" -eq 16
check "same-host pairs use shm ($nshm), cross-host pairs ofi ($nofi), self self" test "$bad" -eq 0 -a "$nshm" -eq 4 -a "$nofi" -eq 8
# ranks 0,1 each send 2 x (4 MiB + 1 MiB + ...) to ranks 2 and 3: > 16 MiB into nsB
check "the cross-host bytes went over the veth into nsB ($((rx1 - rx0)) bytes)" \
    test $((rx1 - rx0)) -gt 16000000
tap_done
