#!/usr/bin/env bash
# Every numeric variable (int, unsigned, size, double) that px_info --json
# lists, set to 0, -1, 1, its minimum (when it has one), its maximum (the
# declared range's, else the type's) and 2^64-1 (under the sanitizers: its two
# ends only), in a short 2-rank job under pxrun (range_xfer: checked messages
# of 0 B .. 1 MiB and a truncation) with the transports that make the
# variable's component active. A job passes when it exits 0 with both ranks
# reporting no error, or exits non-zero with an error that names the
# variable; a crash (signal, sanitizer report), a hang (timeout), wrong data
# or a silent failure fails. The list comes from px_info, so a new variable
# is covered without editing this file. Read-only/constant variables cannot
# be set and are counted, not run.
# A value outside the declared range (or unparsable for the type) is refused
# by the variable system, which names the variable and keeps the default: the
# job then runs at the defaults. Such values do not each get a job of their
# own: those of one component and set of transports go together into one
# job per turn (the first refused value of every variable, then the second,
# ...), which must end as a job of its own would (exit 0, both ranks clean;
# or, where a refused value is an error that ends the job, as in coll's and
# the registry's own variables, an exit with an error, no signal or timeout)
# and name each of its variables as refused; a variable it does not name
# (its value was taken after all) and every variable of a job that did not
# end so run again alone, as before.
# Variables that no code of the job reads beyond the variable system (dynamic
# peers', the transfer engine's chunk and staging sizes, btl/verbs on a
# single host: idle() below) go together the same way, one job per turn and
# set of transports, which must exit 0 with both ranks clean; a job that
# does not runs each of its pairs alone. Each value of such a group is
# parsed and registered as in a job of its own, and no other value of the
# group changes what the job does, so a group hides no failure its pairs
# would show alone. Every (variable, value) pair keeps its line.
# The registry's variables (its base's and its components', which px_init
# does not register: the components load at the first px_name_* call) are
# set in jobs that use names (`range_xfer names`: rank 1 publishes a region,
# rank 0 opens it by its qualified name, reads and checks it, lists its
# prefix and watches it; rank 1 unpublishes it and rank 0 sees it gone):
# registry/p2p's over p2p (no service); the base's and registry/redis's
# against a redis-server this test starts (the base's lease, heartbeat and
# timeouts are a store's TTLs and deadlines there; p2p has no leases;
# redis's priority against p2p's selects); registry/pmix's with pmix and p2p
# selectable (pxrun is no PMIx launcher: pmix declines and p2p serves);
# registry/etcd's (only its priority) with etcd selected and its endpoint a
# port nobody listens on: the job must end with an error naming etcd and
# that address, never hang (a real etcd costs seconds of CPU to start, and
# its priority steers nothing else; t_registry_etcd.sh and t_names_etcd.sh
# test etcd itself). Without redis-server the redis jobs run over p2p
# instead and say so.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
pxrun=$B/tools/pxrun/pxrun
px_info=$B/tools/px_info/px_info
prog=$B/test/runtime/range_xfer
need_built "$pxrun" "$prog"
if ! command -v python3 >/dev/null; then
    not_ok "python3 is needed to read px_info --json (scripts/deps.sh installs it)"
    tap_done
fi
# $T, $pids (killed at exit), a peer secret ($T/secret: the names jobs'
# ranks connect as dynamic peers) and this build's plugins.
. "$PX_SRC/test/lib/peers.sh"
peers_setup
unset PX_MCA_peer_secret_file # only the names jobs set it
# A slow sanitizer build gets more time per job; a job that needs it hangs.
limit=${PX_RANGE_TIMEOUT:-$([ -n "${PX_TEST_SANITIZER:-}${PX_RANGE_ENDS_ONLY:-}" ] && echo 60 || echo 30)}

