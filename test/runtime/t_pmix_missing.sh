#!/usr/bin/env bash
# A process whose environment says a launcher started it with others
# (PMIX_NAMESPACE/PMIX_RANK/PMIX_SERVER_URI*, OMPI_COMM_WORLD_SIZE > 1,
# SLURM_STEP_NUM_TASKS > 1) while boot/pmix cannot serve it must not quietly
# start as a singleton (N one-process jobs): px_init fails, naming the
# evidence and why boot/pmix is missing (not on the plugin path, excluded by
# PX_MCA_boot, refused). PX_MCA_boot=singleton runs it alone on purpose.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/init_probe
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
while IFS= read -r v; do unset "$v"; done < <(env | sed -n 's/^\(PMIX_[^=]*\|OMPI_[^=]*\|SLURM_[^=]*\|PX_MCA_[^=]*\)=.*/\1/p')
export HOME=$tmp/home PX_SYSCONFDIR=$tmp/etc
mkdir -p "$HOME" "$PX_SYSCONFDIR" "$tmp/empty"

# run VAR=VALUE...: the probe with these settings; sets $out (stdout+stderr) and $rc
run() { out=$(env "$@" timeout -s KILL 60 "$probe" 2>&1); rc=$?; }

run PX_MCA_mca_component_path="$tmp/empty"
check "no launcher in the environment: a singleton starts (exit $rc)" test "$rc" -eq 0
check "... of size 1" contains "$out" "rank 0 size 1"

run PX_MCA_mca_component_path="$tmp/empty" PMIX_NAMESPACE=job42 PMIX_RANK=1
check "PMIx environment, boot/pmix not on the path: px_init fails (exit $rc)" test "$rc" -eq 2
check "... naming the evidence" contains "$out" "a launcher started this process (PMIX_NAMESPACE=job42)"
check "... saying plexus_boot_pmix.so is on no folder searched" \
    contains "$out" "plexus_boot_pmix.so is not in any plugin folder searched"
check "... listing the folders searched" contains "$out" "$tmp/empty"
check "... and the way out" contains "$out" "PX_MCA_mca_component_path_prepend"
check "... no singleton started" sh -c '! echo "$1" | grep -q "rank 0 size 1"' _ "$out"

run PX_MCA_mca_component_path="$tmp/empty" PMIX_SERVER_URI41="tcp4://127.0.0.1:1"
check "PMIX_SERVER_URI41 alone is evidence too (exit $rc)" test "$rc" -eq 2
check "... named" contains "$out" "(PMIX_SERVER_URI41=tcp4://127.0.0.1:1)"

run PX_MCA_mca_component_path="$tmp/empty" OMPI_COMM_WORLD_SIZE=4
check "OMPI_COMM_WORLD_SIZE=4: px_init fails (exit $rc)" test "$rc" -eq 2
check "... naming it" contains "$out" "(OMPI_COMM_WORLD_SIZE=4)"
run PX_MCA_mca_component_path="$tmp/empty" SLURM_STEP_NUM_TASKS=8
check "SLURM_STEP_NUM_TASKS=8: px_init fails (exit $rc)" test "$rc" -eq 2
run PX_MCA_mca_component_path="$tmp/empty" SLURM_STEP_NUM_TASKS=1 OMPI_COMM_WORLD_SIZE=1
check "a launcher of one process: a singleton is right (exit $rc)" test "$rc" -eq 0

if [ -e "$PX_BUILD/.libs/plexus_boot_pmix.so" ]; then
    run PX_MCA_mca_component_path="$PX_BUILD/.libs" PX_MCA_boot='^pmix' PMIX_NAMESPACE=job42 PMIX_RANK=1
    check "boot=^pmix under a PMIx launcher: px_init fails (exit $rc)" test "$rc" -eq 2
    check "... saying it is excluded, by what and where" \
        contains "$out" 'boot/pmix is excluded by the selection variable boot = "^pmix" (from environment PX_MCA_boot)'
    mkdir -p "$tmp/open"
    cp "$PX_BUILD/.libs/plexus_boot_pmix.so" "$tmp/open/"
    chmod 0755 "$tmp/open"
    chmod 0757 "$tmp/open/plexus_boot_pmix.so"
    run PX_MCA_mca_component_path="$tmp/open" PMIX_NAMESPACE=job42 PMIX_RANK=1
    check "a refused boot/pmix plugin under a PMIx launcher: px_init fails (exit $rc)" test "$rc" -eq 2
    check "... with the refusal's reason" contains "$out" "boot/pmix could not be used: file $tmp/open/plexus_boot_pmix.so is world-writable"
else
    not_ok "plexus_boot_pmix.so is built in $PX_BUILD/.libs (configure found PMIx)"
fi

# boot/pmix loads libpmix only for a process a PMIx launcher started: a
# singleton or a pxrun job never maps it (it cost every px_init ~3 ms of CPU).
if [ -e "$PX_BUILD/.libs/plexus_boot_pmix.so" ]; then
    run PX_MCA_mca_component_path="$PX_BUILD/.libs"
    check "a singleton with boot/pmix on the path starts (exit $rc)" test "$rc" -eq 0
    check "... without mapping libpmix" contains "$out" "mapped: libpmix 0 "
    out=$(PX_MCA_mca_component_path="$PX_BUILD/.libs" timeout -s KILL 60 \
        "$PX_BUILD/tools/pxrun/pxrun" -n 2 "$probe" 2>&1)
    check "pxrun -n 2 with boot/pmix on the path: neither rank maps libpmix" \
        test "$(printf '%s\n' "$out" | grep -c 'mapped: libpmix 0 ')" -eq 2
fi

run PX_MCA_mca_component_path="$tmp/empty" PX_MCA_boot=singleton PMIX_NAMESPACE=job42 PMIX_RANK=1
check "PX_MCA_boot=singleton: a singleton on purpose (exit $rc)" test "$rc" -eq 0
check "... of size 1" contains "$out" "rank 0 size 1"
tap_done
