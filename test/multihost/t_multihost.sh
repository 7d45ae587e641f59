#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# A job over two "hosts" on one machine (test/multihost/mpirun_hosts.sh over
# test/lib/netns.sh: two network namespaces joined by a veth pair, each with its own UTS host name, nsA and
# nsB), 2 ranks on each, launched by Debian's mpirun (Open MPI 4.1, PMIx).
# Checks: boot/pmix gives the hosts; every same-host pair uses shm, every
# cross-host pair ofi, each rank itself self; an all-to-all of 0 B..4 MiB
# with checksums passes over that mix. Traffic stays in the namespaces.
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/multihost/mpirun_hosts.sh"
B=$PX_BUILD
A2A=$B/test/ofi/ofi_alltoall
mh_setup "two-host job over network namespaces"
for p in plexus_btl_ofi.so plexus_boot_pmix.so; do
    check "plugin $p is built" test -e "$B/.libs/$p"
done
[ -x "$A2A" ] || { not_ok "test program $A2A is built (make check)"; tap_done; }

rx0=$(mh_rxbytes)
mh_mpirun -np 4 "$A2A" >"$T/out" 2>"$T/err" </dev/null
rc=$?
out=$(cat "$T/out")
rx1=$(mh_rxbytes)
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
