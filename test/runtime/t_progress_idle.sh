#!/usr/bin/env bash
# The progress engine's idle policy under pxrun (token ring, idle_probe):
# progress_yield_when_idle=always yields, never does not, auto yields only
# when the job has more ranks on this node than it has online cores; the old
# name btl_shm_yield_when_idle still sets it (with a deprecation warning);
# a bad value is refused naming the variable and the accepted values.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
pxrun=$B/tools/pxrun/pxrun
probe=$B/test/runtime/idle_probe
need_built "$pxrun" "$probe"
export PX_MCA_mca_component_path=$B/.libs
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cores=$(getconf _NPROCESSORS_ONLN)
over=$((cores + 1))

# ring NAME N LAPS [VAR=VALUE...]: run, keep the output in $T/NAME, and set
# $yields to the sum of every rank's yields (empty when a rank did not report).
ring() {
    local name=$1 n=$2 laps=$3
    shift 3
    env "$@" timeout -s KILL 300 "$pxrun" -n "$n" "$probe" "$laps" >"$T/$name" 2>"$T/$name.err" </dev/null
    rc=$?
    local reported
    reported=$(grep -c '^rank [0-9]* yields ' "$T/$name")
    if [ "$reported" -eq "$n" ]; then
        yields=$(awk '/^rank [0-9]* yields / { s += $4 } END { print s + 0 }' "$T/$name")
    else
        yields=""
        sed 's/^/# /' "$T/$name.err" | head -5
    fi
}

ring always 2 200 PX_MCA_progress_yield_when_idle=always PX_MCA_progress_idle_spins=1
check "always, 2 ranks: the ring completes (exit $rc)" test $rc -eq 0
check "always: idle ranks yielded (${yields:-no report})" test -n "$yields" -a "${yields:-0}" -gt 0

ring never $over 20 PX_MCA_progress_yield_when_idle=never PX_MCA_progress_idle_spins=1
check "never, $over ranks on $cores cores: the ring completes (exit $rc)" test $rc -eq 0
check "never: no rank yielded (${yields:-no report})" test "$yields" = 0

ring auto_over $over 50 PX_MCA_progress_idle_spins=1
check "auto (default), $over ranks on $cores cores: the ring completes (exit $rc)" test $rc -eq 0
check "auto with more ranks than cores: ranks yielded (${yields:-no report})" \
    test -n "$yields" -a "${yields:-0}" -gt 0

if [ "$cores" -ge 2 ]; then
    ring auto_fit 2 200 PX_MCA_progress_idle_spins=1
    check "auto, 2 ranks on $cores cores: the ring completes (exit $rc)" test $rc -eq 0
    check "auto with no more ranks than cores: no rank yielded (${yields:-no report})" test "$yields" = 0
fi

ring sleep $over 50 PX_MCA_progress_idle_sleep_us=200 PX_MCA_progress_idle_spins=4
check "auto with progress_idle_sleep_us=200: the ring completes (exit $rc)" test $rc -eq 0
check "... and ranks yielded by sleeping (${yields:-no report})" test -n "$yields" -a "${yields:-0}" -gt 0

ring old $over 20 PX_MCA_btl_shm_yield_when_idle=never PX_MCA_progress_idle_spins=1
check "the old name btl_shm_yield_when_idle=never: the ring completes (exit $rc)" test $rc -eq 0
check "... and sets the engine's policy: no rank yielded (${yields:-no report})" test "$yields" = 0
check "... with a warning naming the new variable" \
    contains "$(cat "$T/old.err")" "progress_yield_when_idle"

ring bad 2 1 PX_MCA_progress_yield_when_idle=sometimes
err=$(cat "$T/bad.err")
check "progress_yield_when_idle=sometimes is refused or reported (exit $rc)" \
    contains "$err" "progress_yield_when_idle"
check "... listing the accepted values" contains "$err" "never"
tap_done
