#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# pxrun: exit codes and signals, timeout, ending a job, stdin, tagged output,
# bad input, -x/--mca hand-off, the modex service (with fuzzing), cleanup.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
CLIENT=$B/test/pxrun/pxrun_client
ENVP=$B/test/pxrun/pxrun_env
PROBE=$B/test/pxrun/px_probe
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
uid=$(id -u)
sess=${TMPDIR:-/tmp}/plexus-$uid
# run CMD...: stdout in $T/out, stderr in $T/err, status in $rc (bounded: 20 s)
run() { timeout -s KILL 20 "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }

run "$PXRUN" -n 2 true
check "pxrun -n 2 true exits 0" [ "$rc" -eq 0 ]

run "$PXRUN" -n 3 sh -c 'exit $((PX_RANK == 1 ? 3 : 0))'
check "a rank's exit code 3 becomes pxrun's" [ "$rc" -eq 3 ]
check "the report names the rank and its status" contains "$(cat "$T/err")" "rank 1 (pid"
check "the report says how it ended" contains "$(cat "$T/err")" "exited with status 3"

run "$PXRUN" -n 3 sh -c 'if [ $PX_RANK = 2 ]; then kill -9 $$; fi; sleep 30'
check "a rank killed by SIGKILL: pxrun exits 128+9" [ "$rc" -eq 137 ]
check "the report names rank 2 and signal 9" contains "$(cat "$T/err")" "rank 2 (pid"
check "the report names the signal" contains "$(cat "$T/err")" "killed by signal 9"

run "$PXRUN" -n 2 --timeout 0.5 sleep 30
check "--timeout ends the job with status 124" [ "$rc" -eq 124 ]
check "--timeout is reported" contains "$(cat "$T/err")" "timeout"

# Ranks that ignore SIGTERM are killed after the grace period.
run env PX_PXRUN_GRACE=0.3 "$PXRUN" -n 2 --timeout 0.3 sh -c 'trap "" TERM; while :; do sleep 0.1; done'
check "ranks ignoring SIGTERM get SIGKILL" [ "$rc" -eq 124 ]
check "the SIGKILL escalation is reported" contains "$(cat "$T/err")" "sending SIGKILL"

for sig in TERM INT; do
    "$PXRUN" -n 2 sh -c 'echo $$ > '"$T"'/pid.$PX_RANK; echo $PX_JOBID > '"$T"'/job; sleep 30' \
        </dev/null >"$T/out" 2>"$T/err" &
    p=$!
    for _ in $(seq 100); do [ -s "$T/pid.1" ] && [ -s "$T/pid.0" ] && break; sleep 0.05; done
    kill -$sig $p
    wait $p
    rc=$?
    num=$(kill -l $sig)
    check "SIG$sig to pxrun: exit 128+$num" [ "$rc" -eq $((128 + num)) ]
    check "SIG$sig to pxrun: reported" contains "$(cat "$T/err")" "received signal $num"
    alive=0
    for f in "$T"/pid.*; do kill -0 "$(cat "$f")" 2>/dev/null && alive=1; done
    check "SIG$sig to pxrun: no rank survives" [ "$alive" -eq 0 ]
    job=$(cat "$T/job")
    check "SIG$sig to pxrun: session folder removed" [ ! -e "$sess/job-$job" ]
    check "SIG$sig to pxrun: shm folder removed" [ ! -e "/dev/shm/plexus-$uid-$job" ]
    rm -f "$T"/pid.* "$T/job"
done

out=$(echo "line for rank 0" | timeout -s KILL 20 "$PXRUN" -n 3 sh -c 'cat; echo done $PX_RANK')
check "stdin reaches rank 0 only" [ "$(echo "$out" | grep -c 'line for rank 0')" -eq 1 ]
check "every rank ran" [ "$(echo "$out" | grep -c '^done')" -eq 3 ]

run "$PXRUN" -n 2 --tag-output sh -c 'echo out$PX_RANK; printf "part"; printf "ial\n"; echo err$PX_RANK >&2'
check "--tag-output tags stdout" contains "$(cat "$T/out")" "[1] out1"
check "--tag-output keeps partial writes on one line" [ "$(grep -c '^\[[01]\] partial$' "$T/out")" -eq 2 ]
check "--tag-output tags stderr" contains "$(cat "$T/err")" "[0] err0"
run "$PXRUN" -n 2 sh -c 'echo plain$PX_RANK'
check "untagged output passes through" [ "$(grep -c '^plain[01]$' "$T/out")" -eq 2 ]

# Bad input: a clear message and a non-zero exit.
bad() { # description expected-text args...
    local d=$1 want=$2
    shift 2
    run "$PXRUN" "$@"
    if [ "$rc" -ne 0 ] && contains "$(cat "$T/err")" "$want"; then ok "bad input: $d"; else not_ok "bad input: $d (exit $rc)"; fi
}
bad "-n 0" "expected a number of ranks" -n 0 true
bad "-n abc" "expected a number of ranks" -n abc true
bad "no -n" "missing -n" true
bad "missing program" "missing the program" -n 2
bad "unknown option" "unknown option '--bogus'" -n 2 --bogus true
bad "--mca without a value" "--mca needs a name and a value" -n 2 --mca btl_shm_fbox_size
bad "--mca name=value" "malformed" -n 2 --mca btl=self x true
bad "--mca bad name" "malformed variable name" -n 2 --mca 'a-b' 1 true
bad "program not found" "cannot run the program" -n 2 /no/such/program
bad "-x of an unset variable" "is not set" -n 2 -x PX_SURELY_UNSET_VAR true
bad "--timeout garbage" "positive number of seconds" -n 2 --timeout soon true
run "$PXRUN" -n 2 /no/such/program
check "a program that cannot run: exit 127" [ "$rc" -eq 127 ]

# -x and --mca reach the ranks; --mca with source "command line".
run env PX_T_INHERIT=yes "$PXRUN" -n 2 -x PX_T_FOO=bar -x PX_T_INHERIT --mca btl_shm_poll_batch 17 \
    "$ENVP" btl_shm_poll_batch env:PX_T_FOO env:PX_T_INHERIT
check "pxrun_env ran on 2 ranks" [ "$rc" -eq 0 -a "$(grep -c '^rank' "$T/out")" -eq 2 ]
check "--mca reaches every rank with source command line" \
    [ "$(grep -c '^var btl_shm_poll_batch=17 source=command line$' "$T/out")" -eq 2 ]
check "-x VAR=VALUE reaches every rank" [ "$(grep -c '^env PX_T_FOO=bar$' "$T/out")" -eq 2 ]
check "-x VAR passes pxrun's value" [ "$(grep -c '^env PX_T_INHERIT=yes$' "$T/out")" -eq 2 ]
check "boot/pxrun gives rank and size" contains "$(cat "$T/out")" "rank 1 size 2"

# The modex service, with and without fuzzing first.
for n in 2 4 8; do
    run "$PXRUN" -n $n "$CLIENT" modex
    check "modex put/fence/get on $n ranks" [ "$rc" -eq 0 -a "$(grep -c '^modex ok' "$T/out")" -eq $n ]
done
run "$PXRUN" -n 4 "$CLIENT" fuzz 48
check "pxrun survives malformed frames and still serves the modex" \
    [ "$rc" -eq 0 -a "$(grep -c '^modex ok' "$T/out")" -eq 4 ]
check "malformed frames are reported" contains "$(cat "$T/err")" "closing a connection"

# A fence that a rank which already exited can never join ends the job.
run "$PXRUN" -n 2 sh -c 'if [ $PX_RANK = 0 ]; then exec '"$CLIENT"' modex; fi; exit 0'
check "a fence orphaned by an exited rank fails the job" [ "$rc" -ne 0 ]
check "the orphaned fence is reported" contains "$(cat "$T/err")" "waited for it in a fence"

# Cleanup after a normal run and after a rank dies holding a file in the shm folder.
run "$PXRUN" -n 2 sh -c 'echo $PX_JOBID'
job=$(head -1 "$T/out")
check "session folder removed after a normal run" [ -n "$job" -a ! -e "$sess/job-$job" ]
run "$PXRUN" -n 2 sh -c 'd=/dev/shm/plexus-$(id -u)-$PX_JOBID; touch $d/seg-$PX_RANK; echo $PX_JOBID; if [ $PX_RANK = 1 ]; then kill -9 $$; fi; sleep 30'
job=$(head -1 "$T/out")
check "a SIGKILLed rank: pxrun fails" [ "$rc" -eq 137 ]
check "a SIGKILLed rank: its shm files are removed" [ -n "$job" -a ! -e "/dev/shm/plexus-$uid-$job" ]
check "a SIGKILLed rank: session folder removed" [ ! -e "$sess/job-$job" ]

# The shm folder of this user's ended job (nobody holds it) beside the new
# job's is removed by pxrun itself, once per job (the ranks, whose folder
# pxrun made, do not scan for them): here the ranks are not Plexus programs.
R=$(mktemp -d /dev/shm/pxrun-reap-XXXXXX)
mkdir -m 0700 "$R/plexus-$uid-ended" && touch "$R/plexus-$uid-ended/seg-0"
run "$PXRUN" -n 1 --mca btl_shm_backing_dir "$R" true
check "pxrun removes the shm folder of an ended job" [ "$rc" -eq 0 -a ! -e "$R/plexus-$uid-ended" ]
rm -rf "$R"

# A rank that returns from main without px_finalize: pxrun ends the job saying so
# (before, the others waited in px_finalize until --timeout).
run "$PXRUN" -n 3 --timeout 15 "$PROBE" nofinalize 1 0
check "a rank exiting 0 without px_finalize fails the job" [ "$rc" -eq 1 ]
check "... the report names the rank and says it skipped px_finalize" \
    contains "$(cat "$T/err")" "rank 1 (pid"
check "... exited with status 0 without calling px_finalize" \
    contains "$(cat "$T/err")" "exited with status 0 without calling px_finalize"
run "$PXRUN" -n 2 --timeout 15 "$PROBE" nofinalize 0 3
check "a rank exiting 3 without px_finalize: pxrun exits 3" [ "$rc" -eq 3 ]
check "... exited with status 3 without calling px_finalize" \
    contains "$(cat "$T/err")" "rank 0 (pid"
check "... and says so" contains "$(cat "$T/err")" "exited with status 3 without calling px_finalize"
run "$PXRUN" -n 3 "$ENVP"
check "ranks that call px_finalize: exit 0, no report" [ "$rc" -eq 0 -a ! -s "$T/err" ]

# pxrun killed with SIGKILL: its ranks notice the launcher is gone, exit, and the
# last one removes the job's files (session folder, socket, shm folder).
launcher_killed() { # N
    local n=$1 d=$T/lk$1
    mkdir -p "$d"
    "$PXRUN" -n "$n" sh -c 'exec "$0" launcher 2>"$1.$PX_RANK"' "$PROBE" "$d/err" \
        </dev/null >"$d/out" 2>"$d/perr" &
    local p=$!
    for _ in $(seq 400); do [ "$(grep -c '^ready' "$d/out")" -eq "$n" ] && break; sleep 0.05; done
    check "launcher killed ($n ranks): every rank started" [ "$(grep -c '^ready' "$d/out")" -eq "$n" ]
    local job pids
    job=$(awk '/^ready/ {print $4; exit}' "$d/out")
    pids=$(awk '/^ready/ {print $3}' "$d/out")
    kill -9 $p
    wait $p 2>/dev/null
    local alive=1
    for _ in $(seq 200); do # 10 s
        alive=0
        for q in $pids; do kill -0 "$q" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        sleep 0.05
    done
    check "launcher killed ($n ranks): every rank exited within 10 s" [ $alive -eq 0 ]
    [ $alive -eq 0 ] || kill -9 $pids 2>/dev/null
    check "launcher killed ($n ranks): each rank says the launcher died" \
        [ "$(cat "$d"/err.* 2>/dev/null | grep -c 'the launcher pxrun (pid [0-9]*) died')" -eq "$n" ]
    check "launcher killed ($n ranks): one rank removed the job's files" \
        [ "$(cat "$d"/err.* 2>/dev/null | grep -c 'the last rank: removed')" -eq 1 ]
    check "launcher killed ($n ranks): no session folder or socket left" [ -n "$job" -a ! -e "$sess/job-$job" ]
    check "launcher killed ($n ranks): no /dev/shm folder left" [ -n "$job" -a ! -e "/dev/shm/plexus-$uid-$job" ]
}
launcher_killed 1 # the shm folder pxrun made is never used by one rank
launcher_killed 3

# pxrun killed, then every rank returns from main without px_finalize before
# any watcher saw the hang-up (PX_BOOT_PXRUN_TEST_NO_WATCH=1: no watcher, as
# when an application's main thread sees a peer's failure first and exits):
# the exit path still says the launcher died and the last rank cleans up.
launcher_exit() {
    local d=$T/lk-exit n=3 p job pids alive=1
    mkdir -p "$d"
    "$PXRUN" -n $n -x PX_BOOT_PXRUN_TEST_NO_WATCH=1 sh -c 'exec "$0" orphan "$1/go" 2>"$1/err.$PX_RANK"' \
        "$PROBE" "$d" </dev/null >"$d/out" 2>"$d/perr" &
    p=$!
    for _ in $(seq 400); do [ "$(grep -c '^ready' "$d/out")" -eq $n ] && break; sleep 0.05; done
    job=$(awk '/^ready/ {print $4; exit}' "$d/out")
    pids=$(awk '/^ready/ {print $3}' "$d/out")
    kill -9 $p
    wait $p 2>/dev/null
    touch "$d/go"
    for _ in $(seq 200); do
        alive=0
        for q in $pids; do kill -0 "$q" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        sleep 0.05
    done
    check "launcher killed, ranks exit without px_finalize: every rank exited" [ -n "$pids" -a $alive -eq 0 ]
    [ $alive -eq 0 ] || kill -9 $pids 2>/dev/null
    check "launcher killed, ranks exit without px_finalize: each rank says the launcher died" \
        [ "$(cat "$d"/err.* 2>/dev/null | grep -c 'the launcher pxrun (pid [0-9]*) died')" -eq $n ]
    check "launcher killed, ranks exit without px_finalize: one rank removed the job's files" \
        [ "$(cat "$d"/err.* 2>/dev/null | grep -c 'the last rank: removed')" -eq 1 ]
    check "launcher killed, ranks exit without px_finalize: no session or /dev/shm folder left" \
        [ -n "$job" -a ! -e "$sess/job-$job" -a ! -e "/dev/shm/plexus-$uid-$job" ]
}
launcher_exit

# pxrun killed with SIGKILL while three ranks wait in px_init's fence for a
# fourth that has not started yet: whether the watcher or px_init's error
# path sees it first (PX_BOOT_PXRUN_TEST_NO_WATCH=1: the error path, as when
# the main thread wins that race), the last rank removes the job's files
# (the segments, the socket, both folders); the late rank finds no launcher.
init_killed() { # WATCH(0|1)
    local d=$T/lk-init$1 job= p ranks alive=1 how=watcher
    [ "$1" = 0 ] && how="px_init's error path"
    mkdir -p "$d"
    "$PXRUN" -n 4 -x PX_BOOT_PXRUN_TEST_NO_WATCH=$((1 - $1)) sh -c \
        'echo $PX_JOBID; [ $PX_RANK = 3 ] && sleep 4; exec "$0" hold 0 2>"$1.$PX_RANK"' \
        "$PROBE" "$d/err" </dev/null >"$d/out" 2>"$d/perr" &
    p=$!
    for _ in $(seq 400); do
        job=$(head -1 "$d/out")
        [ -n "$job" ] && [ "$(ls "/dev/shm/plexus-$uid-$job" 2>/dev/null | grep -c '^seg-')" -ge 3 ] && break
        sleep 0.05
    done
    check "pxrun killed during px_init ($how): three ranks made their segments" \
        [ -n "$job" -a "$(ls "/dev/shm/plexus-$uid-$job" 2>/dev/null | grep -c '^seg-')" -ge 3 ]
    ranks=$(pgrep -P $p)
    kill -9 $p
    wait $p 2>/dev/null
    for _ in $(seq 300); do # 15 s: the late rank sleeps 4 s first
        alive=0
        for q in $ranks; do kill -0 "$q" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        sleep 0.05
    done
    check "pxrun killed during px_init ($how): every rank ended" [ $alive -eq 0 ]
    [ $alive -eq 0 ] || kill -9 $ranks 2>/dev/null
    check "pxrun killed during px_init ($how): no segment or shm folder left" \
        [ -n "$job" -a ! -e "/dev/shm/plexus-$uid-$job" ]
    check "pxrun killed during px_init ($how): no session folder or socket left" \
        [ -n "$job" -a ! -e "$sess/job-$job" ]
}
init_killed 1
init_killed 0

run "$PXRUN" -n 64 sh -c 'echo r$PX_RANK'
check "pxrun -n 64 runs 64 ranks" [ "$rc" -eq 0 -a "$(grep -c '^r' "$T/out")" -eq 64 ]
tap_done
