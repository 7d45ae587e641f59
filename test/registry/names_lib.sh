# shellcheck shell=bash
# names_lib.sh: what the names tests over each store share (t_names.sh over
# the out-of-tree dirstore, t_names_redis.sh, t_names_etcd.sh). Source it
# after tap.sh; $app is test/registry/name_probe, $pids the array of
# processes killed at exit.
#
#   wait_for FILE TEXT SECONDS   until FILE holds a line matching TEXT;
#                                else prints FILE and fails
#   start_owner NAME SIZE SEED CTL OUT
#                                a name_probe owner publishing NAME (SIZE
#                                bytes, pattern SEED, control folder CTL,
#                                output OUT), in the background; waits until
#                                it published and sets owner_pid
#   names_need_deps WHAT         ends the test with a skip of WHAT unless
#                                the build has json-c and libsodium (names
#                                and connections between processes)

names_need_deps() { # WHAT
    local need
    for need in PX_HAVE_JSONC:"json-c (install libjson-c-dev, configure again)" \
        PX_HAVE_SODIUM:"libsodium: processes cannot connect (install libsodium-dev)"; do
        if ! grep -q "^#define ${need%%:*} 1" "$PX_BUILD/config.h"; then
            skip "$1" "built without ${need#*:}"
            tap_done
        fi
    done
}

wait_for() { # FILE TEXT SECONDS
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "# $1 has no \"$2\" after $3 s:" >&2
    sed 's/^/#   /' "$1" >&2
    return 1
}

start_owner() { # NAME SIZE SEED CTL OUT
    mkdir -p "$4"
    timeout -s KILL 300 "$app" owner "$1" "$2" "$3" "$4" >"$5" 2>&1 </dev/null &
    pids+=($!)
    disown $! 2>/dev/null # no "Killed" line from the shell when the owner is killed
    wait_for "$5" "^published" 60
    owner_pid=$(sed -n 's/^published by pid \([0-9]*\)$/\1/p' "$5")
    pids+=("$owner_pid")
}
