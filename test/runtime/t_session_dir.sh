#!/usr/bin/env bash
# The job's scratch folder (px_boot_session_dir) and each rank's folder
# (px_boot_proc_session_dir) under every launcher: a process alone
# (boot/singleton), pxrun (inside its session folder) and mpirun (boot/pmix,
# as test/multihost/t_mpirun.sh runs it). Every rank of the job on the node
# gets the same folder, mode 0700, sees the files the others put there; each
# rank gets its own folder, removed at its finalize; nothing is left under
# TMPDIR after the job; inside a Slurm job the name carries SLURM_JOB_ID and
# SLURM_STEP_ID. A TMPDIR/plexus-<uid> that others can enter is
# refused with a message that names it. Many jobs starting and ending at
# once (one removes plexus-<uid> when it leaves it empty, another is making
# its folder in it) all get their folders: 6 x 20 pxrun jobs and 6 x 10
# processes alone (6 x 8 and 6 x 4 under the sanitizers) while a seventh
# process makes and removes plexus-<uid> in a loop, as jobs that leave it
# empty do; before the fix most of these runs failed with ENOENT (without
# that loop about 1 in 300, so this took 960 runs).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
probe=$B/test/runtime/session_probe
pxrun=$B/tools/pxrun/pxrun
need_built "$probe" "$pxrun"
export PX_MCA_mca_component_path=$B/.libs
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
uid=$(id -u)

# job NAME N: check the output of an N-rank job in $T/NAME.out (TMPDIR=$T/NAME).
job() {
    local name=$1 n=$2 out
    out=$(cat "$T/$name.out")
    check "$name: $n ranks report their folders" \
        test "$(grep -c '^rank [0-9]* node ' "$T/$name.out")" -eq "$n"
    local nodes
    nodes=$(sed -n 's/^rank [0-9]* node \(.*\) mode .*/\1/p' "$T/$name.out" | sort -u)
    check "$name: one job folder for every rank ($(echo "$nodes" | wc -l))" \
        test "$(echo "$nodes" | grep -c .)" -eq 1
    check "$name: the job folder is under TMPDIR ($nodes)" contains "$nodes" "$T/$name/plexus-$uid/"
    check "$name: every folder has mode 700" \
        test "$(grep -E '^rank [0-9]* (node|proc) ' "$T/$name.out" | grep -vc ' mode 700$')" -eq 0
    check "$name: each rank has its own folder inside the job's" \
        test "$(sed -n 's/^rank \([0-9]*\) proc \(.*\) mode .*/\1 \2/p' "$T/$name.out" |
            awk -v d="$nodes" '$2 == d "/rank-" $1' | wc -l)" -eq "$n"
    check "$name: every rank sees the $n files the ranks put in the job folder" \
        test "$(grep -c "^rank [0-9]* sees $n shared" "$T/$name.out")" -eq "$n"
    check "$name: each rank's folder is gone after its finalize" \
        test "$(grep -c '^rank [0-9]* after: proc gone' "$T/$name.out")" -eq "$n"
    left=$(find "$T/$name" -mindepth 1 2>/dev/null | grep -v "/ompi\.\|/openmpi-sessions" | head -5)
    check "$name: nothing of the job is left under TMPDIR (${left:-nothing})" test -z "$left"
}

mkdir -p "$T/alone" "$T/pxrun" "$T/mpirun" "$T/open"
TMPDIR=$T/alone timeout -s KILL 60 "$probe" >"$T/alone.out" 2>"$T/alone.err" </dev/null
check "singleton: exit 0 (exit $?)" test $? -eq 0
job alone 1
check "singleton: the folder is named from the job id" contains "$(cat "$T/alone.out")" "/job-singleton-"

TMPDIR=$T/pxrun timeout -s KILL 120 "$pxrun" -n 3 "$probe" >"$T/pxrun.out" 2>"$T/pxrun.err" </dev/null
rc=$?
check "pxrun -n 3: exit 0 (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/# /' "$T/pxrun.err" | head -5
job pxrun 3
check "pxrun: the job folder is the scratch folder inside pxrun's session folder" \
    test "$(grep -c "^rank [0-9]* node $T/pxrun/plexus-$uid/job-[^/]*/scratch mode" "$T/pxrun.out")" -eq 3

if command -v mpirun >/dev/null; then
    MPIRUN=(timeout -s KILL 120 mpirun --oversubscribe -x PX_MCA_mca_component_path)
    [ "$uid" = 0 ] && MPIRUN+=(--allow-run-as-root)
    TMPDIR=$T/mpirun "${MPIRUN[@]}" -np 3 "$probe" >"$T/mpirun.out" 2>"$T/mpirun.err" </dev/null
    rc=$?
    check "mpirun -np 3: exit 0 (exit $rc)" test $rc -eq 0
    [ $rc -eq 0 ] || sed 's/^/# /' "$T/mpirun.err" | head -5
    job mpirun 3
    check "mpirun: the folder is named from the PMIx namespace and the host" \
        contains "$(cat "$T/mpirun.out")" "-$(hostname | tr -c 'A-Za-z0-9._\n-' _) mode 700"