# The registry's jobs: a redis-server of this test's own (no persistence),
# and a port nobody listens on for etcd (the store absent).
. "$PX_SRC/test/registry/redis_util.sh"
redis_ep=
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null && redis_start ranges; then
    # shellcheck disable=SC2154 # (redis_start sets REDIS_PORT_ranges)
    redis_ep=127.0.0.1:$REDIS_PORT_ranges
else
    echo "# redis-server is not installed or did not start: the registry's redis jobs run over p2p"
fi
etcd_absent=http://127.0.0.1:$(free_port)

"$px_info" --json --all >"$T/info.json" 2>"$T/info.err"
check "px_info --json --all succeeds" test $? -eq 0
check "... and gives ranges (min/max) of variables" grep -q '"max": "' "$T/info.json"

python3 - "$T/info.json" "$T/jobs" "$T/skipped" "${PX_TEST_SANITIZER:-}${PX_RANGE_ENDS_ONLY:-}" "$T/groups" \
    "$redis_ep" "$etcd_absent" "$T/secret" <<'EOF'
import json, os, re, sys
doc = json.load(open(sys.argv[1]))
# PX_RANGE_ONLY=REGEX: only the variables whose names match (a developer's
# run of a few; CI sets none).
only = os.environ.get("PX_RANGE_ONLY", "")
# Under the sanitizers every job is several times slower: there only the two
# ends of each range run (see below).
sanitizer = sys.argv[4] != ""
tmax = {"int": "2147483647", "unsigned": "4294967295",
        "size": "18446744073709551615", "double": "1e308"}
jobs, skipped, groups = [], [], {}
tmin = {"int": -2**31, "unsigned": 0, "size": 0, "double": float("-inf")}
def num(text):
    """A value as the variable system reads it (k, M, G suffixes), or None."""
    mult = {"k": 1024, "K": 1024, "M": 1024**2, "G": 1024**3}
    t = text.strip()
    f = 1
    if t and t[-1] in mult:
        f, t = mult[t[-1]], t[:-1]
    try:
        return int(t) * f
    except ValueError:
        pass
    try:
        return float(t) * f
    except ValueError:
        return None
def idle(v):
    """True for a variable that no code of a range_xfer job reads beyond the
    variable system (which parses the value and registers it): dynamic peers
    (read by px_peer_listen and px_peer_connect), the transfer engine's chunk
    and staging sizes (read by transfers: range_xfer only sends messages),
    and btl/verbs, which on a single host with shm declines before it looks
    for a device (its verbosity says so or not). The registry's variables
    are read by `range_xfer names` jobs (below)."""
    fw, comp, name = v["framework"], v["component"], v["name"]
    return (fw == "peer" or (fw, comp) == ("btl", "verbs") or
            name in ("xfer_chunk_size", "xfer_stage_size", "xfer_stage_count"))
redis_ep, etcd_absent, secret = sys.argv[6], sys.argv[7], sys.argv[8]
def registry_env(comp):
    """A names job's environment for a variable of the registry's component
    comp ("" or "base": the framework's own). PX_RANGE_NAMES=1 runs
    `range_xfer names`. The selection names the components the job needs:
    loading all four (etcd's libcurl and TLS, PMIx) triples a job's CPU."""
    if comp == "p2p" or (comp in ("", "base", "redis") and not redis_ep):
        sel = ["PX_MCA_registry=p2p"]
    elif comp in ("", "base"):
        sel = ["PX_MCA_registry=redis", "PX_MCA_registry_redis_endpoints=" + redis_ep]
    elif comp == "redis":
        # its priority against p2p's chooses
        sel = ["PX_MCA_registry=redis,p2p", "PX_MCA_registry_redis_endpoints=" + redis_ep]
    elif comp == "etcd":
        # the store absent: each rank's first call fails within 0.2 s
        # (not registry_timeout's 2 s, while the other rank polls)
        sel = ["PX_MCA_registry=etcd", "PX_MCA_registry_etcd_endpoints=" + etcd_absent,
               "PX_MCA_registry_timeout=0.2"]
    else:
        # pmix: pxrun is no PMIx launcher, so pmix declines and p2p serves
        sel = ["PX_MCA_registry=%s,p2p" % comp]
    return ["PX_MCA_btl=self,shm", "PX_RANGE_NAMES=1", "PX_MCA_peer_secret_file=" + secret] + sel
