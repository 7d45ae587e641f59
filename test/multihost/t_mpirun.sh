#!/usr/bin/env bash
# boot/pmix under Debian's mpirun (Open MPI 4.1 and its PMIx server) on this
# host: 1, 2 and 4 ranks select boot/pmix, see the right size and hosts, and
# pass an all-to-all with checksums (shm between ranks with the default btl
# list, ofi with btl=self,ofi); a process whose environment claims a PMIx
# launcher that is not there fails px_init with PMIx's own error text.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
A2A=$B/test/ofi/ofi_alltoall
command -v mpirun >/dev/null || { not_ok "mpirun is installed (openmpi-bin)"; tap_done; }
check "plugin plexus_boot_pmix.so is built" test -e "$B/.libs/plexus_boot_pmix.so"
[ -x "$A2A" ] || { not_ok "test program $A2A is built (make check)"; tap_done; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export FI_TCP_IFACE=lo FI_NET_IFACE=lo FI_SOCKETS_IFACE=lo
MPIRUN=(timeout -s KILL 120 mpirun --oversubscribe -x PX_MCA_mca_component_path="$B/.libs"
    -x FI_TCP_IFACE -x FI_SOCKETS_IFACE)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)

for n in 1 2 4; do
    "${MPIRUN[@]}" -np $n -x PX_MCA_boot_base_verbose=10 "$A2A" 1048576 >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    out=$(cat "$T/out")
    check "mpirun -np $n: exit 0" test $rc -eq 0
    [ $rc -eq 0 ] || head -10 "$T/err" | sed 's/^/# /'
    check "mpirun -np $n: every rank selected boot/pmix" \
        test "$(grep -c 'selected pmix' "$T/err")" -eq $n
    check "mpirun -np $n: $n x $n pairs reported (size $n from PMIx)" \
        test "$(grep -c '^transport ' "$T/out")" -eq $((n * n))
    check "mpirun -np $n: all-to-all with checksums on every rank" \
        test "$(grep -c '^alltoall ok' "$T/out")" -eq $n
    if [ $n -gt 1 ]; then
        check "mpirun -np $n: same-host peers use shm (locality from PMIx)" \
            contains "$out" "transport 0 1 $(hostname) shm"
    fi
done

# boot/pmix loads libpmix itself (the plugin is not linked with it), here
# where a PMIx launcher started the ranks.
PROBE=$B/test/runtime/init_probe
"${MPIRUN[@]}" -np 2 "$PROBE" >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "mpirun -np 2 init_probe: exit 0" test $rc -eq 0
check "... both ranks mapped libpmix (boot/pmix loaded it on demand)" \
    test "$(grep -c 'mapped: libpmix [1-9]' "$T/out")" -eq 2

"${MPIRUN[@]}" -np 4 -x PX_MCA_btl=self,ofi "$A2A" >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "mpirun -np 4 with btl=self,ofi: exit 0" test $rc -eq 0
[ $rc -eq 0 ] || head -10 "$T/err" | sed 's/^/# /'
check "btl=self,ofi: ofi serves same-host peers" contains "$(cat "$T/out")" "transport 3 0 $(hostname) ofi"
check "btl=self,ofi: all-to-all 0 B..4 MiB with checksums on 4 ranks" \
    test "$(grep -c '^alltoall ok' "$T/out")" -eq 4

# A PMIx environment with no server behind it.
PMIX_NAMESPACE=plexus-test-nowhere PMIX_RANK=0 PMIX_SERVER_URI41=tcp4://127.0.0.1:1 \
    PMIX_SERVER_URI4=tcp4://127.0.0.1:1 PX_MCA_mca_component_path="$B/.libs" \
    timeout -s KILL 60 "$A2A" 1 >"$T/out" 2>"$T/err" </dev/null
rc=$?
err=$(cat "$T/err")
check "PMIx environment without a server: px_init fails (exit $rc)" test $rc -ne 0 -a $rc -ne 137
check "... naming the failed call" contains "$err" "boot/pmix: PMIx_Init failed:"
check "... with PMIx's error string and the environment that claimed a launcher" \
    contains "$err" "PMIX_NAMESPACE=plexus-test-nowhere"
tap_done
