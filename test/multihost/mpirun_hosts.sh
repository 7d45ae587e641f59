# shellcheck shell=bash
# mpirun_hosts.sh: Debian's mpirun (Open MPI 4.1) across the two "hosts" of
# test/lib/netns.sh, for the multi-host tests (source it after tap.sh). Each
# namespace gets its own UTS host name (nsA, nsB) and mpirun starts its daemons
# there through an rsh agent: `ip netns exec` + `unshare --uts`. mpirun itself
# runs inside nsA so the daemons reach it over the veth. Root only: without
# it, or without CAP_SYS_ADMIN/CAP_NET_ADMIN, the test is skipped, saying why.
#
#   mh_setup WHAT        create them (or skip/fail the test, and end it); sets
#                        nsA nsB and T (a scratch folder, removed at exit with
#                        the namespaces) and writes $T/agent.sh and $T/hosts
#                        (2 slots each)
#   mh_mpirun ARGS...    mpirun ARGS over nsA and nsB (120 s at most)
#   mh_rxbytes           bytes received so far on nsB's veth end
. "$PX_SRC/test/lib/netns.sh"

mh_setup() {
    local what=$1 need
    if [ "$(id -u)" != 0 ]; then
        skip "$what" "needs root to create network namespaces (ip netns); .ci/run runs it as root"
        tap_done
    fi
    for need in ip unshare mpirun; do
        command -v $need >/dev/null || { not_ok "$need is installed (iproute2, util-linux, openmpi-bin)"; tap_done; }
    done
    T=$(mktemp -d)
    trap mh_cleanup EXIT
    netns_up mh "$T/setup.err" || netns_skip_or_fail "$what" "$T/setup.err"
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
}

mh_cleanup() {
    netns_down
    rm -rf "$T"
}

mh_mpirun() {
    timeout -s KILL 120 ip netns exec "$nsA" mpirun --allow-run-as-root --hostfile "$T/hosts" \
        --mca plm_rsh_agent "$T/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
        -x PX_MCA_mca_component_path="$PX_BUILD/.libs" "$@"
}

mh_rxbytes() { netns_rx_bytes; }