for v in doc["variables"]:
    if v["type"] not in tmax or (only and not re.search(only, v["name"])):
        continue
    if v["scope"] == "constant" or "read-only" in v["flags"]:
        skipped.append(v["name"])
        continue
    fw, comp = v["framework"], v["component"]
    env = []
    # ofi over libfabric's shm provider: the same btl/ofi code as over tcp,
    # at a third of the start-up time.
    if fw == "btl" and comp == "ofi":
        env = ["PX_MCA_btl=self,ofi", "PX_MCA_btl_ofi_provider_include=shm", "FI_PROVIDER=shm"]
    elif fw == "btl" and comp == "verbs":
        # without a device it declines; the job must still run over shm
        env = ["PX_MCA_btl=self,shm,verbs"]
    elif fw == "registry":
        env = registry_env(comp)
    else:
        env = ["PX_MCA_btl=self,shm"]
    vmax = v["max"] if v.get("max") is not None else tmax[v["type"]]
    vmin = [v["min"]] if v.get("min") is not None else []
    seen = []
    if sanitizer:
        # The refusal of an out-of-range value is one code path, which the
        # normal build runs for every variable; under the sanitizers the jobs
        # that matter are those that really run at each end of the range.
        values = (vmin or ["0"]) + [vmax]
    else:
        values = ["0", "-1", "1"] + vmin + [vmax, "18446744073709551615"]
    lo = num(v["min"]) if v.get("min") is not None else tmin[v["type"]]
    hi = num(vmax)
    turn = iturn = 0
    for val in values:
        if val not in seen:
            seen.append(val)
            # "refused TURN FRAMEWORK/COMPONENT": outside the range, so
            # refused (a guess that the job checks); "idle TURN": in the
            # range, of a variable no code of the job reads (idle(), above);
            # "alone": a job of its own.
            x = num(val)
            how = "alone"
            if x is not None and lo is not None and hi is not None and not lo <= x <= hi:
                how = "refused %d %s/%s" % (turn, fw, comp)
                turn += 1
            elif sanitizer and fw == "registry" and comp not in ("", "base", "etcd"):
                # under the sanitizers the registry's components' ends share
                # a names job per component: every minimum in one, every
                # maximum in another (a job that does not end clean runs
                # each alone). Not the base's (its maximum heartbeat is not
                # below the lease, its minimum timeout may time out: errors
                # that end the job) nor etcd's (its store is absent): alone.
                how = "ends %d" % iturn
                iturn += 1
            elif idle(v):
                how = "idle %d" % iturn
                iturn += 1
            jobs.append("\t".join([how, v["name"], val] + env))
            if how != "alone":
                groups.setdefault((how, " ".join(env)), []).append(
                    "%d:%s=%s" % (len(jobs), v["name"], val))
open(sys.argv[2], "w").write("".join(j + "\n" for j in jobs))
open(sys.argv[3], "w").write("".join(s + "\n" for s in skipped))
open(sys.argv[5], "w").write("".join(
    "\t".join([k[1], k[0].split()[0]] + groups[k]) + "\n" for k in sorted(groups)))
EOF
njobs=$(wc -l <"$T/jobs")
nvars=$(cut -f2 "$T/jobs" | sort -u | wc -l)
nskip=$(wc -l <"$T/skipped")
echo "# $nvars numeric variables, $njobs (variable, value) pairs; $nskip read-only/constant skipped: $(tr '\n' ' ' <"$T/skipped")"
[ -n "${PX_RANGE_ONLY:-}" ] ||
    check "px_info lists the variables of shm, ofi and the runtime" \
        test "$(cut -f2 "$T/jobs" | grep -cE '^(btl_shm_|btl_ofi_|runtime_)')" -gt 30

