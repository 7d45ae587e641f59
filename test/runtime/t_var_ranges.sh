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
    for val in values:
        if val not in seen:
            seen.append(val)
            jobs.append("\t".join([v["name"], val] + env))
open(sys.argv[2], "w").write("".join(j + "\n" for j in jobs))
open(sys.argv[3], "w").write("".join(s + "\n" for s in skipped))
EOF
njobs=$(wc -l <"$T/jobs")
nvars=$(cut -f1 "$T/jobs" | sort -u | wc -l)
nskip=$(wc -l <"$T/skipped")
echo "# $nvars numeric variables, $njobs jobs; $nskip read-only/constant skipped: $(tr '\n' ' ' <"$T/skipped")"
check "px_info lists the variables of shm, ofi and the runtime" \
    test "$(grep -cE '^(btl_shm_|btl_ofi_|runtime_)' "$T/jobs")" -gt 30

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

# PX_RANGE_PARALLEL jobs at a time (default 2, the cores here: 3 took as
# long, a job being mostly process start-up, which keeps a core busy); a new
# job starts as soon as one ends.
par=${PX_RANGE_PARALLEL:-2}
n=0 running=0
while IFS=$'\t' read -r -a job; do
    n=$((n + 1))
    one "$n" "${job[@]}" &
    running=$((running + 1))
    if [ "$running" -ge "$par" ]; then
        wait -n
        running=$((running - 1))
    fi
done <"$T/jobs"
wait

n=0
while IFS=$'\t' read -r -a job; do
    n=$((n + 1))
    res=$(cat "$T/res.$n" 2>/dev/null || echo "FAIL no result")
    d="${job[0]}=${job[1]} ${job[*]:2}"
    if [ "$res" = PASS ]; then
        ok "$d"
    else
        not_ok "$d: ${res#FAIL }"
        head -8 "$T/out.$n" | sed 's/^/#   /'
    fi
done <"$T/jobs"
tap_done
