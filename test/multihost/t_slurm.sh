#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# Plexus under Slurm for real (Debian's Slurm and its PMIx plugin). The test
# makes a small cluster on this machine and tears it down at the end, also
# when a check fails (trap):
#  - munged with a key of its own, slurmctld, and one slurmd on each of two
#    "hosts": network namespaces joined by a veth pair (test/lib/netns.sh),
#    each with its own UTS name (nsA, nsB) and its own mount namespace, where
#    a tmpfs is its /dev/shm and a folder of its own is the slurm.conf's
#    "$T/node" (SlurmdSpoolDir, TmpFS), as on separate machines;
#  - a slurm.conf written for the run, with MpiDefault=pmix.
# Jobs (submitted from nsA):
#  - srun --mpi=pmix -N 2 -n 4 of the checksummed all-to-all: it passes, shm
#    serves the pairs inside a host and ofi (over the veth) the pairs across;
#  - the job's scratch folder (px_boot_session_dir) is Slurm's step folder
#    (PMIX_NSDIR), shared by the ranks of a host and removed by Slurm at the
#    end of the step; under srun --mpi=none the folder is named from
#    SLURM_JOB_ID and SLURM_STEP_ID;
#  - px_perf under srun, reporting the transports (shm, ofi);
#  - sbatch of a script that runs srun twice in one allocation;
#  - a rank SIGKILLed mid-run, the survivors calling px_abort on a failed
#    transfer: the step ends within 5 s, with Slurm's message and Plexus's
#    own; nothing is left in /dev/shm or the scratch folder; the same with
#    srun --kill-on-bad-exit, where Slurm ends the step.
# Skips, saying why, when not root, when a package is missing, and in the
# sanitizer build (it tests the launcher, not memory safety; the same
# programs run under the sanitizers in t_multihost.sh, t_mpirun.sh, t_shm.sh).
. "$PX_SRC/test/lib/tap.sh"
. "$PX_SRC/test/lib/netns.sh"
B=$PX_BUILD
A2A=$B/test/ofi/ofi_alltoall
SA2A=$B/test/shm/shm_alltoall
PROBE=$B/test/runtime/session_probe
PXPERF=$B/tools/px_perf/px_perf
what="Plexus jobs on a Slurm cluster made for the test"
if [ "${PX_TEST_SANITIZER:-0}" = 1 ]; then
    skip "$what" "runs in the normal build only: it tests the launcher, not memory safety (t_multihost.sh, t_mpirun.sh and t_shm.sh run the same programs under the sanitizers)"
    tap_done
fi
if [ "$(id -u)" != 0 ]; then
    skip "$what" "needs root (network namespaces, Slurm's daemons); .ci/run runs it as root"
    tap_done
fi
for need in munged:munge slurmctld:slurmctld slurmd:slurmd srun:slurm-client sbatch:slurm-client \
    sinfo:slurm-client ip:iproute2 unshare:util-linux nsenter:util-linux; do
    command -v "${need%%:*}" >/dev/null || {
        skip "$what" "${need%%:*} is not installed (Debian package ${need#*:}; scripts/deps.sh installs it)"
        tap_done
    }
done
need_built "$A2A" "$SA2A" "$PROBE" "$PXPERF"
[ -e "$B/.libs/plexus_boot_pmix.so" ] || { not_ok "plugin plexus_boot_pmix.so is built (libpmix-dev)"; tap_done; }

