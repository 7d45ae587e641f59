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
# own: those of one framework and set of transports go together into one
# job per turn (the first refused value of every variable, then the second,
# ...), which must end as a job of its own would (exit 0, both ranks clean)
# and name each of its variables as refused; a variable it does not name
# (its value was taken after all) and every variable of a job that did not
# end so (in coll and registry a refused value ends the job with an error)
# run again alone, as before. Every (variable, value) pair keeps its line.
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
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PX_MCA_mca_component_path=$B/.libs
# A slow sanitizer build gets more time per job; a job that needs it hangs.
limit=${PX_RANGE_TIMEOUT:-$([ -n "${PX_TEST_SANITIZER:-}${PX_RANGE_ENDS_ONLY:-}" ] && echo 60 || echo 30)}

"$px_info" --json --all >"$T/info.json" 2>"$T/info.err"
check "px_info --json --all succeeds" test $? -eq 0
check "... and gives ranges (min/max) of variables" grep -q '"max": "' "$T/info.json"

python3 - "$T/info.json" "$T/jobs" "$T/skipped" "${PX_TEST_SANITIZER:-}${PX_RANGE_ENDS_ONLY:-}" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
# Under the sanitizers every job is several times slower: there only the two
# ends of each range run (see below).
sanitizer = sys.argv[4] != ""
tmax = {"int": "2147483647", "unsigned": "4294967295",
        "size": "18446744073709551615", "double": "1e308"}
jobs, skipped = [], []
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
for v in doc["variables"]:
    if v["type"] not in tmax:
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
    turn = 0
    for val in values:
        if val not in seen:
            seen.append(val)
            # "refused TURN FRAMEWORK": outside the range, so refused (a
            # guess that the job checks); "alone": a job of its own.
            x = num(val)
            how = "alone"
            if x is not None and lo is not None and hi is not None and not lo <= x <= hi:
                how = "refused %d %s" % (turn, fw)
                turn += 1
            jobs.append("\t".join([how, v["name"], val] + env))
open(sys.argv[2], "w").write("".join(j + "\n" for j in jobs))
open(sys.argv[3], "w").write("".join(s + "\n" for s in skipped))
EOF
njobs=$(wc -l <"$T/jobs")
nvars=$(cut -f2 "$T/jobs" | sort -u | wc -l)
nskip=$(wc -l <"$T/skipped")
echo "# $nvars numeric variables, $njobs (variable, value) pairs; $nskip read-only/constant skipped: $(tr '\n' ' ' <"$T/skipped")"
check "px_info lists the variables of shm, ofi and the runtime" \
    test "$(cut -f2 "$T/jobs" | grep -cE '^(btl_shm_|btl_ofi_|runtime_)')" -gt 30

# One job: NAME VALUE [ENV...]; writes "PASS" or "FAIL reason" to $T/res.N.
one() {
    local n=$1 name=$2 value=$3; shift 3
    local out=$T/out.$n
    env "$@" "PX_MCA_$name=$value" timeout -k 5 "$limit" "$pxrun" -n 2 "$prog" </dev/null \
        >"$out" 2>&1
    local rc=$?
    local res
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        res="FAIL hang (no end within ${limit} s)"
    elif grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|killed by signal|Segmentation' "$out"; then
        res="FAIL crash: $(grep -m1 -E 'AddressSanitizer|LeakSanitizer|runtime error:|killed by signal|Segmentation' "$out")"
    elif [ $rc -eq 0 ]; then
        if [ "$(grep -c ': 0 errors' "$out")" -eq 2 ]; then res=PASS; else res="FAIL exit 0 without two clean ranks"; fi
    elif [ $rc -gt 128 ]; then
        res="FAIL exit $rc (signal)"
    elif grep -q "$name" "$out"; then
        res=PASS
    else
        res="FAIL exit $rc without a message naming $name"
    fi
    echo "$res" >"$T/res.$n"
}

