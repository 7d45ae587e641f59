#!/usr/bin/env bash
# A runtime_*, progress_* or xfer_* value that does not parse or is out of
# range is reported (the variable, the value, where it came from, what is
# accepted), the default is kept and px_init goes on, as for btl_* variables.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/init_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
need_built "$probe" "$pxrun"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home PX_SYSCONFDIR=$tmp/etc PX_MCA_btl=self,shm
mkdir -p "$HOME" "$PX_SYSCONFDIR"

# expect WHAT: px_init went on and the value's report says it all
expect() {
    check "$1: px_init goes on (exit $rc)" test "$rc" -eq 0
    check "$1: the probe ran" contains "$out" "rank 0 size"
    shift
    local s
    for s in "$@"; do
        check "... the report says: $s" contains "$out" "$s"
    done
}

out=$(PX_MCA_runtime_eager_limit=lots "$probe" </dev/null 2>&1); rc=$?
expect "runtime_eager_limit=lots in the environment" \
    'invalid value "lots" for variable runtime_eager_limit (size) from environment variable PX_MCA_runtime_eager_limit' \
    'accepted: a byte count of at least 0' 'the default "0" is kept'

out=$(PX_MCA_runtime_verbose=1000 "$probe" </dev/null 2>&1); rc=$?
expect "runtime_verbose=1000 (out of range) in the environment" \
    'out-of-range value "1000" for variable runtime_verbose (int)' 'accepted: an integer from 0 to 100' \
    'the default "0" is kept'

echo "runtime_rndv_protocol = sideways" >"$PX_SYSCONFDIR/plexus-mca-params.conf"
out=$("$probe" </dev/null 2>&1); rc=$?
expect "runtime_rndv_protocol=sideways in a parameter file" \
    'invalid value "sideways" for variable runtime_rndv_protocol (enum)' \
    "plexus-mca-params.conf:1" 'accepted: one of auto (0), get (1), pipeline (2), put (3)' 'the default "auto" is kept'
rm -f "$PX_SYSCONFDIR/plexus-mca-params.conf"

out=$(timeout 60 "$pxrun" -n 2 --mca runtime_wait_timeout -3 "$probe" </dev/null 2>&1); rc=$?
expect "runtime_wait_timeout=-3 from pxrun's command line (2 ranks)" \
    'out-of-range value "-3" for variable runtime_wait_timeout (double) from command line' \
    'accepted: a number of at least 0' 'the default "0" is kept'
check "... both ranks run" test "$(printf '%s\n' "$out" | grep -c '^rank [01] size 2')" -eq 2

out=$(PX_MCA_progress_idle_spins=0 "$probe" </dev/null 2>&1); rc=$?
expect "progress_idle_spins=0 (out of range) in the environment" \
    'out-of-range value "0" for variable progress_idle_spins (int)' 'the default "32" is kept'

out=$(PX_MCA_xfer_chunk_size=12q "$probe" </dev/null 2>&1); rc=$?
expect "xfer_chunk_size=12q in the environment" \
    'invalid value "12q" for variable xfer_chunk_size (size)' 'the default "1048576" is kept'
tap_done
