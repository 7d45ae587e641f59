# netns.sh: two "hosts" on one machine for the multihost tests (source it
# after tap.sh). Two network namespaces joined by a veth pair
# (10.211.<pid%250>.1 and .2, addresses that exist only inside them), each
# with its own UTS host name (nsA, nsB), and an rsh agent through which
# Debian's mpirun (Open MPI 4.1) starts its daemons there: `ip netns exec` +
# `unshare --uts`. mpirun itself runs inside nsA so the daemons reach it over
# the veth. Root only: without it, or without CAP_SYS_ADMIN/CAP_NET_ADMIN,
# the test is skipped, saying why.
#
#   mh_setup WHAT        create them (or skip/fail the test, and end it); sets
#                        nsA nsB vA vB sub T (a scratch folder, removed at exit)
#                        and writes $T/agent.sh and $T/hosts (2 slots each)
#   mh_mpirun ARGS...    mpirun -np ... over nsA and nsB (120 s at most)
#   mh_rxbytes           bytes received so far on nsB's veth end
mh_setup() {
    local what=$1
    if [ "$(id -u)" != 0 ]; then
        skip "$what" "needs root to create network namespaces (ip netns); .ci/run runs it as root"
        tap_done
    fi
    local need
    for need in ip unshare mpirun; do
        command -v $need >/dev/null || { not_ok "$need is installed (iproute2, util-linux, openmpi-bin)"; tap_done; }
    done
    local id=$$
    sub=$((id % 250))
    nsA=pxmhA$id
    nsB=pxmhB$id
    vA=pxvA$id
    vB=pxvB$id
    T=$(mktemp -d)
    trap mh_cleanup EXIT
    if ! mh_create 2>"$T/setup.err"; then
        if grep -q "Operation not permitted" "$T/setup.err"; then
            skip "$what" "root here lacks CAP_SYS_ADMIN/CAP_NET_ADMIN (an unprivileged container): $(head -1 "$T/setup.err")"
            tap_done
        fi
        not_ok "create namespaces $nsA/$nsB joined by a veth pair"
        sed 's/^/# /' "$T/setup.err"
        tap_done
    fi
    ok "namespaces $nsA (nsA, 10.211.$sub.1) and $nsB (nsB, 10.211.$sub.2) joined by a veth pair"
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

mh_create() {
    ip netns add "$nsA" && ip netns add "$nsB" &&
        ip link add "$vA" type veth peer name "$vB" &&
        ip link set "$vA" netns "$nsA" && ip link set "$vB" netns "$nsB" &&
        ip -n "$nsA" addr add "10.211.$sub.1/24" dev "$vA" &&
        ip -n "$nsB" addr add "10.211.$sub.2/24" dev "$vB" &&
        ip -n "$nsA" link set "$vA" up && ip -n "$nsB" link set "$vB" up &&
        ip -n "$nsA" link set lo up && ip -n "$nsB" link set lo up
}

mh_cleanup() {
    ip netns pids "$nsA" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns pids "$nsB" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$nsA" 2>/dev/null
    ip netns del "$nsB" 2>/dev/null
    ip link del "$vA" 2>/dev/null
    rm -rf "$T"
}

mh_mpirun() {
    timeout -s KILL 120 ip netns exec "$nsA" mpirun --allow-run-as-root --hostfile "$T/hosts" \
        --mca plm_rsh_agent "$T/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
        -x PX_MCA_mca_component_path="$PX_BUILD/.libs" "$@"
}

mh_rxbytes() { ip -n "$nsB" -s -j link show "$vB" | sed -n 's/.*"rx":{"bytes":\([0-9]*\).*/\1/p'; }
