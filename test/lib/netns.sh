# shellcheck shell=bash
# netns.sh: two "hosts" on one machine for the multi-host tests
# (test/multihost/t_multihost.sh, t_slurm.sh) and the benchmarks across hosts
# (test/bench/compare-ofi-hosts.sh, compare-connect.sh,
# compare-named-hosts.sh): two network namespaces joined by a veth pair, or
# through a bridge in a third one, with addresses that exist only inside
# them. Source it (after tap.sh for netns_skip_or_fail); root only.
#
#   netns_up TAG ERRFILE   make namespaces px<TAG>A<pid> and px<TAG>B<pid>
#                          joined by veth pxv<TAG>A<pid> - pxv<TAG>B<pid>,
#                          addresses 10.211.<pid%250>.1 and .2, lo up in both;
#                          sets NS_A NS_B VETH_A VETH_B IP_A IP_B. Non-zero on
#                          failure, with the reason in ERRFILE.
#   netns_up_bridge TAG SUBNET ERRFILE
#                          three namespaces px<TAG><id>A, B and S (id: this
#                          shell's pid in hex and a random byte, drawn again
#                          while a namespace of that id exists): A and B each
#                          with an eth0 whose veth peer (pA, pB) is on bridge
#                          br0 in S; addresses SUBNET.1 (A), SUBNET.2 (B) and
#                          SUBNET.254 (the bridge, in S); lo up in all three.
#                          Sets NS_A NS_B NS_S IP_A IP_B IP_S (VETH_A and VETH_B
#                          stay empty: the veths go with the namespaces).
#                          Non-zero on failure, with the reason in ERRFILE.
#   netns_agent FILE [PRIO]
#                          write mpirun's rsh agent to FILE (executable): host
#                          nsA / nsB runs its command in NS_A / NS_B, in a
#                          session of its own (setsid), with that UTS host
#                          name; PRIO, if given, is shell run first (e.g.
#                          'echo -20 > /proc/self/autogroup;').
#   netns_skip_or_fail WHAT ERRFILE
#                          after a failed netns_up: skip WHAT when root here
#                          lacks the capabilities (an unprivileged
#                          container), otherwise not_ok; then the test ends.
#   netns_down             SIGKILL every process in the namespaces (several
#                          passes: a dying daemon may have forked), delete
#                          them and the veth pair. Safe to call twice, and
#                          before any netns_up.
#   netns_rx_bytes         bytes received so far on host B's veth end.
#
# Each name carries the test's pid (interface names stay within the kernel's
# 15 characters for TAG of up to 3), so runs in other work trees at the same
# time do not meet; the addresses may repeat, since each pair is private.
NS_A='' NS_B='' NS_S='' VETH_A='' VETH_B='' IP_A='' IP_B='' IP_S=''

netns_up() {
    local tag=$1 err=$2 id=$$
    NS_A=px${tag}A$id NS_B=px${tag}B$id
    VETH_A=pxv${tag}A$id VETH_B=pxv${tag}B$id
    IP_A=10.211.$((id % 250)).1 IP_B=10.211.$((id % 250)).2
    {
        ip netns add "$NS_A" && ip netns add "$NS_B" &&
            ip link add "$VETH_A" type veth peer name "$VETH_B" &&
            ip link set "$VETH_A" netns "$NS_A" && ip link set "$VETH_B" netns "$NS_B" &&
            ip -n "$NS_A" addr add "$IP_A/24" dev "$VETH_A" &&
            ip -n "$NS_B" addr add "$IP_B/24" dev "$VETH_B" &&
            ip -n "$NS_A" link set "$VETH_A" up && ip -n "$NS_B" link set "$VETH_B" up &&
            ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up
    } 2>"$err"
}

netns_up_bridge() {
    local tag=$1 sub=$2 err=$3 id
    while :; do
        id=$(printf '%x%02x' $$ $((RANDOM % 256)))
        NS_A=px$tag${id}A NS_B=px$tag${id}B NS_S=px$tag${id}S
        ip netns list 2>/dev/null | grep -qE "^(px$tag${id}[ABS])( |$)" || break
    done
    IP_A=$sub.1 IP_B=$sub.2 IP_S=$sub.254
    VETH_A='' VETH_B=''
    {
        ip netns add "$NS_A" && ip netns add "$NS_B" && ip netns add "$NS_S" &&
            ip -n "$NS_S" link add br0 type bridge &&
            ip -n "$NS_A" link add eth0 type veth peer name pA netns "$NS_S" &&
            ip -n "$NS_B" link add eth0 type veth peer name pB netns "$NS_S" &&
            ip -n "$NS_S" link set pA master br0 && ip -n "$NS_S" link set pB master br0 &&
            ip -n "$NS_S" addr add "$IP_S/24" dev br0 &&
            ip -n "$NS_A" addr add "$IP_A/24" dev eth0 && ip -n "$NS_B" addr add "$IP_B/24" dev eth0 &&
            ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up && ip -n "$NS_S" link set lo up &&
            ip -n "$NS_S" link set br0 up && ip -n "$NS_S" link set pA up && ip -n "$NS_S" link set pB up &&
            ip -n "$NS_A" link set eth0 up && ip -n "$NS_B" link set eth0 up
    } 2>"$err"
}

netns_agent() {
    local file=$1 prio=${2:-}
    cat >"$file" <<AGENT
#!/bin/sh
# mpirun's rsh agent: host nsA/nsB is a network namespace with its own UTS name.
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case "\$host" in
nsA) ns=$NS_A ;;
nsB) ns=$NS_B ;;
*) echo "netns agent: unknown host \$host" >&2; exit 1 ;;
esac
exec setsid ip netns exec "\$ns" unshare --uts sh -c "$prio hostname \$host && \$*"
AGENT
    chmod +x "$file"
}

netns_skip_or_fail() {
    local what=$1 err=$2
    if grep -q "Operation not permitted" "$err"; then
        skip "$what" "root here lacks CAP_SYS_ADMIN/CAP_NET_ADMIN (an unprivileged container): $(head -1 "$err")"
    else
        not_ok "create namespaces $NS_A/$NS_B joined by a veth pair"
        sed 's/^/# /' "$err"
    fi
    tap_done
}

netns_down() {
    local ns pids
    for _ in 1 2 3; do
        pids=
        for ns in $NS_A $NS_B $NS_S; do
            pids="$pids $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
        done
        [ -n "${pids// /}" ] || break
        # shellcheck disable=SC2086
        kill -9 $pids 2>/dev/null
        for _ in $(seq 50); do
            local alive=0 p
            for p in $pids; do # a zombie counts as gone
                ps -o stat= -p "$p" 2>/dev/null | grep -q '^[^Z]' && alive=1
            done
            [ $alive = 0 ] && break
            sleep 0.1
        done
    done
    for ns in $NS_A $NS_B $NS_S; do ip netns del "$ns" 2>/dev/null; done
    [ -n "$VETH_A" ] && ip link del "$VETH_A" 2>/dev/null
    return 0
}

netns_rx_bytes() {
    ip -n "$NS_B" -s -j link show "$VETH_B" | sed -n 's/.*"rx":{"bytes":\([0-9]*\).*/\1/p'
}