# Each job is one pxrun under its own --timeout (exit 124 at it: it ends
# the ranks, SIGKILL after a grace; a pxrun that hung itself would meet
# run-tests.sh's PX_TEST_TIMEOUT), started by one fork of this shell with
# its environment exported; its output is
# judged here by the shell's own pattern matching. A fork or exec costs
# ~10 ms of CPU on the 2-vCPU VM: env, timeout(1), a subshell per job and
# greps per output were ~75 ms a job, as much as the job itself
# (docs/measurements/ci.md).
declare -A job_of # pid -> "alone N" or "group N:NAME=VALUE..."
res=()            # N -> PASS, ALONE or "FAIL reason"
running=0
crash_re='AddressSanitizer|LeakSanitizer|runtime error:|killed by signal|Segmentation'
# start WHAT OUT ENV...: one 2-rank job in the background, output to OUT.
# Under AddressSanitizer pxrun itself runs without LeakSanitizer's exit scan
# (~0.06 of a ~0.5 CPU s job there): the ranks get the options as given (-x),
# and pxrun's own leaks are checked by its tests (test/pxrun, test/runtime).
ranks_x=() pxrun_asan=
if [[ ${ASAN_OPTIONS:-} == *detect_leaks=1* ]]; then
    ranks_x=(-x "ASAN_OPTIONS=$ASAN_OPTIONS") pxrun_asan=$ASAN_OPTIONS:detect_leaks=0
