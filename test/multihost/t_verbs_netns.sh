#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# btl/verbs across two "hosts" (test/multihost/mpirun_hosts.sh: network namespaces
# nsA and nsB with their own host names) under Debian's mpirun, on the
# software RDMA device (test/softverbs, first in LD_LIBRARY_PATH). The device
# connects queue pairs through filesystem UNIX sockets in a shared folder
# (PX_SOFTVERBS_DIR), which every network namespace of the machine reaches (an
# abstract socket would not). With btl=self,verbs on 4 ranks, 2 per host:
# every pair but a rank itself uses verbs, the all-to-all (0 B..4 MiB, with
# checksums) and the messaging protocols pass, in polling and in event mode;
# px_btl_check's 16 checks pass with its jobs launched by mpirun (ranks
# alternating between the hosts, so each rank's next peer is on the other).
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/multihost/mpirun_hosts.sh"
B=$PX_BUILD
A2A=$B/test/ofi/ofi_alltoall
PROBE=$B/test/runtime/xfer_probe
LIB=$B/test/softverbs/lib
if [ ! -e "$B/.libs/plexus_btl_verbs.so" ]; then
    skip "btl/verbs across network namespaces" "btl/verbs is not built (configured without libibverbs-dev)"
    tap_done
fi
if [ ! -e "$LIB/libibverbs.so.1" ]; then
    skip "btl/verbs across network namespaces" "$LIB/libibverbs.so.1 is not built (make build-tests)"
    tap_done
fi
mh_setup "btl/verbs across network namespaces"
check "plugin plexus_boot_pmix.so is built" test -e "$B/.libs/plexus_boot_pmix.so"
need_built "$A2A" "$PROBE"
mkdir -p "$T/reg"
export LD_LIBRARY_PATH=$LIB:$B/.libs PX_SOFTVERBS_DIR=$T/reg
unset PX_SOFTVERBS_DEVICES PX_SOFTVERBS_LINK_LAYER PX_SOFTVERBS_FAIL_WR PX_SOFTVERBS_DELAY_US \
    PX_SOFTVERBS_QP_ERROR_AFTER PX_SOFTVERBS_FAIL_STATUS PX_SOFTVERBS_PORTS
VX=(-x LD_LIBRARY_PATH -x PX_SOFTVERBS_DIR -x PX_MCA_btl=self,verbs)
show() { [ "$rc" -eq 0 ] || head -20 "$T/err" | sed 's/^/# /'; }

# all-to-all MODE: 4 ranks (0,1 on nsA, 2,3 on nsB), every pair checked
a2a() {
    mh_mpirun -np 4 "${VX[@]}" -x PX_MCA_btl_verbs_progress_mode="$1" "$A2A" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    check "$1 mode: mpirun of 4 ranks over nsA and nsB with btl=self,verbs exits 0" test "$rc" -eq 0
    show
    check "$1 mode: all-to-all 0 B..4 MiB with checksums passes on every rank" \
        test "$(grep -c '^alltoall ok 22 rank' "$T/out")" -eq 4
    declare -A host
    local me peer h name bad=0 n=0
    while read -r _ me peer h name; do [ "$me" = "$peer" ] && host[$me]=$h; done < <(grep '^transport ' "$T/out")
    check "$1 mode: ranks 0,1 run on nsA and ranks 2,3 on nsB" \
        test "${host[0]}${host[1]}${host[2]}${host[3]}" = "nsAnsAnsBnsB"
    while read -r _ me peer h name; do
        n=$((n + 1))
        want=verbs
        [ "$me" = "$peer" ] && want=self
        [ "$name" = "$want" ] || { bad=$((bad + 1)); echo "# rank $me -> $peer: $name, expected $want"; }
    done < <(grep '^transport ' "$T/out")
    check "$1 mode: 16 pairs, each served by verbs (self for a rank itself), across hosts too" \
        test "$n" -eq 16 -a "$bad" -eq 0
}
a2a poll
a2a event

for proto in auto put; do
    mh_mpirun -np 4 "${VX[@]}" -x PX_MCA_runtime_rndv_protocol=$proto "$PROBE" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    check "messaging protocols across the hosts, rendezvous $proto: 0 B .. 8 MiB, 4 ranks, no error" \
        test "$rc" -eq 0 -a "$(grep -c ': 0 errors (transport to [0-9]: verbs)' "$T/out")" -eq 4
    show
done

# px_btl_check launches its jobs with pxrun's command line: this launcher
# runs them with mpirun over the two namespaces instead.
cat >"$T/pxrun-mpirun.sh" <<W
#!/usr/bin/env bash
# pxrun -n N --timeout S --mca NAME VALUE ... PROGRAM ARGS, run by mpirun over nsA and nsB
n=2 args=()
while [ \$# -gt 0 ]; do
    case "\$1" in
    -n) n=\$2; shift 2 ;;
    --timeout) shift 2 ;;
    --mca) args+=(-x "PX_MCA_\$2=\$3"); shift 3 ;;
    *) break ;;
    esac
done
exec timeout -s KILL 300 ip netns exec $nsA mpirun --allow-run-as-root --hostfile $T/hosts \\
    --map-by node --mca plm_rsh_agent $T/agent.sh --mca plm_rsh_no_tree_spawn 1 \\
    -x LD_LIBRARY_PATH -x PX_SOFTVERBS_DIR "\${args[@]}" -np "\$n" "\$@"
W
chmod +x "$T/pxrun-mpirun.sh"
out=$(timeout -s KILL 600 "$B/tools/px_btl_check/px_btl_check" -n 4 --mca mca_component_path "$B/.libs" \
    --pxrun "$T/pxrun-mpirun.sh" verbs </dev/null 2>"$T/err")
rc=$?
check "px_btl_check verbs on 4 ranks over nsA and nsB under mpirun: exit 0" test "$rc" -eq 0
check "px_btl_check verbs across the hosts: 16 checks, none not ok" \
    eval '[ "$(echo "$out" | grep -c "^ok [0-9]")" -eq 16 ] && ! echo "$out" | grep -q "^not ok"'
[ "$rc" -eq 0 ] || echo "$out" | grep "^not ok" | head -5 | sed 's/^/# /'
check "px_btl_check across the hosts: the dead peer is named with its host" \
    contains "$out" "send to rank 1 on host nsB failed"
tap_done
