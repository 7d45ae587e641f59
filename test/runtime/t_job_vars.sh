#!/usr/bin/env bash
# px_init checks that every rank gives each job-wide variable (scope "all")
# the same parsed value: a difference fails px_init on every rank, fast, with
# the variable, the ranks and their values (runtime/job_vars.c).
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/init_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
need_built "$probe" "$pxrun"
export PX_MCA_btl=self,shm

d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# run N 'shell code run on each rank before the probe' [probe args]: each
# rank's exit status goes to $d/rc.RANK and the wrapper exits 0, so pxrun
# never ends a rank early because another failed; ranks_rc says them all.
run() {
    local n=$1 pre=$2
    shift 2
    rm -f "$d"/rc.*
    out=$(timeout 60 "$pxrun" -n "$n" sh -c "$pre; \"\$0\" \"\$@\"; echo \$? >$d/rc.\$PX_RANK" \
        "$probe" "$@" </dev/null 2>&1)
    rc=$?
    ranks_rc=$(cat "$d"/rc.* 2>/dev/null | tr '\n' ' ')
}

run 2 'if [ "$PX_RANK" = 1 ]; then export PX_MCA_btl_shm_fbox_size=65536; fi'
check "btl_shm_fbox_size on rank 1 only: the job ends without hanging (exit $rc)" test "$rc" -ne 124
check "... px_init fails on both ranks (exit status 2 each: $ranks_rc)" test "$ranks_rc" = "2 2 "
check "... with \"bad parameter\"" test "$(printf '%s\n' "$out" | grep -c 'px_init failed: bad parameter')" -eq 2
check "... the error says the job-wide variables differ" contains "$out" "job-wide variables differ between the ranks of the job"
check "... names the variable, rank 0's value and where it came from" contains "$out" "btl_shm_fbox_size: \"0\" on rank 0 (default at rank 0)"
check "... and rank 1's" contains "$out" "\"65536\" on rank 1 (environment PX_MCA_btl_shm_fbox_size at rank 1)"
check "... no transport was reached (the check comes first)" test -z "$(printf '%s\n' "$out" | grep '^transport to')"

run 3 'if [ "$PX_RANK" = 2 ]; then export PX_MCA_runtime_rndv_protocol=get; fi'
check "3 ranks, runtime_rndv_protocol on rank 2 only: px_init fails on every rank ($ranks_rc)" test "$ranks_rc" = "2 2 2 "
check "... ranks with one value are listed together" contains "$out" "runtime_rndv_protocol: \"auto\" on ranks 0-1 (default at rank 0); \"get\" on rank 2 (environment PX_MCA_runtime_rndv_protocol at rank 2)"
check "... the message is printed once for each distinct setting (2 of 3 ranks)" test "$(printf '%s\n' "$out" | grep -c 'job-wide variables differ')" -eq 2

run 2 'if [ "$PX_RANK" = 1 ]; then export PX_MCA_btl_shm_fbox_size=64k; else export PX_MCA_btl_shm_fbox_size=65536; fi'
check "btl_shm_fbox_size 64k on rank 1, 65536 on rank 0 (the same value): the job runs ($ranks_rc)" test "$rc" -eq 0 -a "$ranks_rc" = "0 0 "
check "... both ranks start" test "$(printf '%s\n' "$out" | grep -c '^rank [01] size 2')" -eq 2

run 2 'if [ "$PX_RANK" = 1 ]; then export PX_MCA_runtime_rndv_protocol=GET; else export PX_MCA_runtime_rndv_protocol=1; fi'
check "runtime_rndv_protocol by name on one rank and by number on the other: the job runs ($ranks_rc)" test "$rc" -eq 0 -a "$ranks_rc" = "0 0 "

run 2 'if [ "$PX_RANK" = 1 ]; then export PX_MCA_runtime_wait_timeout=30; fi'
check "a variable of scope local (runtime_wait_timeout) may differ ($ranks_rc)" test "$rc" -eq 0 -a "$ranks_rc" = "0 0 "
# A variable only some ranks have is not compared: btl/ofi's plugin (with its
# job-wide btl_ofi_provider_* variables) found by rank 0 only.
if [ -e "$PX_BUILD/.libs/plexus_btl_ofi.so" ]; then
    run 2 "unset PX_MCA_btl; if [ \"\$PX_RANK\" = 0 ]; then export PX_MCA_mca_component_path=$PX_BUILD/.libs; fi"
    check "a job-wide variable of a plugin only rank 0 loads: the job runs ($ranks_rc)" test "$rc" -eq 0 -a "$ranks_rc" = "0 0 "
else
    skip "a job-wide variable of a plugin only rank 0 loads" "btl/ofi is not built as a plugin here"
fi
tap_done