fi
start() {
    local what=$1 out=$2
    shift 2
    (
        # shellcheck disable=SC2163 # (NAME=VALUE arguments)
        export "$@"
        [ -z "$pxrun_asan" ] || export ASAN_OPTIONS=$pxrun_asan
        exec "$pxrun" "${ranks_x[@]}" --timeout "$limit" -n 2 "$prog" ${PX_RANGE_NAMES:+names}
    ) </dev/null >"$out" 2>&1 &
    job_of[$!]=$what
    running=$((running + 1))
}
# clean TEXT: both ranks reported ": 0 errors" (one line each).
clean() {
    local rest=${1//": 0 errors"/}
    [ $(((${#1} - ${#rest}) / 10)) -eq 2 ]
}
# reap: wait for one job to end and judge it.
reap() {
    local pid rc what text
    wait -n -p pid
    rc=$?
    running=$((running - 1))
    what=${job_of[$pid]}
    unset 'job_of[$pid]'
    if [ "${what%% *}" = alone ]; then
        local n=${what#alone }
        IFS= read -r -d '' text <"$T/out.$n"
        judge_alone "$n" "$rc" "$text"
    else
        local g=${what#group }
        g=${g%% *}
        IFS= read -r -d '' text <"$T/group.$g"
        # shellcheck disable=SC2086
        judge_group "$rc" "$text" ${what#"group $g "}
    fi
}
# judge_alone N RC TEXT: job N (NAME=VALUE) alone: it passes when it exits 0
# with both ranks reporting no error, or exits non-zero with an error that
# names the variable (or, in an etcd job, etcd and the absent store's
# address); a crash, a hang or a silent failure fails.
judge_alone() {
    local n=$1 rc=$2 text=$3 name=${names[$1]}
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        res[n]="FAIL hang (no end within ${limit} s)"
    elif [[ $text =~ $crash_re ]]; then
        res[n]="FAIL crash: $(grep -m1 -E "$crash_re" "$T/out.$n")"
    elif [ "$rc" -eq 0 ]; then
        if clean "$text"; then res[n]=PASS; else res[n]="FAIL exit 0 without two clean ranks"; fi
    elif [ "$rc" -gt 128 ]; then
        res[n]="FAIL exit $rc (signal)"
    elif [[ $text == *"$name"* ]]; then
        res[n]=PASS
    elif [[ " ${envs[n]} " == *" PX_MCA_registry_etcd_endpoints=$etcd_absent "* ]] &&
        [[ $text == *etcd*"${etcd_absent#http://}"* ]]; then
        res[n]=PASS # the store absent: an error naming it and its address
    else
        res[n]="FAIL exit $rc without a message naming $name"
    fi
}
# judge_group RC TEXT KIND N:NAME=VALUE...: a job with every NAME=VALUE set:
# values the variable system refuses (KIND refused: each keeps its default),
# or values of variables no code of the job reads beyond the variable system
# (KIND idle), or under the sanitizers the registry's ends (KIND ends: one
# job per component and end). Pair N passes when the job ends as a job of
# its own would pass: idle and ends: exit 0 with both ranks without error; refused: the same, or (in
# the frameworks where a refused value is an error: coll's and the
# registry's own variables) an exit status of 1-123 (an error, not a
# signal or timeout), and either way the job names NAME as refused. No crash
# report either way. A NAME not named (its value was taken after all, or an
# earlier error stopped the registration) gets "ALONE", as does every pair
# of a job that did not end so: each runs alone later, where a crash, hang
# or silent failure fails.
judge_group() {
    local rc=$1 text=$2 kind=$3 p name ended=0
    shift 3
    if [[ $text =~ $crash_re ]]; then
        ended=0
    elif [ "$rc" -eq 0 ]; then
        clean "$text" && ended=1
    elif [ "$kind" = refused ] && [ "$rc" -le 123 ]; then
        ended=1
    fi
    for p in "$@"; do
        name=${p#*:}
        name=${name%%=*}
        if [ "$ended" = 1 ] && { [ "$kind" != refused ] || [[ $text == *"for variable $name ("* ]]; }; then
            res[${p%%:*}]=PASS
        else
            res[${p%%:*}]=ALONE
        fi
    done
}

# PX_RANGE_PARALLEL jobs at a time (default 2, the cores here: 3 took as
# long, a job being mostly process start-up, which keeps a core busy); a new
# job starts as soon as one ends.
par=${PX_RANGE_PARALLEL:-2}
names=() values=() envs=()
n=0
while IFS=$'\t' read -r -a job; do
    n=$((n + 1))
    names[n]=${job[1]} values[n]=${job[2]} envs[n]=${job[*]:3}
done <"$T/jobs"
# The groups first: refused values together by set of transports, turn and
# component, idle ones by set of transports and turn (the python above made
# them: ENV<TAB>KIND<TAB>N:NAME=VALUE...).
g=0
while IFS=$'\t' read -r -a grp; do
    g=$((g + 1))
    sets=()
    for p in "${grp[@]:2}"; do sets+=("PX_MCA_${p#*:}"); done
    # shellcheck disable=SC2086
    start "group $g ${grp[*]:1}" "$T/group.$g" ${grp[0]} "${sets[@]}"
    [ "$running" -lt "$par" ] || reap
done <"$T/groups"
while [ "$running" -gt 0 ]; do reap; done
# Then every other pair, and the refused ones a group did not clear, alone.
ngroups=$g nalone=0
for ((n = 1; n <= ${#names[@]}; n++)); do
    [ "${res[n]:-}" = PASS ] && continue
    nalone=$((nalone + 1))
    # shellcheck disable=SC2086
    start "alone $n" "$T/out.$n" ${envs[n]} "PX_MCA_${names[n]}=${values[n]}"
    [ "$running" -lt "$par" ] || reap
done
while [ "$running" -gt 0 ]; do reap; done
echo "# $ngroups jobs of refused or idle values together, $nalone jobs alone"

for ((n = 1; n <= ${#names[@]}; n++)); do
    r=${res[n]:-FAIL no result}
    d="${names[n]}=${values[n]} ${envs[n]}"
    if [ "$r" = PASS ]; then
        ok "$d"
    else
        not_ok "$d: ${r#FAIL }"
        head -8 "$T/out.$n" | sed 's/^/#   /'
    fi
done
tap_done