# together G N:NAME=VALUE... -- ENV...: one job with every NAME=VALUE set
# (values the variable system refuses). When it ends as a job of each alone
# would (exit 0, both ranks without error, no crash) and names NAME as
# refused, "PASS" goes to $T/res.N (N: the pair's number); a NAME not named
# gets "ALONE" (run alone later). A job that did not end so gives "ALONE"
# to all its pairs: in some frameworks (coll, registry) a refused value is
# an error that ends the job early, which could hide what another value does.
together() {
    local g=$1; shift
    local pairs=()
    while [ "$1" != -- ]; do pairs+=("$1"); shift; done
    shift
    local sets=() p
    for p in "${pairs[@]}"; do sets+=("PX_MCA_${p#*:}"); done
    local out=$T/group.$g
    env "$@" "${sets[@]}" timeout -k 5 "$limit" "$pxrun" -n 2 "$prog" </dev/null >"$out" 2>&1
    local rc=$? name
    if [ $rc -eq 0 ] && [ "$(grep -c ': 0 errors' "$out")" -eq 2 ] &&
        ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|killed by signal|Segmentation' "$out"; then
        for p in "${pairs[@]}"; do
            name=${p#*:}
            name=${name%%=*}
            if grep -qF "for variable $name (" "$out"; then
                echo PASS >"$T/res.${p%%:*}"
            else
                echo ALONE >"$T/res.${p%%:*}"
            fi
        done
    else
        for p in "${pairs[@]}"; do echo ALONE >"$T/res.${p%%:*}"; done
    fi
}

# PX_RANGE_PARALLEL jobs at a time (default 2, the cores here: 3 took as
# long, a job being mostly process start-up, which keeps a core busy); a new
# job starts as soon as one ends.
par=${PX_RANGE_PARALLEL:-2}
n=0 running=0 g=0
# The refused values first, together by set of transports, turn and
# framework.
while IFS= read -r key; do
    [ -n "$key" ] || continue
    args=()
    n=0
    while IFS=$'\t' read -r -a job; do
        n=$((n + 1))
        [ "${job[0]}" = "${key%%$'\t'*}" ] || continue
        [ "${job[*]:3}" = "${key#*$'\t'}" ] || continue
        args+=("$n:${job[1]}=${job[2]}")
    done <"$T/jobs"
    g=$((g + 1))
    # shellcheck disable=SC2086
    together "$g" "${args[@]}" -- ${key#*$'\t'} &
    running=$((running + 1))
    if [ "$running" -ge "$par" ]; then
        wait -n
        running=$((running - 1))
    fi
done < <(while IFS=$'\t' read -r -a job; do
    [ "${job[0]}" = alone ] || printf '%s\t%s\n' "${job[0]}" "${job[*]:3}"
done <"$T/jobs" | sort -u)
wait
running=0
# Then every other pair, and the refused ones a group did not clear, alone.
n=0
ngroups=$g nalone=0
while IFS=$'\t' read -r -a job; do
    n=$((n + 1))
    [ "$(cat "$T/res.$n" 2>/dev/null)" = PASS ] && continue
    nalone=$((nalone + 1))
    one "$n" "${job[@]:1}" &
    running=$((running + 1))
    if [ "$running" -ge "$par" ]; then
        wait -n
        running=$((running - 1))
    fi
done <"$T/jobs"
wait
echo "# $ngroups jobs of refused values together, $nalone jobs alone"

n=0
while IFS=$'\t' read -r -a job; do
    n=$((n + 1))
    res=$(cat "$T/res.$n" 2>/dev/null || echo "FAIL no result")
    d="${job[1]}=${job[2]} ${job[*]:3}"
    if [ "$res" = PASS ]; then
        ok "$d"
    else
        not_ok "$d: ${res#FAIL }"
        head -8 "$T/out.$n" | sed 's/^/#   /'
    fi
done <"$T/jobs"
tap_done