# Short: the PMIx server's sockets live below it (a socket path has 108 bytes).
T=$(mktemp -d /tmp/pxslurm.XXXXXX)
chmod 755 "$T" # munged wants its socket's folder open to everyone
uid=$(id -u)
cleanup() {
    netns_down
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
netns_up sl "$T/setup.err" || netns_skip_or_fail "$what" "$T/setup.err"
mkdir -p "$T/munge" "$T/ctld" "$T/node" "$T/out" "$T/ttmp"
for h in A B; do mkdir -p "$T/host$h/spool" "$T/host$h/tmp"; done
chmod 700 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"

cat >"$T/slurm.conf" <<EOF
# Written by test/multihost/t_slurm.sh for one run.
ClusterName=plexus
SlurmctldHost=nsA($IP_A)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge.sock
SlurmUser=root
SlurmdUser=root
MpiDefault=pmix
StateSaveLocation=$T/ctld
SlurmctldPidFile=$T/ctld/slurmctld.pid
SlurmctldLogFile=$T/ctld/slurmctld.log
# \$T/node is each host's own folder (a bind mount in its mount namespace)
SlurmdSpoolDir=$T/node/spool
SlurmdPidFile=$T/node/slurmd.pid
SlurmdLogFile=$T/node/slurmd.log
TmpFS=$T/node/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=120
MessageTimeout=30
InactiveLimit=0
KillWait=5
NodeName=nsA NodeAddr=$IP_A CPUs=2 State=UNKNOWN
NodeName=nsB NodeAddr=$IP_B CPUs=2 State=UNKNOWN
PartitionName=plexus Nodes=nsA,nsB Default=YES MaxTime=10 State=UP
EOF
export SLURM_CONF=$T/slurm.conf PX_MCA_mca_component_path=$B/.libs
# A login shell on nsA: srun, sbatch and sinfo reach slurmctld over the veth.
login() { nsenter --net="/run/netns/$NS_A" "$@"; }
if ! login srun --mpi=list 2>&1 | grep -qw pmix; then
    skip "$what" "Slurm here has no PMIx plugin: srun --mpi=list lacks pmix (Debian package slurm-wlm-basic-plugins, mpi_pmix_v4.so)"
    tap_done
fi

# The daemons run in the foreground as this shell's children (no orphans;
# disowned, so that bash does not report their end at teardown), each inside
# the namespaces of its host.
nsenter --net="/run/netns/$NS_A" munged -F --key-file="$T/munge/munge.key" --socket="$T/munge.sock" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" \
    --seed-file="$T/munge/munged.seed" </dev/null >/dev/null 2>&1 &
disown
for _ in $(seq 300); do [ -S "$T/munge.sock" ] && break; sleep 0.1; done
check "munged runs with the test's key" test -S "$T/munge.sock"
nsenter --net="/run/netns/$NS_A" unshare --uts sh -c "hostname nsA && exec slurmctld -D -i -f '$SLURM_CONF'" \
    </dev/null >"$T/ctld/stdout" 2>&1 &
disown
declare -A slurmd_pid
for h in A B; do
    ns=NS_$h
    nsenter --net="/run/netns/${!ns}" unshare --uts --mount --propagation private sh -c "
        hostname ns$h && mount --bind '$T/host$h' '$T/node' &&
        mount -t tmpfs -o mode=1777,size=2g pxshm$h /dev/shm &&
        exec slurmd -D -f '$SLURM_CONF' -N ns$h" </dev/null >"$T/host$h/stdout" 2>&1 &
    slurmd_pid[$h]=$!
    disown
done
state=
for _ in $(seq 600); do
    state=$(login sinfo -h -N -o '%N=%T' 2>/dev/null | sort | tr '\n' ' ')
    [ "$state" = "nsA=idle nsB=idle " ] && break
    sleep 0.1
done
check "slurmctld and one slurmd on each of nsA and nsB: sinfo shows both nodes idle ($state)" \
    test "$state" = "nsA=idle nsB=idle "
if [ "$state" != "nsA=idle nsB=idle " ]; then
    for f in "$T/ctld/stdout" "$T/ctld/slurmctld.log" "$T"/host?/stdout "$T"/host?/slurmd.log; do
        [ -s "$f" ] && tail -5 "$f" | sed "s|^|# $(basename "$(dirname "$f")")/$(basename "$f"): |"
    done
    tap_done
fi
check "srun --mpi=list shows pmix" contains "$(login srun --mpi=list 2>&1)" "pmix"

# host_shm H: what is in host H's /dev/shm (its own tmpfs)
host_shm() { nsenter --target "${slurmd_pid[$1]}" --mount ls -A /dev/shm 2>&1; }
# host_shm_files H: what is in host H's /dev/shm but empty plexus-* folders
host_shm_files() {
    nsenter --target "${slurmd_pid[$1]}" --mount \
        find /dev/shm -mindepth 1 \( -type d -name 'plexus-*' -empty \) -prune -o -print 2>&1
}
# step_dirs: Slurm's step folders left in the hosts' TmpFS
step_dirs() { find "$T/hostA/tmp" "$T/hostB/tmp" -mindepth 1 -maxdepth 1 2>/dev/null; }
# wait_no_step_dirs: Slurm removes a step's folder just after srun returns
wait_no_step_dirs() {
    for _ in $(seq 300); do [ -z "$(step_dirs)" ] && return 0; sleep 0.1; done
    step_dirs | sed 's/^/# left: /'
    return 1
}
# srun_job NAME ARGS...: srun from nsA, output in $T/out/NAME.{out,err}, exit in $rc
srun_job() {
    local name=$1
    shift
    login timeout -k 10 120 srun "$@" >"$T/out/$name.out" 2>"$T/out/$name.err" </dev/null
    rc=$?
    [ $rc -eq 0 ] || [ -n "${expect_fail:-}" ] || head -20 "$T/out/$name.err" | sed 's/^/# /'
}

# 1. The checksummed all-to-all over both hosts.
rx0=$(netns_rx_bytes)
srun_job a2a --mpi=pmix -N 2 -n 4 "$A2A"
rx1=$(netns_rx_bytes)
check "srun --mpi=pmix -N 2 -n 4 all-to-all: exit 0" test $rc -eq 0
check "all-to-all 0 B..4 MiB with checksums passes on all 4 ranks" \
    test "$(grep -c '^alltoall ok 22 rank ' "$T/out/a2a.out")" -eq 4
declare -A host
while read -r _ me peer h _; do [ "$me" = "$peer" ] && host[$me]=$h; done < <(grep '^transport ' "$T/out/a2a.out")
check "ranks 0,1 run on nsA and ranks 2,3 on nsB" \
    test "${host[0]:-}${host[1]:-}${host[2]:-}${host[3]:-}" = "nsAnsAnsBnsB"
bad=0 n=0 nshm=0 nofi=0
while read -r _ me peer h name; do
    n=$((n + 1))
    if [ "$me" = "$peer" ]; then
        want=self
    elif [ "${host[$me]:-}" = "${host[$peer]:-}" ]; then
        want=shm nshm=$((nshm + 1))
    else
        want=ofi nofi=$((nofi + 1))
    fi
    [ "$name" = "$want" ] || { bad=$((bad + 1)); echo "# rank $me -> $peer ($h): $name, expected $want"; }
done < <(grep '^transport ' "$T/out/a2a.out")
check "transports of the 16 pairs: shm inside a host ($nshm), ofi across ($nofi), self" \
    test "$n" -eq 16 -a "$bad" -eq 0 -a "$nshm" -eq 4 -a "$nofi" -eq 8
check "the cross-host bytes went over the veth into nsB ($((rx1 - rx0)) bytes)" \
    test $((rx1 - rx0)) -gt 16000000
check "nothing left in nsA's or nsB's /dev/shm" test -z "$(host_shm A)$(host_shm B)"

# 2. The job's scratch folder is Slurm's step folder.
srun_job probe --mpi=pmix -N 2 -n 4 "$PROBE"
check "srun of the scratch-folder probe: exit 0" test $rc -eq 0
nodes=$(sed -n 's/^rank [0-9]* node \(.*\) mode 700$/\1/p' "$T/out/probe.out" | sort -u)
check "all 4 ranks' scratch folder is Slurm's step folder (PMIX_NSDIR) in TmpFS: $nodes" \
    test "$(grep -c "^rank [0-9] node $T/node/tmp/spmix_appdir_${uid}_[0-9]*\.0/scratch mode 700\$" "$T/out/probe.out")" -eq 4 -a "$(echo "$nodes" | grep -c .)" -eq 1
check "the ranks of each host share their host's folder (each sees the 2 files of its host)" \
    test "$(grep -c '^rank [0-9] sees 2 shared$' "$T/out/probe.out")" -eq 4
check "each rank's own folder is gone after its px_finalize" \
    test "$(grep -c '^rank [0-9] after: proc gone$' "$T/out/probe.out")" -eq 4
check "Slurm removes the step folder, scratch folder and all, at the end of the step" wait_no_step_dirs

srun_job single --mpi=none -N 1 -n 1 --export=ALL,TMPDIR="$T/ttmp" \
    sh -c 'echo "slurm job $SLURM_JOB_ID.$SLURM_STEP_ID"; exec "$0"' "$PROBE"
job=$(sed -n 's/^slurm job //p' "$T/out/single.out")
check "srun --mpi=none (boot/singleton) of the probe: exit 0" test $rc -eq 0
check "... its scratch folder is named from SLURM_JOB_ID and SLURM_STEP_ID ($job)" \
    test "$(grep -c "^rank 0 node $T/ttmp/plexus-$uid/job-.*-slurm$job-nsA mode 700\$" "$T/out/single.out")" -eq 1
check "... and removed at px_finalize" test -z "$(find "$T/ttmp" -mindepth 1 | head -3)"

# 3. px_perf under srun.
srun_job perf4 --mpi=pmix -N 2 -n 4 "$PXPERF" --sizes 8,65536,1M --iters 20
check "px_perf under srun -N 2 -n 4: exit 0" test $rc -eq 0
check "px_perf reports the transports from rank 0: self, shm on nsA, ofi to nsB" \
    contains "$(cat "$T/out/perf4.out")" "transports from rank 0: 0:self 1:shm 2:ofi 3:ofi"
check "px_perf prints a row for each of the 3 sizes" \
    test "$(grep -cE '^ +(8|65536|1048576) +[0-9.]+ +[0-9.]+$' "$T/out/perf4.out")" -eq 3
srun_job perf2 --mpi=pmix -N 2 -n 2 "$PXPERF" --sizes 8,1M --iters 20 --json
check "px_perf --json under srun -N 2 -n 2 (one rank per host): exit 0" test $rc -eq 0
check "px_perf --json: rank 1, on the other host, is reached over ofi" \
    contains "$(cat "$T/out/perf2.out")" '{"from": 0, "to": 1, "transport": "ofi"}'

# 4. sbatch: two job steps in one allocation.
cat >"$T/job.sh" <<EOF
#!/bin/sh
#SBATCH -N 2
#SBATCH -n 4
#SBATCH -t 5
echo "batch script on \$(hostname), job \$SLURM_JOB_ID, nodes \$SLURM_JOB_NODELIST"
srun "$A2A" 65536 || exit 1
srun --mpi=pmix "$PROBE" || exit 2
EOF
login timeout -s KILL 180 sbatch --wait -o "$T/out/batch.out" -e "$T/out/batch.err" "$T/job.sh" \
    >"$T/out/sbatch.out" 2>&1 </dev/null
rc=$?
[ $rc -eq 0 ] || { cat "$T/out/sbatch.out" "$T/out/batch.err" 2>/dev/null | head -20 | sed 's/^/# /'; }
bjob=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$T/out/sbatch.out")
check "sbatch --wait of a script with two sruns: exit 0 (job ${bjob:-?})" test $rc -eq 0 -a -n "$bjob"
check "the batch script ran on nsA in a 2-node allocation" \
    contains "$(cat "$T/out/batch.out" 2>/dev/null)" "batch script on nsA, job $bjob, nodes "
check "step $bjob.0 (plain srun, MpiDefault=pmix): all-to-all 0 B..64 KiB passes on 4 ranks over shm and ofi" \
    test "$(grep -c '^alltoall ok 16 rank ' "$T/out/batch.out")" -eq 4 \
    -a "$(grep -c '^transport 0 [23] nsA ofi$' "$T/out/batch.out")" -eq 2 \
    -a "$(grep -c '^transport 0 1 nsA shm$' "$T/out/batch.out")" -eq 1
check "step $bjob.1 (srun --mpi=pmix): 4 ranks in the step's own folder spmix_appdir_${uid}_$bjob.1" \
    test "$(grep -c "^rank [0-9] node $T/node/tmp/spmix_appdir_${uid}_$bjob\.1/scratch mode 700\$" "$T/out/batch.out")" -eq 4
check "... and Slurm removed both steps' folders" wait_no_step_dirs

# 5. A rank SIGKILLed during the run (rank 2, on nsB), twice: the survivors
# end the job themselves (--abort-on-error: the rank that sees the transfer
# fail calls px_abort, which asks Slurm through PMIx to end the step), or
# Slurm ends it when a task fails (srun --kill-on-bad-exit). Under Slurm's
# defaults, without either, a survivor still connecting to the dead rank over
# ofi learns of the death from a refused probe of its port (docs/launching.md).
killed_job() { # NAME DESCRIPTION SRUN-OPTIONS... -- PROGRAM-OPTIONS...
    local name=$1 desc=$2 opts=()
    shift 2
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    expect_fail=1 srun_job "$name" --mpi=pmix "${opts[@]}" -N 2 -n 4 "$SA2A" --rounds 1000 --msgs 4 --max 1048576 \
        --kill-rank 2 --kill-after 20 "$@"
    local end killed took left
    end=$(date +%s.%N)
    err=$(cat "$T/out/$name.err")
    killed=$(sed -n 's/^rank 2: SIGKILL to itself at //p' "$T/out/$name.err")
    took=$(awk -v a="$killed" -v b="$end" 'BEGIN { if (a == "") print "?"; else printf "%.2f", b - a }')
    check "$desc: srun fails (exit $rc), and not by the test's timeout" test $rc -ne 0 -a $rc -ne 124
    check "... Slurm's message names the task and the signal" \
        test "$(grep -cE 'srun: error: nsB: tasks? 2(-3|,3)?: Killed' "$T/out/$name.err")" -eq 1
    check "... the step ended within 5 s of the kill (${took} s)" \
        awk -v t="$took" 'BEGIN { exit !(t != "?" && t <= 5) }'
    left=$(for ns in $NS_A $NS_B; do ip netns pids "$ns"; done | xargs -r ps -o stat=,args= -p 2>/dev/null |
        grep -v '^Z' | grep -c shm_alltoall)
    check "... no rank is left running" test "$left" -eq 0
    if [ "$name" = kob ]; then
        # Every rank SIGKILLed, and Slurm takes no PMIx cleanup registration:
        # the segments were unlinked once all attached, the job's folder
        # stays (empty) until the user's next job on the host.
        check "... no segment left in nsA's or nsB's /dev/shm (at most the job's empty folder)" \
            test -z "$(host_shm_files A)$(host_shm_files B)"
    else
        check "... nothing left in nsA's or nsB's /dev/shm" test -z "$(host_shm A)$(host_shm B)"
    fi
    check "... nothing left of the step's folder (Slurm removes it)" wait_no_step_dirs
}
killed_job abort "a rank killed mid-run, survivors abort" -- --abort-on-error
check "... Plexus's own message names the dead rank and its host" \
    test "$(grep -cE 'plexus: error: btl (shm|ofi): transport error with rank 2 \(host nsB\)' "$T/out/abort.err")" -ge 1
check "... and the rank that ended the job says why" \
    contains "$err" "aborted with status 1: shm_alltoall: a transfer failed"
check "... Slurm cancelled the step" contains "$err" "CANCELLED AT"
killed_job kob "a rank killed mid-run under srun --kill-on-bad-exit" --kill-on-bad-exit=1 --
check "... Slurm ended the step for the bad exit" contains "$err" "Terminating StepId="
# The next job of the user on the hosts removes the folder the killed job
# left (btl/shm: a plexus-<uid>-* folder nobody holds the flock of).
srun_job next --mpi=pmix -N 2 -n 4 "$SA2A" --rounds 1 --msgs 1 --max 8
check "the next job runs (exit 0)" test $rc -eq 0
check "... and removes the killed job's folder: nothing left in nsA's or nsB's /dev/shm" \
    test -z "$(host_shm A)$(host_shm B)"

# Teardown, checked.
netns_down
stray=$(pgrep -f -- "$T" | xargs -r ps -o stat=,pid=,args= -p 2>/dev/null | grep -v '^Z')
check "teardown: no daemon or task of the cluster is left" test -z "$stray"
[ -z "$stray" ] || echo "$stray" | sed 's/^/# /'
check "teardown: the namespaces are gone" eval '! ip netns list | grep -qE "^($NS_A|$NS_B)( |\$)"'
tap_done
