# Shared set-up of the tests whose processes are started separately and
# connect to each other (px_contact/px_connect/px_accept): source it after
# tap.sh, with B set to the build, then call peers_setup.
#
# peers_setup: a private temporary folder $T (removed at exit), the array
# pids of background processes (killed at exit, with their children: a
# timeout(1) wrapper killed by SIGKILL would leave its program running;
# append each one started),
# a fresh 0600 secret in $T/secret given to every process through
# PX_MCA_peer_secret_file, and plugins taken from this build.
peers_setup() {
    T=$(mktemp -d)
    pids=()
    trap 'for p in "${pids[@]}"; do pkill -9 -P "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
    umask 077
    head -c 32 /dev/urandom | base64 >"$T/secret"
    chmod 600 "$T/secret"
    export PX_MCA_peer_secret_file=$T/secret PX_MCA_mca_component_path=$B/.libs
}

# p2p_owner PROG SIZE NAME WHAT: start `PROG owner $T/q SIZE NAME` (a
# registry/p2p owner publishing NAME, test/registry/p2p/registry_p2p_names)
# in the background (its pid in opid, added to pids), wait up to 30 s for
# the qualified name it writes to $T/q, check that it came, and set Q to it.
# Where the names API is not built, skips WHAT and ends the test.
p2p_owner() {
    "$1" owner "$T/q" "$2" "$3" >"$T/owner.out" 2>"$T/owner.err" </dev/null &
    opid=$!
    pids+=("$opid")
    wait_file "$T/q" "$opid"
    if [ ! -s "$T/q" ] && grep -qi "json" "$T/owner.err"; then
        skip "$4" "the names API is not built ($(head -1 "$T/owner.err"))"
        tap_done
    fi
    check "the owner published $3" [ -s "$T/q" ]
    Q=$(cat "$T/q" 2>/dev/null)
}
