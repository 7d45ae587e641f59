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