else
    not_ok "mpirun is installed (openmpi-bin)"
fi

# Inside a Slurm job without its PMIx step folder (srun --mpi=none, mpirun in
# an allocation), the folder's name carries Slurm's job and step ids.
mkdir -p "$T/slurm"
SLURM_JOB_ID=4711 SLURM_STEP_ID=3 TMPDIR=$T/slurm timeout -s KILL 60 "$probe" >"$T/slurm.out" 2>"$T/slurm.err" </dev/null
check "singleton with SLURM_JOB_ID and SLURM_STEP_ID: exit 0 (exit $?)" test $? -eq 0
job slurm 1
check "... the folder is named from the job id and Slurm's job.step" \
    contains "$(cat "$T/slurm.out")" "-slurm4711.3-$(hostname | tr -c 'A-Za-z0-9._\n-' _) mode 700"

mkdir -m 755 "$T/open/plexus-$uid"
TMPDIR=$T/open timeout -s KILL 60 "$probe" >"$T/open.out" 2>"$T/open.err" </dev/null
rc=$?
err=$(cat "$T/open.err")
check "plexus-<uid> with mode 755: the probe gets no folder (exit $rc)" test $rc -eq 1
check "... the error names the folder" contains "$err" "cannot use $T/open/plexus-$uid"
check "... says where the place came from and what is accepted" \
    contains "$err" "the place comes from TMPDIR=$T/open; each folder must be a directory owned by uid $uid with mode 0700"
# ---- a TMPDIR that does not exist: said at once (the retries on ENOENT of
# the race below end with the real error)
err=$(TMPDIR=$T/none/x "$probe" 2>&1)
check "TMPDIR missing: a process alone says which folder it cannot use, and why" \
    contains "$err" "cannot use $T/none/x/plexus-$uid: No such file or directory"
err=$(TMPDIR=$T/none/x "$pxrun" -n 1 /bin/true 2>&1)
check "TMPDIR missing: pxrun says which folder it cannot use, and why" \
    contains "$err" "cannot use session folder $T/none/x/plexus-$uid: No such file or directory"
# ---- many jobs at once, sharing TMPDIR/plexus-<uid>
mkdir -p "$T/race"
# churn: what a job that leaves plexus-<uid> empty does (rmdir), and one that
# starts (mkdir 0700), in a loop until $T/race.stop exists: a job that makes
# its folder in plexus-<uid> at that moment finds it gone (ENOENT) far more
# often than among real jobs alone, so few runs catch a missing retry.
churn() {
    rm -f "$T/race.stop"
    perl -e 'my ($d, $stop) = @ARGV;
        until (-e $stop) { for (1 .. 200) { mkdir $d, 0700; rmdir $d } }' \
        "$T/race/plexus-$uid" "$T/race.stop" &
    churner=$!
}
# race NAME RUNS WHAT COMMAND...: 6 lanes of RUNS runs of COMMAND at once,
# with churn; a run that fails prints its status and error lines, and none may.
race() {
    local name=$1 runs=$2 what=$3 lane bad lanes=()
    shift 3
    churn
    for lane in 1 2 3 4 5 6; do
        (for _ in $(seq 1 "$runs"); do
            TMPDIR=$T/race "$@" >"$T/race.$name.out.$lane" 2>&1 ||
                { echo "exit $?"; grep -v '^rank' "$T/race.$name.out.$lane" | head -2; }
        done) >"$T/race.$name.$lane" &
        lanes+=("$!")
    done
    wait "${lanes[@]}"
    touch "$T/race.stop"
    wait "$churner"
    bad=$(cat "$T/race.$name".[1-6] | grep -c .)
    check "$((6 * runs)) $what, 6 at a time, plexus-<uid> made and removed meanwhile: each made its folder ($bad lines of error)" test "$bad" -eq 0
    cat "$T/race.$name".[1-6] | sort | uniq -c | head -3 | sed 's/^/# /'
}
# (under the sanitizers a process takes several times longer to start, and
# so meets the loop more often: fewer runs)
if [ -n "${PX_TEST_SANITIZER:-}${PX_TEST_TSAN:-}" ]; then
    race pxrun 8 "pxrun jobs" "$pxrun" -n 1 /bin/true
    race single 4 "processes alone" "$probe"
else
    race pxrun 20 "pxrun jobs" "$pxrun" -n 1 /bin/true
    race single 10 "processes alone" "$probe"
fi
check "... and nothing is left under TMPDIR" test -z "$(ls -A "$T/race")"
tap_done
