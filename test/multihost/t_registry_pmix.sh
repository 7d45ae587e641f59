#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# registry/pmix under Debian's mpirun (Open MPI 4.1 and its PMIx server):
# 2 and 4 ranks of one job share names (rank 0 puts, the others get), a
# duplicate by another rank is EXISTS, renewals succeed, a missing key is
# NOT_FOUND within registry_timeout, del and list; an entry whose lease ran
# out reads as absent and may be taken over; the names API end to end (rank 0
# publishes a region, the heartbeat renews it past several leases, the others
# open it and read it whole); two separate jobs share names, and a named
# region's bytes, through ompi-server, and do not without it; a process not
# under mpirun (or under mpirun without boot/pmix) gets the component's reason
# for declining.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
P=$B/test/multihost/registry_pmix
command -v mpirun >/dev/null || { not_ok "mpirun is installed (openmpi-bin)"; tap_done; }
check "plugin plexus_registry_pmix.so is built" test -e "$B/.libs/plexus_registry_pmix.so"
[ -x "$P" ] || { not_ok "test program $P is built (make check)"; tap_done; }
T=$(mktemp -d)
OS_PID=
cleanup() {
    [ -n "$OS_PID" ] && kill "$OS_PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
ROOT=()
[ "$(id -u)" = 0 ] && ROOT=(--allow-run-as-root)
MPIRUN=(timeout -s KILL 120 mpirun --oversubscribe "${ROOT[@]}"
    -x PX_MCA_mca_component_path="$B/.libs" -x PX_MCA_registry=pmix)
count() { grep -c "$1" "$2"; }
# The names API connects processes on demand: they must share a secret.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/secret"
chmod 600 "$T/secret"
MPIRUN+=(-x PX_MCA_peer_secret_file="$T/secret")
NP=$B/test/registry/name_probe

# ---- one job, 2 and 4 ranks ----
for n in 2 4; do
    "${MPIRUN[@]}" -np $n -x PX_MCA_registry_timeout=3 "$P" ranks >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    check "-np $n ranks: exit 0" test $rc -eq 0
    [ $rc -eq 0 ] || { grep FAIL "$T/out" | head -10; head -10 "$T/err"; } | sed 's/^/# /'
    check "-np $n: every rank selected registry pmix" test "$(count '^selected pmix' "$T/out")" -eq $n
    check "-np $n: no check failed" test "$(count '^FAIL' "$T/out")" -eq 0
    grep '^FAIL' "$T/out" | sed 's/^/# /'
    out=$(cat "$T/out")
    for r in $(seq 1 $((n - 1))); do
        check "-np $n: rank $r gets rank 0's bytes" \
            contains "$out" "ok $r get returns rank 0's bytes (NUL inside and after)"
        check "-np $n: rank $r gets NOT_FOUND for a missing key within registry_timeout" \
            contains "$out" "ok $r ... within registry_timeout"
    done
    check "-np $n: a duplicate put CREATE by rank 1 is EXISTS" \
        contains "$out" "ok 1 put CREATE by another rank is EXISTS"
    check "-np $n: ... and so is put ANY and del of rank 0's entry" \
        test "$(grep -c -e 'ok 1 put ANY over another' -e "ok 1 del of another rank's entry" "$T/out")" -eq 2
    check "-np $n: the EXISTS message names the holder" \
        contains "$(cat "$T/err")" "is held by"
    check "-np $n: rank 0 renews its entry three times" \
        test "$(count '^ok 0 rank 0 renews its entry' "$T/out")" -eq 3
    check "-np $n: del, then NOT_FOUND on every rank" \
        test "$(count '^ok [0-9]* after del, get is NOT_FOUND everywhere' "$T/out")" -eq $n
    check "-np $n: list is NOT_SUPPORTED with a message" \
        contains "$(cat "$T/err")" "registry/pmix: cannot list the keys under"
done

# ---- lease: an entry nobody renews expires ----
"${MPIRUN[@]}" -np 2 -x PX_MCA_registry_lease=1 -x PX_MCA_registry_heartbeat=0.3 "$P" lease \
    >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "lease: exit 0" test $rc -eq 0
[ $rc -eq 0 ] || { grep FAIL "$T/out"; head -10 "$T/err"; } | sed 's/^/# /'
out=$(cat "$T/out")
check "lease: rank 1's entry is read within its lease" contains "$out" "ok 0 rank 0 reads it within the lease"
check "lease: NOT_FOUND once the lease is over" contains "$out" "ok 0 after the lease it is NOT_FOUND"
check "lease: rank 0 takes the expired key over" contains "$out" "ok 0 put CREATE takes the expired key over"
check "lease: no check failed" test "$(count '^FAIL' "$T/out")" -eq 0

# ---- the names API, end to end ----
"${MPIRUN[@]}" -np 3 -x PX_MCA_registry_lease=1 -x PX_MCA_registry_heartbeat=0.3 "$P" names \
    >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "names: exit 0" test $rc -eq 0
[ $rc -eq 0 ] || { grep FAIL "$T/out"; head -10 "$T/err"; } | sed 's/^/# /'
check "names: px_name_registry() is pmix on every rank" \
    test "$(count '^ok [0-9]* px_name_registry() is pmix' "$T/out")" -eq 3
check "names: ranks 1 and 2 open rank 0's name after three leases (renewed by the heartbeat)" \
    test "$(count '^ok [0-9]* open the name (after three leases: renewed)' "$T/out")" -eq 2
check "names: ... and read its 1 MiB with rank 0's pattern" \
    test "$(count "^ok [0-9]* the bytes are rank 0's pattern" "$T/out")" -eq 2
check "names: after unpublish the opened name is gone (NOT_FOUND)" \
    test "$(count '^ok [0-9]* after unpublish, px_name_refresh is NOT_FOUND' "$T/out")" -eq 2
check "names: no check failed" test "$(count '^FAIL' "$T/out")" -eq 0

# ---- two jobs: through ompi-server, and without it ----
if command -v ompi-server >/dev/null; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout -s KILL 150 ompi-server --no-daemonize -r "$T/uri" >"$T/os.log" 2>&1 &
    OS_PID=$!
    for _ in $(seq 100); do [ -s "$T/uri" ] && break; sleep 0.1; done
    check "ompi-server wrote its URI" test -s "$T/uri"
    SRV=(--ompi-server "file:$T/uri")
    KEY=plexus/test/xjob-$$
    "${MPIRUN[@]}" "${SRV[@]}" -np 1 "$P" put "$KEY" from-job-a "$T/flag" >"$T/a.out" 2>"$T/a.err" </dev/null &
    A=$!
    for _ in $(seq 300); do grep -q '^put ' "$T/a.out" 2>/dev/null && break; sleep 0.1; done
    check "job A put its name" contains "$(cat "$T/a.out")" "put ok"
    "${MPIRUN[@]}" "${SRV[@]}" -np 1 "$P" get "$KEY" >"$T/b.out" 2>"$T/b.err" </dev/null
    check "job B (same ompi-server) gets job A's name" contains "$(cat "$T/b.out")" "got from-job-a"
    "${MPIRUN[@]}" "${SRV[@]}" -np 1 "$P" put "$KEY" from-job-c "$T/flag-none-$$" \
        >"$T/c.out" 2>"$T/c.err" </dev/null &
    C=$!
    for _ in $(seq 300); do grep -q '^put ' "$T/c.out" 2>/dev/null && break; sleep 0.1; done
    kill $C 2>/dev/null
    wait $C 2>/dev/null
    check "job C's put CREATE of job A's name is EXISTS" contains "$(cat "$T/c.out")" "put already exists"
    check "... naming a process of another job" contains "$(cat "$T/c.err")" "(a process of another job)"
    "${MPIRUN[@]}" -np 1 "$P" get "$KEY" >"$T/d.out" 2>"$T/d.err" </dev/null
    check "a job without --ompi-server does not see it (mpirun's own data server)" \
        contains "$(cat "$T/d.out")" "get NOT_FOUND"
    touch "$T/flag"
    wait $A
    check "job A ends cleanly" test $? -eq 0
    # A crashed owner's names expire: nothing unpublishes them, the
    # ompi-server keeps them, their lease header ends them.
    CKEY=plexus/pmix-test/crash-$$
    "${MPIRUN[@]}" "${SRV[@]}" -np 1 -x PX_MCA_registry_lease=1 -x PX_MCA_registry_heartbeat=0.3 \
        "$P" crash pmix-test/crash-$$ "$T/die" >"$T/k.out" 2>"$T/k.err" </dev/null &
    K=$!
    for _ in $(seq 300); do grep -q published "$T/k.out" 2>/dev/null && break; sleep 0.1; done
    check "crash: job A publishes its contact" contains "$(cat "$T/k.out")" "published"
    grep -q published "$T/k.out" || sed 's/^/# job A: /' "$T/k.err" | head -20
    sleep 2.5 # 2.5 leases: only renewals keep it
    "${MPIRUN[@]}" "${SRV[@]}" -np 1 "$P" get "$CKEY" >"$T/k1.out" 2>&1 </dev/null
    check "crash: another job reads it after 2.5 leases (renewed)" contains "$(cat "$T/k1.out")" "got "
    touch "$T/die"
    wait $K
    check "crash: job A died (exit $?)" test $? -ne 0
    sleep 1.5 # past the lease of the last renewal
    "${MPIRUN[@]}" "${SRV[@]}" -np 1 "$P" get "$CKEY" >"$T/k2.out" 2>&1 </dev/null
    check "crash: a lease after the crash the name is NOT_FOUND" \
        contains "$(cat "$T/k2.out")" "get NOT_FOUND"
    # A named region across the two jobs (test/registry/name_probe).
    if [ -x "$NP" ]; then
        mkdir -p "$T/ctl"
        "${MPIRUN[@]}" "${SRV[@]}" -np 1 "$NP" owner pmix-test/xjob-region 262144 7 "$T/ctl" \
            >"$T/o.out" 2>"$T/o.err" </dev/null &
        O=$!
        for _ in $(seq 300); do grep -q published "$T/o.out" 2>/dev/null && break; sleep 0.1; done
        check "job A publishes a region under a name" contains "$(cat "$T/o.out")" "published"
        "${MPIRUN[@]}" "${SRV[@]}" -np 1 "$NP" read pmix-test/xjob-region 262144 7 \
            >"$T/r.out" 2>"$T/r.err" </dev/null
        check "job B opens it by name, connects and reads it (pattern checked)" \
            contains "$(cat "$T/r.out")" "read ok"
        [ -z "$(grep 'read ok' "$T/r.out")" ] && head -5 "$T/r.err" | sed 's/^/# /'
        touch "$T/ctl/stop"
        wait $O
        check "job A unpublishes and ends cleanly" test $? -eq 0
    else
        not_ok "test program $NP is built (make check)"
    fi
else
    skip "two jobs through ompi-server" "ompi-server is not installed (openmpi-bin)"
fi

# ---- two jobs: the first mpirun serves the second (--report-uri) ----
RKEY=plexus/test/report-uri-$$
"${MPIRUN[@]}" --report-uri "$T/ruri" -np 1 "$P" put "$RKEY" from-first "$T/rflag" \
    >"$T/ra.out" 2>"$T/ra.err" </dev/null &
RA=$!
for _ in $(seq 300); do grep -q '^put ' "$T/ra.out" 2>/dev/null && break; sleep 0.1; done
check "report-uri: the first job put its name and wrote its URI" \
    test -s "$T/ruri" -a -n "$(grep 'put ok' "$T/ra.out")"
"${MPIRUN[@]}" --ompi-server "file:$T/ruri" -np 1 "$P" get "$RKEY" >"$T/rb.out" 2>"$T/rb.err" </dev/null
check "report-uri: a second job given --ompi-server file:<that URI> gets it" \
    contains "$(cat "$T/rb.out")" "got from-first"
touch "$T/rflag"
wait $RA

# ---- no PMIx launcher ----
PX_MCA_mca_component_path="$B/.libs" PX_MCA_registry=pmix timeout -s KILL 60 "$P" select \
    >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "not under mpirun: selection fails (exit 3, got $rc)" test $rc -eq 3
check "... pmix says why: no PMIx launcher" \
    contains "$(cat "$T/err")" "registry/pmix declined: this process was not started by a PMIx launcher"
"${MPIRUN[@]}" -np 1 -x PX_MCA_boot=singleton "$P" select >"$T/out" 2>"$T/err" </dev/null
check "under mpirun with boot=singleton: pmix says PMIx is not initialized (boot/pmix not selected)" \
    contains "$(cat "$T/err")" "boot/pmix was not selected"
tap_done
