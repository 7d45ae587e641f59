# redis_util.sh: redis servers for the registry/redis tests. Source it after
# tap.sh (and peers.sh when used: it sets $T and the array pids); then
# redis_setup, which skips the whole test when redis-server is not installed
# (scripts/deps.sh installs it, so CI never skips).
#
# redis_start NAME [PORT]: start redis-server on 127.0.0.1 (a random free port,
#   or PORT), no persistence (--save "" --appendonly no), in $T/redis-NAME;
#   sets REDIS_PORT_<NAME> and REDIS_PID_<NAME>, appends the pid to pids.
# redis_kill NAME: kill -9 it (and wait until the port is closed).
# rcli NAME ARGS...: redis-cli on it.
# free_port: a TCP port nothing listens on now.
redis_setup() {
    if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
        skip "registry/redis against a real server" "redis-server or redis-cli is not installed (scripts/deps.sh installs redis-server and redis-tools)"
        tap_done
    fi
    if [ -z "${T:-}" ]; then
        T=$(mktemp -d)
        pids=()
        trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
    else
        # peers.sh's trap kills with -9; a SIGSTOPped redis needs no SIGCONT for that.
        :
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

redis_start() {
    local name=$1 port=${2:-} tries=0 pid
    while :; do
        local p=${port:-$(free_port)}
        mkdir -p "$T/redis-$name"
        redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
            --dir "$T/redis-$name" --daemonize no --protected-mode yes \
            --logfile "$T/redis-$name/log" >/dev/null 2>&1 &
        pid=$!
        disown "$pid" 2>/dev/null # no "Killed" lines from the shell when it is killed
        pids+=("$pid")
        local i
        for i in $(seq 100); do
            # the server that answers must be this one (process_id), not
            # another test's that took the port first
            if redis-cli -h 127.0.0.1 -p "$p" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"; then
                eval "REDIS_PORT_$name=$p REDIS_PID_$name=$pid"
                return 0
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null
        tries=$((tries + 1))
        if [ -n "$port" ] || [ $tries -ge 5 ]; then
            echo "# redis-server did not start on port $p:" >&2
            tail -5 "$T/redis-$name/log" >&2
            return 1
        fi
    done
}

redis_kill() {
    local pidvar=REDIS_PID_$1 portvar=REDIS_PORT_$1 i
    kill -CONT "${!pidvar}" 2>/dev/null
    kill -9 "${!pidvar}" 2>/dev/null
    for i in $(seq 50); do
        redis-cli -h 127.0.0.1 -p "${!portvar}" ping >/dev/null 2>&1 || return 0
        sleep 0.1
    done
}

rcli() {
    local portvar=REDIS_PORT_$1
    shift
    redis-cli -h 127.0.0.1 -p "${!portvar}" "$@"
}
