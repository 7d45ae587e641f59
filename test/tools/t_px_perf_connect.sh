#!/usr/bin/env bash
# px_perf --connect (docs/px_perf.md): under pxrun -n 2, rank 1 connects to
# rank 0's contact again and again and then runs the steady-state blocks
# with the job rank and the connected peer. Checks what the mode prints, not
# how fast (no test asserts a time): the transports of both, the setup lines
# with the number of connections asked for, a row per size with positive
# figures; the same over ofi; a bad --conns and a missing secret are
# refused with a message.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
PXPERF=$B/tools/px_perf/px_perf
need_built "$PXRUN" "$PXPERF"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PX_MCA_mca_component_path=$B/.libs
umask 077
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"

if PX_MCA_peer_secret_file=$T/secret timeout -s KILL 60 "$PXRUN" -n 2 "$PXPERF" --connect --conns 1 \
    --reps 1 --sizes 8 --iters 2 2>&1 </dev/null | grep -q "built without libsodium"; then
    skip "px_perf --connect" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi

# run NAME ARGS...: px_perf --connect ARGS under pxrun -n 2, output in $T/NAME
run() {
    local n=$1
    shift
    PX_MCA_peer_secret_file=$T/secret timeout -s KILL 180 "$PXRUN" -n 2 "$PXPERF" --connect "$@" \
        >"$T/$n" 2>"$T/$n.err" </dev/null
}
# rows NAME: the steady-state rows: positive times, numeric bandwidths and
# ratios (with a few iterations on a loaded machine an 8-byte block can take
# milliseconds: its bandwidth prints 0.0 MB/s and a ratio 0.000)
rows() {
    awk 'NF == 7 && $1 ~ /^[0-9]+$/ && $2 > 0 && $3 > 0 &&
         $4 ~ /^[0-9]+\.[0-9]+$/ && $5 ~ /^[0-9]+\.[0-9]+$/ && $6 ~ /^[0-9]+\.[0-9]+$/ &&
         $7 ~ /^[0-9]+\.[0-9]+$/' "$T/$1" | wc -l
}

run shm --conns 20 --reps 3 --sizes 8,4k,64k --iters 5
rc=$?
check "pxrun -n 2 px_perf --connect exits 0 ($rc)" test $rc -eq 0
[ $rc = 0 ] || sed 's/^/# /' "$T/shm.err" | head -10
check "it names the transports: shm to rank 1 and to the connected peer" \
    contains "$(cat "$T/shm")" "transport to rank 1: shm, to the connected peer: shm"
check "setup_us: 20 connections after the first, first/median/p90/p99/max" \
    grep -Eq '^setup_us +20( +[0-9]+\.[0-9]){5}$' "$T/shm"
check "connect_us: the same for px_connect alone" grep -Eq '^connect_us +20( +[0-9]+\.[0-9]){5}$' "$T/shm"
check "a steady-state row per size (8, 4096, 65536), positive times" test "$(rows shm)" -eq 3
grep -E '^(setup_us|connect_us| +[0-9])' "$T/shm" | sed 's/^/# /'

run csv --conns 2 --reps 1 --sizes 8 --iters 2 --csv
check "--csv: the steady-state table as CSV" grep -Eq '^8,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+$' "$T/csv"

if [ -e "$B/.libs/plexus_btl_ofi.so" ]; then
    PX_MCA_btl=self,ofi run ofi --conns 5 --reps 1 --sizes 8,1M --iters 3
    rc=$?
    check "over ofi (PX_MCA_btl=self,ofi): exits 0 ($rc), both served by ofi" \
        contains "$(cat "$T/ofi")" "transport to rank 1: ofi, to the connected peer: ofi"
    [ $rc = 0 ] || sed 's/^/# /' "$T/ofi.err" | head -10
    check "over ofi: 5 connections timed and a row per size" \
        test "$(grep -Ec '^setup_us +5 ' "$T/ofi")" -eq 1 -a "$(rows ofi)" -eq 2
    grep -E '^(setup_us| +[0-9])' "$T/ofi" | sed 's/^/# /'
else
    skip "px_perf --connect over ofi" "btl/ofi is not built"
fi

"$PXPERF" --connect --conns 0 >"$T/out" 2>"$T/bad.err" </dev/null
rc=$?
check "--conns 0 is refused (exit $rc) saying what is accepted" \
    test $rc -eq 2 -a -n "$(grep -F "expected a number of connections from 1 to 100000" "$T/bad.err")"
env -u PX_MCA_peer_secret_file timeout -s KILL 60 "$PXRUN" -n 2 "$PXPERF" --connect --conns 1 \
    >"$T/out" 2>"$T/nosec.err" </dev/null
rc=$?
check "without a secret file: px_perf --connect fails (exit $rc)" test $rc -ne 0
check "... saying to set peer_secret_file" contains "$(cat "$T/nosec.err")" "set peer_secret_file"
tap_done
