# etcd_lib.sh: etcd servers for the tests of registry/etcd, on 127.0.0.1 and
# free ports, data in $T (source after tap.sh and peers.sh; call
# peers_setup first: its $T and pids, whose processes are killed at exit).
#
#   etcd_have                  true when etcd and etcdctl are installed
#   etcd_ports NAME            choose its ports (once, kept: a restart listens
#                              where it did); etcd_peer_url NAME: its peer URL
#   etcd_start NAME [CLUSTER]  start member NAME (etcd_ports first); CLUSTER:
#                              "n1=http://...,n2=..." for a multi-member cluster
#   etcd_wait NAME             wait (at most 30 s) until it answers: 0 / 1
#   etcd_up NAME               etcd_start + etcd_wait, on new ports if taken
#   etcd_url NAME              its client URL
#   etcd_kill NAME / etcd_wipe NAME   kill -9 / remove its data
#   etcdctl_at NAME ARGS...    etcdctl (API 3) against it
declare -A etcd_cport etcd_pport etcd_pid
etcd_have() { command -v etcd >/dev/null && command -v etcdctl >/dev/null; }
etcd_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
etcd_url() { echo "http://127.0.0.1:${etcd_cport[$1]}"; }
# etcd_ports NAME: choose its two ports (once; not in a subshell)
etcd_ports() {
    [ -n "${etcd_pport[$1]:-}" ] || etcd_pport[$1]=$(etcd_free_port)
    [ -n "${etcd_cport[$1]:-}" ] || etcd_cport[$1]=$(etcd_free_port)
}
etcd_peer_url() { echo "http://127.0.0.1:${etcd_pport[$1]}"; }
etcd_start() {
    local n=$1 peer
    etcd_ports "$n"
    peer=$(etcd_peer_url "$n")
    local cluster=${2:-$n=$peer}
    # short heartbeat and election: a fast start, and leases down to 1 s
    etcd --name "$n" --data-dir "$T/etcd-$n" --listen-client-urls "$(etcd_url "$n")" \
        --advertise-client-urls "$(etcd_url "$n")" --listen-peer-urls "$peer" \
        --initial-advertise-peer-urls "$peer" --initial-cluster "$cluster" \
        --initial-cluster-state new --initial-cluster-token "px-test-$$-${cluster//[^a-z0-9]/}" \
        --heartbeat-interval 50 --election-timeout 500 --logger zap --log-level error \
        >>"$T/etcd-$n.log" 2>&1 &
    etcd_pid[$n]=$!
    pids+=($!)
}
etcdctl_at() {
    local n=$1
    shift
    ETCDCTL_API=3 etcdctl --endpoints="$(etcd_url "$n")" --dial-timeout=2s --command-timeout=3s "$@"
}
etcd_wait() {
    local end=$((SECONDS + 30))
    while [ $SECONDS -lt $end ]; do
        # ours must be alive: a port taken meanwhile by another process (an
        # etcd of another test) would answer in its place
        kill -0 "${etcd_pid[$1]}" 2>/dev/null || break
        ETCDCTL_API=3 etcdctl --endpoints="$(etcd_url "$1")" --dial-timeout=1s \
            --command-timeout=1s endpoint health >/dev/null 2>&1 &&
            kill -0 "${etcd_pid[$1]}" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "# etcd $1 did not become healthy; its log:"
    tail -5 "$T/etcd-$1.log" | sed 's/^/# /'
    return 1
}
# etcd_up NAME: start a single member and wait for it, on new ports when
# the ones chosen were taken meanwhile (up to 3 tries): 0 / 1
etcd_up() {
    local try
    for try in 1 2 3; do
        etcd_start "$1"
        etcd_wait "$1" && return 0
        etcd_kill "$1"
        etcd_wipe "$1"
        unset "etcd_cport[$1]" "etcd_pport[$1]"
    done
    return 1
}
etcd_kill() {
    kill -9 "${etcd_pid[$1]}" 2>/dev/null
    wait "${etcd_pid[$1]}" 2>/dev/null
    return 0
}
etcd_wipe() { rm -rf "$T/etcd-$1"; }
